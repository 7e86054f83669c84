/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: kernel event -> JSON line (loader/events.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <json-c/json.h>
#include <string.h>

#include "events.h"

static const struct sluice_event_meta meta = {
	.sandbox = "sbx", .policy_name = "p", .mode = "enforce", .boot_to_real_ns = 1700000000LL * 1000000000LL,
	.policy_digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
};

static json_object *format(const struct sluice_event *e, const struct sluice_event_meta *m)
{
	char buf[2048];
	int n = sluice_event_format(e, m, buf, sizeof(buf));

	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_null(strchr(buf, '\n'));
	return json_tokener_parse(buf);
}

static const char *str(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("missing key %s", k);
	return json_object_get_string(v);
}

static int64_t num(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("missing key %s", k);
	return json_object_get_int64(v);
}

static void test_tcp_v4_denial(void **state)
{
	struct sluice_event e = { .ts_ns = 1500000, .seq = 42, .cgroup_id = 9, .pid = 100, .tid = 101, .uid = 1000,
				  .hook = SLUICE_HOOK_CONNECT4, .reason = SLUICE_REASON_TCP_PORT, .dport = 8080,
				  .family = SLUICE_AF_INET, .protocol = 6, .verdict = SLUICE_VERDICT_DENY };
	json_object *o;

	inet_pton(AF_INET, "192.0.2.10", &e.daddr[0]);
	memcpy(e.comm, "curl", 5);
	o = format(&e, &meta);
	assert_string_equal(str(o, "@timestamp"), "2023-11-14T22:13:20.001500Z");
	assert_string_equal(str(o, "event.action"), "egress-denied");
	assert_string_equal(str(o, "event.outcome"), "failure");
	assert_string_equal(str(o, "event.reason"), "tcp_port_not_allowed");
	assert_string_equal(str(o, "destination.ip"), "192.0.2.10");
	assert_int_equal(num(o, "destination.port"), 8080);
	assert_string_equal(str(o, "network.transport"), "tcp");
	assert_string_equal(str(o, "network.type"), "ipv4");
	assert_string_equal(str(o, "process.name"), "curl");
	assert_int_equal(num(o, "process.pid"), 100);
	assert_string_equal(str(o, "user.id"), "1000");
	assert_string_equal(str(o, "sluice.hook"), "connect4");
	assert_int_equal(num(o, "sluice.cgroup_id"), 9);
	assert_int_equal(num(o, "sluice.seq"), 42);
	assert_string_equal(str(o, "sluice.sandbox"), "sbx");
	assert_string_equal(str(o, "rule.ruleset"), meta.policy_digest);
	assert_string_equal(str(o, "sluice.policy_sha256"), meta.policy_digest);
	json_object_put(o);
}

static void test_v6_and_audit(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_SENDMSG6, .reason = SLUICE_REASON_UDP, .dport = 443,
				  .family = SLUICE_AF_INET6, .protocol = 17, .verdict = SLUICE_VERDICT_WOULD_DENY, .pid = 1 };
	json_object *o;

	inet_pton(AF_INET6, "2001:db8::1", e.daddr);
	o = format(&e, &meta);
	assert_string_equal(str(o, "destination.ip"), "2001:db8::1");
	assert_string_equal(str(o, "network.type"), "ipv6");
	assert_string_equal(str(o, "network.transport"), "udp");
	assert_string_equal(str(o, "event.outcome"), "unknown");
	assert_string_equal(str(o, "sluice.verdict"), "would_deny");
	json_object_put(o);
}

/* comm is attacker-controlled (prctl PR_SET_NAME): it must be escaped. */
static void test_hostile_comm_is_escaped(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 5 };
	json_object *o;

	memcpy(e.comm, "a\"}\n{\"x\\\x01zzzzzzz", 16); /* no NUL terminator */
	o = format(&e, &meta);
	assert_non_null(o);
	assert_int_equal(strlen(str(o, "process.name")), 16);
	json_object_put(o);
}

/* bytes that are not UTF-8 become U+FFFD: the line stays valid JSON for
 * strict readers (a hostile comm must not make its own denial unreadable) */
