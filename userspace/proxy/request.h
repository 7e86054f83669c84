/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * request.h - the proxy's HTTP/1.1 request and response logic as pure
 * functions (no sockets, no event loop), so that every framing rule and
 * every policy decision can be unit-tested and fuzzed:
 *
 *   bytes --proxy_head_scan--> head --proxy_request_parse--> proxy_request
 *         --proxy_request_target--> proxy_target --proxy_decide_*--> decision
 *         --proxy_build_request_head--> bytes for the upstream
 *
 * Parsing is http-parser 2.9's (RFC 7230); proxy_head_scan() only finds the
 * end of the head and refuses what http-parser would quietly accept but a
 * downstream server might read differently (bare LF, obs-fold, NUL), i.e.
 * the request-smuggling framings.
 */
#ifndef SLUICE_PROXY_REQUEST_H
#define SLUICE_PROXY_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <http_parser.h>

#include "policy.h"
#include "sni.h"

struct evbuffer;

#define PROXY_MAX_HEADERS 100

/* Limits on what a client may send before the proxy decides. */
struct proxy_limits {
	size_t max_request_line;  /* bytes of the request line incl. CRLF; over -> 414 */
	size_t max_head;          /* bytes of request line + headers + CRLF; over -> 431 */
	size_t max_headers;       /* header lines; over -> 431 (at most PROXY_MAX_HEADERS) */
};

/* Defaults: 8 KiB request line, 32 KiB head, 100 header lines. */
extern const struct proxy_limits proxy_default_limits;

/* A refusal the proxy answers itself: HTTP status and stable reason. */
struct proxy_refusal {
	int status;
	const char *reason;
};

enum proxy_scan_status {
	PROXY_SCAN_INCOMPLETE = 0,  /* valid so far, read more */
	PROXY_SCAN_COMPLETE,        /* *head_len bytes are the head, CRLF CRLF included */
	PROXY_SCAN_ERROR,           /* *err says why (400, 414 or 431) */
};

/*
 * Find the end of a request head in the bytes received so far and refuse
 * ambiguous framing (RFC 9112 2.2, 5.2, 11.2): a LF not preceded by CR
 * ("bare_lf"), a CR not followed by LF ("bare_cr"), a header line starting
 * with SP/HTAB ("obs_fold"), NUL ("nul_byte"), leading empty lines, and the
 * limits in `lim` (414 "uri_too_long", 431 "headers_too_large").
 * `strict` false is for responses from upstream: bare LF and obs-fold are
 * tolerated there (http-parser reads them), limits still apply.
 */
enum proxy_scan_status proxy_head_scan(const char *buf, size_t len, const struct proxy_limits *lim,
				       bool strict, size_t *head_len, struct proxy_refusal *err);

/*
 * Run http-parser over the start of a request head that is not complete yet,
 * to refuse early what can never become a request: returns 0 while the
 * bytes are a valid prefix, or -1 with *err (400 "unrecognised_protocol"
 * for a bad method token, e.g. an SSH banner; else "malformed_request").
 */
int proxy_request_precheck(const char *buf, size_t len, struct proxy_refusal *err);

struct proxy_header {
	const char *name;     /* points into the head; not NUL-terminated */
	size_t name_len;
	const char *value;    /* optional whitespace trimmed */
	size_t value_len;
};

typedef void (*proxy_body_cb)(void *arg, const char *data, size_t len);

/* A parsed request head.  Pointers point into the head passed to
 * proxy_request_parse(), which must outlive the struct. */
