/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flow.h - recovering who a proxied connection belongs to.  The BPF
 * programs record every sandbox TCP connection that reaches the proxy in the
 * pinned map sluice_flows (struct sluice_flow_key -> struct sluice_orig, see
 * bpf/sluice.h); the proxy looks up each accepted peer there and deletes the
 * entry.  No entry means the connection is not from a sandbox.
 */
#ifndef SLUICE_PROXY_FLOW_H
#define SLUICE_PROXY_FLOW_H

#include <stdint.h>
#include <sys/socket.h>

#include "sluice.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71   /* Linux 5.14+, <asm-generic/socket.h> */
#endif

/* Open the pinned flow map at `path` (bpf_obj_get).  Returns an fd, or -1
 * with errno set. */
int proxy_flow_open(const char *path);

/*
 * Build the flow key of a peer as accept()/getpeername() gave it: IPv4 and
 * v4-mapped IPv6 peers become family AF_INET with saddr[0]; the port is
 * converted to host byte order.  Padding is zeroed (the key is hashed as
 * bytes).  Returns 0, or -1 for a family other than AF_INET/AF_INET6.
 */
int proxy_flow_key(const struct sockaddr *peer, uint64_t netns_cookie,
		   struct sluice_flow_key *key);

/*
 * Key of the connected socket `fd`: getpeername() + SO_NETNS_COOKIE.
 * Returns 0, or -1 with errno set.
 */
int proxy_flow_key_of_fd(int fd, struct sluice_flow_key *key);

/*
 * Look the key up in the map and delete the entry (each entry is used
 * once).  Returns 0 and fills *out, -ENOENT when there is no entry, or
 * another -errno on a map error.
 */
int proxy_flow_take(int map_fd, const struct sluice_flow_key *key, struct sluice_orig *out);

#endif
