/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.c - one client connection: recover its sandbox from the flow map,
 * classify (explicit HTTP proxy request, transparent TLS or HTTP), decide,
 * have dial.c resolve, vet and dial, then hand over to http.c or (a
 * passthrough tunnel) tunnel.c.  Every path ends in conn_finish(), which
 * writes the access-log line (conn_log.c) once, or in a tunnel's line.
 */
#include "proxy.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "dnscache.h"
#include "flow.h"
#include "log.h"
#include "relay.h"
#include "sni.h"
#include "tls_pump.h"
#include "upool.h"

#define READ_INITIAL 1024        /* bytes the first read asks for */
#define READ_CHUNK_MAX 16384     /* most bytes one read asks for */
#define TLS_PEEK_MAX 32768       /* raw bytes of a ClientHello we are willing to buffer */
#define TLS_CONTENT_HANDSHAKE 0x16

static void on_client_io(evutil_socket_t fd, short what, void *arg);
static void on_client_read(evutil_socket_t fd, short what, void *arg);
static void on_hello_read(evutil_socket_t fd, short what, void *arg);
static void on_linger_read(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);
static void process_http(struct conn *c);
static void dial_tunnel(struct conn *c);
#define KEEPALIVE_MAX_DEPTH 16   /* pipelined requests answered in one call chain */
static void connect_established(struct conn *c);

/* --- per-request structures ------------------------------------------------ */

/*
 * A request's parsed head (about 3 KiB) and target (about 16 KiB) are
 * allocated for every request; a few are kept for the next ones instead of
 * going back to malloc (which showed in the profile).  Single-threaded.
 */
#define SPARE_MAX 16
static struct proxy_request *spare_req[SPARE_MAX];
static struct proxy_target *spare_target[SPARE_MAX];
static size_t n_spare_req, n_spare_target;

static void req_release(struct conn *c)
{
	if (c->req) {
		proxy_request_free(c->req);
		if (n_spare_req < SPARE_MAX)
			spare_req[n_spare_req++] = c->req;
		else
			free(c->req);
		c->req = NULL;
	}
	if (c->target) {
		if (n_spare_target < SPARE_MAX)
			spare_target[n_spare_target++] = c->target;
		else
			free(c->target);
		c->target = NULL;
	}
}

static bool req_alloc(struct conn *c)
{
	/* (proxy_request_parse() and proxy_request_target() initialise them) */
	c->req = n_spare_req ? spare_req[--n_spare_req] : malloc(sizeof(*c->req));
	c->target = n_spare_target ? spare_target[--n_spare_target] : malloc(sizeof(*c->target));
	if (c->req)
		memset(c->req, 0, offsetof(struct proxy_request, headers));
	return c->req && c->target;
}

/* --- teardown (the line: conn_log.c) --------------------------------------- */

void conn_finish(struct conn *c)
{
	struct proxy *px = c->px;

	conn_log(c);
	conn_release(c);
	px->n_conns--;
	free(c);
	proxy_drain_check(px);
}

void conn_release(struct conn *c)
{
	proxy_lookup_cancel(c->lookup);
	http_free(c);
	relay_free(c->relay);
	tls_pump_free(c->pump);
	if (c->rev)
		event_free(c->rev);
	proxy_io_free(c->uio);
	if (c->timer)
		event_free(c->timer);
	if (c->ufd >= 0)
		close(c->ufd);
	if (c->cfd >= 0)
		close(c->cfd);
	free(c->buf);
	free(c->url_full);
	free(c->exe);
	free(c->host);
	free(c->host_sent);
	free(c->sni);
	free(c->tls_host);
	req_release(c);
	free(c->cands);
	for (size_t i = 0; i < c->n_dropped; i++)
		free(c->dropped[i]);
	proxy_conn_untrack(c->px, c);
}

/* Let go of c's upstream: its TLS handshake, its connect wait (on c's
 * timer), its I/O and its socket. */
static void upstream_release(struct conn *c)
{
	tls_pump_free(c->pump);
	c->pump = NULL;
	conn_timer_plain(c);   /* a connect in progress: its socket goes */
	proxy_io_free(c->uio);
	c->uio = NULL;
	if (c->ufd >= 0) {
		close(c->ufd);
		c->ufd = -1;
	}
}

void conn_events_to_relay(struct conn *c, struct event *ev[2])
{
	ev[0] = c->rev;
	ev[1] = c->timer;
	c->rev = c->timer = NULL;
	for (int i = 0; i < 2; i++)
		if (ev[i])
			event_del(ev[i]);
	c->rev_on = false;
}

void conn_drop_events(struct conn *c)
{
	if (c->rev) {
		event_free(c->rev);
		c->rev = NULL;
	}
	c->rev_on = false;
}

