/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * evlog.h - the one writer of sluice's JSON lines (kernel events, the proxy's
 * access log, the resolver's query log, lifecycle lines; docs/events.md).
 *
 * Two parts:
 *  - struct sluice_line: a bounded JSON-object builder over a fixed buffer.
 *    No allocation.  Strings are escaped as RFC 8259 requires and bytes that
 *    are not well-formed UTF-8 (RFC 3629) become U+FFFD, so a hostile comm,
 *    server name or path cannot make a line unreadable.  A string value
 *    longer than SLUICE_LINE_VAL_MAX bytes, or a field that does not fit in
 *    the line, is cut (at a UTF-8 boundary) or left out, and the line then
 *    says "sluice.truncated": true: a line is never lost for its size and is
 *    always one valid JSON object.
 *  - struct sluice_evlog: one destination (fd) and the envelope every line
 *    carries (ECS, host, observer, sandbox, policy), rendered once.  Each line
 *    is written with one writev(2) of at most SLUICE_LINE_MAX bytes (PIPE_BUF:
 *    atomic on a pipe; with O_APPEND on a regular file, lines of the loader,
 *    the proxy and the resolver sharing one open file never interleave).  A
 *    line is written whole or not at all: a write error (ENOSPC, EIO, EPIPE,
 *    ...) counts it as lost, per dataset, with the reason; a short write to a
 *    regular file is taken back (ftruncate) so no torn tail is left.  Loss is
 *    reported on stderr once per state change (failing, recovered), and the
 *    first line after a recovery is an "events_lost" line saying how many were
 *    lost meanwhile.  Single-threaded (every sluice process is): one evlog per
 *    destination and envelope, used from one thread.
 */
#ifndef SLUICE_EVLOG_H
#define SLUICE_EVLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "version.h" /* SLUICE_VERSION */

#define SLUICE_ECS_VERSION "8.11.0"

#define SLUICE_LINE_MAX 4096      /* whole line, newline included (PIPE_BUF) */
#define SLUICE_LINE_VAL_MAX 2048  /* one string value, escaped */
#define SLUICE_HOLD_MAX 64        /* lines gathered at most between hold and flush */

struct sluice_line {
	char *p;
	size_t len, cap;          /* cap: room for fields (the tail reserve excluded) */
	size_t safe;              /* length after the last complete field */
	bool over;                /* the last put did not fit (rewound) */
	bool truncated;           /* something was cut or left out */
};

/* Start an object `{` in buf (cap bytes, at least 128).  The last 64 bytes
 * are kept for the closing `}`, the truncation mark and the newline. */
void sluice_line_init(struct sluice_line *l, char *buf, size_t cap);

/* Append raw JSON text (the caller's, trusted: keys, literals, numbers). */
void sluice_line_raw(struct sluice_line *l, const char *s, size_t n);

/* Append `s` (NULL: "") as a JSON string, escaped, U+FFFD for bad UTF-8,
 * cut at SLUICE_LINE_VAL_MAX output bytes. */
void sluice_line_strval(struct sluice_line *l, const char *s);

/* Append `,"key":` (no comma after `{` or `[`).  key: plain ASCII. */
void sluice_line_key(struct sluice_line *l, const char *key, size_t klen);

/* Fields.  Each is all-or-nothing: one that does not fit is left out (and
 * the line marked truncated).  put_str with v == NULL writes nothing. */
void sluice_line_put_str(struct sluice_line *l, const char *key, size_t klen, const char *v);
void sluice_line_put_u64(struct sluice_line *l, const char *key, size_t klen, uint64_t v);
void sluice_line_put_i64(struct sluice_line *l, const char *key, size_t klen, int64_t v);
void sluice_line_put_bool(struct sluice_line *l, const char *key, size_t klen, bool v);
/* key and a raw JSON value (an array or object literal of the caller's) */
void sluice_line_put_raw(struct sluice_line *l, const char *key, size_t klen, const char *json, size_t n);

/* Keys are string literals: their length is known at compile time. */
#define SL_STR(l, k, v)  sluice_line_put_str((l), (k), sizeof(k) - 1, (v))
#define SL_U64(l, k, v)  sluice_line_put_u64((l), (k), sizeof(k) - 1, (v))
#define SL_I64(l, k, v)  sluice_line_put_i64((l), (k), sizeof(k) - 1, (v))
#define SL_BOOL(l, k, v) sluice_line_put_bool((l), (k), sizeof(k) - 1, (v))
#define SL_RAW(l, k, v)  sluice_line_put_raw((l), (k), sizeof(k) - 1, (v), sizeof(v) - 1)
#define SL_KEY(l, k)     sluice_line_key((l), (k), sizeof(k) - 1)
#define SL_LIT(l, s)     sluice_line_raw((l), (s), sizeof(s) - 1)

