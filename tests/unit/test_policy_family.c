/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy_family.c - the `families:` section (userspace/lib/policy_family.c,
 * its digest part in digest.c, lint `family` in lint.c, the boundary check
 * in policy_within.c): parsing and its errors with positions, the rule
 * sluice_policy_allows_family() states (the BPF LSM's socket_create and the
 * seccomp filter implement the same one), the digest, the lint and the
 * boundary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "policy.h"
#include "policy_within.h"

#define HEAD "version: 1\nname: t\n"
#define FAMS "families:\n  - family: vsock\n    why: the VM host's agent\n  - family: netlink\n    why: ip monitor\n"

#include "policy_fixture.h"

static void test_parse_sorted(void **state)
{
	(void)state;
	struct sluice_policy *p = load(HEAD FAMS);
	char buf[64];

	assert_true(p->families.present);
	assert_int_equal(p->families.n, 2);
	/* in family order: netlink (16) before vsock (40) */
	assert_string_equal(p->families.items[0].name, "netlink");
	assert_int_equal(p->families.items[0].family, AF_NETLINK);
	assert_int_equal(p->families.items[0].line, 6);
	assert_string_equal(p->families.items[1].why, "the VM host's agent");
	assert_true(p->families.mask == ((1ULL << AF_NETLINK) | (1ULL << AF_VSOCK)));
	assert_string_equal(sluice_policy_families_str(p, buf, sizeof(buf)), "netlink,vsock");
	sluice_policy_free(p);
}

static void test_allows_family(void **state)
{
	(void)state;
	struct sluice_policy *none = load(HEAD "allow: []\n"), *p = load(HEAD FAMS);

	/* always: unix, inet, inet6, netlink route (0) and sock_diag (4) */
	assert_true(sluice_policy_allows_family(NULL, AF_UNIX, 0));
	assert_true(sluice_policy_allows_family(none, AF_INET, 6));
	assert_true(sluice_policy_allows_family(none, AF_INET6, 17));
	assert_true(sluice_policy_allows_family(none, AF_NETLINK, 0));
	assert_true(sluice_policy_allows_family(none, AF_NETLINK, 4));
	/* refused unless named */
	assert_false(sluice_policy_allows_family(none, AF_NETLINK, 9));   /* audit */
	assert_false(sluice_policy_allows_family(none, AF_VSOCK, 0));
	assert_false(sluice_policy_allows_family(none, AF_PACKET, 0));
	assert_false(sluice_policy_allows_family(none, AF_XDP, 0));
	assert_false(sluice_policy_allows_family(none, -1, 0));
	assert_false(sluice_policy_allows_family(none, 200, 0));
	assert_true(sluice_policy_allows_family(p, AF_NETLINK, 9));
	assert_true(sluice_policy_allows_family(p, AF_VSOCK, 0));
	assert_false(sluice_policy_allows_family(p, AF_PACKET, 0));
	assert_false(sluice_policy_allows_family(p, AF_BLUETOOTH, 0));
	sluice_policy_free(none);
	sluice_policy_free(p);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(sluice_family_name(AF_VSOCK), "vsock");
	assert_string_equal(sluice_family_name(AF_PACKET), "packet");
	assert_string_equal(sluice_family_name(AF_XDP), "xdp");
	assert_string_equal(sluice_family_name(AF_BLUETOOTH), "bluetooth");
	assert_null(sluice_family_name(AF_INET));
	assert_null(sluice_family_name(1000));
	assert_int_equal(sluice_family_by_name("can"), AF_CAN);
	assert_int_equal(sluice_family_by_name("inet"), -1);
	assert_int_equal(sluice_family_by_name("nope"), -1);
}

static void test_errors(void **state)
{
	(void)state;
	bad(HEAD "families: [vsock]\n", 3, 12, "each item is a mapping (family, why)");
	bad(HEAD "families: {}\n", 3, 11, "must be a list");
	bad(HEAD "families:\n  - family: unix\n    why: x\n", 4, 13, "'unix' is always allowed");
	bad(HEAD "families:\n  - family: inet6\n    why: x\n", 4, 13, "'inet6' is always allowed");
	bad(HEAD "families:\n  - family: carrier-pigeon\n    why: x\n", 4, 13, "unknown socket family 'carrier-pigeon'");
	bad(HEAD "families:\n  - family: vsock\n", 4, 5, "needs 'why'");
	bad(HEAD "families:\n  - family: vsock\n    why: \"  \"\n", 5, 10, "'why' must not be empty");
	bad(HEAD "families:\n  - why: x\n", 4, 5, "needs 'family'");
	bad(HEAD "families:\n  - family: vsock\n    why: x\n    ports: [1]\n", 6, 5, "unknown key 'ports'");
	bad(HEAD FAMS "  - family: vsock\n    why: again\n", 8, 13, "vsock is already listed at line 4");
	bad(HEAD "families:\n  - family: \"vsock\\0x\"\n    why: x\n", 4, 13, "contains a NUL byte");
}

static void test_digest(void **state)
{
	(void)state;
	struct sluice_policy *a = load(HEAD "allow: []\n"), *b = load(HEAD "families: []\nallow: []\n");
	struct sluice_policy *c = load(HEAD FAMS);
	struct sluice_policy *d = load(HEAD "families:\n  - family: netlink\n    why: ip monitor\n"
				       "  - family: vsock\n    why: the VM host's agent\n");
	struct sluice_policy *e = load(HEAD "families:\n  - family: netlink\n    why: ip monitor!\n"
				       "  - family: vsock\n    why: the VM host's agent\n");
	char *canon = sluice_policy_canonical(c, NULL);

	/* a written section changes the digest, an absent one keeps the old */
	assert_string_not_equal(a->digest, b->digest);
	/* order in the file does not matter; the why does */
	assert_string_equal(c->digest, d->digest);
	assert_string_not_equal(d->digest, e->digest);
	assert_non_null(strstr(canon, "\"families\":[{\"family\":\"netlink\",\"why\":\"ip monitor\"},{\"family\":\"vsock\","));
	free(canon);
	sluice_policy_free(a);
	sluice_policy_free(b);
	sluice_policy_free(c);
	sluice_policy_free(d);
	sluice_policy_free(e);
}

static void test_lint_and_boundary(void **state)
{
	(void)state;
	struct sluice_policy *p = load(HEAD FAMS), *bound = load(HEAD "families:\n  - family: netlink\n    why: ok\n");
	struct sluice_lint *l = NULL;
	struct sluice_excess *x = NULL;
	int n = sluice_policy_lint(p, "/dev/null", &l);

	assert_int_equal(n, 2);
	assert_string_equal(l[0].code_name, "family");
	assert_int_equal(l[0].entry, SLUICE_LINT_NO_ENTRY);
	assert_string_equal(l[0].family, "netlink");
	assert_int_equal(l[1].line, 4);
	assert_non_null(strstr(l[1].message, "family:vsock: reaches the VM host"));
	free(l);
	/* the boundary names netlink only: vsock is beyond it */
	n = sluice_policy_within(p, bound, &x);
	assert_int_equal(n, 1);
	assert_int_equal(x[0].entry, SLUICE_EXCESS_POLICY);
	assert_non_null(strstr(x[0].example, "family vsock"));
	free(x);
	n = sluice_policy_within(bound, p, &x);
	assert_int_equal(n, 0);
	free(x);
	sluice_policy_free(p);
	sluice_policy_free(bound);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_sorted),
		cmocka_unit_test(test_allows_family),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_lint_and_boundary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
