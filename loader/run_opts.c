/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_opts.c - the command line of `sluice run`: its usage text and the
 * options as given (struct run_opts, run_internal.h).  What they mean is
 * decided in run.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "run_internal.h"

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
		"                       stdout, journald for the journal (one entry per line,\n"
		"                       identifier sluice); default stderr.  CMD's stdout is\n"
		"                       never written to unless DEST is -\n"
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

/* After the options: the log, -v for the children, CMD, --mode, the
 * default name.  Returns -1 to go on or 2 (said). */
static int run_check_options(struct run_opts *o, int argc, char **argv)
{
	log_init("sluice", o->verbose);
	/* the children's banners ("serving ...") only with -v */
	if (o->verbose) {
		o->proxy_extra[o->n_px++] = "-v";
		o->resolver_extra[o->n_rx++] = "-v";
	}
	if (optind >= argc) {
		log_warnx("run: no command given (usage: sluice run [OPTIONS] -- CMD [ARGS...])");
		return 2;
	}
	if (o->mode && strcmp(o->mode, "enforce") != 0 && strcmp(o->mode, "audit") != 0) {
		log_warnx("run: --mode must be enforce or audit, not '%s'", o->mode);
		return 2;
	}
	if (!o->name[0])
		snprintf(o->name, sizeof(o->name), "run-%d", getpid());

	o->cmd = &argv[optind];
	return -1;
}

int run_parse_options(struct run_opts *o, int argc, char **argv)
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
	static struct sluice_labels labels;
	char msg[512];
	int c;

	memset(o, 0, sizeof(*o));
	sluice_confine_init(&o->conf);
	o->labels = &labels;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
		switch (c) {
		case 'p': o->policy_path = optarg; break;
		case 'e': o->events_path = optarg; break;
		case 1201:
			if (strcmp(optarg, "ecs") != 0 && strcmp(optarg, "ocsf") != 0) {
				fprintf(stderr, "sluice: run: --events-format must be ecs or ocsf, not '%s'\n", optarg);
				return 2;
			}
			sluice_evlog_use_ocsf(strcmp(optarg, "ocsf") == 0);
			break;
		case 1202:
			if (sluice_label_add(o->labels, optarg, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "sluice: run: --label: %s\n", msg);
				return 2;
			}
			break;
		case 'n':
			if (sluice_name_check(optarg, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "sluice: run: --name: %s\n", msg);
				return 2;
			}
			snprintf(o->name, sizeof(o->name), "%s", optarg);
			break;
		case 'N': o->netns_path = optarg; break;
		case 'U': o->upstream_netns = optarg; break;
		case 'X': o->isolate = 1; break;
		case 'm': o->mode = optarg; break;
		case 'u': o->upstream = optarg; break;
		case 'P': o->no_proxy = 1; break;
		case 'R': o->no_resolver = 1; break;
		case 'x': if (o->n_px < 30) o->proxy_extra[o->n_px++] = optarg; break;
		case 'A': o->upstream_ca_file = optarg; break;
		case 'y': if (o->n_rx < 30) o->resolver_extra[o->n_rx++] = optarg; break;
		case 'k': o->keep_caps = 1; break;
		case 'L': o->require_lsm = 1; break;
		case 'l': o->no_lsm = 1; break;
		case 'M': case 'I': case 'C': case 'T': {
			int r = c == 'M' ? sluice_parse_memory(optarg, &o->lim.memory_bytes, msg, sizeof(msg)) :
				c == 'I' ? sluice_parse_pids(optarg, &o->lim.pids, msg, sizeof(msg)) :
				c == 'C' ? sluice_parse_cpu(optarg, &o->lim.cpu_milli, msg, sizeof(msg)) :
					   sluice_parse_duration(optarg, &o->lim.timeout_ms, msg, sizeof(msg));

			if (r < 0) {
				fprintf(stderr, "sluice: run: --%s: %s\n", c == 'M' ? "memory" : c == 'I' ? "pids" :
					c == 'C' ? "cpu" : "timeout", msg);
				return 2;
			}
			break;
		}
		case 'E': o->proxy_env = 1; break;
		case SLUICE_OPT_INHERIT_ENV: o->renv.inherit = true; break;
		case SLUICE_OPT_ENV: {
			int r = sluice_run_env_add(&o->renv, optarg, msg, sizeof(msg));

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
			if (o->n_secret_src == SLUICE_SECRET_ARGS_MAX ||
			    sluice_secret_source_parse(optarg, &o->secret_src[o->n_secret_src]) < 0) {
				log_warnx("run: --secret wants NAME=/absolute/path (at most %d)", SLUICE_SECRET_ARGS_MAX);
				return 2;
			}
			o->n_secret_src++;
			break;
		case 1101: o->signers_path = optarg; break;
		case 1102: o->boundary_path = optarg; break;
		case 'v': o->verbose = 1; break;
		case 'h': usage_run(stdout); return 0;
		default: {
			int r = sluice_confine_option(&o->conf, c, optarg, msg, sizeof(msg));

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
	return run_check_options(o, argc, argv);
}
