/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dns_stats.h - the resolver's dropped-query counts, shared with whoever
 * reports them (`sluice status`): a small file the daemon keeps beside the
 * sandbox's state (sandboxes/NAME.dns-stats), mapped MAP_SHARED by the
 * daemon and by every sluice-resolver of the sandbox (handed over as an
 * open descriptor, `--stats-fd N`).  The resolvers add to it atomically, so a
 * reload's old resolver (still draining) and the new one count into the same
 * totals, and the counts carry on across resolver restarts and daemon
 * restarts (the file stays).
 */
#ifndef SLUICE_DNS_STATS_H
#define SLUICE_DNS_STATS_H

#include <stdint.h>

#define SLUICE_DNS_STATS_MAGIC 0x736c6463u   /* "sldc" */

/* Why a query was dropped: the indexes are the resolver's enum rsv_drop
 * (userspace/resolver/fair.h) and the names those of its summary lines. */
#define SLUICE_DNS_DROP_N 3
extern const char *const sluice_dns_drop_names[SLUICE_DNS_DROP_N];  /* "rate_limited", ... */

/* The file's layout (host byte order; only ever read on the host that wrote it). */
struct sluice_dns_stats {
	uint32_t magic;
	uint32_t version;                    /* 1 */
	uint64_t dropped[SLUICE_DNS_DROP_N]; /* queries, since the sandbox was attached */
	uint64_t reserved[4];
};

/*
 * Map the counts held by `fd` (a regular file opened read-write; created
 * empty: it is sized and initialised here).  Returns the mapping (unmap
 * with sluice_dns_stats_unmap), or NULL with errno (EINVAL: the file holds
 * something else).
 */
struct sluice_dns_stats *sluice_dns_stats_map(int fd);

void sluice_dns_stats_unmap(struct sluice_dns_stats *st);

/* Add n to counter `why` (< SLUICE_DNS_DROP_N); st may be NULL. */
void sluice_dns_stats_add(struct sluice_dns_stats *st, unsigned why, uint64_t n);

/* Counter `why` now (0 when st is NULL). */
uint64_t sluice_dns_stats_get(const struct sluice_dns_stats *st, unsigned why);

#endif
