/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.c - forwarding one decided plain-HTTP request.  The upstream gets the
 * rebuilt head (origin-form, hop-by-hop and proxy headers dropped) and the
 * body re-framed by the proxy (chunked bodies are decoded and re-chunked, so
 * only the proxy's framing reaches the origin).  The response head is
 * rebuilt the same way; its body is passed through as is while http-parser
 * finds its end.
 *
 * Then each side is kept only when it is safe to: the upstream connection
 * goes back to the pool (upool.h) only after a response that was delimited
 * (Content-Length or chunked) and complete, with the request sent whole and
 * not a byte more from the origin; the client connection stays open for its
 * next request (conn_keepalive) only when it asked for that, its request was
 * read whole and the response was delimited.  Otherwise "Connection: close".
 *
 * I/O: one persistent read event per socket (the connection's c->rev,
 * whose callback follows the phase, and the upstream socket's c->uio, whose
 * handler goes to the pool with the socket), so that a socket stays
 * registered with epoll from one phase and one request to the next; bytes
 * are written at once when they are queued, and a write event exists only
 * while a socket does not take them.  A small request and its response cost
 * a read and a write on each side, and no epoll_ctl.
 */
#include "proxy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "upool.h"

#define HTTP_HIGH_WATER (256 * 1024)   /* queued bytes before reading the other side pauses */
#define HTTP_READ_MAX   (16 * 1024)    /* one read */

static const struct proxy_limits response_limits = {
	.max_request_line = 16384,   /* the status line */
	.max_head = 65536,
	.max_headers = PROXY_MAX_HEADERS,
};

struct conn_http {
	struct evbuffer *up_out;       /* for the upstream, not yet taken by its socket */
	struct evbuffer *up_in;        /* from the upstream, not yet used */
	struct evbuffer *cl_out;       /* for the client, not yet taken */
	struct evbuffer *cl_in;        /* from the client after the head: body, then the next request */
	struct event *up_wev;          /* writable: only while up_out waits */
	struct event *cl_wev;          /* writable: only while cl_out waits */
	struct proxy_response resp;
	bool up_reading;               /* c->uio is added */
	bool req_done;
	bool resp_head_done;
	bool resp_done;
	bool sent_any;                 /* response bytes were queued for the client */
	bool got_any;                  /* bytes came from the upstream */
	bool head_request;
	bool up_keep;                  /* the upstream was offered a persistent connection */
	bool client_keep;              /* the client was told "keep-alive" */
	bool client_eof;               /* the client half-closed after its request */
	bool ws_switch;                /* the origin switched to the WebSocket: relay once cl_out is out */
	size_t echo_scanned;           /* response bytes looked at for an echoed secret */
	/* request body bytes looked at for a misdirected placeholder, the
	 * last bytes of the previous part (a placeholder split between two
	 * parts), and the credential whose placeholder was found */
	size_t body_scanned;
	char ph_tail[SLUICE_PLACEHOLDER_LEN];
	size_t ph_tail_len;
	const struct sluice_secret *body_ph;
};

#define HTTP_BODY_SCAN_MAX (1024 * 1024)  /* request body bytes scanned for placeholders */

#define HTTP_ECHO_SCAN_MAX (1024 * 1024)  /* response bytes scanned for an echoed secret */

/*
 * A response to a request that carried a credential may echo the secret
 * (a debugging endpoint, an error page quoting the header).  Each
 * occurrence in the first HTTP_ECHO_SCAN_MAX bytes of `n` bytes at `p`
 * (writable: the head or body bytes in up_in) is overwritten byte for byte
 * with the credential's placeholder (cut, or padded with '*', to the
 * secret's length: the framing stays exact).  Logged as credential_echoed.
 */
static void redact_echo(struct conn *c, char *p, size_t n)
{
	const struct proxy_cred *cr = c->cred;
	const struct sluice_secret *s = cr ? cr->secret : NULL;
	struct conn_http *h = c->http;
	struct sluice_secrets one;
	size_t at = 0, off = 0;

	if (!s || !s->value || h->echo_scanned >= HTTP_ECHO_SCAN_MAX)
		return;
	if (n > HTTP_ECHO_SCAN_MAX - h->echo_scanned)
		n = HTTP_ECHO_SCAN_MAX - h->echo_scanned;
	one.v = (struct sluice_secret *)s;
	one.n = 1;
	while (off < n && sluice_secrets_find_value(&one, p + off, n - off, &at)) {
		char *q = p + off + at;

		for (size_t i = 0; i < s->len; i++)
			q[i] = i < SLUICE_PLACEHOLDER_LEN ? s->placeholder[i] : '*';
		off += at + s->len;
		c->cred_event = "credential_echoed";
	}
}

static void on_upstream_io(void *owner, short what);
static void on_client_writable(evutil_socket_t fd, short what, void *arg);
static void on_upstream_writable(evutil_socket_t fd, short what, void *arg);

void http_free(struct conn *c)
{
	struct conn_http *h = c->http;

	if (!h)
		return;
	if (h->up_wev)
		event_free(h->up_wev);
	if (h->cl_wev)
		event_free(h->cl_wev);
	if (h->up_out)
		evbuffer_free(h->up_out);
	if (h->up_in)
		evbuffer_free(h->up_in);
	if (h->cl_out)
		evbuffer_free(h->cl_out);
	if (h->cl_in)
		evbuffer_free(h->cl_in);
	/* (the read events are the connection's) */
	free(h);
	c->http = NULL;
}

struct evbuffer *http_client_input(struct conn *c)
{
	return c->http ? c->http->cl_in : NULL;
}

void http_upstream_reset(struct conn *c)
{
	struct conn_http *h = c->http;

	if (!h)
		return;
	if (h->up_wev) {
		event_free(h->up_wev);
		h->up_wev = NULL;
	}
	proxy_io_free(c->uio);
	c->uio = NULL;
	h->up_reading = false;
	evbuffer_drain(h->up_out, evbuffer_get_length(h->up_out));
	evbuffer_drain(h->up_in, evbuffer_get_length(h->up_in));
	h->resp_head_done = h->resp_done = h->got_any = false;
}

static void touch(struct conn *c)
{
	/* the idle timeout counts from the last byte moved */
	event_add(c->timer, &c->px->tv_idle);
}

static void client_reading(struct conn *c, bool on)
{
	conn_client_reading(c, on);
}

static void upstream_reading(struct conn *c, bool on)
{
	struct conn_http *h = c->http;

	if (on == h->up_reading || !c->uio)
		return;
	h->up_reading = on;
	if (on)
		event_add(c->uio, NULL);
	else
		event_del(c->uio);
}

/* Read what is there into `buf` (through the stack: no buffer space is
 * held for a read that finds nothing).  Returns bytes read, 0 at EOF, -1
 * when there is nothing now (EAGAIN), -2 on an error. */
static ssize_t read_into(int fd, struct evbuffer *buf)
{
	char tmp[HTTP_READ_MAX];
	ssize_t n = recv(fd, tmp, sizeof(tmp), 0);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
	if (n > 0 && evbuffer_add(buf, tmp, (size_t)n) < 0)
		return -2;
	return n;
}

/* Write what `out` holds to `fd` now; what the socket does not take waits
 * for `*wev` (created on demand).  Returns 0, or -1 on a socket error. */
static int flush(struct conn *c, int fd, struct evbuffer *out, struct event **wev,
		 event_callback_fn cb)
{
	while (evbuffer_get_length(out)) {
		int n = evbuffer_write(out, fd);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -1;
			break;
		}
		if (n == 0)
			break;
	}
	if (evbuffer_get_length(out)) {
		if (!*wev) {
			*wev = event_new(c->px->base, fd, EV_WRITE | EV_PERSIST, cb, c);
			if (!*wev)
				return -1;
		}
		if (!event_pending(*wev, EV_WRITE, NULL))
			event_add(*wev, NULL);
	} else if (*wev && event_pending(*wev, EV_WRITE, NULL)) {
		event_del(*wev);
	}
	return 0;
}

