/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_tls.c - the `tls:` section of a policy (policy.h, struct
 * sluice_policy_tls; docs/policy.md "TLS") and the CA bundle the proxy
 * trusts for the origins of inspected names besides the host's store
 * (upstream_ca.h):
 *
 *   tls:
 *     upstream_ca: /etc/sluice/internal-ca.pem   # PEM certificates
 *
 * The path is part of the policy (its digest); the file is read by the
 * loader (`sluice run`, the daemon, `sluice policy check`), checked with
 * OpenSSL, and handed to the proxy as content (--upstream-ca-fd): the
 * proxy never opens it.
 */
#include "policy_internal.h"
#include "upstream_ca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "log.h"

int sluice_tls_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p)
{
	static const char *const keys[] = { "upstream_ca", NULL };
	const struct ynode *kn = NULL, *v = sluice_ymap_get(root, "tls", &kn), *ca, *ck = NULL;
	char b[80];

	if (!v)
		return 0;
	p->tls.present = true;
	if (sluice_yis_null(v))
		return 0;
	if (v->type != YN_MAP)
		return sluice_yfail(c, v, "'tls' must be a mapping (upstream_ca), not %s", sluice_ykind(v));
	if (sluice_ycheck_keys(c, v, keys, "tls") < 0)
		return -1;
	ca = sluice_ymap_get(v, "upstream_ca", &ck);
	if (!ca || sluice_yis_null(ca))
		return 0;
	if (sluice_ywant_string(c, ck, ca) < 0)
		return -1;
	if (strlen(ca->value) != ca->len)
		return sluice_yfail(c, ca, "tls.upstream_ca: a path with a NUL byte");
	if (ca->value[0] != '/')
		return sluice_yfail(c, ca, "tls.upstream_ca must be an absolute path, not '%s'",
				    sluice_yshown(ca, b, sizeof(b)));
	if (ca->len >= 4096)
		return sluice_yfail(c, ca, "tls.upstream_ca: path longer than 4095 bytes");
	p->tls.upstream_ca = strdup(ca->value);
	if (!p->tls.upstream_ca)
		return sluice_yfail(c, ca, "out of memory");
	p->tls.line = ca->line;
	p->tls.column = ca->col;
	return 0;
}

void sluice_tls_free(struct sluice_policy *p)
{
	free(p->tls.upstream_ca);
	memset(&p->tls, 0, sizeof(p->tls));
}

/* Each PEM block a certificate, at least one; a private key or anything
 * else in the file is refused (it is not a CA bundle). */
static int check_or_add(const char *pem, size_t len, X509_STORE *store, char *msg, size_t msglen)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL) : NULL;
	int n = 0, rv = 0;

	if (!infos) {
		snprintf(msg, msglen, "not PEM certificates");
		rv = -1;
		goto out;
	}
	for (int i = 0; i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *xi = sk_X509_INFO_value(infos, i);

		if (xi->x_pkey || xi->crl || !xi->x509) {
			snprintf(msg, msglen, "holds %s, not only certificates",
				 xi->x_pkey ? "a private key" : xi->crl ? "a CRL" : "something else");
			rv = -1;
			goto out;
		}
		if (store && X509_STORE_add_cert(store, xi->x509) != 1) {
			unsigned long e = ERR_peek_last_error();

			/* the same certificate twice (the option and the policy) */
			if (ERR_GET_REASON(e) != X509_R_CERT_ALREADY_IN_HASH_TABLE) {
				snprintf(msg, msglen, "cannot add certificate %d to the trust store", n + 1);
				rv = -1;
				goto out;
			}
		}
		n++;
	}
	if (!n) {
		snprintf(msg, msglen, "no PEM certificate in it");
		rv = -1;
	}
out:
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	BIO_free(bio);
	ERR_clear_error();
	return rv;
}

int sluice_upstream_ca_add(X509_STORE *store, const char *pem, size_t len, char *msg, size_t msglen)
{
	return check_or_add(pem, len, store, msg, msglen);
}

/* Read one file (at most SLUICE_UPSTREAM_CA_MAX bytes) and check it;
 * append it to *buf. */
static int read_one(const char *path, char **buf, size_t *len, char *msg, size_t msglen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t n = 0;
	char *data, *nb;

	if (fd < 0) {
		snprintf(msg, msglen, "%s: cannot read it: %s", path, strerror(errno));
		return -1;
	}
	data = sluice_read_all(fd, SLUICE_UPSTREAM_CA_MAX, &n);
	close(fd);
	if (!data) {
		snprintf(msg, msglen, "%s: cannot read it (larger than %d bytes, or an I/O error)", path,
			 SLUICE_UPSTREAM_CA_MAX);
		return -1;
	}
	char why[200];

	if (check_or_add(data, n, NULL, why, sizeof(why)) < 0) {
		snprintf(msg, msglen, "%s: %s", path, why);
		free(data);
		return -1;
	}
	nb = realloc(*buf, *len + n + 2);
	if (!nb) {
		free(data);
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	memcpy(nb + *len, data, n);
	*len += n;
	if (n && nb[*len - 1] != '\n')
		nb[(*len)++] = '\n';
	nb[*len] = '\0';
	*buf = nb;
	free(data);
	return 0;
}

int sluice_upstream_ca_load(const char *file, const struct sluice_policy *p, char **pem, size_t *len,
			    struct sluice_policy_error *err)
{
	char msg[sizeof(err->message)];

	*pem = NULL;
	*len = 0;
	memset(err, 0, sizeof(*err));
	msg[0] = '\0';
	if (file && read_one(file, pem, len, msg, sizeof(msg)) < 0) {
		snprintf(err->file, sizeof(err->file), "--upstream-ca");
		snprintf(err->message, sizeof(err->message), "%s", msg);
		goto fail;
	}
	msg[0] = '\0';
	if (p && p->tls.upstream_ca && read_one(p->tls.upstream_ca, pem, len, msg, sizeof(msg)) < 0) {
		snprintf(err->file, sizeof(err->file), "%s", p->path ? p->path : "<policy>");
		err->line = p->tls.line;
		err->column = p->tls.column;
		snprintf(err->message, sizeof(err->message), "tls.upstream_ca: %s", msg);
		goto fail;
	}
	return 0;
fail:
	free(*pem);
	*pem = NULL;
	*len = 0;
	return -1;
}
