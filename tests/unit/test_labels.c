/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: --label KEY=VALUE (userspace/lib/labels.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "labels.h"

static void test_good(void **state)
{
	struct sluice_labels ls = { 0 };
	char err[256];

	(void)state;
	assert_int_equal(sluice_label_add(&ls, "team=blue", err, sizeof(err)), 0);
	assert_int_equal(sluice_label_add(&ls, "ticket_2=SEC-1 \xc3\xa9=x", err, sizeof(err)), 0);
	assert_int_equal(sluice_label_add(&ls, "empty=", err, sizeof(err)), 0);
	assert_int_equal(ls.n, 3);
	assert_string_equal(ls.key[1], "ticket_2");
	assert_string_equal(ls.value[1], "SEC-1 \xc3\xa9=x");   /* the first '=' splits */
	assert_string_equal(ls.value[2], "");
}

static void bad(const char *arg, const char *why)
{
	struct sluice_labels ls = { 0 };
	char err[256] = "";

	assert_int_equal(sluice_label_add(&ls, arg, err, sizeof(err)), -1);
	assert_int_equal(ls.n, 0);
	if (!strstr(err, why))
		fail_msg("'%s': '%s' does not say '%s'", arg, err, why);
}

static void test_bad_keys_and_values(void **state)
{
	char longv[200], longk[60];

	(void)state;
	bad("noequals", "want KEY=VALUE");
	bad("=v", "not valid");
	bad("Team=v", "not valid");       /* ECS: lower case */
	bad("a.b=v", "not valid");        /* no dots: labels is flat */
	bad("a-b=v", "not valid");
	bad("1a=v", "not valid");
	bad("k=a\tb", "not UTF-8 text");
	bad("k=\xc2\x85", "not UTF-8 text");  /* U+0085, a C1 control */
	bad("k=\xff", "not UTF-8 text");
	bad("k=\xc0\xaf", "not UTF-8 text");  /* overlong */
	memset(longv, 'v', sizeof(longv));
	memcpy(longv, "k=", 2);
	longv[2 + 129] = '\0';
	bad(longv, "at most 128");
	memset(longk, 'k', sizeof(longk));
	longk[33] = '=';
	longk[34] = '\0';
	bad(longk, "too long");
}

static void test_limits(void **state)
{
	struct sluice_labels ls = { 0 };
	char err[256], arg[200];

	(void)state;
	assert_int_equal(sluice_label_add(&ls, "k=1", err, sizeof(err)), 0);
	assert_int_equal(sluice_label_add(&ls, "k=2", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "given twice"));
	for (int i = 1; i < SLUICE_LABELS_MAX; i++) {
		snprintf(arg, sizeof(arg), "k%d=%d", i, i);
		assert_int_equal(sluice_label_add(&ls, arg, err, sizeof(err)), 0);
	}
	assert_int_equal(sluice_label_add(&ls, "one_more=x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at most 8 labels"));

	/* the bytes of all of them: 5 x (1 + 120) > 512 */
	memset(&ls, 0, sizeof(ls));
	for (int i = 0; i < 5; i++) {
		int n = snprintf(arg, sizeof(arg), "%c=", 'a' + i);

		memset(arg + n, 'x', 120);
		arg[n + 120] = '\0';
		if (i < 4)
			assert_int_equal(sluice_label_add(&ls, arg, err, sizeof(err)), 0);
		else
			assert_int_equal(sluice_label_add(&ls, arg, err, sizeof(err)), -1);
	}
	assert_non_null(strstr(err, "at most 512"));
	assert_int_equal(ls.n, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad_keys_and_values),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
