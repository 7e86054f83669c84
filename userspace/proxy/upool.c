/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * upool.c - see upool.h.  Idle connections hang in a hash bucket (newest
 * first, so a take reuses the warmest one) and in one list by age (for the
 * total cap and the idle timeout, which one timer sweeps).  Each keeps the
 * read event it had while serving a request: readable while idle means the
 * origin closed it or sent something it should not have, and it is closed.
 */
#include "upool.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#define UP_BUCKETS 256

/* --- proxy_io: an event whose handler can change hands ---------------------- */

struct io_slot {
	proxy_io_fn fn;
	void *owner;
};

static void io_trampoline(evutil_socket_t fd, short what, void *arg)
{
	struct io_slot *s = arg;

	/* (the handler may free the event and the slot: not touched after) */
	s->fn(s->owner, what);
}

struct event *proxy_io_new(struct event_base *base, int fd, proxy_io_fn fn, void *owner)
{
	struct io_slot *s = malloc(sizeof(*s));
	struct event *ev;

	if (!s)
		return NULL;
	s->fn = fn;
	s->owner = owner;
	ev = event_new(base, fd, EV_READ | EV_PERSIST, io_trampoline, s);
	if (!ev || event_add(ev, NULL) < 0) {
		if (ev)
			event_free(ev);
		free(s);
		return NULL;
	}
	return ev;
}

void proxy_io_set(struct event *ev, proxy_io_fn fn, void *owner)
{
	struct io_slot *s = event_get_callback_arg(ev);

	s->fn = fn;
	s->owner = owner;
}

void proxy_io_free(struct event *ev)
{
	struct io_slot *s;

	if (!ev)
		return;
	s = event_get_callback_arg(ev);
	event_free(ev);
	free(s);
}

/* --- the pool ---------------------------------------------------------------- */

struct up_conn {
	struct proxy_upool *pool;
	struct up_conn *bprev, *bnext;      /* bucket, newest first */
	struct up_conn *aprev, *anext;      /* age, oldest first */
	struct event *io;
	int fd;
	uint32_t hash;
	int family;
	uint16_t port;
	bool tls;                           /* a verified TLS session to the origin (tls_inspect.c) */
	uint8_t addr[16];
	uint64_t since_ms;                  /* put back at */
	char host[];
};

struct proxy_upool {
	struct event_base *base;
	unsigned per_key, total, n_idle;
	uint64_t idle_ms;
	struct event *sweep;                /* added while anything is idle */
	struct timeval sweep_tv;
	struct up_conn *buckets[UP_BUCKETS];
	struct up_conn *old_head, *old_tail;
	struct proxy_upool_stats st;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Unlink, close and free; returns the next younger one. */
static struct up_conn *drop(struct up_conn *u)
{
	struct proxy_upool *p = u->pool;
	struct up_conn **bh = &p->buckets[u->hash % UP_BUCKETS];
	struct up_conn *younger = u->anext;

	if (u->bprev)
		u->bprev->bnext = u->bnext;
	else
		*bh = u->bnext;
	if (u->bnext)
		u->bnext->bprev = u->bprev;
	if (u->aprev)
		u->aprev->anext = u->anext;
	else
		p->old_head = u->anext;
	if (u->anext)
		u->anext->aprev = u->aprev;
	else
		p->old_tail = u->aprev;
	p->n_idle--;
	proxy_io_free(u->io);
	if (u->fd >= 0)
		close(u->fd);
	free(u);
	if (!p->n_idle)
		event_del(p->sweep);
	return younger;
}

/* Close what has been idle for the idle timeout (the oldest come first). */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_upool *p = arg;
	uint64_t now = now_ms();
	struct up_conn *u = p->old_head;

	while (u && now - u->since_ms >= p->idle_ms) {
		p->st.dropped_timeout++;
		u = drop(u);
	}
}

/* An idle connection became readable: EOF, a reset, or bytes nobody asked for. */
static void on_idle_io(void *owner, short what)
{
	struct up_conn *u = owner;

	u->pool->st.dropped_closed++;
	(void)drop(u);
}

struct proxy_upool *proxy_upool_new(struct event_base *base, unsigned per_key, unsigned total,
				    const struct timeval *idle)
{
	struct proxy_upool *p = calloc(1, sizeof(*p));
	uint64_t tick;

	if (!p)
		return NULL;
	p->base = base;
	p->per_key = per_key;
	p->total = total;
	p->idle_ms = (uint64_t)idle->tv_sec * 1000u + (uint64_t)idle->tv_usec / 1000u;
	if (!p->idle_ms)
		p->idle_ms = 1;
	/* swept four times per idle timeout: closed at most a quarter late */
	tick = p->idle_ms / 4 ? p->idle_ms / 4 : 1;
	p->sweep_tv.tv_sec = (time_t)(tick / 1000);
	p->sweep_tv.tv_usec = (suseconds_t)(tick % 1000) * 1000;
	p->sweep = event_new(base, -1, EV_PERSIST, on_sweep, p);
	if (!p->sweep) {
		free(p);
		return NULL;
	}
	return p;
}

