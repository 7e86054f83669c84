/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2.c - HTTP/2 towards the sandbox inside inspected TLS (libnghttp2),
 * HTTP/1.1 per stream towards the origin (h2.h, docs/proxy.md "HTTP/2").
 *
 *   client --TLS/h2--> [pump] --plaintext--> h2 session (this file)
 *        stream 1 --HTTP/1.1 over a socketpair--> inspected conn (conn.c,
 *        stream 3 --HTTP/1.1 over a socketpair--> inspected conn  http.c)
 *        ...
 *
 * A stream's request (:method, :authority, :path and its headers) is
 * written as one HTTP/1.1 request ("Connection: close") to a connection
 * of its own that conn_new_inspected() made: that connection decides it
 * against the policy (the same code as an HTTP/1.1 request inside TLS),
 * sets a credential's header after the decision, dials the origin in
 * verified TLS, and writes the access-log line (http.version "2").  A
 * denied stream gets that connection's 403 as its response; the other
 * streams go on.  The HTTP/1.1 response is read back with http-parser and
 * sent as the stream's HEADERS and DATA.
 *
 * Bounds: H2_MAX_STREAMS streams at once; a header list of at most the
 * proxy's --max-head bytes (431 past it, logged by the stream's
 * connection); request bodies under HTTP/2 flow control (the window is
 * given back only once the stream's connection took the bytes:
 * NGHTTP2_OPT_NO_AUTO_WINDOW_UPDATE); response bodies buffered at most
 * H2_BODY_HIGH per stream (reading the stream's connection pauses past it);
 * the client's unread output at most H2_OUT_HIGH (frames are produced as
 * it drains).
 */
#include "proxy.h"
#include "h2.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <http_parser.h>
#include <nghttp2/nghttp2.h>

#include "log.h"

#define H2_OUT_HIGH  (64 * 1024)   /* bytes queued to the client before frames wait */
#define H2_BODY_HIGH (64 * 1024)   /* response body bytes buffered per stream */
#define H2_RESP_HEAD_MAX (64 * 1024)
#define H2_RESP_HEADERS 200
#define H2_DISCARD_MAX (16 * 1024 * 1024)   /* request body read past its stream's answer */

struct h2_conn;

struct h2_hdr {
	char *name, *value;
};

struct h2_stream {
	struct h2_conn *h;
	int32_t id;
	struct h2_stream *prev, *next;

	/* the request, as it comes */
	struct evbuffer *head;        /* header lines of the HTTP/1.1 head */
	struct evbuffer *cookie;      /* cookie fields, joined by "; " (RFC 9113 8.2.3) */
	char *method, *path, *authority, *host;
	size_t list_bytes;            /* header list size (RFC 9113 6.5.2: name + value + 32 each) */
	bool too_large;
	bool has_length;              /* content-length given: the body goes as it is */
	bool chunked;                 /* no content-length and a body: chunked towards the connection */
	bool req_started, req_ended;
	struct evbuffer *held;        /* the HTTP/1.1 head of a request with a body, until its
				       * first bytes (release_head) */
	size_t discarded;             /* DATA bytes nobody wanted (H2_DISCARD_MAX) */
	size_t unconsumed;            /* DATA bytes written to the connection, window not given back yet */
	struct bufferevent *bev;      /* our end of the socketpair to the stream's connection */

	/* the response, from the stream's connection */
	http_parser parser;
	struct h2_hdr *rh;
	size_t n_rh;
	size_t resp_head_bytes;
	bool in_value;
	bool submitted, resp_done, no_body, reading_paused;
	struct evbuffer *body;
};

struct h2_conn {
	struct proxy *px;
	nghttp2_session *s;
	struct bufferevent *bev;      /* the plaintext of the client's TLS session */
	struct event *idle;           /* no stream open for --keepalive-timeout: GOAWAY */
	struct conn outer;            /* what each stream's connection inherits (conn_new_inspected) */
	const char *tls_version, *tls_cipher;
	struct h2_stream *streams;
	unsigned n_open;
	unsigned n_seen;              /* streams so far: each one's sluice.request_seq */
	bool closing;
	struct h2_conn *all_prev, *all_next;
};

/* How long a connection may have no stream open: the keep-alive timeout
 * (the idle timeout when keep-alive is off: streams are requests of their
 * own, a connection with none is idle). */
