/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy_cred.c - credentials (userspace/lib/policy_cred.c,
 * secrets.c, the digest part of digest.c): parsing and its errors with
 * positions, the header template and secret checks, the digest (covers
 * name, template and entries, never the file or the secret), reading
 * secret files (mode, trailing newline, CR/LF/NUL), the memfd hand-off
 * round trip, placeholders and the header value.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "credentials.h"
#include "policy.h"

#define HEAD "version: 1\nname: t\n"
#define CRED "credentials:\n  - name: model-api\n    file: /etc/x\n    header: \"Authorization: Bearer {secret}\"\n"

#include "policy_fixture.h"

static void test_parse(void **state)
{
	(void)state;
	struct sluice_policy *p = load(HEAD CRED "    env: MODEL_API_KEY\n"
				       "allow:\n  - url: https://api.example.com/v1/\n    methods: [POST]\n"
				       "    credential: model-api\n    why: api\n"
				       "  - url: https://other.example.com/\n    why: other\n");

	assert_int_equal(p->n_credentials, 1);
	assert_string_equal(p->credentials[0].name, "model-api");
	assert_string_equal(p->credentials[0].file, "/etc/x");
	assert_string_equal(p->credentials[0].header_name, "Authorization");
	assert_string_equal(p->credentials[0].env, "MODEL_API_KEY");
	assert_false(p->credentials[0].allow_plain_http);
	assert_string_equal(p->entries[0].credential, "model-api");
	assert_ptr_equal(sluice_entry_credential(p, &p->entries[0]), &p->credentials[0]);
	assert_null(p->entries[1].credential);
	assert_null(sluice_entry_credential(p, &p->entries[1]));
	sluice_policy_free(p);
}

static void test_errors(void **state)
{
	(void)state;
	bad(HEAD CRED "allow:\n  - url: https://a.example.com/\n    credential: nope\n    why: x\n",
	    9, 17, "unknown credential 'nope'");
	bad(HEAD "allow:\n  - url: https://a.example.com/\n    credential: nope\n    why: x\n",
	    5, 17, "no 'credentials:' section");
	bad(HEAD CRED "allow:\n  - host: a.example.com\n    ports: [443]\n    credential: model-api\n    why: x\n",
	    10, 5, "'credential' is not allowed in a host entry");
	bad(HEAD CRED "allow:\n  - cidr: 198.51.100.0/24\n    ports: [443]\n    credential: model-api\n    why: x\n",
	    10, 5, "'credential' is not allowed in a cidr entry");
	bad(HEAD CRED "allow:\n  - url: http://a.example.com/\n    credential: model-api\n    why: x\n",
	    9, 17, "plain http:// entry");
	bad(HEAD "credentials:\n  - name: a\n    header: \"Authorization: Bearer x\"\n",
	    5, 13, "has no {secret}");
	bad(HEAD "credentials:\n  - name: a\n    header: \"Authorization: Bearer {secret}\\r\\nX-Evil: 1\"\n",
	    5, 13, "CR or LF");
	bad(HEAD "credentials:\n  - name: a\n    header: \"Authorization: {secret} {other}\"\n",
	    5, 13, "the only placeholder");
	bad(HEAD "credentials:\n  - name: a\n    header: \"Host: {secret}\"\n", 5, 13, "frames or routes");
	bad(HEAD "credentials:\n  - name: a\n    header: \"Bad Name: {secret}\"\n", 5, 13, "not an HTTP token");
	bad(HEAD "credentials:\n  - name: a\n    header: \"X: {secret}{secret}\"\n", 5, 13, "more than once");
	bad(HEAD "credentials:\n  - name: a\n    header: \"X: {secret}\"\n  - name: a\n    header: \"Y: {secret}\"\n",
	    6, 11, "duplicate credential 'a'");
	bad(HEAD "credentials:\n  - name: a\n    file: relative\n    header: \"X: {secret}\"\n", 5, 11,
	    "absolute path");
	bad(HEAD "credentials:\n  - name: a\n    header: \"X: {secret}\"\n    env: 9BAD\n", 6, 10,
	    "'env' must be a variable name");
	bad(HEAD "credentials:\n  - name: a\n    header: \"X: {secret}\"\n    colour: red\n", 6, 5,
	    "unknown key 'colour' in credential");
	bad(HEAD "credentials:\n  - name: a\n", 4, 5, "needs 'header'");
	bad(HEAD "credentials: {}\n", 3, 14, "'credentials' must be a sequence");
}

static void test_plain_http_allowed(void **state)
{
	(void)state;
	struct sluice_policy *p = load(HEAD "credentials:\n  - name: a\n    header: \"X-Key: {secret}\"\n"
				       "    allow_plain_http: true\n"
				       "allow:\n  - url: http://a.example.com/\n    credential: a\n    why: x\n");
	struct sluice_lint *l = NULL;
	int n = sluice_policy_lint(p, "policies/relays.txt", &l);
	bool seen = false;

	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		if (strcmp(l[i].code_name, "credential-plain-http") == 0)
			seen = true;
	assert_true(seen);
	free(l);
	sluice_policy_free(p);
}

