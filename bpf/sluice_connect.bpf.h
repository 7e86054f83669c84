/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice_connect.bpf.h - the socket-address hooks' path (connect4/6,
 * sendmsg4/6 in sluice.bpf.c, which includes this file once, after the
 * cidr verdicts and the event helpers): the decision for a destination,
 * the original destination kept for the proxy and the resolver, the
 * backstop's memo, and the rewrite to the proxy or the resolver.
 */
#ifndef SLUICE_CONNECT_BPF_H
#define SLUICE_CONNECT_BPF_H


static __always_inline void remember(struct bpf_sock_addr *ctx, struct verdict_ctx *v, __u8 flags)
{
	struct sluice_orig *o;
	__u64 pid_tgid;

	if (!ctx->sk)
		return;
	o = bpf_sk_storage_get(&sluice_sk_orig, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return;
	pid_tgid = bpf_get_current_pid_tgid();
	o->cgroup_id = bpf_get_current_cgroup_id();
	o->sock_cookie = bpf_get_socket_cookie(ctx);
	o->ts_ns = bpf_ktime_get_boot_ns();
	addr6_copy(o->daddr, v->daddr);
	o->dport = v->dport;
	o->family = v->family;
	o->flags = flags;
	o->pid = pid_tgid >> 32;
	o->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(o->comm, sizeof(o->comm));
	/* the proxy judges host/url entries with `programs:` by it */
	current_exe(&o->exe_dev, &o->exe_ino);
}

/*
 * The IPv4 decision, shared by connect4, sendmsg4 and the v4-mapped case of
 * connect6 and sendmsg6.  Returns a D_* decision; on D_DENY, v->reason says why.
 */
enum { D_ALLOW, D_REDIRECT_PROXY, D_REDIRECT_DNS, D_EXPLICIT, D_DIRECT_DNS, D_DENY };

/*
 * The decision both families share, once the family-specific facts are
 * known: is the destination in a cidr entry, is it the sandbox's resolver,
 * is it the sandbox's proxy.  Returns a D_* decision; on D_DENY,
 * v->reason says why.
 */
static __always_inline int decide(__u32 gen, struct verdict_ctx *v, int in_cidr, bool is_dns, bool is_proxy)
{
	/* sluice's own addresses first: a cidr entry that happens to cover
	 * them does not skip the check that the socket there is sluice's */
	if (is_dns)
		return D_DIRECT_DNS;
	if (v->protocol == SLUICE_IPPROTO_TCP && is_proxy)
		return D_EXPLICIT;
	if (in_cidr == CIDR_YES)
		return D_ALLOW;
	if (v->dport == 53 && (v->protocol == SLUICE_IPPROTO_UDP || v->protocol == SLUICE_IPPROTO_TCP)) {
		if (sluice_cfg.have_dns)
			return D_REDIRECT_DNS;
		v->reason = SLUICE_REASON_NO_RESOLVER;
		return D_DENY;
	}
	if (v->protocol == SLUICE_IPPROTO_TCP) {
		if (port_proxied(gen, v->dport)) {
			if (sluice_cfg.have_proxy)
				return D_REDIRECT_PROXY;
			v->reason = SLUICE_REASON_NO_PROXY;
			return D_DENY;
		}
		v->reason = in_cidr == CIDR_EXPIRED ? SLUICE_REASON_ENTRY_EXPIRED :
			    in_cidr == CIDR_PROGRAM ? SLUICE_REASON_PROGRAM : SLUICE_REASON_TCP_PORT;
		return D_DENY;
	}
	v->reason = in_cidr == CIDR_EXPIRED ? SLUICE_REASON_ENTRY_EXPIRED :
		    in_cidr == CIDR_PROGRAM ? SLUICE_REASON_PROGRAM :
		    v->protocol == SLUICE_IPPROTO_UDP ? SLUICE_REASON_UDP : SLUICE_REASON_PROTO;
	return D_DENY;
}

static __always_inline int decide4(__u32 gen, struct verdict_ctx *v)
{
	__u32 addr = v->daddr[0];
	int in_cidr = cidr_verdict4(gen, addr, v->protocol, v->dport, true, &v->trie);

	return decide(gen, v, in_cidr, sluice_addr4(true, addr, v->dport), sluice_addr4(false, addr, v->dport));
}

static __always_inline int decide6(__u32 gen, struct verdict_ctx *v)
{
	const __u32 *a = v->daddr;
	int in_cidr = cidr_verdict6(gen, a, v->protocol, v->dport, true, &v->trie);

	return decide(gen, v, in_cidr, sluice_addr6(true, a, v->dport), sluice_addr6(false, a, v->dport));
}

/*
 * Is the socket that would receive this attempt at the proxy's (dns: the
 * resolver's) address one that sluice made?  Looks it up in the caller's
 * netns as the kernel will deliver to it (a TCP listener, or the bound UDP
 * socket) and checks its listener mark.  `v6`: the IPv6 redirect address;
 * where that is the v4-mapped fallback (no ::1 in the netns) the IPv4
 * listener is the one that receives.  Kernel: bpf_sk_lookup_* in sock_addr
 * programs 5.2+, sk_storage_get there 5.10+.
 */
static __always_inline bool target_ours(struct bpf_sock_addr *ctx, bool dns, bool v6, __u8 proto)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	__u32 size;
	bool ours;
	const volatile __u32 *a6 = dns ? sluice_cfg.dns6_addr : sluice_cfg.proxy6_addr;
	__u16 port = v6 ? (dns ? sluice_cfg.dns6_port : sluice_cfg.proxy6_port)
			: (dns ? sluice_cfg.dns4_port : sluice_cfg.proxy4_port);

	if (v6 && !(a6[0] == 0 && a6[1] == 0 && a6[2] == bpf_htonl(0x0000ffff))) {
		addr6_copy(t.ipv6.daddr, a6);
		t.ipv6.dport = bpf_htons(port);
		size = sizeof(t.ipv6);
	} else {
		t.ipv4.daddr = v6 ? a6[3] : (dns ? sluice_cfg.dns4_addr : sluice_cfg.proxy4_addr);
		t.ipv4.dport = bpf_htons(port);
		size = sizeof(t.ipv4);
	}
	if (proto == SLUICE_IPPROTO_UDP)
		sk = bpf_sk_lookup_udp(ctx, &t, size, BPF_F_CURRENT_NETNS, 0);
	else
		sk = bpf_sk_lookup_tcp(ctx, &t, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return false;
	ours = bpf_sk_storage_get(&sluice_listener_sk, sk, 0, 0) != NULL;
	bpf_sk_release(sk);
	return ours;
}

/* Record in sluice_sk_judged that a cidr entry of the trie allowed this
 * TCP connect (see there).  Best effort: without a record the backstop
 * looks up. */
static __always_inline void judged(struct bpf_sock_addr *ctx, const struct verdict_ctx *v, __u32 gen)
{
	struct sluice_judged *j;

	if (!ctx->sk)
		return;
	j = bpf_sk_storage_get(&sluice_sk_judged, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!j)
		return;
	j->gen_plus1 = 0;   /* never a mix of two records under one generation */
	addr6_copy(j->daddr, v->daddr);
	j->dport = v->dport;
	j->family = v->family;
	j->gen_plus1 = gen + 1;
}

/* A TCP socket connecting where no record says how (a cidr entry, the
 * resolver's own address) drops the sluice_sk_orig record an earlier use
 * left (connect(AF_UNSPEC) and connect again reuses a socket): a PASSIVE
 * mark would pass all its packets (tcp_reply), and any record would keep
 * a reload's flow cut off it (loader/flowcut.c).  The other decisions
 * write the record afresh (remember). */
static __always_inline void forget(struct bpf_sock_addr *ctx, const struct verdict_ctx *v)
{
	if (v->protocol == SLUICE_IPPROTO_TCP && ctx->sk)
		bpf_sk_storage_delete(&sluice_sk_orig, ctx->sk);
}

/*
 * What applying a decision means for both families.  Returns the program's
 * return value, or -1 when the destination must be rewritten to the proxy
 * or the resolver (the caller does that for its family); *flags then says
 * which (SLUICE_ORIG_REDIRECTED or SLUICE_ORIG_DNS).  Any use of the
 * proxy's or resolver's address is first checked with target_ours() (`v6`:
 * which of the two redirect addresses is meant).
 */
static __always_inline int settle(struct bpf_sock_addr *ctx, struct verdict_ctx *v, __u32 gen, int d, __u8 *flags,
				  bool v6)
{
	bool dns = d == D_REDIRECT_DNS || d == D_DIRECT_DNS;

	if ((d == D_EXPLICIT || d == D_REDIRECT_PROXY || dns) && !target_ours(ctx, dns, v6, v->protocol)) {
		v->reason = SLUICE_REASON_REDIRECT_TARGET;
		return deny(v, gen, bpf_get_socket_cookie(ctx), true);
	}
	switch (d) {
	case D_ALLOW:
		if (v->protocol == SLUICE_IPPROTO_TCP && v->trie)
			judged(ctx, v, gen);
		forget(ctx, v);
		stat_inc(SLUICE_STAT_ALLOWED);
		return SYS_PROCEED;
	case D_DIRECT_DNS:
		forget(ctx, v);
		stat_inc(SLUICE_STAT_ALLOWED);
		return SYS_PROCEED;
	case D_EXPLICIT:
		stat_inc(SLUICE_STAT_REDIRECTED);
		remember(ctx, v, SLUICE_ORIG_EXPLICIT);
		return SYS_PROCEED;
	case D_REDIRECT_PROXY:
		*flags = SLUICE_ORIG_REDIRECTED;
		break;
	case D_REDIRECT_DNS:
		*flags = SLUICE_ORIG_DNS;
		break;
	default: {
		int ret = deny(v, gen, bpf_get_socket_cookie(ctx), false);

		if (ret == SYS_PROCEED)
			remember(ctx, v, SLUICE_ORIG_AUDIT);
		return ret;
	}
	}
	stat_inc(SLUICE_STAT_REDIRECTED);
	remember(ctx, v, *flags);
	return -1;
}

/* Apply a decision for an IPv4 (or v4-mapped, if `mapped`) destination. */
static __always_inline int apply4(struct bpf_sock_addr *ctx, struct verdict_ctx *v, __u32 gen, bool mapped)
{
	__u8 flags = 0;
	int ret = settle(ctx, v, gen, decide4(gen, v), &flags, false);
	bool dns = flags == SLUICE_ORIG_DNS;
	__u32 to = dns ? sluice_cfg.dns4_addr : sluice_cfg.proxy4_addr;

	if (ret >= 0)
		return ret;
	if (mapped) {
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0x0000ffff);
		ctx->user_ip6[3] = to;
	} else {
		ctx->user_ip4 = to;
	}
	ctx_set_port(ctx, dns ? sluice_cfg.dns4_port : sluice_cfg.proxy4_port);
	return SYS_PROCEED;
}

