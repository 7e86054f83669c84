/* SPDX-License-Identifier: BSD-2-Clause */
#include "accesslog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "jsonstr.h"

#include "addr.h"

/* every string through sluice_json_string: bytes that are not UTF-8 (a
 * hostile comm, server name or path) become U+FFFD, the line stays JSON */
static void put_str(json_object *o, const char *key, const char *v)
{
	if (v)
		json_object_object_add(o, key, sluice_json_string(v));
}

static void put_i64(json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

static void put_u64(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

/* "<prefix>.ip" and "<prefix>.port" of an endpoint. */
static void put_endpoint(json_object *o, const char *ipkey, const char *portkey,
			 const struct sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN];
	uint16_t port;

	if (!sa || proxy_sockaddr_str(sa, ip, sizeof(ip), &port) < 0)
		return;
	put_str(o, ipkey, ip);
	put_i64(o, portkey, port);
}

char *proxy_log_format(const struct proxy_log_rec *r)
{
	json_object *o = json_object_new_object();
	char ts[64], tbuf[32];
	struct tm tm;
	char *out;

	if (!o)
		return NULL;
	gmtime_r(&r->start.tv_sec, &tm);
	strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts, sizeof(ts), "%s.%06uZ", tbuf, (unsigned)((r->start.tv_nsec / 1000) % 1000000));

	/* the fields every sluice line carries (docs/events.md) */
	put_str(o, "@timestamp", ts);
	put_str(o, "sluice.sandbox", r->sandbox);
	put_str(o, "sluice.policy_name", r->policy_name);
	put_str(o, "rule.ruleset", r->policy_digest);
	put_str(o, "sluice.policy_sha256", r->policy_digest);
	put_str(o, "sluice.mode", r->mode);
	put_str(o, "sluice.component", "proxy");

	put_str(o, "event.kind", "event");
	put_str(o, "event.category", "network");
	put_str(o, "event.dataset", "sluice.proxy");
	{
		json_object *type = json_object_new_array();

		json_object_array_add(type, json_object_new_string("connection"));
		json_object_array_add(type, json_object_new_string(
			r->verdict && strcmp(r->verdict, "deny") == 0 ? "denied" : "allowed"));
		json_object_object_add(o, "event.type", type);
	}
	put_str(o, "event.action", r->action);
	put_str(o, "event.outcome", r->outcome);
	put_str(o, "event.reason", r->reason);
	put_u64(o, "event.duration", r->duration_ns);
	put_str(o, "sluice.verdict", r->verdict);
	put_str(o, "sluice.form", r->form);
	put_str(o, "rule.name", r->rule);

	put_str(o, "url.full", r->url_full);
	put_str(o, "url.domain", r->domain);
	put_str(o, "tls.client.server_name", r->sni);
	put_str(o, "http.request.method", r->method);
	if (r->status > 0)
		put_i64(o, "http.response.status_code", r->status);
	if (r->tunnel) {
		if (r->req_bytes >= 0)
			put_i64(o, "source.bytes", r->req_bytes);
		if (r->resp_bytes >= 0)
			put_i64(o, "destination.bytes", r->resp_bytes);
	} else {
		if (r->req_bytes >= 0)
			put_i64(o, "http.request.bytes", r->req_bytes);
		if (r->resp_bytes >= 0)
			put_i64(o, "http.response.bytes", r->resp_bytes);
	}
	put_endpoint(o, "source.ip", "source.port", r->src);
	put_endpoint(o, "destination.ip", "destination.port", r->dst);

	if (r->orig) {
		char hp[INET6_ADDRSTRLEN + 8], uid[16];
		char comm[sizeof(r->orig->comm) + 1];
		uint8_t a[16];
		int fam = r->orig->family == SLUICE_AF_INET6 ? AF_INET6 : AF_INET;

		memcpy(a, r->orig->daddr, 16);
		put_str(o, "sluice.orig_dst", proxy_hostport_str(fam, a, r->orig->dport, hp, sizeof(hp)));
		put_u64(o, "sluice.cgroup_id", r->orig->cgroup_id);
		if (r->orig->pid) {
			put_i64(o, "process.pid", r->orig->pid);
			memcpy(comm, r->orig->comm, sizeof(r->orig->comm));
			comm[sizeof(r->orig->comm)] = '\0';
			if (comm[0])
				put_str(o, "process.name", comm);
			snprintf(uid, sizeof(uid), "%u", r->orig->uid);
			put_str(o, "user.id", uid);
		}
	}
	if (r->orig_dst_mismatch >= 0)
		json_object_object_add(o, "sluice.orig_dst_mismatch",
				       json_object_new_boolean(r->orig_dst_mismatch));
	if (r->n_dropped) {
		json_object *arr = json_object_new_array();

		for (size_t i = 0; i < r->n_dropped && i < PROXY_LOG_MAX_DROPPED; i++)
			json_object_array_add(arr, json_object_new_string(r->dropped[i]));
		json_object_object_add(o, "sluice.dropped_answers", arr);
	}

	out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}

int proxy_log_write(int fd, const struct proxy_log_rec *r)
{
	char *line = proxy_log_format(r);
	size_t len, off = 0;

	if (!line) {
		errno = ENOMEM;
		return -1;
	}
	len = strlen(line);
	line[len] = '\n';   /* replaces the NUL; written by length */
	while (off < len + 1) {
		ssize_t n = write(fd, line + off, len + 1 - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(line);
			return -1;
		}
		off += (size_t)n;
	}
	free(line);
	return 0;
}
