/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tls_ca.c - TLS inspection's pure parts: which names and requests the
 * proxy inspects and how it decides them (request.c: proxy_decide_tls,
 * proxy_decide_url with "https", the https target URL and Host), and the
 * sandbox CA (tls_ca.c), checked with OpenSSL's own verifier: its leaves
 * verify for their name, carry its key identifier, and the name
 * constraints make OpenSSL refuse a leaf for any other name even when it
 * is signed with the CA's key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "accesslog.h"
#include "policy.h"
#include "request.h"
#include "sandbox_ca.h"
#include "tls_ca.h"

static const char POLICY[] =
	"version: 1\n"
	"name: unit-tls\n"
	"allow:\n"
	"  - url: https://api.example.com/v1/\n"
	"    why: the API, v1 only\n"
	"  - url: https://api.example.com/upload\n"
	"    methods: [POST]\n"
	"    why: uploads\n"
	"  - host: logged.example.com\n"
	"    ports: [443]\n"
	"    inspect: true\n"
	"    why: any path, logged\n"
	"  - host: \"*.pkg.example.org\"\n"
	"    ports: [8443]\n"
	"    inspect: true\n"
	"    why: mirrors\n"
	"  - host: pass.example.com\n"
	"    ports: [443]\n"
	"    why: passthrough\n"
	"  - url: http://api.example.com/plain/\n"
	"    why: plain http is not inspected\n";

static struct sluice_policy *load(const char *text)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("t.yaml", text, strlen(text), &p, &err) != 0)
		fail_msg("%s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	return p;
}

static int setup(void **state)
{
	*state = load(POLICY);
	return 0;
}

static int teardown(void **state)
{
	sluice_policy_free(*state);
	return 0;
}

/* --- decisions ------------------------------------------------------------ */

static void test_decide_tls(void **state)
{
	const struct sluice_policy *p = *state;
	struct proxy_decision d;

	proxy_decide_tls(p, "API.example.com.", 443, &d);
	assert_true(d.allow && d.inspect);
	assert_string_equal(d.host, "api.example.com");
	assert_string_equal(d.entry->name, "allow[0] url:https://api.example.com/v1/");
	proxy_decide_tls(p, "logged.example.com", 443, &d);
	assert_true(d.allow && d.inspect);
	assert_string_equal(d.entry->name, "allow[2] host:logged.example.com");
	proxy_decide_tls(p, "a.pkg.example.org", 8443, &d);
	assert_true(d.allow && d.inspect);
	/* a passthrough host entry stays one */
	proxy_decide_tls(p, "pass.example.com", 443, &d);
	assert_true(d.allow);
	assert_false(d.inspect);
	/* another port, another name, an IP literal: refused before any certificate */
	proxy_decide_tls(p, "api.example.com", 8443, &d);
	assert_false(d.allow);
	assert_string_equal(d.reason, "host_not_allowed");
	proxy_decide_tls(p, "pkg.example.org", 8443, &d);
	assert_false(d.allow);
	proxy_decide_tls(p, "192.0.2.1", 443, &d);
	assert_false(d.allow);
	assert_string_equal(d.reason, "ip_literal");
	/* plain http url entries do not make TLS to the name allowed */
	proxy_decide_tls(p, "api.example.com", 80, &d);
	assert_false(d.allow);
}

static void test_decide_https_requests(void **state)
{
	const struct sluice_policy *p = *state;
	struct proxy_decision d;

	proxy_decide_url(p, "https", "api.example.com", 443, "GET", "/v1/models", &d);
	assert_true(d.allow);
	assert_string_equal(d.entry->name, "allow[0] url:https://api.example.com/v1/");
	proxy_decide_url(p, "https", "api.example.com", 443, "GET", "/v2/models", &d);
	assert_false(d.allow);
	assert_int_equal(d.status, 403);
	assert_string_equal(d.reason, "path_not_allowed");
	proxy_decide_url(p, "https", "api.example.com", 443, "POST", "/v1/models", &d);
	assert_string_equal(d.reason, "method_not_allowed");   /* GET would pass */
	proxy_decide_url(p, "https", "api.example.com", 443, "GET", "/upload", &d);
	assert_string_equal(d.reason, "method_not_allowed");
	proxy_decide_url(p, "https", "api.example.com", 443, "POST", "/upload/x", &d);
	assert_true(d.allow);
	/* an inspect: true host entry lets any path and method through */
	proxy_decide_url(p, "https", "logged.example.com", 443, "DELETE", "/anything", &d);
	assert_true(d.allow);
	assert_string_equal(d.entry->name, "allow[2] host:logged.example.com");
	/* the https entries are not http entries, and the other way round */
	proxy_decide_url(p, "http", "api.example.com", 80, "GET", "/v1/models", &d);
	assert_false(d.allow);
	proxy_decide_url(p, "https", "api.example.com", 443, "GET", "/plain/x", &d);
	assert_false(d.allow);
	proxy_decide_http(p, "api.example.com", 80, "GET", "/plain/x", &d);
	assert_true(d.allow);
}

