/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2.h - HTTP/2 inside inspected TLS (ALPN h2; libnghttp2).  Every stream
 * becomes one HTTP/1.1 request on an inspected connection of its own
 * (conn_new_inspected over a socketpair), so that it is decided, rewritten
 * (credentials), dialed (HTTP/1.1 in verified TLS to the origin) and logged
 * by exactly the code of an HTTP/1.1 request inside TLS; its HTTP/1.1
 * response comes back as the stream's response.  docs/proxy.md "HTTP/2".
 */
#ifndef SLUICE_PROXY_H2_H
#define SLUICE_PROXY_H2_H

struct proxy;
struct conn;

/* Streams open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS);
 * a stream past it is refused (RST_STREAM REFUSED_STREAM). */
#define H2_MAX_STREAMS 100

/*
 * Serve HTTP/2 on `fd` (non-blocking; the plaintext of the client's TLS
 * session that `outer` terminated, after ALPN chose h2).  Takes `fd`.
 * `outer` is read now (peer, kernel record, form, SNI, port), not kept;
 * tls_version and tls_cipher are static text of the client's session.
 * Returns 0, or -1 (fd closed) on allocation failure.
 */
int h2_start(struct proxy *px, int fd, const struct conn *outer, const char *tls_version,
	     const char *tls_cipher);

/* HTTP/2 connections open now (tests, leak checks). */
unsigned long h2_live(void);

#endif
