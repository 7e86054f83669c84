/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * secrets.c - the secrets of a policy's credentials: read from their files
 * by the loader, handed to the proxy (and placeholders to the resolver) as
 * content over a sealed memfd, wiped with OPENSSL_cleanse when replaced
 * and at exit.  No function here logs or formats a secret's bytes.
 */
#include "credentials.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRETS_WIRE_MAX (1u << 20)
#define SECRETS_MAGIC "sluice-secrets 1\n"

int sluice_secret_source_parse(char *arg, struct sluice_secret_source *out)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg || (size_t)(eq - arg) > SLUICE_CRED_NAME_MAX || eq[1] != '/')
		return -1;
	*eq = '\0';
	out->name = arg;
	out->file = eq + 1;
	return 0;
}

int sluice_secret_check(const char *s, size_t len, const char **why)
{
	if (len == 0) {
		*why = "is empty";
		return -1;
	}
	if (len > SLUICE_SECRET_MAX) {
		*why = "is too long (at most 16384 bytes)";
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '\r' || ch == '\n') {
			*why = "contains CR or LF (it goes into a header line)";
			return -1;
		}
		if (ch == 0) {
			*why = "contains a NUL byte";
			return -1;
		}
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			*why = "contains a control byte";
			return -1;
		}
	}
	return 0;
}

int sluice_secret_file_read(const char *path, char **out, size_t *len, char *msg, size_t msglen)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	const char *why = NULL;
	int fd;

	*out = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		snprintf(msg, msglen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(msg, msglen, "%s is not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		snprintf(msg, msglen, "%s is readable or writable by others (mode %04o): chmod 600 it",
			 path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	buf = malloc(SLUICE_SECRET_MAX + 3);
	if (!buf) {
		snprintf(msg, msglen, "out of memory");
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, SLUICE_SECRET_MAX + 2 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(msg, msglen, "cannot read %s: %s", path, strerror(errno));
			OPENSSL_cleanse(buf, SLUICE_SECRET_MAX + 3);
			free(buf);
			close(fd);
			return -1;
		}
		if (n == 0 || got + (size_t)n >= SLUICE_SECRET_MAX + 2) {
			got += (size_t)n;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	/* one trailing newline, as `echo` and editors write */
	if (got && buf[got - 1] == '\n') {
		got--;
		if (got && buf[got - 1] == '\r')
			got--;
	}
	buf[got] = '\0';
	if (sluice_secret_check(buf, got, &why) < 0) {
		snprintf(msg, msglen, "the secret in %s %s", path, why);
		OPENSSL_cleanse(buf, SLUICE_SECRET_MAX + 3);
		free(buf);
		return -1;
	}
	*out = buf;
	*len = got;
	return 0;
}

__attribute__((format(printf, 4, 5)))
static int load_fail(struct sluice_policy_error *err, const struct sluice_policy *p, const struct sluice_credential *cr,
		     const char *fmt, ...)
{
	va_list ap;

	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", p->path ? p->path : "<policy>");
	if (cr) {
		err->line = cr->file_line ? cr->file_line : cr->line;
		err->column = cr->file_line ? cr->file_column : cr->column;
	}
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -1;
}

int sluice_secrets_load(const struct sluice_policy *p, const struct sluice_secret_source *src,
			size_t n_src, const char *cred_dir, struct sluice_secrets *out,
			struct sluice_policy_error *err)
{
	struct sluice_policy_error dummy;
	char msg[512], dpath[4096];

	if (!err)
		err = &dummy;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n_src; i++) {
		bool known = false;

		for (size_t j = 0; j < p->n_credentials; j++)
			if (strcmp(src[i].name, p->credentials[j].name) == 0)
				known = true;
		if (!known)
			return load_fail(err, p, NULL, "--secret %s: the policy has no credential of that name",
					 src[i].name);
	}
	if (p->n_credentials == 0)
		return 0;
	out->v = calloc(p->n_credentials, sizeof(*out->v));
	if (!out->v)
		return load_fail(err, p, NULL, "out of memory");
	for (size_t j = 0; j < p->n_credentials; j++) {
		const struct sluice_credential *cr = &p->credentials[j];
		struct sluice_secret *s = &out->v[j];
		const char *path = NULL;

		for (size_t i = 0; i < n_src; i++)
			if (strcmp(src[i].name, cr->name) == 0)
				path = src[i].file;
		if (!path && cred_dir && cred_dir[0]) {
			struct stat st;

			snprintf(dpath, sizeof(dpath), "%s/%s", cred_dir, cr->name);
			if (lstat(dpath, &st) == 0)
				path = dpath;
		}
		if (!path)
			path = cr->file;
		out->n = j + 1;
		snprintf(s->name, sizeof(s->name), "%s", cr->name);
		if (!path) {
			sluice_secrets_clear(out);
			return load_fail(err, p, cr, "credential '%s' has no secret: no 'file', no --secret %s=FILE%s",
					 cr->name, cr->name,
					 cred_dir ? ", no $CREDENTIALS_DIRECTORY entry" : "");
		}
		if (sluice_secret_file_read(path, &s->value, &s->len, msg, sizeof(msg)) < 0) {
			sluice_secrets_clear(out);
			return load_fail(err, p, path == cr->file ? cr : NULL, "credential '%s': %s", cr->name, msg);
		}
	}
	return 0;
}

int sluice_secrets_placeholders(struct sluice_secrets *s, const struct sluice_secrets *keep)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < s->n; i++) {
		const struct sluice_secret *old = keep ? sluice_secrets_find(keep, s->v[i].name) : NULL;
		unsigned char r[16];
		char *o = s->v[i].placeholder;

		if (old && old->placeholder[0]) {
			memcpy(o, old->placeholder, sizeof(s->v[i].placeholder));
			continue;
		}
		if (o[0])
			continue;
		if (RAND_bytes(r, sizeof(r)) != 1)
			return -1;
		memcpy(o, SLUICE_PLACEHOLDER_PREFIX, 19);
		for (size_t k = 0; k < sizeof(r); k++) {
			o[19 + 2 * k] = hex[r[k] >> 4];
			o[20 + 2 * k] = hex[r[k] & 15];
		}
		o[SLUICE_PLACEHOLDER_LEN] = '\0';
	}
	return 0;
}

