/* SPDX-License-Identifier: BSD-2-Clause */
/* flowcut.h - at a reload, cut the sandbox's kernel-allowed TCP flows the
 * new policy no longer allows (SOCK_DESTROY over sock_diag). */
#ifndef SLUICE_FLOWCUT_H
#define SLUICE_FLOWCUT_H

struct sluice_sandbox;
struct sluice_policy;
struct sluice_evlog;

/*
 * After sb switched to policy `np` (its generation in force): find the
 * sandbox's open TCP sockets whose connect a cidr entry allowed (they carry
 * the egress backstop's sluice_sk_judged record; read through sock_diag's
 * INET_DIAG_REQ_SK_BPF_STORAGES, kernel 5.2+) in the network namespace at
 * `netns_path` (NULL: the caller's), and destroy each one np's cidr entries
 * do not allow (SOCK_DESTROY, kernel 4.5+ with CONFIG_INET_DIAG_DESTROY:
 * the peer gets a RST, the sandbox's socket ECONNABORTED).  An np in audit
 * mode cuts nothing.  Each cut (or failed cut) is one line on `log`
 * (event.action "flow-cut", reason "policy_reloaded", the new policy's own
 * reason and digest).  sb must be pinned (its egress link is found under
 * its pin directory).  Returns the number of flows cut, or -errno when the
 * sockets could not be listed (said on stderr; nothing is cut then: those
 * flows' packets still meet the backstop under the new generation).
 */
int sluice_flowcut(const struct sluice_sandbox *sb, const char *netns_path, const struct sluice_policy *np,
		   struct sluice_evlog *log);

#endif
