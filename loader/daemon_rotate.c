// SPDX-License-Identifier: BSD-2-Clause
/*
 * daemon_rotate.c - the daemon's events file under a size cap
 * (`--events-max-size SIZE`, `--events-keep N`).
 *
 * Checked on the daemon's tick (every 100 ms): once the file has SIZE bytes
 * it is renamed to FILE.1 (FILE.1 to FILE.2, ... ; FILE.N, the oldest, is
 * removed) and the daemon does what a SIGHUP does: it reopens FILE and starts
 * every sandbox's proxy and resolver again on their sockets, so every writer
 * moves to the new file and no line is torn or lost by the rotation (a line
 * written in between lands whole in FILE.1).  The cap is a bound checked on
 * the tick, not on each write: a file may pass SIZE by what is written in one
 * tick.  Each rotation is a lifecycle line (events-rotated) in the new file,
 * naming what was removed, and counted in `status`.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon_internal.h"
#include "log.h"

/* FILE.i into buf (i == 0: FILE itself). */
static void rotated_path(char *buf, size_t len, unsigned i)
{
	if (i == 0)
		snprintf(buf, len, "%s", D.events_path);
	else
		snprintf(buf, len, "%s.%u", D.events_path, i);
}

/* Shift FILE.keep-1 .. FILE to FILE.keep .. FILE.1.  *removed: the size of
 * the FILE.keep that the shift replaced (-1: there was none).  0, or -errno
 * of the rename of FILE itself (the older ones' failures are said and
 * skipped: the newest lines matter most). */
static int shift_files(long long *removed)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];
	struct stat st;

	rotated_path(to, sizeof(to), D.events_keep);
	*removed = stat(to, &st) == 0 ? (long long)st.st_size : -1;
	for (unsigned i = D.events_keep; i > 0; i--) {
		rotated_path(from, sizeof(from), i - 1);
		rotated_path(to, sizeof(to), i);
		if (rename(from, to) == 0 || errno == ENOENT)
			continue;
		if (i == 1)
			return -errno;
		log_warn("daemon: events cap: cannot rename %s to %s", from, to);
	}
	return 0;
}

void daemon_events_check_size(void)
{
	static int failing;   /* errno of the failing rotation, said once */
	char msg[PATH_MAX + 64] = "";
	long long removed;
	struct stat st;
	int err, n;

	if (!D.events_max || fstat(D.events, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size < D.events_max)
		return;
	err = shift_files(&removed);
	if (err) {
		if (err != failing)
			daemon_emit(NULL, "events-rotate-failed",
				    "sluice daemon: %s has %lld bytes (cap %llu) and cannot be rotated: %s; still "
				    "writing to it", D.events_path, (long long)st.st_size,
				    (unsigned long long)D.events_max, strerror(-err));
		failing = err;
		return;
	}
	failing = 0;
	D.events_rotations++;
	if (removed >= 0)
		snprintf(msg, sizeof(msg), "; removed the oldest, %s.%u (%lld bytes)", D.events_path, D.events_keep,
			 removed);
	n = daemon_events_reopen("events cap");
	daemon_emit(NULL, "events-rotated", "sluice daemon rotated %s at %lld bytes (cap %llu) to %s.1%s (%d sandboxes)",
		    D.events_path, (long long)st.st_size, (unsigned long long)D.events_max, D.events_path, msg, n);
}