/* End with an error: our own answer if the client has seen nothing yet. */
static void http_abort(struct conn *c, int status, const char *reason)
{
	if (!c->http->sent_any) {
		http_free(c);
		conn_reply(c, status, reason);
		return;
	}
	c->failed = true;
	c->reason = reason;
	conn_finish(c);
}

/* The response is out, all of it: keep the client connection or close it. */
static void http_complete(struct conn *c)
{
	struct conn_http *h = c->http;

	if (h->client_keep && !h->client_eof)
		conn_keepalive(c);
	else
		conn_done(c);
}

/*
 * A pooled connection the origin closed while it sat idle (the close and
 * our request crossed): nothing came back, so nothing was processed that we
 * know of.  Only a request without a body and with a safe method is sent
 * again, once, on a new connection.
 */
bool http_replayable(const struct conn *c)
{
	enum http_method m = c->req->method_id;

	return c->req->message_complete && (m == HTTP_GET || m == HTTP_HEAD || m == HTTP_OPTIONS);
}

static bool retry_allowed(const struct conn *c)
{
	const struct conn_http *h = c->http;

	return c->reused && !c->retried && !h->got_any && !h->sent_any && http_replayable(c);
}

/* The upstream socket failed (`reason`): try again, or give up. */
static void upstream_failed(struct conn *c, int status, const char *reason)
{
	if (!c->http->resp_head_done && retry_allowed(c)) {
		conn_redial(c);
		return;
	}
	http_abort(c, status, reason);
}

