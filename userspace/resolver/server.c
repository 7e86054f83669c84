/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server.c - sluice-resolver's sockets on libevent 2.1.
 *
 * One transaction (struct txn) per client query: decide (resolver.h), then
 * either answer at once or ask the upstream.  Upstream over UDP uses a new
 * connected socket per attempt, so the kernel picks a random source port,
 * and a random ID from getrandom(2); a reply must come from the upstream
 * address (connected socket), carry our ID and repeat our question
 * (RFC 5452 9.1), else it is ignored.  One retry after the timeout, then
 * SERVFAIL.  A truncated UDP reply is asked again over TCP; if that fails
 * the client gets TC and retries over TCP itself.  Queries that came over
 * TCP go upstream over TCP (RFC 7766).
 *
 * A query the policy allows is answered from the cache when it holds a live
 * reply for the name and qtype: the same answer filter runs on the cached
 * bytes (rsv_process_cached()), only the upstream round trip is saved.
 *
 * UDP queries are read, and those answered at once (refused, cached)
 * answered, a batch at a time (udp_batch.c: recvmmsg, the lines in one
 * write, sendmmsg); each is decided alone by handle_query().  On every path
 * a query's line is written before its answer is sent (txn_end()).
 *
 * Descriptors: the TCP clients and the upstream queries (a socket each) fit
 * RLIMIT_NOFILE (rsv_server_fit_descriptors), so that clients holding
 * connections open never take what UDP lookups need; a new client past the
 * limit closes the longest idle one, and EMFILE all the same refuses one
 * and pauses (accept_backoff.h); each counted (rsv_fair_count_tcp).
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "accept_backoff.h"
#include "fair.h"
#include "fds.h"
#include "flow.h"
#include "log.h"
#include "udp_batch.h"

#define UDP_ROUNDS     2        /* recvmmsg batches per wake-up (2 x RSV_UDP_BATCH) */
#define UDP_RCVBUF     (1 << 20)
#define TCP_MAX_PENDING 16      /* queries in flight per TCP client (RFC 7766 6.2.1.1) */
#define MAX_TRIES      2        /* one retry */
#define MAX_BOGUS      16       /* non-matching replies tolerated per attempt */
#define FDS_SPARE      16       /* kept free beyond the budget: SIGHUP's reopen, libevent */
#define DRAIN_GRACE_MS 1000     /* a draining server's TCP client: its last query may come this long */

struct conn;

struct txn {
	struct rsv_server *srv;
	struct rsv_decision d;
	struct timespec start;
	/* client */
	struct sockaddr_storage client;
	socklen_t client_len;
	int udp_fd;                  /* UDP: the listener it came on */
	struct conn *conn;           /* TCP: NULL once the client is gone */
	struct txn *cprev, *cnext;   /* in conn->txns */
	struct txn *sprev, *snext;   /* in rsv_server.txns (all of them) */
	bool counted;                /* holds an in-flight slot */
	bool have_orig;              /* orig: the kernel redirected it (flow.h) */
	struct sluice_orig orig;
	bool silent;                 /* dropped by the rate limit: counted, no line */
	/* upstream */
	unsigned tries;              /* attempts on the current transport */
	unsigned sent;               /* queries sent upstream in all (log) */
	bool via_tcp;
	bool tc_fallback;            /* TCP because the UDP reply was truncated */
	uint16_t up_id;
	int up_fd;
	struct event *up_ev;
	struct event *timer;
	struct bufferevent *up_bev;
	unsigned bogus;
	uint8_t *upq;
	size_t upq_len;
};

struct conn {
	struct rsv_server *srv;
	struct bufferevent *bev;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct txn *txns;            /* queries in flight (list) */
	unsigned pending;
	bool closing;
	bool have_orig;              /* orig: the kernel redirected the connection (flow.h) */
	struct sluice_orig orig;
	double last_active;          /* monotonic seconds: accepted, or a query read */
	struct conn *prev, *next;    /* in rsv_server.conns */
};

struct udpl {
	int fd;
	struct event *ev;
	struct rsv_server *srv;
	uint32_t drops;              /* the kernel's drop count (SO_MEMINFO) when last counted */
	bool have_drops;
};

