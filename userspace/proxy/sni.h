/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sni.h - the one home-made parser of the proxy: a small, bounds-checked
 * reader of a TLS ClientHello (RFC 8446 4.1.2, RFC 5246 7.4.1.2) that finds
 * the server_name extension (RFC 6066 3) and notices Encrypted Client Hello
 * (extension 0xfe0d, draft-ietf-tls-esni).  It never allocates; every length
 * is checked against what is left.  Fuzzed by tests/fuzz/fuzz_sni.c.
 */
#ifndef SLUICE_PROXY_SNI_H
#define SLUICE_PROXY_SNI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNI_NAME_MAX 255           /* RFC 6066: HostName is opaque<1..2^16-1>, DNS limits it to 255 */
#define SNI_HELLO_MAX 16384        /* largest ClientHello handshake message we reassemble */
#define SNI_RECORD_MAX (16384 + 2048) /* TLSPlaintext length limit, with slack (RFC 8446 5.1) */

#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ECH         0xfe0d /* encrypted_client_hello */
#define TLS_EXT_ESNI_OLD    0xffce /* draft encrypted_server_name */

enum sni_status {
	SNI_OK = 0,        /* a complete ClientHello was read; see has_sni / has_ech */
	SNI_NEED_MORE,     /* the bytes so far are a valid prefix: read more (see *need) */
	SNI_NOT_TLS,       /* not a TLS handshake record */
	SNI_MALFORMED,     /* a TLS handshake record, but not a well-formed ClientHello */
};

struct sni_result {
	bool has_sni;                  /* a host_name entry was present */
	bool has_ech;                  /* encrypted_client_hello (or the old ESNI) present */
	uint16_t legacy_version;       /* client_version field */
	size_t hello_bytes;            /* raw bytes (records) that made up the ClientHello */
	char sni[SNI_NAME_MAX + 1];    /* NUL-terminated host_name, as sent (not normalised) */
};

/*
 * Parse the first bytes a client sent.  `buf`/`len` are the raw bytes from
 * the socket (TLS records); the ClientHello may span several handshake
 * records (it is reassembled, up to SNI_HELLO_MAX bytes).  On SNI_NEED_MORE,
 * *need (may be NULL) is a lower bound of the total bytes needed.
 * A host_name containing NUL, or a second server_name / ECH extension, or
 * several host_name entries are SNI_MALFORMED.  Never reads outside buf.
 */
enum sni_status sni_parse(const uint8_t *buf, size_t len, struct sni_result *out, size_t *need);

/* Stable name of a status for logs ("ok", "need_more", "not_tls", "malformed"). */
const char *sni_status_name(enum sni_status st);

#endif
