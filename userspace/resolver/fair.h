/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fair.h - sluice-resolver under a flood: a per-client rate limit on the
 * queries it answers itself without forwarding (denied names, refusals),
 * so that allowed names keep being answered, and the count of every query
 * dropped (rate-limited, or lost in the socket's receive queue: the
 * kernel's SO_MEMINFO drop counter), reported in summary lines at most once a
 * second ("dns-queries-dropped", docs/events.md).
 */
#ifndef SLUICE_RESOLVER_FAIR_H
#define SLUICE_RESOLVER_FAIR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct sluice_evlog;

#define RSV_DENIED_RATE  200    /* default: locally answered queries per client per second */
#define RSV_DENIED_BURST 400    /* ... and at once */

enum rsv_drop {
	RSV_DROP_RATE_LIMITED,      /* over its client's rate of denied names: not answered, no line */
	RSV_DROP_SOCKET_OVERFLOW,   /* the kernel dropped it: the receive queue was full */
	RSV_DROP_SHUTDOWN,          /* still queued, unread, when the resolver stopped (SIGTERM) */
	RSV_DROP__MAX,
};

/* What the resolver did to a TCP client for want of room (the client limit,
 * or descriptors); reported in "dns-tcp-refused" summary lines beside the
 * dropped queries' (a refused connection's queries are never read: they
 * are not counted as queries). */
enum rsv_tcp_shed {
	RSV_TCP_CLOSED_IDLE,         /* an idle client closed to admit a new one (RFC 7766 6.2.3) */
	RSV_TCP_REFUSED_LIMIT,       /* a new client refused: at the client limit, none idle */
	RSV_TCP_REFUSED_DESCRIPTORS, /* a new client refused at EMFILE/ENFILE (accept_backoff.h) */
	RSV_TCP__MAX,
};

struct rsv_fair;

/* Before each summary, poll(arg) (the server counts its sockets' drops). */
void rsv_fair_set_poll(struct rsv_fair *f, void (*poll)(void *arg), void *arg);

/* A limiter allowing `rate` locally answered queries per second per client
 * address (burst `burst`; rate 0: no limit), writing its summary lines to
 * log on base.  NULL on ENOMEM. */
struct rsv_fair *rsv_fair_new(struct event_base *base, struct sluice_evlog *log, unsigned rate, unsigned burst);

/* May a query from `client` that is not forwarded be answered (and logged)
 * now, at monotonic time `now` (seconds)?  false: drop it (counted). */
bool rsv_fair_admit(struct rsv_fair *f, const struct sockaddr_storage *client, double now);

/* Count n queries dropped for `why`. */
void rsv_fair_count(struct rsv_fair *f, enum rsv_drop why, uint64_t n);

/* Count one TCP client shed for `why`. */
void rsv_fair_count_tcp(struct rsv_fair *f, enum rsv_tcp_shed why);

/* TCP clients shed so far for `why`. */
uint64_t rsv_fair_tcp(const struct rsv_fair *f, enum rsv_tcp_shed why);

/* Dropped so far for `why`. */
uint64_t rsv_fair_dropped(const struct rsv_fair *f, enum rsv_drop why);

/* Write the summary of what is not reported yet (at exit), then free. */
void rsv_fair_free(struct rsv_fair *f);

#endif