static void test_digest(void **state)
{
	(void)state;
	const char *allow = "allow:\n  - url: https://api.example.com/v1/\n    credential: model-api\n    why: api\n";
	const char *plain = HEAD "allow:\n  - url: https://api.example.com/v1/\n    why: api\n";
	char y[2048];
	struct sluice_policy *a, *b, *c, *d, *e;

	snprintf(y, sizeof(y), "%s%s%s", HEAD, CRED, allow);
	a = load(y);
	/* another secret file: the same digest */
	snprintf(y, sizeof(y), "%scredentials:\n  - name: model-api\n    file: /run/other\n"
		 "    header: \"Authorization: Bearer {secret}\"\n%s", HEAD, allow);
	b = load(y);
	assert_string_equal(a->digest, b->digest);
	/* another template: another digest */
	snprintf(y, sizeof(y), "%scredentials:\n  - name: model-api\n    file: /etc/x\n"
		 "    header: \"X-Api-Key: {secret}\"\n%s", HEAD, allow);
	c = load(y);
	assert_string_not_equal(a->digest, c->digest);
	/* without the credential on the entry: another digest */
	snprintf(y, sizeof(y), "%s%sallow:\n  - url: https://api.example.com/v1/\n    why: api\n", HEAD, CRED);
	d = load(y);
	assert_string_not_equal(a->digest, d->digest);
	/* no credentials at all: the digest of a policy from before them */
	e = load(plain);
	assert_string_not_equal(d->digest, e->digest);
	{
		char *canon = sluice_policy_canonical(a, NULL);

		assert_non_null(strstr(canon, "\"credential\":\"model-api\",\"methods\""));
		assert_non_null(strstr(canon, "\"credentials\":[{\"header\":\"Authorization: Bearer {secret}\",\"name\":\"model-api\"}]"));
		assert_null(strstr(canon, "/etc/x"));
		free(canon);
		canon = sluice_policy_canonical(e, NULL);
		assert_null(strstr(canon, "credential"));
		free(canon);
	}
	sluice_policy_free(a);
	sluice_policy_free(b);
	sluice_policy_free(c);
	sluice_policy_free(d);
	sluice_policy_free(e);
}

static void test_template_and_secret_checks(void **state)
{
	(void)state;
	const char *why = NULL;
	size_t n = 0;

	assert_int_equal(sluice_cred_template_check("Authorization: Bearer {secret}", 30, &n, &why), 0);
	assert_int_equal(n, 13);
	assert_int_equal(sluice_cred_template_check("X: a\nb {secret}", 15, &n, &why), -1);
	assert_int_equal(sluice_cred_template_check(": {secret}", 10, &n, &why), -1);
	assert_int_equal(sluice_cred_template_check("Content-Length: {secret}", 24, &n, &why), -1);
	assert_int_equal(sluice_secret_check("tok", 3, &why), 0);
	assert_int_equal(sluice_secret_check("", 0, &why), -1);
	assert_int_equal(sluice_secret_check("a\rb", 3, &why), -1);
	assert_int_equal(sluice_secret_check("a\nb", 3, &why), -1);
	assert_int_equal(sluice_secret_check("a\0b", 3, &why), -1);
	assert_int_equal(sluice_secret_check("a\x01" "b", 3, &why), -1);
	assert_true(sluice_cred_env_name_ok("MODEL_API_KEY"));
	assert_false(sluice_cred_env_name_ok("A-B"));
	assert_false(sluice_cred_env_name_ok(""));
}

