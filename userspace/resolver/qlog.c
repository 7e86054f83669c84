/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * qlog.c - the resolver's query log: one JSON line per query, Elastic
 * Common Schema names as nested objects (docs/events.md, "Resolver query
 * log").  Built with json-c so every string is escaped correctly, whatever
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

static json_object *obj(json_object *parent, const char *key)
{
	json_object *o;

	if (json_object_object_get_ex(parent, key, &o))
		return o;
	o = json_object_new_object();
	json_object_object_add(parent, key, o);
	return o;
}

static void put_str(json_object *o, const char *key, const char *v)
{
	if (v)
		json_object_object_add(o, key, json_object_new_string(v));
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
	snprintf(buf, len, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

static void common(json_object *root, const struct rsv_logctx *lc, const struct timespec *now,
		   const char *action)
{
	char ts[64];
	json_object *ev, *sl, *rule;
	const struct sluice_policy *p = lc->policy;

	timestamp(ts, sizeof(ts), now);
	put_str(root, "@timestamp", ts);
	ev = obj(root, "event");
	put_str(ev, "kind", "event");
	put_str(ev, "module", "sluice");
	put_str(ev, "dataset", "sluice.resolver");
	put_str(ev, "action", action);
	sl = obj(root, "sluice");
	put_str(sl, "component", "resolver");
	put_str(sl, "sandbox", lc->sandbox ? lc->sandbox : "");
	put_str(sl, "mode", lc->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	if (p) {
		put_str(sl, "policy_sha256", p->digest);
		put_str(sl, "policy_name", p->name ? p->name : "");
		rule = obj(root, "rule");
		put_str(rule, "ruleset", p->digest);
	}
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
	json_object *root = json_object_new_object(), *ev, *dns, *sl, *arr, *filt;
	json_object *types;
	size_t i;

	if (!root)
		return NULL;
	common(root, lc, m->now, "dns-query");
	ev = obj(root, "event");
	json_object_object_add(ev, "category", json_object_new_array());
	json_object_array_add(json_object_object_get(ev, "category"), json_object_new_string("network"));
	types = json_object_new_array();
	json_object_array_add(types, json_object_new_string("protocol"));
	json_object_array_add(types, json_object_new_string(
		d->verdict == RSV_V_ALLOW || d->verdict == RSV_V_WOULD_DENY ? "allowed" : "denied"));
	json_object_object_add(ev, "type", types);
	put_str(ev, "outcome", outcome(d));
	put_str(ev, "reason", d->reason ? d->reason : "unknown");
	json_object_object_add(ev, "duration", json_object_new_int64(m->duration_ns));

	dns = obj(root, "dns");
	json_object_object_add(dns, "id", json_object_new_int(d->id));
	if (d->have_question) {
		json_object *q = obj(dns, "question");
		char *t = ldns_rr_type2str((ldns_rr_type)d->qtype);
		char *c = ldns_rr_class2str((ldns_rr_class)d->qclass);
		char raw[sizeof(d->raw_name)];
		size_t l;

		snprintf(raw, sizeof(raw), "%s", d->raw_name);
		l = strlen(raw);
		if (l > 1 && raw[l - 1] == '.')
			raw[l - 1] = '\0';
		put_str(q, "name", d->name[0] ? d->name : raw);
		put_str(q, "type", t ? t : "");
		put_str(q, "class", c ? c : "");
		free(t);
		free(c);
	}
	if (d->rcode >= 0)
		put_str(dns, "response_code", rsv_rcode_name(d->rcode));
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
	json_object_object_add(dns, "answers", arr);
	if (d->truncated) {
		json_object *fl = json_object_new_array();

		json_object_array_add(fl, json_object_new_string("TC"));
		json_object_object_add(dns, "header_flags", fl);
	}

	if (m->src_ip) {
		json_object *src = obj(root, "source");

		put_str(src, "ip", m->src_ip);
		if (m->src_port >= 0)
			json_object_object_add(src, "port", json_object_new_int(m->src_port));
	}
	{
		json_object *net = obj(root, "network");

		put_str(net, "transport", d->tcp ? "tcp" : "udp");
		put_str(net, "protocol", "dns");
	}
	if (d->rule && d->rule->name)
		put_str(obj(root, "rule"), "name", d->rule->name);

	sl = obj(root, "sluice");
	put_str(sl, "verdict", rsv_verdict_name(d->verdict));
	if (d->tunnel_suspect || (d->reason && strcmp(d->reason, "dns_tunnel_rate") == 0)) {
		json_object_object_add(sl, "dns_tunnel_suspect", json_object_new_boolean(1));
		put_str(sl, "dns_tunnel_reason", d->tunnel_why);
	}
	if (json_object_array_length(filt))
		json_object_object_add(sl, "dns_filtered_answers", filt);
	else
		json_object_put(filt);
	if (m->upstream) {
		put_str(sl, "upstream", m->upstream);
		put_str(sl, "upstream_transport", m->upstream_transport);
		json_object_object_add(sl, "upstream_tries", json_object_new_int((int)m->upstream_tries));
	}
	return finish(root);
}

char *rsv_log_start_line(const struct rsv_logctx *lc, const char *upstream, const char *listen)
{
	json_object *root = json_object_new_object(), *sl;

	if (!root)
		return NULL;
	common(root, lc, NULL, "resolver-start");
	put_str(obj(root, "event"), "outcome", "success");
	sl = obj(root, "sluice");
	put_str(sl, "upstream", upstream);
	put_str(sl, "listen", listen);
	return finish(root);
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