/* family, address and port of an AF_INET/AF_INET6 sockaddr; false for others */
static bool key_of(const struct sockaddr *sa, int *family, uint8_t addr[16], uint16_t *port)
{
	memset(addr, 0, 16);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		memcpy(addr, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(addr, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
	} else {
		return false;
	}
	*family = sa->sa_family;
	return true;
}

static uint32_t hash_key(int family, const uint8_t *addr, uint16_t port, const char *host, bool tls)
{
	uint32_t h = 2166136261u;           /* FNV-1a over the whole key */

	h = (h ^ (uint32_t)family) * 16777619u;
	h = (h ^ (uint32_t)tls) * 16777619u;
	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619u;
	h = (h ^ (port & 0xff)) * 16777619u;
	h = (h ^ (port >> 8)) * 16777619u;
	for (const char *s = host; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static bool same_key(const struct up_conn *u, uint32_t h, int family, const uint8_t *addr, uint16_t port,
		     const char *host, bool tls)
{
	return u->hash == h && u->family == family && u->port == port && u->tls == tls &&
	       memcmp(u->addr, addr, 16) == 0 && strcmp(u->host, host) == 0;
}

/* Still open and silent: nothing to read, no EOF, no error. */
static bool still_open(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

int proxy_upool_take(struct proxy_upool *p, const struct sockaddr *dst, const char *host, bool tls, bool check,
		     struct event **io)
{
	int family;
	uint8_t addr[16];
	uint16_t port;
	uint32_t h;
	struct up_conn *u, *next;

	if (!p || !p->n_idle || !key_of(dst, &family, addr, &port))
		return -1;
	h = hash_key(family, addr, port, host, tls);
	for (u = p->buckets[h % UP_BUCKETS]; u; u = next) {
		int fd;

		next = u->bnext;
		if (!same_key(u, h, family, addr, port, host, tls))
			continue;
		if (check && !still_open(u->fd)) {
			p->st.dropped_closed++;
			(void)drop(u);
			continue;
		}
		fd = u->fd;
		*io = u->io;
		u->fd = -1;
		u->io = NULL;
		(void)drop(u);
		p->st.taken++;
		return fd;
	}
	return -1;
}

void proxy_upool_put(struct proxy_upool *p, int fd, struct event *io, const struct sockaddr *dst,
		     const char *host, bool tls)
{
	int family;
	uint8_t addr[16];
	uint16_t port;
	uint32_t h;
	unsigned same = 0;
	struct up_conn *u, *oldest_same = NULL, **bh;
	size_t hl = strlen(host) + 1;

	if (!p || !p->per_key || !p->total || !key_of(dst, &family, addr, &port))
		goto close;
	h = hash_key(family, addr, port, host, tls);
	bh = &p->buckets[h % UP_BUCKETS];
	for (u = *bh; u; u = u->bnext) {
		if (same_key(u, h, family, addr, port, host, tls)) {
			same++;
			oldest_same = u;         /* the bucket is newest first */
		}
	}
	if (same >= p->per_key && oldest_same) {
		p->st.dropped_full++;
		(void)drop(oldest_same);
	}
	for (u = p->old_head; u && p->n_idle >= p->total;) {
		p->st.dropped_full++;
		u = drop(u);
	}
	u = calloc(1, sizeof(*u) + hl);
	if (!u)
		goto close;
	if (!io)
		io = proxy_io_new(p->base, fd, on_idle_io, u);
	else
		proxy_io_set(io, on_idle_io, u);
	if (!io) {
		free(u);
		goto close;
	}
	u->pool = p;
	u->io = io;
	u->fd = fd;
	u->hash = h;
	u->family = family;
	u->port = port;
	u->tls = tls;
	u->since_ms = now_ms();
	memcpy(u->addr, addr, 16);
	memcpy(u->host, host, hl);
	bh = &p->buckets[h % UP_BUCKETS];
	u->bnext = *bh;
	if (*bh)
		(*bh)->bprev = u;
	*bh = u;
	u->aprev = p->old_tail;
	if (p->old_tail)
		p->old_tail->anext = u;
	else
		p->old_head = u;
	p->old_tail = u;
	if (!p->n_idle++)
		event_add(p->sweep, &p->sweep_tv);
	p->st.put++;
	return;
close:
	proxy_io_free(io);
	close(fd);
}

void proxy_upool_stats(const struct proxy_upool *p, struct proxy_upool_stats *st)
{
	*st = p->st;
	st->idle = p->n_idle;
}

void proxy_upool_free(struct proxy_upool *p)
{
	struct up_conn *u;

	if (!p)
		return;
	for (u = p->old_head; u;)
		u = drop(u);
	event_free(p->sweep);
	free(p);
}
