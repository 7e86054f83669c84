/* SPDX-License-Identifier: BSD-2-Clause */
#include "accesslog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonstr.h"

#include "addr.h"

/*
 * The line is built straight into a buffer (no json-c object per line:
 * with json-c the formatting was a third of the proxy's CPU per small
 * request, bench/ scenario 4 profile).  Strings are escaped as RFC 8259
 * requires, and bytes that are not well-formed UTF-8 (a hostile comm,
 * server name or path) become U+FFFD (sluice_utf8_seq_len), as
 * sluice_json_string() does for the json-c paths: the line stays JSON.
 */
struct jb {
	char *p;
	size_t len, cap;
	bool heap;                    /* p was malloc'd here (else the caller's) */
	bool failed;                  /* out of memory: the line is lost */
};

static bool jb_room(struct jb *b, size_t n)
{
	size_t ncap;
	char *np;

	if (b->failed)
		return false;
	if (b->len + n < b->cap)
		return true;
	ncap = b->cap * 2;
	while (ncap <= b->len + n)
		ncap *= 2;
	np = b->heap ? realloc(b->p, ncap) : malloc(ncap);
	if (!np) {
		b->failed = true;
		return false;
	}
	if (!b->heap)
		memcpy(np, b->p, b->len);
	b->p = np;
	b->cap = ncap;
	b->heap = true;
	return true;
}

static void jb_raw(struct jb *b, const char *s, size_t n)
{
	if (!jb_room(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void jb_str(struct jb *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);
	char *o;

	/* room for the worst case (every byte \u00XX) once, then no checks */
	if (!jb_room(b, 6 * n + 2))
		return;
	o = b->p + b->len;
	*o++ = '"';
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		size_t l;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			*o++ = (char)c;
			i++;
			continue;
		}
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			*o++ = '\\';
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
			i++;
		} else if ((l = sluice_utf8_seq_len(u + i, n - i)) == 0) {
			*o++ = (char)0xef;   /* U+FFFD */
			*o++ = (char)0xbf;
			*o++ = (char)0xbd;
			i++;
		} else {
			memcpy(o, u + i, l);
			o += l;
			i += l;
		}
	}
	*o++ = '"';
	b->len = (size_t)(o - b->p);
}

#define JB_LIT(b, lit) jb_raw((b), (lit), sizeof(lit) - 1)

/* Decimal digits of v into out (at least 20 bytes); returns their count.
 * (No printf on the per-request path: it showed in the profile.) */
static size_t u64_dec(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/* ,"key": (the first key of a line has no comma); keys are ours: plain ASCII */
static void jb_key(struct jb *b, const char *k, size_t kl)
{
	if (!jb_room(b, kl + 4))
		return;
	if (b->len > 1)
		b->p[b->len++] = ',';
	b->p[b->len++] = '"';
	memcpy(b->p + b->len, k, kl);
	b->len += kl;
	b->p[b->len++] = '"';
	b->p[b->len++] = ':';
}

static void put_strk(struct jb *b, const char *key, size_t kl, const char *v)
{
	if (!v)
		return;
	jb_key(b, key, kl);
	jb_str(b, v);
}

static void put_u64k(struct jb *b, const char *key, size_t kl, uint64_t v)
{
	char num[24];
	size_t n = u64_dec(num, v);

	jb_key(b, key, kl);
	jb_raw(b, num, n);
}

static void put_i64k(struct jb *b, const char *key, size_t kl, int64_t v)
{
	char num[24];
	size_t n = 0;

	jb_key(b, key, kl);
	if (v < 0) {
		num[n++] = '-';
		n += u64_dec(num + 1, (uint64_t)0 - (uint64_t)v);
	} else {
		n = u64_dec(num, (uint64_t)v);
	}
	jb_raw(b, num, n);
}

static void put_boolk(struct jb *b, const char *key, size_t kl, bool v)
{
	jb_key(b, key, kl);
	if (v)
		JB_LIT(b, "true");
	else
		JB_LIT(b, "false");
}

/* keys are string literals: their length is known at compile time */
#define put_str(b, k, v)  put_strk((b), (k), sizeof(k) - 1, (v))
#define put_u64(b, k, v)  put_u64k((b), (k), sizeof(k) - 1, (v))
#define put_i64(b, k, v)  put_i64k((b), (k), sizeof(k) - 1, (v))
#define put_bool(b, k, v) put_boolk((b), (k), sizeof(k) - 1, (v))

/* An address as text (v4-mapped IPv6 as IPv4), IPv4 without printf. */
static void ip_text(int family, const uint8_t *a, char *out, size_t len)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (family == AF_INET6 && memcmp(a, mapped, 12) == 0) {
		family = AF_INET;
		a += 12;
	}
	if (family == AF_INET && len >= 16) {
		size_t n = 0;

		for (int i = 0; i < 4; i++) {
			if (i)
				out[n++] = '.';
			n += u64_dec(out + n, a[i]);
		}
		out[n] = '\0';
		return;
	}
	if (!inet_ntop(family, a, out, (socklen_t)len))
		snprintf(out, len, "?");
}