static void test_https_target_url_and_host(void **state)
{
	struct proxy_request req;
	struct proxy_target t;
	struct proxy_refusal err;
	struct evbuffer *out = evbuffer_new();
	static const char head[] = "GET /v1/models?x=1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
	char url[256], *s;
	size_t n;

	(void)state;
	memset(&req, 0, sizeof(req));
	assert_int_equal(proxy_request_parse(&req, head, sizeof(head) - 1, &err), 0);
	assert_int_equal(proxy_request_target(&req, PROXY_FORM_TRANSPARENT, 443, &t, &err), 0);
	t.tls = true;
	assert_string_equal(proxy_target_url(&t, "api.example.com", url, sizeof(url)),
			    "https://api.example.com/v1/models?x=1");
	assert_int_equal(proxy_build_request_head(&req, &t, "api.example.com", false, out), 0);
	n = evbuffer_get_length(out);
	s = (char *)evbuffer_pullup(out, -1);
	assert_non_null(memmem(s, n, "\r\nHost: api.example.com\r\n", 25));
	t.port = 8443;
	assert_string_equal(proxy_target_url(&t, "api.example.com", url, sizeof(url)),
			    "https://api.example.com:8443/v1/models?x=1");
	proxy_request_free(&req);
	evbuffer_free(out);
}

/* --- the CA -------------------------------------------------------------- */

static X509 *pem_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	BIO_free(b);
	return x;
}

/* OpenSSL's verdict on `leaf` for `host` with `ca` as the only anchor. */
static int verify(X509 *ca, X509 *leaf, const char *host)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int r;

	X509_STORE_add_cert(st, ca);
	X509_STORE_CTX_init(ctx, st, leaf, NULL);
	X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), host, 0);
	X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(ctx), X509_PURPOSE_SSL_SERVER);
	r = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return r;
}

