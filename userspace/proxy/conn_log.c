/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn_log.c - the access-log line of a connection's request or tunnel
 * (accesslog.h, docs/events.md "Proxy access log"): what conn.c, http.c,
 * dial.c and websocket.c recorded in struct conn, as one record, written
 * once.
 */
#include "proxy.h"

#include <string.h>
#include <time.h>

#include "accesslog.h"
#include "relay.h"

uint64_t conn_elapsed_ns(const struct conn *c)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - c->t_mono.tv_sec) * 1000000000ull +
	       (uint64_t)(now.tv_nsec - c->t_mono.tv_nsec);
}

static const char *action_name(enum conn_kind k)
{
	switch (k) {
	case K_HTTP: return "proxy-http";
	case K_CONNECT: return "proxy-connect";
	case K_TLS: return "proxy-tls";
	default: return "proxy-connection";
	}
}

void conn_log(struct conn *c)
{
	struct proxy *px = c->px;
	struct proxy_log_rec r;

	if (c->logged)
		return;
	c->logged = true;
	memset(&r, 0, sizeof(r));
	r.start = c->t_real;
	r.duration_ns = conn_elapsed_ns(c);
	r.action = action_name(c->kind);
	if (c->failed)
		r.outcome = "failure";
	else if (c->verdict && strcmp(c->verdict, "would_deny") == 0)
		r.outcome = "unknown";   /* audit: let through (as the kernel events say) */
	else
		r.outcome = "success";
	r.reason = c->reason ? c->reason : c->deny_reason ? c->deny_reason : "allowed";
	r.verdict = c->verdict;
	if (c->have_orig)
		r.form = c->form == PROXY_FORM_EXPLICIT ? "explicit" : "transparent";
	r.url_full = c->url_full;
	r.domain = c->host && c->host[0] ? c->host : NULL;
	r.sni = c->sni;
	r.host_sent = c->host_sent;
	r.method = c->method;
	r.inspected = c->inspected;
	r.websocket = c->ws;
	r.tls_version = c->tls_version;
	r.tls_cipher = c->tls_cipher;
	r.http_version = c->http_version;
	r.status = c->status;
	r.tunnel = c->kind == K_TLS || (c->kind == K_CONNECT && c->status == 200);
	if (r.tunnel && c->relay)
		r.tunnel_path = relay_mode(c->relay);
	r.req_bytes = c->req_bytes;
	r.resp_bytes = c->resp_bytes;
	r.src = &c->peer.sa;
	r.dst = c->have_dst ? &c->dst.sa : NULL;
	r.target_port = c->port;   /* a refused CONNECT: the port it asked for */
	r.orig = c->have_orig ? &c->orig : NULL;
	r.exe = c->exe;
	r.rule = c->rule;
	r.credential = c->cred ? c->cred->cr->name : c->cred_name;
	r.cred_event = c->cred_event;
	r.severity = c->severity_high ? 73 : 0;
	r.rule_entry = c->rule_entry;
	r.orig_dst_mismatch = c->orig_dst_mismatch;
	r.reload_reason = c->reload_reason;
	r.reload_digest = px->next_policy ? px->next_policy->digest : NULL;
	if ((c->kind == K_HTTP || c->kind == K_CONNECT) && c->req_ok)
		r.request_seq = c->h2_seq ? (int)c->h2_seq : (int)c->nreq + 1;
	if (c->kind == K_HTTP && c->req_ok) {
		if (c->have_dst)
			r.upstream_conn = c->reused ? 2 : 1;
	}
	for (size_t i = 0; i < c->n_dropped && i < PROXY_DROPPED_MAX && i < PROXY_LOG_MAX_DROPPED; i++)
		r.dropped[r.n_dropped++] = c->dropped[i];
	/* a line that cannot be written is counted lost by the writer, which
	 * says so on stderr once per state change */
	proxy_log_write(&px->log, &r);
}