/* "<prefix>.ip" and "<prefix>.port" of an endpoint. */
static void put_endpoint(struct jb *b, const char *ipkey, size_t ipkl, const char *portkey,
			 size_t portkl, const struct sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN];
	uint16_t port;

	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		ip_text(AF_INET, (const uint8_t *)&in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		ip_text(AF_INET6, in6->sin6_addr.s6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
	} else {
		return;
	}
	put_strk(b, ipkey, ipkl, ip);
	put_i64k(b, portkey, portkl, port);
}

#define PUT_ENDPOINT(b, ik, pk, sa) put_endpoint((b), (ik), sizeof(ik) - 1, (pk), sizeof(pk) - 1, (sa))

/* "YYYY-MM-DDTHH:MM:SS.uuuuuuZ"; the part up to the seconds is formatted
 * once per second. */
static void timestamp(const struct timespec *t, char *out, size_t len)
{
	static time_t cached_sec = (time_t)-1;
	static char cached[32];
	static size_t cached_len;
	unsigned us = (unsigned)((t->tv_nsec / 1000) % 1000000);

	if (t->tv_sec != cached_sec) {
		struct tm tm;

		gmtime_r(&t->tv_sec, &tm);
		cached_len = strftime(cached, sizeof(cached), "%Y-%m-%dT%H:%M:%S", &tm);
		cached_sec = t->tv_sec;
	}
	if (len < cached_len + 9 || !cached_len) {
		snprintf(out, len, "1970-01-01T00:00:00.000000Z");
		return;
	}
	memcpy(out, cached, cached_len);
	out[cached_len] = '.';
	for (int i = 6; i >= 1; i--) {
		out[cached_len + (size_t)i] = (char)('0' + us % 10);
		us /= 10;
	}
	out[cached_len + 7] = 'Z';
	out[cached_len + 8] = '\0';
}

/*
 * The fields that are the same on every line of a process (sandbox,
 * policy, mode, and the event's kind): escaped once, then copied (the
 * strings are the process's own and do not change while their pointers
 * stay the same; accesslog.h).
 */
static void constant_fields(struct jb *b, const struct proxy_log_rec *r)
{
	static const char *k_sandbox, *k_name, *k_digest, *k_mode;
	static char *frag;
	static size_t frag_len;
	struct jb f;

	if (frag && k_sandbox == r->sandbox && k_name == r->policy_name && k_digest == r->policy_digest &&
	    k_mode == r->mode) {
		JB_LIT(b, ",");
		jb_raw(b, frag, frag_len);
		return;
	}
	memset(&f, 0, sizeof(f));
	f.cap = 512;
	f.p = malloc(f.cap);
	f.heap = true;
	f.len = 1;   /* after "{": the fragment starts without a comma */
	if (f.p) {
		f.p[0] = '{';
		put_str(&f, "sluice.sandbox", r->sandbox);
		put_str(&f, "sluice.policy_name", r->policy_name);
		put_str(&f, "rule.ruleset", r->policy_digest);
		put_str(&f, "sluice.policy_sha256", r->policy_digest);
		put_str(&f, "sluice.mode", r->mode);
		put_str(&f, "sluice.component", "proxy");
		put_str(&f, "event.kind", "event");
		put_str(&f, "event.category", "network");
		put_str(&f, "event.dataset", "sluice.proxy");
	}
	if (!f.p || f.failed) {
		free(f.p);
		b->failed = true;
		return;
	}
	free(frag);
	frag = f.p;
	frag_len = f.len - 1;
	memmove(frag, frag + 1, frag_len);
	k_sandbox = r->sandbox;
	k_name = r->policy_name;
	k_digest = r->policy_digest;
	k_mode = r->mode;
	JB_LIT(b, ",");
	jb_raw(b, frag, frag_len);
}