struct proxy_request {
	http_parser parser;            /* kept for proxy_body_feed() */
	enum http_method method_id;
	const char *method;            /* "GET", ... (static) */
	const char *target;            /* request-target, NUL-terminated copy in `target_buf` */
	char *target_buf;              /* malloc'd; freed by proxy_request_free() */
	size_t target_len;
	unsigned http_major, http_minor;
	struct proxy_header headers[PROXY_MAX_HEADERS];
	size_t n_headers;
	const struct proxy_header *host;  /* the Host header, or NULL */
	bool has_content_length;
	uint64_t content_length;
	bool chunked;                  /* Transfer-Encoding: chunked */
	bool message_complete;         /* the head was the whole message (no body) */
	bool keep_alive;               /* the client asks to keep the connection (HTTP/1.1
					* without "Connection: close", or 1.0 with keep-alive) */
	bool in_value;                 /* parser state: last callback was a header value */
	bool websocket;                /* set by the caller once a WebSocket upgrade is allowed
					* (websocket.c): the rebuilt head asks for it
					* ("Connection: Upgrade", "Upgrade: websocket") */
	/* body streaming (proxy_body_feed) */
	proxy_body_cb body_cb;
	void *body_arg;
};

/*
 * Parse a complete head (as delimited by proxy_head_scan) with http-parser
 * and validate framing: more than one Content-Length
 * ("duplicate_content_length"), a non-digit Content-Length
 * ("bad_content_length"), Transfer-Encoding other than exactly one
 * "chunked" or on HTTP/1.0 ("bad_transfer_encoding"), both
 * ("cl_te_conflict"), more than one Host ("duplicate_host"), control bytes
 * in values ("bad_header_value"), HTTP versions other than 1.0/1.1
 * ("http_version").  Returns 0, or -1 with *err (status 400).  Free with
 * proxy_request_free() in both cases.
 */
int proxy_request_parse(struct proxy_request *req, const char *head, size_t head_len,
			struct proxy_refusal *err);

void proxy_request_free(struct proxy_request *req);

/*
 * The host a request asked for, as far as a head that proxy_request_parse()
 * refused still tells (for the log line of a 400): the authority of an
 * absolute-form target, a CONNECT target, else the Host header; userinfo
 * and port removed, not normalised (as sent).  Call before the head's
 * buffer changes.  Into out (NUL-terminated, cut at len - 1 bytes); returns
 * out, or NULL when the head names no host.
 */
const char *proxy_request_attempted_host(const struct proxy_request *req, char *out, size_t len);

/*
 * Feed body bytes that follow the head.  For each piece of decoded body
 * (chunked framing removed) calls req->body_cb.  Stops exactly at the end of
 * the message: returns the number of bytes consumed (the rest, if any, is
 * not part of this request) and sets *done.  Returns -1 with *err (400
 * "bad_body") on a framing error.  Call with len 0 at EOF.
 */
ssize_t proxy_body_feed(struct proxy_request *req, const char *data, size_t len,
			bool *done, struct proxy_refusal *err);

/* Which header names the proxy never forwards (RFC 9110 7.6.1 hop-by-hop,
 * plus Proxy-* and forwarding headers a client could use to speak to or
 * about proxies), or that the connection's Connection header lists. */
bool proxy_header_dropped(const struct proxy_request *req, const char *name, size_t len);

enum proxy_form {
	PROXY_FORM_TRANSPARENT = 0,    /* the kernel redirected a connection to some server */
	PROXY_FORM_EXPLICIT,           /* the client connected to the proxy (HTTP_PROXY) */
};

#define PROXY_TARGET_MAX 8192

/* Where a request goes, from the request-target and Host. */
struct proxy_target {
	bool is_connect;
	char host[SLUICE_HOST_MAX + 3];   /* as sent (brackets of IPv6 removed); not normalised */
	uint16_t port;
	char path[PROXY_TARGET_MAX];      /* normalised path (sluice_url_path_normalise) */
	char query[PROXY_TARGET_MAX];     /* query without '?', or "" */
	bool has_query;
	bool tls;                         /* inside inspected TLS: scheme https, default port 443
					   * (set by the caller after proxy_request_target) */
};

