/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sluice-proxy - the bundled forward proxy of a sluice sandbox.  Started by
 * `sluice run` (docs/architecture.md, "Child process interface") with
 * listening sockets it inherits; see docs/proxy.md for what it does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "accept_backoff.h"
#include "child_start.h"
#include "zygote.h"
#include "dnscache.h"
#include "flow.h"
#include "labels.h"
#include "log.h"
#include "policy_expect.h"
#include "version.h"
#include "proxy.h"
#include "relay.h"
#include "tls_pump.h"
#include "upool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-proxy (--listen-fd N | --listen ADDR:PORT)... --flow-map PATH [OPTIONS]\n"
		"\n"
		"The forward proxy of a sluice sandbox: decides every proxied TCP connection of\n"
		"the sandbox (explicit HTTP_PROXY/HTTPS_PROXY use, and connections the kernel\n"
		"redirected) against the policy, dials allowed names itself, and writes one JSON\n"
		"line per request or tunnel.  Normally started by `sluice run`.\n"
		"\n"
		"  --listen-fd N              serve on inherited listening socket N (repeatable)\n"
		"  --listen ADDR:PORT         listen on ADDR:PORT (standalone and tests; repeatable)\n"
		"  --flow-map PATH            pinned sluice_flows map (required): who each client is\n"
		"  --tunnel-maps DIR          where the loader pinned the kernel tunnels' maps\n"
		"                             (sluice_tunnel_*; the sandbox's pin directory)\n"
		"  --kernel-tunnels           relay passthrough tunnels in the kernel (sockhash) instead\n"
		"                             of splice; off by default: the kernel queues a fast sender's\n"
		"                             bytes without bound (docs/performance.md)\n"
		"  --policy FILE              allowlist (default: built-in, deny everything)\n"
		"  --policy-digest HEX        refuse to start unless FILE's digest is HEX (the loader's)\n"
		"  --policy-next FILE         where a drain (SIGQUIT) reads the policy that replaced ours\n"
		"  --secrets-fd N             the credentials' secrets, from the loader (a sealed memfd)\n"
		"  --netns PATH               join this network namespace first\n"
		"  --sandbox NAME             sandbox name for the log (default: default)\n"
		"  --container-id ID, --container-name NAME, --container-runtime RT\n"
		"                             the container the sandbox is: container.* on every line\n"
		"  --log FILE                 access log, JSON lines, appended (default: stdout)\n"
		"  --log-fd N                 write the access log to inherited fd N (sluice run and the\n"
		"                             daemon pass their events destination so all lines share it)\n"
		"  --seq-fd N                 number lines from the sandbox's shared counter, fd N\n"
		"                             (event.sequence; sluice run and the daemon pass it)\n"
		"  --label KEY=VALUE          labels.KEY on every line (repeatable)\n"
		"  --upstream-dns ADDR[:PORT] resolve allowed names here (default: /etc/resolv.conf)\n"
		"  --ready-fd N               write \"ready\\n\" to fd N once serving, then close it\n"
		"  --mode audit|enforce       override the policy's mode\n"
		"  --upstream-ca FILE         also trust the CA certificates (PEM) in FILE for origins\n"
		"                             of inspected names (besides the host's trust store)\n"
		"  --upstream-ca-fd N         the same, read from fd N at start (sluice run and the\n"
		"                             daemon: --upstream-ca and the policy's tls.upstream_ca)\n"
		"  --ca-cert-fd N             write the sandbox CA's certificate (PEM; nothing when the\n"
		"                             policy inspects no name) to fd N at start, then close it\n"
		"  --ca-fd N                  read the sandbox CA (its key, then its certificate, PEM)\n"
		"                             from fd N at start instead of making one (sluice run and\n"
		"                             the daemon: every proxy of a sandbox signs with one CA)\n"
		"  --allow-private-upstream CIDR\n"
		"                             TEST ONLY: also dial resolved addresses in CIDR although\n"
		"                             they are special-purpose (repeatable)\n"
		"  --max-conns N              open connections per sandbox (default 16384); above: 503\n"
		"  --header-timeout SEC       to receive a request head / ClientHello (default 10)\n"
		"  --idle-timeout SEC         tunnel or request without traffic (default 300)\n"
		"  --connect-timeout SEC      resolve + connect upstream (default 10)\n"
		"  --keepalive-timeout SEC    client connection idle between requests (default 60;\n"
		"                             0: one request per connection)\n"
		"  --upstream-pool N          idle upstream connections kept per (address, port, name)\n"
		"                             (default 32; 0: a new connection per request)\n"
		"  --upstream-pool-total N    idle upstream connections kept in all (default 256)\n"
		"  --upstream-idle-timeout SEC  an idle pooled upstream connection (default 10)\n"
		"  --dns-cache N              names whose answers are kept (default 1024; 0: none)\n"
		"  --dns-max-ttl SEC          longest an answer is kept, whatever its TTL (default 60;\n"
		"                             0: no cache)\n"
		"  --drain-timeout MS         SIGQUIT (a reload's old proxy): stop accepting, give the\n"
		"                             open connections this long to finish (default 10000)\n"
		"  -v, --verbose              debug diagnostics on stderr\n"
		"  -h, --help                 this text\n"
		"  -V, --version              the version and the libbpf it runs with\n"
		"\n"
		"SIGTERM/SIGINT: stop accepting; what ends within 300 ms ends as it ends, the rest\n"
		"is closed (each request logged, reason proxy_stopped; a second signal: at once).\n"
		"SIGQUIT: drain (above; then reason drain_deadline).\n"
		"Exit status: 0 after SIGTERM/SIGINT/SIGQUIT, 2 usage or environment error.\n"
		"\n"
		"Examples:\n"
		"  sluice-proxy --listen-fd 3 --flow-map /sys/fs/bpf/sluice/run-42/sluice_flows \\\n"
		"      --policy policy.yaml --sandbox run-42 --ready-fd 5\n"
		"  sluice-proxy --listen 127.0.0.1:3128 --flow-map /sys/fs/bpf/test/flows \\\n"
		"      --policy p.yaml --upstream-dns 127.0.0.1:5353 --allow-private-upstream 127.0.0.1/32\n");
}

