/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls_ca.c - the sandbox CA and its leaf certificates (tls_ca.h), with
 * OpenSSL 3: EVP_EC_gen for the keys, X509v3 extensions for the
 * constraints and key identifiers, X509_sign with SHA-256.
 */
#include "tls_ca.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define CA_SECONDS (90 * 24 * 3600)   /* longer than any sandbox is expected to run */
#define BACKDATE   300                /* notBefore, for clients whose clock is a little behind */

struct leaf {
	char *host;
	X509 *cert;
	time_t made;
	unsigned long used;            /* LRU stamp */
};

struct proxy_ca {
	EVP_PKEY *key;                 /* the CA's private key: memory only */
	EVP_PKEY *leaf_key;            /* one key for every leaf (as sslsplit does): memory only */
	X509 *cert;
	char *pem;
	size_t pem_len;
	struct leaf cache[PROXY_CA_CACHE];
	size_t n_cache;
	unsigned long tick, minted;
};

/* A random positive 127-bit serial (RFC 5280 4.1.2.2: at most 20 octets). */
static int set_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int ok;

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

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
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

static int set_validity(X509 *x, long seconds)
{
	time_t now = time(NULL);

	if (!X509_time_adj_ex(X509_getm_notBefore(x), 0, -BACKDATE, &now) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), 0, seconds, &now))
		return -1;
	return 0;
}

/* Append a permitted DNS subtree `name` to `nc`; skips one already there. */
static int permit(NAME_CONSTRAINTS *nc, const char *name)
{
	GENERAL_SUBTREE *st;
	ASN1_IA5STRING *s;

	for (int i = 0; i < sk_GENERAL_SUBTREE_num(nc->permittedSubtrees); i++) {
		GENERAL_SUBTREE *have = sk_GENERAL_SUBTREE_value(nc->permittedSubtrees, i);
		const ASN1_IA5STRING *d = have->base->d.dNSName;

		if ((size_t)d->length == strlen(name) && memcmp(d->data, name, (size_t)d->length) == 0)
			return 0;
	}
	st = GENERAL_SUBTREE_new();
	s = ASN1_IA5STRING_new();
	if (!st || !s || !ASN1_STRING_set(s, name, (int)strlen(name))) {
		GENERAL_SUBTREE_free(st);
		ASN1_IA5STRING_free(s);
		return -1;
	}
	GENERAL_NAME_set0_value(st->base, GEN_DNS, s);
	if (!sk_GENERAL_SUBTREE_push(nc->permittedSubtrees, st)) {
		GENERAL_SUBTREE_free(st);
		return -1;
	}
	return 0;
}

/* The critical nameConstraints extension: the names `p` inspects.
 * Returns the number of subtrees (0: nothing inspected), or -1. */
static int add_name_constraints(X509 *x, const struct sluice_policy *p)
{
	NAME_CONSTRAINTS *nc = NAME_CONSTRAINTS_new();
	int n, rc = -1;

	if (!nc)
		return -1;
	nc->permittedSubtrees = sk_GENERAL_SUBTREE_new_null();
	if (!nc->permittedSubtrees)
		goto out;
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
		if (permit(nc, name) < 0)
			goto out;
	}
	n = sk_GENERAL_SUBTREE_num(nc->permittedSubtrees);
	if (n == 0) {
		rc = 0;
		goto out;
	}
	if (X509_add1_ext_i2d(x, NID_name_constraints, nc, 1, X509V3_ADD_DEFAULT) != 1)
		goto out;
	rc = n;
out:
	NAME_CONSTRAINTS_free(nc);
	return rc;
}

static int make_ca_cert(struct proxy_ca *ca, const struct sluice_policy *p, const char *sandbox,
			const char **err)
{
	X509 *x = X509_new();
	X509_NAME *name;
	char cn[128];
	int n;

	if (!x)
		goto oom;
	ca->cert = x;
	snprintf(cn, sizeof(cn), "sluice sandbox CA %.80s", sandbox ? sandbox : "default");
	name = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) || set_serial(x) < 0 || set_validity(x, CA_SECONDS) < 0 ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"sluice", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || !X509_set_pubkey(x, ca->key))
		goto oom;
	/* a CA for leaves only (pathlen 0), never a server itself */
	if (add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0)
		goto oom;
	n = add_name_constraints(x, p);
	if (n < 0)
		goto oom;
	if (n == 0) {
		*err = "";
		return -1;
	}
	if (add_ext(x, x, NID_authority_key_identifier, "keyid:always") < 0 ||
	    !X509_sign(x, ca->key, EVP_sha256()))
		goto oom;
	return 0;
oom:
	*err = "cannot make the CA certificate (OpenSSL)";
	return -1;
}

