/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flow.h - recovering who a proxied connection or a DNS query belongs to.
 * The BPF programs record every sandbox TCP connection that reaches the
 * proxy or the resolver (sockops), and every UDP DNS query they redirected
 * to the resolver (the egress backstop), in the pinned map sluice_flows
 * (struct sluice_flow_key -> struct sluice_orig, see bpf/sluice.h): where it
 * was going, and who (process, user, cgroup) sent it.  The proxy looks up
 * each accepted peer there and deletes the entry; no entry means the
 * connection is not from a sandbox.  The resolver looks up each query's
 * client: an entry names the server the client asked.
 */
#ifndef SLUICE_FLOW_H
#define SLUICE_FLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "sluice.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71   /* Linux 5.14+, <asm-generic/socket.h> */
#endif

/* Open the pinned flow map at `path` (bpf_obj_get).  Returns an fd, or -1
 * with errno set. */
int sluice_flow_open(const char *path);

/*
 * Build the flow key of a peer as accept()/getpeername() gave it: IPv4 and
 * v4-mapped IPv6 peers become family AF_INET with saddr[0]; the port is
 * converted to host byte order.  Padding is zeroed (the key is hashed as
 * bytes).  Returns 0, or -1 for a family other than AF_INET/AF_INET6.
 */
int sluice_flow_key(const struct sockaddr *peer, uint64_t netns_cookie,
		   struct sluice_flow_key *key);

/*
 * Key of the connected socket `fd`: getpeername() + SO_NETNS_COOKIE.
 * Returns 0, or -1 with errno set.
 */
int sluice_flow_key_of_fd(int fd, struct sluice_flow_key *key);

/*
 * Look the key up in the map and delete the entry (each entry is used
 * once).  Returns 0 and fills *out, -ENOENT when there is no entry, or
 * another -errno on a map error.
 */
int sluice_flow_take(int map_fd, const struct sluice_flow_key *key, struct sluice_orig *out);

/*
 * The entry of a UDP DNS query from `peer` (as recvfrom() gave it), left in
 * the map (the egress backstop rewrites or removes it with each query from
 * that port).  Returns 0 and fills *out, -ENOENT (a query the kernel did not
 * redirect: sent to the resolver's own address), or another -errno.
 */
int sluice_flow_udp_lookup(int map_fd, const struct sockaddr *peer, struct sluice_orig *out);

/*
 * The sweep: entries no one will take.  The kernel removes an entry when
 * its socket is released before anyone could (bpf/sluice.bpf.c,
 * sluice_sock_release); what is left (a UDP socket that sent from more than
 * one address, a path not thought of) would stay, as the map allocates on
 * demand and evicts nothing.  So each child removes its own kind of entry
 * once it is older than any accept or query read can be: the proxy its TCP
 * connections, the resolver its UDP queries and DNS-over-TCP connections
 * (an entry's time is its connect's, or its last query's).
 */
#define SLUICE_FLOW_MAX_AGE_NS (60ull * 1000000000ull)  /* older than this: no one will take it */
#define SLUICE_FLOW_SWEEP_SEC  30                        /* how often a child sweeps */

/*
 * Remove from map_fd the entries of one child's kind (dns: the resolver's;
 * else the proxy's) whose time (struct sluice_orig.ts_ns, CLOCK_BOOTTIME)
 * is more than max_age_ns before now_ns.  At most 4,096 a call (the next
 * sweep takes the rest).  Returns the number removed, or -errno when the
 * map cannot be read.
 */
int sluice_flow_sweep(int map_fd, bool dns, uint64_t now_ns, uint64_t max_age_ns);

struct event;
struct event_base;

/*
 * Sweep map_fd every SLUICE_FLOW_SWEEP_SEC on base (a persistent timer,
 * logged at debug when it removes anything).  Returns the event (the
 * caller frees it with event_free), or NULL with errno set.
 */
struct event *sluice_flow_sweeper(struct event_base *base, int map_fd, bool dns);

struct sluice_line;

/*
 * The fields of a flow entry on an event line (docs/events.md): the
 * original destination (sluice.orig_dst.ip, .port), sluice.cgroup_id, and
 * when the kernel knew the process: process.pid, process.name (its comm,
 * attacker-controlled), process.executable (`exe`, NULL: left out),
 * sluice.executable.device/.inode, user.id.
 */
void sluice_flow_put_orig(struct sluice_line *l, const struct sluice_orig *o, const char *exe);

#endif
