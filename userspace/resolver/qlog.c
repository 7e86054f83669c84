/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * qlog.c - the resolver's query log: one JSON line per query, Elastic
 * Common Schema names as flat dotted keys like every sluice line
 * (docs/events.md, "Resolver query log"), built in the writer's bounded
 * buffer (userspace/lib/evlog.h): every string is escaped and made valid
 * UTF-8, whatever bytes a client put in its question.
 */
#include "resolver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evlog.h"
#include "evseq.h"
#include "flow.h"

static const char *outcome(const struct rsv_decision *d)
{
	switch (d->verdict) {
	case RSV_V_WOULD_DENY:
		return "unknown";
	case RSV_V_ALLOW:
		return d->rcode == RSV_NOERROR || d->rcode == RSV_NXDOMAIN ? "success" : "failure";
	default:
		return "failure";
	}
}

/* An ldns type/class name without allocation ("A", "TYPE65", "IN", "CLASS9"). */
static const char *type_name(unsigned t, char *buf, size_t len)
{
	const ldns_rr_descriptor *d = ldns_rr_descript((uint16_t)t);

	/* as ldns_rr_type2str(), which allocates */
	if (d && d->_name && (unsigned)d->_type == t)
		return d->_name;
	switch (t) {
	case LDNS_RR_TYPE_IXFR: return "IXFR";
	case LDNS_RR_TYPE_AXFR: return "AXFR";
	case LDNS_RR_TYPE_MAILA: return "MAILA";
	case LDNS_RR_TYPE_MAILB: return "MAILB";
	case LDNS_RR_TYPE_ANY: return "ANY";
	default:
		snprintf(buf, len, "TYPE%u", t);
		return buf;
	}
}

static const char *class_name(unsigned c, char *buf, size_t len)
{
	ldns_lookup_table *lt = ldns_lookup_by_id(ldns_rr_classes, (int)c);

	if (lt && lt->name)
		return lt->name;
	snprintf(buf, len, "CLASS%u", c);
	return buf;
}

/* One answer record as an object; left out whole if it does not fit. */
static void answer_obj(struct sluice_line *l, const struct rsv_answer *a, bool with_range, bool first)
{
	size_t m = sluice_line_mark(l);
	char tb[16];

	if (!first)
		SL_LIT(l, ",");
	SL_LIT(l, "{");
	SL_STR(l, "name", a->name);
	SL_STR(l, "type", type_name(a->type, tb, sizeof(tb)));
	SL_STR(l, "class", "IN");
	SL_I64(l, "ttl", a->ttl);
	SL_STR(l, "data", a->data);
	if (with_range)
		SL_STR(l, "sluice_filter", a->dropped_why);
	SL_LIT(l, "}");
	if (l->over || l->truncated)
		sluice_line_rewind(l, m);
}

/* "ADDR:PORT" / "[V6]:PORT" as PREFIX.ip and PREFIX.port */
static void put_hostport(struct sluice_line *l, const char *ipkey, size_t ipkl, const char *portkey,
			 size_t portkl, const char *hp)
{
	char ip[64];
	const char *colon = strrchr(hp, ':');
	size_t n;

	if (!colon) {
		sluice_line_put_str(l, ipkey, ipkl, hp);
		return;
	}
	n = (size_t)(colon - hp);
	if (n && hp[0] == '[' && hp[n - 1] == ']') {
		hp++;
		n -= 2;
	}
	if (n >= sizeof(ip))
		n = sizeof(ip) - 1;
	memcpy(ip, hp, n);
	ip[n] = '\0';
	sluice_line_put_str(l, ipkey, ipkl, ip);
	sluice_line_put_u64(l, portkey, portkl, strtoul(colon + 1, NULL, 10));
}

#define PUT_HOSTPORT(l, ik, pk, hp) put_hostport((l), (ik), sizeof(ik) - 1, (pk), sizeof(pk) - 1, (hp))

