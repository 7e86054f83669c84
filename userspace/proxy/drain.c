/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * drain.c - the proxy's open connections and how it stops (proxy.h).
 *
 * A reload starts a new proxy on the same listening sockets, then sends
 * the old one SIGQUIT: it stops accepting and lets every open connection
 * finish under the policy it was decided by (the kernel judges new ones by
 * the new generation, the new proxy decides new requests), within
 * cfg.drain_timeout_ms; what is still open then is closed with reason
 * "drain_deadline".  SIGTERM stops the same way with a short grace
 * (STOP_GRACE_MS), then closes the rest with reason "proxy_stopped": a
 * tunnel or request whose client has just gone (sluice run stops its proxy
 * the moment CMD exits) ends as it ended, not as cut.  A second SIGTERM,
 * or one during a drain, closes everything at once.  Either way each
 * request in progress gets its access-log line: none is dropped.
 */
#include <errno.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "log.h"
#include "proxy.h"
#include "tls_pump.h"
#include "upool.h"

#define DRAIN_TICK_MS 100
#define STOP_GRACE_MS 300   /* SIGTERM: what ends by then ends as it ends */

void proxy_conn_track(struct proxy *px, struct conn *c)
{
	c->all_prev = NULL;
	c->all_next = px->conns;
	if (px->conns)
		px->conns->all_prev = c;
	px->conns = c;
}

void proxy_conn_untrack(struct proxy *px, struct conn *c)
{
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else if (px->conns == c)
		px->conns = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	c->all_prev = c->all_next = NULL;
}

void proxy_drain_check(struct proxy *px)
{
	if (px->draining && !px->conns && LIST_EMPTY(&px->tunnels) && !tls_pump_live())
		event_base_loopbreak(px->base);
}

/* Idle between requests (READ after a request, nothing buffered) and the
 * client has sent nothing more (a request already on its way is served). */
static bool idle_between_requests(struct conn *c)
{
	char b;

	if (c->phase != PH_READ || !c->nreq || c->len)
		return false;
	return recv(c->cfd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

void proxy_drain_idle(struct conn *c)
{
	if (!idle_between_requests(c))
		return;
	c->logged = true;   /* nothing was asked on it since its last line */
	conn_finish(c);
}

/* Finish every open connection: a request in progress or a tunnel is
 * logged with `reason` (a failure); one idle between requests closes
 * without a line. */
static void finish_all(struct proxy *px, const char *reason)
{
	while (!LIST_EMPTY(&px->tunnels))
		tunnel_cut(LIST_FIRST(&px->tunnels), reason);
	while (px->conns) {
		struct conn *c = px->conns;

		if (c->phase == PH_READ && c->nreq && !c->len) {
			c->logged = true;
		} else if (!c->logged) {
			c->failed = true;
			c->reason = reason;
		}
		conn_finish(c);   /* untracks c (and any connection it owns) */
	}
}

static void on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;
	struct conn *c = px->conns, *next;

	for (; c; c = next) {
		next = c->all_next;
		/* closing c frees no other connection: an inspected one's outer
		 * TLS side is in a phase past READ */
		proxy_drain_idle(c);
	}
	/* the last TLS relays (an inspected connection's answer on its way
	 * out) free themselves: done when they are gone too */
	proxy_drain_check(px);
}

static void on_drain_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;
	unsigned n = px->n_conns;

	if (n && !px->stopping)
		log_warnx("drain: %u connection(s) still open after %u ms: closed (drain_deadline)", n,
			  px->cfg.drain_timeout_ms);
	finish_all(px, px->stopping ? "proxy_stopped" : "drain_deadline");
	event_base_loopbreak(px->base);
}

static void stop_accepting(struct proxy *px)
{
	for (size_t i = 0; i < px->n_listeners; i++)
		evconnlistener_free(px->listeners[i]);
	px->n_listeners = 0;
}

/* Stop accepting, close what is idle, give the rest `ms` to finish
 * (on_drain_deadline then closes them).  0 or -1 (no memory: the caller
 * stops at once). */
static int drain_begin(struct proxy *px, unsigned ms)
{
	struct timeval tick = { 0, DRAIN_TICK_MS * 1000 };
	struct timeval dl = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	px->draining = true;
	stop_accepting(px);
	/* idle upstream connections serve no one any more (a verified TLS
	 * session's pump ends when its plaintext side closes): no request
	 * takes or gives one back from now on */
	proxy_upool_free(px->upool);
	px->upool = NULL;
	log_debug("drain: %u open connection(s), deadline %u ms", px->n_conns, ms);
	px->drain_tick = event_new(px->base, -1, EV_PERSIST, on_drain_tick, px);
	px->drain_deadline = evtimer_new(px->base, on_drain_deadline, px);
	if (!px->drain_tick || !px->drain_deadline || event_add(px->drain_tick, &tick) < 0 ||
	    event_add(px->drain_deadline, &dl) < 0)
		return -1;
	return 0;
}

void proxy_drain_start(struct proxy *px)
{
	if (px->draining)
		return;
	if (drain_begin(px, px->cfg.drain_timeout_ms) < 0) {
		proxy_stop_now(px);
		return;
	}
	/* what the reload's policy refuses is cut now (redecide.c) */
	proxy_redecide_start(px);
	on_drain_tick(-1, 0, px);
}

/* Close everything now, reason "proxy_stopped", and leave the loop. */
static void stop_at_once(struct proxy *px)
{
	stop_accepting(px);
	px->draining = false;   /* no loopbreak as each one goes (proxy_drain_check): one below */
	finish_all(px, "proxy_stopped");
	event_base_loopbreak(px->base);
}

void proxy_stop_now(struct proxy *px)
{
	if (px->draining || px->stopping) {
		stop_at_once(px);
		return;
	}
	px->stopping = true;
	if (drain_begin(px, STOP_GRACE_MS) < 0) {
		stop_at_once(px);
		return;
	}
	on_drain_tick(-1, 0, px);
}