/* The line into *b (no newline, not NUL-terminated). */
static void format(struct jb *b, const struct proxy_log_rec *r)
{
	char ts[64];

	timestamp(&r->start, ts, sizeof(ts));

	jb_raw(b, "{", 1);
	/* the fields every sluice line carries (docs/events.md) */
	put_str(b, "@timestamp", ts);
	constant_fields(b, r);
	jb_key(b, "event.type", 10);
	if (r->verdict && strcmp(r->verdict, "deny") == 0)
		JB_LIT(b, "[\"connection\",\"denied\"]");
	else
		JB_LIT(b, "[\"connection\",\"allowed\"]");
	put_str(b, "event.action", r->action);
	put_str(b, "event.outcome", r->outcome);
	put_str(b, "event.reason", r->reason);
	put_u64(b, "event.duration", r->duration_ns);
	put_str(b, "sluice.verdict", r->verdict);
	put_str(b, "sluice.form", r->form);
	put_str(b, "rule.name", r->rule);

	put_str(b, "url.full", r->url_full);
	put_str(b, "url.domain", r->domain);
	put_str(b, "tls.client.server_name", r->sni);
	if (r->inspected) {
		put_bool(b, "sluice.inspected", true);
		put_str(b, "tls.version", r->tls_version);
		put_str(b, "tls.cipher", r->tls_cipher);
	}
	put_str(b, "http.request.method", r->method);
	if (r->status > 0)
		put_i64(b, "http.response.status_code", r->status);
	if (r->tunnel) {
		if (r->req_bytes >= 0)
			put_i64(b, "source.bytes", r->req_bytes);
		if (r->resp_bytes >= 0)
			put_i64(b, "destination.bytes", r->resp_bytes);
	} else {
		if (r->req_bytes >= 0)
			put_i64(b, "http.request.bytes", r->req_bytes);
		if (r->resp_bytes >= 0)
			put_i64(b, "http.response.bytes", r->resp_bytes);
	}
	PUT_ENDPOINT(b, "source.ip", "source.port", r->src);
	PUT_ENDPOINT(b, "destination.ip", "destination.port", r->dst);

	if (r->orig) {
		char hp[INET6_ADDRSTRLEN + 8], uid[24];
		char comm[sizeof(r->orig->comm) + 1];
		uint8_t a[16];
		int fam = r->orig->family == SLUICE_AF_INET6 ? AF_INET6 : AF_INET;
		size_t n;

		memcpy(a, r->orig->daddr, 16);
		ip_text(fam, a, hp + 1, sizeof(hp) - 8);
		/* [v6]:port, v4:port */
		if (strchr(hp + 1, ':')) {
			hp[0] = '[';
			n = strlen(hp);
			hp[n++] = ']';
		} else {
			memmove(hp, hp + 1, strlen(hp + 1) + 1);
			n = strlen(hp);
		}
		hp[n++] = ':';
		n += u64_dec(hp + n, r->orig->dport);
		hp[n] = '\0';
		put_str(b, "sluice.orig_dst", hp);
		put_u64(b, "sluice.cgroup_id", r->orig->cgroup_id);
		if (r->orig->pid) {
			put_i64(b, "process.pid", r->orig->pid);
			memcpy(comm, r->orig->comm, sizeof(r->orig->comm));
			comm[sizeof(r->orig->comm)] = '\0';
			if (comm[0])
				put_str(b, "process.name", comm);
			n = u64_dec(uid, r->orig->uid);
			uid[n] = '\0';
			put_str(b, "user.id", uid);
		}
	}
	if (r->request_seq > 0)
		put_i64(b, "sluice.request_seq", r->request_seq);
	if (r->upstream_conn)
		put_bool(b, "sluice.upstream_reused", r->upstream_conn == 2);
	if (r->orig_dst_mismatch >= 0)
		put_bool(b, "sluice.orig_dst_mismatch", r->orig_dst_mismatch);
	if (r->n_dropped) {
		jb_key(b, "sluice.dropped_answers", 22);
		jb_raw(b, "[", 1);
		for (size_t i = 0; i < r->n_dropped && i < PROXY_LOG_MAX_DROPPED; i++) {
			if (i)
				jb_raw(b, ",", 1);
			jb_str(b, r->dropped[i]);
		}
		jb_raw(b, "]", 1);
	}
	jb_raw(b, "}", 1);
}

char *proxy_log_format(const struct proxy_log_rec *r)
{
	struct jb b = { .cap = 1024 };

	b.p = malloc(b.cap);
	if (!b.p)
		return NULL;
	b.heap = true;
	format(&b, r);
	if (!jb_room(&b, 1)) {
		free(b.p);
		return NULL;
	}
	b.p[b.len] = '\0';
	return b.p;
}

int proxy_log_write(int fd, const struct proxy_log_rec *r)
{
	char stack[4096];
	struct jb b = { .p = stack, .cap = sizeof(stack) };
	size_t off = 0;
	int rc = 0;

	format(&b, r);
	jb_raw(&b, "\n", 1);
	if (b.failed) {
		if (b.heap)
			free(b.p);
		errno = ENOMEM;
		return -1;
	}
	/* one write(2) per line: lines of concurrent writers do not interleave */
	while (off < b.len) {
		ssize_t n = write(fd, b.p + off, b.len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		off += (size_t)n;
	}
	if (b.heap) {
		int e = errno;

		free(b.p);
		errno = e;
	}
	return rc;
}