struct rsv_server {
	struct event_base *base;
	struct rsv_server_cfg *cfg;
	struct udpl **udp;      /* each allocated alone: events point at them */
	size_t n_udp;
	struct evconnlistener **tcp;
	size_t n_tcp;
	struct conn *conns;
	struct txn *txns;            /* every query not yet finished */
	bool stopping;
	bool draining;               /* rsv_server_drain: no new query but a TCP client's last ones */
	unsigned n_conns;
	unsigned inflight;
	unsigned tcp_cap;            /* TCP clients at once: cfg's, or what the descriptors allow */
	unsigned inflight_cap;       /* upstream queries at once (each holds a socket), likewise */
	struct sluice_accept_backoff accept;  /* at EMFILE: refuse one through a reserve, pause */
	char upstream_str[64];
	struct rsv_cache *cache;     /* NULL: no cache */
	struct rsv_udp_batch *batch; /* the UDP batch being served (udp_batch.h) */
};

void rsv_server_cfg_default(struct rsv_server_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->ctx.mode = SLUICE_MODE_ENFORCE;
	c->lc.mode = SLUICE_MODE_ENFORCE;
	c->log_fd = STDOUT_FILENO;
	c->timeout_ms = 2000;
	c->tcp_timeout_ms = 5000;
	c->max_inflight = 1024;
	c->max_tcp_clients = 256;
	c->cache_size = 4096;
	c->cache_max_ttl = 300;
	c->flow_fd = -1;
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timeval ms_tv(unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	return tv;
}

static uint16_t random_id(void)
{
	uint16_t id;

	/* getrandom(2) of <= 256 bytes does not fail once the pool is up */
	while (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		if (errno != EINTR)
			fatal("getrandom");
	return id;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

static void addr_ip_port(const struct sockaddr_storage *ss, char *ip, size_t iplen, int *port)
{
	*port = -1;
	ip[0] = '\0';
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, (socklen_t)iplen);
		*port = ntohs(in->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, (socklen_t)iplen);
		*port = ntohs(in6->sin6_port);
	}
}

/* --- transactions ------------------------------------------------------- */

static void conn_free(struct conn *c);
static void conn_resume(struct conn *c);

/* Draining and nothing left in flight, no TCP client open: leave the loop. */
static void drained_check(struct rsv_server *s)
{
	if (s->draining && !s->stopping && !s->txns && !s->conns)
		event_base_loopexit(s->base, NULL);
}

static void up_close(struct txn *t)
{
	if (t->up_ev) {
		event_free(t->up_ev);
		t->up_ev = NULL;
	}
	if (t->up_fd >= 0) {
		close(t->up_fd);
		t->up_fd = -1;
	}
	if (t->timer)
		evtimer_del(t->timer);
	if (t->up_bev) {
		bufferevent_free(t->up_bev);
		t->up_bev = NULL;
	}
}

static void send_client(struct txn *t);

/* Log the query, then send its response if `answer` (the line is out, or
 * held in the UDP batch's, before the answer: udp_batch.h), release
 * everything. */
static void txn_end(struct txn *t, bool answer)
{
	struct rsv_server *s = t->srv;
	struct timespec end;
	struct rsv_logmeta m;
	char ip[INET6_ADDRSTRLEN];
	int port;

	clock_gettime(CLOCK_MONOTONIC, &end);
	addr_ip_port(&t->client, ip, sizeof(ip), &port);
	memset(&m, 0, sizeof(m));
	m.src_ip = ip[0] ? ip : NULL;
	m.src_port = port;
	m.orig = t->have_orig ? &t->orig : NULL;
	m.duration_ns = (int64_t)(end.tv_sec - t->start.tv_sec) * 1000000000LL +
			(end.tv_nsec - t->start.tv_nsec);
	if (t->sent) {
		m.upstream = s->upstream_str;
		m.upstream_transport = t->via_tcp ? "tcp" : "udp";
		m.upstream_tries = t->sent;
	}
	/* a line that cannot be written is counted lost by the writer, which
	 * says so on stderr once per state change */
	if (!t->silent)
		rsv_log_query(s->cfg->log, &t->d, &m);
	if (answer)
		send_client(t);

	up_close(t);
	if (t->timer)
		event_free(t->timer);
	if (t->counted)
		s->inflight--;
	if (t->sprev)
		t->sprev->snext = t->snext;
	else
		s->txns = t->snext;
	if (t->snext)
		t->snext->sprev = t->sprev;
	if (t->conn) {
		struct conn *c = t->conn;

		if (t->cprev)
			t->cprev->cnext = t->cnext;
		else
			c->txns = t->cnext;
		if (t->cnext)
			t->cnext->cprev = t->cprev;
		c->pending--;
		if (!c->closing)
			conn_resume(c);
		else if (c->pending == 0 && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
			conn_free(c);
		/* else conn_write_cb() closes once the answers are out */
	}
	rsv_decision_free(&t->d);
	free(t->upq);
	free(t);
	drained_check(s);
}

/* A query that gets no answer: log it, release everything. */
static void txn_finish(struct txn *t)
{
	txn_end(t, false);
}

static void send_client(struct txn *t)
{
	if (!t->d.resp)
		return;
	if (!t->d.tcp) {
		/* in a UDP batch: sent after the batch's lines are written */
		if (rsv_udp_batch_answer(t->srv->batch, t->udp_fd, &t->client, t->client_len, &t->d.resp,
					 t->d.resp_len))
			return;
		if (sendto(t->udp_fd, t->d.resp, t->d.resp_len, 0, (struct sockaddr *)&t->client,
			   t->client_len) < 0)
			log_debug("sendto client: %s", strerror(errno));
	} else if (t->conn) {
		uint8_t hdr[2] = { (uint8_t)(t->d.resp_len >> 8), (uint8_t)t->d.resp_len };
		struct evbuffer *out = bufferevent_get_output(t->conn->bev);

		if (evbuffer_add(out, hdr, 2) < 0 || evbuffer_add(out, t->d.resp, t->d.resp_len) < 0)
			log_warnx("cannot queue a TCP response");
	}
}

static void txn_fail(struct txn *t, int rcode, bool tc, const char *reason)
{
	bool answer;

	up_close(t);
	answer = rsv_fail(&t->d, rcode, tc, reason) == 0;
	if (!answer)
		t->d.rcode = -1;
	txn_end(t, answer);
}

static void up_udp_start(struct txn *t);
static void up_tcp_start(struct txn *t);

static void attempt_failed(struct txn *t, const char *reason)
{
	up_close(t);
	if (t->tries < MAX_TRIES) {
		if (t->via_tcp)
			up_tcp_start(t);
		else
			up_udp_start(t);
		return;
	}
	if (t->tc_fallback)
		txn_fail(t, RSV_NOERROR, true, "upstream_truncated");
	else
		txn_fail(t, RSV_SERVFAIL, false, reason);
}

/* A reply arrived (either transport).  Returns true if the txn is done. */
static bool got_reply(struct txn *t, const uint8_t *buf, size_t len)
{
	struct rsv_server *s = t->srv;

	switch (rsv_process_reply(&s->cfg->ctx, &t->d, t->up_id, buf, len, t->via_tcp)) {
	case RSV_REPLY_DONE:
		/* the upstream's bytes, not our response: every later use is
		 * filtered again (a lost entry only costs a round trip) */
		if (t->d.cache_ttl)
			(void)rsv_cache_put(s->cache, t->d.name, t->d.qtype, buf, len, t->d.cache_ttl,
					    mono_now());
		up_close(t);
		txn_end(t, true);
		return true;
	case RSV_REPLY_TRUNCATED:
		/* RFC 1035 4.2.1 / RFC 7766 5: ask again over TCP */
		up_close(t);
		t->via_tcp = true;
		t->tc_fallback = true;
		t->tries = 0;  /* TCP gets its own tries */
		up_tcp_start(t);
		return true;
	case RSV_REPLY_IGNORE:
	default:
		if (++t->bogus > MAX_BOGUS) {
			attempt_failed(t, "upstream_bogus");
			return true;
		}
		return false;
	}
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	attempt_failed(arg, "upstream_timeout");
}

static void up_udp_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct txn *t = arg;
	uint8_t buf[65536];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			/* ICMP unreachable on a connected socket: ECONNREFUSED */
			attempt_failed(t, "upstream_error");
			return;
		}
		if (got_reply(t, buf, (size_t)n))
			return;
	}
}

