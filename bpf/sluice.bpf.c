// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice.bpf.c - the egress filter attached to one sandbox's cgroup v2.
 * Rule semantics, with worked examples, are in sluice.h.  Every program and
 * map carries the "sluice_" prefix so `bpftool prog show` reads well.
 *
 * Kernel: cgroup sock_addr hooks 4.17+, sendmsg 4.18+, recvmsg 5.2+,
 * getpeername 5.8+, sk_storage in sock_addr 5.10+ (cgroup ctx), netns
 * cookie in sockops 5.15+, bpf_set_retval 5.18+ (probed, see have_set_retval).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "sluice.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define EPERM 1
/* The BPF LSM programs' verdicts: 0 lets the operation go on, -errno
 * refuses it (the cgroup programs return SYS_PROCEED / SYS_REJECT, sluice.h). */
#define LSM_PROCEED 0
#define LSM_REJECT  (-EPERM)
#define AF_UNIX_    1
#define AF_NETLINK_ 16
#define NETLINK_ROUTE_     0
#define NETLINK_SOCK_DIAG_ 4
#define SOCK_STREAM_ 1
#define SOCK_DGRAM_  2
#define SOCK_RAW_    3
#define IPPROTO_ICMP_   1
#define IPPROTO_ICMPV6_ 58
#define ETH_P_IP_   0x0800
#define ETH_P_IPV6_ 0x86DD

const volatile struct sluice_bpf_config sluice_cfg = {};

#include "sluice_maps.bpf.h"

/* Wake the consumer only once this much is queued (batched wakeups); it
 * also polls with a short timeout, so nothing waits longer than that. */
#define SLUICE_WAKEUP_BYTES (64 * sizeof(struct sluice_event))

struct verdict_ctx {
	__u32 daddr[4];   /* network byte order */
	__u16 dport;      /* host byte order */
	__u8  family;
	__u8  protocol;
	__u8  sock_type;
	__u16 hook;
	__u16 reason;
	__u8  trie;       /* the cidr verdict came from the trie of prefixes (not a single address) */
};

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&sluice_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline __u32 current_gen(void)
{
	__u32 zero = 0;
	struct sluice_state *st = bpf_map_lookup_elem(&sluice_state, &zero);

	/* volatile: read the generation exactly once per decision */
	return st ? *(volatile __u32 *)&st->gen : 0;
}

/* The SLUICE_GEN_* flags of generation `gen` (its bank of sluice_genconf). */
static __always_inline __u32 gen_flags(__u32 gen)
{
	__u32 idx = gen & 1;
	struct sluice_genconf *gc = bpf_map_lookup_elem(&sluice_genconf, &idx);

	return gc ? gc->flags : 0;
}

static __always_inline bool gen_audit(__u32 gen)
{
	return gen_flags(gen) & SLUICE_GEN_AUDIT;
}

/*
 * Read ctx->user_port through a volatile 32-bit load: the field is __u32 in
 * the UAPI but only the low 16 bits are the port (network order), and older
 * verifiers reject narrower loads of it (see cilium bpf/bpf_sock.c).
 */
static __always_inline __u16 ctx_port(const struct bpf_sock_addr *ctx)
{
	volatile __u32 port = ctx->user_port;

	return bpf_ntohs((__u16)port);
}

static __always_inline void ctx_set_port(struct bpf_sock_addr *ctx, __u16 port_host)
{
	ctx->user_port = bpf_htons(port_host);
}

static __always_inline bool is_v4mapped(const __u32 a[4])
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0x0000ffff);
}

/*
 * The one IPv6 address copy between the program's own memory (stack, map
 * values, socket storage, ring-buffer records): four 32-bit words, network
 * byte order.  Copies from or to the context (ctx->user_ip6,
 * skops->local_ip6) are written out word by word instead: the verifier
 * takes only fixed-offset loads and stores of the context pointer itself,
 * and clang, given the copy as a unit, computes a pointer into the context
 * ("dereference of modified ctx ptr").
 */
static __always_inline void addr6_copy(__u32 *dst, const volatile __u32 *src)
{
	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	dst[3] = src[3];
}

