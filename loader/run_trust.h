/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_trust.h - making a `sluice run` sandbox trust its own CA (issue 12,
 * docs/proxy.md "TLS inspection").
 *
 * The loader makes the run's CA (sandbox_ca.h; its key goes to the proxies
 * only, through a pipe) and builds a bundle in memory: the host's roots
 * plus the CA certificate (public part).  In
 * the sandbox's own mount namespace it becomes a file on a private tmpfs
 * (never on the host's disk; the kernel does not bind-mount memfds), bound
 * read-only over the system bundle (/etc/ssl/certs/ca-certificates.crt,
 * and the other usual paths where they exist), and SSL_CERT_FILE,
 * REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS, GIT_SSL_CAINFO
 * and PIP_CERT name it, so clients trust inspected names with no flag of
 * their own.
 */
#ifndef SLUICE_RUN_TRUST_H
#define SLUICE_RUN_TRUST_H

#include <stddef.h>

#define SLUICE_TRUST_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct sluice_trust {
	char *bundle;             /* the host's roots + the sandbox CA (PEM); NULL: no CA, nothing to do */
	size_t len;
};

/*
 * Build the bundle from the host's SLUICE_TRUST_BUNDLE and `ca_pem` (the
 * sandbox CA certificate; NULL: the policy inspects nothing, and t stays
 * empty).  Returns 0, or -1 with msg (the host has no bundle to extend, or
 * memory is short).
 */
int sluice_trust_prepare(struct sluice_trust *t, const char *ca_pem, char *msg, size_t msglen);

/*
 * In the sandbox's child, after it made its own private mount namespace:
 * bind the bundle over the system bundle paths (read-only) and set the
 * environment variables.  Returns 0 (also when t is empty), or -1 with msg.
 */
int sluice_trust_enter(const struct sluice_trust *t, char *msg, size_t msglen);

/* Free the bundle.  Idempotent. */
void sluice_trust_free(struct sluice_trust *t);

/* The variables sluice_trust_enter() sets (SSL_CERT_FILE, ...): n of them. */
const char *const *sluice_trust_env_names(size_t *n);

#endif
