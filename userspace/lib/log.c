/* SPDX-License-Identifier: BSD-2-Clause */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *log_progname = "sluice";
static int log_verbose;
static int log_journal;     /* stderr is the journal: prefix <priority> */
static char *log_last;      /* log_keep_last(): the last warning's text */
static size_t log_last_len;

/* Is stderr the stream $JOURNAL_STREAM ("DEV:INODE") names? */
static int stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *progname, int verbose)
{
	if (progname)
		log_progname = progname;
	log_verbose = verbose;
	log_journal = stderr_is_journal();
}

static void vlog(int prio, const char *fmt, va_list ap, int with_errno)
{
	int saved = errno;
	char buf[1024], pfx[8] = "";

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (log_journal)
		snprintf(pfx, sizeof(pfx), "<%d>", prio);
	if (with_errno)
		fprintf(stderr, "%s%s: %s: %s\n", pfx, log_progname, buf, strerror(saved));
	else
		fprintf(stderr, "%s%s: %s\n", pfx, log_progname, buf);
	if (log_last && prio <= 4) {  /* fatal and warnings: <3>, <4> */
		if (with_errno)
			snprintf(log_last, log_last_len, "%s: %s", buf, strerror(saved));
		else
			snprintf(log_last, log_last_len, "%s", buf);
	}
	errno = saved;
}

void log_keep_last(char *buf, size_t len)
{
	log_last = len ? buf : NULL;
	log_last_len = len;
	if (log_last)
		log_last[0] = 0;
}

int log_reopen_fd(int fd, const char *path, unsigned mode)
{
	int nfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, (mode_t)mode);

	if (nfd < 0)
		return -errno;
	if (nfd != fd && dup3(nfd, fd, O_CLOEXEC) < 0) {
		int err = -errno;

		close(nfd);
		return err;
	}
	if (nfd != fd)
		close(nfd);
	return 0;
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(4, fmt, ap, 1);
	va_end(ap);
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(4, fmt, ap, 0);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(6, fmt, ap, 0);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	vlog(7, fmt, ap, 0);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(3, fmt, ap, 1);
	va_end(ap);
	exit(2);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(3, fmt, ap, 0);
	va_end(ap);
	exit(2);
}

int sluice_write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

char *sluice_read_all(int fd, size_t max, size_t *len)
{
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap);

	while (buf) {
		ssize_t r;

		if (n + 1 == cap) {
			char *nb = cap > max ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				/* scrub: the stream may be a key */
				explicit_bzero(buf, n);
				free(buf);
				errno = cap > max ? EFBIG : ENOMEM;
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			explicit_bzero(buf, n);
			free(buf);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			explicit_bzero(buf, n);
			free(buf);
			errno = EFBIG;
			return NULL;
		}
	}
	if (!buf)
		return NULL;
	buf[n] = '\0';
	*len = n;
	return buf;
}
