/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sluice-resolver - the sandbox's DNS resolver: answers only the names the
 * policy allows, forwarding them to the upstream resolver; every other name
 * gets dns.on_deny and no packet leaves for it.  Started by `sluice run`
 * (docs/architecture.md, "Child process interface"); --listen for tests.
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
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "child_start.h"
#include "zygote.h"
#include "evlog.h"
#include "flow.h"
#include "labels.h"
#include "log.h"
#include "version.h"
#include "policy.h"
#include "policy_expect.h"
#include "resolver.h"
#include "fair.h"
#include "server.h"

#define MAX_FDS 16
#define MAX_ALLOW 64

static void usage(FILE *f)
{
	fprintf(f,
"usage: sluice-resolver (--udp-fd N | --tcp-fd N | --listen ADDR:PORT)...\n"
"                       [--policy FILE] [--netns PATH] [--sandbox NAME] [--log FILE | --log-fd N]\n"
"                       [--upstream-dns ADDR[:PORT]] [--ready-fd N] [--mode audit|enforce]\n"
"                       [--allow-private-answers CIDR]... [--upstream-timeout-ms N]\n"
"                       [--cache-size N] [--cache-max-ttl SECONDS] [--flow-map PATH] [-v]\n"
"\n"
"Answers DNS queries for the names a sluice policy allows, forwarding them to\n"
"the upstream resolver; any other name gets the policy's dns.on_deny (NXDOMAIN\n"
"or REFUSED) and nothing is sent upstream for it.  One JSON line per query.\n"
"\n"
"  --udp-fd N, --tcp-fd N   serve on inherited sockets (bound UDP, listening TCP)\n"
"  --listen ADDR:PORT       open UDP and TCP sockets there (standalone use, tests)\n"
"  --policy FILE            policy (default: the built-in one, which allows nothing)\n"
"  --policy-digest HEX      refuse to start unless FILE's digest is HEX (the loader's)\n"
"  --secrets-fd N           the credentials' placeholders, from the loader (a sealed memfd)\n"
"  --netns PATH             join this network namespace first: upstream queries\n"
"                           leave from the sandbox's network\n"
"  --sandbox NAME           sandbox name for the log\n"
"  --container-id ID, --container-name NAME, --container-runtime RT\n"
"                           the container the sandbox is: container.* on every line\n"
"  --log FILE               JSON lines, appended (default: standard output)\n"
"  --log-fd N               write them to inherited fd N (sluice run and the daemon pass\n"
"                           their events destination so that all lines share it)\n"
"  --seq-fd N               number lines from the sandbox's shared counter, fd N\n"
"                           (event.sequence; sluice run and the daemon pass it)\n"
"  --label KEY=VALUE        labels.KEY on every line (repeatable)\n"
"  --upstream-dns ADDR[:PORT]  upstream resolver (default: the first nameserver\n"
"                           of /etc/resolv.conf, port 53)\n"
"  --ready-fd N             write \"ready\\n\" to fd N once serving, then close it\n"
"  --mode audit|enforce     override the policy's mode; audit forwards what\n"
"                           enforce would deny and logs it as would_deny\n"
"  --allow-private-answers CIDR  pass A/AAAA answers in this non-public range\n"
"                           (repeatable; for test worlds on documentation ranges)\n"
"  --upstream-timeout-ms N  per UDP attempt (default 2000; one retry)\n"
"  --denied-rate N          queries answered without forwarding (denied names,\n"
"                           refusals) per client address per second, UDP (default 200,\n"
"                           bursts of twice that; 0: no limit); beyond, dropped and\n"
"                           counted in dns-queries-dropped lines\n"
"  --cache-size N           upstream replies kept in memory (default 4096, 0: none);\n"
"                           every use is decided and filtered again\n"
"  --cache-max-ttl SECONDS  keep a reply at most this long (default 300), never\n"
"                           longer than its TTL\n"
"  --flow-map PATH          the sandbox's pinned sluice_flows map: which server a\n"
"                           redirected query asked, and who sent it (sluice run and\n"
"                           the daemon pass it)\n"
"  -V, --version            the version and the libbpf it runs with\n"
"\n"
"Examples:\n"
"  sluice-resolver --listen 127.0.0.1:5353 --policy policies/example.yaml \\\n"
"      --upstream-dns 127.0.0.1:5300 --allow-private-answers 192.0.2.0/24\n"
"  dig @127.0.0.1 -p 5353 api.example.com A\n"
"\n"
"SIGTERM/SIGINT: stop now (queries in flight get SERVFAIL, each logged).  SIGQUIT\n"
"(a reload's old resolver): read no new query, answer and log those in flight,\n"
"exit once none is left (at most 10 s; then as SIGTERM).\n"
"Exit status: 0 after SIGTERM/SIGINT/SIGQUIT, 2 on a usage or environment error.\n");
}

