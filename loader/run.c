/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run.c - `sluice run`: a fresh cgroup, the filter attached and proven
 * (canary), CMD started inside it, events streamed until CMD exits, then
 * everything removed.
 */
#include "run.h"
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
#include "children.h"
#include "credentials.h"
#include "run_daemon.h"
#include "run_env.h"
#include "confine.h"
#include "events.h"
#include "evseq.h"
#include "labels.h"
#include "kfeatures.h"
#include "owner.h"
#include "run_limits.h"
#include "run_limits_v1.h"
#include "seccomp_baseline.h"
#include "run_stdio.h"
#include "run_trust.h"
#include "sandbox_ca.h"
#include "log.h"
#include "policy.h"
#include "policy_maps.h"
#include "policy_sig.h"
#include "expiry_watch.h"
#include "hostmounts.h"
#include "policy_within.h"
#include "sandbox.h"
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

static void usage_run(FILE *f)
{
	fprintf(f,
		"usage: sluice run [OPTIONS] -- CMD [ARGS...]\n"
		"\n"
		"Run CMD in a fresh cgroup whose network egress is limited to what the policy\n"
		"allows; print one JSON line per denied attempt.  Exits with CMD's status.\n"
		"By default (--profile sandbox) CMD also runs unprivileged on a read-only view of\n"
		"the host with one writable workdir (docs/filesystem.md).\n"
		"\n"
		"  --policy FILE        allowlist (YAML v1, see docs/policy.md); default: deny everything\n"
		"  --allowed-signers FILE  signed mode: refuse the policy unless POLICY.sig is a valid\n"
		"                       `sluice policy sign` signature by a key FILE names (OpenSSH\n"
		"                       allowed-signers format); the signer is in the start line\n"
		"  --boundary FILE      refuse the policy unless everything it allows, FILE (a policy)\n"
		"                       allows too (`sluice policy check --within`)\n"
		"  --events DEST        where sluice's JSON lines go (kernel events, proxy access log,\n"
		"                       resolver query log, lifecycle): a FILE (appended), - for\n"
		"                       stdout; default stderr.  CMD's stdout is never written to\n"
		"                       unless DEST is -\n"
		"  --events-format ecs|ocsf  the lines as ECS (default) or as OCSF events (docs/events.md)\n"
		"  --name NAME          sandbox name (default: run-<pid>)\n"
		"  --label KEY=VALUE    labels.KEY on every line of the run, from every writer\n"
		"                       (repeatable; KEY: a-z, 0-9, _; docs/events.md)\n"
		"  --netns PATH         run CMD in this network namespace (e.g. /run/netns/NAME);\n"
		"                       the proxy and resolver listen and dial there too\n"
		"  --isolate-net        run CMD in a fresh network namespace with loopback only: its one\n"
		"                       way out is sluice's proxy and resolver, which dial from the host's\n"
		"                       network (or --upstream-netns)\n"
		"  --upstream-netns PATH|host\n"
		"                       the proxy and resolver listen in CMD's netns but dial from this\n"
		"                       one (host: sluice's own)\n"
		"  --mode MODE          enforce (default) or audit (log what would be denied, deny nothing\n"
		"                       except raw/ICMP sockets)\n"
		"  --upstream-dns ADDR  resolver's upstream (default: /etc/resolv.conf)\n"
		"  --no-proxy           do not start the proxy (proxied ports fail closed)\n"
		"  --no-resolver        do not start the resolver (DNS fails closed)\n"
		"  --upstream-ca FILE   also trust the CA certificates (PEM) in FILE for the origins of\n"
		"                       inspected names (internal registries); see docs/proxy.md\n"
		"  --proxy-arg ARG      pass ARG to sluice-proxy (repeatable)\n"
		"  --resolver-arg ARG   pass ARG to sluice-resolver (repeatable)\n"
		"  --secret NAME=FILE   credential NAME's secret from FILE (instead of its file: or\n"
		"                       $CREDENTIALS_DIRECTORY/NAME); the sandbox never sees it\n"
		"  --env NAME[=VALUE]   pass NAME from this environment, or set it (CMD otherwise gets\n"
		"                       PATH HOME USER LOGNAME PWD LANG LC_* TERM TZ and what sluice sets)\n"
		"  --inherit-env        give CMD this whole environment (said in the sandbox-start line)\n"
		"  --proxy-env          also set http_proxy/https_proxy (and upper case) to the proxy;\n"
		"                       $SLUICE_PROXY always holds its URL\n"
		"  --require-lsm        refuse to start where the BPF LSM is not active (without it, sockets\n"
		"                       made outside the sandbox, unix sockets and socket families other\n"
		"                       than inet are not judged; the start event says which is in force)\n"
		"  --no-lsm             do not load the BPF LSM programs (testing the fallback)\n"
		"  --keep-caps          do not drop CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_BPF, ...\n"
		"                       from CMD (unsafe; for testing the kernel hooks alone; the sandbox\n"
		"                       profile needs --user root with it)\n"
		"  --memory SIZE        memory limit of the sandbox (512M, 2G): memory.max, or on a hybrid\n"
		"                       layout memory.limit_in_bytes of a v1 memory cgroup; the OOM killer\n"
		"                       kills inside it (status 137) and a limit-exceeded line says so\n"
		"  --pids N             at most N processes and threads (pids.max, v2 or v1)\n"
		"  --cpu N              N CPUs' worth of time (0.5, 2; cpu.max, or the v1 cpu controller's\n"
		"                       CFS quota)\n"
		"  --timeout DURATION   kill everything in the sandbox after DURATION (30, 1.5, 500ms, 10m, 2h)\n"
		"                       and exit 124, as timeout(1).  A limit no cgroup hierarchy can\n"
		"                       enforce is an error (exit 2), never ignored.\n"
		"%s"
		"  -v, --verbose        diagnostics on stderr\n"
		"\n"
		"Examples:\n"
		"  sluice run -- curl -sS https://example.com        # denied: default policy\n"
		"  sluice run --policy policies/python-pip.yaml --events ev.jsonl -- pip download requests\n"
		"  sluice run --workdir ~/src/app --user $USER -- make test\n"
		"  sluice run --profile egress-only -- apt-get install -y jq   # root, host writable\n"
		"\n"
		"Exit status: CMD's status (128+N if killed by signal N); 124 if --timeout expired;\n"
		"2 for a usage or environment error (bad policy, no cgroup2, no BPF, a limit that\n"
		"cannot be enforced, a bad --user/--workdir/--rw/--ro/--hide), nothing left behind.\n",
		sluice_confine_usage);
}

/* Capabilities a sandboxed command must not hold: each would let it detach
 * the filter, open raw sockets or leave the cgroup (docs/threat-model.md). */
