/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_suggest.c - `sluice policy suggest`: turn what sandboxes did (kernel
 * events, the proxy's access log, the resolver's query log: docs/events.md)
 * into a version-1 policy that would have allowed exactly that, or, with
 * --against POLICY, into the smallest additions to POLICY.  Rules and
 * limits: docs/policy.md, "Audit mode and suggest".
 *
 * Three steps:
 *   read    every line is parsed (json-c) and is either used (aggregated
 *           into an observation), noted (understood, but nothing a policy
 *           could allow: lifecycle lines, refusals no policy lifts) or
 *           skipped, which is always reported as "file:line: reason";
 *   plan    observations become targets: host entries from names the proxy
 *           saw (TLS SNI, CONNECT, HTTP Host) and from names the resolver
 *           answered before direct TCP to one of their addresses on a web
 *           port; url entries where the traffic was plain HTTP; cidr entries
 *           (/32, /128, the exact port and protocol) for the rest of the
 *           direct traffic;
 *   render  YAML written here, then loaded back with the policy library
 *           and linted; every observation must be allowed by the result
 *           (else exit 2), lint findings become comments, wildcards are
 *           only ever offered as comments.
 */
#include "cmd_suggest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define EXIT_CLEAN    0
#define EXIT_FINDINGS 1
#define EXIT_ERROR    2

#define LINE_MAX_BYTES (1u << 20)  /* longer lines are reported, not parsed */
#define TS_LEN         40          /* "2026-11-30T06:24:59.430861Z" and room */
#define RUNS_KEPT      3           /* sandbox names a `why` lists */
#define NAMES_KEPT     4           /* names kept per address, per cidr entry */
#define WILDCARD_MIN   3           /* exact names under one parent before a wildcard is offered */
#define URL_GROUPS_MAX 16          /* path groups per host:port before one "/" entry */
#define PORTS_MAX      256         /* items in one ports list (the parser's limit) */
#define POLICY_TEXT_MAX (64u << 20) /* YAML the parser reads */
#define ENTRIES_MAX    200000      /* entries in one policy (the parser's limit) */
#define COMMENT_WIDTH  96

/* Ports where direct TCP to an address a name resolved to is taken to be
 * HTTP or TLS, so a host entry (checked by the proxy) replaces a cidr entry.
 * Elsewhere the proxy would refuse the protocol: a cidr entry carries the
 * traffic and a host entry only lets the name resolve. */
static const uint16_t web_ports[] = { 80, 443, 8000, 8008, 8080, 8081, 8443, 8888 };

/* The methods a url entry may name (docs/policy.md), bit i = method i. */
static const char *const method_names[] = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" };
#define N_METHODS (sizeof(method_names) / sizeof(method_names[0]))

/* How a host was reached. */
enum via {
	VIA_TLS = 1,     /* transparent TLS: the SNI */
	VIA_CONNECT,     /* explicit proxy CONNECT */
	VIA_HTTP,        /* plain HTTP (Host / absolute URI) */
	VIA_DIRECT,      /* direct TCP to an address the name resolved to */
	VIA_NAME,        /* only so that the name resolves (a cidr entry carries the traffic) */
	VIA_CIDR_TCP,    /* cidr targets */
	VIA_CIDR_UDP,
};

/* --- memory: a command-line tool stops on out-of-memory ---------------------- */

static void oom(void)
{
	fputs("sluice policy suggest: out of memory\n", stderr);
	exit(EXIT_ERROR);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	void *q;

	if (size && n > SIZE_MAX / size)
		oom();
	q = realloc(p, n * size > 0 ? n * size : 1);
	if (!q)
		oom();
	return q;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		oom();
	return p;
}

__attribute__((format(printf, 1, 2)))
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	return s;
}

/* Append to a growing array: *v has *n elements and room for *cap. */
#define PUSH(v, n, cap) do {                                              \
		if ((n) == (cap)) {                                       \
			(cap) = (cap) ? (cap) * 2 : 8;                    \
			(v) = xrealloc((v), (cap), sizeof(*(v)));         \
		}                                                         \
	} while (0)

/* --- a string-keyed hash map ------------------------------------------------- */

struct hnode {
	struct hnode *next;
	uint64_t h;
	void *val;
	char key[];
};

struct hmap {
	struct hnode **b;
	size_t nb, n;
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static struct hnode *hmap_node(const struct hmap *m, const char *key)
{
	uint64_t h = fnv1a(key);

	if (!m->nb)
		return NULL;
	for (struct hnode *x = m->b[h & (m->nb - 1)]; x; x = x->next)
		if (x->h == h && strcmp(x->key, key) == 0)
			return x;
	return NULL;
}

static void *hmap_get(const struct hmap *m, const char *key)
{
	struct hnode *x = hmap_node(m, key);

	return x ? x->val : NULL;
}

/* The node for `key`, created (val NULL) when missing. */
static struct hnode *hmap_put(struct hmap *m, const char *key)
{
	struct hnode *x = hmap_node(m, key);
	size_t len = strlen(key);

	if (x)
		return x;
	if (m->n >= m->nb) {
		size_t nb = m->nb ? m->nb * 2 : 64;
		struct hnode **b = xcalloc(nb, sizeof(*b));

		for (size_t i = 0; i < m->nb; i++)
			for (struct hnode *y = m->b[i], *next; y; y = next) {
				next = y->next;
				y->next = b[y->h & (nb - 1)];
				b[y->h & (nb - 1)] = y;
			}
		free(m->b);
		m->b = b;
		m->nb = nb;
	}
	x = xcalloc(1, sizeof(*x) + len + 1);
	x->h = fnv1a(key);
	memcpy(x->key, key, len + 1);
	x->next = m->b[x->h & (m->nb - 1)];
	m->b[x->h & (m->nb - 1)] = x;
	m->n++;
	return x;
}

/* The values, in no particular order (callers sort). */
static void **hmap_values(const struct hmap *m, size_t *n)
{
	void **v = xcalloc(m->n, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < m->nb; i++)
		for (struct hnode *x = m->b[i]; x; x = x->next)
			v[k++] = x->val;
	*n = k;
	return v;
}

static void hmap_free(struct hmap *m, void (*freeval)(void *))
{
	for (size_t i = 0; i < m->nb; i++)
		for (struct hnode *x = m->b[i], *next; x; x = next) {
			next = x->next;
			if (freeval)
				freeval(x->val);
			free(x);
		}
	free(m->b);
	memset(m, 0, sizeof(*m));
}

/* --- text helpers -------------------------------------------------------------- */

/* A printable-ASCII copy of untrusted text (for comments and `why`). */
static void printable(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = ((unsigned char)src[i] >= 0x20 && (unsigned char)src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

/* "2026-11-30T06:24:59.430861Z" -> "2026-11-30T06:24:59Z" (else as is). */
static void ts_short(char *dst, size_t len, const char *ts)
{
	if (strlen(ts) >= 20 && ts[4] == '-' && ts[10] == 'T' && ts[19] == '.')
		snprintf(dst, len, "%.19sZ", ts);
	else
		printable(dst, len, ts);
}

static int method_index(const char *m)
{
	for (size_t i = 0; i < N_METHODS; i++)
		if (strcmp(m, method_names[i]) == 0)
			return (int)i;
	return -1;
}

static bool is_web_port(uint16_t port)
{
	for (size_t i = 0; i < sizeof(web_ports) / sizeof(web_ports[0]); i++)
		if (web_ports[i] == port)
			return true;
	return false;
}

/* The RR types the policy format knows by name (sluice_qtype_name()), once. */
struct qnames {
	uint16_t type[64];
	const char *name[64];
	size_t n;
};

static void qnames_init(struct qnames *q)
{
	q->n = 0;
	for (unsigned t = 1; t <= 65535 && q->n < 64; t++) {
		const char *n = sluice_qtype_name((uint16_t)t);

		if (n) {
			q->type[q->n] = (uint16_t)t;
			q->name[q->n++] = n;
		}
	}
}

/* RR type number of a name as the resolver logs it ("TXT", "TYPE65"), 0 if unknown. */
static uint16_t qtype_number(const struct qnames *q, const char *name)
{
	char *end;
	unsigned long v;

	if (strncmp(name, "TYPE", 4) == 0 && name[4] >= '0' && name[4] <= '9') {
		errno = 0;
		v = strtoul(name + 4, &end, 10);
		return (!errno && !*end && v > 0 && v <= 65535) ? (uint16_t)v : 0;
	}
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->name[i], name) == 0)
			return q->type[i];
	return 0;
}

static const char *qtype_text(uint16_t t, char *buf, size_t len)
{
	const char *n = sluice_qtype_name(t);

	if (n)
		return n;
	snprintf(buf, len, "%u", t);
	return buf;
}

/* Does path prefix `prefix` cover `path` (both normalised), on a segment
 * boundary?  "/pub/" covers "/pub/x"; "/pub" covers "/pub" and "/pub/x". */
static bool prefix_covers(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);

	if (strncmp(prefix, path, n) != 0)
		return false;
	return prefix[n - 1] == '/' || path[n] == '\0' || path[n] == '/';
}

/* The longest prefix covering both, ending at a '/' (at least "/"). */
static char *common_prefix(const char *a, const char *b)
{
	size_t i = 0, cut = 1;

	if (prefix_covers(a, b))
		return xstrdup(a);
	if (prefix_covers(b, a))
		return xstrdup(b);
	while (a[i] && a[i] == b[i]) {
		if (a[i] == '/')
			cut = i + 1;
		i++;
	}
	return xasprintf("%.*s", (int)cut, a);
}

/* The first path segment ("/pub/x" -> "pub"), for grouping. */
static char *first_segment(const char *path)
{
	const char *s = path + (path[0] == '/'), *e = strchr(s, '/');

	return xasprintf("%.*s", (int)(e ? (size_t)(e - s) : strlen(s)), s);
}

/* "api.example.com" -> "com.example.api": siblings sort together. */
static char *reversed_labels(const char *host)
{
	size_t n = strlen(host);
	char *out = xcalloc(n + 2, 1), *o = out;
	const char *end = host + n;

	while (end > host) {
		const char *dot = end;

		while (dot > host && dot[-1] != '.')
			dot--;
		if (o != out)
			*o++ = '.';
		memcpy(o, dot, (size_t)(end - dot));
		o += end - dot;
		end = dot > host ? dot - 1 : host;
	}
	*o = '\0';
	return out;
}

/* --- how often and when --------------------------------------------------------- */

struct seen {
	unsigned long long n;
	char first[TS_LEN], last[TS_LEN];
	const char *runs[RUNS_KEPT];   /* interned sandbox names */
	unsigned n_runs;
	bool more_runs;
};

static void seen_run(struct seen *s, const char *run)
{
	if (!run)
		return;
	for (unsigned i = 0; i < s->n_runs; i++)
		if (s->runs[i] == run)
			return;
	if (s->n_runs < RUNS_KEPT)
		s->runs[s->n_runs++] = run;
	else
		s->more_runs = true;
}

static void seen_add(struct seen *s, const char *ts, const char *run, unsigned long long n)
{
	if (!s->n || strcmp(ts, s->first) < 0)
		snprintf(s->first, sizeof(s->first), "%s", ts);
	if (!s->n || strcmp(ts, s->last) > 0)
		snprintf(s->last, sizeof(s->last), "%s", ts);
	s->n += n;
	seen_run(s, run);
}

static void seen_merge(struct seen *d, const struct seen *s)
{
	if (!s->n)
		return;
	if (!d->n || strcmp(s->first, d->first) < 0)
		memcpy(d->first, s->first, sizeof(d->first));
	if (!d->n || strcmp(s->last, d->last) > 0)
		memcpy(d->last, s->last, sizeof(d->last));
	d->n += s->n;
	for (unsigned i = 0; i < s->n_runs; i++)
		seen_run(d, s->runs[i]);
	d->more_runs |= s->more_runs;
}

/* "seen 3 times from T1 to T2 in run-1, run-2" into f. */
static void seen_text(FILE *f, const struct seen *s, bool denied)
{
	char a[TS_LEN], b[TS_LEN];

	ts_short(a, sizeof(a), s->first);
	ts_short(b, sizeof(b), s->last);
	fprintf(f, "%s ", denied ? "denied" : "seen");
	if (s->n == 1)
		fprintf(f, "once at %s", a);
	else if (strcmp(a, b) == 0)
		fprintf(f, "%llu times at %s", s->n, a);
	else
		fprintf(f, "%llu times from %s to %s", s->n, a, b);
	if (s->n_runs) {
		fprintf(f, " in ");
		for (unsigned i = 0; i < s->n_runs; i++)
			fprintf(f, "%s%s", i ? ", " : "", s->runs[i]);
		if (s->more_runs)
			fprintf(f, " and more runs");
	}
}