void conn_timer_plain(struct conn *c)
{
	if (!c->timer || event_get_fd(c->timer) < 0)
		return;
	event_del(c->timer);
	evtimer_assign(c->timer, c->px->base, on_timer, c);
}

/* End without an HTTP answer (TLS, tunnels, unknown protocols). */
static void conn_close(struct conn *c, const char *reason)
{
	c->failed = true;
	c->reason = reason;
	conn_finish(c);
}

/* Our own answer is out: stop talking, drain what the client still sends
 * (so that closing does not reset the connection under the answer), close
 * on its EOF or after the linger time. */
void conn_linger(struct conn *c)
{
	/* a lookup still running (an answer given while resolving: a timeout,
	 * a reload's refusal) must not go on to dial for a lingering client */
	proxy_lookup_cancel(c->lookup);
	c->lookup = NULL;
	http_free(c);
	relay_free(c->relay);
	c->relay = NULL;
	/* an upstream TLS handshake still running is not wanted any more */
	upstream_release(c);
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
	/* the line is written: nothing of the request is needed while the
	 * connection lingers (up to 2 s; a busy proxy has thousands lingering,
	 * and the request's head and target alone are 20 KiB) */
	req_release(c);
	free(c->url_full);
	c->url_full = NULL;
	free(c->cands);
	c->cands = NULL;
	c->phase = PH_LINGER;
	if (shutdown(c->cfd, SHUT_WR) < 0 || !c->timer || !c->rev) {
		conn_finish(c);
		return;
	}
	conn_client_reading(c, true);
	event_del(c->timer);
	event_add(c->timer, &c->px->tv_linger);
}

/*
 * May the client connection stay open after our own answer `status`?  Only
 * when the request was parsed and read whole (no body: nothing of it is
 * left unread, so the next byte starts the next request), the client asked
 * for keep-alive, nothing was forwarded yet, and the answer is not one that
 * ends the connection anyway (408, 503).  CONNECT never: its client may
 * already have sent TLS bytes.
 */
static bool reply_keeps(const struct conn *c, int status)
{
	return c->px->cfg.keepalive_timeout_ms && c->kind == K_HTTP && c->req_ok && c->req &&
	       c->req->message_complete && c->req->keep_alive && c->phase <= PH_CONNECT && !c->over_cap &&
	       status != 408 && status != 503;
}

void conn_reply(struct conn *c, int status, const char *reason)
{
	struct evbuffer *b = evbuffer_new();
	bool keep = reply_keeps(c, status);
	ssize_t w = -1;
	size_t n = 0;

	c->failed = true;
	c->reason = reason;
	c->status = status;
	if (c->req_bytes < 0)
		c->req_bytes = (int64_t)(c->head_len ? c->head_len : c->len);
	if (b && proxy_error_response(status, reason, keep, b) == 0) {
		unsigned char *p;

		n = evbuffer_get_length(b);
		p = evbuffer_pullup(b, -1);
		w = p ? send(c->cfd, p, n, MSG_NOSIGNAL) : -1;
		c->resp_bytes = w > 0 ? w : 0;
	}
	if (b)
		evbuffer_free(b);
	if (keep && w == (ssize_t)n && n > 0) {
		/* the bytes after the head are the next request's */
		c->len -= c->head_len;
		if (c->len)
			memmove(c->buf, c->buf + c->head_len, c->len);
		c->head_len = 0;
		conn_keepalive(c);
		return;
	}
	conn_log(c);
	conn_linger(c);
}

void conn_done(struct conn *c)
{
	conn_log(c);
	conn_linger(c);
}

/* Forget the request that just ended (its line is written). */
static void request_reset(struct conn *c)
{
	proxy_lookup_cancel(c->lookup);
	c->lookup = NULL;
	http_free(c);
	upstream_release(c);   /* (an upstream handshake the request's answer cut short) */
	free(c->url_full);
	c->url_full = NULL;
	free(c->host);
	c->host = NULL;
	free(c->host_sent);
	c->host_sent = NULL;
	free(c->sni);
	c->sni = c->inspected && c->tls_host ? strdup(c->tls_host) : NULL;
	req_release(c);
	free(c->cands);
	c->cands = NULL;
	c->cand_i = 0;
	for (size_t i = 0; i < c->n_dropped; i++)
		free(c->dropped[i]);
	c->n_dropped = 0;
	c->verdict = "deny";
	c->reason = c->deny_reason = c->rule = c->method = c->reload_reason = NULL;
	c->cred = NULL;
	c->cred_name = c->cred_event = NULL;
	c->severity_high = false;
	c->ws = false;
	c->rule_entry = NULL;
	c->logged = c->failed = c->have_dst = c->reused = c->retried = c->req_ok = false;
	c->answer_cached = false;
	c->ip_literal = false;
	c->port = 0;
	c->orig_dst_mismatch = -1;
	c->status = 0;
	c->req_bytes = c->resp_bytes = -1;
	c->head_len = 0;
}