static const int dropped_caps[] = {
	CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE,
	CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_BOOT, CAP_MAC_ADMIN, CAP_MAC_OVERRIDE,
	CAP_SETPCAP, CAP_SYS_CHROOT, CAP_CHECKPOINT_RESTORE,
};

static int drop_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];

	for (size_t i = 0; i < sizeof(dropped_caps) / sizeof(dropped_caps[0]); i++)
		if (prctl(PR_CAPBSET_DROP, dropped_caps[i], 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(dropped_caps) / sizeof(dropped_caps[0]); i++) {
		int c = dropped_caps[i];

		data[c / 32].effective &= ~(1u << (c % 32));
		data[c / 32].permitted &= ~(1u << (c % 32));
		data[c / 32].inheritable &= ~(1u << (c % 32));
	}
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* Report a failure from the child to the parent through the error pipe. */
static void __attribute__((noreturn)) child_fail(int fd, int code, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	ssize_t w;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w = write(fd, buf, strlen(buf));
	(void)w;
	_exit(code);
}

static const char *errname(int e)
{
	return e == 0 ? "success" : strerror(e);
}

/*
 * The canary, run inside the cgroup before CMD: a UDP sendto and a TCP
 * connect to 127.0.0.1:`port` (a port the policy neither allows nor
 * proxies) and a raw ICMP socket must each be refused with EPERM.  A
 * missing hook would make them fail differently (loopback, closed port):
 * harmless, and caught here.  In audit mode the first two are let through
 * by design; the loader then checks that both were counted as would-deny.
 */
/*
 * The BPF LSM part of the canary (`foreign`: sockets the loader made
 * outside the cgroup, inherited here: a UDP socket and one end of a unix
 * datagram socketpair).  Sending on either and connecting the UDP one
 * from inside, and creating an AF_VSOCK socket, must each be refused with
 * EPERM, in audit mode too.
 */
static void canary_lsm(int errfd, const int foreign[2], const struct sockaddr_in *sin)
{
	int fd, r;

	r = (int)sendto(foreign[0], "x", 1, 0, (const struct sockaddr *)sin, sizeof(*sin));
	if (r >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: a UDP socket made outside the sandbox was usable inside (%s): hook lsm/socket_sendmsg not in force",
			   r >= 0 ? "sent" : errname(errno));
	r = connect(foreign[0], (const struct sockaddr *)sin, sizeof(*sin));
	if (r == 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: a UDP socket made outside the sandbox could be connected inside (%s): hook lsm/socket_connect not in force",
			   r == 0 ? "connected" : errname(errno));
	r = (int)send(foreign[1], "x", 1, 0);
	if (r >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: a unix socket made outside the sandbox was usable inside (%s): hook lsm/unix_may_send not in force",
			   r >= 0 ? "sent" : errname(errno));
	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: an AF_VSOCK socket was not refused (%s): hook lsm/socket_create not in force",
			   fd >= 0 ? "created" : errname(errno));
	close(foreign[0]);
	close(foreign[1]);
}

static bool unix_hooks, canary_audit; /* set in the canary child only */

/*
 * The unix part of the canary: a connect and an addressed send to an
 * abstract name no policy entry names (nobody listens there: a missing
 * hook gives ECONNREFUSED) must each be refused with EPERM.  Audit mode
 * lets them through to that empty name; the would-deny count shows them.
 */
static void canary_unix(int errfd)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t sl;
	int fd, r, n;

	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "sluice-canary-%d", (int)getpid());
	sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a unix socket: %s", strerror(errno));
	r = connect(fd, (struct sockaddr *)&sun, sl);
	if (r == 0 || (errno != EPERM && !canary_audit))
		child_fail(errfd, 2, "canary: a unix connect to @%s was not refused (%s): hook connect_unix not in force",
			   sun.sun_path + 1, r == 0 ? "connected" : errname(errno));
	close(fd);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a unix socket: %s", strerror(errno));
	r = (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&sun, sl);
	if (r >= 0 || (errno != EPERM && !canary_audit))
		child_fail(errfd, 2, "canary: a unix sendto @%s was not refused (%s): hook sendmsg_unix not in force",
			   sun.sun_path + 1, r >= 0 ? "sent" : errname(errno));
	close(fd);
}

static void canary(int errfd, uint16_t port, bool audit, const int foreign[2])
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, r;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a UDP socket: %s", strerror(errno));
	r = (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&sin, sizeof(sin));
	/* audit mode lets it through: the loader checks the would-deny counter instead */
	if (!audit && (r >= 0 || errno != EPERM))
		child_fail(errfd, 2, "canary: UDP sendto 127.0.0.1:%u from inside the cgroup was not refused (%s): hook sendmsg4 not in force",
			   port, r >= 0 ? "sent" : errname(errno));
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a TCP socket: %s", strerror(errno));
	r = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (!audit && (r == 0 || errno != EPERM))
		child_fail(errfd, 2, "canary: TCP connect 127.0.0.1:%u from inside the cgroup was not refused (%s): hook connect4 not in force",
			   port, r == 0 ? "connected" : errname(errno));
	close(fd);
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: raw socket from inside the cgroup was not refused (%s): hook sock_create not in force",
			   fd >= 0 ? "created" : errname(errno));
	if (unix_hooks)
		canary_unix(errfd);
	if (foreign[0] >= 0)
		canary_lsm(errfd, foreign, &sin);
}

static volatile pid_t init_child;

static void init_forward(int sig)
{
	if (init_child > 0)
		kill(init_child, sig);
}

/*
 * pid 1 of the sandbox's pid namespace, after forking CMD: forward the
 * signals a user sends (sluice run forwards them here), reap every orphan,
 * and exit with CMD's status (128+N if signal N killed it) once CMD is
 * gone; the kernel then kills whatever else is left in the namespace.
 */
static void __attribute__((noreturn)) sandbox_init(int errfd, pid_t cmd)
{
	static const int fwd[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct sigaction sa;
	int status = 0;

	close(errfd); /* CMD holds its own copy until exec */
	prctl(PR_SET_NAME, "sluice-init", 0, 0, 0);
	init_child = cmd;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = init_forward;
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaction(fwd[i], &sa, NULL);
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, 0);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break;
		if (w == cmd) {
			status = st;
			break;
		}
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 2);
}

struct run_state {
	struct sluice_policy *policy;
	struct sluice_sandbox sb;
	bool sb_loaded;
	struct sluice_listeners listeners; /* held for the sandbox's life: nobody else can bind them */
	pid_t proxy_pid, resolver_pid;
	char proxy_bin[4096], resolver_bin[4096], flow_map[512];
	struct sluice_child_opts proxy_co, resolver_co;
	struct sluice_restarts proxy_restarts, resolver_restarts;
	char cg_path[4096];
	char cg_parent[4096];
	struct sluice_limits_v1 v1; /* the limits on cgroup v1 hierarchies (hybrid layout) */
	int cg_fd;
	int events;                 /* fd: 2 (stderr), 1 (--events -) or the --events file */
	struct sluice_evlog log;    /* the loader's lines (kernel, lifecycle) on `events` */
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
};

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

