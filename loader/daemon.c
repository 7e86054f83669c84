/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon.c - `sluice daemon`: one long-running process that holds the BPF
 * objects, the event stream, the proxy and the resolver of every attached
 * sandbox, and re-adopts them after a restart.
 *
 * State (root only, 0700; 0710 root:GROUP with a user group, daemon_user.h):
 *   /run/sluice/control.sock            control socket
 *   /run/sluice/events.jsonl            every JSON line of every sandbox
 *   /run/sluice/sandboxes/NAME.json     what the sandbox is (cgroup, mode), its loss accounting
 *   /run/sluice/sandboxes/NAME.yaml     the policy in force (a copy of the bytes loaded)
 *   /run/sluice/sandboxes/NAME.yaml.sig its signature (--allowed-signers)
 *   /run/sluice/sandboxes/NAME.ca.pem   the sandbox CA certificate (TLS inspection; public)
 *   /run/sluice/netns/NAME              bind mount of the sandbox's netns
 *   /sys/fs/bpf/sluice/NAME/            pinned links and maps
 * Fail closed: links are pinned, so the daemon dying leaves every sandbox
 * filtered; its proxies and resolvers die with it (PR_SET_PDEATHSIG), so
 * redirected connections fail until it is back.
 */
#include "daemon.h"
#include "daemon_internal.h"
#include "daemon_user.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "cgroup.h"
#include "children.h"
#include "cmd_seccomp.h"
#include "ctlsrv.h"
#include "daemon_events.h"
#include "daemon_follow.h"
#include "events.h"
#include "events_dest.h"
#include "kfeatures.h"
#include "run_limits.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "policy_within.h"
#include "policy_ref.h"
#include "sandbox.h"

struct daemon_globals D;

/* What daemon_user.c asks of the daemon. */
static void user_emit(const char *name, const char *action, const char *message)
{
	daemon_emit(name ? daemon_find(name) : NULL, action, "%s", message);
}

static bool user_in_sandbox(const char *path)
{
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		size_t n = strlen(s->cgroup);

		if (strncmp(path, s->cgroup, n) == 0 && (path[n] == 0 || path[n] == '/'))
			return true;
	}
	return false;
}

static const struct daemon_user_ops user_ops = {
	.attach = attach_or_say_why, .detach = do_detach, .status = do_status, .emit = user_emit,
	.in_sandbox = user_in_sandbox,
};

/* One control request (ctlsrv.c reads it and sends the answer). */
static json_object *handle_request(json_object *req, struct ctlsrv_peer *peer)
{
	const char *cmd = req ? ctlsrv_str(req, "cmd") : NULL;

	if (daemon_follow_handles(req))
		return daemon_follow_request(req, peer, &user_ops);
	if (peer->uid != 0 || daemon_user_handles(req))
		return daemon_user_request(req, peer, &user_ops);

	if (!cmd)
		return ctlsrv_error("malformed request: want one JSON object with \"cmd\"");
	if (strcmp(cmd, "attach") == 0)
		return attach_with(req, peer);
	if (strcmp(cmd, "detach") == 0)
		return do_detach(req);
	if (strcmp(cmd, "status") == 0)
		return do_status(req);
	if (strcmp(cmd, "reload") == 0)
		return do_reload(req, peer);
	return ctlsrv_error("unknown command '%s'", cmd);
}

/* The control socket's summary lines (timeouts, evictions, refusals). */
static void control_report(const char *action, const char *message)
{
	sluice_lifecycle_write(&D.log, action, message);
	log_warnx("%s", message);
}

/* Whether a sandbox's cgroup is still there is asked once a second, not
 * at every tick: a path lookup through cgroupfs for each sandbox was about
 * half of what an idle daemon of 400 sandboxes spent (4 % of a CPU, issue
 * 19).  Each sandbox has its own tick in the ten (its cgroup id), so the
 * lookups are spread over the second rather than made all at once. */
#define GONE_CHECK_TICKS 10