/* Returns false when the connection was ended. */
static bool flush_upstream(struct conn *c)
{
	struct conn_http *h = c->http;

	if (c->ufd < 0)
		return true;
	if (flush(c, c->ufd, h->up_out, &h->up_wev, on_upstream_writable) < 0) {
		upstream_failed(c, 502, "upstream_error");
		return false;
	}
	/* the upstream takes the body again: read the client again */
	if (!h->req_done && !h->client_eof && evbuffer_get_length(h->up_out) <= HTTP_HIGH_WATER)
		client_reading(c, true);
	return true;
}

/* Returns false when the connection was ended (or completed). */
static bool flush_client(struct conn *c)
{
	struct conn_http *h = c->http;

	if (flush(c, c->cfd, h->cl_out, &h->cl_wev, on_client_writable) < 0) {
		c->failed = true;
		c->reason = "client_error";
		conn_finish(c);
		return false;
	}
	if (evbuffer_get_length(h->cl_out))
		return true;
	if (h->ws_switch) {
		/* the 101 and the origin's first WebSocket bytes are out */
		ws_relay_start(c, h->cl_in);
		return false;
	}
	if (h->resp_done) {
		http_complete(c);
		return false;
	}
	if (!h->resp_done)
		upstream_reading(c, true);
	return true;
}

/* Request body bytes, decoded by http-parser: re-framed toward upstream. */
/*
 * A placeholder of a credential this request does not carry, in the first
 * HTTP_BODY_SCAN_MAX bytes of its body (also across two parts)?  Then the
 * part is held back and feed_request() refuses the request: the origin
 * got at most the head and the body before it, never the placeholder, and
 * an incomplete request.
 */
