/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy_within.c - the boundary decision (userspace/lib/policy_within.c)
 * against a brute-force oracle: generated policy pairs on a small universe
 * of names, ports, addresses, URLs, record types and unix paths; the oracle
 * asks the real matchers of the policy library whether each element is
 * allowed by the policy and by the boundary, and which credential the
 * proxy would set on each request.  Both verdicts must occur
 * often, and the decision must agree with the oracle on every pair.  Also:
 * expiry parsing (policy_expiry.c) and a few hand-written cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "policy.h"
#include "policy_within.h"

/* --- the universe ------------------------------------------------------------ */

static const char *const exact_names[] = { "example.com", "a.example.com", "b.example.com", "a.a.example.com",
					   "b.a.example.com" };
static const char *const wild_bases[] = { "example.com", "a.example.com", "b.example.com" };
/* what the oracle asks about: every generated name, and one fresh name
 * (label "zz", never generated) under each wildcard base and deeper */
static const char *const u_names[] = { "example.com", "a.example.com", "b.example.com", "a.a.example.com",
				       "b.a.example.com", "zz.example.com", "zz.a.example.com", "zz.b.example.com",
				       "zz.zz.example.com", "zz.a.a.example.com" };
static const char *const port_specs[] = { "80", "443", "8443", "8000-8100" };
static const uint16_t u_ports[] = { 80, 443, 8000, 8080, 8100, 8443, 9000 };
static const char *const url_hosts[] = { "a.example.com", "b.example.com" };
static const char *const url_ports[] = { "", ":8080" };
static const uint16_t u_url_ports[] = { 80, 443, 8080 };
static const char *const methods[] = { "GET", "HEAD", "POST" };
static const char *const u_methods[] = { "GET", "HEAD", "POST", "PUT" };
static const char *const prefixes[] = { "/", "/a", "/a/", "/a/b", "/b/" };
static const char *const u_paths[] = { "/", "/a", "/a/", "/a/b", "/a/bc", "/a/b/c", "/ab", "/b/", "/b/x", "/c" };
static const char *const cidrs[] = { "192.0.2.0/29", "192.0.2.0/30", "192.0.2.4/30", "192.0.2.0/31",
				     "192.0.2.2/31", "192.0.2.4/31", "192.0.2.6/31", "192.0.2.1/32", "192.0.2.5/32",
				     "192.0.2.6/32", "2001:db8::/126", "2001:db8::1/128" };
static const char *const u_addrs[] = { "192.0.2.0", "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4",
				       "192.0.2.5", "192.0.2.6", "192.0.2.7", "192.0.2.8", "2001:db8::",
				       "2001:db8::1", "2001:db8::3", "2001:db8::4" };
static const char *const unix_specs[] = { "/run/a.sock", "/run/b.sock", "/run/app/", "/run/app/a", "/srv/",
					  "/srv/a/", "/run/", "@name", "@other" };
static const char *const u_unix[] = { "/run/a.sock", "/run/b.sock", "/run/app/a", "/run/app/b", "/run/app/zz",
				      "/run/zz", "/srv/a", "/srv/zz", "/srv/a/a", "/srv/a/zz", "/run/a",
				      "@name", "@other", "@zz" };
static const uint16_t u_qtypes[] = { 1, 28, 16, 15 };

#define N(a) (sizeof(a) / sizeof((a)[0]))

static unsigned long rng_state = 88172645463325252ul;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

/* Ports drawn from the first g_nports specs; smaller: more overlap, more
 * covering by unions (a focused round). */
static size_t g_nports = N(port_specs);