static bool build_upq(struct txn *t)
{
	free(t->upq);
	t->upq = NULL;
	t->up_id = random_id();
	t->bogus = 0;
	return rsv_upstream_query(&t->d, t->up_id, &t->upq, &t->upq_len) == 0;
}

static void up_udp_start(struct txn *t)
{
	struct rsv_server *s = t->srv;
	struct timeval tv = ms_tv(s->cfg->timeout_ms);
	int fd;

	t->tries++;
	t->sent++;
	t->via_tcp = false;
	if (!build_upq(t)) {
		txn_fail(t, RSV_SERVFAIL, false, "internal_error");
		return;
	}
	fd = socket(s->cfg->upstream.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_warn("upstream socket");
		attempt_failed(t, "upstream_error");
		return;
	}
	t->up_fd = fd;
	/* connect(2) binds a random ephemeral port and filters the source */
	if (connect(fd, (struct sockaddr *)&s->cfg->upstream, s->cfg->upstream_len) < 0 ||
	    send(fd, t->upq, t->upq_len, 0) < 0) {
		log_debug("upstream %s: %s", s->upstream_str, strerror(errno));
		attempt_failed(t, "upstream_error");
		return;
	}
	t->up_ev = event_new(s->base, fd, EV_READ | EV_PERSIST, up_udp_read_cb, t);
	if (!t->up_ev || event_add(t->up_ev, NULL) < 0 || evtimer_add(t->timer, &tv) < 0) {
		txn_fail(t, RSV_SERVFAIL, false, "internal_error");
		return;
	}
}

