/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_follow.c - followers of the daemon's events file on its event loop
 * (daemon_follow.h): each reads the file at its own offset, whole lines
 * only, filtered by sandbox and event.sequence, into a bounded buffer sent
 * without blocking; inotify says when there is more.
 */
#include "daemon_follow.h"
#include "daemon_user.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "events_dest.h"
#include "kfeatures.h"  /* sluice_name_check */
#include "log.h"
#include "run_limits.h" /* sluice_monotonic_ms */

#define CHUNK           (64u * 1024)  /* bytes read at once; a writer's line is at most 4096 */
#define CHUNKS_PER_WAKE 16            /* per follower per wakeup: a long replay never holds the loop */
#define TICK_MS         1000
#define GENS            64            /* files (reopens) a follower may be behind by */

#define ATTACH_NEEDLE "\"event.action\":\"sandbox-attach\""
#define SEQ_KEY       "\"event.sequence\":"

enum phase {
	PH_FIND,    /* --since: looking for the sandbox's last attach line in [0, find_end) */
	PH_REPLAY,  /* --since: from that line on, up to the end */
	PH_LIVE,    /* at the end: new lines as they come */
};

enum drop { DROP_STALLED, DROP_BEHIND, DROP__MAX };

struct follower {
	struct follower *next;
	int fd;                     /* the client's socket; -1 until ctlsrv hands it over */
	int rfd;                    /* the events file, read with pread at off */
	dev_t dev;
	ino_t ino;
	unsigned gen;               /* the generation of rfd's file (G.gen when it was the newest) */
	bool behind;                /* more reopens behind than the daemon keeps files for */
	struct event *rev, *wev, *more;
	enum phase phase;
	off_t off;                  /* the next byte of the file to read (a line's start) */
	off_t find_end, start_at;
	char sandbox[64];           /* "" every line */
	char needle[96];            /* "sluice.sandbox":"NAME" */
	size_t needle_len;
	bool has_since;
	uint64_t since;
	char *out;                  /* DAEMON_FOLLOW_BUF bytes: lines waiting for the client */
	size_t out_len, out_off;
	uint64_t progress_ms;       /* the client last took bytes (or had none waiting) */
	uint64_t lines;
	uid_t uid;
	pid_t pid;
};

static struct {
	struct event_base *base;
	char path[PATH_MAX];
	bool ocsf, ready;
	bool journal;               /* the events go to the journal: nothing to follow here */
	daemon_follow_reporter report;
	int ifd, wd;
	struct event *iev, *tick;
	unsigned gen;               /* counts reopens of the file (SIGHUP, the size cap) */
	unsigned settled;           /* the files of generations < settled have no writer left */
	struct {                    /* generation g's file (O_RDONLY) in [g % GENS]; fd -1: none */
		int fd;             /* (kept only while a follower may still need it) */
		unsigned gen;
	} gen_fd[GENS];
	struct follower *list;      /* handed over */
	unsigned n;                 /* followers, pending ones included */
	uint64_t accepted, refused, closed, lines, torn, dropped[DROP__MAX];
	char buf[CHUNK];
} G = { .ifd = -1, .wd = -1 };

static void service(struct follower *f);

/* ---- the inotify watch: only while someone follows (no cost otherwise) --- */

static void watch_update(void)
{
	if (G.list && G.wd < 0 && G.ifd >= 0) {
		G.wd = inotify_add_watch(G.ifd, G.path, IN_MODIFY);
		if (G.wd < 0)
			log_warn("daemon: follow: inotify on %s (followers are woken once a second)", G.path);
	} else if (!G.list && G.wd >= 0) {
		inotify_rm_watch(G.ifd, G.wd);
		G.wd = -1;
	}
}