/*
 * Split a Host header value (`v`, `vlen` bytes, not NUL-terminated) into
 * t->host (as sent, IPv6 brackets removed) and t->port, with http-parser's
 * URL parser on "http://<value>/"; *has_port says whether it named a port
 * (t->port is 0 when not).  Only t->host and t->port are written.  Returns 0,
 * or -1 with *err: empty (400 "missing_host"), userinfo (403), too long
 * (403 "bad_host"), anything else (400 "bad_host_header").
 */
int proxy_split_host_header(const char *v, size_t vlen, struct proxy_target *t,
			    bool *has_port, struct proxy_refusal *err);

/*
 * Did forwarding the request replace its Host header?  An absolute-form
 * request (`GET http://a.example/x`) is sent with "Host: " the URI's
 * authority (RFC 9112 3.2.2), whatever Host the client sent.  True when
 * req has a Host header and target t (from proxy_request_target, t->tls
 * set) came from an absolute URI, and the header names another host
 * (compared ASCII case-insensitively, as sent) or another port (a missing
 * port is the scheme's default), or cannot be parsed.  Pure.
 */
bool proxy_host_replaced(const struct proxy_request *req, const struct proxy_target *t);

/*
 * Work out the target of a request.  Explicit form: CONNECT host:port, or
 * an absolute-URI "http://host[:port]/path" (other schemes 400
 * "scheme_not_supported"; origin-form 400 "not_proxy_request").
 * Transparent form: origin-form with the Host header (or absolute-form); the
 * port is always `orig_port`, a different port in Host/URI is 403
 * "host_port_mismatch"; CONNECT is 400 "unexpected_connect".  Refused:
 * userinfo (403 "userinfo"), fragments (403 "fragment"), a path the policy
 * normaliser refuses (403 "bad_path": %2F, %00, controls, ...), no host
 * (400 "missing_host").  Returns 0 or -1 with *err.
 */
int proxy_request_target(const struct proxy_request *req, enum proxy_form form, uint16_t orig_port,
			 struct proxy_target *t, struct proxy_refusal *err);

/*
 * Does a `cidr` entry of the policy (protocol tcp) contain `addr` and name
 * `port`?  Such an entry makes a special-purpose address dialable: the
 * kernel lets the sandbox reach it directly anyway.
 */
bool proxy_policy_cidr_allows(const struct sluice_policy *p, int family, const uint8_t *addr,
			      uint16_t port);

/* The decision on one request or tunnel. */
struct proxy_decision {
	bool allow;                    /* the policy allows it */
	bool audit_ok;                 /* a denial audit mode may turn into "would deny" */
	int status;                    /* HTTP status of a denial (403 mostly) */
	const char *reason;            /* stable reason; "allowed" when allowed */
	const struct sluice_entry *entry;  /* the matching entry when allowed */
	char host[SLUICE_HOST_MAX + 1];    /* normalised host name, or the IP literal */
	bool inspect;                  /* TLS to it is terminated and each request decided
					* (proxy_decide_tls) */
	bool ip_literal;               /* host is an IP literal (canonical) */
	int ip_family;                 /* AF_INET/AF_INET6 when ip_literal */
	uint8_t ip[16];
};

/*
 * Normalise `host_raw` and decide a host-level request (CONNECT, TLS by
 * SNI): the first HOST entry naming it on `port` (sluice_policy_match_host).
 * IP literals are never matched by host entries (403 "ip_literal"; a
 * non-canonical spelling such as 0x7f.1 is not audit_ok); names the
 * normaliser refuses are 403 "bad_host".  Otherwise 403 "host_not_allowed".
 */
void proxy_decide_host(const struct sluice_policy *p, const char *host_raw, uint16_t port,
		       struct proxy_decision *d);

/*
 * Decide a plain-HTTP request: URL entries (scheme "http", host, port,
 * method, path prefix) first, then HOST entries.  Denials say which part
 * failed: "method_not_allowed" (some URL entry matches the path with another
 * method), "path_not_allowed" (URL entries exist for the host and port, none
 * for the path), else "host_not_allowed".  `method` upper case, `path`
 * normalised.
 */
