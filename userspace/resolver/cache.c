/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.c - sluice-resolver's answer cache: upstream replies as received,
 * keyed by (normalised name, qtype), bounded in entries and bytes, least
 * recently used out first, each kept for the reply's TTL (reply_cache_ttl()
 * in decide.c, RFC 2181 8 and RFC 2308 5) capped at --cache-max-ttl.
 *
 * It stores bytes, never a verdict: the server asks it only after
 * rsv_decide() allowed the query under the policy in force, and what it
 * returns goes through rsv_process_cached(), the same answer filter as a
 * fresh reply.  A policy change restarts the resolver (docs/daemon.md), so
 * the cache never outlives the policy it was filled under either.
 */
#include "resolver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct centry {
	struct centry *hnext;          /* hash chain */
	struct centry *older, *newer;  /* LRU list: c->oldest ... c->newest */
	uint32_t hash;
	uint16_t qtype;
	double stored, expires;        /* monotonic seconds */
	size_t len;
	uint8_t *msg;                  /* points into the same allocation, after name */
	char name[];                   /* NUL-terminated, then the message bytes */
};

struct rsv_cache {
	struct centry **buckets;
	size_t n_buckets;              /* a power of two */
	size_t n, max;
	uint32_t max_ttl;
	struct centry *oldest, *newest;
	uint64_t hits, misses;
};

/* FNV-1a over the name and the qtype (the key). */
static uint32_t key_hash(const char *name, uint16_t qtype)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	h = (h ^ (qtype & 0xff)) * 16777619u;
	h = (h ^ (qtype >> 8)) * 16777619u;
	return h;
}

struct rsv_cache *rsv_cache_new(size_t max_entries, uint32_t max_ttl)
{
	struct rsv_cache *c;
	size_t nb = 16;

	if (max_entries == 0 || max_ttl == 0) {
		errno = 0;
		return NULL;
	}
	while (nb < max_entries && nb < ((size_t)1 << 24))
		nb <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->buckets = calloc(nb, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->n_buckets = nb;
	c->max = max_entries;
	c->max_ttl = max_ttl;
	return c;
}

static struct centry **find_slot(struct rsv_cache *c, const char *name, uint16_t qtype, uint32_t h)
{
	struct centry **pp = &c->buckets[h & (c->n_buckets - 1)];

	for (; *pp; pp = &(*pp)->hnext)
		if ((*pp)->hash == h && (*pp)->qtype == qtype && strcmp((*pp)->name, name) == 0)
			return pp;
	return pp;
}

static void lru_unlink(struct rsv_cache *c, struct centry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	e->older = e->newer = NULL;
}

static void lru_push(struct rsv_cache *c, struct centry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	else
		c->oldest = e;
	c->newest = e;
}

/* Remove the entry at *pp (its hash slot) and free it. */
static void remove_at(struct rsv_cache *c, struct centry **pp)
{
	struct centry *e = *pp;

	*pp = e->hnext;
	lru_unlink(c, e);
	c->n--;
	free(e);
}

static void remove_entry(struct rsv_cache *c, struct centry *e)
{
	struct centry **pp = find_slot(c, e->name, e->qtype, e->hash);

	if (*pp == e)
		remove_at(c, pp);
}

void rsv_cache_free(struct rsv_cache *c)
{
	struct centry *e, *next;

	if (!c)
		return;
	for (e = c->oldest; e; e = next) {
		next = e->newer;
		free(e);
	}
	free(c->buckets);
	free(c);
}

int rsv_cache_put(struct rsv_cache *c, const char *name, uint16_t qtype, const uint8_t *msg,
		  size_t len, uint32_t ttl, double now)
{
	uint32_t h;
	struct centry **pp, *e;
	size_t nl;

	if (!c || ttl == 0 || len == 0 || len > RSV_CACHE_MAX_MSG || !name[0])
		return 0;
	if (ttl > c->max_ttl)
		ttl = c->max_ttl;
	h = key_hash(name, qtype);
	pp = find_slot(c, name, qtype, h);
	if (*pp)
		remove_at(c, pp);
	while (c->n >= c->max && c->oldest)
		remove_entry(c, c->oldest);
	nl = strlen(name) + 1;
	e = malloc(sizeof(*e) + nl + len);
	if (!e)
		return -1;
	memset(e, 0, sizeof(*e));
	memcpy(e->name, name, nl);
	e->msg = (uint8_t *)e->name + nl;
	memcpy(e->msg, msg, len);
	e->len = len;
	e->hash = h;
	e->qtype = qtype;
	e->stored = now;
	e->expires = now + (double)ttl;
	/* the slot may have moved if an eviction emptied this chain */
	pp = find_slot(c, name, qtype, h);
	*pp = e;
	lru_push(c, e);
	c->n++;
	return 0;
}

bool rsv_cache_get(struct rsv_cache *c, const char *name, uint16_t qtype, double now,
		   const uint8_t **msg, size_t *len, uint32_t *age)
{
	uint32_t h;
	struct centry **pp, *e;

	if (!c || !name[0])
		return false;
	h = key_hash(name, qtype);
	pp = find_slot(c, name, qtype, h);
	e = *pp;
	if (!e) {
		c->misses++;
		return false;
	}
	if (now >= e->expires || now < e->stored) {
		remove_at(c, pp);
		c->misses++;
		return false;
	}
	lru_unlink(c, e);
	lru_push(c, e);
	c->hits++;
	*msg = e->msg;
	*len = e->len;
	*age = (uint32_t)(now - e->stored);
	return true;
}

void rsv_cache_drop(struct rsv_cache *c, const char *name, uint16_t qtype)
{
	struct centry **pp;

	if (!c || !name[0])
		return;
	pp = find_slot(c, name, qtype, key_hash(name, qtype));
	if (*pp)
		remove_at(c, pp);
}

size_t rsv_cache_count(const struct rsv_cache *c)
{
	return c ? c->n : 0;
}

void rsv_cache_stats(const struct rsv_cache *c, uint64_t *hits, uint64_t *misses)
{
	*hits = c ? c->hits : 0;
	*misses = c ? c->misses : 0;
}
