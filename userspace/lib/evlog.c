/* SPDX-License-Identifier: BSD-2-Clause */
#include "evlog.h"
#include "ocsf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "evseq.h"
#include "jsonstr.h"
#include "labels.h"

#define LINE_RESERVE 64   /* "}", ,"sluice.truncated":true, "\n" */

/* --- the line builder ------------------------------------------------- */

void sluice_line_init(struct sluice_line *l, char *buf, size_t cap)
{
	l->p = buf;
	l->cap = cap > LINE_RESERVE + 2 ? cap - LINE_RESERVE : 2;
	l->len = 0;
	l->over = false;
	l->truncated = false;
	l->p[l->len++] = '{';
	l->safe = l->len;
}

size_t sluice_line_mark(const struct sluice_line *l)
{
	return l->len;
}

void sluice_line_rewind(struct sluice_line *l, size_t mark)
{
	if (mark < l->len)
		l->len = mark;
	l->over = false;
	l->truncated = true;
}

void sluice_line_raw(struct sluice_line *l, const char *s, size_t n)
{
	if (l->over)
		return;
	if (n > l->cap - l->len) {
		l->over = true;
		return;
	}
	memcpy(l->p + l->len, s, n);
	l->len += n;
}

void sluice_line_strval(struct sluice_line *l, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), room;
	char *o, *end;

	if (l->over)
		return;
	room = l->cap - l->len;
	if (room > 512)
		room -= 256;             /* a value cut to fit leaves room for small fields after it */
	if (room > SLUICE_LINE_VAL_MAX)
		room = SLUICE_LINE_VAL_MAX;
	if (room < 2) {
		l->over = true;
		return;
	}
	o = l->p + l->len;
	end = o + room - 1;          /* the closing quote always fits */
	*o++ = '"';
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		size_t k;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			if (end - o < 1)
				goto cut;
			*o++ = (char)c;
			i++;
		} else if (c == '"' || c == '\\') {
			if (end - o < 2)
				goto cut;
			*o++ = '\\';
			*o++ = (char)c;
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			if (end - o < 6)
				goto cut;
			*o++ = '\\';
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
			i++;
		} else if ((k = sluice_utf8_seq_len(u + i, n - i)) == 0) {
			if (end - o < 3)
				goto cut;
			*o++ = (char)0xef;   /* U+FFFD */
			*o++ = (char)0xbf;
			*o++ = (char)0xbd;
			i++;
		} else {
			if ((size_t)(end - o) < k)
				goto cut;
			memcpy(o, u + i, k);
			o += k;
			i += k;
		}
	}
	*o++ = '"';
	l->len = (size_t)(o - l->p);
	return;
cut:
	*o++ = '"';
	l->len = (size_t)(o - l->p);
	l->truncated = true;
}

void sluice_line_key(struct sluice_line *l, const char *key, size_t klen)
{
	char last = l->len ? l->p[l->len - 1] : '{';

	if (last != '{' && last != '[')
		sluice_line_raw(l, ",", 1);
	sluice_line_raw(l, "\"", 1);
	sluice_line_raw(l, key, klen);
	sluice_line_raw(l, "\":", 2);
}

