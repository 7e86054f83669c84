/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice_maps.bpf.h - the maps of the egress filter (sluice.bpf.c, the only
 * file that includes it): the allowlists, both policy generations'
 * settings, counters, the ring buffer and the socket storages.  The wire
 * types of their keys and values are in sluice.h; user space drives them
 * by the names below (loader/sandbox.c).
 */
#ifndef SLUICE_MAPS_BPF_H
#define SLUICE_MAPS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct sluice_lpm4_key);
	__type(value, struct sluice_cidr_rules);
} sluice_allow4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct sluice_lpm6_key);
	__type(value, struct sluice_cidr_rules);
} sluice_allow6 SEC(".maps");

/* Full-length cidr entries by exact address (sluice.h, struct
 * sluice_exact4_key): allocated on demand, like the tries. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct sluice_exact4_key);
	__type(value, struct sluice_cidr_rules);
} sluice_exact4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct sluice_exact6_key);
	__type(value, struct sluice_cidr_rules);
} sluice_exact6 SEC(".maps");

/* Two banks (generation & 1) of a 65536-bit bitmap: ports of host/url entries. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * SLUICE_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u32);
} sluice_proxy_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_state);
} sluice_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sluice_genconf);
} sluice_genconf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_STAT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} sluice_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by the loader, or its daemon's shared ring */
} sluice_events SEC(".maps");

/* What each sandbox has queued in sluice_events (sluice.h, "The event ring
 * buffer's budget"): the ring's, shared with it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SLUICE_RING_BUDGET_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} sluice_ring_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sluice_orig);
} sluice_sk_orig SEC(".maps");

/*
 * The backstop's memo (kernel-internal, never read by user space): the
 * destination a TCP socket's connect was allowed to by a cidr entry found
 * in the trie of prefixes (sluice_allow4/6), and the policy generation that
 * allowed it.  The egress backstop passes a packet of that socket without
 * the trie's walk only if the packet's (family, address, protocol, port)
 * and the current generation are exactly these: the memo of
 * cidr_allowed4/6() for those inputs, so it answers what the lookup would.
 * A single address (sluice_exact4/6) gets none: its lookup is one hash
 * probe, cheaper than the record's allocation at every connect.
 * TCP only: its connect hook runs under the socket lock, so the record is
 * never written by two connects at once (a UDP socket's connect is not
 * serialised, and sendmsg judges per call: UDP keeps the lookup).
 */
struct sluice_judged {
	__u32 daddr[4];     /* network byte order; IPv4 (and v4-mapped) in daddr[0] */
	__u32 gen_plus1;    /* generation + 1; 0: nothing judged */
	__u16 dport;        /* host byte order */
	__u8  family;       /* SLUICE_AF_INET or SLUICE_AF_INET6 */
	__u8  pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sluice_judged);
} sluice_sk_judged SEC(".maps");

/*
 * The sockets a reload is cutting right now (loader/flowcut.c): socket
 * cookie -> 1, written by the loader just before its SOCK_DESTROY and
 * deleted right after.  The egress backstop lets the bare RST of such a
 * socket out (judged_reset), which the peer must see, whatever the new
 * policy says of its destination.  Empty between reloads; no memory until
 * used.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SLUICE_CUT_BATCH);
	__type(key, __u64);
	__type(value, __u8);
} sluice_cut SEC(".maps");

/* sluice's own listeners (proxy, resolver): marked by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sluice_listener_mark);
} sluice_listener_sk SEC(".maps");

/* The sandbox's cgroup (index 0, set by the loader at attach): the LSM
 * programs are global and ask whether the calling task is under it. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sluice_cgroup SEC(".maps");

/* Sockets made inside the sandbox (lsm/socket_post_create). */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC | BPF_F_CLONE);
	__type(key, int);
	__type(value, struct sluice_sk_owner);
} sluice_sk_owner SEC(".maps");

/* `unix:` entries of the policy (both generations). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct sluice_unix_key);
	__type(value, __u32);
} sluice_unix_allow SEC(".maps");

/* Unix names refused without an event (glibc's NSS asks nscd on every
 * lookup; the sandbox's names go to its resolver): exact keys with
 * generation 0, set once by the loader (loader/sandbox.c). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8);
	__type(key, struct sluice_unix_key);
	__type(value, __u32);
} sluice_unix_quiet SEC(".maps");

/* Programs of the cidr entries with `programs:` (struct sluice_prog_key,
 * both generations); present: that entry allows that executable. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct sluice_prog_key);
	__type(value, __u32);
} sluice_prog_allow SEC(".maps");

/*
 * Redirected TCP flows, looked up (and deleted) by the proxy or the
 * resolver, and UDP DNS queries, looked up by the resolver.  Allocated on
 * demand (an idle sandbox holds no entry): an entry is deleted when it is
 * taken, when its socket is released without anyone to take it
 * (sluice_sock_release), and by the proxy's and resolver's sweep of
 * entries older than any accept (userspace/lib/flow.h).  Full, an insert
 * fails: that sandbox's next flow has no entry and its proxy refuses it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536); /* sized by the loader */
	__type(key, struct sluice_flow_key);
	__type(value, struct sluice_orig);
} sluice_flows SEC(".maps");

/* The sluice_flows key a socket's entry has (kernel-internal): written with
 * the entry (sockops, the backstop), read when the socket is released. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sluice_flow_key);
} sluice_sk_flow SEC(".maps");

/* Sequence number of the next event; gaps are exactly the lost events. */
__u64 sluice_seq = 0;

#endif /* SLUICE_MAPS_BPF_H */
