/* SPDX-License-Identifier: BSD-2-Clause */
/* ctl_content.c - policies, signatures, CAs and secrets over the control socket as content (ctl_content.h). */
#include "ctl_content.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "policy.h"
#include "upstream_ca.h"

#define SECRETS_SENT_MAX (1u << 20)   /* sluice_secrets_to_memfd() text of at most 64 secrets */

/* ---- client ------------------------------------------------------------- */

/* Put `n` bytes of `buf` in a sealed memfd, sent as req's `key` (its index). */
static int add_bytes(json_object *req, const char *key, const char *buf, size_t n, struct ctl_content_fds *fds,
		     char *msg, size_t msglen)
{
	int fd;

	if (fds->n == SLUICE_CTL_MAX_FDS) {
		snprintf(msg, msglen, "too many descriptors for one request");
		return -1;
	}
	fd = sluice_policy_memfd(buf, n);
	if (fd < 0) {
		snprintf(msg, msglen, "cannot hold %s in a memfd: %s", key, strerror(-fd));
		return -1;
	}
	json_object_object_add(req, key, json_object_new_int((int)fds->n));
	fds->fd[fds->n++] = fd;
	return 0;
}

/* The `--secret NAME=FILE` for credential `name`, or NULL. */
static const char *secret_arg_file(char *const *args, size_t n, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (strncmp(args[i], name, nl) == 0 && args[i][nl] == '=')
			return args[i] + nl + 1;
	return NULL;
}

/* Read the secrets of p's credentials the client can: --secret first,
 * else `file:`; those it cannot read go to secret_errors (the daemon's
 * $CREDENTIALS_DIRECTORY may hold them).  A --secret file that cannot be
 * read, or one for a name p lacks, is the client's error. */
static int add_secrets(json_object *req, const struct sluice_policy *p, char *const *args, size_t n_args,
		       struct ctl_content_fds *fds, char *msg, size_t msglen)
{
	struct sluice_secrets sec = { calloc(p->n_credentials ? p->n_credentials : 1, sizeof(*sec.v)), 0 };
	json_object *from = json_object_new_object(), *errs = json_object_new_object();
	int rc = -1;

	if (!sec.v) {
		snprintf(msg, msglen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n_args; i++) {
		const char *eq = strchr(args[i], '=');
		bool known = false;

		for (size_t j = 0; eq && j < p->n_credentials; j++)
			known |= strlen(p->credentials[j].name) == (size_t)(eq - args[i]) &&
				 strncmp(p->credentials[j].name, args[i], (size_t)(eq - args[i])) == 0;
		if (!known) {
			snprintf(msg, msglen, "%s: --secret %.*s: the policy has no credential of that name", p->path,
				 eq ? (int)(eq - args[i]) : 0, args[i]);
			goto out;
		}
	}
	for (size_t j = 0; j < p->n_credentials; j++) {
		const struct sluice_credential *cr = &p->credentials[j];
		const char *arg = secret_arg_file(args, n_args, cr->name), *path = arg ? arg : cr->file;
		struct sluice_secret *s = &sec.v[sec.n];
		char why[512], e[1024];

		if (!path)
			continue;
		if (sluice_secret_file_read(path, &s->value, &s->len, why, sizeof(why)) < 0) {
			/* the daemon refuses with it, on record, unless (from `file:`)
			 * its $CREDENTIALS_DIRECTORY has the secret */
			if (arg)
				snprintf(e, sizeof(e), "%s: credential '%s': --secret: %s", p->path, cr->name, why);
			else
				snprintf(e, sizeof(e), "%s:%u:%u: credential '%s': %s", p->path, cr->file_line,
					 cr->file_column, cr->name, why);
			json_object_object_add(errs, cr->name, json_object_new_string(e));
			if (arg)
				json_object_object_add(from, cr->name, json_object_new_string("secret"));
			continue;
		}
		snprintf(s->name, sizeof(s->name), "%s", cr->name);
		sec.n++;
		json_object_object_add(from, cr->name, json_object_new_string(arg ? "secret" : "file"));
	}
	if (sec.n) {
		int fd;

		if (fds->n == SLUICE_CTL_MAX_FDS) {
			snprintf(msg, msglen, "too many descriptors for one request");
			goto out;
		}
		fd = sluice_secrets_to_memfd(&sec, true);
		if (fd < 0) {
			snprintf(msg, msglen, "cannot hold the secrets in a memfd: %s", strerror(-fd));
			goto out;
		}
		json_object_object_add(req, "secrets_fd", json_object_new_int((int)fds->n));
		fds->fd[fds->n++] = fd;
	}
	json_object_object_add(req, "secret_from", json_object_get(from));
	json_object_object_add(req, "secret_errors", json_object_get(errs));
	rc = 0;
out:
	sluice_secrets_clear(&sec);
	json_object_put(from);
	json_object_put(errs);
	return rc;
}

int ctl_content_prepare(json_object *req, const char *path, char *const *secret_args, size_t n_secret_args,
			struct ctl_content_fds *fds, char *msg, size_t msglen)
{
	char abs[PATH_MAX], sigpath[PATH_MAX + 8], *buf = NULL, *sig = NULL;
	size_t len = 0, slen = 0;
	struct sluice_policy *p = NULL;
	struct sluice_policy_error perr;
	int err, rc = -1;