/* Append a random entry (YAML) of kind k to buf. */
static void gen_entry(char *buf, size_t len, int k)
{
	size_t o = strlen(buf);
	char ports[64] = "";

	/* ports: a non-empty set of non-overlapping specs (8000-8100 holds none of the singles) */
	for (size_t i = 0; i < g_nports; i++)
		if (rnd(3) == 0)
			snprintf(ports + strlen(ports), sizeof(ports) - strlen(ports), "%s%s", ports[0] ? ", " : "",
				 port_specs[i]);
	if (!ports[0])
		snprintf(ports, sizeof(ports), "%s", port_specs[rnd((unsigned)g_nports)]);
	switch (k) {
	case 0:
		snprintf(buf + o, len - o, "  - host: %s\n    ports: [%s]\n    why: w\n", exact_names[rnd(N(exact_names))],
			 ports);
		break;
	case 1:
		snprintf(buf + o, len - o, "  - host: \"*.%s\"\n    ports: [%s]\n    why: w\n",
			 wild_bases[rnd(N(wild_bases))], ports);
		break;
	case 2: {
		char ms[64] = "";

		for (size_t i = 0; i < N(methods); i++)
			if (rnd(2))
				snprintf(ms + strlen(ms), sizeof(ms) - strlen(ms), "%s%s", ms[0] ? ", " : "", methods[i]);
		if (!ms[0])
			snprintf(ms, sizeof(ms), "GET");
		{
			unsigned c = rnd(3);

			snprintf(buf + o, len - o, "  - url: %s://%s%s%s\n    methods: [%s]\n%s    why: w\n",
				 rnd(2) ? "http" : "https", url_hosts[rnd(N(url_hosts))], url_ports[rnd(N(url_ports))],
				 prefixes[rnd(N(prefixes))], ms,
				 c == 0 ? "    credential: k1\n" : c == 1 ? "    credential: k2\n" : "");
		}
		break;
	}
	case 3:
		snprintf(buf + o, len - o, "  - cidr: %s\n    ports: [%s]\n    protocol: %s\n    why: w\n",
			 cidrs[rnd(N(cidrs))], ports, g_nports < N(port_specs) || rnd(3) ? "tcp" : "udp");
		break;
	default:
		snprintf(buf + o, len - o, "  - unix: \"%s\"\n    why: w\n", unix_specs[rnd(N(unix_specs))]);
		break;
	}
}

/* kinds: a bit mask of gen_entry's kinds (0 host, 1 wildcard, 2 url, 3 cidr, 4 unix) */
static struct sluice_policy *gen_policy(const char *name, unsigned max_entries, bool dns_wide, unsigned kinds)
{
	for (int tries = 0; tries < 1000; tries++) {
		char buf[8192];
		struct sluice_policy *p = NULL;
		struct sluice_policy_error err;
		unsigned n = rnd(max_entries + 1);

		snprintf(buf, sizeof(buf), "version: 1\nname: %s\nmode: %s\ndns:\n  qtypes: [A%s%s]\n"
			 "credentials:\n"
			 "  - name: k1\n    header: \"Authorization: Bearer {secret}\"\n    allow_plain_http: true\n"
			 "  - name: k2\n    header: \"X-Key: {secret}\"\n    allow_plain_http: true\n"
			 "allow:\n", name,
			 kinds == 0x1f && rnd(20) == 0 ? "audit" : "enforce", dns_wide || rnd(4) == 0 ? ", AAAA" : "",
			 rnd(6) == 0 ? ", TXT" : "");
		for (unsigned i = 0; i < n; i++) {
			int k;

			do
				k = (int)rnd(5);
			while (!(kinds & (1u << k)));
			gen_entry(buf, sizeof(buf), k);
		}
		if (sluice_policy_load_buffer(name, buf, strlen(buf), &p, &err) == 0)
			return p;   /* else a duplicate or overlap: draw again */
	}
	return NULL;
}

/* --- the oracle ------------------------------------------------------------------ */

static bool unix_allows(const struct sluice_policy *p, const char *s)
{
	bool abstract = s[0] == '@';
	const char *name = abstract ? s + 1 : s;

	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];
		size_t n;

		if (e->kind != SLUICE_ENTRY_UNIX || e->unix_abstract != abstract)
			continue;
		n = strlen(e->unix_path);
		if (e->unix_prefix ? strlen(name) > n && strncmp(name, e->unix_path, n) == 0 : strcmp(name, e->unix_path) == 0)
			return true;
	}
	return false;
}

