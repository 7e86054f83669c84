/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * owner.h - who owns a sandbox: a small record SLUICE_OWNER_DIR/NAME written
 * when the sandbox is pinned (by `sluice run` or the daemon), so that
 * `sluice gc` can tell a live owner from one killed with SIGKILL.  bpffs
 * holds only BPF objects, hence a file of its own on /run (gone at reboot,
 * like the pins).
 */
#ifndef SLUICE_OWNER_H
#define SLUICE_OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SLUICE_OWNER_DIR "/run/sluice/owners"

struct sluice_owner {
	char kind[16];          /* "run" or "daemon" */
	pid_t pid;
	uint64_t start_time;    /* /proc/PID/stat field 22 (clock ticks since boot) */
	char info[512];         /* what the owner says of the sandbox ("" none): the
				 * confinement and policy of a `sluice run` (`sluice status`) */
};

/* Record the calling process as the owner of sandbox `name` (kind "run" or
 * "daemon"), replacing any record.  Returns 0 or -errno. */
int sluice_owner_write(const char *name, const char *kind);

/* The same with one line of `info` (NULL: none; cut at a newline and at
 * 511 bytes) that `sluice status` shows. */
int sluice_owner_write_info(const char *name, const char *kind, const char *info);

/* Call fn for every record in SLUICE_OWNER_DIR (name, record); stops when fn
 * returns non-zero.  Returns the count of records visited. */
int sluice_owner_each(int (*fn)(const char *name, const struct sluice_owner *o, void *arg), void *arg);

/* Read the record of `name` into o.  Returns 0, -ENOENT (no record) or
 * -errno / -EINVAL (unreadable). */
int sluice_owner_read(const char *name, struct sluice_owner *o);

/* Remove the record of `name` (absent: fine). */
void sluice_owner_remove(const char *name);

/* Is the recorded owner still running: same pid and same start time (a
 * reused pid is not the owner)? */
bool sluice_owner_alive(const struct sluice_owner *o);

/* Start time (field 22 of /proc/PID/stat) of pid, or 0 if it is gone. */
uint64_t sluice_proc_start_time(pid_t pid);

#endif