	if (!realpath(path, abs)) {
		snprintf(msg, msglen, "%s: %s", path, strerror(errno));
		return -1;
	}
	err = sluice_read_small_file(abs, SLUICE_POLICY_MAX_BYTES, &buf, &len);
	if (err) {
		snprintf(msg, msglen, "%s: %s", abs, err == -EFBIG ? "policy too large" : strerror(-err));
		return -1;
	}
	json_object_object_add(req, "policy_file", json_object_new_string(abs));
	if (add_bytes(req, "policy_fd", buf, len, fds, msg, msglen) < 0)
		goto out;
	sluice_policy_sig_path(abs, sigpath, sizeof(sigpath));
	err = sluice_read_small_file(sigpath, SLUICE_SIG_MAX_BYTES, &sig, &slen);
	if (err == 0 && add_bytes(req, "policy_sig_fd", sig, slen, fds, msg, msglen) < 0)
		goto out;
	if (err && err != -ENOENT)
		json_object_object_add(req, "policy_sig_error",
				       json_object_new_string(err == -EFBIG ? "larger than 64 KiB" : strerror(-err)));
	if (sluice_policy_load_buffer(abs, buf, len, &p, &perr) < 0) {
		rc = 0;   /* the daemon says why, on record */
		goto out;
	}
	if (p->tls.upstream_ca) {
		char *pem = NULL;
		size_t n = 0;

		if (sluice_upstream_ca_load(NULL, p, &pem, &n, &perr) < 0) {
			char e[1024];

			json_object_object_add(req, "upstream_ca_error",
					       json_object_new_string(sluice_policy_error_str(&perr, e, sizeof(e))));
		} else if (add_bytes(req, "upstream_ca_fd", pem, n, fds, msg, msglen) < 0) {
			free(pem);
			goto out;
		}
		free(pem);
	}
	if ((p->n_credentials || n_secret_args) && add_secrets(req, p, secret_args, n_secret_args, fds, msg, msglen) < 0)
		goto out;
	rc = 0;
out:
	if (p)
		sluice_policy_free(p);
	free(buf);
	free(sig);
	if (rc < 0)
		ctl_content_fds_close(fds);
	return rc;
}

void ctl_content_fds_close(struct ctl_content_fds *fds)
{
	for (unsigned i = 0; i < fds->n; i++)
		close(fds->fd[i]);
	fds->n = 0;
}

/* ---- daemon ------------------------------------------------------------- */

/*
 * The bytes of the descriptor req's `key` names (absent: 0 and *out NULL):
 * a memfd sealed against writes, growing and shrinking, so what is read
 * here is what the client read, and stays so; at most `max` bytes.
 */
static int take_bytes(json_object *req, const char *key, const struct ctlsrv_peer *peer, size_t max, char **out,
		      size_t *n, char *msg, size_t msglen)
{
	const int want = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK;
	json_object *v;
	struct stat st;
	int i, fd, seals;
	char *buf;
	size_t got = 0;

	*out = NULL;
	*n = 0;
	if (!json_object_object_get_ex(req, key, &v))
		return 0;
	i = json_object_is_type(v, json_type_int) ? json_object_get_int(v) : -1;
	if (!peer || i < 0 || (unsigned)i >= peer->n_fds || peer->fds[i] < 0) {
		snprintf(msg, msglen, "%s: the request names descriptor %d, which it did not carry", key, i);
		return -1;
	}
	fd = peer->fds[i];
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & want) != want || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(msg, msglen, "%s: not a sealed memfd (the content must not change while it is read)", key);
		return -1;
	}
	if ((size_t)st.st_size > max) {
		snprintf(msg, msglen, "%s: %lld bytes, more than %zu", key, (long long)st.st_size, max);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(msg, msglen, "%s: cannot read it: %s", key, r < 0 ? strerror(errno) : "short");
			free(buf);
			return -1;
		}
		got += (size_t)r;
	}
	buf[got] = '\0';
	*out = buf;
	*n = got;
	return 0;
}

