/* SPDX-License-Identifier: BSD-2-Clause */
#include "sni.h"

#include <string.h>

#define TLS_CT_HANDSHAKE     22
#define TLS_HS_CLIENT_HELLO  1

/* A read cursor: every read checks the remaining length first. */
struct cur {
	const uint8_t *p;
	size_t left;
};

static bool take(struct cur *c, size_t n, const uint8_t **out)
{
	if (c->left < n)
		return false;
	if (out)
		*out = c->p;
	c->p += n;
	c->left -= n;
	return true;
}

static bool u8(struct cur *c, unsigned *v)
{
	const uint8_t *p;

	if (!take(c, 1, &p))
		return false;
	*v = p[0];
	return true;
}

static bool u16(struct cur *c, unsigned *v)
{
	const uint8_t *p;

	if (!take(c, 2, &p))
		return false;
	*v = (unsigned)p[0] << 8 | p[1];
	return true;
}

/* A sub-cursor of the next n bytes (a length-prefixed vector body). */
static bool sub(struct cur *c, size_t n, struct cur *s)
{
	const uint8_t *p;

	if (!take(c, n, &p))
		return false;
	s->p = p;
	s->left = n;
	return true;
}

const char *sni_status_name(enum sni_status st)
{
	switch (st) {
	case SNI_OK: return "ok";
	case SNI_NEED_MORE: return "need_more";
	case SNI_NOT_TLS: return "not_tls";
	case SNI_MALFORMED: return "malformed";
	}
	return "unknown";
}

/* server_name extension body (RFC 6066 3): ServerNameList. */
static enum sni_status parse_server_name(struct cur *ext, struct sni_result *out)
{
	unsigned list_len, type, name_len;
	struct cur list;
	const uint8_t *name;

	if (!u16(ext, &list_len) || !sub(ext, list_len, &list) || ext->left != 0 || list_len == 0)
		return SNI_MALFORMED;
	while (list.left) {
		if (!u8(&list, &type) || !u16(&list, &name_len) || !take(&list, name_len, &name))
			return SNI_MALFORMED;
		if (type != 0)
			continue;               /* unknown NameType: skip (RFC 6066 allows others) */
		if (out->has_sni)
			return SNI_MALFORMED;   /* "MUST NOT contain more than one name of the same name_type" */
		if (name_len == 0 || name_len > SNI_NAME_MAX || memchr(name, '\0', name_len))
			return SNI_MALFORMED;
		memcpy(out->sni, name, name_len);
		out->sni[name_len] = '\0';
		out->has_sni = true;
	}
	return SNI_OK;
}

/* The ClientHello body (after the 4-byte handshake header). */
static enum sni_status parse_hello(const uint8_t *body, size_t len, struct sni_result *out)
{
	struct cur c = { body, len }, exts;
	unsigned v, n, ext_len;
	bool seen_sni = false, seen_ech = false;

	if (!u16(&c, &v))
		return SNI_MALFORMED;
	out->legacy_version = (uint16_t)v;
	if ((v >> 8) != 3)
		return SNI_MALFORMED;
	if (!take(&c, 32, NULL))                                    /* random */
		return SNI_MALFORMED;
	if (!u8(&c, &n) || n > 32 || !take(&c, n, NULL))             /* legacy_session_id */
		return SNI_MALFORMED;
	if (!u16(&c, &n) || n < 2 || (n & 1) || !take(&c, n, NULL))  /* cipher_suites */
		return SNI_MALFORMED;
	if (!u8(&c, &n) || n < 1 || !take(&c, n, NULL))              /* legacy_compression_methods */
		return SNI_MALFORMED;
	if (c.left == 0)
		return SNI_OK;   /* no extensions at all (SSL 3.0 style): no SNI */
	if (!u16(&c, &ext_len) || !sub(&c, ext_len, &exts) || c.left != 0)
		return SNI_MALFORMED;

	while (exts.left) {
		unsigned type, elen;
		struct cur e;
		enum sni_status st;

		if (!u16(&exts, &type) || !u16(&exts, &elen) || !sub(&exts, elen, &e))
			return SNI_MALFORMED;
		switch (type) {
		case TLS_EXT_SERVER_NAME:
			if (seen_sni)
				return SNI_MALFORMED;   /* RFC 8446 4.2: one of each type */
			seen_sni = true;
			st = parse_server_name(&e, out);
			if (st != SNI_OK)
				return st;
			break;
		case TLS_EXT_ECH:
		case TLS_EXT_ESNI_OLD:
			if (seen_ech)
				return SNI_MALFORMED;
			seen_ech = true;
			out->has_ech = true;
			break;
		default:
			break;
		}
	}
	return SNI_OK;
}

enum sni_status sni_parse(const uint8_t *buf, size_t len, struct sni_result *out, size_t *need)
{
	uint8_t hello[4 + SNI_HELLO_MAX];
	size_t have = 0;        /* handshake bytes reassembled into hello[] */
	size_t want = 0;        /* 4 + handshake length, once known */
	size_t off = 0;         /* offset of the next record in buf */

	memset(out, 0, sizeof(*out));
	if (need)
		*need = 5;
	if (len >= 1 && buf[0] != TLS_CT_HANDSHAKE)
		return SNI_NOT_TLS;

	for (;;) {
		size_t rlen, chunk, before;

		if (len - off < 5) {
			/* check what we can of the partial record header */
			if (len - off >= 2 && buf[off + 1] != 3)
				return off ? SNI_MALFORMED : SNI_NOT_TLS;
			if (need)
				*need = off + 5;
			return SNI_NEED_MORE;
		}
		if (buf[off] != TLS_CT_HANDSHAKE)
			return SNI_MALFORMED;   /* something else interleaved with the hello */
		if (buf[off + 1] != 3)
			return off ? SNI_MALFORMED : SNI_NOT_TLS;
		rlen = (size_t)buf[off + 3] << 8 | buf[off + 4];
		if (rlen == 0 || rlen > SNI_RECORD_MAX)
			return SNI_MALFORMED;
		if (len - off - 5 < rlen) {
			if (need)
				*need = off + 5 + rlen;
			/* the handshake header can be checked early */
			if (off == 0 && len >= 6 && buf[5] != TLS_HS_CLIENT_HELLO)
				return SNI_MALFORMED;
			return SNI_NEED_MORE;
		}

		before = have;
		chunk = rlen;
		if (have + chunk > sizeof(hello))
			chunk = sizeof(hello) - have;
		memcpy(hello + have, buf + off + 5, chunk);
		have += chunk;
		off += 5 + rlen;

		if (want == 0 && have >= 4) {
			size_t hlen = (size_t)hello[1] << 16 | (size_t)hello[2] << 8 | hello[3];

			if (hello[0] != TLS_HS_CLIENT_HELLO)
				return SNI_MALFORMED;
			if (hlen > SNI_HELLO_MAX)
				return SNI_MALFORMED;
			want = 4 + hlen;
		}
		/* anything after the ClientHello in its records is not a client's first flight */
		if (want && before + rlen > want)
			return SNI_MALFORMED;
		if (chunk < rlen)
			return SNI_MALFORMED;
		if (want && have == want)
			break;
	}

	out->hello_bytes = off;
	return parse_hello(hello + 4, want - 4, out);
}
