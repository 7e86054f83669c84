/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: resource-limit options of `sluice run` (loader/run_limits.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_limits.h"
#include "run_limits_v1.h"

static void test_memory(void **state)
{
	static const struct { const char *in; uint64_t want; } ok[] = {
		{ "1048576", 1048576 }, { "1M", 1 << 20 }, { "1m", 1 << 20 }, { "2048K", 2048 << 10 },
		{ "1024k", 1 << 20 }, { "256MiB", 256 << 20 }, { "256MB", 256 << 20 }, { "1G", 1ULL << 30 },
		{ "1.5G", 3ULL << 29 }, { "1.5g", 3ULL << 29 }, { "2T", 2ULL << 40 }, { "1024T", 1ULL << 50 },
		{ "0.001G", 1073741 }, { "1048576b", 1048576 },
	};
	static const char *bad[] = {
		"", "G", "-1G", "+1G", " 1G", "1G ", "1 G", "1.G", ".5G", "1.5", "1.2345G", "1P", "1e9", "0x100000",
		"1048575", "0", "1025T", "99999999999999999999", "18446744073709551615T", "1GG", "1Gi",
	};
	char err[256];
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 0;
		if (sluice_parse_memory(ok[i].in, &v, err, sizeof(err)) != 0)
			fail_msg("'%s' refused: %s", ok[i].in, err);
		if (v != ok[i].want)
			fail_msg("'%s': got %llu, want %llu", ok[i].in, (unsigned long long)v, (unsigned long long)ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (sluice_parse_memory(bad[i], &v, err, sizeof(err)) == 0)
			fail_msg("'%s' accepted as %llu", bad[i], (unsigned long long)v);
		assert_true(err[0] != 0);
	}
	assert_int_equal(sluice_parse_memory("1K", &v, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too small"));
	assert_int_equal(sluice_parse_memory("1x", &v, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unknown unit 'x'"));
}

static void test_pids(void **state)
{
	char err[256];
	uint64_t v;

	assert_int_equal(sluice_parse_pids("1", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 1);
	assert_int_equal(sluice_parse_pids("4194304", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 4194304);
	assert_int_equal(sluice_parse_pids("100", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 100);
	for (const char **b = (const char *[]){ "", "0", "-1", "4194305", "1.5", "1.", "10k", " 5", "5 ", "0x10",
						 "99999999999999999999999", NULL };
	     *b; b++)
		if (sluice_parse_pids(*b, &v, err, sizeof(err)) == 0)
			fail_msg("'%s' accepted as %llu", *b, (unsigned long long)v);
}

static void test_cpu(void **state)
{
	char err[256], buf[64];
	uint32_t m;

	assert_int_equal(sluice_parse_cpu("1", &m, err, sizeof(err)), 0);
	assert_int_equal(m, 1000);
	assert_int_equal(sluice_parse_cpu("0.5", &m, err, sizeof(err)), 0);
	assert_int_equal(m, 500);
	sluice_cpu_max_string(m, buf, sizeof(buf));
	assert_string_equal(buf, "50000 100000");
	assert_int_equal(sluice_parse_cpu("2.25", &m, err, sizeof(err)), 0);
	assert_int_equal(m, 2250);
	sluice_cpu_max_string(m, buf, sizeof(buf));
	assert_string_equal(buf, "225000 100000");
	assert_int_equal(sluice_parse_cpu("0.01", &m, err, sizeof(err)), 0);
	sluice_cpu_max_string(m, buf, sizeof(buf));
	assert_string_equal(buf, "1000 100000");   /* the kernel's minimum quota */
	assert_int_equal(sluice_parse_cpu("4096", &m, err, sizeof(err)), 0);
	for (const char **b = (const char *[]){ "", "0", "0.009", "0.0005", "4096.001", "-1", "1.", ".5", "1,5", "1e3",
						 "2 ", "half", "99999999999999999999", NULL };
	     *b; b++)
		if (sluice_parse_cpu(*b, &m, err, sizeof(err)) == 0)
			fail_msg("'%s' accepted as %u", *b, m);
}

static void test_duration(void **state)
{
	static const struct { const char *in; uint64_t want; } ok[] = {
		{ "30", 30000 }, { "30s", 30000 }, { "1.5", 1500 }, { "500ms", 500 }, { "10m", 600000 },
		{ "2h", 7200000 }, { "1d", 86400000 }, { "0", 0 }, { "0s", 0 }, { "0.0001", 1 },
		{ "0.25m", 15000 }, { "366d", 366ULL * 86400000 },
	};
	char err[256];
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 12345;
		if (sluice_parse_duration(ok[i].in, &v, err, sizeof(err)) != 0)
			fail_msg("'%s' refused: %s", ok[i].in, err);
		if (v != ok[i].want)
			fail_msg("'%s': got %llu, want %llu", ok[i].in, (unsigned long long)v, (unsigned long long)ok[i].want);
	}
	for (const char **b = (const char *[]){ "", "s", "-1", "1S", "1 s", "1sec", "367d", "1.5ms5", "inf", "1e3",
						 "99999999999999999999d", ".5", NULL };
	     *b; b++)
		if (sluice_parse_duration(*b, &v, err, sizeof(err)) == 0)
			fail_msg("'%s' accepted as %llu", *b, (unsigned long long)v);
}

/* A fake cgroup v2 tree in a temporary directory. */
struct fake {
	char root[256], cg2[300], parent[320], sbx[340], mounts[300];
};

static void put(const char *dir, const char *file, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *get(const char *dir, const char *file)
{
	static char buf[256];
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static int fake_setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));

	snprintf(f->root, sizeof(f->root), "/tmp/sluice-limits-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->cg2, sizeof(f->cg2), "%s/unified", f->root);
	snprintf(f->parent, sizeof(f->parent), "%s/sluice", f->cg2);
	snprintf(f->sbx, sizeof(f->sbx), "%s/run-1", f->parent);
	snprintf(f->mounts, sizeof(f->mounts), "%s/mounts", f->root);
	assert_int_equal(mkdir(f->cg2, 0755), 0);
	assert_int_equal(mkdir(f->parent, 0755), 0);
	assert_int_equal(mkdir(f->sbx, 0755), 0);
	put(f->root, "mounts",
	    "cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0\n"
	    "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0\n"
	    "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n");
	for (const char *d = f->cg2; d; d = d == f->cg2 ? f->parent : d == f->parent ? f->sbx : NULL) {
		put(d, "cgroup.subtree_control", "");
		put(d, "memory.max", "");
		put(d, "pids.max", "");
		put(d, "cpu.max", "");
	}
	*state = f;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fake *f = *state;
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void test_check_hybrid_layout(void **state)
{
	struct fake *f = *state;
	struct sluice_limits l = { .memory_bytes = 1 << 30 };
	char msg[512];

	put(f->cg2, "cgroup.controllers", "hugetlb\n");   /* what this machine's hybrid v2 root lists */
	assert_int_equal(sluice_limits_check(&l, f->cg2, f->mounts, msg, sizeof(msg)), -1);
	assert_string_equal(msg, "the cgroup v2 hierarchy has no memory controller (hybrid layout: it is bound to "
				 "cgroup v1): --memory cannot be enforced");
	l = (struct sluice_limits){ .cpu_milli = 500 };
	assert_int_equal(sluice_limits_check(&l, f->cg2, f->mounts, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "no cpu controller (hybrid layout"));
	assert_non_null(strstr(msg, "--cpu cannot be enforced"));
	/* pids is on no v1 hierarchy in this mount table: a different reason */
	l = (struct sluice_limits){ .pids = 10 };
	assert_int_equal(sluice_limits_check(&l, f->cg2, f->mounts, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "has no pids controller: --pids cannot be enforced"));
	/* --timeout alone needs no controller */
	l = (struct sluice_limits){ .timeout_ms = 1000 };
	assert_int_equal(sluice_limits_check(&l, f->cg2, f->mounts, msg, sizeof(msg)), 0);
	assert_int_equal(sluice_limits_need_controllers(&l), 0);
}

/* The hybrid layout: what v2 lacks goes to the v1 hierarchy that has it
 * (found by its mount options, "cpu,cpuacct" included); what neither has
 * stays with v2, whose check refuses it. */
static void test_v1_plan(void **state)
{
	struct fake *f = *state;
	struct sluice_limits l = { .memory_bytes = 1 << 30, .pids = 10, .cpu_milli = 500, .timeout_ms = 7 }, v2;
	struct sluice_limits_v1 v1;
	char msg[512];

	put(f->cg2, "cgroup.controllers", "hugetlb\n");
	sluice_limits_v1_plan(&l, f->cg2, f->mounts, &v1, &v2);
	assert_int_equal(v1.n, 2);
	assert_string_equal(v1.controller[0], "memory");
	assert_string_equal(v1.mount[0], "/sys/fs/cgroup/memory");
	assert_string_equal(v1.controller[1], "cpu");
	assert_string_equal(v1.mount[1], "/sys/fs/cgroup/cpu,cpuacct");
	assert_int_equal(v2.memory_bytes, 0);
	assert_int_equal(v2.cpu_milli, 0);
	assert_int_equal(v2.pids, 10);           /* on no hierarchy: */
	assert_int_equal(v2.timeout_ms, 7);
	assert_int_equal(sluice_limits_check(&v2, f->cg2, f->mounts, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "has no pids controller: --pids cannot be enforced"));
	/* the unified layout: nothing for v1 */
	put(f->cg2, "cgroup.controllers", "cpu memory pids\n");
	sluice_limits_v1_plan(&l, f->cg2, f->mounts, &v1, &v2);
	assert_int_equal(v1.n, 0);
	assert_int_equal(v2.memory_bytes, l.memory_bytes);
	assert_int_equal(v2.pids, 10);
	/* nothing made, nothing to remove */
	sluice_limits_v1_remove(&v1);
}

static void test_check_and_apply_unified(void **state)
{
	struct fake *f = *state;
	struct sluice_limits l = { .memory_bytes = 256 << 20, .pids = 64, .cpu_milli = 1500, .timeout_ms = 5000 }, l2;
	char msg[512];

	put(f->cg2, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	assert_int_equal(sluice_limits_check(&l, f->cg2, f->mounts, msg, sizeof(msg)), 0);
	assert_int_equal(sluice_limits_need_controllers(&l), 1);
	/* memory already delegated at the root: left alone; the parent gets it */
	put(f->cg2, "cgroup.subtree_control", "cpu memory\n");
	l2 = (struct sluice_limits){ .memory_bytes = 256 << 20 };
	assert_int_equal(sluice_limits_apply(&l2, f->cg2, f->parent, f->sbx, msg, sizeof(msg)), 0);
	assert_string_equal(get(f->cg2, "cgroup.subtree_control"), "cpu memory\n");
	assert_string_equal(get(f->parent, "cgroup.subtree_control"), "+memory");
	assert_string_equal(get(f->sbx, "memory.max"), "268435456");
	l2 = (struct sluice_limits){ .pids = 64 };
	assert_int_equal(sluice_limits_apply(&l2, f->cg2, f->parent, f->sbx, msg, sizeof(msg)), 0);
	assert_string_equal(get(f->cg2, "cgroup.subtree_control"), "+pids");
	assert_string_equal(get(f->parent, "cgroup.subtree_control"), "+pids");
	assert_string_equal(get(f->sbx, "pids.max"), "64");
	/* all at once (the files keep the last write, as `echo >` does) */
	assert_int_equal(sluice_limits_apply(&l, f->cg2, f->parent, f->sbx, msg, sizeof(msg)), 0);
	assert_string_equal(get(f->sbx, "memory.max"), "268435456");
	assert_string_equal(get(f->sbx, "pids.max"), "64");
	assert_string_equal(get(f->sbx, "cpu.max"), "150000 100000");
	assert_string_equal(get(f->parent, "cgroup.subtree_control"), "+cpu");
	/* a parent outside the mount is refused */
	assert_int_equal(sluice_limits_apply(&l, f->cg2, "/elsewhere/sluice", f->sbx, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "is not under the cgroup v2 mount"));
	/* a cgroup without the file (controller not enabled): a clear error */
	unlink(strcat(strcpy(msg, f->sbx), "/pids.max"));
	assert_int_equal(sluice_limits_apply(&l, f->cg2, f->parent, f->sbx, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "pids.max"));
}

static void test_unreadable_hierarchy(void **state)
{
	struct sluice_limits l = { .pids = 5 };
	char msg[512];

	assert_int_equal(sluice_limits_check(&l, "/nonexistent-cgroup2", NULL, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "--pids cannot be enforced"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_pids),
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_duration),
		cmocka_unit_test_setup_teardown(test_check_hybrid_layout, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_v1_plan, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_check_and_apply_unified, fake_setup, fake_teardown),
		cmocka_unit_test(test_unreadable_hierarchy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
