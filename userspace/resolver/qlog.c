/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * qlog.c - the resolver's query log: one JSON line per query, Elastic
 * Common Schema names as flat dotted keys like the kernel events
 * (loader/events.c; docs/events.md, "Resolver query log").  Built with json-c so every string is escaped correctly, whatever
 * bytes a client put in its question.
 */
#include "resolver.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsonstr.h"

/* every string through sluice_json_string: bytes that are not UTF-8 (a
 * hostile comm, server name or path) become U+FFFD, the line stays JSON */
static void put_str(json_object *o, const char *key, const char *v)
{
	if (v)
		json_object_object_add(o, key, sluice_json_string(v));
}

static void timestamp(char *buf, size_t len, const struct timespec *now)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	if (now)
		ts = *now;
	else
		clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06ldZ", base, ts.tv_nsec / 1000);
}

static void common(json_object *o, const struct rsv_logctx *lc, const struct timespec *now,
		   const char *action)
{
	char ts[64];
	const struct sluice_policy *p = lc->policy;

	timestamp(ts, sizeof(ts), now);
	put_str(o, "@timestamp", ts);
	put_str(o, "sluice.sandbox", lc->sandbox ? lc->sandbox : "");
	put_str(o, "sluice.policy_name", p && p->name ? p->name : "");
	put_str(o, "rule.ruleset", p ? p->digest : "");
	put_str(o, "sluice.policy_sha256", p ? p->digest : "");
	put_str(o, "sluice.mode", lc->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	put_str(o, "sluice.component", "resolver");
	put_str(o, "event.kind", "event");
	put_str(o, "event.dataset", "sluice.resolver");
	put_str(o, "event.action", action);
}

static char *finish(json_object *root)
{
	const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);
	char *line = NULL;

	if (s && asprintf(&line, "%s\n", s) < 0)
		line = NULL;
	json_object_put(root);
	return line;
}

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

static json_object *answer_obj(const struct rsv_answer *a, bool with_range)
{
	json_object *o = json_object_new_object();
	char *t = ldns_rr_type2str((ldns_rr_type)a->type);

	put_str(o, "name", a->name);
	put_str(o, "type", t ? t : "");
	put_str(o, "class", "IN");
	json_object_object_add(o, "ttl", json_object_new_int64(a->ttl));
	put_str(o, "data", a->data);
	if (with_range)
		put_str(o, "sluice_filter", a->dropped_why);
	free(t);
	return o;
}

char *rsv_log_line(const struct rsv_logctx *lc, const struct rsv_decision *d,
		   const struct rsv_logmeta *m)
{
	json_object *o = json_object_new_object(), *arr, *filt, *types;
	size_t i;

	if (!o)
		return NULL;
	common(o, lc, m->now, "dns-query");
	put_str(o, "event.category", "network");
	types = json_object_new_array();
	json_object_array_add(types, json_object_new_string("protocol"));
	json_object_array_add(types, json_object_new_string(
		d->verdict == RSV_V_ALLOW || d->verdict == RSV_V_WOULD_DENY ? "allowed" : "denied"));
	json_object_object_add(o, "event.type", types);
	put_str(o, "event.outcome", outcome(d));
	put_str(o, "event.reason", d->reason ? d->reason : "unknown");
	json_object_object_add(o, "event.duration", json_object_new_int64(m->duration_ns));
	put_str(o, "sluice.verdict", rsv_verdict_name(d->verdict));
	if (d->rule && d->rule->name)
		put_str(o, "rule.name", d->rule->name);

	json_object_object_add(o, "dns.id", json_object_new_int(d->id));
	if (d->have_question) {
		char *t = ldns_rr_type2str((ldns_rr_type)d->qtype);
		char *c = ldns_rr_class2str((ldns_rr_class)d->qclass);
		char raw[sizeof(d->raw_name)];
		size_t l;

		snprintf(raw, sizeof(raw), "%s", d->raw_name);
		l = strlen(raw);
		if (l > 1 && raw[l - 1] == '.')
			raw[l - 1] = '\0';
		put_str(o, "dns.question.name", d->name[0] ? d->name : raw);
		put_str(o, "dns.question.type", t ? t : "");
		put_str(o, "dns.question.class", c ? c : "");
		free(t);
		free(c);
	}
	if (d->rcode >= 0)
		put_str(o, "dns.response_code", rsv_rcode_name(d->rcode));
	arr = json_object_new_array();
	filt = json_object_new_array();
	for (i = 0; i < d->n_answers; i++) {
		const struct rsv_answer *a = &d->answers[i];

		/* what the client got, and what the filter objected to */
		if (a->sent && !d->truncated)
			json_object_array_add(arr, answer_obj(a, false));
		if (a->dropped_why)
			json_object_array_add(filt, answer_obj(a, true));
	}
	json_object_object_add(o, "dns.answers", arr);
	if (d->truncated) {
		json_object *fl = json_object_new_array();

		json_object_array_add(fl, json_object_new_string("TC"));
		json_object_object_add(o, "dns.header_flags", fl);
	}
	if (json_object_array_length(filt))
		json_object_object_add(o, "sluice.dns_filtered_answers", filt);
	else
		json_object_put(filt);
	if (d->tunnel_suspect || (d->reason && strcmp(d->reason, "dns_tunnel_rate") == 0)) {
		json_object_object_add(o, "sluice.dns_tunnel_suspect", json_object_new_boolean(1));
		put_str(o, "sluice.dns_tunnel_reason", d->tunnel_why);
	}

	if (m->src_ip) {
		put_str(o, "source.ip", m->src_ip);
		if (m->src_port >= 0)
			json_object_object_add(o, "source.port", json_object_new_int(m->src_port));
	}
	put_str(o, "network.transport", d->tcp ? "tcp" : "udp");
	put_str(o, "network.protocol", "dns");
	if (m->upstream) {
		put_str(o, "sluice.upstream", m->upstream);
		put_str(o, "sluice.upstream_transport", m->upstream_transport);
		json_object_object_add(o, "sluice.upstream_tries", json_object_new_int((int)m->upstream_tries));
	}
	return finish(o);
}

char *rsv_log_start_line(const struct rsv_logctx *lc, const char *upstream, const char *listen)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	common(o, lc, NULL, "resolver-start");
	put_str(o, "event.kind", "state");
	put_str(o, "event.outcome", "success");
	put_str(o, "sluice.upstream", upstream);
	put_str(o, "sluice.listen", listen);
	return finish(o);
}

int rsv_log_write(int fd, const char *line)
{
	size_t len = strlen(line), off = 0;

	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}
