/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_http_request.c - libFuzzer target for the proxy's request path as
 * pure functions (userspace/proxy/request.c): head scanning, http-parser
 * parsing and framing checks, targets in both forms, decisions against a
 * fixed policy, the head rebuilt for upstream, and the body re-framing.
 * The first input byte picks the form and the original port.
 * Invariants: the rebuilt head is itself a head the scanner accepts, with
 * one Host, and "Connection: close" unless the upstream connection is to be
 * kept (then no Connection header at all); decisions never allow an IP
 * literal.
 *
 *   make build/fuzz/fuzz_http_request
 *   build/fuzz/fuzz_http_request -max_total_time=120 tests/fuzz/corpus/fuzz_http_request
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "policy.h"
#include "request.h"

static const char POLICY[] =
	"version: 1\n"
	"name: fuzz\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [80, 443]\n"
	"    why: fuzz\n"
	"  - host: \"*.cdn.example.net\"\n"
	"    ports: [80]\n"
	"    why: fuzz\n"
	"  - url: http://files.example.com/pub/\n"
	"    methods: [GET, PUT]\n"
	"    why: fuzz\n";

static struct sluice_policy *policy;

static void sink(void *arg, const char *data, size_t len)
{
	size_t *total = arg;

	*total += len;
}

static void check_rebuilt(struct evbuffer *out, bool keep_alive)
{
	size_t len = evbuffer_get_length(out), hl = 0;
	const char *p = (const char *)evbuffer_pullup(out, -1);
	struct proxy_refusal err;
	struct proxy_request again;
	struct proxy_limits big = { 1 << 20, 1 << 20, PROXY_MAX_HEADERS };

	if (proxy_head_scan(p, len, &big, true, &hl, &err) != PROXY_SCAN_COMPLETE || hl != len)
		abort();
	if (proxy_request_parse(&again, p, len, &err) != 0)
		abort();
	if (!again.host)
		abort();
	if (!keep_alive && !memmem(p, len, "\r\nConnection: close\r\n", 21))
		abort();
	for (size_t i = 0; keep_alive && i < again.n_headers; i++)
		if (again.headers[i].name_len == 10 && !strncasecmp(again.headers[i].name, "connection", 10))
			abort();
	proxy_request_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_refusal err;
	struct proxy_request req;
	struct proxy_target *t;
	struct proxy_decision d;
	size_t hl = 0, body = 0;
	enum proxy_form form;
	uint16_t port;
	const char *buf;

	if (!policy) {
		struct sluice_policy_error perr;

		if (sluice_policy_load_buffer("fuzz", POLICY, sizeof(POLICY) - 1, &policy, &perr) != 0)
			abort();
	}
	if (size < 1)
		return 0;
	form = (data[0] & 1) ? PROXY_FORM_EXPLICIT : PROXY_FORM_TRANSPARENT;
	port = (data[0] & 2) ? 443 : 80;
	buf = (const char *)data + 1;
	size--;

	(void)proxy_request_precheck(buf, size, &err);
	if (proxy_head_scan(buf, size, &proxy_default_limits, true, &hl, &err) != PROXY_SCAN_COMPLETE)
		return 0;
	if (proxy_request_parse(&req, buf, hl, &err) == 0) {
		t = malloc(sizeof(*t));
		if (proxy_request_target(&req, form, port, t, &err) == 0) {
			if (t->is_connect)
				proxy_decide_host(policy, t->host, t->port, &d);
			else
				proxy_decide_http(policy, t->host, t->port, req.method, t->path, &d);
			if (d.allow && d.ip_literal)
				abort();
			if (!t->is_connect && !d.ip_literal && d.host[0]) {
				struct evbuffer *out = evbuffer_new();

				/* (the proxy adds up to 3 lines: Host, framing, Connection) */
				bool keep = data[0] & 8;

				if (proxy_build_request_head(&req, t, d.host, keep, out) == 0 &&
				    req.n_headers + 3 <= PROXY_MAX_HEADERS)
					check_rebuilt(out, keep);
				evbuffer_free(out);
			}
		}
		free(t);
		req.body_cb = sink;
		req.body_arg = &body;
		if (!req.message_complete) {
			bool done = false;

			(void)proxy_body_feed(&req, buf + hl, size - hl, &done, &err);
		}
	}
	proxy_request_free(&req);

	/* the same bytes as an upstream response head */
	if (proxy_head_scan(buf, size, &proxy_default_limits, false, &hl, &err) == PROXY_SCAN_COMPLETE) {
		struct proxy_response r;

		if (proxy_response_parse(&r, buf, hl, data[0] & 4, &err) == 0) {
			struct evbuffer *out = evbuffer_new();
			bool done = false;

			(void)proxy_build_response_head(&r, data[0] & 8, out);
			evbuffer_free(out);
			(void)proxy_response_feed(&r, buf + hl, size - hl, &done, &err);
		}
	}
	return 0;
}