static __always_inline int apply6(struct bpf_sock_addr *ctx, struct verdict_ctx *v, __u32 gen)
{
	__u8 flags = 0;
	int ret = settle(ctx, v, gen, decide6(gen, v), &flags, true);
	bool dns = flags == SLUICE_ORIG_DNS;
	const volatile __u32 *to = dns ? sluice_cfg.dns6_addr : sluice_cfg.proxy6_addr;

	if (ret >= 0)
		return ret;
	ctx->user_ip6[0] = to[0];
	ctx->user_ip6[1] = to[1];
	ctx->user_ip6[2] = to[2];
	ctx->user_ip6[3] = to[3];
	ctx_set_port(ctx, dns ? sluice_cfg.dns6_port : sluice_cfg.proxy6_port);
	return SYS_PROCEED;
}

static __always_inline int handle4(struct bpf_sock_addr *ctx, __u16 hook)
{
	struct verdict_ctx v = {};
	__u32 gen = current_gen();

	v.daddr[0] = ctx->user_ip4;
	v.dport = ctx_port(ctx);
	v.family = SLUICE_AF_INET;
	v.protocol = ctx->protocol;
	v.sock_type = ctx->type;
	v.hook = hook;
	return apply4(ctx, &v, gen, false);
}

static __always_inline int handle6(struct bpf_sock_addr *ctx, __u16 hook)
{
	struct verdict_ctx v = {};
	__u32 gen = current_gen();

	v.daddr[0] = ctx->user_ip6[0];
	v.daddr[1] = ctx->user_ip6[1];
	v.daddr[2] = ctx->user_ip6[2];
	v.daddr[3] = ctx->user_ip6[3];
	v.dport = ctx_port(ctx);
	v.protocol = ctx->protocol;
	v.sock_type = ctx->type;
	v.hook = hook;
	if (is_v4mapped(v.daddr)) {
		/* ::ffff:a.b.c.d gets exactly the IPv4 verdict */
		v.daddr[0] = v.daddr[3];
		v.daddr[1] = v.daddr[2] = v.daddr[3] = 0;
		v.family = SLUICE_AF_INET;
		return apply4(ctx, &v, gen, true);
	}
	v.family = SLUICE_AF_INET6;
	return apply6(ctx, &v, gen);
}

#endif
