/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * children.h - the proxy and resolver of a sandbox: their listening sockets
 * (created by the loader inside the sandbox's netns, so the redirect
 * addresses are known before the BPF programs load) and their processes.
 */
#ifndef SLUICE_CHILDREN_H
#define SLUICE_CHILDREN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sluice.h"

struct sluice_secrets;
struct sluice_labels;

/* listen(2) backlog of each TCP listener of the proxy and the resolver:
 * connections the kernel completes before the child accepts them. */
#define SLUICE_LISTEN_BACKLOG 4096

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

/* Close only the proxy's (proxy != 0) or only the resolver's listeners. */
void sluice_listeners_close_role(struct sluice_listeners *l, int proxy);

/*
 * Mark every open listener of `l` as sluice's own in the socket-storage
 * map `map_fd` (sluice_listener_sk, struct sluice_listener_mark; key: the
 * socket's fd, BPF_MAP_TYPE_SK_STORAGE, kernel 5.2+).  The redirect
 * programs refuse any other socket found at a redirect address
 * (SLUICE_REASON_REDIRECT_TARGET), so a port freed by a dead child cannot
 * be squatted.  Returns 0 or -errno with msg.
 */
int sluice_listeners_mark(const struct sluice_listeners *l, int map_fd, char *msg, size_t msglen);

/*
 * Restart budget of one child: a child that dies is restarted on the same
 * listeners at most SLUICE_RESTART_MAX times within SLUICE_RESTART_WINDOW_MS;
 * past that its owner gives up and the sandbox's traffic to it fails closed.
 */
#define SLUICE_RESTART_MAX       5u
#define SLUICE_RESTART_WINDOW_MS 60000u
struct sluice_restarts {
	uint64_t window_start_ms;  /* CLOCK_MONOTONIC, ms */
	unsigned in_window;
	unsigned total;
};

/* Count a restart at `now_ms` (CLOCK_MONOTONIC).  Returns true if it is
 * within the budget, false when the budget is spent (give up). */
bool sluice_restart_allowed(struct sluice_restarts *r, uint64_t now_ms);

