/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_tls_request.c - libFuzzer target for the request path inside
 * inspected TLS: the decrypted bytes a client sends after the handshake go
 * through the head scanner, http-parser and the framing checks, then the
 * target is read as the proxy reads it there (origin-form for the TLS
 * port, scheme https), decided against https:// url entries and an
 * `inspect: true` host entry (proxy_decide_url "https"), and rebuilt for
 * the origin.  The first input byte picks the TLS port and keep-alive.
 * Invariants: an allowed request is for an inspected name on that port and
 * matches an https url entry's method and path prefix (or the inspect host
 * entry); never an IP literal; the URL logged starts with https://; the
 * rebuilt head is one the scanner accepts, with one Host that carries the
 * port only when it is not 443.
 *
 *   make build/fuzz/fuzz_tls_request
 *   build/fuzz/fuzz_tls_request -max_total_time=120 tests/fuzz/corpus/fuzz_tls_request
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "policy.h"
#include "request.h"

static const char POLICY[] =
	"version: 1\n"
	"name: fuzz-tls\n"
	"allow:\n"
	"  - url: https://api.example.com/v1/\n"
	"    methods: [GET, POST]\n"
	"    why: fuzz\n"
	"  - url: https://api.example.com:8443/pub\n"
	"    why: fuzz\n"
	"  - host: logged.example.com\n"
	"    ports: [443]\n"
	"    inspect: true\n"
	"    why: fuzz\n";

static struct sluice_policy *policy;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_refusal err;
	struct proxy_request req;
	struct proxy_target *t;
	struct proxy_decision d;
	size_t hl = 0;
	uint16_t port;
	const char *buf;

	if (!policy) {
		struct sluice_policy_error perr;

		if (sluice_policy_load_buffer("fuzz", POLICY, sizeof(POLICY) - 1, &policy, &perr) != 0)
			abort();
	}
	if (size < 1)
		return 0;
	port = (data[0] & 1) ? 8443 : 443;
	buf = (const char *)data + 1;
	size--;

	(void)proxy_request_precheck(buf, size, &err);
	if (proxy_head_scan(buf, size, &proxy_default_limits, true, &hl, &err) != PROXY_SCAN_COMPLETE)
		return 0;
	memset(&req, 0, offsetof(struct proxy_request, headers));
	if (proxy_request_parse(&req, buf, hl, &err) == 0) {
		t = malloc(sizeof(*t));
		if (t && proxy_request_target(&req, PROXY_FORM_TRANSPARENT, port, t, &err) == 0) {
			char url[PROXY_TARGET_MAX + SLUICE_HOST_MAX + 32];

			t->tls = true;
			if (t->is_connect || t->port != port)
				abort();   /* refused in the transparent form */
			proxy_decide_url(policy, "https", t->host, t->port, req.method, t->path, &d);
			if (d.allow) {
				if (d.ip_literal || !sluice_policy_inspects(policy, d.host, port))
					abort();
				if (d.entry->kind == SLUICE_ENTRY_URL &&
				    sluice_policy_match_url(policy, "https", d.host, port, req.method, t->path) != d.entry)
					abort();
				if (d.entry->kind == SLUICE_ENTRY_HOST && !d.entry->inspect)
					abort();
			}
			if (!d.ip_literal && d.host[0]) {
				struct evbuffer *out = evbuffer_new();

				proxy_target_url(t, d.host, url, sizeof(url));
				if (strncmp(url, "https://", 8) != 0)
					abort();
				if (out && proxy_build_request_head(&req, t, d.host, data[0] & 2, out) == 0 &&
				    req.n_headers + 3 <= PROXY_MAX_HEADERS) {
					size_t len = evbuffer_get_length(out), rl = 0;
					const char *p = (const char *)evbuffer_pullup(out, -1);
					struct proxy_limits big = { 1 << 20, 1 << 20, PROXY_MAX_HEADERS };
					struct proxy_request again;
					bool with_port = false;

					if (proxy_head_scan(p, len, &big, true, &rl, &err) != PROXY_SCAN_COMPLETE || rl != len)
						abort();
					memset(&again, 0, offsetof(struct proxy_request, headers));
					if (proxy_request_parse(&again, p, len, &err) != 0 || !again.host)
						abort();
					with_port = memchr(again.host->value, ':', again.host->value_len) != NULL &&
						    !strchr(d.host, ':');
					if (with_port != (port != 443))
						abort();
					proxy_request_free(&again);
				}
				if (out)
					evbuffer_free(out);
			}
		}
		free(t);
	}
	proxy_request_free(&req);
	return 0;
}