void proxy_decide_http(const struct sluice_policy *p, const char *host_raw, uint16_t port,
		       const char *method, const char *path, struct proxy_decision *d);

/*
 * Decide TLS to `host_raw` on `port` (a CONNECT target or a transparent
 * connection's SNI).  A name the policy inspects (sluice_policy_inspects:
 * an https:// url entry or an `inspect: true` host entry) is allowed with
 * d->inspect set and d->entry the first entry that makes it inspected:
 * the tunnel is terminated and each request inside decided with
 * proxy_decide_url(p, "https", ...).  Otherwise as proxy_decide_host().
 */
void proxy_decide_tls(const struct sluice_policy *p, const char *host_raw, uint16_t port,
		      struct proxy_decision *d);

/*
 * proxy_decide_http() for either scheme: "http" for plain HTTP, "https"
 * for a request inside inspected TLS (url entries of that scheme, then
 * host entries of the name and port, which allow any path and method).
 */
void proxy_decide_url(const struct sluice_policy *p, const char *scheme, const char *host_raw,
		      uint16_t port, const char *method, const char *path, struct proxy_decision *d);

/*
 * proxy_decide_tls() and proxy_decide_url() for a connection made by the
 * executable `who` (from the flow map; NULL: any program): entries whose
 * `programs:` do not name it do not match, and a denial that an entry for
 * another program would have allowed is 403 "program_not_allowed".
 */
void proxy_decide_tls_for(const struct sluice_policy *p, const struct sluice_exe_id *who, const char *host_raw,
			  uint16_t port, struct proxy_decision *d);
void proxy_decide_url_for(const struct sluice_policy *p, const struct sluice_exe_id *who, const char *scheme,
			  const char *host_raw, uint16_t port, const char *method, const char *path,
			  struct proxy_decision *d);

/*
 * Check a ClientHello against a host-level decision: ECH present (403
 * "ech"), no SNI ("no_sni"), an SNI that does not normalise ("bad_sni"),
 * and for CONNECT (`connect_host` normalised, non-NULL) an SNI that differs
 * from it ("sni_mismatch").  Returns 0 when acceptable, else -1 and fills
 * d->allow/status/reason (d->audit_ok true).  `sni_norm` receives the
 * normalised SNI when there is one (SLUICE_HOST_MAX + 1 bytes).
 */
int proxy_check_hello(const struct sni_result *h, const char *connect_host,
		      char *sni_norm, struct proxy_decision *d);

/*
 * Write the head the proxy sends upstream: "METHOD origin-target
 * HTTP/1.1", the client's headers minus dropped ones (proxy_header_dropped,
 * Host, framing), then "Host: host[:port]", the framing (Content-Length N,
 * or Transfer-Encoding: chunked because proxy_body_feed re-chunks) and,
 * unless `keep_alive` (the proxy means to reuse the upstream connection:
 * HTTP/1.1 is persistent by default), "Connection: close".  Returns 0 or
 * -1 (allocation failure).
 */
int proxy_build_request_head(const struct proxy_request *req, const struct proxy_target *t,
			     const char *host_norm, bool keep_alive, struct evbuffer *out);

/* A header the proxy sets itself (a credential's, docs/policy.md
 * "Credentials"): name and value, neither NUL-terminated nor with CR/LF
 * (checked when the policy and the secret were loaded). */
struct proxy_set_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* proxy_build_request_head() that also sets `set` (NULL: none): every
 * header of the client with that name (any case) is left out, and
 * "name: value" written once instead. */
int proxy_build_request_head_set(const struct proxy_request *req, const struct proxy_target *t,
				 const char *host_norm, bool keep_alive, const struct proxy_set_header *set,
				 struct evbuffer *out);

/* "http://host[:port]/path[?query]" of a target into buf (truncated to
 * len); "https://" when t->tls.  The port is shown when it is not the
 * scheme's default (80, 443). */
const char *proxy_target_url(const struct proxy_target *t, const char *host_norm,
			     char *buf, size_t len);