static void write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_secret_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/sluice-cred-XXXXXX", path[128], msg[512], y[1024];
	char *v = NULL;
	size_t len = 0;
	struct sluice_policy *p;
	struct sluice_secrets s;
	struct sluice_policy_error err;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tok", dir);
	write_file(path, "s3cret\n", 7, 0600);
	assert_int_equal(sluice_secret_file_read(path, &v, &len, msg, sizeof(msg)), 0);
	assert_int_equal(len, 6);
	assert_string_equal(v, "s3cret");
	free(v);
	write_file(path, "s3cret\r\n", 8, 0600);
	assert_int_equal(sluice_secret_file_read(path, &v, &len, msg, sizeof(msg)), 0);
	assert_string_equal(v, "s3cret");
	free(v);
	write_file(path, "a\nb\n", 4, 0600);
	assert_int_equal(sluice_secret_file_read(path, &v, &len, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "CR or LF"));
	assert_null(strstr(msg, "a\nb"));
	write_file(path, "\n", 1, 0600);
	assert_int_equal(sluice_secret_file_read(path, &v, &len, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "is empty"));
	write_file(path, "s3cret", 6, 0644);
	assert_int_equal(sluice_secret_file_read(path, &v, &len, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "readable or writable by others"));

	/* load: file:line of the `file:` value, the path named, never the secret */
	write_file(path, "s3cret", 6, 0600);
	snprintf(y, sizeof(y), HEAD "credentials:\n  - name: k\n    file: %s/missing\n    header: \"X: {secret}\"\n", dir);
	p = load(y);
	assert_int_equal(sluice_secrets_load(p, NULL, 0, NULL, &s, &err), -1);
	assert_int_equal(err.line, 5);
	assert_int_equal(err.column, 11);
	assert_non_null(strstr(err.message, "missing"));
	assert_int_equal(s.n, 0);
	/* --secret NAME=FILE wins */
	{
		struct sluice_secret_source src = { "k", path }, unk = { "nope", path };

		assert_int_equal(sluice_secrets_load(p, &src, 1, NULL, &s, &err), 0);
		assert_int_equal(s.n, 1);
		assert_string_equal(s.v[0].value, "s3cret");
		sluice_secrets_clear(&s);
		assert_int_equal(sluice_secrets_load(p, &unk, 1, NULL, &s, &err), -1);
		assert_non_null(strstr(err.message, "--secret nope"));
	}
	/* $CREDENTIALS_DIRECTORY/NAME */
	assert_int_equal(sluice_secrets_load(p, NULL, 0, dir, &s, &err), -1);   /* no dir/k */
	snprintf(path, sizeof(path), "%s/k", dir);
	write_file(path, "fromdir", 7, 0400);
	assert_int_equal(sluice_secrets_load(p, NULL, 0, dir, &s, &err), 0);
	assert_string_equal(s.v[0].value, "fromdir");

	/* placeholders, the memfd round trip, with and without values */
	assert_int_equal(sluice_secrets_placeholders(&s, NULL), 0);
	assert_int_equal(strlen(s.v[0].placeholder), SLUICE_PLACEHOLDER_LEN);
	assert_memory_equal(s.v[0].placeholder, SLUICE_PLACEHOLDER_PREFIX, 19);
	{
		struct sluice_secrets r, q;
		int fd = sluice_secrets_to_memfd(&s, true);

		assert_true(fd >= 0);
		assert_int_equal(sluice_secrets_from_fd(fd, &r), 0);
		assert_int_equal(r.n, 1);
		assert_string_equal(r.v[0].name, "k");
		assert_string_equal(r.v[0].value, "fromdir");
		assert_string_equal(r.v[0].placeholder, s.v[0].placeholder);
		fd = sluice_secrets_to_memfd(&s, false);
		assert_int_equal(sluice_secrets_from_fd(fd, &q), 0);
		assert_null(q.v[0].value);
		assert_string_equal(q.v[0].placeholder, s.v[0].placeholder);
		/* a reload keeps the placeholders */
		memset(r.v[0].placeholder, 0, sizeof(r.v[0].placeholder));
		assert_int_equal(sluice_secrets_placeholders(&r, &q), 0);
		assert_string_equal(r.v[0].placeholder, s.v[0].placeholder);
		{
			char hay[200];
			size_t at = 0;

			snprintf(hay, sizeof(hay), "GET /x?k=%s", s.v[0].placeholder);
			assert_ptr_equal(sluice_secrets_find_placeholder(&q, hay, strlen(hay), false), &q.v[0]);
			for (char *c = hay; *c; c++)
				*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
			assert_null(sluice_secrets_find_placeholder(&q, hay, strlen(hay), false));
			assert_ptr_equal(sluice_secrets_find_placeholder(&q, hay, strlen(hay), true), &q.v[0]);
			assert_ptr_equal(sluice_secrets_find_value(&r, "echo fromdir!", 13, &at), &r.v[0]);
			assert_int_equal(at, 5);
			assert_null(sluice_secrets_find_value(&q, "echo fromdir!", 13, &at));
		}
		sluice_secrets_clear(&r);
		sluice_secrets_clear(&q);
		assert_int_equal(r.n, 0);
	}
	{
		size_t n = 0;
		char *h = sluice_cred_header_value(&p->credentials[0], &s.v[0], &n);

		assert_string_equal(h, "fromdir");
		assert_int_equal(n, 7);
		free(h);
	}
	sluice_secrets_clear(&s);
	sluice_policy_free(p);
	assert_int_equal(sluice_secrets_decode("bogus\n", 6, &s), -1);
	assert_int_equal(sluice_secrets_decode("sluice-secrets 1\nk 0a -\n", 24, &s), -1);  /* LF in a secret */
	unlink(path);
	snprintf(path, sizeof(path), "%s/tok", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_plain_http_allowed),
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_template_and_secret_checks),
		cmocka_unit_test(test_secret_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
