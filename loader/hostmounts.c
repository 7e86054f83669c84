/* SPDX-License-Identifier: BSD-2-Clause */
#include "hostmounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"

/* The parent of pid (from /proc/PID/stat), or 0. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f) || !(p = strrchr(buf, ')')) || sscanf(p + 1, " %*c %d", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return (pid_t)ppid;
}

/* The mount namespace (an open fd) of the nearest ancestor that shows a
 * cgroup2 mount, its mount point in path, its pid in *who.  -1: none. */
static int ancestor_with_cgroup2(char *path, size_t len, pid_t *who)
{
	char file[64];

	for (pid_t pid = getppid(); pid > 0; pid = pid == 1 ? 0 : parent_of(pid)) {
		int fd;

		snprintf(file, sizeof(file), "/proc/%d/mounts", (int)pid);
		if (cg2_find_mount(file, path, len) < 0)
			continue;
		snprintf(file, sizeof(file), "/proc/%d/ns/mnt", (int)pid);
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			*who = pid;
			return fd;
		}
	}
	return -1;
}

int sluice_host_mounts_restore(char *msg, size_t msglen)
{
	char path[PATH_MAX], cwd[PATH_MAX];
	pid_t pid = 0;
	int fd, err = 0;

	msg[0] = 0;
	if (cg2_find_mount("/proc/mounts", path, sizeof(path)) == 0)
		return 0;
	fd = ancestor_with_cgroup2(path, sizeof(path), &pid);
	if (fd < 0)
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = 0;
	/* setns resets the root and the working directory to the namespace's root */
	if (setns(fd, CLONE_NEWNS) < 0) {
		err = -errno;
		snprintf(msg, msglen, "cannot join the mount namespace of pid %d (cgroup2 at %s): %s", (int)pid, path,
			 strerror(-err));
	} else if (cwd[0] && chdir(cwd) < 0) {
		err = -errno;
		snprintf(msg, msglen, "joined the mount namespace of pid %d, where the working directory %s is not: %s",
			 (int)pid, cwd, strerror(-err));
	} else {
		snprintf(msg, msglen, "joined the mount namespace of pid %d, with cgroup2 at %s", (int)pid, path);
	}
	close(fd);
	return err < 0 ? err : 1;
}