/* For compound values (an array element that is an object): remember the
 * length, build, and if l->over rewind to the mark (drops the partial part,
 * marks the line truncated). */
size_t sluice_line_mark(const struct sluice_line *l);
void sluice_line_rewind(struct sluice_line *l, size_t mark);

/* Close the object (adds "sluice.truncated":true when something was cut).
 * Returns the length (NUL-terminated in buf, no newline), never fails. */
size_t sluice_line_end(struct sluice_line *l);

/* "2026-11-30T06:13:47.123456Z" for a CLOCK_REALTIME time in ns (floor
 * division: times before 1970 keep microseconds in 0..999999).  The part up
 * to the seconds is cached per process: call from one thread. */
void sluice_format_time(int64_t real_ns, char *buf, size_t len);

/* Decimal digits of v into out (room for at least 20 bytes, no NUL);
 * returns their count.  No printf: the hot path's numbers. */
size_t sluice_u64_dec(char *out, uint64_t v);

/* CLOCK_REALTIME now, in ns. */
int64_t sluice_now_ns(void);

/* event.dataset of a line: the source whose loss is counted apart. */
enum sluice_dataset {
	SLUICE_DS_KERNEL,         /* sluice.kernel: denials from the BPF ring buffer */
	SLUICE_DS_PROXY,          /* sluice.proxy: the access log */
	SLUICE_DS_RESOLVER,       /* sluice.resolver: the query log */
	SLUICE_DS_LIFECYCLE,      /* sluice.lifecycle: start, stop, children, daemon */
	SLUICE_DS__MAX,
};

/* "sluice.kernel", ... ; "sluice.unknown" out of range */
const char *sluice_dataset_name(enum sluice_dataset ds);

struct sluice_labels;
struct sluice_evseq;

/* What every line of a writer carries (the strings are copied). */
struct sluice_envelope {
	const char *sandbox;      /* sluice.sandbox; NULL: none (daemon-wide lines) */
	const char *policy_name;  /* rule.ruleset, sluice.policy_name */
	const char *policy_digest;/* rule.version, sluice.policy_sha256 (hex SHA-256) */
	const char *mode;         /* sluice.mode: "enforce" / "audit"; NULL: none */
	/* the container the sandbox is (sluice oci-hook, attach --container); NULL: none */
	const char *container_id;      /* container.id: the runtime's id (64 hex for podman) */
	const char *container_name;    /* container.name */
	const char *container_runtime; /* container.runtime: podman, docker, containerd, cri-o, oci */
	const struct sluice_labels *labels; /* labels.KEY (--label, labels.h); NULL: none */
};

struct sluice_evlog {
	int fd;
	bool regular;             /* fd is a regular file: short writes are taken back */
	char dest[128];           /* for messages: "stderr", "stdout", a path */
	char who[32];             /* stderr prefix: "sluice", "sluice-proxy", ... */
	char env[2048];           /* the envelope, rendered: `,"ecs.version":...` */
	size_t env_len;
	char id_prefix[20];       /* event.id: <16 hex random>-<counter> */
	uint64_t next_id;
	/* event.sequence: the sandbox's shared counter (evseq.h), or this
	 * writer's own when none is shared (daemon-wide lines, a child started
	 * without --seq-fd) */
	struct sluice_evseq *seq;
	int seq_fd;               /* the counter's fd (owned), -1: none */
	uint64_t seq_local;
	char buf[SLUICE_LINE_MAX];
	struct sluice_line cur;
	enum sluice_dataset cur_ds;
	uint64_t written[SLUICE_DS__MAX];
	uint64_t lost[SLUICE_DS__MAX];        /* since start */
	uint64_t lost_outage[SLUICE_DS__MAX]; /* since the destination began failing */
	bool ocsf;                /* lines written as OCSF events (ocsf.h), not ECS */
	int err;                  /* errno of the current outage; 0: writable */
	int last_err;             /* errno of the latest loss (0: none ever) */
	/* sluice_evlog_hold(): committed lines gathered here until the flush */
	char *hold;               /* the caller's buffer; NULL: each line is written at its commit */
	size_t hold_len, hold_cap;
	unsigned hold_n;
	size_t hold_end[SLUICE_HOLD_MAX];          /* where each gathered line ends in hold */
	enum sluice_dataset hold_ds[SLUICE_HOLD_MAX];
};

/*
 * Set up a writer on `fd` (not owned: the caller closes it), described as
 * `dest` in messages, with prefix `who` on stderr.  Reads host.name
 * (gethostname) and host.id (/etc/machine-id) once.  A regular file whose
 * last byte is not a newline (a writer killed mid-line) gets one first, with
 * a message on stderr.  Never fails: a missing machine-id leaves host.id out.
 */
void sluice_evlog_init(struct sluice_evlog *w, int fd, const char *dest, const char *who,
		       const struct sluice_envelope *env);