/*
 * The proxy (proxy) or resolver of the sandbox exited: start it again on
 * the listeners this process holds, within its restart budget.  Past the
 * budget, or if it does not come up, give up: close its listeners, so the
 * sandbox's traffic to it fails closed (a socket someone else binds there
 * later lacks sluice's mark: the kernel refuses it, redirect_target_not_ours).
 */
static void restart_child(struct run_state *st, bool proxy)
{
	const char *what = proxy ? "sluice-proxy" : "sluice-resolver";
	struct sluice_restarts *r = proxy ? &st->proxy_restarts : &st->resolver_restarts;
	pid_t *pid = proxy ? &st->proxy_pid : &st->resolver_pid;
	char m[768], msg[512] = "";

	*pid = 0;
	/* one that dies again before it is ready uses up the budget too */
	while (sluice_restart_allowed(r, sluice_monotonic_ms())) {
		pid_t p = sluice_child_start(proxy ? st->proxy_bin : st->resolver_bin, &st->listeners,
					     proxy ? &st->proxy_co : &st->resolver_co, 10000, msg, sizeof(msg));

		if (p > 0) {
			*pid = p;
			snprintf(m, sizeof(m), "%s exited; restarted on the same listening sockets (pid %d, restart %u)",
				 what, p, r->total);
			sluice_lifecycle_write(&st->log, proxy ? "proxy-restarted" : "resolver-restarted", m);
			return;
		}
	}
	snprintf(m, sizeof(m), "%u restarts within %u s%s%s", SLUICE_RESTART_MAX, SLUICE_RESTART_WINDOW_MS / 1000,
		 msg[0] ? "; the last: " : "", msg);
	snprintf(msg, sizeof(msg), "%s", m);
	sluice_listeners_close_role(&st->listeners, proxy);
	snprintf(m, sizeof(m), "%s exited and is not restarted (%s): %s now fail (fail closed)", what, msg,
		 proxy ? "proxied connections" : "DNS queries");
	sluice_lifecycle_write(&st->log, proxy ? "proxy-gave-up" : "resolver-gave-up", m);
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

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "events", required_argument, NULL, 'e' },
		{ "events-format", required_argument, NULL, 1201 },
		{ "label", required_argument, NULL, 1202 },
		{ "name", required_argument, NULL, 'n' },
		{ "netns", required_argument, NULL, 'N' },
		{ "upstream-netns", required_argument, NULL, 'U' },
		{ "isolate-net", no_argument, NULL, 'X' },
		{ "mode", required_argument, NULL, 'm' },
		{ "upstream-dns", required_argument, NULL, 'u' },
		{ "no-proxy", no_argument, NULL, 'P' },
		{ "no-resolver", no_argument, NULL, 'R' },
		{ "proxy-arg", required_argument, NULL, 'x' },
		{ "upstream-ca", required_argument, NULL, 'A' },
		{ "resolver-arg", required_argument, NULL, 'y' },
		{ "keep-caps", no_argument, NULL, 'k' },
		{ "require-lsm", no_argument, NULL, 'L' },
		{ "no-lsm", no_argument, NULL, 'l' },
		{ "memory", required_argument, NULL, 'M' },
		{ "pids", required_argument, NULL, 'I' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "proxy-env", no_argument, NULL, 'E' },
		{ "secret", required_argument, NULL, 'S' },
		{ "env", required_argument, NULL, SLUICE_OPT_ENV },
		{ "inherit-env", no_argument, NULL, SLUICE_OPT_INHERIT_ENV },
		{ "allowed-signers", required_argument, NULL, 1101 },
		{ "boundary", required_argument, NULL, 1102 },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		SLUICE_CONFINE_LONGOPTS,
		{ 0 },
	};
	const char *policy_path = NULL, *events_path = NULL, *netns_path = NULL, *mode = NULL,
		   *upstream = NULL, *signers_path = NULL, *boundary_path = NULL, *upstream_netns = NULL,
		   *child_netns = NULL;
	char iso_path[64];
	int isolate = 0;
	char name[SLUICE_NAME_MAX + 1] = "", msg[512], cg2[1024];
	char *proxy_extra[32] = { 0 }, *resolver_extra[32] = { 0 };
	const char *upstream_ca_file = NULL;
	struct sluice_secret_source secret_src[SLUICE_SECRET_ARGS_MAX];
	struct sluice_run_env renv = { .inherit = false };
	size_t n_secret_src = 0;
	int n_px = 0, n_rx = 0, no_proxy = 0, no_resolver = 0, keep_caps = 0, proxy_env = 0, verbose = 0, c;
	int require_lsm = 0, no_lsm = 0, foreign[2] = { -1, -1 }, foreign_peer = -1;
	char lsm_msg[256] = "not loaded (--no-lsm)", stdio_socks[64];
	struct run_state st;
	struct sluice_bpf_config cfg;
	struct sluice_event_meta meta;
	int ret = 2, errpipe[2] = { -1, -1 }, syncpipe[2] = { -1, -1 }, gopipe[2] = { -1, -1 };
	int pidfd = -1, netns_fd = -1, port;
	uint64_t would_before = 0, deadline = 0;
	struct sluice_limits lim = { 0 }, lim_v2;
	struct sluice_confine conf;
	struct sluice_seccomp_monitor mon = { .sock = { -1, -1 } };
	bool audit, timed_out = false;
	char go = 0;
	pid_t pid = -1, cmd_pid;
	static struct sluice_labels labels;

	/* not root: the daemon runs CMD as this user (run_daemon.h) */
	if (geteuid() != 0)
		return sluice_run_via_daemon(argc, argv);
	memset(&st, 0, sizeof(st));
	st.policy_fd = -1;
	sluice_confine_init(&conf);
	st.cg_fd = -1;
	st.listeners.proxy4 = st.listeners.proxy6 = st.listeners.dns_udp4 = -1;
	st.listeners.dns_udp6 = st.listeners.dns_tcp4 = st.listeners.dns_tcp6 = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
		switch (c) {
		case 'p': policy_path = optarg; break;
		case 'e': events_path = optarg; break;
		case 1201:
			if (strcmp(optarg, "ecs") != 0 && strcmp(optarg, "ocsf") != 0) {
				fprintf(stderr, "sluice: run: --events-format must be ecs or ocsf, not '%s'\n", optarg);
				return 2;
			}
			sluice_evlog_use_ocsf(strcmp(optarg, "ocsf") == 0);
			break;
		case 1202:
			if (sluice_label_add(&labels, optarg, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "sluice: run: --label: %s\n", msg);
				return 2;
			}
			break;
		case 'n':
			if (sluice_name_check(optarg, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "sluice: run: --name: %s\n", msg);
				return 2;
			}
			snprintf(name, sizeof(name), "%s", optarg);
			break;
		case 'N': netns_path = optarg; break;
		case 'U': upstream_netns = optarg; break;
		case 'X': isolate = 1; break;
		case 'm': mode = optarg; break;
		case 'u': upstream = optarg; break;
		case 'P': no_proxy = 1; break;
		case 'R': no_resolver = 1; break;
		case 'x': if (n_px < 30) proxy_extra[n_px++] = optarg; break;
		case 'A': upstream_ca_file = optarg; break;
		case 'y': if (n_rx < 30) resolver_extra[n_rx++] = optarg; break;
		case 'k': keep_caps = 1; break;
		case 'L': require_lsm = 1; break;
		case 'l': no_lsm = 1; break;
		case 'M': case 'I': case 'C': case 'T': {
			int r = c == 'M' ? sluice_parse_memory(optarg, &lim.memory_bytes, msg, sizeof(msg)) :
				c == 'I' ? sluice_parse_pids(optarg, &lim.pids, msg, sizeof(msg)) :
				c == 'C' ? sluice_parse_cpu(optarg, &lim.cpu_milli, msg, sizeof(msg)) :
					   sluice_parse_duration(optarg, &lim.timeout_ms, msg, sizeof(msg));

			if (r < 0) {
				fprintf(stderr, "sluice: run: --%s: %s\n", c == 'M' ? "memory" : c == 'I' ? "pids" :
					c == 'C' ? "cpu" : "timeout", msg);
				return 2;
			}
			break;
		}
		case 'E': proxy_env = 1; break;
		case SLUICE_OPT_INHERIT_ENV: renv.inherit = true; break;
		case SLUICE_OPT_ENV: {
			int r = sluice_run_env_add(&renv, optarg, msg, sizeof(msg));

			if (r < 0) {
				log_warnx("run: %s", msg);
				return 2;
			}
			if (r > 0)
				log_warnx("run: warning: --env %.*s looks like a secret: it will be readable by "
					  "everything in the sandbox; a policy credential keeps it outside "
					  "(credentials: in docs/policy.md)", (int)strcspn(optarg, "="), optarg);
			break;
		}
		case 'S':
			if (n_secret_src == SLUICE_SECRET_ARGS_MAX ||
			    sluice_secret_source_parse(optarg, &secret_src[n_secret_src]) < 0) {
				log_warnx("run: --secret wants NAME=/absolute/path (at most %d)", SLUICE_SECRET_ARGS_MAX);
				return 2;
			}
			n_secret_src++;
			break;
		case 1101: signers_path = optarg; break;
		case 1102: boundary_path = optarg; break;
		case 'v': verbose = 1; break;
		case 'h': usage_run(stdout); return 0;
		default: {
			int r = sluice_confine_option(&conf, c, optarg, msg, sizeof(msg));

			if (r < 0) {
				fprintf(stderr, "sluice: run: %s\n", msg);
				return 2;
			}
			if (r > 0) {
				usage_run(stderr);
				return 2;
			}
			break;
		}
		}
	}
	log_init("sluice", verbose);
	/* the children's banners ("serving ...") only with -v */
	if (verbose) {
		proxy_extra[n_px++] = "-v";
		resolver_extra[n_rx++] = "-v";
	}
	if (optind >= argc) {
		log_warnx("run: no command given (usage: sluice run [OPTIONS] -- CMD [ARGS...])");
		return 2;
	}
	if (mode && strcmp(mode, "enforce") != 0 && strcmp(mode, "audit") != 0) {
		log_warnx("run: --mode must be enforce or audit, not '%s'", mode);
		return 2;
	}
	if (!name[0])
		snprintf(name, sizeof(name), "run-%d", getpid());

	/* 1. the policy: all checks before anything is created.  It is parsed
	 * (and, signed, verified) from bytes read once; the children get the
	 * same bytes in a sealed memfd, never the path again. */
	if (signers_path && !policy_path) {
		log_warnx("run: --allowed-signers needs --policy (a signed policy file)");
		return 2;
	}
	if (policy_path) {
		struct sluice_signers signers;
		char pmsg[1536], *bytes = NULL;
		size_t n_bytes = 0;
		int r;

		if (signers_path && sluice_signers_load(signers_path, &signers, pmsg, sizeof(pmsg)) < 0) {
			log_warnx("%s", pmsg);
			return 2;
		}
		r = sluice_policy_load_checked(policy_path, signers_path ? &signers : NULL, &st.policy, &st.signer,
					       &bytes, &n_bytes, NULL, NULL, pmsg, sizeof(pmsg));
		if (signers_path)
			sluice_signers_free(&signers);
		if (r < 0) {
			log_warnx("%s", pmsg);
			return 2;
		}
		st.policy_fd = sluice_policy_memfd(bytes, n_bytes);
		free(bytes);
		if (st.policy_fd < 0) {
			log_warnx("run: cannot hold the policy in a memfd: %s", strerror(-st.policy_fd));
			sluice_policy_free(st.policy);
			return 2;
		}
	} else {
		st.policy = sluice_policy_default();
		if (!st.policy) {
			log_warnx("run: cannot build the default policy");
			return 2;
		}
	}
	/* the credentials' secrets: read here (root), handed to the proxy as
	 * content; a missing, empty or public one refuses the start */
	struct sluice_policy_error perr;

	if (sluice_secrets_load(st.policy, secret_src, n_secret_src, getenv("CREDENTIALS_DIRECTORY"), &st.secrets,
				&perr) < 0 ||
	    (perr.message[0] = 0, sluice_secrets_placeholders(&st.secrets, NULL) < 0)) {
		log_warnx("%s", perr.message[0] ? sluice_policy_error_str(&perr, msg, sizeof(msg)) :
			  "run: no random bytes for the credentials' placeholders");
		goto out;
	}
	/* the CAs trusted for origins: read here, handed over as content */
	{
		size_t n = 0;

		if (sluice_upstream_ca_load(upstream_ca_file, st.policy, &st.upstream_ca, &n, &perr) < 0) {
			log_warnx("run: %s", sluice_policy_error_str(&perr, msg, sizeof(msg)));
			goto out;
		}
	}
	/* this process holds the secrets for the proxy's restarts: no core
	 * dump of it (execve gives CMD its own dumpable flag back) */
	if (st.secrets.n && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		log_warn("run: prctl(PR_SET_DUMPABLE)");
		goto out;
	}
	if (mode)
		st.policy->mode = strcmp(mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	mode = st.policy->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce";
	if (boundary_path) {
		/* the policy (and --mode) as it will run, against the boundary */
		struct sluice_policy *b = NULL;
		char bmsg[4096];
		int r = sluice_boundary_load(boundary_path, &b, bmsg, sizeof(bmsg));

		if (r == 0)
			r = sluice_policy_check_within(st.policy, b, boundary_path, bmsg, sizeof(bmsg));
		sluice_policy_free(b);
		if (r != 0) {
			log_warnx("%s", bmsg);
			if (r > 0)
				log_warnx("run: the policy allows %d thing%s beyond the boundary %s: not run", r, r == 1 ? "" : "s",
					  boundary_path);
			goto out;
		}
	}
	audit = st.policy->mode == SLUICE_MODE_AUDIT;

	/* 2. the environment */
	if (geteuid() != 0) {
		log_warnx("run: must run as root (BPF programs, cgroups)");
		goto out;
	}
	/* the confinement: user, workdir and paths checked before anything is made */
	conf.keep_caps = keep_caps;
	if (sluice_confine_from_policy(&conf, st.policy, msg, sizeof(msg)) < 0 ||
	    sluice_confine_prepare(&conf, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		goto out;
	}
	{
		/* under `ip netns exec` (a fresh /sys): the mounts of the caller's namespace */
		int err = sluice_host_mounts_restore(msg, sizeof(msg));

		if (err < 0) {
			log_warnx("run: no cgroup2 mount in /proc/mounts, and %s", msg);
			goto out;
		}
		if (err > 0)
			log_info("run: no cgroup2 mount in this mount namespace (ip netns exec remounts /sys): %s", msg);
		err = cg2_find_mount("/proc/mounts", cg2, sizeof(cg2));
		if (err) {
			log_warnx("run: no cgroup2 mount in /proc/mounts: %s",
				  err == -ENOENT ? "mount cgroup v2 (unified or hybrid layout)" : strerror(-err));
			goto out;
		}
	}
	/* every limit asked for must be enforceable, before anything is made:
	 * by the v2 hierarchy, or (hybrid layout) by a v1 one */
	sluice_limits_v1_plan(&lim, cg2, "/proc/mounts", &st.v1, &lim_v2);
	if (sluice_limits_check(&lim_v2, cg2, "/proc/mounts", msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		goto out;
	}
	if (bpffs_ensure(SLUICE_BPFFS) < 0) {
		log_warn("run: no BPF filesystem at %s and cannot mount one", SLUICE_BPFFS);
		goto out;
	}
	if (isolate && netns_path) {
		log_warnx("run: --isolate-net makes CMD a network namespace of its own: not with --netns");
		goto out;
	}
	if (upstream_netns && strcmp(upstream_netns, "host") != 0) {
		int fd = open(upstream_netns, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			log_warn("run: cannot open --upstream-netns %s", upstream_netns);
			goto out;
		}
		close(fd);
	}
	if (isolate) {
		/* loopback only: the proxy and the resolver are the only way out */
		netns_fd = sluice_netns_isolated(msg, sizeof(msg));
		if (netns_fd < 0) {
			log_warnx("run: --isolate-net: %s", msg);
			goto out;
		}
		snprintf(iso_path, sizeof(iso_path), "/proc/%d/fd/%d", (int)getpid(), netns_fd);
		netns_path = iso_path;
	} else if (netns_path) {
		netns_fd = open(netns_path, O_RDONLY | O_CLOEXEC);
		if (netns_fd < 0) {
			log_warn("run: cannot open network namespace %s", netns_path);
			goto out;
		}
	}
	/* where the proxy and resolver dial from: --upstream-netns (host: ours),
	 * the host's for --isolate-net, else the sandbox's */
	if (upstream_netns)
		child_netns = strcmp(upstream_netns, "host") == 0 ? NULL : upstream_netns;
	else
		child_netns = isolate ? NULL : netns_path;
	if (events_path && strcmp(events_path, "-") == 0) {
		st.events = STDOUT_FILENO;
	} else if (events_path) {
		st.events = open(events_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (st.events < 0) {
			log_warn("run: cannot open events file %s", events_path);
			goto out;
		}
	} else {
		st.events = STDERR_FILENO;
	}
	libbpf_set_print(libbpf_quiet);

	/* 3. listeners for the proxy and resolver, inside the sandbox's netns */
	memset(&cfg, 0, sizeof(cfg));
	{
		char tried[2 * 4096 + 8];
		int want_proxy = !no_proxy, want_dns = !no_resolver;

		/* a missing helper is an error: --no-proxy / --no-resolver skip one */
		if (want_proxy && !sluice_helper_path("sluice-proxy", st.proxy_bin, sizeof(st.proxy_bin), tried, sizeof(tried))) {
			log_warnx("run: sluice-proxy not found (tried %s); install it or pass --no-proxy", tried);
			goto out;
		}
		if (want_dns && !sluice_helper_path("sluice-resolver", st.resolver_bin, sizeof(st.resolver_bin), tried,
						    sizeof(tried))) {
			log_warnx("run: sluice-resolver not found (tried %s); install it or pass --no-resolver", tried);
			goto out;
		}
		if (sluice_listeners_open(&st.listeners, netns_path, want_proxy, want_dns, &cfg, msg, sizeof(msg)) < 0) {
			log_warnx("run: %s", msg);
			goto out;
		}
	}
	cfg.have_set_retval = sluice_have_set_retval();
	cfg.have_lsm = !no_lsm && sluice_bpf_lsm_active(lsm_msg, sizeof(lsm_msg));
	cfg.have_unix = 1;

	/* 4. load, fill, pin */
	if (sandbox_load(&st.sb, name, &cfg, st.policy, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		goto out;
	}
	st.sb_loaded = true;
	if (st.sb.lsm_err)
		snprintf(lsm_msg, sizeof(lsm_msg), "the kernel refused the BPF LSM programs (%s)", strerror(-st.sb.lsm_err));
	cfg = st.sb.cfg;
	/* the socket families: the BPF LSM's socket_create where it loaded;
	 * else, under egress-only, the seccomp filter's family row alone (the
	 * sandbox profile's baseline has it anyway) */
	conf.families_seccomp = conf.profile == SLUICE_PROFILE_EGRESS_ONLY && !cfg.have_lsm;
	if (!cfg.have_lsm && require_lsm) {
		log_warnx("run: --require-lsm: %s", lsm_msg);
		goto out;
	}
	/* an inet socket as stdio is the launcher's: judged only by the BPF LSM */
	if (sluice_stdio_sockets(cfg.have_lsm, stdio_socks, sizeof(stdio_socks), msg, sizeof(msg)) < 0) {
		log_warnx("run: %s; nothing was run", msg);
		goto out;
	}
	if (sluice_listeners_mark(&st.listeners, st.sb.map_fd[SLUICE_MAP_LISTENERS], msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		goto out;
	}
	if (sandbox_apply_policy(&st.sb, st.policy, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s: %s", st.policy->path ? st.policy->path : "policy", msg);
		goto out;
	}
	{
		int err = sandbox_pin_maps(&st.sb);

		if (err) {
			log_warnx("run: cannot pin maps under %s: %s (another sandbox named '%s'?)", st.sb.pin_dir,
				  strerror(-err), name);
			goto out;
		}
		/* who owns the pins, for `sluice gc` after a SIGKILL; and what
		 * the sandbox is, for `sluice status` */
		{
			char d[256], info[512];

			snprintf(info, sizeof(info), "policy %s (%.12s), mode %s, %s, socket families by %s",
				 st.policy->name ? st.policy->name : "", st.policy->digest, mode,
				 sluice_confine_describe(&conf, d, sizeof(d)), sluice_run_families_by(&cfg, &conf));
			err = sluice_owner_write_info(name, "run", info);
		}
		if (err) {
			log_warnx("run: cannot record the owner in %s: %s", SLUICE_OWNER_DIR, strerror(-err));
			goto out;
		}
		st.owner_written = true;
	}

	memset(&meta, 0, sizeof(meta));
	meta.sandbox = name;
	meta.policy_name = st.policy->name;
	meta.policy_digest = st.policy->digest;
	meta.mode = mode;
	meta.boot_to_real_ns = sluice_boot_to_real_ns();
	meta.labels = &labels;
	sluice_confine_meta(&conf, &meta);
	{
		struct sluice_envelope env;
		int err;

		sluice_envelope_of(&meta, &env);
		sluice_evlog_init(&st.log, st.events, st.events == STDERR_FILENO ? "stderr" :
				  st.events == STDOUT_FILENO ? "stdout" : events_path, "sluice", &env);
		/* event.sequence: one counter for this run's three writers,
		 * handed to the proxy and resolver (and their restarts) */
		err = sluice_evlog_share_seq(&st.log, sluice_evseq_memfd());
		if (err < 0) {
			log_warnx("run: cannot make the events' sequence counter: %s", strerror(-err));
			goto out;
		}
	}
	if (sluice_consumer_init(&st.consumer, &st.sb, &meta, &st.log) < 0) {
		log_warn("run: cannot read the ring buffer");
		goto out;
	}
	st.consumer_ok = true;

	/* 5. proxy and resolver, on listeners this process keeps (a child that
	 * dies is restarted on them: its port is never free for another) */
	{
		struct sluice_child_opts co = {
			.policy_path = policy_path, .policy_fd = st.policy_fd, .netns_path = child_netns, .sandbox = name,
			.log_fd = st.events, .upstream_dns = upstream, .mode = mode,
			.secrets = &st.secrets, .ocsf = st.log.ocsf,
			.seq_fd = sluice_evlog_seq_fd(&st.log), .labels = &labels,
		};

		snprintf(st.flow_map, sizeof(st.flow_map), "%s/sluice_flows", st.sb.pin_dir);
		st.proxy_co = co;
		st.proxy_co.flow_map = st.flow_map;
		st.proxy_co.extra = proxy_extra;
		st.proxy_co.upstream_ca = st.upstream_ca;
		st.resolver_co = co;
		st.resolver_co.extra = resolver_extra;
		if (cfg.have_proxy) {
			const char *why = "";

			/* TLS inspection: the run's one CA (a restarted proxy gets
			 * it too) and the bundle CMD will trust (run_trust.h) */
			if (sluice_ca_make(st.policy, name, NULL, &st.ca, &why) < 0 ||
			    sluice_trust_prepare(&st.trust, sluice_ca_cert_part(st.ca), msg, sizeof(msg)) < 0) {
				log_warnx("run: %s", why[0] ? why : msg);
				goto out;
			}
			st.proxy_co.ca = st.ca;
			st.proxy_pid = sluice_child_start(st.proxy_bin, &st.listeners, &st.proxy_co, 10000, msg, sizeof(msg));
			if (st.proxy_pid < 0) {
				log_warnx("run: %s", msg);
				goto out;
			}
		}
		if (cfg.have_dns) {
			st.resolver_pid = sluice_child_start(st.resolver_bin, &st.listeners, &st.resolver_co, 10000, msg,
							     sizeof(msg));
			if (st.resolver_pid < 0) {
				log_warnx("run: %s", msg);
				goto out;
			}
		}
	}

	/* 6. the cgroup, attached before anything runs in it */
	snprintf(st.cg_parent, sizeof(st.cg_parent), "%s/sluice", cg2);
	if (mkdir(st.cg_parent, 0755) < 0 && errno != EEXIST) {
		log_warn("run: cannot create %s", st.cg_parent);
		st.cg_parent[0] = 0;
		goto out;
	}
	snprintf(st.cg_path, sizeof(st.cg_path), "%s/sluice/%s", cg2, name);
	st.cg_fd = cg_create(st.cg_path);
	if (st.cg_fd < 0) {
		log_warnx("run: cannot create cgroup %s: %s", st.cg_path, strerror(-st.cg_fd));
		st.cg_path[0] = 0;
		goto out;
	}
	if (sluice_limits_apply(&lim_v2, cg2, st.cg_parent, st.cg_path, msg, sizeof(msg)) < 0 ||
	    sluice_limits_v1_create(&st.v1, &lim, name, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s; nothing was run", msg);
		goto out;
	}
	if (sandbox_attach(&st.sb, st.cg_fd, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s; nothing was run", msg);
		goto out;
	}
	port = canary_port(st.policy, &cfg);
	if (port < 0) {
		log_warnx("run: the policy allows every port on 127.0.0.1: no canary destination left");
		goto out;
	}

	/* 7. CMD, born inside the cgroup (CLONE_INTO_CGROUP, 5.7+) */
	if (pipe2(errpipe, O_CLOEXEC) < 0 || pipe2(syncpipe, O_CLOEXEC) < 0 || pipe2(gopipe, O_CLOEXEC) < 0) {
		log_warn("run: pipe");
		goto out;
	}
	/* sockets made here, outside the cgroup, for the canary's LSM checks */
	if (cfg.have_lsm) {
		int sp[2];

		foreign[0] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (foreign[0] < 0 || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0) {
			log_warn("run: canary sockets");
			goto out;
		}
		foreign[1] = sp[0];
		foreign_peer = sp[1];
	}
	/* the seccomp baseline's refusals come back here to be counted */
	if (conf.profile == SLUICE_PROFILE_SANDBOX || conf.families_seccomp) {
		int err = sluice_seccomp_monitor_open(&mon);

		if (err) {
			log_warnx("run: socketpair for the seccomp monitor: %s", strerror(-err));
			goto out;
		}
		conf.seccomp_sock = mon.sock[1];
	}
	would_before = sandbox_stat(&st.sb, SLUICE_STAT_WOULD_DENY);
	{
		struct clone_args ca;

		memset(&ca, 0, sizeof(ca));
		ca.flags = CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_NEWPID;
		ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
		ca.exit_signal = SIGCHLD;
		ca.cgroup = (uint64_t)st.cg_fd;
		fflush(NULL);
		pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid < 0) {
		log_warn("run: clone3(CLONE_INTO_CGROUP) failed (kernel 5.7+ needed)");
		goto out;
	}
	if (pid == 0) {
		close(errpipe[0]);
		close(syncpipe[0]);
		close(gopipe[1]);
		/* the listeners stay with the loader, never with the sandbox's init */
		sluice_listeners_close(&st.listeners);
		if (foreign_peer >= 0)
			close(foreign_peer);
		prctl(PR_SET_NAME, "sluice-canary", 0, 0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) < 0)
			child_fail(errpipe[1], 2, "cannot enter network namespace %s: %s", netns_path, strerror(errno));
		/* its own cgroup namespace: cgroup.procs of any cgroup outside
		 * the sandbox is out of reach, even for root */
		if (unshare(CLONE_NEWCGROUP) < 0)
			child_fail(errpipe[1], 2, "unshare(CLONE_NEWCGROUP): %s", strerror(errno));
		/* its own mount namespace without bpffs: pinned links cannot be removed from inside */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			child_fail(errpipe[1], 2, "cannot make a private mount namespace: %s", strerror(errno));
		umount2(SLUICE_BPFFS, MNT_DETACH);
		if (sluice_trust_enter(&st.trust, msg, sizeof(msg)) < 0)
			child_fail(errpipe[1], 2, "%s", msg);
		/* and without the host's view of the cgroup2 hierarchy: without
		 * nsdelegate, root could write its pid into any cgroup.procs it
		 * can see.  A fresh cgroup2 mount here shows only the sandbox's
		 * own cgroup (the root of its cgroup namespace). */
		if (umount2(cg2, MNT_DETACH) < 0 || mount("cgroup2", cg2, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			child_fail(errpipe[1], 2, "cannot hide the host's cgroup2 mount %s: %s", cg2, strerror(errno));
		/* a /proc of the sandbox's own pid namespace */
		umount2("/proc", MNT_DETACH);
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			child_fail(errpipe[1], 2, "cannot mount /proc for the sandbox's pid namespace: %s", strerror(errno));
		unix_hooks = cfg.have_unix;
		canary_audit = audit;
		canary(errpipe[1], (uint16_t)port, audit, foreign);
		/* tell the loader the canary is done; wait for its go-ahead */
		if (write(syncpipe[1], "c", 1) != 1 || read(gopipe[0], &go, 1) != 1 || go != 'g')
			_exit(2);
		close(syncpipe[1]);
		close(gopipe[0]);
		/*
		 * We are pid 1 of the sandbox's own pid namespace: CMD sees only
		 * its own processes in a fresh /proc, so no /proc/PID/root of a
		 * host process leads it back to the host's mount namespace (and
		 * its cgroup2 and bpffs mounts: docs/threat-model.md, F1 and F2).
		 * This process stays as the namespace's init: it reaps, forwards
		 * signals and exits with CMD's status.
		 */
		cmd_pid = fork();
		if (cmd_pid < 0)
			child_fail(errpipe[1], 2, "fork: %s", strerror(errno));
		if (cmd_pid > 0)
			sandbox_init(errpipe[1], cmd_pid);
		if (sluice_confine_enter(&conf, msg, sizeof(msg)) < 0)
			child_fail(errpipe[1], 2, "%s", msg);
		/* a non-root user has none left (sluice_confine_enter) */
		if (!keep_caps && conf.root && drop_caps() < 0)
			child_fail(errpipe[1], 2, "cannot drop capabilities: %s", strerror(errno));
		syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
		if (cfg.have_proxy) {
			char url[64];

			/* where explicit-proxy clients find the sandbox's proxy */
			snprintf(url, sizeof(url), "http://127.0.0.1:%u", cfg.proxy4_port);
			setenv("SLUICE_PROXY", url, 1);
			if (proxy_env) {
				setenv("http_proxy", url, 1);
				setenv("https_proxy", url, 1);
				setenv("HTTP_PROXY", url, 1);
				setenv("HTTPS_PROXY", url, 1);
				unsetenv("no_proxy");
				unsetenv("NO_PROXY");
			}
		}
		/* the sandbox sees placeholders, never a secret */
		for (size_t i = 0; i < st.policy->n_credentials; i++) {
			const struct sluice_credential *cr = &st.policy->credentials[i];
			const struct sluice_secret *sec = sluice_secrets_find(&st.secrets, cr->name);

			if (cr->env && sec) {
				setenv(cr->env, sec->placeholder, 1);
				sluice_run_env_keep(&renv, cr->env);
			}
		}
		/* CMD's environment: the minimal one, what sluice set, --env */
		{
			char **envp;

			if (cfg.have_proxy)
				sluice_run_env_keep(&renv, "SLUICE_PROXY");
			else
				unsetenv("SLUICE_PROXY");
			if (cfg.have_proxy && proxy_env) {
				sluice_run_env_keep(&renv, "http_proxy");
				sluice_run_env_keep(&renv, "https_proxy");
				sluice_run_env_keep(&renv, "HTTP_PROXY");
				sluice_run_env_keep(&renv, "HTTPS_PROXY");
			}
			if (st.trust.bundle) {
				size_t n = 0;
				const char *const *names = sluice_trust_env_names(&n);

				for (size_t i = 0; i < n; i++)
					sluice_run_env_keep(&renv, names[i]);
			}
			envp = sluice_run_env_build(&renv);
			if (!envp)
				child_fail(errpipe[1], 2, "out of memory");
			environ = envp;
		}
		execvp(argv[optind], &argv[optind]);
		child_fail(errpipe[1], 127, "cannot execute %s: %s", argv[optind], strerror(errno));
	}
	/* from here on the canary's denials are marked as its own, also when
	 * CMD then cannot be executed (the lines drained at cleanup) */
	meta.canary_pid = (uint32_t)pid;
	close(errpipe[1]);
	errpipe[1] = -1;
	close(syncpipe[1]);
	syncpipe[1] = -1;
	close(gopipe[0]);
	gopipe[0] = -1;
	if (mon.sock[0] >= 0) {
		int err = sluice_seccomp_monitor_start(&mon);

		if (err) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			log_warnx("run: cannot start the seccomp monitor: %s; nothing was run", strerror(-err));
			goto out;
		}
	}
	{
		char buf[512], c1;
		ssize_t n;
		int status;

		/* the canary reports done (or fails, closing the pipe) */
		if (read(syncpipe[0], &c1, 1) == 1) {
			uint64_t would = sandbox_stat(&st.sb, SLUICE_STAT_WOULD_DENY) - would_before;

			if (audit && would < 2) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				log_warnx("run: canary: the audit-mode hooks did not see the canary's connect and sendto (%llu of 2): not in force; nothing was run",
					  (unsigned long long)would);
				goto out;
			}
			/* into the v1 cgroups before it forks CMD: everything inherits them */
			if (sluice_limits_v1_attach(&st.v1, pid, msg, sizeof(msg)) < 0) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				log_warnx("run: %s; nothing was run", msg);
				goto out;
			}
			if (write(gopipe[1], "g", 1) != 1) {
				log_warn("run: canary go-ahead");
				goto out;
			}
		}
		n = read(errpipe[0], buf, sizeof(buf) - 1);

		if (n > 0) {
			buf[n] = 0;
			waitpid(pid, &status, 0);
			log_warnx("run: %s", buf);
			ret = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
			goto out;
		}
	}
	forward_pid = pid;
	if (lim.timeout_ms)
		deadline = sluice_monotonic_ms() + lim.timeout_ms;
	{
		char m[PATH_MAX + 1400], d[PATH_MAX + 256], fams[512];
		const char *fam_by = sluice_run_families_by(&cfg, &conf);

		sluice_policy_families_str(st.policy, fams, sizeof(fams));
		snprintf(m, sizeof(m), "sandbox %s started: pid %d, mode %s, %s; unix hooks: %s; bpf lsm: %s%s; "
			 "socket families: %s (allowed beyond unix, inet, inet6 and netlink route/diag: %s)%s%s", name, pid,
			 mode, sluice_confine_describe(&conf, d, sizeof(d)),
			 cfg.have_unix ? "active (unix connects and sends judged by path)" :
			 "not available (kernel before 6.7?): unix sockets are not judged by path",
			 cfg.have_lsm ? "active (foreign sockets, unix peers and socket families judged)" : lsm_msg,
			 cfg.have_lsm ? "" : ": sockets made outside the sandbox are not judged",
			 fam_by, fams[0] ? fams : "none", stdio_socks[0] ? "; sockets as stdio (made outside, unix ones usable): " : "",
			 stdio_socks);
		{
			/* which variables CMD got besides the minimal set: names
			 * only, never values */
			struct sluice_line *l = sluice_evlog_begin(&st.log, SLUICE_DS_LIFECYCLE, -1);
			char names[SLUICE_RUN_ENV_MAX * 132 + 4];

			SL_STR(l, "event.kind", "state");
			SL_STR(l, "event.action", "sandbox-start");
			SL_STR(l, "message", m);
			confine_fields(l, &meta);
			sluice_run_env_names_json(&renv, names, sizeof(names));
			sluice_line_put_raw(l, "sluice.env_passed", sizeof("sluice.env_passed") - 1, names, strlen(names));
			SL_BOOL(l, "sluice.inherit_env", renv.inherit);
			sluice_signer_fields(l, &st.signer);
			SL_STR(l, "sluice.families_enforced_by", fam_by);
			SL_STR(l, "sluice.families_allowed", fams);
			SL_STR(l, "sluice.stdio_sockets", stdio_socks);
			sluice_evlog_commit(&st.log);
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (sluice_expiry_watch_init(&st.expiry, st.policy) < 0) {
		log_warnx("run: out of memory");
		goto out;
	}

	/* 8. stream events until CMD exits */
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = sluice_consumer_fd(&st.consumer), .events = POLLIN },
			{ .fd = pidfd, .events = POLLIN },
		};
		int r = poll(pf, 2, 100);
		int status;

		sluice_consumer_drain(&st.consumer);
		sluice_expiry_watch_tick(&st.expiry, &st.log, -1);
		if (r < 0 && errno != EINTR)
			break;
		/* --timeout: kill the whole cgroup once; CMD's exit ends the loop */
		if (deadline && !timed_out && sluice_monotonic_ms() >= deadline) {
			timed_out = true;
			sluice_lifecycle_write(&st.log, "sandbox-timeout",
					       "--timeout expired: every process of the sandbox killed");
			cg_kill_procs(st.cg_path);
		}
		if (pf[1].revents & POLLIN) {
			if (waitpid(pid, &status, 0) == pid) {
				ret = timed_out ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
				break;
			}
		}
		/* a dead proxy or resolver is restarted on the same listeners */
		if (st.proxy_pid > 0 && waitpid(st.proxy_pid, &status, WNOHANG) == st.proxy_pid)
			restart_child(&st, true);
		if (st.resolver_pid > 0 && waitpid(st.resolver_pid, &status, WNOHANG) == st.resolver_pid)
			restart_child(&st, false);
		write_refusals(&st, &mon);
	}
	forward_pid = 0;
	{
		char sc[64] = "";

		write_refusals(&st, &mon);
		if (conf.profile == SLUICE_PROFILE_SANDBOX || conf.families_seccomp)
			snprintf(sc, sizeof(sc), ", syscalls refused %llu", sluice_seccomp_monitor_stop(&mon));
		/* what the limits stopped, read before the cgroups go */
		if (st.cg_path[0]) {
			struct sluice_limits_hit hit;
			char lm[160];

			sluice_limits_hits(&lim, &st.v1, st.cg_path, &hit);
			if (hit.oom_kills) {
				snprintf(lm, sizeof(lm), "memory: the --memory limit (%llu bytes) OOM-killed %llu process(es)",
					 (unsigned long long)lim.memory_bytes, hit.oom_kills);
				limit_line(&st.log, &meta, "memory", lim.memory_bytes, hit.oom_kills, lm);
			}
			if (hit.forks_refused) {
				snprintf(lm, sizeof(lm), "pids: the --pids limit (%llu) refused %llu fork(s)",
					 (unsigned long long)lim.pids, hit.forks_refused);
				limit_line(&st.log, &meta, "pids", lim.pids, hit.forks_refused, lm);
			}
		}
		/* leftovers in the cgroup are killed before the final drain, and
		 * the counters are read after it: lines + losses = denials */
		if (st.cg_path[0]) {
			cg_kill_and_remove(st.cg_path, 5000);
			st.cg_path[0] = 0;
		}
		sluice_consumer_drain(&st.consumer);
		run_stop_line(&st, &meta, name, ret, sc);
	}
out:
	if (errpipe[0] >= 0)
		close(errpipe[0]);
	if (errpipe[1] >= 0)
		close(errpipe[1]);
	for (int i = 0; i < 2; i++) {
		if (syncpipe[i] >= 0)
			close(syncpipe[i]);
		if (gopipe[i] >= 0)
			close(gopipe[i]);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (netns_fd >= 0)
		close(netns_fd);
	for (int i = 0; i < 2; i++)
		if (foreign[i] >= 0)
			close(foreign[i]);
	if (foreign_peer >= 0)
		close(foreign_peer);
	sluice_seccomp_monitor_stop(&mon);
	run_cleanup(&st);
	sluice_evlog_release_seq(&st.log);
	sluice_confine_free(&conf);
	return ret;
}
