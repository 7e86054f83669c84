/* SPDX-License-Identifier: BSD-2-Clause */
#include "policy_maps.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Does prefix (a, alen) contain prefix (b, blen)?  Byte arrays, network order. */
static int prefix_contains(const uint8_t *a, unsigned alen, const uint8_t *b, unsigned blen)
{
	unsigned full = alen / 8, rem = alen % 8;

	if (alen > blen)
		return 0;
	if (memcmp(a, b, full) != 0)
		return 0;
	if (rem) {
		uint8_t mask = (uint8_t)(0xff << (8 - rem));

		if ((a[full] & mask) != (b[full] & mask))
			return 0;
	}
	return 1;
}

static int add_rules(struct sluice_cidr_rules *val, const struct sluice_entry *e, const char *what,
		     char *err, size_t errlen)
{
	for (size_t i = 0; i < e->n_ports; i++) {
		/* skip exact duplicates (same rule from a merged prefix) */
		int dup = 0;

		for (uint32_t j = 0; j < val->n; j++) {
			const struct sluice_port_rule *r = &val->rules[j];

			if (r->lo == e->ports[i].lo && r->hi == e->ports[i].hi && r->proto == e->protocol)
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
		val->n++;
	}
	return 0;
}

int sluice_plan_build(const struct sluice_policy *p, uint32_t gen, struct sluice_plan *plan,
		      char *err, size_t errlen)
{
	size_t n4 = 0, n6 = 0;

	memset(plan, 0, sizeof(*plan));
	plan->gen = gen;
	if (p->mode == SLUICE_MODE_AUDIT)
		plan->genflags |= SLUICE_GEN_AUDIT;
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
	if (!plan->v4 || !plan->v6) {
		snprintf(err, errlen, "out of memory");
		sluice_plan_free(plan);
		return -1;
	}

	/* One LPM entry per distinct prefix; value = rules of every policy
	 * prefix that contains it (itself included). */
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];
		unsigned alen = e->family == AF_INET ? 4 : 16;
		int seen = 0;
		char what[INET6_ADDRSTRLEN + 8], abuf[INET6_ADDRSTRLEN];

		if (e->kind != SLUICE_ENTRY_CIDR)
			continue;
		/* already planned (same prefix earlier)? */
		for (size_t k = 0; k < i; k++) {
			const struct sluice_entry *o = &p->entries[k];

			if (o->kind == SLUICE_ENTRY_CIDR && o->family == e->family &&
			    o->prefix_len == e->prefix_len && memcmp(o->addr, e->addr, alen) == 0)
				seen = 1;
		}
		if (seen)
			continue;
		inet_ntop(e->family, e->addr, abuf, sizeof(abuf));
		snprintf(what, sizeof(what), "%s/%u", abuf, e->prefix_len);

		struct sluice_cidr_rules val;

		memset(&val, 0, sizeof(val));
		for (size_t k = 0; k < p->n_entries; k++) {
			const struct sluice_entry *o = &p->entries[k];

			if (o->kind != SLUICE_ENTRY_CIDR || o->family != e->family)
				continue;
			if (!prefix_contains(o->addr, o->prefix_len, e->addr, e->prefix_len))
				continue;
			if (add_rules(&val, o, what, err, errlen) < 0) {
				sluice_plan_free(plan);
				return -1;
			}
		}
		if (e->family == AF_INET) {
			struct sluice_plan_v4 *d = &plan->v4[plan->n_v4++];

			d->key.prefixlen = 32 + e->prefix_len;
			d->key.gen = gen;
			memcpy(&d->key.addr, e->addr, 4);
			d->val = val;
		} else {
			struct sluice_plan_v6 *d = &plan->v6[plan->n_v6++];

			d->key.prefixlen = 32 + e->prefix_len;
			d->key.gen = gen;
			memcpy(d->key.addr, e->addr, 16);
			d->val = val;
		}
	}
	return 0;
}

void sluice_plan_free(struct sluice_plan *plan)
{
	free(plan->v4);
	free(plan->v6);
	plan->v4 = NULL;
	plan->v6 = NULL;
	plan->n_v4 = plan->n_v6 = 0;
}

int sluice_plan_allows4(const struct sluice_plan *plan, uint32_t addr, uint8_t proto, uint16_t port)
{
	const struct sluice_plan_v4 *best = NULL;

	for (size_t i = 0; i < plan->n_v4; i++) {
		const struct sluice_plan_v4 *d = &plan->v4[i];
		unsigned len = d->key.prefixlen - 32;

		if (!prefix_contains((const uint8_t *)&d->key.addr, len, (const uint8_t *)&addr, 32))
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
