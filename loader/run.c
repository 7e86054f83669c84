/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run.c - `sluice run`: a fresh cgroup, the filter attached and proven
 * (canary), CMD started inside it, events streamed until CMD exits, then
 * everything removed.
 */
#include "run.h"

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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cgroup.h"
#include "children.h"
#include "events.h"
#include "run_limits.h"
#include "run_trust.h"
#include "log.h"
#include "policy.h"
#include "policy_maps.h"
#include "sandbox.h"

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
		"\n"
		"  --policy FILE        allowlist (YAML v1, see docs/policy.md); default: deny everything\n"
		"  --events FILE        write JSON event lines here (default: stderr)\n"
		"  --name NAME          sandbox name (default: run-<pid>)\n"
		"  --netns PATH         run CMD in this network namespace (e.g. /run/netns/NAME);\n"
		"                       the proxy and resolver listen and dial there too\n"
		"  --mode MODE          enforce (default) or audit (log what would be denied, deny nothing\n"
		"                       except raw/ICMP sockets)\n"
		"  --upstream-dns ADDR  resolver's upstream (default: /etc/resolv.conf)\n"
		"  --no-proxy           do not start the proxy (proxied ports fail closed)\n"
		"  --no-resolver        do not start the resolver (DNS fails closed)\n"
		"  --upstream-ca FILE   also trust the CA certificates (PEM) in FILE for the origins of\n"
		"                       inspected names (internal registries); see docs/proxy.md\n"
		"  --proxy-arg ARG      pass ARG to sluice-proxy (repeatable)\n"
		"  --resolver-arg ARG   pass ARG to sluice-resolver (repeatable)\n"
		"  --proxy-env          also set http_proxy/https_proxy (and upper case) to the proxy;\n"
		"                       $SLUICE_PROXY always holds its URL\n"
		"  --keep-caps          do not drop CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_BPF, ...\n"
		"                       from CMD (unsafe; for testing the kernel hooks alone)\n"
		"  --memory SIZE        memory.max of the sandbox's cgroup (512M, 2G; cgroup v2 memory controller)\n"
		"  --pids N             pids.max: at most N processes and threads (cgroup v2 pids controller)\n"
		"  --cpu N              cpu.max: N CPUs' worth of time (0.5, 2; cgroup v2 cpu controller)\n"
		"  --timeout DURATION   kill everything in the sandbox after DURATION (30, 1.5, 500ms, 10m, 2h)\n"
		"                       and exit 124, as timeout(1).  A limit the cgroup v2 hierarchy cannot\n"
		"                       enforce (hybrid layout) is an error (exit 2), never ignored.\n"
		"  -v, --verbose        diagnostics on stderr\n"
		"\n"
		"Examples:\n"
		"  sluice run -- curl -sS https://example.com        # denied: default policy\n"
		"  sluice run --policy policies/python-pip.yaml --events ev.jsonl -- pip download requests\n"
		"\n"
		"Exit status: CMD's status (128+N if killed by signal N); 124 if --timeout expired;\n"
		"2 for a usage or environment error (bad policy, no cgroup2, no BPF, a limit that\n"
		"cannot be enforced), nothing left behind.\n");
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
static void canary(int errfd, uint16_t port, bool audit)
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
	struct sluice_listeners listeners;
	pid_t proxy_pid, resolver_pid;
	char cg_path[4096];
	char cg_parent[4096];
	int cg_fd;
	int events;                 /* fd: 2 (stderr) or the --events file */
	struct sluice_consumer consumer;
	bool consumer_ok;
	struct sluice_trust trust;  /* the sandbox CA bundle (run_trust.h) */
};

static void run_cleanup(struct run_state *st)
{
	sluice_trust_free(&st->trust);
	if (st->cg_path[0]) {
		int err = cg_kill_and_remove(st->cg_path, 5000);

		if (err)
			log_warnx("cannot remove cgroup %s: %s", st->cg_path, strerror(-err));
	}
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

static int have_set_retval(void)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_set_retval, NULL) > 0;
}

