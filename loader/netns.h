/* SPDX-License-Identifier: BSD-2-Clause */
/* netns.h - network namespaces sluice makes itself (`sluice run --isolate-net`). */
#ifndef SLUICE_NETNS_H
#define SLUICE_NETNS_H

#include <stddef.h>

/*
 * Make a fresh network namespace with only loopback, up (127.0.0.1 and,
 * where IPv6 is on, ::1), and return an O_RDONLY|O_CLOEXEC fd to it,
 * without leaving the caller's own netns.  Its
 * path for other processes is /proc/<caller's pid>/fd/<fd> as long as the
 * caller keeps the fd.  Needs CAP_SYS_ADMIN.  Returns the fd, or -errno
 * with msg.
 */
int sluice_netns_isolated(char *msg, size_t msglen);

#endif
