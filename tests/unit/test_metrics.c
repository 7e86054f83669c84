/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the Prometheus text writers and the metrics address (loader/metrics.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include <event2/buffer.h>

#include "metrics.h"

static void assert_text(struct evbuffer *b, const char *want)
{
	size_t n = evbuffer_get_length(b);
	char *got = (char *)evbuffer_pullup(b, -1);

	assert_int_equal(n, strlen(want));
	assert_memory_equal(got, want, n);
	evbuffer_drain(b, n);
}

/* A family's HELP and TYPE, then samples with and without labels. */
static void test_family_and_samples(void **state)
{
	struct evbuffer *b = evbuffer_new();

	sluice_prom_family(b, "sluice_x_total", "counter", "Things.");
	sluice_prom_sample(b, "sluice_x_total", NULL, 0);
	sluice_prom_sample(b, "sluice_x_total", (const char *const[]){ "sandbox", "a", "reason", "b", NULL },
			   18446744073709551615ULL);
	assert_text(b, "# HELP sluice_x_total Things.\n# TYPE sluice_x_total counter\n"
		       "sluice_x_total 0\nsluice_x_total{sandbox=\"a\",reason=\"b\"} 18446744073709551615\n");
	evbuffer_free(b);
}

/* Label values are escaped: a hostile policy name cannot add a sample. */
static void test_label_escaping(void **state)
{
	struct evbuffer *b = evbuffer_new();

	sluice_prom_sample(b, "m", (const char *const[]){ "policy_name", "x\"} 1\nevil{a=\"\\", NULL }, 1);
	assert_text(b, "m{policy_name=\"x\\\"} 1\\nevil{a=\\\"\\\\\"} 1\n");
	evbuffer_free(b);
}

static void test_parse_addr(void **state)
{
	char host[64], err[256];
	uint16_t port = 0;

	assert_int_equal(sluice_metrics_parse_addr("127.0.0.1:9464", host, sizeof(host), &port, err, sizeof(err)), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 9464);
	assert_int_equal(sluice_metrics_parse_addr("[::1]:1", host, sizeof(host), &port, err, sizeof(err)), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 1);
	static const char *const bad[] = { "", ":9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
					   "127.0.0.1:12x", "localhost:9464", "::1:9464", "[::1:9464", "[]:1",
					   "[127.0.0.1]:1", "1.2.3.4.5:1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(sluice_metrics_parse_addr(bad[i], host, sizeof(host), &port, err, sizeof(err)), -1);
		assert_true(strstr(err, "metrics address") != NULL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_and_samples),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_parse_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
