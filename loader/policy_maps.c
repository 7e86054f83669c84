/* SPDX-License-Identifier: BSD-2-Clause */
#include "policy_maps.h"
#include "netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* CLOCK_TAI - CLOCK_REALTIME in whole seconds (the kernel's TAI offset, 0
 * where nothing set it): the kernel compares expiries with
 * bpf_ktime_get_tai_ns(), user space writes them as Unix time. */
static int64_t tai_offset_s(void)
{
	struct timespec tai, real;

	if (clock_gettime(CLOCK_TAI, &tai) < 0 || clock_gettime(CLOCK_REALTIME, &real) < 0)
		return 0;
	return (int64_t)tai.tv_sec - (int64_t)real.tv_sec + ((tai.tv_nsec - real.tv_nsec) >= 500000000L ? 1 : 0);
}

static int add_rules(struct sluice_cidr_rules *val, const struct sluice_entry *e, const char *what,
		     char *err, size_t errlen)
{
	uint32_t expires_s = 0;

	if (e->expires) {
		int64_t t = e->expires + tai_offset_s();

		/* at least 1 (0 means never); past 2106 does not fit */
		if (t > (int64_t)UINT32_MAX) {
			snprintf(err, errlen, "line %u: 'expires' too far in the future for the kernel's clock", e->line);
			return -1;
		}
		expires_s = t < 1 ? 1 : (uint32_t)t;
	}
	for (size_t i = 0; i < e->n_ports; i++) {
		/* skip exact duplicates (same rule from a merged prefix) */
		int dup = 0;

		for (uint32_t j = 0; j < val->n; j++) {
			const struct sluice_port_rule *r = &val->rules[j];

			/* a rule with programs is its entry's (keyed by its index) */
			if (r->lo == e->ports[i].lo && r->hi == e->ports[i].hi && r->proto == e->protocol &&
			    r->expires_s == expires_s && !r->flags && !e->n_programs)
				dup = 1;
		}
		if (dup)
			continue;
		if (val->n >= SLUICE_MAX_PORT_RULES) {
			snprintf(err, errlen,
				 "line %u: more than %d port rules apply to %s (this entry and the wider cidr entries "
				 "containing it); merge port ranges",
				 e->line, SLUICE_MAX_PORT_RULES, what);
			return -1;
		}
		val->rules[val->n].lo = e->ports[i].lo;
		val->rules[val->n].hi = e->ports[i].hi;
		val->rules[val->n].proto = e->protocol;
		val->rules[val->n].rule = (uint16_t)e->index;
		val->rules[val->n].flags = e->n_programs ? SLUICE_RULE_PROGRAMS : 0;
		val->rules[val->n].expires_s = expires_s;
		val->n++;
	}
	return 0;
}

/* One distinct CIDR prefix of a family and the entries that name it. */
struct prefix {
	uint8_t addr[16];
	unsigned len;
	size_t first;   /* index into the sorted entry list */
	size_t count;
};

struct cidr_ref {
	uint8_t addr[16];
	unsigned len;
	const struct sluice_entry *e;
};

static size_t g_alen; /* address length for the comparators (4 or 16) */

static int cmp_ref(const void *a, const void *b)
{
	const struct cidr_ref *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	int c = memcmp(x->addr, y->addr, g_alen);

	if (c)
		return c;
	return x->e->index < y->e->index ? -1 : x->e->index > y->e->index;
}

static int cmp_prefix(const void *a, const void *b)
{
	const struct prefix *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->addr, y->addr, g_alen);
}

static void mask_to(uint8_t *out, const uint8_t *in, unsigned len, size_t alen)
{
	memset(out, 0, 16);
	for (size_t i = 0; i < alen; i++) {
		if (len >= 8 * (i + 1))
			out[i] = in[i];
		else if (len > 8 * i)
			out[i] = in[i] & (uint8_t)(0xff << (8 - (len - 8 * i)));
	}
}

/*
 * Plan one family.  Distinct prefixes are found by sorting; the prefixes
 * containing a given one are found by one binary search per prefix length
 * present in the policy, so a policy of n entries costs O(n log n * lengths)
 * rather than O(n^2) (the 100,000-entry benchmark needs this).
 */
