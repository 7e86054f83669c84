/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice_tunnel.h - wire types of the kernel tunnels (bpf/sluice_tunnel.bpf.c,
 * userspace/proxy/ktunnel.c): a passthrough tunnel whose two TCP sockets
 * the proxy hands to the kernel, which moves each side's bytes to the other
 * without them entering user space.
 *
 * Three maps, pinned by the loader beside the sandbox's other maps
 * (SLUICE_TUNNEL_PIN_*), all keyed by socket cookie (SO_COOKIE, host order):
 *   sluice_tunnel_held  sockhash, no program: every tunnel socket, the
 *                       redirect targets;
 *   sluice_tunnel_sk    sockhash with the stream verdict program: the
 *                       sockets whose received bytes are redirected;
 *   sluice_tunnel_dir   hash: cookie -> struct sluice_tunnel_dir (the peer).
 * The proxy fills dir for both sockets, inserts both into held, and only
 * then both into sk: from the first byte the verdict program sees, the
 * peer it redirects to is already a target, so no byte is ever dropped
 * for want of one.  Example: client socket cookie 7, upstream 9:
 * dir{7: peer 9, 9: peer 7}; held{7, 9}; sk{7, 9}.
 */
#ifndef SLUICE_TUNNEL_H
#define SLUICE_TUNNEL_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SLUICE_TUNNEL_MAX 16384   /* tunnels per sandbox (two sockets each) */

#define SLUICE_TUNNEL_PIN_HELD "sluice_tunnel_held"
#define SLUICE_TUNNEL_PIN_SK   "sluice_tunnel_sk"
#define SLUICE_TUNNEL_PIN_DIR  "sluice_tunnel_dir"

/* One direction of a tunnel: the socket it reads, keyed by that socket's cookie. */
struct sluice_tunnel_dir {
	__u64 peer;      /* cookie of the socket the bytes go to */
	__u64 bytes;     /* bytes the verdict program redirected (skb->len summed) */
	__u64 dropped;   /* bytes it could not redirect (the peer gone): the tunnel is broken */
};

_Static_assert(sizeof(struct sluice_tunnel_dir) == 24, "sluice_tunnel_dir wire size");

#endif
