/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_limits.c - parsing and enforcing `sluice run --memory/--pids/--cpu/
 * --timeout` (see run_limits.h).  The parsers are pure; the check and apply
 * functions only read and write files under the cgroup v2 mount.
 */
#include "run_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/*
 * A non-negative decimal "I[.F]" at *s: stores I in *ip, the fraction's
 * digits in *fp and their count in *fd (at most `max_frac`), and moves *s
 * past it.  Returns 0, or -1 (no digits, a bare '.', too many digits, I
 * above UINT64_MAX / 10).  Signs, spaces and exponents are not numbers here.
 */
static int parse_decimal(const char **s, unsigned max_frac, uint64_t *ip, uint64_t *fp, unsigned *fd)
{
	const char *p = *s;
	uint64_t i = 0, f = 0;
	unsigned nd = 0, nf = 0;

	while (*p >= '0' && *p <= '9') {
		if (i > (UINT64_MAX - 9) / 10)
			return -1;
		i = i * 10 + (uint64_t)(*p++ - '0');
		nd++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (nf == max_frac)
				return -1;
			f = f * 10 + (uint64_t)(*p++ - '0');
			nf++;
		}
		if (nf == 0)
			return -1;
	}
	if (nd == 0)
		return -1;
	*ip = i;
	*fp = f;
	*fd = nf;
	*s = p;
	return 0;
}

static uint64_t pow10u(unsigned n)
{
	uint64_t r = 1;

	while (n--)
		r *= 10;
	return r;
}

/* i.f (nf fraction digits) times mult, rounded down; -1 on overflow. */
static int scale(uint64_t i, uint64_t f, unsigned nf, uint64_t mult, uint64_t *out)
{
	uint64_t whole, part;

	if (mult && i > UINT64_MAX / mult)
		return -1;
	whole = i * mult;
	/* callers bound nf so that f * mult fits: f < 10^3 with mult <= 2^40
	 * (memory), f < 10^9 with mult <= 8.64e7 (durations) */
	part = nf ? f * mult / pow10u(nf) : 0;
	if (whole > UINT64_MAX - part)
		return -1;
	*out = whole + part;
	return 0;
}

static int ieq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
		char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;

		if (x != y)
			return 0;
	}
	return *a == *b;
}

int sluice_parse_memory(const char *s, uint64_t *bytes, char *err, size_t errlen)
{
	static const struct { const char *suffix; unsigned shift; } units[] = {
		{ "", 0 }, { "b", 0 },
		{ "k", 10 }, { "kb", 10 }, { "kib", 10 },
		{ "m", 20 }, { "mb", 20 }, { "mib", 20 },
		{ "g", 30 }, { "gb", 30 }, { "gib", 30 },
		{ "t", 40 }, { "tb", 40 }, { "tib", 40 },
	};
	const char *p = s;
	uint64_t i, f, v;
	unsigned nf;

	if (!s || parse_decimal(&p, 3, &i, &f, &nf) < 0)
		return ERR("'%s' is not a size (examples: 512M, 1G, 1.5G, 1048576)", s ? s : "");
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		if (!ieq(p, units[u].suffix))
			continue;
		if (nf && units[u].shift == 0)
			return ERR("'%s': a byte count has no fraction", s);
		if (scale(i, f, nf, 1ULL << units[u].shift, &v) < 0 || v > SLUICE_LIMIT_MEMORY_MAX)
			return ERR("'%s' is too large (at most 1 PiB)", s);
		if (v < SLUICE_LIMIT_MEMORY_MIN)
			return ERR("'%s' is too small (at least 1 MiB)", s);
		*bytes = v;
		return 0;
	}
	return ERR("'%s': unknown unit '%s' (K, M, G or T, binary)", s, p);
}

