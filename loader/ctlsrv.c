/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctlsrv.c - the daemon's control socket on its event loop (ctlsrv.h):
 * non-blocking clients with idle and total deadlines, a cap on concurrent
 * clients (the longest-idle one makes room), and an accept loop that backs
 * off at EMFILE/ENFILE.  One silent, trickling or hostile client never
 * delays another client, a sandbox's events or a child's restart.
 */
#include "ctlsrv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "run_limits.h" /* sluice_monotonic_ms */

#define ACCEPT_BATCH    16      /* connections taken per wakeup of the listener */
#define PAUSE_MIN_MS    50
#define PAUSE_MAX_MS    1000
#define REPORT_EVERY_MS 1000

struct client {
	int fd;
	struct event *ev;
	struct client *prev, *next;  /* by last activity: head = idle the longest */
	uint64_t phase_ms;           /* start of the request (or of the answer) */
	uint64_t last_ms;            /* last byte in or out */
	bool writing;                /* the answer is being sent */
	size_t got;                  /* request bytes in `in` */
	char *out;                   /* the answer line (writing) */
	struct ctlsrv_peer peer;     /* who, and the descriptors the request carried */
	size_t out_len, out_off;
	char in[SLUICE_CTL_REQ_MAX];
};

/* A kind of trouble, reported at most once a second with what happened since. */
struct report {
	const char *action;
	uint64_t total, pending;
	uint64_t last_ms;
};

enum { R_TIMEOUT, R_EVICTED, R_REFUSED, R_PEER, R__MAX };

static struct {
	struct event_base *base;
	int lfd;
	int reserve_fd;              /* /dev/null, given up at EMFILE to refuse one connection */
	struct event *lev, *pause_ev;
	unsigned pause_ms;
	struct ctlsrv_limits lim;
	ctlsrv_handler handle;
	ctlsrv_reporter report;
	struct client *head, *tail;
	struct ctlsrv_stats st;
	struct report rep[R__MAX];
	gid_t group;                 /* members may connect too; (gid_t)-1: root only */
} C = { .lfd = -1, .reserve_fd = -1, .group = (gid_t)-1 };

static void on_client(evutil_socket_t fd, short what, void *arg);

/* ---- the activity list -------------------------------------------------- */

static void list_unlink(struct client *c)
{
	/* head and tail by identity: what the analyzer (and a reader) can follow */
	if (C.head == c)
		C.head = c->next;
	else if (c->prev)
		c->prev->next = c->next;
	if (C.tail == c)
		C.tail = c->prev;
	else if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void list_append(struct client *c)
{
	c->prev = C.tail;
	c->next = NULL;
	if (C.tail)
		C.tail->next = c;
	else
		C.head = c;
	C.tail = c;
}

static void touch(struct client *c, uint64_t now)
{
	c->last_ms = now;
	list_unlink(c);
	list_append(c);
}

/* ---- summary lines ------------------------------------------------------ */

static void report_flush(struct report *r, uint64_t now)
{
	char msg[256];

	if (!r->pending || !C.report || now - r->last_ms < REPORT_EVERY_MS)
		return;
	snprintf(msg, sizeof(msg),
		 "control socket: %llu client(s) %s since the last report (%llu since start; %u open, cap %u)",
		 (unsigned long long)r->pending,
		 r == &C.rep[R_TIMEOUT] ? "closed past their deadline" :
		 r == &C.rep[R_EVICTED] ? "closed to make room for new ones" :
		 r == &C.rep[R_PEER]    ? "refused: not root, not a member of the daemon's user group" :
					  "refused: the daemon is out of descriptors",
		 (unsigned long long)r->total, C.st.clients, C.lim.max_clients);
	C.report(r->action, msg);
	r->pending = 0;
	r->last_ms = now;
}

static void count(int kind, uint64_t now)
{
	C.rep[kind].total++;
	C.rep[kind].pending++;
	report_flush(&C.rep[kind], now);
}

void ctlsrv_tick(void)
{
	uint64_t now = sluice_monotonic_ms();

	for (int i = 0; i < R__MAX; i++)
		report_flush(&C.rep[i], now);
}

/* ---- clients ------------------------------------------------------------ */

static void client_close(struct client *c)
{
	list_unlink(c);
	event_free(c->ev);
	if (c->peer.keep)
		c->peer.keep(-1, c->peer.keep_arg);  /* the answer never went: the keeper lets go */
	close(c->fd);
	for (unsigned i = 0; i < c->peer.n_fds; i++)
		if (c->peer.fds[i] >= 0)
			close(c->peer.fds[i]);
	free(c->out);
	free(c);
	C.st.clients--;
}

/* c's answer went whole: close it, or hand it to the handler's keeper. */
static void client_done(struct client *c)
{
	void (*keep)(int, void *) = c->peer.keep;

	if (!keep) {
		client_close(c);
		return;
	}
	list_unlink(c);
	event_free(c->ev);
	keep(c->fd, c->peer.keep_arg);
	free(c->out);
	free(c);
	C.st.clients--;
	C.st.kept++;
}

/* (Re)arm c's event for its phase: the nearer of the idle and total deadlines. */
static void client_arm(struct client *c, uint64_t now)
{
	uint64_t idle_at = c->last_ms + C.lim.idle_ms, total_at = c->phase_ms + C.lim.total_ms;
	uint64_t at = idle_at < total_at ? idle_at : total_at, left = at > now ? at - now : 0;
	struct timeval tv = { .tv_sec = (time_t)(left / 1000), .tv_usec = (suseconds_t)(left % 1000) * 1000 };

	event_del(c->ev);
	event_assign(c->ev, C.base, c->fd, c->writing ? EV_WRITE : EV_READ, on_client, c);
	event_add(c->ev, &tv);
}

/* Send what is left of the answer.  Returns 1 when all of it went, 0 to wait, -1 on error. */
static int client_flush(struct client *c, uint64_t now)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		c->out_off += (size_t)n;
		c->last_ms = now;
	}
	return 1;
}

