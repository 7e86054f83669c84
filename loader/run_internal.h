/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_internal.h - the parts of `sluice run` (run.c) shared by its files:
 * the options as parsed (run_opts.c), the state of one run, and the
 * in-namespace set-up of the sandbox's first process (run_inside.c).
 * Not an interface: only loader/run*.c include it.
 */
#ifndef SLUICE_RUN_INTERNAL_H
#define SLUICE_RUN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "children.h"
#include "confine.h"
#include "credentials.h"
#include "event_ring.h"
#include "events.h"
#include "expiry_watch.h"
#include "kfeatures.h"
#include "labels.h"
#include "policy.h"
#include "policy_sig.h"
#include "run_env.h"
#include "run_limits.h"
#include "run_limits_v1.h"
#include "run_trust.h"
#include "sandbox.h"
#include "seccomp_baseline.h"

/* The command line of `sluice run`, as given (run_parse_options()). */
struct run_opts {
	const char *policy_path, *events_path, *netns_path, *mode, *upstream, *signers_path, *boundary_path,
		*upstream_netns, *upstream_ca_file;
	char name[SLUICE_NAME_MAX + 1];      /* --name, else run-<pid> */
	char *proxy_extra[32], *resolver_extra[32]; /* --proxy-arg, --resolver-arg (and -v) */
	int n_px, n_rx;
	int isolate, no_proxy, no_resolver, keep_caps, proxy_env, verbose, require_lsm, no_lsm;
	struct sluice_secret_source secret_src[SLUICE_SECRET_ARGS_MAX];
	size_t n_secret_src;
	struct sluice_run_env renv;          /* --env, --inherit-env */
	struct sluice_limits lim;            /* --memory, --pids, --cpu, --timeout */
	struct sluice_confine conf;          /* --profile, --user, --workdir, ... (confine.h) */
	struct sluice_labels *labels;        /* --label */
	char **cmd;                          /* CMD and its arguments, NULL-terminated */
};

struct run_state {
	struct run_opts o;
	const char *mode;           /* the mode in force: "enforce" or "audit" */
	bool audit;
	struct sluice_policy *policy;
	struct sluice_sandbox sb;
	bool sb_loaded;
	struct sluice_listeners listeners; /* held for the sandbox's life: nobody else can bind them */
	pid_t proxy_pid, resolver_pid;
	char proxy_bin[4096], resolver_bin[4096], flow_map[512];
	struct sluice_child_opts proxy_co, resolver_co;
	struct sluice_restarts proxy_restarts, resolver_restarts;
	char cg2[1024];             /* the cgroup2 mount */
	char cg_path[4096];
	char cg_parent[4096];
	struct sluice_limits lim_v2; /* the limits the v2 hierarchy enforces */
	struct sluice_limits_v1 v1; /* the limits on cgroup v1 hierarchies (hybrid layout) */
	int cg_fd;
	const char *netns_path;     /* CMD's network namespace (--netns, or the --isolate-net one) */
	char iso_path[64];
	const char *child_netns;    /* where the proxy and resolver dial from (NULL: ours) */
	int netns_fd;
	struct sluice_bpf_config cfg;
	struct sluice_event_meta meta;
	char lsm_msg[256];          /* why the BPF LSM is not in force */
	char stdio_socks[64];       /* inet sockets as CMD's stdio (run_stdio.h) */
	int events;                 /* fd: 2 (stderr), 1 (--events -) or the --events file */
	struct sluice_evlog log;    /* the loader's lines (kernel, lifecycle) on `events` */
	struct sluice_event_ring ring;  /* its own (event_ring.h) */
	bool ring_ok;
	struct sluice_consumer consumer;
	bool consumer_ok;
	bool owner_written;         /* SLUICE_OWNER_DIR/NAME names this process */
	struct sluice_trust trust;  /* the sandbox CA bundle (run_trust.h) */
	char *ca;                   /* the sandbox CA, key and certificate (sandbox_ca.h): every
				     * proxy started for this run signs with it */
	struct sluice_secrets secrets; /* the credentials' secrets and placeholders (credentials.h) */
	char *upstream_ca;          /* --upstream-ca and tls.upstream_ca, PEM (upstream_ca.h) */
	int policy_fd;              /* sealed memfd of the policy's bytes, for the children; -1 none */
	struct sluice_signer signer; /* --allowed-signers: who signed the policy ("" unsigned) */
	struct sluice_expiry_watch expiry; /* the entry-expired lines */
	/* the sandbox's first process (the canary, then its init) */
	int errpipe[2], syncpipe[2], gopipe[2];
	int pidfd;
	int foreign[2], foreign_peer; /* sockets made outside, for the canary's LSM checks */
	int port;                   /* the canary's destination port on 127.0.0.1 */
	struct sluice_seccomp_monitor mon;
	uint64_t would_before;      /* the would-deny counter before the canary */
	pid_t pid;
};

/*
 * Parse `sluice run`'s command line into o (o->conf initialised here).
 * Returns -1 to go on, or the exit status to return at once (0 for
 * --help, 2 for a usage error, said on stderr).
 */
int run_parse_options(struct run_opts *o, int argc, char **argv);

/*
 * The sandbox's first process, just born in the cgroup (clone3): enter
 * the network namespace, make its cgroup, mount and pid namespaces,
 * prove the hooks (the canary), wait for the loader's go-ahead, then stay
 * as the namespace's init while its child confines itself and executes
 * CMD.  Failures go to st->errpipe[1] as text, with exit status 2 (127:
 * CMD not executable).  Never returns.
 */
void __attribute__((noreturn)) run_inside(struct run_state *st);

/* run_children.c: the helpers sluice-proxy and sluice-resolver found
 * (--no-proxy / --no-resolver skip one); both started side by side on
 * st->listeners (TLS inspection: the run's CA made first); one that
 * exited (proxy true: the proxy) started again within its restart budget,
 * else its listeners closed (fail closed).  The first two return 0, or
 * -1 said on stderr. */
int run_find_helpers(struct run_state *st);
int run_start_children(struct run_state *st);
void run_restart_child(struct run_state *st, bool proxy);

#endif /* SLUICE_RUN_INTERNAL_H */
