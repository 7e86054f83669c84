// SPDX-License-Identifier: BSD-2-Clause
/* events_dest.c - the events destination of run and the daemon (events_dest.h). */
#include "events_dest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "evlog.h"
#include "log.h"

bool sluice_events_is_journald(const char *spec)
{
	return spec && strcmp(spec, SLUICE_EVENTS_JOURNALD) == 0;
}

/*
 * A writer killed by SIGKILL in the middle of a line (a write(2) that
 * spans a page can stop short on a fatal signal) leaves the file ending in
 * a fragment; heal_torn_tail() (evlog.c) keeps the next line apart from
 * it, but the fragment stays a line no JSON reader parses (CI's
 * faults/test_restart read one).  Take the fragment back to the last newline
 * (a line is at most SLUICE_LINE_MAX bytes), unless the file is growing
 * meanwhile (another writer is in the middle of its line).  A kernel
 * event's line is not lost by it: its ring buffer record was not consumed
 * yet, and the daemon that adopts the sandbox writes it again
 * (last_written_seq() reads whole lines only).  The fd is write-only: the
 * tail is read through /proc/self/fd, as heal_torn_tail() does, so it is
 * the file fd holds, not whatever the path names by now.  Returns the
 * bytes removed, or 0.
 */
static long mend_torn_tail(int fd)
{
	char tail[SLUICE_LINE_MAX], path[64];
	struct stat st, st2;
	off_t from, cut;
	ssize_t n;
	int rfd;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (rfd < 0)
		return 0;
	from = st.st_size > (off_t)sizeof(tail) ? st.st_size - (off_t)sizeof(tail) : 0;
	n = pread(rfd, tail, (size_t)(st.st_size - from), from);
	close(rfd);
	if (n != st.st_size - from || tail[n - 1] == '\n')
		return 0;
	cut = n;
	while (cut > 0 && tail[cut - 1] != '\n')
		cut--;
	if ((cut == 0 && from > 0) || tail[cut] != '{')
		return 0;   /* no newline in a line's length, or no JSON: not a line of ours */
	if (fstat(fd, &st2) < 0 || st2.st_size != st.st_size)
		return 0;
	if (ftruncate(fd, from + cut) < 0)
		return 0;
	return (long)(n - cut);
}

int sluice_events_open(const char *spec, unsigned mode)
{
	int fd;

	if (!sluice_events_is_journald(spec)) {
		long torn;

		fd = open(spec, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, (mode_t)mode);
		if (fd < 0)
			return -errno;
		torn = mend_torn_tail(fd);
		if (torn > 0)
			log_warnx("%s ended in a torn line (%ld bytes, a writer killed in the middle of it): removed, so "
				  "that every line is whole", spec, torn);
		return fd;
	}
	fd = sd_journal_stream_fd("sluice", LOG_INFO, 0);
	if (fd < 0)
		return fd;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}