/* Write OCSF events (ocsf.h) instead of ECS lines from every writer this
 * process sets up after the call (`--events-format ocsf`). */
void sluice_evlog_use_ocsf(bool on);

/*
 * Number this writer's lines from the counter in `fd` (evseq.h; the fd is
 * owned by w from now on, even on failure), shared with the sandbox's other
 * writers.  Returns 0, or -errno when fd holds no counter (w keeps its own).
 */
int sluice_evlog_share_seq(struct sluice_evlog *w, int fd);

/* The shared counter's fd (to hand to a child as --seq-fd), or -1. */
int sluice_evlog_seq_fd(const struct sluice_evlog *w);

/* The shared page (evseq.h: the counter and the writers' counts), or NULL
 * when w shares none (a child run alone). */
struct sluice_evseq *sluice_evlog_shared(const struct sluice_evlog *w);

/* Unmap and close the shared counter (the writer numbers on by itself);
 * nothing when w maps none. */
void sluice_evlog_release_seq(struct sluice_evlog *w);

/* Render a new envelope (a reload changed the policy); counters are kept. */
void sluice_evlog_set_envelope(struct sluice_evlog *w, const struct sluice_envelope *env);

/*
 * Begin a line of dataset `ds` at time `real_ns` (CLOCK_REALTIME ns; < 0:
 * now): `{`, @timestamp, the envelope, event.dataset, event.id.  Returns the
 * line to add fields to; finish it with sluice_evlog_commit().
 */
struct sluice_line *sluice_evlog_begin(struct sluice_evlog *w, enum sluice_dataset ds, int64_t real_ns);

/*
 * Close and write the line begun last.  Returns 0 when it was written, or
 * -errno when it was lost (counted in lost[ds], reported on stderr if the
 * state changed).  Retries EINTR.
 */
int sluice_evlog_commit(struct sluice_evlog *w);

/*
 * The same for a report the caller keeps and writes again later until it
 * is written (the ring buffer's events_lost count): a failure is not
 * counted as a lost line, the outage is still reported.  0 or -errno.
 */
int sluice_evlog_commit_retry(struct sluice_evlog *w);

/*
 * Gather the lines committed from now on in `buf` (`cap` bytes, at least
 * SLUICE_LINE_MAX; the caller's, untouched by anyone else until the flush)
 * instead of writing each at its commit, and write them at
 * sluice_evlog_flush() with as few write(2) as keep every line whole: one
 * for a regular file (opened O_APPEND: appended at once, never interleaved
 * with other writers' lines), else runs of whole lines of at most
 * SLUICE_LINE_MAX bytes (PIPE_BUF: each atomic on a pipe, one buffer on the
 * journal's stream).  Numbering is unchanged (at begin), so the lines still
 * reach the destination in their order.  When the buffer or
 * SLUICE_HOLD_MAX lines are full, a commit first writes what is gathered.
 * A commit returns 0 while held: a loss is counted at the flush, per
 * dataset, as for a line written alone (a short write to a regular file
 * takes back only the torn line; the lines after it are lost and counted).
 * The OCSF format writes each line at its commit (no gathering).  For a
 * caller that must have its lines out before it acts on them (the
 * resolver: a query's line before its answer), in one batch.
 */
void sluice_evlog_hold(struct sluice_evlog *w, char *buf, size_t cap);

/* Write the lines gathered since sluice_evlog_hold() and stop gathering.
 * Returns 0 when all were written (or none was held), else -errno of the
 * failure (the lines not written are counted lost). */
int sluice_evlog_flush(struct sluice_evlog *w);

/*
 * Carry on the loss counts of an earlier writer of the same lines (a
 * restarted daemon, from its state file): lost[] since start, outage[] not
 * yet reported in an events_lost line, err the errno of that outage (0:
 * none).  With an outage pending, the next line written first reports it.
 */
void sluice_evlog_restore_lost(struct sluice_evlog *w, const uint64_t lost[SLUICE_DS__MAX],
			       const uint64_t outage[SLUICE_DS__MAX], int err);

/* Lines of `ds` lost to write errors since start. */
uint64_t sluice_evlog_lost(const struct sluice_evlog *w, enum sluice_dataset ds);

/* Sum over all datasets. */
uint64_t sluice_evlog_lost_total(const struct sluice_evlog *w);

/* "ENOSPC"-style name of an errno (known ones), else "E<number>". */
const char *sluice_errno_name(int e, char *buf, size_t len);

/*
 * One line for stderr at exit: "N event lines lost (kernel K, ...):
 * ENOSPC (No space left on device) writing to DEST" into buf (the caller
 * adds its prefix), or "" when nothing was lost.  Returns buf.
 */
const char *sluice_evlog_loss_summary(const struct sluice_evlog *w, char *buf, size_t len);

#endif
