/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy.c - load a policy file (YAML, version 1; docs/policy.md) into a
 * validated, normalised struct sluice_policy, and match against it.
 *
 * The YAML tree (policy_yaml.c) is checked key by key; the first problem
 * stops the load and nothing is returned but the error.  Matching:
 * policy_match.c.
 */
#include "policy_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libpsl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <yaml.h>

/* --- small tables ----------------------------------------------------------- */

static const struct {
	const char *name;
	uint16_t type;
} qtypes[] = {
	{ "A", 1 },      { "NS", 2 },     { "CNAME", 5 },  { "SOA", 6 },    { "PTR", 12 },
	{ "MX", 15 },    { "TXT", 16 },   { "AAAA", 28 },  { "SRV", 33 },   { "NAPTR", 35 },
	{ "DS", 43 },    { "RRSIG", 46 }, { "DNSKEY", 48 }, { "SVCB", 64 },  { "HTTPS", 65 },
	{ "CAA", 257 },
};

const char *sluice_qtype_name(uint16_t qtype)
{
	for (size_t i = 0; i < sizeof(qtypes) / sizeof(qtypes[0]); i++)
		if (qtypes[i].type == qtype)
			return qtypes[i].name;
	return NULL;
}

const char *sluice_qtype_str(uint16_t qtype, const char *unknown_prefix, char *buf, size_t len)
{
	const char *n = sluice_qtype_name(qtype);

	if (n)
		return n;
	snprintf(buf, len, "%s%u", unknown_prefix, qtype);
	return buf;
}

static const char *const http_methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH",
					    "DELETE", "OPTIONS", NULL };

const char *sluice_entry_kind_name(enum sluice_entry_kind kind)
{
	switch (kind) {
	case SLUICE_ENTRY_HOST:
		return "host";
	case SLUICE_ENTRY_URL:
		return "url";
	case SLUICE_ENTRY_CIDR:
		return "cidr";
	case SLUICE_ENTRY_UNIX:
		return "unix";
	}
	return "?";
}

/* --- public suffixes ------------------------------------------------------- */

int sluice_is_public_suffix(const char *name)
{
	/* The list compiled into libpsl (a static table: no state, safe
	 * from any thread), else the system's copy (Debian "publicsuffix"),
	 * loaded for this one question. */
	const psl_ctx_t *builtin = psl_builtin();
	psl_ctx_t *loaded;
	int r;

	/* With the implicit "*" rule: an unlisted single-label TLD counts. */
	if (builtin)
		return psl_is_public_suffix(builtin, name) ? 1 : 0;
	loaded = psl_latest(NULL);
	if (!loaded)
		return -1;
	r = psl_is_public_suffix(loaded, name) ? 1 : 0;
	psl_free(loaded);
	return r;
}

/* --- entries ----------------------------------------------------------------- */

static int port_cmp(const void *a, const void *b)
{
	const struct sluice_port_range *x = a, *y = b;

	return (int)x->lo - (int)y->lo;
}

static int parse_port_num(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;

	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return 0;
}

static int parse_ports(struct ctx *c, const struct ynode *key, const struct ynode *v,
		       struct sluice_entry *e)
{
	char b[64];

	if (sluice_ywant_kind(c, key, v, YN_SEQ) < 0)
		return -1;
	if (v->n == 0)
		return sluice_yfail(c, v, "'ports' must not be empty (there is no \"all ports\")");
	if (v->n > SLUICE_POLICY_MAX_PORTS)
		return sluice_yfail(c, v, "too many ports (at most %u: use ranges)", SLUICE_POLICY_MAX_PORTS);
	e->ports = calloc(v->n, sizeof(*e->ports));
	if (!e->ports)
		return sluice_yfail(c, v, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *p = v->kids[i];
		const char *dash;
		unsigned lo, hi;

		if (p->type != YN_SCALAR || sluice_yis_null(p) || memchr(p->value, '\0', p->len))
			return sluice_yfail(c, p, "a port must be a number 1-65535 or a range lo-hi, not %s",
				    sluice_ykind(p));
		dash = memchr(p->value, '-', p->len);
		if (sluice_yis_int(p) && (p->value[0] == '-' || p->value[0] == '+'))
			return sluice_yfail(c, p, "port %s out of range (1-65535)", sluice_yshown(p, b, sizeof(b)));
		if (dash) {
			if (parse_port_num(p->value, (size_t)(dash - p->value), &lo) < 0 ||
			    parse_port_num(dash + 1, p->len - (size_t)(dash - p->value) - 1, &hi) < 0)
				return sluice_yfail(c, p, "bad port range '%s' (want lo-hi, e.g. 8000-8080)",
					    sluice_yshown(p, b, sizeof(b)));
		} else if (parse_port_num(p->value, p->len, &lo) < 0) {
			if (sluice_yis_int(p))
				return sluice_yfail(c, p, "port %s out of range (1-65535)", sluice_yshown(p, b, sizeof(b)));
			return sluice_yfail(c, p, "a port must be a number 1-65535 or a range lo-hi, not '%s'",
				    sluice_yshown(p, b, sizeof(b)));
		} else {
			hi = lo;
		}
		if ((p->value[0] == '0' && p->len > 1 && p->value[1] != '-') ||
		    (dash && dash[1] == '0' && p->len - (size_t)(dash - p->value) > 2))
			return sluice_yfail(c, p, "port '%s' has a leading zero (octal in YAML 1.1)",
				    sluice_yshown(p, b, sizeof(b)));
		if (lo < 1 || lo > 65535)
			return sluice_yfail(c, p, "port %u out of range (1-65535)", lo);
		if (hi < 1 || hi > 65535)
			return sluice_yfail(c, p, "port %u out of range (1-65535)", hi);
		if (lo > hi)
			return sluice_yfail(c, p, "port range %u-%u is backwards", lo, hi);
		for (size_t j = 0; j < e->n_ports; j++)
			if (lo <= e->ports[j].hi && e->ports[j].lo <= hi)
				return sluice_yfail(c, p, "duplicate port: %s overlaps an earlier port of this entry",
					    sluice_yshown(p, b, sizeof(b)));
		e->ports[e->n_ports].lo = (uint16_t)lo;
		e->ports[e->n_ports].hi = (uint16_t)hi;
		e->n_ports++;
	}
	qsort(e->ports, e->n_ports, sizeof(*e->ports), port_cmp);
	return 0;
}

