/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * decide.c - the proxy's policy decisions as pure functions (request.h):
 * a host-level request (CONNECT, TLS by SNI: proxy_decide_host,
 * proxy_decide_tls), a request's URL (proxy_decide_url: url entries, then
 * host entries), per program (the _for variants), the ClientHello's checks
 * (proxy_check_hello), and the cidr entries that make a special address
 * dialable.  Names and IP literals are normalised by the policy library
 * first; the denial says which part failed.
 */
#include "request.h"

#include <netinet/in.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"

bool proxy_policy_cidr_allows(const struct sluice_policy *p, int family, const uint8_t *addr,
			      uint16_t port)
{
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->protocol != IPPROTO_TCP || !sluice_entry_cidr_contains(e, family, addr))
			continue;
		for (size_t j = 0; j < e->n_ports; j++)
			if (port >= e->ports[j].lo && port <= e->ports[j].hi)
				return true;
	}
	return false;
}

static void deny(struct proxy_decision *d, int status, const char *reason, bool audit_ok)
{
	d->allow = false;
	d->status = status;
	d->reason = reason;
	d->audit_ok = audit_ok;
	d->entry = NULL;
}

static void allow(struct proxy_decision *d, const struct sluice_entry *e)
{
	d->allow = true;
	d->status = 200;
	d->reason = "allowed";
	d->audit_ok = true;
	d->entry = e;
}

/* A printable copy of untrusted text for logs. */
static void sanitize(char *dst, size_t dlen, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < dlen; i++)
		dst[i] = (src[i] > 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

/* Common first steps: IP literal or normalised name.  Returns true when
 * a decision was made (a denial). */
static bool host_prelude(const char *host_raw, struct proxy_decision *d)
{
	const char *why = NULL;
	int fam = 0;
	int r;

	memset(d, 0, sizeof(*d));
	r = sluice_ip_normalise(host_raw, &fam, d->ip);
	if (r == 0) {
		d->ip_literal = true;
		d->ip_family = fam;
		if (!inet_ntop(fam, d->ip, d->host, sizeof(d->host)))
			sanitize(d->host, sizeof(d->host), host_raw);
		deny(d, 403, "ip_literal", true);   /* never matched by host entries */
		return true;
	}
	if (r == 1) {
		sanitize(d->host, sizeof(d->host), host_raw);
		deny(d, 403, "ip_literal", false);  /* non-canonical spelling: always refused */
		return true;
	}
	if (sluice_host_normalise(host_raw, d->host, sizeof(d->host), &why) < 0) {
		sanitize(d->host, sizeof(d->host), host_raw);
		deny(d, 403, "bad_host", false);
		return true;
	}
	return false;
}

void proxy_decide_host(const struct sluice_policy *p, const char *host_raw, uint16_t port,
		       struct proxy_decision *d)
{
	const struct sluice_entry *e;

	if (host_prelude(host_raw, d))
		return;
	e = sluice_policy_match_host(p, d->host, port);
	if (e)
		allow(d, e);
	else
		deny(d, 403, "host_not_allowed", true);
}

static void decide_tls(const struct sluice_policy *p, const struct sluice_exe_id *who, const char *host_raw,
		       uint16_t port, struct proxy_decision *d)
{
	const struct sluice_entry *e;

	if (host_prelude(host_raw, d))
		return;
	if (sluice_policy_inspects_for(p, d->host, port, who)) {
		/* the tunnel is allowed so that its requests can be decided:
		 * name the first entry that makes the name inspected */
		e = NULL;
		for (size_t i = 0; i < p->n_entries && !e; i++) {
			const struct sluice_entry *u = &p->entries[i];

			if (!sluice_entry_allows_program(u, who))
				continue;
			if ((u->kind == SLUICE_ENTRY_URL && u->url_port == port &&
			     strcmp(u->url_scheme, "https") == 0 && sluice_host_match(u, d->host)) ||
			    (u->kind == SLUICE_ENTRY_HOST && u->inspect && sluice_entry_has_port(u, port) &&
			     sluice_host_match(u, d->host)))
				e = u;
		}
		allow(d, e);
		d->inspect = true;
		return;
	}
	e = sluice_policy_match_host_for(p, d->host, port, who);
	if (e)
		allow(d, e);
	else
		deny(d, 403, "host_not_allowed", true);
}

/*
 * A denial for executable `who` that the policy would allow to another
 * program (the entries that match name other programs) becomes
 * "program_not_allowed": decided again without `who`.
 */
static void program_refusal(struct proxy_decision *d, const struct proxy_decision *any)
{
	if (d->allow || !any->allow)
		return;
	deny(d, 403, "program_not_allowed", true);
}

void proxy_decide_tls_for(const struct sluice_policy *p, const struct sluice_exe_id *who, const char *host_raw,
			  uint16_t port, struct proxy_decision *d)
{
	struct proxy_decision any;

	decide_tls(p, who, host_raw, port, d);
	if (!who || d->allow || !sluice_policy_has_programs(p))
		return;
	decide_tls(p, NULL, host_raw, port, &any);
	program_refusal(d, &any);
}

void proxy_decide_tls(const struct sluice_policy *p, const char *host_raw, uint16_t port,
		      struct proxy_decision *d)
{
	decide_tls(p, NULL, host_raw, port, d);
}

static void decide_url(const struct sluice_policy *p, const struct sluice_exe_id *who, const char *scheme,
		       const char *host_raw, uint16_t port, const char *method, const char *path,
		       struct proxy_decision *d)
{
	const struct sluice_entry *e;
	bool host_has_url = false, other_method = false;

	if (host_prelude(host_raw, d))
		return;
	e = sluice_policy_match_url_for(p, scheme, d->host, port, method, path, who);
	if (!e)
		e = sluice_policy_match_host_for(p, d->host, port, who);
	if (e) {
		allow(d, e);
		return;
	}
	/* which part failed, for the log and the client */
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *u = &p->entries[i];

		if (u->kind != SLUICE_ENTRY_URL || !u->url_scheme || strcmp(u->url_scheme, scheme) != 0 ||
		    u->url_port != port || !sluice_host_match(u, d->host) || !sluice_entry_allows_program(u, who))
			continue;
		host_has_url = true;
		for (size_t m = 0; m < u->n_methods && !other_method; m++)
			if (sluice_policy_match_url_for(p, scheme, d->host, port, u->methods[m], path, who))
				other_method = true;
	}
	if (other_method)
		deny(d, 403, "method_not_allowed", true);
	else if (host_has_url)
		deny(d, 403, "path_not_allowed", true);
	else
		deny(d, 403, "host_not_allowed", true);
}

