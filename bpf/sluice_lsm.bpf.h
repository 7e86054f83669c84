/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice_lsm.bpf.h - what the BPF LSM and unix programs of sluice.bpf.c
 * (the only file that includes it) ask: the key of a unix name, whether
 * the caller or a socket is the sandbox's, the peer an inet socket would
 * reach, the name a unix peer is bound to.  Static inline, no programs.
 */
#ifndef SLUICE_LSM_BPF_H
#define SLUICE_LSM_BPF_H

/*
 * The sluice_unix_key of a sun_path as a client passed it (`len` bytes of
 * `raw`; abstract when the first is NUL): the same rule as
 * sluice_unix_key_of_addr() in loader/policy_maps.c.  Returns the name's
 * length.  Without a branch per byte: each would end the name at another
 * constant length, and the verifier walk everything after the key once per
 * length (about 30,000 instructions a program, 9 ms of every attach);
 * masks keep it one path.  The bytes past the name stay 0.
 */
struct unix_walk {
	struct sluice_unix_key *key;
	const __u8 *raw;
	__u32 len, n, stop;
};

/* bpf_loop's callbacks (5.17+, have_loop): byte i of an abstract name
 * (i from 1) and of a path, the same masks as the unrolled loops below,
 * verified once instead of in each of 108 iterations. */
static long unix_abstract_step(__u64 i, void *arg)
{
	struct unix_walk *w = arg;
	__u32 past;

	if (i < 1 || i >= 108)
		return i >= 108;
	past = w->n - (__u32)i;
	w->key->b[i] = (__u8)(w->raw[i] & ((past >> 31) - 1));
	return 0;
}

static long unix_path_step(__u64 i, void *arg)
{
	struct unix_walk *w = arg;
	__u32 c, left;

	if (i >= 108)
		return 1;
	c = w->raw[i];
	left = w->len - 1 - (__u32)i;
	w->stop |= ((c - 1) >> 31) | (left >> 31);
	w->key->b[i] = (__u8)(c & (w->stop - 1));
	w->n += 1 - w->stop;
	return 0;
}

static __always_inline __u32 unix_key_build(struct sluice_unix_key *key, const __u8 raw[108], __u32 len, __u32 gen)
{
	__u32 n = 0;

	key->gen = gen;
	if (sluice_cfg.have_loop) {
		struct unix_walk w = { .key = key, .raw = raw, .len = len };

		if (len > 0 && raw[0] == 0) {
			w.n = n = len - 1;
			key->kind = SLUICE_UNIX_KIND_ABSTRACT;
			key->b[0] = (__u8)n;
			bpf_loop(108, unix_abstract_step, &w, 0);
		} else {
			bpf_loop(108, unix_path_step, &w, 0);
			n = w.n;
			key->kind = SLUICE_UNIX_KIND_PATH;
		}
	} else if (len > 0 && raw[0] == 0) {
		n = len - 1;
		key->kind = SLUICE_UNIX_KIND_ABSTRACT;
		key->b[0] = (__u8)n;
		for (int i = 1; i < 108; i++) {
			__u32 c = raw[i], past = n - (__u32)i;

			barrier_var(past);
			/* past >> 31: 1 when i > n */
			key->b[i] = (__u8)(c & ((past >> 31) - 1));
		}
	} else {
		/* a path ends at its first NUL or at the length given */
		__u32 stop = 0;

		for (int i = 0; i < 108; i++) {
			__u32 c = raw[i], left = len - 1 - (__u32)i;

			barrier_var(c);
			barrier_var(left);
			/* (c - 1) >> 31: 1 when c is NUL; left >> 31: 1 when i >= len */
			stop |= ((c - 1) >> 31) | (left >> 31);
			key->b[i] = (__u8)(c & (stop - 1));
			n += 1 - stop;
		}
		key->kind = SLUICE_UNIX_KIND_PATH;
	}
	key->prefixlen = 32 + 8 + 8 * (n + 1); /* a path with its terminating NUL; an abstract name with its length */
	return n;
}

/*
 * BPF LSM (kernel 5.7+, `bpf` in the active LSM list; sk_storage from LSM
 * 5.11+).  These programs are global: each first asks whether the calling
 * task is inside this sandbox (its cgroup or below) and returns at once if
 * not.  They judge what the cgroup hooks cannot see, because those are
 * chosen by the cgroup of the task that made the socket: sockets made
 * outside and used inside, unix sockets, and socket families other than
 * inet.  The loader loads them only where the BPF LSM is active
 * (sluice_cfg.have_lsm) and proves them with the canary.
 */
static __always_inline bool in_sandbox(void)
{
	return bpf_current_task_under_cgroup(&sluice_cgroup, 0) == 1;
}

/* Was `sk` made inside this sandbox?  Marked at creation, or (made before
 * the daemon attached a running cgroup) made in the caller's own cgroup. */
static __always_inline bool sk_ours(struct sock *sk)
{
	struct cgroup *cg;

	if (!sk)
		return false;
	if (bpf_sk_storage_get(&sluice_sk_owner, sk, 0, 0))
		return true;
	cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup);
	return cg && BPF_CORE_READ(cg, kn, id) == bpf_get_current_cgroup_id();
}

/* The peer an inet socket would reach: `sa` (a kernel copy of the
 * caller's address, may be NULL), else the socket's connected peer. */
static __always_inline void lsm_peer(struct verdict_ctx *v, struct sock *sk, struct sockaddr *sa)
{
	__u16 fam = 0;

	if (sa)
		bpf_probe_read_kernel(&fam, sizeof(fam), &sa->sa_family);
	if (fam == SLUICE_AF_INET) {
		struct sockaddr_in sin = {};

		bpf_probe_read_kernel(&sin, sizeof(sin), sa);
		v->daddr[0] = sin.sin_addr.s_addr;
		v->dport = bpf_ntohs(sin.sin_port);
		v->family = SLUICE_AF_INET;
		return;
	}
	if (fam == SLUICE_AF_INET6) {
		struct sockaddr_in6 sin6 = {};

		bpf_probe_read_kernel(&sin6, sizeof(sin6), sa);
		__builtin_memcpy(v->daddr, &sin6.sin6_addr, 16);
		v->dport = bpf_ntohs(sin6.sin6_port);
		v->family = SLUICE_AF_INET6;
		return;
	}
	v->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	v->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (v->family == SLUICE_AF_INET)
		v->daddr[0] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	else
		BPF_CORE_READ_INTO(&v->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32);
}

/*
 * Is the name `other` is bound to (the socket the kernel resolved, after
 * symlinks) named by a `unix:` entry?  The cgroup hook judged the bytes the
 * client passed; this judges where they led.
 */
static __always_inline bool peer_name_allowed(struct sock *other)
{
	struct unix_address *ua = BPF_CORE_READ((struct unix_sock *)other, addr);
	struct sluice_unix_key key = {};
	__u8 raw[108] = {};
	__u32 len;

	if (!ua)
		return false;       /* unbound (socketpair, autobind not yet) */
	len = BPF_CORE_READ(ua, len);
	len = len > 2 ? len - 2 : 0;
	if (len > sizeof(raw))
		len = sizeof(raw);
	if (bpf_probe_read_kernel(raw, sizeof(raw), (void *)ua + bpf_core_field_offset(struct unix_address, name) + 2))
		return false;
	unix_key_build(&key, raw, len, current_gen());
	return bpf_map_lookup_elem(&sluice_unix_allow, &key) != NULL;
}

#endif /* SLUICE_LSM_BPF_H */