static bool body_misdirected(struct conn *c, const char *data, size_t len)
{
	struct conn_http *h = c->http;
	const size_t keep = SLUICE_PLACEHOLDER_LEN - 1;
	const struct sluice_secret *s;

	if (!c->px->secrets.n || h->body_scanned >= HTTP_BODY_SCAN_MAX)
		return false;
	s = proxy_cred_misdirected(c->px, c->cred, data, len);
	if (!s && h->ph_tail_len) {
		char joined[2 * SLUICE_PLACEHOLDER_LEN];
		size_t k = len < keep ? len : keep;

		memcpy(joined, h->ph_tail, h->ph_tail_len);
		memcpy(joined + h->ph_tail_len, data, k);
		s = proxy_cred_misdirected(c->px, c->cred, joined, h->ph_tail_len + k);
	}
	if (s) {
		h->body_ph = s;
		return true;
	}
	if (len >= keep) {
		memcpy(h->ph_tail, data + len - keep, keep);
		h->ph_tail_len = keep;
	} else {
		size_t drop = h->ph_tail_len + len > keep ? h->ph_tail_len + len - keep : 0;

		memmove(h->ph_tail, h->ph_tail + drop, h->ph_tail_len - drop);
		memcpy(h->ph_tail + h->ph_tail_len - drop, data, len);
		h->ph_tail_len = h->ph_tail_len - drop + len;
	}
	h->body_scanned += len;
	return false;
}

static void body_out(void *arg, const char *data, size_t len)
{
	struct conn *c = arg;
	struct evbuffer *out = c->http->up_out;

	if (c->http->resp_done || c->http->body_ph)
		return;   /* the response is already complete: the connection closes */
	if (body_misdirected(c, data, len))
		return;
	if (c->req->chunked) {
		evbuffer_add_printf(out, "%zx\r\n", len);
		evbuffer_add(out, data, len);
		evbuffer_add(out, "\r\n", 2);
	} else {
		evbuffer_add(out, data, len);
	}
}

static void request_done(struct conn *c)
{
	struct conn_http *h = c->http;

	h->req_done = true;
	if (c->req->chunked && !h->resp_done)
		evbuffer_add(h->up_out, "0\r\n\r\n", 5);
}

/* Feed the client's bytes (cl_in) into the request until it is complete.
 * Returns false when the connection was ended. */
static bool feed_request(struct conn *c)
{
	struct conn_http *h = c->http;

	while (!h->req_done && evbuffer_get_length(h->cl_in)) {
		struct proxy_refusal err = { 400, "bad_body" };
		struct evbuffer_iovec v;
		bool done = false;
		ssize_t used;

		if (evbuffer_peek(h->cl_in, -1, NULL, &v, 1) < 1)
			break;
		used = proxy_body_feed(c->req, v.iov_base, v.iov_len, &done, &err);
		if (used < 0) {
			http_abort(c, err.status, err.reason);
			return false;
		}
		if (h->body_ph) {
			/* exfiltration of a placeholder in the body (body_misdirected) */
			c->cred_name = h->body_ph->name;
			c->cred = NULL;
			c->severity_high = true;
			c->verdict = "deny";
			http_abort(c, 403, "credential_misdirected");
			return false;
		}
		evbuffer_drain(h->cl_in, (size_t)used);
		c->req_bytes += used;
		if (done)
			request_done(c);
		else if ((size_t)used < v.iov_len)
			break;
	}
	return true;
}

/*
 * The client's bytes.  While the request's body comes, they go upstream;
 * after the request they are the next request's (pipelining): kept, up to
 * a head's worth, and read only when the response is out (requests on one
 * connection are served one after the other).
 */
void http_client_readable(struct conn *c)
{
	struct conn_http *h = c->http;
	ssize_t n = read_into(c->cfd, h->cl_in);

	if (n == -1)
		return;
	if (n == 0 && h->req_done) {
		/* the client half-closed after its request: answer, then close */
		h->client_eof = true;
		client_reading(c, false);
		return;
	}
	if (n <= 0) {
		c->failed = true;
		c->reason = n == 0 ? "client_closed" : "client_error";
		conn_finish(c);
		return;
	}
	touch(c);
	if (h->req_done) {
		if (evbuffer_get_length(h->cl_in) > c->px->cfg.limits.max_head)
			client_reading(c, false);
		return;
	}
	if (!feed_request(c) || !flush_upstream(c))
		return;
	if (h->req_done || evbuffer_get_length(h->up_out) > HTTP_HIGH_WATER) {
		/* done (what follows waits for the response), or the upstream
		 * is slow: pause */
		if (!h->req_done || evbuffer_get_length(h->cl_in) > c->px->cfg.limits.max_head)
			client_reading(c, false);
	}
}

