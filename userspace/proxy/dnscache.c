/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dnscache.c - see dnscache.h.  A hash table of answer sets with an LRU
 * list, plus the lookups in flight, each with the requests waiting on it.
 */
#include "dnscache.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DC_BUCKETS_MIN 64

struct dc_entry {
	struct dc_entry *hnext;             /* hash chain */
	struct dc_entry *lprev, *lnext;     /* LRU: head = most recently used */
	uint64_t expires_ms;
	uint32_t hash;
	uint32_t ttl;
	size_t n;
	char *name;                         /* points into the same allocation */
	struct proxy_addr a[];
};

struct dc_pending {
	struct proxy_dnscache *dc;          /* NULL once the cache is gone */
	struct dc_pending *prev, *next;
	struct proxy_resolve *res;
	struct proxy_lookup *waiters;
	uint32_t hash;
	char name[];
};

struct proxy_lookup {
	struct dc_pending *p;
	struct proxy_lookup *prev, *next;
	proxy_resolve_cb cb;
	void *arg;
};

struct proxy_dnscache {
	struct evdns_base *dns;
	size_t max_entries;
	unsigned max_ttl;
	struct dc_entry **buckets;
	size_t n_buckets;                   /* a power of two */
	size_t n_entries;
	struct dc_entry *lru_head, *lru_tail;
	struct dc_pending *pending;
	struct proxy_dnscache_stats st;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;           /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

struct proxy_dnscache *proxy_dnscache_new(struct evdns_base *dns, size_t max_entries, unsigned max_ttl)
{
	struct proxy_dnscache *dc = calloc(1, sizeof(*dc));

