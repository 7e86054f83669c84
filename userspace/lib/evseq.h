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

/* Verdicts as the counters below index them (sluice.verdict). */
enum sluice_evc_verdict {
	SLUICE_EVC_ALLOW,
	SLUICE_EVC_DENY,
	SLUICE_EVC_WOULD_DENY,
	SLUICE_EVC_REFUSE,       /* the resolver's "refuse" (no policy could allow it) */
	SLUICE_EVC__VERDICTS,
};

#define SLUICE_EVC_RCODES 17     /* DNS RCODE 0-15 (RFC 1035, 6895); [16]: nothing was sent */
#define SLUICE_EVC_DROPS  4      /* the resolver's enum rsv_drop (fair.h), by its number */
#define SLUICE_EVC_DATASETS 4    /* enum sluice_dataset (evlog.h) */

/*
 * The mapped page: a magic ("sluiceq1"), the next number, and what the
 * sandbox's writers count as they write, for the daemon's metrics
 * (`sluice daemon --metrics`: one fact, counted once, where it happens;
 * the counts outlive the processes as the counter does).  Every field is
 * updated with atomic adds by whichever writer saw it.  A child can lie
 * here as it can in its lines: these are the children's word, like their
 * lines, not the kernel's.
 */
struct sluice_evseq {
	char magic[8];
	uint64_t next;
	uint64_t proxy_requests[SLUICE_EVC__VERDICTS];  /* proxy lines (requests, tunnels) by verdict */
	uint64_t dns_queries[SLUICE_EVC__VERDICTS];     /* dns-query lines by verdict */
	uint64_t dns_rcodes[SLUICE_EVC_RCODES];         /* dns-query lines by the RCODE the client got */
	uint64_t dns_dropped[SLUICE_EVC_DROPS];         /* queries dropped unanswered, by reason */
	uint64_t lines[SLUICE_EVC_DATASETS];            /* lines written, by dataset, by every writer */
	uint64_t lost[SLUICE_EVC_DATASETS];             /* lines lost (write errors), by dataset */
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

/* *ctr += n, atomically (a field of a mapped struct sluice_evseq). */
void sluice_evseq_add(uint64_t *ctr, uint64_t n);

/* *ctr read atomically. */
uint64_t sluice_evseq_read(const uint64_t *ctr);

/* The index of a sluice.verdict name ("allow", "deny", "would_deny",
 * "refuse"); -1 for NULL or another. */
int sluice_evc_verdict(const char *verdict);

#endif
