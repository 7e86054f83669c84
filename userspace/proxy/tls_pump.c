/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls_pump.c - an OpenSSL session on a TCP socket bridged to a plaintext
 * socket (tls_pump.h).
 *
 * The session reads from a memory BIO holding the bytes the proxy already
 * took from the socket (the ClientHello it peeked for the SNI), and once
 * that is empty from a socket BIO; it always writes to a socket BIO.  One
 * function, pump_run(), moves every direction as far as it can and then
 * arms exactly the events that can unblock it (OpenSSL may want to write
 * while reading and the other way round, e.g. a TLS 1.3 key update), so
 * there is no state machine per direction to get wrong.
 */
#include "tls_pump.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "log.h"

#define PUMP_BUF    (16 * 1024)   /* one TLS record's worth */
#define PUMP_LINGER 5             /* seconds after the plaintext side closed */

struct tls_pump {
	struct event_base *base;
	SSL *ssl;
	int tfd, pfd;                 /* TLS socket; plaintext socket (-1 before the relay) */
	BIO *prefix;                  /* the session's rbio while it holds bytes read before */
	struct event *tev_r, *tev_w, *pev_r, *pev_w, *timer;
	tls_pump_hs_cb cb;
	void *arg;
	bool handshaking;
	/* TLS -> plaintext */
	char *dbuf;
	size_t dlen, doff;
	bool d_eof, d_done;
	/* plaintext -> TLS */
	char *ubuf;
	size_t ulen, uoff;
	bool u_eof, u_done;
	struct tls_pump *prev, *next;  /* every live pump (tls_pump_free_all) */
};

static unsigned long live;
static struct tls_pump *pumps;

unsigned long tls_pump_live(void)
{
	return live;
}

SSL *tls_pump_ssl(const struct tls_pump *p)
{
	return p ? p->ssl : NULL;
}

static void arm(struct event *ev, bool on)
{
	if (!ev)
		return;
	if (on && !event_pending(ev, EV_READ | EV_WRITE, NULL))
		event_add(ev, NULL);
	else if (!on && event_pending(ev, EV_READ | EV_WRITE, NULL))
		event_del(ev);
}

void tls_pump_free(struct tls_pump *p)
{
	if (!p)
		return;
	if (p->tev_r)
		event_free(p->tev_r);
	if (p->tev_w)
		event_free(p->tev_w);
	if (p->pev_r)
		event_free(p->pev_r);
	if (p->pev_w)
		event_free(p->pev_w);
	if (p->timer)
		event_free(p->timer);
	SSL_free(p->ssl);   /* and its BIOs (which do not close the socket) */
	if (p->tfd >= 0)
		close(p->tfd);
	if (p->pfd >= 0)
		close(p->pfd);
	free(p->dbuf);
	free(p->ubuf);
	if (p->prev)
		p->prev->next = p->next;
	else
		pumps = p->next;
	if (p->next)
		p->next->prev = p->prev;
	free(p);
	live--;
}

void tls_pump_free_all(void)
{
	while (pumps)
		tls_pump_free(pumps);
}

/* The memory BIO is empty: read from the socket from now on.  True when
 * the rbio was switched (the caller retries the SSL call). */
static bool prefix_drained(struct tls_pump *p)
{
	BIO *b;

	if (!p->prefix || BIO_ctrl_pending(p->prefix) > 0)
		return false;
	b = BIO_new_socket(p->tfd, BIO_NOCLOSE);
	if (!b)
		return false;
	SSL_set0_rbio(p->ssl, b);   /* frees the memory BIO */
	p->prefix = NULL;
	return true;
}

/* Why the handshake failed, as a stable reason. */
static const char *hs_reason(struct tls_pump *p, int sslerr, const char **detail)
{
	unsigned long e = ERR_peek_last_error();
	int reason = ERR_GET_REASON(e);
	long vr = SSL_get_verify_result(p->ssl);

	*detail = NULL;
	if (!SSL_is_server(p->ssl) && vr != X509_V_OK) {
		*detail = X509_verify_cert_error_string(vr);
		return "upstream_cert_invalid";
	}
	/* an alert from the peer: reason SSL_AD_REASON_OFFSET + the alert */
	if (reason > SSL_AD_REASON_OFFSET) {
		int alert = reason - SSL_AD_REASON_OFFSET;

		*detail = SSL_alert_desc_string_long(alert);
		if (SSL_is_server(p->ssl) &&
		    (alert == SSL_AD_BAD_CERTIFICATE || alert == SSL_AD_UNSUPPORTED_CERTIFICATE ||
		     alert == SSL_AD_CERTIFICATE_REVOKED || alert == SSL_AD_CERTIFICATE_EXPIRED ||
		     alert == SSL_AD_CERTIFICATE_UNKNOWN || alert == SSL_AD_UNKNOWN_CA ||
		     alert == SSL_AD_ACCESS_DENIED || alert == SSL_AD_DECRYPT_ERROR))
			return "client_rejected_certificate";
		return "tls_handshake_failed";
	}
	if (sslerr == SSL_ERROR_ZERO_RETURN || (sslerr == SSL_ERROR_SYSCALL && e == 0) ||
	    reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
		*detail = "the peer closed the connection during the handshake";
		return "tls_closed";
	}
	if (e)
		*detail = ERR_reason_error_string(e);
	return "tls_handshake_failed";
}

