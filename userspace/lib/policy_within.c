/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_within.c - is everything a policy allows also allowed by a
 * boundary?  Decided exactly, entry by entry, with one concrete example per
 * excess (docs/policy.md "Change control").  The sets compared are the ones
 * the matchers of policy.c define:
 *
 *   connections  cidr entries: (address, protocol, port)
 *   requests     host entries: (name, port), every scheme, method and path
 *                (TLS passthrough included); url entries: (scheme, host,
 *                port, method, path under the prefix)
 *   DNS answers  (name, qtype) for every name of a host entry or url host
 *   unix         paths (exact, or every path below a directory) and
 *                abstract names
 *   mode         audit lets everything through
 *   credentials  a request a url entry with `credential:` allows carries that
 *                credential's header (the first url entry matching it
 *                decides, as in the proxy): the boundary's deciding entry
 *                for the same request must carry a credential of the same
 *                name and header field; a request sent without one is
 *                narrower and needs no credential in the boundary
 *
 * Expiry is not a narrowing here: a policy entry allows until it expires,
 * and a boundary is a standing limit (boundary entries with `expires:` are
 * refused by the caller).  The decisions below compare entries directly,
 * not through the matchers, which skip expired entries.  Likewise
 * `programs:`: a policy entry is taken as any program's (a program list
 * only narrows what it allows: an over-approximation, so never a missed
 * excess); boundary entries with `programs:` are refused by the caller.
 */
#include "policy_internal.h"
#include "policy_within.h"

#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <arpa/inet.h>

struct out {
	struct sluice_excess *v;
	size_t n, cap;
	bool oom;
};

static void add(struct out *o, const struct sluice_entry *e, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add(struct out *o, const struct sluice_entry *e, const char *what, const char *fmt, ...)
{
	struct sluice_excess *x;
	va_list ap;

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct sluice_excess *nv = realloc(o->v, cap * sizeof(*nv));

		if (!nv) {
			o->oom = true;
			return;
		}
		o->v = nv;
		o->cap = cap;
	}
	x = &o->v[o->n++];
	memset(x, 0, sizeof(*x));
	x->entry = e ? e->index : SLUICE_EXCESS_POLICY;
	x->line = e ? e->line : 0;
	x->column = e ? e->column : 0;
	snprintf(x->what, sizeof(x->what), "%s", what);
	va_start(ap, fmt);
	vsnprintf(x->example, sizeof(x->example), fmt, ap);
	va_end(ap);
}

/* --- names ------------------------------------------------------------------- */

/* Is `name` (normalised) strictly under `parent` (one or more labels in front)? */
static bool under(const char *name, const char *parent)
{
	size_t n = strlen(name), p = strlen(parent);

	return n > p + 1 && name[n - p - 1] == '.' && strcmp(name + n - p, parent) == 0;
}

/* Does boundary host entry b match the exact name n (ports aside)? */
static bool bhost_matches(const struct sluice_entry *b, const char *n)
{
	return b->wildcard ? under(n, b->host) : strcmp(b->host, n) == 0;
}

/* Ports of (kind HOST) boundary entries that allow the exact name n. */
static void ports_of_name(const struct sluice_policy *B, const char *n, uint8_t *set)
{
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if (b->kind != SLUICE_ENTRY_HOST || !bhost_matches(b, n))
			continue;
		for (size_t k = 0; k < b->n_ports; k++)
			for (unsigned p = b->ports[k].lo; p <= b->ports[k].hi; p++)
				set[p >> 3] |= (uint8_t)(1u << (p & 7));
	}
}

/* Ports every name under `x` gets: boundary wildcards *.y with x == y or x under y. */
static void ports_of_wild(const struct sluice_policy *B, const char *x, uint8_t *set)
{
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if (b->kind != SLUICE_ENTRY_HOST || !b->wildcard ||
		    !(strcmp(x, b->host) == 0 || under(x, b->host)))
			continue;
		for (size_t k = 0; k < b->n_ports; k++)
			for (unsigned p = b->ports[k].lo; p <= b->ports[k].hi; p++)
				set[p >> 3] |= (uint8_t)(1u << (p & 7));
	}
}

/* Is the exact name n one the boundary names exactly (host or url host)? */
static bool bname_exact(const struct sluice_policy *B, const char *n)
{
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if ((b->kind == SLUICE_ENTRY_HOST && !b->wildcard && strcmp(b->host, n) == 0) ||
		    (b->kind == SLUICE_ENTRY_URL && strcmp(b->url_host, n) == 0))
			return true;
	}
	return false;
}