static void start_request_clock(struct conn *c)
{
	clock_gettime(CLOCK_REALTIME, &c->t_real);
	clock_gettime(CLOCK_MONOTONIC, &c->t_mono);
}

void conn_keepalive(struct conn *c)
{
	struct proxy *px = c->px;

	conn_log(c);
	/* bytes the client sent after the request (pipelining) were left in
	 * the HTTP phase's input buffer, or are still in c->buf */
	if (c->http) {
		struct evbuffer *in = http_client_input(c);
		size_t n = in ? evbuffer_get_length(in) : 0;

		free(c->buf);
		c->buf = NULL;
		c->len = c->cap = 0;
		if (n) {
			c->buf = malloc(n);
			if (!c->buf) {
				conn_finish(c);
				return;
			}
			c->cap = c->len = (size_t)evbuffer_remove(in, c->buf, n);
		}
	} else if (!c->len) {
		free(c->buf);
		c->buf = NULL;
		c->cap = 0;
	}
	request_reset(c);
	c->nreq++;
	c->phase = PH_READ;
	c->kind = K_HTTP;   /* a kept connection speaks HTTP: no more sniffing */
	if (!c->rev || !c->timer) {
		c->logged = true;
		conn_finish(c);
		return;
	}
	/* the same read event (its callback follows the phase): the socket's
	 * epoll registration does not change between requests */
	conn_client_reading(c, true);
	event_del(c->timer);
	if (c->len) {
		/* the next request is already here.  Answered at once it
		 * would recurse (a refusal's answer comes back here): past a
		 * few levels it goes through the event loop instead, so that
		 * 10,000 pipelined refusals never run the stack out. */
		static unsigned depth;
		static const struct timeval now = { 0, 0 };

		start_request_clock(c);
		if (depth >= KEEPALIVE_MAX_DEPTH) {
			c->deferred = true;
			event_add(c->timer, &now);
			return;
		}
		event_add(c->timer, &px->tv_header);
		depth++;
		process_http(c);
		depth--;
		return;
	}
	event_add(c->timer, &px->tv_keepalive);
	if (px->draining)
		proxy_drain_idle(c);
}

void conn_fail(struct conn *c, int status, const char *reason)
{
	/* an HTTP answer is possible while nothing else was sent to the client
	 * (a CONNECT answered 200 dials after its ClientHello: too late then) */
	if ((c->kind == K_HTTP || (c->kind == K_CONNECT && c->status != 200)) && c->phase <= PH_CONNECT)
		conn_reply(c, status, reason);
	else
		conn_close(c, reason);
}

void conn_client_reading(struct conn *c, bool on)
{
	if (on == c->rev_on || !c->rev)
		return;
	c->rev_on = on;
	if (on)
		event_add(c->rev, NULL);
	else
		event_del(c->rev);
}

/* The client socket is readable: what that means depends on the phase.
 * One event for the connection's life, so that moving from one phase (or
 * request) to the next costs no epoll_ctl. */
static void on_client_io(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	switch (c->phase) {
	case PH_READ:
		on_client_read(fd, what, c);
		return;
	case PH_HELLO:
		on_hello_read(fd, what, c);
		return;
	case PH_LINGER:
		on_linger_read(fd, what, c);
		return;
	case PH_HTTP:
		http_client_readable(c);
		return;
	default:
		/* resolving or connecting: the bytes wait (paused only when
		 * some come, which is rare) */
		conn_client_reading(c, false);
		return;
	}
}

static void on_linger_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char sink[4096];
	ssize_t n = recv(fd, sink, sizeof(sink), 0);

	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)))
		return;
	conn_finish(c);
}

/* A ClientHello begun in the first PROXY_SERVER_FIRST_MS after the 200:
 * the rest of the header time for the rest of it. */
static void hello_rest(struct conn *c)
{
	unsigned all = c->px->cfg.header_timeout_ms;
	unsigned ms = all > PROXY_SERVER_FIRST_MS ? all - PROXY_SERVER_FIRST_MS : 0;
	struct timeval rest = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	event_add(c->timer, &rest);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	if (c->deferred) {
		/* a pipelined request conn_keepalive left for the loop */
		event_add(c->timer, &c->px->tv_header);
		process_http(c);
		return;
	}
	switch (c->phase) {
	case PH_READ:
		if (c->nreq && !c->len) {
			/* idle between requests: nothing to log */
			c->logged = true;
			conn_finish(c);
			return;
		}
		if (c->kind == K_HTTP || (c->kind == K_UNKNOWN && c->form == PROXY_FORM_EXPLICIT && c->len))
			conn_reply(c, 408, "header_timeout");
		else
			conn_close(c, "header_timeout");
		return;
	case PH_HELLO:
		if (c->hello_wait) {
			c->hello_wait = false;
			if (!c->len) {
				/* nothing from the client: no ClientHello to
				 * check, the CONNECT host was the decision */
				dial_tunnel(c);
				return;
			}
			hello_rest(c);
			return;
		}
		conn_close(c, "header_timeout");
		return;
	case PH_TLS_ACCEPT:
		conn_close(c, "tls_handshake_timeout");
		return;
	case PH_RESOLVE:
	case PH_CONNECT:
		conn_fail(c, 504, "connect_timeout");
		return;
	case PH_HTTP:
		http_timeout(c);
		return;
	default:
		conn_finish(c);
		return;
	}
}

