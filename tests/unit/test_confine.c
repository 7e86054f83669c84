/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the options of the sandbox profile and their checks
 * (loader/confine.c: sluice_confine_option, sluice_confine_prepare), and
 * the seccomp baseline table (loader/seccomp_baseline.c).  Pure: prepare reads the
 * environment, the user database and the file system, and changes nothing. */
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

#include "confine.h"
#include "seccomp_baseline.h"

static char tmpdir[64];

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/confine-unit-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	unsetenv("PKEXEC_UID");
	return 0;
}

static int teardown(void **state)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/sub", tmpdir);
	rmdir(p);
	rmdir(tmpdir);
	return 0;
}

/* Prepare with the given options (pairs of SLUICE_OPT_* and argument). */
static int prep(struct sluice_confine *c, char *err, size_t len, int n, ...)
{
	va_list ap;

	sluice_confine_init(c);
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		int opt = va_arg(ap, int);
		const char *arg = va_arg(ap, const char *);

		if (sluice_confine_option(c, opt, arg, err, len) != 0) {
			va_end(ap);
			return -1;
		}
	}
	va_end(ap);
	return sluice_confine_prepare(c, err, len);
}

static void test_default_user_is_nobody(void **state)
{
	struct sluice_confine c;
	char err[512];

	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, tmpdir), 0);
	assert_int_equal(c.uid, 65534);
	assert_int_equal(c.gid, 65534);
	assert_false(c.root);
	assert_string_equal(c.user_source, "default");
	assert_string_equal(c.workdir, tmpdir);
	sluice_confine_free(&c);
	/* a $HOME in a system directory is not covered (it would hide the system) */
	setenv("HOME", "/usr/share", 1);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, tmpdir), 0);
	for (size_t i = 0; i < c.n_hide_home; i++)
		assert_string_not_equal(c.hide_home[i], "/usr/share");
	sluice_confine_free(&c);
	/* an ordinary one is, and becomes the command's $HOME if the user has none */
	setenv("HOME", tmpdir, 1);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, "/"), -1); /* and / as workdir is refused */
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, tmpdir), 0);
	if (access("/nonexistent", F_OK) != 0)
		assert_string_equal(c.home, tmpdir);
	sluice_confine_free(&c);
}

static void test_sudo_user_is_the_default(void **state)
{
	struct sluice_confine c;
	char err[512];

	setenv("SUDO_UID", "4242", 1);
	setenv("SUDO_GID", "4343", 1);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, tmpdir), 0);
	assert_int_equal(c.uid, 4242);
	assert_int_equal(c.gid, 4343);
	assert_string_equal(c.user_source, "SUDO_UID");
	sluice_confine_free(&c);
	/* sudo from root is no user to return to */
	setenv("SUDO_UID", "0", 1);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, tmpdir), 0);
	assert_int_equal(c.uid, 65534);
	sluice_confine_free(&c);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	setenv("PKEXEC_UID", "4444", 1);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, tmpdir), 0);
	assert_int_equal(c.uid, 4444);
	assert_string_equal(c.user_source, "PKEXEC_UID");
	sluice_confine_free(&c);
	unsetenv("PKEXEC_UID");
}

static void test_user_option(void **state)
{
	struct sluice_confine c;
	char err[512];

	assert_int_equal(prep(&c, err, sizeof(err), 2, SLUICE_OPT_WORKDIR, tmpdir, SLUICE_OPT_USER, "root"), 0);
	assert_true(c.root);
	assert_int_equal(c.uid, 0);
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 2, SLUICE_OPT_WORKDIR, tmpdir, SLUICE_OPT_USER, "1234:99"), 0);
	assert_int_equal(c.uid, 1234);
	assert_int_equal(c.gid, 99);
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 2, SLUICE_OPT_WORKDIR, tmpdir, SLUICE_OPT_USER, "root:0"), 0);
	sluice_confine_free(&c);
}