/*
 * A name under `x` with exactly one label in front that the boundary
 * names by no exact entry: it gets exactly what the wildcards over x give
 * (a boundary wildcard strictly under x needs two labels in front).
 * Returns false when no such name fits in 253 bytes (*.x is then empty).
 */
static bool fresh_name(const struct sluice_policy *B, const char *x, char *buf, size_t len)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";

	for (unsigned long k = 0; k < 100000000ul; k++) {
		char label[16];
		unsigned long v = k;
		size_t l = 0;

		/* bijective base 36: a..9, aa, ab, ... */
		do {
			label[l++] = alpha[v % 36];
			v /= 36;
		} while (v-- > 0 && l < sizeof(label) - 1);
		label[l] = '\0';
		if (l + 1 + strlen(x) > SLUICE_HOST_MAX)
			return false;
		snprintf(buf, len, "%s.%s", label, x);
		if (!bname_exact(B, buf))
			return true;
	}
	return false;
}

static bool ports_missing(const struct sluice_entry *e, const uint8_t *set, unsigned *first)
{
	for (size_t k = 0; k < e->n_ports; k++)
		for (unsigned p = e->ports[k].lo; p <= e->ports[k].hi; p++)
			if (!(set[p >> 3] & (1u << (p & 7)))) {
				*first = p;
				return true;
			}
	return false;
}

/* Does the boundary resolve the exact name n? */
static bool bresolves(const struct sluice_policy *B, const char *n)
{
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if ((b->kind == SLUICE_ENTRY_HOST && bhost_matches(b, n)) ||
		    (b->kind == SLUICE_ENTRY_URL && strcmp(b->url_host, n) == 0))
			return true;
	}
	return false;
}

/* Does the boundary resolve every name under x? */
static bool bresolves_all_under(const struct sluice_policy *B, const char *x)
{
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if (b->kind == SLUICE_ENTRY_HOST && b->wildcard && (strcmp(x, b->host) == 0 || under(x, b->host)))
			return true;
	}
	return false;
}

static void check_host(const struct sluice_policy *B, const struct sluice_entry *e, struct out *o)
{
	uint8_t *set = calloc(1, 65536 / 8);
	char name[SLUICE_HOST_MAX + 2];
	unsigned port;

	if (!set) {
		o->oom = true;
		return;
	}
	if (e->wildcard) {
		if (!fresh_name(B, e->host, name, sizeof(name))) {
			free(set);
			return;   /* no name fits under it: it allows nothing */
		}
		ports_of_wild(B, e->host, set);
		if (!bresolves_all_under(B, e->host))
			add(o, e, "dns", "a DNS answer for %s", name);
	} else {
		snprintf(name, sizeof(name), "%s", e->host);
		ports_of_name(B, e->host, set);
		if (!bresolves(B, e->host))
			add(o, e, "dns", "a DNS answer for %s", name);
	}
	if (ports_missing(e, set, &port))
		add(o, e, "request", "TLS or HTTP to %s:%u (any path, any method)", name, port);
	free(set);
}

static void check_url(const struct sluice_policy *B, const struct sluice_entry *e, struct out *o)
{
	uint8_t *set = calloc(1, 65536 / 8);

	if (!set) {
		o->oom = true;
		return;
	}
	if (!bresolves(B, e->url_host))
		add(o, e, "dns", "a DNS answer for %s", e->url_host);
	/* a boundary host entry for the name and port allows every request */
	ports_of_name(B, e->url_host, set);
	if (set[e->url_port >> 3] & (1u << (e->url_port & 7))) {
		free(set);
		return;
	}
	free(set);
	/* else each method, with the prefix itself as the path: a boundary
	 * prefix that covers the policy's prefix path covers everything under
	 * it (prefix sets nest), and none that does not can */
	for (size_t m = 0; m < e->n_methods; m++) {
		bool ok = false;

		for (size_t i = 0; i < B->n_entries && !ok; i++) {
			const struct sluice_entry *b = &B->entries[i];

			if (b->kind != SLUICE_ENTRY_URL || b->url_port != e->url_port ||
			    strcmp(b->url_scheme, e->url_scheme) || strcmp(b->url_host, e->url_host) ||
			    !sluice_path_prefix_match(b->url_path, e->url_path))
				continue;
			for (size_t k = 0; k < b->n_methods; k++)
				if (strcmp(b->methods[k], e->methods[m]) == 0)
					ok = true;
		}
		if (!ok)
			add(o, e, "request", "%s %s://%s:%u%s", e->methods[m], e->url_scheme, e->url_host, e->url_port,
			    e->url_path);
	}
}

