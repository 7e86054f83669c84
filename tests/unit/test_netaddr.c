/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_netaddr.c - the special-range classifier and the CIDR matcher
 * (userspace/lib/netaddr.c), and that every component that judges an
 * address gives the same answer for the peer vectors of netaddr_vectors.h:
 * the classifier, the proxy's dial check (proxy_addr_dialable), the
 * resolver's answer check (rsv_answer_addr_ok), the `policy check` lint,
 * and for the hatches and cidr entries also the proxy's and the kernel
 * plan's cidr matching (proxy_policy_cidr_allows, sluice_plan_allows4).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "netaddr.h"
#include "policy.h"
#include "policy_maps.h"
#include "addr.h"
#include "request.h"
#include "resolver.h"

#include "netaddr_vectors.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char relays_path[64];   /* an empty relay list: only address lints */

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(relays_path, sizeof(relays_path), "/tmp/sluice-test-relays-XXXXXX");
	fd = mkstemp(relays_path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(relays_path);
	return 0;
}

static int parse_addr(const char *s, uint8_t a[16])
{
	memset(a, 0, 16);
	if (inet_pton(AF_INET, s, a) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, a) == 1)
		return AF_INET6;
	fail_msg("bad test address %s", s);
	return -1;
}

static const char *show(const char *name)
{
	return name ? name : "public";
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static struct sluice_policy *load_cidr(const char *cidr)
{
	char y[256], buf[600];
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;

	snprintf(y, sizeof(y), "version: 1\nname: t\nallow:\n  - cidr: \"%s\"\n    ports: [443]\n    why: x\n", cidr);
	if (sluice_policy_load_buffer("t.yaml", y, strlen(y), &p, &err) != 0)
		fail_msg("%s: load failed: %s", cidr, sluice_policy_error_str(&err, buf, sizeof(buf)));
	return p;
}

/* --- the classifier ------------------------------------------------------- */

static void test_classifier(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(netaddr_vectors); i++) {
		const struct netaddr_vector *v = &netaddr_vectors[i];
		struct netaddr_info info;
		uint8_t a[16], v4[16];
		int fam = parse_addr(v->addr, a);
		bool special = netaddr_classify(fam, a, &info);

		if (special != (v->name != NULL) || !same(info.name, v->name))
			fail_msg("classifier: %s: got %s, want %s", v->addr, show(info.name), show(v->name));
		if (info.embeds_v4 != (v->v4 != NULL))
			fail_msg("classifier: %s: embeds_v4 %d, want %s", v->addr, info.embeds_v4, v->v4 ? v->v4 : "none");
		if (v->v4) {
			struct netaddr_info inner;

			assert_int_equal(parse_addr(v->v4, v4), AF_INET);
			if (memcmp(info.v4, v4, 4) != 0)
				fail_msg("classifier: %s: embedded %u.%u.%u.%u, want %s", v->addr,
					 info.v4[0], info.v4[1], info.v4[2], info.v4[3], v->v4);
			netaddr_classify(AF_INET, v4, &inner);
			assert_int_equal(info.v4_cls, inner.cls);
		}
	}
}

static void test_names_and_table(void **state)
{
	size_t n;
	const struct netaddr_range *r = netaddr_ranges(&n);
	struct netaddr_info info;
	uint8_t a[16] = { 0 };

	(void)state;
	assert_null(netaddr_class_name(NETADDR_PUBLIC));
	assert_string_equal(netaddr_class_name(NETADDR_N_CLASSES), "?");
	for (int c = 1; c < NETADDR_N_CLASSES; c++)
		assert_non_null(netaddr_class_name((enum netaddr_class)c));
	/* every row: host bits zero, and its own first address names it (no
	 * row is hidden by an earlier one) unless an earlier, more specific
	 * row holds that address */
	for (size_t i = 0; i < n; i++) {
		unsigned max = r[i].family == AF_INET ? 32 : 128;

		for (unsigned bit = r[i].prefix_len; bit < max; bit++)
			if (r[i].addr[bit / 8] & (0x80 >> (bit % 8)))
				fail_msg("row %zu: host bits set", i);
		assert_non_null(r[i].what);
		for (size_t j = 0; j < i; j++)
			if (r[j].family == r[i].family && r[j].prefix_len <= r[i].prefix_len &&
			    netaddr_prefix_match(r[i].addr, r[j].addr, r[j].prefix_len))
				fail_msg("row %zu is shadowed by the wider row %zu before it", i, j);
	}
	/* an unknown family is special */
	assert_true(netaddr_classify(AF_UNIX, a, &info));
	assert_string_equal(info.name, "unknown_family");
	assert_null(netaddr_refusal(AF_INET, (const uint8_t[4]){ 8, 8, 8, 8 }, NULL, 0));
	assert_string_equal(netaddr_refusal(AF_UNIX, a, NULL, 0), "unknown_family");
	/* NULL info is allowed */
	assert_true(netaddr_classify(AF_INET, (const uint8_t[4]){ 10, 0, 0, 1 }, NULL));
}

/* --- every user, the same answer ---------------------------------------- */