json_object *ctlsrv_error(const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

const char *ctlsrv_str(json_object *req, const char *key)
{
	json_object *v;

	if (!req || !json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The request in c->in (c->got bytes, NUL-terminated) is complete: answer it. */
static void client_answer(struct client *c, uint64_t now, bool too_long)
{
	json_object *req = NULL, *resp;
	const char *s;

	if (too_long) {
		C.st.too_long++;
		resp = ctlsrv_error("request line too long");
	} else {
		req = json_tokener_parse(c->in);
		resp = C.handle(req, &c->peer);
	}
	/* descriptors the handler did not keep are closed now, not at the close */
	for (unsigned i = 0; i < c->peer.n_fds; i++)
		if (c->peer.fds[i] >= 0)
			close(c->peer.fds[i]);
	c->peer.n_fds = 0;
	s = json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN);
	c->out_len = strlen(s) + 1;
	c->out = malloc(c->out_len);
	if (c->out) {
		memcpy(c->out, s, c->out_len - 1);
		c->out[c->out_len - 1] = '\n';
	}
	json_object_put(resp);
	if (req)
		json_object_put(req);
	C.st.served++;
	if (!c->out) {
		client_close(c);
		return;
	}
	/* the answer has deadlines of its own: the handler may have taken long */
	now = sluice_monotonic_ms();
	c->writing = true;
	c->phase_ms = now;
	touch(c, now);
	switch (client_flush(c, now)) {
	case 1: client_done(c); return;
	case 0: client_arm(c, now); return;
	default: client_close(c); return;
	}
}

/* recv() into c->in, keeping the descriptors sent with it (SCM_RIGHTS):
 * at most SLUICE_CTL_MAX_FDS in all, the others closed at once. */
static ssize_t recv_fds(struct client *c, size_t room)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SLUICE_CTL_MAX_FDS)];
	} u;
	struct iovec iov = { .iov_base = c->in + c->got, .iov_len = room };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return n;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
		size_t k;
		int fd;

		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
			if (c->peer.n_fds < SLUICE_CTL_MAX_FDS)
				c->peer.fds[c->peer.n_fds++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

/* Read what c has sent; answer a whole line, close at EOF or error, else wait. */
static void client_read(struct client *c, uint64_t now)
{
	for (;;) {
		ssize_t n;

		if (c->got >= sizeof(c->in) - 1) {
			client_answer(c, now, true);
			return;
		}
		n = recv_fds(c, sizeof(c->in) - 1 - c->got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			client_arm(c, now);
			return;
		}
		if (n < 0 || (n == 0 && c->got == 0)) {
			client_close(c);
			return;
		}
		if (n == 0) {
			/* the client shut its side down after a request without a newline */
			c->in[c->got] = 0;
			client_answer(c, now, false);
			return;
		}
		c->got += (size_t)n;
		c->in[c->got] = 0;
		touch(c, now);
		if (memchr(c->in + c->got - (size_t)n, '\n', (size_t)n)) {
			client_answer(c, now, false);
			return;
		}
	}
}

static void on_client(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	uint64_t now = sluice_monotonic_ms();

	if (what & EV_TIMEOUT) {
		int pending = 0;

		/* libevent's clock is CLOCK_MONOTONIC_COARSE, cached at the start
		 * of the loop's pass: its timeout can come a few ms before ours.
		 * Early, nothing has passed yet (and a total deadline counted
		 * as idle would mislead): wait out the rest */
		if (now < c->last_ms + C.lim.idle_ms && now < c->phase_ms + C.lim.total_ms) {
			client_arm(c, now);
			return;
		}
		/* an idle deadline that passed while the daemon itself was
		 * stalled (stopped, or its loop busy): bytes waiting in the
		 * socket say the client was not idle; the total one holds */
		if (!c->writing && now < c->phase_ms + C.lim.total_ms && ioctl(fd, FIONREAD, &pending) == 0 &&
		    pending > 0) {
			client_read(c, now);
			return;
		}
		if (now >= c->phase_ms + C.lim.total_ms)
			C.st.timed_out_total++;
		else
			C.st.timed_out_idle++;
		client_close(c);
		count(R_TIMEOUT, now);
		return;
	}
	if (!c->writing) {
		client_read(c, now);
		return;
	}
	switch (client_flush(c, now)) {
	case 0:
		touch(c, now);
		client_arm(c, now);
		break;
	case 1:
		client_done(c); /* all sent */
		break;
	default:
		client_close(c); /* the client went away */
	}
}

/* Close the client idle the longest, to make room (the cap, or descriptors). */
static bool evict_one(uint64_t now)
{
	if (!C.head)
		return false;
	client_close(C.head);
	C.st.evicted++;
	count(R_EVICTED, now);
	return true;
}

/* Was the peer on fd a member of C.group when it connected?  Its primary
 * group, or one of its supplementary groups (SO_PEERGROUPS, Linux 4.13). */
static bool peer_in_group(int fd, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (C.group == (gid_t)-1)
		return false;
	if (cred->gid == C.group)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;  /* more than 256 groups (ERANGE), or an old kernel: not a member */
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == C.group)
			return true;
	return false;
}