/* Every 100 ms: drain ring buffers (batched wakeups: poll, then consume),
 * notice dead children and vanished cgroups. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	static unsigned ticks;
	struct dsandbox *s, *next;
	int status;
	pid_t pid;

	retired_expire();
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (retired_reaped(pid) || daemon_user_reaped(pid, status, &user_ops))
			continue;
		for (struct dsandbox *t = D.sandboxes; t; t = t->next)
			if (pid == t->proxy_pid || pid == t->resolver_pid)
				child_exited(t, pid == t->proxy_pid);
	}
	ctlsrv_tick();
	daemon_events_check_size();
	daemon_follow_settle(children_oldest_gen());
	/* from the head again: a user's command that ended detached its sandbox above */
	for (s = D.sandboxes; s; s = next) {
		next = s->next;
		daemon_drain(s);
		if (s->log_ready)
			sluice_expiry_watch_tick(&s->expiry, &s->log, -1);
		if ((ticks + s->cgroup_id) % GONE_CHECK_TICKS == 0 && access(s->cgroup, F_OK) < 0 && errno == ENOENT) {
			daemon_emit(s, "sandbox-gone", "sandbox %s: cgroup %s was removed by its runtime; cleaning up", s->name,
			     s->cgroup);
			unlink_sandbox(s);
			daemon_teardown(s, false);
			free_sandbox(s);
		}
	}
	ticks++;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	sd_notify(0, "STOPPING=1");
	event_base_loopbreak(D.base);
}

int daemon_events_reopen(const char *why)
{
	int err;
	int n = 0;

	/* the journal's stream stays: there is no file to reopen */
	err = sluice_events_is_journald(D.events_path) ? 0 : log_reopen_fd(D.events, D.events_path, 0600);
	if (err)
		log_warnx("daemon: %s: cannot reopen %s: %s (still writing to the old file)", why, D.events_path,
			  strerror(-err));
	daemon_follow_reopened();
	/* children from fresh zygotes: the libraries on disk now */
	sluice_child_zygotes_renew();
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		char msg[512];

		if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0)
			daemon_emit(s, "sandbox-error", "sandbox %s: %s: proxy/resolver restart failed: %s (fail closed)",
			     s->name, why, msg);
		n++;
	}
	return n;
}

/* SIGHUP (systemctl reload, logrotate): reopen the events file and move
 * every writer to it (daemon_events_reopen); every sandbox keeps running. */
static void on_reopen(evutil_socket_t fd, short what, void *arg)
{
	int n;

	sd_notify(0, "RELOADING=1");
	n = daemon_events_reopen("SIGHUP");
	daemon_emit(NULL, "daemon-reopen", "sluice daemon reopened %s on SIGHUP (%d sandboxes)", D.events_path, n);
	sd_notifyf(0, "READY=1\nSTATUS=serving %s, %d sandboxes", D.sock_path, n);
}

static struct event *reopen_ev;   /* on_reopen, from the loop */

/* libevent calls this once per SIGHUP caught: a burst of them (a
 * logrotate per file, a loop in a script) asks for one reopen, run from
 * the loop, and for one more only when a SIGHUP comes after it began:
 * not for one restart of every child per signal, which kept the daemon
 * from its control socket for minutes. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
	static const struct timeval now = { 0, 0 };

	if (!reopen_ev)   /* (no memory for it at start) */
		on_reopen(-1, 0, NULL);
	else if (!evtimer_pending(reopen_ev, NULL))
		evtimer_add(reopen_ev, &now);
}