static __always_inline bool addr6_eq(const __u32 *a, const volatile __u32 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/* Is (addr, port) the sandbox's resolver (`dns`) or proxy address?  See
 * sluice_cfg_addr4/6() in sluice.h, the one check the loader shares. */
static __always_inline bool sluice_addr4(bool dns, __u32 addr, __u16 port)
{
	return sluice_cfg_addr4(&sluice_cfg, dns, addr, port);
}

static __always_inline bool sluice_addr6(bool dns, const __u32 a[4], __u16 port)
{
	return sluice_cfg_addr6(&sluice_cfg, dns, a, port);
}

#include "sluice_cidr.bpf.h"

static __always_inline bool port_proxied(__u32 gen, __u16 port)
{
	__u32 idx = (gen & 1) * SLUICE_PORT_WORDS + (port >> 5);
	__u32 *w = bpf_map_lookup_elem(&sluice_proxy_ports, &idx);

	return w && (*w & (1u << (port & 31)));
}

/* A count of sluice_ring_budget, read as signed (sluice.h: a consumer
 * killed mid-record can leave it a record low, never wrapped). */
static __always_inline __u64 budget_read(const __u64 *v)
{
	__s64 n = (__s64)*(volatile const __u64 *)v;

	return n > 0 ? (__u64)n : 0;
}

/*
 * Take `bytes` of the ring buffer for this sandbox's next record, by the
 * budget of sluice.h ("The event ring buffer's budget"): within its share,
 * or while the ring's total is within the pool.  Returns 1, or 0: no room
 * for it, the record is lost and counted.  Global functions, these two:
 * verified once, not at each of the places a program emits an event.
 */
__noinline int sluice_ring_take(__u64 bytes)
{
	__u32 kt = SLUICE_RING_TOTAL, kp = SLUICE_RING_POOL, ks = SLUICE_RING_SHARE;
	__u32 km = SLUICE_RING_SLOT0 + sluice_cfg.ring_slot;
	__u64 *total = bpf_map_lookup_elem(&sluice_ring_budget, &kt);
	__u64 *pool = bpf_map_lookup_elem(&sluice_ring_budget, &kp);
	__u64 *share = bpf_map_lookup_elem(&sluice_ring_budget, &ks);
	__u64 *mine = bpf_map_lookup_elem(&sluice_ring_budget, &km);

	if (!total || !pool || !share || !mine)
		return 0;
	if (budget_read(mine) + bytes > *share && budget_read(total) + bytes > *pool)
		return 0;
	__sync_fetch_and_add(mine, bytes);
	__sync_fetch_and_add(total, bytes);
	return 1;
}

/* Give back what sluice_ring_take() took for a record never reserved. */
__noinline int sluice_ring_give(__u64 bytes)
{
	__u32 kt = SLUICE_RING_TOTAL, km = SLUICE_RING_SLOT0 + sluice_cfg.ring_slot;
	__u64 *total = bpf_map_lookup_elem(&sluice_ring_budget, &kt);
	__u64 *mine = bpf_map_lookup_elem(&sluice_ring_budget, &km);

	if (mine)
		__sync_fetch_and_add(mine, -bytes);
	if (total)
		__sync_fetch_and_add(total, -bytes);
	return 0;
}

/*
 * One ring-buffer record for a denial.  `skb` is NULL in the socket hooks
 * (task context: the current task's pid, uid and comm are recorded) and
 * the packet in the egress backstop (softirq context possible: no task
 * fields, the cgroup comes from the packet's socket).
 */
static __always_inline void emit_event(struct verdict_ctx *v, __u8 verdict, __u64 cookie, struct __sk_buff *skb,
				       const struct sluice_unix_key *u)
{
	struct sluice_event *e;
	__u64 seq = __sync_fetch_and_add(&sluice_seq, 1);
	__u64 flags, avail;
	/* a unix denial carries the name the client asked for (struct sluice_event_unix) */
	__u64 size = u ? sizeof(struct sluice_event_unix) : sizeof(*e);
	int took = sluice_ring_take(SLUICE_RING_RECORD_BYTES(size));

	e = took ? bpf_ringbuf_reserve(&sluice_events, size, 0) : NULL;
	if (!e) {
		/* the verdict never depends on room in the ring buffer */
		if (took)
			sluice_ring_give(SLUICE_RING_RECORD_BYTES(size));
		stat_inc(SLUICE_STAT_EVENTS_LOST);
		return;
	}
	e->ts_ns = bpf_ktime_get_boot_ns();
	e->seq = seq;
	e->sock_cookie = cookie;
	if (skb) {
		e->cgroup_id = bpf_skb_cgroup_id(skb);
		e->pid = 0;
		e->tid = 0;
		e->uid = 0;
		__builtin_memset(e->comm, 0, sizeof(e->comm));
		e->exe_dev = 0;
		e->exe_ino = 0;
	} else {
		__u64 pid_tgid = bpf_get_current_pid_tgid();

		e->cgroup_id = bpf_get_current_cgroup_id();
		e->pid = pid_tgid >> 32;
		e->tid = (__u32)pid_tgid;
		e->uid = (__u32)bpf_get_current_uid_gid();
		bpf_get_current_comm(e->comm, sizeof(e->comm));
		current_exe(&e->exe_dev, &e->exe_ino);
	}
	e->pad2 = 0;
	e->hook = v->hook;
	e->reason = v->reason;
	addr6_copy(e->daddr, v->daddr);
	e->dport = v->dport;
	e->family = v->family;
	e->protocol = v->protocol;
	e->verdict = verdict;
	e->sock_type = v->sock_type;
	e->pad = 0;
	e->ring_slot = sluice_cfg.ring_slot;
	e->reserved = 0;
	if (u) {
		struct sluice_event_unix *eu = (struct sluice_event_unix *)e;

		eu->kind = u->kind;
		eu->pad[0] = eu->pad[1] = eu->pad[2] = eu->pad[3] = eu->pad[4] = eu->pad[5] = 0;
		if (u->kind == SLUICE_UNIX_KIND_ABSTRACT) {
			eu->len = u->b[0];
			__builtin_memcpy(eu->name, &u->b[1], sizeof(eu->name));
		} else {
			eu->len = (__u8)(u->prefixlen / 8 - 6);
			__builtin_memcpy(eu->name, u->b, sizeof(eu->name));
		}
	}

	/* wake the consumer once, when the backlog crosses the threshold (an
	 * edge, not a level: under a flood a level would raise an interrupt
	 * for every event); it polls every 100 ms for the rest */
	avail = bpf_ringbuf_query(&sluice_events, BPF_RB_AVAIL_DATA);
	flags = avail >= SLUICE_WAKEUP_BYTES && avail < SLUICE_WAKEUP_BYTES + 2 * sizeof(*e) ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

/*
 * Deny (or, in audit mode, let through and report "would deny").  Returns
 * the value the program must return.  `always` marks reasons no policy can
 * allow: they are refused in audit mode too.
 */
static __always_inline int deny_u(struct verdict_ctx *v, __u32 gen, __u64 cookie, bool always,
				  const struct sluice_unix_key *u)
{
	if (!always && gen_audit(gen)) {
		stat_inc(SLUICE_STAT_WOULD_DENY);
		emit_event(v, SLUICE_VERDICT_WOULD_DENY, cookie, NULL, u);
		return SYS_PROCEED;
	}
	stat_inc(SLUICE_STAT_DENIED);
	emit_event(v, SLUICE_VERDICT_DENY, cookie, NULL, u);
	if (sluice_cfg.have_set_retval)
		bpf_set_retval(-EPERM);
	return SYS_REJECT;
}

static __always_inline int deny(struct verdict_ctx *v, __u32 gen, __u64 cookie, bool always)
{
	return deny_u(v, gen, cookie, always, NULL);
}

#include "sluice_connect.bpf.h"

SEC("cgroup/connect4")
int sluice_connect4(struct bpf_sock_addr *ctx)
{
	return handle4(ctx, SLUICE_HOOK_CONNECT4);
}

SEC("cgroup/connect6")
int sluice_connect6(struct bpf_sock_addr *ctx)
{
	return handle6(ctx, SLUICE_HOOK_CONNECT6);
}

SEC("cgroup/sendmsg4")
int sluice_sendmsg4(struct bpf_sock_addr *ctx)
{
	return handle4(ctx, SLUICE_HOOK_SENDMSG4);
}

SEC("cgroup/sendmsg6")
int sluice_sendmsg6(struct bpf_sock_addr *ctx)
{
	return handle6(ctx, SLUICE_HOOK_SENDMSG6);
}

/*
 * recvmsg/getpeername: a reply from the resolver (or a peer that is the
 * proxy) is shown as coming from the address the client asked for, so stub
 * resolvers accept it.  These hooks cannot deny; they always return SYS_PROCEED.
 */
static __always_inline void restore4(struct bpf_sock_addr *ctx)
{
	struct sluice_orig *o;
	__u32 addr = ctx->user_ip4;
	__u16 port = ctx_port(ctx);

	if (!(sluice_addr4(true, addr, port) || sluice_addr4(false, addr, port)) || !ctx->sk)
		return;
	o = bpf_sk_storage_get(&sluice_sk_orig, ctx->sk, 0, 0);
	if (!o || o->family != SLUICE_AF_INET || !(o->flags & (SLUICE_ORIG_DNS | SLUICE_ORIG_REDIRECTED)))
		return;
	ctx->user_ip4 = o->daddr[0];
	ctx_set_port(ctx, o->dport);
}

static __always_inline void restore6(struct bpf_sock_addr *ctx)
{
	struct sluice_orig *o;
	__u32 a[4];
	__u16 port = ctx_port(ctx);
	bool match;

	a[0] = ctx->user_ip6[0];
	a[1] = ctx->user_ip6[1];
	a[2] = ctx->user_ip6[2];
	a[3] = ctx->user_ip6[3];
	if (is_v4mapped(a))
		match = sluice_addr4(true, a[3], port) || sluice_addr4(false, a[3], port);
	else
		match = sluice_addr6(true, a, port) || sluice_addr6(false, a, port);
	if (!match || !ctx->sk)
		return;
	o = bpf_sk_storage_get(&sluice_sk_orig, ctx->sk, 0, 0);
	if (!o || !(o->flags & (SLUICE_ORIG_DNS | SLUICE_ORIG_REDIRECTED)))
		return;
	if (o->family == SLUICE_AF_INET) {
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0x0000ffff);
		ctx->user_ip6[3] = o->daddr[0];
	} else {
		ctx->user_ip6[0] = o->daddr[0];
		ctx->user_ip6[1] = o->daddr[1];
		ctx->user_ip6[2] = o->daddr[2];
		ctx->user_ip6[3] = o->daddr[3];
	}
	ctx_set_port(ctx, o->dport);
}

SEC("cgroup/recvmsg4")
int sluice_recvmsg4(struct bpf_sock_addr *ctx)
{
	restore4(ctx);
	return SYS_PROCEED;
}

SEC("cgroup/recvmsg6")
int sluice_recvmsg6(struct bpf_sock_addr *ctx)
{
	restore6(ctx);
	return SYS_PROCEED;
}

SEC("cgroup/getpeername4")
int sluice_getpeername4(struct bpf_sock_addr *ctx)
{
	restore4(ctx);
	return SYS_PROCEED;
}

SEC("cgroup/getpeername6")
int sluice_getpeername6(struct bpf_sock_addr *ctx)
{
	restore6(ctx);
	return SYS_PROCEED;
}

/*
 * sock_create: only TCP and UDP sockets over IPv4/IPv6.  Raw sockets, ICMP
 * "ping" sockets, SCTP, MPTCP, UDP-Lite and anything else are refused, in
 * audit mode too (no policy can allow them).
 */
SEC("cgroup/sock_create")
int sluice_sock_create(struct bpf_sock *ctx)
{
	struct verdict_ctx v = {};
	__u32 type = ctx->type;
	__u32 proto = ctx->protocol;

	if ((type == SOCK_STREAM_ && proto == SLUICE_IPPROTO_TCP) ||
	    (type == SOCK_DGRAM_ && proto == SLUICE_IPPROTO_UDP))
		return SYS_PROCEED;
	v.family = ctx->family;
	v.protocol = proto;
	v.sock_type = type;
	v.hook = SLUICE_HOOK_SOCK_CREATE;
	if (type == SOCK_RAW_)
		v.reason = SLUICE_REASON_SOCK_RAW;
	else if (proto == IPPROTO_ICMP_ || proto == IPPROTO_ICMPV6_)
		v.reason = SLUICE_REASON_SOCK_ICMP;
	else
		v.reason = SLUICE_REASON_SOCK_PROTO;
	return deny(&v, current_gen(), 0, true);
}

/*
 * Put o into the flow map under key for the proxy or the resolver to take,
 * and keep key in sk's storage so that sluice_sock_release can remove an
 * entry no one took.  sk: the socket whose flow it is (a full socket).
 */
static __always_inline void flow_put(struct bpf_sock *sk, const struct sluice_flow_key *key,
				     const struct sluice_orig *o)
{
	struct sluice_flow_key *mine;

	if (bpf_map_update_elem(&sluice_flows, key, o, BPF_ANY) != 0)
		return;
	mine = bpf_sk_storage_get(&sluice_sk_flow, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (mine)
		*mine = *key;
}

/*
 * sockops: at TCP_CONNECT time the client's local port is known; copy the
 * original destination of a redirected (or explicit-proxy, or DNS-over-TCP
 * redirected) socket into the flow map under the key the proxy (or the
 * resolver) will see in accept().  It never refuses:
 * every path returns SYS_PROCEED.
 */
SEC("sockops")
int sluice_sockops(struct bpf_sock_ops *skops)
{
	struct sluice_flow_key key = {};
	struct sluice_orig *o;
	struct bpf_sock *sk;

	sk = skops->sk;
	if (!sk)
		return SYS_PROCEED;
	if (skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB) {
		/* an inbound connection the sandbox accepted: the egress filter
		 * does not judge replies to connections others initiated */
		o = bpf_sk_storage_get(&sluice_sk_orig, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (o)
			o->flags |= SLUICE_ORIG_PASSIVE;
		return SYS_PROCEED;
	}
	if (skops->op != BPF_SOCK_OPS_TCP_CONNECT_CB)
		return SYS_PROCEED;
	o = bpf_sk_storage_get(&sluice_sk_orig, sk, 0, 0);
	if (!o || !(o->flags & (SLUICE_ORIG_REDIRECTED | SLUICE_ORIG_EXPLICIT | SLUICE_ORIG_DNS)))
		return SYS_PROCEED;
	key.netns_cookie = bpf_get_netns_cookie(skops);
	key.sport = (__u16)skops->local_port; /* host byte order in sock_ops */
	if (skops->family == SLUICE_AF_INET) {
		key.family = SLUICE_AF_INET;
		key.saddr[0] = skops->local_ip4;
	} else {
		__u32 a[4];

		a[0] = skops->local_ip6[0];
		a[1] = skops->local_ip6[1];
		a[2] = skops->local_ip6[2];
		a[3] = skops->local_ip6[3];
		if (is_v4mapped(a)) {
			key.family = SLUICE_AF_INET;
			key.saddr[0] = a[3];
		} else {
			key.family = SLUICE_AF_INET6;
			addr6_copy(key.saddr, a);
		}
	}
	flow_put(sk, &key, o);
	return SYS_PROCEED;
}

/*
 * sock_release (5.9): a sandbox socket is closed for the last time.  Remove
 * the flow map entry it made that no one will take: a UDP socket's DNS
 * query entry (the resolver reads it as the query arrives), and a TCP
 * connect that never reached an accept queue (released in SYN_SENT, or
 * refused: CLOSE).  A connection that did reach the proxy or the resolver
 * keeps its entry for them to take, even if the client is gone before the
 * accept.  Never refuses (a release cannot be).
 */
SEC("cgroup/sock_release")
int sluice_sock_release(struct bpf_sock *ctx)
{
	struct sluice_flow_key *key = bpf_sk_storage_get(&sluice_sk_flow, ctx, 0, 0);

	if (!key)
		return SYS_PROCEED;
	if (key->protocol == SLUICE_FLOW_UDP || ctx->state == BPF_TCP_SYN_SENT || ctx->state == BPF_TCP_CLOSE)
		bpf_map_delete_elem(&sluice_flows, key);
	return SYS_PROCEED;
}

/*
 * cgroup_skb/egress backstop: drop any packet of the sandbox whose
 * destination none of the rules allows (proxy, resolver, cidr entries).
 * The hooks above should make this unreachable; it is defence in depth
 * against paths that skip them.  Data starts at the network header.
 */
static __always_inline bool egress_allowed4(__u32 gen, __u32 daddr, __u8 proto, __u16 dport)
{
	return cidr_allowed4(gen, daddr, proto, dport) || sluice_addr4(true, daddr, dport) ||
	       (proto == SLUICE_IPPROTO_TCP && sluice_addr4(false, daddr, dport));
}

#include "sluice_egress.bpf.h"

SEC("cgroup_skb/egress")
int sluice_skb_egress(struct __sk_buff *skb)
{
	struct verdict_ctx v = {};
	__u32 gen = current_gen();
	__u16 ports[2] = {};
	__u32 l4off = 0;
	bool ok = false;

	if (skb->protocol == bpf_htons(ETH_P_IP_)) {
		struct iphdr iph;

		if (bpf_skb_load_bytes(skb, 0, &iph, sizeof(iph)))
			goto drop;
		v.family = SLUICE_AF_INET;
		v.protocol = iph.protocol;
		v.daddr[0] = iph.daddr;
		if ((iph.protocol == SLUICE_IPPROTO_TCP || iph.protocol == SLUICE_IPPROTO_UDP) &&
		    !(iph.frag_off & bpf_htons(0x1fff))) {
			l4off = iph.ihl * 4;
			if (bpf_skb_load_bytes(skb, l4off, ports, sizeof(ports)))
				goto drop;
			v.dport = bpf_ntohs(ports[1]);
		}
		ok = (l4off && iph.protocol == SLUICE_IPPROTO_TCP &&
		      judged_before(skb, gen, SLUICE_AF_INET, v.daddr, v.dport)) ||
		     egress_allowed4(gen, iph.daddr, iph.protocol, v.dport);
		if (ok && l4off && iph.protocol == SLUICE_IPPROTO_UDP && sluice_addr4(true, iph.daddr, v.dport)) {
			__u32 s4[4] = { iph.saddr, 0, 0, 0 };

			dns_asked(skb, SLUICE_AF_INET, s4, bpf_ntohs(ports[0]));
		}
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6_)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, 0, &ip6, sizeof(ip6)))
			goto drop;
		v.family = SLUICE_AF_INET6;
		v.protocol = ip6.nexthdr;
		__builtin_memcpy(v.daddr, &ip6.daddr, 16);
		l4off = ip6_l4_offset(skb, &v.protocol);
		if (l4off && (v.protocol == SLUICE_IPPROTO_TCP || v.protocol == SLUICE_IPPROTO_UDP)) {
			if (bpf_skb_load_bytes(skb, l4off, ports, sizeof(ports)))
				goto drop;
			v.dport = bpf_ntohs(ports[1]);
		} else {
			l4off = 0;
		}
		if (is_v4mapped(v.daddr)) {
			__u32 a4[4] = { v.daddr[3], 0, 0, 0 };

			ok = (l4off && v.protocol == SLUICE_IPPROTO_TCP &&
			      judged_before(skb, gen, SLUICE_AF_INET, a4, v.dport)) ||
			     egress_allowed4(gen, v.daddr[3], v.protocol, v.dport);
		} else {
			ok = (l4off && v.protocol == SLUICE_IPPROTO_TCP &&
			      judged_before(skb, gen, SLUICE_AF_INET6, v.daddr, v.dport)) ||
			     cidr_allowed6(gen, v.daddr, v.protocol, v.dport) || sluice_addr6(true, v.daddr, v.dport) ||
			     (v.protocol == SLUICE_IPPROTO_TCP && sluice_addr6(false, v.daddr, v.dport));
			if (ok && l4off && v.protocol == SLUICE_IPPROTO_UDP && sluice_addr6(true, v.daddr, v.dport)) {
				__u32 s6[4];

				__builtin_memcpy(s6, &ip6.saddr, 16);
				dns_asked(skb, SLUICE_AF_INET6, s6, bpf_ntohs(ports[0]));
			}
		}
	} else {
		goto drop;
	}
	if (ok)
		return SYS_PROCEED;
	if (v.protocol == SLUICE_IPPROTO_TCP && l4off && tcp_reply(skb, l4off))
		return SYS_PROCEED;
	if (v.protocol == SLUICE_IPPROTO_TCP && l4off && judged_reset(skb, l4off))
		return SYS_PROCEED;
drop:
	if (gen_audit(gen))
		return SYS_PROCEED;
	stat_inc(SLUICE_STAT_BACKSTOP);
	stat_inc(SLUICE_STAT_DENIED);
	v.hook = SLUICE_HOOK_SKB_EGRESS;
	v.reason = SLUICE_REASON_BACKSTOP;
	emit_event(&v, SLUICE_VERDICT_DENY, bpf_get_socket_cookie(skb), skb, NULL);
	return SYS_REJECT;
}

