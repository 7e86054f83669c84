/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sandbox_ca.h - the sandbox's own certificate authority for TLS
 * inspection (issue 12; docs/proxy.md, "TLS inspection").
 *
 * The loader (`sluice run`, the daemon) makes it once per sandbox, keeps
 * it in memory for the sandbox's life and hands it to every proxy it
 * starts for that sandbox through a pipe (`sluice-proxy --ca-fd`), so a
 * restarted or reloaded proxy signs with the CA the workload already
 * trusts.  The key is never written to a file or a log.  A fresh ECDSA
 * P-256 key and a self-signed certificate with critical X.509 name
 * constraints (RFC 5280 4.2.1.10): the permitted DNS subtrees are exactly
 * the names the policy inspects, so even a leaked key cannot sign for any
 * other name a verifying client accepts.
 */
#ifndef SLUICE_SANDBOX_CA_H
#define SLUICE_SANDBOX_CA_H

#include "policy.h"

typedef struct x509_st X509;

#define SLUICE_CA_SECONDS  (90 * 24 * 3600) /* longer than any sandbox is expected to run */
#define SLUICE_CA_BACKDATE 300              /* notBefore, for clients whose clock is a little behind */
#define SLUICE_CA_PEM_MAX  (1u << 20)       /* what a proxy reads from --ca-fd */

/*
 * Make the CA of `p` for sandbox `sandbox` (in the subject), with a fresh
 * key, or with the key of `keep` (a pem of an earlier call; NULL: a fresh
 * key): a reload that changes the inspected names re-issues the certificate
 * for the same key and subject, so a workload still trusting the old
 * certificate keeps validating the names both permit.  Returns 0 with
 * *pem set to the private key (PKCS#8 PEM) followed by the certificate
 * (PEM), NUL-terminated, malloc'd: free it with sluice_ca_pem_free(), which
 * wipes it.  Returns 1 with *pem NULL when p inspects no name (no CA is
 * needed), -1 with a static reason in *err on failure.
 */
int sluice_ca_make(const struct sluice_policy *p, const char *sandbox, const char *keep, char **pem, const char **err);

/* Wipe (OPENSSL_cleanse) and free a pem of sluice_ca_make(); NULL is fine. */
void sluice_ca_pem_free(char *pem);

/* The certificate part of such a pem (a pointer into it: the public part,
 * for the workload's trust store), or NULL when it holds none. */
const char *sluice_ca_cert_part(const char *pem);

/*
 * The DNS subtrees the CA of `p` permits, sorted and deduplicated, one per
 * line ("a.example\n.b.example\n"; "" when p inspects nothing): two policies
 * with the same text can share a CA.  malloc'd; NULL when out of memory.
 */
char *sluice_ca_permitted(const struct sluice_policy *p);

/* X.509 pieces shared with the proxy's leaf certificates.  Each returns 0
 * or -1 (OpenSSL failed). */
int sluice_x509_serial(X509 *x);                  /* random positive 127-bit serial */
int sluice_x509_ext(X509 *x, X509 *issuer, int nid, const char *value); /* v3 extension, config syntax */
int sluice_x509_validity(X509 *x, long seconds);  /* now - SLUICE_CA_BACKDATE .. now + seconds */

#endif