static unsigned parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		fatalx("%s: expected a number in %u..%u, got \"%s\"", opt, lo, hi, s);
	return (unsigned)v;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct proxy *px = arg;

	sluice_accept_backoff_ok(&px->accept);
	proxy_accept(px, fd, sa, (socklen_t)salen, NULL);
}

/* The back-off's: pause or resume the listeners (a draining proxy has none
 * left to resume). */
static void set_listening(void *arg, bool on)
{
	struct proxy *px = arg;

	for (size_t i = 0; i < px->n_listeners; i++)
		if (on)
			evconnlistener_enable(px->listeners[i]);
		else
			evconnlistener_disable(px->listeners[i]);
}

/* The back-off's: a client taken through the reserved descriptor is
 * refused with its access-log line. */
static void refuse_client(void *arg, int fd, const struct sockaddr *sa, socklen_t len)
{
	proxy_accept(arg, fd, sa, len, "descriptor_limit");
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
	struct proxy *px = arg;
	int err = EVUTIL_SOCKET_ERROR();

	/* out of descriptors: refuse one (logged), then pause the listeners
	 * instead of spinning on the queue (accept_backoff.h) */
	if (!sluice_accept_backoff_error(&px->accept, l, err))
		log_warnx("accept: %s", evutil_socket_error_to_string(err));
}

/* SIGTERM, SIGINT: stop now; SIGQUIT: drain (drain.c). */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	if (sig == SIGQUIT)
		proxy_drain_start(arg);
	else
		proxy_stop_now(arg);
}

/* Descriptors a client connection may hold at once: its socket, the
 * upstream's, and two splice pipes while a tunnel is busy. */
#define FDS_PER_CONN 6
/* Kept for everything else: listeners, the log, DNS, the flow map, TLS. */
#define FDS_RESERVED 64

