/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_proxy_request.c - the proxy's pure logic (userspace/proxy/request.c,
 * addr.c, flow.c, accesslog.c): head scanning and smuggling framings,
 * request parsing, targets, policy decisions, the heads sent upstream and
 * back, body re-framing, the special-address hatch (the ranges: test_netaddr.c), flow keys and log lines.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <json-c/json.h>

#include "accesslog.h"
#include "evlog.h"
#include "addr.h"
#include "flow.h"
#include "policy.h"
#include "request.h"
#include "sni.h"

static const char POLICY[] =
	"version: 1\n"
	"name: unit\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [443, 8080]\n"
	"    why: api\n"
	"  - host: \"*.cdn.example.net\"\n"
	"    ports: [443]\n"
	"    why: wildcard\n"
	"  - url: http://files.example.com/pub/\n"
	"    methods: [GET, HEAD]\n"
	"    why: downloads\n"
	"  - url: http://files.example.com/upload\n"
	"    methods: [PUT]\n"
	"    why: uploads\n"
	"  - cidr: 10.20.0.0/16\n"
	"    ports: [8080]\n"
	"    why: an internal service, reached directly\n"
	"  - cidr: fd00:1::/64\n"
	"    ports: [8000-8100]\n"
	"    why: internal v6\n"
	"  - cidr: 10.30.0.0/16\n"
	"    ports: [8080]\n"
	"    protocol: udp\n"
	"    why: udp only\n";

static int setup_policy(void **state)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;

	if (sluice_policy_load_buffer("unit.yaml", POLICY, sizeof(POLICY) - 1, &p, &err) != 0) {
		char buf[600];

		fprintf(stderr, "%s\n", sluice_policy_error_str(&err, buf, sizeof(buf)));
		return -1;
	}
	*state = p;
	return 0;
}

static int teardown_policy(void **state)
{
	sluice_policy_free(*state);
	return 0;
}

/* --- head scanning ---------------------------------------------------------- */

static enum proxy_scan_status scan(const char *s, size_t *hl, struct proxy_refusal *err)
{
	return proxy_head_scan(s, strlen(s), &proxy_default_limits, true, hl, err);
}

static void scan_refused(const char *s, int status, const char *reason)
{
	struct proxy_refusal err = { 0, NULL };
	size_t hl = 0;

	if (scan(s, &hl, &err) != PROXY_SCAN_ERROR)
		fail_msg("accepted: %s", s);
	assert_int_equal(err.status, status);
	assert_string_equal(err.reason, reason);
}