static int plan_family(const struct sluice_policy *p, int family, uint32_t gen, struct sluice_plan *plan,
		       char *err, size_t errlen)
{
	size_t alen = family == AF_INET ? 4 : 16, n = 0, np = 0;
	struct cidr_ref *refs;
	struct prefix *pre;
	int lens[129], nlens = 0, ret = -1;

	for (size_t i = 0; i < p->n_entries; i++)
		if (p->entries[i].kind == SLUICE_ENTRY_CIDR && p->entries[i].family == family)
			n++;
	if (!n)
		return 0;
	refs = calloc(n, sizeof(*refs));
	pre = calloc(n, sizeof(*pre));
	if (!refs || !pre) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	n = 0;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->kind != SLUICE_ENTRY_CIDR || e->family != family)
			continue;
		mask_to(refs[n].addr, e->addr, e->prefix_len, alen);
		refs[n].len = e->prefix_len;
		refs[n].e = e;
		n++;
	}
	g_alen = alen;
	qsort(refs, n, sizeof(*refs), cmp_ref);
	for (size_t i = 0; i < n; i++) {
		if (np && pre[np - 1].len == refs[i].len && memcmp(pre[np - 1].addr, refs[i].addr, alen) == 0) {
			pre[np - 1].count++;
			continue;
		}
		memcpy(pre[np].addr, refs[i].addr, 16);
		pre[np].len = refs[i].len;
		pre[np].first = i;
		pre[np].count = 1;
		if (!nlens || lens[nlens - 1] != (int)refs[i].len)
			lens[nlens++] = (int)refs[i].len;
		np++;
	}
	for (size_t k = 0; k < np; k++) {
		struct sluice_cidr_rules val;
		char what[INET6_ADDRSTRLEN + 8], abuf[INET6_ADDRSTRLEN];

		memset(&val, 0, sizeof(val));
		inet_ntop(family, pre[k].addr, abuf, sizeof(abuf));
		snprintf(what, sizeof(what), "%s/%u", abuf, pre[k].len);
		/* the prefix itself and every shorter one that contains it */
		for (int li = 0; li < nlens && lens[li] <= (int)pre[k].len; li++) {
			struct prefix key = { 0 }, *hit;

			mask_to(key.addr, pre[k].addr, (unsigned)lens[li], alen);
			key.len = (unsigned)lens[li];
			hit = bsearch(&key, pre, np, sizeof(*pre), cmp_prefix);
			if (!hit)
				continue;
			for (size_t j = 0; j < hit->count; j++)
				if (add_rules(&val, refs[hit->first + j].e, what, err, errlen) < 0)
					goto out;
		}
		if (family == AF_INET) {
			struct sluice_plan_v4 *d = &plan->v4[plan->n_v4++];

			d->key.prefixlen = 32 + pre[k].len;
			d->key.gen = gen;
			memcpy(&d->key.addr, pre[k].addr, 4);
			d->val = val;
			plan->genflags |= sluice_plan_v4_exact(d) ? SLUICE_GEN_EXACT4 : SLUICE_GEN_PREFIX4;
		} else {
			struct sluice_plan_v6 *d = &plan->v6[plan->n_v6++];

			d->key.prefixlen = 32 + pre[k].len;
			d->key.gen = gen;
			memcpy(d->key.addr, pre[k].addr, 16);
			d->val = val;
			plan->genflags |= sluice_plan_v6_exact(d) ? SLUICE_GEN_EXACT6 : SLUICE_GEN_PREFIX6;
		}
	}
	ret = 0;
out:
	free(refs);
	free(pre);
	return ret;
}

static int plan_programs(const struct sluice_policy *p, uint32_t gen, struct sluice_plan *plan, char *err,
			 size_t errlen);

int sluice_plan_build(const struct sluice_policy *p, uint32_t gen, struct sluice_plan *plan,
		      char *err, size_t errlen)
{
	size_t n4 = 0, n6 = 0;

	memset(plan, 0, sizeof(*plan));
	plan->gen = gen;
	if (p->mode == SLUICE_MODE_AUDIT)
		plan->genflags |= SLUICE_GEN_AUDIT;
	plan->families = p->families.mask;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->kind == SLUICE_ENTRY_CIDR) {
			if (e->family == AF_INET)
				n4++;
			else
				n6++;
		} else {
			for (size_t j = 0; j < e->n_ports; j++)
				for (uint32_t port = e->ports[j].lo; port <= e->ports[j].hi; port++)
					plan->ports[port >> 5] |= 1u << (port & 31);
		}
	}
	plan->v4 = calloc(n4 ? n4 : 1, sizeof(*plan->v4));
	plan->v6 = calloc(n6 ? n6 : 1, sizeof(*plan->v6));
	plan->ux = calloc(p->n_entries ? p->n_entries : 1, sizeof(*plan->ux));
	plan->ux_rule = calloc(p->n_entries ? p->n_entries : 1, sizeof(*plan->ux_rule));
	if (!plan->v4 || !plan->v6 || !plan->ux || !plan->ux_rule) {
		snprintf(err, errlen, "out of memory");
		sluice_plan_free(plan);
		return -1;
	}
	if (plan_family(p, AF_INET, gen, plan, err, errlen) < 0 ||
	    plan_family(p, AF_INET6, gen, plan, err, errlen) < 0) {
		sluice_plan_free(plan);
		return -1;
	}
	for (size_t i = 0; i < p->n_entries; i++) {
		if (p->entries[i].kind != SLUICE_ENTRY_UNIX)
			continue;
		sluice_unix_key_of_entry(&p->entries[i], gen, &plan->ux[plan->n_ux]);
		plan->ux_rule[plan->n_ux++] = (uint32_t)i;
	}
	if (plan_programs(p, gen, plan, err, errlen) < 0) {
		sluice_plan_free(plan);
		return -1;
	}
	return 0;
}