static int make_pem(struct proxy_ca *ca)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long n;

	if (!b || !PEM_write_bio_X509(b, ca->cert)) {
		BIO_free(b);
		return -1;
	}
	n = BIO_get_mem_data(b, &data);
	ca->pem = n > 0 ? malloc((size_t)n + 1) : NULL;
	if (ca->pem) {
		memcpy(ca->pem, data, (size_t)n);
		ca->pem[n] = '\0';
		ca->pem_len = (size_t)n;
	}
	BIO_free(b);
	return ca->pem ? 0 : -1;
}

struct proxy_ca *proxy_ca_new(const struct sluice_policy *p, const char *sandbox, const char **err)
{
	struct proxy_ca *ca;

	*err = "out of memory";
	if (!sluice_policy_has_inspection(p)) {
		*err = "";
		return NULL;
	}
	ca = calloc(1, sizeof(*ca));
	if (!ca)
		return NULL;
	ca->key = EVP_EC_gen("P-256");
	ca->leaf_key = EVP_EC_gen("P-256");
	if (!ca->key || !ca->leaf_key) {
		*err = "cannot generate ECDSA P-256 keys (OpenSSL)";
		proxy_ca_free(ca);
		return NULL;
	}
	if (make_ca_cert(ca, p, sandbox, err) < 0) {
		proxy_ca_free(ca);
		return NULL;
	}
	if (make_pem(ca) < 0) {
		*err = "cannot write the CA certificate as PEM";
		proxy_ca_free(ca);
		return NULL;
	}
	return ca;
}

void proxy_ca_free(struct proxy_ca *ca)
{
	if (!ca)
		return;
	for (size_t i = 0; i < ca->n_cache; i++) {
		free(ca->cache[i].host);
		X509_free(ca->cache[i].cert);
	}
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->cert);
	free(ca->pem);
	free(ca);
}

const char *proxy_ca_pem(const struct proxy_ca *ca, size_t *len)
{
	if (len)
		*len = ca ? ca->pem_len : 0;
	return ca ? ca->pem : NULL;
}

EVP_PKEY *proxy_ca_leaf_key(const struct proxy_ca *ca)
{
	return ca ? ca->leaf_key : NULL;
}

unsigned long proxy_ca_minted(const struct proxy_ca *ca)
{
	return ca ? ca->minted : 0;
}

static X509 *mint(struct proxy_ca *ca, const char *host)
{
	X509 *x = X509_new();
	X509_NAME *name;
	char san[SLUICE_HOST_MAX + 8];

	if (!x)
		return NULL;
	name = X509_get_subject_name(x);
	snprintf(san, sizeof(san), "DNS:%s", host);
	if (!X509_set_version(x, 2) || set_serial(x) < 0 || set_validity(x, PROXY_CA_LEAF_SECONDS) < 0 ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host, -1, -1, 0) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) || !X509_set_pubkey(x, ca->leaf_key) ||
	    add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, ca->cert, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, ca->cert, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") < 0 ||
	    !X509_sign(x, ca->key, EVP_sha256())) {
		X509_free(x);
		return NULL;
	}
	ca->minted++;
	return x;
}

X509 *proxy_ca_leaf(struct proxy_ca *ca, const char *host)
{
	time_t now = time(NULL);
	struct leaf *slot = NULL;
	X509 *x;

	if (!ca || !host || !*host || strlen(host) > SLUICE_HOST_MAX)
		return NULL;
	ca->tick++;
	for (size_t i = 0; i < ca->n_cache; i++) {
		struct leaf *l = &ca->cache[i];

		if (strcmp(l->host, host) != 0)
			continue;
		/* re-minted at half its life: a client never gets one about to expire */
		if (now - l->made < PROXY_CA_LEAF_SECONDS / 2) {
			l->used = ca->tick;
			return l->cert;
		}
		slot = l;
		break;
	}
	x = mint(ca, host);
	if (!x)
		return NULL;
	if (slot) {
		X509_free(slot->cert);   /* the same name, re-minted */
	} else {
		char *h = strdup(host);

		if (!h) {
			X509_free(x);
			return NULL;
		}
		if (ca->n_cache < PROXY_CA_CACHE) {
			slot = &ca->cache[ca->n_cache++];
		} else {
			slot = &ca->cache[0];   /* the least recently used goes */
			for (size_t i = 1; i < ca->n_cache; i++)
				if (ca->cache[i].used < slot->used)
					slot = &ca->cache[i];
			free(slot->host);
			X509_free(slot->cert);
		}
		slot->host = h;
	}
	slot->cert = x;
	slot->made = now;
	slot->used = ca->tick;
	return x;
}
