/* SPDX-License-Identifier: BSD-2-Clause */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "ktunnel.h"
#include "sluice_tunnel.h"
#include "log.h"

#define RELAY_CHUNK     65536   /* bytes asked of one splice; a pipe holds 64 KiB by default */
#define RELAY_COPY_BUF  16384   /* fallback copy buffer */

struct relay_dir {
	char *buf;            /* pending bytes (initial data, or copy mode) */
	size_t off, len;      /* buf[off..len) still to write */
	size_t cap;
	size_t in_pipe;       /* bytes in the pipe not yet written to dst */
	uint64_t bytes;
	struct event *rev;    /* src readable (one of the caller's events, relay_start) */
	struct event *wev;    /* dst writable: made the first time dst is full (an idle
			       * tunnel never needs one: 10,000 of them, 2.8 MB) */
	int src, dst;
	int pipe[2];          /* -1 until the first byte; stays -1 in copy mode */
	bool copy;            /* fallback: read/write through buf */
	bool eof;             /* src said FIN */
	bool done;            /* FIN passed on to dst */
};

struct proxy_relay {
	struct relay_dir d[2];   /* 0: client -> upstream, 1: upstream -> client */
	struct event_base *base;
	struct timespec last;    /* when a byte last moved (CLOCK_MONOTONIC_COARSE) */
	TAILQ_ENTRY(proxy_relay) idle_link;   /* in idle.list, by `last` */
	relay_done_cb cb;
	void *arg;
	/* kernel mode (ktunnel.h): the kernel moves the bytes, d[i].rev
	 * waits for side i's FIN (EV_CLOSED), flush_ev for a FIN's bytes
	 * to be out of the peer */
	struct ktunnel *k;
	struct event *flush_ev;
	uint64_t k_activity;
	uint64_t k_moved[2];   /* the last counts read: what the kernel moved each way */
	unsigned flush_ms;
	bool in_idle;
	bool finished;
	bool borrowed;           /* in its caller's memory (relay_start's mem) */
};
_Static_assert(sizeof(struct proxy_relay) <= RELAY_RECORD_MAX, "relay.h: RELAY_RECORD_MAX");
_Static_assert(_Alignof(struct proxy_relay) <= _Alignof(uint64_t), "relay.h: relay_start's mem alignment");

/*
 * The idle timeout.  Every relay of the process has the same one, so the
 * relays wait in one list ordered by their last activity (a relay whose
 * bytes move goes to its tail) under one timer, armed for the head's
 * deadline: an idle tunnel holds no timer of its own (10,000 of them,
 * 1.4 MB less).  The proxy has one event loop.
 */
static struct {
	TAILQ_HEAD(relay_list, proxy_relay) list;
	struct event *timer;
	long long ms;             /* 0: no idle timeout */
} idle = { .list = TAILQ_HEAD_INITIALIZER(idle.list) };

static bool kernel_wanted;
static bool kernel_said;   /* the fallback to splice is said once */

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC_COARSE, ts);
}

/* Arm the idle timer to fire in `ms` milliseconds. */
static void idle_arm(long long ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	event_add(idle.timer, &tv);
}

static void idle_unlink(struct proxy_relay *r)
{
	if (!r->in_idle)
		return;
	TAILQ_REMOVE(&idle.list, r, idle_link);
	r->in_idle = false;
}

static void idle_append(struct proxy_relay *r)
{
	TAILQ_INSERT_TAIL(&idle.list, r, idle_link);
	r->in_idle = true;
}

/* r's bytes moved now: to the idle list's tail (the timer stays armed for
 * the head, whose deadline this cannot make earlier). */
static void touch(struct proxy_relay *r)
{
	now(&r->last);
	if (!r->in_idle || !TAILQ_NEXT(r, idle_link))
		return;
	idle_unlink(r);
	idle_append(r);
}

static void wev_del(struct relay_dir *d)
{
	if (d->wev)
		event_del(d->wev);
}

static void on_read0(evutil_socket_t fd, short what, void *arg);
static void on_read1(evutil_socket_t fd, short what, void *arg);

/* Wait for d's destination to take more: its write event, made now if
 * this is the first time.  0, or -1 (out of memory). */
static int wev_add(struct proxy_relay *r, struct relay_dir *d)
{
	if (!d->wev) {
		d->wev = event_new(r->base, d->dst, EV_WRITE, d == &r->d[0] ? on_read0 : on_read1, r);
		if (!d->wev)
			return -1;
	}
	return event_add(d->wev, NULL);
}

