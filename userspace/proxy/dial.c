/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dial.c - from a decided request or tunnel to a connected upstream socket:
 * the name's answers (the DNS cache or evdns), each vetted (special-purpose
 * ranges refused unless a tcp cidr entry or --allow-private-upstream names
 * them; the client's own destination first, then IPv4, then IPv6), an idle
 * pooled connection to one of them (upool.h) or a new non-blocking connect,
 * the next candidate when one fails.  Ends in conn_upstream_ready() or
 * conn_fail() (conn.c).
 */
#include "proxy.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "dnscache.h"
#include "log.h"
#include "upool.h"

void proxy_set_nodelay(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static bool same_addr(const struct proxy_addr *a, const struct sluice_orig *o)
{
	if (o->family == SLUICE_AF_INET)
		return a->family == AF_INET && memcmp(a->addr, &o->daddr[0], 4) == 0;
	return a->family == AF_INET6 && memcmp(a->addr, o->daddr, 16) == 0;
}

static void note_dropped(struct conn *c, const struct proxy_addr *a, const char *why)
{
	char ip[INET6_ADDRSTRLEN], *s;

	if (c->n_dropped >= PROXY_DROPPED_MAX)
		return;
	if (!inet_ntop(a->family, a->addr, ip, sizeof(ip)))
		return;
	if (asprintf(&s, "%s %s", ip, why ? why : "special") < 0)
		return;
	c->dropped[c->n_dropped++] = s;
}

static void dial_next(struct conn *c);

static void on_connect_ready(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int err = 0;
	socklen_t el = sizeof(err);

	conn_timer_plain(c);
	if (!(what & EV_WRITE)) {   /* the deadline (connect_deadline) passed */
		conn_fail(c, 504, "connect_timeout");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err) {
		log_debug("connect to upstream failed: %s", strerror(err));
		close(c->ufd);
		c->ufd = -1;
		c->have_dst = false;
		dial_next(c);
		return;
	}
	conn_upstream_ready(c);
}

static void sa_of(const struct proxy_addr *a, uint16_t port, union proxy_sa *sa, socklen_t *sl)
{
	memset(sa, 0, sizeof(*sa));
	if (a->family == AF_INET) {
		sa->in.sin_family = AF_INET;
		sa->in.sin_port = htons(port);
		memcpy(&sa->in.sin_addr, a->addr, 4);
		*sl = sizeof(sa->in);
	} else {
		sa->in6.sin6_family = AF_INET6;
		sa->in6.sin6_port = htons(port);
		memcpy(&sa->in6.sin6_addr, a->addr, 16);
		*sl = sizeof(sa->in6);
	}
}

/* An idle pooled connection to one of the vetted candidates, for the same
 * name and port (plain HTTP, or under terminated TLS a verified TLS session
 * to the origin for that name).  True when c->ufd is now one. */
static bool take_pooled(struct conn *c)
{
	/* a request http.c may send again on a new connection if the pooled
	 * one turns out closed needs no check before (saves a syscall) */
	bool replayable;

	if (!c->px->upool || c->kind != K_HTTP || !c->host || !c->req)
		return false;
	replayable = http_replayable(c);
	for (size_t i = 0; i < c->cands->n; i++) {
		union proxy_sa sa;
		socklen_t sl;
		int fd;

		sa_of(&c->cands->a[i], c->port, &sa, &sl);
		fd = proxy_upool_take(c->px->upool, &sa.sa, c->host, c->inspected, !replayable, &c->uio);
		if (fd >= 0) {
			c->ufd = fd;
			c->dst = sa;
			c->have_dst = true;
			c->reused = true;
			return true;
		}
	}
	return false;
}

/* Milliseconds since c's request started (t_mono). */
static uint32_t ms_since_start(const struct conn *c)
{
	return (uint32_t)(conn_elapsed_ns(c) / 1000000);
}

/* The connect deadline, cfg.connect_timeout_ms from now, for resolving
 * and every candidate (conn_start_dial; a redial of a stale pooled
 * connection has one of its own): c's timer armed for it (a plain timer
 * while resolving). */
static void connect_deadline(struct conn *c)
{
	c->dial_end_ms = ms_since_start(c) + c->px->cfg.connect_timeout_ms;
	event_del(c->timer);
	event_add(c->timer, &c->px->tv_connect);
}

/* Wait for fd's connect on c's timer, within what is left of the
 * deadline: one event for both, so that a dial makes no event of its own
 * (on_connect_ready makes it a plain timer again).  0, or -1. */
static int wait_connect(struct conn *c, int fd)
{
	uint32_t now = ms_since_start(c), left = c->dial_end_ms > now ? c->dial_end_ms - now : 0;
	struct timeval tv = { .tv_sec = left / 1000, .tv_usec = (suseconds_t)(left % 1000) * 1000 };

	event_del(c->timer);
	if (event_assign(c->timer, c->px->base, fd, EV_WRITE, on_connect_ready, c) < 0)
		return -1;
	return event_add(c->timer, &tv);
}

static void dial_next(struct conn *c)
{
	while (c->cands && c->cand_i < c->cands->n) {
		const struct proxy_addr *a = &c->cands->a[c->cand_i++];
		union proxy_sa sa;
		socklen_t sl;
		int fd;

		sa_of(a, c->port, &sa, &sl);
		fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			log_warn("upstream socket");
			continue;
		}
		proxy_set_nodelay(fd);
		if (connect(fd, &sa.sa, sl) == 0 || errno == EINPROGRESS) {
			c->ufd = fd;
			c->dst = sa;
			c->have_dst = true;
			if (wait_connect(c, fd) < 0) {
				conn_timer_plain(c);
				conn_fail(c, 503, "out_of_memory");
			}
			return;
		}
		log_debug("connect to upstream failed at once: %s", strerror(errno));
		close(fd);
	}
	conn_fail(c, 502, "connect_failed");
}