static void on_upstream_writable(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	touch(c);
	flush_upstream(c);
}

static void on_client_writable(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	touch(c);
	flush_client(c);
}

static void response_done(struct conn *c)
{
	struct conn_http *h = c->http;
	struct proxy *px = c->px;
	bool reuse = px->upool && h->up_keep && h->resp.keep_alive && h->req_done &&
		     evbuffer_get_length(h->up_in) == 0 && evbuffer_get_length(h->up_out) == 0;

	h->resp_done = true;
	/* the upstream side is finished: back to the pool (with its read
	 * event, so that the socket stays registered), or closed */
	if (h->up_wev) {
		event_free(h->up_wev);
		h->up_wev = NULL;
	}
	if (reuse) {
		if (!h->up_reading && c->uio)
			event_add(c->uio, NULL);   /* the pool watches it */
		proxy_upool_put(px->upool, c->ufd, c->uio, &c->dst.sa, c->host, c->inspected);
	} else {
		proxy_io_free(c->uio);
		close(c->ufd);
	}
	h->up_reading = false;
	c->uio = NULL;
	c->ufd = -1;
	if (!h->req_done)
		client_reading(c, false);   /* the rest of the body is not needed: the connection closes */
	flush_client(c);
}

/* The origin answered 101 to the WebSocket upgrade (its `hl`-byte head
 * at the start of up_in): the 101 and what followed it go to the client,
 * nothing more is read here; once they are out, ws_relay_start().
 * Returns 2. */
static int ws_switch(struct conn *c, size_t hl)
{
	struct conn_http *h = c->http;
	size_t before = evbuffer_get_length(h->cl_out);

	if (proxy_build_response_head(&h->resp, false, h->cl_out) < 0) {
		http_abort(c, 503, "out_of_memory");
		return -1;
	}
	h->sent_any = true;
	evbuffer_drain(h->up_in, hl);
	c->resp_bytes += (int64_t)(evbuffer_get_length(h->cl_out) - before + evbuffer_get_length(h->up_in));
	evbuffer_add_buffer(h->cl_out, h->up_in);
	c->status = 101;
	h->resp_head_done = true;
	h->ws_switch = true;
	upstream_reading(c, false);
	return 2;
}

/* Parse response heads (1xx ones are passed on, then the final one).
 * Returns 1 when the final head is through, 2 when the origin switched to
 * a WebSocket (ws_switch), 0 to wait, -1 when ended. */
