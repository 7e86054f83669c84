/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gc.h - `sluice gc`: find sandboxes whose owner or cgroup is gone (a
 * `sluice run` killed with SIGKILL leaves its pins under SLUICE_PIN_ROOT/NAME
 * and its cgroup <cgroup2>/sluice/NAME) and remove them, never one whose
 * owner is alive; and `sluice detach --force NAME`'s removal without the
 * daemon.
 */
#ifndef SLUICE_GC_H
#define SLUICE_GC_H

#include <stdbool.h>
#include <stddef.h>

/* `sluice gc [--dry-run] [NAME...]`.  Returns the exit status: 0, or 2 when
 * a removal failed (that sandbox stays as it was, filtered). */
int cmd_gc(int argc, char **argv);

/*
 * The daemon's files of a sandbox: <state>/sandboxes/NAME.EXT for each EXT
 * here (its record, the policy in force and its signature, the published CA
 * certificate), NULL-terminated.  The daemon's teardown and
 * sluice_sandbox_remove() both remove exactly these.
 */
extern const char *const sluice_state_exts[];

/*
 * Remove sandbox `name` without its owner: kill the processes of its own
 * cgroup <cgroup2>/sluice/NAME and remove it (first: nothing in it ever runs
 * unfiltered), unpin every link and map under SLUICE_PIN_ROOT/NAME, remove
 * its owner record and, when daemon_state_dir is set, the daemon's files of
 * it there (sandboxes/NAME.EXT for each of sluice_state_exts, the kept
 * netns).  A cgroup that was attached (not under sluice/) is left as it is,
 * unfiltered.  Refuses a
 * sandbox whose recorded owner is alive.  Writes what it did (or would do,
 * with dry_run) to did.  Returns 0, or -errno with msg.
 */
int sluice_sandbox_remove(const char *name, const char *daemon_state_dir, bool dry_run, char *did, size_t didlen,
			  char *msg, size_t msglen);

#endif
