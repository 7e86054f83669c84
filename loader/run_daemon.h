/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_daemon.h - `sluice run` by a user who is not root: the command is run
 * by the daemon (a member of the daemon's user group, docs/daemon.md), as
 * that user, in a sandbox of its own with a policy the admin placed under
 * the daemon's policy directory, chosen by name.  The client hands the
 * daemon its stdin, stdout and stderr (SCM_RIGHTS) and waits for the exit
 * status on a pipe.
 */
#ifndef SLUICE_RUN_DAEMON_H
#define SLUICE_RUN_DAEMON_H

/* `sluice run --policy NAME [--env NAME[=VALUE]]... [--inherit-env] -- CMD
 * [ARG...]` through the daemon's control socket.  Returns CMD's exit status
 * (128+N when a signal N ended it), or 2 when it did not run (a refusal,
 * no daemon: said on stderr). */
int sluice_run_via_daemon(int argc, char **argv);

#endif
