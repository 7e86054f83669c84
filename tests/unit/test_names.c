/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the sandbox name rule every command shares (loader/kfeatures.c)
 * and the owner record's start time (loader/owner.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kfeatures.h"
#include "owner.h"

static void test_name_rule(void **state)
{
	static const char *ok[] = { "a", "run-123", "A.b_c-9", "x.y", "_" };
	static const char *bad[] = { "", ".hidden", "a/b", "a b", "a\nb", "..", "é", "a:b", "a*" };
	char msg[256], n60[61], n61[62];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(sluice_name_check(ok[i], msg, sizeof(msg)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(sluice_name_check(bad[i], msg, sizeof(msg)), -1);
		assert_non_null(strstr(msg, "sandbox name"));
	}
	memset(n60, 'n', 60);
	n60[60] = 0;
	memset(n61, 'n', 61);
	n61[61] = 0;
	assert_int_equal(sluice_name_check(n60, msg, sizeof(msg)), 0);
	assert_int_equal(sluice_name_check(n61, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "61 bytes long: at most 60"));
	/* a small buffer still gets a terminated message */
	assert_int_equal(sluice_name_check(n61, msg, 8), -1);
	assert_int_equal(strlen(msg), 7);
}

static void test_start_time(void **state)
{
	uint64_t a = sluice_proc_start_time(getpid()), b = sluice_proc_start_time(getpid());

	assert_true(a > 0);
	assert_true(a == b);
	/* pid 1 started before us */
	assert_true(sluice_proc_start_time(1) <= a);
	/* no such pid */
	assert_true(sluice_proc_start_time(0x3fffffff) == 0);
}

static void test_owner_alive(void **state)
{
	struct sluice_owner o = { .pid = getpid() };

	snprintf(o.kind, sizeof(o.kind), "run");
	o.start_time = sluice_proc_start_time(getpid());
	assert_true(sluice_owner_alive(&o));
	o.start_time++; /* the same pid, reused by another process */
	assert_false(sluice_owner_alive(&o));
	o.pid = 0x3fffffff;
	assert_false(sluice_owner_alive(&o));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_rule),
		cmocka_unit_test(test_start_time),
		cmocka_unit_test(test_owner_alive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