static void hs_step(struct tls_pump *p)
{
	for (;;) {
		int r, e;

		ERR_clear_error();
		r = SSL_do_handshake(p->ssl);
		if (r == 1) {
			p->handshaking = false;
			arm(p->tev_r, false);
			arm(p->tev_w, false);
			p->cb(p->arg, NULL, NULL);
			return;
		}
		e = SSL_get_error(p->ssl, r);
		if (e == SSL_ERROR_WANT_READ) {
			if (prefix_drained(p))
				continue;
			arm(p->tev_w, false);
			arm(p->tev_r, true);
			return;
		}
		if (e == SSL_ERROR_WANT_WRITE) {
			arm(p->tev_r, false);
			arm(p->tev_w, true);
			return;
		}
		{
			const char *detail = NULL;
			const char *why = hs_reason(p, e, &detail);

			arm(p->tev_r, false);
			arm(p->tev_w, false);
			log_debug("TLS handshake (%s): %s: %s", SSL_is_server(p->ssl) ? "client side" : "upstream",
				  why, detail ? detail : "-");
			ERR_clear_error();
			p->cb(p->arg, why, detail);   /* (frees p) */
			return;
		}
	}
}

static void pump_run(struct tls_pump *p);

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	struct tls_pump *p = arg;

	if (p->handshaking)
		hs_step(p);
	else
		pump_run(p);
}

static void on_linger(evutil_socket_t fd, short what, void *arg)
{
	/* our close_notify went out long ago; the peer says nothing */
	tls_pump_free(arg);
}

struct tls_pump *tls_pump_new(struct event_base *base, SSL *ssl, int fd, const char *initial,
			      size_t initial_len, tls_pump_hs_cb cb, void *arg)
{
	struct tls_pump *p = calloc(1, sizeof(*p));
	BIO *rb = NULL, *wb = NULL;

	if (!p)
		return NULL;
	p->base = base;
	p->tfd = fd;
	p->pfd = -1;
	p->cb = cb;
	p->arg = arg;
	p->handshaking = true;
	p->tev_r = event_new(base, fd, EV_READ | EV_PERSIST, on_event, p);
	p->tev_w = event_new(base, fd, EV_WRITE | EV_PERSIST, on_event, p);
	if (initial_len) {
		rb = BIO_new(BIO_s_mem());
		if (rb) {
			BIO_set_mem_eof_return(rb, -1);   /* empty means "retry", not EOF */
			if (BIO_write(rb, initial, (int)initial_len) != (int)initial_len) {
				BIO_free(rb);
				rb = NULL;
			}
		}
		p->prefix = rb;
	} else {
		rb = BIO_new_socket(fd, BIO_NOCLOSE);
	}
	wb = BIO_new_socket(fd, BIO_NOCLOSE);
	if (!p->tev_r || !p->tev_w || !rb || !wb) {
		BIO_free(rb);
		BIO_free(wb);
		if (p->tev_r)
			event_free(p->tev_r);
		if (p->tev_w)
			event_free(p->tev_w);
		free(p);
		return NULL;
	}
	live++;
	p->next = pumps;
	if (pumps)
		pumps->prev = p;
	pumps = p;
	p->ssl = ssl;
	SSL_set0_rbio(ssl, rb);
	SSL_set0_wbio(ssl, wb);
	/* SSL_write may be retried with the buffer moved on, and returns
	 * what fitted */
	SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* the first step from the event loop (the ClientHello is usually
	 * here already, and the callback may free the pump): never before
	 * the caller holds the pointer */
	event_active(p->tev_r, EV_READ, 1);
	return p;
}

/* The relay failed: both sides go. */
static void pump_fail(struct tls_pump *p, const char *what)
{
	log_debug("inspected TLS relay: %s", what);
	tls_pump_free(p);
}