/* --- observations and targets ------------------------------------------------------ */

/* A proxy attempt: one (via, host, port, method, path). */
struct pobs {
	enum via via;
	const char *host;      /* interned, normalised */
	uint16_t port;
	const char *method;    /* interned; VIA_HTTP only */
	char *path;            /* normalised; VIA_HTTP only */
	unsigned long long denied;
	struct seen seen;
};

/* A kernel denial / would-deny: one (address, protocol, port, run). */
struct kobs {
	int family;
	uint8_t addr[16];
	char ip[INET6_ADDRSTRLEN];
	uint8_t proto;
	uint16_t port;
	const char *run;
	unsigned long long denied;
	struct seen seen;
};

/* A name the resolver was asked. */
struct dname {
	const char *name;
	struct seen seen;
	uint16_t *qtypes;
	size_t n_qtypes, cap_qtypes;
	unsigned long long denied;   /* name_not_allowed in enforce mode: no address */
	bool answered;               /* some address in an answer */
	bool suspect;
	const char *suspect_reason;
	bool used;                   /* some entry was made from it */
};

/* One name an address was given for, in one run. */
struct dres {
	const char *name, *run;
	char first[TS_LEN];
};

struct daddr {
	struct dres *v;
	size_t n, cap;
};

/* A use of a target's port: how, how often, and (direct) to which address. */
struct puse {
	uint16_t port;
	enum via via;
	unsigned long long n;
	char ip[INET6_ADDRSTRLEN];
};

/* An entry in the making. */
struct target {
	enum sluice_entry_kind kind;
	const char *host;                 /* host, url */
	uint16_t url_port;                /* url */
	char *prefix;                     /* url */
	unsigned methods;                 /* url: bits of method_names */
	unsigned long long n_paths;       /* url: distinct paths */
	int family;                       /* cidr */
	uint8_t addr[16];
	char ip[INET6_ADDRSTRLEN];
	uint8_t proto;
	struct puse *pu;                  /* host, cidr */
	size_t n_pu, cap_pu;
	struct seen seen;
	unsigned long long denied;
	const char *names[NAMES_KEPT];    /* cidr: names that resolved to the address; host: other such names */
	size_t n_names;
	bool named_by_url;                /* host: a url entry names it (so it resolves) */
	bool suspect;                     /* host: the resolver flagged names as tunnel-like */
	const char *suspect_reason;
	int existing;                     /* --against: index of the entry it widens, or -1 */
	char *sortkey;
};

/* Understood lines that give no entry, by kind. */
struct note {
	char *text;
	unsigned long long n;
	char where[300];      /* file:line of the first */
	int order;
};

struct suggest {
	struct suggest_opts o;
	struct suggest_counts c;
	FILE *diag;
	struct json_tokener *tok;
	struct hmap strings;      /* interned strings */
	struct hmap pobs, kobs, dnames, daddrs;
	struct hmap notes;
	int n_notes;
	struct hmap portless;     /* names of proxy lines without a port -> count */
	struct hmap policies;     /* "digest mode" -> "name (sha256, mode)" of the runs read */
	char default_digest[SLUICE_DIGEST_HEX_LEN + 1];
	bool other_policy;        /* some run had a policy other than the built-in default */
	char first_ts[TS_LEN], last_ts[TS_LEN];
	struct hmap runs;
	char files[3][128];
	unsigned long n_files_named;
	bool rendered;
	/* plan */
	struct hmap targets;
	struct hmap ag_hosts;     /* --against: exact host -> entry index + 1 */
	struct hmap views;        /* "policy\nhost" -> struct view */
	struct qnames qnames;
	bool ag_hosts_built;
	unsigned long long n_attempts, n_allowed_already, n_unallowable;
};

static const char *intern(struct suggest *s, const char *str)
{
	struct hnode *x = hmap_put(&s->strings, str);

	x->val = x->key;
	return x->key;
}

