/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * evseq.h - a sandbox's line counter (event.sequence), shared by every
 * process that writes the sandbox's lines: the loader or the daemon
 * (kernel and lifecycle lines), the proxy and the resolver.
 *
 * The counter is one 64-bit word in a shared mapping of a small file: a
 * memfd for `sluice run` (it lives as long as the run), a file in the
 * daemon's state directory for the daemon (<state>/sandboxes/NAME.seq, so
 * that a restarted daemon, which re-adopts the sandbox, carries on from
 * where the last one stopped).  The owner opens it and hands the fd to its
 * children (`--seq-fd N`); a child restarted after a crash maps the same
 * fd, so numbers are never reused.  Each line takes the next number with
 * one atomic fetch-and-add when it is begun, whether or not it is then
 * written: a number missing from the stream is a line that was lost
 * (counted by the writer's events_lost lines) or a writer that died
 * between taking it and writing it.  Lines of different processes may
 * reach the file slightly out of order: sort by event.sequence.
 */
#ifndef SLUICE_EVSEQ_H
#define SLUICE_EVSEQ_H

#include <stdint.h>

#define SLUICE_EVSEQ_MAGIC "sluiceq1"

/* The mapped page: a magic ("sluiceq1") and the next number. */
struct sluice_evseq {
	char magic[8];
	uint64_t next;
};

/* A new counter at 0 in a memfd (sealed against shrinking, so no writer's
 * mapping can be cut under it).  Returns the fd (O_CLOEXEC) or -errno. */
int sluice_evseq_memfd(void);

/* The counter kept in `path` (created 0600 at 0 when missing or not a
 * counter; kept otherwise).  Returns the fd (O_CLOEXEC) or -errno. */
int sluice_evseq_file(const char *path);

/* Map the counter of fd (MAP_SHARED, read-write).  Returns it, or NULL
 * with errno set (fd too small or not a counter: EINVAL). */
struct sluice_evseq *sluice_evseq_map(int fd);

void sluice_evseq_unmap(struct sluice_evseq *q);

/* The next number (atomic: any process sharing the mapping). */
uint64_t sluice_evseq_take(struct sluice_evseq *q);

#endif
