/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_suggest.h - `sluice policy suggest`: a policy from observed traffic
 * (the code: loader/suggest/, its parts in loader/suggest/internal.h)
 * (docs/policy.md, "Audit mode and suggest").
 *
 * Reads kernel events, proxy access-log lines and resolver query-log lines
 * (docs/events.md; one or many runs, in any mix of files) and writes either
 *   - a version-1 policy that would have allowed exactly what was seen, or
 *   - with --against POLICY, the smallest additions to POLICY that would
 *     have allowed what POLICY did not, as a diff a reviewer can accept.
 * Every line is used, noted (understood, nothing to allow: lifecycle lines,
 * refusals no policy can lift) or skipped; a skipped line is always reported
 * as "file:line: reason" and counted.
 */
#ifndef SLUICE_CMD_SUGGEST_H
#define SLUICE_CMD_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "policy.h"

/*
 * `sluice policy suggest [--name NAME] [--against POLICY] [--relays FILE]
 * [-o FILE] EVENTS.jsonl...`; argv[0] is "suggest".  "-" reads stdin.
 * Exit 0: every line was read; 1: some line was skipped (reported on stderr)
 * or kernel events were lost, so the suggestion may be incomplete; 2: usage
 * or environment error (unreadable file, bad POLICY, relay list, output).
 */
int cmd_suggest(int argc, char **argv);

/* --- the logic, without files and options (tests/unit/test_suggest.c) --- */

struct suggest;

struct suggest_opts {
	const char *name;                     /* policy name; NULL: "suggested" */
	const struct sluice_policy *against;  /* NULL: a whole policy; else additions to it */
	const char *against_path;             /* its file name, for the diff header */
	const char *against_text;             /* its text, so the diff quotes its own lines;
						 NULL: the policy as sluice writes it */
	const char *relays;                   /* relay list for the lints; NULL: the default */
	FILE *diag;                           /* skipped lines and notes; NULL: stderr */
};

struct suggest_counts {
	unsigned long files;
	unsigned long lines;      /* every line read, blank ones included */
	unsigned long blank;
	unsigned long used;       /* turned into observations */
	unsigned long noted;      /* understood, nothing a policy could allow */
	unsigned long skipped;    /* reported as file:line: reason */
	unsigned long long events_lost;   /* sum of sluice.events_lost */
};

/* NULL only on a bad option (message on diag). */
struct suggest *suggest_new(const struct suggest_opts *o);
void suggest_free(struct suggest *s);

/*
 * Feed one line, without its newline.  `complete` is false for a last line
 * that ended without one (a writer cut off).  `file` and `lineno` are used
 * in reports.
 */
void suggest_line(struct suggest *s, const char *file, unsigned long lineno,
		  const char *line, size_t len, bool complete);

/* Feed every line of `f`.  Returns 0, or -1 with errno on a read error. */
int suggest_read(struct suggest *s, const char *file, FILE *f);

/*
 * The result: policy YAML, or with `against` the diff.  Returns malloc'd
 * text the caller frees, or NULL after printing why on diag (exit 2: the
 * relay list cannot be read, too many entries, or an internal check failed).
 */
char *suggest_render(struct suggest *s);

const struct suggest_counts *suggest_counts(const struct suggest *s);

/* The summary line(s) on `f`; the exit status (0 or 1) the input deserves. */
void suggest_summary(const struct suggest *s, FILE *f);
int suggest_exit_status(const struct suggest *s);

#endif