/* Options passed to both children. */
struct sluice_child_opts {
	const char *policy_path;   /* NULL: built-in default */
	int policy_fd;             /* > 0: a memfd holding the policy's bytes (the ones the loader
				    * parsed and verified); the child reads /dev/fd/N instead of
				    * policy_path, so a file changed meanwhile is never what it loads */
	const char *policy_digest; /* may be NULL: the digest the loader computed of it, passed as
				    * --policy-digest (the child refuses to start on another) */
	const char *policy_next;   /* proxy only, may be NULL: the daemon's copy of the policy in
				    * force, --policy-next (a draining proxy re-decides by it) */
	const char *netns_path;    /* NULL: the loader's */
	const char *sandbox;
	const char *flow_map;      /* pinned sluice_flows: who each client is (the resolver: which server it asked) */
	const char *tunnel_maps;   /* the proxy: the pin directory of the kernel tunnels' maps (loader/ktunnel.h) */
	int log_fd;                /* the events destination (an O_APPEND file, stderr, stdout),
				    * inherited as `--log-fd N` so that the loader and both
				    * children share one open file; 0: none (the child's default) */
	const char *upstream_dns;  /* NULL: /etc/resolv.conf */
	const char *mode;          /* "enforce" / "audit" */
	bool ocsf;                 /* --events-format ocsf: the children write OCSF events too */
	const struct sluice_secrets *secrets;  /* may be NULL: the credentials' secrets, handed to
				    * the proxy as content (`--secrets-fd N`, a sealed memfd),
				    * to the resolver as placeholders only */
	int seq_fd;                /* > 0: the sandbox's line counter (evseq.h), inherited as
				    * `--seq-fd N`: the child numbers its lines from it */
	const struct sluice_labels *labels; /* may be NULL: `--label KEY=VALUE` each, so the child's
				    * lines carry labels.KEY too */
	char *const *extra;        /* extra args appended (test hatches), NULL-terminated, may be NULL */
	const char *container_id;  /* the container the sandbox is (daemon: oci-hook, attach
				    * --container), each NULL: none; passed as --container-id,
				    * --container-name, --container-runtime so that the children's
				    * lines carry container.* as the loader's do */
	const char *container_name;
	const char *container_runtime;
	const char *upstream_ca;   /* proxy only, may be NULL: the CA certificates (PEM text,
				    * sluice_upstream_ca_load()) trusted for origins, handed over
				    * as content (--upstream-ca-fd, a pipe) */
	const char *ca;            /* proxy only, may be NULL: the sandbox CA (its key, then
				    * its certificate: sluice_ca_make()), handed to the proxy
				    * through a pipe (--ca-fd), so that every proxy of the
				    * sandbox signs with the one CA its workload trusts */
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

/*
 * sluice_child_start() in two halves, so that a sandbox's proxy and
 * resolver start side by side (issue 19: each start is mostly the dynamic
 * loader and the child's own setup, and the two do not wait on each other).
 * sluice_child_spawn() returns the pid with *ready_fd (the read end of the
 * child's ready pipe, the caller's to pass on), or -errno with msg.
 * sluice_child_wait_ready() waits at most `timeout_ms` for the child's
 * "ready" (sluice_child_ready() in the child, userspace/lib/child_start.h),
 * closes ready_fd, and returns the pid; or kills and reaps the child and
 * returns -EIO with msg.
 */
pid_t sluice_child_spawn(const char *binary, const struct sluice_listeners *l, const struct sluice_child_opts *o,
			 int *ready_fd, char *msg, size_t msglen);
pid_t sluice_child_wait_ready(const char *binary, pid_t pid, int ready_fd, int timeout_ms, char *msg,
			      size_t msglen);
/* A child given up on (its sibling failed, or it never said ready): its
 * ready pipe closed (ready_fd < 0: already closed), killed, reaped.
 * pid <= 0: nothing to do. */
void sluice_child_abandon(pid_t pid, int ready_fd);

/*
 * A sandbox's proxy and resolver, side by side: each spawned (proxy_co or
 * resolver_co NULL: not that one), then each waited for at most
 * `timeout_ms`.  Returns 0 with *proxy_pid and *resolver_pid set (0 for the
 * one not asked for); or -1 with msg, and neither child left running (a
 * started sibling of a failed child is killed and reaped: the caller never
 * holds half a pair it did not ask for).
 */
int sluice_children_start(const char *proxy_bin, const struct sluice_child_opts *proxy_co,
			  const char *resolver_bin, const struct sluice_child_opts *resolver_co,
			  const struct sluice_listeners *l, int timeout_ms, pid_t *proxy_pid, pid_t *resolver_pid,
			  char *msg, size_t msglen);

/*
 * From now on, start the proxy and resolver by forking them from a zygote
 * of each (userspace/lib/zygote.h) rather than exec'ing each: their
 * libraries' relocated data is then shared, not copied per sandbox.  Makes
 * the caller a child subreaper (PR_SET_CHILD_SUBREAPER, Linux 3.4): the
 * children are its own, as exec'd ones are.  A zygote that fails is
 * replaced at the next start, and exec is the fallback.  Returns 0 or
 * -errno (then every child is exec'd).
 */
int sluice_child_zygotes(void);
/* Stop the zygotes; the next child comes from fresh ones, exec'd now (the
 * libraries a package upgrade replaced are the ones it loads).  SIGHUP. */
void sluice_child_zygotes_renew(void);

/* Path of the helper binary `name` (sluice-proxy, sluice-resolver) written
 * into buf (len bytes): SLUICE_LIBEXECDIR (the Makefile's $(LIBEXECDIR)/sluice)
 * first, then beside /proc/self/exe.  Returns buf, or NULL if neither is an
 * executable file; tried (may be NULL) gets the paths looked at, ", "-joined,
 * for the error message. */
const char *sluice_helper_path(const char *name, char *buf, size_t len, char *tried, size_t tried_len);

#endif