static int parse_int(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < lo || v > hi)
		fatalx("%s: not a number in %ld..%ld: %s", what, lo, hi, s);
	return (int)v;
}

static void check_socket(int fd, int want_type, const char *opt)
{
	int type;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		fatal("%s %d", opt, fd);
	if (type != want_type)
		fatalx("%s %d: not a %s socket", opt, fd, want_type == SOCK_DGRAM ? "UDP" : "TCP");
}

static struct rsv_server *srv_for_drain;

static void poll_drops(void *arg)
{
	rsv_server_count_drops(arg);
}
static const unsigned drain_ms = 10000;   /* SIGQUIT: the longest a drain takes */

/* SIGTERM, SIGINT: stop now (in-flight queries get SERVFAIL, logged);
 * SIGQUIT: drain, at most drain_ms (rsv_server_drain). */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	if (sig == SIGQUIT && srv_for_drain) {
		struct timeval tv = { .tv_sec = drain_ms / 1000, .tv_usec = (suseconds_t)(drain_ms % 1000) * 1000 };

		event_base_loopexit(arg, &tv);
		rsv_server_drain(srv_for_drain);
		return;
	}
	event_base_loopexit(arg, NULL);
}

struct hup_log {
	int fd;
	const char *path;
};

/* SIGHUP: reopen the --log file (after a rotation); keep serving. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
	const struct hup_log *h = arg;
	int err;

	if (!h->path || h->fd < 0)
		return;
	err = log_reopen_fd(h->fd, h->path, 0640);
	if (err)
		log_warnx("SIGHUP: cannot reopen %s: %s (still writing to the old file)", h->path, strerror(-err));
}

/* The command line (what each option means: usage()). */
struct opts {
	int udp_fds[MAX_FDS], tcp_fds[MAX_FDS], n_udp, n_tcp, n_listen;
	const char *listen_addrs[MAX_FDS];
	const char *policy_path, *policy_digest, *netns, *sandbox, *log_path, *upstream, *mode;
	const char *ctr_id, *ctr_name, *ctr_runtime, *flow_map;
	int secrets_fd, seq_fd, ready_fd, log_fd, verbose;
	struct sluice_labels labels;
	struct netaddr_cidr allow[MAX_ALLOW];
	size_t n_allow;
	long timeout_ms, cache_size, cache_ttl;
	unsigned denied_rate;
};

/* Parse the options into o.  Returns -1 to go on, or the exit status
 * (0 after --help or -V, 2 for a usage error); bad values are fatal. */