/* --- credentials ------------------------------------------------------------------ */

/* The credential (or NULL) the first url entry of `p` matching the request
 * sends; entries compared as written (expiry aside, as everywhere here). */
static const struct sluice_credential *cred_of(const struct sluice_policy *p, const char *scheme, const char *host,
					       uint16_t port, const char *method, const char *path, bool *matched)
{
	*matched = false;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *u = &p->entries[i];
		bool m = false;

		if (u->kind != SLUICE_ENTRY_URL || u->url_port != port || strcmp(u->url_scheme, scheme) ||
		    strcmp(u->url_host, host) || !sluice_path_prefix_match(u->url_path, path))
			continue;
		for (size_t k = 0; k < u->n_methods; k++)
			if (strcmp(u->methods[k], method) == 0)
				m = true;
		if (!m)
			continue;
		*matched = true;
		return u->credential && u->credential_idx < p->n_credentials ? &p->credentials[u->credential_idx] : NULL;
	}
	return NULL;
}

static bool same_cred(const struct sluice_credential *a, const struct sluice_credential *b)
{
	return a && b && strcmp(a->name, b->name) == 0 && strcasecmp(a->header_name, b->header_name) == 0;
}

/*
 * For the url entry e of P: every request it matches whose credential
 * (P's first matching url entry's) is not NULL must get the same one from
 * B.  Paths fall into the atoms of the (nested) prefix sets of the url
 * entries of both policies on e's scheme, host and port; each prefix is its
 * atom's representative, so trying the prefixes inside e's is exact.
 */
static void check_cred(const struct sluice_policy *P, const struct sluice_policy *B, const struct sluice_entry *e,
		       struct out *o)
{
	const struct sluice_policy *both[2] = { P, B };

	for (size_t m = 0; m < e->n_methods; m++)
		for (int w = 0; w < 2; w++)
			for (size_t i = 0; i < both[w]->n_entries; i++) {
				const struct sluice_entry *u = &both[w]->entries[i];
				const struct sluice_credential *cp, *cb;
				bool pm, bm;

				if (u->kind != SLUICE_ENTRY_URL || u->url_port != e->url_port ||
				    strcmp(u->url_scheme, e->url_scheme) || strcmp(u->url_host, e->url_host) ||
				    !sluice_path_prefix_match(e->url_path, u->url_path))
					continue;
				/* u->url_path: a representative path inside e's prefix */
				cp = cred_of(P, e->url_scheme, e->url_host, e->url_port, e->methods[m], u->url_path, &pm);
				if (!cp)
					continue;
				cb = cred_of(B, e->url_scheme, e->url_host, e->url_port, e->methods[m], u->url_path, &bm);
				if (same_cred(cp, cb))
					continue;
				add(o, e, "request", "%s %s://%s:%u%s with credential %s (%s), which the boundary %s",
				    e->methods[m], e->url_scheme, e->url_host, e->url_port, u->url_path, cp->name,
				    cp->header_name, cb ? "sends another credential on" : "sends no credential on");
				return;
			}
}

/* --- cidr ---------------------------------------------------------------------- */

static bool bit(const uint8_t *a, unsigned i)
{
	return a[i / 8] & (0x80u >> (i % 8));
}

/* Does prefix (a, la) contain prefix (b, lb)?  Same family. */
static bool pcontains(const uint8_t *a, unsigned la, const uint8_t *b, unsigned lb)
{
	if (la > lb)
		return false;
	for (unsigned i = 0; i < la; i++)
		if (bit(a, i) != bit(b, i))
			return false;
	return true;
}

static void add_ports(uint8_t *set, const struct sluice_entry *b)
{
	for (size_t k = 0; k < b->n_ports; k++)
		for (unsigned p = b->ports[k].lo; p <= b->ports[k].hi; p++)
			set[p >> 3] |= (uint8_t)(1u << (p & 7));
}

/*
 * Every address of the prefix (q, lq) gets at least `have` plus the ports
 * of boundary entries of e's family and protocol equal to (q, lq); split
 * while boundary entries lie strictly inside.  Returns true and fills the
 * example when some address lacks a port of e.
 */