static int mkdirs(void)
{
	char p[PATH_MAX];

	if (mkdir(D.state_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(p, sizeof(p), "%s/sandboxes", D.state_dir);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(p, sizeof(p), "%s/netns", D.state_dir);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* A decimal number in [lo, hi] (strtonum's spirit).  0 or -1. */
static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN && getenv("SLUICE_LIBBPF_VERBOSE") ? vfprintf(stderr, fmt, ap) : 0;
}

static void usage(void)
{
	printf("usage: sluice daemon [--state-dir DIR] [--events FILE] [--upstream-dns ADDR]\n"
	       "                     [--events-max-size SIZE [--events-keep N]] [--event-ring SIZE]\n"
	       "                     [--proxy-arg ARG]... [--resolver-arg ARG]... [--upstream-ca FILE]\n"
	       "                     [--require-lsm | --no-lsm] [--no-zygote] [--metrics IP:PORT]\n"
	       "                     [--allowed-signers FILE] [--boundary FILE] [--policy-dir DIR]\n"
	       "                     [--control-clients N] [--control-deadlines IDLE_MS:TOTAL_MS]\n"
	       "                     [--user-group GROUP] [--upstream-ca FILE]\n\n"
	       "  --events DEST  FILE (appended; default DIR/events.jsonl) or journald (one\n"
	       "                 journal entry per line, identifier sluice)\n"
	       "  --events-max-size SIZE  rotate the events file when it reaches SIZE (512M,\n"
	       "                 1G; at least 1M): FILE becomes FILE.1, ..., FILE.N, the oldest\n"
	       "                 is removed (--events-keep N files, default 4); default: no cap\n"
	       "                 (SIGHUP reopens it for logrotate)\n"
	       "  --event-ring SIZE  the kernel's ring buffer of denial records that every sandbox\n"
	       "                 shares (a power of 2 from 64K to 1G; default 16M): half of it\n"
	       "                 split evenly among the sandboxes, the rest first come\n"
	       "  --user-group GROUP  its members may `sluice run --policy NAME -- CMD` without\n"
	       "                 root: the daemon runs CMD as them (default: sluice, when that\n"
	       "                 group exists; '' root only)\n"
	       "  --upstream-ca FILE  every sandbox's proxy also trusts the CA certificates (PEM)\n"
	       "                 in FILE for the origins of inspected names (read at each proxy\n"
	       "                 start, with the policy's tls.upstream_ca; handed over as content)\n"
	       "  --allowed-signers FILE  signed mode: attach and reload refuse a policy unless\n"
	       "                 POLICY.sig is a valid `sluice policy sign` signature by a key\n"
	       "                 FILE names (OpenSSH allowed-signers; read once, at start)\n"
	       "  --boundary FILE  attach and reload refuse a policy that allows anything FILE\n"
	       "                 (a policy) does not (`sluice policy check --within`)\n"
	       "  --policy-dir DIR  where policy names resolve (NAME: DIR/NAME.yaml; the OCI\n"
	       "                 hook's io.sluice.policy annotation); default " SLUICE_POLICY_DIR "\n"
	       "  --require-lsm  refuse to start where the BPF LSM is not active (foreign sockets,\n"
	       "                 unix sockets and socket families would not be judged)\n"
	       "  --no-lsm       do not load the BPF LSM programs (testing the fallback)\n"
	       "  --no-zygote    exec each sandbox's proxy and resolver afresh (each with an\n"
	       "                 address-space layout of its own) rather than fork them from\n"
	       "                 one clean process per binary, which shares the libraries'\n"
	       "                 data among them (default; docs/threat-model.md)\n"
	       "  --metrics IP:PORT  serve Prometheus metrics at http://IP:PORT/metrics\n"
	       "                 (e.g. 127.0.0.1:9464; numeric addresses only)\n"
	       "  --control-clients N  control clients open at once (default %d; more: the one\n"
	       "                 idle the longest is closed)\n"
	       "  --control-deadlines IDLE_MS:TOTAL_MS  a control client is closed after IDLE_MS\n"
	       "                 without a byte, or TOTAL_MS for its request (default %d:%d)\n\n"
	       "Holds every attached sandbox (sluice attach); control socket DIR/control.sock\n"
	       "(default %s), events DIR/events.jsonl.  Runs in the foreground; a systemd\n"
	       "unit is in packaging/sluice.service (Type=notify: ready once it serves).\n"
	       "Restarted, it re-adopts the sandboxes it finds pinned, or refuses to start and\n"
	       "says why.  SIGHUP reopens the events file (the proxies and resolvers reopen\n"
	       "theirs); SIGTERM stops it, every sandbox staying filtered.\n", SLUICE_CTL_MAX_CLIENTS,
	       SLUICE_CTL_IDLE_MS, SLUICE_CTL_TOTAL_MS, SLUICE_STATE_DIR);
}

/* The options of `sluice daemon` and what they set (D, *ctl, the paths of
 * the signers and boundary files).  0 to go on, else the exit status. */
static int parse_options(int argc, char **argv, struct ctlsrv_limits *ctl, const char **signers_path,
			 const char **boundary_path)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "events", required_argument, NULL, 'e' },
		{ "events-format", required_argument, NULL, 'O' },
		{ "events-max-size", required_argument, NULL, 'Z' },
		{ "events-keep", required_argument, NULL, 'K' },
		{ "event-ring", required_argument, NULL, 'R' },
		{ "upstream-dns", required_argument, NULL, 'u' },
		{ "proxy-arg", required_argument, NULL, 'x' },
		{ "upstream-ca", required_argument, NULL, 'k' },
		{ "resolver-arg", required_argument, NULL, 'y' },
		{ "require-lsm", no_argument, NULL, 'L' },
		{ "no-lsm", no_argument, NULL, 'l' },
		{ "no-zygote", no_argument, NULL, 'z' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "allowed-signers", required_argument, NULL, 'S' },
		{ "boundary", required_argument, NULL, 'B' },
		{ "policy-dir", required_argument, NULL, 'P' },
		{ "control-clients", required_argument, NULL, 'C' },
		{ "control-deadlines", required_argument, NULL, 'T' },
		{ "user-group", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static char *px[32], *rx[32];
	int npx = 0, nrx = 0, c;

	snprintf(D.state_dir, sizeof(D.state_dir), "%s", SLUICE_STATE_DIR);
	snprintf(D.policy_dir, sizeof(D.policy_dir), "%s", SLUICE_POLICY_DIR);
	D.use_lsm = true;
	D.user_group = "sluice";
	D.events_keep = 4;
	D.ring_bytes = SLUICE_RING_SHARED_BYTES;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': snprintf(D.state_dir, sizeof(D.state_dir), "%s", optarg); break;
		case 'e': snprintf(D.events_path, sizeof(D.events_path), "%s", optarg); break;
		case 'O':
			if (strcmp(optarg, "ecs") != 0 && strcmp(optarg, "ocsf") != 0) {
				log_warnx("daemon: --events-format must be ecs or ocsf, not '%s'", optarg);
				return 2;
			}
			sluice_evlog_use_ocsf(strcmp(optarg, "ocsf") == 0);
			break;
		case 'Z': {
			char why[160];
			uint64_t v;

			if (sluice_parse_memory(optarg, &v, why, sizeof(why)) < 0) {
				log_warnx("daemon: --events-max-size: %s", why);
				return 2;
			}
			D.events_max = v;
			break;
		}
		case 'R': {
			char why[160];
			uint64_t v;

			if (sluice_parse_memory(optarg, &v, why, sizeof(why)) < 0 || v < (64u << 10) ||
			    v > (1u << 30) || (v & (v - 1))) {
				log_warnx("daemon: --event-ring: want a power of 2 from 64K to 1G (16M), not '%s'",
					  optarg);
				return 2;
			}
			D.ring_bytes = v;
			break;
		}
		case 'K':
			if (parse_uint(optarg, 1, 1000, &D.events_keep) < 0) {
				log_warnx("daemon: --events-keep: want a number of files from 1 to 1000, not '%s'", optarg);
				return 2;
			}
			break;
		case 'u': D.upstream_dns = optarg; break;
		case 'x': if (npx < 31) px[npx++] = optarg; break;
		case 'k': D.upstream_ca = optarg; break;
		case 'y': if (nrx < 31) rx[nrx++] = optarg; break;
		case 'L': D.require_lsm = true; break;
		case 'l': D.use_lsm = false; break;
		case 'z': D.no_zygote = true; break;
		case 'm': D.metrics_addr = optarg; break;
		case 'S': *signers_path = optarg; break;
		case 'B': *boundary_path = optarg; break;
		case 'P': snprintf(D.policy_dir, sizeof(D.policy_dir), "%s", optarg); break;
		case 'G': D.user_group = optarg; D.user_group_set = true; break;
		case 'C':
			if (parse_uint(optarg, 1, 100000, &ctl->max_clients) < 0) {
				log_warnx("daemon: --control-clients: want a number from 1 to 100000, not '%s'", optarg);
				return 2;
			}
			break;
		case 'T': {
			char *colon = strchr(optarg, ':');

			if (!colon || (*colon = 0, parse_uint(optarg, 1, 3600000, &ctl->idle_ms) < 0) ||
			    parse_uint(colon + 1, 1, 3600000, &ctl->total_ms) < 0) {
				log_warnx("daemon: --control-deadlines: want IDLE_MS:TOTAL_MS, e.g. 2000:5000");
				return 2;
			}
			break;
		}
		case 'h':
			usage();
			return -1;
		default: return 2;
		}
	}
	if (D.events_max && sluice_events_is_journald(D.events_path)) {
		log_warnx("daemon: --events-max-size caps an events file; the journal has its own limits "
			  "(SystemMaxUse= in journald.conf)");
		return 2;
	}
	D.proxy_extra = px;
	D.resolver_extra = rx;
	return 0;
}