static void test_proxy_agrees(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(netaddr_vectors); i++) {
		const struct netaddr_vector *v = &netaddr_vectors[i];
		const char *why = "unset";
		uint8_t a[16];
		int fam = parse_addr(v->addr, a);
		bool ok = proxy_addr_dialable(fam, a, NULL, 0, &why);

		if (ok != (v->name == NULL) || !same(why, v->name))
			fail_msg("proxy: %s: %s (%s), want %s", v->addr, ok ? "dialled" : "refused", show(why),
				 show(v->name));
	}
}

static void test_resolver_agrees(void **state)
{
	struct rsv_ctx ctx = { .mode = SLUICE_MODE_ENFORCE };

	(void)state;
	for (size_t i = 0; i < N(netaddr_vectors); i++) {
		const struct netaddr_vector *v = &netaddr_vectors[i];
		const char *why = "unset";
		uint8_t a[16];
		int fam = parse_addr(v->addr, a);
		bool ok = rsv_answer_addr_ok(&ctx, fam, a, &why);

		if (ok != (v->name == NULL) || !same(why, v->name))
			fail_msg("resolver: %s: %s (%s), want %s", v->addr, ok ? "answered" : "dropped", show(why),
				 show(v->name));
	}
}

static void test_lint_agrees(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(netaddr_vectors); i++) {
		const struct netaddr_vector *v = &netaddr_vectors[i];
		struct sluice_policy *p = load_cidr(v->addr);
		struct sluice_lint *l = NULL;
		int n = sluice_policy_lint(p, relays_path, &l), special = 0;
		char want[64];

		if (n < 0)
			fail_msg("lint failed: %s", strerror(errno));
		for (int k = 0; k < n; k++) {
			if (l[k].code != SLUICE_LINT_SPECIAL_RANGE)
				continue;
			special++;
			if (v->v4) {
				snprintf(want, sizeof(want), "which embeds %s", v->v4);
				if (!strstr(l[k].message, want))
					fail_msg("lint: %s: \"%s\" does not name %s", v->addr, l[k].message, v->v4);
			}
		}
		/* one address: one finding, the range that names it */
		if (special != (v->name ? 1 : 0))
			fail_msg("lint: %s: %d special-range findings, want %s", v->addr, special, show(v->name));
		free(l);
		sluice_policy_free(p);
	}
}

/* The hatches and cidr entries: proxy, resolver, the policy library and the
 * kernel plan agree on what a CIDR contains. */
static void test_hatches_agree(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(netaddr_hatch_vectors); i++) {
		const struct netaddr_hatch_vector *v = &netaddr_hatch_vectors[i];
		struct netaddr_cidr c;
		struct rsv_ctx ctx = { .mode = SLUICE_MODE_ENFORCE };
		struct sluice_policy *p;
		struct sluice_plan plan;
		char err[256];
		const uint8_t *u;
		uint8_t a[16];
		int fam = parse_addr(v->addr, a);
		bool in, proxy, resolver;

		if (netaddr_cidr_parse(v->cidr, &c) < 0)
			fail_msg("%s: does not parse", v->cidr);
		in = netaddr_cidr_contains(&c, fam, a);
		/* the hatch flags */
		proxy = proxy_addr_dialable(fam, a, &c, 1, NULL);
		ctx.allow_private = &c;
		ctx.n_allow_private = 1;
		resolver = rsv_answer_addr_ok(&ctx, fam, a, NULL);
		if (proxy != v->allowed || resolver != v->allowed)
			fail_msg("hatch %s, %s: proxy %d, resolver %d, want %d", v->cidr, v->addr, proxy, resolver,
				 v->allowed);
		if (v->allowed != (in || !netaddr_classify(fam, a, NULL)))
			fail_msg("hatch %s, %s: contains %d", v->cidr, v->addr, in);

		/* the same CIDR as a cidr entry of the policy */
		p = load_cidr(v->cidr);
		assert_int_equal(sluice_entry_cidr_contains(&p->entries[0], fam, a), in);
		proxy = proxy_addr_dialable(fam, a, NULL, 0, NULL) || proxy_policy_cidr_allows(p, fam, a, 443);
		ctx.allow_private = NULL;
		ctx.n_allow_private = 0;
		ctx.policy = p;
		resolver = rsv_answer_addr_ok(&ctx, fam, a, NULL);
		if (proxy != v->allowed || resolver != v->allowed)
			fail_msg("cidr entry %s, %s: proxy %d, resolver %d, want %d", v->cidr, v->addr, proxy,
				 resolver, v->allowed);
		/* and in the kernel's maps (IPv4 and v4-mapped: the IPv4 map) */
		assert_int_equal(sluice_plan_build(p, 1, &plan, err, sizeof(err)), 0);
		if (netaddr_unmap(fam, a, &u) == AF_INET) {
			uint32_t k;

			memcpy(&k, u, 4);
			if (sluice_plan_allows4(&plan, k, IPPROTO_TCP, 443) != in)
				fail_msg("plan %s, %s: %d, want %d", v->cidr, v->addr, !in, in);
		}
		sluice_plan_free(&plan);
		sluice_policy_free(p);
	}
}

