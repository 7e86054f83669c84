/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run.c - `sluice run`: a fresh cgroup, the filter attached and proven
 * (canary), CMD started inside it, events streamed until CMD exits, then
 * everything removed.
 */
#include "run.h"
#include "run_internal.h"
#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cgroup.h"
#include "run_daemon.h"
#include "run_env.h"
#include "confine.h"
#include "events_dest.h"
#include "evseq.h"
#include "labels.h"
#include "kfeatures.h"
#include "owner.h"
#include "run_limits.h"
#include "run_limits_v1.h"
#include "seccomp_baseline.h"
#include "run_stdio.h"
#include "sandbox_ca.h"
#include "log.h"
#include "policy.h"
#include "policy_maps.h"
#include "policy_sig.h"
#include "expiry_watch.h"
#include "hostmounts.h"
#include "policy_within.h"
#include "sandbox.h"
#include "sandbox_up.h"
#include "upstream_ca.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static volatile sig_atomic_t got_signal;
static volatile pid_t forward_pid;

static void on_signal(int sig)
{
	got_signal = sig;
	if (forward_pid > 0)
		kill(forward_pid, sig);
}

static void run_cleanup(struct run_state *st)
{
	sluice_trust_free(&st->trust);
	sluice_ca_pem_free(st->ca);
	sluice_secrets_clear(&st->secrets);
	free(st->upstream_ca);
	if (st->policy_fd >= 0)
		close(st->policy_fd);
	sluice_expiry_watch_free(&st->expiry);
	if (st->cg_path[0]) {
		int err = cg_kill_and_remove(st->cg_path, 5000);

		if (err)
			log_warnx("cannot remove cgroup %s: %s", st->cg_path, strerror(-err));
	}
	sluice_limits_v1_remove(&st->v1);
	if (st->cg_parent[0])
		rmdir(st->cg_parent); /* only succeeds once no other sandbox uses it */
	if (st->consumer_ok) {
		sluice_consumer_drain(&st->consumer);
		sluice_consumer_free(&st->consumer);
	}
	if (st->ring_ok)
		sluice_event_ring_close(&st->ring);
	if (st->proxy_pid > 0) {
		kill(st->proxy_pid, SIGTERM);
		waitpid(st->proxy_pid, NULL, 0);
	}
	if (st->resolver_pid > 0) {
		kill(st->resolver_pid, SIGTERM);
		waitpid(st->resolver_pid, NULL, 0);
	}
	sluice_listeners_close(&st->listeners);
	if (st->sb_loaded)
		sandbox_destroy(&st->sb);
	if (st->owner_written)
		sluice_owner_remove(st->sb.name);
	if (st->cg_fd >= 0)
		close(st->cg_fd);
	if (st->policy)
		sluice_policy_free(st->policy);
	if (st->events > 2)
		close(st->events);
}

