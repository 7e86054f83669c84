/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dns_stats.h - why the resolver dropped a query, by name.  The counts
 * themselves are on the sandbox's shared event page (evseq.h,
 * dns_dropped[]): the resolvers add to it as they drop, and `sluice status`
 * (loader/dns_dropped.c) and the metrics read the same counters.
 */
#ifndef SLUICE_DNS_STATS_H
#define SLUICE_DNS_STATS_H

/* Why a query was dropped: the indexes are the resolver's enum rsv_drop
 * (userspace/resolver/fair.h) and the names those of its summary lines. */
#define SLUICE_DNS_DROP_N 3
extern const char *const sluice_dns_drop_names[SLUICE_DNS_DROP_N];  /* "rate_limited", ... */

#endif
