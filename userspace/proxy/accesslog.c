/* SPDX-License-Identifier: BSD-2-Clause */
#include "accesslog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evlog.h"
#include "evseq.h"
#include "flow.h"
#include "policy.h"

#include "addr.h"
#include "community_id.h"

/* The line is built straight into the writer's bounded buffer
 * (userspace/lib/evlog.h): no allocation, no printf per request. */

/* An address as text (v4-mapped IPv6 as IPv4), IPv4 without printf. */
static void ip_text(int family, const uint8_t *a, char *out, size_t len)
{
	family = netaddr_unmap(family, a, &a);
	if (family == AF_INET && len >= 16) {
		size_t n = 0;

		for (int i = 0; i < 4; i++) {
			if (i)
				out[n++] = '.';
			n += sluice_u64_dec(out + n, a[i]);
		}
		out[n] = '\0';
		return;
	}
	if (!inet_ntop(family, a, out, (socklen_t)len))
		snprintf(out, len, "?");
}

/* An endpoint's address as text (ip_text) and its port; false for
 * another family. */
static bool endpoint_text(const struct sockaddr *sa, char *ip, size_t len, uint16_t *port)
{
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		ip_text(AF_INET, (const uint8_t *)&in->sin_addr, ip, len);
		*port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		ip_text(AF_INET6, in6->sin6_addr.s6_addr, ip, len);
		*port = ntohs(in6->sin6_port);
	} else {
		return false;
	}
	return true;
}

/* "<prefix>.ip" and "<prefix>.port" of an endpoint. */
static void put_endpoint(struct sluice_line *b, const char *ipkey, size_t ipkl, const char *portkey,
			 size_t portkl, const struct sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN];
	uint16_t port;

	if (!endpoint_text(sa, ip, sizeof(ip), &port))
		return;
	sluice_line_put_str(b, ipkey, ipkl, ip);
	sluice_line_put_u64(b, portkey, portkl, port);
}

/* network.community_id of the flow source.* -> destination.* (TCP), as
 * written on the line (v4-mapped addresses as IPv4): the ID Elasticsearch's
 * community_id processor computes from the same fields. */
static void put_community_id(struct sluice_line *b, const struct sockaddr *src, const struct sockaddr *dst)
{
	char sip[INET6_ADDRSTRLEN], dip[INET6_ADDRSTRLEN], id[SLUICE_COMMUNITY_ID_LEN];
	uint16_t sport, dport;

	if (!endpoint_text(src, sip, sizeof(sip), &sport) || !endpoint_text(dst, dip, sizeof(dip), &dport))
		return;
	if (sluice_community_id_text(sip, sport, dip, dport, "tcp", id, sizeof(id)) == 0)
		SL_STR(b, "network.community_id", id);
}

#define PUT_ENDPOINT(b, ik, pk, sa) put_endpoint((b), (ik), sizeof(ik) - 1, (pk), sizeof(pk) - 1, (sa))

