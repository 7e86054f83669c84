/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctl_content.h - a policy crosses the control socket as content, never as
 * a path (docs/daemon.md "Wire format"): `sluice attach` and `sluice
 * reload` read the policy file and what it references (its signature
 * POLICY.sig, the policy's tls.upstream_ca, the credentials' secrets from
 * `--secret NAME=FILE` and `file:`) and send each as a sealed memfd with
 * the request (SCM_RIGHTS); the daemon reads them from there, so it never
 * opens a caller's path (a client's /tmp under the unit's PrivateTmp=, a
 * file that changes between two reads).  Both sides of that contract are
 * here: the request's members and the descriptors' order.
 *
 * Request members (each *_fd an index into the descriptors sent):
 *   "policy_file"      the caller's file name (absolute): errors say "file:line"
 *   "policy_fd"        the policy's bytes
 *   "policy_sig_fd"    the bytes of POLICY.sig; or "policy_sig_error": why none
 *   "upstream_ca_fd"   the text of the policy's tls.upstream_ca; or
 *                      "upstream_ca_error": "file:line:col: tls.upstream_ca: ..."
 *   "secrets_fd"       the secrets read (sluice_secrets_to_memfd() text), with
 *   "secret_from"      {NAME: "secret" (--secret) | "file" (its `file:`)}, and
 *   "secret_errors"    {NAME: "file:line:col: credential 'NAME': ..."} for those
 *                      the client could not read (the daemon's
 *                      $CREDENTIALS_DIRECTORY may still have them)
 * A request with "policy" (a path: an older client) is refused.
 */
#ifndef SLUICE_CTL_CONTENT_H
#define SLUICE_CTL_CONTENT_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "credentials.h"
#include "ctlsrv.h"
#include "policy_sig.h"

/* Descriptors that go with one request (close with ctl_content_fds_close()). */
struct ctl_content_fds {
	int fd[SLUICE_CTL_MAX_FDS];
	unsigned n;
};

/*
 * Client side: read the policy at `path` and what it references, add the
 * members above to `req` and the sealed memfds to *fds.  `secret_args`
 * (n_secret_args of them) are `--secret NAME=FILE` as given.  The policy
 * is parsed here only to find its references: a policy that does not parse
 * is sent all the same (the daemon refuses it, on record).  Returns 0, or
 * -1 with msg (the file cannot be read; a --secret file cannot be read).
 */
int ctl_content_prepare(json_object *req, const char *path, char *const *secret_args, size_t n_secret_args,
			struct ctl_content_fds *fds, char *msg, size_t msglen);

void ctl_content_fds_close(struct ctl_content_fds *fds);

/* What the daemon took from one request (or read from its own files). */
struct daemon_content {
	char file[4096];            /* the policy's name in messages (the caller's file) */
	char *bytes, *sig, *upstream_ca;
	size_t n_bytes, n_sig, n_upstream_ca;
	char sig_error[128];        /* why there is no signature ("" none found) */
	char upstream_ca_error[512];
	bool sent;                  /* from a client (else the daemon read its own files) */
	struct sluice_secrets secrets;   /* sent: the secrets the client read */
	json_object *secret_from, *secret_errors; /* sent: owned references */
};

/*
 * Daemon side: take the content of request `req` from `peer`'s
 * descriptors into *c.  Returns 0, or -1 with msg: an older client's path
 * ("policy"), a descriptor missing, not a sealed memfd, or too large.
 */
int daemon_content_take(json_object *req, const struct ctlsrv_peer *peer, struct daemon_content *c, char *msg,
			size_t msglen);

/*
 * Daemon side: read the content from files of the daemon's own (a policy
 * of its --policy-dir, its state copy): `path`, PATH.sig, and, when
 * `upstream_ca` is true, the tls.upstream_ca the policy names (after
 * daemon_content_load(): call daemon_content_read_refs()).  0 or -1 with msg.
 */
int daemon_content_read(const char *path, struct daemon_content *c, char *msg, size_t msglen);
int daemon_content_read_refs(struct daemon_content *c, const struct sluice_policy *p, char *msg, size_t msglen);

/*
 * Parse c's policy once (signed mode: verify c's signature against
 * `signers`).  Returns 0 with *out and *who, or -1 with msg ("file:line:
 * column: message" of c->file).
 */
int daemon_content_load(const struct daemon_content *c, const struct sluice_signers *signers,
			struct sluice_policy **out, struct sluice_signer *who, char *msg, size_t msglen);

/*
 * The secrets of policy p for a sandbox: per credential, a `--secret`
 * the client sent, else `$CREDENTIALS_DIRECTORY/NAME` (cred_dir, the
 * daemon's), else what the client read from its `file:`; a credential
 * with none of them is an error naming why (file:line of c->file).
 * Returns 0 with *out (placeholders empty), or -1 with msg.
 */
int daemon_content_secrets(const struct daemon_content *c, const struct sluice_policy *p, const char *cred_dir,
			   struct sluice_secrets *out, char *msg, size_t msglen);

/* Wipe and free what c holds. */
void daemon_content_free(struct daemon_content *c);

#endif
