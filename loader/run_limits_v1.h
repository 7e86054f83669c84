/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_limits_v1.h - --memory, --pids and --cpu on a hybrid cgroup layout,
 * where those controllers are bound to cgroup v1 hierarchies and the v2
 * hierarchy (where the sandbox's cgroup and the egress filter live) lacks
 * them.  As runc does there: a per-sandbox v1 cgroup in each hierarchy
 * needed (<mount>/sluice/NAME, the mount found in /proc/mounts), the
 * limits written into it, the sandbox's first process moved into it
 * before anything else runs (everything it forks inherits it), and the
 * cgroups removed with the sandbox.
 */
#ifndef SLUICE_RUN_LIMITS_V1_H
#define SLUICE_RUN_LIMITS_V1_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "run_limits.h"

#define SLUICE_V1_MAX 3

struct sluice_limits_v1 {
	size_t n;
	const char *controller[SLUICE_V1_MAX];   /* "memory", "pids", "cpu" */
	char mount[SLUICE_V1_MAX][PATH_MAX];     /* the hierarchy's mount point */
	char dir[SLUICE_V1_MAX][PATH_MAX];       /* <mount>/sluice/NAME once made, else "" */
};

/*
 * Which limits of `l` the v2 hierarchy at `cg2` lacks the controller for
 * but a v1 hierarchy in `mounts` (normally "/proc/mounts") has: fills v1
 * (n = 0: none) and stores in *v2 a copy of l without them, for
 * sluice_limits_check() and sluice_limits_apply() (which still refuse a
 * limit nobody can enforce).  Reads only.
 */
void sluice_limits_v1_plan(const struct sluice_limits *l, const char *cg2, const char *mounts,
			   struct sluice_limits_v1 *v1, struct sluice_limits *v2);

/* Make <mount>/sluice/NAME in each planned hierarchy and write the limits
 * (memory.limit_in_bytes and, with swap accounting, memory.memsw.limit_in_bytes;
 * pids.max; cpu.cfs_period_us and cpu.cfs_quota_us).  Returns 0, or -1 with a
 * message; what was made is recorded in v1->dir for sluice_limits_v1_remove. */
int sluice_limits_v1_create(struct sluice_limits_v1 *v1, const struct sluice_limits *l, const char *name,
			    char *msg, size_t msglen);

/* Move `pid` (the sandbox's first process, before it forks) into every v1
 * cgroup made.  Returns 0, or -1 with a message. */
int sluice_limits_v1_attach(const struct sluice_limits_v1 *v1, pid_t pid, char *msg, size_t msglen);

/* Remove the v1 cgroups (waiting up to ~2 s for them to empty after the
 * v2 cgroup was killed) and the sluice/ parents if no other sandbox uses
 * them.  Safe to call twice. */
void sluice_limits_v1_remove(struct sluice_limits_v1 *v1);

/*
 * What the limits stopped, for the `limit-exceeded` lines: for the memory
 * limit the number of OOM kills (memory.events oom_kill on v2,
 * memory.oom_control oom_kill on v1), for pids the forks refused
 * (pids.events max).  cg_path: the sandbox's v2 cgroup.  Each count is 0
 * when unknown.  Read before the cgroups are removed.
 */
struct sluice_limits_hit {
	unsigned long long oom_kills, forks_refused;
};
void sluice_limits_hits(const struct sluice_limits *l, const struct sluice_limits_v1 *v1, const char *cg_path,
			struct sluice_limits_hit *hit);

#endif