/* --- reading before the decision ------------------------------------------ */

/* Read what is there into c->buf, up to `limit` bytes in all.  Returns 1
 * (bytes read), 0 (nothing yet), -1 (EOF), -2 (error, or out of memory),
 * -3 (at limit).  The bytes land on the stack first and the first read
 * makes c->buf just as large as what arrived, so a head that comes in one
 * piece (the usual case) holds its own size, not a fixed chunk: an idle
 * tunnel's setup then leaves a small hole in the heap between the records
 * it keeps, not a kilobyte (docs/performance.md, "Proxy, memory").  Later
 * reads grow it at least twofold (a head sent a byte at a time costs
 * O(n) copying, not O(n^2)).  A read asks for as much as the buffer
 * holds, READ_INITIAL at first. */
static int read_more(struct conn *c, size_t limit)
{
	char tmp[READ_CHUNK_MAX];
	size_t room;
	ssize_t n;

	if (c->len >= limit)
		return -3;
	room = c->len > READ_INITIAL ? c->len : READ_INITIAL;
	if (room > limit - c->len)
		room = limit - c->len;
	if (room > sizeof(tmp))
		room = sizeof(tmp);
	n = recv(c->cfd, tmp, room, 0);
	if (n > 0) {
		if (c->len + (size_t)n > c->cap) {
			size_t ncap = c->len + (size_t)n;
			char *nb;

			if (c->len && ncap < 2 * c->cap)
				ncap = 2 * c->cap < limit ? 2 * c->cap : limit;
			nb = realloc(c->buf, ncap);
			if (!nb)
				return -2;
			c->buf = nb;
			c->cap = ncap;
		}
		memcpy(c->buf + c->len, tmp, (size_t)n);
		c->len += (size_t)n;
		return 1;
	}
	if (n == 0)
		return -1;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return -2;
}

/* Replace *dst by a copy of src (NULL on allocation failure: only a log
 * field is lost; callers that need the value check it). */
static void set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = strdup(src);
}

/* Same, with bytes other than printable ASCII replaced by '?' (untrusted
 * text bound for the log). */
