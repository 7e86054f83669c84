/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_sni.c - the TLS ClientHello reader (userspace/proxy/sni.c) on real
 * ClientHello bytes (clienthellos.h), every truncation of them, fragmented
 * and modified copies (ECH, duplicate or odd server_name), and garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clienthellos.h"
#include "sni.h"

#define BUF_MAX 40000

/* Offset of the extensions length field in a single-record hello. */
static size_t ext_len_off(const uint8_t *h)
{
	size_t off = 5 + 4 + 2 + 32;

	off += 1 + h[off];                                   /* session id */
	off += 2 + ((size_t)h[off] << 8 | h[off + 1]);       /* cipher suites */
	off += 1 + h[off];                                   /* compression */
	return off;
}

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Fix the record, handshake and extensions lengths after the body changed
 * to total length `len` with `ext_total` bytes of extensions. */
static void fix_lengths(uint8_t *h, size_t len, size_t ext_off, size_t ext_total)
{
	size_t hs = len - 9;

	put16(h + 3, len - 5);
	h[6] = (uint8_t)(hs >> 16);
	h[7] = (uint8_t)(hs >> 8);
	h[8] = (uint8_t)hs;
	put16(h + ext_off, ext_total);
}

/* Append an extension to a single-record hello; returns the new length. */
static size_t add_ext(const uint8_t *in, size_t len, unsigned type, const uint8_t *data,
		      size_t dlen, uint8_t *out)
{
	size_t off = ext_len_off(in);
	size_t ext_total = (size_t)in[off] << 8 | in[off + 1];

	memcpy(out, in, len);
	put16(out + len, type);
	put16(out + len + 2, dlen);
	memcpy(out + len + 4, data, dlen);
	len += 4 + dlen;
	fix_lengths(out, len, off, ext_total + 4 + dlen);
	return len;
}

/* Copy a hello without its server_name extension; returns the new length. */
static size_t drop_sni(const uint8_t *in, size_t len, uint8_t *out)
{
	size_t off = ext_len_off(in);
	size_t p = off + 2;    /* read position */
	size_t o = p;          /* write position */

	memcpy(out, in, off + 2);
	while (p + 4 <= len) {
		size_t type = (size_t)in[p] << 8 | in[p + 1];
		size_t elen = (size_t)in[p + 2] << 8 | in[p + 3];

		if (type != 0) {
			memcpy(out + o, in + p, 4 + elen);
			o += 4 + elen;
		}
		p += 4 + elen;
	}
	fix_lengths(out, o, off, o - off - 2);
	return o;
}

/* A server_name extension body with one or more names. */
static size_t sni_ext(const char *const *names, size_t n, uint8_t *out)
{
	size_t o = 2;

	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(names[i]);

		out[o] = 0;
		put16(out + o + 1, l);
		memcpy(out + o + 3, names[i], l);
		o += 3 + l;
	}
	put16(out, o - 2);
	return o;
}

/* Re-split a single-record hello into records carrying `chunk` bytes of
 * the handshake message each. */
static size_t fragment(const uint8_t *in, size_t len, size_t chunk, uint8_t *out)
{
	size_t body = len - 5, o = 0;

	for (size_t p = 0; p < body; p += chunk) {
		size_t n = body - p < chunk ? body - p : chunk;

		out[o] = 0x16;
		out[o + 1] = 3;
		out[o + 2] = 1;
		put16(out + o + 3, n);
		memcpy(out + o + 5, in + 5 + p, n);
		o += 5 + n;
	}
	return o;
}

static void expect_ok(const uint8_t *b, size_t len, const char *sni, bool ech)
{
	struct sni_result r;
	size_t need = 0;

	assert_int_equal(sni_parse(b, len, &r, &need), SNI_OK);
	if (sni) {
		assert_true(r.has_sni);
		assert_string_equal(r.sni, sni);
	} else {
		assert_false(r.has_sni);
	}
	assert_int_equal(r.has_ech, ech);
	assert_int_equal(r.hello_bytes, len);
}

static enum sni_status parse(const uint8_t *b, size_t len)
{
	struct sni_result r;

	return sni_parse(b, len, &r, NULL);
}

