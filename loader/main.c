/* SPDX-License-Identifier: BSD-2-Clause */
/* main.c - `sluice`: the loader's command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd_policy.h"
#include "daemon.h"
#include "kfeatures.h"
#include "gc.h"
#include "log.h"
#include "run.h"
#include "version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice [-j|--json] COMMAND [ARGS...]\n"
		"\n"
		"Kernel-enforced egress filter for sandboxes.\n"
		"\n"
		"commands:\n"
		"  run [OPTIONS] -- CMD [ARGS...]   run CMD in a fresh filtered cgroup\n"
		"  policy check [--json] FILE...    validate and lint policies (exit 0 clean, 1 warnings, 2 errors)\n"
		"  policy diff [--json] OLD NEW     what a policy change opens and closes\n"
		"  policy suggest EVENTS.jsonl...   a policy that allows what the logs saw (audit -> enforce)\n"
		"  daemon                           hold attached sandboxes (control socket " SLUICE_CONTROL_SOCK ")\n"
		"  attach --policy FILE (--cgroup PATH | --pid PID | --container ID) [--name NAME]\n"
		"                                   put an existing cgroup or container under a policy\n"
		"  detach [--force] NAME            remove the filter of an attached sandbox\n"
		"  status [--json]                  attached sandboxes, hooks, digests, counters\n"
		"  reload --policy FILE NAME        replace a sandbox's policy atomically\n"
		"  events [--follow] [--sandbox N]  the daemon's JSON event lines\n"
		"  gc [--dry-run]                   remove sandboxes whose owner or cgroup is gone\n"
		"  oci-hook [--print-config]        OCI runtime hook: filter a container from its first instruction\n"
		"  version, -V, --version           the version, libbpf, the kernel features found\n"
		"  help [COMMAND]                   this text, or COMMAND's\n"
		"\n"
		"-j, --json: what a command prints (state, findings, errors) as one JSON document\n"
		"on stdout; `events` prints JSON lines already; run, daemon, oci-hook and policy\n"
		"suggest refuse it (their stdout is not sluice's, or is a YAML policy).\n"
		"\n"
		"`sluice help COMMAND` (or `sluice COMMAND --help`) tells more.  Exit status: 0 ok,\n"
		"1 findings, 2 usage or environment error; `run` exits with CMD's status.\n");
}

static int cmd_version(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--json") == 0 || strcmp(argv[1], "-j") == 0)) {
		sluice_cli_set_json();
		argc--;
		argv++;
	}
	if (argc > 1) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			printf("usage: sluice version [--json] (or sluice -V, sluice --version)\n\n"
			       "Print the version, the libbpf sluice runs with, the kernel, and the kernel\n"
			       "features sluice depends on: the BPF LSM, bpf_set_retval (5.18+), the BPF\n"
			       "ring buffer (5.8+), the cgroup2 and BPF filesystem mounts.  The BPF probes\n"
			       "need root; without it they say \"unknown\" (null in --json).\n");
			return 0;
		}
		log_warnx("version takes no arguments");
		return 2;
	}
	if (sluice_cli_json()) {
		json_object *o = sluice_features_json();

		json_object_object_add(o, "ok", json_object_new_boolean(1));
		sluice_cli_json_print(o);
		json_object_put(o);
		return 0;
	}
	sluice_version_print(stdout, "sluice");
	sluice_features_print(stdout);
	return 0;
}

/* no_json: why the command refuses -j (NULL: it prints JSON under -j) */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *no_json;
} commands[] = {
	{ "run", cmd_run, "its stdout is CMD's; its events are JSON lines already (--events)" },
	{ "policy", cmd_policy, NULL },
	{ "daemon", cmd_daemon, "it prints nothing on stdout; its events are JSON lines already" },
	{ "attach", cmd_attach, NULL },
	{ "detach", cmd_detach, NULL },
	{ "status", cmd_status, NULL },
	{ "reload", cmd_reload, NULL },
	{ "events", cmd_events, NULL },
	{ "gc", cmd_gc, NULL },
	{ "version", cmd_version, NULL },
	{ "oci-hook", cmd_oci_hook, "its stdout belongs to the OCI runtime" },
};

static int find_index(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int (*find_command(const char *name))(int, char **)
{
	int i = find_index(name);

	return i < 0 ? NULL : commands[i].fn;
}

/* `sluice help [COMMAND [SUB]]`: COMMAND's own --help text. */
static int cmd_help(int argc, char **argv)
{
	int (*fn)(int, char **);
	char *av[4];
	int ac = 0;

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	fn = find_command(argv[1]);
	if (!fn) {
		log_warnx("help: unknown command '%s'", argv[1]);
		usage(stderr);
		return 2;
	}
	av[ac++] = argv[1];
	if (argc > 2 && fn == cmd_policy)
		av[ac++] = argv[2];
	av[ac++] = "--help";
	av[ac] = NULL;
	return fn(ac, av);
}

int main(int argc, char **argv)
{
	int i, g;

	log_init("sluice", 0);
	/* the global options: argv[0] moves up over them */
	g = sluice_cli_global_opts(argc, argv);
	if (g) {
		argv[g] = argv[0];
		argv += g;
		argc -= g;
	}
	if (argc < 2) {
		usage(stderr);
		return sluice_cli_finish("sluice", 2);
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)
		return sluice_cli_finish("version", cmd_version(argc - 1, argv + 1));
	/* help texts are for people: text under -j too */
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return sluice_cli_finish("help", cmd_help(argc - 1, argv + 1));
	i = find_index(argv[1]);
	if (i < 0) {
		log_warnx("unknown command '%s'", argv[1]);
		usage(stderr);
		return sluice_cli_finish("sluice", 2);
	}
	if (sluice_cli_json() && commands[i].no_json) {
		log_warnx("%s: no -j/--json: %s", commands[i].name, commands[i].no_json);
		return sluice_cli_finish(commands[i].name, 2);
	}
	/* "policy check", not "policy", in the error object */
	if (commands[i].fn == cmd_policy && argc > 2 && argv[2][0] != '-') {
		char name[64];

		snprintf(name, sizeof(name), "policy %s", argv[2]);
		return sluice_cli_finish(name, cmd_policy(argc - 1, argv + 1));
	}
	return sluice_cli_finish(commands[i].name, commands[i].fn(argc - 1, argv + 1));
}
