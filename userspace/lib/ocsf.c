/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ocsf.c - ECS lines to OCSF events (ocsf.h), with json-c.  The mapping is
 * a table of ECS field -> OCSF path per class; a field no row takes goes to
 * `unmapped` under its ECS name.
 */
#include "ocsf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "version.h"

/* OCSF classes and categories used here */
enum { CAT_NETWORK = 4, CAT_APPLICATION = 6 };
enum { CLASS_NETWORK = 4001, CLASS_HTTP = 4002, CLASS_DNS = 4003, CLASS_APP_LIFECYCLE = 6002 };

/* One ECS field and where it goes ("a.b.c": nested objects). */
struct row {
	const char *ecs, *ocsf;
};

/* Every class */
static const struct row common_rows[] = {
	{ "message", "message" },
	{ "event.id", "metadata.uid" },
	{ "event.action", "metadata.event_code" },
	{ "event.dataset", "metadata.log_name" },
	{ "event.sequence", "metadata.sequence" },
	{ "host.name", "device.hostname" },
	{ "host.id", "device.uid" },
	{ "rule.ruleset", "policy.name" },
	{ "rule.version", "policy.version" },
	{ "rule.name", "firewall_rule.name" },
	{ "event.reason", "status_detail" },
	{ "process.pid", "actor.process.pid" },
	{ "process.name", "actor.process.name" },
	{ "process.executable", "actor.process.file.path" },
	{ "process.thread.id", "actor.process.tid" },
	{ "user.id", "actor.user.uid" },
	{ "user.name", "actor.user.name" },
	{ "container.id", "container.uid" },
	{ "container.name", "container.name" },
	{ "container.runtime", "container.runtime" },
	{ "event.duration", NULL },   /* -> duration (ms), below */
	{ NULL, NULL },
};

/* Network, HTTP and DNS Activity */
static const struct row net_rows[] = {
	{ "source.ip", "src_endpoint.ip" },
	{ "source.port", "src_endpoint.port" },
	{ "destination.ip", "dst_endpoint.ip" },
	{ "destination.port", "dst_endpoint.port" },
	{ "destination.address", "dst_endpoint.name" },
	{ "url.domain", "dst_endpoint.hostname" },
	{ "network.transport", "connection_info.protocol_name" },
	{ "tls.client.server_name", "tls.sni" },
	{ "tls.version", "tls.version" },
	{ "tls.cipher", "tls.cipher" },
	{ "source.bytes", "traffic.bytes_out" },
	{ "destination.bytes", "traffic.bytes_in" },
	{ "url.full", "url.url_string" },
	{ NULL, NULL },
};

static const struct row http_rows[] = {
	{ "http.request.method", "http_request.http_method" },
	{ "http.version", "http_request.version" },
	{ "url.full", "http_request.url.url_string" },
	{ "url.domain", "http_request.url.hostname" },
	{ "url.path", "http_request.url.path" },
	{ "url.port", "http_request.url.port" },
	{ "url.scheme", "http_request.url.scheme" },
	{ "http.request.bytes", "traffic.bytes_out" },
	{ "http.response.bytes", "traffic.bytes_in" },
	{ "http.response.status_code", "http_response.code" },
	{ NULL, NULL },
};

static const struct row dns_rows[] = {
	{ "dns.question.name", "query.hostname" },
	{ "dns.question.type", "query.type" },
	{ "dns.question.class", "query.class" },
	{ "dns.response_code", "rcode" },
	{ NULL, NULL },
};

/* The object at dotted `path` under `root`, made as needed; *leaf gets the
 * last component.  NULL when a component is already a non-object. */
static json_object *parent_of(json_object *root, const char *path, char *leaf, size_t leaflen)
{
	const char *p = path, *dot;
	json_object *o = root;

	while ((dot = strchr(p, '.')) != NULL) {
		char part[64];
		json_object *next;
		size_t n = (size_t)(dot - p);

		if (n >= sizeof(part))
			return NULL;
		memcpy(part, p, n);
		part[n] = 0;
		if (!json_object_object_get_ex(o, part, &next)) {
			next = json_object_new_object();
			json_object_object_add(o, part, next);
		} else if (!json_object_is_type(next, json_type_object)) {
			return NULL;
		}
		o = next;
		p = dot + 1;
	}
	snprintf(leaf, leaflen, "%s", p);
	return o;
}

static void put(json_object *root, const char *path, json_object *v)
{
	char leaf[64];
	json_object *o = parent_of(root, path, leaf, sizeof(leaf));

	if (o)
		json_object_object_add(o, leaf, v);
	else
		json_object_put(v);
}