/* Before anything is adopted: root, the signers and boundary, the BPF LSM,
 * the state dir, the fd store's netns, bpffs, the helpers.  0 or 2. */
static int prepare(const char *signers_path, const char *boundary_path)
{
	char lsm_msg[256] = "", msg[1024], tried[2 * PATH_MAX + 8];

	log_init("sluice-daemon", 0);
	if (geteuid() != 0) {
		log_warnx("daemon: must run as root");
		return 2;
	}
	if (signers_path) {
		if (sluice_signers_load(signers_path, &D.signers, msg, sizeof(msg)) < 0) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
		D.signed_mode = true;
	}
	if (boundary_path) {
		if (sluice_boundary_load(boundary_path, &D.boundary, msg, sizeof(msg)) < 0) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
		snprintf(D.boundary_path, sizeof(D.boundary_path), "%s", boundary_path);
	}
	if (D.use_lsm && !sluice_bpf_lsm_active(lsm_msg, sizeof(lsm_msg))) {
		if (D.require_lsm) {
			log_warnx("daemon: --require-lsm: %s", lsm_msg);
			return 2;
		}
		log_warnx("daemon: %s: sockets made outside a sandbox, unix sockets and socket families other than inet are not judged",
			  lsm_msg);
	}
	if (!D.events_path[0])
		snprintf(D.events_path, sizeof(D.events_path), "%s/events.jsonl", D.state_dir);
	snprintf(D.sock_path, sizeof(D.sock_path), "%s/control.sock", D.state_dir);
	if (mkdirs() < 0) {
		log_warn("daemon: cannot create %s", D.state_dir);
		return 2;
	}
	{
		/* first, before any other descriptor is opened: SD_LISTEN_FDS_START on */
		int n = fdstore_restore();

		if (n > 0)
			log_info("daemon: %d network namespaces handed back by systemd's fd store", n);
	}
	if (bpffs_ensure(SLUICE_BPFFS) < 0) {
		log_warn("daemon: no BPF filesystem at %s", SLUICE_BPFFS);
		return 2;
	}
	if (!sluice_helper_path("sluice-proxy", D.proxy_bin, sizeof(D.proxy_bin), tried, sizeof(tried))) {
		log_warnx("daemon: sluice-proxy not found (tried %s)", tried);
		return 2;
	}
	if (!sluice_helper_path("sluice-resolver", D.resolver_bin, sizeof(D.resolver_bin), tried, sizeof(tried))) {
		log_warnx("daemon: sluice-resolver not found (tried %s)", tried);
		return 2;
	}
	libbpf_set_print(libbpf_quiet);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The events file, the metrics address, the pinned sandboxes, then the
 * control socket (one daemon at a time).  0 or 2. */
static int start_serving(const struct ctlsrv_limits *ctl)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char msg[512];
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old;

	/* one daemon at a time: a live control socket means another is running */
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", D.sock_path);
	if (connect(lfd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		log_warnx("daemon: another sluice daemon is serving %s", D.sock_path);
		return 2;
	}
	close(lfd);
	unlink(D.sock_path);
	D.events = sluice_events_open(D.events_path, 0600);
	if (D.events < 0) {
		log_warnx("daemon: cannot open %s: %s", sluice_events_is_journald(D.events_path) ?
			  "the journal (--events journald: is systemd-journald running?)" : D.events_path,
			  strerror(-D.events));
		return 2;
	}
	sluice_evlog_init(&D.log, D.events, D.events_path, "sluice", NULL);
	/* the metrics address is taken before anything is adopted: one in use
	 * (another daemon's?) refuses the start with nothing changed */
	D.base = event_base_new();
	if (D.metrics_addr) {
		D.metrics = sluice_metrics_listen(D.base, D.metrics_addr, metrics_fill, NULL, msg, sizeof(msg));
		if (!D.metrics) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
	}
	if (adopt_all() > 0) {
		log_warnx("daemon: refusing to start: some pinned sandboxes could not be re-adopted (see above); "
			  "their filters stay in force; `sluice detach --force NAME` removes one without the daemon");
		return 2;
	}
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	old = umask(0177);
	if (bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(lfd, 256) < 0) {
		umask(old);
		log_warn("daemon: cannot listen on %s", D.sock_path);
		return 2;
	}
	umask(old);
	if (daemon_user_setup(D.user_group, D.user_group_set, D.state_dir, D.sock_path, msg, sizeof(msg)) < 0) {
		log_warnx("daemon: %s", msg);
		return 2;
	}
	if (ctlsrv_start(D.base, lfd, ctl, handle_request, control_report) < 0) {
		log_warn("daemon: cannot serve %s", D.sock_path);
		return 2;
	}
	if (daemon_follow_init(D.base, D.events_path, D.log.ocsf, user_emit) < 0)
		log_warn("daemon: cannot serve followers of %s (sluice events --follow)", D.events_path);
	return 0;
}

int cmd_daemon(int argc, char **argv)
{
	const char *signers_path = NULL, *boundary_path = NULL;
	struct event *tick, *sigs[3];
	struct timeval tv = { 0, 100000 };
	struct ctlsrv_limits ctl = { 0 };
	int rc = parse_options(argc, argv, &ctl, &signers_path, &boundary_path), n = 0;

	if (rc)
		return rc < 0 ? 0 : rc;
	/* Every attach loads a BPF object, and libbpf 1.1 reads the kernel's
	 * BTF (5 MiB and more) into fresh buffers for each: above glibc's
	 * mmap threshold, so each attach page-faulted some 11 MiB anew (about
	 * a quarter of an attach under a hypervisor, issue 19).  Kept in the
	 * heap instead, the daemon holds that much once, and the pages stay. */
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	rc = prepare(signers_path, boundary_path);
	if (rc == 0 && !D.no_zygote) {
		int err = sluice_child_zygotes();

		if (err < 0)
			log_warnx("daemon: cannot be the children's subreaper (%s): each proxy and resolver is "
				  "exec'd", strerror(-err));
	}
	if (rc == 0)
		rc = start_serving(&ctl);
	if (rc)
		return rc;
	tick = event_new(D.base, -1, EV_PERSIST, on_tick, NULL);
	event_add(tick, &tv);
	sigs[0] = evsignal_new(D.base, SIGTERM, on_signal, NULL);
	sigs[1] = evsignal_new(D.base, SIGINT, on_signal, NULL);
	reopen_ev = evtimer_new(D.base, on_reopen, NULL);
	sigs[2] = evsignal_new(D.base, SIGHUP, on_hup, NULL);
	event_add(sigs[0], NULL);
	event_add(sigs[1], NULL);
	event_add(sigs[2], NULL);
	daemon_emit(NULL, "daemon-start", "sluice daemon serving %s, events in %s%s%s; policy signatures %s%s", D.sock_path,
	     D.events_path, D.metrics ? ", metrics at http://" : "", D.metrics ? D.metrics_addr : "",
	     D.signed_mode ? "required, allowed signers " : "not required (unsigned mode)",
	     D.signed_mode ? D.signers.path : "");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		n++;
	/* Type=notify: ready once the socket listens and the pinned sandboxes are adopted */
	sd_notifyf(0, "READY=1\nSTATUS=serving %s, %d sandboxes", D.sock_path, n);
	event_base_dispatch(D.base);
	ctlsrv_stop();
	daemon_follow_stop();

	/* A clean stop keeps every sandbox filtered and pinned (fail closed);
	 * `sluice detach` is how a filter is removed. */
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		daemon_drain(s);
		stop_children(s);
	}
	sluice_metrics_free(D.metrics);
	retired_stop_all();
	daemon_emit(NULL, "daemon-stop", "sluice daemon stopped; sandboxes stay filtered (pinned)");
	unlink(D.sock_path);
	return 0;
}
