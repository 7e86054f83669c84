/* SPDX-License-Identifier: BSD-2-Clause */
/* flowcut.h - at a reload, cut the sandbox's kernel-allowed TCP flows the
 * new policy no longer allows (SOCK_DESTROY over sock_diag). */
#ifndef SLUICE_FLOWCUT_H
#define SLUICE_FLOWCUT_H

#include <stddef.h>
#include <stdint.h>

struct sluice_sandbox;
struct sluice_policy;
struct sluice_evlog;

/*
 * After sb switched to policy `np` (its generation in force): find the
 * sandbox's open TCP sockets that reached their destination in the kernel,
 * by a cidr entry (or past an audit-mode policy), in the network namespace
 * at `netns_path` (NULL: the caller's): those of the cgroup at `cgroup` or
 * one below it (INET_DIAG_CGROUP_ID, kernel 5.8+), but for the cgroups
 * others[0..nothers) (ids: other sandboxes nested in it) and those below
 * them, that are not connected to sluice's own addresses and hold no
 * sluice_sk_orig record of an accept (read through sock_diag's
 * INET_DIAG_REQ_SK_BPF_STORAGES, 5.2+); destroy each one np's cidr entries
 * do not allow (SOCK_DESTROY, kernel 4.5+ with CONFIG_INET_DIAG_DESTROY:
 * the peer gets a RST, which the backstop lets out by the socket's cookie
 * in sluice_cut; the sandbox's socket gets ECONNABORTED).  An np in audit
 * mode cuts nothing.  Each cut (or failed cut) is one line on `log`
 * (event.action "flow-cut", reason "policy_reloaded", the new policy's own
 * reason and digest).  sb must be pinned (its programs' maps are found
 * through its pinned links).  Returns the number of flows cut, or -errno
 * when the sockets could not be listed (said on stderr; what was listed
 * before is cut: the rest's packets still meet the backstop under the new
 * generation).
 */
int sluice_flowcut(const struct sluice_sandbox *sb, const char *cgroup, const uint64_t *others, size_t nothers,
		   const char *netns_path, const struct sluice_policy *np, struct sluice_evlog *log);

#endif