static void test_scan(void **state)
{
	struct proxy_refusal err;
	size_t hl = 0;
	const char *ok = "GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY";
	char *big;

	assert_int_equal(scan(ok, &hl, &err), PROXY_SCAN_COMPLETE);
	assert_int_equal(hl, strlen(ok) - 4);
	assert_int_equal(scan("GET / HTTP/1.1\r\nHost: a\r\n", &hl, &err), PROXY_SCAN_INCOMPLETE);
	assert_int_equal(scan("GET / HTTP/1.1\r", &hl, &err), PROXY_SCAN_INCOMPLETE);
	assert_int_equal(scan("", &hl, &err), PROXY_SCAN_INCOMPLETE);

	scan_refused("GET / HTTP/1.1\nHost: a\r\n\r\n", 400, "bare_lf");
	scan_refused("GET / HTTP/1.1\r\nHost: a\n\r\n", 400, "bare_lf");
	scan_refused("GET / HTTP/1.1\r\nHost: a\r\n\n", 400, "bare_lf");
	scan_refused("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400, "bare_cr");
	scan_refused("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "obs_fold");
	scan_refused("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", 400, "obs_fold");
	scan_refused("\r\nGET / HTTP/1.1\r\n\r\n", 400, "malformed_request");
	scan_refused("GET / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 400, "bad_header_name");
	scan_refused("GET / HTTP/1.1\r\nno colon\r\n\r\n", 400, "bad_header_name");
	scan_refused("GET / HTTP/1.1\r\n: empty name\r\n\r\n", 400, "bad_header_name");
	{
		const char nul[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
		size_t h;

		assert_int_equal(proxy_head_scan(nul, sizeof(nul) - 1, &proxy_default_limits, true, &h, &err),
				 PROXY_SCAN_ERROR);
		assert_string_equal(err.reason, "nul_byte");
	}

	/* limits: the request line, the whole head, the number of lines */
	big = malloc(70000);
	memset(big, 'a', 69999);
	big[69999] = '\0';
	memcpy(big, "GET /", 5);
	scan_refused(big, 414, "uri_too_long");
	strcpy(big, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 60; i++)
		sprintf(big + strlen(big), "X-%d: %0600d\r\n", i, 0);
	scan_refused(big, 431, "headers_too_large");
	strcpy(big, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 101; i++)
		sprintf(big + strlen(big), "X-%d: 1\r\n", i);
	strcat(big, "\r\n");
	scan_refused(big, 431, "headers_too_large");
	/* responses (strict off) tolerate bare LF and folding */
	strcpy(big, "HTTP/1.1 200 OK\nX: a\n b\n\n");
	assert_int_equal(proxy_head_scan(big, strlen(big), &proxy_default_limits, false, &hl, &err),
			 PROXY_SCAN_COMPLETE);
	free(big);
}

static void test_precheck(void **state)
{
	struct proxy_refusal err;

	assert_int_equal(proxy_request_precheck("GET /x HTTP/1.", 14, &err), 0);
	assert_int_equal(proxy_request_precheck("SSH-2.0-OpenSSH\r\n", 17, &err), -1);
	assert_string_equal(err.reason, "unrecognised_protocol");
	assert_int_equal(proxy_request_precheck("GET /x\x01", 7, &err), -1);
	assert_string_equal(err.reason, "malformed_request");
}

/* --- parsing and framing -------------------------------------------------------- */

/* Parse a full head; returns 0 or the refusal's reason in *reason. */
static int parse(const char *head, struct proxy_request *req, const char **reason)
{
	struct proxy_refusal err = { 0, NULL };
	size_t hl = 0;
	int r;

	if (scan(head, &hl, &err) != PROXY_SCAN_COMPLETE) {
		*reason = err.reason ? err.reason : "incomplete";
		return -1;
	}
	r = proxy_request_parse(req, head, hl, &err);
	*reason = r ? err.reason : NULL;
	if (r)
		assert_int_equal(err.status, 400);
	return r;
}

static void parse_refused(const char *head, const char *want)
{
	struct proxy_request req;
	const char *reason = NULL;

	if (parse(head, &req, &reason) == 0)
		fail_msg("accepted: %s", head);
	proxy_request_free(&req);
	assert_string_equal(reason, want);
}

static void test_parse(void **state)
{
	struct proxy_request req;
	const char *reason;

	assert_int_equal(parse("GET http://a.example/x?y HTTP/1.1\r\nHost: b\r\nX-A:  v  \r\n\r\n", &req, &reason), 0);
	assert_string_equal(req.method, "GET");
	assert_string_equal(req.target, "http://a.example/x?y");
	assert_int_equal(req.n_headers, 2);
	assert_non_null(req.host);
	assert_int_equal(req.headers[1].value_len, 1);   /* OWS trimmed */
	assert_true(req.message_complete);
	assert_false(req.chunked);
	proxy_request_free(&req);

	assert_int_equal(parse("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n", &req, &reason), 0);
	assert_true(req.chunked);
	assert_false(req.message_complete);
	proxy_request_free(&req);

	assert_int_equal(parse("CONNECT a.example:443 HTTP/1.1\r\n\r\n", &req, &reason), 0);
	assert_int_equal(req.method_id, HTTP_CONNECT);
	proxy_request_free(&req);

	parse_refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "cl_te_conflict");
	parse_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", "cl_te_conflict");
	parse_refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", "duplicate_content_length");
	parse_refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "duplicate_content_length");
	parse_refused("POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\n", "bad_content_length");
	parse_refused("POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n", "bad_content_length");
	parse_refused("POST / HTTP/1.1\r\nContent-Length: \r\n\r\n", "bad_content_length");
	parse_refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "bad_transfer_encoding");
	parse_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", "bad_transfer_encoding");
	parse_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		      "bad_transfer_encoding");
	parse_refused("POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", "bad_transfer_encoding");
	parse_refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", "bad_transfer_encoding");
	parse_refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "duplicate_host");
	parse_refused("GET / HTTP/2.0\r\n\r\n", "http_version");
	parse_refused("G@T / HTTP/1.1\r\n\r\n", "unrecognised_protocol");
	parse_refused("GET / HTTP/1.1\r\nX: a\x01" "b\r\n\r\n", "malformed_request");   /* http-parser's own refusal */
}

static void collect(void *arg, const char *data, size_t len)
{
	struct evbuffer *b = arg;

	evbuffer_add(b, data, len);
}

static void test_body_feed(void **state)
{
	static const char head[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	static const char body[] = "5\r\nhello\r\n3;ext=1\r\n ab\r\n0\r\nTrailer: x\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n";
	struct proxy_request req;
	struct proxy_refusal err;
	struct evbuffer *out = evbuffer_new();
	const char *reason;
	bool done = false;
	ssize_t used, total = 0;

	assert_int_equal(parse(head, &req, &reason), 0);
	req.body_cb = collect;
	req.body_arg = out;
	/* byte by byte: the decoded body, and it stops right at the end */
	for (size_t i = 0; i < sizeof(body) - 1 && !done; i++) {
		used = proxy_body_feed(&req, body + i, 1, &done, &err);
		assert_true(used >= 0);
		total += used;
	}
	assert_true(done);
	assert_int_equal(total, strstr(body, "GET /smuggled") - body);
	assert_int_equal(evbuffer_get_length(out), 8);
	assert_memory_equal(evbuffer_pullup(out, -1), "hello ab", 8);
	proxy_request_free(&req);

	/* Content-Length: exactly that many bytes */
	evbuffer_drain(out, evbuffer_get_length(out));
	assert_int_equal(parse("PUT / HTTP/1.1\r\nContent-Length: 4\r\n\r\n", &req, &reason), 0);
	req.body_cb = collect;
	req.body_arg = out;
	used = proxy_body_feed(&req, "abcdEXTRA", 9, &done, &err);
	assert_int_equal(used, 4);
	assert_true(done);
	assert_int_equal(evbuffer_get_length(out), 4);
	proxy_request_free(&req);

	/* a bad chunk size */
	assert_int_equal(parse(head, &req, &reason), 0);
	done = false;
	assert_int_equal(proxy_body_feed(&req, "zz\r\n", 4, &done, &err), -1);
	assert_string_equal(err.reason, "bad_body");
	proxy_request_free(&req);
	evbuffer_free(out);
}

/* Whether the client asks to keep its connection, and where a pipelined
 * request begins: each request is parsed on its own. */
static void test_keep_alive(void **state)
{
	static const struct {
		const char *head;
		bool keep;
	} cases[] = {
		{ "GET http://a.example/ HTTP/1.1\r\n\r\n", true },
		{ "GET http://a.example/ HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", true },
		{ "GET http://a.example/ HTTP/1.1\r\nConnection: close\r\n\r\n", false },
		{ "GET http://a.example/ HTTP/1.1\r\nConnection: x-foo, close\r\n\r\n", false },
		{ "GET http://a.example/ HTTP/1.1\r\nConnection: Close\r\n\r\n", false },
		{ "GET http://a.example/ HTTP/1.0\r\n\r\n", false },
		{ "GET http://a.example/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true },
	};
	static const char two[] = "POST http://a.example/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
				  "GET http://b.example/ HTTP/1.1\r\n\r\n";
	struct proxy_request req;
	struct proxy_refusal err;
	const char *reason;
	bool done = false;
	size_t hl = 0;
	ssize_t used;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(cases[i].head, &req, &reason), 0);
		if (req.keep_alive != cases[i].keep)
			fail_msg("keep_alive %d for %s", req.keep_alive, cases[i].head);
		proxy_request_free(&req);
	}
	/* two requests back to back: the first ends after its body, the second
	 * is a head of its own */
	assert_int_equal(proxy_head_scan(two, sizeof(two) - 1, &proxy_default_limits, true, &hl, &err),
			 PROXY_SCAN_COMPLETE);
	assert_int_equal(proxy_request_parse(&req, two, hl, &err), 0);
	used = proxy_body_feed(&req, two + hl, sizeof(two) - 1 - hl, &done, &err);
	assert_int_equal(used, 3);
	assert_true(done);
	proxy_request_free(&req);
	assert_int_equal(parse(two + hl + 3, &req, &reason), 0);
	assert_string_equal(req.target, "http://b.example/");
	assert_true(req.keep_alive);
	proxy_request_free(&req);
}

