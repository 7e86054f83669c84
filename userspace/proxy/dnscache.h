/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dnscache.h - the proxy's answers to its own A + AAAA lookups (resolve.h),
 * kept for their TTL so that a name is not looked up for every request.
 *
 * Only vetted answers are kept: conn.c stores an answer set (exactly as
 * the upstream resolver gave it to the proxy, never anything a client
 * said) once a request's vetting found an address in it to dial.  And it
 * is not trusted even then: every request vets the cached set again with
 * the same rules as a fresh one, and dials only a vetted address.  A
 * connection in flight holds its own copy of its candidates, so a later
 * answer (DNS rebinding) cannot move it; once an entry expires the next
 * request looks the name up again and vets the new answer.
 *
 * Bounded: at most `max_entries` names (least recently used dropped first)
 * and at most `max_ttl` seconds per entry, whatever the TTL says.  Only
 * answers with at least one address and a TTL above zero are kept (no
 * negative caching).  Concurrent lookups of one name share one query.
 */
#ifndef SLUICE_PROXY_DNSCACHE_H
#define SLUICE_PROXY_DNSCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resolve.h"

struct evdns_base;
struct proxy_dnscache;
struct proxy_lookup;

/* max_ttl 0 or max_entries 0: nothing is kept (lookups are still shared
 * while in flight). */
struct proxy_dnscache *proxy_dnscache_new(struct evdns_base *dns, size_t max_entries, unsigned max_ttl);

/* Frees the entries; lookups in flight are abandoned (their callbacks are
 * not called). */
void proxy_dnscache_free(struct proxy_dnscache *dc);

/* A fresh entry for `name`: copies it to *out and returns true. */
bool proxy_dnscache_get(struct proxy_dnscache *dc, const char *name, struct proxy_addrs *out);

/*
 * Look `name` up (joining a lookup of the same name already in flight);
 * `cb` runs once from the event loop with the answer (resolve.h).  Returns
 * a handle for proxy_lookup_cancel(), or NULL when no query could be
 * started.
 */
struct proxy_lookup *proxy_dnscache_lookup(struct proxy_dnscache *dc, const char *name,
					   proxy_resolve_cb cb, void *arg);

/* Keep the answer `res` for `name` (after vetting: see above), for
 * min(res->ttl, max_ttl); ignored when it has no address or TTL 0. */
void proxy_dnscache_put(struct proxy_dnscache *dc, const char *name, const struct proxy_addrs *res);

/* The caller is going away: `cb` will not be called.  NULL is ignored. */
void proxy_lookup_cancel(struct proxy_lookup *l);

/* Counters for tests and diagnostics. */
struct proxy_dnscache_stats {
	uint64_t hits, misses, queries, expired, evicted;
	size_t entries;
};
void proxy_dnscache_stats(const struct proxy_dnscache *dc, struct proxy_dnscache_stats *st);

#endif
