/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: per-program entries (userspace/lib/policy_prog.c), their map
 * keys (loader/policy_maps.c) and the matchers' program filter. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "policy.h"
#include "policy_maps.h"

/* /bin/sh exists on every machine the tests run on; so does /etc/hostname's directory */
#define PROG "/bin/sh"

static struct sluice_policy *try_load(const char *yaml, char *msg, size_t len)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;

	msg[0] = 0;
	if (sluice_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &err) < 0)
		sluice_policy_error_str(&err, msg, len);
	return p;
}

static struct sluice_exe_id id_of(const char *path)
{
	struct stat st;
	struct sluice_exe_id id;

	assert_int_equal(stat(path, &st), 0);
	id.dev = sluice_kdev(st.st_dev);
	id.ino = st.st_ino;
	return id;
}

static void test_kdev_is_the_kernels_encoding(void **state)
{
	(void)state;
	/* MKDEV(254, 0) and MKDEV(8, 257): 12 bits of major above 20 of minor */
	assert_int_equal(sluice_kdev(makedev(254, 0)), 254u << 20);
	assert_int_equal(sluice_kdev(makedev(8, 257)), (8u << 20) | 257u);
}

static void test_paths_resolve_sorted_and_match_by_inode(void **state)
{
	char msg[512];
	struct sluice_policy *p;
	struct sluice_exe_id sh = id_of(PROG), other = sh;
	const struct sluice_entry *e;

	(void)state;
	p = try_load("version: 1\nname: t\nallow:\n  - host: api.example.com\n    ports: [443]\n"
		     "    programs: [/usr/bin/env, " PROG "]\n    why: x\n", msg, sizeof(msg));
	assert_non_null(p);
	e = &p->entries[0];
	assert_int_equal(e->n_programs, 2);
	assert_string_equal(e->programs[0].path, PROG);      /* sorted: /bin/sh < /usr/bin/env */
	assert_int_equal(e->programs[0].line, 6);
	assert_true(e->programs[0].id.ino == sh.ino && e->programs[0].id.dev == sh.dev);
	assert_true(sluice_entry_allows_program(e, &sh));
	assert_true(sluice_entry_allows_program(e, NULL));   /* not asked: tools */
	other.ino ^= 1;
	assert_false(sluice_entry_allows_program(e, &other));
	assert_string_equal(sluice_entry_program_path(e, &sh), PROG);
	assert_null(sluice_entry_program_path(e, &other));
	/* the matchers skip the entry for another program */
	assert_ptr_equal(sluice_policy_match_host_for(p, "api.example.com", 443, &sh), e);
	assert_null(sluice_policy_match_host_for(p, "api.example.com", 443, &other));
	assert_ptr_equal(sluice_policy_match_host(p, "api.example.com", 443), e);
	assert_true(sluice_policy_has_programs(p));
	sluice_policy_free(p);
}

static void test_bad_programs_are_errors_at_their_line(void **state)
{
	static const struct {
		const char *programs, *want;
	} cases[] = {
		{ "[/nonexistent/x]", "t.yaml:6:16: program '/nonexistent/x': no such file" },
		{ "[/etc]", "is not a regular file" },
		{ "[bin/sh]", "must be an absolute path" },
		{ "[/bin/../bin/sh]", "'..' segment" },
		{ "[]", "at least one program" },
		{ "/bin/sh", "must be a list" },
		{ "[" PROG ", " PROG "]", "listed twice" },
		{ "[{a: b}]", "t.yaml:6:" },
	};
	char yaml[512], msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(yaml, sizeof(yaml), "version: 1\nname: t\nallow:\n  - cidr: 192.0.2.1/32\n    ports: [80]\n"
			 "    programs: %s\n    why: x\n", cases[i].programs);
		assert_null(try_load(yaml, msg, sizeof(msg)));
		if (!strstr(msg, cases[i].want))
			fail_msg("%s: got '%s', want '%s'", cases[i].programs, msg, cases[i].want);
	}
	assert_null(try_load("version: 1\nname: t\nallow:\n  - unix: /run/x.sock\n    programs: [" PROG "]\n"
			     "    why: x\n", msg, sizeof(msg)));
	assert_non_null(strstr(msg, "not allowed in a unix entry"));
}