static void finish(struct proxy_relay *r, const char *err)
{
	if (r->finished)
		return;
	r->finished = true;
	for (int i = 0; i < 2; i++) {
		event_del(r->d[i].rev);
		wev_del(&r->d[i]);
	}
	idle_unlink(r);
	if (r->flush_ev)
		event_del(r->flush_ev);
	{
		uint64_t up, down;

		relay_counts(r, &up, &down);
		/* last call: the callback may free r */
		r->cb(r->arg, err, up, down);
	}
}

/*
 * Pipes are borrowed from a small pool while a direction has bytes in
 * flight and given back when it goes idle, so an idle tunnel holds just its
 * two sockets (and 10,000 idle tunnels do not need 40,000 pipe fds).  Only
 * empty pipes go back to the pool.
 */
#define PIPE_POOL_MAX 256

static int pipe_pool[PIPE_POOL_MAX][2];
static size_t pipe_pool_n;

static bool pipe_get(int p[2])
{
	if (pipe_pool_n) {
		pipe_pool_n--;
		p[0] = pipe_pool[pipe_pool_n][0];
		p[1] = pipe_pool[pipe_pool_n][1];
		return true;
	}
	return pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0;
}

static void pipe_put(int p[2], bool empty)
{
	if (p[0] < 0)
		return;
	if (empty && pipe_pool_n < PIPE_POOL_MAX) {
		pipe_pool[pipe_pool_n][0] = p[0];
		pipe_pool[pipe_pool_n][1] = p[1];
		pipe_pool_n++;
	} else {
		close(p[0]);
		close(p[1]);
	}
	p[0] = p[1] = -1;
}

/* A pipe for a direction, or copy mode when none can be had. */
static void ensure_path(struct relay_dir *d)
{
	if (d->copy || d->pipe[0] >= 0)
		return;
	if (!pipe_get(d->pipe)) {
		d->pipe[0] = d->pipe[1] = -1;
		d->copy = true;
	}
}

/* PUMP_ERROR_LOCAL: the relay's own failure (out of memory), no peer's */
enum pump_result { PUMP_WAIT, PUMP_DONE, PUMP_ERROR_SRC, PUMP_ERROR_DST, PUMP_ERROR_LOCAL };

/*
 * Move what can be moved in one direction without blocking; arm the event
 * it then waits for.  Never calls finish().
 */
static enum pump_result pump(struct proxy_relay *r, struct relay_dir *d)
{
	ssize_t n;

	for (;;) {
		/* 1. pending buffered bytes, then 2. bytes in the pipe */
		if (d->off < d->len || d->in_pipe) {
			bool from_buf = d->off < d->len;

			n = from_buf ? send(d->dst, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL)
				     : splice(d->pipe[0], NULL, d->dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					goto wait_write;
				return PUMP_ERROR_DST;
			}
			d->bytes += (uint64_t)n;
			touch(r);
			if (!from_buf) {
				d->in_pipe -= (size_t)n;
				continue;
			}
			d->off += (size_t)n;
			if (d->off == d->len) {
				d->off = d->len = 0;
				if (!d->copy) {   /* initial bytes sent: no need to keep the buffer */
					free(d->buf);
					d->buf = NULL;
					d->cap = 0;
				}
			}
			continue;
		}
		/* 3. everything sent: pass on a FIN */
		if (d->eof) {
			pipe_put(d->pipe, true);
			if (!d->done) {
				shutdown(d->dst, SHUT_WR);
				d->done = true;
			}
			event_del(d->rev);
			wev_del(d);
			return PUMP_DONE;
		}
		/* 4. read more */
		ensure_path(d);
		if (!d->copy) {
			n = splice(d->src, NULL, d->pipe[1], NULL, RELAY_CHUNK,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				d->in_pipe = (size_t)n;
		} else {
			if (!d->buf) {
				d->buf = malloc(RELAY_COPY_BUF);
				if (!d->buf)
					return PUMP_ERROR_LOCAL;
				d->cap = RELAY_COPY_BUF;
			}
			n = recv(d->src, d->buf, d->cap, 0);
			if (n > 0) {
				d->off = 0;
				d->len = (size_t)n;
			}
		}
		if (n == 0) {
			d->eof = true;
			continue;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				/* idle: the (empty) pipe goes back to the pool */
				pipe_put(d->pipe, true);
				wev_del(d);
				event_add(d->rev, NULL);
				return PUMP_WAIT;
			}
			if (errno == EINVAL && !d->copy) {
				/* splice not supported on this socket: copy instead */
				pipe_put(d->pipe, true);
				d->copy = true;
				continue;
			}
			return PUMP_ERROR_SRC;
		}
	}
wait_write:
	event_del(d->rev);
	if (wev_add(r, d) < 0)
		return PUMP_ERROR_LOCAL;
	return PUMP_WAIT;
}

