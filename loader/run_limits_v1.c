/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_limits_v1.c - the limits on cgroup v1 hierarchies of a hybrid layout
 * (run_limits_v1.h).  Only reads /proc/mounts and reads and writes files
 * under the v1 mounts it finds there.
 */
#include "run_limits_v1.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Is `word` one of the comma-separated words of `list`? */
static bool has_opt(const char *list, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (n == wl && strncmp(p, word, wl) == 0)
			return true;
		p += n;
		p += strspn(p, ",");
	}
	return false;
}

/* The mount point of the v1 hierarchy `controller` is bound to, into out. */
static bool v1_mount(const char *mounts, const char *controller, char *out, size_t len)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen(mounts, "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[256], dir[1024], type[64], opts[1024];

		if (sscanf(line, "%255s %1023s %63s %1023s", dev, dir, type, opts) == 4 && strcmp(type, "cgroup") == 0 &&
		    has_opt(opts, controller)) {
			snprintf(out, len, "%s", dir);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* Does the v2 hierarchy list `controller` in cgroup.controllers? */
static bool on_v2(const char *cg2, const char *controller)
{
	char path[PATH_MAX], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.controllers", cg2);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* unreadable: leave it to sluice_limits_check, which says so */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return true;
	buf[n] = 0;
	for (char *save = NULL, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, controller) == 0)
			return true;
	return false;
}

void sluice_limits_v1_plan(const struct sluice_limits *l, const char *cg2, const char *mounts,
			   struct sluice_limits_v1 *v1, struct sluice_limits *v2)
{
	memset(v1, 0, sizeof(*v1));
	*v2 = *l;
	if (l->memory_bytes && !on_v2(cg2, "memory") && v1_mount(mounts, "memory", v1->mount[v1->n], PATH_MAX)) {
		v1->controller[v1->n++] = "memory";
		v2->memory_bytes = 0;
	}
	if (l->pids && !on_v2(cg2, "pids") && v1_mount(mounts, "pids", v1->mount[v1->n], PATH_MAX)) {
		v1->controller[v1->n++] = "pids";
		v2->pids = 0;
	}
	if (l->cpu_milli && !on_v2(cg2, "cpu") && v1_mount(mounts, "cpu", v1->mount[v1->n], PATH_MAX)) {
		v1->controller[v1->n++] = "cpu";
		v2->cpu_milli = 0;
	}
}

static int put(const char *dir, const char *file, unsigned long long v, char *msg, size_t msglen)
{
	char path[PATH_MAX + 64], val[32];
	int fd, len;
	ssize_t w;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	len = snprintf(val, sizeof(val), "%llu", v);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		snprintf(msg, msglen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	w = write(fd, val, (size_t)len);
	if (w != len) {
		snprintf(msg, msglen, "cannot write %s to %s: %s", val, path, w < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int sluice_limits_v1_create(struct sluice_limits_v1 *v1, const struct sluice_limits *l, const char *name,
			    char *msg, size_t msglen)
{
	for (size_t i = 0; i < v1->n; i++) {
		const char *c = v1->controller[i];
		char parent[PATH_MAX + 16], path[PATH_MAX + 64];
		int r = 0;

		snprintf(parent, sizeof(parent), "%s/sluice", v1->mount[i]);
		if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
			snprintf(msg, msglen, "cannot create the cgroup v1 %s cgroup %s: %s", c, parent, strerror(errno));
			return -1;
		}
		if (snprintf(v1->dir[i], PATH_MAX, "%s/%s", parent, name) >= PATH_MAX || mkdir(v1->dir[i], 0755) < 0) {
			snprintf(msg, msglen, "cannot create the cgroup v1 %s cgroup %s: %s (another sandbox named '%s'?)", c,
				 v1->dir[i], strerror(errno), name);
			v1->dir[i][0] = 0;
			return -1;
		}
		if (strcmp(c, "memory") == 0) {
			r = put(v1->dir[i], "memory.limit_in_bytes", (unsigned long long)l->memory_bytes, msg, msglen);
			snprintf(path, sizeof(path), "%s/memory.memsw.limit_in_bytes", v1->dir[i]);
			/* with swap accounting, swap counts too (as memory.swap.max 0 would not: v2 keeps swap apart) */
			if (r == 0 && access(path, F_OK) == 0)
				r = put(v1->dir[i], "memory.memsw.limit_in_bytes", (unsigned long long)l->memory_bytes, msg,
					msglen);
		} else if (strcmp(c, "pids") == 0) {
			r = put(v1->dir[i], "pids.max", (unsigned long long)l->pids, msg, msglen);
		} else {
			r = put(v1->dir[i], "cpu.cfs_period_us", SLUICE_LIMIT_CPU_PERIOD, msg, msglen);
			if (r == 0)
				r = put(v1->dir[i], "cpu.cfs_quota_us",
					(unsigned long long)l->cpu_milli * SLUICE_LIMIT_CPU_PERIOD / 1000, msg, msglen);
		}
		if (r < 0)
			return -1;
	}
	return 0;
}

int sluice_limits_v1_attach(const struct sluice_limits_v1 *v1, pid_t pid, char *msg, size_t msglen)
{
	for (size_t i = 0; i < v1->n; i++)
		if (v1->dir[i][0] && put(v1->dir[i], "cgroup.procs", (unsigned long long)pid, msg, msglen) < 0)
			return -1;
	return 0;
}

void sluice_limits_v1_remove(struct sluice_limits_v1 *v1)
{
	for (size_t i = 0; i < v1->n; i++) {
		char parent[PATH_MAX + 16];

		if (!v1->dir[i][0])
			continue;
		/* the processes were killed through the v2 cgroup; their exit
		 * may lag a little behind in this hierarchy */
		for (int tries = 0; rmdir(v1->dir[i]) < 0 && errno == EBUSY && tries < 200; tries++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
		v1->dir[i][0] = 0;
		snprintf(parent, sizeof(parent), "%s/sluice", v1->mount[i]);
		rmdir(parent); /* only succeeds once no other sandbox uses it */
	}
}

/* The number after `key` in a "key value" line file, 0 if absent. */
static unsigned long long keyed(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX + 64], line[256];
	unsigned long long v = 0;
	size_t kl = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
			sscanf(line + kl + 1, "%llu", &v);
			break;
		}
	fclose(f);
	return v;
}

void sluice_limits_hits(const struct sluice_limits *l, const struct sluice_limits_v1 *v1, const char *cg_path,
			struct sluice_limits_hit *hit)
{
	const char *mem = l->memory_bytes ? cg_path : NULL, *pids = l->pids ? cg_path : NULL;
	bool mem_v1 = false;

	memset(hit, 0, sizeof(*hit));
	for (size_t i = 0; i < v1->n; i++) {
		if (!v1->dir[i][0])
			continue;
		if (strcmp(v1->controller[i], "memory") == 0) {
			mem = v1->dir[i];
			mem_v1 = true;
		} else if (strcmp(v1->controller[i], "pids") == 0) {
			pids = v1->dir[i];
		}
	}
	if (mem)
		hit->oom_kills = keyed(mem, mem_v1 ? "memory.oom_control" : "memory.events", "oom_kill");
	if (pids)
		hit->forks_refused = keyed(pids, "pids.events", "max");
}