static const struct timeval *idle_tv(const struct proxy *px)
{
	return px->cfg.keepalive_timeout_ms ? &px->tv_keepalive : &px->tv_idle;
}

static struct h2_conn *h2_all;   /* every open connection (reachable at exit) */
static unsigned long n_live;

static void h2_flush(struct h2_conn *h);

unsigned long h2_live(void)
{
	return n_live;
}

/* --- streams ------------------------------------------------------------- */

/* Unlink st from h (its connection) and free it. */
static void stream_free(struct h2_conn *h, struct h2_stream *st)
{
	if (st->prev)
		st->prev->next = st->next;
	else
		h->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	h->n_open--;
	if (st->bev)
		bufferevent_free(st->bev);   /* closes the socket: the connection sees its client gone */
	if (st->head)
		evbuffer_free(st->head);
	if (st->cookie)
		evbuffer_free(st->cookie);
	if (st->body)
		evbuffer_free(st->body);
	if (st->held)
		evbuffer_free(st->held);
	for (size_t i = 0; i < st->n_rh; i++) {
		free(st->rh[i].name);
		free(st->rh[i].value);
	}
	free(st->rh);
	free(st->method);
	free(st->path);
	free(st->authority);
	free(st->host);
	free(st);
	if (!h->n_open && h->idle && !h->closing)
		event_add(h->idle, idle_tv(h->px));
}

static void stream_reset(struct h2_stream *st, uint32_t code)
{
	nghttp2_submit_rst_stream(st->h->s, NGHTTP2_FLAG_NONE, st->id, code);
}

/* The stream's connection took every byte written so far: give the window
 * back (HTTP/2 flow control follows the slowest part of the path). */
static void stream_written(struct bufferevent *bev, void *arg)
{
	struct h2_stream *st = arg;
	struct h2_conn *h = st->h;

	(void)bev;
	if (st->unconsumed) {
		nghttp2_session_consume(h->s, st->id, st->unconsumed);
		st->unconsumed = 0;
	}
	h2_flush(h);
}

/* --- the response, HTTP/1.1 from the stream's connection ------------------- */

static int hdr_append(char **dst, const char *at, size_t len)
{
	size_t old = *dst ? strlen(*dst) : 0;
	char *p = realloc(*dst, old + len + 1);

	if (!p)
		return -1;
	memcpy(p + old, at, len);
	p[old + len] = '\0';
	*dst = p;
	return 0;
}

static int on_resp_field(http_parser *p, const char *at, size_t len)
{
	struct h2_stream *st = p->data;

	st->resp_head_bytes += len;
	if (st->resp_head_bytes > H2_RESP_HEAD_MAX)
		return -1;
	if (st->in_value || !st->n_rh) {
		struct h2_hdr *n;

		if (st->n_rh >= H2_RESP_HEADERS)
			return -1;
		n = realloc(st->rh, (st->n_rh + 1) * sizeof(*n));
		if (!n)
			return -1;
		st->rh = n;
		st->rh[st->n_rh].name = st->rh[st->n_rh].value = NULL;
		st->n_rh++;
		st->in_value = false;
	}
	return hdr_append(&st->rh[st->n_rh - 1].name, at, len);
}

static int on_resp_value(http_parser *p, const char *at, size_t len)
{
	struct h2_stream *st = p->data;

	st->resp_head_bytes += len;
	if (st->resp_head_bytes > H2_RESP_HEAD_MAX || !st->n_rh)
		return -1;
	st->in_value = true;
	return hdr_append(&st->rh[st->n_rh - 1].value, at, len);
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			 nghttp2_data_source *src, void *user)
{
	struct h2_stream *st = src->ptr;
	int n;

	(void)s;
	(void)id;
	(void)user;
	n = evbuffer_remove(st->body, buf, len);
	if (n < 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (st->reading_paused && st->bev && evbuffer_get_length(st->body) < H2_BODY_HIGH / 2) {
		st->reading_paused = false;
		bufferevent_enable(st->bev, EV_READ);
	}
	if (!evbuffer_get_length(st->body) && st->resp_done)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	else if (n == 0)
		return NGHTTP2_ERR_DEFERRED;
	return n;
}

/* connection-specific fields have no place in HTTP/2 (RFC 9113 8.2.2) */
static bool hop_by_hop(const char *name)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
	};

	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strcmp(name, hop[i]) == 0)
			return true;
	return false;
}