static void set_printable(char **dst, const char *src)
{
	set_str(dst, src);
	for (char *p = *dst; p && *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			*p = '?';
}

/*
 * Apply a policy decision.  Returns true to go on (allowed, or audit mode's
 * "would deny"); false when the connection was refused (and is gone).
 */
static bool apply_decision(struct conn *c, const struct proxy_decision *d)
{
	struct proxy *px = c->px;

	set_str(&c->host, d->host);
	c->ip_literal = d->ip_literal;
	c->ip_family = d->ip_family;
	memcpy(c->ip, d->ip, sizeof(c->ip));
	c->cred = NULL;
	if (d->allow) {
		c->verdict = c->deny_reason ? "would_deny" : "allow";
		c->rule = d->entry ? d->entry->name : NULL;
		/* the credential goes with a request its entry allowed, never
		 * with a would-be denial, never with a CONNECT */
		if (c->kind == K_HTTP && !c->deny_reason)
			c->cred = proxy_cred_for(px, d->entry);
		c->rule_entry = d->entry;
		return true;
	}
	if (px->mode == SLUICE_MODE_AUDIT && d->audit_ok) {
		c->verdict = "would_deny";
		if (!c->deny_reason)
			c->deny_reason = d->reason;
		return true;
	}
	c->verdict = "deny";
	if (c->kind == K_HTTP || c->kind == K_CONNECT)
		conn_reply(c, d->status, d->reason);
	else
		conn_close(c, d->reason);
	return false;
}

/*
 * A request that carries a credential's placeholder (in its head: request
 * line, URL, any header) to a destination that does not get that
 * credential is exfiltration: refused (403 credential_misdirected), also in
 * audit mode, and logged as a high-severity event.  Returns true when
 * refused (and `c` is gone).  The body is looked at in http.c.
 */
static bool credential_misdirected(struct conn *c)
{
	const struct sluice_secret *s = proxy_cred_misdirected(c->px, c->cred, c->buf, c->head_len);

	if (!s)
		return false;
	c->verdict = "deny";
	c->cred = NULL;
	c->cred_name = s->name;
	c->severity_high = true;
	conn_reply(c, 403, "credential_misdirected");
	return true;
}

/* The executable that made the connection, as the kernel recorded it in
 * the flow map (0/0 when it could not: matches no `programs:` entry). */
const struct sluice_exe_id *conn_who(const struct conn *c, struct sluice_exe_id *who)
{
	who->dev = c->orig.exe_dev;
	who->ino = c->orig.exe_ino;
	return who;
}

/* c->exe: the path of the executable the client runs, for the log lines,
 * read at accept (the client may be gone when the line is written). */
static void conn_note_exe(struct conn *c)
{
	struct sluice_exe_id who;
	char path[PATH_MAX];

	if (!c->orig.exe_ino || !sluice_pid_executable((int)c->orig.pid, conn_who(c, &who), path, sizeof(path)))
		return;
	c->exe = strdup(path);
}

static void on_http_head(struct conn *c)
{
	struct proxy *px = c->px;
	struct proxy_refusal err = { 400, "malformed_request" };
	struct sluice_exe_id who;
	struct proxy_decision d;
	char url[PROXY_TARGET_MAX + SLUICE_HOST_MAX + 32];

	c->kind = K_HTTP;
	if (!req_alloc(c)) {
		conn_reply(c, 503, "out_of_memory");
		return;
	}
	if (proxy_request_parse(c->req, c->buf, c->head_len, &err) < 0) {
		char attempted[SLUICE_HOST_MAX + 1];

		if (c->req->target_buf || c->req->method_id == HTTP_CONNECT)
			c->method = http_method_str(c->req->method_id);
		/* the line says which host the refused request was for */
		if (proxy_request_attempted_host(c->req, attempted, sizeof(attempted)))
			set_printable(&c->host, attempted);
		conn_reply(c, err.status, err.reason);
		return;
	}
	c->req_ok = true;
	c->method = c->req->method;
	if (c->req->method_id == HTTP_CONNECT)
		c->kind = K_CONNECT;
	/* inside terminated TLS requests are origin-form, for the TLS port */
	if (proxy_request_target(c->req, c->inspected ? PROXY_FORM_TRANSPARENT : c->form,
				 c->inspected ? c->tls_port : c->orig.dport, c->target, &err) < 0) {
		set_printable(&c->host, c->target->host);
		conn_reply(c, err.status, err.reason);
		return;
	}
	c->target->tls = c->inspected;
	c->port = c->target->port;
	if (proxy_host_replaced(c->req, c->target)) {
		char sent[SLUICE_HOST_MAX + 32];

		snprintf(sent, sizeof(sent), "%.*s", (int)c->req->host->value_len, c->req->host->value);
		set_printable(&c->host_sent, sent);
	}
	if (c->over_cap) {
		set_printable(&c->host, c->target->host);
		conn_reply(c, 503, "connection_limit");
		return;
	}
	if (c->kind == K_CONNECT)
		proxy_decide_tls_for(px->policy, conn_who(c, &who), c->target->host, c->target->port, &d);
	else
		proxy_decide_url_for(px->policy, conn_who(c, &who), c->inspected ? "https" : "http",
				     c->target->host, c->target->port, c->req->method, c->target->path, &d);
	/* an upgrade to a WebSocket: only where the entry says so */
	c->ws = c->kind == K_HTTP && proxy_ws_requested(c->req);
	if (c->ws)
		proxy_ws_decide(c->req, &d);
	proxy_redecide_head(c, &d);   /* draining after a reload: the new policy too */
	if (c->kind == K_HTTP) {
		proxy_target_url(c->target, d.host, url, sizeof(url));
		c->url_full = strdup(url);
	}
	if (c->inspected && !d.ip_literal && c->tls_host && strcmp(d.host, c->tls_host) != 0 &&
	    d.reason && strcmp(d.reason, "bad_host") != 0) {
		/* the leaf was for the SNI: a request for another name on
		 * this connection is misdirected (RFC 9110 15.5.20) */
		set_str(&c->host, d.host);
		conn_reply(c, 421, "host_sni_mismatch");
		return;
	}
	if (!apply_decision(c, &d))
		return;
	if (px->secrets.n && credential_misdirected(c))
		return;
	if (c->kind == K_CONNECT) {
		/* no upstream yet: an inspected name's is dialed for a request
		 * inside, a passthrough's once its ClientHello is checked */
		c->inspect = d.allow && d.inspect && px->ca;
		connect_established(c);
		return;
	}
	c->req->websocket = c->ws;   /* forwarded with the upgrade (allowed, or audit mode) */
	conn_start_dial(c);
}

static void on_tls_hello(struct conn *c, const struct sni_result *h)
{
	struct proxy *px = c->px;
	struct sluice_exe_id who;
	struct proxy_decision d;
	char sni_norm[SLUICE_HOST_MAX + 1];

	conn_client_reading(c, false);
	c->kind = K_TLS;
	c->port = c->orig.dport;
	if (h->has_sni)
		set_printable(&c->sni, h->sni);
	if (c->over_cap) {
		conn_close(c, "connection_limit");
		return;
	}
	memset(&d, 0, sizeof(d));
	if (proxy_check_hello(h, NULL, sni_norm, &d) < 0) {
		/* audit mode can go on only with a name to resolve (ECH's outer SNI) */
		if (px->mode == SLUICE_MODE_AUDIT && sni_norm[0]) {
			c->deny_reason = d.reason;
		} else {
			c->verdict = "deny";
			conn_close(c, d.reason);
			return;
		}
	}
	set_str(&c->sni, sni_norm);
	proxy_decide_tls_for(px->policy, conn_who(c, &who), sni_norm, c->orig.dport, &d);
	proxy_redecide_head(c, &d);
	if (!apply_decision(c, &d))
		return;
	if (d.allow && d.inspect && px->ca && !c->deny_reason) {
		c->inspect = true;
		inspect_start(c);
		return;
	}
	conn_start_dial(c);
}

static void process_tls(struct conn *c)
{
	struct sni_result h;
	size_t need = 0;

	switch (sni_parse((const uint8_t *)c->buf, c->len, &h, &need)) {
	case SNI_NEED_MORE:
		if (need > TLS_PEEK_MAX)
			conn_close(c, "bad_client_hello");
		return;
	case SNI_OK:
		on_tls_hello(c, &h);
		return;
	default:
		/* the name it asked for, when the hello got that far, and the port */
		if (h.has_sni)
			set_printable(&c->sni, h.sni);
		if (c->have_orig)
			c->port = c->orig.dport;
		c->verdict = "deny";
		conn_close(c, "bad_client_hello");
		return;
	}
}

static void process_http(struct conn *c)
{
	struct proxy_refusal err = { 400, "malformed_request" };

	c->deferred = false;
	switch (proxy_head_scan(c->buf, c->len, &c->px->cfg.limits, true, &c->head_len, &err)) {
	case PROXY_SCAN_INCOMPLETE:
		if (proxy_request_precheck(c->buf, c->len, &err) < 0) {
			/* not HTTP at all on a transparent connection: no HTTP answer */
			if (c->form == PROXY_FORM_TRANSPARENT && strcmp(err.reason, "unrecognised_protocol") == 0)
				conn_close(c, err.reason);
			else
				conn_reply(c, err.status, err.reason);
		}
		return;
	case PROXY_SCAN_ERROR:
		conn_reply(c, err.status, err.reason);
		return;
	case PROXY_SCAN_COMPLETE:
		on_http_head(c);
		return;
	}
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	size_t limit = c->kind == K_TLS ? TLS_PEEK_MAX
		     : c->kind == K_HTTP ? c->px->cfg.limits.max_head + 1 : READ_INITIAL;
	bool idle = c->nreq && !c->len;
	int r = read_more(c, limit);

	if (r == 0)
		return;
	if (idle && r < 0 && r != -3) {
		/* a kept-alive connection closed between requests */
		c->logged = true;
		conn_finish(c);
		return;
	}
	if (idle) {
		/* the next request starts: its own clock and header deadline */
		start_request_clock(c);
		event_del(c->timer);
		event_add(c->timer, &c->px->tv_header);
	}
	if (r == -1) {
		conn_close(c, c->len ? "client_closed" : "client_closed_early");
		return;
	}
	if (r == -2) {
		conn_close(c, "client_error");
		return;
	}
	if (r == -3) {
		/* cannot happen for HTTP (the scanner stops at its limit first) */
		conn_close(c, "bad_client_hello");
		return;
	}
	if (c->kind == K_UNKNOWN) {
		unsigned char b = (unsigned char)c->buf[0];

		if (c->form == PROXY_FORM_EXPLICIT || (b >= 'A' && b <= 'Z')) {
			c->kind = K_HTTP;
		} else if (b == TLS_CONTENT_HANDSHAKE) {
			c->kind = K_TLS;
		} else {
			c->verdict = "deny";
			conn_close(c, "unrecognised_protocol");
			return;
		}
	}
	if (c->kind == K_TLS)
		process_tls(c);
	else
		process_http(c);
}

/* --- the upstream is connected ----------------------------------------------- */

/* CONNECT decided: "200", then read the ClientHello (PH_HELLO).  Nothing
 * is dialed yet (an inspected name: not before a request inside is
 * decided; a passthrough: not before the ClientHello's SNI is checked, or
 * the client stayed silent for PROXY_SERVER_FIRST_MS, as a server-first
 * protocol's does), so a refused tunnel never reaches the origin. */
static void connect_established(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	ssize_t w = send(c->cfd, ok, sizeof(ok) - 1, MSG_NOSIGNAL);

	c->status = 200;
	if (w != (ssize_t)(sizeof(ok) - 1)) {
		c->phase = PH_HELLO;
		conn_close(c, "client_error");
		return;
	}
	/* bytes after the CONNECT head are the tunnel's first bytes */
	memmove(c->buf, c->buf + c->head_len, c->len - c->head_len);
	c->len -= c->head_len;
	c->head_len = 0;
	if (!c->len) {
		/* no buffer while the client says nothing (a thousand tunnels
		 * opened at once would leave a thousand holes in the heap) */
		free(c->buf);
		c->buf = NULL;
		c->cap = 0;
	}
	req_release(c);
	c->phase = PH_HELLO;
	/* a server-first protocol (SSH, SMTP) sends no ClientHello: a
	 * passthrough's timer fires first PROXY_SERVER_FIRST_MS after the 200
	 * (on_timer: dialed if nothing came) */
	c->hello_wait = !c->inspect;
	conn_client_reading(c, true);
	event_del(c->timer);
	if (c->hello_wait) {
		static const struct timeval silent = { 0, PROXY_SERVER_FIRST_MS * 1000 };

		event_add(c->timer, &silent);
	} else {
		event_add(c->timer, &c->px->tv_header);
	}
	if (c->len)
		on_hello_read(c->cfd, 0, c);
}

/* c->ufd is connected to the vetted c->dst: go on with the request. */
void conn_upstream_ready(struct conn *c)
{
	conn_timer_plain(c);
	free(c->cands);
	c->cands = NULL;
	event_del(c->timer);

	switch (c->kind) {
	case K_HTTP:
		if (c->inspected && !c->reused) {
			inspect_upstream(c);   /* a new connection: TLS to the origin first */
			return;
		}
		c->phase = PH_HTTP;
		http_start(c);
		return;
	case K_TLS:
		tunnel_start(c);
		return;
	case K_CONNECT:
		/* dialed after the ClientHello was checked (or the client was silent) */
		tunnel_start(c);
		return;
	default:
		conn_close(c, "internal_error");
		return;
	}
}

/* --- CONNECT: the tunnel's first bytes ---------------------------------------- */

/* A passthrough CONNECT whose first bytes were checked (or that has none):
 * dial now, then relay (conn_upstream_ready).  The bytes read so far stay in
 * c->buf and go first. */
static void dial_tunnel(struct conn *c)
{
	c->hello_wait = false;
	conn_client_reading(c, false);
	conn_start_dial(c);
}

static void on_hello_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct proxy *px = c->px;
	struct sni_result h;
	struct proxy_decision d;
	char sni_norm[SLUICE_HOST_MAX + 1];
	size_t need = 0;

	if (what) {   /* called by the event loop (0: leftover bytes only) */
		int r = read_more(c, TLS_PEEK_MAX);

		if (r == 0)
			return;
		if (r == -1) {
			conn_close(c, "client_closed_early");
			return;
		}
		if (r < 0) {
			conn_close(c, r == -3 ? "bad_client_hello" : "client_error");
			return;
		}
	}
	if ((unsigned char)c->buf[0] != TLS_CONTENT_HANDSHAKE) {
		if (c->inspect) {
			/* an inspected name is only ever spoken to in TLS */
			c->verdict = "deny";
			conn_close(c, "not_tls");
			return;
		}
		dial_tunnel(c);   /* not TLS: the CONNECT host was the decision */
		return;
	}
	switch (sni_parse((const uint8_t *)c->buf, c->len, &h, &need)) {
	case SNI_NEED_MORE:
		if (need > TLS_PEEK_MAX)
			conn_close(c, "bad_client_hello");
		return;
	case SNI_OK:
		break;
	default:
		conn_close(c, "bad_client_hello");
		return;
	}
	if (h.has_sni)
		set_printable(&c->sni, h.sni);
	memset(&d, 0, sizeof(d));
	if (proxy_check_hello(&h, c->host, sni_norm, &d) < 0) {
		if (sni_norm[0])
			set_str(&c->sni, sni_norm);
		/* (an inspected CONNECT has no upstream to let it through to) */
		if (px->mode == SLUICE_MODE_AUDIT && !c->inspect) {
			c->verdict = "would_deny";
			if (!c->deny_reason)
				c->deny_reason = d.reason;
		} else {
			c->verdict = "deny";
			conn_close(c, d.reason);
			return;
		}
	} else {
		set_str(&c->sni, sni_norm);
	}
	if (c->inspect) {
		conn_client_reading(c, false);
		inspect_start(c);
		return;
	}
	dial_tunnel(c);
}