/* Host names as written in a policy: exact, or "*." + name.  Explains bad
 * wildcards, IP literals and bad bytes precisely. */
static int parse_host(struct ctx *c, const struct ynode *v, bool allow_wildcard,
		      const char *what, char **host_out, bool *wildcard)
{
	char out[SLUICE_HOST_MAX + 1];
	char b[80];
	const char *name = v->value;
	const char *why;
	const char *star;
	int family;
	uint8_t addr[16];

	*wildcard = false;
	if (memchr(v->value, '\0', v->len))
		return sluice_yfail(c, v, "invalid host name: NUL byte in host name");
	if (v->len > SLUICE_HOST_MAX + 1)
		return sluice_yfail(c, v, "invalid host name '%s': longer than 253 bytes", sluice_yshown(v, b, sizeof(b)));
	star = strchr(name, '*');
	if (star) {
		if (!allow_wildcard)
			return sluice_yfail(c, v, "wildcards are not allowed in a url entry ('%s')",
				    sluice_yshown(v, b, sizeof(b)));
		if (strcmp(name, "*") == 0 || strcmp(name, "*.") == 0)
			return sluice_yfail(c, v, "bad wildcard '%s': would allow every name", name);
		if (star != name)
			return sluice_yfail(c, v, "bad wildcard '%s': '*' is only allowed as the whole leftmost label ('*.example.com')",
				    sluice_yshown(v, b, sizeof(b)));
		if (name[1] != '.')
			return sluice_yfail(c, v, "bad wildcard '%s': '*' must be a whole label followed by '.' ('*.example.com')",
				    sluice_yshown(v, b, sizeof(b)));
		if (strchr(name + 1, '*'))
			return sluice_yfail(c, v, "bad wildcard '%s': '*' is only allowed as the whole leftmost label ('*.example.com')",
				    sluice_yshown(v, b, sizeof(b)));
		name += 2;
		*wildcard = true;
	}
	if (sluice_ip_normalise(name, &family, addr) >= 0) {
		if (*wildcard)
			return sluice_yfail(c, v, "bad wildcard '%s': not over an IP address", sluice_yshown(v, b, sizeof(b)));
		return sluice_yfail(c, v, "IP literal '%s' in %s: use a cidr entry for addresses",
			    sluice_yshown(v, b, sizeof(b)), what);
	}
	if (sluice_host_normalise(name, out, sizeof(out), &why) < 0) {
		if (why && strcmp(why, "ip literal") == 0)
			return sluice_yfail(c, v, "IP literal '%s' in %s: use a cidr entry for addresses",
				    sluice_yshown(v, b, sizeof(b)), what);
		return sluice_yfail(c, v, "invalid host name '%s': %s", sluice_yshown(v, b, sizeof(b)), why);
	}
	if (*wildcard) {
		int ps;

		if (!strchr(out, '.'))
			return sluice_yfail(c, v, "bad wildcard '%s': over a top-level domain", sluice_yshown(v, b, sizeof(b)));
		ps = sluice_is_public_suffix(out);
		if (ps < 0)
			return sluice_yfail(c, v, "bad wildcard '%s': no public suffix list to check it against",
				    sluice_yshown(v, b, sizeof(b)));
		if (ps > 0)
			return sluice_yfail(c, v, "bad wildcard '%s': '%s' is a public suffix (anyone can register names under it)",
				    sluice_yshown(v, b, sizeof(b)), out);
	}
	*host_out = strdup(out);
	if (!*host_out)
		return sluice_yfail(c, v, "out of memory");
	return 0;
}

static int parse_url(struct ctx *c, const struct ynode *v, struct sluice_entry *e)
{
	char b[80];
	char hostbuf[SLUICE_HOST_MAX + 3];
	char path[SLUICE_PATH_MAX + 1];
	const char *s = v->value, *hp, *he, *why;
	const char *scheme = "http";
	struct ynode tmp;
	bool wild;
	unsigned port = 80;

	if (memchr(v->value, '\0', v->len))
		return sluice_yfail(c, v, "invalid url: NUL byte");
	if (strncasecmp(s, "https://", 8) == 0) {
		scheme = "https";
		port = 443;
		hp = s + 8;
	} else if (strncasecmp(s, "http://", 7) == 0) {
		hp = s + 7;
	} else {
		return sluice_yfail(c, v, "url '%s' must start with http:// or https://",
			    sluice_yshown(v, b, sizeof(b)));
	}
	he = hp + strcspn(hp, "/?#");
	if (memchr(hp, '@', (size_t)(he - hp)))
		return sluice_yfail(c, v, "url '%s' must not contain userinfo ('@')", sluice_yshown(v, b, sizeof(b)));
	if (*he == '?' || *he == '#' || strpbrk(he, "?#"))
		return sluice_yfail(c, v, "url '%s' must not have a query or fragment (rules are path prefixes)",
			    sluice_yshown(v, b, sizeof(b)));
	{
		const char *colon = NULL;

		if (hp < he && *hp == '[')
			return sluice_yfail(c, v, "IP literal in url '%s': use a cidr entry for addresses",
				    sluice_yshown(v, b, sizeof(b)));
		for (const char *q = hp; q < he; q++)
			if (*q == ':')
				colon = q;
		if (colon) {
			if (parse_port_num(colon + 1, (size_t)(he - colon - 1), &port) < 0 || port < 1 ||
			    port > 65535 || colon[1] == '0')
				return sluice_yfail(c, v, "url '%s': port out of range (1-65535)", sluice_yshown(v, b, sizeof(b)));
			he = colon;
		}
	}
	if ((size_t)(he - hp) >= sizeof(hostbuf))
		return sluice_yfail(c, v, "invalid host name in url '%s': longer than 253 bytes",
			    sluice_yshown(v, b, sizeof(b)));
	memcpy(hostbuf, hp, (size_t)(he - hp));
	hostbuf[he - hp] = '\0';
	tmp = *v;
	tmp.value = hostbuf;
	tmp.len = strlen(hostbuf);
	if (tmp.len == 0)
		return sluice_yfail(c, v, "url '%s' has no host", sluice_yshown(v, b, sizeof(b)));
	if (parse_host(c, &tmp, false, "a url", &e->url_host, &wild) < 0)
		return -1;
	s = hp + strcspn(hp, "/");
	if (sluice_url_path_normalise(*s ? s : "/", path, sizeof(path), &why) < 0)
		return sluice_yfail(c, v, "bad path in url '%s': %s", sluice_yshown(v, b, sizeof(b)), why);
	e->url_scheme = strdup(scheme);
	e->url_path = strdup(path);
	e->url_port = (uint16_t)port;
	e->ports = calloc(1, sizeof(*e->ports));
	if (!e->url_scheme || !e->url_path || !e->ports)
		return sluice_yfail(c, v, "out of memory");
	e->ports[0].lo = e->ports[0].hi = (uint16_t)port;
	e->n_ports = 1;
	return 0;
}