static int on_resp_headers(http_parser *p)
{
	struct h2_stream *st = p->data;
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = read_body };
	nghttp2_nv *nv;
	char status[8];
	size_t n = 0;
	int rv;

	/* the stream's connection sends no 1xx: it never gets Expect, and
	 * answers 101 with 502 itself */
	if (p->status_code < 200)
		return -1;
	nv = calloc(st->n_rh + 1, sizeof(*nv));
	if (!nv)
		return -1;
	snprintf(status, sizeof(status), "%u", p->status_code);
	nv[n++] = (nghttp2_nv){ (uint8_t *)":status", (uint8_t *)status, 7, strlen(status), NGHTTP2_NV_FLAG_NONE };
	for (size_t i = 0; i < st->n_rh; i++) {
		char *name = st->rh[i].name;

		if (!name || !st->rh[i].value)
			continue;
		for (char *q = name; *q; q++)
			*q = (char)tolower((unsigned char)*q);
		if (hop_by_hop(name))
			continue;
		nv[n++] = (nghttp2_nv){ (uint8_t *)name, (uint8_t *)st->rh[i].value, strlen(name),
					strlen(st->rh[i].value), NGHTTP2_NV_FLAG_NONE };
	}
	st->no_body = p->status_code == 204 || p->status_code == 304 ||
		      (st->method && strcmp(st->method, "HEAD") == 0);
	rv = nghttp2_submit_response(st->h->s, st->id, nv, n, st->no_body ? NULL : &prd);
	free(nv);
	if (rv != 0)
		return -1;
	st->submitted = true;
	return st->no_body ? 1 : 0;   /* 1: http-parser reads no body (HEAD) */
}

static int on_resp_body(http_parser *p, const char *at, size_t len)
{
	struct h2_stream *st = p->data;

	return evbuffer_add(st->body, at, len);
}