/* --- accept ------------------------------------------------------------------- */

void proxy_accept(struct proxy *px, int fd, const struct sockaddr *peer, socklen_t peerlen, const char *refuse)
{
	struct sluice_flow_key key;
	struct conn *c = calloc(1, sizeof(*c));
	int r;

	if (!c) {
		close(fd);
		return;
	}
	px->n_conns++;
	proxy_conn_track(px, c);
	c->px = px;
	c->cfd = fd;
	proxy_set_nodelay(fd);
	c->ufd = -1;
	c->verdict = "deny";
	c->orig_dst_mismatch = -1;
	c->req_bytes = c->resp_bytes = -1;
	clock_gettime(CLOCK_REALTIME, &c->t_real);
	clock_gettime(CLOCK_MONOTONIC, &c->t_mono);
	memcpy(&c->peer, peer, peerlen < sizeof(c->peer) ? peerlen : sizeof(c->peer));

	/* who is this?  Only the kernel's record says; never the client. */
	if (sluice_flow_key_of_fd(fd, &key) < 0) {
		log_warn("flow key of accepted connection");
		conn_close(c, "no_flow_entry");
		return;
	}
	r = sluice_flow_take(px->flow_fd, &key, &c->orig);
	if (r == -ENOENT) {
		conn_close(c, "no_flow_entry");
		return;
	}
	if (r < 0) {
		errno = -r;
		log_warn("flow map lookup");
		conn_close(c, "flow_map_error");
		return;
	}
	c->have_orig = true;
	c->form = (c->orig.flags & SLUICE_ORIG_EXPLICIT) ? PROXY_FORM_EXPLICIT : PROXY_FORM_TRANSPARENT;
	conn_note_exe(c);
	/* at the descriptor limit: refused at once, so that the connections
	 * already open keep the descriptors they need (upstream, pipes) */
	if (!refuse && px->fd_cap && px->n_conns > px->fd_cap)
		refuse = "descriptor_limit";
	if (refuse) {
		conn_close(c, refuse);
		return;
	}
	c->over_cap = px->n_conns > px->cfg.max_conns;

	c->rev = event_new(px->base, fd, EV_READ | EV_PERSIST, on_client_io, c);
	c->timer = evtimer_new(px->base, on_timer, c);
	if (!c->rev || !c->timer) {
		conn_close(c, "out_of_memory");
		return;
	}
	conn_client_reading(c, true);
	event_add(c->timer, &px->tv_header);
}

