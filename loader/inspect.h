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

/* A running container, as its engine reports it. */
struct inspect_container {
	pid_t pid;                 /* its init process */
	char id[129];              /* the engine's id (podman, docker: 64 hex) */
	char name[129];            /* its name (containerd: the id) */
	const char *runtime;       /* "podman", "docker", "containerd" (static) */
	char ns[64];               /* containerd: the namespace it was found in */
};

/*
 * Find the running container `ref` (ID or name) through the engines' CLIs:
 * `podman inspect`, `docker inspect`, then containerd's `ctr -n NS task ls`
 * in namespaces default, k8s.io and moby ($CONTAINERD_ADDRESS picks the
 * socket).  With `ns` non-NULL only containerd's namespace `ns` is searched,
 * and a namespace containerd does not have is an error of its own.
 * Returns 0 with *c filled, or -ENOENT with why in msg.
 */
int inspect_container(const char *ref, const char *ns, struct inspect_container *c, char *msg, size_t msglen);

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