/* One DNS-over-TCP message at the head of `in` (RFC 1035 4.2.2: a two-byte
 * length in network byte order, then the message).  Returns 1 with *msg
 * pointing at the message inside `in` (valid until `in` is drained; the
 * caller drains 2 + *mlen) and *mlen its length, 0 while the message is
 * incomplete, -1 when the bytes cannot be made contiguous (no memory). */
static int tcp_frame(struct evbuffer *in, uint8_t **msg, size_t *mlen)
{
	uint8_t hdr[2];
	uint8_t *p;

	if (evbuffer_copyout(in, hdr, 2) != 2)
		return 0;
	*mlen = (size_t)hdr[0] << 8 | hdr[1];
	if (evbuffer_get_length(in) < 2 + *mlen)
		return 0;
	p = evbuffer_pullup(in, (ev_ssize_t)(2 + *mlen));
	if (!p)
		return -1;
	*msg = p + 2;
	return 1;
}

static void up_tcp_read_cb(struct bufferevent *bev, void *arg)
{
	struct txn *t = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	for (;;) {
		size_t mlen;
		uint8_t *msg;
		int r = tcp_frame(in, &msg, &mlen);

		if (r == 0)
			return;
		if (r < 0) {
			attempt_failed(t, "internal_error");
			return;
		}
		if (got_reply(t, msg, mlen))
			return;   /* t may be gone */
		evbuffer_drain(in, 2 + mlen);
	}
}

static void up_tcp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct txn *t = arg;

	if (what & BEV_EVENT_CONNECTED)
		return;
	attempt_failed(t, what & BEV_EVENT_TIMEOUT ? "upstream_timeout" : "upstream_error");
}

static void up_tcp_start(struct txn *t)
{
	struct rsv_server *s = t->srv;
	struct timeval tv = ms_tv(s->cfg->tcp_timeout_ms);
	uint8_t hdr[2];

	t->tries++;
	t->sent++;
	t->via_tcp = true;
	if (!build_upq(t)) {
		txn_fail(t, RSV_SERVFAIL, false, "internal_error");
		return;
	}
	t->up_bev = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!t->up_bev) {
		txn_fail(t, RSV_SERVFAIL, false, "internal_error");
		return;
	}
	bufferevent_set_timeouts(t->up_bev, &tv, &tv);
	hdr[0] = (uint8_t)(t->upq_len >> 8);
	hdr[1] = (uint8_t)t->upq_len;
	if (evbuffer_add(bufferevent_get_output(t->up_bev), hdr, 2) < 0 ||
	    evbuffer_add(bufferevent_get_output(t->up_bev), t->upq, t->upq_len) < 0) {
		txn_fail(t, RSV_SERVFAIL, false, "internal_error");
		return;
	}
	/* Callbacks are set only after connect: on an immediate failure
	 * bufferevent_socket_connect() runs the event callback itself before
	 * returning -1, and this txn must fail exactly once. */
	if (bufferevent_socket_connect(t->up_bev, (struct sockaddr *)&s->cfg->upstream,
				       (int)s->cfg->upstream_len) < 0) {
		attempt_failed(t, "upstream_error");
		return;
	}
	bufferevent_setcb(t->up_bev, up_tcp_read_cb, NULL, up_tcp_event_cb, t);
	if (bufferevent_enable(t->up_bev, EV_READ | EV_WRITE) < 0) {
		txn_fail(t, RSV_SERVFAIL, false, "internal_error");
		return;
	}
	/* a whole-exchange deadline besides the bufferevent's idle timeouts */
	evtimer_add(t->timer, &tv);
}

/* Answer t (a FORWARD decision) from the cache if it holds a live reply.
 * Returns true if t is finished. */