/* A parsed response head from upstream. */
struct proxy_response {
	http_parser parser;
	int status;
	bool head_request;             /* the request was HEAD: no body follows */
	bool message_complete;
	bool needs_eof;                /* the body ends where the connection does (no
					* Content-Length, not chunked): not delimited */
	bool keep_alive;               /* the origin keeps the connection after this
					* message (and it is delimited) */
	bool in_value;
	bool upgrade;                  /* 101 to a WebSocket (proxy_response_parse_ws) */
	struct proxy_header headers[PROXY_MAX_HEADERS];
	size_t n_headers;
	const char *status_line;       /* first line of the head, without CRLF */
	size_t status_line_len;
};

/*
 * Parse a response head (complete, as delimited by proxy_head_scan with
 * strict false).  1xx heads are complete messages: the caller forwards them
 * and parses the next head.  101 is refused (only the answer to a
 * forwarded WebSocket upgrade may switch: proxy_response_parse_ws).  Returns 0 or -1 with *err (status 502, "bad_upstream_response").
 */
int proxy_response_parse(struct proxy_response *r, const char *head, size_t head_len,
			 bool head_request, struct proxy_refusal *err);

/*
 * proxy_response_parse() for the answer to a forwarded WebSocket upgrade
 * (RFC 6455 4.1): a 101 is accepted when it switches to "websocket"
 * (Upgrade: websocket, Connection: upgrade), and sets r->upgrade: the
 * bytes after the head are the WebSocket's.  Any other 101 is 502
 * "bad_upstream_response"; other statuses as proxy_response_parse().
 */
int proxy_response_parse_ws(struct proxy_response *r, const char *head, size_t head_len,
			    struct proxy_refusal *err);

/*
 * Does the request ask to upgrade to a WebSocket: an Upgrade header one of
 * whose comma-separated protocols is "websocket" (any case)?  Other
 * upgrades (h2c) are not relayed: their Upgrade header is dropped as
 * hop-by-hop and the request forwarded as plain HTTP.
 */
bool proxy_ws_requested(const struct proxy_request *req);

/*
 * A WebSocket upgrade that *d (the request's decision) allows is still
 * refused (403 "upgrade_not_supported", audit_ok) unless the entry that
 * allowed it says `websocket: true` (a host entry never does), the method
 * is GET, the version HTTP/1.1 and the request has no body (RFC 6455 4.1).
 */
void proxy_ws_decide(const struct proxy_request *req, struct proxy_decision *d);

/*
 * Feed response body bytes.  The body is forwarded raw (its framing
 * unchanged), so this only finds where the message ends: returns the number
 * of bytes that belong to it and sets *done at its end.  Call with len 0 at
 * EOF (close-delimited bodies).  Returns -1 with *err (502) on bad framing.
 */
ssize_t proxy_response_feed(struct proxy_response *r, const char *data, size_t len,
			    bool *done, struct proxy_refusal *err);

/* The head sent to the client: the status line with the proxy's own
 * version ("HTTP/1.1", RFC 9110 6.2), the upstream's headers minus
 * hop-by-hop ones, and for a final response "Connection: keep-alive" when
 * `keep_alive` (the client connection stays open for the next request),
 * else "Connection: close".  Returns 0 or -1. */
int proxy_build_response_head(const struct proxy_response *r, bool keep_alive, struct evbuffer *out);

/*
 * A response of the proxy's own: `status` with a short text body, and
 * for a policy denial (403) the reason phrase "Forbidden by sluice policy:
 * <reason>" and `X-Sluice-Denied: reason`, else
 * `X-Sluice-Error: reason`; "Connection: keep-alive" when `keep_alive`,
 * else "Connection: close".
 */
int proxy_error_response(int status, const char *reason, bool keep_alive, struct evbuffer *out);

/* Standard reason phrase of a status code the proxy sends. */
const char *proxy_status_text(int status);

#endif