const struct sluice_secret *sluice_secrets_find(const struct sluice_secrets *s, const char *name)
{
	for (size_t i = 0; s && name && i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}

int sluice_secrets_to_memfd(const struct sluice_secrets *s, bool with_values)
{
	static const char hex[] = "0123456789abcdef";
	size_t cap = sizeof(SECRETS_MAGIC), len = 0;
	char *buf;
	int fd, e;

	for (size_t i = 0; i < s->n; i++)
		cap += strlen(s->v[i].name) + 2 * s->v[i].len + SLUICE_PLACEHOLDER_LEN + 8;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	len = (size_t)snprintf(buf, cap, "%s", SECRETS_MAGIC);
	for (size_t i = 0; i < s->n; i++) {
		const struct sluice_secret *x = &s->v[i];

		len += (size_t)snprintf(buf + len, cap - len, "%s ", x->name);
		if (with_values && x->value) {
			for (size_t k = 0; k < x->len; k++) {
				buf[len++] = hex[(unsigned char)x->value[k] >> 4];
				buf[len++] = hex[(unsigned char)x->value[k] & 15];
			}
		} else {
			buf[len++] = '-';
		}
		len += (size_t)snprintf(buf + len, cap - len, " %s\n", x->placeholder[0] ? x->placeholder : "-");
	}
	fd = memfd_create("sluice-secrets", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		e = -errno;
		goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? -errno : -EIO;
			close(fd);
			goto out;
		}
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(fd, 0, SEEK_SET) < 0) {
		e = -errno;
		close(fd);
		goto out;
	}
	e = fd;
out:
	OPENSSL_cleanse(buf, cap);
	free(buf);
	return e;
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int sluice_secrets_decode(const char *buf, size_t len, struct sluice_secrets *out)
{
	size_t ml = strlen(SECRETS_MAGIC), n = 0, off;
	const char *why = NULL;

	memset(out, 0, sizeof(*out));
	if (len < ml || memcmp(buf, SECRETS_MAGIC, ml) != 0)
		return -1;
	for (size_t i = ml; i < len; i++)
		if (buf[i] == '\n')
			n++;
	if (n == 0)
		return 0;
	if (n > 64)
		return -1;
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v)
		return -1;
	off = ml;
	while (off < len) {
		const char *line = buf + off, *nl = memchr(line, '\n', len - off);
		const char *sp1, *sp2;
		struct sluice_secret *s = &out->v[out->n];
		size_t ll, hl, pl;

		if (!nl)
			goto bad;
		ll = (size_t)(nl - line);
		sp1 = memchr(line, ' ', ll);
		sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(nl - sp1 - 1)) : NULL;
		if (!sp1 || !sp2 || sp1 == line || (size_t)(sp1 - line) > SLUICE_CRED_NAME_MAX)
			goto bad;
		out->n++;
		memcpy(s->name, line, (size_t)(sp1 - line));
		hl = (size_t)(sp2 - sp1 - 1);
		if (!(hl == 1 && sp1[1] == '-')) {
			if (hl % 2 || hl == 0 || hl / 2 > SLUICE_SECRET_MAX)
				goto bad;
			s->value = malloc(hl / 2 + 1);
			if (!s->value)
				goto bad;
			for (size_t k = 0; k < hl / 2; k++) {
				int a = unhex(sp1[1 + 2 * k]), b = unhex(sp1[2 + 2 * k]);

				if (a < 0 || b < 0)
					goto bad;
				s->value[k] = (char)(a << 4 | b);
			}
			s->len = hl / 2;
			s->value[s->len] = '\0';
			if (sluice_secret_check(s->value, s->len, &why) < 0)
				goto bad;
		}
		pl = (size_t)(nl - sp2 - 1);
		if (!(pl == 1 && sp2[1] == '-')) {
			if (pl != SLUICE_PLACEHOLDER_LEN || memcmp(sp2 + 1, SLUICE_PLACEHOLDER_PREFIX, 19) != 0)
				goto bad;
			memcpy(s->placeholder, sp2 + 1, pl);
		}
		off += ll + 1;
	}
	return 0;
