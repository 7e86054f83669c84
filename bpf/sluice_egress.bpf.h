/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice_egress.bpf.h - the packet helpers of the egress backstop
 * (cgroup_skb/egress in sluice.bpf.c, which includes this file once, after
 * the maps and the cidr and proxy/resolver address checks it uses): TCP
 * replies that pass, the upper-layer header of an IPv6 packet, and what a
 * socket's connect hook judged (sluice_sk_judged), and the reset of a
 * flow a reload cuts (sluice_cut).
 */
#ifndef SLUICE_EGRESS_BPF_H
#define SLUICE_EGRESS_BPF_H

/*
 * Replies on inbound TCP connections pass: a SYN-ACK without payload
 * (sent before the connection is accepted), and anything on a socket that
 * sockops marked PASSIVE.  Needs a full socket for the storage lookup.
 */
#define TCP_FLAG_SYN_ 0x02
#define TCP_FLAG_ACK_ 0x10

static __always_inline bool tcp_reply(struct __sk_buff *skb, __u32 l4off)
{
	struct bpf_sock *sk = skb->sk;
	struct sluice_orig *o;
	__u8 flags;

	if (bpf_skb_load_bytes(skb, l4off + 13, &flags, 1))
		return false;
	if ((flags & (TCP_FLAG_SYN_ | TCP_FLAG_ACK_)) == (TCP_FLAG_SYN_ | TCP_FLAG_ACK_))
		return true; /* a SYN-ACK answers a SYN someone else sent */
	if (!sk)
		return false;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return false;
	o = bpf_sk_storage_get(&sluice_sk_orig, sk, 0, 0);
	return o && (o->flags & SLUICE_ORIG_PASSIVE);
}

/*
 * The upper-layer header of an IPv6 packet (data at the network header):
 * skips the extension headers the sandbox's own stack puts first, at most
 * SLUICE_IP6_EXTS of them: Hop-by-Hop (0; the kernel adds one with a Jumbo
 * Payload option, RFC 2675, to every BIG TCP GSO packet over 64 KiB, kernel
 * 5.19+, as on loopback's 64 KiB MTU), routing (43), destination options
 * (60), each (hdr_ext_len + 1) * 8 bytes (RFC 8200 4.3-4.6).  Sets *proto
 * (in: the fixed header's next header) to the protocol found and returns
 * its offset; returns 0 with *proto still an extension header (a fragment,
 * 44, included) when it reaches none: the caller judges such a packet
 * without ports and drops it.
 */
#define SLUICE_IP6_EXTS 4
static __always_inline __u32 ip6_l4_offset(struct __sk_buff *skb, __u8 *proto)
{
	__u32 off = sizeof(struct ipv6hdr);
	__u8 nh = *proto;

#pragma unroll
	for (int i = 0; i < SLUICE_IP6_EXTS; i++) {
		__u8 h[2]; /* next header, hdr_ext_len */

		if (nh != 0 && nh != 43 && nh != 60)
			break;
		if (bpf_skb_load_bytes(skb, off, h, sizeof(h)))
			return 0;
		nh = h[0];
		off += ((__u32)h[1] + 1) * 8;
	}
	*proto = nh;
	return nh == 0 || nh == 43 || nh == 60 || nh == 44 ? 0 : off;
}

/* The packet's socket as a full socket (what sk storage takes), or NULL. */
static __always_inline struct bpf_sock *skb_fullsock(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	return sk ? bpf_sk_fullsock(sk) : NULL;
}

/* a == b for `family` (network byte order, IPv4 in [0] for SLUICE_AF_INET). */
static __always_inline bool same_addr(__u8 family, const __u32 *a, const __u32 *b)
{
	if (family == SLUICE_AF_INET)
		return a[0] == b[0];
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/* The backstop's memo: did this packet's socket connect to exactly this
 * TCP destination with the allowance of a cidr entry of the trie
 * (sluice_sk_judged) under generation `gen`?  `daddr`: network byte order,
 * IPv4 in [0] for SLUICE_AF_INET.  A generation without a trie for the
 * family has no such record to look for (the socket-storage lookup was a
 * fifth of the backstop's time on an allowed connect). */
static __always_inline bool judged_before(struct __sk_buff *skb, __u32 gen, __u8 family, const __u32 *daddr,
					  __u16 dport)
{
	struct bpf_sock *sk;
	struct sluice_judged *j;

	if (!(gen_flags(gen) & (family == SLUICE_AF_INET ? SLUICE_GEN_PREFIX4 : SLUICE_GEN_PREFIX6)))
		return false;
	sk = skb_fullsock(skb);
	if (!sk)
		return false;
	j = bpf_sk_storage_get(&sluice_sk_judged, sk, 0, 0);
	if (!j || !j->gen_plus1 || j->gen_plus1 != gen + 1 || j->family != family || j->dport != dport)
		return false;
	return same_addr(family, j->daddr, daddr);
}

/*
 * A bare RST (no payload) of a socket a reload is cutting right now (its
 * cookie in sluice_cut, written by loader/flowcut.c just before its
 * SOCK_DESTROY; the kernel sends the RST within that request, after the
 * switch to the new policy), which the peer must see.  It carries nothing
 * of the sandbox's.
 */
#define TCP_FLAG_RST_ 0x04
static __always_inline bool judged_reset(struct __sk_buff *skb, __u32 l4off)
{
	__u8 th[2]; /* data offset, flags: bytes 12 and 13 of the TCP header */
	__u64 cookie;

	if (bpf_skb_load_bytes(skb, l4off + 12, th, sizeof(th)) || !(th[1] & TCP_FLAG_RST_) ||
	    skb->len != l4off + (__u32)(th[0] >> 4) * 4)
		return false;
	cookie = bpf_get_socket_cookie(skb);
	return cookie && bpf_map_lookup_elem(&sluice_cut, &cookie) != NULL;
}

/*
 * A UDP packet to the resolver: when its socket's query was redirected there
 * by the connect or sendmsg hook (sluice_sk_orig with SLUICE_ORIG_DNS; the
 * hooks run before the kernel picks a connected socket's source port, this
 * program after), record the server the client asked and who asked in the
 * flow map under the source address and port the resolver will see
 * (protocol SLUICE_FLOW_UDP, netns cookie 0), for its query line.  A query
 * of a socket that was not redirected removes what an earlier socket on
 * that port left.  The entry's time is the query's; the socket keeps the
 * key, and its release removes the entry.  Never refuses anything:
 * attribution only.
 */
static __always_inline void dns_asked(struct __sk_buff *skb, __u8 family, const __u32 *saddr, __u16 sport)
{
	struct sluice_flow_key key = {};
	struct bpf_sock *sk = skb_fullsock(skb);
	struct sluice_orig *o = NULL;

	if (sk)
		o = bpf_sk_storage_get(&sluice_sk_orig, sk, 0, 0);
	key.family = family;
	key.protocol = SLUICE_FLOW_UDP;
	key.sport = sport;
	key.saddr[0] = saddr[0];
	key.saddr[1] = saddr[1];
	key.saddr[2] = saddr[2];
	key.saddr[3] = saddr[3];
	if (o && (o->flags & SLUICE_ORIG_DNS)) {
		/* the entry's age is the last query's, for the sweep */
		o->ts_ns = bpf_ktime_get_boot_ns();
		flow_put(sk, &key, o);
	} else {
		bpf_map_delete_elem(&sluice_flows, &key);
	}
}

#endif
