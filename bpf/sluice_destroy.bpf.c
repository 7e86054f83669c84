// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice_destroy.bpf.c - close the sockets a workload opened before sluice
 * was attached (`sluice attach --kill-existing`).  Socket iterators over
 * TCP and UDP sockets of one netns (the netns of the task that reads the
 * iterator) call the bpf_sock_destroy() kfunc (6.5+) on every socket whose
 * inode user space listed in sluice_doomed: the owner sees ECONNABORTED.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TCP_TIME_WAIT_    6
#define TCP_NEW_SYN_RECV_ 12

extern int bpf_sock_destroy(struct sock_common *sk) __ksym;

/* Inode numbers of the sockets to close (from /proc/PID/fd). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} sluice_doomed SEC(".maps");

__u64 sluice_destroyed = 0;

static __always_inline __u64 sock_ino(struct sock *sk)
{
	struct socket *so = BPF_CORE_READ(sk, sk_socket);

	if (!so)
		return 0;
	return BPF_CORE_READ(so, file, f_inode, i_ino);
}

SEC("iter/tcp")
int sluice_destroy_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	__u64 ino;

	if (!skc)
		return 0;
	/* only full sockets have a struct socket behind them */
	if (skc->skc_state == TCP_TIME_WAIT_ || skc->skc_state == TCP_NEW_SYN_RECV_)
		return 0;
	ino = sock_ino((struct sock *)skc);
	if (ino && bpf_map_lookup_elem(&sluice_doomed, &ino) && bpf_sock_destroy(skc) == 0)
		__sync_fetch_and_add(&sluice_destroyed, 1);
	return 0;
}

SEC("iter/udp")
int sluice_destroy_udp(struct bpf_iter__udp *ctx)
{
	struct udp_sock *udp = ctx->udp_sk;
	__u64 ino;

	if (!udp)
		return 0;
	ino = sock_ino((struct sock *)udp);
	if (ino && bpf_map_lookup_elem(&sluice_doomed, &ino) &&
	    bpf_sock_destroy((struct sock_common *)udp) == 0)
		__sync_fetch_and_add(&sluice_destroyed, 1);
	return 0;
}