static void test_ca_constraints_and_leaves(void **state)
{
	const struct sluice_policy *p = *state;
	const char *err = NULL;
	struct proxy_ca *ca = proxy_ca_new(p, "unit", &err), *other;
	X509 *cacert, *leaf, *again;
	NAME_CONSTRAINTS *nc;
	BASIC_CONSTRAINTS *bc;
	const ASN1_OCTET_STRING *ski;
	AUTHORITY_KEYID *aki;
	char names[512] = "";
	int crit = 0;

	assert_non_null(ca);
	cacert = pem_cert(proxy_ca_pem(ca, NULL));
	assert_non_null(cacert);
	/* only the certificate crosses: no key in the PEM */
	assert_null(strstr(proxy_ca_pem(ca, NULL), "PRIVATE"));
	assert_int_equal(EVP_PKEY_get_base_id(X509_get0_pubkey(cacert)), EVP_PKEY_EC);
	bc = X509_get_ext_d2i(cacert, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_true(bc->ca && crit);
	BASIC_CONSTRAINTS_free(bc);
	/* permitted subtrees: exactly the inspected names, critical */
	nc = X509_get_ext_d2i(cacert, NID_name_constraints, &crit, NULL);
	assert_non_null(nc);
	assert_true(crit);
	assert_null(nc->excludedSubtrees);
	for (int i = 0; i < sk_GENERAL_SUBTREE_num(nc->permittedSubtrees); i++) {
		const GENERAL_SUBTREE *st = sk_GENERAL_SUBTREE_value(nc->permittedSubtrees, i);

		assert_int_equal(st->base->type, GEN_DNS);
		strncat(names, (const char *)st->base->d.dNSName->data, sizeof(names) - strlen(names) - 2);
		strcat(names, " ");
	}
	NAME_CONSTRAINTS_free(nc);
	/* sorted (sluice_ca_permitted) */
	assert_string_equal(names, ".pkg.example.org api.example.com logged.example.com ");

	/* leaves: verify for their name, carry the CA's key id, cached */
	leaf = proxy_ca_leaf(ca, "api.example.com");
	assert_non_null(leaf);
	assert_int_equal(verify(cacert, leaf, "api.example.com"), X509_V_OK);
	assert_int_equal(verify(cacert, leaf, "other.example.com"), X509_V_ERR_HOSTNAME_MISMATCH);
	ski = X509_get0_subject_key_id(cacert);
	aki = X509_get_ext_d2i(leaf, NID_authority_key_identifier, NULL, NULL);
	assert_non_null(ski);
	assert_non_null(aki);
	assert_int_equal(ASN1_OCTET_STRING_cmp(ski, aki->keyid), 0);
	AUTHORITY_KEYID_free(aki);
	{
		/* short-lived: at most a day from now */
		time_t limit = time(NULL) + PROXY_CA_LEAF_SECONDS + 60;

		assert_true(X509_cmp_time(X509_get0_notAfter(leaf), &limit) < 0);
	}
	again = proxy_ca_leaf(ca, "api.example.com");
	assert_ptr_equal(leaf, again);
	assert_int_equal(proxy_ca_minted(ca), 1);
	leaf = proxy_ca_leaf(ca, "a.pkg.example.org");
	assert_int_equal(verify(cacert, leaf, "a.pkg.example.org"), X509_V_OK);
	assert_int_equal(proxy_ca_minted(ca), 2);

	/* the constraints hold against the CA's own key: a leaf for a name
	 * outside them (the proxy never mints one; here it is forced) is
	 * refused by a verifying client */
	leaf = proxy_ca_leaf(ca, "evil.example.net");
	assert_non_null(leaf);
	assert_int_equal(verify(cacert, leaf, "evil.example.net"), X509_V_ERR_PERMITTED_VIOLATION);
	leaf = proxy_ca_leaf(ca, "pkg.example.org");   /* the apex of a wildcard */
	assert_int_equal(verify(cacert, leaf, "pkg.example.org"), X509_V_ERR_PERMITTED_VIOLATION);

	/* another CA (another sandbox): another key; its leaves do not verify here */
	other = proxy_ca_new(p, "unit2", &err);
	assert_non_null(other);
	assert_string_not_equal(proxy_ca_pem(ca, NULL), proxy_ca_pem(other, NULL));
	leaf = proxy_ca_leaf(other, "api.example.com");
	assert_int_not_equal(verify(cacert, leaf, "api.example.com"), X509_V_OK);
	proxy_ca_free(other);
	X509_free(cacert);
	proxy_ca_free(ca);
}

static void test_ca_cache_bounded(void **state)
{
	const char *err = NULL;
	struct proxy_ca *ca;
	char name[64];

	(void)state;
	ca = proxy_ca_new(*state, "unit", &err);
	assert_non_null(ca);
	for (int i = 0; i < PROXY_CA_CACHE + 10; i++) {
		snprintf(name, sizeof(name), "n%d.pkg.example.org", i);
		assert_non_null(proxy_ca_leaf(ca, name));
	}
	assert_int_equal(proxy_ca_minted(ca), PROXY_CA_CACHE + 10);
	/* the first ones were evicted (least recently used), the last kept */
	assert_non_null(proxy_ca_leaf(ca, name));
	assert_int_equal(proxy_ca_minted(ca), PROXY_CA_CACHE + 10);
	assert_non_null(proxy_ca_leaf(ca, "n0.pkg.example.org"));
	assert_int_equal(proxy_ca_minted(ca), PROXY_CA_CACHE + 11);
	assert_null(proxy_ca_leaf(ca, ""));
	proxy_ca_free(ca);
}

static void test_no_inspection_no_ca(void **state)
{
	struct sluice_policy *p = load("version: 1\nname: t\nallow:\n  - host: a.example\n    ports: [443]\n"
				       "    why: passthrough only\n");
	const char *err = "x";

	(void)state;
	assert_null(proxy_ca_new(p, "unit", &err));
	assert_string_equal(err, "");
	sluice_policy_free(p);
}

/* The loader's CA, handed to a proxy: the permitted names sorted and
 * deduplicated; a re-issue keeps the key and subject; a proxy takes only a
 * key with its own certificate. */
static void test_ca_handed_over_and_reissued(void **state)
{
	struct sluice_policy *fewer = load("version: 1\nname: t\nallow:\n  - url: https://b.example/\n    why: b\n"
					   "  - url: https://b.example/x/\n    why: b again\n");
	char *names = sluice_ca_permitted(*state), *pem = NULL, *again = NULL, *mixed;
	const char *err = NULL, *c1, *c2;
	struct proxy_ca *ca;
	X509 *leaf;

	assert_string_equal(names, ".pkg.example.org\napi.example.com\nlogged.example.com\n");
	free(names);
	names = sluice_ca_permitted(fewer);
	assert_string_equal(names, "b.example\n");
	free(names);
	assert_int_equal(sluice_ca_make(*state, "unit", NULL, &pem, &err), 0);
	assert_non_null(strstr(pem, "PRIVATE KEY"));
	c1 = sluice_ca_cert_part(pem);
	assert_non_null(c1);
	assert_null(strstr(c1, "PRIVATE KEY"));
	ca = proxy_ca_from_pem(pem, strlen(pem), &err);
	assert_non_null(ca);
	assert_string_equal(proxy_ca_pem(ca, NULL), c1);
	leaf = proxy_ca_leaf(ca, "api.example.com");
	assert_non_null(leaf);
	proxy_ca_free(ca);
	/* re-issued for other names: the same public key, another certificate */
	assert_int_equal(sluice_ca_make(fewer, "unit", pem, &again, &err), 0);
	c2 = sluice_ca_cert_part(again);
	assert_string_not_equal(c1, c2);
	{
		BIO *b1 = BIO_new_mem_buf(c1, -1), *b2 = BIO_new_mem_buf(c2, -1);
		X509 *x1 = PEM_read_bio_X509(b1, NULL, NULL, NULL), *x2 = PEM_read_bio_X509(b2, NULL, NULL, NULL);

		assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x1), X509_get0_pubkey(x2)), 1);
		assert_int_equal(X509_NAME_cmp(X509_get_subject_name(x1), X509_get_subject_name(x2)), 0);
		X509_free(x1);
		X509_free(x2);
		BIO_free(b1);
		BIO_free(b2);
	}
	/* the key of one CA with the certificate of another: refused */
	{
		char *other = NULL;
		size_t klen;

		assert_int_equal(sluice_ca_make(fewer, "unit", NULL, &other, &err), 0);
		klen = (size_t)(sluice_ca_cert_part(pem) - pem);
		mixed = calloc(1, klen + strlen(sluice_ca_cert_part(other)) + 1);
		memcpy(mixed, pem, klen);
		strcpy(mixed + klen, sluice_ca_cert_part(other));
		assert_null(proxy_ca_from_pem(mixed, strlen(mixed), &err));
		assert_non_null(strstr(err, "--ca-fd"));
		assert_null(proxy_ca_from_pem("garbage", 7, &err));
		free(mixed);
		sluice_ca_pem_free(other);
	}
	/* nothing inspected: no CA */
	{
		struct sluice_policy *none = load("version: 1\nname: t\nallow:\n  - host: a.example\n    ports: [443]\n"
						  "    why: passthrough only\n");
		char *p3 = (char *)"x";

		assert_int_equal(sluice_ca_make(none, "unit", NULL, &p3, &err), 1);
		assert_null(p3);
		sluice_policy_free(none);
	}
	sluice_ca_pem_free(pem);
	sluice_ca_pem_free(again);
	sluice_policy_free(fewer);
}