static void test_digest_covers_paths_not_order(void **state)
{
	char msg[512];
	struct sluice_policy *a, *b, *c, *d;

	(void)state;
	a = try_load("version: 1\nname: t\nallow:\n  - cidr: 192.0.2.1/32\n    ports: [80]\n    why: x\n", msg,
		     sizeof(msg));
	b = try_load("version: 1\nname: t\nallow:\n  - cidr: 192.0.2.1/32\n    ports: [80]\n    programs: [" PROG
		     "]\n    why: x\n", msg, sizeof(msg));
	c = try_load("version: 1\nname: t\nallow:\n  - cidr: 192.0.2.1/32\n    ports: [80]\n    programs: [" PROG
		     ", /usr/bin/env]\n    why: x\n", msg, sizeof(msg));
	d = try_load("version: 1\nname: t\nallow:\n  - cidr: 192.0.2.1/32\n    ports: [80]\n    programs: "
		     "[/usr/bin/env, " PROG "]\n    why: x\n", msg, sizeof(msg));
	assert_true(a && b && c && d);
	assert_string_not_equal(a->digest, b->digest);
	assert_string_not_equal(b->digest, c->digest);
	assert_string_equal(c->digest, d->digest);
	sluice_policy_free(a);
	sluice_policy_free(b);
	sluice_policy_free(c);
	sluice_policy_free(d);
}

static void test_plan_flags_rules_and_keys_programs(void **state)
{
	char msg[512], err[256];
	struct sluice_policy *p;
	struct sluice_plan plan;
	struct sluice_exe_id sh = id_of(PROG);

	(void)state;
	/* the same port of a wider prefix flattened into a narrower one with
	 * programs: not merged, each keyed by its own entry */
	p = try_load("version: 1\nname: t\nallow:\n"
		     "  - cidr: 192.0.2.0/24\n    ports: [80]\n    why: any program\n"
		     "  - cidr: 192.0.2.0/25\n    ports: [80]\n    programs: [" PROG "]\n    why: sh only\n",
		     msg, sizeof(msg));
	assert_non_null(p);
	assert_int_equal(sluice_plan_build(p, 7, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_v4, 2);
	assert_int_equal(plan.v4[0].key.prefixlen, 32 + 24);
	assert_int_equal(plan.v4[0].val.n, 1);
	assert_int_equal(plan.v4[0].val.rules[0].flags, 0);
	assert_int_equal(plan.v4[1].key.prefixlen, 32 + 25);
	assert_int_equal(plan.v4[1].val.n, 2);
	assert_int_equal(plan.v4[1].val.rules[0].flags, 0);
	assert_int_equal(plan.v4[1].val.rules[1].flags, SLUICE_RULE_PROGRAMS);
	assert_int_equal(plan.v4[1].val.rules[1].rule, 1);
	assert_int_equal(plan.n_pk, 1);
	assert_int_equal(plan.pk[0].gen, 7);
	assert_int_equal(plan.pk[0].rule, 1);
	assert_int_equal(plan.pk[0].dev, sh.dev);
	assert_true(plan.pk[0].ino == sh.ino);
	assert_int_equal(plan.pk[0].pad, 0);
	assert_int_equal(plan.pk[0].pad2, 0);
	assert_int_equal(sluice_plan_count_programs(p), 1);
	sluice_plan_free(&plan);
	sluice_policy_free(p);
}

static void test_interpreters_are_named(void **state)
{
	(void)state;
	assert_string_equal(sluice_program_interpreter("/usr/bin/python3.11"), "python");
	assert_string_equal(sluice_program_interpreter("/bin/bash"), "bash");
	assert_string_equal(sluice_program_interpreter("/lib64/ld-linux-x86-64.so.2"), "ld-linux");
	assert_string_equal(sluice_program_interpreter("/usr/bin/env"), "env");
	assert_null(sluice_program_interpreter("/usr/bin/git-nonexistent-for-test"));
	assert_null(sluice_program_interpreter("/usr/bin/shasum-nonexistent"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kdev_is_the_kernels_encoding),
		cmocka_unit_test(test_paths_resolve_sorted_and_match_by_inode),
		cmocka_unit_test(test_bad_programs_are_errors_at_their_line),
		cmocka_unit_test(test_digest_covers_paths_not_order),
		cmocka_unit_test(test_plan_flags_rules_and_keys_programs),
		cmocka_unit_test(test_interpreters_are_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