static bool answer_cached(struct rsv_server *s, struct txn *t, double now)
{
	const uint8_t *msg;
	size_t len;
	uint32_t age;

	if (!rsv_cache_get(s->cache, t->d.name, t->d.qtype, now, &msg, &len, &age))
		return false;
	if (rsv_process_cached(&s->cfg->ctx, &t->d, msg, len, age) != RSV_REPLY_DONE) {
		rsv_cache_drop(s->cache, t->d.name, t->d.qtype);
		return false;
	}
	txn_end(t, true);
	return true;
}

/* One query from a client (UDP: udp_fd; TCP: conn). */
static void handle_query(struct rsv_server *s, const uint8_t *msg, size_t len,
			 const struct sockaddr_storage *from, socklen_t fromlen, int udp_fd,
			 struct conn *c)
{
	enum rsv_action act;
	struct txn *t;
	double now;

	if (s->stopping)
		return;
	t = calloc(1, sizeof(*t));
	if (!t) {
		log_warnx("out of memory: query dropped");
		return;
	}
	t->srv = s;
	t->snext = s->txns;
	if (s->txns)
		s->txns->sprev = t;
	s->txns = t;
	t->up_fd = -1;
	t->udp_fd = udp_fd;
	clock_gettime(CLOCK_MONOTONIC, &t->start);
	memcpy(&t->client, from, fromlen);
	t->client_len = fromlen;
	if (c) {
		t->have_orig = c->have_orig;
		t->orig = c->orig;
		t->conn = c;
		t->cnext = c->txns;
		if (c->txns)
			c->txns->cprev = t;
		c->txns = t;
		c->pending++;
	}
	now = mono_now();
	act = rsv_decide(&s->cfg->ctx, msg, len, c != NULL, now, &t->d);
	/* a UDP flood of names the policy denies is answered (and logged) at
	 * its client's rate; allowed names are forwarded whatever the flood */
	if (!c && act != RSV_ACT_FORWARD && !rsv_fair_admit(s->cfg->fair, from, now)) {
		t->silent = true;
		txn_finish(t);
		return;
	}
	/* who asked which server: only for a query that gets a line (not the
	 * rate-limited flood above, counted without one) */
	if (!c && s->cfg->flow_fd >= 0)
		t->have_orig = sluice_flow_udp_lookup(s->cfg->flow_fd, (const struct sockaddr *)from, &t->orig) == 0;
	switch (act) {
	case RSV_ACT_DROP:
		txn_finish(t);
		return;
	case RSV_ACT_RESPOND:
		txn_end(t, true);
		return;
	case RSV_ACT_FORWARD:
		if (answer_cached(s, t, now))
			return;
		if (s->inflight >= s->inflight_cap) {
			txn_fail(t, RSV_SERVFAIL, false, "overloaded");
			return;
		}
		/* only a query that goes upstream needs a timer */
		t->timer = evtimer_new(s->base, timer_cb, t);
		if (!t->timer) {
			log_warnx("out of memory: query failed");
			txn_fail(t, RSV_SERVFAIL, false, "internal_error");
			return;
		}
		s->inflight++;
		t->counted = true;
		if (c)
			up_tcp_start(t);
		else
			up_udp_start(t);
		return;
	}
}

/* --- UDP listeners ------------------------------------------------------ */

/* rsv_udp_batch_serve()'s: one query of the batch, decided alone. */
static void udp_query(void *arg, const uint8_t *msg, size_t len, const struct sockaddr_storage *from,
		      socklen_t fromlen, int fd)
{
	handle_query(arg, msg, len, from, fromlen, fd, NULL);
}

static void udp_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct udpl *l = arg;

	/* a batch short of full has emptied the queue */
	for (int i = 0; i < UDP_ROUNDS; i++)
		if (rsv_udp_batch_serve(l->srv->batch, fd, l->srv->cfg->log, udp_query, l->srv) < RSV_UDP_BATCH)
			return;
}

/* The kernel's count of datagrams dropped on fd (receive queue full):
 * SO_MEMINFO's SK_MEMINFO_DROPS (Linux 4.15+).  false when unknown. */
static bool socket_drops(int fd, uint32_t *drops)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0 || len < (SK_MEMINFO_DROPS + 1) * sizeof(uint32_t))
		return false;
	*drops = mi[SK_MEMINFO_DROPS];
	return true;
}

/* Stopping for good (not a drain, whose sockets the next resolver reads):
 * the datagrams still queued will never be answered: take them off and
 * count them (RSV_DROP_SHUTDOWN), a bounded number. */