int daemon_content_take(json_object *req, const struct ctlsrv_peer *peer, struct daemon_content *c, char *msg,
			size_t msglen)
{
	const char *file = ctlsrv_str(req, "policy_file"), *path = ctlsrv_str(req, "policy");
	char *sec = NULL;
	size_t n_sec = 0;
	json_object *v;

	memset(c, 0, sizeof(*c));
	if (path && !json_object_object_get_ex(req, "policy_fd", &v)) {
		snprintf(msg, msglen, "this daemon takes a policy by content, not by path ('%s'): the request is from "
			 "an older sluice client; use `sluice attach`/`sluice reload` of the daemon's version, "
			 "which sends the file's bytes", path);
		return -1;
	}
	if (!json_object_object_get_ex(req, "policy_fd", &v)) {
		snprintf(msg, msglen, "the request carries no policy (policy_fd)");
		return -1;
	}
	c->sent = true;
	snprintf(c->file, sizeof(c->file), "%s", file && file[0] ? file : "<policy>");
	snprintf(c->sig_error, sizeof(c->sig_error), "%s",
		 ctlsrv_str(req, "policy_sig_error") ? ctlsrv_str(req, "policy_sig_error") : "");
	snprintf(c->upstream_ca_error, sizeof(c->upstream_ca_error), "%s",
		 ctlsrv_str(req, "upstream_ca_error") ? ctlsrv_str(req, "upstream_ca_error") : "");
	if (take_bytes(req, "policy_fd", peer, SLUICE_POLICY_MAX_BYTES, &c->bytes, &c->n_bytes, msg, msglen) < 0 ||
	    take_bytes(req, "policy_sig_fd", peer, SLUICE_SIG_MAX_BYTES, &c->sig, &c->n_sig, msg, msglen) < 0 ||
	    take_bytes(req, "upstream_ca_fd", peer, 2 * SLUICE_UPSTREAM_CA_MAX, &c->upstream_ca, &c->n_upstream_ca, msg,
		       msglen) < 0 ||
	    take_bytes(req, "secrets_fd", peer, SECRETS_SENT_MAX, &sec, &n_sec, msg, msglen) < 0)
		goto fail;
	if (sec && sluice_secrets_decode(sec, n_sec, &c->secrets) < 0) {
		snprintf(msg, msglen, "secrets_fd: malformed");
		goto fail;
	}
	if (sec) {
		OPENSSL_cleanse(sec, n_sec);
		free(sec);
		sec = NULL;
	}
	if (json_object_object_get_ex(req, "secret_from", &v) && json_object_is_type(v, json_type_object))
		c->secret_from = json_object_get(v);
	if (json_object_object_get_ex(req, "secret_errors", &v) && json_object_is_type(v, json_type_object))
		c->secret_errors = json_object_get(v);
	return 0;
fail:
	if (sec) {
		OPENSSL_cleanse(sec, n_sec);
		free(sec);
	}
	daemon_content_free(c);
	return -1;
}

int daemon_content_read(const char *path, struct daemon_content *c, char *msg, size_t msglen)
{
	char sigpath[PATH_MAX + 8];
	int err;

	memset(c, 0, sizeof(*c));
	snprintf(c->file, sizeof(c->file), "%s", path);
	err = sluice_read_small_file(path, SLUICE_POLICY_MAX_BYTES, &c->bytes, &c->n_bytes);
	if (err) {
		snprintf(msg, msglen, "%s: %s", path, err == -EFBIG ? "policy too large" : strerror(-err));
		return -1;
	}
	sluice_policy_sig_path(path, sigpath, sizeof(sigpath));
	err = sluice_read_small_file(sigpath, SLUICE_SIG_MAX_BYTES, &c->sig, &c->n_sig);
	if (err && err != -ENOENT)
		snprintf(c->sig_error, sizeof(c->sig_error), "%s", err == -EFBIG ? "larger than 64 KiB" : strerror(-err));
	return 0;
}

