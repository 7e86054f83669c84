/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * children.h - the proxy and resolver of a sandbox: their listening sockets
 * (created by the loader inside the sandbox's netns, so the redirect
 * addresses are known before the BPF programs load) and their processes.
 */
#ifndef SLUICE_CHILDREN_H
#define SLUICE_CHILDREN_H

#include <stdint.h>
#include <sys/types.h>

#include "sluice.h"

struct sluice_listeners {
	int proxy4, proxy6;        /* TCP listeners, -1 if none */
	int dns_udp4, dns_udp6;    /* UDP sockets, -1 if none */
	int dns_tcp4, dns_tcp6;    /* TCP listeners, -1 if none */
};

/*
 * Create loopback listeners inside the netns at `netns_path` (NULL: the
 * caller's), each on an ephemeral port: proxy (TCP) on 127.0.0.1 and ::1,
 * resolver (UDP+TCP, one port) on 127.0.0.1 and ::1.  IPv6 is best effort:
 * where ::1 is unavailable the v6 hooks redirect to ::ffff:127.0.0.1.
 * Fills the redirect addresses of `cfg` (have_proxy/have_dns set when the
 * corresponding `want_*` is non-zero).  Ports already set in `cfg` are
 * bound again exactly (re-adoption after a daemon restart); zero ports pick
 * ephemeral ones.  Returns 0 or -errno with msg.
 */
int sluice_listeners_open(struct sluice_listeners *l, const char *netns_path, int want_proxy,
			  int want_dns, struct sluice_bpf_config *cfg, char *msg, size_t msglen);

void sluice_listeners_close(struct sluice_listeners *l);

/* Options passed to both children. */
struct sluice_child_opts {
	const char *policy_path;   /* NULL: built-in default */
	const char *netns_path;    /* NULL: the loader's */
	const char *sandbox;
	const char *flow_map;      /* pinned sluice_flows (proxy only) */
	const char *log_path;      /* JSON lines; NULL: loader's stderr */
	const char *upstream_dns;  /* NULL: /etc/resolv.conf */
	const char *mode;          /* "enforce" / "audit" */
	char *const *extra;        /* extra args appended (test hatches), NULL-terminated, may be NULL */
	char **ca_pem;             /* proxy only, may be NULL: receives the sandbox CA's
				    * certificate (PEM, malloc'd; NULL when the policy
				    * inspects no name), read from the proxy through a pipe
				    * (--ca-cert-fd) before it reports ready */
};

/*
 * Start `binary` (sluice-proxy or sluice-resolver, found beside the running
 * sluice) with the listeners it needs, wait until it reports ready (at most
 * `timeout_ms`).  The child gets PR_SET_PDEATHSIG(SIGKILL): if the loader
 * dies, it dies, and the sandbox loses network (fail closed).  Returns the
 * pid (> 0) or -errno with msg.
 */
pid_t sluice_child_start(const char *binary, const struct sluice_listeners *l,
			 const struct sluice_child_opts *o, int timeout_ms, char *msg, size_t msglen);

/* Path of a helper binary beside /proc/self/exe, or NULL if absent. */
const char *sluice_helper_path(const char *name, char *buf, size_t len);

#endif