static int read_response_head(struct conn *c)
{
	struct conn_http *h = c->http;
	struct evbuffer *in = h->up_in;
	struct evbuffer *out = h->cl_out;

	for (;;) {
		struct proxy_refusal err = { 502, "bad_upstream_response" };
		size_t len = evbuffer_get_length(in), want, hl = 0, before;
		const char *p;
		bool keep = false;

		if (len == 0)
			return 0;
		want = len < response_limits.max_head + 1 ? len : response_limits.max_head + 1;
		p = (const char *)evbuffer_pullup(in, (ssize_t)want);
		if (!p) {
			http_abort(c, 503, "out_of_memory");
			return -1;
		}
		switch (proxy_head_scan(p, want, &response_limits, false, &hl, &err)) {
		case PROXY_SCAN_INCOMPLETE:
			return 0;
		case PROXY_SCAN_ERROR:
			http_abort(c, 502, "bad_upstream_response");
			return -1;
		case PROXY_SCAN_COMPLETE:
			break;
		}
		/* the head is ours to rewrite until it is parsed (pullup'd memory) */
		redact_echo(c, (char *)p, hl);
		if ((c->req->websocket ? proxy_response_parse_ws(&h->resp, p, hl, &err)
				       : proxy_response_parse(&h->resp, p, hl, h->head_request, &err)) < 0) {
			http_abort(c, 502, err.reason);
			return -1;
		}
		if (h->resp.upgrade)
			return ws_switch(c, hl);
		if (c->req->websocket && h->resp.status >= 200) {
			/* the origin did not switch: its answer goes to the
			 * client, the line says what happened */
			c->failed = true;
			c->reason = "upgrade_refused";
		}
		if (h->resp.status >= 200) {
			/* the client connection may stay: it asked to, its request
			 * is read whole, and this response has a delimited body */
			keep = c->px->cfg.keepalive_timeout_ms && c->req->keep_alive && h->req_done &&
			       !h->client_eof && !h->resp.needs_eof;
			h->client_keep = keep;
		}
		before = evbuffer_get_length(out);
		if (proxy_build_response_head(&h->resp, keep, out) < 0) {
			http_abort(c, 503, "out_of_memory");
			return -1;
		}
		h->sent_any = true;
		c->resp_bytes += (int64_t)(evbuffer_get_length(out) - before);
		evbuffer_drain(in, hl);
		if (h->resp.status >= 200) {
			c->status = h->resp.status;
			h->resp_head_done = true;
			return 1;
		}
	}
}

/* What came from upstream: the head, then the body up to its end. */
static void process_response(struct conn *c)
{
	struct conn_http *h = c->http;
	struct evbuffer *in = h->up_in;

	if (!h->resp_head_done) {
		int r = read_response_head(c);

		if (r < 0)
			return;   /* ended */
		if (r == 2) {
			flush_client(c);   /* then the relay */
			return;
		}
		if (r == 0) {
			if (evbuffer_get_length(h->cl_out))
				flush_client(c);   /* a 1xx */
			return;
		}
		if (h->resp.message_complete) {
			response_done(c);
			return;
		}
	}
	while (!h->resp_done && evbuffer_get_length(in)) {
		struct proxy_refusal err = { 502, "bad_upstream_response" };
		struct evbuffer_iovec v;
		bool done = false;
		ssize_t used;

		if (c->cred && h->echo_scanned < HTTP_ECHO_SCAN_MAX) {
			/* one contiguous run of what is here (a secret split
			 * across two upstream reads whose first part was already
			 * passed on is not seen: docs/threat-model.md) */
			size_t len = evbuffer_get_length(in);
			char *p = (char *)evbuffer_pullup(in, (ssize_t)len);

			if (p)
				redact_echo(c, p, len);
		}
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		used = proxy_response_feed(&h->resp, v.iov_base, v.iov_len, &done, &err);
		if (used < 0) {
			http_abort(c, err.status, err.reason);
			return;
		}
		evbuffer_remove_buffer(in, h->cl_out, (size_t)used);
		c->resp_bytes += used;
		h->echo_scanned += (size_t)used;
		if (done) {
			response_done(c);
			return;
		}
		if ((size_t)used < v.iov_len)
			break;
	}
	if (!flush_client(c))
		return;
	if (evbuffer_get_length(h->cl_out) > HTTP_HIGH_WATER)
		upstream_reading(c, false);   /* the client is slow: pause */
}

static void on_upstream_eof(struct conn *c)
{
	struct conn_http *h = c->http;
	struct proxy_refusal err = { 502, "upstream_truncated" };
	bool done = false;

	if (!h->resp_head_done) {
		if (!h->got_any || !evbuffer_get_length(h->up_in))
			upstream_failed(c, 502, "upstream_closed");
		else
			http_abort(c, 502, "upstream_closed");
		return;
	}
	/* close-delimited bodies end here */
	if (proxy_response_feed(&h->resp, NULL, 0, &done, &err) < 0 || !done) {
		http_abort(c, 502, "upstream_truncated");
		return;
	}
	h->resp.keep_alive = false;
	response_done(c);
}

