/* SPDX-License-Identifier: BSD-2-Clause */
/* inspect.h - finding a container's or process's cgroup and netns, and the
 * connections already open in a cgroup (for `sluice attach`). */
#ifndef SLUICE_INSPECT_H
#define SLUICE_INSPECT_H

#include <stddef.h>
#include <sys/types.h>

struct json_object;

/* The cgroup v2 directory of `pid`: the "0::" line of /proc/PID/cgroup
 * joined to the cgroup2 mount `cg2`.  Returns 0 or -errno (-ENOENT when
 * the process has no v2 line). */
int inspect_pid_cgroup(pid_t pid, const char *cg2, char *out, size_t len);

/* The init pid of container `id` (ID or name) of podman or docker, asked
 * through their CLIs (`podman inspect`, then `docker inspect`).  Returns
 * the pid (> 0) or -ENOENT / -errno; *runtime names the one that answered. */
pid_t inspect_container_pid(const char *id, const char **runtime);

/* First pid in the cgroup at `cg` (cgroup.procs), or -ENOENT if empty. */
pid_t inspect_cgroup_first_pid(const char *cg);

/*
 * The TCP and UDP sockets already open by processes of cgroup `cg` (and
 * its descendants), as a JSON array of {pid, comm, fd, inode, proto,
 * local, remote, state}: read from /proc/PID/fd and /proc/PID/net/{tcp,tcp6,udp,
 * udp6} (the process's own netns).  These existed before the filter and
 * are not judged by it (docs/threat-model.md).  Caller owns the result.
 */
struct json_object *inspect_cgroup_connections(const char *cg);

#endif
