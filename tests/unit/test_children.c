/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the restart budget of a sandbox's proxy and resolver (loader/children.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "children.h"

/* SLUICE_RESTART_MAX restarts within the window, then none until it has passed. */
static void test_budget_within_window(void **state)
{
	struct sluice_restarts r = { 0 };
	uint64_t t0 = 1000000;

	for (unsigned i = 0; i < SLUICE_RESTART_MAX; i++)
		assert_true(sluice_restart_allowed(&r, t0 + i * 10));
	assert_false(sluice_restart_allowed(&r, t0 + 100));
	assert_false(sluice_restart_allowed(&r, t0 + SLUICE_RESTART_WINDOW_MS - 1));
	assert_int_equal(r.total, SLUICE_RESTART_MAX);
	/* a new window starts once the old one is over */
	assert_true(sluice_restart_allowed(&r, t0 + SLUICE_RESTART_WINDOW_MS));
	assert_int_equal(r.total, SLUICE_RESTART_MAX + 1);
}

/* Restarts spread out over time never exhaust the budget. */
static void test_budget_spread_out(void **state)
{
	struct sluice_restarts r = { 0 };

	for (unsigned i = 0; i < 50; i++)
		assert_true(sluice_restart_allowed(&r, 5000 + (uint64_t)i * (SLUICE_RESTART_WINDOW_MS / 2 + 1)));
}

/* A clock starting at 0 (a fresh boot) is a valid time, not "no window". */
static void test_budget_at_time_zero(void **state)
{
	struct sluice_restarts r = { 0 };

	for (unsigned i = 0; i < SLUICE_RESTART_MAX; i++)
		assert_true(sluice_restart_allowed(&r, 0));
	assert_false(sluice_restart_allowed(&r, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_within_window),
		cmocka_unit_test(test_budget_spread_out),
		cmocka_unit_test(test_budget_at_time_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