static void on_upstream_io(void *owner, short what)
{
	struct conn *c = owner;
	struct conn_http *h = c->http;
	ssize_t n = read_into(c->ufd, h->up_in);

	if (n == -1)
		return;
	if (n == 0) {
		on_upstream_eof(c);
		return;
	}
	if (n < 0) {
		upstream_failed(c, 502, "upstream_error");
		return;
	}
	h->got_any = true;
	touch(c);
	process_response(c);
}

void http_refuse(struct conn *c, int status, const char *reason)
{
	http_abort(c, status, reason);
}

void http_timeout(struct conn *c)
{
	if (c->http && !c->http->sent_any) {
		http_abort(c, 504, "idle_timeout");
		return;
	}
	c->failed = true;
	c->reason = "idle_timeout";
	conn_finish(c);
}

void http_start(struct conn *c)
{
	struct proxy *px = c->px;
	struct conn_http *h = c->http;
	bool retry = h != NULL;

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h) {
			conn_fail(c, 503, "out_of_memory");
			return;
		}
		c->http = h;
		h->up_out = evbuffer_new();
		h->up_in = evbuffer_new();
		h->cl_out = evbuffer_new();
		h->cl_in = evbuffer_new();
		if (!h->up_out || !h->up_in || !h->cl_out || !h->cl_in) {
			http_abort(c, 503, "out_of_memory");
			return;
		}
	}
	h->head_request = c->req->method_id == HTTP_HEAD;
	h->up_keep = px->upool != NULL;   /* under terminated TLS too: a verified session is pooled per name */
	if (c->cred) {
		/* after the decision, for this request only: the credential's
		 * header replaces whatever the sandbox sent under that name */
		struct proxy_set_header set = {
			c->cred->cr->header_name, strlen(c->cred->cr->header_name),
			c->cred->value, c->cred->value_len,
		};

		if (proxy_build_request_head_set(c->req, c->target, c->host, h->up_keep, &set, h->up_out) < 0) {
			http_abort(c, 503, "out_of_memory");
			return;
		}
	} else if (proxy_build_request_head(c->req, c->target, c->host, h->up_keep, h->up_out) < 0) {
		http_abort(c, 503, "out_of_memory");
		return;
	}
	/* the upstream socket's read event: a pooled one's changes hands */
	if (c->uio)
		proxy_io_set(c->uio, on_upstream_io, c);
	else
		c->uio = proxy_io_new(px->base, c->ufd, on_upstream_io, c);
	if (!c->uio) {
		http_abort(c, 503, "out_of_memory");
		return;
	}
	h->up_reading = true;   /* (proxy_io events are added) */
	c->req_bytes = (int64_t)c->head_len;
	c->resp_bytes = 0;
	c->req->body_cb = body_out;
	c->req->body_arg = c;
	if (!retry) {
		/* bytes that came with the head: body, then maybe the next
		 * request; c->buf keeps the head (c->req points into it) until
		 * the request ends */
		if (c->len > c->head_len &&
		    evbuffer_add(h->cl_in, c->buf + c->head_len, c->len - c->head_len) < 0) {
			http_abort(c, 503, "out_of_memory");
			return;
		}
		c->len = c->head_len;
		if (c->req->message_complete)
			request_done(c);
		else if (!feed_request(c))
			return;
	}
	/* (a retry is a request without a body: nothing more to send) */
	event_del(c->timer);
	touch(c);
	upstream_reading(c, true);
	if (!h->req_done || evbuffer_get_length(h->cl_in) <= px->cfg.limits.max_head)
		client_reading(c, !h->client_eof);
	flush_upstream(c);
}
