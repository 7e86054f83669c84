/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * redecide.c - a reload's old proxy decides what it still has open again,
 * under the policy the reload brought (proxy.h, docs/reliability.md).
 *
 * A reload starts a new proxy on the new policy and sends the old one
 * SIGQUIT (drain.c).  Letting the old one finish everything under the old
 * policy would keep a tunnel or a download going that the new policy
 * refuses, for as long as it lasts.  So when the drain starts, the old proxy
 * reads its --policy file again (the daemon's copy, replaced by rename
 * before the SIGQUIT, so the new policy or a newer one): each open tunnel
 * and each request in progress that it refuses is cut, and each request
 * that comes later on a connection still open (pipelined, or the rest of a
 * head) is decided under both policies and refused unless both allow it.
 * What the new policy also allows is never touched.  Every cut or refusal
 * has its line: event.reason "policy_reloaded", with what the new policy
 * said (sluice.reload.reason) and its digest.
 *
 * Connections the kernel let through by a cidr entry never pass the proxy:
 * they are not re-decided here (docs/reliability.md, known gaps).
 */
#include <string.h>

#include "log.h"
#include "proxy.h"
#include "relay.h"

/* The mode decisions under np are taken in: --mode wins, as at start. */
static enum sluice_mode next_mode(const struct proxy *px)
{
	return px->cfg.mode >= 0 ? (enum sluice_mode)px->cfg.mode : px->next_policy->mode;
}

/* Does the new policy let through what `d` (its decision) is about?  Audit
 * mode lets through what it would deny, as on a new connection. */
static bool next_lets_through(const struct proxy *px, const struct proxy_decision *d)
{
	return d->allow || (next_mode(px) == SLUICE_MODE_AUDIT && d->audit_ok);
}

/* Decide c's request or tunnel again under px->next_policy into *d.
 * False when there is nothing to decide (nothing decided yet, or gone). */
static bool decide_next(const struct conn *c, struct proxy_decision *d)
{
	const struct sluice_policy *np = c->px->next_policy;
	struct sluice_exe_id who;

	memset(d, 0, sizeof(*d));
	switch (c->kind) {
	case K_HTTP:
		if (!c->req_ok || !c->req || !c->target)
			return false;
		proxy_decide_url_for(np, conn_who(c, &who), c->inspected ? "https" : "http", c->target->host,
				     c->target->port, c->req->method, c->target->path, d);
		if (c->ws)
			proxy_ws_decide(c->req, d);
		return true;
	case K_CONNECT:
		/* (the CONNECT host: the ClientHello's SNI had to equal it) */
		if (!c->host)
			return false;
		proxy_decide_tls_for(np, conn_who(c, &who), c->host, c->port, d);
		return true;
	case K_TLS:
		if (!c->sni || !c->sni[0])
			return false;
		proxy_decide_tls_for(np, conn_who(c, &who), c->sni, c->port, d);
		return true;
	default:
		return false;
	}
}

int proxy_redecide_start(struct proxy *px)
{
	struct sluice_policy_error perr;
	struct sluice_policy *np = NULL;
	struct conn *c, *next;
	unsigned cut = 0;

	const char *path = px->cfg.policy_next ? px->cfg.policy_next : px->cfg.policy_path;

	if (!path || px->next_policy)
		return 0;
	if (sluice_policy_load_file(path, &np, &perr) < 0) {
		char buf[512];

		/* the new proxy could not start on it either: nothing to compare with */
		log_warnx("drain: the policy cannot be read again (%s): open connections finish under the old one",
			  sluice_policy_error_str(&perr, buf, sizeof(buf)));
		return -1;
	}
	if (strcmp(np->digest, px->policy->digest) == 0) {
		sluice_policy_free(np);   /* the same policy (a reload to itself, a restart) */
		return 0;
	}
	px->next_policy = np;
	for (c = px->conns; c; c = next) {
		next = c->all_next;
		/* (cutting c frees no other connection: an inspected one's outer
		 * TLS side is gone once its handshake is done) */
		if (proxy_redecide_conn(c))
			cut++;
	}
	for (struct tunnel *t = LIST_FIRST(&px->tunnels), *tn; t; t = tn) {
		tn = LIST_NEXT(t, link);
		if (proxy_redecide_tunnel(t))
			cut++;
	}
	log_debug("drain: policy %.12s replaced by %.12s: %u open connection(s) it refuses cut", px->policy->digest,
		  np->digest, cut);
	return 0;
}

bool proxy_redecide_conn(struct conn *c)
{
	struct proxy *px = c->px;
	struct proxy_decision d;

	if (!px->next_policy || c->logged || !decide_next(c, &d) || next_lets_through(px, &d))
		return false;
	c->reload_reason = d.reason;
	c->verdict = "deny";
	switch (c->phase) {
	case PH_RESOLVE:
	case PH_CONNECT:
		/* nothing sent upstream yet: our own 403 where HTTP still can */
		conn_fail(c, 403, "policy_reloaded");
		return true;
	case PH_HTTP:
		http_refuse(c, 403, "policy_reloaded");
		return true;
	case PH_HELLO:
	case PH_TLS_ACCEPT:
	case PH_TUNNEL:   /* a WebSocket's relay (a tunnel's: proxy_redecide_tunnel) */
		if (c->relay) {
			uint64_t up, down;

			relay_counts(c->relay, &up, &down);
			c->req_bytes = (int64_t)up;
			c->resp_bytes = (int64_t)down;
		}
		c->failed = true;
		c->reason = "policy_reloaded";
		conn_finish(c);
		return true;
	default:
		/* reading a head (decided when it is complete: proxy_redecide_head),
		 * lingering: nothing to cut */
		c->reload_reason = NULL;
		return false;
	}
}

bool proxy_redecide_tunnel(struct tunnel *t)
{
	struct conn v;
	struct proxy_decision d;

	tunnel_view(t, &v);
	if (!t->px->next_policy || !decide_next(&v, &d) || next_lets_through(t->px, &d))
		return false;
	t->reload_reason = d.reason;
	t->verdict = "deny";
	tunnel_cut(t, "policy_reloaded");
	return true;
}

void proxy_redecide_head(struct conn *c, struct proxy_decision *d)
{
	struct proxy *px = c->px;
	struct proxy_decision nd;
	struct sluice_exe_id who;

	if (!px->next_policy)
		return;
	/* refused by the old policy: that stands (the new one is not asked) */
	if (!d->allow && !(px->mode == SLUICE_MODE_AUDIT && d->audit_ok))
		return;
	memset(&nd, 0, sizeof(nd));
	if (c->kind == K_HTTP) {
		proxy_decide_url_for(px->next_policy, conn_who(c, &who), c->inspected ? "https" : "http",
				     c->target->host, c->target->port, c->req->method, c->target->path, &nd);
		if (c->ws)
			proxy_ws_decide(c->req, &nd);
	} else {
		proxy_decide_tls_for(px->next_policy, conn_who(c, &who), d->host,
				     c->kind == K_TLS ? c->orig.dport : c->target->port, &nd);
	}
	if (next_lets_through(px, &nd))
		return;
	c->reload_reason = nd.reason;
	d->allow = false;
	d->audit_ok = false;     /* the old mode's audit does not let through what the new refuses */
	d->status = 403;
	d->reason = "policy_reloaded";
	d->entry = NULL;
	d->inspect = false;
}

void proxy_redecide_free(struct proxy *px)
{
	sluice_policy_free(px->next_policy);
	px->next_policy = NULL;
}