static void follower_free(struct follower *f)
{
	struct follower **pp;

	for (pp = &G.list; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	if (f->rev)
		event_free(f->rev);
	if (f->wev)
		event_free(f->wev);
	if (f->more)
		event_free(f->more);
	if (f->fd >= 0)
		close(f->fd);
	if (f->rfd >= 0)
		close(f->rfd);
	free(f->out);
	free(f);
	G.n--;
	watch_update();
}

static void drop(struct follower *f, enum drop why)
{
	char msg[512];

	G.dropped[why]++;
	snprintf(msg, sizeof(msg),
		 "sluice events --follow (uid %u, pid %d%s%s) dropped: %s (%" PRIu64 " follower(s) dropped so far)",
		 (unsigned)f->uid, (int)f->pid, f->sandbox[0] ? ", sandbox " : "", f->sandbox,
		 why == DROP_STALLED ? "it took no byte for 10 s while lines waited for it"
				     : "it fell too far behind the events file (64 MiB, or 64 reopens or rotations)",
		 G.dropped[DROP_STALLED] + G.dropped[DROP_BEHIND]);
	follower_free(f);
	if (G.report)
		G.report(NULL, "follow-client-dropped", msg);
}

/* ---- reading the file ------------------------------------------------ */

/*
 * Is p[0..len) (the newline excluded) one whole JSON object: `{`, strings
 * closed, brackets balanced, the last byte closing the first?  A writer
 * killed mid-line leaves a torn line that the next writer ends with a
 * newline (evlog.h): it is never sent.  One pass, no allocation.
 */
static bool whole_object(const char *p, size_t len)
{
	int depth = 0;
	bool in_str = false;

	if (len < 2 || p[0] != '{')
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = p[i];

		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		if (ch == '"')
			in_str = true;
		else if (ch == '{' || ch == '[')
			depth++;
		else if ((ch == '}' || ch == ']') && --depth == 0)
			return i == len - 1;
	}
	return false;
}

/* One whole line (newline included) of the file at offset `at`. */
static void take_line(struct follower *f, const char *p, size_t len, off_t at)
{
	bool attach;

	if (len <= 1)
		return;
	if (!whole_object(p, len - 1)) {
		G.torn++;
		return;
	}
	if (f->sandbox[0] && !memmem(p, len, f->needle, f->needle_len))
		return;
	attach = f->sandbox[0] && memmem(p, len, ATTACH_NEEDLE, sizeof(ATTACH_NEEDLE) - 1);
	if (f->phase == PH_FIND) {
		if (attach)
			f->start_at = at;
		return;
	}
	/* a new attach of the name after the one replayed from: its counter
	 * starts again at 0, every line of it is new */
	if (attach && at != f->start_at)
		f->has_since = false;
	if (f->has_since) {
		const char *q = memmem(p, len, SEQ_KEY, sizeof(SEQ_KEY) - 1);

		if (q) {
			uint64_t seq = 0;

			for (q += sizeof(SEQ_KEY) - 1; q < p + len && *q >= '0' && *q <= '9'; q++)
				seq = seq * 10 + (uint64_t)(*q - '0');
			if (seq < f->since)
				return;
		}
	}
	memcpy(f->out + f->out_len, p, len);
	f->out_len += len;
	f->lines++;
	G.lines++;
}

/* The lines in buf (n bytes read at f->off); returns the bytes of whole
 * lines (the rest is a line still being written, or was cut by the read). */
static size_t take_lines(struct follower *f, const char *buf, size_t n)
{
	size_t pos = 0;

	for (;;) {
		const char *nl = memchr(buf + pos, '\n', n - pos);
		size_t len;

		if (!nl)
			return pos;
		len = (size_t)(nl - (buf + pos)) + 1;
		take_line(f, buf + pos, len, f->off + (off_t)pos);
		pos += len;
	}
}

/* Close the files no follower can need any more (generations older than
 * the oldest one followed): a rotated file removed from the disk is not
 * kept alive by the daemon. */
static void gens_trim(void)
{
	unsigned oldest = G.gen;

	for (struct follower *f = G.list; f; f = f->next)
		if (f->gen < oldest)
			oldest = f->gen;
	for (unsigned i = 0; i < GENS; i++)
		if (G.gen_fd[i].fd >= 0 && G.gen_fd[i].gen < oldest) {
			close(G.gen_fd[i].fd);
			G.gen_fd[i].fd = -1;
		}
}

/*
 * f read its file to the end: a truncated file is read again from its
 * start.  After a reopen the follower moves to the next generation's file,
 * but only once nothing writes to its own any more (a retired proxy still
 * draining logs its last requests there): then that file is complete.  The
 * next file is read from its start, unless it is the same file (a SIGHUP
 * without a rotation).  One too many reopens behind is marked, and dropped
 * on the tick.
 */