static void test_real_hellos(void **state)
{
	struct sni_result r;

	expect_ok(hello_openssl, hello_openssl_len, "www.example.com", false);
	expect_ok(hello_curl, hello_curl_len, "api.example.org", false);
	expect_ok(hello_nosni, hello_nosni_len, NULL, false);
	expect_ok(hello_tls12, hello_tls12_len, "tls12.example.net", false);
	assert_int_equal(sni_parse(hello_tls12, hello_tls12_len, &r, NULL), SNI_OK);
	assert_int_equal(r.legacy_version, 0x0303);
}

static void test_every_truncation_needs_more(void **state)
{
	const struct { const uint8_t *b; size_t len; } all[] = {
		{ hello_openssl, hello_openssl_len }, { hello_curl, hello_curl_len },
		{ hello_nosni, hello_nosni_len }, { hello_tls12, hello_tls12_len },
	};

	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		for (size_t n = 0; n < all[k].len; n++) {
			struct sni_result r;
			size_t need = 0;
			uint8_t *copy = malloc(n ? n : 1);   /* exact size: ASan catches over-reads */

			memcpy(copy, all[k].b, n);
			if (sni_parse(copy, n, &r, &need) != SNI_NEED_MORE)
				fail_msg("hello %zu truncated to %zu: not need_more", k, n);
			assert_true(need > n);
			assert_true(need <= all[k].len);
			free(copy);
		}
	}
}

static void test_fragmented_hello(void **state)
{
	static uint8_t buf[BUF_MAX];
	size_t sizes[] = { 1, 2, 7, 100, 200, 511 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = fragment(hello_curl, hello_curl_len, sizes[i], buf);

		expect_ok(buf, len, "api.example.org", false);
		/* every prefix of the fragmented form is a valid prefix */
		for (size_t n = 0; n < len; n += 3)
			assert_int_equal(parse(buf, n), SNI_NEED_MORE);
	}
}

static void test_ech(void **state)
{
	static uint8_t buf[BUF_MAX], buf2[BUF_MAX], nosni[BUF_MAX];
	static const uint8_t ech_body[] = { 0x00, 0x00, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00 };
	size_t len = add_ext(hello_curl, hello_curl_len, TLS_EXT_ECH, ech_body, sizeof(ech_body), buf);
	size_t len2, nlen;

	expect_ok(buf, len, "api.example.org", true);
	/* the old draft ESNI extension counts too */
	len2 = add_ext(hello_openssl, hello_openssl_len, TLS_EXT_ESNI_OLD, ech_body, sizeof(ech_body), buf2);
	expect_ok(buf2, len2, "www.example.com", true);
	/* two ECH extensions: malformed */
	len2 = add_ext(buf, len, TLS_EXT_ECH, ech_body, sizeof(ech_body), buf2);
	assert_int_equal(parse(buf2, len2), SNI_MALFORMED);
	/* ECH without an outer SNI */
	nlen = drop_sni(hello_curl, hello_curl_len, nosni);
	expect_ok(nosni, nlen, NULL, false);
	len = add_ext(nosni, nlen, TLS_EXT_ECH, ech_body, sizeof(ech_body), buf);
	expect_ok(buf, len, NULL, true);
}

