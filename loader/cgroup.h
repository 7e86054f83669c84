/* SPDX-License-Identifier: BSD-2-Clause */
/* cgroup.h - finding the cgroup v2 hierarchy and managing sandbox cgroups. */
#ifndef SLUICE_CGROUP_H
#define SLUICE_CGROUP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Find the cgroup v2 mount point by reading `mounts` (normally
 * "/proc/mounts"): the first line of type "cgroup2".  Works on unified and
 * hybrid layouts.  Returns 0 and writes the path to buf, or -ENOENT when
 * there is no cgroup2 mount, or -errno when the file cannot be read.
 */
int cg2_find_mount(const char *mounts, char *buf, size_t len);

/* Is a bpffs mounted at `dir`?  If not, mount one (needs CAP_SYS_ADMIN).
 * Returns 0 or -errno. */
int bpffs_ensure(const char *dir);

/*
 * Create directory `path` (a new cgroup).  Fails with -EEXIST if it exists:
 * every sandbox starts from a fresh cgroup.  Its cgroup.max.depth is 64:
 * the sandbox can make cgroups below it no deeper than cg_kill_and_remove()
 * reaches.  Returns an O_DIRECTORY fd (>= 0) to it, for CLONE_INTO_CGROUP
 * and BPF attach, or -errno.
 */
int cg_create(const char *path);

/* cgroup id (the inode number of its directory, as bpf_get_current_cgroup_id()
 * reports it) of the cgroup at `path`, or 0 on error. */
uint64_t cg_id(const char *path);

/*
 * The ids (as cg_id()) of the cgroup at `path` and of every cgroup below it
 * into *ids (malloc'd, the caller frees it; in no order) and their number
 * into *n, leaving out the cgroups skip[0..nskip) below `path` and those
 * below them.  *missed counts the cgroups not listed: below 64 levels, or
 * unreadable (a cgroup removed meanwhile is not counted).  Returns 0, or
 * -errno when `path` cannot be read or memory runs out.
 */
int cg_subtree_ids(const char *path, const uint64_t *skip, size_t nskip, uint64_t **ids, size_t *n, size_t *missed);

/*
 * Kill every process in the cgroup at `path` (cgroup.kill, 5.14+; falls back
 * to SIGKILL of each pid in cgroup.procs), wait up to `timeout_ms` for it to
 * empty, then remove it.  Returns 0, or -errno (the cgroup may remain).
 */
int cg_kill_and_remove(const char *path, int timeout_ms);

/* SIGKILL every process in the cgroup at `path` (cgroup.kill, else each pid
 * of cgroup.procs), without waiting or removing it. */
void cg_kill_procs(const char *path);

#endif