static void run(struct proxy_relay *r, int which)
{
	enum pump_result res = pump(r, &r->d[which]);

	if (res == PUMP_ERROR_LOCAL) {
		finish(r, "relay_error");
		return;
	}
	if (res == PUMP_ERROR_SRC || res == PUMP_ERROR_DST) {
		bool client = (which == 0) == (res == PUMP_ERROR_SRC);

		finish(r, client ? "client_reset" : "upstream_reset");
		return;
	}
	if (r->d[0].done && r->d[1].done)
		finish(r, NULL);
}

static void on_read0(evutil_socket_t fd, short what, void *arg) { run(arg, 0); }
static void on_read1(evutil_socket_t fd, short what, void *arg) { run(arg, 1); }

/* The idle timer: finish the relays at the list's head whose time is up,
 * then wait for the next head's.  A kernel tunnel whose time is up is
 * looked at first: if its counters moved, its bytes count as activity now
 * (it goes to the tail with a full idle time ahead, so one pass looks at
 * each relay once, however busy the kernel tunnels are). */
static void on_idle(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_relay *r;

	while ((r = TAILQ_FIRST(&idle.list))) {
		struct timespec t;
		long long since;

		now(&t);
		since = (long long)(t.tv_sec - r->last.tv_sec) * 1000 + (t.tv_nsec - r->last.tv_nsec) / 1000000;
		if (since < idle.ms) {
			idle_arm(idle.ms - since);
			return;
		}
		if (r->k) {
			uint64_t a = ktunnel_activity(r->k);

			if (a != r->k_activity) {
				r->k_activity = a;
				touch(r);
				continue;
			}
		}
		idle_unlink(r);
		finish(r, "idle_timeout");   /* may free r */
	}
}

int relay_idle_timeout(struct event_base *base, unsigned ms)
{
	if (!idle.timer) {
		idle.timer = evtimer_new(base, on_idle, NULL);
		if (!idle.timer)
			return -1;
	}
	idle.ms = ms;
	return 0;
}

void relay_idle_free(void)
{
	if (idle.timer)
		event_free(idle.timer);
	idle.timer = NULL;
	idle.ms = 0;
}

/* --- kernel mode (ktunnel.h) ------------------------------------------------ */

#define FLUSH_MS_MAX 100   /* longest wait between two looks at a FIN's bytes */

static bool side_error(int fd)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		err = errno;
	return err != 0;
}

/*
 * A direction whose source said FIN ends once every byte the kernel took
 * from the source is in the destination's send queue: only then is the
 * destination's FIN queued behind them (the redirect runs from a work
 * queue, after the FIN was seen).  Waits with a growing timer while not.
 */
static void kernel_check(struct proxy_relay *r)
{
	bool pending = false;

	for (int i = 0; i < 2; i++) {
		struct relay_dir *d = &r->d[i];
		uint64_t must, moved;

		if (!d->eof || d->done)
			continue;
		if (side_error(d->dst)) {
			/* A peer that had closed (its FIN passed on) and resets on
			 * the last bytes (a TLS close_notify after its own) ends as
			 * it would under splice, where the send succeeded first. */
			if (r->d[1 - i].done) {
				d->done = true;
				continue;
			}
			finish(r, i == 0 ? "upstream_reset" : "client_reset");
			return;
		}
		if (ktunnel_dir_counts(r->k, i, true, &must, &moved) < 0) {
			finish(r, "relay_error");
			return;
		}
		r->k_moved[i] = moved;
		if (moved < must) {
			pending = true;
			continue;
		}
		shutdown(d->dst, SHUT_WR);
		d->done = true;
	}
	if (r->d[0].done && r->d[1].done) {
		finish(r, NULL);
		return;
	}
	if (pending) {
		struct timeval tv = { .tv_sec = 0, .tv_usec = (suseconds_t)r->flush_ms * 1000 };

		event_add(r->flush_ev, &tv);
		if (r->flush_ms < FLUSH_MS_MAX)
			r->flush_ms *= 2;
	}
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	kernel_check(arg);
}