static bool cidr_gap(const struct sluice_policy *B, const struct sluice_entry *e, const uint8_t *q, unsigned lq,
		     const uint8_t *have, uint8_t *addr_out, unsigned *port_out)
{
	unsigned maxlen = e->family == AF_INET ? 32 : 128;
	uint8_t *set = malloc(65536 / 8);
	bool inside = false, gap = false;

	if (!set)
		return false;
	memcpy(set, have, 65536 / 8);
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if (b->kind != SLUICE_ENTRY_CIDR || b->family != e->family || b->protocol != e->protocol)
			continue;
		if (b->prefix_len == lq && pcontains(b->addr, lq, q, lq))
			add_ports(set, b);
		else if (b->prefix_len > lq && pcontains(q, lq, b->addr, b->prefix_len))
			inside = true;
	}
	if (!ports_missing(e, set, port_out)) {
		free(set);
		return false;
	}
	if (!inside || lq >= maxlen) {
		/* every address here gets `set`: the prefix's first address is an example */
		memcpy(addr_out, q, 16);
		free(set);
		return true;
	}
	for (int half = 0; half < 2 && !gap; half++) {
		uint8_t sub[16];

		memcpy(sub, q, 16);
		if (half)
			sub[lq / 8] |= (uint8_t)(0x80u >> (lq % 8));
		gap = cidr_gap(B, e, sub, lq + 1, set, addr_out, port_out);
	}
	free(set);
	return gap;
}

static void check_cidr(const struct sluice_policy *B, const struct sluice_entry *e, struct out *o)
{
	uint8_t *have = calloc(1, 65536 / 8), addr[16] = { 0 };
	unsigned port = 0;
	char a[INET6_ADDRSTRLEN];

	if (!have) {
		o->oom = true;
		return;
	}
	/* what every address of e gets from wider boundary entries */
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if (b->kind == SLUICE_ENTRY_CIDR && b->family == e->family && b->protocol == e->protocol &&
		    b->prefix_len < e->prefix_len && pcontains(b->addr, b->prefix_len, e->addr, e->prefix_len))
			add_ports(have, b);
	}
	if (cidr_gap(B, e, e->addr, e->prefix_len, have, addr, &port)) {
		inet_ntop(e->family, addr, a, sizeof(a));
		add(o, e, "connection", "%s to %s%s%s%s:%u", e->protocol == IPPROTO_UDP ? "UDP" : "TCP",
		    e->family == AF_INET6 ? "[" : "", a, e->family == AF_INET6 ? "]" : "", "", port);
	}
	free(have);
}

/* --- unix ------------------------------------------------------------------------ */

/* Does boundary unix entry b allow the path or abstract name s? */
static bool bunix_allows(const struct sluice_entry *b, bool abstract, const char *s)
{
	size_t n = strlen(b->unix_path);

	if (b->unix_abstract != abstract)
		return false;
	if (b->unix_prefix)
		return strlen(s) > n && strncmp(s, b->unix_path, n) == 0;
	return strcmp(s, b->unix_path) == 0;
}

static bool bunix_any(const struct sluice_policy *B, bool abstract, const char *s)
{
	for (size_t i = 0; i < B->n_entries; i++)
		if (B->entries[i].kind == SLUICE_ENTRY_UNIX && bunix_allows(&B->entries[i], abstract, s))
			return true;
	return false;
}

static void check_unix(const struct sluice_policy *B, const struct sluice_entry *e, struct out *o)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char path[SLUICE_UNIX_PATH_MAX + 2];
	size_t dl = strlen(e->unix_path);

	if (!e->unix_prefix) {
		if (!bunix_any(B, e->unix_abstract, e->unix_path))
			add(o, e, "unix", "a unix connect to %s%s", e->unix_abstract ? "@" : "", e->unix_path);
		return;
	}
	/* every path below d: covered by a boundary directory over it, or
	 * else some name right below d is named by no boundary entry (its
	 * directories strictly below d need a '/' after the name) */
	for (size_t i = 0; i < B->n_entries; i++) {
		const struct sluice_entry *b = &B->entries[i];

		if (b->kind == SLUICE_ENTRY_UNIX && b->unix_prefix && !b->unix_abstract &&
		    strncmp(e->unix_path, b->unix_path, strlen(b->unix_path)) == 0)
			return;
	}
	/* names of 1, 2, ... bytes of alpha; more of them than the boundary has entries */
	for (size_t len = 1; dl + len <= SLUICE_UNIX_PATH_MAX && len <= 4; len++) {
		size_t total = 1;

		for (size_t k = 0; k < len; k++)
			total *= sizeof(alpha) - 1;
		for (size_t k = 0; k < total; k++) {
			size_t v = k;

			memcpy(path, e->unix_path, dl);
			for (size_t j = 0; j < len; j++) {
				path[dl + len - 1 - j] = alpha[v % (sizeof(alpha) - 1)];
				v /= sizeof(alpha) - 1;
			}
			path[dl + len] = '\0';
			if (!bunix_any(B, false, path)) {
				add(o, e, "unix", "a unix connect to %s", path);
				return;
			}
		}
	}
}