/* Pick a TCP/UDP port on 127.0.0.1 that this policy must deny. */
static int canary_port(const struct sluice_policy *p, const struct sluice_bpf_config *cfg)
{
	struct sluice_plan plan;
	char err[256];
	int port = -1;

	if (sluice_plan_build(p, 1, &plan, err, sizeof(err)) < 0)
		return -1;
	for (int c = 9; c < 65536; c++) {
		uint32_t lo = htonl(INADDR_LOOPBACK);

		if (c == 53 || c == cfg->proxy4_port || c == cfg->dns4_port || sluice_plan_proxies(&plan, c) ||
		    sluice_plan_allows4(&plan, lo, IPPROTO_TCP, c) || sluice_plan_allows4(&plan, lo, IPPROTO_UDP, c))
			continue;
		port = c;
		break;
	}
	sluice_plan_free(&plan);
	return port;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	if (getenv("SLUICE_LIBBPF_VERBOSE"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* The confinement fields (confine.h) of the sandbox's start, stop and
 * limit lines: sluice.profile, user.name, user.id, group.id,
 * sluice.landlock_abi. */
static void confine_fields(struct sluice_line *l, const struct sluice_event_meta *m)
{
	char id[16];

	if (!m->profile)
		return;
	SL_STR(l, "sluice.profile", m->profile);
	SL_STR(l, "user.name", m->user_name ? m->user_name : "");
	snprintf(id, sizeof(id), "%u", m->uid);
	SL_STR(l, "user.id", id);
	snprintf(id, sizeof(id), "%u", m->gid);
	SL_STR(l, "group.id", id);
	SL_I64(l, "sluice.landlock_abi", m->landlock_abi);
}

/* A lifecycle line of the sandbox, with its confinement fields. */
/* A limit-exceeded line: which limit (sluice.limit: "memory", "pids"), its
 * value, and how often it struck (OOM kills, refused forks). */
static void limit_line(struct sluice_evlog *log, const struct sluice_event_meta *m, const char *limit,
		       uint64_t value, uint64_t hits, const char *message)
{
	struct sluice_line *l = sluice_evlog_begin(log, SLUICE_DS_LIFECYCLE, -1);

	SL_STR(l, "event.kind", "state");
	SL_STR(l, "event.action", "limit-exceeded");
	SL_STR(l, "message", message);
	SL_STR(l, "sluice.limit", limit);
	SL_U64(l, "sluice.limit_value", value);
	SL_U64(l, "sluice.limit_hits", hits);
	confine_fields(l, m);
	sluice_evlog_commit(log);
}

/*
 * The sandbox-stop line (the counters, and the event lines the writer lost),
 * then one summary line on stderr when something was denied or lost.
 */
static void run_stop_line(struct run_state *st, const struct sluice_event_meta *meta, const char *name, int status,
			  const char *syscalls)
{
	uint64_t allowed = sandbox_stat(&st->sb, SLUICE_STAT_ALLOWED);
	uint64_t redirected = sandbox_stat(&st->sb, SLUICE_STAT_REDIRECTED);
	uint64_t denied = sandbox_stat(&st->sb, SLUICE_STAT_DENIED);
	uint64_t would = sandbox_stat(&st->sb, SLUICE_STAT_WOULD_DENY);
	uint64_t ring_lost = sandbox_stat(&st->sb, SLUICE_STAT_EVENTS_LOST);
	/* the stop line itself may be lost too: counted before it is written */
	uint64_t lines_lost = sluice_evlog_lost_total(&st->log);
	uint64_t total = denied + would;
	uint64_t real = total > st->consumer.canary ? total - st->consumer.canary : 0;
	char m[384], summary[512];
	struct sluice_line *l;

	snprintf(m, sizeof(m), "sandbox %s stopped: exit status %d; allowed %llu, redirected %llu, denied %llu, "
		 "events lost %llu, event lines lost %llu%s", name, status, (unsigned long long)allowed,
		 (unsigned long long)redirected, (unsigned long long)denied, (unsigned long long)ring_lost,
		 (unsigned long long)lines_lost, syscalls);
	l = sluice_evlog_begin(&st->log, SLUICE_DS_LIFECYCLE, -1);
	SL_STR(l, "event.kind", "state");
	SL_STR(l, "event.action", "sandbox-stop");
	SL_STR(l, "message", m);
	SL_I64(l, "process.exit_code", status);
	SL_U64(l, "sluice.allowed", allowed);
	SL_U64(l, "sluice.redirected", redirected);
	SL_U64(l, "sluice.denied", denied);
	SL_U64(l, "sluice.would_deny", would);
	SL_U64(l, "sluice.canary_events", st->consumer.canary);
	SL_U64(l, "sluice.events_lost_total", ring_lost);
	SL_U64(l, "sluice.kernel_lines_lost", st->consumer.write_lost);
	SL_U64(l, "sluice.event_lines_lost", lines_lost);
	SL_U64(l, "sluice.unix_quiet", sandbox_stat(&st->sb, SLUICE_STAT_UNIX_QUIET));
	confine_fields(l, meta);
	sluice_evlog_commit(&st->log);

	if (real)
		log_warnx("sandbox %s: %llu connection attempt%s %s by the kernel (events: %s)", name,
			  (unsigned long long)real, real == 1 ? "" : "s", would ? "denied or would be denied" : "denied",
			  st->log.dest);
	if (sluice_evlog_lost_total(&st->log))
		log_warnx("%s; the kernel denied %llu (%llu not queued: ring buffer full)",
			  sluice_evlog_loss_summary(&st->log, summary, sizeof(summary)),
			  (unsigned long long)total, (unsigned long long)ring_lost);
}

/* Which refuses socket() of a family the policy does not name:
 * "bpf_lsm", "seccomp" or "bpf_lsm+seccomp" (sluice.families_enforced_by). */
static const char *sluice_run_families_by(const struct sluice_bpf_config *cfg, const struct sluice_confine *conf)
{
	bool sc = conf->profile == SLUICE_PROFILE_SANDBOX || conf->families_seccomp;

	return cfg->have_lsm ? (sc ? "bpf_lsm+seccomp" : "bpf_lsm") : sc ? "seccomp" : "none";
}

/* The seccomp baseline's first refusals, as "syscall-denied" lines. */
static void write_refusals(struct run_state *st, struct sluice_seccomp_monitor *mon)
{
	struct sluice_seccomp_refusal r;

	while (sluice_seccomp_monitor_take(mon, &r)) {
		struct sluice_line *l = sluice_evlog_begin(&st->log, SLUICE_DS_LIFECYCLE, -1);

		SL_STR(l, "event.kind", "event");
		SL_STR(l, "event.category", "process");
		SL_STR(l, "event.action", "syscall-denied");
		SL_STR(l, "event.outcome", "failure");
		/* socket(): the decision of reason socket_family, the BPF LSM's too */
		SL_STR(l, "event.reason", r.family >= 0 ? "socket_family" : "seccomp_baseline");
		if (r.family >= 0)
			SL_U64(l, "sluice.socket_family", (unsigned)r.family);
		SL_U64(l, "process.pid", r.pid);
		SL_STR(l, "sluice.syscall", r.syscall);
		if (r.abi[0])
			SL_STR(l, "sluice.syscall_abi", r.abi);
		SL_U64(l, "sluice.syscalls_denied", r.count);
		sluice_evlog_commit(&st->log);
	}
}

/* 1. The policy: parsed (and, signed, verified) from bytes read once,
 * before anything is created; the children get the same bytes in a sealed
 * memfd, never the path again.  Returns 0, or -1 said (nothing to undo). */
static int run_read_policy(struct run_state *st)
{
	if (st->o.signers_path && !st->o.policy_path) {
		log_warnx("run: --allowed-signers needs --policy (a signed policy file)");
		return -1;
	}
	if (st->o.policy_path) {
		struct sluice_signers signers;
		char pmsg[1536], *bytes = NULL;
		size_t n_bytes = 0;
		int r;

		if (st->o.signers_path && sluice_signers_load(st->o.signers_path, &signers, pmsg, sizeof(pmsg)) < 0) {
			log_warnx("%s", pmsg);
			return -1;
		}
		r = sluice_policy_load_checked(st->o.policy_path, st->o.signers_path ? &signers : NULL, &st->policy, &st->signer,
					       &bytes, &n_bytes, NULL, NULL, pmsg, sizeof(pmsg));
		if (st->o.signers_path)
			sluice_signers_free(&signers);
		if (r < 0) {
			log_warnx("%s", pmsg);
			return -1;
		}
		st->policy_fd = sluice_policy_memfd(bytes, n_bytes);
		free(bytes);
		if (st->policy_fd < 0) {
			log_warnx("run: cannot hold the policy in a memfd: %s", strerror(-st->policy_fd));
			sluice_policy_free(st->policy);
			return -1;
		}
	} else {
		st->policy = sluice_policy_default();
		if (!st->policy) {
			log_warnx("run: cannot build the default policy");
			return -1;
		}
	}
	return 0;
}

/* The policy's secrets and upstream CAs (content, read here as root), the
 * mode in force, and the --boundary check.  Returns 0 or -1 said. */
static int run_check_policy(struct run_state *st)
{
	struct sluice_policy_error perr;
	char msg[512];

	/* the credentials' secrets: read here (root), handed to the proxy as
	 * content; a missing, empty or public one refuses the start */
	if (sluice_secrets_load(st->policy, st->o.secret_src, st->o.n_secret_src, getenv("CREDENTIALS_DIRECTORY"), &st->secrets,
				&perr) < 0 ||
	    (perr.message[0] = 0, sluice_secrets_placeholders(&st->secrets, NULL) < 0)) {
		log_warnx("%s", perr.message[0] ? sluice_policy_error_str(&perr, msg, sizeof(msg)) :
			  "run: no random bytes for the credentials' placeholders");
		return -1;
	}
	/* the CAs trusted for origins: read here, handed over as content */
	{
		size_t n = 0;

		if (sluice_upstream_ca_load(st->o.upstream_ca_file, st->policy, &st->upstream_ca, &n, &perr) < 0) {
			log_warnx("run: %s", sluice_policy_error_str(&perr, msg, sizeof(msg)));
			return -1;
		}
	}
	/* this process holds the secrets for the proxy's restarts: no core
	 * dump of it (execve gives CMD its own dumpable flag back) */
	if (st->secrets.n && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		log_warn("run: prctl(PR_SET_DUMPABLE)");
		return -1;
	}
	if (st->o.mode)
		st->policy->mode = strcmp(st->o.mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	st->mode = st->policy->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce";
	if (st->o.boundary_path) {
		/* the policy (and --mode) as it will run, against the boundary */
		struct sluice_policy *b = NULL;
		char bmsg[4096];
		int r = sluice_boundary_load(st->o.boundary_path, &b, bmsg, sizeof(bmsg));

		if (r == 0)
			r = sluice_policy_check_within(st->policy, b, st->o.boundary_path, bmsg, sizeof(bmsg));
		sluice_policy_free(b);
		if (r != 0) {
			log_warnx("%s", bmsg);
			if (r > 0)
				log_warnx("run: the policy allows %d thing%s beyond the boundary %s: not run", r, r == 1 ? "" : "s",
					  st->o.boundary_path);
			return -1;
		}
	}
	st->audit = st->policy->mode == SLUICE_MODE_AUDIT;
	return 0;
}

/* 2. The host: root, the confinement's user and paths, the cgroup2
 * mount, every limit enforceable, a BPF filesystem.  Returns 0 or -1 said. */
static int run_check_host(struct run_state *st)
{
	char msg[512];

	/* 2. the environment */
	if (geteuid() != 0) {
		log_warnx("run: must run as root (BPF programs, cgroups)");
		return -1;
	}
	/* the confinement: user, workdir and paths checked before anything is made */
	st->o.conf.keep_caps = st->o.keep_caps;
	if (sluice_confine_from_policy(&st->o.conf, st->policy, msg, sizeof(msg)) < 0 ||
	    sluice_confine_prepare(&st->o.conf, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		return -1;
	}
	{
		/* under `ip netns exec` (a fresh /sys): the mounts of the caller's namespace */
		int err = sluice_host_mounts_restore(msg, sizeof(msg));

		if (err < 0) {
			log_warnx("run: no cgroup2 mount in /proc/mounts, and %s", msg);
			return -1;
		}
		if (err > 0)
			log_info("run: no cgroup2 mount in this mount namespace (ip netns exec remounts /sys): %s", msg);
		err = cg2_find_mount("/proc/mounts", st->cg2, sizeof(st->cg2));
		if (err) {
			log_warnx("run: no cgroup2 mount in /proc/mounts: %s",
				  err == -ENOENT ? "mount cgroup v2 (unified or hybrid layout)" : strerror(-err));
			return -1;
		}
	}
	/* every limit asked for must be enforceable, before anything is made:
	 * by the v2 hierarchy, or (hybrid layout) by a v1 one */
	sluice_limits_v1_plan(&st->o.lim, st->cg2, "/proc/mounts", &st->v1, &st->lim_v2);
	if (sluice_limits_check(&st->lim_v2, st->cg2, "/proc/mounts", msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		return -1;
	}
	if (bpffs_ensure(SLUICE_BPFFS) < 0) {
		log_warn("run: no BPF filesystem at %s and cannot mount one", SLUICE_BPFFS);
		return -1;
	}
	return 0;
}

/* CMD's network namespace (--netns or --isolate-net's own), where the
 * children dial from, and the events destination.  Returns 0 or -1 said. */
static int run_open_netns_events(struct run_state *st)
{
	char msg[512];

	st->netns_path = st->o.netns_path;
	if (st->o.isolate && st->netns_path) {
		log_warnx("run: --isolate-net makes CMD a network namespace of its own: not with --netns");
		return -1;
	}
	if (st->o.upstream_netns && strcmp(st->o.upstream_netns, "host") != 0) {
		int fd = open(st->o.upstream_netns, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			log_warn("run: cannot open --upstream-netns %s", st->o.upstream_netns);
			return -1;
		}
		close(fd);
	}
	if (st->o.isolate) {
		/* loopback only: the proxy and the resolver are the only way out */
		st->netns_fd = sluice_netns_isolated(msg, sizeof(msg));
		if (st->netns_fd < 0) {
			log_warnx("run: --isolate-net: %s", msg);
			return -1;
		}
		snprintf(st->iso_path, sizeof(st->iso_path), "/proc/%d/fd/%d", (int)getpid(), st->netns_fd);
		st->netns_path = st->iso_path;
	} else if (st->netns_path) {
		st->netns_fd = open(st->netns_path, O_RDONLY | O_CLOEXEC);
		if (st->netns_fd < 0) {
			log_warn("run: cannot open network namespace %s", st->netns_path);
			return -1;
		}
	}
	/* where the proxy and resolver dial from: --upstream-netns (host: ours),
	 * the host's for --isolate-net, else the sandbox's */
	if (st->o.upstream_netns)
		st->child_netns = strcmp(st->o.upstream_netns, "host") == 0 ? NULL : st->o.upstream_netns;
	else
		st->child_netns = st->o.isolate ? NULL : st->netns_path;
	if (st->o.events_path && strcmp(st->o.events_path, "-") == 0) {
		st->events = STDOUT_FILENO;
	} else if (st->o.events_path) {
		st->events = sluice_events_open(st->o.events_path, 0644);
		if (st->events < 0) {
			log_warnx("run: cannot open %s%s: %s", sluice_events_is_journald(st->o.events_path) ?
				  "the journal (--events journald: is systemd-journald running?)" : "events file ",
				  sluice_events_is_journald(st->o.events_path) ? "" : st->o.events_path,
				  strerror(-st->events));
			return -1;
		}
	} else {
		st->events = STDERR_FILENO;
	}
	return 0;
}

/* 3.-4. The listeners of the proxy and resolver inside the sandbox's
 * netns, then the BPF programs loaded, filled with the policy and pinned
 * (sandbox_up.c, as for the daemon's attach), and the owner recorded.
 * Returns 0 or -1 said. */
static int run_bring_up(struct run_state *st)
{
	struct sandbox_up u = {
		.name = st->o.name, .netns = st->netns_path, .want_proxy = !st->o.no_proxy,
		.want_dns = !st->o.no_resolver, .use_lsm = !st->o.no_lsm, .require_lsm = st->o.require_lsm,
		.kernel_tunnels = sluice_args_have(st->o.proxy_extra, "--kernel-tunnels"), .policy = st->policy,
	};
	char msg[1024], d[256], info[512];
	int rc, err;

	if (run_find_helpers(st) < 0)
		return -1;
	rc = sandbox_up(&u, &st->sb, &st->listeners, msg, sizeof(msg));
	st->sb_loaded = u.loaded;
	snprintf(st->lsm_msg, sizeof(st->lsm_msg), "%s", u.lsm_why);
	if (rc < 0) {
		log_warnx("run: %s", msg);
		return -1;
	}
	st->cfg = st->sb.cfg;
	/* the socket families: the BPF LSM's socket_create where it loaded;
	 * else, under egress-only, the seccomp filter's family row alone (the
	 * sandbox profile's baseline has it anyway) */
	st->o.conf.families_seccomp = st->o.conf.profile == SLUICE_PROFILE_EGRESS_ONLY && !st->cfg.have_lsm;
	/* an inet socket as stdio is the launcher's: judged only by the BPF LSM */
	if (sluice_stdio_sockets(st->cfg.have_lsm, st->stdio_socks, sizeof(st->stdio_socks), msg, sizeof(msg)) < 0) {
		log_warnx("run: %s; nothing was run", msg);
		return -1;
	}
	/* who owns the pins, for `sluice gc` after a SIGKILL; and what the
	 * sandbox is, for `sluice status` */
	snprintf(info, sizeof(info), "policy %s (%.12s), mode %s, %s, socket families by %s",
		 st->policy->name ? st->policy->name : "", st->policy->digest, st->mode,
		 sluice_confine_describe(&st->o.conf, d, sizeof(d)), sluice_run_families_by(&st->cfg, &st->o.conf));
	err = sluice_owner_write_info(st->o.name, "run", info);
	if (err) {
		log_warnx("run: cannot record the owner in %s: %s", SLUICE_OWNER_DIR, strerror(-err));
		return -1;
	}
	st->owner_written = true;
	return 0;
}

/* The run's events: the envelope of every line, the writer shared with
 * the children (one sequence counter), the ring-buffer consumer. */
static int run_open_events(struct run_state *st)
{
	memset(&st->meta, 0, sizeof(st->meta));
	st->meta.sandbox = st->o.name;
	st->meta.policy_name = st->policy->name;
	st->meta.policy_digest = st->policy->digest;
	st->meta.mode = st->mode;
	st->meta.boot_to_real_ns = sluice_boot_to_real_ns();
	st->meta.labels = st->o.labels;
	sluice_confine_meta(&st->o.conf, &st->meta);
	{
		struct sluice_envelope env;
		int err;

		sluice_envelope_of(&st->meta, &env);
		sluice_evlog_init(&st->log, st->events, st->events == STDERR_FILENO ? "stderr" :
				  st->events == STDOUT_FILENO ? "stdout" : st->o.events_path, "sluice", &env);
		/* event.sequence: one counter for this run's three writers,
		 * handed to the proxy and resolver (and their restarts) */
		err = sluice_evlog_share_seq(&st->log, sluice_evseq_memfd());
		if (err < 0) {
			log_warnx("run: cannot make the events' sequence counter: %s", strerror(-err));
			return -1;
		}
	}
	{
		char msg[256];
		int ev, bud, err = sandbox_ring_open(&st->sb, &ev, &bud, msg, sizeof(msg));

		if (err == 0) {
			/* a ring of its own: the loader set its whole budget */
			err = sluice_event_ring_open(&st->ring, ev, bud, false);
			if (err == 0)
				st->ring_ok = true;
		} else {
			log_warnx("run: %s", msg);
		}
		if (err == 0)
			err = sluice_consumer_init(&st->consumer, &st->ring, 0, &st->sb, &st->meta, &st->log);
		if (err < 0) {
			log_warnx("run: cannot read the ring buffer: %s", strerror(-err));
			return -1;
		}
	}
	st->consumer_ok = true;
	return 0;
}

/* 6. The cgroup, with its limits, attached before anything runs in it;
 * the canary's port.  Returns 0 or -1 said. */
static int run_make_cgroup(struct run_state *st)
{
	char msg[512];

	snprintf(st->cg_parent, sizeof(st->cg_parent), "%s/sluice", st->cg2);
	if (mkdir(st->cg_parent, 0755) < 0 && errno != EEXIST) {
		log_warn("run: cannot create %s", st->cg_parent);
		st->cg_parent[0] = 0;
		return -1;
	}
	snprintf(st->cg_path, sizeof(st->cg_path), "%s/sluice/%s", st->cg2, st->o.name);
	st->cg_fd = cg_create(st->cg_path);
	if (st->cg_fd < 0) {
		log_warnx("run: cannot create cgroup %s: %s", st->cg_path, strerror(-st->cg_fd));
		st->cg_path[0] = 0;
		return -1;
	}
	if (sluice_limits_apply(&st->lim_v2, st->cg2, st->cg_parent, st->cg_path, msg, sizeof(msg)) < 0 ||
	    sluice_limits_v1_create(&st->v1, &st->o.lim, st->o.name, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s; nothing was run", msg);
		return -1;
	}
	if (sandbox_attach(&st->sb, st->cg_fd, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s; nothing was run", msg);
		return -1;
	}
	st->port = canary_port(st->policy, &st->cfg);
	if (st->port < 0) {
		log_warnx("run: the policy allows every port on 127.0.0.1: no canary destination left");
		return -1;
	}
	return 0;
}

/* 7. CMD's first process, born inside the cgroup (CLONE_INTO_CGROUP,
 * 5.7+), which goes on in run_inside(); here the pipes to it, the
 * canary's foreign sockets and the seccomp monitor.  Returns 0 or -1 said. */
static int run_spawn(struct run_state *st)
{
	if (pipe2(st->errpipe, O_CLOEXEC) < 0 || pipe2(st->syncpipe, O_CLOEXEC) < 0 || pipe2(st->gopipe, O_CLOEXEC) < 0) {
		log_warn("run: pipe");
		return -1;
	}
	/* sockets made here, outside the cgroup, for the canary's LSM checks */
	if (st->cfg.have_lsm) {
		int sp[2];

		st->foreign[0] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (st->foreign[0] < 0 || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0) {
			log_warn("run: canary sockets");
			return -1;
		}
		st->foreign[1] = sp[0];
		st->foreign_peer = sp[1];
	}
	/* the seccomp baseline's refusals come back here to be counted */
	if (st->o.conf.profile == SLUICE_PROFILE_SANDBOX || st->o.conf.families_seccomp) {
		int err = sluice_seccomp_monitor_open(&st->mon);

		if (err) {
			log_warnx("run: socketpair for the seccomp monitor: %s", strerror(-err));
			return -1;
		}
		st->o.conf.seccomp_sock = st->mon.sock[1];
	}
	st->would_before = sandbox_stat(&st->sb, SLUICE_STAT_WOULD_DENY);
	{
		struct clone_args ca;

		memset(&ca, 0, sizeof(ca));
		ca.flags = CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_NEWPID;
		ca.pidfd = (uint64_t)(uintptr_t)&st->pidfd;
		ca.exit_signal = SIGCHLD;
		ca.cgroup = (uint64_t)st->cg_fd;
		fflush(NULL);
		st->pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (st->pid < 0) {
		log_warn("run: clone3(CLONE_INTO_CGROUP) failed (kernel 5.7+ needed)");
		return -1;
	}
	if (st->pid == 0)
		run_inside(st);
	/* from here on the canary's denials are marked as its own, also when
	 * CMD then cannot be executed (the lines drained at cleanup) */
	st->meta.canary_pid = (uint32_t)st->pid;
	close(st->errpipe[1]);
	st->errpipe[1] = -1;
	close(st->syncpipe[1]);
	st->syncpipe[1] = -1;
	close(st->gopipe[0]);
	st->gopipe[0] = -1;
	if (st->mon.sock[0] >= 0) {
		int err = sluice_seccomp_monitor_start(&st->mon);

		if (err) {
			kill(st->pid, SIGKILL);
			waitpid(st->pid, NULL, 0);
			log_warnx("run: cannot start the seccomp monitor: %s; nothing was run", strerror(-err));
			return -1;
		}
	}
	return 0;
}

/* The canary's verdict: on its report, the audit-mode count checked, the
 * v1 limits joined and the go-ahead given; a failure (or CMD not
 * executable) read from the error pipe.  Returns 0 to go on, or -1 with
 * *ret the exit status. */
static int run_wait_canary(struct run_state *st, int *ret)
{
	char msg[512], buf[512], c1;
	ssize_t n;
	int status;

	/* the canary reports done (or fails, closing the pipe) */
	if (read(st->syncpipe[0], &c1, 1) == 1) {
		uint64_t would = sandbox_stat(&st->sb, SLUICE_STAT_WOULD_DENY) - st->would_before;

		if (st->audit && would < 2) {
			kill(st->pid, SIGKILL);
			waitpid(st->pid, &status, 0);
			log_warnx("run: canary: the audit-mode hooks did not see the canary's connect and sendto (%llu of 2): not in force; nothing was run",
				  (unsigned long long)would);
			return -1;
		}
		/* into the v1 cgroups before it forks CMD: everything inherits them */
		if (sluice_limits_v1_attach(&st->v1, st->pid, msg, sizeof(msg)) < 0) {
			kill(st->pid, SIGKILL);
			waitpid(st->pid, &status, 0);
			log_warnx("run: %s; nothing was run", msg);
			return -1;
		}
		/* a signal during the start: CMD never runs (cmd_run says so) */
		if (got_signal) {
			kill(st->pid, SIGKILL);
			waitpid(st->pid, &status, 0);
			return -1;
		}
		if (write(st->gopipe[1], "g", 1) != 1) {
			log_warn("run: canary go-ahead");
			return -1;
		}
	}
	n = read(st->errpipe[0], buf, sizeof(buf) - 1);

	if (n > 0) {
		buf[n] = 0;
		waitpid(st->pid, &status, 0);
		log_warnx("run: %s", buf);
		*ret = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
		return -1;
	}
	return 0;
}

/* The sandbox-start line (what is in force, the variables CMD got), the
 * signals forwarded to the sandbox, the expiry watch.  Returns 0 or -1. */
static int run_announce(struct run_state *st)
{
	{
		char m[PATH_MAX + 1400], d[PATH_MAX + 256], fams[512];
		const char *fam_by = sluice_run_families_by(&st->cfg, &st->o.conf);

		sluice_policy_families_str(st->policy, fams, sizeof(fams));
		snprintf(m, sizeof(m), "sandbox %s started: pid %d, mode %s, %s; unix hooks: %s; bpf lsm: %s%s; "
			 "socket families: %s (allowed beyond unix, inet, inet6 and netlink route/diag: %s)%s%s", st->o.name, st->pid,
			 st->mode, sluice_confine_describe(&st->o.conf, d, sizeof(d)),
			 st->cfg.have_unix ? "active (unix connects and sends judged by path)" :
			 "not available (kernel before 6.7?): unix sockets are not judged by path",
			 st->cfg.have_lsm ? "active (foreign sockets, unix peers and socket families judged)" : st->lsm_msg,
			 st->cfg.have_lsm ? "" : ": sockets made outside the sandbox are not judged",
			 fam_by, fams[0] ? fams : "none", st->stdio_socks[0] ? "; sockets as stdio (made outside, unix ones usable): " : "",
			 st->stdio_socks);
		{
			/* which variables CMD got besides the minimal set: names
			 * only, never values */
			struct sluice_line *l = sluice_evlog_begin(&st->log, SLUICE_DS_LIFECYCLE, -1);
			char names[SLUICE_RUN_ENV_MAX * 132 + 4];

			SL_STR(l, "event.kind", "state");
			SL_STR(l, "event.action", "sandbox-start");
			SL_STR(l, "message", m);
			confine_fields(l, &st->meta);
			sluice_run_env_names_json(&st->o.renv, names, sizeof(names));
			sluice_line_put_raw(l, "sluice.env_passed", sizeof("sluice.env_passed") - 1, names, strlen(names));
			SL_BOOL(l, "sluice.inherit_env", st->o.renv.inherit);
			sluice_signer_fields(l, &st->signer);
			SL_STR(l, "sluice.families_enforced_by", fam_by);
			SL_STR(l, "sluice.families_allowed", fams);
			SL_STR(l, "sluice.stdio_sockets", st->stdio_socks);
			sluice_evlog_commit(&st->log);
		}
	}
	if (sluice_expiry_watch_init(&st->expiry, st->policy) < 0) {
		log_warnx("run: out of memory");
		return -1;
	}
	return 0;
}

/* 8. Events streamed, --timeout kept, dead children restarted until CMD
 * exits.  Returns CMD's exit status (124: --timeout; 128+N: signal N),
 * 2 if poll failed. */
static int run_supervise(struct run_state *st)
{
	uint64_t deadline = 0;
	bool timed_out = false;
	int ret = 2;

	forward_pid = st->pid;
	/* one that came after the canary's go-ahead, before forward_pid */
	if (got_signal)
		kill(st->pid, got_signal);
	if (st->o.lim.timeout_ms)
		deadline = sluice_monotonic_ms() + st->o.lim.timeout_ms;
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = sluice_consumer_fd(&st->consumer), .events = POLLIN },
			{ .fd = st->pidfd, .events = POLLIN },
		};
		int r = poll(pf, 2, 100);
		int status;

		sluice_consumer_drain(&st->consumer);
		sluice_expiry_watch_tick(&st->expiry, &st->log, -1);
		if (r < 0 && errno != EINTR)
			break;
		/* --timeout: kill the whole cgroup once; CMD's exit ends the loop */
		if (deadline && !timed_out && sluice_monotonic_ms() >= deadline) {
			timed_out = true;
			sluice_lifecycle_write(&st->log, "sandbox-timeout",
					       "--timeout expired: every process of the sandbox killed");
			cg_kill_procs(st->cg_path);
		}
		if (pf[1].revents & POLLIN) {
			if (waitpid(st->pid, &status, 0) == st->pid) {
				ret = timed_out ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
				break;
			}
		}
		/* a dead proxy or resolver is restarted on the same listeners */
		if (st->proxy_pid > 0 && waitpid(st->proxy_pid, &status, WNOHANG) == st->proxy_pid)
			run_restart_child(st, true);
		if (st->resolver_pid > 0 && waitpid(st->resolver_pid, &status, WNOHANG) == st->resolver_pid)
			run_restart_child(st, false);
		write_refusals(st, &st->mon);
	}
	forward_pid = 0;
	return ret;
}

/* The summary: the seccomp refusals, what the limits stopped, the last
 * events after the leftovers are killed, the sandbox-stop line. */
static void run_summary(struct run_state *st, int ret)
{
	char sc[64] = "";

	write_refusals(st, &st->mon);
	if (st->o.conf.profile == SLUICE_PROFILE_SANDBOX || st->o.conf.families_seccomp)
		snprintf(sc, sizeof(sc), ", syscalls refused %llu", sluice_seccomp_monitor_stop(&st->mon));
	/* what the limits stopped, read before the cgroups go */
	if (st->cg_path[0]) {
		struct sluice_limits_hit hit;
		char lm[160];

		sluice_limits_hits(&st->o.lim, &st->v1, st->cg_path, &hit);
		if (hit.oom_kills) {
			snprintf(lm, sizeof(lm), "memory: the --memory limit (%llu bytes) OOM-killed %llu process(es)",
				 (unsigned long long)st->o.lim.memory_bytes, hit.oom_kills);
			limit_line(&st->log, &st->meta, "memory", st->o.lim.memory_bytes, hit.oom_kills, lm);
		}
		if (hit.forks_refused) {
			snprintf(lm, sizeof(lm), "pids: the --pids limit (%llu) refused %llu fork(s)",
				 (unsigned long long)st->o.lim.pids, hit.forks_refused);
			limit_line(&st->log, &st->meta, "pids", st->o.lim.pids, hit.forks_refused, lm);
		}
	}
	/* leftovers in the cgroup are killed before the final drain, and
	 * the counters are read after it: lines + losses = denials */
	if (st->cg_path[0]) {
		cg_kill_and_remove(st->cg_path, 5000);
		st->cg_path[0] = 0;
	}
	sluice_consumer_drain(&st->consumer);
	run_stop_line(st, &st->meta, st->o.name, ret, sc);
}

/* Everything the run made, closed and removed (also after a failure). */
static void run_close(struct run_state *st)
{
	if (st->errpipe[0] >= 0)
		close(st->errpipe[0]);
	if (st->errpipe[1] >= 0)
		close(st->errpipe[1]);
	for (int i = 0; i < 2; i++) {
		if (st->syncpipe[i] >= 0)
			close(st->syncpipe[i]);
		if (st->gopipe[i] >= 0)
			close(st->gopipe[i]);
	}
	if (st->pidfd >= 0)
		close(st->pidfd);
	if (st->netns_fd >= 0)
		close(st->netns_fd);
	for (int i = 0; i < 2; i++)
		if (st->foreign[i] >= 0)
			close(st->foreign[i]);
	if (st->foreign_peer >= 0)
		close(st->foreign_peer);
	sluice_seccomp_monitor_stop(&st->mon);
	run_cleanup(st);
	sluice_evlog_release_seq(&st->log);
	sluice_confine_free(&st->o.conf);
}

static void run_state_init(struct run_state *st)
{
	memset(st, 0, sizeof(*st));
	st->policy_fd = -1;
	st->cg_fd = -1;
	st->netns_fd = -1;
	st->pidfd = -1;
	st->pid = -1;
	st->foreign[0] = st->foreign[1] = st->foreign_peer = -1;
	for (int i = 0; i < 2; i++)
		st->errpipe[i] = st->syncpipe[i] = st->gopipe[i] = -1;
	st->mon.sock[0] = st->mon.sock[1] = -1;
	st->listeners.proxy4 = st->listeners.proxy6 = st->listeners.dns_udp4 = -1;
	st->listeners.dns_udp6 = st->listeners.dns_tcp4 = st->listeners.dns_tcp6 = -1;
}

/* 3.-7. of the start, in order; each returns 0 or -1 said */
static int (*const run_steps[])(struct run_state *) = {
	run_bring_up, run_open_events, run_start_children, run_make_cgroup, run_spawn,
};

int cmd_run(int argc, char **argv)
{
	struct run_state st;
	int ret = 2, r;

	/* not root: the daemon runs CMD as this user (run_daemon.h) */
	if (geteuid() != 0)
		return sluice_run_via_daemon(argc, argv);
	run_state_init(&st);
	/* an events or log stream whose reader left (`sluice run ... 2>&1 |
	 * head`) is EPIPE on the write, counted as lost lines, not a signal
	 * that kills the loader before it removes the sandbox's pins (CMD
	 * gets SIGPIPE's default back: run_inside.c) */
	signal(SIGPIPE, SIG_IGN);
	r = run_parse_options(&st.o, argc, argv);
	if (r >= 0)
		return r;
	if (run_read_policy(&st) < 0)
		return 2;
	if (run_check_policy(&st) == 0 && run_check_host(&st) == 0 && run_open_netns_events(&st) == 0) {
		size_t i = 0;

		libbpf_set_print(libbpf_quiet);
		/* from the first thing made on: SIGINT, SIGTERM or SIGHUP
		 * during the start stops it between two steps and removes what
		 * was made (their default action would leave the cgroup, the
		 * pins and the children behind); later they go to CMD */
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		while (i < sizeof(run_steps) / sizeof(run_steps[0]) && !got_signal && run_steps[i](&st) == 0)
			i++;
		if (i == sizeof(run_steps) / sizeof(run_steps[0]) && !got_signal && run_wait_canary(&st, &ret) == 0 &&
		    run_announce(&st) == 0) {
			ret = run_supervise(&st);
			run_summary(&st, ret);
		} else if (got_signal) {
			log_warnx("run: signal %d before CMD started; nothing was run", (int)got_signal);
			ret = 128 + got_signal;
		}
	}
	run_close(&st);
	return ret;
}