static void at_end(struct follower *f)
{
	struct stat st;
	int nfd;

	if (fstat(f->rfd, &st) == 0 && st.st_size < f->off)
		f->off = 0;  /* truncated under us (copytruncate) */
	if (f->gen == G.gen || f->gen >= G.settled || f->behind)
		return;
	nfd = G.gen_fd[(f->gen + 1) % GENS].fd;
	if (nfd < 0 || G.gen_fd[(f->gen + 1) % GENS].gen != f->gen + 1 || fstat(nfd, &st) < 0) {
		f->behind = true;  /* its next file is no longer kept */
		return;
	}
	f->gen++;
	if (st.st_dev != f->dev || st.st_ino != f->ino) {
		nfd = fcntl(nfd, F_DUPFD_CLOEXEC, 0);  /* never inherited by a child */
		if (nfd < 0) {
			f->behind = true;
			return;
		}
		close(f->rfd);
		f->rfd = nfd;
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->off = 0;
		event_active(f->more, EV_TIMEOUT, 0);
	}
	gens_trim();
}

/* Read up to CHUNKS_PER_WAKE chunks for f while its buffer has room.
 * Returns true when there may be more to read now (call again). */
static bool pump(struct follower *f)
{
	if (f->out_off) {
		memmove(f->out, f->out + f->out_off, f->out_len - f->out_off);
		f->out_len -= f->out_off;
		f->out_off = 0;
	}
	for (int i = 0; i < CHUNKS_PER_WAKE; i++) {
		size_t want = CHUNK, used;
		ssize_t n;

		if (f->phase != PH_FIND && DAEMON_FOLLOW_BUF - f->out_len < CHUNK)
			return false;  /* full: the client's turn */
		if (f->phase == PH_FIND && f->find_end - f->off < (off_t)want)
			want = (size_t)(f->find_end - f->off);
		n = want ? pread(f->rfd, G.buf, want, f->off) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			log_warn("daemon: follow: reading %s", G.path);
			return false;
		}
		used = n ? take_lines(f, G.buf, (size_t)n) : 0;
		if (!used && n == (ssize_t)CHUNK)
			used = CHUNK;  /* 64 KiB without a newline: no writer's line (at most 4096): skipped */
		if (!used) {
			if (f->phase == PH_FIND) {
				f->phase = PH_REPLAY;
				f->off = f->start_at;
				continue;
			}
			f->phase = PH_LIVE;
			at_end(f);
			return false;
		}
		f->off += (off_t)used;
	}
	return true;
}

/* Send what waits.  Returns 0, or -1 when the client is gone (f freed). */
static int flush(struct follower *f)
{
	uint64_t now = sluice_monotonic_ms();

	while (f->out_off < f->out_len) {
		ssize_t n = send(f->fd, f->out + f->out_off, f->out_len - f->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			event_add(f->wev, NULL);
			return 0;
		}
		if (n < 0) {
			G.closed++;
			follower_free(f);
			return -1;
		}
		f->out_off += (size_t)n;
		f->progress_ms = now;
	}
	f->out_len = f->out_off = 0;
	f->progress_ms = now;
	return 0;
}

static void service(struct follower *f)
{
	bool more;

	if (flush(f) < 0)
		return;
	more = pump(f);
	if (flush(f) < 0)
		return;
	/* more to read and room for it: again on the next turn of the loop */
	if (more && DAEMON_FOLLOW_BUF - f->out_len >= CHUNK)
		event_active(f->more, EV_TIMEOUT, 0);
}

/* ---- events ------------------------------------------------------------- */

static void on_more(evutil_socket_t fd, short what, void *arg)
{
	service(arg);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	service(arg);
}

/* The client sends nothing after its request: EOF or an error means it
 * is gone. */
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct follower *f = arg;
	char junk[256];
	ssize_t n = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		G.closed++;
		follower_free(f);
	}
}

static void service_all(void)
{
	struct follower *f, *next;

	for (f = G.list; f; f = next) {
		next = f->next;
		service(f);
	}
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(G.ifd, ev, sizeof(ev)) > 0)
		;
	service_all();
}

/* Once a second: drop the followers that stall or fall behind, and read
 * for all (inotify missed nothing, but a reopened file has a new watch). */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	uint64_t now = sluice_monotonic_ms();
	struct follower *f, *next;

	for (f = G.list; f; f = next) {
		struct stat st;

		next = f->next;
		if (f->out_len > f->out_off && now - f->progress_ms > DAEMON_FOLLOW_STALL_MS)
			drop(f, DROP_STALLED);
		else if (f->behind ||
			 (f->phase == PH_LIVE && fstat(f->rfd, &st) == 0 && st.st_size - f->off > DAEMON_FOLLOW_LAG_MAX))
			drop(f, DROP_BEHIND);
	}
	service_all();
}

