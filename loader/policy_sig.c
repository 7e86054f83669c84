/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_sig.c - signed policies: `sluice policy sign`, and the check `sluice
 * run` and the daemon make with --allowed-signers (policy_sig.h,
 * docs/policy.md "Change control").  The cryptography is OpenSSH's
 * (ssh-keygen -Y sign / find-principals / verify); this file feeds it the
 * digest message and the bytes it was given, over pipes and memfds.
 */
#include "policy_sig.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "log.h"

#define KEYGEN_TIMEOUT_MS 30000

int sluice_read_small_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *buf;

	*out = NULL;
	if (len)
		*len = 0;
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap > max) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > max) {
		free(buf);
		return -EFBIG;
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

/* --- allowed signers ------------------------------------------------------- */

static const char *const key_types[] = {
	"ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com", "ssh-dss",
};

static bool is_key_type(const char *t, size_t n)
{
	for (size_t i = 0; i < sizeof(key_types) / sizeof(key_types[0]); i++)
		if (strlen(key_types[i]) == n && memcmp(key_types[i], t, n) == 0)
			return true;
	return false;
}

/* Next whitespace-separated token of [*p, end); double quotes group. */
static bool next_token(const char **p, const char *end, const char **tok, size_t *n, bool *bad_quote)
{
	const char *s = *p;
	bool q = false;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s >= end)
		return false;
	*tok = s;
	while (s < end && (q || (*s != ' ' && *s != '\t'))) {
		if (*s == '"')
			q = !q;
		s++;
	}
	if (q)
		*bad_quote = true;
	*n = (size_t)(s - *tok);
	*p = s;
	return true;
}

/* One option of the options field: cert-authority, or namespaces= /
 * valid-after= / valid-before= with a quoted value (ssh-keygen(1)). */
static bool option_ok(const char *o, size_t n)
{
	static const char *const valued[] = { "namespaces=\"", "valid-after=\"", "valid-before=\"" };

	if (n == strlen("cert-authority") && strncasecmp(o, "cert-authority", n) == 0)
		return true;
	for (size_t i = 0; i < 3; i++) {
		size_t k = strlen(valued[i]);

		if (n > k && strncasecmp(o, valued[i], k) == 0 && o[n - 1] == '"' &&
		    !memchr(o + k, '"', n - k - 1))
			return true;
	}
	return false;
}