size_t sluice_plan_count_programs(const struct sluice_policy *p)
{
	size_t n = 0;

	for (size_t i = 0; p && i < p->n_entries; i++)
		if (p->entries[i].kind == SLUICE_ENTRY_CIDR)
			n += p->entries[i].n_programs;
	return n;
}

/* The sluice_prog_allow keys of the cidr entries with `programs:`. */
static int plan_programs(const struct sluice_policy *p, uint32_t gen, struct sluice_plan *plan, char *err,
			 size_t errlen)
{
	size_t n = sluice_plan_count_programs(p);

	plan->pk = calloc(n ? n : 1, sizeof(*plan->pk));
	if (!plan->pk) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->kind != SLUICE_ENTRY_CIDR || !e->n_programs)
			continue;
		/* the rule field that keys the programs is 16 bits */
		if (e->index > UINT16_MAX) {
			snprintf(err, errlen, "line %u: 'programs' on a cidr entry past the %uth entry is not supported",
				 e->line, UINT16_MAX + 1u);
			return -1;
		}
		for (size_t j = 0; j < e->n_programs; j++) {
			struct sluice_prog_key *k = &plan->pk[plan->n_pk++];

			memset(k, 0, sizeof(*k));
			k->gen = gen;
			k->rule = (uint16_t)e->index;
			k->dev = e->programs[j].id.dev;
			k->ino = e->programs[j].id.ino;
		}
	}
	return 0;
}

void sluice_unix_key_of_entry(const struct sluice_entry *e, uint32_t gen, struct sluice_unix_key *k)
{
	size_t n = strlen(e->unix_path);

	memset(k, 0, sizeof(*k));
	k->gen = gen;
	if (n > SLUICE_UNIX_PATH_MAX)   /* the parser refuses longer ones */
		n = SLUICE_UNIX_PATH_MAX;
	if (e->unix_abstract) {
		k->kind = SLUICE_UNIX_KIND_ABSTRACT;
		k->b[0] = (uint8_t)n;
		memcpy(k->b + 1, e->unix_path, n);
		k->prefixlen = 32 + 8 + 8 * (uint32_t)(n + 1);
	} else {
		k->kind = SLUICE_UNIX_KIND_PATH;
		memcpy(k->b, e->unix_path, n);
		/* exact: the terminating NUL is part of the key; a directory
		 * ("/x/y/") is a prefix of every path below it */
		k->prefixlen = 32 + 8 + 8 * (uint32_t)(e->unix_prefix ? n : n + 1);
	}
}

void sluice_unix_key_of_addr(const unsigned char *sun_path, size_t len, uint32_t gen, struct sluice_unix_key *k)
{
	size_t n = 0;

	memset(k, 0, sizeof(*k));
	k->gen = gen;
	if (len > 108)
		len = 108;
	if (len > 0 && sun_path[0] == 0) {
		n = len - 1;
		k->kind = SLUICE_UNIX_KIND_ABSTRACT;
		k->b[0] = (uint8_t)n;
		memcpy(k->b + 1, sun_path + 1, n);
		k->prefixlen = 32 + 8 + 8 * (uint32_t)(n + 1);
		return;
	}
	while (n < len && sun_path[n])
		n++;
	k->kind = SLUICE_UNIX_KIND_PATH;
	memcpy(k->b, sun_path, n);
	k->prefixlen = 32 + 8 + 8 * (uint32_t)(n + 1);
}

void sluice_plan_free(struct sluice_plan *plan)
{
	free(plan->v4);
	free(plan->v6);
	free(plan->ux);
	free(plan->ux_rule);
	free(plan->pk);
	plan->pk = NULL;
	plan->n_pk = 0;
	plan->v4 = NULL;
	plan->v6 = NULL;
	plan->ux = NULL;
	plan->ux_rule = NULL;
	plan->n_v4 = plan->n_v6 = plan->n_ux = 0;
}

int sluice_plan_allows4(const struct sluice_plan *plan, uint32_t addr, uint8_t proto, uint16_t port)
{
	const struct sluice_plan_v4 *best = NULL;

	for (size_t i = 0; i < plan->n_v4; i++) {
		const struct sluice_plan_v4 *d = &plan->v4[i];
		unsigned len = d->key.prefixlen - 32;

		if (!netaddr_in_prefix(AF_INET, (const uint8_t *)&d->key.addr, len, AF_INET, (const uint8_t *)&addr))
			continue;
		if (!best || d->key.prefixlen > best->key.prefixlen)
			best = d;
	}
	if (!best)
		return 0;
	for (uint32_t j = 0; j < best->val.n; j++) {
		const struct sluice_port_rule *r = &best->val.rules[j];

		if (r->proto == proto && port >= r->lo && port <= r->hi)
			return 1;
	}
	return 0;
}

int sluice_plan_proxies(const struct sluice_plan *plan, uint16_t port)
{
	return !!(plan->ports[port >> 5] & (1u << (port & 31)));
}