static void note(struct suggest *s, const char *file, unsigned long lineno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void note(struct suggest *s, const char *file, unsigned long lineno, const char *fmt, ...)
{
	char text[512];
	struct hnode *x;
	struct note *n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	x = hmap_put(&s->notes, text);
	if (!x->val) {
		n = xcalloc(1, sizeof(*n));
		n->text = xstrdup(text);
		n->order = s->n_notes++;
		if (file)
			snprintf(n->where, sizeof(n->where), "%s:%lu", file, lineno);
		x->val = n;
	}
	n = x->val;
	n->n++;
	s->c.noted++;
}

static void problem(struct suggest *s, const char *file, unsigned long lineno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void problem(struct suggest *s, const char *file, unsigned long lineno, const char *fmt, ...)
{
	char text[512], f[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	printable(f, sizeof(f), file);
	fprintf(s->diag, "%s:%lu: %s (line skipped)\n", f, lineno, text);
	s->c.skipped++;
}

/* --- json-c accessors -------------------------------------------------------------- */

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

/* --- reading ------------------------------------------------------------------------ */

struct line_ctx {
	struct suggest *s;
	const char *file;
	unsigned long lineno;
	json_object *o;
	const char *ts, *run, *mode;
};

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
		hmap_put(&s->runs, l->run)->val = (void *)l->run;
	if (digest && pname) {
		snprintf(key, sizeof(key), "%.64s %.8s", digest, l->mode ? l->mode : "?");
		x = hmap_put(&s->policies, key);
		if (!x->val) {
			char d[16];

			printable(buf, sizeof(buf), pname);
			printable(d, sizeof(d), digest);
			x->val = xasprintf("%s (sha256 %.12s, mode %.8s)", buf, d, l->mode ? l->mode : "?");
			if (strcmp(digest, s->default_digest) != 0)
				s->other_policy = true;
		}
	}
}

static void add_pobs(struct line_ctx *l, enum via via, const char *host, uint16_t port,
		     const char *method, const char *path, bool denied)
{
	struct suggest *s = l->s;
	char *key = xasprintf("%d\n%s\n%u\n%s\n%s", via, host, port, method ? method : "", path ? path : "");
	struct hnode *x = hmap_put(&s->pobs, key);
	struct pobs *p = x->val;

	free(key);
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->via = via;
		p->host = intern(s, host);
		p->port = port;
		p->method = method ? intern(s, method) : NULL;
		p->path = path ? xstrdup(path) : NULL;
		x->val = p;
	}
	seen_add(&p->seen, l->ts, l->run, 1);
	if (denied)
		p->denied++;
	s->c.used++;
}

/* Kernel event lines. */
static void read_kernel(struct line_ctx *l, const char *action)
{
	static const char *const never[] = { "raw_socket", "icmp_socket", "socket_protocol",
					     "protocol_not_allowed", "redirect_target_not_ours", "foreign_socket",
					     "socket_family", NULL };
	struct suggest *s = l->s;
	const char *verdict = jstr(l->o, "sluice.verdict"), *reason = jstr(l->o, "event.reason");
	const char *transport = jstr(l->o, "network.transport"), *ipstr = jstr(l->o, "destination.ip");
	int64_t port = -1;
	int family = 0;
	uint8_t addr[16];
	struct kobs *k;
	struct hnode *x;
	char *key, r[64];

	if (!verdict || (strcmp(verdict, "deny") != 0 && strcmp(verdict, "would_deny") != 0)) {
		problem(s, l->file, l->lineno, "kernel event without a sluice.verdict of deny or would_deny");
		return;
	}
	if (!reason) {
		problem(s, l->file, l->lineno, "kernel event without event.reason");
		return;
	}
	printable(r, sizeof(r), reason);
	if (strcmp(action, "canary-denied") == 0 || jtrue(l->o, "sluice.canary")) {
		note(s, l->file, l->lineno, "kernel: the start-up canary's own attempts (sluice run proves the filter with them)");
		return;
	}
	if (is_one_of(reason, never)) {
		note(s, l->file, l->lineno, "kernel %s: refused in audit mode too, no policy can allow it", r);
		return;
	}
	if (strcmp(reason, "no_proxy") == 0 || strcmp(reason, "dns_no_resolver") == 0) {
		note(s, l->file, l->lineno, "kernel %s: the sandbox ran without its %s (--no-%s); nothing to add to a policy",
		     r, reason[0] == 'n' ? "proxy" : "resolver", reason[0] == 'n' ? "proxy" : "resolver");
		return;
	}
	if (strcmp(reason, "unix_not_allowed") == 0 || strcmp(reason, "unix_outside_sandbox") == 0) {
		/* a unix socket reaches a daemon outside: suggest never adds one
		 * (glibc's nscd lookups are the usual ones, and harmless to refuse) */
		const char *where = jstr(l->o, "destination.address");
		char p[128];

		printable(p, sizeof(p), where ? where : "?");
		note(s, l->file, l->lineno, "kernel %s: unix socket %s; not suggested: add a unix: entry by hand if the sandbox needs that daemon",
		     r, p);
		return;
	}
	if (strcmp(reason, "egress_backstop") == 0) {
		note(s, l->file, l->lineno, "kernel egress_backstop: packets that bypassed the socket hooks were dropped; investigate, do not allow");
		return;
	}
	if (strcmp(reason, "tcp_port_not_allowed") != 0 && strcmp(reason, "udp_not_allowed") != 0) {
		problem(s, l->file, l->lineno, "kernel event with an unknown event.reason '%s'", r);
		return;
	}
	if (!ipstr || sluice_ip_normalise(ipstr, &family, addr) != 0) {
		problem(s, l->file, l->lineno, "kernel event %s without a valid destination.ip", r);
		return;
	}
	if (!jint(l->o, "destination.port", &port) || port < 0 || port > 65535) {
		problem(s, l->file, l->lineno, "kernel event %s without a valid destination.port", r);
		return;
	}
	if (!transport || (strcmp(transport, "tcp") != 0 && strcmp(transport, "udp") != 0) ||
	    (transport[0] == 't') != (reason[0] == 't')) {
		problem(s, l->file, l->lineno, "kernel event %s with network.transport other than %s", r,
			reason[0] == 't' ? "tcp" : "udp");
		return;
	}
	if (port == 0) {
		note(s, l->file, l->lineno, "kernel %s to port 0: no entry can name port 0", r);
		return;
	}
	{
		char ip[INET6_ADDRSTRLEN];

		inet_ntop(family, addr, ip, sizeof(ip));
		key = xasprintf("%s\n%s\n%lld\n%s", ip, transport, (long long)port, l->run ? l->run : "");
		x = hmap_put(&s->kobs, key);
		free(key);
		k = x->val;
		if (!k) {
			k = xcalloc(1, sizeof(*k));
			k->family = family;
			memcpy(k->addr, addr, 16);
			memcpy(k->ip, ip, sizeof(ip));
			k->proto = transport[0] == 't' ? IPPROTO_TCP : IPPROTO_UDP;
			k->port = (uint16_t)port;
			k->run = l->run;
			x->val = k;
		}
	}
	seen_add(&k->seen, l->ts, l->run, 1);
	if (strcmp(verdict, "deny") == 0)
		k->denied++;
	s->c.used++;
}

/* url.full "http://host[:port]/path?q" (or "https://", a request inside
 * inspected TLS: *https set) -> port and normalised path. */
static int parse_url_full(const char *url, uint16_t *port, char *path, size_t len, bool *https,
			  const char **why)
{
	const char *a, *p, *host_end, *colon;
	char *end;
	unsigned long v;

	*why = "url.full is not an http:// or https:// URL";
	*https = strncmp(url, "https://", 8) == 0;
	if (!*https && strncmp(url, "http://", 7) != 0)
		return -1;
	a = url + (*https ? 8 : 7);
	p = a + strcspn(a, "/?#");
	if (*a == '[') {
		host_end = memchr(a, ']', (size_t)(p - a));
		if (!host_end)
			return -1;
		colon = host_end + 1 < p && host_end[1] == ':' ? host_end + 1 : NULL;
	} else {
		colon = memchr(a, ':', (size_t)(p - a));
	}
	*port = *https ? 443 : 80;
	if (colon) {
		errno = 0;
		v = strtoul(colon + 1, &end, 10);
		if (errno || end != p || v == 0 || v > 65535) {
			*why = "url.full has a bad port";
			return -1;
		}
		*port = (uint16_t)v;
	}
	if (*p != '/') {
		snprintf(path, len, "/");
		return 0;
	}
	return sluice_url_path_normalise(p, path, len, why);
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
	printable(r, sizeof(r), reason);
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
	printable(shown, sizeof(shown), raw);
	if (!port) {
		struct hnode *x = hmap_put(&s->portless, shown);

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
	x = hmap_put(&s->daddrs, ip);
	if (!x->val)
		x->val = xcalloc(1, sizeof(struct daddr));
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
	printable(r, sizeof(r), reason);
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
	printable(shown, sizeof(shown), qname);
	if (sluice_host_normalise(qname, name, sizeof(name), &why) < 0) {
		if (why && strcmp(why, "ip literal") == 0) {
			note(s, l->file, l->lineno, "resolver: queries for IP literals");
			return;
		}
		problem(s, l->file, l->lineno, "dns-query line with an invalid dns.question.name '%s' (%s)", shown,
			why ? why : "?");
		return;
	}
	x = hmap_put(&s->dnames, name);
	if (!x->val) {
		d = xcalloc(1, sizeof(*d));
		d->name = intern(s, name);
		x->val = d;
	}
	d = x->val;
	seen_add(&d->seen, l->ts, l->run, 1);
	if (strcmp(verdict, "deny") == 0 && strcmp(reason, "name_not_allowed") == 0)
		d->denied++;
	t = qtype_number(&s->qnames, qtype);
	if (t) {
		bool have = false;

		for (size_t i = 0; i < d->n_qtypes; i++)
			have |= d->qtypes[i] == t;
		if (!have) {
			PUSH(d->qtypes, d->n_qtypes, d->cap_qtypes);
			d->qtypes[d->n_qtypes++] = t;
		}
	} else {
		printable(qt, sizeof(qt), qtype);
		note(s, l->file, l->lineno, "resolver: query type %s, which a policy's dns.qtypes cannot name", qt);
	}
	if (jtrue(l->o, "sluice.dns_tunnel_suspect")) {
		const char *tr = jstr(l->o, "sluice.dns_tunnel_reason");
		char trb[32];

		printable(trb, sizeof(trb), tr ? tr : "suspect");
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
	copy = xcalloc(len + 1, 1);
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

		printable(rb, sizeof(rb), run);
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

		printable(a, sizeof(a), action ? action : "(none)");
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
		printable(s->files[s->n_files_named], sizeof(s->files[0]), file);
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

/* --- planning ------------------------------------------------------------------------ */

static struct target *target_get(struct suggest *s, const char *key, enum sluice_entry_kind kind, bool *created)
{
	struct hnode *x = hmap_put(&s->targets, key);
	struct target *t = x->val;

	if (created)
		*created = !t;
	if (!t) {
		t = xcalloc(1, sizeof(*t));
		t->kind = kind;
		t->existing = -1;
		x->val = t;
	}
	return t;
}

static void puse_add(struct target *t, uint16_t port, enum via via, unsigned long long n, const char *ip)
{
	for (size_t i = 0; i < t->n_pu; i++)
		if (t->pu[i].port == port && t->pu[i].via == via) {
			t->pu[i].n += n;
			return;
		}
	PUSH(t->pu, t->n_pu, t->cap_pu);
	memset(&t->pu[t->n_pu], 0, sizeof(t->pu[0]));
	t->pu[t->n_pu].port = port;
	t->pu[t->n_pu].via = via;
	t->pu[t->n_pu].n = n;
	if (ip)
		snprintf(t->pu[t->n_pu].ip, sizeof(t->pu[0].ip), "%s", ip);
	t->n_pu++;
}

static bool target_has_port(const struct target *t, uint16_t port)
{
	for (size_t i = 0; i < t->n_pu; i++)
		if (t->pu[i].port == port && t->pu[i].via != VIA_NAME)
			return true;
	return false;
}

/* The exact host entry of --against POLICY for `host`, or -1 (a map built
 * once: policies may hold many entries). */
static int existing_host(struct suggest *s, const char *host)
{
	const struct sluice_policy *p = s->o.against;
	struct hnode *x;

	if (!p)
		return -1;
	if (!s->ag_hosts_built) {
		s->ag_hosts_built = true;
		for (size_t i = 0; i < p->n_entries; i++)
			if (p->entries[i].kind == SLUICE_ENTRY_HOST && !p->entries[i].wildcard) {
				x = hmap_put(&s->ag_hosts, p->entries[i].host);
				if (!x->val)
					x->val = (void *)(uintptr_t)(i + 1);
			}
	}
	x = hmap_node(&s->ag_hosts, host);
	return x ? (int)((uintptr_t)x->val - 1) : -1;
}

static struct target *host_target(struct suggest *s, const char *host)
{
	char *key = xasprintf("h\n%s", host);
	bool created;
	struct target *t = target_get(s, key, SLUICE_ENTRY_HOST, &created);
	struct dname *d;

	free(key);
	if (created) {
		t->host = host;
		t->existing = existing_host(s, host);
		t->sortkey = reversed_labels(host);
		d = hmap_get(&s->dnames, host);
		if (d && d->suspect) {
			t->suspect = true;
			t->suspect_reason = d->suspect_reason;
		}
	}
	d = hmap_get(&s->dnames, host);
	if (d)
		d->used = true;
	return t;
}

/* Does a cidr entry of `p` allow (family, addr, proto, port)? */
static bool cidr_allows(const struct sluice_policy *p, int family, const uint8_t *addr, uint8_t proto,
			uint16_t port)
{
	for (size_t i = 0; p && i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->protocol != proto || !sluice_entry_cidr_contains(e, family, addr))
			continue;
		if (sluice_entry_has_port(e, port))
			return true;
	}
	return false;
}

/*
 * The policy library's matchers walk every entry; logs hold many attempts
 * per name and policies may hold many entries.  A view is `p` with only the
 * host and url entries that match `host` (shallow copies, in order), built
 * once per name: the same matchers then give the same answers, faster.
 */
struct view {
	struct sluice_policy p;
};

static const struct sluice_policy *view_for(struct suggest *s, const struct sluice_policy *p, const char *host)
{
	char *key = xasprintf("%p\n%s", (const void *)p, host);
	struct hnode *x = hmap_put(&s->views, key);
	struct view *v = x->val;

	free(key);
	if (!v) {
		v = xcalloc(1, sizeof(*v));
		v->p = *p;
		v->p.entries = NULL;
		v->p.n_entries = 0;
		for (size_t i = 0; i < p->n_entries; i++) {
			const struct sluice_entry *e = &p->entries[i];

			if ((e->kind == SLUICE_ENTRY_HOST || e->kind == SLUICE_ENTRY_URL) && sluice_host_match(e, host)) {
				v->p.entries = xrealloc(v->p.entries, v->p.n_entries + 1, sizeof(*v->p.entries));
				v->p.entries[v->p.n_entries++] = *e;
			}
		}
		x->val = v;
	}
	return &v->p;
}

static void free_view(void *x)
{
	struct view *v = x;

	free(v->p.entries);
	free(v);
}

static bool pobs_allowed(struct suggest *s, const struct sluice_policy *p, const struct pobs *o)
{
	p = view_for(s, p, o->host);
	if (o->via == VIA_HTTP && sluice_policy_match_url(p, "http", o->host, o->port, o->method, o->path))
		return true;
	return sluice_policy_match_host(p, o->host, o->port) != NULL;
}

static bool name_allowed_on(struct suggest *s, const struct sluice_policy *p, const char *name, uint16_t port)
{
	return sluice_policy_match_host(view_for(s, p, name), name, port) != NULL;
}

/* The name an address was most likely reached by: a name of the same run
 * answered before the attempt, else the latest of any run. */
static const char *correlate(struct suggest *s, const struct kobs *k, const char **others, size_t *n_others)
{
	struct daddr *da = hmap_get(&s->daddrs, k->ip);
	const struct dres *best = NULL;
	int best_score = -1;

	*n_others = 0;
	if (!da || !da->n)
		return NULL;
	for (size_t i = 0; i < da->n; i++) {
		const struct dres *r = &da->v[i];
		int score = (r->run == k->run ? 2 : 0) + (strcmp(r->first, k->seen.first) <= 0 ? 1 : 0);

		if (score > best_score || (score == best_score && strcmp(r->first, best->first) > 0)) {
			best = r;
			best_score = score;
		}
	}
	if (!best)
		return NULL;
	for (size_t i = 0; i < da->n && *n_others < NAMES_KEPT; i++) {
		bool dup = da->v[i].name == best->name;

		for (size_t j = 0; j < *n_others && !dup; j++)
			dup = others[j] == da->v[i].name;
		if (!dup)
			others[(*n_others)++] = da->v[i].name;
	}
	return best->name;
}

static int cmp_pobs(const void *a, const void *b)
{
	const struct pobs *x = *(const struct pobs *const *)a, *y = *(const struct pobs *const *)b;
	int c = strcmp(x->host, y->host);

	if (c)
		return c;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->via != y->via)
		return x->via < y->via ? -1 : 1;
	c = strcmp(x->path ? x->path : "", y->path ? y->path : "");
	if (c)
		return c;
	return strcmp(x->method ? x->method : "", y->method ? y->method : "");
}

static int cmp_kobs(const void *a, const void *b)
{
	const struct kobs *x = *(const struct kobs *const *)a, *y = *(const struct kobs *const *)b;
	int c;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	c = memcmp(x->addr, y->addr, 16);
	if (c)
		return c;
	if (x->proto != y->proto)
		return x->proto < y->proto ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return strcmp(x->run ? x->run : "", y->run ? y->run : "");
}

/* Plain-HTTP observations of one host:port [i, j) of the sorted array. */
static void plan_http_group(struct suggest *s, struct pobs **v, size_t i, size_t j)
{
	const struct sluice_policy *ag = s->o.against;
	const char *host = v[i]->host;
	uint16_t port = v[i]->port;
	struct target *ht;
	bool unknown_method = false;
	char *key;
	size_t n_groups = 0;
	char **groups = NULL;
	bool root = false;

	key = xasprintf("h\n%s", host);
	ht = hmap_get(&s->targets, key);
	free(key);
	for (size_t k = i; k < j; k++)
		unknown_method |= method_index(v[k]->method) < 0;
	/* a host entry on this port (TLS, CONNECT) already allows every path */
	if ((ht && target_has_port(ht, port)) || unknown_method) {
		ht = host_target(s, host);
		for (size_t k = i; k < j; k++) {
			puse_add(ht, port, VIA_HTTP, v[k]->seen.n, NULL);
			seen_merge(&ht->seen, &v[k]->seen);
			ht->denied += v[k]->denied;
		}
		return;
	}
	/* --against: an entry of the policy covering the path lacks the method */
	if (ag) {
		size_t keep = i;

		for (size_t k = i; k < j; k++) {
			int found = -1;

			for (size_t e = 0; e < ag->n_entries && found < 0; e++) {
				const struct sluice_entry *x = &ag->entries[e];

				if (x->kind == SLUICE_ENTRY_URL && strcmp(x->url_scheme, "http") == 0 &&
				    x->url_port == port && strcmp(x->url_host, host) == 0 &&
				    prefix_covers(x->url_path, v[k]->path))
					found = (int)e;
			}
			if (found >= 0) {
				struct target *t;

				key = xasprintf("e\n%d", found);
				t = target_get(s, key, SLUICE_ENTRY_URL, NULL);
				free(key);
				t->existing = found;
				t->host = host;
				t->url_port = port;
				if (!t->prefix)
					t->prefix = xstrdup(ag->entries[found].url_path);
				t->methods |= 1u << method_index(v[k]->method);
				t->n_paths++;
				seen_merge(&t->seen, &v[k]->seen);
				t->denied += v[k]->denied;
				if (!t->sortkey)
					t->sortkey = xasprintf("%08d", found);
			} else {
				v[keep++] = v[k];
			}
		}
		j = keep;
		if (j == i)
			return;
	}
	/* group by first path segment; "/" itself, or too many groups: one "/" entry */
	for (size_t k = i; k < j; k++) {
		char *g = first_segment(v[k]->path);
		bool have = false;

		root |= strcmp(v[k]->path, "/") == 0;
		for (size_t x = 0; x < n_groups && !have; x++)
			have = strcmp(groups[x], g) == 0;
		if (!have) {
			groups = xrealloc(groups, n_groups + 1, sizeof(*groups));
			groups[n_groups++] = g;
		} else {
			free(g);
		}
	}
	if (root || n_groups > URL_GROUPS_MAX) {
		for (size_t x = 0; x < n_groups; x++)
			free(groups[x]);
		n_groups = 0;
	}
	for (size_t k = i; k < j; k++) {
		char *g = n_groups ? first_segment(v[k]->path) : xstrdup("");
		struct target *t;
		char *rl;

		key = xasprintf("u\n%s\n%u\n%s", host, port, g);
		t = target_get(s, key, SLUICE_ENTRY_URL, NULL);
		free(key);
		free(g);
		if (!t->host) {
			t->host = host;
			t->url_port = port;
			t->prefix = xstrdup(n_groups ? v[k]->path : "/");
			rl = reversed_labels(host);
			t->sortkey = xasprintf("%s %05u %s", rl, port, t->prefix);
			free(rl);
		} else if (!prefix_covers(t->prefix, v[k]->path)) {
			char *c = common_prefix(t->prefix, v[k]->path);

			free(t->prefix);
			t->prefix = c;
		}
		t->methods |= 1u << method_index(v[k]->method);
		t->n_paths++;
		seen_merge(&t->seen, &v[k]->seen);
		t->denied += v[k]->denied;
		host_target(s, host)->named_by_url = true;   /* marks the name used; no entry by itself */
	}
	for (size_t x = 0; x < n_groups; x++)
		free(groups[x]);
	free(groups);
}

static void plan(struct suggest *s)
{
	const struct sluice_policy *ag = s->o.against;
	struct pobs **pv;
	struct kobs **kv;
	size_t np, nk;
	const char **need_name = NULL;
	uint16_t *need_port = NULL;
	size_t n_need = 0;

	pv = (struct pobs **)hmap_values(&s->pobs, &np);
	kv = (struct kobs **)hmap_values(&s->kobs, &nk);
	qsort(pv, np, sizeof(*pv), cmp_pobs);
	qsort(kv, nk, sizeof(*kv), cmp_kobs);

	/* 1. names through the proxy: TLS and CONNECT make host entries */
	for (size_t i = 0; i < np; i++) {
		struct target *t;

		s->n_attempts += pv[i]->seen.n;
		if (ag && pobs_allowed(s, ag, pv[i])) {
			s->n_allowed_already += pv[i]->seen.n;
			pv[i] = NULL;
			continue;
		}
		if (pv[i]->via == VIA_HTTP)
			continue;
		t = host_target(s, pv[i]->host);
		puse_add(t, pv[i]->port, pv[i]->via, pv[i]->seen.n, NULL);
		seen_merge(&t->seen, &pv[i]->seen);
		t->denied += pv[i]->denied;
		pv[i] = NULL;
	}
	/* 2. direct TCP on a web port to an address a name resolved to: a host
	 *    entry (the proxy will check the name); the rest: cidr entries */
	for (size_t i = 0; i < nk; i++) {
		const struct kobs *k = kv[i];
		const char *others[NAMES_KEPT], *name;
		size_t n_others;
		struct target *t;
		char *key;

		s->n_attempts += k->seen.n;
		name = correlate(s, k, others, &n_others);
		if (ag && (cidr_allows(ag, k->family, k->addr, k->proto, k->port) ||
			   (name && k->proto == IPPROTO_TCP && name_allowed_on(s, ag, name, k->port)))) {
			s->n_allowed_already += k->seen.n;
			continue;
		}
		if (name && k->proto == IPPROTO_TCP && is_web_port(k->port)) {
			t = host_target(s, name);
			puse_add(t, k->port, VIA_DIRECT, k->seen.n, k->ip);
			seen_merge(&t->seen, &k->seen);
			t->denied += k->denied;
			/* other names the address was given for: the reviewer decides */
			for (size_t o = 0; o < n_others; o++) {
				bool dup = false;

				for (size_t x = 0; x < t->n_names; x++)
					dup |= t->names[x] == others[o];
				if (!dup && t->n_names < NAMES_KEPT)
					t->names[t->n_names++] = others[o];
			}
			continue;
		}
		key = xasprintf("c\n%s\n%u", k->ip, k->proto);
		t = target_get(s, key, SLUICE_ENTRY_CIDR, NULL);
		free(key);
		if (!t->ip[0]) {
			t->family = k->family;
			memcpy(t->addr, k->addr, 16);
			memcpy(t->ip, k->ip, sizeof(t->ip));
			t->proto = k->proto;
			t->sortkey = xasprintf("%d %02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x %u",
					       k->family == AF_INET ? 4 : 6, k->addr[0], k->addr[1], k->addr[2],
					       k->addr[3], k->addr[4], k->addr[5], k->addr[6], k->addr[7],
					       k->addr[8], k->addr[9], k->addr[10], k->addr[11], k->addr[12],
					       k->addr[13], k->addr[14], k->addr[15], k->proto);
			for (size_t e = 0; ag && e < ag->n_entries; e++) {
				const struct sluice_entry *x = &ag->entries[e];

				if (x->kind == SLUICE_ENTRY_CIDR && x->family == k->family && x->protocol == k->proto &&
				    x->prefix_len == (k->family == AF_INET ? 32 : 128) &&
				    memcmp(x->addr, k->addr, k->family == AF_INET ? 4 : 16) == 0)
					t->existing = (int)e;
			}
		}
		puse_add(t, k->port, k->proto == IPPROTO_TCP ? VIA_CIDR_TCP : VIA_CIDR_UDP, k->seen.n, NULL);
		seen_merge(&t->seen, &k->seen);
		t->denied += k->denied;
		if (name) {
			const char *all[NAMES_KEPT + 1];
			size_t n_all = 0;

			all[n_all++] = name;
			for (size_t o = 0; o < n_others; o++)
				all[n_all++] = others[o];
			for (size_t o = 0; o < n_all; o++) {
				bool dup = false;

				for (size_t x = 0; x < t->n_names; x++)
					dup |= t->names[x] == all[o];
				if (!dup && t->n_names < NAMES_KEPT)
					t->names[t->n_names++] = all[o];
			}
			/* the name must still resolve: see step 4 */
			need_name = xrealloc(need_name, n_need + 1, sizeof(*need_name));
			need_port = xrealloc(need_port, n_need + 1, sizeof(*need_port));
			need_name[n_need] = name;
			need_port[n_need++] = k->port;
			{
				struct dname *d = hmap_get(&s->dnames, name);

				if (d)
					d->used = true;
			}
		}
	}
	/* 3. plain HTTP: url entries (after the host entries they may fall under) */
	{
		size_t w = 0;

		for (size_t i = 0; i < np; i++)
			if (pv[i])
				pv[w++] = pv[i];
		np = w;
	}
	for (size_t i = 0; i < np;) {
		size_t j = i + 1;

		while (j < np && pv[j]->host == pv[i]->host && pv[j]->port == pv[i]->port)
			j++;
		plan_http_group(s, pv, i, j);
		i = j;
	}
	/* 4. names reached directly that no entry lets resolve yet */
	for (size_t i = 0; i < n_need; i++) {
		char *key = xasprintf("h\n%s", need_name[i]);
		struct target *t = hmap_get(&s->targets, key);
		bool resolves = false;

		free(key);
		if (ag && sluice_policy_allows_name(ag, need_name[i]))
			continue;
		for (size_t u = 0; t && u < t->n_pu; u++)
			resolves |= t->pu[u].via != VIA_NAME;
		if (resolves || (t && t->named_by_url))
			continue;
		t = host_target(s, need_name[i]);
		puse_add(t, need_port[i], VIA_NAME, 0, NULL);
	}
	free(need_name);
	free(need_port);
	free(pv);
	free(kv);
}

/* --- entries to write ------------------------------------------------------------------ */

struct oentry {
	enum sluice_entry_kind kind;
	char *target;                   /* "api.example.com", "*.x", url text, cidr text */
	struct sluice_port_range *ports;
	size_t n_ports;
	unsigned methods;               /* url */
	uint8_t proto;                  /* cidr */
	char *why;
	char **notes;                   /* comment lines above the entry */
	size_t n_notes, cap_notes;
	int existing;                   /* --against: POLICY index, -1 new */
	bool widened;
	const struct target *t;
};

static void oentry_note(struct oentry *e, char *text)
{
	PUSH(e->notes, e->n_notes, e->cap_notes);
	e->notes[e->n_notes++] = text;
}

static void oentry_free(struct oentry *e)
{
	free(e->target);
	free(e->ports);
	free(e->why);
	for (size_t i = 0; i < e->n_notes; i++)
		free(e->notes[i]);
	free(e->notes);
}

/* A set of ports as at most PORTS_MAX ranges; *wider when gaps had to be
 * closed to stay within the limit. */
static void bits_to_ranges(const uint8_t *bits, struct sluice_port_range **out, size_t *n, bool *wider)
{
	struct sluice_port_range *r = NULL;
	size_t nr = 0, cap = 0;

	*wider = false;
	for (unsigned p = 1; p <= 65535; p++) {
		unsigned lo;

		if (!(bits[p / 8] & (1u << (p % 8))))
			continue;
		lo = p;
		while (p < 65535 && (bits[(p + 1) / 8] & (1u << ((p + 1) % 8))))
			p++;
		PUSH(r, nr, cap);
		r[nr].lo = (uint16_t)lo;
		r[nr].hi = (uint16_t)p;
		nr++;
	}
	while (nr > PORTS_MAX) {
		/* close the smallest gap (rare: a scan of hundreds of ports) */
		size_t best = 0;
		unsigned gap = UINT_MAX;

		for (size_t i = 0; i + 1 < nr; i++)
			if ((unsigned)(r[i + 1].lo - r[i].hi) < gap) {
				gap = (unsigned)(r[i + 1].lo - r[i].hi);
				best = i;
			}
		r[best].hi = r[best + 1].hi;
		memmove(&r[best + 1], &r[best + 2], (nr - best - 2) * sizeof(*r));
		nr--;
		*wider = true;
	}
	*out = r;
	*n = nr;
}

static void ranges_text(FILE *f, const struct sluice_port_range *r, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (r[i].lo == r[i].hi)
			fprintf(f, "%s%u", i ? ", " : "", r[i].lo);
		else
			fprintf(f, "%s%u-%u", i ? ", " : "", r[i].lo, r[i].hi);
	}
	fputc(']', f);
}

static void methods_text(FILE *f, unsigned m)
{
	bool first = true;

	fputc('[', f);
	for (size_t i = 0; i < N_METHODS; i++)
		if (m & (1u << i)) {
			fprintf(f, "%s%s", first ? "" : ", ", method_names[i]);
			first = false;
		}
	fputc(']', f);
}

static const char *via_text(enum via v)
{
	switch (v) {
	case VIA_TLS: return "TLS";
	case VIA_CONNECT: return "CONNECT";
	case VIA_HTTP: return "plain HTTP";
	case VIA_DIRECT: return "direct TCP";
	case VIA_NAME: return "";
	case VIA_CIDR_TCP: return "TCP";
	case VIA_CIDR_UDP: return "UDP";
	}
	return "?";
}

static int cmp_puse(const void *a, const void *b)
{
	const struct puse *x = a, *y = b;

	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return x->via < y->via ? -1 : x->via > y->via;
}

/* The `why` of a new or widened entry (one line of printable ASCII). */
static char *target_why(const struct target *t)
{
	char *buf = NULL, name[SLUICE_HOST_MAX + 1];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool name_only = t->kind == SLUICE_ENTRY_HOST;

	if (!f)
		oom();
	for (size_t i = 0; i < t->n_pu; i++)
		name_only &= t->pu[i].via == VIA_NAME;
	if (name_only) {
		printable(name, sizeof(name), t->host);
		fprintf(f, "lets %s resolve: it was reached directly (see the cidr entry for its address); "
			"the resolver answers only names that a host entry allows", name);
	} else {
		seen_text(f, &t->seen, t->denied && t->denied == t->seen.n);
		fputs(": ", f);
		if (t->kind == SLUICE_ENTRY_URL) {
			bool first = true;

			fprintf(f, "plain HTTP ");
			for (size_t i = 0; i < N_METHODS; i++)
				if (t->methods & (1u << i)) {
					fprintf(f, "%s%s", first ? "" : "/", method_names[i]);
					first = false;
				}
			fprintf(f, " on %llu path%s", t->n_paths, t->n_paths == 1 ? "" : "s");
		} else {
			for (size_t i = 0; i < t->n_pu; i++) {
				const struct puse *u = &t->pu[i];

				if (u->via == VIA_NAME)
					continue;
				fprintf(f, "%s%s to %u", i ? ", " : "", via_text(u->via), u->port);
				if (u->via == VIA_DIRECT)
					fprintf(f, " (%s, after resolving the name)", u->ip);
				if (u->n != t->seen.n)
					fprintf(f, " x%llu", u->n);
			}
			if (t->kind == SLUICE_ENTRY_CIDR && t->n_names) {
				printable(name, sizeof(name), t->names[0]);
				fprintf(f, ", after resolving %s", name);
			}
		}
	}
	fclose(f);
	if (len > 400) {
		buf[396] = '\0';
		strcat(buf, "...");
	}
	return buf;
}

/* Turn a target into an entry (new, or merged into the POLICY entry it widens). */
static void target_entry(struct suggest *s, const struct target *t, struct oentry *e)
{
	const struct sluice_policy *ag = s->o.against;
	const struct sluice_entry *x = t->existing >= 0 ? &ag->entries[t->existing] : NULL;
	uint8_t *bits = xcalloc(65536 / 8, 1);
	bool wider = false;

	memset(e, 0, sizeof(*e));
	e->kind = t->kind;
	e->existing = t->existing;
	e->widened = x != NULL;
	e->t = t;
	switch (t->kind) {
	case SLUICE_ENTRY_HOST:
		e->target = xstrdup(t->host);
		break;
	case SLUICE_ENTRY_URL:
		if (t->url_port == 80)
			e->target = xasprintf("http://%s%s", t->host, t->prefix);
		else
			e->target = xasprintf("http://%s:%u%s", t->host, t->url_port, t->prefix);
		e->methods = t->methods;
		if (x)
			for (size_t i = 0; i < x->n_methods; i++)
				if (method_index(x->methods[i]) >= 0)
					e->methods |= 1u << method_index(x->methods[i]);
		break;
	case SLUICE_ENTRY_CIDR:
		e->target = xasprintf("%s/%u", t->ip, t->family == AF_INET ? 32 : 128);
		e->proto = t->proto;
		break;
	default: /* suggestions are host, url or cidr entries */
		break;
	}
	if (t->kind != SLUICE_ENTRY_URL) {
		for (size_t i = 0; i < t->n_pu; i++)
			bits[t->pu[i].port / 8] |= (uint8_t)(1u << (t->pu[i].port % 8));
		for (size_t i = 0; x && i < x->n_ports; i++)
			for (unsigned p = x->ports[i].lo; p <= x->ports[i].hi; p++)
				bits[p / 8] |= (uint8_t)(1u << (p % 8));
		bits_to_ranges(bits, &e->ports, &e->n_ports, &wider);
		if (wider)
			oentry_note(e, xasprintf("review: more than %u port ranges were seen; gaps were closed to fit, so this allows more ports than were used",
						 PORTS_MAX));
	}
	free(bits);
	e->why = x ? xstrdup(x->why) : target_why(t);
	if (t->kind == SLUICE_ENTRY_CIDR && t->n_names) {
		char *buf = NULL, nm[SLUICE_HOST_MAX + 1];
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			oom();
		fprintf(f, "address of ");
		for (size_t i = 0; i < t->n_names; i++) {
			printable(nm, sizeof(nm), t->names[i]);
			fprintf(f, "%s%s", i ? ", " : "", nm);
		}
		fprintf(f, " in the resolver's answers; a cidr entry because the proxy passes only HTTP and TLS (the port is not a web port, or it is UDP)");
		fclose(f);
		oentry_note(e, buf);
	}
	if (t->kind == SLUICE_ENTRY_HOST && t->n_names) {
		char *buf = NULL, nm[SLUICE_HOST_MAX + 1];
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			oom();
		fprintf(f, "review: the address reached directly also answered for ");
		for (size_t i = 0; i < t->n_names; i++) {
			printable(nm, sizeof(nm), t->names[i]);
			fprintf(f, "%s%s", i ? ", " : "", nm);
		}
		fprintf(f, "; this name was the latest resolved before the connection");
		fclose(f);
		oentry_note(e, buf);
	}
	if (t->suspect)
		oentry_note(e, xasprintf("review: the resolver flagged queries under this name as DNS-tunnel-like (%s)",
					 t->suspect_reason ? t->suspect_reason : "suspect"));
}

/* Entries from an existing POLICY entry, unchanged. */
static void existing_entry(const struct sluice_entry *x, struct oentry *e)
{
	memset(e, 0, sizeof(*e));
	e->kind = x->kind;
	e->existing = (int)x->index;
	switch (x->kind) {
	case SLUICE_ENTRY_HOST:
		e->target = x->wildcard ? xasprintf("*.%s", x->host) : xstrdup(x->host);
		break;
	case SLUICE_ENTRY_URL:
		if (x->url_port == 80)
			e->target = xasprintf("%s://%s%s", x->url_scheme, x->url_host, x->url_path);
		else
			e->target = xasprintf("%s://%s:%u%s", x->url_scheme, x->url_host, x->url_port, x->url_path);
		for (size_t i = 0; i < x->n_methods; i++)
			if (method_index(x->methods[i]) >= 0)
				e->methods |= 1u << method_index(x->methods[i]);
		break;
	case SLUICE_ENTRY_CIDR: {
		char ip[INET6_ADDRSTRLEN];

		inet_ntop(x->family, x->addr, ip, sizeof(ip));
		e->target = xasprintf("%s/%u", ip, x->prefix_len);
		e->proto = x->protocol;
		break;
	}
	case SLUICE_ENTRY_UNIX:
		e->target = xasprintf("%s%s", x->unix_abstract ? "@" : "", x->unix_path);
		break;
	}
	if (x->kind != SLUICE_ENTRY_URL && x->kind != SLUICE_ENTRY_UNIX) {
		e->ports = xcalloc(x->n_ports, sizeof(*e->ports));
		memcpy(e->ports, x->ports, x->n_ports * sizeof(*e->ports));
		e->n_ports = x->n_ports;
	}
	e->why = xstrdup(x->why);
}

/* --- YAML ------------------------------------------------------------------------------- */

/* A double-quoted YAML scalar (escapes for '"', '\\' and control bytes). */
static void yq(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02X", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A comment, word-wrapped, never more than one physical line per line;
 * `item`: a list item ("# - " then "#   "). */
static void ycomment_x(FILE *f, const char *prefix, const char *indent, const char *text, bool item)
{
	char buf[2048] = "";
	const char *p = buf;
	bool first = true;

	printable(buf, sizeof(buf), text);
	while (*p) {
		size_t n = strlen(p);

		if (n > COMMENT_WIDTH) {
			size_t cut = COMMENT_WIDTH;

			while (cut > 20 && p[cut] != ' ')
				cut--;
			if (p[cut] != ' ')
				cut = COMMENT_WIDTH;
			n = cut;
		}
		fprintf(f, "%s%s# %s%.*s\n", prefix, indent, item ? (first ? "- " : "  ") : "", (int)n, p);
		first = false;
		p += n;
		while (*p == ' ')
			p++;
	}
}

static void ycomment(FILE *f, const char *prefix, const char *indent, const char *text)
{
	ycomment_x(f, prefix, indent, text, false);
}

static void yentry(FILE *f, const char *prefix, const char *indent, const struct oentry *e, bool notes)
{
	for (size_t i = 0; notes && i < e->n_notes; i++)
		ycomment(f, prefix, indent, e->notes[i]);
	fprintf(f, "%s%s- %s: ", prefix, indent, sluice_entry_kind_name(e->kind));
	yq(f, e->target);
	fputc('\n', f);
	if (e->kind == SLUICE_ENTRY_URL) {
		fprintf(f, "%s%s  methods: ", prefix, indent);
		methods_text(f, e->methods);
		fputc('\n', f);
	} else if (e->kind != SLUICE_ENTRY_UNIX) {
		fprintf(f, "%s%s  ports: ", prefix, indent);
		ranges_text(f, e->ports, e->n_ports);
		fputc('\n', f);
	}
	if (e->kind == SLUICE_ENTRY_CIDR)
		fprintf(f, "%s%s  protocol: %s\n", prefix, indent, e->proto == IPPROTO_UDP ? "udp" : "tcp");
	fprintf(f, "%s%s  why: ", prefix, indent);
	yq(f, e->why);
	fputc('\n', f);
}

/* A wildcard offered (never active) for exact host entries sharing a parent. */
struct offer {
	char *parent;
	size_t first, last;      /* entry indexes of the group */
	size_t n;
	struct oentry e;
};

static bool wildcard_loads(const char *parent)
{
	char *text = xasprintf("version: 1\nname: offer\nallow:\n  - host: \"*.%s\"\n    ports: [443]\n    why: offer\n",
			       parent);
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	int r = sluice_policy_load_buffer("offer", text, strlen(text), &p, &err);

	free(text);
	sluice_policy_free(p);
	return r == 0;
}

static void yoffer(FILE *f, const char *prefix, const struct offer *o, struct oentry *es)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char line[SLUICE_HOST_MAX + 64];

	if (!m)
		oom();
	fprintf(m, "Offered, NOT active: %zu names under %s were seen (", o->n, o->parent);
	for (size_t i = o->first, k = 0; i <= o->last; i++)
		if (es[i].kind == SLUICE_ENTRY_HOST && es[i].existing < 0) {
			const char *d = strchr(es[i].target, '.');

			if (d && strcmp(d + 1, o->parent) == 0)
				fprintf(m, "%s%s", k++ ? ", " : "", es[i].target);
		}
	fprintf(m, "). A wildcard allows every name under it, including names created later; the exact entries above allow only these. To use it, uncomment it and delete the exact entries it covers.");
	fclose(m);
	ycomment(f, prefix, "  ", buf);
	free(buf);
	snprintf(line, sizeof(line), "- host: \"*.%s\"", o->parent);
	fprintf(f, "%s  # %s\n%s  #   ports: ", prefix, line, prefix);
	ranges_text(f, o->e.ports, o->e.n_ports);
	fprintf(f, "\n%s  #   why: ", prefix);
	yq(f, o->e.why);
	fputc('\n', f);
}

/* --- rendering ------------------------------------------------------------------------------- */

struct render {
	struct oentry *es;
	size_t n;
	uint16_t *qtypes;          /* dns.qtypes to write; NULL: the default */
	size_t n_qtypes;
	uint16_t *extra_qtypes;    /* beyond the default / the POLICY's */
	size_t n_extra;
	struct offer *offers;
	size_t n_offers;
	unsigned n_review;
};

static void render_free(struct render *r)
{
	for (size_t i = 0; i < r->n; i++)
		oentry_free(&r->es[i]);
	free(r->es);
	free(r->qtypes);
	free(r->extra_qtypes);
	for (size_t i = 0; i < r->n_offers; i++) {
		free(r->offers[i].parent);
		oentry_free(&r->offers[i].e);
	}
	free(r->offers);
}

static int cmp_target(const void *a, const void *b)
{
	const struct target *x = *(const struct target *const *)a, *y = *(const struct target *const *)b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(x->sortkey ? x->sortkey : "", y->sortkey ? y->sortkey : "");
}

static const char *name_or(const struct suggest *s)
{
	return s->o.name ? s->o.name : "suggested";
}

/* The policy text.  `comments`: with header, notes and offers. */
static char *policy_text(struct suggest *s, struct render *r, bool comments)
{
	const struct sluice_policy *ag = s->o.against;
	char *buf = NULL, q[16];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		oom();
	if (comments && !ag) {
		char a[TS_LEN], b[TS_LEN], *hb = NULL;
		size_t hl = 0, n;
		FILE *h = open_memstream(&hb, &hl);
		void **runs, **pols;

		if (!h)
			oom();
		ts_short(a, sizeof(a), s->first_ts);
		ts_short(b, sizeof(b), s->last_ts);
		fprintf(h, "Suggested by `sluice policy suggest` from ");
		for (unsigned long i = 0; i < s->n_files_named && i < 3; i++)
			fprintf(h, "%s%s", i ? ", " : "", s->files[i]);
		if (s->n_files_named > 3)
			fprintf(h, " and %lu more files", s->n_files_named - 3);
		fprintf(h, " (%lu line%s", s->c.lines, s->c.lines == 1 ? "" : "s");
		runs = hmap_values(&s->runs, &n);
		if (n) {
			fprintf(h, "; %zu run%s: ", n, n == 1 ? "" : "s");
			for (size_t i = 0; i < n && i < 3; i++)
				fprintf(h, "%s%s", i ? ", " : "", (const char *)runs[i]);
			if (n > 3)
				fprintf(h, ", ...");
		}
		free(runs);
		if (s->first_ts[0])
			fprintf(h, "; %s to %s", a, b);
		fprintf(h, ").");
		fclose(h);
		ycomment(f, "", "", hb);
		free(hb);
		ycomment(f, "", "", "It allows what the job did while it was watched, not what it should do: review every entry before enforcing it. Each `why` says how often and when it was seen; \"review\" comments are lint findings (sluice policy check).");
		pols = hmap_values(&s->policies, &n);
		for (size_t i = 0; i < n; i++) {
			char *t = xasprintf("Logged under policy %s.", (const char *)pols[i]);

			ycomment(f, "", "", t);
			free(t);
		}
		free(pols);
		if (s->other_policy)
			ycomment(f, "", "", "Note: direct traffic that a cidr entry of those policies allowed is not in the logs (the kernel logs only denials): keep such entries, or use `suggest --against` to add to a policy.");
	}
	if (ag) {
		/* the merged policy: POLICY's header, its entries (some widened), the additions */
		fprintf(f, "version: 1\nname: ");
		yq(f, ag->name);
		fprintf(f, "\nmode: %s\n", ag->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
		fprintf(f, "dns:\n  on_deny: %s\n", ag->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain");
	} else {
		fprintf(f, "version: 1\nname: %s\nmode: enforce\n", name_or(s));
	}
	if (r->qtypes) {
		if (!ag)
			fprintf(f, "dns:\n");
		if (comments && !ag) {
			char *t = NULL;
			size_t tl = 0;
			FILE *m = open_memstream(&t, &tl);

			if (!m)
				oom();
			fprintf(m, "Record types beyond A and AAAA were asked for names below:");
			for (size_t i = 0; i < r->n_extra; i++)
				fprintf(m, " %s", qtype_text(r->extra_qtypes[i], q, sizeof(q)));
			fprintf(m, ". TXT and other free-form records can carry data: drop what the job does not need.");
			fclose(m);
			ycomment(f, "", "  ", t);
			free(t);
		}
		fprintf(f, "  qtypes: [");
		for (size_t i = 0; i < r->n_qtypes; i++)
			fprintf(f, "%s%s", i ? ", " : "", qtype_text(r->qtypes[i], q, sizeof(q)));
		fprintf(f, "]\n");
	}
	if (!r->n) {
		fprintf(f, "allow: []\n");
	} else {
		fprintf(f, "allow:\n");
		for (size_t i = 0; i < r->n; i++) {
			yentry(f, "", "  ", &r->es[i], comments);
			for (size_t k = 0; comments && k < r->n_offers; k++)
				if (r->offers[k].last == i)
					yoffer(f, "", &r->offers[k], r->es);
		}
	}
	fclose(f);
	return buf;
}

static bool load_text(const char *name, const char *text, struct sluice_policy **p, FILE *diag)
{
	struct sluice_policy_error err;
	char msg[700];

	if (sluice_policy_load_buffer(name, text, strlen(text), p, &err) == 0)
		return true;
	fprintf(diag, "sluice policy suggest: internal error: the policy written does not load: %s\n",
		sluice_policy_error_str(&err, msg, sizeof(msg)));
	return false;
}

/* Every observation the plan took up must be allowed by `p`. */
static unsigned long long check_allowed(struct suggest *s, const struct sluice_policy *p, FILE *diag)
{
	size_t n;
	void **v;
	unsigned long long bad = 0;

	v = hmap_values(&s->pobs, &n);
	for (size_t i = 0; i < n; i++) {
		const struct pobs *o = v[i];

		if (!pobs_allowed(s, p, o)) {
			fprintf(diag, "sluice policy suggest: internal error: %s %s:%u%s is not allowed by the result\n",
				via_text(o->via), o->host, o->port, o->path ? o->path : "");
			bad++;
		}
	}
	free(v);
	v = hmap_values(&s->kobs, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kobs *k = v[i];
		const char *others[NAMES_KEPT], *name;
		size_t n_others;

		name = correlate(s, k, others, &n_others);

		if (cidr_allows(p, k->family, k->addr, k->proto, k->port))
			continue;
		if (name && k->proto == IPPROTO_TCP && name_allowed_on(s, p, name, k->port))
			continue;
		fprintf(diag, "sluice policy suggest: internal error: %s %s port %u is not allowed by the result\n",
			k->proto == IPPROTO_TCP ? "tcp" : "udp", k->ip, k->port);
		bad++;
	}
	free(v);
	/* views are keyed by the policy's address: `p` is freed after this */
	hmap_free(&s->views, free_view);
	return bad;
}

/* Build the entry list: new targets (plain), or POLICY's entries with the
 * widened ones merged and the new targets appended (--against). */
static bool build(struct suggest *s, struct render *r)
{
	const struct sluice_policy *ag = s->o.against;
	struct target **tv;
	size_t nt, k = 0, n_widen = 0;

	tv = (struct target **)hmap_values(&s->targets, &nt);
	qsort(tv, nt, sizeof(*tv), cmp_target);
	/* host targets made only to mark a name used by plain HTTP carry nothing */
	for (size_t i = 0; i < nt; i++)
		if (!(tv[i]->kind == SLUICE_ENTRY_HOST && tv[i]->n_pu == 0))
			tv[k++] = tv[i];
	nt = k;
	for (size_t i = 0; i < nt; i++) {
		n_widen += tv[i]->existing >= 0;
		if (tv[i]->n_pu)
			qsort(tv[i]->pu, tv[i]->n_pu, sizeof(*tv[i]->pu), cmp_puse);
	}
	r->n = (ag ? ag->n_entries : 0) + nt - n_widen;
	if (r->n > ENTRIES_MAX) {
		fprintf(s->diag, "sluice policy suggest: %zu entries needed, more than a policy may hold (%u): "
			"split the logs by job\n", r->n, (unsigned)ENTRIES_MAX);
		free(tv);
		r->n = 0; /* render_free() walks r->es[0..n): es is not allocated */
		return false;
	}
	r->es = xcalloc(r->n, sizeof(*r->es));
	k = 0;
	if (ag) {
		const struct target **widen = xcalloc(ag->n_entries, sizeof(*widen));

		for (size_t j = 0; j < nt; j++)
			if (tv[j]->existing >= 0 && (size_t)tv[j]->existing < ag->n_entries)
				widen[tv[j]->existing] = tv[j];
		for (size_t i = 0; i < ag->n_entries; i++) {
			if (widen[i])
				target_entry(s, widen[i], &r->es[k++]);
			else
				existing_entry(&ag->entries[i], &r->es[k++]);
		}
		free(widen);
	}
	for (size_t i = 0; i < nt; i++)
		if (tv[i]->existing < 0)
			target_entry(s, tv[i], &r->es[k++]);
	free(tv);
	return true;
}

/* dns.qtypes: the types asked for names the result allows. */
static void plan_qtypes(struct suggest *s, struct render *r, const struct sluice_policy *draft)
{
	const struct sluice_policy *ag = s->o.against;
	uint8_t *want = xcalloc(65536 / 8, 1);
	size_t n;
	void **v = hmap_values(&s->dnames, &n);
	bool extra = false;

	if (ag)
		for (size_t i = 0; i < ag->n_dns_qtypes; i++)
			want[ag->dns_qtypes[i] / 8] |= (uint8_t)(1u << (ag->dns_qtypes[i] % 8));
	else
		want[1 / 8] |= 1u << 1, want[28 / 8] |= 1u << (28 % 8);
	for (size_t i = 0; i < n; i++) {
		const struct dname *d = v[i];

		if (!sluice_policy_allows_name(draft, d->name))
			continue;
		for (size_t j = 0; j < d->n_qtypes; j++) {
			uint16_t t = d->qtypes[j];

			if (!(want[t / 8] & (1u << (t % 8)))) {
				want[t / 8] |= (uint8_t)(1u << (t % 8));
				r->extra_qtypes = xrealloc(r->extra_qtypes, r->n_extra + 1, sizeof(uint16_t));
				r->extra_qtypes[r->n_extra++] = t;
				extra = true;
			}
		}
	}
	free(v);
	/* sorted, for stable output */
	for (size_t i = 1; i < r->n_extra; i++)
		for (size_t j = i; j > 0 && r->extra_qtypes[j - 1] > r->extra_qtypes[j]; j--) {
			uint16_t x = r->extra_qtypes[j];

			r->extra_qtypes[j] = r->extra_qtypes[j - 1];
			r->extra_qtypes[j - 1] = x;
		}
	/* written out when it differs from the default: the policy's own (or
	 * A, AAAA) first, then the extras */
	if (extra || (ag && (ag->n_dns_qtypes != 2 || ag->dns_qtypes[0] != 1 || ag->dns_qtypes[1] != 28))) {
		size_t n_base = ag ? ag->n_dns_qtypes : 2;

		r->qtypes = xcalloc(n_base + r->n_extra, sizeof(uint16_t));
		for (size_t i = 0; i < n_base; i++)
			r->qtypes[r->n_qtypes++] = ag ? ag->dns_qtypes[i] : (i ? 28 : 1);
		for (size_t i = 0; i < r->n_extra; i++)
			r->qtypes[r->n_qtypes++] = r->extra_qtypes[i];
	}
	free(want);
}

/* Wildcards to offer (as comments) for new exact host entries. */
static void plan_offers(struct render *r)
{
	for (size_t i = 0; i < r->n;) {
		const char *d;
		size_t j, members = 0, last = i;
		char *parent;
		uint8_t *bits;
		struct seen seen = { 0 };
		bool wider;

		if (r->es[i].kind != SLUICE_ENTRY_HOST || r->es[i].existing >= 0 || !(d = strchr(r->es[i].target, '.'))) {
			i++;
			continue;
		}
		parent = xstrdup(d + 1);
		bits = xcalloc(65536 / 8, 1);
		for (j = i; j < r->n; j++) {
			const char *dj;

			if (r->es[j].kind != SLUICE_ENTRY_HOST || r->es[j].existing >= 0)
				break;
			dj = strchr(r->es[j].target, '.');
			if (!dj || strcmp(dj + 1, parent) != 0) {
				/* deeper names sort between siblings: skip them */
				size_t pl = strlen(parent), tl = strlen(r->es[j].target);

				if (tl > pl + 1 && strcmp(r->es[j].target + tl - pl, parent) == 0 &&
				    r->es[j].target[tl - pl - 1] == '.')
					continue;
				break;
			}
			members++;
			last = j;
			for (size_t p = 0; p < r->es[j].n_ports; p++)
				for (unsigned q = r->es[j].ports[p].lo; q <= r->es[j].ports[p].hi; q++)
					bits[q / 8] |= (uint8_t)(1u << (q % 8));
			if (r->es[j].t)
				seen_merge(&seen, &r->es[j].t->seen);
		}
		if (members >= WILDCARD_MIN && wildcard_loads(parent)) {
			struct offer *o;
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);

			if (!f)
				oom();
			r->offers = xrealloc(r->offers, r->n_offers + 1, sizeof(*r->offers));
			o = &r->offers[r->n_offers++];
			memset(o, 0, sizeof(*o));
			o->parent = parent;
			o->first = i;
			o->last = last;
			o->n = members;
			o->e.kind = SLUICE_ENTRY_HOST;
			bits_to_ranges(bits, &o->e.ports, &o->e.n_ports, &wider);
			seen_text(f, &seen, false);
			fprintf(f, ": %zu names under %s", members, parent);
			fclose(f);
			o->e.why = buf;
			parent = NULL;
		}
		free(parent);
		free(bits);
		i = j > i ? j : i + 1;
	}
}

/* Lint findings (and the relay mark) as comments on their entries. */
static bool annotate(struct suggest *s, struct render *r, const struct sluice_policy *p)
{
	struct sluice_lint *l = NULL;
	int n = sluice_policy_lint(p, s->o.relays, &l);

	if (n < 0) {
		fprintf(s->diag, "sluice policy suggest: cannot read the relay list %s: %s\n",
			s->o.relays ? s->o.relays : "(default: $SLUICE_RELAYS or policies/relays.txt beside the binary)",
			strerror(errno));
		return false;
	}
	for (int i = 0; i < n; i++) {
		struct oentry *e;

		if (l[i].entry >= r->n)
			continue;
		e = &r->es[l[i].entry];
		if (s->o.against && e->existing >= 0 && !e->widened)
			continue;   /* the policy's own findings: `sluice policy check` shows them */
		if (l[i].code == SLUICE_LINT_RELAY)
			oentry_note(e, xasprintf("REVIEW relay-capable host: %s", l[i].message));
		else
			oentry_note(e, xasprintf("review [%s]: %s", l[i].code_name, l[i].message));
		r->n_review++;
	}
	free(l);
	return true;
}

/* Notes, at the end of the output: what was seen but gave no entry. */
static void notes_text(struct suggest *s, FILE *f, const char *prefix)
{
	size_t n, nd;
	void **v = hmap_values(&s->notes, &n), **dv;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	bool any = false;

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && ((struct note *)v[j - 1])->order > ((struct note *)v[j])->order; j--) {
			void *x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	/* names the resolver answered (or refused) that gave no entry */
	dv = hmap_values(&s->dnames, &nd);
	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;

		m = open_memstream(&buf, &len);
		if (!m)
			oom();
		for (size_t i = 0; i < nd; i++) {
			const struct dname *d = dv[i];
			bool refused = d->denied && !d->answered;

			if (d->used || refused != (pass == 1))
				continue;
			if (s->o.against && sluice_policy_allows_name(s->o.against, d->name))
				continue;
			if (k < 12)
				fprintf(m, "%s%s (%llu)", k ? ", " : "", d->name, d->seen.n);
			k++;
		}
		if (k > 12)
			fprintf(m, " and %zu more", k - 12);
		fclose(m);
		if (k) {
			char *t;

			if (!any)
				fprintf(f, "%s\n%s# Seen, but not made into entries:\n", prefix, prefix);
			any = true;
			if (pass == 0)
				t = xasprintf("%zu name%s resolved, but no traffic to %s addresses is in the logs (a host entry lets a name resolve; add one with the ports the job uses, if it needs them): %s",
					      k, k == 1 ? "" : "s", k == 1 ? "its" : "their", buf);
			else
				t = xasprintf("%zu name%s the resolver refused, so the job never learned an address and the port is unknown (add host entries with the right ports, or learn them in audit mode): %s",
					      k, k == 1 ? "" : "s", buf);
			ycomment_x(f, prefix, "", t, true);
			free(t);
		}
		free(buf);
		buf = NULL;
	}
	free(dv);
	if (s->portless.n) {
		size_t k = 0;

		m = open_memstream(&buf, &len);
		if (!m)
			oom();
		for (size_t i = 0; i < s->portless.nb; i++)
			for (struct hnode *x = s->portless.b[i]; x; x = x->next)
				if (k++ < 12)
					fprintf(m, "%s%s (%lu)", k > 1 ? ", " : "", x->key, (unsigned long)(uintptr_t)x->val);
		fclose(m);
		if (!any)
			fprintf(f, "%s\n%s# Seen, but not made into entries:\n", prefix, prefix);
		any = true;
		{
			char *t = xasprintf("%zu name%s reached through the proxy without a port in its log (reported as skipped lines; add host entries with the right ports by hand): %s%s",
					    k, k == 1 ? "" : "s", buf, k > 12 ? " and more" : "");

			ycomment_x(f, prefix, "", t, true);
			free(t);
		}
		free(buf);
		buf = NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct note *x = v[i];
		char *t;

		if (!any)
			fprintf(f, "%s\n%s# Seen, but not made into entries:\n", prefix, prefix);
		any = true;
		t = xasprintf("%llu line%s: %s (first: %s)", x->n, x->n == 1 ? "" : "s", x->text, x->where);
		ycomment_x(f, prefix, "", t, true);
		free(t);
	}
	free(v);
}

/* --- the --against diff, quoting the policy's own lines ---------------------------------- */

struct src {
	char **line;   /* line[i] is line i + 1 of the file, without its newline */
	size_t n;
};

static void src_split(const char *text, struct src *sr)
{
	const char *p = text;

	memset(sr, 0, sizeof(*sr));
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		sr->line = xrealloc(sr->line, sr->n + 1, sizeof(*sr->line));
		sr->line[sr->n++] = xasprintf("%.*s", (int)(n && p[n - 1] == '\r' ? n - 1 : n), p);
		p += n + (nl ? 1 : 0);
	}
}

