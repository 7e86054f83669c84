// SPDX-License-Identifier: BSD-2-Clause
/* events_dest.c - the events destination of run and the daemon (events_dest.h). */
#include "events_dest.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

bool sluice_events_is_journald(const char *spec)
{
	return spec && strcmp(spec, SLUICE_EVENTS_JOURNALD) == 0;
}

int sluice_events_open(const char *spec, unsigned mode)
{
	int fd;

	if (!sluice_events_is_journald(spec)) {
		fd = open(spec, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, (mode_t)mode);
		return fd < 0 ? -errno : fd;
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