int daemon_content_read_refs(struct daemon_content *c, const struct sluice_policy *p, char *msg, size_t msglen)
{
	struct sluice_policy_error perr;

	if (c->sent || !p->tls.upstream_ca)
		return 0;
	free(c->upstream_ca);
	c->upstream_ca = NULL;
	if (sluice_upstream_ca_load(NULL, p, &c->upstream_ca, &c->n_upstream_ca, &perr) < 0) {
		sluice_policy_error_str(&perr, msg, msglen);
		return -1;
	}
	return 0;
}

int daemon_content_load(const struct daemon_content *c, const struct sluice_signers *signers,
			struct sluice_policy **out, struct sluice_signer *who, char *msg, size_t msglen)
{
	if (sluice_policy_check_bytes(c->file, c->bytes, c->n_bytes, c->sig, c->n_sig, c->sig_error, signers, out, who,
				      msg, msglen) < 0)
		return -1;
	if (c->upstream_ca_error[0]) {
		snprintf(msg, msglen, "%s", c->upstream_ca_error);
		sluice_policy_free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* Where the client said credential `name`'s secret came from ("secret",
 * "file"), or NULL: it sent none. */
static const char *sent_from(const struct daemon_content *c, const char *name)
{
	json_object *v;

	return c->secret_from && json_object_object_get_ex(c->secret_from, name, &v) ? json_object_get_string(v) : NULL;
}

int daemon_content_secrets(const struct daemon_content *c, const struct sluice_policy *p, const char *cred_dir,
			   struct sluice_secrets *out, char *msg, size_t msglen)
{
	memset(out, 0, sizeof(*out));
	if (c->secret_from) {
		/* a --secret for a name the policy lacks (the client checks it too) */
		json_object_object_foreach(c->secret_from, name, v) {
			bool known = false;

			(void)v;
			for (size_t j = 0; j < p->n_credentials; j++)
				known |= strcmp(p->credentials[j].name, name) == 0;
			if (!known) {
				snprintf(msg, msglen, "%s: --secret %s: the policy has no credential of that name", c->file, name);
				return -1;
			}
		}
	}
	if (!p->n_credentials)
		return 0;
	out->v = calloc(p->n_credentials, sizeof(*out->v));
	if (!out->v) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	for (size_t j = 0; j < p->n_credentials; j++) {
		const struct sluice_credential *cr = &p->credentials[j];
		const struct sluice_secret *sent = sluice_secrets_find(&c->secrets, cr->name);
		const char *from = sent_from(c, cr->name);
		struct sluice_secret *s = &out->v[j];
		char dpath[PATH_MAX], why[512];
		struct stat st;
		json_object *e;

		snprintf(s->name, sizeof(s->name), "%s", cr->name);
		out->n = j + 1;
		if (sent && sent->value && from && strcmp(from, "secret") == 0)
			goto copy;
		if (from && strcmp(from, "secret") == 0)
			goto refuse;   /* its --secret could not be read */
		if (cred_dir && cred_dir[0] && snprintf(dpath, sizeof(dpath), "%s/%s", cred_dir, cr->name) > 0 &&
		    lstat(dpath, &st) == 0) {
			if (sluice_secret_file_read(dpath, &s->value, &s->len, why, sizeof(why)) < 0) {
				snprintf(msg, msglen, "%s: credential '%s': %s", c->file, cr->name, why);
				goto fail;
			}
			continue;
		}
		if (sent && sent->value)
			goto copy;
refuse:
		if (c->secret_errors && json_object_object_get_ex(c->secret_errors, cr->name, &e))
			snprintf(msg, msglen, "%s", json_object_get_string(e));
		else
			snprintf(msg, msglen, "%s:%u:%u: credential '%s' has no secret: no 'file', no --secret %s=FILE%s",
				 c->file, cr->line, cr->column, cr->name, cr->name,
				 cred_dir ? ", no $CREDENTIALS_DIRECTORY entry" : "");
		goto fail;
copy:
		s->value = malloc(sent->len + 1);
		if (!s->value) {
			snprintf(msg, msglen, "out of memory");
			goto fail;
		}
		memcpy(s->value, sent->value, sent->len);
		s->value[sent->len] = '\0';
		s->len = sent->len;
	}
	return 0;
fail:
	sluice_secrets_clear(out);
	return -1;
}

void daemon_content_free(struct daemon_content *c)
{
	free(c->bytes);
	free(c->sig);
	free(c->upstream_ca);
	sluice_secrets_clear(&c->secrets);
	if (c->secret_from)
		json_object_put(c->secret_from);
	if (c->secret_errors)
		json_object_put(c->secret_errors);
	memset(c, 0, sizeof(*c));
}
