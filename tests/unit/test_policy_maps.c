/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: policy -> BPF map contents (loader/policy_maps.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_maps.h"

static struct sluice_policy *load(const char *yaml)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;

	if (sluice_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &err) < 0) {
		char buf[600];

		fail_msg("policy did not load: %s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	}
	return p;
}

static uint32_t ip4(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

static void test_empty_policy_plans_nothing(void **state)
{
	struct sluice_policy *p = sluice_policy_default();
	struct sluice_plan plan;
	char err[256];

	assert_non_null(p);
	assert_int_equal(sluice_plan_build(p, 1, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_v4, 0);
	assert_int_equal(plan.n_v6, 0);
	for (int w = 0; w < SLUICE_PORT_WORDS; w++)
		assert_int_equal(plan.ports[w], 0);
	assert_false(sluice_plan_allows4(&plan, ip4("192.0.2.1"), IPPROTO_TCP, 80));
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

static void test_cidr_key_carries_generation_and_prefix(void **state)
{
	struct sluice_policy *p = load("version: 1\nname: t\nallow:\n"
				       "  - cidr: 198.51.100.0/24\n    ports: [5432]\n    protocol: tcp\n    why: db\n");
	struct sluice_plan plan;
	char err[256];

	assert_int_equal(sluice_plan_build(p, 7, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_v4, 1);
	assert_int_equal(plan.v4[0].key.prefixlen, 32 + 24);
	assert_int_equal(plan.v4[0].key.gen, 7);
	assert_int_equal(plan.v4[0].key.addr, ip4("198.51.100.0"));
	assert_false(sluice_plan_v4_exact(&plan.v4[0]));
	assert_int_equal(plan.genflags, SLUICE_GEN_PREFIX4);   /* the hooks look in the v4 trie only */
	assert_int_equal(plan.v4[0].val.n, 1);
	assert_int_equal(plan.v4[0].val.rules[0].lo, 5432);
	assert_int_equal(plan.v4[0].val.rules[0].hi, 5432);
	assert_int_equal(plan.v4[0].val.rules[0].proto, IPPROTO_TCP);
	assert_true(sluice_plan_allows4(&plan, ip4("198.51.100.7"), IPPROTO_TCP, 5432));
	assert_false(sluice_plan_allows4(&plan, ip4("198.51.100.7"), IPPROTO_TCP, 5433));
	assert_false(sluice_plan_allows4(&plan, ip4("198.51.100.7"), IPPROTO_UDP, 5432));
	assert_false(sluice_plan_allows4(&plan, ip4("198.51.101.7"), IPPROTO_TCP, 5432));
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

/* LPM returns only the longest match: a /32 inside a /24 must carry the
 * /24's rules too, or 198.51.100.7:5432 would be denied by the /32 entry. */
static void test_nested_prefixes_are_flattened(void **state)
{
	struct sluice_policy *p = load("version: 1\nname: t\nallow:\n"
				       "  - cidr: 198.51.100.0/24\n    ports: [5432]\n    protocol: tcp\n    why: db\n"
				       "  - cidr: 198.51.100.7/32\n    ports: [80, 8000-8080]\n    protocol: tcp\n    why: web\n");
	struct sluice_plan plan;
	char err[256];
	const struct sluice_plan_v4 *narrow = NULL;

	assert_int_equal(sluice_plan_build(p, 1, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_v4, 2);
	for (size_t i = 0; i < plan.n_v4; i++)
		if (plan.v4[i].key.prefixlen == 64)
			narrow = &plan.v4[i];
	assert_non_null(narrow);
	assert_true(sluice_plan_v4_exact(narrow));   /* the /32 goes to the exact map, with the /24's rules */
	assert_int_equal(plan.genflags, SLUICE_GEN_EXACT4 | SLUICE_GEN_PREFIX4);
	assert_int_equal(narrow->val.n, 3);
	assert_true(sluice_plan_allows4(&plan, ip4("198.51.100.7"), IPPROTO_TCP, 5432));
	assert_true(sluice_plan_allows4(&plan, ip4("198.51.100.7"), IPPROTO_TCP, 8042));
	assert_false(sluice_plan_allows4(&plan, ip4("198.51.100.8"), IPPROTO_TCP, 80));
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

static void test_v6_entries(void **state)
{
	struct sluice_policy *p = load("version: 1\nname: t\nallow:\n"
				       "  - cidr: 2001:db8::/48\n    ports: [443]\n    protocol: udp\n    why: quic\n");
	struct sluice_plan plan;
	char err[256];
	uint8_t want[16];

	inet_pton(AF_INET6, "2001:db8::", want);
	assert_int_equal(sluice_plan_build(p, 2, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_v4, 0);
	assert_int_equal(plan.n_v6, 1);
	assert_int_equal(plan.v6[0].key.prefixlen, 32 + 48);
	assert_memory_equal(plan.v6[0].key.addr, want, 16);
	assert_int_equal(plan.v6[0].val.rules[0].proto, IPPROTO_UDP);
	assert_false(sluice_plan_v6_exact(&plan.v6[0]));
	assert_int_equal(plan.genflags, SLUICE_GEN_PREFIX6);
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

static void test_host_and_url_ports_become_proxy_ports(void **state)
{
	struct sluice_policy *p = load("version: 1\nname: t\nallow:\n"
				       "  - host: api.example.com\n    ports: [443, 8443-8444]\n    why: api\n"
				       "  - url: http://deb.example.net/debian/\n    methods: [GET]\n    why: apt\n");
	struct sluice_plan plan;
	char err[256];

	assert_int_equal(sluice_plan_build(p, 1, &plan, err, sizeof(err)), 0);
	assert_true(sluice_plan_proxies(&plan, 443));
	assert_true(sluice_plan_proxies(&plan, 8443));
	assert_true(sluice_plan_proxies(&plan, 8444));
	assert_true(sluice_plan_proxies(&plan, 80));
	assert_false(sluice_plan_proxies(&plan, 8445));
	assert_false(sluice_plan_proxies(&plan, 22));
	assert_int_equal(plan.n_v4 + plan.n_v6, 0);
	assert_int_equal(plan.genflags, 0);   /* no cidr map is looked in */
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

static void test_audit_mode_sets_generation_flag(void **state)
{
	struct sluice_policy *p = load("version: 1\nname: t\nmode: audit\nallow: []\n");
	struct sluice_plan plan;
	char err[256];

	assert_int_equal(sluice_plan_build(p, 1, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.genflags & SLUICE_GEN_AUDIT, SLUICE_GEN_AUDIT);
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

static void test_too_many_rules_for_one_prefix(void **state)
{
	char yaml[8192] = "version: 1\nname: t\nallow:\n";
	struct sluice_policy *p;
	struct sluice_plan plan;
	char err[256];

	/* a /24 with 16 single ports, and a /32 inside it with one more */
	strcat(yaml, "  - cidr: 192.0.2.0/24\n    ports: [");
	for (int i = 0; i < 16; i++) {
		char e[16];

		snprintf(e, sizeof(e), "%s%d", i ? ", " : "", 1000 + 2 * i);
		strcat(yaml, e);
	}
	strcat(yaml, "]\n    protocol: tcp\n    why: many\n"
		     "  - cidr: 192.0.2.1/32\n    ports: [2000]\n    protocol: tcp\n    why: one more\n");
	p = load(yaml);
	assert_int_equal(sluice_plan_build(p, 1, &plan, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than 16 port rules"));
	sluice_policy_free(p);
}

/* A unix entry's key and the key of what a client passes agree: exact
 * paths with their NUL, directories as prefixes, abstract names by length
 * (the LPM semantics the kernel applies are checked in tests/attacks). */
static void test_unix_keys(void **state)
{
	struct sluice_policy *p = load("version: 1\nname: t\nallow:\n"
				       "  - unix: /run/a.sock\n    why: x\n"
				       "  - unix: /srv/s/\n    why: x\n"
				       "  - unix: \"@ab\"\n    why: x\n");
	struct sluice_plan plan;
	struct sluice_unix_key k;
	char err[128];

	assert_int_equal(sluice_plan_build(p, 7, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_ux, 3);
	assert_int_equal(plan.ux[0].gen, 7);
	assert_int_equal(plan.ux[0].kind, SLUICE_UNIX_KIND_PATH);
	assert_int_equal(plan.ux[0].prefixlen, 32 + 8 + 8 * (strlen("/run/a.sock") + 1));
	assert_memory_equal(plan.ux[0].b, "/run/a.sock\0", 12);
	assert_int_equal(plan.ux[1].prefixlen, 32 + 8 + 8 * strlen("/srv/s/"));
	assert_int_equal(plan.ux[2].kind, SLUICE_UNIX_KIND_ABSTRACT);
	assert_int_equal(plan.ux[2].b[0], 2);
	assert_int_equal(plan.ux_rule[2], 2);

	/* the client's spelling: a path with or without its NUL in the length */
	sluice_unix_key_of_addr((const unsigned char *)"/run/a.sock", 11, 7, &k);
	assert_memory_equal(&k, &plan.ux[0], sizeof(k));
	sluice_unix_key_of_addr((const unsigned char *)"/run/a.sock\0junk", 16, 7, &k);
	assert_memory_equal(&k, &plan.ux[0], sizeof(k));
	/* an abstract name: leading NUL, its length from the address length */
	sluice_unix_key_of_addr((const unsigned char *)"\0ab", 3, 7, &k);
	assert_memory_equal(&k, &plan.ux[2], sizeof(k));
	sluice_unix_key_of_addr((const unsigned char *)"\0ab\0", 4, 7, &k);
	assert_memory_not_equal(&k, &plan.ux[2], sizeof(k));   /* "ab\0" is another name */
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_policy_plans_nothing),
		cmocka_unit_test(test_cidr_key_carries_generation_and_prefix),
		cmocka_unit_test(test_nested_prefixes_are_flattened),
		cmocka_unit_test(test_v6_entries),
		cmocka_unit_test(test_host_and_url_ports_become_proxy_ports),
		cmocka_unit_test(test_audit_mode_sets_generation_flag),
		cmocka_unit_test(test_too_many_rules_for_one_prefix),
		cmocka_unit_test(test_unix_keys),
	};

	return cmocka_run_group_tests_name("policy_maps", tests, NULL, NULL);
}