int sluice_parse_pids(const char *s, uint64_t *pids, char *err, size_t errlen)
{
	const char *p = s;
	uint64_t i, f;
	unsigned nf;

	if (!s || parse_decimal(&p, 0, &i, &f, &nf) < 0 || *p)
		return ERR("'%s' is not a whole number of processes", s ? s : "");
	if (i < 1 || i > SLUICE_LIMIT_PIDS_MAX)
		return ERR("'%s' is out of range (1-%llu)", s, (unsigned long long)SLUICE_LIMIT_PIDS_MAX);
	*pids = i;
	return 0;
}

int sluice_parse_cpu(const char *s, uint32_t *milli, char *err, size_t errlen)
{
	const char *p = s;
	uint64_t i, f, v;
	unsigned nf;

	if (!s || parse_decimal(&p, 3, &i, &f, &nf) < 0 || *p)
		return ERR("'%s' is not a number of CPUs (examples: 1, 0.5, 2.25; at most 3 decimals)", s ? s : "");
	if (scale(i, f, nf, 1000, &v) < 0 || v > SLUICE_LIMIT_CPU_MAX_MILLI || v < SLUICE_LIMIT_CPU_MIN_MILLI)
		return ERR("'%s' is out of range (0.01-%u CPUs)", s, SLUICE_LIMIT_CPU_MAX_MILLI / 1000);
	*milli = (uint32_t)v;
	return 0;
}

int sluice_parse_duration(const char *s, uint64_t *ms, char *err, size_t errlen)
{
	static const struct { const char *suffix; uint64_t ms; } units[] = {
		{ "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
	};
	const char *p = s;
	uint64_t i, f, v;
	unsigned nf;

	if (!s || parse_decimal(&p, 9, &i, &f, &nf) < 0)
		return ERR("'%s' is not a duration (examples: 30, 1.5, 500ms, 10m, 2h)", s ? s : "");
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		if (strcmp(p, units[u].suffix) != 0)
			continue;
		if (scale(i, f, nf, units[u].ms, &v) < 0 || v > SLUICE_LIMIT_TIMEOUT_MAX_MS)
			return ERR("'%s' is too long (at most a year)", s);
		if (v == 0 && (i || f))
			v = 1; /* 0.0001s is not "no timeout" */
		*ms = v;
		return 0;
	}
	return ERR("'%s': unknown unit '%s' (ms, s, m, h or d)", s, p);
}

void sluice_cpu_max_string(uint32_t milli, char *buf, size_t len)
{
	/* quota = milli/1000 CPUs x period; the kernel's minimum quota is 1 ms */
	snprintf(buf, len, "%llu %u", (unsigned long long)milli * SLUICE_LIMIT_CPU_PERIOD / 1000,
		 SLUICE_LIMIT_CPU_PERIOD);
}

int sluice_limits_need_controllers(const struct sluice_limits *l)
{
	return l->memory_bytes || l->pids || l->cpu_milli;
}

uint64_t sluice_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Read a small file (cgroup.controllers) into buf; -errno on failure. */
static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	buf[n] = 0;
	return 0;
}

/* Is `word` one of the words of `list` (separated by any of `seps`)? */
static bool has_word(const char *list, const char *word, const char *seps)
{
	size_t wl = strlen(word);

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps);

		if (n == wl && strncmp(p, word, wl) == 0)
			return true;
		p += n;
		p += strspn(p, seps);
	}
	return false;
}

/* Is `controller` bound to a cgroup v1 hierarchy in the mount table? */
static bool on_v1(const char *mounts, const char *controller)
{
	char line[4096];
	bool found = false;
	FILE *f;

	if (!mounts || !(f = fopen(mounts, "re")))
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[256], dir[1024], type[64], opts[1024];

		if (sscanf(line, "%255s %1023s %63s %1023s", dev, dir, type, opts) == 4 && strcmp(type, "cgroup") == 0 &&
		    has_word(opts, controller, ","))
			found = true;
	}
	fclose(f);
	return found;
}

struct need {
	const char *controller, *option;
};