bad:
	sluice_secrets_clear(out);
	return -1;
}

int sluice_secrets_from_fd(int fd, struct sluice_secrets *out)
{
	char *buf = malloc(SECRETS_WIRE_MAX);
	size_t len = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!buf) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n = pread(fd, buf + len, SECRETS_WIRE_MAX - len, (off_t)len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == SECRETS_WIRE_MAX)
			goto out;
	}
	rc = sluice_secrets_decode(buf, len, out);
out:
	OPENSSL_cleanse(buf, SECRETS_WIRE_MAX);
	free(buf);
	close(fd);
	return rc;
}

void sluice_secrets_clear(struct sluice_secrets *s)
{
	for (size_t i = 0; s && i < s->n; i++) {
		if (s->v[i].value) {
			OPENSSL_cleanse(s->v[i].value, s->v[i].len);
			free(s->v[i].value);
		}
		OPENSSL_cleanse(&s->v[i], sizeof(s->v[i]));
	}
	if (s) {
		free(s->v);
		s->v = NULL;
		s->n = 0;
	}
}

char *sluice_cred_header_value(const struct sluice_credential *cr, const struct sluice_secret *s,
			       size_t *len)
{
	const char *v = strchr(cr->header, ':'), *at;
	size_t pre, post, n;
	char *out;

	if (!v || !s || !s->value)
		return NULL;
	v++;
	while (*v == ' ' || *v == '\t')
		v++;
	at = strstr(v, "{secret}");
	if (!at)
		return NULL;
	pre = (size_t)(at - v);
	post = strlen(at + 8);
	n = pre + s->len + post;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	memcpy(out, v, pre);
	memcpy(out + pre, s->value, s->len);
	memcpy(out + pre + s->len, at + 8, post);
	out[n] = '\0';
	/* trailing blanks are not part of a field value (RFC 9110 5.5) */
	while (n && (out[n - 1] == ' ' || out[n - 1] == '\t'))
		out[--n] = '\0';
	if (len)
		*len = n;
	return out;
}

static const char *find_bytes(const char *h, size_t hl, const char *n, size_t nl, bool nocase)
{
	if (nl == 0 || hl < nl)
		return NULL;
	for (size_t i = 0; i + nl <= hl; i++)
		if (nocase ? strncasecmp(h + i, n, nl) == 0 && !memchr(h + i, 0, nl) : memcmp(h + i, n, nl) == 0)
			return h + i;
	return NULL;
}

const struct sluice_secret *sluice_secrets_find_placeholder(const struct sluice_secrets *s,
							    const char *data, size_t len, bool nocase)
{
	for (size_t i = 0; s && data && i < s->n; i++)
		if (s->v[i].placeholder[0] &&
		    find_bytes(data, len, s->v[i].placeholder, SLUICE_PLACEHOLDER_LEN, nocase))
			return &s->v[i];
	return NULL;
}

const struct sluice_secret *sluice_secrets_find_value(const struct sluice_secrets *s,
						      const char *data, size_t len, size_t *at)
{
	for (size_t i = 0; s && data && i < s->n; i++) {
		const char *p = s->v[i].value ? find_bytes(data, len, s->v[i].value, s->v[i].len, false) : NULL;

		if (p) {
			if (at)
				*at = (size_t)(p - data);
			return &s->v[i];
		}
	}
	return NULL;
}
