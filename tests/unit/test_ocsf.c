/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: ECS lines to OCSF events (userspace/lib/ocsf.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "ocsf.h"

static json_object *conv(const char *ecs, size_t cap)
{
	static char out[16384];
	long n = sluice_ocsf_convert(ecs, strlen(ecs), out, cap);

	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(out));
	return json_tokener_parse(out);
}

/* The value at a dotted OCSF path; under "unmapped." the rest is one ECS
 * key (its dots included).  NULL when absent. */
static json_object *at(json_object *o, const char *path)
{
	char buf[128], *save = NULL;
	json_object *v = o;

	if (strncmp(path, "unmapped.", 9) == 0)
		return json_object_object_get_ex(o, "unmapped", &v) && json_object_object_get_ex(v, path + 9, &v) ? v : NULL;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = strtok_r(buf, ".", &save); p; p = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(v, p, &v))
			return NULL;
	return v;
}

static long long num(json_object *o, const char *path)
{
	json_object *v = at(o, path);

	assert_non_null(v);
	return json_object_get_int64(v);
}

static const char *str(json_object *o, const char *path)
{
	json_object *v = at(o, path);

	assert_non_null(v);
	return json_object_get_string(v);
}

#define ENV "\"@timestamp\":\"2026-11-30T06:24:59.430861Z\",\"ecs.version\":\"8.11.0\",\"host.name\":\"h\"," \
	    "\"rule.ruleset\":\"demo\",\"rule.version\":\"abc\",\"sluice.sandbox\":\"s1\",\"event.id\":\"x-1\""

/* A kernel denial: Network Activity, Refuse, blocked; the time in ms. */
static void test_kernel_denial(void **state)
{
	json_object *o = conv("{" ENV ",\"event.dataset\":\"sluice.kernel\",\"event.action\":\"egress-denied\","
			      "\"event.outcome\":\"failure\",\"event.reason\":\"tcp_port_not_allowed\",\"sluice.verdict\":\"deny\","
			      "\"destination.ip\":\"192.0.2.10\",\"destination.port\":8080,\"network.transport\":\"tcp\","
			      "\"network.type\":\"ipv4\",\"process.pid\":7,\"sluice.hook\":\"connect4\"}",
			      16384);

	assert_int_equal(num(o, "class_uid"), 4001);
	assert_int_equal(num(o, "category_uid"), 4);
	assert_int_equal(num(o, "activity_id"), 5);
	assert_int_equal(num(o, "type_uid"), 400105);
	assert_int_equal(num(o, "time"), 1796019899430LL);
	assert_int_equal(num(o, "action_id"), 2);
	assert_int_equal(num(o, "disposition_id"), 2);
	assert_int_equal(num(o, "severity_id"), 3);
	assert_int_equal(num(o, "status_id"), 2);
	assert_string_equal(str(o, "dst_endpoint.ip"), "192.0.2.10");
	assert_int_equal(num(o, "dst_endpoint.port"), 8080);
	assert_int_equal(num(o, "connection_info.direction_id"), 2);
	assert_int_equal(num(o, "connection_info.protocol_ver_id"), 4);
	assert_string_equal(str(o, "metadata.product.name"), "sluice");
	assert_string_equal(str(o, "metadata.version"), SLUICE_OCSF_VERSION);
	assert_string_equal(str(o, "metadata.uid"), "x-1");
	assert_string_equal(str(o, "policy.name"), "demo");
	assert_string_equal(str(o, "status_detail"), "tcp_port_not_allowed");
	assert_int_equal(num(o, "actor.process.pid"), 7);
	/* not mapped: kept as it was */
	assert_string_equal(str(o, "unmapped.sluice.hook"), "connect4");
	json_object_put(o);
}

/* labels.KEY -> metadata.labels ["KEY:VALUE", ...], in order, not unmapped;
 * a line without labels has no metadata.labels. */
static void test_labels(void **state)
{
	json_object *o = conv("{" ENV ",\"event.dataset\":\"sluice.kernel\",\"event.action\":\"egress-denied\","
			      "\"labels.team\":\"payments\",\"labels.ticket\":\"sec:142\",\"sluice.verdict\":\"deny\"}",
			      16384), *l = at(o, "metadata.labels");

	assert_non_null(l);
	assert_true(json_object_is_type(l, json_type_array));
	assert_int_equal(json_object_array_length(l), 2);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(l, 0)), "team:payments");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(l, 1)), "ticket:sec:142");
	assert_null(at(o, "unmapped.labels.team"));
	json_object_put(o);
	o = conv("{" ENV ",\"event.dataset\":\"sluice.kernel\",\"event.action\":\"egress-denied\"}", 16384);
	assert_null(at(o, "metadata.labels"));
	json_object_put(o);
}

