/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: a policy's content over the control socket, the daemon's side (loader/ctl_content.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "ctl_content.h"

static const char POLICY[] = "version: 1\nname: unit\ncredentials:\n  - name: api\n    file: /nonexistent/api\n"
			     "    header: \"Authorization: Bearer {secret}\"\nallow:\n  - url: https://api.example.com/v1/\n"
			     "    credential: api\n    why: test\n";

/* A request naming descriptor 0 for `key`, and a peer carrying fd. */
static json_object *req_with(const char *key, int fd, struct ctlsrv_peer *peer)
{
	json_object *req = json_object_new_object();

	json_object_object_add(req, "policy_file", json_object_new_string("/home/alice/p.yaml"));
	json_object_object_add(req, key, json_object_new_int(0));
	memset(peer, 0, sizeof(*peer));
	peer->fds[0] = fd;
	peer->n_fds = fd >= 0 ? 1 : 0;
	return req;
}

static void test_sealed_memfd_is_taken(void **state)
{
	struct ctlsrv_peer peer;
	struct daemon_content c;
	struct sluice_policy *p = NULL;
	struct sluice_signer who;
	char msg[1024];
	int fd = sluice_policy_memfd(POLICY, sizeof(POLICY) - 1);
	json_object *req;

	(void)state;
	assert_true(fd >= 0);
	req = req_with("policy_fd", fd, &peer);
	assert_int_equal(daemon_content_take(req, &peer, &c, msg, sizeof(msg)), 0);
	assert_int_equal(c.n_bytes, sizeof(POLICY) - 1);
	assert_memory_equal(c.bytes, POLICY, c.n_bytes);
	assert_int_equal(daemon_content_load(&c, NULL, &p, &who, msg, sizeof(msg)), 0);
	assert_string_equal(p->path, "/home/alice/p.yaml");   /* the caller's name */
	sluice_policy_free(p);
	daemon_content_free(&c);
	json_object_put(req);
	close(fd);
}

static void test_refusals(void **state)
{
	struct ctlsrv_peer peer;
	struct daemon_content c;
	char msg[1024];
	int fd = memfd_create("unsealed", MFD_CLOEXEC);
	json_object *req;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, POLICY, sizeof(POLICY) - 1), (ssize_t)(sizeof(POLICY) - 1));
	/* not sealed: the client could change it while it is read */
	req = req_with("policy_fd", fd, &peer);
	assert_int_equal(daemon_content_take(req, &peer, &c, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "sealed memfd"));
	json_object_put(req);
	/* an index the request did not carry */
	req = req_with("policy_fd", -1, &peer);
	assert_int_equal(daemon_content_take(req, &peer, &c, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "did not carry"));
	json_object_put(req);
	/* an older client's path */
	req = json_object_new_object();
	json_object_object_add(req, "policy", json_object_new_string("/tmp/p.yaml"));
	assert_int_equal(daemon_content_take(req, &peer, &c, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "older sluice client"));
	assert_non_null(strstr(msg, "/tmp/p.yaml"));
	json_object_put(req);
	close(fd);
}

/* The secret of credential api from what the client sent (from: "secret"
 * or "file") and, as the daemon's $CREDENTIALS_DIRECTORY, dir. */
static int secret_of(const char *from, const char *sent, const char *dir, char *out, size_t outlen, char *msg,
		     size_t msglen)
{
	struct daemon_content c;
	struct sluice_policy *p = NULL;
	struct sluice_policy_error perr;
	struct sluice_secrets got;
	int rc;

	memset(&c, 0, sizeof(c));
	c.sent = true;
	snprintf(c.file, sizeof(c.file), "/home/alice/p.yaml");
	assert_int_equal(sluice_policy_load_buffer(c.file, POLICY, sizeof(POLICY) - 1, &p, &perr), 0);
	if (sent) {
		c.secrets.v = calloc(1, sizeof(*c.secrets.v));
		c.secrets.n = 1;
		snprintf(c.secrets.v[0].name, sizeof(c.secrets.v[0].name), "api");
		c.secrets.v[0].value = strdup(sent);
		c.secrets.v[0].len = strlen(sent);
		c.secret_from = json_object_new_object();
		json_object_object_add(c.secret_from, "api", json_object_new_string(from));
	}
	rc = daemon_content_secrets(&c, p, dir, &got, msg, msglen);
	if (rc == 0) {
		assert_int_equal(got.n, 1);
		snprintf(out, outlen, "%s", got.v[0].value);
		sluice_secrets_clear(&got);
	}
	daemon_content_free(&c);
	sluice_policy_free(p);
	return rc;
}

static void test_secret_precedence(void **state)
{
	char dir[] = "/tmp/sluice-unit-credXXXXXX", path[64], got[64], msg[1024];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/api", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("from-cred-dir\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0600), 0);
	/* --secret beats the daemon's credentials directory ... */
	assert_int_equal(secret_of("secret", "from-flag", dir, got, sizeof(got), msg, sizeof(msg)), 0);
	assert_string_equal(got, "from-flag");
	/* ... which beats the policy's file: as the client read it */
	assert_int_equal(secret_of("file", "from-file", dir, got, sizeof(got), msg, sizeof(msg)), 0);
	assert_string_equal(got, "from-cred-dir");
	assert_int_equal(secret_of("file", "from-file", NULL, got, sizeof(got), msg, sizeof(msg)), 0);
	assert_string_equal(got, "from-file");
	/* nothing: the caller's file:line */
	assert_int_equal(secret_of(NULL, NULL, NULL, got, sizeof(got), msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "/home/alice/p.yaml:4:"));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sealed_memfd_is_taken),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_secret_precedence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