static void count_unread(struct rsv_server *s)
{
	static uint8_t sink[512];

	for (size_t i = 0; i < s->n_udp; i++) {
		uint64_t n = 0;

		while (n < (1u << 20) && recv(s->udp[i]->fd, sink, sizeof(sink), MSG_DONTWAIT | MSG_TRUNC) >= 0)
			n++;
		rsv_fair_count(s->cfg->fair, RSV_DROP_SHUTDOWN, n);
	}
}

void rsv_server_count_drops(struct rsv_server *s)
{
	for (size_t i = 0; i < s->n_udp; i++) {
		struct udpl *l = s->udp[i];
		uint32_t d;

		if (l->have_drops && socket_drops(l->fd, &d)) {
			rsv_fair_count(s->cfg->fair, RSV_DROP_SOCKET_OVERFLOW, (uint32_t)(d - l->drops));
			l->drops = d;
		}
	}
}

int rsv_server_add_udp(struct rsv_server *s, int fd)
{
	struct udpl **arr, *n;
	int rcvbuf = UDP_RCVBUF;

	if (set_nonblock(fd) < 0)
		return -1;
	/* a burst of queries (a build starting 300 lookups) must not overflow
	 * the default ~200 KiB; best effort, capped by net.core.rmem_max */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)   /* root: past rmem_max */
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	arr = realloc(s->udp, (s->n_udp + 1) * sizeof(*s->udp));
	if (!arr)
		return -1;
	s->udp = arr;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	n->fd = fd;
	n->srv = s;
	/* drops from before this resolver are not its to count */
	n->have_drops = socket_drops(fd, &n->drops);
	n->ev = event_new(s->base, fd, EV_READ | EV_PERSIST, udp_read_cb, n);
	if (!n->ev || event_add(n->ev, NULL) < 0) {
		if (n->ev)
			event_free(n->ev);
		free(n);
		errno = ENOMEM;
		return -1;
	}
	s->udp[s->n_udp++] = n;
	return 0;
}

/* --- TCP clients -------------------------------------------------------- */

