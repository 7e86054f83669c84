/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_run_env.c - CMD's environment under `sluice run` (loader/run_env.c):
 * which names look like secrets, --env parsing, and the environment built
 * from a given one (minimal set, kept names, --env NAME and NAME=VALUE,
 * --inherit-env), and the names listed in the start line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run_env.h"

extern char **environ;

static bool has(char **env, const char *entry)
{
	for (size_t i = 0; env[i]; i++)
		if (strcmp(env[i], entry) == 0)
			return true;
	return false;
}

static size_t count(char **env)
{
	size_t n = 0;

	while (env[n])
		n++;
	return n;
}

static void test_looks_secret(void **state)
{
	(void)state;
	const char *yes[] = { "GITHUB_TOKEN", "OPENAI_API_KEY", "MY_SECRET", "DB_PASSWORD", "AWS_REGION",
			      "aws_access_key_id", "NPM_TOKEN=x", "SSH_PASSWD", "GOOGLE_CREDENTIALS", NULL };
	const char *no[] = { "PATH", "HOME", "LANG", "CI", "BUILD_ID", "KEYBOARD", NULL };

	for (size_t i = 0; yes[i]; i++)
		if (!sluice_env_looks_secret(yes[i]))
			fail_msg("%s should look like a secret", yes[i]);
	for (size_t i = 0; no[i]; i++)
		if (sluice_env_looks_secret(no[i]))
			fail_msg("%s should not look like a secret", no[i]);
}

static void test_add(void **state)
{
	(void)state;
	struct sluice_run_env e = { .inherit = false };
	char msg[256];

	assert_int_equal(sluice_run_env_add(&e, "CI", msg, sizeof(msg)), 0);
	assert_int_equal(sluice_run_env_add(&e, "A=1", msg, sizeof(msg)), 0);
	assert_int_equal(sluice_run_env_add(&e, "GITHUB_TOKEN", msg, sizeof(msg)), 1);
	assert_int_equal(sluice_run_env_add(&e, "A-B=1", msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "not a variable name"));
	assert_int_equal(sluice_run_env_add(&e, "=x", msg, sizeof(msg)), -1);
	assert_int_equal(sluice_run_env_add(&e, "9X", msg, sizeof(msg)), -1);
	assert_int_equal(e.n, 3);
	sluice_run_env_names_json(&e, msg, sizeof(msg));
	assert_string_equal(msg, "[\"CI\",\"A\",\"GITHUB_TOKEN\"]");
}

static void test_build(void **state)
{
	(void)state;
	char *host[] = { "PATH=/bin", "HOME=/h", "LC_ALL=C", "TZ=UTC", "HOST_TOKEN=t0p", "CI=1", "A=old",
			 "SSL_CERT_FILE=/x", "OTHER=o", NULL };
	char **saved = environ, **env;
	struct sluice_run_env e = { .inherit = false };
	char msg[128];

	environ = host;
	sluice_run_env_add(&e, "CI", msg, sizeof(msg));
	sluice_run_env_add(&e, "A=new", msg, sizeof(msg));
	sluice_run_env_add(&e, "B=1", msg, sizeof(msg));
	sluice_run_env_add(&e, "B=2", msg, sizeof(msg));
	sluice_run_env_add(&e, "ABSENT", msg, sizeof(msg));
	sluice_run_env_keep(&e, "SSL_CERT_FILE");
	env = sluice_run_env_build(&e);
	environ = saved;
	assert_non_null(env);
	assert_true(has(env, "PATH=/bin") && has(env, "HOME=/h") && has(env, "LC_ALL=C") && has(env, "TZ=UTC"));
	assert_true(has(env, "CI=1") && has(env, "A=new") && has(env, "B=2") && has(env, "SSL_CERT_FILE=/x"));
	assert_false(has(env, "HOST_TOKEN=t0p") || has(env, "OTHER=o") || has(env, "A=old") || has(env, "B=1"));
	assert_int_equal(count(env), 8);
	free(env);

	e.inherit = true;
	environ = host;
	env = sluice_run_env_build(&e);
	environ = saved;
	assert_true(has(env, "HOST_TOKEN=t0p") && has(env, "OTHER=o") && has(env, "A=new"));
	assert_false(has(env, "A=old"));
	free(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_looks_secret),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_build),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
