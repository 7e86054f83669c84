/* SPDX-License-Identifier: BSD-2-Clause */
#include "run_trust.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Other places distributions keep the same bundle: each that exists (as a
 * regular file, after symlinks) in the sandbox's view is covered too. */
static const char *const other_bundles[] = {
	"/etc/pki/tls/certs/ca-bundle.crt",                  /* Fedora, RHEL */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* Fedora, RHEL */
	"/etc/ssl/ca-bundle.pem",                            /* openSUSE */
	"/etc/ssl/cert.pem",                                 /* Alpine, macOS-style */
};

static const char *const env_names[] = {
	"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
	"GIT_SSL_CAINFO", "PIP_CERT",
};

/* Read the file at `path` whole.  Returns 0 with *out (malloc'd) or -1 (errno). */
static int read_file(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 0;
	char *buf = NULL;

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			cap = cap ? cap * 2 : 262144;
			if (cap > (64u << 20)) {
				errno = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap);
			if (!nb)
				goto fail;
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*out = buf;
	*len = n;
	return 0;
fail:
	{
		int e = errno;

		free(buf);
		close(fd);
		errno = e;
	}
	return -1;
}

int sluice_trust_prepare(struct sluice_trust *t, const char *ca_pem, char *msg, size_t msglen)
{
	static const char note[] = "\n# sluice: this sandbox's own CA (TLS inspection; its key never leaves sluice)\n";
	char *host = NULL;
	size_t hlen = 0, clen;

	t->bundle = NULL;
	t->len = 0;
	if (!ca_pem)
		return 0;
	if (read_file(SLUICE_TRUST_BUNDLE, &host, &hlen) < 0) {
		snprintf(msg, msglen, "cannot read the host's CA bundle %s (the sandbox CA is added to it): %s",
			 SLUICE_TRUST_BUNDLE, strerror(errno));
		return -1;
	}
	clen = strlen(ca_pem);
	t->bundle = malloc(hlen + sizeof(note) + clen);
	if (!t->bundle) {
		free(host);
		snprintf(msg, msglen, "out of memory for the CA bundle");
		return -1;
	}
	memcpy(t->bundle, host, hlen);
	memcpy(t->bundle + hlen, note, sizeof(note) - 1);
	memcpy(t->bundle + hlen + sizeof(note) - 1, ca_pem, clen);
	t->len = hlen + sizeof(note) - 1 + clen;
	free(host);
	return 0;
}

/* Bind `src` over `target`, read-only. */
static int bind_bundle(const char *src, const char *target, char *msg, size_t msglen)
{
	if (mount(src, target, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
		snprintf(msg, msglen, "cannot put the sandbox CA bundle over %s: %s", target, strerror(errno));
		return -1;
	}
	return 0;
}

int sluice_trust_enter(const struct sluice_trust *t, char *msg, size_t msglen)
{
	/* a scratch mount point for a moment: the tmpfs is mounted there (in
	 * this private mount namespace only), the bundle written, bound over
	 * the targets, and the scratch mount detached again; the binds keep
	 * the tmpfs alive */
	static const char *const scratch[] = { "/tmp", "/run", "/mnt" };
	const char *dir = NULL;
	char src[64];
	int fd, rc = -1;

	if (!t->bundle)
		return 0;
	for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]) && !dir; i++)
		if (mount("sluice-trust", scratch[i], "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") == 0)
			dir = scratch[i];
	if (!dir) {
		snprintf(msg, msglen, "cannot mount a tmpfs for the sandbox CA bundle: %s", strerror(errno));
		return -1;
	}
	snprintf(src, sizeof(src), "%s/ca-certificates.crt", dir);
	fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0 || sluice_write_all(fd, t->bundle, t->len) < 0) {
		snprintf(msg, msglen, "cannot write the sandbox CA bundle: %s", strerror(errno));
		goto out;
	}
	if (bind_bundle(src, SLUICE_TRUST_BUNDLE, msg, msglen) < 0)
		goto out;
	for (size_t i = 0; i < sizeof(other_bundles) / sizeof(other_bundles[0]); i++) {
		struct stat st;

		if (stat(other_bundles[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    bind_bundle(src, other_bundles[i], msg, msglen) < 0)
			goto out;
	}
	rc = 0;
	for (size_t i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++)
		if (setenv(env_names[i], SLUICE_TRUST_BUNDLE, 1) < 0) {
			snprintf(msg, msglen, "setenv %s: %s", env_names[i], strerror(errno));
			rc = -1;
		}
out:
	if (fd >= 0)
		close(fd);
	if (umount2(dir, MNT_DETACH) < 0 && rc == 0) {
		snprintf(msg, msglen, "cannot detach the scratch tmpfs at %s: %s", dir, strerror(errno));
		rc = -1;
	}
	return rc;
}

const char *const *sluice_trust_env_names(size_t *n)
{
	*n = sizeof(env_names) / sizeof(env_names[0]);
	return env_names;
}

void sluice_trust_free(struct sluice_trust *t)
{
	free(t->bundle);
	t->bundle = NULL;
	t->len = 0;
}