void proxy_log_fields(struct sluice_line *b, const struct proxy_log_rec *r)
{
	SL_STR(b, "sluice.component", "proxy");
	SL_STR(b, "event.kind", "event");
	SL_STR(b, "event.category", "network");
	if (r->verdict && strcmp(r->verdict, "deny") == 0)
		SL_RAW(b, "event.type", "[\"connection\",\"denied\"]");
	else
		SL_RAW(b, "event.type", "[\"connection\",\"allowed\"]");
	SL_STR(b, "event.action", r->action);
	SL_STR(b, "event.outcome", r->outcome);
	SL_STR(b, "event.reason", r->reason);
	SL_U64(b, "event.duration", r->duration_ns);
	SL_STR(b, "sluice.verdict", r->verdict);
	SL_STR(b, "sluice.form", r->form);
	SL_STR(b, "rule.name", r->rule);
	SL_STR(b, "sluice.credential", r->credential);
	SL_STR(b, "sluice.credential_event", r->cred_event);
	SL_STR(b, "sluice.reload.reason", r->reload_reason);
	SL_STR(b, "sluice.reload.policy_sha256", r->reload_reason ? r->reload_digest : NULL);
	if (r->severity > 0)
		SL_I64(b, "event.severity", r->severity);
	sluice_entry_log_fields(b, r->rule_entry);

	SL_STR(b, "url.full", r->url_full);
	SL_STR(b, "url.domain", r->domain);
	SL_STR(b, "tls.client.server_name", r->sni);
	SL_STR(b, "sluice.host_header_replaced", r->host_sent);
	if (r->inspected) {
		SL_BOOL(b, "sluice.inspected", true);
		SL_STR(b, "tls.version", r->tls_version);
		SL_STR(b, "tls.cipher", r->tls_cipher);
	}
	if (r->websocket)
		SL_BOOL(b, "sluice.websocket", true);
	SL_STR(b, "http.version", r->http_version);
	SL_STR(b, "http.request.method", r->method);
	if (r->status > 0)
		SL_I64(b, "http.response.status_code", r->status);
	if (r->tunnel) {
		if (r->req_bytes >= 0)
			SL_I64(b, "source.bytes", r->req_bytes);
		if (r->resp_bytes >= 0)
			SL_I64(b, "destination.bytes", r->resp_bytes);
		SL_STR(b, "sluice.tunnel_path", r->tunnel_path);
	} else {
		if (r->req_bytes >= 0)
			SL_I64(b, "http.request.bytes", r->req_bytes);
		if (r->resp_bytes >= 0)
			SL_I64(b, "http.response.bytes", r->resp_bytes);
	}
	PUT_ENDPOINT(b, "source.ip", "source.port", r->src);
	PUT_ENDPOINT(b, "destination.ip", "destination.port", r->dst);
	if (!r->dst && r->target_port > 0)
		SL_I64(b, "destination.port", r->target_port);
	SL_STR(b, "network.transport", "tcp");
	put_community_id(b, r->src, r->dst);

	if (r->orig)
		sluice_flow_put_orig(b, r->orig, r->exe);
	if (r->request_seq > 0)
		SL_I64(b, "sluice.request_seq", r->request_seq);
	if (r->upstream_conn)
		SL_BOOL(b, "sluice.upstream_reused", r->upstream_conn == 2);
	if (r->orig_dst_mismatch >= 0)
		SL_BOOL(b, "sluice.orig_dst_mismatch", r->orig_dst_mismatch);
	if (r->n_dropped) {
		size_t m = sluice_line_mark(b);

		SL_KEY(b, "sluice.dropped_answers");
		SL_LIT(b, "[");
		for (size_t i = 0; i < r->n_dropped && i < PROXY_LOG_MAX_DROPPED; i++) {
			if (i)
				SL_LIT(b, ",");
			sluice_line_strval(b, r->dropped[i]);
		}
		SL_LIT(b, "]");
		if (b->over)
			sluice_line_rewind(b, m);
	}
}

int64_t proxy_log_real_ns(const struct proxy_log_rec *r)
{
	return (int64_t)r->start.tv_sec * 1000000000LL + r->start.tv_nsec;
}

char *proxy_log_format(const struct proxy_log_rec *r)
{
	struct sluice_line l;
	char ts[40], *buf = malloc(SLUICE_LINE_MAX);

	if (!buf)
		return NULL;
	sluice_line_init(&l, buf, SLUICE_LINE_MAX);
	sluice_format_time(proxy_log_real_ns(r), ts, sizeof(ts));
	SL_STR(&l, "@timestamp", ts);
	proxy_log_fields(&l, r);
	sluice_line_end(&l);
	return buf;
}

int proxy_log_write(struct sluice_evlog *w, const struct proxy_log_rec *r)
{
	struct sluice_evseq *q = sluice_evlog_shared(w);
	int v = sluice_evc_verdict(r->verdict);

	/* the daemon's metrics: requests by verdict, counted as they are logged */
	if (q && v >= 0)
		sluice_evseq_add(&q->proxy_requests[v], 1);
	proxy_log_fields(sluice_evlog_begin(w, SLUICE_DS_PROXY, proxy_log_real_ns(r)), r);
	return sluice_evlog_commit(w);
}
