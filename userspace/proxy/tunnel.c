/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel.c - a decided passthrough tunnel while its relay runs (proxy.h).
 *
 * A tunnel may stay open for hours with nothing moving, and a proxy holds
 * thousands: what one costs idle is what the proxy costs.  A connection's
 * record (struct conn) is made at accept; when it becomes a tunnel, the
 * tunnel's record and its relay's are made in that same memory, keeping
 * what the tunnel's one access-log line and a reload's re-decision read
 * (docs/performance.md, "Proxy, memory").  A new allocation instead would
 * not cost less: when many connections open at once, every one of them
 * holds its record before the first becomes a tunnel, and the records
 * freed then are holes in the heap that stay resident.  The line is
 * written by conn_log() from a view of the tunnel as a connection
 * (tunnel_view), so that a tunnel's line and a request's are made by the
 * same code.
 */
#include "proxy.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay.h"

_Static_assert(sizeof(struct tunnel) <= sizeof(struct conn), "a tunnel is made in its connection's memory");

void tunnel_view(const struct tunnel *t, struct conn *v)
{
	memset(v, 0, sizeof(*v));
	v->px = t->px;
	v->cfd = t->cfd;
	v->ufd = t->ufd;
	v->phase = PH_TUNNEL;
	v->kind = t->kind;
	v->form = t->form;
	v->relay = t->relay;
	v->t_real = t->t_real;
	v->t_mono = t->t_mono;
	v->orig = t->orig;
	v->have_orig = t->have_orig;
	v->peer = t->peer;
	v->dst = t->dst;
	v->have_dst = t->have_dst;
	v->exe = t->exe;
	v->host = t->host;
	v->sni = t->sni;
	v->host_sent = t->host_sent;
	for (size_t i = 0; i < t->n_dropped; i++)
		v->dropped[i] = t->dropped[i];
	v->n_dropped = t->n_dropped;
	v->verdict = t->verdict;
	v->reason = t->reason;
	v->deny_reason = t->deny_reason;
	v->reload_reason = t->reload_reason;
	v->rule = t->rule;
	v->rule_entry = t->rule_entry;
	v->method = t->method;
	v->status = t->status;
	v->orig_dst_mismatch = t->orig_dst_mismatch;
	v->nreq = t->nreq;
	v->req_ok = t->req_ok;
	v->port = t->port;
	v->failed = t->failed;
	v->req_bytes = v->resp_bytes = -1;
}

/* Fill *t (zeroed first) with what c's line and re-decision need: c's
 * sockets, strings and refused answers (dropped) are taken (-1 / NULL /
 * none in c).  t is not in c's memory yet. */
static void take(struct tunnel *t, struct conn *c)
{
	memset(t, 0, sizeof(*t));
	t->px = c->px;
	t->cfd = c->cfd;
	t->ufd = c->ufd;
	c->cfd = c->ufd = -1;
	t->kind = c->kind;
	t->form = c->form;
	t->t_real = c->t_real;
	t->t_mono = c->t_mono;
	t->orig = c->orig;
	t->have_orig = c->have_orig;
	t->peer = c->peer;
	t->dst = c->dst;
	t->have_dst = c->have_dst;
	t->exe = c->exe;
	t->host = c->host;
	t->sni = c->sni;
	t->host_sent = c->host_sent;
	c->exe = c->host = c->sni = c->host_sent = NULL;
	for (size_t i = 0; i < c->n_dropped && i < PROXY_DROPPED_MAX; i++)
		t->dropped[t->n_dropped++] = c->dropped[i];
	c->n_dropped = 0;
	t->verdict = c->verdict;
	t->reason = c->reason;
	t->deny_reason = c->deny_reason;
	t->reload_reason = c->reload_reason;
	t->rule = c->rule;
	t->rule_entry = c->rule_entry;
	t->method = c->method;
	t->status = c->status;
	t->orig_dst_mismatch = c->orig_dst_mismatch;
	t->nreq = c->nreq;
	t->req_ok = c->req_ok;
	t->port = c->port;
	t->failed = c->failed;
}

/* The line (bytes: -1 when none moved through a relay), then everything
 * of t goes. */
static void finish(struct tunnel *t, int64_t up, int64_t down)
{
	struct proxy *px = t->px;
	struct conn v;

	tunnel_view(t, &v);
	v.req_bytes = up;
	v.resp_bytes = down;
	conn_log(&v);
	relay_free(t->relay);
	close(t->cfd);
	close(t->ufd);
	free(t->exe);
	free(t->host);
	free(t->sni);
	free(t->host_sent);
	for (size_t i = 0; i < t->n_dropped; i++)
		free(t->dropped[i]);
	LIST_REMOVE(t, link);
	free(t);
	px->n_conns--;
	proxy_drain_check(px);
}

static void on_relay_done(void *arg, const char *err, uint64_t up, uint64_t down)
{
	struct tunnel *t = arg;

	if (err) {
		t->failed = true;
		t->reason = err;
	}
	finish(t, (int64_t)up, (int64_t)down);
}

void tunnel_cut(struct tunnel *t, const char *reason)
{
	uint64_t up, down;

	t->failed = true;
	t->reason = reason;
	if (!t->relay) {
		finish(t, -1, -1);
		return;
	}
	relay_counts(t->relay, &up, &down);
	finish(t, (int64_t)up, (int64_t)down);
}

void tunnel_start(struct conn *c)
{
	struct proxy *px = c->px;
	struct tunnel kept, *t;
	struct event *ev[2];
	char *init = c->buf;
	size_t ilen = c->len;

	take(&kept, c);
	conn_events_to_relay(c, ev);
	c->buf = NULL;
	c->len = c->cap = 0;
	conn_release(c);
	/* c's memory (malloc'd: proxy_accept) becomes the tunnel's; it keeps
	 * c's place among the open connections (px->n_conns) */
	t = memcpy((void *)c, &kept, sizeof(kept));
	LIST_INSERT_HEAD(&px->tunnels, t, link);
	t->relay = relay_start(t->relay_mem, px->base, t->cfd, t->ufd, init, ilen, ev, true,
			       on_relay_done, t);
	if (!t->relay)
		tunnel_cut(t, "relay_error");
}
