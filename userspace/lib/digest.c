/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * digest.c - the canonical serialisation of a policy and its SHA-256.
 *
 * The canonical form is compact JSON with keys sorted (byte order), values
 * normalised (host names lower-case punycode, CIDRs in inet_ntop form,
 * ports, methods and qtypes sorted) and entries in file order (order
 * matters: it names the rules).  Comments, key order, quoting style and
 * spelling variants of the same value therefore never change the digest;
 * any change in meaning, or in a `why`, does.  docs/policy.md has the
 * exact layout.
 */
#include "policy_internal.h"

#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *t;

		while (b->len + n + 1 > cap)
			cap *= 2;
		t = realloc(b->s, cap);
		if (!t) {
			b->oom = true;
			return;
		}
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static void sb_uint(struct sbuf *b, unsigned long v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do
		tmp[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	sb_put(b, tmp + i, sizeof(tmp) - i);
}

/* A JSON string: '"' and '\\' escaped, bytes < 0x20 as \u00XX, every
 * other byte as it is (UTF-8 passes through unchanged). */
static void sb_json(struct sbuf *b, const char *s)
{
	sb_put(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			char e[2] = { '\\', (char)*p };

			sb_put(b, e, 2);
		} else if (*p < 0x20) {
			static const char hx[] = "0123456789abcdef";
			char u[6] = { '\\', 'u', '0', '0', hx[*p >> 4], hx[*p & 15] };

			sb_put(b, u, sizeof(u));
		} else {
			sb_put(b, (const char *)p, 1);
		}
	}
	sb_put(b, "\"", 1);
}

static void sb_ports(struct sbuf *b, const struct sluice_entry *e)
{
	sb_str(b, "\"ports\":[");
	for (size_t i = 0; i < e->n_ports; i++) {
		sb_str(b, i ? ",[" : "[");
		sb_uint(b, e->ports[i].lo);
		sb_str(b, ",");
		sb_uint(b, e->ports[i].hi);
		sb_str(b, "]");
	}
	sb_str(b, "]");
}

/* ,"programs":[paths] (sorted at load), only when the entry has some
 * (older policies keep their digest): paths, never the inodes, which a
 * package upgrade changes. */
static void sb_programs(struct sbuf *b, const struct sluice_entry *e)
{
	if (!e->n_programs)
		return;
	sb_str(b, ",\"programs\":[");
	for (size_t j = 0; j < e->n_programs; j++) {
		if (j)
			sb_str(b, ",");
		sb_json(b, e->programs[j].path);
	}
	sb_str(b, "]");
}

/* ,"url":"scheme://host:port/path" (the port always written: http://h:80/p). */
static void sb_url(struct sbuf *b, const struct sluice_entry *e)
{
	size_t n = strlen(e->url_scheme) + strlen(e->url_host) + strlen(e->url_path) + 16;
	char *u;

	sb_str(b, ",\"url\":");
	u = malloc(n);
	if (!u) {
		b->oom = true;
		return;
	}
	snprintf(u, n, "%s://%s:%u%s", e->url_scheme, e->url_host, e->url_port, e->url_path);
	sb_json(b, u);
	free(u);
}

/* ,"valid":{owner, ticket, until}: change control, only when set (older
 * policies keep their digest); "valid" sorts after every other key but "why". */
static void sb_valid(struct sbuf *b, const struct sluice_entry *e)
{
	const char *sep = "";
	char t[64];

	if (!e->expires && !e->owner && !e->ticket)
		return;
	sb_str(b, ",\"valid\":{");
	if (e->owner) {
		sb_str(b, "\"owner\":");
		sb_json(b, e->owner);
		sep = ",";
	}
	if (e->ticket) {
		sb_str(b, sep);
		sb_str(b, "\"ticket\":");
		sb_json(b, e->ticket);
		sep = ",";
	}
	if (e->expires) {
		sb_str(b, sep);
		sb_str(b, "\"until\":");
		sb_json(b, sluice_rfc3339_str(e->expires, t, sizeof(t)));
	}
	sb_str(b, "}");
}

/* One allow entry, its keys in byte order by kind, then valid and why. */
static void sb_entry(struct sbuf *b, const struct sluice_entry *e, bool first)
{
	char t[SLUICE_HOST_MAX + 64];

	sb_str(b, first ? "{" : ",{");
	switch (e->kind) {
	case SLUICE_ENTRY_HOST:   /* host, [inspect,] ports, [programs,] why */
		snprintf(t, sizeof(t), "%s%s", e->wildcard ? "*." : "", e->host);
		sb_str(b, "\"host\":");
		sb_json(b, t);
		/* written only when true, so that policies from before
		 * `inspect` existed keep their digest */
		sb_str(b, e->inspect ? ",\"inspect\":true," : ",");
		sb_ports(b, e);
		sb_programs(b, e);
		break;
	case SLUICE_ENTRY_URL:    /* [credential,] methods, [programs,] url, why */
		if (e->credential) {
			sb_str(b, "\"credential\":");
			sb_json(b, e->credential);
			sb_str(b, ",");
		}
		sb_str(b, "\"methods\":[");
		for (size_t j = 0; j < e->n_methods; j++) {
			if (j)
				sb_str(b, ",");
			sb_json(b, e->methods[j]);
		}
		sb_str(b, "]");
		sb_programs(b, e);
		sb_url(b, e);
		break;
	case SLUICE_ENTRY_CIDR:   /* cidr, ports, [programs,] protocol, why */
		sb_str(b, "\"cidr\":");
		sb_json(b, sluice_cidr_str(e, t, sizeof(t)));
		sb_str(b, ",");
		sb_ports(b, e);
		sb_programs(b, e);
		sb_str(b, ",\"protocol\":");
		sb_json(b, e->protocol == IPPROTO_UDP ? "udp" : "tcp");
		break;
	case SLUICE_ENTRY_UNIX:   /* unix, why: "@name" for an abstract name */
		sb_str(b, "\"unix\":");
		snprintf(t, sizeof(t), "%s%s", e->unix_abstract ? "@" : "", e->unix_path);
		sb_json(b, t);
		break;
	}
	sb_valid(b, e);
	/* "websocket" sorts between "valid" and "why"; only when true
	 * (older policies keep their digest) */
	if (e->kind == SLUICE_ENTRY_URL && e->websocket)
		sb_str(b, ",\"websocket\":true");
	sb_str(b, ",\"why\":");
	sb_json(b, e->why ? e->why : "");
	sb_str(b, "}");
}

