/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_websocket.c - `websocket: true` (userspace/lib/policy_ws.c, its
 * digest part in digest.c) and the proxy's pure WebSocket logic
 * (request.c: proxy_ws_requested, proxy_response_parse_ws, the heads;
 * websocket.c: proxy_ws_decide): parsing and its errors with positions,
 * the digest (old policies keep theirs), which requests ask for an
 * upgrade, which decisions let one through, the forwarded head and which
 * 101s are accepted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "policy.h"
#include "request.h"

#define HEAD "version: 1\nname: t\nallow:\n"
#define WS_ENTRY "  - url: http://chat.example.com/socket/\n    websocket: true\n    why: chat\n"
#define PLAIN_ENTRY "  - url: http://chat.example.com/socket/\n    why: chat\n"

#include "policy_fixture.h"

static void test_parse(void **state)
{
	(void)state;
	struct sluice_policy *p = load(HEAD WS_ENTRY "  - url: http://chat.example.com/plain/\n    why: p\n"
				       "  - url: https://chat.example.com/x\n    websocket: false\n    why: off\n");

	assert_true(p->entries[0].websocket);
	assert_false(p->entries[1].websocket);
	assert_false(p->entries[2].websocket);
	sluice_policy_free(p);
	p = load(HEAD "  - url: https://chat.example.com/x\n    methods: [post, get]\n    websocket: yes\n"
		 "    why: tls\n");
	assert_true(p->entries[0].websocket);
	sluice_policy_free(p);
}

static void test_errors(void **state)
{
	(void)state;
	bad(HEAD "  - url: http://chat.example.com/\n    methods: [POST]\n    websocket: true\n    why: x\n",
	    6, 5, "needs GET in 'methods'");
	bad(HEAD "  - url: http://chat.example.com/\n    websocket: \"true\"\n    why: x\n", 5, 16,
	    "'websocket' must be true or false");
	bad(HEAD "  - host: chat.example.com\n    ports: [80]\n    websocket: true\n    why: x\n", 6, 5,
	    "'websocket' is not allowed in a host entry");
	bad(HEAD "  - cidr: 198.51.100.0/24\n    ports: [80]\n    websocket: true\n    why: x\n", 6, 5,
	    "'websocket' is not allowed in a cidr entry");
}

static void test_digest(void **state)
{
	(void)state;
	struct sluice_policy *ws = load(HEAD WS_ENTRY), *plain = load(HEAD PLAIN_ENTRY);
	struct sluice_policy *off = load(HEAD "  - url: http://chat.example.com/socket/\n    websocket: false\n"
					 "    why: chat\n");
	size_t n = 0;
	char *c = sluice_policy_canonical(ws, &n);

	assert_non_null(c);
	assert_non_null(strstr(c, "\"websocket\":true,\"why\":\"chat\""));
	free(c);
	/* it changes the meaning, so the digest; `false` is the default and
	 * keeps a policy's digest from before the key */
	assert_string_not_equal(ws->digest, plain->digest);
	assert_string_equal(off->digest, plain->digest);
	c = sluice_policy_canonical(plain, &n);
	assert_null(strstr(c, "websocket"));
	free(c);
	sluice_policy_free(ws);
	sluice_policy_free(plain);
	sluice_policy_free(off);
}

static int parse(const char *head, struct proxy_request *req)
{
	struct proxy_refusal err;

	memset(req, 0, sizeof(*req));
	return proxy_request_parse(req, head, strlen(head), &err);
}

#define UPGRADE "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" \
		"Sec-WebSocket-Version: 13\r\n"

static void test_requested(void **state)
{
	(void)state;
	struct proxy_request req;

	assert_int_equal(parse("GET /socket/x HTTP/1.1\r\nHost: chat.example.com\r\n" UPGRADE "\r\n", &req), 0);
	assert_true(proxy_ws_requested(&req));
	proxy_request_free(&req);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: foo, WebSocket \r\nConnection: upgrade\r\n\r\n",
			       &req), 0);
	assert_true(proxy_ws_requested(&req));
	proxy_request_free(&req);
	/* h2c, or a token that only contains the word: not a WebSocket */
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n", &req), 0);
	assert_false(proxy_ws_requested(&req));
	proxy_request_free(&req);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocketx\r\nX-Upgrade: websocket\r\n\r\n",
			       &req), 0);
	assert_false(proxy_ws_requested(&req));
	proxy_request_free(&req);
}

static void decide(const struct sluice_policy *p, const char *head, const char *path, bool *allow,
		   const char **reason)
{
	struct proxy_request req;
	struct proxy_decision d;

	assert_int_equal(parse(head, &req), 0);
	memset(&d, 0, sizeof(d));
	proxy_decide_url(p, "http", "chat.example.com", 80, req.method, path, &d);
	proxy_ws_decide(&req, &d);
	*allow = d.allow;
	*reason = d.reason;
	if (!d.allow)
		assert_true(d.audit_ok);
	proxy_request_free(&req);
}