static int parse_cidr(struct ctx *c, const struct ynode *v, struct sluice_entry *e)
{
	char b[80], a[INET6_ADDRSTRLEN + 1];
	const char *slash;
	unsigned plen, max;
	size_t alen;
	int family, rc;
	uint8_t addr[16];

	if (memchr(v->value, '\0', v->len) || v->len > INET6_ADDRSTRLEN + 4)
		return sluice_yfail(c, v, "invalid cidr '%s'", sluice_yshown(v, b, sizeof(b)));
	slash = strchr(v->value, '/');
	alen = slash ? (size_t)(slash - v->value) : v->len;
	if (alen >= sizeof(a))
		return sluice_yfail(c, v, "invalid cidr '%s'", sluice_yshown(v, b, sizeof(b)));
	memcpy(a, v->value, alen);
	a[alen] = '\0';
	if (a[0] == '[')
		return sluice_yfail(c, v, "invalid cidr '%s': no brackets", sluice_yshown(v, b, sizeof(b)));
	rc = sluice_ip_normalise(a, &family, addr);
	if (rc == 1)
		return sluice_yfail(c, v, "invalid cidr '%s': '%s' is not a canonical IP address (dotted quad or RFC 4291 IPv6)",
			    sluice_yshown(v, b, sizeof(b)), a);
	if (rc < 0)
		return sluice_yfail(c, v, "invalid cidr '%s': '%s' is not an IP address", sluice_yshown(v, b, sizeof(b)), a);
	max = family == AF_INET ? 32 : 128;
	if (family == AF_INET && strchr(a, ':'))
		max = 128;   /* ::ffff:a.b.c.d/n: n counts IPv6 bits */
	plen = max;
	if (slash) {
		const char *p = slash + 1;
		size_t pl = strlen(p);

		if (parse_port_num(p, pl, &plen) < 0 || (p[0] == '0' && pl > 1) || plen > max)
			return sluice_yfail(c, v, "invalid cidr '%s': prefix length must be 0-%u", sluice_yshown(v, b, sizeof(b)), max);
	}
	if (max == 128 && family == AF_INET) {
		if (plen < 96)
			return sluice_yfail(c, v, "invalid cidr '%s': an IPv4-mapped prefix must be /96 or longer",
				    sluice_yshown(v, b, sizeof(b)));
		plen -= 96;
	}
	{
		unsigned bytes = family == AF_INET ? 4 : 16;

		for (unsigned bit = plen; bit < bytes * 8; bit++)
			if (addr[bit / 8] & (0x80 >> (bit % 8))) {
				char fix[INET6_ADDRSTRLEN];

				for (unsigned k = plen; k < bytes * 8; k++)
					addr[k / 8] &= (uint8_t)~(0x80 >> (k % 8));
				inet_ntop(family, addr, fix, sizeof(fix));
				return sluice_yfail(c, v, "cidr '%s' has host bits set (did you mean %s/%u?)",
					    sluice_yshown(v, b, sizeof(b)), fix, plen);
			}
	}
	e->family = family;
	memcpy(e->addr, addr, sizeof(e->addr));
	e->prefix_len = (uint8_t)plen;
	return 0;
}

static int method_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * A unix entry: "/abs/path", "/abs/dir/" (every socket below it) or
 * "@abstract-name".  The kernel compares the bytes a client passes to
 * connect(), so a path must be spelled as clients spell it: absolute, no
 * "." or ".." segments, no "//", no NUL.
 */