/* --- the access-log line of an inspected request ------------------------------ */

static void test_log_fields(void **state)
{
	struct proxy_log_rec r;
	char *line;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.action = "proxy-http";
	r.outcome = "success";
	r.reason = "allowed";
	r.verdict = "allow";
	r.url_full = "https://api.example.com/v1/models";
	r.method = "GET";
	r.status = 200;
	r.req_bytes = r.resp_bytes = -1;
	r.orig_dst_mismatch = -1;
	r.inspected = true;
	r.tls_version = "TLSv1.3";
	r.tls_cipher = "TLS_AES_128_GCM_SHA256";
	line = proxy_log_format(&r);
	assert_non_null(line);
	assert_non_null(strstr(line, "\"url.full\":\"https://api.example.com/v1/models\""));
	assert_non_null(strstr(line, "\"sluice.inspected\":true,\"tls.version\":\"TLSv1.3\",\"tls.cipher\":\"TLS_AES_128_GCM_SHA256\""));
	free(line);
	/* a passthrough line carries none of them */
	r.inspected = false;
	line = proxy_log_format(&r);
	assert_null(strstr(line, "inspected"));
	assert_null(strstr(line, "tls.version"));
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_decide_tls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_decide_https_requests, setup, teardown),
		cmocka_unit_test(test_https_target_url_and_host),
		cmocka_unit_test_setup_teardown(test_ca_constraints_and_leaves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ca_cache_bounded, setup, teardown),
		cmocka_unit_test(test_no_inspection_no_ca),
		cmocka_unit_test_setup_teardown(test_ca_handed_over_and_reissued, setup, teardown),
		cmocka_unit_test(test_log_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