static void kernel_closed(struct proxy_relay *r, int i)
{
	struct relay_dir *d = &r->d[i];

	event_del(d->rev);
	if (side_error(d->src)) {
		finish(r, i == 0 ? "client_reset" : "upstream_reset");
		return;
	}
	d->eof = true;
	r->flush_ms = 1;
	kernel_check(r);
}

static void on_kclosed0(evutil_socket_t fd, short what, void *arg) { kernel_closed(arg, 0); }
static void on_kclosed1(evutil_socket_t fd, short what, void *arg) { kernel_closed(arg, 1); }

void relay_kernel_enable(const char *pin_dir)
{
	int err = pin_dir ? ktunnel_open(pin_dir) : -ENOENT;

	kernel_wanted = true;
	if (err < 0) {
		log_warnx("kernel tunnels unavailable (%s/%s: %s): tunnels use splice", pin_dir ? pin_dir : "-",
			  SLUICE_TUNNEL_PIN_SK, strerror(-err));
		kernel_said = true;
	}
}

static void drop_buf(struct relay_dir *d)
{
	free(d->buf);
	d->buf = NULL;
	d->off = d->len = d->cap = 0;
}

#define DRAIN_MAX (256 * 1024)   /* read at most this much before a hand-over */

/* Read what the client socket holds into d->buf (after the bytes there).
 * Returns 0 once a read says EAGAIN (or EOF, left for the kernel path to
 * see), -1 past DRAIN_MAX or on an error (relay in user space). */
