/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * upool.h - idle upstream HTTP connections kept for the next request.
 *
 * A connection is keyed by (the vetted address it was dialed to, port,
 * the normalised name it was dialed for, plain or TLS): it is only ever
 * handed to a request for the same name, on the same port, whose own
 * vetting put that address among its candidates.  A TLS one (inspected
 * HTTPS) is the plaintext end of a socketpair whose other end a TLS pump
 * relays to the origin over a session verified for that name
 * (tls_inspect.c); the pump lives as long as the socketpair end.  One proxy process serves one sandbox, so
 * a pool is never shared across sandboxes.  http.c gives a connection back
 * only after a response that was cleanly delimited (Content-Length or
 * chunked, not "until close"), with the request fully sent, nothing
 * unread, and no "Connection: close" from the origin.
 *
 * An idle connection is watched: any byte or EOF from the origin, or the
 * idle timeout (checked by one timer for the pool), closes it.  At most `per_key` idle connections per key and
 * `total` in all (the oldest goes first).
 */
#ifndef SLUICE_PROXY_UPOOL_H
#define SLUICE_PROXY_UPOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

struct event;
struct event_base;
struct proxy_upool;

/* per_key or total 0: nothing is kept. */
struct proxy_upool *proxy_upool_new(struct event_base *base, unsigned per_key, unsigned total,
				    const struct timeval *idle);

/* Closes every idle connection. */
void proxy_upool_free(struct proxy_upool *p);

/*
 * An upstream socket's read event (EV_READ | EV_PERSIST, added at once)
 * whose handler changes hands, from a request to the pool and back,
 * without the socket's epoll registration changing.
 */
typedef void (*proxy_io_fn)(void *owner, short what);
struct event *proxy_io_new(struct event_base *base, int fd, proxy_io_fn fn, void *owner);
void proxy_io_set(struct event *ev, proxy_io_fn fn, void *owner);
void proxy_io_free(struct event *ev);   /* NULL is ignored */

/*
 * An idle connection to `dst` (AF_INET/AF_INET6 with port) for `host`, TLS
 * (a verified session, `tls`) or plain; with
 * `check`, one that is still open right now (a recv(MSG_PEEK): for requests
 * that could not be sent again if it was not).  Its fd now belongs to the
 * caller, and so does *io, its proxy_io event (still added: give it a new
 * handler with proxy_io_set()).  -1: none.
 */
int proxy_upool_take(struct proxy_upool *p, const struct sockaddr *dst, const char *host, bool tls, bool check,
		     struct event **io);

/* Keep `fd` (connected to `dst` for `host`, TLS or plain, idle, its last response
 * complete) for a later request, with its proxy_io event `io` (or NULL);
 * the pool owns both from now on (it may close them at once when the pool
 * is full or disabled). */
void proxy_upool_put(struct proxy_upool *p, int fd, struct event *io, const struct sockaddr *dst,
		     const char *host, bool tls);

struct proxy_upool_stats {
	uint64_t taken, put, dropped_closed, dropped_timeout, dropped_full;
	unsigned idle;
};
void proxy_upool_stats(const struct proxy_upool *p, struct proxy_upool_stats *st);

#endif