static bool direct_allows(const struct sluice_policy *p, int family, const uint8_t *addr, uint8_t proto, uint16_t port)
{
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->kind == SLUICE_ENTRY_CIDR && e->protocol == proto && sluice_entry_has_port(e, port) &&
		    sluice_entry_cidr_contains(e, family, addr))
			return true;
	}
	return false;
}

static bool request_allows(const struct sluice_policy *p, const char *scheme, const char *host, uint16_t port,
			   const char *method, const char *path)
{
	return sluice_policy_match_host(p, host, port) || sluice_policy_match_url(p, scheme, host, port, method, path);
}

/* The credential the proxy would set on an allowed request: that of the
 * url entry that decides it (url entries first, then host entries, as
 * proxy_decide_url()), or NULL. */
static const struct sluice_credential *request_cred(const struct sluice_policy *p, const char *scheme,
						    const char *host, uint16_t port, const char *method,
						    const char *path)
{
	const struct sluice_entry *u = sluice_policy_match_url(p, scheme, host, port, method, path);

	return u && u->credential ? &p->credentials[u->credential_idx] : NULL;
}

/* Does b send the credential c (or any, when c is NULL) on an allowed request? */
static bool cred_ok(const struct sluice_policy *p, const struct sluice_policy *b, const char *scheme,
		    const char *host, uint16_t port, const char *method, const char *path)
{
	const struct sluice_credential *cp = request_cred(p, scheme, host, port, method, path), *cb;

	if (!cp)
		return true;
	cb = request_cred(b, scheme, host, port, method, path);
	return cb && strcmp(cb->name, cp->name) == 0 && strcasecmp(cb->header_name, cp->header_name) == 0;
}

/* Is everything p allows in the universe also allowed by b? */
static bool oracle_within(const struct sluice_policy *p, const struct sluice_policy *b)
{
	if (b->mode == SLUICE_MODE_AUDIT)
		return true;
	if (p->mode == SLUICE_MODE_AUDIT)
		return false;   /* p lets everything through; b refuses e.g. TCP to 192.0.2.8:9000 */
	for (size_t a = 0; a < N(u_addrs); a++) {
		uint8_t addr[16];
		int fam = strchr(u_addrs[a], ':') ? AF_INET6 : AF_INET;

		inet_pton(fam, u_addrs[a], addr);
		for (int pr = 0; pr < 2; pr++)
			for (size_t k = 0; k < N(u_ports); k++) {
				uint8_t proto = pr ? IPPROTO_UDP : IPPROTO_TCP;

				if (direct_allows(p, fam, addr, proto, u_ports[k]) && !direct_allows(b, fam, addr, proto, u_ports[k]))
					return false;
			}
	}
	for (size_t n = 0; n < N(u_names); n++) {
		for (int s = 0; s < 2; s++)
			for (size_t k = 0; k < N(u_ports) + N(u_url_ports); k++)
				for (size_t m = 0; m < N(u_methods); m++)
					for (size_t q = 0; q < N(u_paths); q++) {
						const char *sch = s ? "https" : "http";
						uint16_t port = k < N(u_ports) ? u_ports[k] : u_url_ports[k - N(u_ports)];

						if (request_allows(p, sch, u_names[n], port, u_methods[m], u_paths[q]) &&
						    (!request_allows(b, sch, u_names[n], port, u_methods[m], u_paths[q]) ||
						     !cred_ok(p, b, sch, u_names[n], port, u_methods[m], u_paths[q])))
							return false;
					}
		for (size_t q = 0; q < N(u_qtypes); q++)
			if (sluice_policy_allows_name(p, u_names[n]) && sluice_policy_allows_qtype(p, u_qtypes[q]) &&
			    !(sluice_policy_allows_name(b, u_names[n]) && sluice_policy_allows_qtype(b, u_qtypes[q])))
				return false;
	}
	for (size_t i = 0; i < N(u_unix); i++)
		if (unix_allows(p, u_unix[i]) && !unix_allows(b, u_unix[i]))
			return false;
	return true;
}

