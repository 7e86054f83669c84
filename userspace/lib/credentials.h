/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * credentials.h - secrets kept outside the sandbox (docs/policy.md
 * "Credentials"): the template and name checks of the policy's
 * `credentials:` (policy_cred.c), and the secrets themselves (secrets.c):
 * read by the loader (root) from their files, handed to the proxy as
 * content over an inherited memfd, never written anywhere else.
 */
#ifndef SLUICE_CREDENTIALS_H
#define SLUICE_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

#define SLUICE_CRED_NAME_MAX   64
#define SLUICE_SECRET_MAX      16384      /* bytes of one secret file */
#define SLUICE_SECRET_ARGS_MAX 16         /* --secret options of one command */
/* "sluice-placeholder-" and 32 lower-case hex digits (16 random bytes):
 * one DNS label (at most 63), any header value, any URL. */
#define SLUICE_PLACEHOLDER_PREFIX "sluice-placeholder-"
#define SLUICE_PLACEHOLDER_LEN    (19 + 32)

/* policy_cred.c ------------------------------------------------------------ */

/*
 * Check a header template ("Authorization: Bearer {secret}", `len` bytes):
 * one line (no CR, LF or other control byte), an RFC 9110 token as the
 * field name, not a framing or routing field (Host, Content-Length,
 * Transfer-Encoding, Connection, ...), exactly one "{secret}" in the value
 * and no other braces.  Returns 0 and the field name's length in
 * *name_len, or -1 with a static reason in *why.
 */
int sluice_cred_template_check(const char *t, size_t len, size_t *name_len, const char **why);

/* Is `s` a usable environment variable name ([A-Za-z_][A-Za-z0-9_]*)? */
bool sluice_cred_env_name_ok(const char *s);

/* The credential the url entry `e` of `p` carries, or NULL. */
const struct sluice_credential *sluice_entry_credential(const struct sluice_policy *p,
							const struct sluice_entry *e);

/* secrets.c ------------------------------------------------------------------ */

struct sluice_secret {
	char name[SLUICE_CRED_NAME_MAX + 1];
	char *value;              /* the secret (malloc'd, NUL-terminated); NULL in a
				   * placeholders-only set (the resolver's) */
	size_t len;
	char placeholder[SLUICE_PLACEHOLDER_LEN + 1];  /* "" until made */
};

struct sluice_secrets {
	struct sluice_secret *v;
	size_t n;
};

/* `--secret NAME=FILE`: where NAME's secret comes from instead. */
struct sluice_secret_source {
	const char *name;
	const char *file;
};

/* Parse "NAME=FILE" (`--secret`) into *out (pointing into `arg`, which
 * must stay; the '=' is overwritten).  0, or -1 when it is not NAME=/path. */
int sluice_secret_source_parse(char *arg, struct sluice_secret_source *out);

/*
 * Check secret bytes: not empty, at most SLUICE_SECRET_MAX, no CR, LF, NUL
 * or other control byte (it goes into a header line).  0, or -1 with a
 * static reason in *why.
 */
int sluice_secret_check(const char *s, size_t len, const char **why);

/*
 * Read one secret file: a regular file (symlinks are not followed), not
 * readable or writable by others, at most SLUICE_SECRET_MAX bytes; one
 * trailing "\n" (or "\r\n") is dropped, then sluice_secret_check().  Returns 0
 * with a malloc'd NUL-terminated *out (*len bytes; wipe with
 * OPENSSL_cleanse before freeing), or -1 with msg (names the path, never
 * the content).
 */
int sluice_secret_file_read(const char *path, char **out, size_t *len, char *msg, size_t msglen);

/*
 * Read the secret of every credential of `p`: from `--secret NAME=FILE`
 * in `src` (n_src of them) first, else `$CREDENTIALS_DIRECTORY/NAME` when
 * `cred_dir` is non-NULL and that file exists, else the credential's
 * `file:`.  On success returns 0 and fills *out (placeholders empty); on
 * failure -1 with *err as "policy-file:line:column: credential 'NAME':
 * ..." naming the path, and *out empty.  A --secret for a name the policy
 * does not have is an error too.
 */
int sluice_secrets_load(const struct sluice_policy *p, const struct sluice_secret_source *src,
			size_t n_src, const char *cred_dir, struct sluice_secrets *out,
			struct sluice_policy_error *err);

/* Give every secret without one a random placeholder (RAND_bytes); those
 * whose name is in `keep` take keep's (a reload keeps the sandbox's
 * placeholders).  0, or -1 when the random source fails. */
int sluice_secrets_placeholders(struct sluice_secrets *s, const struct sluice_secrets *keep);

/* The secret named `name`, or NULL. */
const struct sluice_secret *sluice_secrets_find(const struct sluice_secrets *s, const char *name);

/*
 * Serialise to an anonymous memory file (memfd, sealed, not CLOEXEC-free:
 * the caller clears FD_CLOEXEC in the child) to hand to the proxy
 * (`with_values`) or the resolver (placeholders only).  Returns the fd, or
 * -errno.  The text is "sluice-secrets 1\n" then per secret
 * "NAME HEX(secret)|- PLACEHOLDER\n".
 */
int sluice_secrets_to_memfd(const struct sluice_secrets *s, bool with_values);

/* Parse what sluice_secrets_to_memfd() wrote (`len` bytes).  0, or -1 on
 * malformed text (nothing kept). */
int sluice_secrets_decode(const char *buf, size_t len, struct sluice_secrets *out);

/* Read fd to its end (at most 1 MiB), decode, wipe the buffer, close fd. */
int sluice_secrets_from_fd(int fd, struct sluice_secrets *out);

/* Wipe (OPENSSL_cleanse) and free every secret; *s becomes empty. */
void sluice_secrets_clear(struct sluice_secrets *s);

/*
 * The header line's value for credential `cr` with secret `s`: the part
 * of the template after "Name:" (leading blanks dropped) with {secret}
 * replaced.  Returns a malloc'd NUL-terminated string (*len bytes; wipe
 * it), or NULL when out of memory.
 */
char *sluice_cred_header_value(const struct sluice_credential *cr, const struct sluice_secret *s,
			       size_t *len);

/*
 * Find any placeholder of `s` in `len` bytes of `data` (case-insensitive
 * when `nocase`, as for DNS names).  Returns the secret whose placeholder
 * occurs, or NULL.
 */
const struct sluice_secret *sluice_secrets_find_placeholder(const struct sluice_secrets *s,
							    const char *data, size_t len, bool nocase);

/* Find any secret value of `s` in `len` bytes of `data`: the secret, or NULL;
 * *at its offset. */
const struct sluice_secret *sluice_secrets_find_value(const struct sluice_secrets *s,
						      const char *data, size_t len, size_t *at);

#endif /* SLUICE_CREDENTIALS_H */