static void test_odd_server_names(void **state)
{
	static uint8_t base[BUF_MAX], buf[BUF_MAX];
	uint8_t ext[600];
	size_t blen = drop_sni(hello_curl, hello_curl_len, base), elen, len;
	const char *two[] = { "a.example", "b.example" };
	const char *one[] = { "Mixed.Case.Example." };
	char longname[300];

	/* a second server_name extension */
	elen = sni_ext(one, 1, ext);
	len = add_ext(hello_curl, hello_curl_len, TLS_EXT_SERVER_NAME, ext, elen, buf);
	assert_int_equal(parse(buf, len), SNI_MALFORMED);
	/* two host_name entries in one list */
	elen = sni_ext(two, 2, ext);
	len = add_ext(base, blen, TLS_EXT_SERVER_NAME, ext, elen, buf);
	assert_int_equal(parse(buf, len), SNI_MALFORMED);
	/* returned as sent: normalising is the policy's job */
	elen = sni_ext(one, 1, ext);
	len = add_ext(base, blen, TLS_EXT_SERVER_NAME, ext, elen, buf);
	expect_ok(buf, len, "Mixed.Case.Example.", false);
	/* a NUL inside the name */
	elen = sni_ext(one, 1, ext);
	ext[2 + 3 + 5] = '\0';
	len = add_ext(base, blen, TLS_EXT_SERVER_NAME, ext, elen, buf);
	assert_int_equal(parse(buf, len), SNI_MALFORMED);
	/* empty list, empty name, over-long name */
	ext[0] = 0;
	ext[1] = 0;
	len = add_ext(base, blen, TLS_EXT_SERVER_NAME, ext, 2, buf);
	assert_int_equal(parse(buf, len), SNI_MALFORMED);
	{
		const char *empty[] = { "" };

		elen = sni_ext(empty, 1, ext);
		len = add_ext(base, blen, TLS_EXT_SERVER_NAME, ext, elen, buf);
		assert_int_equal(parse(buf, len), SNI_MALFORMED);
	}
	memset(longname, 'a', 290);
	longname[290] = '\0';
	{
		const char *lng[] = { longname };

		elen = sni_ext(lng, 1, ext);
		len = add_ext(base, blen, TLS_EXT_SERVER_NAME, ext, elen, buf);
		assert_int_equal(parse(buf, len), SNI_MALFORMED);
	}
	/* an extension whose length runs past the end */
	memcpy(buf, hello_curl, hello_curl_len);
	put16(buf + ext_len_off(buf) + 4, 0xffff);
	assert_int_equal(parse(buf, hello_curl_len), SNI_MALFORMED);
}

static void test_garbage(void **state)
{
	static const uint8_t http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	static const uint8_t sslv2[] = { 0x80, 0x2e, 0x01, 0x00, 0x02 };
	static const uint8_t badver[] = { 0x16, 0x09, 0x01, 0x00, 0x10 };
	static const uint8_t zero[] = { 0x16, 0x03, 0x01, 0x00, 0x00 };
	static const uint8_t server_hello[] = { 0x16, 0x03, 0x03, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00 };
	static const uint8_t huge_hs[] = { 0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0xff, 0xff, 0xff };
	static const uint8_t app_data[] = { 0x17, 0x03, 0x03, 0x00, 0x01, 0x00 };
	static uint8_t buf[BUF_MAX];

	assert_int_equal(parse(http, sizeof(http) - 1), SNI_NOT_TLS);
	assert_int_equal(parse(sslv2, sizeof(sslv2)), SNI_NOT_TLS);
	assert_int_equal(parse(badver, sizeof(badver)), SNI_NOT_TLS);
	assert_int_equal(parse(app_data, sizeof(app_data)), SNI_NOT_TLS);
	assert_int_equal(parse(zero, sizeof(zero)), SNI_MALFORMED);
	assert_int_equal(parse(server_hello, sizeof(server_hello)), SNI_MALFORMED);
	assert_int_equal(parse(huge_hs, sizeof(huge_hs)), SNI_MALFORMED);
	assert_int_equal(parse(NULL, 0), SNI_NEED_MORE);

	/* data after the hello inside its record */
	memcpy(buf, hello_curl, hello_curl_len);
	buf[hello_curl_len] = 0xaa;
	put16(buf + 3, hello_curl_len - 5 + 1);
	assert_int_equal(parse(buf, hello_curl_len + 1), SNI_MALFORMED);
	/* a second record of another content type in the middle */
	{
		size_t len = fragment(hello_curl, hello_curl_len, 100, buf);

		buf[105] = 0x17;
		assert_int_equal(parse(buf, len), SNI_MALFORMED);
	}
	/* every single byte overwritten: never crashes, never reads outside */
	for (size_t i = 0; i < hello_openssl_len; i++) {
		static const uint8_t vals[] = { 0x00, 0x01, 0x7f, 0xff };

		for (size_t v = 0; v < sizeof(vals); v++) {
			uint8_t *copy = malloc(hello_openssl_len);

			memcpy(copy, hello_openssl, hello_openssl_len);
			copy[i] = vals[v];
			(void)parse(copy, hello_openssl_len);
			free(copy);
		}
	}
	assert_string_equal(sni_status_name(SNI_MALFORMED), "malformed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_hellos),
		cmocka_unit_test(test_every_truncation_needs_more),
		cmocka_unit_test(test_fragmented_hello),
		cmocka_unit_test(test_ech),
		cmocka_unit_test(test_odd_server_names),
		cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
