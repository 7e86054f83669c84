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

#define CG_MAX_DEPTH 64   /* levels below a cgroup the walks below go down */

int cg_create(const char *path)
{
	char depth[16];
	int fd, dfd;

	if (mkdir(path, 0755) < 0)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		rmdir(path);
		return err;
	}
	/* the sandbox may make cgroups below its own, no deeper than the
	 * walk that kills and removes them reaches (cgroup.max.depth, 4.14+;
	 * the file is not delegated: the sandbox cannot raise it) */
	dfd = openat(fd, "cgroup.max.depth", O_WRONLY | O_CLOEXEC);
	if (dfd >= 0) {
		int n = snprintf(depth, sizeof(depth), "%d", CG_MAX_DEPTH);
		ssize_t w = write(dfd, depth, (size_t)n);

		close(dfd);
		if (w != n) {
			int err = w < 0 ? -errno : -EIO;

			close(fd);
			rmdir(path);
			return err;
		}
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

/* What cg_walk() does at each cgroup.  pre (NULL: go below every cgroup):
 * at the cgroup open at `dir` (not to be closed), `depth` levels below the
 * root; 0 goes below it, 1 skips what is below, -errno stops the walk.
 * post (may be NULL): after the cgroup `name` of the one open at `parent`
 * and all below it were visited, or could not be (too deep, or not
 * opened).  missed counts the cgroups that could not be opened or listed
 * (not those removed meanwhile) and those past CG_MAX_DEPTH. */
struct cg_visit {
	int (*pre)(int dir, int depth, void *arg);
	void (*post)(int parent, const char *name, void *arg);
	void *arg;
	size_t missed;
};

/* The one walk of a cgroup tree: the cgroup open at `dir` (taken), then
 * each cgroup below it, parents first, by descriptor (no path grows).
 * 0, or the -errno a pre callback stopped it with. */
static int cg_walk(int dir, int depth, struct cg_visit *v)
{
	struct dirent *d;
	DIR *dp;
	int err = v->pre ? v->pre(dir, depth, v->arg) : 0;

	if (err) {
		close(dir);
		return err < 0 ? err : 0;
	}
	if (!(dp = fdopendir(dir))) {
		v->missed++;
		close(dir);
		return 0;
	}
	while (!err && (d = readdir(dp))) {
		int sub;

		if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (depth >= CG_MAX_DEPTH) {
			sub = -1;
			v->missed++;
		} else if ((sub = openat(dirfd(dp), d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
			if (errno == ENOENT)   /* removed meanwhile */
				continue;
			v->missed++;
		}
		if (sub >= 0)
			err = cg_walk(sub, depth + 1, v);
		/* a cgroup not walked still gets its post (an rmdir of one
		 * without children of its own succeeds all the same) */
		if (!err && v->post)
			v->post(dirfd(dp), d->d_name, v->arg);
	}
	closedir(dp);
	return err;
}

/* cg_walk() from `path`: 0, -errno of the open, or the walk's. */
static int cg_walk_path(const char *path, struct cg_visit *v)
{
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return dir < 0 ? -errno : cg_walk(dir, 0, v);
}

/* cg_subtree_ids()'s state. */
struct cg_ids {
	const uint64_t *skip;
	size_t nskip;
	uint64_t *ids;
	size_t n, cap;
	size_t unreadable;
};

/* cg_subtree_ids()'s visit: the cgroup's id, unless it is one to skip. */
static int collect_id(int dir, int depth, void *arg)
{
	struct cg_ids *w = arg;
	struct stat st;

	if (fstat(dir, &st) < 0) {
		w->unreadable++;
		return 1;
	}
	if (depth > 0)
		for (size_t i = 0; i < w->nskip; i++)
			if (w->skip[i] == (uint64_t)st.st_ino)
				return 1;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		uint64_t *nv = realloc(w->ids, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		w->ids = nv;
		w->cap = cap;
	}
	w->ids[w->n++] = st.st_ino;
	return 0;
}

int cg_subtree_ids(const char *path, const uint64_t *skip, size_t nskip, uint64_t **ids, size_t *n, size_t *missed)
{
	struct cg_ids w = { .skip = skip, .nskip = nskip };
	struct cg_visit v = { .pre = collect_id, .arg = &w };
	int err = cg_walk_path(path, &v);

	*ids = NULL;
	*n = 0;
	*missed = 0;
	if (err || !w.n) {
		free(w.ids);
		return err ? err : -EIO;
	}
	*ids = w.ids;
	*n = w.n;
	*missed = v.missed + w.unreadable;
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

/* cg_kill_procs()'s visit: SIGKILL each pid of the cgroup's cgroup.procs. */
static int kill_procs(int dir, int depth, void *arg)
{
	int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
	int pid;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (fscanf(f, "%d", &pid) == 1)
		kill(pid, SIGKILL);
	fclose(f);
	return 0;
}

void cg_kill_procs(const char *path)
{
	struct cg_visit tree = { .pre = kill_procs };
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
	cg_walk_path(path, &tree);
}

/* cg_kill_and_remove()'s visit after a cgroup's children: rmdir it (its
 * processes are already dead: cgroup.kill covers descendants). */
static void remove_cgroup(int parent, const char *name, void *arg)
{
	unlinkat(parent, name, AT_REMOVEDIR);
}

int cg_kill_and_remove(const char *path, int timeout_ms)
{
	struct cg_visit remove = { .post = remove_cgroup };
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
	cg_walk_path(path, &remove);
	if (rmdir(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
