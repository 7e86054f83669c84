/* SPDX-License-Identifier: BSD-2-Clause */
#include "cgroup.h"

#include <dirent.h>
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

/* cg_subtree_ids()'s state. */
struct cg_walk {
	const uint64_t *skip;
	size_t nskip;
	uint64_t *ids;
	size_t n, cap, missed;
};

/* cg_subtree_ids()'s walk: the cgroup open at `dir` (taken) and those below
 * it, `depth` levels down so far; 0 or -errno (out of memory). */
static int cg_collect(int dir, int depth, struct cg_walk *w)
{
	struct stat st;
	struct dirent *d;
	DIR *dp;
	int err = 0;

	if (fstat(dir, &st) < 0) {
		w->missed++;
		close(dir);
		return 0;
	}
	if (depth > 0)
		for (size_t i = 0; i < w->nskip; i++)
			if (w->skip[i] == (uint64_t)st.st_ino) {
				close(dir);
				return 0;
			}
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		uint64_t *nv = realloc(w->ids, cap * sizeof(*nv));

		if (!nv) {
			close(dir);
			return -ENOMEM;
		}
		w->ids = nv;
		w->cap = cap;
	}
	w->ids[w->n++] = st.st_ino;
	if (!(dp = fdopendir(dir))) {
		w->missed++;
		close(dir);
		return 0;
	}
	while (!err && (d = readdir(dp))) {
		int sub;

		if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (depth >= 64) {
			w->missed++;
			continue;
		}
		sub = openat(dirfd(dp), d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub >= 0)
			err = cg_collect(sub, depth + 1, w);
		else if (errno != ENOENT)   /* ENOENT: removed meanwhile */
			w->missed++;
	}
	closedir(dp);
	return err;
}

int cg_subtree_ids(const char *path, const uint64_t *skip, size_t nskip, uint64_t **ids, size_t *n, size_t *missed)
{
	struct cg_walk w = { .skip = skip, .nskip = nskip };
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err;

	*ids = NULL;
	*n = 0;
	*missed = 0;
	if (dir < 0)
		return -errno;
	err = cg_collect(dir, 0, &w);
	if (err || !w.n) {
		free(w.ids);
		return err ? err : -EIO;
	}
	*ids = w.ids;
	*n = w.n;
	*missed = w.missed;
	return 0;
}

/*
 * Does the cgroup at `path` or any cgroup below it hold a process?  1, 0,
 * or -errno.  cgroup.events' "populated" covers descendants; cgroup.procs
 * lists only the cgroup's own processes, and a sandbox can move itself into
 * a child cgroup it made (no capability needed in its own cgroup namespace).
 */
static int cg_populated(const char *path)
{
	char file[4096], buf[4096];
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		const char *p;

		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0)
			return -errno;
		buf[n] = 0;
		p = strstr(buf, "populated ");
		if (p)
			return p[10] == '1';
	} else if (errno == ENOENT && access(path, F_OK) < 0) {
		return 0;
	}
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

/* SIGKILL each pid of path/cgroup.procs and of every cgroup below it. */
static void cg_kill_tree(const char *path, int depth)
{
	char file[4096];
	struct dirent *d;
	DIR *dir;
	FILE *f;
	int pid;

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	f = fopen(file, "re");
	if (f) {
		while (fscanf(f, "%d", &pid) == 1)
			kill(pid, SIGKILL);
		fclose(f);
	}
	if (depth > 64 || !(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (snprintf(file, sizeof(file), "%s/%s", path, d->d_name) < (int)sizeof(file))
			cg_kill_tree(file, depth + 1);
	}
	closedir(dir);
}

void cg_kill_procs(const char *path)
{
	char file[4096];
	int fd;

	/* cgroup.kill (5.14+) kills the whole subtree */
	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t w = write(fd, "1", 1);

		close(fd);
		if (w == 1)
			return;
	}
	cg_kill_tree(path, 0);
}

/* rmdir every cgroup below `path`, deepest first (their processes are
 * already dead: cgroup.kill covers descendants).  Bounded depth. */
static void cg_remove_children(const char *path, int depth)
{
	char sub[4096];
	struct dirent *d;
	DIR *dir;

	if (depth > 64 || !(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, d->d_name) >= (int)sizeof(sub))
			continue;
		cg_remove_children(sub, depth + 1);
		rmdir(sub);
	}
	closedir(dir);
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
	/* the sandbox may have made child cgroups (mkdir needs no capability
	 * in its own cgroup namespace): they block rmdir, remove them first */
	cg_remove_children(path, 0);
	if (rmdir(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
