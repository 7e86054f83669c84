/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls_ca.c - the sandbox CA and its leaf certificates (tls_ca.h), with
 * OpenSSL 3: EVP_EC_gen for the keys, X509v3 extensions for the
 * constraints and key identifiers, X509_sign with SHA-256.
 */
#include "tls_ca.h"

#include "sandbox_ca.h"

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

struct leaf {
	char *host;
	X509 *cert;
	time_t made;
	unsigned long used;            /* LRU stamp */
};

struct proxy_ca {
	EVP_PKEY *key;                 /* the CA's private key: memory only (the loader's, --ca-fd) */
	EVP_PKEY *leaf_key;            /* one key for every leaf (as sslsplit does): memory only */
	X509 *cert;
	char *pem;
	size_t pem_len;
	struct leaf cache[PROXY_CA_CACHE];
	size_t n_cache;
	unsigned long tick, minted;
};

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

struct proxy_ca *proxy_ca_from_pem(const char *pem, size_t len, const char **err)
{
	struct proxy_ca *ca = calloc(1, sizeof(*ca));
	BIO *b = len <= SLUICE_CA_PEM_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;

	*err = "out of memory";
	if (!ca || !b)
		goto fail;
	ca->key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	ca->cert = ca->key ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	if (!ca->cert || X509_check_private_key(ca->cert, ca->key) != 1) {
		*err = "--ca-fd: not a private key followed by its CA certificate (PEM)";
		goto fail;
	}
	ca->leaf_key = EVP_EC_gen("P-256");
	if (!ca->leaf_key) {
		*err = "cannot generate an ECDSA P-256 key (OpenSSL)";
		goto fail;
	}
	if (make_pem(ca) < 0) {
		*err = "cannot write the CA certificate as PEM";
		goto fail;
	}
	BIO_free(b);
	return ca;
fail:
	BIO_free(b);
	proxy_ca_free(ca);
	return NULL;
}

struct proxy_ca *proxy_ca_new(const struct sluice_policy *p, const char *sandbox, const char **err)
{
	struct proxy_ca *ca;
	char *pem = NULL;
	int rc = sluice_ca_make(p, sandbox, NULL, &pem, err);

	if (rc != 0) {
		if (rc > 0)
			*err = "";
		return NULL;
	}
	ca = proxy_ca_from_pem(pem, strlen(pem), err);
	sluice_ca_pem_free(pem);
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
	if (!X509_set_version(x, 2) || sluice_x509_serial(x) < 0 || sluice_x509_validity(x, PROXY_CA_LEAF_SECONDS) < 0 ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host, -1, -1, 0) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) || !X509_set_pubkey(x, ca->leaf_key) ||
	    sluice_x509_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    sluice_x509_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") < 0 ||
	    sluice_x509_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") < 0 ||
	    sluice_x509_ext(x, ca->cert, NID_subject_alt_name, san) < 0 ||
	    sluice_x509_ext(x, ca->cert, NID_subject_key_identifier, "hash") < 0 ||
	    sluice_x509_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") < 0 ||
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
