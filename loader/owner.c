/* SPDX-License-Identifier: BSD-2-Clause */
#include "owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t sluice_proc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm (field 2) may hold spaces and ')': fields count from the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* after ") ": field 3 (state) ... field 22 (starttime) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &st) != 1)
		return 0;
	return st;
}

int sluice_owner_write(const char *name, const char *kind)
{
	return sluice_owner_write_info(name, kind, NULL);
}

int sluice_owner_write_info(const char *name, const char *kind, const char *info)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	if (mkdir("/run/sluice", 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mkdir(SLUICE_OWNER_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", SLUICE_OWNER_DIR, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%s %d %" PRIu64 "\n", kind, (int)getpid(), sluice_proc_start_time(getpid()));
	if (info)
		fprintf(f, "%.*s\n", (int)strcspn(info, "\n") < 511 ? (int)strcspn(info, "\n") : 511, info);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

int sluice_owner_read(const char *name, struct sluice_owner *o)
{
	char path[PATH_MAX];
	unsigned long long st;
	int pid;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/%s", SLUICE_OWNER_DIR, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(o, 0, sizeof(*o));
	n = fscanf(f, "%15s %d %llu", o->kind, &pid, &st);
	if (n == 3 && fgetc(f) == '\n' && fgets(o->info, sizeof(o->info), f))
		o->info[strcspn(o->info, "\n")] = 0;
	fclose(f);
	if (n != 3 || pid <= 0)
		return -EINVAL;
	o->pid = pid;
	o->start_time = st;
	return 0;
}

void sluice_owner_remove(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", SLUICE_OWNER_DIR, name);
	unlink(path);
}

bool sluice_owner_alive(const struct sluice_owner *o)
{
	uint64_t st = sluice_proc_start_time(o->pid);

	return st != 0 && st == o->start_time;
}

int sluice_owner_each(int (*fn)(const char *name, const struct sluice_owner *o, void *arg), void *arg)
{
	DIR *d = opendir(SLUICE_OWNER_DIR);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct sluice_owner o;
		size_t len = strlen(de->d_name);

		if (de->d_name[0] == '.' || (len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0))
			continue;
		if (sluice_owner_read(de->d_name, &o) < 0)
			continue;
		n++;
		if (fn(de->d_name, &o, arg))
			break;
	}
	closedir(d);
	return n;
}
