/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.c - forwarding one decided plain-HTTP request.  The upstream gets the
 * rebuilt head (origin-form, hop-by-hop and proxy headers dropped,
 * "Connection: close") and the body re-framed by the proxy (chunked bodies
 * are decoded and re-chunked, so only the proxy's framing reaches the
 * origin).  The response head is rebuilt the same way; its body is passed
 * through as is while http-parser finds its end.  After one response the
 * client connection is closed ("Connection: close"): one request per
 * connection, both sides.
 */
#include "proxy.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#define HTTP_HIGH_WATER (256 * 1024)   /* queued bytes before reading the other side pauses */
#define HTTP_READ_MAX   (64 * 1024)

static const struct proxy_limits response_limits = {
	.max_request_line = 16384,   /* the status line */
	.max_head = 65536,
	.max_headers = PROXY_MAX_HEADERS,
};

struct conn_http {
	struct bufferevent *cbev, *ubev;
	struct proxy_response resp;
	bool req_done;
	bool resp_head_done;
	bool resp_done;
	bool sent_any;                 /* response bytes were queued for the client */
	bool head_request;
};

void http_free(struct conn *c)
{
	struct conn_http *h = c->http;

	if (!h)
		return;
	if (h->cbev)
		bufferevent_free(h->cbev);
	if (h->ubev)
		bufferevent_free(h->ubev);
	free(h);
	c->http = NULL;
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

static void http_complete(struct conn *c)
{
	/* the response is out: log it, then close politely */
	conn_done(c);
}

/* Request body bytes, decoded by http-parser: re-framed toward upstream. */
static void body_out(void *arg, const char *data, size_t len)
{
	struct conn *c = arg;
	struct evbuffer *out = bufferevent_get_output(c->http->ubev);

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
	if (c->req->chunked)
		evbuffer_add(bufferevent_get_output(h->ubev), "0\r\n\r\n", 5);
	bufferevent_disable(h->cbev, EV_READ);
}

/* Feed client bytes into the request parser.  Returns the bytes used, or -1
 * when the connection was ended. */
static ssize_t feed_request(struct conn *c, const char *p, size_t n)
{
	struct proxy_refusal err = { 400, "bad_body" };
	bool done = false;
	ssize_t used = proxy_body_feed(c->req, p, n, &done, &err);

	if (used < 0) {
		http_abort(c, err.status, err.reason);
		return -1;
	}
	c->req_bytes += used;
	if (done)
		request_done(c);
	return used;
}

static void on_client_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct conn_http *h = c->http;
	struct evbuffer *in = bufferevent_get_input(bev);

	while (!h->req_done && evbuffer_get_length(in)) {
		struct evbuffer_iovec v;
		ssize_t used;

		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		used = feed_request(c, v.iov_base, v.iov_len);
		if (used < 0)
			return;
		evbuffer_drain(in, (size_t)used);
		if (!h->req_done && (size_t)used < v.iov_len)
			break;
	}
	if (h->req_done) {
		/* bytes after the request (pipelining) are not forwarded */
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(h->ubev)) > HTTP_HIGH_WATER)
		bufferevent_disable(h->cbev, EV_READ);
}

static void response_done(struct conn *c)
{
	struct conn_http *h = c->http;

	h->resp_done = true;
	bufferevent_disable(h->ubev, EV_READ);
	evbuffer_drain(bufferevent_get_input(h->ubev), evbuffer_get_length(bufferevent_get_input(h->ubev)));
	if (evbuffer_get_length(bufferevent_get_output(h->cbev)) == 0)
		http_complete(c);
}

/* Parse response heads (1xx ones are passed on, then the final one).
 * Returns 1 when the final head is through, 0 to wait, -1 when ended. */