static const char *str_of(json_object *ecs, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(ecs, key, &v) && json_object_is_type(v, json_type_string) ?
		       json_object_get_string(v) : NULL;
}

static bool is(const char *a, const char *b)
{
	return a && strcmp(a, b) == 0;
}

/* "2026-11-30T06:24:59.430861Z" -> ms since the epoch (-1: not that form) */
static long long rfc3339_ms(const char *s)
{
	struct tm tm = { 0 };
	const char *rest;
	long long us = 0;
	int digits = 0;

	if (!s || !(rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		return -1;
	if (*rest == '.')
		for (rest++; *rest >= '0' && *rest <= '9'; rest++)
			if (digits < 6) {
				us = us * 10 + (*rest - '0');
				digits++;
			}
	while (digits++ < 6)
		us *= 10;
	if (*rest != 'Z')
		return -1;
	return (long long)timegm(&tm) * 1000 + us / 1000;
}

/* Copy the fields of `rows` from ecs into out, marking each taken. */
static void map_rows(json_object *ecs, json_object *out, const struct row *rows, json_object *taken)
{
	for (const struct row *r = rows; r->ecs; r++) {
		json_object *v;

		if (!r->ocsf || json_object_object_get_ex(taken, r->ecs, NULL) || !json_object_object_get_ex(ecs, r->ecs, &v))
			continue;
		put(out, r->ocsf, json_object_get(v));
		json_object_object_add(taken, r->ecs, NULL);
	}
}

/* labels.KEY (ECS labels, --label) -> metadata.labels: ["KEY:VALUE", ...],
 * OCSF's list of labels, in the line's order; each taken. */
static void map_labels(json_object *ecs, json_object *out, json_object *taken)
{
	json_object *list = NULL;

	json_object_object_foreach(ecs, key, val)
	{
		char kv[256];

		if (strncmp(key, "labels.", 7) != 0 || !json_object_is_type(val, json_type_string))
			continue;
		if (!list)
			list = json_object_new_array();
		snprintf(kv, sizeof(kv), "%s:%s", key + 7, json_object_get_string(val));
		json_object_array_add(list, json_object_new_string(kv));
		json_object_object_add(taken, key, NULL);
	}
	if (list)
		put(out, "metadata.labels", list);
}

static int http_activity(const char *method)
{
	static const char *const m[] = { "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "TRACE", "PATCH" };

	for (int i = 0; method && i < 9; i++)
		if (strcmp(method, m[i]) == 0)
			return i + 1;
	return 99;
}

static int rcode_id(const char *rcode)
{
	static const char *const c[] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED" };

	for (int i = 0; rcode && i < 6; i++)
		if (strcmp(rcode, c[i]) == 0)
			return i;
	return 99;
}

/* The lifecycle action's Application Lifecycle activity. */
static int lifecycle_activity(const char *action)
{
	if (!action)
		return 99;
	if (strstr(action, "-start") || strstr(action, "-attach") || strstr(action, "-adopt"))
		return 3;   /* Start */
	if (strstr(action, "-stop") || strstr(action, "-detach") || strstr(action, "-gone") || strstr(action, "gave-up"))
		return 4;   /* Stop */
	if (strstr(action, "-restarted") || strstr(action, "-exited"))
		return 5;   /* Restart */
	if (strstr(action, "-reload") || strstr(action, "reissued") || strstr(action, "reopen"))
		return strstr(action, "refused") ? 99 : 8;   /* Update */
	return 99;
}

/* The OCSF class of an ECS line (by event.dataset and event.action) and
 * its activity (by the method, the verdict, the outcome or the action). */
static void ocsf_class(json_object *ecs, int *cls, int *act)
{
	const char *ds = str_of(ecs, "event.dataset"), *action = str_of(ecs, "event.action");
	const char *verdict = str_of(ecs, "sluice.verdict"), *outcome = str_of(ecs, "event.outcome");

	if (is(ds, "sluice.proxy") && is(action, "proxy-http")) {
		*cls = CLASS_HTTP;
		*act = http_activity(str_of(ecs, "http.request.method"));
	} else if (is(ds, "sluice.resolver")) {
		*cls = CLASS_DNS;
		*act = 6;   /* Traffic: the query and its answer */
	} else if (is(ds, "sluice.kernel") || is(ds, "sluice.proxy")) {
		*cls = CLASS_NETWORK;
		if (is(verdict, "deny"))
			*act = 5;   /* Refuse */
		else if (is(verdict, "would_deny"))
			*act = 1;   /* Open: audit mode let it through */
		else if (is(outcome, "failure"))
			*act = 4;   /* Fail */
		else if (is(ds, "sluice.proxy"))
			*act = 2;   /* Close: a tunnel's line is written when it ends */
		else
			*act = 99;  /* a report (events_lost) */
	} else {
		*cls = CLASS_APP_LIFECYCLE;
		*act = lifecycle_activity(action);
	}
}

/* time, severity, status, action and disposition, metadata and its
 * profiles, and app (lifecycle) or connection_info (the network classes). */
static void ocsf_envelope(json_object *ecs, json_object *o, json_object *taken, int cls)
{
	const char *verdict = str_of(ecs, "sluice.verdict"), *outcome = str_of(ecs, "event.outcome");
	json_object *v;
	int sev;

	/* the Security Control profile */
	{
		long long ms = rfc3339_ms(str_of(ecs, "@timestamp"));

		json_object_object_add(o, "time", json_object_new_int64(ms >= 0 ? ms : 0));
		json_object_object_add(taken, "@timestamp", NULL);
	}
	sev = is(verdict, "deny") ? 3 : is(verdict, "would_deny") ? 2 : 1;
	if (json_object_object_get_ex(ecs, "event.severity", &v) && json_object_get_int(v) >= 70)
		sev = 4;   /* High: a misdirected credential placeholder */
	json_object_object_add(o, "severity_id", json_object_new_int(sev));
	json_object_object_add(o, "status_id", json_object_new_int(is(outcome, "success") ? 1 : is(outcome, "failure") ? 2 : 0));
	if (verdict) {
		bool denied = is(verdict, "deny");

		json_object_object_add(o, "action_id", json_object_new_int(denied ? 2 : 1));
		json_object_object_add(o, "disposition_id", json_object_new_int(denied ? 2 : 1));
	}
	/* metadata: the product and the schema version */
	put(o, "metadata.version", json_object_new_string(SLUICE_OCSF_VERSION));
	put(o, "metadata.product.name", json_object_new_string("sluice"));
	put(o, "metadata.product.vendor_name", json_object_new_string("sluice"));
	put(o, "metadata.product.version", json_object_new_string(SLUICE_VERSION));
	{
		/* security_control: action_id, disposition_id, policy, firewall_rule;
		 * host: device, actor; container: container */
		json_object *pr = json_object_new_array();

		json_object_array_add(pr, json_object_new_string("security_control"));
		json_object_array_add(pr, json_object_new_string("host"));
		if (json_object_object_get_ex(ecs, "container.id", NULL))
			json_object_array_add(pr, json_object_new_string("container"));
		put(o, "metadata.profiles", pr);
	}
	if (cls == CLASS_APP_LIFECYCLE) {
		put(o, "app.name", json_object_new_string("sluice"));
		put(o, "app.vendor_name", json_object_new_string("sluice"));
		put(o, "app.version", json_object_new_string(SLUICE_VERSION));
	} else {
		/* sluice sees only egress */
		put(o, "connection_info.direction_id", json_object_new_int(2));
		if (json_object_object_get_ex(ecs, "network.type", &v))
			put(o, "connection_info.protocol_ver_id",
			    json_object_new_int(is(json_object_get_string(v), "ipv6") ? 6 : 4));
	}
}

/* The DNS class's own fields: rcode_id, the query's packet_uid, the
 * answers, and the hostname dns_query requires. */
static void ocsf_dns(json_object *ecs, json_object *o, json_object *taken)
{
	const char *rc_s = str_of(ecs, "dns.response_code");
	json_object *answers, *a, *v;

	json_object_object_add(o, "rcode_id", json_object_new_int(rcode_id(rc_s)));
	if (json_object_object_get_ex(ecs, "dns.id", &v))
		put(o, "query.packet_uid", json_object_new_int(atoi(json_object_get_string(v))));
	json_object_object_add(taken, "dns.id", NULL);
	if (json_object_object_get_ex(ecs, "dns.answers", &answers) && json_object_is_type(answers, json_type_array)) {
		json_object *list = json_object_new_array();

		for (size_t i = 0; i < json_object_array_length(answers); i++) {
			json_object *src = json_object_array_get_idx(answers, i), *dst = json_object_new_object(), *f;

			if (json_object_object_get_ex(src, "data", &f))
				json_object_object_add(dst, "rdata", json_object_get(f));
			if (json_object_object_get_ex(src, "type", &f))
				json_object_object_add(dst, "type", json_object_get(f));
			if (json_object_object_get_ex(src, "class", &f))
				json_object_object_add(dst, "class", json_object_get(f));
			if (json_object_object_get_ex(src, "ttl", &f))
				json_object_object_add(dst, "ttl", json_object_get(f));
			json_object_array_add(list, dst);
		}
		json_object_object_add(o, "answers", list);
		json_object_object_add(taken, "dns.answers", NULL);
	}
	a = json_object_object_get(o, "query");
	if (!a || !json_object_object_get_ex(a, "hostname", NULL))
		/* dns_query requires hostname: a malformed query has none */
		put(o, "query.hostname", json_object_new_string(""));
}

/* o as one line into out (cap bytes); too big, with its unmapped fields
 * replaced by "sluice.truncated": true.  Returns the length, or -1 when
 * even that does not fit. */
static long ocsf_write(json_object *o, char *out, size_t cap)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);

	if (n >= cap) {
		/* too big for a line: the unmapped fields go, said so */
		json_object *mark = json_object_new_object();

		json_object_object_add(mark, "sluice.truncated", json_object_new_boolean(1));
		json_object_object_add(o, "unmapped", mark);
		s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		n = strlen(s);
	}
	if (n >= cap)
		return -1;
	memcpy(out, s, n + 1);
	return (long)n;
}

long sluice_ocsf_convert(const char *line, size_t len, char *out, size_t cap)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *ecs = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	json_object *o, *taken, *unmapped, *v;
	int cls, cat, act;
	long rc;

	json_tokener_free(tok);
	if (!ecs || !json_object_is_type(ecs, json_type_object)) {
		json_object_put(ecs);
		return -1;
	}
	o = json_object_new_object();
	taken = json_object_new_object();
	ocsf_class(ecs, &cls, &act);
	cat = cls / 1000;
	json_object_object_add(o, "class_uid", json_object_new_int(cls));
	json_object_object_add(o, "category_uid", json_object_new_int(cat));
	json_object_object_add(o, "activity_id", json_object_new_int(act));
	json_object_object_add(o, "type_uid", json_object_new_int64((int64_t)cls * 100 + act));
	json_object_object_add(taken, "event.dataset", NULL);
	/* mapped to status_id, action_id, protocol_ver_id below */
	json_object_object_add(taken, "event.outcome", NULL);
	json_object_object_add(taken, "sluice.verdict", NULL);
	json_object_object_add(taken, "network.type", NULL);

	ocsf_envelope(ecs, o, taken, cls);
	map_rows(ecs, o, common_rows, taken);
	map_labels(ecs, o, taken);
	if (json_object_object_get_ex(ecs, "event.duration", &v)) {
		/* ECS: ns; OCSF: ms */
		put(o, "duration", json_object_new_int64(json_object_get_int64(v) / 1000000));
		json_object_object_add(taken, "event.duration", NULL);
	}
	if (cls != CLASS_APP_LIFECYCLE)
		map_rows(ecs, o, cls == CLASS_HTTP ? http_rows : cls == CLASS_DNS ? dns_rows : net_rows, taken);
	if (cls == CLASS_HTTP || cls == CLASS_DNS)
		map_rows(ecs, o, net_rows, taken);   /* the endpoints, tls, bytes not taken yet */
	if (cls == CLASS_HTTP && str_of(ecs, "url.domain"))
		put(o, "dst_endpoint.hostname", json_object_new_string(str_of(ecs, "url.domain")));
	if (cls == CLASS_HTTP && !json_object_object_get(o, "http_request"))
		/* an inspected connection that ended before a request: none to describe */
		json_object_object_add(o, "http_request", json_object_new_object());
	if (cls == CLASS_DNS)
		ocsf_dns(ecs, o, taken);
	if (cls != CLASS_APP_LIFECYCLE && !json_object_object_get(o, "dst_endpoint") &&
	    !json_object_object_get(o, "src_endpoint"))
		/* network classes want one endpoint: the sandbox, by name */
		put(o, "src_endpoint.name", json_object_new_string(str_of(ecs, "sluice.sandbox") ? str_of(ecs, "sluice.sandbox") : ""));

	/* everything else, under its ECS name */
	unmapped = json_object_new_object();
	json_object_object_foreach(ecs, key, val)
	{
		if (!json_object_object_get_ex(taken, key, NULL))
			json_object_object_add(unmapped, key, json_object_get(val));
	}
	json_object_object_add(o, "unmapped", unmapped);
	rc = ocsf_write(o, out, cap);
	json_object_put(o);
	json_object_put(taken);
	json_object_put(ecs);
	return rc;
}