/* ctlsrv hands the connection over once the answer went (fd -1: it did not). */
static void keep(int fd, void *arg)
{
	struct follower *f = arg;

	if (fd < 0) {
		follower_free(f);
		return;
	}
	f->fd = fd;
	f->rev = event_new(G.base, fd, EV_READ | EV_PERSIST, on_readable, f);
	f->wev = event_new(G.base, fd, EV_WRITE, on_writable, f);
	f->more = evtimer_new(G.base, on_more, f);
	f->out = malloc(DAEMON_FOLLOW_BUF);
	f->next = G.list;
	G.list = f;
	if (!f->rev || !f->wev || !f->more || !f->out || event_add(f->rev, NULL) < 0) {
		log_warnx("daemon: follow: out of memory, follower closed");
		follower_free(f);
		return;
	}
	f->progress_ms = sluice_monotonic_ms();
	watch_update();
	service(f);
}

/* ---- the request -------------------------------------------------------- */

/* The start of the line that holds byte size-1 of fd's file: where a
 * follower from now on begins (a line being written is then read whole). */
static off_t line_start_before(int fd, off_t size)
{
	char tail[4096];
	off_t from = size > (off_t)sizeof(tail) ? size - (off_t)sizeof(tail) : 0;
	ssize_t n = size > 0 ? pread(fd, tail, (size_t)(size - from), from) : 0;

	for (ssize_t i = n - 1; i >= 0; i--)
		if (tail[i] == '\n')
			return from + i + 1;
	return n > 0 && from == 0 ? 0 : size;
}

static json_object *refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_object *refuse(const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	G.refused++;
	return ctlsrv_error("%s", msg);
}

bool daemon_follow_handles(json_object *req)
{
	const char *cmd = ctlsrv_str(req, "cmd");

	return cmd && strcmp(cmd, "follow") == 0;
}

