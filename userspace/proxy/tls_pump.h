/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls_pump.h - one TLS endpoint of an inspected connection: an OpenSSL
 * session on a TCP socket, bridged to a plaintext socket (one end of a
 * socketpair) so that the proxy's HTTP/1.1 code (conn.c, http.c) reads and
 * writes the decrypted bytes exactly as it does a plain-HTTP connection.
 *
 * Two phases.  The handshake: the pump drives SSL_do_handshake on the TLS
 * socket and calls back once, with the outcome.  The relay: after
 * tls_pump_relay() the pump owns both sockets and frees itself when both
 * directions have ended (a close_notify or EOF on the TLS side is passed on
 * as shutdown(SHUT_WR) of the plaintext side, and the other way round), on
 * an error (both sockets are closed: the HTTP side sees its peer gone), or
 * a few seconds after the plaintext side closed (its peer never answered
 * our close_notify).
 */
#ifndef SLUICE_PROXY_TLS_PUMP_H
#define SLUICE_PROXY_TLS_PUMP_H

#include <stddef.h>

struct event_base;
struct tls_pump;
typedef struct ssl_st SSL;

/*
 * The handshake ended.  `err` is NULL on success, else a stable reason
 * for the log: "client_rejected_certificate" (the client sent an alert
 * about our certificate: it does not trust the sandbox CA, e.g. pinning),
 * "upstream_cert_invalid" (the origin's chain or name did not verify;
 * `detail` says why, from X509_verify_cert_error_string),
 * "tls_handshake_failed", "tls_closed" (the peer closed during the
 * handshake).  On failure the caller frees the pump (tls_pump_free).
 */
typedef void (*tls_pump_hs_cb)(void *arg, const char *err, const char *detail);

/*
 * Start the handshake of `ssl` (already set up as server or client) on the
 * connected non-blocking socket `fd`, which the pump owns from now on.
 * `initial` (may be NULL) are bytes already read from the socket (a peeked
 * ClientHello): the session reads them first.  Returns NULL on allocation
 * failure (then `ssl` and `fd` are still the caller's).
 */
struct tls_pump *tls_pump_new(struct event_base *base, SSL *ssl, int fd, const char *initial,
			      size_t initial_len, tls_pump_hs_cb cb, void *arg);

/* The session (for SSL_get_version, SSL_get_current_cipher). */
SSL *tls_pump_ssl(const struct tls_pump *p);

/*
 * After a successful handshake: relay between the session and the
 * plaintext socket `plain_fd` (non-blocking; the pump owns it).  The pump
 * frees itself when done: the caller forgets the pointer.
 */
void tls_pump_relay(struct tls_pump *p, int plain_fd);

/* Abandon a pump (handshake failed or not wanted): close its sockets and
 * free it.  NULL is ignored. */
void tls_pump_free(struct tls_pump *p);

/* At exit, after the event loop: free every pump still alive (a pooled
 * upstream session's, a relay still finishing), closing their sockets. */
void tls_pump_free_all(void);

/* Pumps alive now (relaying or handshaking; for tests and leak checks). */
unsigned long tls_pump_live(void);

#endif