#include "sluice_lsm.bpf.h"

/* A refusal from an LSM program: counted, one event, -EPERM (no
 * bpf_set_retval here: the hook's return value is the errno). */
static __always_inline int lsm_deny(struct verdict_ctx *v)
{
	stat_inc(SLUICE_STAT_DENIED);
	emit_event(v, SLUICE_VERDICT_DENY, 0, NULL, NULL);
	return LSM_REJECT;
}

/* connect() or send on an inet socket made outside the sandbox. */
static __always_inline int judge_inet_use(struct socket *sock, struct sockaddr *sa, __u16 hook)
{
	struct verdict_ctx v = {};
	struct sock *sk = sock->sk;   /* a BTF pointer: what sk_storage_get takes */
	__u16 fam;

	if (!sk || !in_sandbox())
		return LSM_PROCEED;
	fam = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (fam != SLUICE_AF_INET && fam != SLUICE_AF_INET6)
		return LSM_PROCEED;
	if (sk_ours(sk))
		return LSM_PROCEED;
	lsm_peer(&v, sk, sa);
	v.protocol = BPF_CORE_READ(sk, sk_protocol);
	v.sock_type = BPF_CORE_READ(sk, sk_type);
	v.hook = hook;
	v.reason = SLUICE_REASON_FOREIGN_SOCKET;
	return lsm_deny(&v);
}

