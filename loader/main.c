/* SPDX-License-Identifier: BSD-2-Clause */
/* main.c - `sluice`: the loader's command dispatch. */
#include <stdio.h>
#include <string.h>

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
		"usage: sluice COMMAND [ARGS...]\n"
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
		"`sluice help COMMAND` (or `sluice COMMAND --help`) tells more.  Exit status: 0 ok,\n"
		"1 findings, 2 usage or environment error; `run` exits with CMD's status.\n");
}

static int cmd_version(int argc, char **argv)
{
	if (argc > 1) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			printf("usage: sluice version (or sluice -V, sluice --version)\n\n"
			       "Print the version, the libbpf sluice runs with, the kernel, and the kernel\n"
			       "features sluice depends on: the BPF LSM, bpf_set_retval (5.18+), the BPF\n"
			       "ring buffer (5.8+), the cgroup2 and BPF filesystem mounts.  The BPF probes\n"
			       "need root; without it they say \"unknown\".\n");
			return 0;
		}
		log_warnx("version takes no arguments");
		return 2;
	}
	sluice_version_print(stdout, "sluice");
	sluice_features_print(stdout);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "run", cmd_run },       { "policy", cmd_policy }, { "daemon", cmd_daemon },
	{ "attach", cmd_attach }, { "detach", cmd_detach }, { "status", cmd_status },
	{ "reload", cmd_reload }, { "events", cmd_events }, { "gc", cmd_gc },
	{ "version", cmd_version }, { "oci-hook", cmd_oci_hook },
};

static int (*find_command(const char *name))(int, char **)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return commands[i].fn;
	return NULL;
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
	int (*fn)(int, char **);

	log_init("sluice", 0);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)
		return cmd_version(argc - 1, argv + 1);
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(argc - 1, argv + 1);
	fn = find_command(argv[1]);
	if (fn)
		return fn(argc - 1, argv + 1);
	log_warnx("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
