/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls_ca.h - the sandbox's own certificate authority, held only by the
 * proxy (issue 12; docs/proxy.md, "TLS inspection").
 *
 * The CA itself (sandbox_ca.h) is the sandbox's: the loader makes it once
 * and hands it to every proxy it starts for the sandbox (--ca-fd), so a
 * restarted proxy signs with the CA the workload already trusts; a proxy
 * started without one makes its own (sluice-proxy run by hand, the unit
 * tests).  Two sandboxes never share a CA.  Its key stays in memory: never
 * written to a file or a log.
 *
 * Leaf certificates are minted on demand, for a name the policy inspects
 * only (the caller decides first), short-lived (24 hours), with the CA's
 * key identifier (authorityKeyIdentifier), and kept in a small cache.
 */
#ifndef SLUICE_PROXY_TLS_CA_H
#define SLUICE_PROXY_TLS_CA_H

#include <stddef.h>

#include "policy.h"

struct proxy_ca;
typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

#define PROXY_CA_LEAF_SECONDS   (24 * 3600)   /* a leaf's validity */
#define PROXY_CA_CACHE          256           /* leaves kept */

/*
 * Make the CA for `p` (its inspected names become the permitted subtrees:
 * an exact name "a.example" as "a.example", a wildcard "*.b.example" as
 * ".b.example").  `sandbox` goes into the subject.  Returns NULL when the
 * policy inspects no name (no CA is needed) with *err "" , or on failure
 * with a reason in *err (static text).
 */
struct proxy_ca *proxy_ca_new(const struct sluice_policy *p, const char *sandbox, const char **err);

/* The CA handed over by the loader: `pem` (len bytes, at most
 * SLUICE_CA_PEM_MAX) holds its private key then its certificate
 * (sluice_ca_make()); the caller wipes its copy.  NULL with *err when it is
 * not a key and its certificate. */
struct proxy_ca *proxy_ca_from_pem(const char *pem, size_t len, const char **err);

void proxy_ca_free(struct proxy_ca *ca);

/* The CA certificate (public part only) in PEM, NUL-terminated, owned by
 * the CA; *len (may be NULL) is its length without the NUL. */
const char *proxy_ca_pem(const struct proxy_ca *ca, size_t *len);

/*
 * A leaf certificate for the normalised name `host` (which the caller has
 * checked the policy inspects), from the cache or minted now; NULL on
 * failure.  The certificate and the leaf key (one per CA, also never
 * written anywhere) stay owned by the CA: use them before the next call
 * that may evict (SSL_use_certificate takes its own reference).
 */
X509 *proxy_ca_leaf(struct proxy_ca *ca, const char *host);
EVP_PKEY *proxy_ca_leaf_key(const struct proxy_ca *ca);

/* Leaves minted so far (a cached one is not minted again; for tests). */
unsigned long proxy_ca_minted(const struct proxy_ca *ca);

#endif
