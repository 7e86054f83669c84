/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ktunnel.h - kernel tunnels: a decided passthrough tunnel's two TCP
 * sockets handed to the loader's sockhash (bpf/sluice_tunnel.h), whose
 * stream verdict program sends each side's bytes out of the other, so the
 * payload never enters user space.  The proxy keeps the sockets (their
 * close is the tunnel's end; the proxy dying closes them) and reads the
 * byte counts from the sockets' tcp_info.  relay.c drives it; off unless
 * the proxy runs with --kernel-tunnels (docs/performance.md says why).
 */
#ifndef SLUICE_PROXY_KTUNNEL_H
#define SLUICE_PROXY_KTUNNEL_H

#include <stdbool.h>
#include <stdint.h>

struct ktunnel;

/*
 * Open the pinned maps in `pin_dir` (the sandbox's pin directory) once per
 * process.  Returns 0, or -errno (then every tunnel uses splice; the
 * caller says so once).
 */
int ktunnel_open(const char *pin_dir);

/* Did ktunnel_open() succeed (and no insertion has failed since)? */
bool ktunnel_available(void);

enum ktunnel_start {
	KTUNNEL_OK,         /* both sockets are the kernel's to relay */
	KTUNNEL_FALLBACK,   /* nothing changed: relay in user space */
	KTUNNEL_BROKEN,     /* half inserted and not undone: close the tunnel */
};

/*
 * Hand connected TCP sockets `cfd` (client) and `ufd` (upstream) to the
 * kernel.  Every byte user space wrote to either must already be in its
 * send queue; bytes still in their receive queues go to the peer first.
 * On KTUNNEL_OK *out is the tunnel (free with ktunnel_free); otherwise
 * *why says what failed (static text).
 */
enum ktunnel_start ktunnel_start(int cfd, int ufd, struct ktunnel **out, const char **why);

/*
 * Direction `i` (0: client -> upstream, 1: upstream -> client) since the
 * hand-over: *must, the bytes its source socket received; *moved, the bytes
 * written into its destination socket (tcp_info bytes_acked + SIOCOUTQ).
 * `fin`: the source said FIN (tcp_info counts it as a byte received).
 * After the source's FIN the direction is flushed when *moved >= *must.
 * Returns 0, or -errno.
 */
int ktunnel_dir_counts(const struct ktunnel *k, int i, bool fin, uint64_t *must, uint64_t *moved);

/* A number that changes whenever a byte moves either way (for the idle timer). */
uint64_t ktunnel_activity(const struct ktunnel *k);

/* Take the sockets out of the maps and free k (the sockets stay open). */
void ktunnel_free(struct ktunnel *k);

#endif