/* Rounds: everything mixed, then one kind at a time with few ports, so that
 * unions of boundary entries cover policy entries (prefix splitting, names
 * under wildcards, url prefixes) often enough to be tested. */
static const struct round {
	unsigned kinds, b_max, p_max;
	size_t nports;
} rounds[] = {
	{ 0x1f, 12, 3, N(port_specs) },
	{ 1u << 3, 10, 2, 2 },
	{ 0x3, 8, 2, 2 },
	{ 1u << 2, 10, 2, 2 },
	{ 1u << 4, 6, 2, 1 },
	{ 1u << 2, 14, 2, 1 },
};

static void test_decision_matches_the_oracle(void **state)
{
	unsigned within = 0, outside = 0, agreed = 0;

	(void)state;
	for (int i = 0; i < 1800; i++) {
		const struct round *r = &rounds[i / 300];
		struct sluice_policy *b, *p;

		/* boundaries wide, policies small: both verdicts come up */
		g_nports = r->nports;
		b = gen_policy("boundary", r->b_max, true, r->kinds);
		p = gen_policy("policy", r->p_max, false, r->kinds);
		struct sluice_excess *x = NULL;
		int n;
		bool o;

		assert_non_null(b);
		assert_non_null(p);
		n = sluice_policy_within(p, b, &x);
		assert_true(n >= 0);
		o = oracle_within(p, b);
		if (o != (n == 0)) {
			char *cp = sluice_policy_canonical(p, NULL), *cb = sluice_policy_canonical(b, NULL);

			fprintf(stderr, "pair %d: oracle says %s, decision %d excess(es)%s%s\npolicy   %s\nboundary %s\n", i,
				o ? "within" : "outside", n, n ? ", first: " : "", n ? x[0].example : "", cp, cb);
			free(cp);
			free(cb);
		}
		assert_int_equal(o, n == 0);
		agreed++;
		if (o)
			within++;
		else
			outside++;
		/* each excess names an entry of p (or p as a whole), and its
		 * example is allowed by p and not by b */
		for (int k = 0; k < n; k++) {
			char name[300], m[16], sch[8], path[64], proto[4];
			unsigned port;

			assert_true(x[k].entry == SLUICE_EXCESS_POLICY || x[k].entry < p->n_entries);
			assert_true(x[k].example[0] != '\0');
			if (sscanf(x[k].example, "TLS or HTTP to %299[^:]:%u", name, &port) == 2) {
				assert_non_null(sluice_policy_match_host(p, name, (uint16_t)port));
				assert_null(sluice_policy_match_host(b, name, (uint16_t)port));
			} else if (strstr(x[k].example, " with credential ") &&
				   sscanf(x[k].example, "%15s %7[a-z]://%299[^:]:%u%63s", m, sch, name, &port, path) == 5) {
				assert_true(request_allows(p, sch, name, (uint16_t)port, m, path));
				assert_false(cred_ok(p, b, sch, name, (uint16_t)port, m, path));
			} else if (sscanf(x[k].example, "%15s %7[a-z]://%299[^:]:%u%63s", m, sch, name, &port, path) == 5) {
				assert_true(request_allows(p, sch, name, (uint16_t)port, m, path));
				assert_false(request_allows(b, sch, name, (uint16_t)port, m, path));
			} else if (sscanf(x[k].example, "%3s to %299[0-9.]:%u", proto, name, &port) == 3) {
				uint8_t a[16];
				uint8_t pr = strcmp(proto, "UDP") == 0 ? IPPROTO_UDP : IPPROTO_TCP;

				assert_int_equal(inet_pton(AF_INET, name, a), 1);
				assert_true(direct_allows(p, AF_INET, a, pr, (uint16_t)port));
				assert_false(direct_allows(b, AF_INET, a, pr, (uint16_t)port));
			} else if (sscanf(x[k].example, "a unix connect to %299s", name) == 1) {
				assert_true(unix_allows(p, name));
				assert_false(unix_allows(b, name));
			} else if (sscanf(x[k].example, "a DNS answer for %299s", name) == 1) {
				assert_true(sluice_policy_allows_name(p, name));
				assert_false(sluice_policy_allows_name(b, name));
			}
		}
		/* everything is within itself */
		free(x);
		assert_int_equal(sluice_policy_within(p, p, &x), 0);
		free(x);
		sluice_policy_free(p);
		sluice_policy_free(b);
	}
	fprintf(stderr, "boundary oracle: %u pairs agreed, %u within, %u outside\n", agreed, within, outside);
	assert_true(within >= 300);
	assert_true(outside >= 300);
}