static int parse_unix(struct ctx *c, const struct ynode *v, struct sluice_entry *e)
{
	const char *s = v->value;
	size_t n = v->len;
	char b[64];

	if (memchr(s, 0, n))
		return sluice_yfail(c, v, "unix entry '%s' holds a NUL byte", sluice_yshown(v, b, sizeof(b)));
	if (n > 0 && s[0] == '@') {
		if (n < 2)
			return sluice_yfail(c, v, "unix entry '@' needs an abstract name after the '@'");
		if (n - 1 > SLUICE_UNIX_PATH_MAX)
			return sluice_yfail(c, v, "abstract unix name '%s' is longer than %d bytes", sluice_yshown(v, b, sizeof(b)),
				    SLUICE_UNIX_PATH_MAX);
		e->unix_abstract = true;
		e->unix_path = strdup(s + 1);
		return e->unix_path ? 0 : sluice_yfail(c, v, "out of memory");
	}
	if (n == 0 || s[0] != '/')
		return sluice_yfail(c, v, "unix entry '%s' must be an absolute path or '@abstract-name'", sluice_yshown(v, b, sizeof(b)));
	if (n > SLUICE_UNIX_PATH_MAX)
		return sluice_yfail(c, v, "unix path '%s' is longer than %d bytes (sun_path)", sluice_yshown(v, b, sizeof(b)),
			    SLUICE_UNIX_PATH_MAX);
	for (const char *seg = s + 1; seg <= s + n;) {
		const char *end = memchr(seg, '/', (size_t)(s + n - seg));
		size_t sl = end ? (size_t)(end - seg) : (size_t)(s + n - seg);

		if ((sl == 0 && end) || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
			return sluice_yfail(c, v, "unix path '%s' has an empty, '.' or '..' segment", sluice_yshown(v, b, sizeof(b)));
		if (!end)
			break;
		seg = end + 1;
	}
	if (n == 1)
		return sluice_yfail(c, v, "unix entry '/' would allow every socket: name the sockets or their directory");
	e->unix_prefix = s[n - 1] == '/';
	e->unix_path = strdup(s);
	return e->unix_path ? 0 : sluice_yfail(c, v, "out of memory");
}

static int parse_methods(struct ctx *c, const struct ynode *key, const struct ynode *v,
			 struct sluice_entry *e)
{
	char b[64];

	if (sluice_ywant_kind(c, key, v, YN_SEQ) < 0)
		return -1;
	if (v->n == 0)
		return sluice_yfail(c, v, "'methods' must not be empty");
	if (v->n > 7)
		return sluice_yfail(c, v, "too many methods (there are 7)");
	e->methods = calloc(v->n, sizeof(*e->methods));
	if (!e->methods)
		return sluice_yfail(c, v, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *m = v->kids[i];
		const char *known = NULL;

		if (m->type != YN_SCALAR || sluice_yis_null(m))
			return sluice_yfail(c, m, "a method must be a string, not %s", sluice_ykind(m));
		for (size_t j = 0; http_methods[j]; j++)
			if (strlen(http_methods[j]) == m->len && strcasecmp(http_methods[j], m->value) == 0)
				known = http_methods[j];
		if (!known)
			return sluice_yfail(c, m, "unknown method '%s' (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS)",
				    sluice_yshown(m, b, sizeof(b)));
		for (size_t j = 0; j < e->n_methods; j++)
			if (strcmp(e->methods[j], known) == 0)
				return sluice_yfail(c, m, "duplicate method '%s'", known);
		e->methods[e->n_methods] = strdup(known);
		if (!e->methods[e->n_methods])
			return sluice_yfail(c, m, "out of memory");
		e->n_methods++;
	}
	qsort(e->methods, e->n_methods, sizeof(*e->methods), method_cmp);
	return 0;
}

static int set_entry_name(struct sluice_entry *e)
{
	char t[SLUICE_HOST_MAX + SLUICE_PATH_MAX + 64];
	char full[sizeof(t) + 32];

	switch (e->kind) {
	case SLUICE_ENTRY_HOST:
		snprintf(t, sizeof(t), "%s%s", e->wildcard ? "*." : "", e->host);
		break;
	case SLUICE_ENTRY_URL:
		if (e->url_port == (strcmp(e->url_scheme, "https") == 0 ? 443 : 80))
			snprintf(t, sizeof(t), "%s://%s%s", e->url_scheme, e->url_host, e->url_path);
		else
			snprintf(t, sizeof(t), "%s://%s:%u%s", e->url_scheme, e->url_host, e->url_port,
				 e->url_path);
		break;
	case SLUICE_ENTRY_CIDR:
		sluice_cidr_str(e, t, sizeof(t));
		break;
	case SLUICE_ENTRY_UNIX:
		snprintf(t, sizeof(t), "%s%s", e->unix_abstract ? "@" : "", e->unix_path);
		break;
	}
	snprintf(full, sizeof(full), "allow[%u] %s:%s", e->index, sluice_entry_kind_name(e->kind), t);
	e->name = strdup(full);
	return e->name ? 0 : -1;
}

static bool same_target(const struct sluice_entry *a, const struct sluice_entry *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case SLUICE_ENTRY_HOST:
		return a->wildcard == b->wildcard && strcmp(a->host, b->host) == 0;
	case SLUICE_ENTRY_URL:
		return a->url_port == b->url_port && strcmp(a->url_scheme, b->url_scheme) == 0 &&
		       strcmp(a->url_host, b->url_host) == 0 && strcmp(a->url_path, b->url_path) == 0;
	case SLUICE_ENTRY_CIDR:
		return a->family == b->family && a->prefix_len == b->prefix_len &&
		       a->protocol == b->protocol && memcmp(a->addr, b->addr, 16) == 0;
	case SLUICE_ENTRY_UNIX:
		return a->unix_abstract == b->unix_abstract && strcmp(a->unix_path, b->unix_path) == 0;
	}
	return false;
}

/* A total order on entry targets, consistent with same_target(), then by
 * position: sorting finds duplicates in O(n log n), not O(n^2). */
static int target_cmp(const void *pa, const void *pb)
{
	const struct sluice_entry *a = *(const struct sluice_entry *const *)pa;
	const struct sluice_entry *b = *(const struct sluice_entry *const *)pb;
	int r = (int)a->kind - (int)b->kind;

	if (!r) {
		switch (a->kind) {
		case SLUICE_ENTRY_HOST:
			r = (int)a->wildcard - (int)b->wildcard;
			if (!r)
				r = strcmp(a->host, b->host);
			break;
		case SLUICE_ENTRY_URL:
			r = (int)a->url_port - (int)b->url_port;
			if (!r)
				r = strcmp(a->url_scheme, b->url_scheme);
			if (!r)
				r = strcmp(a->url_host, b->url_host);
			if (!r)
				r = strcmp(a->url_path, b->url_path);
			break;
		case SLUICE_ENTRY_CIDR:
			r = a->family - b->family;
			if (!r)
				r = (int)a->prefix_len - (int)b->prefix_len;
			if (!r)
				r = (int)a->protocol - (int)b->protocol;
			if (!r)
				r = memcmp(a->addr, b->addr, 16);
			break;
		case SLUICE_ENTRY_UNIX:
			r = (int)a->unix_abstract - (int)b->unix_abstract;
			if (!r)
				r = strcmp(a->unix_path, b->unix_path);
			break;
		}
	}
	if (!r)
		r = a->index < b->index ? -1 : a->index > b->index;
	return r;
}

