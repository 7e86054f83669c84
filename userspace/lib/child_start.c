/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * child_start.c - the start-up sluice-proxy and sluice-resolver share
 * (child_start.h).
 */
#include "child_start.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

void sluice_child_join_netns(const char *path)
{
	int fd;

	if (!path)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fatal("--netns %s", path);
	if (setns(fd, CLONE_NEWNET) < 0)
		fatal("setns %s", path);
	close(fd);
}

int sluice_child_log_fd(const char *path, int fd)
{
	if (path && fd > 0)
		fatalx("--log and --log-fd: give one");
	if (fd > 0) {
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			fatal("--log-fd %d", fd);
		return fd;
	}
	if (!path)
		return STDOUT_FILENO;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		fatal("--log %s", path);
	return fd;
}

int sluice_child_evlog(struct sluice_evlog *w, int fd, const char *path, const char *prog,
		       const struct sluice_envelope *env, int seq_fd)
{
	char dest[32];
	int err;

	if (!path)
		snprintf(dest, sizeof(dest), fd == STDOUT_FILENO ? "stdout" : fd == STDERR_FILENO ? "stderr" : "fd %d",
			 fd);
	sluice_evlog_init(w, fd, path ? path : dest, prog, env);
	if (seq_fd < 0)
		return 0;
	(void)fcntl(seq_fd, F_SETFD, FD_CLOEXEC);
	err = sluice_evlog_share_seq(w, seq_fd);
	if (err < 0) {
		fprintf(stderr, "%s: --seq-fd %d: not a line counter: %s\n", prog, seq_fd, strerror(-err));
		return -1;
	}
	return 0;
}

void sluice_child_ready(int fd)
{
	if (fd < 0)
		return;
	if (write(fd, "ready\n", 6) != 6)
		log_warn("--ready-fd %d", fd);
	close(fd);
}

void sluice_child_loss_summary(const struct sluice_evlog *w)
{
	char summary[512];

	if (sluice_evlog_lost_total(w))
		log_warnx("%s", sluice_evlog_loss_summary(w, summary, sizeof(summary)));
}
