/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_maps.h - translation of a policy into the contents of the BPF maps
 * (pure logic, no kernel access; unit-tested in tests/unit/test_policy_maps.c).
 */
#ifndef SLUICE_POLICY_MAPS_H
#define SLUICE_POLICY_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "sluice.h"
#include "policy.h"

struct sluice_plan_v4 {
	struct sluice_lpm4_key key;
	struct sluice_cidr_rules val;
};

struct sluice_plan_v6 {
	struct sluice_lpm6_key key;
	struct sluice_cidr_rules val;
};

/* Does this entry go to the exact map (a full-length prefix: /32, /128;
 * bpf/sluice.h struct sluice_exact4_key) rather than the trie? */
static inline int sluice_plan_v4_exact(const struct sluice_plan_v4 *d)
{
	return d->key.prefixlen == 32 + 32;
}

static inline int sluice_plan_v6_exact(const struct sluice_plan_v6 *d)
{
	return d->key.prefixlen == 32 + 128;
}

/* What one policy generation writes into the maps. */
struct sluice_plan {
	uint32_t gen;
	struct sluice_plan_v4 *v4;
	size_t n_v4;
	struct sluice_plan_v6 *v6;
	size_t n_v6;
	struct sluice_unix_key *ux;        /* `unix:` entries (map sluice_unix_allow), value: entry index */
	uint32_t *ux_rule;
	size_t n_ux;
	uint32_t ports[SLUICE_PORT_WORDS]; /* proxied-port bitmap, bank (gen & 1) */
	uint32_t genflags;                 /* SLUICE_GEN_* (the audit mode; the cidr maps the plan fills) */
	struct sluice_prog_key *pk;        /* programs of cidr entries (map sluice_prog_allow) */
	size_t n_pk;
	uint64_t families;                 /* the policy's families: (sluice_genconf.families) */
};

/* How many sluice_prog_allow keys policy `p` needs per generation (the
 * programs of its cidr entries). */
size_t sluice_plan_count_programs(const struct sluice_policy *p);

/*
 * Build the plan for policy `p` as generation `gen`.  CIDR entries become
 * LPM entries whose value holds the port rules of the prefix and of every
 * shorter prefix of the policy that contains it (an LPM lookup returns only
 * the longest match).  Identical prefixes are merged.  Returns 0, or -1
 * with a message in err (e.g. more than SLUICE_MAX_PORT_RULES rules apply
 * to one prefix).  The caller releases the plan with sluice_plan_free().
 */
int sluice_plan_build(const struct sluice_policy *p, uint32_t gen, struct sluice_plan *plan,
		      char *err, size_t errlen);

void sluice_plan_free(struct sluice_plan *plan);

/*
 * The LPM key of `unix:` entry `e` for generation `gen` (struct
 * sluice_unix_key in bpf/sluice.h: a path with its NUL when exact, without
 * when it ends in '/'; an abstract name as length byte + bytes).
 */
void sluice_unix_key_of_entry(const struct sluice_entry *e, uint32_t gen, struct sluice_unix_key *k);

/*
 * The key the kernel builds for a client's address: `sun_path` bytes as
 * passed (`len` of them; abstract when the first is NUL), exactly as
 * bpf/sluice.bpf.c judge_unix_addr() does.  For tests and `policy` tools.
 */
void sluice_unix_key_of_addr(const unsigned char *sun_path, size_t len, uint32_t gen, struct sluice_unix_key *k);

/* Would this plan let an IPv4 `addr` (network byte order) through directly
 * for `proto`/`port` (host order)?  The same answer the kernel gives; used
 * to pick a canary destination that the policy must deny. */
int sluice_plan_allows4(const struct sluice_plan *plan, uint32_t addr, uint8_t proto, uint16_t port);

/* Is TCP `port` (host order) proxied in this plan? */
int sluice_plan_proxies(const struct sluice_plan *plan, uint16_t port);

#endif