static void src_free(struct src *sr)
{
	for (size_t i = 0; i < sr->n; i++)
		free(sr->line[i]);
	free(sr->line);
}

static size_t indent_of(const char *l)
{
	size_t i = 0;

	while (l[i] == ' ')
		i++;
	return i;
}

static bool blank_or_comment(const char *l)
{
	l += indent_of(l);
	return !*l || *l == '#';
}

/* A top-level key line ("allow:", "dns:", ...). */
static bool top_key(const char *l, const char *key)
{
	size_t n = strlen(key);

	return strncmp(l, key, n) == 0 && l[n] == ':';
}

/* The last line (1-based) of the block that starts at top-level line `at`:
 * up to the next top-level key, without trailing blank and comment lines. */
static size_t block_end(const struct src *sr, size_t at)
{
	size_t last = at;

	for (size_t i = at + 1; i <= sr->n; i++) {
		const char *l = sr->line[i - 1];

		if (blank_or_comment(l))
			continue;
		if (indent_of(l) == 0 && l[0] != '-')
			break;
		last = i;
	}
	return last;
}

/* Where `key` is in the lines [from, to]: its line (0 if absent), the
 * text before it (indentation, "- ") in *lead, and the last line of its
 * value in *last (block sequences span lines). */
static size_t find_key(const struct src *sr, size_t from, size_t to, const char *key, size_t *lead,
		       size_t *last)
{
	size_t kn = strlen(key);

	for (size_t i = from; i <= to && i <= sr->n; i++) {
		/* from >= 1 (a policy line number), so i - 1 < sr->n */
		const char *l = sr->line[i - 1], *k = l + indent_of(l), *v; /* NOLINT(clang-analyzer-core.NullDereference) */

		if (k[0] == '-' && k[1] == ' ')
			k += 2 + indent_of(k + 2);
		if (strncmp(k, key, kn) != 0 || k[kn] != ':')
			continue;
		*lead = (size_t)(k - l);
		*last = i;
		v = k + kn + 1;
		v += indent_of(v);
		if (!*v || *v == '#') {
			/* block value: the lines after it that are deeper, or "- " at its level */
			for (size_t j = i + 1; j <= to && j <= sr->n; j++) {
				const char *m = sr->line[j - 1];
				size_t in = indent_of(m);

				if (blank_or_comment(m))
					continue;
				if (in > *lead || (in == *lead && m[in] == '-' && m[in + 1] == ' '))
					*last = j;
				else
					break;
			}
		}
		return i;
	}
	return 0;
}