void proxy_decide_url_for(const struct sluice_policy *p, const struct sluice_exe_id *who, const char *scheme,
			  const char *host_raw, uint16_t port, const char *method, const char *path,
			  struct proxy_decision *d)
{
	struct proxy_decision any;

	decide_url(p, who, scheme, host_raw, port, method, path, d);
	if (!who || d->allow || !sluice_policy_has_programs(p))
		return;
	decide_url(p, NULL, scheme, host_raw, port, method, path, &any);
	program_refusal(d, &any);
}

void proxy_decide_url(const struct sluice_policy *p, const char *scheme, const char *host_raw,
		      uint16_t port, const char *method, const char *path, struct proxy_decision *d)
{
	decide_url(p, NULL, scheme, host_raw, port, method, path, d);
}

void proxy_decide_http(const struct sluice_policy *p, const char *host_raw, uint16_t port,
		       const char *method, const char *path, struct proxy_decision *d)
{
	proxy_decide_url(p, "http", host_raw, port, method, path, d);
}

int proxy_check_hello(const struct sni_result *h, const char *connect_host,
		      char *sni_norm, struct proxy_decision *d)
{
	const char *why = NULL;

	sni_norm[0] = '\0';
	if (h->has_sni && sluice_host_normalise(h->sni, sni_norm, SLUICE_HOST_MAX + 1, &why) < 0) {
		sni_norm[0] = '\0';
		deny(d, 403, "bad_sni", true);
		return -1;
	}
	if (h->has_ech) {
		deny(d, 403, "ech", true);
		return -1;
	}
	if (!h->has_sni) {
		deny(d, 403, "no_sni", true);
		return -1;
	}
	if (connect_host && strcmp(sni_norm, connect_host) != 0) {
		deny(d, 403, "sni_mismatch", true);
		return -1;
	}
	return 0;
}