static struct sluice_policy *load(const char *text)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[700];

	if (sluice_policy_load_buffer("t.yaml", text, strlen(text), &p, &err) < 0)
		fail_msg("%s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	return p;
}

#define HEAD "version: 1\nname: t\nallow:\n"

static void test_examples(void **state)
{
	struct sluice_policy *b = load(HEAD "  - cidr: 198.51.100.0/25\n    ports: [5432]\n    why: w\n"
					    "  - cidr: 198.51.100.128/25\n    ports: [5432]\n    why: w\n"
					    "  - host: \"*.example.com\"\n    ports: [443]\n    why: w\n");
	struct sluice_policy *p = load(HEAD "  - cidr: 198.51.100.0/24\n    ports: [5432]\n    why: w\n"
					    "  - cidr: 198.51.100.0/23\n    ports: [5432]\n    why: w\n"
					    "  - host: \"*.a.example.com\"\n    ports: [443, 8443]\n    why: w\n");
	struct sluice_excess *x = NULL;
	int n = sluice_policy_within(p, b, &x);

	(void)state;
	/* the /24 is covered by two /25s together; the /23 is not */
	assert_int_equal(n, 2);
	assert_int_equal(x[0].entry, 1);
	assert_string_equal(x[0].example, "TCP to 198.51.101.0:5432");
	assert_int_equal(x[1].entry, 2);
	assert_string_equal(x[1].example, "TLS or HTTP to a.a.example.com:8443 (any path, any method)");
	free(x);
	sluice_policy_free(p);
	sluice_policy_free(b);

	/* credentials: the boundary's first url entry for /a/b sends k2, so
	 * GET /a/b with k1 is beyond it, though /a itself gets k1 there too */
#define CREDS "credentials:\n  - name: k1\n    header: \"Authorization: Bearer {secret}\"\n" \
	      "  - name: k2\n    header: \"X-Key: {secret}\"\n"
	b = load("version: 1\nname: b\n" CREDS "allow:\n"
		 "  - url: https://a.example.com/a/b\n    methods: [GET]\n    credential: k2\n    why: w\n"
		 "  - url: https://a.example.com/\n    methods: [GET]\n    credential: k1\n    why: w\n");
	p = load("version: 1\nname: p\n" CREDS "allow:\n"
		 "  - url: https://a.example.com/a\n    methods: [GET]\n    credential: k1\n    why: w\n"
		 "  - url: https://a.example.com/c\n    methods: [GET]\n    why: w\n");
	n = sluice_policy_within(p, b, &x);
	assert_int_equal(n, 1);
	assert_int_equal(x[0].entry, 0);
	assert_string_equal(x[0].example, "GET https://a.example.com:443/a/b with credential k1 (Authorization), "
					  "which the boundary sends another credential on");
	free(x);
	sluice_policy_free(p);
	sluice_policy_free(b);
}