/* The lines of entry `i` of `p` in `sr`. */
static void entry_lines(const struct src *sr, const struct sluice_policy *p, size_t i, size_t *from, size_t *to)
{
	size_t allow = 0;

	*from = p->entries[i].line;
	if (i + 1 < p->n_entries) {
		*to = p->entries[i + 1].line - 1;
		return;
	}
	for (size_t k = 1; k <= sr->n; k++)
		if (top_key(sr->line[k - 1], "allow"))
			allow = k;
	*to = allow ? block_end(sr, allow) : sr->n;
}

static void lines_out(FILE *f, char mark, const struct src *sr, size_t from, size_t to)
{
	for (size_t i = from; i <= to && i <= sr->n; i++) /* from >= 1: a line number */
		fprintf(f, "%c %s\n", mark, sr->line[i - 1]); /* NOLINT(clang-analyzer-core.NullDereference) */
}

static void qtypes_list(FILE *f, const uint16_t *t, size_t n)
{
	char q[16];

	fputc('[', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", qtype_text(t[i], q, sizeof(q)));
	fputc(']', f);
}

static void diff_text(struct suggest *s, struct render *r, const struct sluice_policy *merged, FILE *f)
{
	const struct sluice_policy *ag = s->o.against, *sp = ag;
	struct sluice_policy *synth = NULL;
	struct src sr;
	char path[256], q[16], *own = NULL;
	size_t n_new = 0, n_wide = 0, from, to, at, lead, last;
	bool qt = r->qtypes && r->n_extra;

	printable(path, sizeof(path), s->o.against_path ? s->o.against_path : ag->path);
	/* the lines the diff quotes: the file's own, or (when the text given
	 * does not match the policy) the policy written out again */
	if (s->o.against_text) {
		struct sluice_policy *chk = NULL;
		struct sluice_policy_error err;

		if (sluice_policy_load_buffer(path, s->o.against_text, strlen(s->o.against_text), &chk, &err) == 0 &&
		    strcmp(chk->digest, ag->digest) == 0)
			own = xstrdup(s->o.against_text);
		sluice_policy_free(chk);
	}
	if (!own) {
		struct render orig = { 0 };
		struct sluice_policy_error err;

		orig.n = ag->n_entries;
		orig.es = xcalloc(orig.n, sizeof(*orig.es));
		for (size_t i = 0; i < ag->n_entries; i++)
			existing_entry(&ag->entries[i], &orig.es[i]);
		if (ag->n_dns_qtypes != 2 || ag->dns_qtypes[0] != 1 || ag->dns_qtypes[1] != 28) {
			orig.qtypes = xcalloc(ag->n_dns_qtypes, sizeof(uint16_t));
			memcpy(orig.qtypes, ag->dns_qtypes, ag->n_dns_qtypes * sizeof(uint16_t));
			orig.n_qtypes = ag->n_dns_qtypes;
		}
		own = policy_text(s, &orig, false);
		render_free(&orig);
		if (sluice_policy_load_buffer(path, own, strlen(own), &synth, &err) == 0)
			sp = synth;
		fprintf(f, "# (%s as written by sluice: its own text was not given)\n", path);
	}
	src_split(own, &sr);
	free(own);

	for (size_t i = 0; i < r->n; i++) {
		n_new += r->es[i].existing < 0;
		n_wide += r->es[i].widened;
	}
	fprintf(f, "# sluice policy suggest --against %s\n", path);
	fprintf(f, "--- %s\tsha256 %s\n", path, ag->digest);
	fprintf(f, "+++ %s with the additions\tsha256 %s\n", path, merged->digest);
	if (!n_new && !n_wide && !qt)
		fprintf(f, "# nothing to add: %s allows every attempt in the logs that a policy can allow\n", path);

	/* widened entries: their ports or methods line, replaced */
	for (size_t i = 0; i < r->n; i++) {
		const struct oentry *e = &r->es[i];
		const char *key = e->kind == SLUICE_ENTRY_URL ? "methods" : "ports";
		char *pad;

		if (!e->widened)
			continue;
		entry_lines(&sr, sp, (size_t)e->existing, &from, &to);
		at = find_key(&sr, from, to, key, &lead, &last);
		fprintf(f, "@@ %s (line %u): add %s @@\n", ag->entries[e->existing].name, ag->entries[e->existing].line, key);
		if (at) {
			lines_out(f, '-', &sr, at, last);
			/* at != 0: find_key found line `at` of sr */
			pad = xasprintf("%.*s", (int)lead, sr.line[at - 1]); /* NOLINT(clang-analyzer-core.NullDereference) */
		} else if (from >= 1 && from <= sr.n) {
			/* not written (url methods default to GET, HEAD): a new line after the first */
			const char *l = sr.line[from - 1], *k = l + indent_of(l);

			lines_out(f, ' ', &sr, from, from);
			if (k[0] == '-' && k[1] == ' ')
				k += 2 + indent_of(k + 2);
			pad = xasprintf("%*s", (int)(k - l), "");
		} else {
			pad = xstrdup("    ");
		}
		fprintf(f, "+ %s%s: ", pad, key);
		if (e->kind == SLUICE_ENTRY_URL)
			methods_text(f, e->methods);
		else
			ranges_text(f, e->ports, e->n_ports);
		fputc('\n', f);
		/* comments at the key's column ("- " would start a new item) */
		for (char *c = pad; *c; c++)
			*c = ' ';
		for (size_t k = 0; k < e->n_notes; k++)
			ycomment(f, "+ ", pad, e->notes[k]);
		if (e->t) {
			char *why = target_why(e->t);

			ycomment(f, "+ ", pad, why);
			free(why);
		}
		free(pad);
	}
	/* dns.qtypes */
	if (qt) {
		size_t dns = 0, name = 0;

		for (size_t k = 1; k <= sr.n; k++) {
			if (top_key(sr.line[k - 1], "dns"))
				dns = k;
			if (top_key(sr.line[k - 1], "name"))
				name = k;
		}
		fprintf(f, "@@ dns.qtypes: add");
		for (size_t i = 0; i < r->n_extra; i++)
			fprintf(f, " %s", qtype_text(r->extra_qtypes[i], q, sizeof(q)));
		fprintf(f, " @@\n");
		if (dns && (at = find_key(&sr, dns + 1, block_end(&sr, dns), "qtypes", &lead, &last))) {
			lines_out(f, '-', &sr, at, last);
			fprintf(f, "+ %.*sqtypes: ", (int)lead, sr.line[at - 1]);
		} else if (dns) {
			size_t in = 2;

			for (size_t k = dns + 1; k <= block_end(&sr, dns); k++)
				if (!blank_or_comment(sr.line[k - 1])) {
					in = indent_of(sr.line[k - 1]);
					break;
				}
			lines_out(f, ' ', &sr, dns, dns);
			fprintf(f, "+ %*sqtypes: ", (int)in, "");
		} else {
			lines_out(f, ' ', &sr, name ? name : 1, name ? name : 1);
			fprintf(f, "+ dns:\n+   qtypes: ");
		}
		qtypes_list(f, r->qtypes, r->n_qtypes);
		fputc('\n', f);
	}
	/* new entries: after the last line of the allow list */
	if (n_new) {
		size_t allow = 0, in = 2, end;
		const char *v = NULL;

		for (size_t k = 1; k <= sr.n; k++)
			if (top_key(sr.line[k - 1], "allow"))
				allow = k;
		if (sp->n_entries && sp->entries[0].line >= 1 && sp->entries[0].line <= sr.n)
			in = indent_of(sr.line[sp->entries[0].line - 1]);
		fprintf(f, "@@ allow: append %zu new entr%s @@\n", n_new, n_new == 1 ? "y" : "ies");
		if (allow) {
			v = sr.line[allow - 1] + 6;
			v += indent_of(v);
		}
		if (allow && v && *v && *v != '#') {
			/* "allow: []" or "allow: null" */
			lines_out(f, '-', &sr, allow, allow);
			fprintf(f, "+ allow:\n");
		} else if (allow) {
			end = block_end(&sr, allow);
			lines_out(f, ' ', &sr, end, end);
		} else {
			end = sr.n;
			while (end > 1 && blank_or_comment(sr.line[end - 1]))
				end--;
			lines_out(f, ' ', &sr, end, end);
			fprintf(f, "+ allow:\n");
		}
		{
			char *pad = xasprintf("%*s", (int)in, "");

			for (size_t i = 0; i < r->n; i++) {
				if (r->es[i].existing >= 0)
					continue;
				yentry(f, "+ ", pad, &r->es[i], true);
				for (size_t k = 0; k < r->n_offers; k++)
					if (r->offers[k].last == i)
						yoffer(f, "+ ", &r->offers[k], r->es);
			}
			free(pad);
		}
	}
	notes_text(s, f, "");
	fprintf(f, "# summary: %llu attempt%s in the logs, %llu already allowed by %s; the additions (%zu new entr%s, %zu widened%s) allow the other %llu\n",
		s->n_attempts, s->n_attempts == 1 ? "" : "s", s->n_allowed_already, path, n_new,
		n_new == 1 ? "y" : "ies", n_wide, qt ? ", dns.qtypes" : "",
		s->n_attempts - s->n_allowed_already);
	src_free(&sr);
	sluice_policy_free(synth);
}

char *suggest_render(struct suggest *s)
{
	struct render r = { 0 };
	struct sluice_policy *draft = NULL, *final = NULL;
	char *text = NULL, *out = NULL;
	bool ok = false;

	if (s->rendered) {
		fprintf(s->diag, "sluice policy suggest: render called twice\n");
		return NULL;
	}
	s->rendered = true;
	plan(s);
	if (!build(s, &r))
		goto done;
	/* 1. entries only: which names does it allow (for dns.qtypes)? */
	text = policy_text(s, &r, false);
	if (!load_text("suggested policy", text, &draft, s->diag))
		goto done;
	free(text);
	plan_qtypes(s, &r, draft);
	/* 2. with dns.qtypes: lint it, check that it allows everything taken up */
	text = policy_text(s, &r, false);
	sluice_policy_free(draft);
	draft = NULL;
	if (!load_text("suggested policy", text, &draft, s->diag))
		goto done;
	if (check_allowed(s, draft, s->diag))
		goto done;
	if (!annotate(s, &r, draft))
		goto done;
	plan_offers(&r);
	/* 3. the text with comments must mean exactly the same */
	free(text);
	text = policy_text(s, &r, true);
	if (!load_text("suggested policy", text, &final, s->diag))
		goto done;
	if (strcmp(final->digest, draft->digest) != 0) {
		fprintf(s->diag, "sluice policy suggest: internal error: comments changed the policy's digest\n");
		goto done;
	}
	if (s->o.against) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			oom();
		diff_text(s, &r, final, f);
		fclose(f);
		out = buf;
	} else {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			oom();
		fputs(text, f);
		notes_text(s, f, "");
		fclose(f);
		out = buf;
	}
	ok = true;
done:
	free(text);
	sluice_policy_free(draft);
	sluice_policy_free(final);
	render_free(&r);
	if (!ok) {
		free(out);
		return NULL;
	}
	return out;
}