/*
 * The first entry (in file order) that names the same target as an earlier
 * one: returns its index and the earliest twin in *twin, or -1 if none.
 */
static long first_duplicate(const struct sluice_policy *p, size_t *twin)
{
	const struct sluice_entry **v = malloc((p->n_entries ? p->n_entries : 1) * sizeof(*v));
	long best = -1;

	if (!v)
		return -1;
	for (size_t i = 0; i < p->n_entries; i++)
		v[i] = &p->entries[i];
	qsort(v, p->n_entries, sizeof(*v), target_cmp);
	for (size_t i = 1; i < p->n_entries; i++) {
		size_t first = i - 1;

		if (!same_target(v[first], v[i]))
			continue;
		while (first > 0 && same_target(v[first - 1], v[i]))
			first--;
		if (best < 0 || v[i]->index < (size_t)best) {
			best = (long)v[i]->index;
			*twin = v[first]->index;
		}
	}
	free(v);
	return best;
}

/* Which of host, url, cidr, unix the entry `m` is (e->kind), with its key
 * and value.  Exactly one; 0 or -1 with c->err set. */
static int entry_kind(struct ctx *c, const struct ynode *m, struct sluice_entry *e, const struct ynode **kind_key,
		      const struct ynode **kind_val)
{
	const char *kinds[] = { "host", "url", "cidr", "unix" };
	char b[64];

	*kind_key = NULL;
	for (int i = 0; i < 4; i++) {
		const struct ynode *k = NULL;
		const struct ynode *val = sluice_ymap_get(m, kinds[i], &k);

		if (!val)
			continue;
		if (*kind_key) {
			const struct ynode *later = k->line > (*kind_key)->line ||
				(k->line == (*kind_key)->line && k->col > (*kind_key)->col) ? k : (*kind_key);
			const struct ynode *first = later == k ? (*kind_key) : k;

			return sluice_yfail(c, later, "an entry has exactly one of host, url, cidr, unix: '%s' and '%s' together",
				    first->value, later->value);
		}
		*kind_key = k;
		*kind_val = val;
		e->kind = (enum sluice_entry_kind)(i + 1);
	}
	if (!*kind_key) {
		for (size_t i = 0; i < m->n; i += 2) {
			const char *k = m->kids[i]->value;

			if (strcmp(k, "ports") && strcmp(k, "why") && strcmp(k, "methods") &&
			    strcmp(k, "protocol") && strcmp(k, "inspect") && strcmp(k, "programs") && strcmp(k, "websocket") &&
			    !sluice_entry_meta_key(k))
				return sluice_yfail(c, m->kids[i], "unknown key '%s' in allow entry",
					    sluice_yshown(m->kids[i], b, sizeof(b)));
		}
		return sluice_yfail(c, m, "allow[%u] needs one of host, url, cidr or unix", e->index);
	}
	return 0;
}

/* Unknown keys before wrong types: a key of another kind is a typo or a
 * misunderstanding ("ports" on a url entry).  0 or -1 with c->err set. */
static int entry_keys_of_kind(struct ctx *c, const struct ynode *m, const struct sluice_entry *e)
{
	static const char *const host_keys[] = { "host", "ports", "inspect", "programs", "why", NULL };
	static const char *const url_keys[] = { "url", "methods", "credential", "programs", "websocket", "why", NULL };
	static const char *const cidr_keys[] = { "cidr", "ports", "protocol", "programs", "why", NULL };
	static const char *const unix_keys[] = { "unix", "programs", "why", NULL };   /* programs: refused in policy_prog.c */
	char b[64];
	const char *const *known = e->kind == SLUICE_ENTRY_HOST ? host_keys :
				   e->kind == SLUICE_ENTRY_URL ? url_keys :
				   e->kind == SLUICE_ENTRY_UNIX ? unix_keys : cidr_keys;

	for (size_t i = 0; i < m->n; i += 2) {
		const struct ynode *k = m->kids[i];
		bool ok = false;

		for (size_t j = 0; known[j]; j++)
			if (strcmp(k->value, known[j]) == 0)
				ok = true;
		if (ok || sluice_entry_meta_key(k->value))
			continue;
		if (e->kind == SLUICE_ENTRY_URL && strcmp(k->value, "ports") == 0)
			return sluice_yfail(c, k, "'ports' is not allowed in a url entry (the port is part of the url)");
		if (e->kind == SLUICE_ENTRY_UNIX && strcmp(k->value, "ports") == 0)
			return sluice_yfail(c, k, "'ports' is not allowed in a unix entry");
		if (e->kind == SLUICE_ENTRY_URL && strcmp(k->value, "inspect") == 0)
			return sluice_yfail(c, k, "'inspect' is not allowed in a url entry (https:// url entries are always inspected)");
		if (strcmp(k->value, "inspect") == 0)
			return sluice_yfail(c, k, "'inspect' is not allowed in a %s entry (its traffic never passes the proxy)",
				    sluice_entry_kind_name(e->kind));
		if (strcmp(k->value, "credential") == 0)
			return sluice_yfail(c, k, "'credential' is not allowed in a %s entry (only url entries carry one)",
				    sluice_entry_kind_name(e->kind));
		if (strcmp(k->value, "websocket") == 0)
			return sluice_yfail(c, k, "'websocket' is not allowed in a %s entry (only a url entry allows an upgrade)",
				    sluice_entry_kind_name(e->kind));
		if (strcmp(k->value, "methods") == 0 || strcmp(k->value, "protocol") == 0)
			return sluice_yfail(c, k, "'%s' is not allowed in a %s entry", k->value,
				    sluice_entry_kind_name(e->kind));
		return sluice_yfail(c, k, "unknown key '%s' in allow entry", sluice_yshown(k, b, sizeof(b)));
	}
	return 0;
}