/* --- targets ----------------------------------------------------------------------- */

static int target(const char *head, enum proxy_form form, uint16_t port, struct proxy_target *t,
		  const char **reason, int *status)
{
	struct proxy_request req;
	struct proxy_refusal err = { 0, NULL };
	int r;

	assert_int_equal(parse(head, &req, reason), 0);
	r = proxy_request_target(&req, form, port, t, &err);
	*reason = err.reason;
	*status = err.status;
	proxy_request_free(&req);
	return r;
}

static void target_refused(const char *head, enum proxy_form form, uint16_t port, int status,
			   const char *want)
{
	struct proxy_target *t = malloc(sizeof(*t));
	const char *reason;
	int st;

	if (target(head, form, port, t, &reason, &st) == 0)
		fail_msg("accepted: %s", head);
	assert_string_equal(reason, want);
	assert_int_equal(st, status);
	free(t);
}

static void test_targets(void **state)
{
	struct proxy_target *t = malloc(sizeof(*t));
	const char *reason;
	int st;
	char url[512];

	assert_int_equal(target("GET http://Files.Example.com/pub/./a/../b?q=%2F HTTP/1.1\r\n\r\n",
				PROXY_FORM_EXPLICIT, 3128, t, &reason, &st), 0);
	assert_string_equal(t->host, "Files.Example.com");
	assert_int_equal(t->port, 80);
	assert_string_equal(t->path, "/pub/b");
	assert_true(t->has_query);
	assert_string_equal(t->query, "q=%2F");
	assert_string_equal(proxy_target_url(t, "files.example.com", url, sizeof(url)),
			    "http://files.example.com/pub/b?q=%2F");

	assert_int_equal(target("GET http://a.example:8080 HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, t,
				&reason, &st), 0);
	assert_string_equal(t->path, "/");
	assert_int_equal(t->port, 8080);
	assert_false(t->has_query);
	assert_string_equal(proxy_target_url(t, "a.example", url, sizeof(url)), "http://a.example:8080/");

	assert_int_equal(target("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, t,
				&reason, &st), 0);
	assert_true(t->is_connect);
	assert_string_equal(t->host, "2001:db8::1");
	assert_int_equal(t->port, 443);

	/* transparent: Host decides the name, the kernel the port */
	assert_int_equal(target("GET /x HTTP/1.1\r\nHost: api.example.com.\r\n\r\n", PROXY_FORM_TRANSPARENT,
				8080, t, &reason, &st), 0);
	assert_string_equal(t->host, "api.example.com.");
	assert_int_equal(t->port, 8080);
	assert_int_equal(target("GET /x HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n", PROXY_FORM_TRANSPARENT,
				8080, t, &reason, &st), 0);
	assert_int_equal(target("GET http://api.example.com:8080/x HTTP/1.1\r\nHost: other\r\n\r\n",
				PROXY_FORM_TRANSPARENT, 8080, t, &reason, &st), 0);
	assert_string_equal(t->host, "api.example.com");

	target_refused("GET /x HTTP/1.1\r\nHost: a.example\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 400, "not_proxy_request");
	target_refused("GET https://a.example/ HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 400, "scheme_not_supported");
	target_refused("GET ftp://a.example/ HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 400, "scheme_not_supported");
	target_refused("GET http://u:p@a.example/ HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 403, "userinfo");
	target_refused("GET http://a.example/x#frag HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 403, "fragment");
	target_refused("GET http://a.example/a%2Fb HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 403, "bad_path");
	target_refused("GET http://a.example/a%00 HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 403, "bad_path");
	target_refused("GET http://a.example/a%5cb HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 403, "bad_path");
	target_refused("GET http://a.example/a?x=%00 HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 403, "bad_path");
	target_refused("CONNECT a.example HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 400, "bad_connect_target");
	target_refused("CONNECT u@a.example:443 HTTP/1.1\r\n\r\n", PROXY_FORM_EXPLICIT, 1, 403, "userinfo");
	target_refused("CONNECT a.example:443 HTTP/1.1\r\n\r\n", PROXY_FORM_TRANSPARENT, 443, 400, "unexpected_connect");
	target_refused("GET / HTTP/1.1\r\n\r\n", PROXY_FORM_TRANSPARENT, 80, 400, "missing_host");
	target_refused("GET / HTTP/1.1\r\nHost: a.example:81\r\n\r\n", PROXY_FORM_TRANSPARENT, 80, 403,
		       "host_port_mismatch");
	target_refused("GET http://a.example:81/ HTTP/1.1\r\n\r\n", PROXY_FORM_TRANSPARENT, 80, 403,
		       "host_port_mismatch");
	target_refused("GET / HTTP/1.1\r\nHost: u@a.example\r\n\r\n", PROXY_FORM_TRANSPARENT, 80, 403, "userinfo");
	target_refused("GET / HTTP/1.1\r\nHost: a.example/x\r\n\r\n", PROXY_FORM_TRANSPARENT, 80, 400, "bad_host_header");
	target_refused("GET /#x HTTP/1.1\r\nHost: a.example\r\n\r\n", PROXY_FORM_TRANSPARENT, 80, 403, "fragment");
	target_refused("OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n", PROXY_FORM_TRANSPARENT, 80, 400,
		       "malformed_request");
	free(t);
}

/* --- decisions ------------------------------------------------------------------------ */

static void host_decision(const struct sluice_policy *p, const char *host, uint16_t port,
			  bool allow, const char *reason)
{
	struct proxy_decision d;

	proxy_decide_host(p, host, port, &d);
	if (d.allow != allow || strcmp(d.reason, reason) != 0)
		fail_msg("%s:%u: got %s/%s, want %s/%s", host, port, d.allow ? "allow" : "deny", d.reason,
			 allow ? "allow" : "deny", reason);
	if (allow)
		assert_non_null(d.entry);
	else
		assert_int_equal(d.status, 403);
}

static void test_decide_host(void **state)
{
	const struct sluice_policy *p = *state;
	struct proxy_decision d;

	host_decision(p, "api.example.com", 443, true, "allowed");
	host_decision(p, "API.Example.COM.", 443, true, "allowed");
	host_decision(p, "api.example.com", 444, false, "host_not_allowed");
	host_decision(p, "evilapi.example.com", 443, false, "host_not_allowed");
	host_decision(p, "api.example.com.evil.org", 443, false, "host_not_allowed");
	host_decision(p, "a.cdn.example.net", 443, true, "allowed");
	host_decision(p, "a.b.cdn.example.net", 443, true, "allowed");
	host_decision(p, "cdn.example.net", 443, false, "host_not_allowed");
	host_decision(p, "files.example.com", 80, false, "host_not_allowed");   /* url entries are HTTP only */
	host_decision(p, "192.0.2.10", 443, false, "ip_literal");
	host_decision(p, "::ffff:192.0.2.10", 443, false, "ip_literal");
	host_decision(p, "2001:db8::1", 443, false, "ip_literal");
	host_decision(p, "0x7f.1", 443, false, "ip_literal");
	host_decision(p, "2130706433", 443, false, "ip_literal");
	host_decision(p, "api%2eexample.com", 443, false, "bad_host");
	host_decision(p, "api.example.com\x01", 443, false, "bad_host");

	proxy_decide_host(p, "192.0.2.10", 443, &d);
	assert_true(d.ip_literal && d.audit_ok);
	assert_int_equal(d.ip_family, AF_INET);
	assert_string_equal(d.host, "192.0.2.10");
	proxy_decide_host(p, "::ffff:192.0.2.10", 443, &d);
	assert_true(d.ip_literal);
	assert_string_equal(d.host, "192.0.2.10");
	proxy_decide_host(p, "0x7f.1", 443, &d);
	assert_false(d.ip_literal);
	assert_false(d.audit_ok);   /* non-canonical spellings are refused even in audit mode */
	proxy_decide_host(p, "bad host", 443, &d);
	assert_false(d.audit_ok);
	assert_string_equal(d.host, "bad?host");   /* printable for the log */
}

static void http_decision(const struct sluice_policy *p, const char *host, uint16_t port, const char *method,
			  const char *path, bool allow, const char *reason)
{
	struct proxy_decision d;

	proxy_decide_http(p, host, port, method, path, &d);
	if (d.allow != allow || strcmp(d.reason, reason) != 0)
		fail_msg("%s %s:%u%s: got %s/%s, want %s", method, host, port, path, d.allow ? "allow" : "deny",
			 d.reason, reason);
}

static void test_decide_http(void **state)
{
	const struct sluice_policy *p = *state;

	http_decision(p, "files.example.com", 80, "GET", "/pub/a", true, "allowed");
	http_decision(p, "files.example.com", 80, "HEAD", "/pub/", true, "allowed");
	http_decision(p, "files.example.com", 80, "GET", "/pub", false, "path_not_allowed");
	http_decision(p, "files.example.com", 80, "GET", "/pubx", false, "path_not_allowed");
	http_decision(p, "files.example.com", 80, "POST", "/pub/a", false, "method_not_allowed");
	http_decision(p, "files.example.com", 80, "PUT", "/upload/x", true, "allowed");
	http_decision(p, "files.example.com", 80, "GET", "/upload/x", false, "method_not_allowed");
	http_decision(p, "files.example.com", 8080, "GET", "/pub/a", false, "host_not_allowed");
	http_decision(p, "api.example.com", 8080, "DELETE", "/anything", true, "allowed");  /* host entry */
	http_decision(p, "other.example.com", 80, "GET", "/", false, "host_not_allowed");
	http_decision(p, "198.51.100.1", 80, "GET", "/pub/a", false, "ip_literal");
}

static void test_check_hello(void **state)
{
	struct sni_result h;
	struct proxy_decision d;
	char norm[SLUICE_HOST_MAX + 1];

	memset(&h, 0, sizeof(h));
	memset(&d, 0, sizeof(d));
	assert_int_equal(proxy_check_hello(&h, NULL, norm, &d), -1);
	assert_string_equal(d.reason, "no_sni");
	h.has_sni = true;
	strcpy(h.sni, "API.example.com.");
	assert_int_equal(proxy_check_hello(&h, NULL, norm, &d), 0);
	assert_string_equal(norm, "api.example.com");
	assert_int_equal(proxy_check_hello(&h, "api.example.com", norm, &d), 0);
	assert_int_equal(proxy_check_hello(&h, "other.example.com", norm, &d), -1);
	assert_string_equal(d.reason, "sni_mismatch");
	assert_true(d.audit_ok);
	h.has_ech = true;
	assert_int_equal(proxy_check_hello(&h, "api.example.com", norm, &d), -1);
	assert_string_equal(d.reason, "ech");
	assert_string_equal(norm, "api.example.com");   /* the outer SNI, for the log */
	h.has_ech = false;
	strcpy(h.sni, "bad name");
	assert_int_equal(proxy_check_hello(&h, NULL, norm, &d), -1);
	assert_string_equal(d.reason, "bad_sni");
}

/* --- heads built -------------------------------------------------------------------------- */

static char *head_str(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);

	evbuffer_remove(b, s, n);
	s[n] = '\0';
	return s;
}

static void test_build_request_head(void **state)
{
	static const char head[] =
		"POST http://api.example.com:8080/x/../y?q=1 HTTP/1.1\r\n"
		"Host: spoofed.example\r\n"
		"Connection: keep-alive, X-Secret\r\n"
		"X-Secret: s\r\n"
		"Proxy-Authorization: Basic x\r\n"
		"Proxy-Foo: 1\r\n"
		"Keep-Alive: 300\r\n"
		"X-Forwarded-For: 10.0.0.1\r\n"
		"Forwarded: for=x\r\n"
		"Upgrade: h2c\r\n"
		"TE: trailers\r\n"
		"Accept: */*\r\n"
		"Transfer-Encoding: chunked\r\n"
		"\r\n";
	struct proxy_request req;
	struct proxy_target *t = malloc(sizeof(*t));
	struct proxy_refusal err;
	struct evbuffer *out = evbuffer_new();
	const char *reason;
	char *s;

	assert_int_equal(parse(head, &req, &reason), 0);
	assert_true(req.keep_alive);
	assert_int_equal(proxy_request_target(&req, PROXY_FORM_EXPLICIT, 3128, t, &err), 0);
	assert_int_equal(proxy_build_request_head(&req, t, "api.example.com", false, out), 0);
	s = head_str(out);
	assert_string_equal(s,
			    "POST /y?q=1 HTTP/1.1\r\n"
			    "Accept: */*\r\n"
			    "Host: api.example.com:8080\r\n"
			    "Transfer-Encoding: chunked\r\n"
			    "Connection: close\r\n"
			    "\r\n");
	free(s);
	/* a connection the proxy means to reuse: HTTP/1.1's default, no
	 * Connection header (the client's never passes) */
	assert_int_equal(proxy_build_request_head(&req, t, "api.example.com", true, out), 0);
	s = head_str(out);
	assert_string_equal(s,
			    "POST /y?q=1 HTTP/1.1\r\n"
			    "Accept: */*\r\n"
			    "Host: api.example.com:8080\r\n"
			    "Transfer-Encoding: chunked\r\n"
			    "\r\n");
	free(s);
	proxy_request_free(&req);

	assert_int_equal(parse("GET http://[2001:db8::1]/ HTTP/1.0\r\nContent-Length: 0\r\n\r\n", &req, &reason), 0);
	assert_false(req.keep_alive);   /* HTTP/1.0 without keep-alive */
	assert_int_equal(proxy_request_target(&req, PROXY_FORM_EXPLICIT, 3128, t, &err), 0);
	assert_int_equal(proxy_build_request_head(&req, t, "2001:db8::1", false, out), 0);
	s = head_str(out);
	assert_string_equal(s, "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	free(s);
	proxy_request_free(&req);
	evbuffer_free(out);
	free(t);
}

static int response(const char *head, bool is_head, struct proxy_response *r, const char **reason)
{
	struct proxy_refusal err = { 0, NULL };
	size_t hl = 0;

	if (proxy_head_scan(head, strlen(head), &proxy_default_limits, false, &hl, &err) != PROXY_SCAN_COMPLETE)
		return -2;
	if (proxy_response_parse(r, head, hl, is_head, &err) < 0) {
		*reason = err.reason;
		return -1;
	}
	return 0;
}

static void test_responses(void **state)
{
	struct proxy_response r;
	struct proxy_refusal err;
	struct evbuffer *out = evbuffer_new();
	const char *reason = NULL;
	bool done = false;
	char *s;
	static const char chunked[] = "5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n";

	assert_int_equal(response("HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"
				  "Keep-Alive: 5\r\nProxy-Authenticate: x\r\nContent-Length: 5\r\nX-End: 1\r\n\r\n",
				  false, &r, &reason), 0);
	assert_int_equal(r.status, 200);
	assert_false(r.needs_eof);
	assert_true(r.keep_alive);
	assert_int_equal(proxy_build_response_head(&r, false, out), 0);
	s = head_str(out);
	assert_string_equal(s, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-End: 1\r\nConnection: close\r\n\r\n");
	free(s);
	assert_int_equal(proxy_build_response_head(&r, true, out), 0);
	s = head_str(out);
	assert_string_equal(s, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-End: 1\r\nConnection: keep-alive\r\n\r\n");
	free(s);
	assert_int_equal(proxy_response_feed(&r, "helloMORE", 9, &done, &err), 5);
	assert_true(done);

	/* the origin closes after this one: delimited, but not reusable */
	assert_int_equal(response("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
				  false, &r, &reason), 0);
	assert_false(r.needs_eof);
	assert_false(r.keep_alive);
	/* HTTP/1.0: reusable only with keep-alive; the client gets the
	 * proxy's own version */
	assert_int_equal(response("HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n", false, &r, &reason), 0);
	assert_false(r.keep_alive);
	assert_int_equal(proxy_build_response_head(&r, true, out), 0);
	s = head_str(out);
	assert_string_equal(s, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
	free(s);
	assert_int_equal(response("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
				  false, &r, &reason), 0);
	assert_true(r.keep_alive);
	/* no body by status: delimited */
	assert_int_equal(response("HTTP/1.1 204 No Content\r\n\r\n", false, &r, &reason), 0);
	assert_false(r.needs_eof);
	assert_true(r.keep_alive);
	assert_int_equal(response("HTTP/1.1 304 Not Modified\r\n\r\n", false, &r, &reason), 0);
	assert_false(r.needs_eof);

	/* chunked: passed through raw, ends at the last chunk */
	assert_int_equal(response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, &r, &reason), 0);
	assert_false(r.needs_eof);
	assert_true(r.keep_alive);
	done = false;
	assert_int_equal(proxy_response_feed(&r, chunked, sizeof(chunked) - 1, &done, &err),
			 strstr(chunked, "HTTP/") - chunked);
	assert_true(done);

	/* close-delimited: ends at EOF, never reused, never kept */
	assert_int_equal(response("HTTP/1.0 200 OK\r\n\r\n", false, &r, &reason), 0);
	assert_true(r.needs_eof);
	assert_false(r.keep_alive);
	assert_int_equal(response("HTTP/1.1 200 OK\r\n\r\n", false, &r, &reason), 0);
	assert_true(r.needs_eof);
	assert_false(r.keep_alive);
	done = false;
	assert_int_equal(proxy_response_feed(&r, "abc", 3, &done, &err), 3);
	assert_false(done);
	assert_int_equal(proxy_response_feed(&r, NULL, 0, &done, &err), 0);
	assert_true(done);

	/* HEAD: no body whatever Content-Length says */
	assert_int_equal(response("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", true, &r, &reason), 0);
	assert_true(r.message_complete);
	assert_false(r.needs_eof);
	assert_int_equal(response("HTTP/1.1 200 OK\r\n\r\n", true, &r, &reason), 0);
	assert_false(r.needs_eof);

	/* 1xx is a complete message and keeps no Connection: close */
	assert_int_equal(response("HTTP/1.1 100 Continue\r\n\r\n", false, &r, &reason), 0);
	assert_int_equal(r.status, 100);
	assert_true(r.message_complete);
	assert_int_equal(proxy_build_response_head(&r, true, out), 0);
	s = head_str(out);
	assert_string_equal(s, "HTTP/1.1 100 Continue\r\n\r\n");
	free(s);

	assert_int_equal(response("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", false, &r, &reason), -1);
	assert_string_equal(reason, "bad_upstream_response");
	assert_int_equal(response("SSH-2.0-x\r\n\r\n", false, &r, &reason), -1);
	evbuffer_free(out);
}

static void test_error_response(void **state)
{
	struct evbuffer *out = evbuffer_new();
	char *s, *body;

	assert_int_equal(proxy_error_response(403, "host_not_allowed", false, out), 0);
	s = head_str(out);
	assert_non_null(strstr(s, "HTTP/1.1 403 Forbidden by sluice policy: host_not_allowed\r\n"));
	assert_non_null(strstr(s, "\r\nX-Sluice-Denied: host_not_allowed\r\n"));
	assert_non_null(strstr(s, "\r\nConnection: close\r\n"));
	body = strstr(s, "\r\n\r\n") + 4;
	assert_non_null(strstr(body, "host_not_allowed"));
	{
		char want[64];

		snprintf(want, sizeof(want), "Content-Length: %zu\r\n", strlen(body));
		assert_non_null(strstr(s, want));
	}
	free(s);
	assert_int_equal(proxy_error_response(502, "no_public_address", true, out), 0);
	s = head_str(out);
	assert_non_null(strstr(s, "HTTP/1.1 502 Bad Gateway\r\n"));
	assert_non_null(strstr(s, "\r\nX-Sluice-Error: no_public_address\r\n"));
	assert_non_null(strstr(s, "\r\nConnection: keep-alive\r\n"));
	assert_null(strstr(s, "X-Sluice-Denied"));
	free(s);
	evbuffer_free(out);
}

/* --- addresses, flow keys, log lines ------------------------------------------------------ */

/* The ranges themselves, and that the proxy agrees with the resolver and
 * the lint on them: tests/unit/test_netaddr.c.  Here: the hatch. */
static void test_address_hatch(void **state)
{
	struct netaddr_cidr hatch[2];
	uint8_t a[16];
	const char *why;

	assert_int_equal(netaddr_cidr_parse("192.0.2.0/24", &hatch[0]), 0);
	assert_int_equal(netaddr_cidr_parse("2001:db8::/32", &hatch[1]), 0);
	inet_pton(AF_INET, "192.0.2.10", a);
	assert_false(proxy_addr_dialable(AF_INET, a, NULL, 0, &why));
	assert_string_equal(why, "documentation");
	assert_true(proxy_addr_dialable(AF_INET, a, hatch, 2, &why));
	assert_null(why);
	inet_pton(AF_INET6, "::ffff:192.0.2.10", a);
	assert_true(proxy_addr_dialable(AF_INET6, a, hatch, 2, &why));
	inet_pton(AF_INET, "127.0.0.1", a);
	assert_false(proxy_addr_dialable(AF_INET, a, hatch, 2, &why));
	assert_string_equal(why, "loopback");
	inet_pton(AF_INET6, "2001:db8:5::1", a);
	assert_true(proxy_addr_dialable(AF_INET6, a, hatch, 2, &why));
	inet_pton(AF_INET6, "::ffff:0:7f00:1", a);   /* SIIT form of 127.0.0.1 */
	assert_false(proxy_addr_dialable(AF_INET6, a, hatch, 2, &why));
	assert_string_equal(why, "siit");
}

static void test_cidr_entries(void **state)
{
	const struct sluice_policy *p = *state;
	uint8_t a[16] = { 0 };

	inet_pton(AF_INET, "10.20.3.4", a);
	assert_true(proxy_policy_cidr_allows(p, AF_INET, a, 8080));
	assert_false(proxy_policy_cidr_allows(p, AF_INET, a, 8081));
	inet_pton(AF_INET6, "::ffff:10.20.3.4", a);
	assert_true(proxy_policy_cidr_allows(p, AF_INET6, a, 8080));
	inet_pton(AF_INET, "10.21.0.1", a);
	assert_false(proxy_policy_cidr_allows(p, AF_INET, a, 8080));
	inet_pton(AF_INET, "10.30.0.1", a);
	assert_false(proxy_policy_cidr_allows(p, AF_INET, a, 8080));   /* udp entry */
	inet_pton(AF_INET6, "fd00:1::5", a);
	assert_true(proxy_policy_cidr_allows(p, AF_INET6, a, 8050));
	assert_false(proxy_policy_cidr_allows(p, AF_INET6, a, 8101));
}

static void test_flow_key(void **state)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(40000) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(40001) };
	struct sluice_flow_key k, k2;

	inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
	assert_int_equal(sluice_flow_key((struct sockaddr *)&in, 77, &k), 0);
	assert_int_equal(k.family, SLUICE_AF_INET);
	assert_int_equal(k.sport, 40000);
	assert_int_equal(k.netns_cookie, 77);
	assert_int_equal(k.saddr[0], in.sin_addr.s_addr);
	assert_int_equal(k.saddr[1] | k.saddr[2] | k.saddr[3], 0);

	/* a v4-mapped peer on a v6 socket is the same key as the v4 peer */
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
	in6.sin6_port = htons(40000);
	assert_int_equal(sluice_flow_key((struct sockaddr *)&in6, 77, &k2), 0);
	assert_memory_equal(&k, &k2, sizeof(k));

	inet_pton(AF_INET6, "::1", &in6.sin6_addr);
	assert_int_equal(sluice_flow_key((struct sockaddr *)&in6, 77, &k2), 0);
	assert_int_equal(k2.family, SLUICE_AF_INET6);
	assert_memory_equal(k2.saddr, &in6.sin6_addr, 16);
}

static void test_log_line(void **state)
{
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons(5555) };
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6, .sin6_port = htons(443) };
	struct sluice_orig o;
	struct proxy_log_rec r;
	json_object *j, *v;
	char *s;

	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	inet_pton(AF_INET, "127.0.0.1", &src.sin_addr);
	inet_pton(AF_INET6, "2001:db8::10", &dst.sin6_addr);
	o.family = SLUICE_AF_INET;
	inet_pton(AF_INET, "192.0.2.10", &o.daddr[0]);
	o.dport = 443;
	o.pid = 42;
	o.cgroup_id = 9;
	memcpy(o.comm, "curl\"x", 6);
	r.start.tv_sec = 1700000000;
	r.start.tv_nsec = 123456789;
	r.duration_ns = 5;
	r.action = "proxy-tls";
	r.outcome = "success";
	r.reason = "allowed";
	r.verdict = "allow";
	r.sni = "api.example.com";
	r.tunnel = true;
	r.req_bytes = 10;
	r.resp_bytes = 20;
	r.src = (struct sockaddr *)&src;
	r.dst = (struct sockaddr *)&dst;
	r.orig = &o;
	r.rule = "allow[0] host:api.example.com";
	r.orig_dst_mismatch = 1;
	r.dropped[r.n_dropped++] = "127.0.0.1 loopback";

	s = proxy_log_format(&r);
	assert_non_null(s);
	assert_null(strchr(s, '\n'));
	j = json_tokener_parse(s);
	assert_non_null(j);
#define STR(k, want) do { assert_true(json_object_object_get_ex(j, k, &v)); \
		assert_string_equal(json_object_get_string(v), want); } while (0)
#define INT(k, want) do { assert_true(json_object_object_get_ex(j, k, &v)); \
		assert_int_equal(json_object_get_int64(v), want); } while (0)
	STR("@timestamp", "2023-11-14T22:13:20.123456Z");
	STR("event.action", "proxy-tls");
	STR("event.outcome", "success");
	STR("tls.client.server_name", "api.example.com");
	STR("source.ip", "127.0.0.1");
	INT("source.port", 5555);
	STR("destination.ip", "2001:db8::10");
	INT("destination.port", 443);
	INT("source.bytes", 10);
	INT("destination.bytes", 20);
	STR("sluice.orig_dst.ip", "192.0.2.10");
	INT("sluice.orig_dst.port", 443);
	INT("sluice.cgroup_id", 9);
	INT("process.pid", 42);
	STR("process.name", "curl\"x");
	STR("sluice.component", "proxy");
	assert_true(json_object_object_get_ex(j, "sluice.orig_dst_mismatch", &v) && json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(j, "sluice.dropped_answers", &v));
	assert_int_equal(json_object_array_length(v), 1);
	assert_false(json_object_object_get_ex(j, "http.request.bytes", &v));
	assert_false(json_object_object_get_ex(j, "url.full", &v));
	assert_false(json_object_object_get_ex(j, "http.response.status_code", &v));
	assert_false(json_object_object_get_ex(j, "sluice.request_seq", &v));
	assert_false(json_object_object_get_ex(j, "sluice.upstream_reused", &v));
	json_object_put(j);
	free(s);

	/* an HTTP request, the second on its connection, over a pooled upstream */
	r.tunnel = false;
	r.request_seq = 2;
	r.upstream_conn = 2;
	s = proxy_log_format(&r);
	j = json_tokener_parse(s);
	assert_non_null(j);
	INT("sluice.request_seq", 2);
	assert_true(json_object_object_get_ex(j, "sluice.upstream_reused", &v) && json_object_get_boolean(v));
	json_object_put(j);
	free(s);
	r.upstream_conn = 1;
	s = proxy_log_format(&r);
	j = json_tokener_parse(s);
	assert_true(json_object_object_get_ex(j, "sluice.upstream_reused", &v) && !json_object_get_boolean(v));
	json_object_put(j);
	free(s);
}

/* hostile bytes in any string field (comm, URL, names): escaped, non-UTF-8
 * bytes become U+FFFD, the line stays strict JSON; a long field is cut
 * and the line marked */
static void test_log_line_hostile_strings(void **state)
{
	static const char bad[] = "a\xff\xc3(\xe2\x82\xed\xa0\x80\xc3\xa9\xf4\x90z";
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons(5555) };
	struct json_tokener *tok = json_tokener_new();
	struct sluice_orig o;
	struct proxy_log_rec r;
	json_object *j, *v;
	char *s, *url = malloc(20001);

	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	o.pid = 7;
	memcpy(o.comm, "\"}\n{\"x\\\x01\x7f", 9);
	memset(url, 'u', 20000);
	url[20000] = '\0';
	r.action = "proxy-http";
	r.verdict = "deny";
	r.reason = "host_not_allowed";
	r.domain = bad;
	r.url_full = url;
	r.src = (struct sockaddr *)&src;
	r.orig = &o;
	r.req_bytes = r.resp_bytes = -1;
	r.orig_dst_mismatch = -1;
	r.dropped[r.n_dropped++] = "\"q\"";
	s = proxy_log_format(&r);
	assert_non_null(s);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	j = json_tokener_parse_ex(tok, s, (int)strlen(s) + 1);
	assert_non_null(j);
	assert_true(json_object_object_get_ex(j, "url.domain", &v));
	assert_string_equal(json_object_get_string(v),
			    "a\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
			    "\xc3\xa9\xef\xbf\xbd\xef\xbf\xbdz");
	assert_true(json_object_object_get_ex(j, "process.name", &v));
	assert_string_equal(json_object_get_string(v), "\"}\n{\"x\\\x01\x7f");
	/* lines are bounded (SLUICE_LINE_MAX): the long URL is cut, and the
	 * line says so; every other field is still there */
	assert_true(json_object_object_get_ex(j, "url.full", &v));
	assert_true(strlen(json_object_get_string(v)) <= SLUICE_LINE_VAL_MAX);
	assert_true(json_object_object_get_ex(j, "sluice.truncated", &v) && json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(j, "event.type", &v));
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)), "denied");
	assert_true(json_object_object_get_ex(j, "sluice.dropped_answers", &v));
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)), "\"q\"");
	assert_false(json_object_object_get_ex(j, "http.request.bytes", &v));
	json_object_put(j);
	json_tokener_free(tok);
	free(s);
	free(url);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_precheck),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_body_feed),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_decide_host),
		cmocka_unit_test(test_decide_http),
		cmocka_unit_test(test_check_hello),
		cmocka_unit_test(test_build_request_head),
		cmocka_unit_test(test_responses),
		cmocka_unit_test(test_error_response),
		cmocka_unit_test(test_address_hatch),
		cmocka_unit_test(test_cidr_entries),
		cmocka_unit_test(test_flow_key),
		cmocka_unit_test(test_log_line),
		cmocka_unit_test(test_log_line_hostile_strings),
	};

	return cmocka_run_group_tests(tests, setup_policy, teardown_policy);
}
