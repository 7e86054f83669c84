/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * resolve.h - asynchronous A + AAAA resolution of an allowed name with
 * libevent's evdns (upstream: --upstream-dns or /etc/resolv.conf; no search
 * list, no hosts file).  The proxy resolves names itself and dials only an
 * address it vetted from this one answer set: it never trusts the address
 * the client connected to, and never looks the name up a second time.
 */
#ifndef SLUICE_PROXY_RESOLVE_H
#define SLUICE_PROXY_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

struct evdns_base;

#define PROXY_RESOLVE_MAX 16   /* addresses kept per name (A and AAAA together) */

struct proxy_addr {
	int family;                /* AF_INET or AF_INET6 */
	uint8_t addr[16];          /* network byte order; IPv4 in addr[0..3] */
};

struct proxy_addrs {
	size_t n;
	uint32_t ttl;              /* seconds: the least TTL of the answers that had addresses */
	struct proxy_addr a[PROXY_RESOLVE_MAX];
};

/* err: 0 (answers in *res, possibly none), or a DNS_ERR_* code when both
 * queries failed. */
typedef void (*proxy_resolve_cb)(void *arg, int err, const struct proxy_addrs *res);

struct proxy_resolve;

/*
 * Start resolving `name` (normalised, no trailing dot) for A and AAAA.
 * `cb` runs once from the event loop when both answers (or errors) are in.
 * Returns a handle, or NULL if the queries could not be started.
 */
struct proxy_resolve *proxy_resolve_start(struct evdns_base *dns, const char *name,
					  proxy_resolve_cb cb, void *arg);

/*
 * The caller is going away: `cb` will not be called.  The queries finish
 * (or time out) on their own and then the handle frees itself (evdns may
 * still call back after a cancel, so nothing is freed under it).
 */
void proxy_resolve_abandon(struct proxy_resolve *r);

#endif
