/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_sig.h - signed policies (docs/policy.md "Change control"): a
 * detached SSH signature (ssh-keygen -Y sign, namespace "sluice-policy")
 * over the policy's canonical digest, checked against an OpenSSH
 * allowed-signers file (the format git uses) by `sluice run` and the daemon.
 *
 * What is signed is the text sluice_policy_sig_message() makes of the
 * digest, never the YAML bytes: an edit that keeps the digest (comments,
 * blank lines, key order, quoting) keeps the signature valid; any change of
 * meaning, of `name` or of a `why` changes the digest and breaks it.
 */
#ifndef SLUICE_POLICY_SIG_H
#define SLUICE_POLICY_SIG_H

#include <stddef.h>

#include "evlog.h"
#include "policy.h"

#define SLUICE_SIG_NAMESPACE "sluice-policy"
#define SLUICE_SIG_MAX_BYTES (64u << 10)      /* a .sig file or an allowed-signers file is small */
#define SLUICE_POLICY_MAX_BYTES (64u << 20)   /* the most bytes of one policy file */

/* An allowed-signers file, read once and checked line by line. */
struct sluice_signers {
	char path[4096];
	char *text;               /* the file's bytes, NUL-terminated (malloc'd) */
	size_t len;
	unsigned n_keys;          /* lines that name a key */
};

/* Who signed a policy, as ssh-keygen -Y verify reported it. */
struct sluice_signer {
	char principal[256];      /* the allowed-signers principal, e.g. "alice@example.com" */
	char key[160];            /* "ED25519 SHA256:..." */
};

/*
 * Read and check the allowed-signers file at `path` (ssh-keygen(1) ALLOWED
 * SIGNERS: principals, optional options cert-authority / namespaces="..." /
 * valid-after="..." / valid-before="...", key type, base64 key whose blob
 * names the same type).  A line that does not parse is an error
 * "path:line: message"; so is a file naming no key.  Returns 0 and fills
 * *out (free with sluice_signers_free()), or -1 with msg.
 */
int sluice_signers_load(const char *path, struct sluice_signers *out, char *msg, size_t msglen);
void sluice_signers_free(struct sluice_signers *s);

/* The signed text for a digest (64 lower-case hex): "sluice-policy sha256:HEX\n".
 * Returns its length, or -1 when `len` is too small. */
int sluice_policy_sig_message(const char *digest, char *buf, size_t len);

/* "POLICY.sig" beside `policy_path` into buf.  Returns buf. */
const char *sluice_policy_sig_path(const char *policy_path, char *buf, size_t len);

/*
 * `sluice policy sign`: load the policy at `policy_path` (an invalid policy
 * is never signed: its file:line error in msg), sign its digest message
 * with the SSH key `key` (a private key file, or a public one whose private
 * half is in ssh-agent), and write the signature to POLICY.sig atomically.
 * Returns 0 (digest in digest_out, >= 65 bytes) or -1 with msg.
 */
int sluice_policy_sign(const char *key, const char *policy_path, char *digest_out, char *msg,
		       size_t msglen);

/*
 * Check that `sig` (the bytes of an armoured SSH signature, `sig_name` for
 * messages) is a valid "sluice-policy" signature of p->digest by a key of
 * `signers`.  Returns 0 and fills *who, or -1 with msg ("NAME: ..."): a
 * signature by a key not in the file, over another digest, in another
 * namespace, or unreadable.  Runs ssh-keygen -Y find-principals and
 * -Y verify (OpenSSH 8.2+); their inputs go over inherited descriptors,
 * never through a file someone else could change.
 */
int sluice_policy_verify(const struct sluice_policy *p, const char *sig, size_t sig_len,
			 const char *sig_name, const struct sluice_signers *signers,
			 struct sluice_signer *who, char *msg, size_t msglen);

/*
 * Load the policy at `path` and, when `signers` is not NULL, read
 * PATH.sig and verify it (sluice_policy_verify()).  The policy is parsed
 * from the same bytes that are returned in *bytes (malloc'd, for a copy
 * that provably holds what was verified; may be NULL), and the signature
 * from the bytes in *sig_bytes (may be NULL).  Returns 0 with *out (and
 * *who when signed; who->principal "" when unsigned), or -1 with msg: a
 * policy error as "file:line:column: message", a signature error as
 * "PATH.sig: message".
 */
int sluice_policy_load_checked(const char *path, const struct sluice_signers *signers,
			       struct sluice_policy **out, struct sluice_signer *who, char **bytes,
			       size_t *n_bytes, char **sig_bytes, size_t *n_sig, char *msg, size_t msglen);

/*
 * The same from bytes already read: the policy's `len` bytes of `buf`,
 * named `name` in errors (the caller's file name: "name:line:column:
 * message"), and when `signers` is not NULL its signature `sig` (`slen`
 * bytes; NULL: there was none, `sig_error` says why, "" or NULL: not
 * found), checked as "NAME.sig".  Returns 0 with *out (and *who), or -1
 * with msg; nothing is read from a file.
 */
int sluice_policy_check_bytes(const char *name, const char *buf, size_t len, const char *sig, size_t slen,
			      const char *sig_error, const struct sluice_signers *signers, struct sluice_policy **out,
			      struct sluice_signer *who, char *msg, size_t msglen);

/* Read a whole small file (at most `max` bytes) into a NUL-terminated
 * malloc'd buffer.  Returns 0, or -errno (-EFBIG when larger). */
int sluice_read_small_file(const char *path, size_t max, char **out, size_t *len);

/* The signature fields of a lifecycle line: sluice.policy_signature
 * ("verified" or "unsigned"), and when verified sluice.policy_signer and
 * sluice.policy_signer_key.  `who` NULL or principal "": unsigned. */
void sluice_signer_fields(struct sluice_line *l, const struct sluice_signer *who);

/* A sealed memfd (no write, grow, shrink) holding `bytes`: what the
 * children read as /dev/fd/N (sluice_child_opts.policy_fd).  Returns the
 * descriptor (O_CLOEXEC) or -errno. */
int sluice_policy_memfd(const char *bytes, size_t len);

#endif