/* The entry's target (its host, url, cidr or unix value).  0 or -1 with c->err set. */
static int entry_target(struct ctx *c, const struct ynode *kind_val, struct sluice_entry *e)
{
	switch (e->kind) {
	case SLUICE_ENTRY_HOST:
		if (parse_host(c, kind_val, true, "a host entry", &e->host, &e->wildcard) < 0)
			return -1;
		break;
	case SLUICE_ENTRY_URL:
		if (parse_url(c, kind_val, e) < 0)
			return -1;
		break;
	case SLUICE_ENTRY_CIDR:
		if (parse_cidr(c, kind_val, e) < 0)
			return -1;
		break;
	case SLUICE_ENTRY_UNIX:
		if (parse_unix(c, kind_val, e) < 0)
			return -1;
		break;
	}
	return 0;
}

/* The entry's options by kind: inspect (host), ports (host, cidr), methods
 * (url; GET and HEAD by default), protocol (cidr; tcp by default).  0 or
 * -1 with c->err set. */
static int entry_options(struct ctx *c, const struct ynode *m, struct sluice_entry *e)
{
	const struct ynode *kn = NULL, *v;
	char b[64];

	if (e->kind == SLUICE_ENTRY_HOST) {
		v = sluice_ymap_get(m, "inspect", &kn);
		if (v) {
			if (!sluice_yis_bool(v))
				return sluice_yfail(c, v, "'inspect' must be true or false, not %s", sluice_ykind(v));
			e->inspect = strcasecmp(v->value, "true") == 0 || strcasecmp(v->value, "yes") == 0 ||
				     strcasecmp(v->value, "on") == 0;
		}
	}
	if (e->kind == SLUICE_ENTRY_UNIX) {
		/* no ports, no methods */
	} else if (e->kind != SLUICE_ENTRY_URL) {
		v = sluice_ymap_get(m, "ports", &kn);
		if (!v)
			return sluice_yfail(c, m, "%s entry needs 'ports' (there is no \"all ports\")",
				    sluice_entry_kind_name(e->kind));
		if (parse_ports(c, kn, v, e) < 0)
			return -1;
	} else {
		v = sluice_ymap_get(m, "methods", &kn);
		if (v) {
			if (parse_methods(c, kn, v, e) < 0)
				return -1;
		} else {
			e->methods = calloc(2, sizeof(*e->methods));
			if (!e->methods)
				return sluice_yfail(c, m, "out of memory");
			e->methods[0] = strdup("GET");
			e->methods[1] = strdup("HEAD");
			e->n_methods = 2;
			if (!e->methods[0] || !e->methods[1])
				return sluice_yfail(c, m, "out of memory");
		}
	}
	if (e->kind == SLUICE_ENTRY_CIDR) {
		e->protocol = IPPROTO_TCP;
		v = sluice_ymap_get(m, "protocol", &kn);
		if (v) {
			if (sluice_ywant_string(c, kn, v) < 0)
				return -1;
			if (strcmp(v->value, "tcp") == 0)
				e->protocol = IPPROTO_TCP;
			else if (strcmp(v->value, "udp") == 0)
				e->protocol = IPPROTO_UDP;
			else
				return sluice_yfail(c, v, "protocol must be tcp or udp, not '%s'", sluice_yshown(v, b, sizeof(b)));
		}
	} else {
		e->protocol = IPPROTO_TCP;
	}
	return 0;
}

/* The entry's expires, owner and ticket (policy_expiry.c).  0 or -1 with c->err set. */
static int entry_meta(struct ctx *c, const struct ynode *m, struct sluice_entry *e)
{
	for (size_t i = 0; i < m->n; i += 2) {
		char why[256];

		if (!sluice_entry_meta_key(m->kids[i]->value))
			continue;
		if (sluice_ywant_string(c, m->kids[i], m->kids[i + 1]) < 0)
			return -1;
		if (sluice_entry_meta_set(e, m->kids[i]->value, m->kids[i + 1]->value, m->kids[i + 1]->len, why,
					  sizeof(why)) < 0)
			return sluice_yfail(c, m->kids[i + 1], "%s", why);
	}
	return 0;
}

static int parse_entry(struct ctx *c, const struct ynode *m, struct sluice_entry *e)
{
	static const char *const entry_keys[] = { "host", "url", "cidr", "unix", "ports", "methods",
						  "protocol", "inspect", "credential", "programs", "websocket", "why", "expires",
						  "owner", "ticket", NULL };
	const struct ynode *kind_key = NULL, *kind_val = NULL;

	e->line = m->line;
	e->column = m->col;
	if (m->type != YN_MAP)
		return sluice_yfail(c, m, "allow[%u] must be a mapping (host/url/cidr, ports, why), not %s",
			    e->index, sluice_ykind(m));
	if (sluice_ycheck_keys(c, m, entry_keys, "allow entry") < 0 ||
	    entry_kind(c, m, e, &kind_key, &kind_val) < 0 || entry_keys_of_kind(c, m, e) < 0)
		return -1;
	if (sluice_ywant_string(c, kind_key, kind_val) < 0 || entry_target(c, kind_val, e) < 0 ||
	    entry_options(c, m, e) < 0)
		return -1;
	if (e->kind == SLUICE_ENTRY_URL && sluice_cred_parse_entry(c, m, e) < 0)
		return -1;
	if (e->kind == SLUICE_ENTRY_URL && sluice_ws_parse_entry(c, m, e) < 0)
		return -1;
	if (sluice_ywant_why(c, m, sluice_entry_kind_name(e->kind), &e->why) < 0 || entry_meta(c, m, e) < 0)
		return -1;
	if (sluice_prog_parse_entry(c, m, e) < 0)
		return -1;
	if (set_entry_name(e) < 0)
		return sluice_yfail(c, m, "out of memory");
	return 0;
}

/* --- top level ----------------------------------------------------------------- */