static int on_resp_complete(http_parser *p)
{
	struct h2_stream *st = p->data;

	st->resp_done = true;
	/* the rest is the next message: none on a "Connection: close" request */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings resp_settings = {
	.on_header_field = on_resp_field,
	.on_header_value = on_resp_value,
	.on_headers_complete = on_resp_headers,
	.on_body = on_resp_body,
	.on_message_complete = on_resp_complete,
};

/* The response is done (or broken): once the body is out the stream ends;
 * a request body the client is still sending is not wanted any more. */
static void stream_response_over(struct h2_stream *st, bool broken)
{
	if (broken || !st->submitted) {
		stream_reset(st, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	if (!st->no_body)
		nghttp2_session_resume_data(st->h->s, st->id);
}

static void stream_readable(struct bufferevent *bev, void *arg)
{
	struct h2_stream *st = arg;
	struct h2_conn *h = st->h;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	bool was_done = st->resp_done;

	if (len && !st->resp_done) {
		const char *data = (const char *)evbuffer_pullup(in, -1);
		size_t n = data ? http_parser_execute(&st->parser, &resp_settings, data, len) : 0;

		if (!data || (n != len && HTTP_PARSER_ERRNO(&st->parser) != HPE_PAUSED && !st->resp_done)) {
			log_debug("h2 stream %d: malformed response from its connection (%s)", st->id,
				  http_errno_name(HTTP_PARSER_ERRNO(&st->parser)));
			evbuffer_drain(in, len);
			stream_response_over(st, true);
			h2_flush(h);
			return;
		}
	}
	evbuffer_drain(in, len);
	if (st->submitted && !st->no_body)
		nghttp2_session_resume_data(h->s, st->id);
	if (!was_done && st->resp_done)
		stream_response_over(st, false);
	else if (evbuffer_get_length(st->body) >= H2_BODY_HIGH) {
		st->reading_paused = true;
		bufferevent_disable(bev, EV_READ);
	}
	h2_flush(h);
}

static void stream_event(struct bufferevent *bev, short what, void *arg)
{
	struct h2_stream *st = arg;
	struct h2_conn *h = st->h;

	(void)what;
	/* the stream's connection is done (EOF after its answer) or gone */
	if (!st->resp_done) {
		/* EOF ends a response framed by the close (http-parser) */
		http_parser_execute(&st->parser, &resp_settings, NULL, 0);
		if (st->resp_done)
			stream_response_over(st, false);
		else
			stream_response_over(st, true);
	}
	bufferevent_free(bev);
	st->bev = NULL;
	h2_flush(h);
}

/* --- the request ------------------------------------------------------------- */

static int set_field(char **dst, const uint8_t *v, size_t len)
{
	free(*dst);
	*dst = strndup((const char *)v, len);
	return *dst ? 0 : -1;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
	struct h2_conn *h = user;
	struct h2_stream *st;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	/* the setting binds once acknowledged; this binds from the first frame */
	if (h->n_open >= H2_MAX_STREAMS) {
		/* no user data: its headers and data are ignored */
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->head = evbuffer_new()) || !(st->cookie = evbuffer_new()) ||
	    !(st->body = evbuffer_new())) {
		if (st) {
			if (st->head)
				evbuffer_free(st->head);
			if (st->cookie)
				evbuffer_free(st->cookie);
			free(st);
		}
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	st->h = h;
	st->id = f->hd.stream_id;
	http_parser_init(&st->parser, HTTP_RESPONSE);
	st->parser.data = st;
	st->next = h->streams;
	if (h->streams)
		h->streams->prev = st;
	h->streams = st;
	h->n_open++;
	if (h->idle)
		event_del(h->idle);
	nghttp2_session_set_stream_user_data(s, st->id, st);
	return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
		     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
	struct h2_conn *h = user;
	struct h2_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	const char *n = (const char *)name;

	(void)flags;
	if (!st || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST || st->too_large)
		return 0;   /* trailers are dropped: the body's framing ended it */
	st->list_bytes += namelen + valuelen + 32;
	if (st->list_bytes > h->px->cfg.limits.max_head) {
		st->too_large = true;
		return 0;
	}
	/* nghttp2 checked the names (lower case, no connection-specific
	 * field) and the values (no CR, LF or NUL) */
	if (namelen && n[0] == ':') {
		if (namelen == 7 && memcmp(n, ":method", 7) == 0)
			return set_field(&st->method, value, valuelen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
		if (namelen == 5 && memcmp(n, ":path", 5) == 0)
			return set_field(&st->path, value, valuelen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
		if (namelen == 10 && memcmp(n, ":authority", 10) == 0)
			return set_field(&st->authority, value, valuelen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
		return 0;   /* :scheme: the connection is https */
	}
	if (namelen == 4 && memcmp(n, "host", 4) == 0)
		return set_field(&st->host, value, valuelen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
	if (namelen == 6 && memcmp(n, "cookie", 6) == 0) {
		if (evbuffer_get_length(st->cookie))
			evbuffer_add(st->cookie, "; ", 2);
		evbuffer_add(st->cookie, value, valuelen);
		return 0;
	}
	/* Expect: the stream's body goes as the window allows, no 100 */
	if (namelen == 6 && memcmp(n, "expect", 6) == 0)
		return 0;
	if (namelen == 14 && memcmp(n, "content-length", 14) == 0)
		st->has_length = true;
	if (evbuffer_add(st->head, name, namelen) || evbuffer_add(st->head, ": ", 2) ||
	    evbuffer_add(st->head, value, valuelen) || evbuffer_add(st->head, "\r\n", 2))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/* The request's head is complete: give the stream a connection of its own
 * and write it the HTTP/1.1 request. */
static int stream_open(struct h2_stream *st, bool end_stream)
{
	struct h2_conn *h = st->h;
	struct proxy *px = h->px;
	struct evbuffer *out;
	struct conn *in;
	const char *authority = st->authority ? st->authority : st->host;
	int sv[2];

	st->req_started = true;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	in = conn_new_inspected(px, sv[1], &h->outer);
	if (!in) {
		close(sv[0]);
		return -1;
	}
	in->tls_version = h->tls_version;
	in->tls_cipher = h->tls_cipher;
	in->http_version = "2";
	in->h2_seq = ++h->n_seen;
	st->bev = bufferevent_socket_new(px->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	if (!st->bev) {
		close(sv[0]);   /* the connection sees its client gone */
		return -1;
	}
	bufferevent_setcb(st->bev, stream_readable, stream_written, stream_event, st);
	bufferevent_enable(st->bev, EV_READ | EV_WRITE);
	if (st->too_large) {
		/* the connection answers (and logs) the refusal itself */
		conn_reply(in, 431, "headers_too_large");
		st->req_ended = true;
		return 0;
	}
	/* a head with a body goes together with the body's first bytes, so
	 * that the connection checks both before anything goes upstream (a
	 * misdirected credential placeholder in a small body: cred.c) */
	out = end_stream ? bufferevent_get_output(st->bev) : (st->held = evbuffer_new());
	if (!out)
		return -1;
	st->chunked = !end_stream && !st->has_length;
	/* a missing pseudo-header: the connection refuses the request line
	 * (400), logged like any other malformed request */
	if (evbuffer_add_printf(out, "%s %s HTTP/1.1\r\n", st->method ? st->method : "-",
				st->method && strcmp(st->method, "CONNECT") == 0 && authority
					? authority : st->path ? st->path : "-") < 0 ||
	    (authority && evbuffer_add_printf(out, "host: %s\r\n", authority) < 0) ||
	    evbuffer_add_buffer(out, st->head) ||
	    (evbuffer_get_length(st->cookie) &&
	     (evbuffer_add(out, "cookie: ", 8) || evbuffer_add_buffer(out, st->cookie) ||
	      evbuffer_add(out, "\r\n", 2))) ||
	    (st->chunked && evbuffer_add(out, "transfer-encoding: chunked\r\n", 28)) ||
	    evbuffer_add(out, "connection: close\r\n\r\n", 21))
		return -1;
	st->req_ended = end_stream;
	return 0;
}

/* The held head goes to the stream's connection (with what follows). */
static int release_head(struct h2_stream *st)
{
	int rv = 0;

	if (st->held) {
		rv = evbuffer_add_buffer(bufferevent_get_output(st->bev), st->held);
		evbuffer_free(st->held);
		st->held = NULL;
	}
	return rv;
}

static void stream_request_end(struct h2_stream *st)
{
	if (st->req_ended)
		return;
	st->req_ended = true;
	if (st->bev && release_head(st) < 0)
		return;
	if (st->chunked && st->bev)
		evbuffer_add(bufferevent_get_output(st->bev), "0\r\n\r\n", 5);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	(void)user;
	if (!st)
		return 0;
	switch (f->hd.type) {
	case NGHTTP2_HEADERS:
		if (!st->req_started) {
			if (stream_open(st, end) < 0)
				stream_reset(st, NGHTTP2_INTERNAL_ERROR);
		} else if (end) {
			stream_request_end(st);   /* trailers */
		}
		break;
	case NGHTTP2_DATA:
		if (end)
			stream_request_end(st);
		break;
	default:
		break;
	}
	return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
			 void *user)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(s, id);
	struct evbuffer *out;

	(void)flags;
	(void)user;
	if (!st || !st->bev || st->req_ended || st->too_large || st->resp_done) {
		/* nobody wants it (the answer came first, a denial): the window
		 * goes back, up to H2_DISCARD_MAX bytes, then the stream is
		 * reset (RFC 9113 8.1 allows it at once; clients such as curl
		 * 7.88 then lose the answer they were sent) */
		nghttp2_session_consume(s, id, len);
		if (st && (st->discarded += len) > H2_DISCARD_MAX)
			stream_reset(st, NGHTTP2_NO_ERROR);
		return 0;
	}
	if (release_head(st) < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	out = bufferevent_get_output(st->bev);
	if ((st->chunked && evbuffer_add_printf(out, "%zx\r\n", len) < 0) || evbuffer_add(out, data, len) ||
	    (st->chunked && evbuffer_add(out, "\r\n", 2)))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	st->unconsumed += len;
	return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
	struct h2_conn *h = user;
	struct h2_stream *st = nghttp2_session_get_stream_user_data(s, id);

	(void)code;
	if (!st || h->closing)
		return 0;
	/* the connection window of bytes the stream's connection never took */
	if (st->unconsumed)
		nghttp2_session_consume_connection(s, st->unconsumed);
	nghttp2_session_set_stream_user_data(s, id, NULL);
	stream_free(h, st);
	return 0;
}

/* --- the connection ------------------------------------------------------------- */

static void h2_free(struct h2_conn *h)
{
	h->closing = true;
	while (h->streams)
		stream_free(h, h->streams);
	if (h->s)
		nghttp2_session_del(h->s);
	if (h->bev)
		bufferevent_free(h->bev);   /* the pump sends close_notify */
	if (h->idle)
		event_free(h->idle);
	free(h->outer.sni);
	if (h->all_prev)
		h->all_prev->all_next = h->all_next;
	else
		h2_all = h->all_next;
	if (h->all_next)
		h->all_next->all_prev = h->all_prev;
	n_live--;
	free(h);
}

/* Produce frames while the client takes them; end the connection when
 * neither side has anything more to say. */
static void h2_flush(struct h2_conn *h)
{
	struct evbuffer *out = bufferevent_get_output(h->bev);

	while (evbuffer_get_length(out) < H2_OUT_HIGH) {
		const uint8_t *data;
		ssize_t n = nghttp2_session_mem_send(h->s, &data);

		if (n < 0) {
			log_debug("h2: %s", nghttp2_strerror((int)n));
			h2_free(h);
			return;
		}
		if (n == 0)
			break;
		if (evbuffer_add(out, data, (size_t)n)) {
			h2_free(h);
			return;
		}
	}
	if (!nghttp2_session_want_read(h->s) && !nghttp2_session_want_write(h->s) &&
	    !evbuffer_get_length(out))
		h2_free(h);
}

static void client_readable(struct bufferevent *bev, void *arg)
{
	struct h2_conn *h = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	const uint8_t *data = evbuffer_pullup(in, -1);
	ssize_t n = data ? nghttp2_session_mem_recv(h->s, data, len) : -1;

	if (n < 0) {
		/* a framing error: nghttp2 queued GOAWAY; send it, then close */
		log_debug("h2 from the sandbox: %s", n == -1 ? "out of memory" : nghttp2_strerror((int)n));
		evbuffer_drain(in, len);
		bufferevent_disable(bev, EV_READ);
		if (n == -1) {
			h2_free(h);
			return;
		}
	} else {
		evbuffer_drain(in, len);
	}
	h2_flush(h);
}

static void client_written(struct bufferevent *bev, void *arg)
{
	(void)bev;
	h2_flush(arg);
}

static void client_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	/* the client's session ended: every stream's connection sees its
	 * client gone (a request in progress is logged so) */
	h2_free(arg);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
	struct h2_conn *h = arg;

	(void)fd;
	(void)what;
	nghttp2_session_terminate_session(h->s, NGHTTP2_NO_ERROR);
	h2_flush(h);
}

int h2_start(struct proxy *px, int fd, const struct conn *outer, const char *tls_version,
	     const char *tls_cipher)
{
	struct h2_conn *h = calloc(1, sizeof(*h));
	nghttp2_session_callbacks *cb = NULL;
	nghttp2_option *opt = NULL;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_MAX_STREAMS },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)px->cfg.limits.max_head },
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		/* never SETTINGS_ENABLE_CONNECT_PROTOCOL: no WebSocket over
		 * HTTP/2 (RFC 8441), so a stream with :protocol is a
		 * protocol error and a client uses HTTP/1.1 for it
		 * (websocket.c, docs/proxy.md "WebSocket") */
	};
	int rv = -1;

	if (!h) {
		close(fd);
		return -1;
	}
	h->px = px;
	h->tls_version = tls_version;
	h->tls_cipher = tls_cipher;
	/* what conn_new_inspected() reads of the terminated connection */
	h->outer.peer = outer->peer;
	h->outer.orig = outer->orig;
	h->outer.have_orig = outer->have_orig;
	h->outer.form = outer->form;
	h->outer.over_cap = outer->over_cap;
	h->outer.port = outer->port;
	h->outer.sni = outer->sni ? strdup(outer->sni) : NULL;
	h->all_next = h2_all;
	if (h2_all)
		h2_all->all_prev = h;
	h2_all = h;
	n_live++;
	h->bev = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!h->bev)
		close(fd);
	h->idle = evtimer_new(px->base, on_idle, h);
	if (!h->outer.sni || !h->bev || !h->idle || nghttp2_session_callbacks_new(&cb) != 0 ||
	    nghttp2_option_new(&opt) != 0)
		goto out;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	/* the window goes back as the stream's connection takes the bytes */
	nghttp2_option_set_no_auto_window_update(opt, 1);
	if (nghttp2_session_server_new2(&h->s, cb, h, opt) != 0)
		goto out;
	if (nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0)
		goto out;
	bufferevent_setcb(h->bev, client_readable, client_written, client_event, h);
	bufferevent_setwatermark(h->bev, EV_WRITE, H2_OUT_HIGH / 2, 0);
	bufferevent_enable(h->bev, EV_READ | EV_WRITE);
	event_add(h->idle, idle_tv(px));
	rv = 0;
out:
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	if (rv < 0) {
		h2_free(h);
		return -1;
	}
	h2_flush(h);   /* our SETTINGS */
	return 0;
}
