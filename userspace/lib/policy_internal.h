/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_internal.h - helpers shared by policy.c, normalise.c, digest.c and
 * lint.c.  Not part of the API: include policy.h instead.
 */
#ifndef SLUICE_POLICY_INTERNAL_H
#define SLUICE_POLICY_INTERNAL_H

#include "policy.h"

/* Hard limits on what the parser accepts (a policy is a small file). */
#define SLUICE_POLICY_MAX_BYTES   (64u << 20) /* 64 MiB of YAML */
#define SLUICE_POLICY_MAX_DEPTH   16          /* YAML nesting */
#define SLUICE_POLICY_MAX_NODES   4000000     /* ~ 200,000 entries */
#define SLUICE_POLICY_MAX_ENTRIES 200000      /* the benchmarks use 100,000 */
#define SLUICE_POLICY_MAX_PORTS   256         /* items in one ports list */
#define SLUICE_POLICY_MAX_QTYPES  64
#define SLUICE_PATH_MAX           2048        /* url path prefixes and request paths */

/* digest.c: compute p->digest from the canonical serialisation. */
int sluice_policy_compute_digest(struct sluice_policy *p);

/* policy.c: the public-suffix test used for wildcard entries.  Returns 1
 * when `name` (normalised) is a public suffix, 0 when it is not, -1 when
 * no public suffix list is available (callers fail closed). */
int sluice_is_public_suffix(const char *name);

/* normalise.c: does the path prefix `prefix` cover `path` on a segment
 * boundary (both normalised)? */
bool sluice_path_prefix_match(const char *prefix, const char *path);

/* Is `port` inside one of the ranges? */
bool sluice_ports_contain(const struct sluice_port_range *r, size_t n, uint16_t port);

/* Format "a-b" or "a" into buf. */
const char *sluice_port_range_str(const struct sluice_port_range *r, char *buf, size_t len);

/* Canonical cidr text "198.51.100.0/24" into buf (>= 64 bytes). */
const char *sluice_cidr_str(const struct sluice_entry *e, char *buf, size_t len);

/* policy_expiry.c: is `key` one of the change-control keys of an entry
 * (expires, owner, ticket)? */
bool sluice_entry_meta_key(const char *key);

/* policy_expiry.c: set the change-control key `key` of `e` from the string
 * scalar `value` (`len` bytes).  Returns 0, or -1 with the message in why. */
int sluice_entry_meta_set(struct sluice_entry *e, const char *key, const char *value, size_t len, char *why,
			  size_t whylen);

#endif
