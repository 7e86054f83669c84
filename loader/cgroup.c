/* SPDX-License-Identifier: BSD-2-Clause */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

int cg2_find_mount(const char *mounts, char *buf, size_t len)
{
	struct mntent *m;
	FILE *f = setmntent(mounts, "r");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_type, "cgroup2") == 0) {
			if (strlen(m->mnt_dir) >= len) {
				ret = -ENAMETOOLONG;
				break;
			}
			strcpy(buf, m->mnt_dir);
			ret = 0;
			break;
		}
	}
	endmntent(f);
	return ret;
}

int bpffs_ensure(const char *dir)
{
	struct statfs st;

	if (statfs(dir, &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (mount("bpf", dir, "bpf", 0, "mode=0700") < 0)
		return -errno;
	return 0;
}

int cg_create(const char *path)
{
	int fd;

	if (mkdir(path, 0755) < 0)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		rmdir(path);
		return err;
	}
	return fd;
}

uint64_t cg_id(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return 0;
	return st.st_ino;
}

static int cg_populated(const char *path)
{
	char file[4096], buf[4096];
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	return n > 0;
}

void cg_kill_procs(const char *path)
{
	char file[4096];
	FILE *f;
	int fd, pid;

	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t w = write(fd, "1", 1);

		close(fd);
		if (w == 1)
			return;
	}
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	f = fopen(file, "re");
	if (!f)
		return;
	while (fscanf(f, "%d", &pid) == 1)
		kill(pid, SIGKILL);
	fclose(f);
}

int cg_kill_and_remove(const char *path, int timeout_ms)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int waited = 0;

	for (;;) {
		int pop = cg_populated(path);

		if (pop <= 0)
			break;
		cg_kill_procs(path);
		if (waited >= timeout_ms)
			return -EBUSY;
		nanosleep(&ts, NULL);
		waited += 10;
	}
	if (rmdir(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
