/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_within.h - boundaries: does a policy allow only what a boundary
 * allows?  (`sluice policy check --within`, `--boundary` on run and the
 * daemon; docs/policy.md "Change control".)
 */
#ifndef SLUICE_POLICY_WITHIN_H
#define SLUICE_POLICY_WITHIN_H

#include <limits.h>

#include "policy.h"

#define SLUICE_EXCESS_POLICY UINT_MAX   /* an excess of the policy as a whole (mode, dns.qtypes) */

/* One thing the policy allows and the boundary does not. */
struct sluice_excess {
	unsigned entry;           /* index of the policy entry, or SLUICE_EXCESS_POLICY */
	unsigned line, column;    /* the entry's position; 0 for the policy as a whole */
	char what[16];            /* "connection", "request", "dns", "unix", "mode" */
	char example[512];        /* a concrete instance: "TCP to 198.51.100.7:5432", "GET http://h:80/p" */
};

/*
 * Decide exactly whether every connection, request, DNS answer and unix
 * connect that `p` allows is also allowed by `boundary` (see the file
 * comment of policy_within.c for the sets).  Entries are compared as
 * written: expiry plays no part.  Returns the number of excesses (0: p is
 * within the boundary), with a malloc'd array in *out (the caller frees
 * it; NULL when 0), at most one per entry and kind; -1 on allocation
 * failure.
 */
int sluice_policy_within(const struct sluice_policy *p, const struct sluice_policy *boundary,
			 struct sluice_excess **out);

/* Load the boundary at `path`: a policy file whose entries carry no
 * `expires:`.  Returns 0 with *out, or -1 with "file:line:column: ..." in msg. */
int sluice_boundary_load(const char *path, struct sluice_policy **out, char *msg, size_t msglen);

/*
 * `p` against `boundary` (from `boundary_path`, for messages).  Returns 0
 * when p is within it; else the number of excesses, each a line
 * "POLICY:line:column: outside the boundary B: allow[N] ... allows EXAMPLE"
 * in msg (newline-separated, cut at msglen); -1 on allocation failure.
 */
int sluice_policy_check_within(const struct sluice_policy *p, const struct sluice_policy *boundary,
			       const char *boundary_path, char *msg, size_t msglen);

#endif