/* Raise RLIMIT_NOFILE as far as allowed; return the limit in force. */
static unsigned raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	/* every tunnel needs two sockets and, while busy, two pipes */
	if (rl.rlim_max < 262144) {
		struct rlimit want = { 262144, 262144 };

		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			return 262144;
	}
	rl.rlim_cur = rl.rlim_max;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	return rl.rlim_cur > 1u << 30 ? 1u << 30 : (unsigned)rl.rlim_cur;
}

static void add_listener(struct proxy *px, int fd)
{
	struct evconnlistener *l;

	if (px->n_listeners >= sizeof(px->listeners) / sizeof(px->listeners[0]))
		fatalx("too many listeners");
	if (evutil_make_socket_nonblocking(fd) < 0 || evutil_make_socket_closeonexec(fd) < 0)
		fatal("listener %d", fd);
	l = evconnlistener_new(px->base, on_accept, px, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
			       -1, fd);
	if (!l)
		fatal("listener %d", fd);
	evconnlistener_set_error_cb(l, on_accept_error);   /* its arg: px, as on_accept's */
	px->listeners[px->n_listeners++] = l;
}

static int listen_on(const char *spec)
{
	struct sockaddr_storage ss;
	int sl = sizeof(ss), fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &sl) < 0)
		fatalx("--listen: cannot parse \"%s\" (ADDR:PORT or [ADDR6]:PORT)", spec);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		fatal("--listen %s: socket", spec);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, (socklen_t)sl) < 0)
		fatal("--listen %s: bind", spec);
	if (listen(fd, 4096) < 0)
		fatal("--listen %s: listen", spec);
	return fd;
}