/* ],"credentials":[...] (written only when there are some, so that
 * policies from before them keep their digest): allow_plain_http (when
 * true), env (when set), header, name; never the file or the secret. */
static void sb_credentials(struct sbuf *b, const struct sluice_policy *p)
{
	if (!p->n_credentials)
		return;
	sb_str(b, "],\"credentials\":[");
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct sluice_credential *cr = &p->credentials[i];

		sb_str(b, i ? ",{" : "{");
		if (cr->allow_plain_http)
			sb_str(b, "\"allow_plain_http\":true,");
		if (cr->env) {
			sb_str(b, "\"env\":");
			sb_json(b, cr->env);
			sb_str(b, ",");
		}
		sb_str(b, "\"header\":");
		sb_json(b, cr->header);
		sb_str(b, ",\"name\":");
		sb_json(b, cr->name);
		sb_str(b, "}");
	}
}

/* ,"families":[{family, why}] (only when written, as filesystem), in
 * family order. */
static void sb_families(struct sbuf *b, const struct sluice_policy *p)
{
	if (!p->families.present)
		return;
	sb_str(b, ",\"families\":[");
	for (size_t i = 0; i < p->families.n; i++) {
		sb_str(b, i ? ",{\"family\":" : "{\"family\":");
		sb_json(b, p->families.items[i].name);
		sb_str(b, ",\"why\":");
		sb_json(b, p->families.items[i].why);
		sb_str(b, "}");
	}
	sb_str(b, "]");
}

/* ,"filesystem":{hide, read_only, read_write, workdir} (only when
 * written, so that policies from before it keep their digest); lists in
 * file order (bind mounts are made in that order). */
static void sb_filesystem(struct sbuf *b, const struct sluice_policy *p)
{
	static const char *const names[] = { "hide", "read_only", "read_write" };
	const struct sluice_fs_path *lists[] = { p->fs.hide, p->fs.read_only, p->fs.read_write };
	const size_t ns[] = { p->fs.n_hide, p->fs.n_read_only, p->fs.n_read_write };

	if (!p->fs.present)
		return;
	sb_str(b, ",\"filesystem\":{");
	for (int k = 0; k < 3; k++) {
		sb_str(b, k ? ",\"" : "\"");
		sb_str(b, names[k]);
		sb_str(b, "\":[");
		for (size_t i = 0; i < ns[k]; i++) {
			if (i)
				sb_str(b, ",");
			sb_json(b, lists[k][i].path);
		}
		sb_str(b, "]");
	}
	sb_str(b, ",\"workdir\":");
	sb_json(b, p->fs.workdir.path ? p->fs.workdir.path : "");
	sb_str(b, "}");
}

char *sluice_policy_canonical(const struct sluice_policy *p, size_t *len)
{
	struct sbuf b = { 0 };

	if (!p)
		return NULL;
	/* keys in byte order: allow, credentials, dns, families, filesystem, mode, name, tls, version */
	sb_str(&b, "{\"allow\":[");
	for (size_t i = 0; i < p->n_entries; i++)
		sb_entry(&b, &p->entries[i], i == 0);
	sb_credentials(&b, p);
	sb_str(&b, "],\"dns\":{\"on_deny\":");
	sb_json(&b, p->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain");
	sb_str(&b, ",\"qtypes\":[");
	for (size_t i = 0; i < p->n_dns_qtypes; i++) {
		if (i)
			sb_str(&b, ",");
		sb_uint(&b, p->dns_qtypes[i]);
	}
	sb_str(&b, "]}");
	sb_families(&b, p);
	sb_filesystem(&b, p);
	sb_str(&b, ",\"mode\":");
	sb_json(&b, p->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	sb_str(&b, ",\"name\":");
	sb_json(&b, p->name ? p->name : "");
	/* tls (only when written): the path, not the file's bytes (the
	 * loader reads those, policy check checks them) */
	if (p->tls.present) {
		sb_str(&b, ",\"tls\":{\"upstream_ca\":");
		sb_json(&b, p->tls.upstream_ca ? p->tls.upstream_ca : "");
		sb_str(&b, "}");
	}
	sb_str(&b, ",\"version\":");
	sb_uint(&b, (unsigned long)(p->version > 0 ? p->version : 0));
	sb_str(&b, "}");
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	if (len)
		*len = b.len;
	return b.s;
}

int sluice_policy_compute_digest(struct sluice_policy *p)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t len;
	char *canon = sluice_policy_canonical(p, &len);
	int ok;

	if (!canon)
		return -1;
	ok = EVP_Digest(canon, len, md, &mdlen, EVP_sha256(), NULL);
	free(canon);
	if (!ok || mdlen != SLUICE_DIGEST_HEX_LEN / 2)
		return -1;
	for (unsigned i = 0; i < mdlen; i++) {
		p->digest[2 * i] = hex[md[i] >> 4];
		p->digest[2 * i + 1] = hex[md[i] & 15];
	}
	p->digest[SLUICE_DIGEST_HEX_LEN] = '\0';
	return 0;
}
