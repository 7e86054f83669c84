/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cred.c - the proxy's credentials: the secrets the loader handed over
 * (--secrets-fd, a sealed memfd; never a path), bound to the policy's
 * credentials, each with its ready header value.  The header is set after
 * the policy decision, only on requests an entry carrying the credential
 * allows (conn.c, http.c); everything is wiped at exit.
 */
#include "proxy.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int proxy_creds_init(struct proxy *px, int fd, const char **why)
{
	const struct sluice_policy *p = px->policy;

	if (fd >= 0 && sluice_secrets_from_fd(fd, &px->secrets) < 0) {
		*why = "--secrets-fd: malformed hand-over";
		return -1;
	}
	if (p->n_credentials == 0)
		return 0;
	px->creds = calloc(p->n_credentials, sizeof(*px->creds));
	if (!px->creds) {
		*why = "out of memory";
		return -1;
	}
	px->n_creds = p->n_credentials;
	for (size_t i = 0; i < p->n_credentials; i++) {
		struct proxy_cred *c = &px->creds[i];

		c->cr = &p->credentials[i];
		c->secret = sluice_secrets_find(&px->secrets, c->cr->name);
		if (!c->secret || !c->secret->value) {
			*why = "the policy has a credential whose secret was not handed over (--secrets-fd)";
			return -1;
		}
		c->value = sluice_cred_header_value(c->cr, c->secret, &c->value_len);
		if (!c->value) {
			*why = "out of memory";
			return -1;
		}
	}
	return 0;
}

void proxy_creds_free(struct proxy *px)
{
	for (size_t i = 0; i < px->n_creds; i++)
		if (px->creds[i].value) {
			OPENSSL_cleanse(px->creds[i].value, px->creds[i].value_len);
			free(px->creds[i].value);
		}
	free(px->creds);
	px->creds = NULL;
	px->n_creds = 0;
	sluice_secrets_clear(&px->secrets);
}

const struct proxy_cred *proxy_cred_for(const struct proxy *px, const struct sluice_entry *e)
{
	if (!e || !e->credential || e->credential_idx >= px->n_creds)
		return NULL;
	return &px->creds[e->credential_idx];
}

const struct sluice_secret *proxy_cred_misdirected(const struct proxy *px, const struct proxy_cred *allowed,
						   const char *data, size_t len)
{
	for (size_t i = 0; i < px->secrets.n; i++) {
		const struct sluice_secret *s = &px->secrets.v[i];
		struct sluice_secrets one = { (struct sluice_secret *)s, 1 };

		if (allowed && allowed->secret == s)
			continue;
		if (sluice_secrets_find_placeholder(&one, data, len, true))
			return s;
	}
	return NULL;
}
