/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/read.c - `sluice policy suggest`: reading: each log line (json-c)
 * is used (an observation), noted, or skipped with file:line: reason. Rules:
 * docs/policy.md, "Audit mode and suggest"; the parts: suggest/internal.h.
 */
#include "internal.h"

#include <http_parser.h>

#include "../events.h"

static const char *intern(struct suggest *s, const char *str)
{
	struct hnode *x = sg_hmap_put(&s->strings, str);

	x->val = x->key;
	return x->key;
}

__attribute__((format(printf, 4, 5)))
static void note(struct suggest *s, const char *file, unsigned long lineno, const char *fmt, ...)
{
	char text[512];
	struct hnode *x;
	struct note *n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	x = sg_hmap_put(&s->notes, text);
	if (!x->val) {
		n = sg_xcalloc(1, sizeof(*n));
		n->text = sg_xstrdup(text);
		n->order = s->n_notes++;
		if (file)
			snprintf(n->where, sizeof(n->where), "%s:%lu", file, lineno);
		x->val = n;
	}
	n = x->val;
	n->n++;
	s->c.noted++;
}

__attribute__((format(printf, 4, 5)))
static void problem(struct suggest *s, const char *file, unsigned long lineno, const char *fmt, ...)
{
	char text[512], f[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	sg_printable(f, sizeof(f), file);
	fprintf(s->diag, "%s:%lu: %s (line skipped)\n", f, lineno, text);
	s->c.skipped++;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool jhas(json_object *o, const char *key)
{
	return json_object_object_get_ex(o, key, NULL);
}

static bool jint(json_object *o, const char *key, int64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_int64(v);
	return true;
}

static bool jtrue(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

static bool is_one_of(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

/* "203.0.113.10:8443" or "[2001:db8::1]:443" -> port, 0 when unparseable. */
static uint16_t hostport_port(const char *hp)
{
	const char *colon = hp ? strrchr(hp, ':') : NULL;
	char *end;
	unsigned long v;

	if (!colon || !colon[1])
		return 0;
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	return (!errno && !*end && v <= 65535) ? (uint16_t)v : 0;
}

static void observe_common(struct line_ctx *l)
{
	struct suggest *s = l->s;
	const char *digest = jstr(l->o, "sluice.policy_sha256");
	const char *pname = jstr(l->o, "sluice.policy_name");
	char key[200], buf[200];
	struct hnode *x;

	if (!s->first_ts[0] || strcmp(l->ts, s->first_ts) < 0)
		snprintf(s->first_ts, sizeof(s->first_ts), "%s", l->ts);
	if (strcmp(l->ts, s->last_ts) > 0)
		snprintf(s->last_ts, sizeof(s->last_ts), "%s", l->ts);
	if (l->run)
		sg_hmap_put(&s->runs, l->run)->val = (void *)l->run;
	if (digest && pname) {
		snprintf(key, sizeof(key), "%.64s %.8s", digest, l->mode ? l->mode : "?");
		x = sg_hmap_put(&s->policies, key);
		if (!x->val) {
			char d[16];

			sg_printable(buf, sizeof(buf), pname);
			sg_printable(d, sizeof(d), digest);
			x->val = sg_xasprintf("%s (sha256 %.12s, mode %.8s)", buf, d, l->mode ? l->mode : "?");
			if (strcmp(digest, s->default_digest) != 0)
				s->other_policy = true;
		}
	}
}

static void add_pobs(struct line_ctx *l, enum via via, const char *host, uint16_t port,
		     const char *method, const char *path, bool denied)
{
	struct suggest *s = l->s;
	char *key = sg_xasprintf("%d\n%s\n%u\n%s\n%s", via, host, port, method ? method : "", path ? path : "");
	struct hnode *x = sg_hmap_put(&s->pobs, key);
	struct pobs *p = x->val;

	free(key);
	if (!p) {
		p = sg_xcalloc(1, sizeof(*p));
		p->via = via;
		p->host = intern(s, host);
		p->port = port;
		p->method = method ? intern(s, method) : NULL;
		p->path = path ? sg_xstrdup(path) : NULL;
		x->val = p;
	}
	sg_seen_add(&p->seen, l->ts, l->run, 1);
	if (denied)
		p->denied++;
	s->c.used++;
}

/* "tcp 192.0.2.1:80" of a line (its network.transport, destination.ip
 * and destination.port; "?" for what it lacks), printable, into buf. */
static const char *dest_str(const struct line_ctx *l, char *buf, size_t len)
{
	const char *t = jstr(l->o, "network.transport"), *ip = jstr(l->o, "destination.ip");
	int64_t port = -1;
	char raw[200];

	if (!jint(l->o, "destination.port", &port))
		port = -1;
	snprintf(raw, sizeof(raw), "%s %s:%lld", t ? t : "?", ip ? ip : "?", (long long)port);
	if (port < 0)
		snprintf(raw, sizeof(raw), "%s %s", t ? t : "?", ip ? ip : "?");
	sg_printable(buf, len, raw);
	return buf;
}

/* Who made a refused connection: process.executable, else process.name. */
static const char *program_str(const struct line_ctx *l, char *buf, size_t len)
{
	const char *exe = jstr(l->o, "process.executable"), *name = jstr(l->o, "process.name");

	sg_printable(buf, len, exe ? exe : name ? name : "a program");
	return buf;
}

/* A kernel line whose reason (`code`, from sluice_reason_code(); `r` its
 * printable name) gives no entry: noted with why, or skipped when suggest
 * does not know it. */
static void kernel_other(struct line_ctx *l, int code, const char *r)
{
	struct suggest *s = l->s;
	char dest[128], prog[160];

	switch (code) {
	case SLUICE_REASON_ENTRY_EXPIRED:
		/* the entry existed: suggesting it again would renew it unseen */
		note(s, l->file, l->lineno, "kernel %s: %s was allowed by a cidr entry whose expires: has passed; not "
		     "suggested: renewing it (a new expires:, with its owner and ticket) is a reviewer's decision", r,
		     dest_str(l, dest, sizeof(dest)));
		return;
	case SLUICE_REASON_PROGRAM:
		note(s, l->file, l->lineno, "kernel %s: %s reached %s, which a cidr entry allows to other programs only; "
		     "not suggested: adding it to that entry's programs: is a reviewer's decision", r,
		     program_str(l, prog, sizeof(prog)), dest_str(l, dest, sizeof(dest)));
		return;
	case SLUICE_REASON_SOCK_RAW:
	case SLUICE_REASON_SOCK_ICMP:
	case SLUICE_REASON_SOCK_PROTO:
	case SLUICE_REASON_PROTO:
	case SLUICE_REASON_REDIRECT_TARGET:
	case SLUICE_REASON_FOREIGN_SOCKET:
	case SLUICE_REASON_SOCKET_FAMILY:
		note(s, l->file, l->lineno, "kernel %s: refused in audit mode too, no policy can allow it", r);
		return;
	case SLUICE_REASON_NO_PROXY:
	case SLUICE_REASON_NO_RESOLVER: {
		const char *what = code == SLUICE_REASON_NO_PROXY ? "proxy" : "resolver";

		note(s, l->file, l->lineno, "kernel %s: the sandbox ran without its %s (--no-%s); nothing to add to a policy",
		     r, what, what);
		return;
	}
	case SLUICE_REASON_UNIX_NOT_ALLOWED:
	case SLUICE_REASON_UNIX_OUTSIDE: {
		/* a unix socket reaches a daemon outside: suggest never adds one
		 * (glibc's nscd lookups are the usual ones, and harmless to refuse) */
		const char *where = jstr(l->o, "destination.address");
		char p[128];

		sg_printable(p, sizeof(p), where ? where : "?");
		note(s, l->file, l->lineno, "kernel %s: unix socket %s; not suggested: add a unix: entry by hand if the sandbox needs that daemon",
		     r, p);
		return;
	}
	case SLUICE_REASON_BACKSTOP:
		note(s, l->file, l->lineno, "kernel egress_backstop: packets that bypassed the socket hooks were dropped; investigate, do not allow");
		return;
	default:
		problem(s, l->file, l->lineno, "kernel event with an unknown event.reason '%s'", r);
		return;
	}
}

/* Kernel event lines. */
static void read_kernel(struct line_ctx *l, const char *action)
{
	struct suggest *s = l->s;
	const char *verdict = jstr(l->o, "sluice.verdict"), *reason = jstr(l->o, "event.reason");
	const char *transport = jstr(l->o, "network.transport"), *ipstr = jstr(l->o, "destination.ip");
	int64_t port = -1;
	int family = 0, code;
	uint8_t addr[16];
	struct kobs *k;
	struct hnode *x;
	char *key, r[64];
	bool tcp;

	if (!verdict || (strcmp(verdict, "deny") != 0 && strcmp(verdict, "would_deny") != 0)) {
		problem(s, l->file, l->lineno, "kernel event without a sluice.verdict of deny or would_deny");
		return;
	}
	if (!reason) {
		problem(s, l->file, l->lineno, "kernel event without event.reason");
		return;
	}
	sg_printable(r, sizeof(r), reason);
	if (strcmp(action, "canary-denied") == 0 || jtrue(l->o, "sluice.canary")) {
		note(s, l->file, l->lineno, "kernel: the start-up canary's own attempts (sluice run proves the filter with them)");
		return;
	}
	code = sluice_reason_code(reason);
	if (code != SLUICE_REASON_TCP_PORT && code != SLUICE_REASON_UDP) {
		kernel_other(l, code, r);
		return;
	}
	tcp = code == SLUICE_REASON_TCP_PORT;
	if (!ipstr || sluice_ip_normalise(ipstr, &family, addr) != 0) {
		problem(s, l->file, l->lineno, "kernel event %s without a valid destination.ip", r);
		return;
	}
	if (!jint(l->o, "destination.port", &port) || port < 0 || port > 65535) {
		problem(s, l->file, l->lineno, "kernel event %s without a valid destination.port", r);
		return;
	}
	if (!transport || strcmp(transport, tcp ? "tcp" : "udp") != 0) {
		problem(s, l->file, l->lineno, "kernel event %s with network.transport other than %s", r,
			tcp ? "tcp" : "udp");
		return;
	}
	if (port == 0) {
		note(s, l->file, l->lineno, "kernel %s to port 0: no entry can name port 0", r);
		return;
	}
	{
		char ip[INET6_ADDRSTRLEN];

		inet_ntop(family, addr, ip, sizeof(ip));
		key = sg_xasprintf("%s\n%s\n%lld\n%s", ip, transport, (long long)port, l->run ? l->run : "");
		x = sg_hmap_put(&s->kobs, key);
		free(key);
		k = x->val;
		if (!k) {
			k = sg_xcalloc(1, sizeof(*k));
			k->family = family;
			memcpy(k->addr, addr, 16);
			memcpy(k->ip, ip, sizeof(ip));
			k->proto = transport[0] == 't' ? IPPROTO_TCP : IPPROTO_UDP;
			k->port = (uint16_t)port;
			k->run = l->run;
			x->val = k;
		}
	}
	sg_seen_add(&k->seen, l->ts, l->run, 1);
	if (strcmp(verdict, "deny") == 0)
		k->denied++;
	s->c.used++;
}

/* url.full "http://host[:port]/path?q" (or "https://", a request inside
 * inspected TLS: *https set) -> port and normalised path.  Split by
 * http-parser's URL parser, as the proxy split the request it logged; the
 * path normalised by the policy library.  The host is not taken from it:
 * url.domain names the host the proxy decided on. */
static int parse_url_full(const char *url, uint16_t *port, char *path, size_t len, bool *https,
			  const char **why)
{
	struct http_parser_url u;
	char *raw;
	int rc;

	*why = "url.full is not an http:// or https:// URL";
	*https = strncmp(url, "https://", 8) == 0;
	if (!*https && strncmp(url, "http://", 7) != 0)
		return -1;
	http_parser_url_init(&u);
	if (http_parser_parse_url(url, strlen(url), 0, &u) != 0 || !(u.field_set & (1u << UF_HOST))) {
		/* for the message only: a ':' after the host is a port that did not parse */
		const char *a = url + (*https ? 8 : 7), *e = a + strcspn(a, "/?#"), *h = a;

		if (*a == '[')
			h = memchr(a, ']', (size_t)(e - a));
		if (h && memchr(h, ':', (size_t)(e - h)))
			*why = "url.full has a bad port";
		return -1;
	}
	*port = *https ? 443 : 80;
	if (u.field_set & (1u << UF_PORT)) {
		if (u.port == 0) {
			*why = "url.full has a bad port";
			return -1;
		}
		*port = u.port;
	}
	if (!(u.field_set & (1u << UF_PATH))) {
		snprintf(path, len, "/");
		return 0;
	}
	raw = sg_xasprintf("%.*s", (int)u.field_data[UF_PATH].len, url + u.field_data[UF_PATH].off);
	rc = sluice_url_path_normalise(raw, path, len, why);
	free(raw);
	return rc;
}

/* Proxy access-log lines. */
static void read_proxy(struct line_ctx *l, const char *action)
{
	static const char *const actions[] = { "proxy-http", "proxy-connect", "proxy-tls", "proxy-connection", NULL };
	static const char *const policy_reasons[] = { "host_not_allowed", "path_not_allowed", "method_not_allowed", NULL };
	static const char *const tls_refusals[] = { "ech", "sni_mismatch", "bad_sni", "no_sni", NULL };
	struct suggest *s = l->s;
	const char *verdict = jstr(l->o, "sluice.verdict"), *reason = jstr(l->o, "event.reason");
	const char *raw = jstr(l->o, "url.domain");
	char host[SLUICE_HOST_MAX + 1], r[64], shown[80], path[2100];
	const char *why = NULL, *method = NULL;
	enum via via;
	uint16_t port = 0;
	int64_t dport;
	bool denied, iplit = false;
	int fam;
	uint8_t addr[16];

	if (!action || !is_one_of(action, actions)) {
		problem(s, l->file, l->lineno, "proxy line with an unknown event.action");
		return;
	}
	if (!verdict || !is_one_of(verdict, (const char *const[]){ "allow", "deny", "would_deny", NULL })) {
		problem(s, l->file, l->lineno, "proxy line without a sluice.verdict of allow, deny or would_deny");
		return;
	}
	if (!reason) {
		problem(s, l->file, l->lineno, "proxy line without event.reason");
		return;
	}
	sg_printable(r, sizeof(r), reason);
	if (strcmp(action, "proxy-connection") == 0) {
		note(s, l->file, l->lineno, "proxy: connection closed before any request (%s)", r);
		return;
	}
	denied = strcmp(verdict, "deny") == 0;
	if (strcmp(reason, "ip_literal") == 0) {
		iplit = true;
	} else if (strcmp(verdict, "would_deny") == 0 && is_one_of(reason, tls_refusals)) {
		note(s, l->file, l->lineno, "proxy %s: refused in enforce mode whatever the policy says", r);
		return;
	} else if (strcmp(reason, "program_not_allowed") == 0) {
		char prog[160], dom[SLUICE_HOST_MAX + 1];

		sg_printable(dom, sizeof(dom), raw ? raw : "?");
		note(s, l->file, l->lineno, "proxy %s: %s asked for %s, which an entry allows to other programs only; not "
		     "suggested: adding it to that entry's programs: is a reviewer's decision", r,
		     program_str(l, prog, sizeof(prog)), dom);
		return;
	} else if (denied && !is_one_of(reason, policy_reasons)) {
		note(s, l->file, l->lineno, "proxy %s: refused whatever the policy says", r);
		return;
	}
	if (!raw)
		raw = jstr(l->o, "tls.client.server_name");
	if (!raw) {
		problem(s, l->file, l->lineno, "proxy line without url.domain or tls.client.server_name");
		return;
	}
	if (strcmp(action, "proxy-http") == 0) {
		const char *url = jstr(l->o, "url.full");
		bool https = false;

		via = VIA_HTTP;
		method = jstr(l->o, "http.request.method");
		if (!url || !method) {
			problem(s, l->file, l->lineno, "proxy-http line without url.full or http.request.method");
			return;
		}
		if (parse_url_full(url, &port, path, sizeof(path), &https, &why) < 0) {
			problem(s, l->file, l->lineno, "proxy-http line: %s", why);
			return;
		}
		for (const char *m = method; *m; m++)
			if (*m < 'A' || *m > 'Z' || m - method > 20) {
				problem(s, l->file, l->lineno, "proxy-http line with a bad http.request.method");
				return;
			}
		if (https) {
			/* a request inside inspected TLS: suggested as TLS to the
			 * name and port (a host entry), not as an https:// url
			 * entry (suggest does not write those yet) */
			via = VIA_TLS;
			method = NULL;
		}
	} else if (strcmp(action, "proxy-tls") == 0) {
		via = VIA_TLS;
		if (jint(l->o, "sluice.orig_dst.port", &dport) && dport > 0 && dport <= 65535)
			port = (uint16_t)dport;
		else
			port = hostport_port(jstr(l->o, "sluice.orig_dst"));   /* lines before 0.1.0's split */
		if (!port && jint(l->o, "destination.port", &dport) && dport > 0 && dport <= 65535)
			port = (uint16_t)dport;
	} else {
		const char *sni = jstr(l->o, "tls.client.server_name");
		char a[SLUICE_HOST_MAX + 1], b[SLUICE_HOST_MAX + 1];

		via = VIA_CONNECT;
		if (jint(l->o, "destination.port", &dport) && dport > 0 && dport <= 65535)
			port = (uint16_t)dport;
		/* audit mode logs the first would-deny reason only: a tunnel whose
		 * TLS name is not the CONNECT host is refused in enforce mode
		 * (sni_mismatch) whatever the policy says */
		if (sni && sluice_host_normalise(raw, a, sizeof(a), &why) == 0 &&
		    sluice_host_normalise(sni, b, sizeof(b), &why) == 0 && strcmp(a, b) != 0) {
			note(s, l->file, l->lineno, "proxy sni_mismatch: a CONNECT tunnel whose TLS name differs from its host; refused in enforce mode whatever the policy says");
			return;
		}
	}
	sg_printable(shown, sizeof(shown), raw);
	if (!port) {
		struct hnode *x = sg_hmap_put(&s->portless, shown);

		x->val = (void *)((uintptr_t)x->val + 1);
		problem(s, l->file, l->lineno, "%s of %s without the port it asked for (a denied CONNECT is logged without one)",
			action, shown);
		return;
	}
	if (iplit || sluice_host_normalise(raw, host, sizeof(host), &why) < 0) {
		if (iplit || sluice_ip_normalise(raw, &fam, addr) >= 0) {
			note(s, l->file, l->lineno, "proxy: request to the IP literal %s port %u; the proxy never allows IP literals (a cidr entry would allow direct connections to it)",
			     shown, port);
			return;
		}
		problem(s, l->file, l->lineno, "proxy line with an invalid host name '%s' (%s)", shown, why ? why : "?");
		return;
	}
	add_pobs(l, via, host, port, method, via == VIA_HTTP ? path : NULL, denied);
}

static void add_answer(struct line_ctx *l, struct dname *d, json_object *rr)
{
	struct suggest *s = l->s;
	const char *type, *data, *filter;
	char ip[INET6_ADDRSTRLEN];
	uint8_t addr[16];
	int fam;
	struct hnode *x;
	struct daddr *da;

	if (!json_object_is_type(rr, json_type_object))
		return;
	type = jstr(rr, "type");
	data = jstr(rr, "data");
	filter = jstr(rr, "sluice_filter");
	if (!type || !data || (strcmp(type, "A") != 0 && strcmp(type, "AAAA") != 0))
		return;
	if (filter && is_one_of(filter, (const char *const[]){ "out_of_chain", "unexpected_type", "bad_rdata", NULL }))
		return;
	if (sluice_ip_normalise(data, &fam, addr) != 0)
		return;
	inet_ntop(fam, addr, ip, sizeof(ip));
	x = sg_hmap_put(&s->daddrs, ip);
	if (!x->val)
		x->val = sg_xcalloc(1, sizeof(struct daddr));
	da = x->val;
	d->answered = true;
	for (size_t i = 0; i < da->n; i++)
		if (da->v[i].name == d->name && da->v[i].run == l->run) {
			if (strcmp(l->ts, da->v[i].first) < 0)
				snprintf(da->v[i].first, sizeof(da->v[i].first), "%s", l->ts);
			return;
		}
	PUSH(da->v, da->n, da->cap);
	da->v[da->n].name = d->name;
	da->v[da->n].run = l->run;
	snprintf(da->v[da->n].first, sizeof(da->v[da->n].first), "%s", l->ts);
	da->n++;
}

/* Resolver query-log lines. */
static void read_resolver(struct line_ctx *l, const char *action, const char *kind)
{
	struct suggest *s = l->s;
	const char *verdict = jstr(l->o, "sluice.verdict"), *reason = jstr(l->o, "event.reason");
	const char *qname = jstr(l->o, "dns.question.name"), *qtype = jstr(l->o, "dns.question.type");
	char name[SLUICE_HOST_MAX + 1], r[64], shown[80], qt[32];
	const char *why = NULL;
	json_object *arr;
	struct hnode *x;
	struct dname *d;
	uint16_t t;

	if ((kind && strcmp(kind, "state") == 0) || (action && strcmp(action, "resolver-start") == 0)) {
		note(s, l->file, l->lineno, "resolver start and stop lines");
		return;
	}
	if (!action || strcmp(action, "dns-query") != 0) {
		problem(s, l->file, l->lineno, "resolver line with an unknown event.action");
		return;
	}
	if (!verdict || !reason) {
		problem(s, l->file, l->lineno, "dns-query line without sluice.verdict or event.reason");
		return;
	}
	sg_printable(r, sizeof(r), reason);
	/* refusals first: a malformed query has no question to log */
	if (strcmp(verdict, "refuse") == 0) {
		note(s, l->file, l->lineno, "resolver %s: refused whatever the policy says", r);
		return;
	}
	if (!qname || !qtype) {
		problem(s, l->file, l->lineno, "dns-query line without dns.question.name or dns.question.type");
		return;
	}
	if (!is_one_of(verdict, (const char *const[]){ "allow", "deny", "would_deny", NULL })) {
		problem(s, l->file, l->lineno, "dns-query line with an unknown sluice.verdict");
		return;
	}
	if (strcmp(reason, "invalid_name") == 0) {
		note(s, l->file, l->lineno, "resolver invalid_name: not a host name, no policy can allow it");
		return;
	}
	if (strcmp(verdict, "deny") == 0 &&
	    (strcmp(reason, "dns_tunnel_rate") == 0 || strcmp(reason, "private_answer") == 0)) {
		note(s, l->file, l->lineno, "resolver %s: denied under an allowed name; see docs/events.md (an entry would not change it)", r);
		return;
	}
	sg_printable(shown, sizeof(shown), qname);
	if (sluice_host_normalise(qname, name, sizeof(name), &why) < 0) {
		if (why && strcmp(why, "ip literal") == 0) {
			note(s, l->file, l->lineno, "resolver: queries for IP literals");
			return;
		}
		problem(s, l->file, l->lineno, "dns-query line with an invalid dns.question.name '%s' (%s)", shown,
			why ? why : "?");
		return;
	}
	x = sg_hmap_put(&s->dnames, name);
	if (!x->val) {
		d = sg_xcalloc(1, sizeof(*d));
		d->name = intern(s, name);
		x->val = d;
	}
	d = x->val;
	sg_seen_add(&d->seen, l->ts, l->run, 1);
	if (strcmp(verdict, "deny") == 0 && strcmp(reason, "name_not_allowed") == 0)
		d->denied++;
	t = sg_qtype_number(&s->qnames, qtype);
	if (t) {
		bool have = false;

		for (size_t i = 0; i < d->n_qtypes; i++)
			have |= d->qtypes[i] == t;
		if (!have) {
			PUSH(d->qtypes, d->n_qtypes, d->cap_qtypes);
			d->qtypes[d->n_qtypes++] = t;
		}
	} else {
		sg_printable(qt, sizeof(qt), qtype);
		note(s, l->file, l->lineno, "resolver: query type %s, which a policy's dns.qtypes cannot name", qt);
	}
	if (jtrue(l->o, "sluice.dns_tunnel_suspect")) {
		const char *tr = jstr(l->o, "sluice.dns_tunnel_reason");
		char trb[32];

		sg_printable(trb, sizeof(trb), tr ? tr : "suspect");
		d->suspect = true;
		d->suspect_reason = intern(s, trb);
	}
	if (json_object_object_get_ex(l->o, "dns.answers", &arr) && json_object_is_type(arr, json_type_array))
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			add_answer(l, d, json_object_array_get_idx(arr, i));
	/* in audit mode the answers the filter objected to were passed on */
	if (l->mode && strcmp(l->mode, "audit") == 0 &&
	    json_object_object_get_ex(l->o, "sluice.dns_filtered_answers", &arr) &&
	    json_object_is_type(arr, json_type_array))
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			add_answer(l, d, json_object_array_get_idx(arr, i));
	s->c.used++;
}

/* "YYYY-MM-DDTHH:MM:SS[.ffffff]Z" (UTC, as every sluice line writes it):
 * such strings compare in time order. */
static bool valid_timestamp(const char *ts)
{
	static const char pattern[] = "dddd-dd-ddTdd:dd:dd";
	size_t n = strlen(ts);

	if (n < 20 || n >= TS_LEN || ts[n - 1] != 'Z')
		return false;
	for (size_t i = 0; i < sizeof(pattern) - 1; i++)
		if (pattern[i] == 'd' ? (ts[i] < '0' || ts[i] > '9') : ts[i] != pattern[i])
			return false;
	if (n > 20) {
		if (ts[19] != '.' || n < 22)
			return false;
		for (size_t i = 20; i < n - 1; i++)
			if (ts[i] < '0' || ts[i] > '9')
				return false;
	}
	return true;
}

static bool has_sluice_key(json_object *o)
{
	json_object_object_foreach(o, k, v) {
		(void)v;
		if (strncmp(k, "sluice.", 7) == 0)
			return true;
	}
	return false;
}

void suggest_line(struct suggest *s, const char *file, unsigned long lineno,
		  const char *line, size_t len, bool complete)
{
	static const char *const kernel_actions[] = { "egress-denied", "egress-would-deny", "canary-denied", NULL };
	struct line_ctx l = { .s = s, .file = file, .lineno = lineno };
	enum json_tokener_error jerr;
	const char *ds, *comp, *action, *kind, *ts, *run;
	char *copy;
	size_t end, i;

	s->c.lines++;
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	if (i == len) {
		s->c.blank++;
		return;
	}
	if (len > LINE_MAX_BYTES) {
		problem(s, file, lineno, "line too long (%zu bytes, at most %u)", len, LINE_MAX_BYTES);
		return;
	}
	if (memchr(line, '\0', len)) {
		problem(s, file, lineno, "NUL byte in the line");
		return;
	}
	/* json-c wants the terminating NUL counted to finish a bare scalar */
	copy = sg_xcalloc(len + 1, 1);
	memcpy(copy, line, len);
	json_tokener_reset(s->tok);
	l.o = json_tokener_parse_ex(s->tok, copy, (int)len + 1);
	jerr = json_tokener_get_error(s->tok);
	end = json_tokener_get_parse_end(s->tok);
	free(copy);
	if (jerr != json_tokener_success) {
		if (jerr == json_tokener_error_parse_eof)
			problem(s, file, lineno, "%s", complete ? "truncated JSON: the line ends inside the object"
							      : "truncated: the file ends inside this line (a writer cut off?)");
		else
			problem(s, file, lineno, "malformed JSON at byte %zu: %s", end + 1, json_tokener_error_desc(jerr));
		json_object_put(l.o);
		return;
	}
	if (!json_object_is_type(l.o, json_type_object)) {
		problem(s, file, lineno, "JSON %s, not an object: not a sluice log line",
			l.o ? json_type_to_name(json_object_get_type(l.o)) : "null");
		json_object_put(l.o);
		return;
	}
	ds = jstr(l.o, "event.dataset");
	comp = jstr(l.o, "sluice.component");
	action = jstr(l.o, "event.action");
	kind = jstr(l.o, "event.kind");
	ts = jstr(l.o, "@timestamp");
	if (!has_sluice_key(l.o)) {
		problem(s, file, lineno, "not a sluice log line (no sluice.* field)");
		goto out;
	}
	if (!ts || !valid_timestamp(ts)) {
		problem(s, file, lineno, "sluice line without an @timestamp like 2026-11-30T06:24:59.430861Z");
		goto out;
	}
	l.ts = ts;
	run = jstr(l.o, "sluice.sandbox");
	if (run && run[0]) {
		char rb[65];

		sg_printable(rb, sizeof(rb), run);
		l.run = intern(s, rb);
	}
	l.mode = jstr(l.o, "sluice.mode");
	observe_common(&l);

	if (action && strcmp(action, "events_lost") == 0) {
		int64_t n = 0;

		if (!jint(l.o, "sluice.events_lost", &n) || n < 0) {
			problem(s, file, lineno, "events_lost line without a count");
			goto out;
		}
		s->c.events_lost += (unsigned long long)n;
		if (jstr(l.o, "event.reason") && strcmp(jstr(l.o, "event.reason"), "write_failed") == 0)
			note(s, file, lineno, "events_lost: lines could not be written to the events destination (the log is incomplete)");
		else
			note(s, file, lineno, "kernel events_lost: the ring buffer was full, events were lost (the log is incomplete)");
	} else if ((ds && strcmp(ds, "sluice.proxy") == 0) || (comp && strcmp(comp, "proxy") == 0)) {
		read_proxy(&l, action);
	} else if ((ds && strcmp(ds, "sluice.resolver") == 0) || (comp && strcmp(comp, "resolver") == 0)) {
		read_resolver(&l, action, kind);
	} else if (jhas(l.o, "sluice.hook") || is_one_of(action, kernel_actions)) {
		read_kernel(&l, action ? action : "");
	} else if (action && kind && (strcmp(kind, "state") == 0 || strcmp(kind, "metric") == 0)) {
		note(s, file, lineno, "sandbox lifecycle lines (start, stop, attach, reload, ...)");
	} else {
		char a[64];

		sg_printable(a, sizeof(a), action ? action : "(none)");
		problem(s, file, lineno, "a sluice line of a kind suggest does not know (event.action %s)", a);
	}
out:
	json_object_put(l.o);
}

int suggest_read(struct suggest *s, const char *file, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	int ret = 0;

	s->c.files++;
	if (s->n_files_named < 3)
		sg_printable(s->files[s->n_files_named], sizeof(s->files[0]), file);
	s->n_files_named++;
	errno = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		bool complete = n > 0 && line[n - 1] == '\n';

		suggest_line(s, file, ++lineno, line, (size_t)n, complete);
		errno = 0;
	}
	if (ferror(f))
		ret = -1;
	free(line);
	return ret;
}
