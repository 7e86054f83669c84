/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * upstream_ca.h - the CA certificates the proxy trusts for the origins of
 * inspected names besides the host's trust store: `--upstream-ca FILE` of
 * `sluice run` and `sluice daemon`, and a policy's `tls: {upstream_ca:
 * FILE}` (policy_tls.c).  Read and checked by the loader, handed to the
 * proxy as content (sluice-proxy --upstream-ca-fd).
 */
#ifndef SLUICE_UPSTREAM_CA_H
#define SLUICE_UPSTREAM_CA_H

#include <stddef.h>

#include "policy.h"

typedef struct x509_store_st X509_STORE;

/* The most bytes of one CA file. */
#define SLUICE_UPSTREAM_CA_MAX (1024 * 1024)

/*
 * Read `file` (the option's; NULL: none), then the policy's
 * tls.upstream_ca (p NULL or without one: none); each must hold PEM
 * certificates only, at least one.  On success 0 and *pem the two files'
 * text, NUL-terminated (malloc'd; NULL and *len 0 when there is neither).
 * On failure -1, *pem NULL, and *err "POLICY:LINE:COL: tls.upstream_ca:
 * PATH: why" (the policy's file) or file "--upstream-ca" and the why.
 */
int sluice_upstream_ca_load(const char *file, const struct sluice_policy *p, char **pem, size_t *len,
			    struct sluice_policy_error *err);

/*
 * Add the certificates in `len` bytes of `pem` (PEM, as sluice_upstream_ca_load
 * made it) to `store`.  0, or -1 with a reason in msg (not certificates
 * only, none, or OpenSSL refused one).
 */
int sluice_upstream_ca_add(X509_STORE *store, const char *pem, size_t len, char *msg, size_t msglen);

#endif