void rsv_log_fields(struct sluice_line *l, const struct rsv_decision *d, const struct rsv_logmeta *m)
{
	char idbuf[8];
	size_t i, mark;
	bool any;

	SL_STR(l, "sluice.component", "resolver");
	SL_STR(l, "event.kind", "event");
	SL_STR(l, "event.action", "dns-query");
	SL_STR(l, "event.category", "network");
	if (d->verdict == RSV_V_ALLOW || d->verdict == RSV_V_WOULD_DENY)
		SL_RAW(l, "event.type", "[\"protocol\",\"allowed\"]");
	else
		SL_RAW(l, "event.type", "[\"protocol\",\"denied\"]");
	SL_STR(l, "event.outcome", outcome(d));
	SL_STR(l, "event.reason", d->reason ? d->reason : "unknown");
	SL_I64(l, "event.duration", m->duration_ns);
	SL_STR(l, "sluice.verdict", rsv_verdict_name(d->verdict));
	if (d->rule && d->rule->name)
		SL_STR(l, "rule.name", d->rule->name);
	if (d->credential) {
		SL_STR(l, "sluice.credential", d->credential);
		SL_I64(l, "event.severity", 73);
	}
	sluice_entry_log_fields(l, d->rule);

	snprintf(idbuf, sizeof(idbuf), "%u", (unsigned)d->id & 0xffff);
	SL_STR(l, "dns.id", idbuf);          /* keyword in ECS */
	if (d->have_question) {
		char raw[sizeof(d->raw_name)], tb[16], cb[16];
		size_t n;

		snprintf(raw, sizeof(raw), "%s", d->raw_name);
		n = strlen(raw);
		if (n > 1 && raw[n - 1] == '.')
			raw[n - 1] = '\0';
		SL_STR(l, "dns.question.name", d->name[0] ? d->name : raw);
		SL_STR(l, "dns.question.type", type_name(d->qtype, tb, sizeof(tb)));
		SL_STR(l, "dns.question.class", class_name(d->qclass, cb, sizeof(cb)));
	}
	if (d->rcode >= 0)
		SL_STR(l, "dns.response_code", rsv_rcode_name(d->rcode));

	/* what the client got, and what the filter objected to */
	mark = sluice_line_mark(l);
	SL_KEY(l, "dns.answers");
	SL_LIT(l, "[");
	any = false;
	for (i = 0; i < d->n_answers; i++) {
		const struct rsv_answer *a = &d->answers[i];

		if (a->sent && !d->truncated) {
			answer_obj(l, a, false, !any);
			any = true;
		}
	}
	SL_LIT(l, "]");
	if (l->over)
		sluice_line_rewind(l, mark);
	if (d->truncated)
		SL_RAW(l, "dns.header_flags", "[\"TC\"]");
	any = false;
	for (i = 0; i < d->n_answers; i++)
		any |= d->answers[i].dropped_why != NULL;
	if (any) {
		bool first = true;

		mark = sluice_line_mark(l);
		SL_KEY(l, "sluice.dns_filtered_answers");
		SL_LIT(l, "[");
		for (i = 0; i < d->n_answers; i++) {
			if (!d->answers[i].dropped_why)
				continue;
			answer_obj(l, &d->answers[i], true, first);
			first = false;
		}
		SL_LIT(l, "]");
		if (l->over)
			sluice_line_rewind(l, mark);
	}
	if (d->tunnel_suspect || (d->reason && strcmp(d->reason, "dns_tunnel_rate") == 0)) {
		SL_BOOL(l, "sluice.dns_tunnel_suspect", true);
		SL_STR(l, "sluice.dns_tunnel_reason", d->tunnel_why);
	}
	if (d->trailing)
		SL_U64(l, "sluice.dns_trailing_bytes", d->trailing);
	SL_STR(l, "error.message", d->malformed);

	if (m->src_ip) {
		SL_STR(l, "source.ip", m->src_ip);
		if (m->src_port >= 0)
			SL_I64(l, "source.port", m->src_port);
	}
	SL_STR(l, "network.transport", d->tcp ? "tcp" : "udp");
	SL_STR(l, "network.protocol", "dns");
	if (m->orig)
		sluice_flow_put_orig(l, m->orig, NULL);
	if (d->cached)
		SL_BOOL(l, "sluice.dns_cached", true);
	if (m->upstream) {
		PUT_HOSTPORT(l, "sluice.upstream.ip", "sluice.upstream.port", m->upstream);
		SL_STR(l, "sluice.upstream_transport", m->upstream_transport);
		SL_U64(l, "sluice.upstream_tries", m->upstream_tries);
	}
}

static int64_t real_ns(const struct timespec *now)
{
	return now ? (int64_t)now->tv_sec * 1000000000LL + now->tv_nsec : sluice_now_ns();
}

char *rsv_log_line(const struct rsv_decision *d, const struct rsv_logmeta *m)
{
	struct sluice_line l;
	char ts[40], *buf = malloc(SLUICE_LINE_MAX);
	size_t n;

	if (!buf)
		return NULL;
	sluice_line_init(&l, buf, SLUICE_LINE_MAX);
	sluice_format_time(real_ns(m->now), ts, sizeof(ts));
	SL_STR(&l, "@timestamp", ts);
	rsv_log_fields(&l, d, m);
	n = sluice_line_end(&l);
	buf[n++] = '\n';
	buf[n] = '\0';
	return buf;
}

int rsv_log_query(struct sluice_evlog *w, const struct rsv_decision *d, const struct rsv_logmeta *m)
{
	struct sluice_evseq *q = sluice_evlog_shared(w);

	/* the daemon's metrics: queries by verdict and by the code answered */
	if (q) {
		int v = sluice_evc_verdict(rsv_verdict_name(d->verdict));

		if (v >= 0)
			sluice_evseq_add(&q->dns_queries[v], 1);
		sluice_evseq_add(&q->dns_rcodes[d->rcode >= 0 && d->rcode < 16 ? d->rcode : 16], 1);
	}
	rsv_log_fields(sluice_evlog_begin(w, SLUICE_DS_RESOLVER, real_ns(m->now)), d, m);
	return sluice_evlog_commit(w);
}

int rsv_log_start(struct sluice_evlog *w, const char *upstream, const char *listen)
{
	struct sluice_line *l = sluice_evlog_begin(w, SLUICE_DS_RESOLVER, -1);

	SL_STR(l, "sluice.component", "resolver");
	SL_STR(l, "event.kind", "state");
	SL_STR(l, "event.action", "resolver-start");
	SL_STR(l, "event.outcome", "success");
	PUT_HOSTPORT(l, "sluice.upstream.ip", "sluice.upstream.port", upstream);
	SL_STR(l, "sluice.listen", listen);
	return sluice_evlog_commit(w);
}
