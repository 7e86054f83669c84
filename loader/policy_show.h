/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_show.h - the text and JSON forms of a policy's entries and
 * errors, for `sluice policy check` and `sluice policy diff`.  Strings
 * returned point into the entry or into the caller's buf; JSON objects
 * are new references the caller owns (json-c).
 */
#ifndef SLUICE_POLICY_SHOW_H
#define SLUICE_POLICY_SHOW_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* exit statuses of check and diff (docs/policy.md) */
#define EXIT_CLEAN    0
#define EXIT_FINDINGS 1
#define EXIT_ERROR    2

/* A JSON string of s ("" for NULL). */
static inline json_object *jstr(const char *s)
{
	return json_object_new_string(s ? s : "");
}

/* The entry's transport: "udp" or "tcp". */
const char *pol_proto_str(const struct sluice_entry *e);

/* The entry's ports as "80,8000-8080" into buf. */
void pol_ports_str(const struct sluice_entry *e, char *buf, size_t len);

/* The url entry's methods as "GET,HEAD" into buf. */
void pol_methods_str(const struct sluice_entry *e, char *buf, size_t len);

/* How the entry's traffic leaves: "direct", "unix", "inspect" or "proxy". */
const char *pol_via_str(const struct sluice_entry *e);

/* What the entry allows, without the "allow[N] kind:" prefix of its name. */
const char *pol_target_str(const struct sluice_entry *e);

/* Print a JSON document on stdout (sluice_cli_json_print()). */
void pol_print_json(json_object *o);

/* The entry's programs as "a, b" into buf; returns buf. */
const char *pol_programs_str(const struct sluice_entry *e, char *buf, size_t len);

/* The entry's ports as [{"lo":..,"hi":..}]. */
json_object *pol_ports_json(const struct sluice_entry *e);

/* The entry as `check --json` shows it (docs/policy.md). */
json_object *pol_entry_json(const struct sluice_entry *e);

/* A load error as {"file","line","column","message","text"}. */
json_object *pol_error_json(const struct sluice_policy_error *err);

/* A load error as "file:line:column: message" on stderr. */
void pol_print_error(const struct sluice_policy_error *err);

/* `sluice policy diff [--json] OLD NEW` (cmd_policy_diff.c): what NEW
 * opens and closes compared with OLD.  Returns EXIT_CLEAN (no change),
 * EXIT_FINDINGS (changes) or EXIT_ERROR (a file did not load). */
int policy_diff(bool json, const char *oldf, const char *newf);

#endif /* SLUICE_POLICY_SHOW_H */
