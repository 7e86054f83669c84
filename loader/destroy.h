/* SPDX-License-Identifier: BSD-2-Clause */
/* destroy.h - closing sockets opened before an attach (bpf_sock_destroy). */
#ifndef SLUICE_DESTROY_H
#define SLUICE_DESTROY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Close every TCP and UDP socket of the netns at `netns_path` (NULL: the
 * caller's) whose inode number is in `inodes` (from /proc/PID/fd), with
 * socket iterators calling the bpf_sock_destroy() kfunc (kernel 6.5+):
 * the owners see ECONNABORTED.  Returns the number closed (>= 0), or
 * -errno with msg (-EOPNOTSUPP: the kernel lacks the kfunc).
 */
int sluice_destroy_sockets(const char *netns_path, const uint64_t *inodes, size_t n, char *msg, size_t msglen);

#endif