static void test_invalid_utf8_comm_replaced(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 5 };
	static const char bad[16] = "a\xff\xc3(\xe2\x82\xed\xa0\x80\xc3\xa9\xf4\x90z";
	struct json_tokener *tok = json_tokener_new();
	char buf[2048];
	json_object *o;
	int n;

	memcpy(e.comm, bad, sizeof(bad));
	n = sluice_event_format(&e, &meta, buf, sizeof(buf));
	assert_true(n > 0);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, buf, n + 1);
	assert_non_null(o);
	/* each bad byte is one U+FFFD; the valid e-acute stays */
	assert_string_equal(str(o, "process.name"),
			    "a\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
			    "\xc3\xa9\xef\xbf\xbd\xef\xbf\xbdz");
	json_object_put(o);
	json_tokener_free(tok);
}

/* any ts_ns: no signed overflow, a well-formed timestamp */
static void test_time_extremes(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6 };
	char ts[40];
	json_object *o;

	e.ts_ns = (1ULL << 63) - 1000;
	o = format(&e, &meta);
	assert_int_equal(strlen(str(o, "@timestamp")), 27);
	json_object_put(o);
	sluice_format_time(-1, ts, sizeof(ts));
	assert_string_equal(ts, "1969-12-31T23:59:59.999999Z");
}

static void test_canary_is_marked(void **state)
{
	struct sluice_event_meta m = meta;
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 77 };
	json_object *o;

	m.canary_pid = 77;
	memcpy(e.comm, "sluice-canary", 14);
	o = format(&e, &m);
	assert_string_equal(str(o, "event.action"), "canary-denied");
	json_object_put(o);
	memcpy(e.comm, "sh", 3);   /* same pid after exec: no longer the canary */
	o = format(&e, &m);
	assert_string_equal(str(o, "event.action"), "egress-denied");
	json_object_put(o);
}

static void test_sock_create_has_no_destination(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_SOCK_CREATE, .reason = SLUICE_REASON_SOCK_RAW, .family = SLUICE_AF_INET,
				  .protocol = 1, .sock_type = 3, .pid = 1 };
	json_object *o = format(&e, &meta), *v;

	assert_false(json_object_object_get_ex(o, "destination.ip", &v));
	assert_string_equal(str(o, "event.reason"), "raw_socket");
	assert_string_equal(str(o, "network.transport"), "icmp");
	json_object_put(o);
}

static void test_unknown_numbers_do_not_crash(void **state)
{
	assert_string_equal(sluice_reason_name(9999), "unknown");
	assert_string_equal(sluice_hook_name(0), "unknown");
}

static void test_lost_line(void **state)
{
	char buf[1024];
	json_object *o;

	assert_true(sluice_events_lost_format(17, 40, &meta, buf, sizeof(buf)) > 0);
	o = json_tokener_parse(buf);
	assert_string_equal(str(o, "event.action"), "events_lost");
	assert_int_equal(num(o, "sluice.events_lost"), 17);
	assert_int_equal(num(o, "sluice.events_lost_total"), 40);
	json_object_put(o);
}

static void test_small_buffer_fails_cleanly(void **state)
{
	struct sluice_event e = { .hook = 1, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6 };
	char buf[16];

	assert_int_equal(sluice_event_format(&e, &meta, buf, sizeof(buf)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_v4_denial),
		cmocka_unit_test(test_v6_and_audit),
		cmocka_unit_test(test_hostile_comm_is_escaped),
		cmocka_unit_test(test_invalid_utf8_comm_replaced),
		cmocka_unit_test(test_time_extremes),
		cmocka_unit_test(test_canary_is_marked),
		cmocka_unit_test(test_sock_create_has_no_destination),
		cmocka_unit_test(test_unknown_numbers_do_not_crash),
		cmocka_unit_test(test_lost_line),
		cmocka_unit_test(test_small_buffer_fails_cleanly),
	};

	return cmocka_run_group_tests_name("events", tests, NULL, NULL);
}