	if (!dc)
		return NULL;
	dc->dns = dns;
	dc->max_entries = max_entries;
	dc->max_ttl = max_ttl;
	dc->n_buckets = DC_BUCKETS_MIN;
	while (dc->n_buckets < max_entries && dc->n_buckets < (1u << 20))
		dc->n_buckets <<= 1;
	dc->buckets = calloc(dc->n_buckets, sizeof(*dc->buckets));
	if (!dc->buckets) {
		free(dc);
		return NULL;
	}
	return dc;
}

static void lru_unlink(struct proxy_dnscache *dc, struct dc_entry *e)
{
	if (e->lprev)
		e->lprev->lnext = e->lnext;
	else
		dc->lru_head = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else
		dc->lru_tail = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void lru_push(struct proxy_dnscache *dc, struct dc_entry *e)
{
	e->lprev = NULL;
	e->lnext = dc->lru_head;
	if (dc->lru_head)
		dc->lru_head->lprev = e;
	dc->lru_head = e;
	if (!dc->lru_tail)
		dc->lru_tail = e;
}

static struct dc_entry **find_slot(struct proxy_dnscache *dc, const char *name, uint32_t h)
{
	struct dc_entry **pp = &dc->buckets[h & (dc->n_buckets - 1)];

	for (; *pp; pp = &(*pp)->hnext)
		if ((*pp)->hash == h && strcmp((*pp)->name, name) == 0)
			return pp;
	return pp;
}

static void remove_entry(struct proxy_dnscache *dc, struct dc_entry **slot)
{
	struct dc_entry *e = *slot;

	*slot = e->hnext;
	lru_unlink(dc, e);
	dc->n_entries--;
	free(e);
}

static void remove_by_ptr(struct proxy_dnscache *dc, struct dc_entry *e)
{
	struct dc_entry **pp = &dc->buckets[e->hash & (dc->n_buckets - 1)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		remove_entry(dc, pp);
}

bool proxy_dnscache_get(struct proxy_dnscache *dc, const char *name, struct proxy_addrs *out)
{
	uint32_t h = hash_name(name);
	struct dc_entry **slot, *e;

	if (!dc->n_entries) {
		dc->st.misses++;
		return false;
	}
	slot = find_slot(dc, name, h);
	e = *slot;
	if (!e) {
		dc->st.misses++;
		return false;
	}
	if (now_ms() >= e->expires_ms) {
		/* expired: the next answer is looked up and vetted afresh */
		remove_entry(dc, slot);
		dc->st.expired++;
		dc->st.misses++;
		return false;
	}
	lru_unlink(dc, e);
	lru_push(dc, e);
	memset(out, 0, sizeof(*out));
	out->n = e->n;
	out->ttl = e->ttl;
	memcpy(out->a, e->a, e->n * sizeof(e->a[0]));
	dc->st.hits++;
	return true;
}

static void store(struct proxy_dnscache *dc, const char *name, uint32_t h, const struct proxy_addrs *res)
{
	uint32_t ttl = res->ttl < dc->max_ttl ? res->ttl : dc->max_ttl;
	size_t nl = strlen(name) + 1, n = res->n < PROXY_RESOLVE_MAX ? res->n : PROXY_RESOLVE_MAX;
	struct dc_entry **slot, *e;

	if (!dc->max_entries || ttl == 0 || n == 0)
		return;
	slot = find_slot(dc, name, h);
	if (*slot)
		remove_entry(dc, slot);
	while (dc->n_entries >= dc->max_entries && dc->lru_tail) {
		remove_by_ptr(dc, dc->lru_tail);
		dc->st.evicted++;
	}
	e = malloc(sizeof(*e) + n * sizeof(e->a[0]) + nl);
	if (!e)
		return;
	memset(e, 0, sizeof(*e));
	e->hash = h;
	e->ttl = ttl;
	e->expires_ms = now_ms() + (uint64_t)ttl * 1000u;
	e->n = n;
	memcpy(e->a, res->a, n * sizeof(e->a[0]));
	e->name = (char *)&e->a[n];
	memcpy(e->name, name, nl);
	slot = &dc->buckets[h & (dc->n_buckets - 1)];
	e->hnext = *slot;
	*slot = e;
	lru_push(dc, e);
	dc->n_entries++;
}

void proxy_dnscache_put(struct proxy_dnscache *dc, const char *name, const struct proxy_addrs *res)
{
	store(dc, name, hash_name(name), res);
}

static void pending_unlink(struct proxy_dnscache *dc, struct dc_pending *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else if (dc)
		dc->pending = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->prev = p->next = NULL;
}

static void on_lookup_done(void *arg, int err, const struct proxy_addrs *res)
{
	struct dc_pending *p = arg;
	struct proxy_lookup *l;

	/* (nothing is stored here: conn.c stores an answer once a request's
	 * vetting found an address in it to dial, proxy_dnscache_put()) */
	if (p->dc)
		pending_unlink(p->dc, p);
	/* each waiter is unlinked before its callback runs, so a callback that
	 * cancels any lookup (its own included) leaves the list consistent */
	while ((l = p->waiters) != NULL) {
		proxy_resolve_cb cb = l->cb;
		void *cbarg = l->arg;

		p->waiters = l->next;
		if (p->waiters)
			p->waiters->prev = NULL;
		free(l);
		cb(cbarg, err, res);
	}
	free(p);
}

struct proxy_lookup *proxy_dnscache_lookup(struct proxy_dnscache *dc, const char *name,
					   proxy_resolve_cb cb, void *arg)
{
	uint32_t h = hash_name(name);
	struct dc_pending *p;
	struct proxy_lookup *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	for (p = dc->pending; p; p = p->next)
		if (p->hash == h && strcmp(p->name, name) == 0)
			break;
	if (!p) {
		size_t nl = strlen(name) + 1;

		p = calloc(1, sizeof(*p) + nl);
		if (!p) {
			free(l);
			return NULL;
		}
		p->dc = dc;
		p->hash = h;
		memcpy(p->name, name, nl);
		p->res = proxy_resolve_start(dc->dns, name, on_lookup_done, p);
		if (!p->res) {
			free(p);
			free(l);
			return NULL;
		}
		dc->st.queries++;
		p->next = dc->pending;
		if (dc->pending)
			dc->pending->prev = p;
		dc->pending = p;
	}
	l->p = p;
	l->cb = cb;
	l->arg = arg;
	l->next = p->waiters;
	if (p->waiters)
		p->waiters->prev = l;
	p->waiters = l;
	return l;
}

void proxy_lookup_cancel(struct proxy_lookup *l)
{
	struct dc_pending *p;

	if (!l)
		return;
	p = l->p;
	if (l->prev)
		l->prev->next = l->next;
	else
		p->waiters = l->next;
	if (l->next)
		l->next->prev = l->prev;
	free(l);
	/* the query goes on: its answer is still worth keeping */
}

void proxy_dnscache_stats(const struct proxy_dnscache *dc, struct proxy_dnscache_stats *st)
{
	*st = dc->st;
	st->entries = dc->n_entries;
}

void proxy_dnscache_free(struct proxy_dnscache *dc)
{
	struct dc_pending *p, *pn;

	if (!dc)
		return;
	while (dc->lru_head)
		remove_by_ptr(dc, dc->lru_head);
	for (p = dc->pending; p; p = pn) {
		struct proxy_lookup *l, *ln;

		pn = p->next;
		proxy_resolve_abandon(p->res);   /* frees itself when evdns is done */
		for (l = p->waiters; l; l = ln) {
			ln = l->next;
			free(l);
		}
		free(p);
	}
	free(dc->buckets);
	free(dc);
}
