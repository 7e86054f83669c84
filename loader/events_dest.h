/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * events_dest.h - where `sluice run --events DEST` and `sluice daemon
 * --events DEST` send their JSON lines, opened once: every writer (the
 * loader, the proxy, the resolver) then appends to that one descriptor.
 */
#ifndef SLUICE_EVENTS_DEST_H
#define SLUICE_EVENTS_DEST_H

#include <stdbool.h>

#define SLUICE_EVENTS_JOURNALD "journald"

/* Is `spec` the journal ("journald")? */
bool sluice_events_is_journald(const char *spec);

/*
 * Open the destination `spec` (not NULL; "-", standard output, is the
 * caller's):
 *  - "journald": a stream to systemd-journald (sd_journal_stream_fd(3),
 *    identifier "sluice", priority info, no level prefixes): one journal
 *    entry per line, MESSAGE the JSON line; the lines of every writer stay
 *    whole (a line is one write(2) of at most 4096 bytes, which the kernel
 *    queues as one buffer on the unix stream); the journal must be running;
 *  - anything else: a file, appended to (O_APPEND), created with `mode`;
 *    a line a killed writer left half written at its end is removed first
 *    (said on stderr), so that the next line does not join it.
 * Returns the descriptor (O_CLOEXEC), or -errno (the journal or the file
 * could not be opened).
 */
int sluice_events_open(const char *spec, unsigned mode);

#endif