struct conn *conn_new_inspected(struct proxy *px, int fd, const struct conn *outer)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(fd);
		return NULL;
	}
	px->n_conns++;
	proxy_conn_track(px, c);
	c->px = px;
	c->cfd = fd;
	c->ufd = -1;
	c->verdict = "deny";
	c->orig_dst_mismatch = -1;
	c->req_bytes = c->resp_bytes = -1;
	start_request_clock(c);
	/* who the client is and where it was going: the outer connection's
	 * record from the kernel, nothing the TLS session says */
	c->peer = outer->peer;
	c->orig = outer->orig;
	c->have_orig = outer->have_orig;
	c->exe = outer->exe ? strdup(outer->exe) : NULL;
	c->form = outer->form;
	c->over_cap = outer->over_cap;
	c->kind = K_HTTP;
	c->inspected = true;
	c->tls_port = outer->port;
	c->tls_host = strdup(outer->sni);
	c->sni = strdup(outer->sni);
	c->rev = event_new(px->base, fd, EV_READ | EV_PERSIST, on_client_io, c);
	c->timer = evtimer_new(px->base, on_timer, c);
	if (!c->rev || !c->timer || !c->tls_host || !c->sni) {
		c->logged = true;
		conn_finish(c);
		return NULL;
	}
	conn_client_reading(c, true);
	event_add(c->timer, &px->tv_header);
	return c;
}

void proxy_config_defaults(struct proxy_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ready_fd = -1;
	cfg->mode = -1;
	cfg->sandbox = "default";
	cfg->max_conns = 16384;
	cfg->header_timeout_ms = 10000;
	cfg->idle_timeout_ms = 300000;
	cfg->connect_timeout_ms = 10000;
	cfg->linger_ms = 2000;
	cfg->keepalive_timeout_ms = 60000;
	cfg->upstream_idle_ms = 10000;
	cfg->upstream_pool = 32;
	cfg->upstream_pool_total = 256;
	cfg->dns_cache_entries = 1024;
	cfg->dns_max_ttl = 60;
	cfg->ca_cert_fd = -1;
	cfg->ca_fd = -1;
	cfg->upstream_ca_fd = -1;
	cfg->limits = proxy_default_limits;
	cfg->drain_timeout_ms = 10000;
}
