/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sandbox_ca.c - the sandbox CA (sandbox_ca.h), with OpenSSL 3: EVP_EC_gen
 * for the key, X509v3 extensions for the constraints and key identifiers,
 * X509_sign with SHA-256.
 */
#include "sandbox_ca.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

int sluice_x509_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int ok;

	/* RFC 5280 4.1.2.2: positive, at most 20 octets */
	if (RAND_bytes(b, sizeof(b)) != 1)
		return -1;
	b[0] &= 0x7f;
	b[0] |= 0x40;   /* never zero, never negative */
	bn = BN_bin2bn(b, sizeof(b), NULL);
	if (!bn)
		return -1;
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

int sluice_x509_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

int sluice_x509_validity(X509 *x, long seconds)
{
	time_t now = time(NULL);

	if (!X509_time_adj_ex(X509_getm_notBefore(x), 0, -SLUICE_CA_BACKDATE, &now) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), 0, seconds, &now))
		return -1;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *sluice_ca_permitted(const struct sluice_policy *p)
{
	char **names = calloc(p->n_entries ? p->n_entries : 1, sizeof(*names));
	size_t n = 0, len = 1;
	char *out = NULL, *o;

	if (!names)
		return NULL;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];
		char name[SLUICE_HOST_MAX + 2];

		if (e->kind == SLUICE_ENTRY_URL && strcmp(e->url_scheme, "https") == 0)
			snprintf(name, sizeof(name), "%s", e->url_host);
		else if (e->kind == SLUICE_ENTRY_HOST && e->inspect)
			/* RFC 5280: a leading '.' permits names under it only,
			 * as a wildcard entry allows them */
			snprintf(name, sizeof(name), "%s%s", e->wildcard ? "." : "", e->host);
		else
			continue;
		names[n] = strdup(name);
		if (!names[n])
			goto out;
		len += strlen(name) + 1;
		n++;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	out = malloc(len);
	if (!out)
		goto out;
	o = out;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(names[i], names[i - 1]) == 0)
			continue;
		o += sprintf(o, "%s\n", names[i]);
	}
	*o = '\0';
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return out;
}

/* The critical nameConstraints extension from the permitted list (one name
 * per line, at least one).  Returns 0 or -1. */
static int add_name_constraints(X509 *x, const char *permitted)
{
	NAME_CONSTRAINTS *nc = NAME_CONSTRAINTS_new();
	int rc = -1;

	if (!nc)
		return -1;
	nc->permittedSubtrees = sk_GENERAL_SUBTREE_new_null();
	if (!nc->permittedSubtrees)
		goto out;
	for (const char *s = permitted, *nl; *s; s = nl + 1) {
		GENERAL_SUBTREE *st = GENERAL_SUBTREE_new();
		ASN1_IA5STRING *d = ASN1_IA5STRING_new();

		nl = strchr(s, '\n');
		if (!st || !d || !ASN1_STRING_set(d, s, (int)(nl - s))) {
			GENERAL_SUBTREE_free(st);
			ASN1_IA5STRING_free(d);
			goto out;
		}
		GENERAL_NAME_set0_value(st->base, GEN_DNS, d);
		if (!sk_GENERAL_SUBTREE_push(nc->permittedSubtrees, st)) {
			GENERAL_SUBTREE_free(st);
			goto out;
		}
	}
	if (X509_add1_ext_i2d(x, NID_name_constraints, nc, 1, X509V3_ADD_DEFAULT) == 1)
		rc = 0;
out:
	NAME_CONSTRAINTS_free(nc);
	return rc;
}

static X509 *make_cert(EVP_PKEY *key, const char *permitted, const char *sandbox)
{
	X509 *x = X509_new();
	X509_NAME *name;
	char cn[128];

	if (!x)
		return NULL;
	snprintf(cn, sizeof(cn), "sluice sandbox CA %.80s", sandbox ? sandbox : "default");
	name = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) || sluice_x509_serial(x) < 0 || sluice_x509_validity(x, SLUICE_CA_SECONDS) < 0 ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"sluice", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || !X509_set_pubkey(x, key) ||
	    /* a CA for leaves only (pathlen 0), never a server itself */
	    sluice_x509_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    sluice_x509_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    sluice_x509_ext(x, x, NID_subject_key_identifier, "hash") < 0 || add_name_constraints(x, permitted) < 0 ||
	    sluice_x509_ext(x, x, NID_authority_key_identifier, "keyid:always") < 0 || !X509_sign(x, key, EVP_sha256())) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int sluice_ca_make(const struct sluice_policy *p, const char *sandbox, const char *keep, char **pem, const char **err)
{
	char *permitted = sluice_ca_permitted(p), *data;
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	BIO *b = NULL;
	long n;
	int rc = -1;

	*pem = NULL;
	*err = "out of memory";
	if (!permitted)
		return -1;
	if (!permitted[0]) {
		free(permitted);
		*err = "";
		return 1;
	}
	if (keep) {
		b = BIO_new_mem_buf(keep, -1);
		key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
		BIO_free(b);
		b = NULL;
		if (!key) {
			*err = "cannot read the sandbox CA's key back (OpenSSL)";
			goto out;
		}
	} else {
		key = EVP_EC_gen("P-256");
		if (!key) {
			*err = "cannot generate an ECDSA P-256 key (OpenSSL)";
			goto out;
		}
	}
	cert = make_cert(key, permitted, sandbox);
	if (!cert) {
		*err = "cannot make the CA certificate (OpenSSL)";
		goto out;
	}
	b = BIO_new(BIO_s_secmem());
	if (!b || !PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) || !PEM_write_bio_X509(b, cert)) {
		*err = "cannot write the CA as PEM (OpenSSL)";
		goto out;
	}
	n = BIO_get_mem_data(b, &data);
	*pem = n > 0 ? malloc((size_t)n + 1) : NULL;
	if (!*pem)
		goto out;
	memcpy(*pem, data, (size_t)n);
	(*pem)[n] = '\0';
	*err = "";
	rc = 0;
out:
	BIO_free(b);   /* a secure-heap BIO: cleared as it is freed */
	X509_free(cert);
	EVP_PKEY_free(key);
	free(permitted);
	return rc;
}

void sluice_ca_pem_free(char *pem)
{
	if (!pem)
		return;
	OPENSSL_cleanse(pem, strlen(pem));
	free(pem);
}

const char *sluice_ca_cert_part(const char *pem)
{
	return pem ? strstr(pem, "-----BEGIN CERTIFICATE-----") : NULL;
}
