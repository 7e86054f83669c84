/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctlsrv.h - the daemon's control socket server: one JSON request line and
 * one JSON answer line per connection (docs/daemon.md), on the daemon's
 * event loop, never blocking it on one client.
 *
 * Each client is non-blocking, with an idle deadline (no byte for idle_ms)
 * and a total one (total_ms to send its request, and again to take its
 * answer); at most max_clients are open at once: a new client beyond that
 * closes the one idle the longest (evicted).  accept(2) failing with
 * EMFILE/ENFILE with clients open lowers max_clients to 16 below their number
 * (descriptors for attach and reload) and closes the longest-idle ones down
 * to it; with none to close, it refuses the pending connection through a reserved descriptor and pauses
 * the listener (50 ms, doubling to 1 s) instead of spinning.  Every timeout,
 * eviction and refusal is counted (ctlsrv_stats, in `sluice status`) and
 * reported in summary lines at most once a second per kind.
 */
#ifndef SLUICE_CTLSRV_H
#define SLUICE_CTLSRV_H

#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

struct event_base;

#define SLUICE_CTL_MAX_CLIENTS 64     /* default cap on concurrent control clients */
#define SLUICE_CTL_IDLE_MS     2000   /* default: no byte from (or to) a client for this long */
#define SLUICE_CTL_TOTAL_MS    5000   /* default: a request (or an answer) takes at most this long */
#define SLUICE_CTL_REQ_MAX     65536  /* a request line, newline included */

struct ctlsrv_limits {
	unsigned max_clients;
	unsigned idle_ms, total_ms;
};

struct ctlsrv_stats {
	uint64_t accepted;          /* connections taken from the listen queue */
	uint64_t served;            /* requests answered */
	uint64_t refused_peer;      /* not root, not in the allowed group (SO_PEERCRED, SO_PEERGROUPS) */
	uint64_t timed_out_idle;    /* closed: idle past idle_ms */
	uint64_t timed_out_total;   /* closed: past total_ms */
	uint64_t evicted;           /* closed for a new client (the cap, or out of descriptors) */
	uint64_t refused_fds;       /* refused at EMFILE/ENFILE with no client to close */
	uint64_t too_long;          /* a request line over SLUICE_CTL_REQ_MAX */
	uint64_t cap_lowered;       /* times EMFILE/ENFILE lowered max_clients to keep descriptors free */
	uint64_t accept_pauses;     /* times the listener was paused (out of descriptors, other errors) */
	uint64_t kept;              /* connections handed on after their answer (followers) */
	unsigned clients;           /* open now */
	unsigned max_clients;       /* the cap in force */
};

#define SLUICE_CTL_MAX_FDS 4          /* descriptors a request may carry (SCM_RIGHTS) */

/* Who sent a request: its credentials when it connected (SO_PEERCRED), and
 * the descriptors it sent with the request (SCM_RIGHTS, close-on-exec). */
struct ctlsrv_peer {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int fds[SLUICE_CTL_MAX_FDS];  /* in the order sent; a handler that keeps one sets it to -1,
				       * ctlsrv closes the others after the answer */
	unsigned n_fds;
	/* A handler that keeps the connection (a follower, daemon_follow.h)
	 * sets keep: once the answer is sent, ctlsrv calls keep(fd, keep_arg)
	 * and forgets the client (the fd, non-blocking, is then the callee's,
	 * free of ctlsrv's deadlines and cap).  A client gone before its answer
	 * went gets keep(-1, keep_arg): free what keep_arg holds. */
	void (*keep)(int fd, void *keep_arg);
	void *keep_arg;
};

/* Answer one request (parsed JSON object; NULL: the line was not JSON) of
 * peer.  Returns the answer, owned by the caller (ctlsrv frees it). */
typedef json_object *(*ctlsrv_handler)(json_object *req, struct ctlsrv_peer *peer);

/* Write one summary line (a lifecycle line and stderr): action
 * ("control-client-timeout", ...), message. */
typedef void (*ctlsrv_reporter)(const char *action, const char *message);

/*
 * Serve the listening unix socket lfd (non-blocking, not owned) on base.
 * lim NULL or zero fields: the defaults above.  Returns 0, or -errno (the
 * reserved descriptor or the events could not be made).
 */
int ctlsrv_start(struct event_base *base, int lfd, const struct ctlsrv_limits *lim, ctlsrv_handler handle,
		 ctlsrv_reporter report);

/*
 * Besides root, let members of group gid connect (the peer's primary group
 * or one of its supplementary groups when it connected: SO_PEERGROUPS,
 * Linux 4.13); (gid_t)-1: root only (the default).  What they may ask is
 * the handler's to decide (peer->uid != 0).
 */
void ctlsrv_allow_group(gid_t gid);

/* Write the summary lines due (call every 100 ms or so). */
void ctlsrv_tick(void);

/* The counters so far. */
void ctlsrv_stats(struct ctlsrv_stats *st);

/* An answer {"ok":false,"error":MESSAGE} (printf format, at most 1 KiB),
 * owned by the caller. */
json_object *ctlsrv_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The string member `key` of request `req`, or NULL (req NULL, no such
 * member, not a string).  Owned by req. */
const char *ctlsrv_str(json_object *req, const char *key);

/* The counters as a JSON object (for `status`), owned by the caller. */
json_object *ctlsrv_stats_json(void);

/* Close every client and stop listening (lfd stays open: the caller's). */
void ctlsrv_stop(void);

#endif