size_t sluice_u64_dec(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/* All-or-nothing fields: a part that does not fit takes the field back. */
static size_t field_begin(struct sluice_line *l, const char *key, size_t klen)
{
	size_t m;

	if (l->over)                 /* a compound part left unfinished */
		sluice_line_rewind(l, l->safe);
	m = l->len;

	sluice_line_key(l, key, klen);
	return m;
}

static void field_end(struct sluice_line *l, size_t m)
{
	if (l->over)
		sluice_line_rewind(l, m);
	else
		l->safe = l->len;
}

void sluice_line_put_str(struct sluice_line *l, const char *key, size_t klen, const char *v)
{
	size_t m;

	if (!v)
		return;
	m = field_begin(l, key, klen);
	sluice_line_strval(l, v);
	field_end(l, m);
}

void sluice_line_put_u64(struct sluice_line *l, const char *key, size_t klen, uint64_t v)
{
	char num[24];
	size_t n = sluice_u64_dec(num, v), m = field_begin(l, key, klen);

	sluice_line_raw(l, num, n);
	field_end(l, m);
}

void sluice_line_put_i64(struct sluice_line *l, const char *key, size_t klen, int64_t v)
{
	char num[24];
	size_t n = 0, m;

	if (v < 0) {
		num[n++] = '-';
		n += sluice_u64_dec(num + 1, (uint64_t)0 - (uint64_t)v);
	} else {
		n = sluice_u64_dec(num, (uint64_t)v);
	}
	m = field_begin(l, key, klen);
	sluice_line_raw(l, num, n);
	field_end(l, m);
}

void sluice_line_put_bool(struct sluice_line *l, const char *key, size_t klen, bool v)
{
	size_t m = field_begin(l, key, klen);

	if (v)
		sluice_line_raw(l, "true", 4);
	else
		sluice_line_raw(l, "false", 5);
	field_end(l, m);
}

void sluice_line_put_raw(struct sluice_line *l, const char *key, size_t klen, const char *json, size_t n)
{
	size_t m = field_begin(l, key, klen);

	sluice_line_raw(l, json, n);
	field_end(l, m);
}

size_t sluice_line_end(struct sluice_line *l)
{
	static const char mark[] = ",\"sluice.truncated\":true";

	if (l->over)                 /* a compound part left unfinished */
		sluice_line_rewind(l, l->safe);
	/* the reserve (LINE_RESERVE) holds the mark, "}" and a newline */
	if (l->truncated) {
		size_t skip = l->len > 1 ? 0 : 1;   /* no comma right after "{" */

		memcpy(l->p + l->len, mark + skip, sizeof(mark) - 1 - skip);
		l->len += sizeof(mark) - 1 - skip;
	}
	l->p[l->len++] = '}';
	l->p[l->len] = '\0';
	return l->len;
}

/* --- time --------------------------------------------------------------- */

int64_t sluice_now_ns(void)
{
	struct timespec r;

	clock_gettime(CLOCK_REALTIME, &r);
	return (int64_t)r.tv_sec * 1000000000LL + r.tv_nsec;
}

void sluice_format_time(int64_t real_ns, char *buf, size_t len)
{
	/* the part up to the seconds is formatted once per second */
	static int64_t cached_sec = INT64_MIN;
	static char cached[32];
	int64_t sec = real_ns / 1000000000LL, rem = real_ns % 1000000000LL;
	unsigned us;

	if (rem < 0) {
		rem += 1000000000LL;
		sec--;
	}
	us = (unsigned)(rem / 1000);
	if (sec != cached_sec) {
		time_t t = (time_t)sec;
		struct tm tm;

		if (!gmtime_r(&t, &tm))
			memset(&tm, 0, sizeof(tm)); /* out of range: 1900-01-00, never garbage */
		snprintf(cached, sizeof(cached), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		cached_sec = sec;
	}
	/* no printf per line (it showed in the proxy's profile): the cached
	 * part, then the six digits by hand */
	{
		size_t n = strlen(cached);

		if (len < n + 9) {
			snprintf(buf, len, "%s", cached);
			return;
		}
		memcpy(buf, cached, n);
		buf[n] = '.';
		for (int i = 6; i >= 1; i--) {
			buf[n + (size_t)i] = (char)('0' + us % 10);
			us /= 10;
		}
		buf[n + 7] = 'Z';
		buf[n + 8] = '\0';
	}
}

/* --- the writer ----------------------------------------------------------- */

_Static_assert(SLUICE_DS__MAX == SLUICE_EVC_DATASETS, "evseq.h counts every dataset");

static const char *ds_names[SLUICE_DS__MAX] = {
	[SLUICE_DS_KERNEL] = "sluice.kernel",
	[SLUICE_DS_PROXY] = "sluice.proxy",
	[SLUICE_DS_RESOLVER] = "sluice.resolver",
	[SLUICE_DS_LIFECYCLE] = "sluice.lifecycle",
};

const char *sluice_dataset_name(enum sluice_dataset ds)
{
	return (unsigned)ds < SLUICE_DS__MAX ? ds_names[ds] : "sluice.unknown";
}

const char *sluice_errno_name(int e, char *buf, size_t len)
{
	static const struct { int e; const char *n; } names[] = {
		{ ENOSPC, "ENOSPC" }, { EIO, "EIO" }, { EPIPE, "EPIPE" }, { EDQUOT, "EDQUOT" },
		{ EFBIG, "EFBIG" }, { EAGAIN, "EAGAIN" }, { EBADF, "EBADF" }, { EROFS, "EROFS" },
		{ EINVAL, "EINVAL" }, { ENOMEM, "ENOMEM" }, { ECONNRESET, "ECONNRESET" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].n;
	snprintf(buf, len, "E%d", e);
	return buf;
}

static void read_machine_id(char *out, size_t len)
{
	int fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	out[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0) {
		out[0] = '\0';
		return;
	}
	out[n] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
}

static bool use_ocsf;

void sluice_evlog_use_ocsf(bool on)
{
	use_ocsf = on;
}

/*
 * A writer killed in the middle of a line (SIGKILL lands between two pages
 * of one write(2)) leaves a torn line at the end of a regular file: start
 * on a new line, so that the torn one stays one broken line and never runs
 * into the first line of ours.  The fd is write-only: the last byte is read
 * through /proc/self/fd (if that is refused, nothing is done).  A torn
 * JSON line is already gone by then where sluice run or the daemon opened
 * the file (mend_torn_tail, loader/events_dest.c): what is left here is a
 * tail that is not a line of ours, or a file a writer was given open.
 */
static void heal_torn_tail(const struct sluice_evlog *w, const struct stat *st)
{
	char path[64], last = '\n';
	int rfd;

	if (st->st_size <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", w->fd);
	rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (rfd < 0)
		return;
	if (pread(rfd, &last, 1, st->st_size - 1) == 1 && last != '\n' && write(w->fd, "\n", 1) == 1)
		fprintf(stderr, "%s: events: %s ended in a torn line (a writer was killed while writing it); "
			"it stays as it was, new lines start after it\n", w->who, w->dest);
	close(rfd);
}

void sluice_evlog_init(struct sluice_evlog *w, int fd, const char *dest, const char *who,
		       const struct sluice_envelope *env)
{
	struct stat st;
	unsigned char rnd[8];

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->seq_fd = -1;
	w->ocsf = use_ocsf;
	w->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	snprintf(w->dest, sizeof(w->dest), "%s", dest ? dest : "?");
	snprintf(w->who, sizeof(w->who), "%s", who ? who : "sluice");
	if (w->regular)
		heal_torn_tail(w, &st);
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		uint64_t t = (uint64_t)sluice_now_ns() ^ ((uint64_t)getpid() << 32);

		memcpy(rnd, &t, sizeof(rnd));
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(w->id_prefix + 2 * i, 3, "%02x", rnd[i]);

	sluice_evlog_set_envelope(w, env);
}

void sluice_evlog_set_envelope(struct sluice_evlog *w, const struct sluice_envelope *env)
{
	struct sluice_line l;
	char host[256] = "", mid[64];

	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	read_machine_id(mid, sizeof(mid));
	/* the envelope, escaped once; copied into every line */
	sluice_line_init(&l, w->env, sizeof(w->env));
	SL_STR(&l, "ecs.version", SLUICE_ECS_VERSION);
	if (host[0])
		SL_STR(&l, "host.name", host);
	if (mid[0])
		SL_STR(&l, "host.id", mid);
	SL_STR(&l, "observer.vendor", "sluice");
	SL_STR(&l, "observer.product", "sluice");
	SL_STR(&l, "observer.version", SLUICE_VERSION);
	SL_STR(&l, "observer.type", "firewall");
	SL_STR(&l, "event.module", "sluice");
	if (env) {
		SL_STR(&l, "sluice.sandbox", env->sandbox);
		SL_STR(&l, "rule.ruleset", env->policy_name);
		SL_STR(&l, "rule.version", env->policy_digest);
		SL_STR(&l, "sluice.policy_name", env->policy_name);
		SL_STR(&l, "sluice.policy_sha256", env->policy_digest);
		SL_STR(&l, "sluice.mode", env->mode);
		SL_STR(&l, "container.id", env->container_id);
		SL_STR(&l, "container.name", env->container_name);
		SL_STR(&l, "container.runtime", env->container_runtime);
		for (size_t i = 0; env->labels && i < env->labels->n; i++) {
			char key[8 + SLUICE_LABEL_KEY_MAX + 1];

			/* keys are checked (labels.c): plain ASCII */
			snprintf(key, sizeof(key), "labels.%s", env->labels->key[i]);
			sluice_line_put_str(&l, key, strlen(key), env->labels->value[i]);
		}
	}
	/* `{"ecs.version"...` becomes `,"ecs.version"...` */
	w->env[0] = ',';
	w->env_len = l.len;
}

static void start_line(struct sluice_evlog *w, struct sluice_line *l, char *buf, size_t cap,
		       enum sluice_dataset ds, int64_t real_ns)
{
	char ts[40], id[48];
	size_t n;

	sluice_line_init(l, buf, cap);
	sluice_format_time(real_ns < 0 ? sluice_now_ns() : real_ns, ts, sizeof(ts));
	SL_STR(l, "@timestamp", ts);
	sluice_line_raw(l, w->env, w->env_len);
	SL_STR(l, "event.dataset", sluice_dataset_name(ds));
	n = strlen(w->id_prefix);
	memcpy(id, w->id_prefix, n);
	id[n++] = '-';
	n += sluice_u64_dec(id + n, w->next_id++);
	id[n] = '\0';
	SL_STR(l, "event.id", id);
	SL_U64(l, "event.sequence", w->seq ? sluice_evseq_take(w->seq) : w->seq_local++);
	if (ds != SLUICE_DS_LIFECYCLE)
		SL_STR(l, "network.direction", "egress");
}

int sluice_evlog_share_seq(struct sluice_evlog *w, int fd)
{
	struct sluice_evseq *q = fd >= 0 ? sluice_evseq_map(fd) : NULL;
	int err = errno;

	if (!q) {
		if (fd >= 0)
			close(fd);
		return -(err ? err : EINVAL);
	}
	sluice_evlog_release_seq(w);
	w->seq = q;
	w->seq_fd = fd;
	return 0;
}

struct sluice_evseq *sluice_evlog_shared(const struct sluice_evlog *w)
{
	return w->seq;
}

int sluice_evlog_seq_fd(const struct sluice_evlog *w)
{
	return w->seq ? w->seq_fd : -1;
}

void sluice_evlog_release_seq(struct sluice_evlog *w)
{
	/* only a counter this writer mapped: a writer never set up (all
	 * zero) owns no fd, not even 0 */
	if (!w->seq)
		return;
	sluice_evseq_unmap(w->seq);
	w->seq = NULL;
	close(w->seq_fd);
	w->seq_fd = -1;
}

struct sluice_line *sluice_evlog_begin(struct sluice_evlog *w, enum sluice_dataset ds, int64_t real_ns)
{
	if ((unsigned)ds >= SLUICE_DS__MAX)
		ds = SLUICE_DS_LIFECYCLE;
	w->cur_ds = ds;
	start_line(w, &w->cur, w->buf, sizeof(w->buf), ds, real_ns);
	return &w->cur;
}

/*
 * A short write to a regular file left part of the line at the end: take
 * it back, so that the file never holds a torn line.  Only when what is at
 * the end is exactly our part (another writer sharing the file appended
 * nothing after it: with the disk full, it could not either).
 */
static void take_back(struct sluice_evlog *w, const char *line, size_t done)
{
	char tail[SLUICE_LINE_MAX];
	struct stat st;
	off_t end = lseek(w->fd, 0, SEEK_CUR);
	ssize_t r;

	if (end < (off_t)done || fstat(w->fd, &st) < 0 || st.st_size != end)
		return;
	/* where the fd is readable, check the bytes too (a write-only fd, as
	 * sluice opens them, has only the size to go by) */
	r = pread(w->fd, tail, done, end - (off_t)done);
	if (r >= 0 && (r != (ssize_t)done || memcmp(tail, line, done) != 0))
		return;
	if (r < 0 && errno != EBADF)
		return;
	/* if even this fails the torn part stays: nothing else can be done */
	(void)!ftruncate(w->fd, end - (off_t)done);
}

/* Write line (len bytes, newline included) whole, or not at all: 0 or -errno.
 * With the OCSF format, the line written is the ECS line's OCSF event. */
static int write_whole(struct sluice_evlog *w, const char *line, size_t len)
{
	static char ocsf[SLUICE_LINE_MAX];   /* one thread per process (evlog.h) */
	size_t off = 0;

	if (w->ocsf) {
		long n = sluice_ocsf_convert(line, len - 1, ocsf, sizeof(ocsf) - 1);

		/* cannot fail for a line of ours; if it did, the ECS line goes */
		if (n > 0) {
			ocsf[n++] = '\n';
			line = ocsf;
			len = (size_t)n;
		}
	}

	while (off < len) {
		ssize_t n = write(w->fd, line + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			if (off && w->regular)
				take_back(w, line, off);
			return -e;
		}
		if (n == 0)
			return -EIO;
		off += (size_t)n;
		/* a regular file that took part of it is full: no second try */
		if (off < len && w->regular) {
			take_back(w, line, off);
			return -ENOSPC;
		}
	}
	return 0;
}

static void report_failing(struct sluice_evlog *w, int e)
{
	char nb[16];

	fprintf(stderr, "%s: events: cannot write to %s: %s (%s); lines are dropped and counted until it recovers\n",
		w->who, w->dest, sluice_errno_name(e, nb, sizeof(nb)), strerror(e));
}

/* After an outage: one events_lost line per dataset that lost lines.
 * Returns 0 when all were written (the outage is over). */
static int report_recovered(struct sluice_evlog *w)
{
	char buf[1024], nb[16], msg[256];
	struct sluice_line l;
	uint64_t total = 0;

	for (int ds = 0; ds < SLUICE_DS__MAX; ds++) {
		const char *en;
		size_t n;

		if (!w->lost_outage[ds])
			continue;
		en = sluice_errno_name(w->err, nb, sizeof(nb));   /* a static name, or nb */
		start_line(w, &l, buf, sizeof(buf), (enum sluice_dataset)ds, -1);
		SL_STR(&l, "event.kind", "metric");
		SL_STR(&l, "event.action", "events_lost");
		SL_STR(&l, "event.reason", "write_failed");
		SL_STR(&l, "error.code", en);
		SL_STR(&l, "error.message", strerror(w->err));
		SL_U64(&l, "sluice.events_lost", w->lost_outage[ds]);
		SL_U64(&l, "sluice.events_lost_total", w->lost[ds]);
		snprintf(msg, sizeof(msg), "%llu %s lines could not be written to %s (%s) and are lost",
			 (unsigned long long)w->lost_outage[ds], sluice_dataset_name((enum sluice_dataset)ds),
			 w->dest, en);
		SL_STR(&l, "message", msg);
		n = sluice_line_end(&l);
		l.p[n++] = '\n';
		if (write_whole(w, buf, n) < 0)
			return -1;
		total += w->lost_outage[ds];
		w->lost_outage[ds] = 0;
	}
	fprintf(stderr, "%s: events: %s is writable again; %llu lines were lost meanwhile (%s)\n", w->who,
		w->dest, (unsigned long long)total, sluice_errno_name(w->err, nb, sizeof(nb)));
	w->err = 0;
	return 0;
}

/* One line of dataset ds written (ok) or lost (!ok, to w->err): counted. */
static void count_line(struct sluice_evlog *w, enum sluice_dataset ds, bool ok)
{
	if (ok) {
		w->written[ds]++;
		if (w->seq)
			sluice_evseq_add(&w->seq->lines[ds], 1);
		return;
	}
	w->last_err = w->err;
	w->lost[ds]++;
	w->lost_outage[ds]++;
	if (w->seq)
		sluice_evseq_add(&w->seq->lost[ds], 1);
}

/* The next run of held lines from line i to write at once: all of them to a
 * regular file, else whole lines of at most SLUICE_LINE_MAX bytes in all.
 * Returns the index past the run's last line. */
static unsigned held_run(const struct sluice_evlog *w, unsigned i)
{
	size_t from = i ? w->hold_end[i - 1] : 0;
	unsigned j = i + 1;

	if (w->regular)
		return w->hold_n;
	while (j < w->hold_n && w->hold_end[j] - from <= SLUICE_LINE_MAX)
		j++;
	return j;
}

/* Write the held lines; *out: how many were written whole (the first ones).
 * 0 or -errno.  A short write to a regular file takes back the torn line. */
static int write_held(struct sluice_evlog *w, unsigned *out)
{
	unsigned i = 0;

	while (i < w->hold_n) {
		unsigned j = held_run(w, i);
		size_t from = i ? w->hold_end[i - 1] : 0, to = w->hold_end[j - 1], off = from;

		while (off < to) {
			ssize_t n = write(w->fd, w->hold + off, to - off);
			int e = n < 0 ? errno : n == 0 ? EIO : ENOSPC;
			size_t torn;

			if (n < 0 && errno == EINTR)
				continue;
			if (n > 0)
				off += (size_t)n;
			/* a regular file that took part of it is full: no second try */
			if (n > 0 && (off == to || !w->regular))
				continue;
			while (i < w->hold_n && w->hold_end[i] <= off)
				i++;
			torn = i ? w->hold_end[i - 1] : 0;
			if (off > torn && w->regular)
				take_back(w, w->hold + torn, off - torn);
			*out = i;
			return -e;
		}
		i = j;
	}
	*out = i;
	return 0;
}

void sluice_evlog_hold(struct sluice_evlog *w, char *buf, size_t cap)
{
	if (w->ocsf || !buf || cap < SLUICE_LINE_MAX)
		return;
	w->hold = buf;
	w->hold_cap = cap;
	w->hold_len = 0;
	w->hold_n = 0;
}

/* Write what is held, keep holding. */
static int write_out_held(struct sluice_evlog *w)
{
	unsigned done = 0, i;
	int r = 0;

	if (!w->hold_n)
		return 0;
	if (w->err && report_recovered(w) < 0)
		r = -w->err;
	else
		r = write_held(w, &done);
	if (r < 0 && -r != w->err)
		report_failing(w, -r);
	if (r < 0)
		w->err = -r;
	for (i = 0; i < w->hold_n; i++)
		count_line(w, w->hold_ds[i], i < done);
	w->hold_len = 0;
	w->hold_n = 0;
	return r;
}

int sluice_evlog_flush(struct sluice_evlog *w)
{
	int r = w->hold ? write_out_held(w) : 0;

	w->hold = NULL;
	w->hold_cap = 0;
	return r;
}

static int commit(struct sluice_evlog *w, bool count)
{
	size_t n = sluice_line_end(&w->cur);
	int r;

	w->cur.p[n++] = '\n';
	if (w->hold && count) {
		/* gathered: written, and counted, at the flush */
		if (w->hold_n == SLUICE_HOLD_MAX || w->hold_len + n > w->hold_cap)
			(void)write_out_held(w);
		memcpy(w->hold + w->hold_len, w->cur.p, n);
		w->hold_len += n;
		w->hold_ds[w->hold_n] = w->cur_ds;
		w->hold_end[w->hold_n++] = w->hold_len;
		return 0;
	}
	/* a report kept for retry is written now, after the lines before it */
	if (w->hold)
		(void)write_out_held(w);
	if (w->err && report_recovered(w) < 0) {
		r = -w->err;
		goto lost;
	}
	r = write_whole(w, w->cur.p, n);
	if (r == 0) {
		count_line(w, w->cur_ds, true);
		return 0;
	}
	if (-r != w->err)
		report_failing(w, -r);
	w->err = -r;
lost:
	if (count)
		count_line(w, w->cur_ds, false);
	return r;
}

int sluice_evlog_commit(struct sluice_evlog *w)
{
	return commit(w, true);
}

int sluice_evlog_commit_retry(struct sluice_evlog *w)
{
	return commit(w, false);
}

void sluice_evlog_restore_lost(struct sluice_evlog *w, const uint64_t lost[SLUICE_DS__MAX],
			       const uint64_t outage[SLUICE_DS__MAX], int err)
{
	bool pending = false;

	for (int ds = 0; ds < SLUICE_DS__MAX; ds++) {
		w->lost[ds] = lost[ds];
		w->lost_outage[ds] = outage[ds];
		pending |= outage[ds] != 0;
	}
	if (pending)
		w->err = w->last_err = err > 0 ? err : EIO;
}

uint64_t sluice_evlog_lost(const struct sluice_evlog *w, enum sluice_dataset ds)
{
	return (unsigned)ds < SLUICE_DS__MAX ? w->lost[ds] : 0;
}

uint64_t sluice_evlog_lost_total(const struct sluice_evlog *w)
{
	uint64_t t = 0;

	for (int ds = 0; ds < SLUICE_DS__MAX; ds++)
		t += w->lost[ds];
	return t;
}

const char *sluice_evlog_loss_summary(const struct sluice_evlog *w, char *buf, size_t len)
{
	uint64_t total = sluice_evlog_lost_total(w);
	char nb[16];
	size_t o;

	buf[0] = '\0';
	if (!total)
		return buf;
	o = (size_t)snprintf(buf, len, "%llu event lines lost (", (unsigned long long)total);
	for (int ds = 0, first = 1; ds < SLUICE_DS__MAX && o < len; ds++) {
		if (!w->lost[ds])
			continue;
		o += (size_t)snprintf(buf + o, len - o, "%s%s %llu", first ? "" : ", ",
				      sluice_dataset_name((enum sluice_dataset)ds) + 7,
				      (unsigned long long)w->lost[ds]);
		first = 0;
	}
	if (o < len)
		snprintf(buf + o, len - o, "): %s (%s) writing to %s", sluice_errno_name(w->last_err, nb, sizeof(nb)),
			 strerror(w->last_err), w->dest);
	return buf;
}