static void setup_dns(struct proxy *px)
{
	const char *up = px->cfg.upstream_dns;

	if (up) {
		px->dns = evdns_base_new(px->base, 0);
		if (!px->dns)
			fatalx("evdns_base_new failed");
		if (evdns_base_nameserver_ip_add(px->dns, up) != 0)
			fatalx("--upstream-dns: cannot use \"%s\" (ADDR, ADDR:PORT or [ADDR6]:PORT)", up);
	} else {
		px->dns = evdns_base_new(px->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
		if (!px->dns)
			fatalx("cannot read the upstream resolver from /etc/resolv.conf");
	}
	/* Not randomising the case of names (0x20): some small upstream
	 * resolvers answer in lower case, which evdns would then ignore. */
	evdns_base_set_option(px->dns, "randomize-case:", "0");
	evdns_base_set_option(px->dns, "timeout:", "2");
	evdns_base_set_option(px->dns, "attempts:", "2");
	evdns_base_set_option(px->dns, "max-inflight:", "512");
}

static void ms_to_tv(unsigned ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (ms % 1000) * 1000;
}

/* SIGHUP: reopen the --log file (after a rotation); keep serving. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
	struct proxy *p = arg;
	int err;

	if (!p->cfg.log_path || p->log_fd < 0)
		return;
	err = log_reopen_fd(p->log_fd, p->cfg.log_path, 0640);
	if (err)
		log_warnx("SIGHUP: cannot reopen %s: %s (still writing to the old file)", p->cfg.log_path,
			  strerror(-err));
}

/* Parse the options into cfg (and the descriptors and labels that are
 * not configuration).  Returns -1 to go on, or the exit status (0 after
 * --help or -V, 2 for a usage error); bad values are fatal. */
static int parse_options(int argc, char **argv, struct proxy_config *cfg, int *secrets_fd, int *seq_fd,
			 struct sluice_labels *labels)
{
	static const struct option opts[] = {
		{ "listen-fd", required_argument, NULL, 'F' },
		{ "listen", required_argument, NULL, 'L' },
		{ "flow-map", required_argument, NULL, 'm' },
		{ "tunnel-maps", required_argument, NULL, 'j' },
		{ "kernel-tunnels", no_argument, NULL, 'k' },
		{ "policy", required_argument, NULL, 'p' },
		{ "policy-digest", required_argument, NULL, 'g' },
		{ "policy-next", required_argument, NULL, 'q' },
		{ "netns", required_argument, NULL, 'n' },
		{ "sandbox", required_argument, NULL, 's' },
		{ "container-id", required_argument, NULL, 'i' },
		{ "container-name", required_argument, NULL, 'N' },
		{ "container-runtime", required_argument, NULL, 'R' },
		{ "log", required_argument, NULL, 'l' },
		{ "log-fd", required_argument, NULL, 'G' },
		{ "events-format", required_argument, NULL, 'J' },
		{ "seq-fd", required_argument, NULL, 'E' },
		{ "label", required_argument, NULL, 'B' },
		{ "upstream-dns", required_argument, NULL, 'd' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "mode", required_argument, NULL, 'M' },
		{ "allow-private-upstream", required_argument, NULL, 'A' },
		{ "max-conns", required_argument, NULL, 'c' },
		{ "header-timeout", required_argument, NULL, 'H' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "connect-timeout", required_argument, NULL, 'C' },
		{ "keepalive-timeout", required_argument, NULL, 'K' },
		{ "upstream-pool", required_argument, NULL, 'P' },
		{ "upstream-pool-total", required_argument, NULL, 'T' },
		{ "upstream-idle-timeout", required_argument, NULL, 'U' },
		{ "dns-cache", required_argument, NULL, 'D' },
		{ "dns-max-ttl", required_argument, NULL, 'X' },
		{ "upstream-ca", required_argument, NULL, 'a' },
		{ "upstream-ca-fd", required_argument, NULL, 'W' },
		{ "ca-cert-fd", required_argument, NULL, 'Z' },
		{ "ca-fd", required_argument, NULL, 'Y' },
		{ "secrets-fd", required_argument, NULL, 'S' },
		{ "drain-timeout", required_argument, NULL, 'Q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char lerr[256];
	int c;

	while ((c = getopt_long(argc, argv, "vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (cfg->n_listen_fds >= PROXY_MAX_LISTEN)
				fatalx("too many --listen-fd");
			cfg->listen_fds[cfg->n_listen_fds++] = (int)parse_uint("--listen-fd", optarg, 0, INT_MAX);
			break;
		case 'L':
			if (cfg->n_listen_addrs >= PROXY_MAX_LISTEN)
				fatalx("too many --listen");
			cfg->listen_addrs[cfg->n_listen_addrs++] = optarg;
			break;
		case 'm': cfg->flow_map = optarg; break;
		case 'j': cfg->tunnel_maps = optarg; break;
		case 'k': cfg->kernel_tunnels = true; break;
		case 'S': *secrets_fd = (int)parse_uint("--secrets-fd", optarg, 0, INT_MAX); break;
		case 'p': cfg->policy_path = optarg; break;
		case 'g': cfg->policy_digest = optarg; break;
		case 'q': cfg->policy_next = optarg; break;
		case 'n': cfg->netns = optarg; break;
		case 's': cfg->sandbox = optarg; break;
		case 'i': cfg->container_id = optarg; break;
		case 'N': cfg->container_name = optarg; break;
		case 'R': cfg->container_runtime = optarg; break;
		case 'l': cfg->log_path = optarg; break;
		case 'G': cfg->log_fd = (int)parse_uint("--log-fd", optarg, 1, INT_MAX); break;
		case 'E': *seq_fd = (int)parse_uint("--seq-fd", optarg, 0, INT_MAX); break;
		case 'B':
			if (sluice_label_add(labels, optarg, lerr, sizeof(lerr)) < 0) {
				fprintf(stderr, "sluice-proxy: --label: %s\n", lerr);
				return 2;
			}
			break;
		case 'J':
			if (strcmp(optarg, "ecs") != 0 && strcmp(optarg, "ocsf") != 0) {
				fprintf(stderr, "sluice-proxy: --events-format must be ecs or ocsf\n");
				return 2;
			}
			sluice_evlog_use_ocsf(strcmp(optarg, "ocsf") == 0);
			break;
		case 'd': cfg->upstream_dns = optarg; break;
		case 'r': cfg->ready_fd = (int)parse_uint("--ready-fd", optarg, 0, INT_MAX); break;
		case 'M':
			if (strcmp(optarg, "audit") == 0)
				cfg->mode = SLUICE_MODE_AUDIT;
			else if (strcmp(optarg, "enforce") == 0)
				cfg->mode = SLUICE_MODE_ENFORCE;
			else
				fatalx("--mode: audit or enforce, not \"%s\"", optarg);
			break;
		case 'A':
			if (cfg->n_allow_private >= PROXY_MAX_ALLOW)
				fatalx("too many --allow-private-upstream");
			if (netaddr_cidr_parse(optarg, &cfg->allow_private[cfg->n_allow_private]) < 0)
				fatalx("--allow-private-upstream: bad CIDR \"%s\"", optarg);
			cfg->n_allow_private++;
			break;
		case 'c': cfg->max_conns = parse_uint("--max-conns", optarg, 1, 1000000); break;
		case 'H': cfg->header_timeout_ms = 1000 * parse_uint("--header-timeout", optarg, 1, 3600); break;
		case 'I': cfg->idle_timeout_ms = 1000 * parse_uint("--idle-timeout", optarg, 1, 86400); break;
		case 'C': cfg->connect_timeout_ms = 1000 * parse_uint("--connect-timeout", optarg, 1, 3600); break;
		case 'K': cfg->keepalive_timeout_ms = 1000 * parse_uint("--keepalive-timeout", optarg, 0, 3600); break;
		case 'P': cfg->upstream_pool = parse_uint("--upstream-pool", optarg, 0, 4096); break;
		case 'T': cfg->upstream_pool_total = parse_uint("--upstream-pool-total", optarg, 0, 65536); break;
		case 'U': cfg->upstream_idle_ms = 1000 * parse_uint("--upstream-idle-timeout", optarg, 1, 3600); break;
		case 'D': cfg->dns_cache_entries = parse_uint("--dns-cache", optarg, 0, 1000000); break;
		case 'X': cfg->dns_max_ttl = parse_uint("--dns-max-ttl", optarg, 0, 86400); break;
		case 'a': cfg->upstream_ca = optarg; break;
		case 'W': cfg->upstream_ca_fd = (int)parse_uint("--upstream-ca-fd", optarg, 0, INT_MAX); break;
		case 'Z': cfg->ca_cert_fd = (int)parse_uint("--ca-cert-fd", optarg, 0, INT_MAX); break;
		case 'Y': cfg->ca_fd = (int)parse_uint("--ca-fd", optarg, 0, INT_MAX); break;
		case 'Q': cfg->drain_timeout_ms = parse_uint("--drain-timeout", optarg, 0, 3600000); break;
		case 'v': cfg->verbose = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': sluice_version_print(stdout, "sluice-proxy"); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The connections' timeouts, and the event loop: its epoll changelist
 * (an fd whose events are removed and added again within one loop turn,
 * a request handed from one phase to the next, costs one epoll_ctl or
 * none instead of two) and one common-timeout queue per duration (every
 * connection's timer uses one of these few: O(1) per re-arm, and the
 * idle timer is re-armed on every read, instead of one heap). */
static void make_loop(struct proxy *px)
{
	const struct proxy_config *cfg = &px->cfg;
	struct timeval *tvs[] = { &px->tv_header, &px->tv_idle, &px->tv_connect, &px->tv_linger, &px->tv_keepalive };
	struct event_config *ec;

	ms_to_tv(cfg->header_timeout_ms, &px->tv_header);
	ms_to_tv(cfg->idle_timeout_ms, &px->tv_idle);
	ms_to_tv(cfg->connect_timeout_ms, &px->tv_connect);
	ms_to_tv(cfg->linger_ms, &px->tv_linger);
	ms_to_tv(cfg->keepalive_timeout_ms, &px->tv_keepalive);
	ms_to_tv(cfg->upstream_idle_ms, &px->tv_upstream_idle);
	ec = event_config_new();
	if (!ec)
		fatalx("event_config_new failed");
	event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	px->base = event_base_new_with_config(ec);
	event_config_free(ec);
	if (!px->base)
		fatalx("event_base_new failed");
	for (size_t i = 0; i < sizeof(tvs) / sizeof(tvs[0]); i++) {
		const struct timeval *ct = event_base_init_common_timeout(px->base, tvs[i]);

		if (ct)
			*tvs[i] = *ct;
	}
	if (relay_idle_timeout(px->base, cfg->idle_timeout_ms) < 0)
		fatalx("cannot make the tunnels' idle timer");
}

/* The policy (--policy, or the built-in one that allows nothing) and the mode in force. */
static void load_policy(struct proxy *px)
{
	const struct proxy_config *cfg = &px->cfg;
	struct sluice_policy_error perr;

	if (cfg->policy_path) {
		if (sluice_policy_load_expect(cfg->policy_path, cfg->policy_digest, &px->policy, &perr) < 0) {
			char buf[600];

			fatalx("%s", sluice_policy_error_str(&perr, buf, sizeof(buf)));
		}
	} else {
		px->policy = sluice_policy_default();
		if (!px->policy)
			fatalx("cannot build the default policy");
	}
	px->mode = cfg->mode >= 0 ? (enum sluice_mode)cfg->mode : px->policy->mode;
}

/* What only this process may hold: the sandbox CA's key and the
 * credentials' secrets live in its memory only, so nothing may read that
 * memory (no core dumps, no ptrace by non-root, no /proc/PID/mem). */
static void load_secrets(struct proxy *px, int secrets_fd)
{
	const char *why = NULL;

	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		fatal("prctl(PR_SET_DUMPABLE)");
	/* the credentials' secrets, as content from the loader */
	if (proxy_creds_init(px, secrets_fd, &why) < 0)
		fatalx("credentials: %s", why);
	why = NULL;
	if (proxy_tls_init(px, &why) < 0)
		fatalx("TLS inspection: %s", why);
}

/* SIGTERM, SIGINT, SIGQUIT (on_signal) and SIGHUP (on_hup) on the loop. */
static void add_signals(struct proxy *px, struct event *sigs[4])
{
	sigs[0] = evsignal_new(px->base, SIGTERM, on_signal, px);
	sigs[1] = evsignal_new(px->base, SIGINT, on_signal, px);
	sigs[2] = evsignal_new(px->base, SIGHUP, on_hup, px);
	sigs[3] = evsignal_new(px->base, SIGQUIT, on_signal, px);
	for (int i = 0; i < 4; i++)
		if (!sigs[i] || event_add(sigs[i], NULL) < 0)
			fatalx("cannot install signal handlers");
}

/* Everything main made, freed once the loop has ended. */
static void proxy_free(struct proxy *px, struct event *sigs[4])
{
	for (size_t i = 0; i < px->n_listeners; i++)
		evconnlistener_free(px->listeners[i]);
	for (int i = 0; i < 4; i++)
		event_free(sigs[i]);
	if (px->drain_tick)
		event_free(px->drain_tick);
	if (px->drain_deadline)
		event_free(px->drain_deadline);
	proxy_upool_free(px->upool);
	if (px->flow_sweep)
		event_free(px->flow_sweep);
	tls_pump_free_all();
	proxy_dnscache_free(px->dnscache);
	evdns_base_free(px->dns, 1);
	sluice_accept_backoff_free(&px->accept);
	relay_idle_free();
	event_base_free(px->base);
	sluice_child_loss_summary(&px->log);
	proxy_tls_free(px);
	proxy_creds_free(px);
	proxy_redecide_free(px);
	sluice_policy_free(px->policy);
	close(px->flow_fd);
}

int main(int argc, char **argv)
{
	static struct proxy px;
	static struct sluice_labels labels;
	struct proxy_config *cfg = &px.cfg;
	struct event *sigs[4];
	int r, secrets_fd = -1, seq_fd = -1;

	/* a zygote's child returns here with its own command line (zygote.h) */
	sluice_zygote_serve(&argc, &argv);
	log_init("sluice-proxy", 0);
	proxy_config_defaults(cfg);
	r = parse_options(argc, argv, cfg, &secrets_fd, &seq_fd, &labels);
	if (r >= 0)
		return r;
	log_init("sluice-proxy", cfg->verbose);
	if (!cfg->n_listen_fds && !cfg->n_listen_addrs)
		fatalx("nothing to serve: give --listen-fd N or --listen ADDR:PORT");
	if (!cfg->flow_map)
		fatalx("--flow-map is required: without it no client can be attributed to a sandbox");
	/* Before any socket of our own: upstream dials and DNS leave from the
	 * sandbox's network. */
	sluice_child_join_netns(cfg->netns);
	signal(SIGPIPE, SIG_IGN);   /* splice() to a closed socket raises it */
	{
		unsigned nofile = raise_nofile();

		/* beyond this many clients, new ones are refused (logged) so that
		 * the open ones keep the descriptors they need */
		px.fd_cap = nofile > FDS_RESERVED + FDS_PER_CONN ? (nofile - FDS_RESERVED) / FDS_PER_CONN : 1;
		log_debug("descriptor limit %u: at most %u client connections", nofile, px.fd_cap);
	}
	px.log_fd = sluice_child_log_fd(cfg->log_path, cfg->log_fd);
	load_policy(&px);
	{
		struct sluice_envelope env = {
			.sandbox = cfg->sandbox, .policy_name = px.policy->name, .policy_digest = px.policy->digest,
			.mode = px.mode == SLUICE_MODE_AUDIT ? "audit" : "enforce", .labels = &labels,
			.container_id = cfg->container_id, .container_name = cfg->container_name,
			.container_runtime = cfg->container_runtime,
		};

		if (sluice_child_evlog(&px.log, px.log_fd, cfg->log_path, "sluice-proxy", &env, seq_fd) < 0)
			return 2;
	}
	load_secrets(&px, secrets_fd);
	px.flow_fd = sluice_flow_open(cfg->flow_map);
	if (px.flow_fd < 0)
		fatal("--flow-map %s", cfg->flow_map);
	if (cfg->kernel_tunnels)
		relay_kernel_enable(cfg->tunnel_maps);
	make_loop(&px);
	px.flow_sweep = sluice_flow_sweeper(px.base, px.flow_fd, false);
	if (!px.flow_sweep)
		fatalx("out of memory");
	if (sluice_accept_backoff_init(&px.accept, px.base, set_listening, refuse_client, &px) < 0)
		fatal("the reserved descriptor");
	setup_dns(&px);
	px.dnscache = proxy_dnscache_new(px.dns, cfg->dns_cache_entries, cfg->dns_max_ttl);
	if (!px.dnscache)
		fatalx("out of memory");
	if (cfg->upstream_pool && cfg->upstream_pool_total) {
		px.upool = proxy_upool_new(px.base, cfg->upstream_pool, cfg->upstream_pool_total,
					   &px.tv_upstream_idle);
		if (!px.upool)
			fatalx("out of memory");
	}
	for (size_t i = 0; i < cfg->n_listen_fds; i++)
		add_listener(&px, cfg->listen_fds[i]);
	for (size_t i = 0; i < cfg->n_listen_addrs; i++)
		add_listener(&px, listen_on(cfg->listen_addrs[i]));
	add_signals(&px, sigs);

	log_debug("serving %zu listener(s), policy %s (%s), mode %s", px.n_listeners,
		  px.policy->name ? px.policy->name : "?", px.policy->digest,
		  px.mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	sluice_child_ready(cfg->ready_fd);

	event_base_dispatch(px.base);

	proxy_free(&px, sigs);
	return 0;
}
