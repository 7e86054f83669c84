/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel.c - DNS tunnelling heuristics for names under an allowed wildcard.
 *
 * A wildcard entry ("*.pkg.example.org") lets a sandbox resolve any name
 * under a parent, so the labels in front of the parent are a channel: a
 * tool can encode data in them (iodine, dnscat2, plain base32 exfil), and
 * the upstream resolver carries them to whoever serves the parent's zone.
 * Two cheap checks, per wildcard entry:
 *
 *  - shape: a label of `long_label` bytes or more, more than `long_prefix`
 *    bytes in front of the parent, or a label of `entropy_min_len` bytes or
 *    more whose Shannon entropy is `entropy_bits` bits per byte or more
 *    (encoded data; words and host names stay well below).
 *  - rate: a token bucket of new distinct names per entry (`burst`, refilled
 *    at `per_second`); a suspect-shaped new name costs `suspect_cost`.  A
 *    name seen in the last `seen_ttl` seconds is not new and costs nothing,
 *    so clients that re-resolve a few names are never limited.
 *
 * Exact (non-wildcard) entries are a closed set of names and never checked.
 */
#include "resolver.h"

#include <stdlib.h>
#include <string.h>

#define SEEN_SLOTS 512   /* remembered names per wildcard entry (ring) */

struct seen {
	uint64_t hash;
	double when;
};

struct tstate {
	double tokens;
	double last;        /* time of the last refill; < 0 before first use */
	struct seen *ring;  /* SEEN_SLOTS, allocated on first use */
	unsigned next;
};

struct rsv_tunnel {
	struct rsv_tunnel_limits lim;
	size_t n;
	struct tstate *st;
};

void rsv_tunnel_limits_default(struct rsv_tunnel_limits *l)
{
	l->long_label = 40;
	l->long_prefix = 80;
	l->entropy_min_len = 20;
	l->entropy_bits = 3.9;
	l->burst = 30;
	l->per_second = 0.5;
	l->suspect_cost = 5;
	l->seen_ttl = 300;
}

struct rsv_tunnel *rsv_tunnel_new(size_t n_entries, const struct rsv_tunnel_limits *l)
{
	struct rsv_tunnel *t = calloc(1, sizeof(*t));
	size_t i;

	if (!t)
		return NULL;
	if (l)
		t->lim = *l;
	else
		rsv_tunnel_limits_default(&t->lim);
	t->n = n_entries;
	t->st = calloc(n_entries ? n_entries : 1, sizeof(*t->st));
	if (!t->st) {
		free(t);
		return NULL;
	}
	for (i = 0; i < n_entries; i++) {
		t->st[i].tokens = t->lim.burst;
		t->st[i].last = -1;
	}
	return t;
}

void rsv_tunnel_free(struct rsv_tunnel *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		free(t->st[i].ring);
	free(t->st);
	free(t);
}

/*
 * log2(x) for x >= 1 without libm (the Makefile links none): x = m * 2^e
 * with m in [1, 2), ln m = 2 atanh((m - 1) / (m + 1)), a series that
 * converges fast for z <= 1/3.  Accurate to ~1e-12, plenty for a heuristic.
 */
static double log2_ge1(double x)
{
	double z, z2, term, sum = 0;
	int e = 0, k;

	while (x >= 2) {
		x /= 2;
		e++;
	}
	z = (x - 1) / (x + 1);
	z2 = z * z;
	term = z;
	for (k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return e + 2 * sum / 0.69314718055994530942;
}

double rsv_entropy(const char *s, size_t len)
{
	unsigned counts[256] = { 0 };
	double h = 0;
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++)
		counts[(unsigned char)s[i]]++;
	/* H = log2(n) - (1/n) sum c log2 c */
	for (i = 0; i < 256; i++)
		if (counts[i])
			h += (double)counts[i] * log2_ge1((double)counts[i]);
	return log2_ge1((double)len) - h / (double)len;
}

/* FNV-1a, 64 bit: only to recognise names already seen. */
static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int shape_check(const struct rsv_tunnel_limits *l, const char *prefix, size_t plen,
		       const char **why)
{
	size_t start = 0, i;

	if (plen > l->long_prefix) {
		*why = "long_name";
		return RSV_TUNNEL_SUSPECT;
	}
	for (i = 0; i <= plen; i++) {
		if (i == plen || prefix[i] == '.') {
			size_t llen = i - start;

			if (llen >= l->long_label) {
				*why = "long_label";
				return RSV_TUNNEL_SUSPECT;
			}
			if (llen >= l->entropy_min_len &&
			    rsv_entropy(prefix + start, llen) >= l->entropy_bits) {
				*why = "high_entropy";
				return RSV_TUNNEL_SUSPECT;
			}
			start = i + 1;
		}
	}
	return 0;
}

int rsv_tunnel_check(struct rsv_tunnel *t, const struct sluice_entry *entry, const char *name,
		     double now, const char **why)
{
	const struct rsv_tunnel_limits *l;
	struct tstate *st;
	size_t nlen, hlen, plen;
	uint64_t h;
	unsigned i;
	int flags;
	double cost;

	*why = NULL;
	if (!t || !entry || entry->kind != SLUICE_ENTRY_HOST || !entry->wildcard || !entry->host ||
	    entry->index >= t->n)
		return 0;
	l = &t->lim;
	st = &t->st[entry->index];
	nlen = strlen(name);
	hlen = strlen(entry->host);
	if (nlen <= hlen + 1)
		return 0;
	plen = nlen - hlen - 1;  /* "a.b" of "a.b.<host>" */
	flags = shape_check(l, name, plen, why);

	/* refill */
	if (st->last < 0 || now < st->last)
		st->last = now;
	st->tokens += (now - st->last) * l->per_second;
	if (st->tokens > l->burst)
		st->tokens = l->burst;
	st->last = now;

	if (!st->ring) {
		st->ring = calloc(SEEN_SLOTS, sizeof(*st->ring));
		if (!st->ring) {
			/* fail closed: without memory we cannot tell new from seen */
			*why = "rate";
			return flags | RSV_TUNNEL_SUSPECT | RSV_TUNNEL_LIMITED;
		}
	}
	h = name_hash(name);
	for (i = 0; i < SEEN_SLOTS; i++) {
		struct seen *s = &st->ring[i];

		if (s->when > 0 && s->hash == h && now - s->when < l->seen_ttl) {
			s->when = now;
			return flags;
		}
	}
	cost = flags ? l->suspect_cost : 1;
	if (st->tokens < cost) {
		*why = "rate";
		return flags | RSV_TUNNEL_SUSPECT | RSV_TUNNEL_LIMITED;
	}
	st->tokens -= cost;
	st->ring[st->next].hash = h;
	st->ring[st->next].when = now > 0 ? now : 1e-9;
	st->next = (st->next + 1) % SEEN_SLOTS;
	return flags;
}