static int parse_options(int argc, char **argv, struct opts *o)
{
	enum { O_UDP = 256, O_TCP, O_LISTEN, O_POLICY, O_NETNS, O_SANDBOX, O_LOG, O_UPSTREAM,
	       O_READY, O_MODE, O_ALLOW, O_TIMEOUT, O_LOG_FD, O_SECRETS, O_DENIED_RATE, O_EVENTS_FORMAT,
	       O_CACHE_SIZE, O_CACHE_TTL, O_SEQ_FD, O_LABEL, O_CTR_ID, O_CTR_NAME, O_CTR_RUNTIME, O_POLICY_DIGEST,
	       O_FLOW_MAP };
	static const struct option opts[] = {
		{ "udp-fd", required_argument, NULL, O_UDP },
		{ "tcp-fd", required_argument, NULL, O_TCP },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "policy-digest", required_argument, NULL, O_POLICY_DIGEST },
		{ "secrets-fd", required_argument, NULL, O_SECRETS },
		{ "netns", required_argument, NULL, O_NETNS },
		{ "sandbox", required_argument, NULL, O_SANDBOX },
		{ "container-id", required_argument, NULL, O_CTR_ID },
		{ "container-name", required_argument, NULL, O_CTR_NAME },
		{ "container-runtime", required_argument, NULL, O_CTR_RUNTIME },
		{ "log", required_argument, NULL, O_LOG },
		{ "log-fd", required_argument, NULL, O_LOG_FD },
		{ "events-format", required_argument, NULL, O_EVENTS_FORMAT },
		{ "seq-fd", required_argument, NULL, O_SEQ_FD },
		{ "label", required_argument, NULL, O_LABEL },
		{ "upstream-dns", required_argument, NULL, O_UPSTREAM },
		{ "ready-fd", required_argument, NULL, O_READY },
		{ "mode", required_argument, NULL, O_MODE },
		{ "allow-private-answers", required_argument, NULL, O_ALLOW },
		{ "upstream-timeout-ms", required_argument, NULL, O_TIMEOUT },
		{ "denied-rate", required_argument, NULL, O_DENIED_RATE },
		{ "cache-size", required_argument, NULL, O_CACHE_SIZE },
		{ "cache-max-ttl", required_argument, NULL, O_CACHE_TTL },
		{ "flow-map", required_argument, NULL, O_FLOW_MAP },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char errbuf[600];
	int c;

	o->secrets_fd = o->seq_fd = o->ready_fd = -1;
	o->timeout_ms = 2000;
	o->cache_size = 4096;
	o->cache_ttl = 300;
	o->denied_rate = RSV_DENIED_RATE;
	while ((c = getopt_long(argc, argv, "vhV", opts, NULL)) != -1) {
		switch (c) {
		case O_UDP:
		case O_TCP:
			if ((c == O_UDP ? o->n_udp : o->n_tcp) >= MAX_FDS)
				fatalx("too many --%s-fd", c == O_UDP ? "udp" : "tcp");
			if (c == O_UDP)
				o->udp_fds[o->n_udp++] = parse_int(optarg, 0, INT_MAX, "--udp-fd");
			else
				o->tcp_fds[o->n_tcp++] = parse_int(optarg, 0, INT_MAX, "--tcp-fd");
			break;
		case O_LISTEN:
			if (o->n_listen >= MAX_FDS)
				fatalx("too many --listen");
			o->listen_addrs[o->n_listen++] = optarg;
			break;
		case O_POLICY: o->policy_path = optarg; break;
		case O_POLICY_DIGEST: o->policy_digest = optarg; break;
		case O_SECRETS: o->secrets_fd = parse_int(optarg, 0, INT_MAX, "--secrets-fd"); break;
		case O_NETNS: o->netns = optarg; break;
		case O_SANDBOX: o->sandbox = optarg; break;
		case O_CTR_ID: o->ctr_id = optarg; break;
		case O_CTR_NAME: o->ctr_name = optarg; break;
		case O_CTR_RUNTIME: o->ctr_runtime = optarg; break;
		case O_LOG: o->log_path = optarg; break;
		case O_LOG_FD: o->log_fd = parse_int(optarg, 1, INT_MAX, "--log-fd"); break;
		case O_SEQ_FD: o->seq_fd = parse_int(optarg, 0, INT_MAX, "--seq-fd"); break;
		case O_LABEL:
			if (sluice_label_add(&o->labels, optarg, errbuf, sizeof(errbuf)) < 0) {
				fprintf(stderr, "sluice-resolver: --label: %s\n", errbuf);
				return 2;
			}
			break;
		case O_EVENTS_FORMAT:
			if (strcmp(optarg, "ecs") != 0 && strcmp(optarg, "ocsf") != 0) {
				fprintf(stderr, "sluice-resolver: --events-format must be ecs or ocsf\n");
				return 2;
			}
			sluice_evlog_use_ocsf(strcmp(optarg, "ocsf") == 0);
			break;
		case O_UPSTREAM: o->upstream = optarg; break;
		case O_READY: o->ready_fd = parse_int(optarg, 0, INT_MAX, "--ready-fd"); break;
		case O_MODE:
			if (strcmp(optarg, "audit") != 0 && strcmp(optarg, "enforce") != 0)
				fatalx("--mode: audit or enforce, not %s", optarg);
			o->mode = optarg;
			break;
		case O_ALLOW:
			if (o->n_allow >= MAX_ALLOW)
				fatalx("too many --allow-private-answers");
			if (netaddr_cidr_parse(optarg, &o->allow[o->n_allow]) < 0)
				fatalx("--allow-private-answers: not a CIDR (host bits must be zero): %s",
				       optarg);
			o->n_allow++;
			break;
		case O_DENIED_RATE:
			o->denied_rate = (unsigned)parse_int(optarg, 0, 1000000, "--denied-rate");
			break;
		case O_TIMEOUT:
			o->timeout_ms = parse_int(optarg, 10, 60000, "--upstream-timeout-ms");
			break;
		case O_CACHE_SIZE:
			o->cache_size = parse_int(optarg, 0, 1 << 20, "--cache-size");
			break;
		case O_FLOW_MAP: o->flow_map = optarg; break;
		case O_CACHE_TTL:
			o->cache_ttl = parse_int(optarg, 0, 86400, "--cache-max-ttl");
			break;
		case 'v': o->verbose = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': sluice_version_print(stdout, "sluice-resolver"); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The policy (--policy, or the built-in one that allows nothing) and what
 * the server decides with: mode, private answers, placeholders, tunnel
 * state, cache and timeouts. */
static struct sluice_policy *load_policy(const struct opts *o, struct rsv_server_cfg *cfg,
					 struct sluice_secrets *placeholders)
{
	struct sluice_policy *policy = NULL;
	struct sluice_policy_error perr;
	char errbuf[600];

	if (o->policy_path) {
		if (sluice_policy_load_expect(o->policy_path, o->policy_digest, &policy, &perr) < 0)
			fatalx("%s", sluice_policy_error_str(&perr, errbuf, sizeof(errbuf)));
	} else {
		policy = sluice_policy_default();
		if (!policy)
			fatalx("out of memory");
	}
	rsv_server_cfg_default(cfg);
	cfg->ctx.policy = policy;
	cfg->ctx.mode = o->mode ? (strcmp(o->mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE)
				: policy->mode;
	cfg->ctx.allow_private = o->allow;
	cfg->ctx.n_allow_private = o->n_allow;
	if (o->secrets_fd >= 0) {
		if (sluice_secrets_from_fd(o->secrets_fd, placeholders) < 0)
			fatalx("--secrets-fd: malformed hand-over");
		cfg->ctx.placeholders = placeholders;
	}
	cfg->ctx.names = sluice_name_index_new(policy);
	if (!cfg->ctx.names)
		fatalx("out of memory");
	cfg->ctx.tunnel = rsv_tunnel_new(policy->n_entries, NULL);
	if (!cfg->ctx.tunnel)
		fatalx("out of memory");
	cfg->lc.sandbox = o->sandbox;
	cfg->lc.policy = policy;
	cfg->lc.mode = cfg->ctx.mode;
	cfg->timeout_ms = (unsigned)o->timeout_ms;
	cfg->cache_size = (unsigned)o->cache_size;
	cfg->cache_max_ttl = (unsigned)o->cache_ttl;
	return policy;
}

/* The upstream resolver: --upstream-dns, else the first nameserver of
 * /etc/resolv.conf (a loopback one is warned about); its text in upbuf. */
static void set_upstream(const struct opts *o, struct rsv_server_cfg *cfg, char *upbuf, size_t uplen)
{
	static char nsbuf[256];
	const char *upstream = o->upstream;
	unsigned ulen;

	if (!upstream) {
		if (rsv_resolv_conf_first("/etc/resolv.conf", nsbuf, sizeof(nsbuf)) < 0)
			fatal("no --upstream-dns and no nameserver in /etc/resolv.conf");
		upstream = nsbuf;
		if (rsv_parse_hostport(upstream, 53, &cfg->upstream, &ulen) < 0)
			fatalx("/etc/resolv.conf: nameserver %s is not a numeric address", upstream);
		if (rsv_sockaddr_is_loopback((struct sockaddr *)&cfg->upstream))
			log_warnx("upstream %s (first nameserver of /etc/resolv.conf) is a loopback "
				  "address: %s; pass --upstream-dns with a reachable resolver",
				  upstream, o->netns ? "inside the sandbox's network namespace it is the "
				  "sandbox's own loopback, where no resolver runs"
				  : "a local stub such as systemd-resolved must be running");
	} else if (rsv_parse_hostport(upstream, 53, &cfg->upstream, &ulen) < 0) {
		fatalx("--upstream-dns: not a numeric ADDR[:PORT]: %s", upstream);
	}
	cfg->upstream_len = ulen;
	rsv_sockaddr_str((struct sockaddr *)&cfg->upstream, upbuf, uplen);
}

/* The sockets to serve on: the inherited ones (checked to be of their
 * kind), and UDP and TCP ones made for each --listen; desc names them. */
static void add_sockets(struct rsv_server *srv, const struct opts *o, char *desc, size_t desclen)
{
	for (int i = 0; i < o->n_udp; i++) {
		check_socket(o->udp_fds[i], SOCK_DGRAM, "--udp-fd");
		if (rsv_server_add_udp(srv, o->udp_fds[i]) < 0)
			fatal("--udp-fd %d", o->udp_fds[i]);
	}
	for (int i = 0; i < o->n_tcp; i++) {
		check_socket(o->tcp_fds[i], SOCK_STREAM, "--tcp-fd");
		if (rsv_server_add_tcp(srv, o->tcp_fds[i]) < 0)
			fatal("--tcp-fd %d", o->tcp_fds[i]);
	}
	desc[0] = 0;
	for (int i = 0; i < o->n_listen; i++) {
		struct sockaddr_storage ss;
		unsigned len;
		int u, t;

		if (rsv_parse_hostport(o->listen_addrs[i], 53, &ss, &len) < 0)
			fatalx("--listen: not a numeric ADDR:PORT: %s", o->listen_addrs[i]);
		u = rsv_listen((struct sockaddr *)&ss, len, SOCK_DGRAM);
		if (u < 0)
			fatal("--listen %s (udp)", o->listen_addrs[i]);
		t = rsv_listen((struct sockaddr *)&ss, len, SOCK_STREAM);
		if (t < 0)
			fatal("--listen %s (tcp)", o->listen_addrs[i]);
		if (rsv_server_add_udp(srv, u) < 0 || rsv_server_add_tcp(srv, t) < 0)
			fatal("--listen %s", o->listen_addrs[i]);
		snprintf(desc + strlen(desc), desclen - strlen(desc), "%s%s", i ? " " : "", o->listen_addrs[i]);
	}
	if (!desc[0])
		snprintf(desc, desclen, "inherited fds");
}

/* SIGTERM, SIGINT, SIGQUIT (on_signal) and SIGHUP (on_hup) on the loop. */
static void add_signals(struct event_base *base, struct event *sigs[4], struct hup_log *h)
{
	sigs[0] = evsignal_new(base, SIGTERM, on_signal, base);
	sigs[1] = evsignal_new(base, SIGINT, on_signal, base);
	sigs[2] = evsignal_new(base, SIGHUP, on_hup, h);
	sigs[3] = evsignal_new(base, SIGQUIT, on_signal, base);
	for (int i = 0; i < 4; i++)
		if (!sigs[i] || event_add(sigs[i], NULL) < 0)
			fatalx("cannot handle signals");
}

/* The limit on answers without forwarding (--denied-rate; bursts of twice
 * the rate: a build's first lookups come at once).  Its drops reach
 * `sluice status` and the metrics through the shared event page
 * (rsv_fair_count, evseq.h). */
static struct rsv_fair *start_fair(struct event_base *base, struct sluice_evlog *evlog, struct rsv_server *srv,
				   const struct opts *o)
{
	struct rsv_fair *fair = rsv_fair_new(base, evlog, o->denied_rate, o->denied_rate ? 2 * o->denied_rate : 1);

	if (!fair)
		fatalx("out of memory");
	rsv_fair_set_poll(fair, poll_drops, srv);
	return fair;
}

int main(int argc, char **argv)
{
	static struct opts o;
	static struct sluice_secrets placeholders;
	static struct hup_log hup_log;
	static struct sluice_evlog evlog;
	struct sluice_policy *policy;
	struct rsv_server_cfg cfg;
	struct rsv_server *srv;
	struct event_base *base;
	struct event *sigs[4], *flow_sweep;
	char upbuf[64], listen_desc[512];
	struct rsv_fair *fair;
	int r;

	/* a zygote's child returns here with its own command line (zygote.h) */
	sluice_zygote_serve(&argc, &argv);
	log_init("sluice-resolver", 0);
	r = parse_options(argc, argv, &o);
	if (r >= 0)
		return r;
	log_init("sluice-resolver", o.verbose);
	if (o.n_udp + o.n_tcp + o.n_listen == 0)
		fatalx("nothing to serve on: give --udp-fd/--tcp-fd or --listen (see --help)");
	/* First of all: enter the sandbox's network, so that every socket
	 * made from now on (upstream queries) leaves from there. */
	sluice_child_join_netns(o.netns);
	policy = load_policy(&o, &cfg, &placeholders);
	if (o.flow_map) {
		cfg.flow_fd = sluice_flow_open(o.flow_map);
		if (cfg.flow_fd < 0)
			fatal("--flow-map %s", o.flow_map);
	}
	set_upstream(&o, &cfg, upbuf, sizeof(upbuf));
	cfg.log_fd = sluice_child_log_fd(o.log_path, o.log_fd);

	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	if (!base)
		fatalx("event_base_new failed");
	srv = rsv_server_new(base, &cfg);
	if (!srv)
		fatalx("out of memory");
	flow_sweep = cfg.flow_fd >= 0 ? sluice_flow_sweeper(base, cfg.flow_fd, true) : NULL;
	if (cfg.flow_fd >= 0 && !flow_sweep)
		fatalx("out of memory");
	add_sockets(srv, &o, listen_desc, sizeof(listen_desc));
	if (rsv_server_is_own_address(srv, (struct sockaddr *)&cfg.upstream))
		fatalx("--upstream-dns %s is this resolver's own address", upbuf);
	hup_log.fd = cfg.log_fd;
	hup_log.path = o.log_path;
	srv_for_drain = srv;
	add_signals(base, sigs, &hup_log);
	{
		struct sluice_envelope env = {
			.sandbox = o.sandbox, .policy_name = policy->name, .policy_digest = policy->digest,
			.mode = cfg.ctx.mode == SLUICE_MODE_AUDIT ? "audit" : "enforce", .labels = &o.labels,
			.container_id = o.ctr_id, .container_name = o.ctr_name, .container_runtime = o.ctr_runtime,
		};

		if (sluice_child_evlog(&evlog, cfg.log_fd, o.log_path, "sluice-resolver", &env, o.seq_fd) < 0)
			return 2;
		cfg.log = &evlog;
	}
	fair = start_fair(base, &evlog, srv, &o);
	cfg.fair = fair;
	rsv_server_fit_descriptors(srv);
	/* the mode and policy on record before the first query; a line that
	 * cannot be written is counted (and said on stderr), never fatal */
	rsv_log_start(&evlog, upbuf, listen_desc);
	log_debug("serving (%s mode, policy %s %.12s, upstream %s)",
		 cfg.ctx.mode == SLUICE_MODE_AUDIT ? "audit" : "enforce",
		 policy->name ? policy->name : "?", policy->digest, upbuf);
	if (cfg.ctx.mode == SLUICE_MODE_AUDIT)
		log_warnx("AUDIT MODE: names the policy denies are resolved anyway (logged as would_deny)");
	sluice_child_ready(o.ready_fd);

	if (event_base_dispatch(base) < 0)
		fatalx("event loop failed");

	srv_for_drain = NULL;
	rsv_server_free(srv);
	rsv_fair_free(fair);   /* the last summary of dropped queries */
	for (int i = 0; i < 4; i++)
		event_free(sigs[i]);
	if (flow_sweep)
		event_free(flow_sweep);
	event_base_free(base);
	rsv_tunnel_free(cfg.ctx.tunnel);
	sluice_child_loss_summary(&evlog);
	sluice_secrets_clear(&placeholders);
	sluice_name_index_free(cfg.ctx.names);
	sluice_policy_free(policy);
	if (o.log_path)
		close(cfg.log_fd);
	if (cfg.flow_fd >= 0)
		close(cfg.flow_fd);
	return 0;
}