void ctlsrv_allow_group(gid_t gid)
{
	C.group = gid;
}

static void client_new(int fd, uint64_t now)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct client *c;

	/* root, or a member of the allowed group: the socket's mode says so
	 * too, and the peer's credentials are checked */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || (cred.uid != 0 && !peer_in_group(fd, &cred))) {
		static const char m[] = "{\"ok\":false,\"error\":\"permission denied: root or members of the "
					"daemon's user group only\"}\n";
		ssize_t w = send(fd, m, sizeof(m) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);

		(void)w;
		close(fd);
		C.st.refused_peer++;
		count(R_PEER, now);
		return;
	}
	if (C.st.clients >= C.lim.max_clients)
		evict_one(now);
	c = calloc(1, sizeof(*c));
	if (c)
		c->ev = event_new(C.base, fd, EV_READ, on_client, c);
	if (!c || !c->ev) {
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	c->peer.uid = cred.uid;
	c->peer.gid = cred.gid;
	c->peer.pid = cred.pid;
	c->phase_ms = c->last_ms = now;
	list_append(c);
	C.st.clients++;
	/* a client usually sent its request before we accepted it: answer now */
	client_read(c, now);
}

/* ---- the listener -------------------------------------------------------- */

/* Out of descriptors with clients open: the clients took what attach and
 * reload need.  Lower the cap so FD_HEADROOM descriptors stay free, closing
 * the longest-idle clients down to it. */
#define FD_HEADROOM 16
static void lower_cap(uint64_t now)
{
	unsigned n = C.st.clients, cap = n > 2 * FD_HEADROOM ? n - FD_HEADROOM : (n + 1) / 2;
	char msg[200];

	if (cap < 1)
		cap = 1;
	if (cap < C.lim.max_clients) {
		snprintf(msg, sizeof(msg),
			 "control socket: out of descriptors with %u clients open: at most %u from now on (was %u)", n,
			 cap, C.lim.max_clients);
		C.lim.max_clients = C.st.max_clients = cap;
		C.st.cap_lowered++;
		if (C.report)
			C.report("control-clients-capped", msg);
	}
	while (C.st.clients >= C.lim.max_clients && evict_one(now))
		;
}

static void on_pause_end(evutil_socket_t fd, short what, void *arg)
{
	event_add(C.lev, NULL);
}

/* Stop accepting for a while (doubling up to PAUSE_MAX_MS): no spinning on
 * an accept that keeps failing. */
