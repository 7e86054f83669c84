/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/util.c - `sluice policy suggest`: memory, the string-keyed hash
 * map, text helpers and the seen-counts that every part of suggest uses.
 * Rules: docs/policy.md, "Audit mode and suggest"; the parts:
 * suggest/internal.h.
 */
#include "internal.h"

/* Ports where direct TCP to an address a name resolved to is taken to be
 * HTTP or TLS, so a host entry (checked by the proxy) replaces a cidr entry.
 * Elsewhere the proxy would refuse the protocol: a cidr entry carries the
 * traffic and a host entry only lets the name resolve. */
static const uint16_t web_ports[] = { 80, 443, 8000, 8008, 8080, 8081, 8443, 8888 };

/* The methods a url entry may name (docs/policy.md), bit i = method i. */
const char *const sg_method_names[] = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" };
_Static_assert(sizeof(sg_method_names) / sizeof(sg_method_names[0]) == N_METHODS, "N_METHODS");

__attribute__((noreturn)) void sg_oom(void)
{
	fputs("sluice policy suggest: out of memory\n", stderr);
	exit(EXIT_ERROR);
}

void *sg_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		sg_oom();
	return p;
}

void *sg_xrealloc(void *p, size_t n, size_t size)
{
	void *q;

	if (size && n > SIZE_MAX / size)
		sg_oom();
	q = realloc(p, n * size > 0 ? n * size : 1);
	if (!q)
		sg_oom();
	return q;
}

char *sg_xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		sg_oom();
	return p;
}

__attribute__((format(printf, 1, 2)))
char *sg_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		sg_oom();
	return s;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

struct hnode *sg_hmap_node(const struct hmap *m, const char *key)
{
	uint64_t h = fnv1a(key);

	if (!m->nb)
		return NULL;
	for (struct hnode *x = m->b[h & (m->nb - 1)]; x; x = x->next)
		if (x->h == h && strcmp(x->key, key) == 0)
			return x;
	return NULL;
}

void *sg_hmap_get(const struct hmap *m, const char *key)
{
	struct hnode *x = sg_hmap_node(m, key);

	return x ? x->val : NULL;
}

/* The node for `key`, created (val NULL) when missing. */
struct hnode *sg_hmap_put(struct hmap *m, const char *key)
{
	struct hnode *x = sg_hmap_node(m, key);
	size_t len = strlen(key);

	if (x)
		return x;
	if (m->n >= m->nb) {
		size_t nb = m->nb ? m->nb * 2 : 64;
		struct hnode **b = sg_xcalloc(nb, sizeof(*b));

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
	x = sg_xcalloc(1, sizeof(*x) + len + 1);
	x->h = fnv1a(key);
	memcpy(x->key, key, len + 1);
	x->next = m->b[x->h & (m->nb - 1)];
	m->b[x->h & (m->nb - 1)] = x;
	m->n++;
	return x;
}

/* The values, in no particular order (callers sort). */
void **sg_hmap_values(const struct hmap *m, size_t *n)
{
	void **v = sg_xcalloc(m->n, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < m->nb; i++)
		for (struct hnode *x = m->b[i]; x; x = x->next)
			v[k++] = x->val;
	*n = k;
	return v;
}

void sg_hmap_free(struct hmap *m, void (*freeval)(void *))
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

/* A printable-ASCII copy of untrusted text (for comments and `why`). */
void sg_printable(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = ((unsigned char)src[i] >= 0x20 && (unsigned char)src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

/* "2026-11-30T06:24:59.430861Z" -> "2026-11-30T06:24:59Z" (else as is). */
void sg_ts_short(char *dst, size_t len, const char *ts)
{
	if (strlen(ts) >= 20 && ts[4] == '-' && ts[10] == 'T' && ts[19] == '.')
		snprintf(dst, len, "%.19sZ", ts);
	else
		sg_printable(dst, len, ts);
}

int sg_method_index(const char *m)
{
	for (size_t i = 0; i < N_METHODS; i++)
		if (strcmp(m, sg_method_names[i]) == 0)
			return (int)i;
	return -1;
}

bool sg_is_web_port(uint16_t port)
{
	for (size_t i = 0; i < sizeof(web_ports) / sizeof(web_ports[0]); i++)
		if (web_ports[i] == port)
			return true;
	return false;
}

void sg_qnames_init(struct qnames *q)
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
uint16_t sg_qtype_number(const struct qnames *q, const char *name)
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

/* The longest prefix covering both, ending at a '/' (at least "/"). */
char *sg_common_prefix(const char *a, const char *b)
{
	size_t i = 0, cut = 1;

	if (sluice_path_prefix_match(a, b))
		return sg_xstrdup(a);
	if (sluice_path_prefix_match(b, a))
		return sg_xstrdup(b);
	while (a[i] && a[i] == b[i]) {
		if (a[i] == '/')
			cut = i + 1;
		i++;
	}
	return sg_xasprintf("%.*s", (int)cut, a);
}

/* The first path segment ("/pub/x" -> "pub"), for grouping. */
char *sg_first_segment(const char *path)
{
	const char *s = path + (path[0] == '/'), *e = strchr(s, '/');

	return sg_xasprintf("%.*s", (int)(e ? (size_t)(e - s) : strlen(s)), s);
}

/* "api.example.com" -> "com.example.api": siblings sort together. */
char *sg_reversed_labels(const char *host)
{
	size_t n = strlen(host);
	char *out = sg_xcalloc(n + 2, 1), *o = out;
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

void sg_seen_add(struct seen *s, const char *ts, const char *run, unsigned long long n)
{
	if (!s->n || strcmp(ts, s->first) < 0)
		snprintf(s->first, sizeof(s->first), "%s", ts);
	if (!s->n || strcmp(ts, s->last) > 0)
		snprintf(s->last, sizeof(s->last), "%s", ts);
	s->n += n;
	seen_run(s, run);
}

void sg_seen_merge(struct seen *d, const struct seen *s)
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
void sg_seen_text(FILE *f, const struct seen *s, bool denied)
{
	char a[TS_LEN], b[TS_LEN];

	sg_ts_short(a, sizeof(a), s->first);
	sg_ts_short(b, sizeof(b), s->last);
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