static void pump_run(struct tls_pump *p)
{
	bool progress = true, want_tr = false, want_tw = false, want_pr = false, want_pw = false;

	while (progress) {
		progress = false;
		want_tr = want_tw = want_pr = want_pw = false;

		/* TLS -> plaintext */
		if (!p->d_done) {
			if (p->doff == p->dlen && !p->d_eof) {
				int r, e;

				p->doff = p->dlen = 0;
				if (!p->dbuf && !(p->dbuf = malloc(PUMP_BUF)))
					{ pump_fail(p, "out of memory"); return; }
				ERR_clear_error();
				r = SSL_read(p->ssl, p->dbuf, PUMP_BUF);
				if (r > 0) {
					p->dlen = (size_t)r;
					progress = true;
				} else {
					e = SSL_get_error(p->ssl, r);
					if (e == SSL_ERROR_WANT_READ) {
						if (prefix_drained(p))
							progress = true;
						else
							want_tr = true;
					} else if (e == SSL_ERROR_WANT_WRITE) {
						want_tw = true;
					} else if (e == SSL_ERROR_ZERO_RETURN ||
						   (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
						/* close_notify, or an EOF without it
						 * (SSL_OP_IGNORE_UNEXPECTED_EOF), or a reset */
						p->d_eof = true;
						progress = true;
					} else {
						ERR_clear_error();
						{ pump_fail(p, "TLS read failed"); return; }
					}
				}
			}
			if (p->doff < p->dlen) {
				ssize_t n = send(p->pfd, p->dbuf + p->doff, p->dlen - p->doff, MSG_NOSIGNAL);

				if (n > 0) {
					p->doff += (size_t)n;
					progress = true;
				} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
					want_pw = true;
				} else {
					{ pump_fail(p, "plaintext side gone"); return; }
				}
			}
			if (p->d_eof && p->doff == p->dlen) {
				(void)shutdown(p->pfd, SHUT_WR);
				p->d_done = true;
				progress = true;
			}
		}

		/* plaintext -> TLS */
		if (!p->u_done) {
			if (p->uoff == p->ulen && !p->u_eof) {
				ssize_t n;

				p->uoff = p->ulen = 0;
				if (!p->ubuf && !(p->ubuf = malloc(PUMP_BUF)))
					{ pump_fail(p, "out of memory"); return; }
				n = recv(p->pfd, p->ubuf, PUMP_BUF, 0);
				if (n > 0) {
					p->ulen = (size_t)n;
					progress = true;
				} else if (n == 0 || (errno == ECONNRESET)) {
					p->u_eof = true;
					progress = true;
				} else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
					want_pr = true;
				} else {
					{ pump_fail(p, "plaintext read failed"); return; }
				}
			}
			if (p->uoff < p->ulen) {
				int r, e;

				ERR_clear_error();
				r = SSL_write(p->ssl, p->ubuf + p->uoff, (int)(p->ulen - p->uoff));
				if (r > 0) {
					p->uoff += (size_t)r;
					progress = true;
				} else {
					e = SSL_get_error(p->ssl, r);
					if (e == SSL_ERROR_WANT_WRITE)
						want_tw = true;
					else if (e == SSL_ERROR_WANT_READ)
						want_tr = true;
					else {
						ERR_clear_error();
						{ pump_fail(p, "TLS write failed"); return; }
					}
				}
			}
			if (p->u_eof && p->uoff == p->ulen) {
				struct timeval tv = { PUMP_LINGER, 0 };

				ERR_clear_error();
				(void)SSL_shutdown(p->ssl);   /* our close_notify */
				ERR_clear_error();
				(void)shutdown(p->tfd, SHUT_WR);
				p->u_done = true;
				progress = true;
				if (!p->d_done) {
					p->timer = evtimer_new(p->base, on_linger, p);
					if (!p->timer)
						{ pump_fail(p, "out of memory"); return; }
					evtimer_add(p->timer, &tv);
				}
			}
		}
		if (p->d_done && p->u_done) {
			tls_pump_free(p);
			return;
		}
	}
	/* an idle direction holds no buffer */
	if (p->doff == p->dlen && p->dbuf && !SSL_pending(p->ssl)) {
		free(p->dbuf);
		p->dbuf = NULL;
	}
	if (p->uoff == p->ulen && p->ubuf) {
		free(p->ubuf);
		p->ubuf = NULL;
	}
	arm(p->tev_r, want_tr);
	arm(p->tev_w, want_tw);
	arm(p->pev_r, want_pr);
	arm(p->pev_w, want_pw);
}

void tls_pump_relay(struct tls_pump *p, int plain_fd)
{
	p->pfd = plain_fd;
	p->handshaking = false;
	p->pev_r = event_new(p->base, plain_fd, EV_READ | EV_PERSIST, on_event, p);
	p->pev_w = event_new(p->base, plain_fd, EV_WRITE | EV_PERSIST, on_event, p);
	if (!p->pev_r || !p->pev_w) {
		pump_fail(p, "out of memory");
		return;
	}
	pump_run(p);
}