static int qtype_cmp(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static int parse_dns(struct ctx *c, const struct ynode *key, const struct ynode *v,
		     struct sluice_policy *p)
{
	static const char *const keys[] = { "on_deny", "qtypes", NULL };
	const struct ynode *kn, *x;
	char b[64];

	if (sluice_ywant_kind(c, key, v, YN_MAP) < 0 || sluice_ycheck_keys(c, v, keys, "dns") < 0)
		return -1;
	x = sluice_ymap_get(v, "on_deny", &kn);
	if (x) {
		if (sluice_ywant_string(c, kn, x) < 0)
			return -1;
		if (strcmp(x->value, "nxdomain") == 0)
			p->dns_on_deny = SLUICE_DNS_NXDOMAIN;
		else if (strcmp(x->value, "refused") == 0)
			p->dns_on_deny = SLUICE_DNS_REFUSED;
		else
			return sluice_yfail(c, x, "dns.on_deny must be nxdomain or refused, not '%s'",
				    sluice_yshown(x, b, sizeof(b)));
	}
	x = sluice_ymap_get(v, "qtypes", &kn);
	if (x) {
		uint16_t *q;

		if (sluice_ywant_kind(c, kn, x, YN_SEQ) < 0)
			return -1;
		if (x->n > SLUICE_POLICY_MAX_QTYPES)
			return sluice_yfail(c, x, "too many qtypes (at most %u)", SLUICE_POLICY_MAX_QTYPES);
		q = calloc(x->n ? x->n : 1, sizeof(*q));
		if (!q)
			return sluice_yfail(c, x, "out of memory");
		free(p->dns_qtypes);
		p->dns_qtypes = q;
		p->n_dns_qtypes = 0;
		for (size_t i = 0; i < x->n; i++) {
			const struct ynode *t = x->kids[i];
			unsigned num = 0;
			bool found = false;

			if (t->type != YN_SCALAR || sluice_yis_null(t))
				return sluice_yfail(c, t, "a qtype must be a name (A, AAAA, ...) or a number, not %s",
					    sluice_ykind(t));
			for (size_t j = 0; j < sizeof(qtypes) / sizeof(qtypes[0]); j++)
				if (strcasecmp(qtypes[j].name, t->value) == 0 &&
				    strlen(qtypes[j].name) == t->len) {
					num = qtypes[j].type;
					found = true;
				}
			if (!found && sluice_yis_int(t) && t->value[0] != '-' && t->value[0] != '+' &&
			    parse_port_num(t->value, t->len, &num) == 0 && num >= 1 && num <= 65535)
				found = true;
			if (!found)
				return sluice_yfail(c, t, "unknown DNS qtype '%s'", sluice_yshown(t, b, sizeof(b)));
			for (size_t j = 0; j < p->n_dns_qtypes; j++)
				if (p->dns_qtypes[j] == num)
					return sluice_yfail(c, t, "duplicate qtype '%s'", sluice_yshown(t, b, sizeof(b)));
			p->dns_qtypes[p->n_dns_qtypes++] = (uint16_t)num;
		}
		qsort(p->dns_qtypes, p->n_dns_qtypes, sizeof(*p->dns_qtypes), qtype_cmp);
	}
	return 0;
}

static bool name_ok(const struct ynode *v)
{
	if (v->len == 0 || v->len > 64)
		return false;
	for (size_t i = 0; i < v->len; i++) {
		char ch = v->value[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '-' || ch == '_' || ch == '.'))
			return false;
	}
	return true;
}

static struct sluice_policy *policy_new(const char *path, const char *name)
{
	struct sluice_policy *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->version = 1;
	p->mode = SLUICE_MODE_ENFORCE;
	p->dns_on_deny = SLUICE_DNS_NXDOMAIN;
	p->dns_qtypes = calloc(2, sizeof(*p->dns_qtypes));
	p->path = strdup(path);
	p->name = name ? strdup(name) : NULL;
	if (!p->dns_qtypes || !p->path || (name && !p->name)) {
		sluice_policy_free(p);
		return NULL;
	}
	p->dns_qtypes[0] = 1;   /* A */
	p->dns_qtypes[1] = 28;  /* AAAA */
	p->n_dns_qtypes = 2;
	return p;
}

static int parse_policy(struct ctx *c, const struct ynode *root, struct sluice_policy *p)
{
	static const char *const keys[] = { "version", "name", "mode", "dns", "credentials", "filesystem", "families", "tls", "allow", NULL };
	const struct ynode *kn, *v;
	char b[80];

	if (root->type != YN_MAP)
		return sluice_yfail(c, root, "a policy must be a mapping (version, name, allow ...), not %s",
			    sluice_ykind(root));
	if (sluice_ycheck_keys(c, root, keys, "policy") < 0)
		return -1;

	v = sluice_ymap_get(root, "version", &kn);
	if (!v)
		return sluice_yfail(c, root, "missing 'version' (must be 1)");
	if (!sluice_yis_int(v))
		return sluice_yfail(c, v, "'version' must be an integer, not %s", sluice_ykind(v));
	if (strcmp(v->value, "1") != 0)
		return sluice_yfail(c, v, "unsupported version %s (this sluice reads version 1)", sluice_yshown(v, b, sizeof(b)));

	v = sluice_ymap_get(root, "name", &kn);
	if (!v)
		return sluice_yfail(c, root, "missing 'name' (it appears in every log line)");
	if (sluice_ywant_string(c, kn, v) < 0)
		return -1;
	if (!name_ok(v))
		return sluice_yfail(c, v, "'name' must be 1-64 characters of A-Z a-z 0-9 . _ -, not '%s'",
			    sluice_yshown(v, b, sizeof(b)));
	p->name = strdup(v->value);
	if (!p->name)
		return sluice_yfail(c, v, "out of memory");

	v = sluice_ymap_get(root, "mode", &kn);
	if (v) {
		if (sluice_ywant_string(c, kn, v) < 0)
			return -1;
		if (strcmp(v->value, "enforce") == 0)
			p->mode = SLUICE_MODE_ENFORCE;
		else if (strcmp(v->value, "audit") == 0)
			p->mode = SLUICE_MODE_AUDIT;
		else
			return sluice_yfail(c, v, "mode must be audit or enforce, not '%s'", sluice_yshown(v, b, sizeof(b)));
	}

	v = sluice_ymap_get(root, "dns", &kn);
	if (v && parse_dns(c, kn, v, p) < 0)
		return -1;

	if (sluice_fs_parse(c, root, p) < 0 || sluice_family_parse(c, root, p) < 0 || sluice_tls_parse(c, root, p) < 0)
		return -1;
	if (sluice_cred_parse(c, root, p) < 0)
		return -1;
	v = sluice_ymap_get(root, "allow", &kn);
	if (v && !sluice_yis_null(v)) {
		if (sluice_ywant_kind(c, kn, v, YN_SEQ) < 0)
			return -1;
		if (v->n > SLUICE_POLICY_MAX_ENTRIES)
			return sluice_yfail(c, v, "too many allow entries (at most %u)", SLUICE_POLICY_MAX_ENTRIES);
		p->entries = calloc(v->n ? v->n : 1, sizeof(*p->entries));
		if (!p->entries)
			return sluice_yfail(c, v, "out of memory");
		for (size_t i = 0; i < v->n; i++) {
			struct sluice_entry *e = &p->entries[i];

			e->index = (unsigned)i;
			p->n_entries = i + 1;
			if (parse_entry(c, v->kids[i], e) < 0)
				return -1;
		}
		{
			size_t j = 0;
			long i = first_duplicate(p, &j);

			if (i >= 0) {
				const struct sluice_entry *e = &p->entries[i];

				return sluice_yfail(c, v->kids[i],
					    "duplicate entry: %s %s already allowed by allow[%zu] at line %u (merge them)",
					    sluice_entry_kind_name(e->kind), strchr(e->name, ':') + 1, j,
					    p->entries[j].line);
			}
		}
	}
	return 0;
}