static int read_response_head(struct conn *c)
{
	struct conn_http *h = c->http;
	struct evbuffer *in = bufferevent_get_input(h->ubev);
	struct evbuffer *out = bufferevent_get_output(h->cbev);

	for (;;) {
		struct proxy_refusal err = { 502, "bad_upstream_response" };
		size_t len = evbuffer_get_length(in), want, hl = 0, before;
		const char *p;

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
		if (proxy_response_parse(&h->resp, p, hl, h->head_request, &err) < 0) {
			http_abort(c, 502, err.reason);
			return -1;
		}
		before = evbuffer_get_length(out);
		if (proxy_build_response_head(&h->resp, out) < 0) {
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

static void on_upstream_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct conn_http *h = c->http;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(h->cbev);

	if (!h->resp_head_done) {
		if (read_response_head(c) <= 0)
			return;
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

		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		used = proxy_response_feed(&h->resp, v.iov_base, v.iov_len, &done, &err);
		if (used < 0) {
			http_abort(c, err.status, err.reason);
			return;
		}
		evbuffer_remove_buffer(in, out, (size_t)used);
		c->resp_bytes += used;
		if (done) {
			response_done(c);
			return;
		}
		if ((size_t)used < v.iov_len)
			break;
	}
	if (evbuffer_get_length(out) > HTTP_HIGH_WATER)
		bufferevent_disable(h->ubev, EV_READ);
}

static void on_upstream_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct conn_http *h = c->http;

	/* the upstream took the queued request bytes: read the client again */
	if (!h->req_done)
		bufferevent_enable(h->cbev, EV_READ);
}

static void on_client_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct conn_http *h = c->http;

	if (h->resp_done) {
		http_complete(c);
		return;
	}
	bufferevent_enable(h->ubev, EV_READ);
}

static void on_upstream_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	struct conn_http *h = c->http;

	if (what & BEV_EVENT_EOF) {
		struct proxy_refusal err = { 502, "upstream_truncated" };
		bool done = false;

		if (!h->resp_head_done) {
			http_abort(c, 502, "upstream_closed");
			return;
		}
		/* close-delimited bodies end here */
		if (proxy_response_feed(&h->resp, NULL, 0, &done, &err) < 0 || !done) {
			http_abort(c, 502, "upstream_truncated");
			return;
		}
		response_done(c);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		http_abort(c, 504, "idle_timeout");
		return;
	}
	http_abort(c, 502, "upstream_error");
}

static void on_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	struct conn_http *h = c->http;

	if ((what & BEV_EVENT_EOF) && h->req_done) {
		/* the client half-closed after its request: fine */
		bufferevent_disable(bev, EV_READ);
		return;
	}
	c->failed = true;
	c->reason = (what & BEV_EVENT_TIMEOUT) ? "idle_timeout"
		  : (what & BEV_EVENT_EOF) ? "client_closed" : "client_error";
	conn_finish(c);
}

void http_start(struct conn *c)
{
	struct proxy *px = c->px;
	struct conn_http *h = calloc(1, sizeof(*h));
	struct timeval *idle = &px->tv_idle;

	if (!h) {
		conn_fail(c, 503, "out_of_memory");
		return;
	}
	c->http = h;
	if (c->rev) {
		event_free(c->rev);
		c->rev = NULL;
	}
	h->head_request = c->req->method_id == HTTP_HEAD;
	h->ubev = bufferevent_socket_new(px->base, c->ufd, 0);
	h->cbev = bufferevent_socket_new(px->base, c->cfd, 0);
	if (!h->ubev || !h->cbev ||
	    proxy_build_request_head(c->req, c->target, c->host, bufferevent_get_output(h->ubev)) < 0) {
		http_abort(c, 503, "out_of_memory");
		return;
	}
	c->req_bytes = (int64_t)c->head_len;
	c->resp_bytes = 0;
	c->req->body_cb = body_out;
	c->req->body_arg = c;
	if (c->req->message_complete) {
		request_done(c);
	} else if (c->len > c->head_len) {
		/* body bytes that came with the head */
		if (feed_request(c, c->buf + c->head_len, c->len - c->head_len) < 0)
			return;
	}
	/* the head's bytes are no longer needed (the upstream head is built) */
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = c->head_len = 0;
	free(c->target);
	c->target = NULL;

	bufferevent_setcb(h->ubev, on_upstream_read, on_upstream_write, on_upstream_event, c);
	bufferevent_setcb(h->cbev, on_client_read, on_client_write, on_client_event, c);
	bufferevent_setwatermark(h->ubev, EV_READ, 0, HTTP_READ_MAX);
	bufferevent_setwatermark(h->cbev, EV_READ, 0, HTTP_READ_MAX);
	bufferevent_set_timeouts(h->ubev, idle, idle);
	bufferevent_set_timeouts(h->cbev, idle, idle);
	bufferevent_enable(h->ubev, EV_READ | EV_WRITE);
	bufferevent_enable(h->cbev, h->req_done ? EV_WRITE : EV_READ | EV_WRITE);
}