static void test_bad_input(void **state)
{
	static const struct {
		int opt;
		const char *arg;
		const char *want;
	} bad[] = {
		{ SLUICE_OPT_USER, "no-such-user-sluice", "no user" },
		{ SLUICE_OPT_USER, "", "empty" },
		{ SLUICE_OPT_USER, "root:no-such-group-sluice", "no group" },
		{ SLUICE_OPT_USER, "4294967295", "no user" },
		{ SLUICE_OPT_RW, "/", "root" },
		{ SLUICE_OPT_RW, "/etc", "system directory" },
		{ SLUICE_OPT_RW, "/usr/local", "system directory" },
		{ SLUICE_OPT_RW, "/lib", "system directory" },
		{ SLUICE_OPT_RW, "/proc/self", "system directory" },
		{ SLUICE_OPT_RW, "/tmp/../etc", ".." },
		{ SLUICE_OPT_RO, "..", ".." },
		{ SLUICE_OPT_RO, "/nonexistent-sluice", "No such file" },
		{ SLUICE_OPT_HIDE, "/", "nothing would be left" },
		{ SLUICE_OPT_HIDE, "", "empty" },
	};
	struct sluice_confine c;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (prep(&c, err, sizeof(err), 2, SLUICE_OPT_WORKDIR, tmpdir, bad[i].opt, bad[i].arg) == 0)
			fail_msg("option %#x '%s' accepted", bad[i].opt, bad[i].arg);
		if (!strstr(err, bad[i].want))
			fail_msg("option %#x '%s': '%s' does not say '%s'", bad[i].opt, bad[i].arg, err, bad[i].want);
		sluice_confine_free(&c);
	}
	/* the workdir */
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, "/"), -1);
	assert_non_null(strstr(err, "root"));
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, "/etc"), -1);
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, "/etc/passwd"), -1);
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 1, SLUICE_OPT_WORKDIR, "/nonexistent-sluice"), -1);
	sluice_confine_free(&c);
	/* --force-rw lets a system directory through, never / */
	assert_int_equal(prep(&c, err, sizeof(err), 3, SLUICE_OPT_WORKDIR, tmpdir, SLUICE_OPT_RW, "/usr/local",
			      SLUICE_OPT_FORCE_RW, ""), 0);
	assert_string_equal(c.rw[0], "/usr/local");
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 3, SLUICE_OPT_WORKDIR, tmpdir, SLUICE_OPT_RW, "/",
			      SLUICE_OPT_FORCE_RW, ""), -1);
	sluice_confine_free(&c);
	/* --keep-caps is root's */
	sluice_confine_init(&c);
	c.keep_caps = true;
	assert_int_equal(sluice_confine_option(&c, SLUICE_OPT_WORKDIR, tmpdir, err, sizeof(err)), 0);
	assert_int_equal(sluice_confine_prepare(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--user root"));
	sluice_confine_free(&c);
}

static void test_names_with_dots_are_not_dotdot(void **state)
{
	struct sluice_confine c;
	char err[512], sub[128];

	/* "..." and "a..b" are names, not the parent */
	snprintf(sub, sizeof(sub), "%s/sub", tmpdir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(prep(&c, err, sizeof(err), 2, SLUICE_OPT_WORKDIR, tmpdir, SLUICE_OPT_RO, sub), 0);
	sluice_confine_free(&c);
	assert_int_equal(prep(&c, err, sizeof(err), 2, SLUICE_OPT_WORKDIR, tmpdir, SLUICE_OPT_RO, "/tmp/..."), -1);
	assert_null(strstr(err, "'..'")); /* refused because it does not exist, not as '..' */
	sluice_confine_free(&c);
}

static void test_profiles(void **state)
{
	struct sluice_confine c;
	char err[512];

	sluice_confine_init(&c);
	assert_int_equal(sluice_confine_option(&c, SLUICE_OPT_PROFILE, "bogus", err, sizeof(err)), -1);
	assert_int_equal(sluice_confine_option(&c, SLUICE_OPT_PROFILE, "egress-only", err, sizeof(err)), 0);
	assert_int_equal(sluice_confine_prepare(&c, err, sizeof(err)), 0);
	assert_true(c.root);
	assert_string_equal(sluice_profile_name(c.profile), "egress-only");
	/* the sandbox's options do not belong to egress-only */
	assert_int_equal(sluice_confine_option(&c, SLUICE_OPT_RW, tmpdir, err, sizeof(err)), 0);
	assert_int_equal(sluice_confine_prepare(&c, err, sizeof(err)), -1);
	sluice_confine_free(&c);
	/* not ours */
	assert_int_equal(sluice_confine_option(&c, 'p', "x", err, sizeof(err)), 1);
	/* the path lists are bounded */
	sluice_confine_init(&c);
	for (int i = 0; i < SLUICE_CONFINE_MAX_PATHS; i++)
		assert_int_equal(sluice_confine_option(&c, SLUICE_OPT_RO, "/", err, sizeof(err)), 0);
	assert_int_equal(sluice_confine_option(&c, SLUICE_OPT_RO, "/", err, sizeof(err)), -1);
}

static void test_seccomp_table(void **state)
{
	static const char *const must[] = {
		"bpf", "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
		"delete_module", "keyctl", "add_key", "request_key", "userfaultfd", "ptrace", "mount", "umount2",
		"pivot_root", "open_tree", "move_mount", "fsopen", "fsmount", "unshare", "clone", "clone3", "personality",
	};

	for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++) {
		bool found = false;

		for (size_t j = 0; j < sluice_seccomp_count(); j++)
			found |= strcmp(sluice_seccomp_name(j), must[i]) == 0;
		if (!found)
			fail_msg("%s is not in the seccomp baseline", must[i]);
	}
	assert_null(sluice_seccomp_name(sluice_seccomp_count()));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_default_user_is_nobody, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sudo_user_is_the_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user_option, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_with_dots_are_not_dotdot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profiles, setup, teardown),
		cmocka_unit_test(test_seccomp_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
