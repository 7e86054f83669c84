/* SPDX-License-Identifier: BSD-2-Clause */
/* dns_dropped.c - dropped DNS queries for `sluice status` (dns_dropped.h). */
#include "dns_dropped.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "dns_stats.h"
#include "evseq.h"

_Static_assert(SLUICE_DNS_DROP_N <= SLUICE_EVC_DROPS, "every reported reason is counted on the page");

struct json_object *sluice_dns_dropped_json(const struct sluice_evseq *q)
{
	json_object *o;
	uint64_t total = 0;

	if (!q)
		return NULL;
	o = json_object_new_object();
	for (unsigned i = 0; i < SLUICE_DNS_DROP_N; i++) {
		uint64_t n = sluice_evseq_read(&q->dns_dropped[i]);

		json_object_object_add(o, sluice_dns_drop_names[i], json_object_new_uint64(n));
		total += n;
	}
	json_object_object_add(o, "total", json_object_new_uint64(total));
	return o;
}

/* An O_RDONLY fd to pid's memfd named "sluice-evseq", or -1. */
static int run_page_fd(pid_t pid)
{
	static const char want[] = "/memfd:sluice-evseq";
	char dir[64], path[128], link[128];
	struct dirent *f;
	int fd = -1;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d && fd < 0 && (f = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%.32s", dir, f->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (strncmp(link, want, sizeof(want) - 1) == 0)
			fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (d)
		closedir(d);
	return fd;
}

struct json_object *sluice_dns_dropped_of_run(pid_t pid)
{
	struct sluice_evseq *q;
	json_object *o = NULL;
	struct stat st;
	int fd = run_page_fd(pid);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(*q)) {
		q = mmap(NULL, sizeof(*q), PROT_READ, MAP_SHARED, fd, 0);
		if (q != MAP_FAILED) {
			if (memcmp(q->magic, SLUICE_EVSEQ_MAGIC, sizeof(q->magic)) == 0)
				o = sluice_dns_dropped_json(q);
			munmap(q, sizeof(*q));
		}
	}
	close(fd);
	return o;
}