/* --- the policy ------------------------------------------------------------------ */

int sluice_policy_within(const struct sluice_policy *p, const struct sluice_policy *boundary,
			 struct sluice_excess **out)
{
	struct out o = { 0 };
	bool names = false;

	*out = NULL;
	if (boundary->mode == SLUICE_MODE_AUDIT)
		return 0;   /* an audit-mode boundary lets everything through: nothing is beyond it */
	if (p->mode == SLUICE_MODE_AUDIT)
		add(&o, NULL, "mode", "everything (mode audit enforces nothing; the boundary is enforce)");
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		switch (e->kind) {
		case SLUICE_ENTRY_HOST:
			names = true;
			check_host(boundary, e, &o);
			break;
		case SLUICE_ENTRY_URL:
			names = true;
			check_url(boundary, e, &o);
			if (e->credential)
				check_cred(p, boundary, e, &o);
			break;
		case SLUICE_ENTRY_CIDR:
			check_cidr(boundary, e, &o);
			break;
		case SLUICE_ENTRY_UNIX:
			check_unix(boundary, e, &o);
			break;
		}
	}
	/* socket families: each one the boundary does not name */
	for (size_t i = 0; i < p->families.n; i++)
		if (!(boundary->families.mask & (1ULL << p->families.items[i].family)))
			add(&o, NULL, "family", "sockets of family %s (families:, line %u)", p->families.items[i].name,
			    p->families.items[i].line);
	/* record types: asked for any name the policy resolves */
	for (size_t i = 0; names && i < p->n_dns_qtypes; i++)
		if (!sluice_policy_allows_qtype(boundary, p->dns_qtypes[i])) {
			char num[16];

			add(&o, NULL, "dns", "DNS %s queries (dns.qtypes)",
			    sluice_qtype_str(p->dns_qtypes[i], "TYPE", num, sizeof(num)));
		}
	if (o.oom) {
		free(o.v);
		return -1;
	}
	*out = o.v;
	return (int)o.n;
}

int sluice_boundary_load(const char *path, struct sluice_policy **out, char *msg, size_t msglen)
{
	struct sluice_policy_error err;
	char buf[700];

	if (sluice_policy_load_file(path, out, &err) < 0) {
		snprintf(msg, msglen, "boundary %s", sluice_policy_error_str(&err, buf, sizeof(buf)));
		return -1;
	}
	for (size_t i = 0; i < (*out)->n_entries; i++) {
		const struct sluice_entry *e = &(*out)->entries[i];

		if (e->expires) {
			snprintf(msg, msglen, "%s:%u:%u: a boundary entry has no 'expires' (a boundary is a standing "
				 "limit; expiring exceptions belong in the policy)", path, e->line, e->column);
			sluice_policy_free(*out);
			*out = NULL;
			return -1;
		}
		if (e->n_programs) {
			/* the decision below treats every entry as any program's:
			 * exact for the policy's side (a program list only narrows),
			 * not for a boundary's */
			snprintf(msg, msglen, "%s:%u:%u: a boundary entry has no 'programs' (a boundary limits what "
				 "any program may reach; per-program entries belong in the policy)", path, e->line,
				 e->column);
			sluice_policy_free(*out);
			*out = NULL;
			return -1;
		}
	}
	return 0;
}

int sluice_policy_check_within(const struct sluice_policy *p, const struct sluice_policy *boundary,
			       const char *boundary_path, char *msg, size_t msglen)
{
	struct sluice_excess *x = NULL;
	int n = sluice_policy_within(p, boundary, &x);
	size_t o = 0;

	if (n < 0) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	if (n == 0)
		return 0;
	for (int i = 0; i < n && o + 1 < msglen; i++) {
		const struct sluice_excess *e = &x[i];
		int w;

		if (e->entry == SLUICE_EXCESS_POLICY)
			w = snprintf(msg + o, msglen - o, "%s%s: outside the boundary %s: the policy allows %s", i ? "\n" : "",
				     p->path, boundary_path, e->example);
		else
			w = snprintf(msg + o, msglen - o, "%s%s:%u:%u: outside the boundary %s: %s allows %s", i ? "\n" : "",
				     p->path, e->line, e->column, boundary_path, p->entries[e->entry].name, e->example);
		if (w < 0)
			break;
		o += (size_t)w < msglen - o ? (size_t)w : msglen - o - 1;
	}
	free(x);
	return n;
}
