/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_names.c - a policy's host and url entries indexed by name
 * (policy.h, sluice_name_index): the resolver asks "the first entry that
 * allows this name" for every query, and a scan of the entries was a tenth
 * of its CPU with a 200-entry policy (docs/performance.md, scenario 7).
 *
 * The index only narrows the candidates: every candidate is still judged by
 * sluice_host_match() (expiry included), and the first in file order wins,
 * exactly as the scan it replaces.  Exact names (host entries without a
 * wildcard, url hosts) are keyed by the name, wildcards by the name under
 * the '*.'; a query name is looked up whole in the first table and at each
 * of its label boundaries in the second.
 */
#include "policy_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct name_slot {
	const char *name;     /* the entry's (borrowed from the policy) */
	uint32_t hash;
	uint32_t *idx;        /* entry indices, ascending */
	size_t n, cap;
};

struct name_table {
	struct name_slot *slots;   /* open addressing, a power of two */
	size_t mask;
};

struct sluice_name_index {
	struct name_table exact, wild;
};

/* FNV-1a over the bytes of s[0..len) */
static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static struct name_slot *slot_of(const struct name_table *t, const char *s, size_t len, uint32_t h)
{
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		struct name_slot *sl = &t->slots[i];

		if (!sl->name || (sl->hash == h && strncmp(sl->name, s, len) == 0 && sl->name[len] == '\0'))
			return sl;
	}
}

static int table_init(struct name_table *t, size_t names)
{
	size_t cap = 8;

	while (cap < 2 * names)   /* at most half full: short probes */
		cap *= 2;
	t->slots = calloc(cap, sizeof(*t->slots));
	t->mask = cap - 1;
	return t->slots ? 0 : -1;
}

static int table_add(struct name_table *t, const char *name, uint32_t idx)
{
	size_t len = strlen(name);
	uint32_t h = name_hash(name, len);
	struct name_slot *sl = slot_of(t, name, len, h);

	if (!sl->name) {
		sl->name = name;
		sl->hash = h;
	}
	if (sl->n == sl->cap) {
		size_t cap = sl->cap ? 2 * sl->cap : 1;
		uint32_t *p = realloc(sl->idx, cap * sizeof(*p));

		if (!p)
			return -1;
		sl->idx = p;
		sl->cap = cap;
	}
	sl->idx[sl->n++] = idx;   /* the entries are added in file order */
	return 0;
}

static void table_free(struct name_table *t)
{
	for (size_t i = 0; t->slots && i <= t->mask; i++)
		free(t->slots[i].idx);
	free(t->slots);
}

/* The name an entry is keyed by, and in which table; NULL: not a name entry. */
static const char *entry_key(const struct sluice_entry *e, bool *wild)
{
	*wild = false;
	if (e->kind == SLUICE_ENTRY_URL)
		return e->url_host;
	if (e->kind != SLUICE_ENTRY_HOST)
		return NULL;
	*wild = e->wildcard;
	return e->host;
}

struct sluice_name_index *sluice_name_index_new(const struct sluice_policy *p)
{
	struct sluice_name_index *ix = calloc(1, sizeof(*ix));
	size_t n_exact = 0, n_wild = 0;

	if (!ix)
		return NULL;
	for (size_t i = 0; i < p->n_entries; i++) {
		bool wild;

		if (entry_key(&p->entries[i], &wild))
			*(wild ? &n_wild : &n_exact) += 1;
	}
	if (table_init(&ix->exact, n_exact) < 0 || table_init(&ix->wild, n_wild) < 0)
		goto fail;
	for (size_t i = 0; i < p->n_entries; i++) {
		bool wild;
		const char *k = entry_key(&p->entries[i], &wild);

		if (k && table_add(wild ? &ix->wild : &ix->exact, k, (uint32_t)i) < 0)
			goto fail;
	}
	return ix;
fail:
	sluice_name_index_free(ix);
	return NULL;
}

void sluice_name_index_free(struct sluice_name_index *ix)
{
	if (!ix)
		return;
	table_free(&ix->exact);
	table_free(&ix->wild);
	free(ix);
}

#define NAME_LABELS_MAX 128   /* a 253-byte name has at most 127 labels */

const struct sluice_entry *sluice_name_index_first(const struct sluice_name_index *ix,
						   const struct sluice_policy *p, const char *host)
{
	const struct name_slot *cand[NAME_LABELS_MAX + 1];
	size_t pos[NAME_LABELS_MAX + 1];
	size_t nc = 0, len;

	if (!ix || !p || !host)
		return NULL;
	len = strlen(host);
	{
		const struct name_slot *sl = slot_of(&ix->exact, host, len, name_hash(host, len));

		if (sl->name)
			cand[nc++] = sl;
	}
	/* "*.x" can match host only where a label of host ends: the rest after each '.' */
	for (size_t i = 1; i < len && nc <= NAME_LABELS_MAX; i++) {
		const struct name_slot *sl;
		size_t l = len - i - 1;

		if (host[i] != '.')
			continue;
		sl = slot_of(&ix->wild, host + i + 1, l, name_hash(host + i + 1, l));
		if (sl->name)
			cand[nc++] = sl;
	}
	/* the candidates' lists merged in file order: the first that matches */
	memset(pos, 0, sizeof(pos));
	for (;;) {
		size_t best = SIZE_MAX, bi = 0;

		for (size_t c = 0; c < nc; c++)
			if (pos[c] < cand[c]->n && cand[c]->idx[pos[c]] < best) {
				best = cand[c]->idx[pos[c]];
				bi = c;
			}
		if (best == SIZE_MAX)
			return NULL;
		pos[bi]++;
		if (best < p->n_entries && sluice_host_match(&p->entries[best], host))
			return &p->entries[best];
	}
}