/* Split the options field on commas outside quotes and check each. */
static bool options_ok(const char *o, size_t n)
{
	size_t start = 0;
	bool q = false;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && o[i] == '"')
			q = !q;
		if (i == n || (o[i] == ',' && !q)) {
			if (!option_ok(o + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

/* Does the base64 `b` decode to an SSH public key blob of type `type`
 * (RFC 4253 6.6: string type, then the key's fields)? */
static bool key_blob_ok(const char *type, size_t tn, const char *b, size_t bn)
{
	unsigned char *out;
	int n;
	bool ok;

	if (bn == 0 || bn % 4 != 0 || bn > 16384)
		return false;
	for (size_t i = 0; i < bn; i++)
		if (!isalnum((unsigned char)b[i]) && b[i] != '+' && b[i] != '/' && b[i] != '=')
			return false;
	out = malloc(bn);
	if (!out)
		return false;
	n = EVP_DecodeBlock(out, (const unsigned char *)b, (int)bn);
	ok = n >= (int)(4 + tn) &&
	     (((uint32_t)out[0] << 24) | ((uint32_t)out[1] << 16) | ((uint32_t)out[2] << 8) | out[3]) == tn &&
	     memcmp(out + 4, type, tn) == 0;
	free(out);
	return ok;
}

/* Check one line (without its newline).  Returns 1 for a key line, 0 for a
 * blank or comment line, -1 with msg for a bad one. */
static int signers_line(const char *s, const char *end, char *why, size_t whylen)
{
	const char *tok[4];
	size_t n[4];
	int nt = 0;
	bool bad_quote = false;
	int ki;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == end || *s == '#')
		return 0;
	if (end > s && end[-1] == '\r')
		end--;
	for (const char *c = s; c < end; c++)
		if ((unsigned char)*c < 0x20 && *c != '\t') {
			snprintf(why, whylen, "control byte 0x%02x", (unsigned char)*c);
			return -1;
		}
	while (nt < 4 && next_token(&s, end, &tok[nt], &n[nt], &bad_quote))
		nt++;
	if (bad_quote) {
		snprintf(why, whylen, "unterminated quote");
		return -1;
	}
	if (nt < 3) {
		snprintf(why, whylen, "want 'principals [options] keytype base64-key', got %d field%s", nt,
			 nt == 1 ? "" : "s");
		return -1;
	}
	/* principals, then (options) keytype key */
	if (is_key_type(tok[1], n[1])) {
		ki = 1;
	} else if (is_key_type(tok[2], n[2])) {
		if (!options_ok(tok[1], n[1])) {
			snprintf(why, whylen, "bad options '%.*s' (cert-authority, namespaces=\"...\", "
				 "valid-after=\"...\", valid-before=\"...\")", (int)(n[1] > 80 ? 80 : n[1]), tok[1]);
			return -1;
		}
		ki = 2;
		if (nt < 4) {
			snprintf(why, whylen, "no key after the key type");
			return -1;
		}
	} else {
		snprintf(why, whylen, "no key type (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, ...) where one is due: '%.*s'",
			 (int)(n[1] > 60 ? 60 : n[1]), tok[1]);
		return -1;
	}
	if (!key_blob_ok(tok[ki], n[ki], tok[ki + 1], n[ki + 1])) {
		snprintf(why, whylen, "the key is not a base64 %.*s public key", (int)n[ki], tok[ki]);
		return -1;
	}
	return 1;
}

int sluice_signers_load(const char *path, struct sluice_signers *out, char *msg, size_t msglen)
{
	const char *s, *end;
	unsigned line = 0;
	int err;

	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s", path);
	err = sluice_read_small_file(path, SLUICE_SIG_MAX_BYTES, &out->text, &out->len);
	if (err) {
		snprintf(msg, msglen, "%s: cannot read the allowed signers: %s", path,
			 err == -EFBIG ? "larger than 64 KiB" : strerror(-err));
		return -1;
	}
	if (memchr(out->text, '\0', out->len)) {
		snprintf(msg, msglen, "%s: NUL byte in the allowed signers", path);
		sluice_signers_free(out);
		return -1;
	}
	s = out->text;
	end = out->text + out->len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		char why[256];
		int r;

		line++;
		r = signers_line(s, le, why, sizeof(why));
		if (r < 0) {
			snprintf(msg, msglen, "%s:%u: %s", path, line, why);
			sluice_signers_free(out);
			return -1;
		}
		out->n_keys += (unsigned)r;
		if (!nl)
			break;
		s = nl + 1;
	}
	if (out->n_keys == 0) {
		snprintf(msg, msglen, "%s: names no key (every signed policy would be refused)", path);
		sluice_signers_free(out);
		return -1;
	}
	return 0;
}

void sluice_signers_free(struct sluice_signers *s)
{
	free(s->text);
	s->text = NULL;
	s->len = 0;
}

/* --- messages and paths --------------------------------------------------- */

int sluice_policy_sig_message(const char *digest, char *buf, size_t len)
{
	int n = snprintf(buf, len, "sluice-policy sha256:%s\n", digest);

	return n < 0 || (size_t)n >= len ? -1 : n;
}

const char *sluice_policy_sig_path(const char *policy_path, char *buf, size_t len)
{
	snprintf(buf, len, "%s.sig", policy_path);
	return buf;
}

/* --- running ssh-keygen ---------------------------------------------------- */

static const char *keygen_path(void)
{
	const char *e = getenv("SLUICE_SSH_KEYGEN");

	if (e && *e)
		return e;
	return access("/usr/bin/ssh-keygen", X_OK) == 0 ? "/usr/bin/ssh-keygen" : "ssh-keygen";
}

/* A memfd holding `data`, inherited by ssh-keygen as /dev/fd/N. */
static int memfd_of(const char *name, const char *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (sluice_write_all(fd, data, len) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Append what is readable on fd to *buf (capped); returns 0 at EOF, 1 more to come. */
static int drain(int fd, char *buf, size_t cap, size_t *n)
{
	char tmp[4096];
	ssize_t r = read(fd, tmp, sizeof(tmp));

	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (r <= 0)
		return 0;
	if (*n + 1 < cap) {
		size_t k = (size_t)r < cap - 1 - *n ? (size_t)r : cap - 1 - *n;

		memcpy(buf + *n, tmp, k);
		*n += k;
		buf[*n] = '\0';
	}
	return 1;
}

/*
 * Run ssh-keygen with `argv` (argv[0] ignored), `in` on its stdin, keeping
 * `keep` (n_keep descriptors) open across exec.  Its stdout and stderr go
 * to out/err (NUL-terminated, truncated to their sizes).  Returns its exit
 * status (0-255), or -1 when it could not be run or timed out (err says).
 */
static int keygen_run(char **argv, const char *in, size_t in_len, const int *keep, int n_keep, char *out,
		      size_t outcap, char *err, size_t errcap)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	size_t no = 0, ne = 0;
	int status = 0, open_fds = 2, waited = 0;
	const char *bin = keygen_path();
	pid_t pid;

	out[0] = err[0] = '\0';
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		snprintf(err, errcap, "pipe: %s", strerror(errno));
		goto fail;
	}
	argv[0] = (char *)bin;
	/* posix_spawn (clone with CLONE_VM | CLONE_VFORK in glibc), not
	 * fork: a daemon's fork copies the page tables of every sandbox's
	 * mapped ring buffer, time that grows with the sandboxes held */
	{
		posix_spawn_file_actions_t fa;
		int e = posix_spawn_file_actions_init(&fa);

		if (!e)
			e = posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
		if (!e)
			e = posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
		if (!e)
			e = posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
		/* the same descriptor: its FD_CLOEXEC cleared (glibc 2.29+) */
		for (int i = 0; !e && i < n_keep; i++)
			e = posix_spawn_file_actions_adddup2(&fa, keep[i], keep[i]);
		if (!e)
			e = strchr(bin, '/') ? posix_spawn(&pid, bin, &fa, NULL, argv, environ)
					     : posix_spawnp(&pid, bin, &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		if (e) {
			snprintf(err, errcap, "cannot execute %s: %s (install openssh-client)", bin, strerror(e));
			goto fail;
		}
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	/* the message is a line: it fits in the pipe, the write never waits;
	 * one that exited already gives EPIPE, not a SIGPIPE that kills us */
	if (in_len) {
		struct sigaction ign = { .sa_handler = SIG_IGN }, old;

		sigaction(SIGPIPE, &ign, &old);
		if (sluice_write_all(pin[1], in, in_len) < 0)
			snprintf(err, errcap, "cannot write to %s: %s", bin, strerror(errno));
		sigaction(SIGPIPE, &old, NULL);
	}
	close(pin[1]);
	pin[1] = -1;
	while (open_fds > 0) {
		struct pollfd pf[2] = { { .fd = pout[0], .events = POLLIN }, { .fd = perr[0], .events = POLLIN } };
		int r = poll(pf, 2, KEYGEN_TIMEOUT_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			kill(pid, SIGKILL);
			snprintf(err, errcap, "%s did not answer within %d s", bin, KEYGEN_TIMEOUT_MS / 1000);
			waitpid(pid, &status, 0);
			waited = 1;
			status = -1;
			break;
		}
		if (pf[0].revents && pout[0] >= 0 && !drain(pout[0], out, outcap, &no)) {
			close(pout[0]);
			pout[0] = -1;
			open_fds--;
		}
		if (pf[1].revents && perr[0] >= 0 && !drain(perr[0], err, errcap, &ne)) {
			close(perr[0]);
			perr[0] = -1;
			open_fds--;
		}
		if (pout[0] < 0)
			pf[0].fd = -1;
	}
	if (pout[0] >= 0)
		close(pout[0]);
	if (perr[0] >= 0)
		close(perr[0]);
	if (!waited) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	return status;
fail:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	return -1;
}

/* The first line of s, trimmed, for messages. */
static const char *first_line(char *s)
{
	char *nl;

	while (*s == ' ' || *s == '\n')
		s++;
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	return s;
}

/* --- sign ----------------------------------------------------------------- */

int sluice_policy_sign(const char *key, const char *policy_path, char *digest_out, char *msg, size_t msglen)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error perr;
	char text[128], sigpath[4200], tmp[4300], *out = NULL, err[1024];
	char *argv[] = { NULL, "-Y", "sign", "-f", (char *)key, "-n", SLUICE_SIG_NAMESPACE, NULL };
	int n, rc, fd;
	const size_t outcap = 16384;

	if (sluice_policy_load_file(policy_path, &p, &perr) < 0) {
		sluice_policy_error_str(&perr, msg, msglen);
		return -1;
	}
	snprintf(digest_out, SLUICE_DIGEST_HEX_LEN + 1, "%s", p->digest);
	n = sluice_policy_sig_message(p->digest, text, sizeof(text));
	sluice_policy_free(p);
	if (access(key, R_OK) < 0) {
		snprintf(msg, msglen, "%s: cannot read the key: %s", key, strerror(errno));
		return -1;
	}
	out = malloc(outcap);
	if (!out) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	rc = keygen_run(argv, text, (size_t)n, NULL, 0, out, outcap, err, sizeof(err));
	if (rc != 0 || strncmp(out, "-----BEGIN SSH SIGNATURE-----", 29) != 0) {
		snprintf(msg, msglen, "%s: ssh-keygen -Y sign failed (status %d): %s", key, rc, first_line(err));
		free(out);
		return -1;
	}
	sluice_policy_sig_path(policy_path, sigpath, sizeof(sigpath));
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", sigpath, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || sluice_write_all(fd, out, strlen(out)) < 0 || fsync(fd) < 0 || close(fd) < 0 ||
	    rename(tmp, sigpath) < 0) {
		snprintf(msg, msglen, "%s: cannot write the signature: %s", sigpath, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
		free(out);
		return -1;
	}
	free(out);
	return 0;
}

/* --- verify --------------------------------------------------------------- */

int sluice_policy_verify(const struct sluice_policy *p, const char *sig, size_t sig_len, const char *sig_name,
			 const struct sluice_signers *signers, struct sluice_signer *who, char *msg, size_t msglen)
{
	char text[128], sfd[32], afd[32], out[4096], err[1024], principal[256];
	int keep[2] = { -1, -1 }, n, rc = -1, st;
	char *nl;

	memset(who, 0, sizeof(*who));
	if (sig_len == 0 || !memmem(sig, sig_len, "-----BEGIN SSH SIGNATURE-----", 29)) {
		snprintf(msg, msglen, "%s: not an SSH signature (make one with `sluice policy sign`)", sig_name);
		return -1;
	}
	n = sluice_policy_sig_message(p->digest, text, sizeof(text));
	keep[0] = memfd_of("sluice-sig", sig, sig_len);
	keep[1] = memfd_of("sluice-signers", signers->text, signers->len);
	if (n < 0 || keep[0] < 0 || keep[1] < 0) {
		snprintf(msg, msglen, "%s: cannot hand the signature to ssh-keygen: %s", sig_name, strerror(errno));
		goto out;
	}
	snprintf(sfd, sizeof(sfd), "/dev/fd/%d", keep[0]);
	snprintf(afd, sizeof(afd), "/dev/fd/%d", keep[1]);
	{
		/* which principal's key made it (none: a key the file does not name) */
		char *argv[] = { NULL, "-Y", "find-principals", "-s", sfd, "-f", afd, NULL };

		st = keygen_run(argv, NULL, 0, keep, 2, out, sizeof(out), err, sizeof(err));
		if (st != 0 || !out[0]) {
			if (st < 0 || st == 127)
				snprintf(msg, msglen, "%s: cannot check the signature: %s", sig_name, first_line(err));
			else
				snprintf(msg, msglen, "%s: signed by a key that %s does not name (or not a valid signature%s%s)",
					 sig_name, signers->path, err[0] ? ": " : "", err[0] ? first_line(err) : "");
			goto out;
		}
		nl = strchr(out, '\n');
		if (nl)
			*nl = '\0';
		snprintf(principal, sizeof(principal), "%s", out);
	}
	{
		char *argv[] = { NULL, "-Y", "verify", "-f", afd, "-I", principal, "-n", SLUICE_SIG_NAMESPACE,
				 "-s", sfd, NULL };
		const char *k;

		st = keygen_run(argv, text, (size_t)n, keep, 2, out, sizeof(out), err, sizeof(err));
		if (st != 0) {
			snprintf(msg, msglen, "%s: the signature by %s does not verify for this policy (sha256 %.16s...): "
				 "it was made for another content (a changed policy, another file) or another namespace "
				 "than '" SLUICE_SIG_NAMESPACE "'", sig_name, principal, p->digest);
			goto out;
		}
		snprintf(who->principal, sizeof(who->principal), "%s", principal);
		/* Good "sluice-policy" signature for P with ED25519 key SHA256:... */
		k = strstr(out, " with ");
		if (k) {
			const char *e;

			k += 6;
			e = strstr(k, " key ");
			if (e) {
				int tl = (int)(e - k);

				e += 5;
				snprintf(who->key, sizeof(who->key), "%.*s %.*s", tl, k, (int)strcspn(e, "\n "), e);
			}
		}
	}
	rc = 0;
out:
	for (int i = 0; i < 2; i++)
		if (keep[i] >= 0)
			close(keep[i]);
	return rc;
}

int sluice_policy_check_bytes(const char *name, const char *buf, size_t len, const char *sig, size_t slen,
			      const char *sig_error, const struct sluice_signers *signers, struct sluice_policy **out,
			      struct sluice_signer *who, char *msg, size_t msglen)
{
	struct sluice_policy_error perr;
	char sigpath[4200];

	*out = NULL;
	if (who)
		memset(who, 0, sizeof(*who));
	if (sluice_policy_load_buffer(name, buf, len, out, &perr) < 0) {
		sluice_policy_error_str(&perr, msg, msglen);
		return -1;
	}
	if (!signers)
		return 0;
	sluice_policy_sig_path(name, sigpath, sizeof(sigpath));
	if (!sig) {
		snprintf(msg, msglen, "%s: %s (signed mode, --allowed-signers %s: every policy needs "
			 "the signature `sluice policy sign` writes)", sigpath,
			 sig_error && sig_error[0] ? sig_error : strerror(ENOENT), signers->path);
		goto fail;
	}
	{
		struct sluice_signer w;

		if (sluice_policy_verify(*out, sig, slen, sigpath, signers, &w, msg, msglen) < 0)
			goto fail;
		if (who)
			*who = w;
	}
	return 0;
fail:
	sluice_policy_free(*out);
	*out = NULL;
	return -1;
}

int sluice_policy_load_checked(const char *path, const struct sluice_signers *signers,
			       struct sluice_policy **out, struct sluice_signer *who, char **bytes, size_t *n_bytes,
			       char **sig_bytes, size_t *n_sig, char *msg, size_t msglen)
{
	char *buf = NULL, *sig = NULL, sigpath[4200], sigerr[128] = "";
	size_t len = 0, slen = 0;
	int err;

	*out = NULL;
	if (bytes)
		*bytes = NULL;
	if (sig_bytes)
		*sig_bytes = NULL;
	err = sluice_read_small_file(path, SLUICE_POLICY_MAX_BYTES, &buf, &len);
	if (err) {
		if (who)
			memset(who, 0, sizeof(*who));
		snprintf(msg, msglen, "%s: %s", path, err == -EFBIG ? "policy too large" : strerror(-err));
		return -1;
	}
	if (signers) {
		sluice_policy_sig_path(path, sigpath, sizeof(sigpath));
		err = sluice_read_small_file(sigpath, SLUICE_SIG_MAX_BYTES, &sig, &slen);
		if (err)
			snprintf(sigerr, sizeof(sigerr), "%s", err == -EFBIG ? "larger than 64 KiB" : strerror(-err));
	}
	if (sluice_policy_check_bytes(path, buf, len, sig, slen, sigerr, signers, out, who, msg, msglen) < 0) {
		free(buf);
		free(sig);
		return -1;
	}
	if (bytes) {
		*bytes = buf;
		if (n_bytes)
			*n_bytes = len;
	} else {
		free(buf);
	}
	if (sig_bytes) {
		*sig_bytes = sig;
		if (n_sig)
			*n_sig = slen;
	} else {
		free(sig);
	}
	return 0;
}

void sluice_signer_fields(struct sluice_line *l, const struct sluice_signer *who)
{
	if (!who || !who->principal[0]) {
		SL_STR(l, "sluice.policy_signature", "unsigned");
		return;
	}
	SL_STR(l, "sluice.policy_signature", "verified");
	SL_STR(l, "sluice.policy_signer", who->principal);
	if (who->key[0])
		SL_STR(l, "sluice.policy_signer_key", who->key);
}

int sluice_policy_memfd(const char *bytes, size_t len)
{
	int fd = memfd_create("sluice-policy", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if ((len && sluice_write_all(fd, bytes, len) < 0) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}