static int drain_client(struct relay_dir *d)
{
	for (;;) {
		ssize_t n;

		if (d->cap - d->len < RELAY_COPY_BUF) {
			size_t cap = d->cap + RELAY_COPY_BUF;
			char *b;

			if (cap > DRAIN_MAX)
				return -1;
			b = realloc(d->buf, cap);
			if (!b)
				return -1;
			d->buf = b;
			d->cap = cap;
		}
		n = recv(d->src, d->buf + d->len, d->cap - d->len, MSG_DONTWAIT);
		if (n > 0) {
			d->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -1;
	}
}

/*
 * Hand the tunnel to the kernel if it is wanted and can be: the initial
 * bytes go out first (every byte the kernel moves comes after them); if
 * they do not fit in the upstream's send buffer at once the tunnel stays
 * here.  Returns 1 (the kernel's), 0 (relay here) or -1 (neither: close).
 */
static int kernel_try(struct proxy_relay *r, struct event_base *base)
{
	struct relay_dir *d0 = &r->d[0];
	const char *why = "";

	if (!kernel_wanted || !ktunnel_available())
		return 0;
	if (!(event_base_get_features(base) & EV_FEATURE_EARLY_CLOSE)) {
		why = "no EV_CLOSED in the event loop";
		goto fallback;
	}
	/* The verdict program is given whole socket buffers: one user space
	 * has read a part of would go again whole.  So read the client dry
	 * first (the last read ends on a buffer's end); its bytes go first. */
	if (drain_client(d0) < 0) {
		why = "the client sends faster than the hand-over";
		goto fallback;
	}
	while (d0->off < d0->len) {
		ssize_t n = send(d0->dst, d0->buf + d0->off, d0->len - d0->off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;   /* the rest (or the error) in user space */
		d0->off += (size_t)n;
		d0->bytes += (uint64_t)n;
	}
	switch (ktunnel_start(r->d[0].src, r->d[1].src, &r->k, &why)) {
	case KTUNNEL_OK:
		break;
	case KTUNNEL_BROKEN:
		log_warnx("kernel tunnel: %s: closed", why);
		return -1;
	case KTUNNEL_FALLBACK:
		goto fallback;
	}
	r->flush_ev = evtimer_new(base, on_flush, r);
	for (int i = 0; i < 2; i++)   /* not added yet: assigned anew */
		if (event_assign(r->d[i].rev, base, r->d[i].src, EV_CLOSED, i == 0 ? on_kclosed0 : on_kclosed1, r) < 0)
			return -1;
	if (!r->flush_ev)
		return -1;
	drop_buf(d0);
	r->k_activity = ktunnel_activity(r->k);
	event_add(r->d[0].rev, NULL);
	event_add(r->d[1].rev, NULL);
	return 1;
fallback:
	if (d0->off == d0->len)
		drop_buf(d0);
	if (!kernel_said) {
		log_warnx("kernel tunnel not possible (%s): tunnels use splice", why);
		kernel_said = true;
	}
	return 0;
}

struct proxy_relay *relay_start(void *mem, struct event_base *base, int cfd, int ufd,
				char *initial, size_t initial_len, struct event *ev[2],
				bool kernel_ok, relay_done_cb cb, void *arg)
{
	struct proxy_relay *r = mem ? memset(mem, 0, sizeof(*r)) : calloc(1, sizeof(*r));

	if (!r) {
		for (int i = 0; i < 2; i++)
			if (ev[i])
				event_free(ev[i]);
		free(initial);
		return NULL;
	}
	r->borrowed = mem != NULL;
	r->cb = cb;
	r->arg = arg;
	r->base = base;
	for (int i = 0; i < 2; i++) {   /* first all of r's fields: relay_free() can undo them */
		struct relay_dir *d = &r->d[i];

		d->src = i == 0 ? cfd : ufd;
		d->dst = i == 0 ? ufd : cfd;
		d->pipe[0] = d->pipe[1] = -1;
		d->rev = ev[i];
	}
	for (int i = 0; i < 2; i++) {
		struct relay_dir *d = &r->d[i];
		event_callback_fn fn = i == 0 ? on_read0 : on_read1;

		if (d->rev ? event_assign(d->rev, base, d->src, EV_READ, fn, r) < 0
			   : !(d->rev = event_new(base, d->src, EV_READ, fn, r))) {
			free(initial);
			relay_free(r);
			return NULL;
		}
	}
	now(&r->last);
	if (idle.ms) {
		idle_append(r);
		if (!evtimer_pending(idle.timer, NULL))
			idle_arm(idle.ms);
	}
	if (initial && initial_len) {
		r->d[0].buf = initial;
		r->d[0].len = initial_len;
		r->d[0].cap = initial_len;
	} else {
		free(initial);
	}
	switch (kernel_ok ? kernel_try(r, base) : 0) {
	case 1:
		return r;
	case -1:
		relay_free(r);
		return NULL;
	default:
		break;
	}
	/* start both directions; initial bytes go out as soon as upstream takes them */
	if (r->d[0].buf ? wev_add(r, &r->d[0]) < 0 : event_add(r->d[0].rev, NULL) < 0) {
		relay_free(r);   /* frees initial with d[0].buf */
		return NULL;
	}
	if (event_add(r->d[1].rev, NULL) < 0) {
		relay_free(r);
		return NULL;
	}
	return r;
}

void relay_free(struct proxy_relay *r)
{
	if (!r)
		return;
	for (int i = 0; i < 2; i++) {
		struct relay_dir *d = &r->d[i];

		if (d->rev)
			event_free(d->rev);
		if (d->wev)
			event_free(d->wev);
		pipe_put(d->pipe, d->in_pipe == 0);
		free(d->buf);
	}
	idle_unlink(r);
	if (r->flush_ev)
		event_free(r->flush_ev);
	ktunnel_free(r->k);
	if (!r->borrowed)
		free(r);
}

int relay_spliced(const struct proxy_relay *r)
{
	return !r->k && !r->d[0].copy && !r->d[1].copy;
}

const char *relay_mode(const struct proxy_relay *r)
{
	return r->k ? "kernel" : relay_spliced(r) ? "splice" : "copy";
}

void relay_counts(const struct proxy_relay *r, uint64_t *up, uint64_t *down)
{
	uint64_t moved[2] = { r->k_moved[0], r->k_moved[1] };

	for (int i = 0; r->k && i < 2; i++) {
		uint64_t must;

		if (ktunnel_dir_counts(r->k, i, r->d[i].eof, &must, &moved[i]) < 0)
			moved[i] = r->k_moved[i];   /* the socket is gone: the last count read */
		else if (r->d[i].done && moved[i])
			moved[i]--;   /* our shutdown()'s FIN counts as one */
	}
	*up = r->d[0].bytes + moved[0];
	*down = r->d[1].bytes + moved[1];
}