json_object *daemon_follow_request(json_object *req, struct ctlsrv_peer *peer, const struct daemon_user_ops *ops)
{
	const char *sandbox = ctlsrv_str(req, "sandbox");
	json_object *since = NULL, *o, *a;
	struct follower *f;
	struct stat st;
	char msg[256];

	if (G.journal)
		return refuse("%s", "follow: the daemon writes its events to the journal (--events journald): "
			      "follow them there, `journalctl -t sluice -f -o cat`");
	if (!G.ready)
		return refuse("%s", "follow: the daemon serves no followers");
	if (G.ocsf)
		return refuse("follow: the daemon writes OCSF (--events-format ocsf) to %s; follow reads its ECS lines: "
			      "run it without --events-format and convert with `sluice events --follow --format ocsf`",
			      G.path);
	if (sandbox && sluice_name_check(sandbox, msg, sizeof(msg)) < 0)
		return refuse("follow: %s", msg);
	if (json_object_object_get_ex(req, "since", &since) &&
	    (!json_object_is_type(since, json_type_int) || json_object_get_int64(since) < 0))
		return refuse("%s", "follow: \"since\" must be an event.sequence (an integer >= 0)");
	if (since && !sandbox)
		return refuse("%s", "follow: \"since\" needs \"sandbox\" (event.sequence is per sandbox)");
	if (daemon_user_may_follow(peer, sandbox, ops, msg, sizeof(msg)) < 0)
		return refuse("%s", msg);
	if (G.n >= DAEMON_FOLLOW_MAX)
		return refuse("follow: %d followers already (the most the daemon serves at once)", DAEMON_FOLLOW_MAX);
	if (peer->uid != 0) {
		unsigned mine = 0, users = 0;

		for (f = G.list; f; f = f->next) {
			mine += f->uid == peer->uid;
			users += f->uid != 0;
		}
		if (mine >= DAEMON_FOLLOW_PER_USER || users >= DAEMON_FOLLOW_MAX - DAEMON_FOLLOW_ROOT_KEPT)
			return refuse("follow: uid %u follows %u sandbox(es) already (at most %d; members together %d)",
				      (unsigned)peer->uid, mine, DAEMON_FOLLOW_PER_USER,
				      DAEMON_FOLLOW_MAX - DAEMON_FOLLOW_ROOT_KEPT);
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return refuse("%s", "follow: out of memory");
	f->fd = -1;
	f->rfd = open(G.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	G.n++;
	if (f->rfd < 0 || fstat(f->rfd, &st) < 0) {
		snprintf(msg, sizeof(msg), "follow: cannot read %s: %s", G.path, strerror(errno));
		follower_free(f);
		return refuse("%s", msg);
	}
	if (!S_ISREG(st.st_mode)) {
		follower_free(f);
		return refuse("follow: the daemon's events destination %s is not a regular file", G.path);
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->gen = G.gen;
	f->uid = peer->uid;
	f->pid = peer->pid;
	if (sandbox) {
		snprintf(f->sandbox, sizeof(f->sandbox), "%s", sandbox);
		f->needle_len = (size_t)snprintf(f->needle, sizeof(f->needle), "\"sluice.sandbox\":\"%s\"", sandbox);
	}
	if (since) {
		f->has_since = true;
		f->since = (uint64_t)json_object_get_int64(since);
		f->phase = PH_FIND;
		f->find_end = st.st_size;
		f->start_at = f->off = 0;
	} else {
		f->phase = PH_LIVE;
		f->off = line_start_before(f->rfd, st.st_size);
	}
	peer->keep = keep;
	peer->keep_arg = f;
	G.accepted++;
	o = json_object_new_object();
	a = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(a, "sandbox", sandbox ? json_object_new_string(sandbox) : NULL);
	json_object_object_add(a, "since", since ? json_object_new_int64(json_object_get_int64(since)) : NULL);
	json_object_object_add(a, "events", json_object_new_string(G.path));
	json_object_object_add(o, "follow", a);
	return o;
}

/* ---- the daemon's side ---------------------------------------------------- */

int daemon_follow_init(struct event_base *base, const char *path, bool ocsf, daemon_follow_reporter report)
{
	struct timeval tv = { .tv_sec = TICK_MS / 1000, .tv_usec = (TICK_MS % 1000) * 1000 };

	G.base = base;
	for (unsigned i = 0; i < GENS; i++)
		G.gen_fd[i].fd = -1;
	snprintf(G.path, sizeof(G.path), "%s", path);
	if (sluice_events_is_journald(path)) {
		G.journal = true;  /* no file to follow: refused with the journal's way */
		return 0;
	}
	G.ocsf = ocsf;
	G.report = report;
	G.ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (G.ifd < 0)
		return -errno;
	G.iev = event_new(base, G.ifd, EV_READ | EV_PERSIST, on_inotify, NULL);
	G.tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
	if (!G.iev || !G.tick || event_add(G.iev, NULL) < 0 || event_add(G.tick, &tv) < 0)
		return -ENOMEM;
	G.ready = true;
	return 0;
}

void daemon_follow_reopened(void)
{
	unsigned slot;

	if (!G.ready)
		return;
	G.gen++;
	slot = G.gen % GENS;
	if (G.gen_fd[slot].fd >= 0)
		close(G.gen_fd[slot].fd);
	G.gen_fd[slot].fd = open(G.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	G.gen_fd[slot].gen = G.gen;
	if (G.gen_fd[slot].fd < 0)
		log_warn("daemon: follow: cannot open %s again (its followers are dropped)", G.path);
	gens_trim();
	if (G.wd >= 0) {
		inotify_rm_watch(G.ifd, G.wd);
		G.wd = -1;
	}
	watch_update();
	service_all();
}

unsigned daemon_follow_gen(void)
{
	return G.gen;
}

void daemon_follow_settle(unsigned oldest_written)
{
	if (oldest_written == G.settled)
		return;
	G.settled = oldest_written;
	service_all();
}

json_object *daemon_follow_stats_json(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "followers", json_object_new_int((int)G.n));
	json_object_object_add(o, "max_followers", json_object_new_int(DAEMON_FOLLOW_MAX));
	json_object_object_add(o, "accepted", json_object_new_uint64(G.accepted));
	json_object_object_add(o, "refused", json_object_new_uint64(G.refused));
	json_object_object_add(o, "closed", json_object_new_uint64(G.closed));
	json_object_object_add(o, "dropped_stalled", json_object_new_uint64(G.dropped[DROP_STALLED]));
	json_object_object_add(o, "dropped_behind", json_object_new_uint64(G.dropped[DROP_BEHIND]));
	json_object_object_add(o, "lines_sent", json_object_new_uint64(G.lines));
	json_object_object_add(o, "torn_lines_skipped", json_object_new_uint64(G.torn));
	return o;
}

void daemon_follow_stop(void)
{
	while (G.list)
		follower_free(G.list);
	if (G.iev)
		event_free(G.iev);
	if (G.tick)
		event_free(G.tick);
	G.iev = G.tick = NULL;
	if (G.ifd >= 0)
		close(G.ifd);
	G.ifd = G.wd = -1;
	for (unsigned i = 0; i < GENS; i++)
		if (G.gen_fd[i].fd >= 0) {
			close(G.gen_fd[i].fd);
			G.gen_fd[i].fd = -1;
		}
	G.ready = false;
}
