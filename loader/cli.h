/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.h - the sluice command line's global options: `sluice [-j|--json]
 * COMMAND ...`.  With -j (or a command's own --json), a command that prints
 * state prints one JSON document on stdout instead of text, and a command
 * that fails says so there too: {"ok": false, "command": ..., "exit": N,
 * "error": "..."} (the diagnostics still go to stderr).  Commands whose
 * stdout is not sluice's (run, daemon, oci-hook) or not JSON (policy
 * suggest: a YAML policy) refuse -j; `events` prints JSON lines already.
 */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <stdbool.h>

#include <json-c/json.h>

/* Parse the global options at argv[1..] (before COMMAND): -j, --json.
 * Returns how many argv entries they took (0 if none). */
int sluice_cli_global_opts(int argc, char **argv);

/* Turn JSON output on (a command's own --json calls this too, so that its
 * errors come out as JSON as well). */
void sluice_cli_set_json(void);

/* Is JSON output on?  */
bool sluice_cli_json(void);

/* Print o (not consumed) as the command's JSON document on stdout, pretty,
 * '/' unescaped, and remember that the command printed one. */
void sluice_cli_json_print(json_object *o);

/* The command's output on stdout has begun (a stream of JSON lines, `events
 * --follow`): no error document is added after it, whatever the exit. */
void sluice_cli_json_streamed(void);

/* The last warning logged (log_keep_last(): from the moment JSON output was
 * turned on), "" if none. */
const char *sluice_cli_last_error(void);

/* Write the message (printf format, no newline) to stderr as it is, with a
 * newline, and keep it as the last error: for messages that carry their own
 * prefix or a file:line (policy check's), which log_warnx would prefix. */
void sluice_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* End of command `cmd` with exit status rc: under -j, a failed command that
 * printed no document prints the error object.  Returns rc. */
int sluice_cli_finish(const char *cmd, int rc);

#endif