static void test_rfc3339(void **state)
{
	static const struct {
		const char *in;
		long long want;   /* -1: refused */
	} cases[] = {
		{ "2026-12-31T18:00:00Z", 1798740000 },
		{ "2026-12-31T20:00:00+02:00", 1798740000 },
		{ "2026-12-31t13:30:00-04:30", 1798740000 },
		{ "1970-01-01T00:00:00Z", 0 },
		{ "2024-02-29T00:00:00Z", 1709164800 },
		{ "2025-02-29T00:00:00Z", -1 },
		{ "2026-12-31T18:00:00", -1 },
		{ "2026-12-31 18:00:00Z", -1 },
		{ "2026-12-31T18:00:00.5Z", -1 },
		{ "2026-12-31T18:00:60Z", -1 },
		{ "2026-12-31T18:00:00+24:00", -1 },
		{ "2026-12-31T18:00:00 UTC", -1 },
		{ "2026-12-31T18:00:00+0200", -1 },
		{ "1969-12-31T23:59:59Z", -1 },
		{ "", -1 },
	};

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		int64_t t = -42;
		const char *why = NULL;
		int r = sluice_rfc3339_parse(cases[i].in, &t, &why);

		if (cases[i].want < 0) {
			assert_int_equal(r, -1);
			assert_non_null(why);
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(t, cases[i].want);
		}
	}
}

static void test_expiry_in_the_digest_and_matchers(void **state)
{
	struct sluice_policy *a = load(HEAD "  - host: api.example.com\n    ports: [443]\n    why: w\n"
					    "    expires: 2026-12-31T18:00:00Z\n    owner: alice\n");
	struct sluice_policy *b = load(HEAD "  - host: api.example.com\n    ports: [443]\n    why: w\n"
					    "    expires: 2026-12-31T20:00:00+02:00\n    owner: alice\n");
	struct sluice_policy *c = load(HEAD "  - host: api.example.com\n    ports: [443]\n    why: w\n");
	struct sluice_policy *gone = load(HEAD "  - host: api.example.com\n    ports: [443]\n    why: w\n"
					       "    expires: 2020-01-01T00:00:00Z\n"
					       "  - cidr: 198.51.100.0/24\n    ports: [5432]\n    why: w\n"
					       "    expires: 2020-01-01T00:00:00Z\n");
	uint8_t addr[4] = { 198, 51, 100, 7 };
	struct sluice_policy *u = NULL;
	struct sluice_policy_error err;
	static const char unix_exp[] = HEAD "  - unix: /run/a.sock\n    why: w\n    expires: 2030-01-01T00:00:00Z\n";

	(void)state;
	assert_int_equal(sluice_policy_load_buffer("u.yaml", unix_exp, strlen(unix_exp), &u, &err), -1);
	assert_int_equal(err.line, 6);
	assert_non_null(strstr(err.message, "not supported on a unix entry"));
	assert_string_equal(a->digest, b->digest);      /* one instant, two spellings */
	assert_string_not_equal(a->digest, c->digest);  /* an expiry is a change of meaning */
	assert_true(sluice_entry_expired(&gone->entries[0], -1));
	assert_false(sluice_entry_expired(&a->entries[0], 1798739999));
	assert_true(sluice_entry_expired(&a->entries[0], 1798740000));
	assert_null(sluice_policy_match_host(gone, "api.example.com", 443));
	assert_false(sluice_policy_allows_name(gone, "api.example.com"));
	assert_false(sluice_entry_cidr_contains(&gone->entries[1], AF_INET, addr));
	assert_non_null(sluice_policy_match_host(c, "api.example.com", 443));
	sluice_policy_free(a);
	sluice_policy_free(b);
	sluice_policy_free(c);
	sluice_policy_free(gone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decision_matches_the_oracle),
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_rfc3339),
		cmocka_unit_test(test_expiry_in_the_digest_and_matchers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