static void test_decide(void **state)
{
	(void)state;
	struct sluice_policy *p = load(HEAD WS_ENTRY "  - url: http://chat.example.com/plain/\n    why: p\n"
				       "  - host: chat.example.com\n    ports: [80]\n    why: any path\n");
	const char *reason;
	bool allow;

	decide(p, "GET /socket/x HTTP/1.1\r\nHost: chat.example.com\r\n" UPGRADE "\r\n", "/socket/x", &allow, &reason);
	assert_true(allow);
	/* an entry without websocket, and a host entry: refused */
	decide(p, "GET /plain/x HTTP/1.1\r\nHost: chat.example.com\r\n" UPGRADE "\r\n", "/plain/x", &allow, &reason);
	assert_false(allow);
	assert_string_equal(reason, "upgrade_not_supported");
	decide(p, "GET /other HTTP/1.1\r\nHost: chat.example.com\r\n" UPGRADE "\r\n", "/other", &allow, &reason);
	assert_false(allow);
	assert_string_equal(reason, "upgrade_not_supported");
	/* HTTP/1.0, or a body: not an opening handshake */
	decide(p, "GET /socket/x HTTP/1.0\r\nHost: chat.example.com\r\n" UPGRADE "\r\n", "/socket/x", &allow, &reason);
	assert_false(allow);
	decide(p, "GET /socket/x HTTP/1.1\r\nHost: chat.example.com\r\nContent-Length: 2\r\n" UPGRADE "\r\n",
	       "/socket/x", &allow, &reason);
	assert_false(allow);
	sluice_policy_free(p);
	/* a path outside every prefix keeps its own reason */
	p = load(HEAD WS_ENTRY);
	decide(p, "GET /admin HTTP/1.1\r\nHost: chat.example.com\r\n" UPGRADE "\r\n", "/admin", &allow, &reason);
	assert_false(allow);
	assert_string_equal(reason, "path_not_allowed");
	sluice_policy_free(p);
}

static void test_heads(void **state)
{
	(void)state;
	struct proxy_request req;
	struct proxy_target t;
	struct proxy_refusal err;
	struct evbuffer *b = evbuffer_new();
	char *s;

	assert_int_equal(parse("GET /socket/x HTTP/1.1\r\nHost: chat.example.com\r\n" UPGRADE "\r\n", &req), 0);
	assert_int_equal(proxy_request_target(&req, PROXY_FORM_TRANSPARENT, 80, &t, &err), 0);
	req.websocket = true;
	assert_int_equal(proxy_build_request_head(&req, &t, "chat.example.com", false, b), 0);
	evbuffer_add(b, "", 1);
	s = (char *)evbuffer_pullup(b, -1);
	assert_non_null(strstr(s, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"));
	assert_non_null(strstr(s, "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"));
	assert_null(strstr(s, "Connection: close"));
	proxy_request_free(&req);
	evbuffer_free(b);
}

static void test_response(void **state)
{
	(void)state;
	static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
				 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
	static const char h2c[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n";
	static const char noconn[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
	static const char refused[] = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
	struct proxy_response r;
	struct proxy_refusal err;
	struct evbuffer *b = evbuffer_new();
	char *s;

	assert_int_equal(proxy_response_parse_ws(&r, ok, sizeof(ok) - 1, &err), 0);
	assert_true(r.upgrade);
	assert_int_equal(r.status, 101);
	assert_int_equal(proxy_build_response_head(&r, false, b), 0);
	evbuffer_add(b, "", 1);
	s = (char *)evbuffer_pullup(b, -1);
	assert_non_null(strstr(s, "HTTP/1.1 101 Switching Protocols\r\n"));
	assert_non_null(strstr(s, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
	assert_non_null(strstr(s, "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"));
	evbuffer_free(b);
	/* a 101 nobody asked for, or to something else */
	assert_int_equal(proxy_response_parse(&r, ok, sizeof(ok) - 1, false, &err), -1);
	assert_string_equal(err.reason, "bad_upstream_response");
	assert_int_equal(proxy_response_parse_ws(&r, h2c, sizeof(h2c) - 1, &err), -1);
	assert_int_equal(proxy_response_parse_ws(&r, noconn, sizeof(noconn) - 1, &err), -1);
	/* the origin refuses: an ordinary response */
	assert_int_equal(proxy_response_parse_ws(&r, refused, sizeof(refused) - 1, &err), 0);
	assert_false(r.upgrade);
	assert_int_equal(r.status, 403);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_requested),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_heads),
		cmocka_unit_test(test_response),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
