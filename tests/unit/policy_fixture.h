/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_fixture.h - the policy unit tests' two loaders (cmocka): load()
 * a policy that must parse, bad() one that must fail with a message
 * holding `part` at line:col.  Include after <cmocka.h> and "policy.h".
 */
#ifndef SLUICE_TEST_POLICY_FIXTURE_H
#define SLUICE_TEST_POLICY_FIXTURE_H

#include <string.h>

static struct sluice_policy *load(const char *yaml)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &err) != 0)
		fail_msg("load failed: %s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	return p;
}

static __attribute__((unused)) void bad(const char *yaml, unsigned line, unsigned col, const char *part)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &err) == 0)
		fail_msg("loaded, want error '%s' for:\n%s", part, yaml);
	sluice_policy_error_str(&err, buf, sizeof(buf));
	if (!strstr(err.message, part))
		fail_msg("message '%s' lacks '%s'", buf, part);
	if (err.line != line || err.column != col)
		fail_msg("'%s': want position %u:%u", buf, line, col);
}

#endif