static void pause_listener(void)
{
	struct timeval tv;

	C.pause_ms = C.pause_ms ? C.pause_ms * 2 : PAUSE_MIN_MS;
	if (C.pause_ms > PAUSE_MAX_MS)
		C.pause_ms = PAUSE_MAX_MS;
	tv.tv_sec = C.pause_ms / 1000;
	tv.tv_usec = (suseconds_t)(C.pause_ms % 1000) * 1000;
	event_del(C.lev);
	evtimer_add(C.pause_ev, &tv);
	C.st.accept_pauses++;
}

/* Out of descriptors with no client to close: take the pending connection
 * with the reserved descriptor and close it, so the client is told (EOF)
 * rather than left waiting in the queue. */
static void refuse_one(uint64_t now)
{
	int fd;

	if (C.reserve_fd >= 0) {
		close(C.reserve_fd);
		C.reserve_fd = -1;
	}
	fd = accept4(C.lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		C.st.refused_fds++;
		count(R_REFUSED, now);
	}
	C.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	uint64_t now = sluice_monotonic_ms();

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd >= 0) {
			C.st.accepted++;
			C.pause_ms = 0;
			client_new(fd, now);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if ((errno == EMFILE || errno == ENFILE) && C.st.clients > 0) {
			lower_cap(now);
			continue;
		}
		if (errno == EMFILE || errno == ENFILE)
			refuse_one(now);
		else
			log_warn("daemon: control socket: accept");
		pause_listener();
		return;
	}
}

int ctlsrv_start(struct event_base *base, int lfd, const struct ctlsrv_limits *lim, ctlsrv_handler handle,
		 ctlsrv_reporter report)
{
	C.base = base;
	C.lfd = lfd;
	C.handle = handle;
	C.report = report;
	C.lim.max_clients = lim && lim->max_clients ? lim->max_clients : SLUICE_CTL_MAX_CLIENTS;
	C.lim.idle_ms = lim && lim->idle_ms ? lim->idle_ms : SLUICE_CTL_IDLE_MS;
	C.lim.total_ms = lim && lim->total_ms ? lim->total_ms : SLUICE_CTL_TOTAL_MS;
	C.st.max_clients = C.lim.max_clients;
	C.rep[R_TIMEOUT].action = "control-client-timeout";
	C.rep[R_EVICTED].action = "control-client-evicted";
	C.rep[R_REFUSED].action = "control-client-refused";
	C.rep[R_PEER].action = "control-client-not-permitted";
	C.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (C.reserve_fd < 0)
		return -errno;
	C.lev = event_new(base, lfd, EV_READ | EV_PERSIST, on_accept, NULL);
	C.pause_ev = evtimer_new(base, on_pause_end, NULL);
	if (!C.lev || !C.pause_ev || event_add(C.lev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

void ctlsrv_stats(struct ctlsrv_stats *st)
{
	*st = C.st;
}

json_object *ctlsrv_stats_json(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "clients", json_object_new_int((int)C.st.clients));
	json_object_object_add(o, "max_clients", json_object_new_int((int)C.st.max_clients));
	json_object_object_add(o, "idle_ms", json_object_new_int((int)C.lim.idle_ms));
	json_object_object_add(o, "total_ms", json_object_new_int((int)C.lim.total_ms));
	json_object_object_add(o, "accepted", json_object_new_uint64(C.st.accepted));
	json_object_object_add(o, "served", json_object_new_uint64(C.st.served));
	json_object_object_add(o, "refused_peer", json_object_new_uint64(C.st.refused_peer));
	json_object_object_add(o, "timed_out_idle", json_object_new_uint64(C.st.timed_out_idle));
	json_object_object_add(o, "timed_out_total", json_object_new_uint64(C.st.timed_out_total));
	json_object_object_add(o, "evicted", json_object_new_uint64(C.st.evicted));
	json_object_object_add(o, "refused_fds", json_object_new_uint64(C.st.refused_fds));
	json_object_object_add(o, "too_long", json_object_new_uint64(C.st.too_long));
	json_object_object_add(o, "cap_lowered", json_object_new_uint64(C.st.cap_lowered));
	json_object_object_add(o, "accept_pauses", json_object_new_uint64(C.st.accept_pauses));
	json_object_object_add(o, "kept", json_object_new_uint64(C.st.kept));
	return o;
}

void ctlsrv_stop(void)
{
	while (C.head)
		client_close(C.head);
	if (C.lev)
		event_free(C.lev);
	if (C.pause_ev)
		event_free(C.pause_ev);
	C.lev = C.pause_ev = NULL;
	if (C.reserve_fd >= 0)
		close(C.reserve_fd);
	C.reserve_fd = -1;
}