/* The proxy's request: HTTP Activity by method; a tunnel: Network Activity, Close. */
static void test_proxy_lines(void **state)
{
	json_object *o = conv("{" ENV ",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-http\","
			      "\"event.outcome\":\"success\",\"sluice.verdict\":\"allow\",\"http.request.method\":\"POST\","
			      "\"url.full\":\"https://api.example.com/v1/x\",\"url.domain\":\"api.example.com\","
			      "\"http.response.status_code\":200,\"event.duration\":5000000,\"event.severity\":73}",
			      16384);

	assert_int_equal(num(o, "class_uid"), 4002);
	assert_int_equal(num(o, "activity_id"), 6);   /* Post */
	assert_int_equal(num(o, "type_uid"), 400206);
	assert_string_equal(str(o, "http_request.http_method"), "POST");
	assert_string_equal(str(o, "http_request.url.url_string"), "https://api.example.com/v1/x");
	assert_string_equal(str(o, "dst_endpoint.hostname"), "api.example.com");
	assert_int_equal(num(o, "http_response.code"), 200);
	assert_int_equal(num(o, "duration"), 5);      /* ns -> ms */
	assert_int_equal(num(o, "severity_id"), 4);   /* event.severity 73: High */
	assert_int_equal(num(o, "action_id"), 1);
	json_object_put(o);
	o = conv("{" ENV ",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-tls\",\"event.outcome\":\"success\","
		 "\"sluice.verdict\":\"allow\",\"tls.client.server_name\":\"a.example\",\"source.bytes\":7,"
		 "\"destination.bytes\":9,\"destination.ip\":\"192.0.2.1\"}",
		 16384);
	assert_int_equal(num(o, "class_uid"), 4001);
	assert_int_equal(num(o, "activity_id"), 2);   /* Close */
	assert_string_equal(str(o, "tls.sni"), "a.example");
	assert_int_equal(num(o, "traffic.bytes_out"), 7);
	assert_int_equal(num(o, "traffic.bytes_in"), 9);
	json_object_put(o);
}

/* A DNS query: DNS Activity, Traffic, the rcode as its id, the answers. */
static void test_resolver_line(void **state)
{
	json_object *o = conv("{" ENV ",\"event.dataset\":\"sluice.resolver\",\"event.action\":\"dns-query\","
			      "\"event.outcome\":\"success\",\"sluice.verdict\":\"allow\",\"dns.id\":\"4660\","
			      "\"dns.question.name\":\"a.example\",\"dns.question.type\":\"A\",\"dns.response_code\":\"NXDOMAIN\","
			      "\"dns.answers\":[{\"name\":\"a.example\",\"type\":\"A\",\"class\":\"IN\",\"ttl\":60,"
			      "\"data\":\"192.0.2.1\"}],\"source.ip\":\"127.0.0.1\"}",
			      16384);
	json_object *a;

	assert_int_equal(num(o, "class_uid"), 4003);
	assert_int_equal(num(o, "type_uid"), 400306);
	assert_string_equal(str(o, "query.hostname"), "a.example");
	assert_int_equal(num(o, "query.packet_uid"), 4660);
	assert_int_equal(num(o, "rcode_id"), 3);
	assert_true(json_object_object_get_ex(o, "answers", &a));
	assert_int_equal(json_object_array_length(a), 1);
	assert_string_equal(json_object_get_string(json_object_object_get(json_object_array_get_idx(a, 0), "rdata")),
			    "192.0.2.1");
	json_object_put(o);
	/* a malformed query has no name: the required hostname is there, empty */
	o = conv("{" ENV ",\"event.dataset\":\"sluice.resolver\",\"event.reason\":\"qdcount\",\"dns.id\":\"1\"}", 16384);
	assert_string_equal(str(o, "query.hostname"), "");
	json_object_put(o);
}

/* Lifecycle: Application Lifecycle with the app; too big: unmapped goes. */
static void test_lifecycle_and_limits(void **state)
{
	char big[6000];
	json_object *o = conv("{" ENV ",\"event.dataset\":\"sluice.lifecycle\",\"event.action\":\"sandbox-stop\","
			      "\"message\":\"done\",\"sluice.denied\":3}",
			      16384);
	char out[64];

	assert_int_equal(num(o, "class_uid"), 6002);
	assert_int_equal(num(o, "category_uid"), 6);
	assert_int_equal(num(o, "activity_id"), 4);   /* Stop */
	assert_string_equal(str(o, "app.name"), "sluice");
	assert_int_equal(num(o, "unmapped.sluice.denied"), 3);
	json_object_put(o);
	snprintf(big, sizeof(big), "{" ENV ",\"event.dataset\":\"sluice.lifecycle\",\"event.action\":\"sandbox-start\","
		 "\"sluice.note\":\"%04000d\"}", 0);
	o = conv(big, 1500);
	assert_true(json_object_get_boolean(json_object_object_get(json_object_object_get(o, "unmapped"),
								   "sluice.truncated")));
	assert_int_equal(num(o, "activity_id"), 3);   /* Start */
	json_object_put(o);
	assert_int_equal(sluice_ocsf_convert("not json", 8, out, sizeof(out)), -1);
	assert_int_equal(sluice_ocsf_convert("[1,2]", 5, out, sizeof(out)), -1);
	assert_int_equal(sluice_ocsf_convert("{" ENV "}", strlen("{" ENV "}"), out, sizeof(out)), -1);   /* too small */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_denial),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_proxy_lines),
		cmocka_unit_test(test_resolver_line),
		cmocka_unit_test(test_lifecycle_and_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
