// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice_tunnel.bpf.c - kernel tunnels: the stream verdict program that
 * sends every byte a tunnel socket receives out of its peer (the maps and
 * the order of insertion: sluice_tunnel.h).  Loaded by the loader
 * (loader/ktunnel.c) and attached to sluice_tunnel_sk; the proxy
 * (userspace/proxy/ktunnel.c) owns the sockets and sees their close.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "sluice_tunnel.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 2 * SLUICE_TUNNEL_MAX);
	__type(key, __u64);
	__type(value, __u64);
} sluice_tunnel_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 2 * SLUICE_TUNNEL_MAX);
	__type(key, __u64);
	__type(value, __u64);
} sluice_tunnel_sk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * SLUICE_TUNNEL_MAX);
	__type(key, __u64);
	__type(value, struct sluice_tunnel_dir);
} sluice_tunnel_dir SEC(".maps");

SEC("sk_skb/stream_verdict")
int sluice_tunnel_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct sluice_tunnel_dir *d = bpf_map_lookup_elem(&sluice_tunnel_dir, &cookie);
	long verdict;

	/* never let a byte through to a socket user space did not pair it with */
	if (!d)
		return SK_DROP;
	/* A FIN comes as a buffer of no bytes (tcp_read_skb() passes it on):
	 * redirected, the peer's send of 0 bytes would count as a hard error
	 * (EPIPE on the peer, 6.18).  TCP has seen the FIN already; the proxy
	 * passes it on with shutdown() once the bytes before it are out. */
	if (skb->len == 0)
		return SK_DROP;
	verdict = bpf_sk_redirect_hash(skb, &sluice_tunnel_held, &d->peer, 0);
	if (verdict == SK_PASS)
		__sync_fetch_and_add(&d->bytes, skb->len);
	else
		__sync_fetch_and_add(&d->dropped, skb->len);
	return verdict;
}