static void conn_free(struct conn *c)
{
	struct rsv_server *s = c->srv;
	struct txn *t, *next;

	/* in-flight queries finish without a client to answer */
	for (t = c->txns; t; t = next) {
		next = t->cnext;
		t->conn = NULL;
		t->cprev = t->cnext = NULL;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	bufferevent_free(c->bev);
	free(c);
	drained_check(s);
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	unsigned handled = 0;

	while (!c->closing && c->pending < TCP_MAX_PENDING) {
		size_t mlen;
		uint8_t *msg;
		int r = tcp_frame(in, &msg, &mlen);

		if (r == 0)
			break;
		if (r < 0) {
			conn_free(c);
			return;
		}
		c->last_active = mono_now();
		/* handle_query() may finish at once and free c if closing:
		 * it is not closing here, so c survives */
		handle_query(c->srv, msg, mlen, &c->peer, c->peer_len, -1, c);
		evbuffer_drain(in, 2 + mlen);
		handled++;
	}
	if (c->srv->draining && handled && !c->closing) {
		/* draining: what came is answered, then the client is closed */
		c->closing = true;
		bufferevent_disable(bev, EV_READ);
		if (c->pending == 0 && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_free(c);
		return;
	}
	if (c->pending >= TCP_MAX_PENDING)
		bufferevent_disable(bev, EV_READ);  /* until some are answered */
}

static void conn_resume(struct conn *c)
{
	if (!c->srv->stopping && !c->closing && c->pending < TCP_MAX_PENDING &&
	    !(bufferevent_get_enabled(c->bev) & EV_READ)) {
		bufferevent_enable(c->bev, EV_READ);
		conn_read_cb(c->bev, c);
	}
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->closing && c->pending == 0)
		conn_free(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	bool unsent = evbuffer_get_length(bufferevent_get_output(bev)) > 0;

	if (!(what & BEV_EVENT_ERROR) && (c->pending > 0 || unsent) &&
	    (what & (BEV_EVENT_EOF | BEV_EVENT_TIMEOUT)) && !(what & BEV_EVENT_WRITING)) {
		/* half-close or idle reader: answer what was asked, then close */
		c->closing = true;
		bufferevent_disable(bev, EV_READ);
		return;
	}
	conn_free(c);
}

/* At the client limit: close the client idle the longest (no query in
 * flight, nothing left to send) to make room for a new one, as RFC 7766
 * 6.2.3 lets a server short of resources do; the held-open connections of
 * a hostile client go first, a client that asks goes on.  false: none idle. */
static bool close_idle(struct rsv_server *s)
{
	struct conn *c, *oldest = NULL;

	for (c = s->conns; c; c = c->next)
		if (!c->closing && c->pending == 0 && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 &&
		    (!oldest || c->last_active < oldest->last_active))
			oldest = c;
	if (!oldest)
		return false;
	conn_free(oldest);
	rsv_fair_count_tcp(s->cfg->fair, RSV_TCP_CLOSED_IDLE);
	return true;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct rsv_server *s = arg;
	struct timeval tv = ms_tv(s->cfg->tcp_timeout_ms);
	struct conn *c;

	sluice_accept_backoff_ok(&s->accept);
	if ((size_t)salen > sizeof(c->peer)) {
		close(fd);
		return;
	}
	if (s->n_conns >= s->tcp_cap && !close_idle(s)) {
		rsv_fair_count_tcp(s->cfg->fair, RSV_TCP_REFUSED_LIMIT);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	c->last_active = mono_now();
	memcpy(&c->peer, sa, (size_t)salen);
	c->peer_len = (socklen_t)salen;
	if (s->cfg->flow_fd >= 0) {
		struct sluice_flow_key key;

		c->have_orig = sluice_flow_key_of_fd(fd, &key) == 0 &&
			       sluice_flow_take(s->cfg->flow_fd, &key, &c->orig) == 0;
	}
	c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		close(fd);
		free(c);
		return;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_set_timeouts(c->bev, &tv, &tv);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* The back-off's (accept_backoff.h): pause or resume the TCP listeners; a
 * draining or stopping server reads nothing new and stays paused. */
static void set_listening(void *arg, bool on)
{
	struct rsv_server *s = arg;

	if (on && (s->draining || s->stopping))
		return;
	for (size_t i = 0; i < s->n_tcp; i++)
		if (on)
			evconnlistener_enable(s->tcp[i]);
		else
			evconnlistener_disable(s->tcp[i]);
}

/* The back-off's: a client taken through the reserved descriptor is closed
 * at once (it learns, instead of waiting in the queue), counted. */
static void refuse_client(void *arg, int fd, const struct sockaddr *sa, socklen_t len)
{
	struct rsv_server *s = arg;

	close(fd);
	rsv_fair_count_tcp(s->cfg->fair, RSV_TCP_REFUSED_DESCRIPTORS);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct rsv_server *s = arg;
	int err = EVUTIL_SOCKET_ERROR();

	/* out of descriptors: refuse one, pause, instead of spinning */
	if (!sluice_accept_backoff_error(&s->accept, l, err))
		log_warnx("accept: %s", evutil_socket_error_to_string(err));
}

int rsv_server_add_tcp(struct rsv_server *s, int fd)
{
	struct evconnlistener **n, *l;

	if (set_nonblock(fd) < 0)
		return -1;
	n = realloc(s->tcp, (s->n_tcp + 1) * sizeof(*s->tcp));
	if (!n)
		return -1;
	s->tcp = n;
	/* backlog 0: the socket is already listening (the loader's, or rsv_listen()) */
	l = evconnlistener_new(s->base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE, 0, fd);
	if (!l)
		return -1;
	evconnlistener_set_error_cb(l, accept_error_cb);
	s->tcp[s->n_tcp++] = l;
	return 0;
}

int rsv_listen(const struct sockaddr *sa, socklen_t len, int type)
{
	int fd = socket(sa->sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	if (sa->sa_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (type == SOCK_STREAM)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, len) < 0 || (type == SOCK_STREAM && listen(fd, 128) < 0)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* --- life cycle --------------------------------------------------------- */

struct rsv_server *rsv_server_new(struct event_base *base, struct rsv_server_cfg *cfg)
{
	struct rsv_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->base = base;
	s->cfg = cfg;
	s->tcp_cap = cfg->max_tcp_clients;
	s->inflight_cap = cfg->max_inflight;
	if (sluice_accept_backoff_init(&s->accept, base, set_listening, refuse_client, s) < 0) {
		free(s);
		return NULL;
	}
	/* no cache (size 0) is NULL with errno 0 (cache.h); ENOMEM fails */
	s->cache = rsv_cache_new(cfg->cache_size, cfg->cache_max_ttl);
	s->batch = s->cache || !errno ? rsv_udp_batch_new() : NULL;
	if (!s->batch) {
		rsv_cache_free(s->cache);
		sluice_accept_backoff_free(&s->accept);
		free(s);
		return NULL;
	}
	rsv_sockaddr_str((struct sockaddr *)&cfg->upstream, s->upstream_str, sizeof(s->upstream_str));
	return s;
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		       (x->sin_addr.s_addr == y->sin_addr.s_addr || x->sin_addr.s_addr == INADDR_ANY);
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       (memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0 ||
			IN6_IS_ADDR_UNSPECIFIED(&x->sin6_addr));
	}
	return false;
}

static bool fd_is(int fd, const struct sockaddr *sa)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return false;
	return same_addr((struct sockaddr *)&ss, sa);
}

bool rsv_server_is_own_address(const struct rsv_server *s, const struct sockaddr *sa)
{
	size_t i;

	for (i = 0; i < s->n_udp; i++)
		if (fd_is(s->udp[i]->fd, sa))
			return true;
	for (i = 0; i < s->n_tcp; i++)
		if (fd_is(evconnlistener_get_fd(s->tcp[i]), sa))
			return true;
	return false;
}

void rsv_server_drain(struct rsv_server *s)
{
	struct conn *c;
	size_t i;

	if (s->draining || s->stopping)
		return;
	s->draining = true;
	/* the sockets stay open (shared with the loader and the next
	 * resolver, which reads what is queued): just stop reading them */
	for (i = 0; i < s->n_udp; i++)
		event_del(s->udp[i]->ev);
	for (i = 0; i < s->n_tcp; i++)
		evconnlistener_disable(s->tcp[i]);
	/* TCP clients: each is answered what it asked and what it asks within
	 * DRAIN_GRACE_MS, then closed (conn_read_cb; idle that long, the read
	 * timeout closes it).  Closing one at once would reset a connection
	 * whose query is on its way: a client just accepted has not sent it
	 * yet, and unread bytes turn the close into a reset (RFC 7766 6.2.3
	 * lets a server close idle clients, not cut a query). */
	unsigned idle = s->cfg->tcp_timeout_ms;
	struct timeval grace = ms_tv(idle < DRAIN_GRACE_MS ? idle : DRAIN_GRACE_MS), wtv = ms_tv(idle);

	for (c = s->conns; c; c = c->next)
		if (!c->closing)
			bufferevent_set_timeouts(c->bev, &grace, &wtv);
	drained_check(s);
}

void rsv_server_free(struct rsv_server *s)
{
	struct conn *c, *next;
	struct txn *t, *tnext;
	size_t i;

	if (!s)
		return;
	/* queries in flight get SERVFAIL and their log line: one per query */
	rsv_server_count_drops(s);
	if (!s->draining)
		count_unread(s);
	s->stopping = true;
	for (t = s->txns; t; t = tnext) {
		tnext = t->snext;
		up_close(t);
		txn_end(t, rsv_fail(&t->d, RSV_SERVFAIL, false, "shutdown") == 0);
	}
	for (i = 0; i < s->n_udp; i++) {
		event_free(s->udp[i]->ev);
		close(s->udp[i]->fd);
		free(s->udp[i]);
	}
	for (i = 0; i < s->n_tcp; i++)
		evconnlistener_free(s->tcp[i]);
	for (c = s->conns; c; c = next) {
		next = c->next;
		conn_free(c);
	}
	free(s->udp);
	free(s->tcp);
	sluice_accept_backoff_free(&s->accept);
	rsv_cache_free(s->cache);
	rsv_udp_batch_free(s->batch);
	free(s);
}

void rsv_server_fit_descriptors(struct rsv_server *s)
{
	struct rlimit rl;
	long nfds = sluice_fds_open();
	unsigned limit, used, avail, tcp, up;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || nfds <= 0)
		return;
	used = (unsigned)nfds;
	limit = rl.rlim_cur > 1u << 30 ? 1u << 30 : (unsigned)rl.rlim_cur;
	avail = limit > used + FDS_SPARE + 2 ? limit - used - FDS_SPARE : 2;
	/* half for clients, the rest for their (and UDP's) upstream queries */
	tcp = s->cfg->max_tcp_clients < avail / 2 ? s->cfg->max_tcp_clients : avail / 2;
	up = s->cfg->max_inflight < avail - tcp ? s->cfg->max_inflight : avail - tcp;
	s->tcp_cap = tcp ? tcp : 1;
	s->inflight_cap = up ? up : 1;
	if (s->tcp_cap < s->cfg->max_tcp_clients || s->inflight_cap < s->cfg->max_inflight)
		log_debug("descriptor limit %u (%u open): at most %u TCP clients and %u upstream queries at once",
			  limit, used, s->tcp_cap, s->inflight_cap);
}
