/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: what `sluice oci-hook` decides from an OCI state
 * (loader/oci_hook.c): policy names, never paths; stages; annotations;
 * and how a name resolves in the policy directory (loader/policy_ref.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "oci_hook.h"
#include "policy_ref.h"

static char dir[64];

static int setup(void **state)
{
	char path[128];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/sluice-oci-unit-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/web.yaml", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("version: 1\nname: web\n", f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/web.yaml", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

static int plan(const char *status, const char *anns, const char *dflt, struct oci_hook_plan *p, char *msg)
{
	char state[2048];
	struct oci_hook_opts o = { .default_policy = dflt };

	snprintf(state, sizeof(state),
		 "{\"ociVersion\":\"1.0.2\",\"id\":\"d5fa3486dd934fca2edfcaacb1752c04\",\"status\":\"%s\",\"pid\":4242,"
		 "\"bundle\":\"/b\",\"annotations\":{%s}}", status, anns);
	return oci_hook_plan(state, strlen(state), &o, p, msg, 512);
}

static void test_attach_by_name(void **state)
{
	struct oci_hook_plan p;
	char msg[512];

	assert_int_equal(plan("creating", "\"io.sluice.policy\":\"web\",\"io.container.manager\":\"libpod\"", NULL, &p, msg), 0);
	assert_int_equal(p.action, OCI_HOOK_ATTACH);
	assert_string_equal(p.name, "d5fa3486dd93");
	assert_string_equal(p.runtime, "podman");
	assert_int_equal(p.pid, 4242);
	assert_string_equal(p.mode, "");
	assert_string_equal(p.policy, "web");
	/* NAME.yaml is NAME; audit; a name of the container's choosing */
	assert_int_equal(plan("creating", "\"io.sluice.policy\":\"web.yaml\",\"io.sluice.mode\":\"audit\","
				      "\"io.sluice.name\":\"agent-1\"", NULL, &p, msg), 0);
	assert_string_equal(p.mode, "audit");
	assert_string_equal(p.name, "agent-1");
	assert_string_equal(p.container_name, "agent-1");
	assert_string_equal(p.runtime, "oci");
	/* the Kubernetes container name, as containerd's CRI annotates it */
	assert_int_equal(plan("created", "\"io.sluice.policy\":\"web\",\"io.kubernetes.cri.container-name\":\"app\"",
			      NULL, &p, msg), 0);
	assert_string_equal(p.container_name, "app");
	assert_string_equal(p.runtime, "containerd");
}

static void test_refusals(void **state)
{
	static const struct {
		const char *anns, *why;
	} bad[] = {
		{ "\"io.sluice.policy\":\"/etc/passwd\"", "is a path" },
		{ "\"io.sluice.policy\":\"../web\"", "is a path" },
		{ "\"io.sluice.policy\":\"..\"", "may only hold" },
		{ "\"io.sluice.policy\":\".web\"", "may only hold" },
		{ "\"io.sluice.policy\":\"\"", "not a policy name" },
		{ "\"io.sluice.policy\":\"a b\"", "may only hold" },
		{ "\"io.sluice.policy\":\"web\",\"io.sluice.mode\":\"off\"", "audit or enforce" },
		{ "\"io.sluice.policy\":\"web\",\"io.sluice.name\":\"a/b\"", "io.sluice.name" },
	};
	struct oci_hook_plan p;
	char msg[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(plan("creating", bad[i].anns, NULL, &p, msg), -1);
		if (!strstr(msg, bad[i].why))
			fail_msg("%s: got '%s', want '%s'", bad[i].anns, msg, bad[i].why);
	}
	/* too late to filter from the first instruction */
	assert_int_equal(plan("running", "\"io.sluice.policy\":\"web\"", NULL, &p, msg), -1);
	assert_non_null(strstr(msg, "too late"));
	/* not a state */
	assert_int_equal(oci_hook_plan("[1]", 3, &(struct oci_hook_opts){ 0 }, &p, msg, sizeof(msg)), -1);
	assert_int_equal(oci_hook_plan("{\"status\":\"creating\"}", 21, &(struct oci_hook_opts){ 0 }, &p, msg,
				       sizeof(msg)), -1);
	assert_non_null(strstr(msg, "no \"id\""));
}

static void test_default_and_poststop(void **state)
{
	struct oci_hook_plan p;
	char msg[512];

	assert_int_equal(plan("creating", "\"x\":\"y\"", NULL, &p, msg), 0);
	assert_int_equal(p.action, OCI_HOOK_NOTHING);
	assert_int_equal(plan("creating", "\"x\":\"y\"", "none", &p, msg), 0);
	assert_int_equal(p.action, OCI_HOOK_NOTHING);
	assert_int_equal(plan("creating", "\"x\":\"y\"", "web", &p, msg), 0);
	assert_int_equal(p.action, OCI_HOOK_ATTACH);
	/* an exempt namespace gets no default, but its annotation still counts */
	{
		static const char *const ex[] = { "kube-system", NULL };
		struct oci_hook_opts o = { .default_policy = "web", .exempt = ex };
		const char *st = "{\"id\":\"abc\",\"status\":\"creating\",\"pid\":7,\"annotations\":"
				 "{\"io.kubernetes.pod.namespace\":\"kube-system\"}}";
		const char *st2 = "{\"id\":\"abc\",\"status\":\"creating\",\"pid\":7,\"annotations\":"
				  "{\"io.kubernetes.cri.sandbox-namespace\":\"kube-system\",\"io.sluice.policy\":\"web\"}}";
		const char *st3 = "{\"id\":\"abc\",\"status\":\"creating\",\"pid\":7,\"annotations\":"
				  "{\"io.kubernetes.pod.namespace\":\"team-a\"}}";

		assert_int_equal(oci_hook_plan(st, strlen(st), &o, &p, msg, sizeof(msg)), 0);
		assert_int_equal(p.action, OCI_HOOK_NOTHING);
		assert_int_equal(oci_hook_plan(st2, strlen(st2), &o, &p, msg, sizeof(msg)), 0);
		assert_int_equal(p.action, OCI_HOOK_ATTACH);
		assert_int_equal(oci_hook_plan(st3, strlen(st3), &o, &p, msg, sizeof(msg)), 0);
		assert_int_equal(p.action, OCI_HOOK_ATTACH);
		assert_string_equal(p.policy, "web");
	}
	/* poststop detaches by the same name, whatever the policy file says now */
	assert_int_equal(plan("stopped", "\"io.sluice.policy\":\"gone-by-now\",\"io.sluice.name\":\"n1\"", NULL, &p, msg), 0);
	assert_int_equal(p.action, OCI_HOOK_DETACH);
	assert_string_equal(p.name, "n1");
}

static void test_policy_ref(void **state)
{
	char path[4096], want[128], msg[512];

	snprintf(want, sizeof(want), "%s/web.yaml", dir);
	assert_int_equal(sluice_policy_ref_resolve(dir, "web", "x", path, sizeof(path), msg, sizeof(msg)), 0);
	assert_string_equal(path, want);
	assert_int_equal(sluice_policy_ref_resolve(dir, "web.yaml", "x", path, sizeof(path), msg, sizeof(msg)), 0);
	assert_string_equal(path, want);
	assert_int_equal(sluice_policy_ref_resolve(dir, "nosuch", "annotation x", path, sizeof(path), msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "policy 'nosuch' (annotation x): "));
	assert_non_null(strstr(msg, "No such file"));
	assert_int_equal(sluice_policy_ref_resolve(dir, want, "x", path, sizeof(path), msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "is a path"));
	assert_int_equal(sluice_policy_ref_resolve(dir, ".yaml", "x", path, sizeof(path), msg, sizeof(msg)), -1);
}

static void test_print_config(void **state)
{
	char *argv[] = { "/usr/bin/sluice", "oci-hook", "--policy-dir", "/p", NULL };
	char *s = oci_hook_config_json(argv, 0);
	json_object *o = json_tokener_parse(s), *v;

	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "version", &v));
	assert_string_equal(json_object_get_string(v), "1.0.0");
	assert_non_null(strstr(s, "\"^io\\\\.sluice\\\\.policy$\":\".+\""));
	assert_non_null(strstr(s, "\"createRuntime\""));
	assert_non_null(strstr(s, "\"poststop\""));
	json_object_put(o);
	free(s);
	s = oci_hook_config_json(argv, 1);
	assert_non_null(strstr(s, "\"always\":true"));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_by_name),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_default_and_poststop),
		cmocka_unit_test(test_policy_ref),
		cmocka_unit_test(test_print_config),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