/* --- state, summary ---------------------------------------------------------------------- */

static bool valid_name(const char *n)
{
	size_t len = strlen(n);

	if (len < 1 || len > 64)
		return false;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9') ||
		      *n == '.' || *n == '_' || *n == '-'))
			return false;
	return true;
}

struct suggest *suggest_new(const struct suggest_opts *o)
{
	struct suggest *s;
	struct sluice_policy *def;
	FILE *diag = o && o->diag ? o->diag : stderr;

	if (o && o->name && !valid_name(o->name)) {
		fprintf(diag, "sluice policy suggest: --name must be 1-64 characters of A-Z a-z 0-9 . _ -\n");
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	if (o)
		s->o = *o;
	s->diag = diag;
	s->tok = json_tokener_new();
	if (!s->tok)
		oom();
	json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	def = sluice_policy_default();
	if (!def)
		oom();
	memcpy(s->default_digest, def->digest, sizeof(s->default_digest));
	sluice_policy_free(def);
	qnames_init(&s->qnames);
	return s;
}

static void free_pobs(void *v)
{
	struct pobs *p = v;

	free(p->path);
	free(p);
}

static void free_dname(void *v)
{
	struct dname *d = v;

	free(d->qtypes);
	free(d);
}

static void free_daddr(void *v)
{
	struct daddr *d = v;

	free(d->v);
	free(d);
}

static void free_target(void *v)
{
	struct target *t = v;

	free(t->prefix);
	free(t->pu);
	free(t->sortkey);
	free(t);
}

static void free_note(void *v)
{
	struct note *n = v;

	free(n->text);
	free(n);
}

void suggest_free(struct suggest *s)
{
	if (!s)
		return;
	json_tokener_free(s->tok);
	hmap_free(&s->pobs, free_pobs);
	hmap_free(&s->kobs, free);
	hmap_free(&s->dnames, free_dname);
	hmap_free(&s->daddrs, free_daddr);
	hmap_free(&s->targets, free_target);
	hmap_free(&s->ag_hosts, NULL);
	hmap_free(&s->views, free_view);
	hmap_free(&s->notes, free_note);
	hmap_free(&s->portless, NULL);
	hmap_free(&s->policies, free);
	hmap_free(&s->runs, NULL);
	hmap_free(&s->strings, NULL);
	free(s);
}

const struct suggest_counts *suggest_counts(const struct suggest *s)
{
	return &s->c;
}

int suggest_exit_status(const struct suggest *s)
{
	return s->c.skipped || s->c.events_lost ? EXIT_FINDINGS : EXIT_CLEAN;
}

void suggest_summary(const struct suggest *s, FILE *f)
{
	fprintf(f, "sluice policy suggest: %lu file%s, %lu line%s: %lu used, %lu noted (nothing a policy could allow), "
		"%lu blank, %lu skipped\n",
		s->c.files, s->c.files == 1 ? "" : "s", s->c.lines, s->c.lines == 1 ? "" : "s", s->c.used,
		s->c.noted, s->c.blank, s->c.skipped);
	if (s->c.skipped)
		fprintf(f, "sluice policy suggest: %lu line%s skipped (reported above): the suggestion may miss what they recorded\n",
			s->c.skipped, s->c.skipped == 1 ? " was" : "s were");
	if (s->c.events_lost)
		fprintf(f, "sluice policy suggest: %llu kernel event%s lost (ring buffer full): the logs are incomplete, and so may be the suggestion\n",
			s->c.events_lost, s->c.events_lost == 1 ? " was" : "s were");
}

/* --- command line ------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice policy suggest [--name NAME] [--against POLICY] [--relays FILE] [-o FILE]\n"
		"                             EVENTS.jsonl...\n"
		"\n"
		"Read kernel events, proxy access-log and resolver query-log lines (the\n"
		"--events file of `sluice run`, one or many runs; \"-\" is stdin) and write a\n"
		"version-1 policy that would have allowed exactly what was seen: host entries\n"
		"with the ports used, url entries where the traffic was plain HTTP, cidr\n"
		"entries (/32, /128, exact port and protocol) for direct traffic, each with a\n"
		"`why` saying how often and when.  Wildcards are only offered, as comments;\n"
		"lint findings (relay-capable hosts, ...) are marked for review.\n"
		"\n"
		"  --name NAME      the policy's name (default: suggested)\n"
		"  --against POLICY print only what POLICY lacks: the smallest additions that\n"
		"                   would have allowed the denials, as a diff\n"
		"  --relays FILE    relay list for the lints (default: as `sluice policy check`)\n"
		"  -o FILE          write the policy (or diff) to FILE instead of stdout\n"
		"\n"
		"Lines that cannot be read (malformed, truncated, not sluice's) are reported\n"
		"as file:line: reason on stderr and counted; none is skipped silently.\n"
		"Exit status: 0 every line read, 1 some line skipped or kernel events lost,\n"
		"2 usage or environment error.\n"
		"\n"
		"examples:\n"
		"  sluice run --mode audit --events audit.jsonl -- ./build.sh\n"
		"  sluice policy suggest --name build audit.jsonl -o build.yaml\n"
		"  sluice policy check build.yaml\n"
		"  sluice policy suggest --against build.yaml enforce.jsonl\n");
}

/* A policy file's text, for diffs that quote it (NULL: not readable; the
 * diff then quotes the policy as sluice writes it). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = xcalloc(POLICY_TEXT_MAX + 2, 1);
	n = fread(buf, 1, POLICY_TEXT_MAX + 1, f);
	fclose(f);
	if (n > POLICY_TEXT_MAX || memchr(buf, '\0', n)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_out(const char *path, const char *text)
{
	FILE *f;
	int ok;

	if (!path) {
		fputs(text, stdout);
		return fflush(stdout) == 0 ? 0 : -1;
	}
	f = fopen(path, "we");
	if (!f)
		return -1;
	ok = fputs(text, f) >= 0;
	if (fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

int cmd_suggest(int argc, char **argv)
{
	struct suggest_opts o = { .diag = stderr };
	struct sluice_policy *against = NULL;
	const char *against_path = NULL, *out_path = NULL;
	const char **files;
	int n = 0, rc = EXIT_ERROR;
	bool opts = true;
	struct suggest *s = NULL;
	char *text = NULL, *against_text = NULL;

	files = xcalloc((size_t)argc, sizeof(*files));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;

		if (opts && strcmp(a, "--") == 0) {
			opts = false;
			continue;
		}
		if (opts && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			usage(stdout);
			free(files);
			return EXIT_CLEAN;
		}
		if (opts && strcmp(a, "--name") == 0)
			dst = &o.name;
		else if (opts && strcmp(a, "--against") == 0)
			dst = &against_path;
		else if (opts && strcmp(a, "--relays") == 0)
			dst = &o.relays;
		else if (opts && strcmp(a, "-o") == 0)
			dst = &out_path;
		if (dst) {
			if (i + 1 >= argc) {
				fprintf(stderr, "sluice policy suggest: %s needs an argument\n", a);
				usage(stderr);
				free(files);
				return EXIT_ERROR;
			}
			*dst = argv[++i];
			continue;
		}
		if (opts && strncmp(a, "--name=", 7) == 0)
			o.name = a + 7;
		else if (opts && strncmp(a, "--against=", 10) == 0)
			against_path = a + 10;
		else if (opts && strncmp(a, "--relays=", 9) == 0)
			o.relays = a + 9;
		else if (opts && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "sluice policy suggest: unknown option '%s'\n", a);
			usage(stderr);
			free(files);
			return EXIT_ERROR;
		} else {
			files[n++] = a;
		}
	}
	if (n == 0) {
		fprintf(stderr, "sluice policy suggest: no EVENTS file given\n");
		usage(stderr);
		free(files);
		return EXIT_ERROR;
	}
	if (against_path) {
		struct sluice_policy_error err;
		char msg[700];

		if (sluice_policy_load_file(against_path, &against, &err) < 0) {
			fprintf(stderr, "%s\n", sluice_policy_error_str(&err, msg, sizeof(msg)));
			free(files);
			return EXIT_ERROR;
		}
		o.against = against;
		o.against_path = against_path;
		against_text = slurp(against_path);
		o.against_text = against_text;
	}
	s = suggest_new(&o);
	if (!s)
		goto out;
	for (int i = 0; i < n; i++) {
		bool is_stdin = strcmp(files[i], "-") == 0;
		FILE *f = is_stdin ? stdin : fopen(files[i], "re");
		int r;

		if (!f) {
			fprintf(stderr, "sluice policy suggest: %s: %s\n", files[i], strerror(errno));
			goto out;
		}
		r = suggest_read(s, is_stdin ? "<stdin>" : files[i], f);
		if (r < 0)
			fprintf(stderr, "sluice policy suggest: %s: read error: %s\n", files[i], strerror(errno));
		if (!is_stdin)
			fclose(f);
		if (r < 0)
			goto out;
	}
	text = suggest_render(s);
	if (!text)
		goto out;
	if (write_out(out_path, text) < 0) {
		fprintf(stderr, "sluice policy suggest: cannot write %s: %s\n", out_path ? out_path : "stdout",
			strerror(errno));
		goto out;
	}
	suggest_summary(s, stderr);
	rc = suggest_exit_status(s);
out:
	free(text);
	free(against_text);
	suggest_free(s);
	sluice_policy_free(against);
	free(files);
	return rc;
}
