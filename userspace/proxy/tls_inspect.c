/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls_inspect.c - TLS inspection for the names the policy inspects
 * (proxy.h, docs/proxy.md "TLS inspection"): the OpenSSL contexts, the
 * client-side termination with a leaf of the sandbox CA (tls_ca.h), and
 * the verified TLS to the origin under inspected requests (kept in the
 * upstream pool for the next request to the same name: upool.h).
 *
 *   client --TLS--> [pump] --plaintext socketpair--> inspected conn
 *        (conn.c/http.c: parse, decide against https:// url entries, log)
 *   inspected conn --plaintext socketpair--> [pump] --TLS, verified--> origin
 *
 * Never a fallback: a client that refuses the leaf, or an origin whose
 * certificate does not verify, ends that connection or request (logged
 * with the reason); nothing is ever relayed undecrypted instead.
 */
#include "proxy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "h2.h"
#include "log.h"
#include "sandbox_ca.h"
#include "tls_ca.h"
#include "tls_pump.h"
#include "upstream_ca.h"

static const unsigned char alpn_http11[] = "\x08http/1.1";
/* towards the sandbox, in our order of preference */
static const unsigned char alpn_server[] = "\x02h2\x08http/1.1";

/* ALPN towards the sandbox: h2 when offered (h2.c), else http/1.1, else no
 * ALPN at all (the client then speaks HTTP/1.1 or gives up). */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *sel = NULL;

	if (SSL_select_next_proto(&sel, outlen, alpn_server, sizeof(alpn_server) - 1, in, inlen) ==
	    OPENSSL_NPN_NEGOTIATED) {
		*out = sel;
		return SSL_TLSEXT_ERR_OK;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

static SSL_CTX *server_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* no resumption: every connection gets the leaf of its own SNI, and
	 * the session keys of one sandbox never outlive a connection */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF |
				 SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
	/* an idle connection keeps no 16 KiB record buffers (bench 8's RSS row) */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return ctx;
}

static SSL_CTX *client_ctx(const char *upstream_ca, const char *ca_pem, size_t ca_len, const char **err)
{
	static char why[256];

	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx) {
		*err = "cannot make the upstream TLS context";
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	/* the host's trust store (the proxy runs in the host's mount
	 * namespace), and a private CA for internal origins */
	if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		*err = "cannot load the host's trust store";
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (upstream_ca && SSL_CTX_load_verify_file(ctx, upstream_ca) != 1) {
		*err = "--upstream-ca: cannot read the CA certificates (PEM) in the file";
		SSL_CTX_free(ctx);
		return NULL;
	}
	/* --upstream-ca-fd: the loader read and checked the files */
	if (ca_pem && sluice_upstream_ca_add(SSL_CTX_get_cert_store(ctx), ca_pem, ca_len, why, sizeof(why)) < 0) {
		*err = why;
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_alpn_protos(ctx, alpn_http11, sizeof(alpn_http11) - 1) != 0) {
		*err = "cannot set ALPN";
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

int proxy_tls_init(struct proxy *px, const char **err)
{
	const char *why = "";

	if (px->cfg.ca_fd >= 0) {
		size_t n = 0;
		char *pem = sluice_read_all(px->cfg.ca_fd, SLUICE_CA_PEM_MAX, &n);

		close(px->cfg.ca_fd);
		px->cfg.ca_fd = -1;
		if (!pem) {
			*err = "--ca-fd: cannot read the sandbox CA";
			return -1;
		}
		/* a policy that inspects nothing needs none */
		if (sluice_policy_has_inspection(px->policy))
			px->ca = n ? proxy_ca_from_pem(pem, n, &why) : NULL;
		explicit_bzero(pem, n);
		free(pem);
		if (!px->ca && sluice_policy_has_inspection(px->policy)) {
			*err = why[0] ? why : "--ca-fd: no CA, but the policy inspects names";
			return -1;
		}
	} else {
		px->ca = proxy_ca_new(px->policy, px->cfg.sandbox, &why);
	}
	if (!px->ca && why[0]) {
		*err = why;
		return -1;
	}
	if (px->ca) {
		px->tls_server = server_ctx();
		if (!px->tls_server) {
			*err = "cannot make the TLS context towards the sandbox";
			return -1;
		}
	}
	/* The context towards origins serves only inspection; the host's
	 * trust store in it is about 0.9 MiB of heap, which a proxy that
	 * inspects nothing does not carry (issue 19: a thousand sandboxes).
	 * --upstream-ca is checked at start all the same. */
	if (px->ca || px->cfg.upstream_ca || px->cfg.upstream_ca_fd >= 0) {
		char *ca_pem = NULL;
		size_t ca_len = 0;

		if (px->cfg.upstream_ca_fd >= 0) {
			ca_pem = sluice_read_all(px->cfg.upstream_ca_fd, SLUICE_UPSTREAM_CA_MAX, &ca_len);
			close(px->cfg.upstream_ca_fd);
			px->cfg.upstream_ca_fd = -1;
			if (!ca_pem) {
				*err = "--upstream-ca-fd: cannot read the CA certificates";
				return -1;
			}
		}
		px->tls_client = client_ctx(px->cfg.upstream_ca, ca_len ? ca_pem : NULL, ca_len, err);
		free(ca_pem);
		if (!px->tls_client)
			return -1;
	}
	if (px->cfg.ca_cert_fd >= 0) {
		size_t n = 0;
		const char *pem = proxy_ca_pem(px->ca, &n);

		/* the public certificate only; nothing (an empty stream) when
		 * the policy inspects no name */
		if (pem && sluice_write_all(px->cfg.ca_cert_fd, pem, n) < 0) {
			*err = "--ca-cert-fd: cannot write the CA certificate";
			return -1;
		}
		close(px->cfg.ca_cert_fd);
		px->cfg.ca_cert_fd = -1;
	}
	return 0;
}

void proxy_tls_free(struct proxy *px)
{
	SSL_CTX_free(px->tls_server);
	SSL_CTX_free(px->tls_client);
	proxy_ca_free(px->ca);
	px->tls_server = px->tls_client = NULL;
	px->ca = NULL;
}

/* --- the client's side ----------------------------------------------------- */

static void on_client_handshake(void *arg, const char *err, const char *detail)
{
	struct conn *c = arg;
	struct tls_pump *p = c->pump;
	SSL *ssl;
	const char *version, *cipher;
	struct conn *in;
	const unsigned char *alpn = NULL;
	unsigned int alpn_len = 0;
	int sv[2];

	if (err) {
		if (detail)
			log_debug("inspected TLS from the sandbox for %s: %s (%s)", c->sni ? c->sni : "?", err, detail);
		c->failed = true;
		c->reason = err;
		conn_finish(c);   /* frees the pump */
		return;
	}
	c->pump = NULL;
	ssl = tls_pump_ssl(p);
	version = SSL_get_version(ssl);
	cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(ssl));
	SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		log_warn("socketpair");
		sv[0] = -1;
		goto fail;
	}
	if (alpn_len == 2 && memcmp(alpn, "h2", 2) == 0) {
		/* each stream becomes an inspected connection of its own */
		if (h2_start(c->px, sv[1], c, version, cipher) < 0)
			goto fail;
	} else {
		in = conn_new_inspected(c->px, sv[1], c);
		if (!in)
			goto fail;
		in->tls_version = version;
		in->tls_cipher = cipher;
	}
	tls_pump_relay(p, sv[0]);
	/* the requests inside log themselves; the terminated connection
	 * leaves no line of its own */
	c->logged = true;
	conn_finish(c);
	return;
fail:
	if (sv[0] >= 0)
		close(sv[0]);
	tls_pump_free(p);
	c->failed = true;
	c->reason = "out_of_memory";
	conn_finish(c);
}

void inspect_start(struct conn *c)
{
	struct proxy *px = c->px;
	SSL *ssl;
	X509 *leaf;

	if (!px->ca || !px->tls_server || !c->sni) {
		c->failed = true;
		c->reason = "internal_error";
		conn_finish(c);
		return;
	}
	/* the name was decided (proxy_decide_tls) before any certificate
	 * exists for it: a denied SNI never gets one */
	leaf = proxy_ca_leaf(px->ca, c->sni);
	ssl = leaf ? SSL_new(px->tls_server) : NULL;
	if (!ssl || SSL_use_certificate(ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(ssl, proxy_ca_leaf_key(px->ca)) != 1) {
		SSL_free(ssl);
		ERR_clear_error();
		c->failed = true;
		c->reason = "certificate_error";
		conn_finish(c);
		return;
	}
	SSL_set_accept_state(ssl);
	/* the client socket belongs to the pump from here on */
	conn_drop_events(c);
	if (c->ufd >= 0) {
		close(c->ufd);
		c->ufd = -1;
	}
	c->pump = tls_pump_new(px->base, ssl, c->cfd, c->buf, c->len, on_client_handshake, c);
	if (!c->pump) {
		SSL_free(ssl);
		c->failed = true;
		c->reason = "out_of_memory";
		conn_finish(c);
		return;
	}
	c->cfd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
	c->phase = PH_TLS_ACCEPT;
	/* the handshake must end within --header-timeout */
	event_del(c->timer);
	event_add(c->timer, &px->tv_header);
}

/* --- the origin's side ------------------------------------------------------- */

static void on_upstream_handshake(void *arg, const char *err, const char *detail)
{
	struct conn *c = arg;
	struct tls_pump *p = c->pump;
	int sv[2];

	c->pump = NULL;
	if (err) {
		/* never relayed undecrypted instead: 502, one line */
		if (strcmp(err, "upstream_cert_invalid") == 0)
			log_warnx("%s: the origin's certificate does not verify: %s", c->host ? c->host : "?",
				  detail ? detail : "?");
		else
			log_debug("TLS to %s: %s (%s)", c->host ? c->host : "?", err, detail ? detail : "-");
		tls_pump_free(p);
		conn_fail(c, 502, strcmp(err, "upstream_cert_invalid") == 0 ? err : "upstream_tls_failed");
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		tls_pump_free(p);
		conn_fail(c, 503, "out_of_memory");
		return;
	}
	tls_pump_relay(p, sv[0]);
	c->ufd = sv[1];
	event_del(c->timer);
	c->phase = PH_HTTP;
	http_start(c);
}

void inspect_upstream(struct conn *c)
{
	struct proxy *px = c->px;
	SSL *ssl;

	if (!px->tls_client) {   /* no inspection: never called (proxy_tls_init) */
		conn_fail(c, 502, "upstream_tls_failed");
		return;
	}
	ssl = SSL_new(px->tls_client);

	/* SNI and the name to verify: the decided (normalised) host */
	if (!ssl || SSL_set_tlsext_host_name(ssl, c->host) != 1 || SSL_set1_host(ssl, c->host) != 1) {
		SSL_free(ssl);
		ERR_clear_error();
		conn_fail(c, 503, "out_of_memory");
		return;
	}
	X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	SSL_set_connect_state(ssl);
	c->pump = tls_pump_new(px->base, ssl, c->ufd, NULL, 0, on_upstream_handshake, c);
	if (!c->pump) {
		SSL_free(ssl);
		conn_fail(c, 503, "out_of_memory");
		return;
	}
	c->ufd = -1;
	c->phase = PH_CONNECT;
	event_del(c->timer);
	event_add(c->timer, &px->tv_connect);
}
