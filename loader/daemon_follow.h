/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_follow.h - `sluice events --follow` on the daemon's side: a client
 * that asks {"cmd":"follow"} keeps its control connection and gets the
 * daemon's JSON lines, as written, one per line, as they reach the events
 * file (the daemon's kernel and lifecycle lines and the proxies' and
 * resolvers' lines alike: they all append to that one file).
 *
 * Request: {"cmd":"follow", "sandbox":NAME (optional), "since":SEQ
 * (optional, needs "sandbox")}.  Answer: one line {"ok":true,"follow":...}
 * (or {"ok":false,"error":...} and the connection closes), then the lines.
 *
 *  - Each follower reads the events file itself, from its own offset (a
 *    descriptor of its own, pread), and takes only whole lines: the bytes
 *    up to the last newline.  Writers append each line with one write(2),
 *    so a line being written is seen once it is whole, never torn.
 *  - New lines are noticed with inotify (IN_MODIFY on the file) in the
 *    daemon's event loop, and once a second in any case.
 *  - "since": the lines of NAME with event.sequence >= SEQ, from the last
 *    `sandbox-attach` line of NAME in the file (the counter starts again
 *    at a new attach of the same name), then the new ones.  Without it,
 *    the lines from now on.
 *  - Bounded: at most DAEMON_FOLLOW_MAX followers (a member of the user
 *    group DAEMON_FOLLOW_PER_USER, and members together never the last
 *    DAEMON_FOLLOW_ROOT_KEPT: root can always follow), each with an output
 *    buffer of DAEMON_FOLLOW_BUF bytes.  A follower that takes nothing for
 *    DAEMON_FOLLOW_STALL_MS while lines wait for it, or that falls more
 *    than DAEMON_FOLLOW_LAG_MAX bytes behind the file's end, is dropped
 *    (closed), counted, and reported in a lifecycle line with the reason.
 *    No follower ever makes the daemon wait: every send is non-blocking
 *    and each wakeup reads a bounded amount per follower.
 *  - After a reopen (SIGHUP, or the size cap's rotation: each one a new
 *    generation of the file) each follower reads its old file to the end,
 *    and once nothing writes to it any more (the retired proxies and
 *    resolvers that still log there have exited: daemon_follow_settle)
 *    moves to the next generation's file, from its start.  The daemon keeps
 *    a file open for that only while a follower may need it (at most 64
 *    generations back; one further behind is dropped).
 *
 * Who: root follows any sandbox, or all (no "sandbox"); a member of the
 * user group only a sandbox of its own (daemon_user_may_follow()).
 */
#ifndef SLUICE_DAEMON_FOLLOW_H
#define SLUICE_DAEMON_FOLLOW_H

#include <stdbool.h>

#include <json-c/json.h>

#include "ctlsrv.h"

struct event_base;
struct daemon_user_ops;

#define DAEMON_FOLLOW_MAX      32
#define DAEMON_FOLLOW_PER_USER 4                  /* a member of the user group: followers at once */
#define DAEMON_FOLLOW_ROOT_KEPT 8                 /* of DAEMON_FOLLOW_MAX, kept for root's */
#define DAEMON_FOLLOW_BUF      (1u << 20)          /* output buffer per follower, bytes */
#define DAEMON_FOLLOW_STALL_MS 10000               /* nothing taken for this long, lines waiting: dropped */
#define DAEMON_FOLLOW_LAG_MAX  (64ll << 20)        /* a live follower this far behind the file's end: dropped */

/* One lifecycle line of the daemon's (sandbox NULL: daemon-wide). */
typedef void (*daemon_follow_reporter)(const char *sandbox, const char *action, const char *message);

/*
 * Serve followers of the events file at `path` (the daemon's, appended to
 * by every writer) on base.  ocsf: the file holds OCSF events (the daemon's
 * --events-format ocsf): following is refused then (the filters read ECS
 * lines).  Returns 0, or -errno (inotify or the timer could not be made).
 */
int daemon_follow_init(struct event_base *base, const char *path, bool ocsf, daemon_follow_reporter report);

/* Is req a follow request ({"cmd":"follow"})? */
bool daemon_follow_handles(json_object *req);

/*
 * Answer a follow request of peer: check it (who may, the arguments), and
 * on success set peer->keep so that ctlsrv hands the connection on after
 * the answer.  ops: the user part's (may this peer follow that sandbox).
 * Returns the answer (the caller owns it).
 */
json_object *daemon_follow_request(json_object *req, struct ctlsrv_peer *peer, const struct daemon_user_ops *ops);

/* The events file was reopened (SIGHUP, a rotation): a new generation
 * begins; followers move to it once they have read the old one to its end
 * and daemon_follow_settle() says nothing writes to the old one. */
void daemon_follow_reopened(void);

/* The counters (followers now, accepted, refused, dropped by reason, lines
 * sent) as a JSON object for `status`, owned by the caller. */
/* The generation of the events file now (0 at start, one more per
 * reopen): what a child started now writes to. */
unsigned daemon_follow_gen(void);

/* Nothing writes to the files of generations older than oldest_written any
 * more (the oldest generation a living proxy or resolver writes; the
 * current one when all are new): followers may leave those files. */
void daemon_follow_settle(unsigned oldest_written);

json_object *daemon_follow_stats_json(void);

/* Close every follower and let go of inotify and the timer. */
void daemon_follow_stop(void);

#endif