/* --- CIDR parsing and matching ------------------------------------------ */

static void test_cidr_parse(void **state)
{
	struct netaddr_cidr c;
	uint8_t a[16];

	(void)state;
	assert_int_equal(netaddr_cidr_parse("192.0.2.0/24", &c), 0);
	assert_int_equal(c.family, AF_INET);
	assert_int_equal(c.prefix_len, 24);
	inet_pton(AF_INET, "192.0.2.200", a);
	assert_true(netaddr_cidr_contains(&c, AF_INET, a));
	inet_pton(AF_INET6, "::ffff:192.0.2.200", a);
	assert_true(netaddr_cidr_contains(&c, AF_INET6, a));
	inet_pton(AF_INET, "192.0.3.1", a);
	assert_false(netaddr_cidr_contains(&c, AF_INET, a));
	assert_int_equal(netaddr_cidr_parse("2001:db8::/32", &c), 0);
	assert_int_equal(c.family, AF_INET6);
	assert_int_equal(c.prefix_len, 32);
	assert_int_equal(netaddr_cidr_parse("10.0.0.1", &c), 0);
	assert_int_equal(c.prefix_len, 32);
	assert_int_equal(netaddr_cidr_parse("2001:db8::1", &c), 0);
	assert_int_equal(c.prefix_len, 128);
	assert_int_equal(netaddr_cidr_parse("0.0.0.0/0", &c), 0);
	assert_int_equal(c.prefix_len, 0);
	/* a v4-mapped prefix is the IPv4 prefix */
	assert_int_equal(netaddr_cidr_parse("::ffff:10.0.0.0/104", &c), 0);
	assert_int_equal(c.family, AF_INET);
	assert_int_equal(c.prefix_len, 8);
	assert_memory_equal(c.addr, ((const uint8_t[16]){ 10 }), 16);
	assert_int_equal(netaddr_cidr_parse("::ffff:0:0/96", &c), 0);
	assert_int_equal(c.family, AF_INET);
	assert_int_equal(c.prefix_len, 0);
	assert_int_equal(netaddr_cidr_parse("::/80", &c), 0);
	assert_int_equal(c.family, AF_INET6);
	/* errors */
	assert_int_equal(netaddr_cidr_parse("192.0.2.1/24", &c), -1);   /* host bits */
	assert_int_equal(netaddr_cidr_parse("::ffff:0:0/80", &c), -1);  /* host bits */
	assert_int_equal(netaddr_cidr_parse("192.0.2.0/33", &c), -1);
	assert_int_equal(netaddr_cidr_parse("192.0.2.0/", &c), -1);
	assert_int_equal(netaddr_cidr_parse("192.0.2.0/-1", &c), -1);
	assert_int_equal(netaddr_cidr_parse("192.0.2.0/24x", &c), -1);
	assert_int_equal(netaddr_cidr_parse("example.com/24", &c), -1);
	assert_int_equal(netaddr_cidr_parse("", &c), -1);
	assert_int_equal(netaddr_cidr_parse("/8", &c), -1);
	assert_int_equal(netaddr_cidr_parse("2001:db8::/129", &c), -1);
}

static void test_prefixes(void **state)
{
	const uint8_t a[4] = { 10, 1, 2, 3 }, p8[4] = { 10 }, p9[4] = { 10, 128 };
	const uint8_t m[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3 };
	const uint8_t *u;

	(void)state;
	assert_true(netaddr_prefix_match(a, p8, 8));
	assert_true(netaddr_prefix_match(a, p9, 8));
	assert_false(netaddr_prefix_match(a, p9, 9));
	assert_true(netaddr_prefix_match(a, p9, 0));
	assert_true(netaddr_prefix_overlap(p8, 8, a, 32));
	assert_true(netaddr_prefix_overlap(a, 32, p8, 8));
	assert_false(netaddr_prefix_overlap(p9, 9, a, 32));
	assert_true(netaddr_is_v4mapped(m));
	assert_false(netaddr_is_v4mapped((const uint8_t[16]){ 0x20, 0x01 }));
	assert_int_equal(netaddr_unmap(AF_INET6, m, &u), AF_INET);
	assert_ptr_equal(u, m + 12);
	assert_int_equal(netaddr_unmap(AF_INET, a, &u), AF_INET);
	assert_ptr_equal(u, a);
	/* families must match after unmapping; an out-of-range length never matches */
	assert_true(netaddr_in_prefix(AF_INET, p8, 8, AF_INET6, m));
	assert_false(netaddr_in_prefix(AF_INET6, (const uint8_t[16]){ 0 }, 0, AF_INET6, m));
	assert_false(netaddr_in_prefix(AF_INET, p8, 33, AF_INET, a));
	assert_false(netaddr_in_prefix(AF_UNIX, p8, 0, AF_UNIX, a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classifier),
		cmocka_unit_test(test_names_and_table),
		cmocka_unit_test(test_proxy_agrees),
		cmocka_unit_test(test_resolver_agrees),
		cmocka_unit_test(test_lint_agrees),
		cmocka_unit_test(test_hatches_agree),
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_prefixes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