/* A copy of `from` just as long as its n addresses (c->cands: a dial in
 * progress holds no room for the 16 a name may have), or NULL. */
static struct proxy_addrs *cands_copy(const struct proxy_addrs *from)
{
	size_t n = offsetof(struct proxy_addrs, a) + from->n * sizeof(from->a[0]);
	struct proxy_addrs *to = malloc(n);

	if (to)
		memcpy(to, from, n);
	return to;
}

static void on_resolved(void *arg, int err, const struct proxy_addrs *res)
{
	struct conn *c = arg;
	struct proxy *px = c->px;
	struct proxy_addrs keep;
	bool orig_seen = false;

	c->lookup = NULL;
	if (err) {
		conn_fail(c, 502, "resolve_failed");
		return;
	}
	if (res->n == 0) {
		conn_fail(c, 502, "no_address");
		return;
	}
	keep.n = 0;
	keep.ttl = res->ttl;
	/* order: the client's own destination when it is a vetted answer,
	 * then IPv4, then IPv6 */
	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < res->n; i++) {
			const struct proxy_addr *a = &res->a[i];
			bool is_orig = c->form == PROXY_FORM_TRANSPARENT && same_addr(a, &c->orig);
			const char *why = NULL;

			if (pass == 0 && is_orig)
				orig_seen = true;
			if ((pass == 0) != is_orig)
				continue;
			if (pass == 1 && a->family != AF_INET)
				continue;
			if (pass == 2 && a->family != AF_INET6)
				continue;
			if (!proxy_addr_dialable(a->family, a->addr, px->cfg.allow_private,
						 px->cfg.n_allow_private, &why) &&
			    !proxy_policy_cidr_allows(px->policy, a->family, a->addr, c->port)) {
				note_dropped(c, a, why);
				continue;
			}
			keep.a[keep.n++] = *a;
		}
	}
	if (c->form == PROXY_FORM_TRANSPARENT && !c->ip_literal) {
		c->orig_dst_mismatch = !orig_seen;
		if (!orig_seen)
			log_debug("orig_dst_mismatch: %s does not resolve to the client's destination", c->host);
	}
	if (keep.n == 0) {
		conn_fail(c, 502, "no_public_address");
		return;
	}
	if (!(c->cands = cands_copy(&keep))) {
		conn_fail(c, 503, "out_of_memory");
		return;
	}
	/* a fresh answer with an address this request may dial: worth keeping
	 * (the next requests vet it again) */
	if (!c->answer_cached && !c->ip_literal && c->host)
		proxy_dnscache_put(px->dnscache, c->host, res);
	c->cand_i = 0;
	c->phase = PH_CONNECT;
	if (take_pooled(c)) {
		conn_upstream_ready(c);
		return;
	}
	dial_next(c);
}

void conn_redial(struct conn *c)
{
	struct proxy_addrs one;
	struct proxy_addr a;

	/* the address was vetted for this request; a new connection to it */
	memset(&a, 0, sizeof(a));
	a.family = c->dst.sa.sa_family;
	if (a.family == AF_INET)
		memcpy(a.addr, &c->dst.in.sin_addr, 4);
	else
		memcpy(a.addr, &c->dst.in6.sin6_addr, 16);
	http_upstream_reset(c);
	if (c->ufd >= 0) {
		close(c->ufd);
		c->ufd = -1;
	}
	free(c->cands);
	one.n = 1;
	one.ttl = 0;
	one.a[0] = a;
	c->cands = cands_copy(&one);
	if (!c->cands) {
		c->failed = true;
		c->reason = "out_of_memory";
		conn_finish(c);
		return;
	}
	c->cand_i = 0;
	c->reused = false;
	c->retried = true;
	c->have_dst = false;
	c->phase = PH_CONNECT;
	connect_deadline(c);
	dial_next(c);
}

void conn_start_dial(struct conn *c)
{
	struct proxy *px = c->px;

	c->phase = PH_RESOLVE;
	connect_deadline(c);
	if (c->ip_literal) {
		/* only in audit mode: an IP literal is dialed as is, if vetted */
		struct proxy_addrs a;

		memset(&a, 0, sizeof(a));
		a.n = 1;
		a.a[0].family = c->ip_family;
		memcpy(a.a[0].addr, c->ip, 16);
		on_resolved(c, 0, &a);
		return;
	}
	if (!c->host) {
		conn_fail(c, 503, "out_of_memory");
		return;
	}
	{
		struct proxy_addrs cached;

		/* a kept answer is vetted again by on_resolved like a new one */
		if (proxy_dnscache_get(px->dnscache, c->host, &cached)) {
			c->answer_cached = true;
			on_resolved(c, 0, &cached);
			return;
		}
	}
	c->lookup = proxy_dnscache_lookup(px->dnscache, c->host, on_resolved, c);
	if (!c->lookup)
		conn_fail(c, 502, "resolve_failed");
}