static void emit_line(int fd, const char *line, int n)
{
	if (n > 0)
		sluice_write_line(fd, line, (size_t)n);
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "events", required_argument, NULL, 'e' },
		{ "name", required_argument, NULL, 'n' },
		{ "netns", required_argument, NULL, 'N' },
		{ "mode", required_argument, NULL, 'm' },
		{ "upstream-dns", required_argument, NULL, 'u' },
		{ "no-proxy", no_argument, NULL, 'P' },
		{ "no-resolver", no_argument, NULL, 'R' },
		{ "proxy-arg", required_argument, NULL, 'x' },
		{ "upstream-ca", required_argument, NULL, 'A' },
		{ "resolver-arg", required_argument, NULL, 'y' },
		{ "keep-caps", no_argument, NULL, 'k' },
		{ "memory", required_argument, NULL, 'M' },
		{ "pids", required_argument, NULL, 'I' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "proxy-env", no_argument, NULL, 'E' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *policy_path = NULL, *events_path = NULL, *netns_path = NULL, *mode = NULL,
		   *upstream = NULL;
	char name[64] = "", msg[512], cg2[1024], helper[4096], line[2048];
	char *proxy_extra[32] = { 0 }, *resolver_extra[32] = { 0 };
	int n_px = 0, n_rx = 0, no_proxy = 0, no_resolver = 0, keep_caps = 0, proxy_env = 0, verbose = 0, c;
	struct run_state st;
	struct sluice_policy_error perr;
	struct sluice_bpf_config cfg;
	struct sluice_event_meta meta;
	int ret = 2, errpipe[2] = { -1, -1 }, syncpipe[2] = { -1, -1 }, gopipe[2] = { -1, -1 };
	int pidfd = -1, netns_fd = -1, port;
	uint64_t would_before = 0, deadline = 0;
	struct sluice_limits lim = { 0 };
	bool audit, timed_out = false;
	char go = 0;
	pid_t pid = -1, cmd_pid;

	memset(&st, 0, sizeof(st));
	st.cg_fd = -1;
	st.listeners.proxy4 = st.listeners.proxy6 = st.listeners.dns_udp4 = -1;
	st.listeners.dns_udp6 = st.listeners.dns_tcp4 = st.listeners.dns_tcp6 = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
		switch (c) {
		case 'p': policy_path = optarg; break;
		case 'e': events_path = optarg; break;
		case 'n': snprintf(name, sizeof(name), "%s", optarg); break;
		case 'N': netns_path = optarg; break;
		case 'm': mode = optarg; break;
		case 'u': upstream = optarg; break;
		case 'P': no_proxy = 1; break;
		case 'R': no_resolver = 1; break;
		case 'x': if (n_px < 31) proxy_extra[n_px++] = optarg; break;
		case 'A': if (n_px < 30) { proxy_extra[n_px++] = "--upstream-ca"; proxy_extra[n_px++] = optarg; } break;
		case 'y': if (n_rx < 31) resolver_extra[n_rx++] = optarg; break;
		case 'k': keep_caps = 1; break;
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
		case 'v': verbose = 1; break;
		case 'h': usage_run(stdout); return 0;
		default: usage_run(stderr); return 2;
		}
	}
	log_init("sluice", verbose);
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
	for (const char *q = name; *q; q++)
		if (!(*q == '-' || *q == '_' || *q == '.' || (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') ||
		      (*q >= 'A' && *q <= 'Z')) || name[0] == '.') {
			log_warnx("run: sandbox name '%s' may only hold letters, digits, '-', '_' and '.'", name);
			return 2;
		}

	/* 1. the policy: all checks before anything is created */
	if (policy_path) {
		if (sluice_policy_load_file(policy_path, &st.policy, &perr) < 0) {
			log_warnx("%s", sluice_policy_error_str(&perr, msg, sizeof(msg)));
			return 2;
		}
	} else {
		st.policy = sluice_policy_default();
		if (!st.policy) {
			log_warnx("run: cannot build the default policy");
			return 2;
		}
	}
	if (mode)
		st.policy->mode = strcmp(mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	mode = st.policy->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce";
	audit = st.policy->mode == SLUICE_MODE_AUDIT;

	/* 2. the environment */
	if (geteuid() != 0) {
		log_warnx("run: must run as root (BPF programs, cgroups)");
		goto out;
	}
	{
		int err = cg2_find_mount("/proc/mounts", cg2, sizeof(cg2));

		if (err) {
			log_warnx("run: no cgroup2 mount in /proc/mounts: %s",
				  err == -ENOENT ? "mount cgroup v2 (unified or hybrid layout)" : strerror(-err));
			goto out;
		}
	}
	/* every limit asked for must be enforceable, before anything is made */
	if (sluice_limits_check(&lim, cg2, "/proc/mounts", msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		goto out;
	}
	if (bpffs_ensure(SLUICE_BPFFS) < 0) {
		log_warn("run: no BPF filesystem at %s and cannot mount one", SLUICE_BPFFS);
		goto out;
	}
	if (netns_path) {
		netns_fd = open(netns_path, O_RDONLY | O_CLOEXEC);
		if (netns_fd < 0) {
			log_warn("run: cannot open network namespace %s", netns_path);
			goto out;
		}
	}
	if (events_path) {
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
		const char *px = no_proxy ? NULL : sluice_helper_path("sluice-proxy", helper, sizeof(helper));
		int want_proxy = px != NULL;
		char helper2[4096];
		const char *rs = no_resolver ? NULL : sluice_helper_path("sluice-resolver", helper2, sizeof(helper2));
		int want_dns = rs != NULL;

		if (!no_proxy && !px)
			log_warnx("run: sluice-proxy not found beside sluice: proxied ports will fail closed");
		if (!no_resolver && !rs)
			log_warnx("run: sluice-resolver not found beside sluice: DNS will fail closed");
		if (sluice_listeners_open(&st.listeners, netns_path, want_proxy, want_dns, &cfg, msg, sizeof(msg)) < 0) {
			log_warnx("run: %s", msg);
			goto out;
		}
	}
	cfg.have_set_retval = have_set_retval();

	/* 4. load, fill, pin */
	if (sandbox_load(&st.sb, name, &cfg, st.policy, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		goto out;
	}
	st.sb_loaded = true;
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
	}

	memset(&meta, 0, sizeof(meta));
	meta.sandbox = name;
	meta.policy_name = st.policy->name;
	meta.policy_digest = st.policy->digest;
	meta.mode = mode;
	meta.boot_to_real_ns = sluice_boot_to_real_ns();
	if (sluice_consumer_init(&st.consumer, &st.sb, &meta, st.events) < 0) {
		log_warn("run: cannot read the ring buffer");
		goto out;
	}
	st.consumer_ok = true;

	/* 5. proxy and resolver */
	{
		char flow_map[512];
		struct sluice_child_opts co = {
			.policy_path = policy_path, .netns_path = netns_path, .sandbox = name,
			.flow_map = flow_map, .log_path = events_path, .upstream_dns = upstream, .mode = mode,
		};

		snprintf(flow_map, sizeof(flow_map), "%s/sluice_flows", st.sb.pin_dir);
		if (cfg.have_proxy) {
			char *ca_pem = NULL;
			int trc;

			co.extra = proxy_extra;
			co.ca_pem = &ca_pem;
			st.proxy_pid = sluice_child_start(sluice_helper_path("sluice-proxy", helper, sizeof(helper)),
							  &st.listeners, &co, 10000, msg, sizeof(msg));
			co.ca_pem = NULL;
			if (st.proxy_pid < 0) {
				log_warnx("run: %s", msg);
				goto out;
			}
			/* TLS inspection: the CA bundle CMD will trust (run_trust.h) */
			trc = sluice_trust_prepare(&st.trust, ca_pem, msg, sizeof(msg));
			free(ca_pem);
			if (trc < 0) {
				log_warnx("run: %s", msg);
				goto out;
			}
		}
		if (cfg.have_dns) {
			co.extra = resolver_extra;
			co.flow_map = NULL;
			st.resolver_pid = sluice_child_start(sluice_helper_path("sluice-resolver", helper, sizeof(helper)),
							     &st.listeners, &co, 10000, msg, sizeof(msg));
			if (st.resolver_pid < 0) {
				log_warnx("run: %s", msg);
				goto out;
			}
		}
		/* the children hold the listeners now */
		sluice_listeners_close(&st.listeners);
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
	if (sluice_limits_apply(&lim, cg2, st.cg_parent, st.cg_path, msg, sizeof(msg)) < 0) {
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
		canary(errpipe[1], (uint16_t)port, audit);
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
		if (!keep_caps && drop_caps() < 0)
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
		execvp(argv[optind], &argv[optind]);
		child_fail(errpipe[1], 127, "cannot execute %s: %s", argv[optind], strerror(errno));
	}
	close(errpipe[1]);
	errpipe[1] = -1;
	close(syncpipe[1]);
	syncpipe[1] = -1;
	close(gopipe[0]);
	gopipe[0] = -1;
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
	meta.canary_pid = (uint32_t)pid;
	forward_pid = pid;
	if (lim.timeout_ms)
		deadline = sluice_monotonic_ms() + lim.timeout_ms;
	{
		char m[128];

		snprintf(m, sizeof(m), "sandbox %s started: pid %d, mode %s", name, pid, mode);
		emit_line(st.events, line, sluice_lifecycle_format("sandbox-start", m, &meta, line, sizeof(line)));
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);

	/* 8. stream events until CMD exits */
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = sluice_consumer_fd(&st.consumer), .events = POLLIN },
			{ .fd = pidfd, .events = POLLIN },
		};
		int r = poll(pf, 2, 100);
		int status;

		sluice_consumer_drain(&st.consumer);
		if (r < 0 && errno != EINTR)
			break;
		/* --timeout: kill the whole cgroup once; CMD's exit ends the loop */
		if (deadline && !timed_out && sluice_monotonic_ms() >= deadline) {
			timed_out = true;
			emit_line(st.events, line, sluice_lifecycle_format("sandbox-timeout",
				  "--timeout expired: every process of the sandbox killed", &meta, line, sizeof(line)));
			cg_kill_procs(st.cg_path);
		}
		if (pf[1].revents & POLLIN) {
			if (waitpid(pid, &status, 0) == pid) {
				ret = timed_out ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
				break;
			}
		}
		/* a dead proxy or resolver leaves the sandbox without network: say so */
		if (st.proxy_pid > 0 && waitpid(st.proxy_pid, &status, WNOHANG) == st.proxy_pid) {
			st.proxy_pid = 0;
			emit_line(st.events, line, sluice_lifecycle_format("proxy-exited",
				  "sluice-proxy exited: proxied connections now fail (fail closed)", &meta, line, sizeof(line)));
		}
		if (st.resolver_pid > 0 && waitpid(st.resolver_pid, &status, WNOHANG) == st.resolver_pid) {
			st.resolver_pid = 0;
			emit_line(st.events, line, sluice_lifecycle_format("resolver-exited",
				  "sluice-resolver exited: DNS now fails (fail closed)", &meta, line, sizeof(line)));
		}
	}
	forward_pid = 0;
	{
		char m[160];

		snprintf(m, sizeof(m), "sandbox %s stopped: exit status %d; allowed %llu, redirected %llu, denied %llu, events lost %llu",
			 name, ret, (unsigned long long)sandbox_stat(&st.sb, SLUICE_STAT_ALLOWED),
			 (unsigned long long)sandbox_stat(&st.sb, SLUICE_STAT_REDIRECTED),
			 (unsigned long long)sandbox_stat(&st.sb, SLUICE_STAT_DENIED),
			 (unsigned long long)sandbox_stat(&st.sb, SLUICE_STAT_EVENTS_LOST));
		/* leftovers in the cgroup are killed before the final drain */
		if (st.cg_path[0]) {
			cg_kill_and_remove(st.cg_path, 5000);
			st.cg_path[0] = 0;
		}
		sluice_consumer_drain(&st.consumer);
		emit_line(st.events, line, sluice_lifecycle_format("sandbox-stop", m, &meta, line, sizeof(line)));
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
	run_cleanup(&st);
	return ret;
}