static size_t needed(const struct sluice_limits *l, struct need out[3])
{
	size_t n = 0;

	if (l->memory_bytes)
		out[n++] = (struct need){ "memory", "--memory" };
	if (l->pids)
		out[n++] = (struct need){ "pids", "--pids" };
	if (l->cpu_milli)
		out[n++] = (struct need){ "cpu", "--cpu" };
	return n;
}

int sluice_limits_check(const struct sluice_limits *l, const char *cg2, const char *v1_mounts, char *msg,
			size_t msglen)
{
	struct need need[3];
	size_t n = needed(l, need);
	char path[4096], ctl[1024] = "";
	int err;

	if (!n)
		return 0;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", cg2);
	err = read_small(path, ctl, sizeof(ctl));
	if (err) {
		snprintf(msg, msglen, "cannot read %s: %s: %s cannot be enforced", path, strerror(-err), need[0].option);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (has_word(ctl, need[i].controller, " \n"))
			continue;
		if (on_v1(v1_mounts, need[i].controller))
			snprintf(msg, msglen,
				 "the cgroup v2 hierarchy has no %s controller (hybrid layout: it is bound to cgroup v1): %s cannot be enforced",
				 need[i].controller, need[i].option);
		else
			snprintf(msg, msglen, "the cgroup v2 hierarchy at %s has no %s controller: %s cannot be enforced",
				 cg2, need[i].controller, need[i].option);
		return -1;
	}
	return 0;
}

/* One write(2) of `value`, as `echo value > path` would (cgroup files take
 * O_TRUNC and ignore it). */
static int write_file(const char *path, const char *value, char *msg, size_t msglen)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	size_t len = strlen(value);
	ssize_t w;

	if (fd < 0) {
		snprintf(msg, msglen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	w = write(fd, value, len);
	if (w < 0 || (size_t)w != len) {
		snprintf(msg, msglen, "cannot write '%s' to %s: %s", value, path, w < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Add `controller` to dir/cgroup.subtree_control unless it is there. */
static int enable_in(const char *dir, const char *controller, char *msg, size_t msglen)
{
	char path[4096], cur[1024] = "", plus[64];

	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	if (read_small(path, cur, sizeof(cur)) == 0 && has_word(cur, controller, " \n"))
		return 0;
	snprintf(plus, sizeof(plus), "+%s", controller);
	return write_file(path, plus, msg, msglen);
}

int sluice_limits_apply(const struct sluice_limits *l, const char *cg2, const char *cg_parent,
			const char *cg_path, char *msg, size_t msglen)
{
	struct need need[3];
	size_t n = needed(l, need), base = strlen(cg2);
	char dir[4096], path[4096], val[64];

	if (!n)
		return 0;
	if (strncmp(cg_parent, cg2, base) != 0 || (cg_parent[base] != '/' && cg_parent[base] != 0)) {
		snprintf(msg, msglen, "%s is not under the cgroup v2 mount %s", cg_parent, cg2);
		return -1;
	}
	/* cg2, then every cgroup down to cg_parent, delegates the controllers */
	for (size_t i = 0; i < n; i++) {
		size_t end = base;

		for (;;) {
			snprintf(dir, sizeof(dir), "%.*s", (int)end, cg_parent);
			if (enable_in(dir, need[i].controller, msg, msglen) < 0)
				return -1;
			if (cg_parent[end] == 0)
				break;
			end++;
			end += strcspn(cg_parent + end, "/");
		}
	}
	if (l->memory_bytes) {
		snprintf(path, sizeof(path), "%s/memory.max", cg_path);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)l->memory_bytes);
		if (write_file(path, val, msg, msglen) < 0)
			return -1;
	}
	if (l->pids) {
		snprintf(path, sizeof(path), "%s/pids.max", cg_path);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)l->pids);
		if (write_file(path, val, msg, msglen) < 0)
			return -1;
	}
	if (l->cpu_milli) {
		snprintf(path, sizeof(path), "%s/cpu.max", cg_path);
		sluice_cpu_max_string(l->cpu_milli, val, sizeof(val));
		if (write_file(path, val, msg, msglen) < 0)
			return -1;
	}
	return 0;
}
