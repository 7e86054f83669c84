/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_seccomp_families.c - the socket family rules of seccomp
 * (loader/seccomp_families.c) decide every family and netlink protocol of
 * socket() and socketpair() exactly as sluice_policy_allows_family() does,
 * with one verdict per argument (no overlap of ALLOW and REFUSE, so a
 * profile whose default action refuses holds the same rule); socketcall
 * refuses SYS_SOCKET and SYS_SOCKETPAIR and allows the rest; io_uring is
 * refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "policy.h"
#include "seccomp_families.h"

#define MAX_RULES 512

struct collected {
	struct sluice_seccomp_rule r[MAX_RULES];
	size_t n;
};

static int collect(const struct sluice_seccomp_rule *rule, void *arg)
{
	struct collected *c = arg;

	assert_true(c->n < MAX_RULES);
	assert_true(rule->n_args <= 2);
	for (unsigned i = 0; i < rule->n_args; i++)
		assert_non_null(sluice_seccomp_op_name(rule->args[i].op));
	c->r[c->n++] = *rule;
	return 0;
}

static bool matches(const struct sluice_seccomp_rule *r, const uint64_t *args)
{
	for (unsigned i = 0; i < r->n_args; i++) {
		uint64_t v = args[r->args[i].index];

		if (r->args[i].op == SCMP_CMP_EQ ? v != r->args[i].value : v <= r->args[i].value)
			return false;
	}
	return true;
}

/* The one verdict of the rules for `sc` on `args`: 1 allow, 0 refuse, -1 none or both. */
static int verdict(const struct collected *c, const char *sc, const uint64_t *args)
{
	bool allow = false, refuse = false;

	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->r[i].syscall, sc) == 0 && matches(&c->r[i], args)) {
			allow |= c->r[i].verdict == SLUICE_SECCOMP_ALLOW;
			refuse |= c->r[i].verdict == SLUICE_SECCOMP_REFUSE;
		}
	return allow == refuse ? -1 : allow;
}

static void check_mask(uint64_t mask)
{
	static struct collected c;
	struct sluice_policy p;
	static const char *const calls[] = { "socket", "socketpair" };

	memset(&c, 0, sizeof(c));
	memset(&p, 0, sizeof(p));
	p.families.mask = mask;
	assert_int_equal(sluice_seccomp_family_rules(mask, collect, &c), 0);
	for (size_t k = 0; k < 2; k++)
		for (uint64_t f = 0; f < 70; f++)
			for (uint64_t proto = 0; proto < 8; proto++) {
				uint64_t args[6] = { f, SOCK_STREAM, proto };
				int want = f < 64 && sluice_policy_allows_family(&p, (int)f, (int)proto);

				if (verdict(&c, calls[k], args) != want)
					fail_msg("%s(%u, _, %u) under mask %#llx: rules say %d, the policy %d", calls[k],
						 (unsigned)f, (unsigned)proto, (unsigned long long)mask,
						 verdict(&c, calls[k], args), want);
			}
	/* a family with bits above 32 set (the kernel reads an int) is refused */
	{
		uint64_t args[6] = { (1ULL << 32) | AF_INET, SOCK_STREAM, 0 };

		assert_int_equal(verdict(&c, "socket", args), 0);
	}
	for (uint64_t call = 0; call < 30; call++) {
		uint64_t args[6] = { call };

		assert_int_equal(verdict(&c, "socketcall", args), call != 1 && call != 8);
	}
	{
		uint64_t args[6] = { 0 };

		assert_int_equal(verdict(&c, "io_uring_setup", args), 0);
		assert_int_equal(verdict(&c, "io_uring_enter", args), 0);
		assert_int_equal(verdict(&c, "io_uring_register", args), 0);
	}
}

static void test_default_families(void **state)
{
	(void)state;
	check_mask(0);
}

static void test_named_families(void **state)
{
	(void)state;
	check_mask(1ULL << AF_VSOCK);
	check_mask((1ULL << AF_NETLINK) | (1ULL << AF_PACKET));
	check_mask(~0ULL);
}

static int stop_at_first(const struct sluice_seccomp_rule *rule, void *arg)
{
	(void)rule;
	(*(int *)arg)++;
	return 7;
}

static void test_walk_stops(void **state)
{
	int calls = 0;

	(void)state;
	assert_int_equal(sluice_seccomp_family_rules(0, stop_at_first, &calls), 7);
	assert_int_equal(calls, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_families),
		cmocka_unit_test(test_named_families),
		cmocka_unit_test(test_walk_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
