/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostmounts.h - the host's cgroup and BPF filesystem mounts in a mount
 * namespace that lost them: `ip netns exec NS sluice run ...` gives the
 * command a mount namespace of its own with a fresh sysfs on /sys, which
 * has neither the cgroup mounts nor the host's bpffs under it.
 */
#ifndef SLUICE_HOSTMOUNTS_H
#define SLUICE_HOSTMOUNTS_H

#include <stddef.h>

/*
 * If this process's mount namespace shows no cgroup2 mount, join the mount
 * namespace of the nearest ancestor whose namespace shows one (the shell
 * that ran `ip netns exec`; the network namespace stays ours): the
 * hierarchies, the bpffs and the pins the host sees, so `sluice gc` and the
 * daemon see the sandbox.  What `ip netns exec` bound over /etc from
 * /etc/netns/NAME is not seen any more.  The working directory is kept (by
 * path).  Needs CAP_SYS_ADMIN and one thread.  Returns 1 when it joined one
 * (which, in msg), 0 when there was nothing to do or no such ancestor,
 * -errno with msg when joining failed.
 */
int sluice_host_mounts_restore(char *msg, size_t msglen);

#endif