int sluice_policy_load_buffer(const char *name, const char *buf, size_t len,
			      struct sluice_policy **out, struct sluice_policy_error *err)
{
	struct sluice_policy_error dummy = { .line = 0 };
	struct ctx c = { .file = name ? name : "<policy>", .err = err ? err : &dummy, .policy = NULL };
	struct ynode *root;
	struct sluice_policy *p;

	*out = NULL;
	memset(c.err, 0, sizeof(*c.err));
	if (!buf && len)
		return sluice_yfail_at(&c, 0, 0, "no policy text");
	if (len > SLUICE_POLICY_MAX_BYTES)
		return sluice_yfail_at(&c, 0, 0, "policy too large (more than %u bytes)", SLUICE_POLICY_MAX_BYTES);
	if (len && memchr(buf, '\0', len))
		return sluice_yfail_at(&c, 0, 0, "NUL byte in policy file");
	root = sluice_ytree(&c, buf ? buf : "", len);
	if (!root)
		return -1;
	p = policy_new(c.file, NULL);
	if (!p) {
		sluice_ynode_free(root);
		return sluice_yfail_at(&c, 0, 0, "out of memory");
	}
	c.policy = p;
	if (parse_policy(&c, root, p) < 0 || sluice_policy_compute_digest(p) < 0) {
		if (!c.err->message[0])
			sluice_yfail_at(&c, 0, 0, "out of memory");
		sluice_ynode_free(root);
		sluice_policy_free(p);
		return -1;
	}
	sluice_ynode_free(root);
	*out = p;
	return 0;
}

int sluice_policy_load_file(const char *path, struct sluice_policy **out,
			    struct sluice_policy_error *err)
{
	struct sluice_policy_error dummy = { .line = 0 };
	struct ctx c = { .file = path ? path : "<policy>", .err = err ? err : &dummy };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	*out = NULL;
	f = fopen(path, "re");
	if (!f)
		return sluice_yfail_at(&c, 0, 0, "cannot open: %s", strerror(errno));
	buf = malloc(SLUICE_POLICY_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		return sluice_yfail_at(&c, 0, 0, "out of memory");
	}
	len = fread(buf, 1, SLUICE_POLICY_MAX_BYTES + 1, f);
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		free(buf);
		return sluice_yfail_at(&c, 0, 0, "cannot read: %s", strerror(e));
	}
	fclose(f);
	if (len > SLUICE_POLICY_MAX_BYTES) {
		free(buf);
		return sluice_yfail_at(&c, 0, 0, "policy too large (more than %u bytes)", SLUICE_POLICY_MAX_BYTES);
	}
	rc = sluice_policy_load_buffer(path, buf, len, out, c.err);
	free(buf);
	return rc;
}

struct sluice_policy *sluice_policy_default(void)
{
	struct sluice_policy *p = policy_new("<built-in>", "default-deny");

	if (!p)
		return NULL;
	if (sluice_policy_compute_digest(p) < 0) {
		sluice_policy_free(p);
		return NULL;
	}
	return p;
}

void sluice_policy_free(struct sluice_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_entries; i++) {
		struct sluice_entry *e = &p->entries[i];

		free(e->name);
		free(e->why);
		free(e->ports);
		free(e->host);
		free(e->url_scheme);
		free(e->url_host);
		free(e->url_path);
		free(e->unix_path);
		free(e->credential);
		free(e->owner);
		free(e->ticket);
		sluice_prog_free(e);
		for (size_t j = 0; j < e->n_methods; j++)
			free(e->methods[j]);
		free(e->methods);
	}
	free(p->entries);
	sluice_cred_free(p);
	sluice_fs_free(p);
	sluice_family_free(p);
	sluice_tls_free(p);
	free(p->dns_qtypes);
	free(p->path);
	free(p->name);
	free(p);
}

const char *sluice_policy_error_str(const struct sluice_policy_error *err, char *buf, size_t len)
{
	if (!buf || len == 0)
		return "";
	if (!err)
		snprintf(buf, len, "(no error)");
	else if (err->line)
		snprintf(buf, len, "%s:%u:%u: %s", err->file, err->line, err->column, err->message);
	else
		snprintf(buf, len, "%s: %s", err->file, err->message);
	return buf;
}
