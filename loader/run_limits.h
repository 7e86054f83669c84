/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_limits.h - resource limits for `sluice run`: --memory, --pids, --cpu
 * (cgroup v2 controllers of the sandbox's cgroup) and --timeout (the
 * loader kills the whole cgroup after a wall-clock time; exit status 124,
 * as timeout(1)).
 *
 * A limit that cannot be enforced is an error, never a silent "unlimited":
 * on a hybrid layout the memory, pids and cpu controllers are bound to
 * cgroup v1 and the v2 hierarchy (where the sandbox's cgroup lives) lacks
 * them, so `sluice run --memory 1G` there exits 2 and says so.
 */
#ifndef SLUICE_RUN_LIMITS_H
#define SLUICE_RUN_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* Bounds of what the parsers accept. */
#define SLUICE_LIMIT_MEMORY_MIN   (1ULL << 20)          /* 1 MiB */
#define SLUICE_LIMIT_MEMORY_MAX   (1ULL << 50)          /* 1 PiB */
#define SLUICE_LIMIT_PIDS_MAX     4194304ULL            /* PID_MAX_LIMIT */
#define SLUICE_LIMIT_CPU_PERIOD   100000U               /* cpu.max period, us */
#define SLUICE_LIMIT_CPU_MIN_MILLI 10U                  /* 0.01 CPU */
#define SLUICE_LIMIT_CPU_MAX_MILLI (4096U * 1000U)      /* 4096 CPUs */
#define SLUICE_LIMIT_TIMEOUT_MAX_MS (366ULL * 24 * 3600 * 1000) /* a year */

/* What `sluice run` was asked to limit; 0 in a field means "not limited". */
struct sluice_limits {
	uint64_t memory_bytes;   /* memory.max */
	uint64_t pids;           /* pids.max */
	uint32_t cpu_milli;      /* CPUs x 1000: cpu.max "<milli*100> 100000" */
	uint64_t timeout_ms;     /* wall clock, from the start of CMD */
};

/*
 * Parsers for the option values.  Each returns 0 and stores the value, or
 * -1 with a one-line reason in err (the option name is the caller's).
 *
 * sluice_parse_memory: a byte count with an optional binary suffix,
 *   case-insensitive: "1048576", "512K", "256M", "1G", "2T", "1.5G", also
 *   "256MiB" and "256MB" (both binary).  1 MiB .. 1 PiB.
 * sluice_parse_pids: a decimal count, 1 .. 4194304.
 * sluice_parse_cpu: a number of CPUs, decimal with up to 3 fractional
 *   digits: "1", "0.5", "2.25".  0.01 .. 4096.
 * sluice_parse_duration: like timeout(1): a non-negative decimal number
 *   with an optional unit s (default), m, h or d, or "ms": "30", "1.5",
 *   "500ms", "10m", "2h".  0 disables the timeout; at most a year.
 */
int sluice_parse_memory(const char *s, uint64_t *bytes, char *err, size_t errlen);
int sluice_parse_pids(const char *s, uint64_t *pids, char *err, size_t errlen);
int sluice_parse_cpu(const char *s, uint32_t *milli, char *err, size_t errlen);
int sluice_parse_duration(const char *s, uint64_t *ms, char *err, size_t errlen);

/* "50000 100000" for cpu.max. */
void sluice_cpu_max_string(uint32_t milli, char *buf, size_t len);

/*
 * Check, before anything is created, that the cgroup v2 hierarchy mounted
 * at `cg2` can enforce every limit set in `l`: each controller needed
 * (memory, pids, cpu) must be listed in `cg2`/cgroup.controllers.
 * Returns 0, or -1 with a message naming the controller and the option
 * ("the cgroup v2 hierarchy has no memory controller (hybrid layout: it is
 * bound to cgroup v1): --memory cannot be enforced").  `v1_mounts` is the
 * mount table to look for cgroup v1 hierarchies in (normally
 * "/proc/mounts"), only to word the message.
 */
int sluice_limits_check(const struct sluice_limits *l, const char *cg2, const char *v1_mounts, char *msg,
			size_t msglen);

/*
 * Enable the needed controllers from `cg2` down to `cg_parent` (its
 * cgroup.subtree_control, and that of every cgroup between them), then
 * write the limits into the sandbox's cgroup `cg_path` (a child of
 * `cg_parent`, still empty).  Returns 0, or -1 with a message.
 */
int sluice_limits_apply(const struct sluice_limits *l, const char *cg2, const char *cg_parent,
			const char *cg_path, char *msg, size_t msglen);

/* Does `l` need any cgroup controller (anything but --timeout)? */
int sluice_limits_need_controllers(const struct sluice_limits *l);

/* Milliseconds of CLOCK_MONOTONIC, for the timeout's deadline. */
uint64_t sluice_monotonic_ms(void);

#endif
