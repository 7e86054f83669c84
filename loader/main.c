/* SPDX-License-Identifier: BSD-2-Clause */
/* main.c - `sluice`: the loader's command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cmd_policy.h"
#include "daemon.h"
#include "log.h"
#include "run.h"

#include "evlog.h" /* SLUICE_VERSION */

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
		"  detach NAME                      remove the filter of an attached sandbox\n"
		"  status [--json]                  attached sandboxes, hooks, digests, counters\n"
		"  reload --policy FILE NAME        replace a sandbox's policy atomically\n"
		"  events [--follow] [--sandbox N]  the daemon's JSON event lines\n"
		"  version                          print the version\n"
		"\n"
		"`sluice COMMAND --help` tells more.  Exit status: 0 ok, 1 findings, 2 usage or\n"
		"environment error; `run` exits with CMD's status.\n");
}

int main(int argc, char **argv)
{
	log_init("sluice", 0);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "policy") == 0)
		return cmd_policy(argc - 1, argv + 1);
	if (strcmp(argv[1], "daemon") == 0)
		return cmd_daemon(argc - 1, argv + 1);
	if (strcmp(argv[1], "attach") == 0)
		return cmd_attach(argc - 1, argv + 1);
	if (strcmp(argv[1], "detach") == 0)
		return cmd_detach(argc - 1, argv + 1);
	if (strcmp(argv[1], "status") == 0)
		return cmd_status(argc - 1, argv + 1);
	if (strcmp(argv[1], "reload") == 0)
		return cmd_reload(argc - 1, argv + 1);
	if (strcmp(argv[1], "events") == 0)
		return cmd_events(argc - 1, argv + 1);
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("sluice %s\n", SLUICE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	log_warnx("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