SEC("lsm/socket_post_create")
int BPF_PROG(sluice_lsm_post_create, struct socket *sock, int family, int type, int protocol, int kern, int ret)
{
	struct sluice_sk_owner *o;
	struct sock *sk;

	if (ret || kern || !in_sandbox())
		return ret;
	sk = sock->sk;
	if (!sk)
		return LSM_PROCEED;
	o = bpf_sk_storage_get(&sluice_sk_owner, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (o)
		o->cgroup_id = bpf_get_current_cgroup_id();
	return LSM_PROCEED;
}

/* May the policy's generation `gen` make sockets of `family` (families:)? */
static __always_inline bool gen_family(__u32 gen, int family)
{
	__u32 idx = gen & 1;
	struct sluice_genconf *gc = bpf_map_lookup_elem(&sluice_genconf, &idx);

	return gc && family >= 0 && family < 64 && (gc->families & (1ULL << family));
}

/* socket(): unix, inet, inet6 and netlink route/sock_diag, and the
 * families the policy names (the same rule as sluice_policy_allows_family()
 * and sluice run's seccomp filter). */
SEC("lsm/socket_create")
int BPF_PROG(sluice_lsm_socket_create, int family, int type, int protocol, int kern, int ret)
{
	struct verdict_ctx v = {};

	if (ret || kern || !in_sandbox())
		return ret;
	if (family == AF_UNIX_ || family == SLUICE_AF_INET || family == SLUICE_AF_INET6)
		return LSM_PROCEED;
	if (family == AF_NETLINK_ && (protocol == NETLINK_ROUTE_ || protocol == NETLINK_SOCK_DIAG_))
		return LSM_PROCEED;
	if (gen_family(current_gen(), family))
		return LSM_PROCEED;
	v.family = family;
	v.protocol = protocol;
	v.sock_type = type;
	v.hook = SLUICE_HOOK_LSM_CREATE;
	v.reason = SLUICE_REASON_SOCKET_FAMILY;
	return lsm_deny(&v);
}

SEC("lsm/socket_connect")
int BPF_PROG(sluice_lsm_connect, struct socket *sock, struct sockaddr *address, int addrlen, int ret)
{
	if (ret)
		return ret;
	return judge_inet_use(sock, address, SLUICE_HOOK_LSM_CONNECT);
}

SEC("lsm/socket_sendmsg")
int BPF_PROG(sluice_lsm_sendmsg, struct socket *sock, struct msghdr *msg, int size, int ret)
{
	if (ret)
		return ret;
	return judge_inet_use(sock, BPF_CORE_READ(msg, msg_name), SLUICE_HOOK_LSM_SENDMSG);
}

/* A unix connect or datagram to `other`: only to sockets made inside, or
 * bound to a name a `unix:` entry names. */
static __always_inline int judge_unix(struct sock *other)
{
	struct verdict_ctx v = {};

	if (!in_sandbox() || sk_ours(other) || (other && peer_name_allowed(other)))
		return LSM_PROCEED;
	v.family = AF_UNIX_;
	v.sock_type = other ? BPF_CORE_READ(other, sk_type) : 0;
	v.hook = SLUICE_HOOK_LSM_UNIX;
	v.reason = SLUICE_REASON_UNIX_OUTSIDE;
	return lsm_deny(&v);
}

SEC("lsm/unix_stream_connect")
int BPF_PROG(sluice_lsm_unix_connect, struct sock *sock, struct sock *other, struct sock *newsk, int ret)
{
	if (ret)
		return ret;
	return judge_unix(other);
}

SEC("lsm/unix_may_send")
int BPF_PROG(sluice_lsm_unix_send, struct socket *sock, struct socket *other, int ret)
{
	if (ret)
		return ret;
	return judge_unix(other->sk);
}

/*
 * cgroup/connect_unix and cgroup/sendmsg_unix (kernel 6.7+): a unix
 * connect or an addressed send of a socket made inside the sandbox is
 * allowed only to a path or abstract name a `unix:` entry names (map
 * sluice_unix_allow, see struct sluice_unix_key).  libbpf 1.1 has no
 * section names for them: the loader sets the attach types
 * (BPF_CGROUP_UNIX_CONNECT, _SENDMSG) before the load.  The address is
 * read through the kernel context (bpf_cast_to_kern_ctx, 6.2+).
 */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

static __always_inline int judge_unix_addr(struct bpf_sock_addr *ctx, __u16 hook)
{
	struct bpf_sock_addr_kern *k = bpf_cast_to_kern_ctx(ctx);
	struct sluice_unix_key key = {};
	struct verdict_ctx v = {};
	__u8 raw[108] = {};
	__u32 gen = current_gen(), len;

	len = BPF_CORE_READ(k, uaddrlen);
	if (len > 2 + sizeof(raw))
		len = 2 + sizeof(raw);
	len = len > 2 ? len - 2 : 0;  /* bytes of sun_path the client passed */
	if (bpf_probe_read_kernel(raw, sizeof(raw), (void *)BPF_CORE_READ(k, uaddr) + 2))
		goto refuse;
	unix_key_build(&key, raw, len, gen);
	if (bpf_map_lookup_elem(&sluice_unix_allow, &key)) {
		stat_inc(SLUICE_STAT_ALLOWED);
		return SYS_PROCEED;
	}
	key.gen = 0;
	if (bpf_map_lookup_elem(&sluice_unix_quiet, &key)) {
		/* refused, counted, no event (not a denial line: lines + losses = denials holds) */
		stat_inc(SLUICE_STAT_UNIX_QUIET);
		if (sluice_cfg.have_set_retval)
			bpf_set_retval(-EPERM);
		return SYS_REJECT;
	}
	key.gen = gen;
refuse:
	v.family = AF_UNIX_;
	v.sock_type = ctx->type;
	v.hook = hook;
	v.reason = SLUICE_REASON_UNIX_NOT_ALLOWED;
	return deny_u(&v, gen, bpf_get_socket_cookie(ctx), false, &key);
}

SEC("cgroup/connect4")
int sluice_connect_unix(struct bpf_sock_addr *ctx)
{
	return judge_unix_addr(ctx, SLUICE_HOOK_CONNECT_UNIX);
}

SEC("cgroup/connect4")
int sluice_sendmsg_unix(struct bpf_sock_addr *ctx)
{
	return judge_unix_addr(ctx, SLUICE_HOOK_SENDMSG_UNIX);
}
