/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dns_dropped.h - a sandbox's dropped DNS queries for `sluice status`, read
 * from the one place they are counted: the dns_dropped counters of the
 * sandbox's shared line-counter page (userspace/lib/evseq.h), which every
 * resolver of the sandbox adds each drop to as it happens (rsv_fair_count)
 * and the daemon's metrics read too.  The page is the daemon's
 * sandboxes/NAME.seq (kept across reloads and daemon restarts) or a
 * `sluice run`'s memfd (as long as the run).
 */
#ifndef SLUICE_DNS_DROPPED_H
#define SLUICE_DNS_DROPPED_H

#include <sys/types.h>

struct json_object;
struct sluice_evseq;

/* {"rate_limited": N, "socket_overflow": N, "shutdown": N, "total": N}
 * from page q, or NULL (JSON null) when q is NULL. */
struct json_object *sluice_dns_dropped_json(const struct sluice_evseq *q);

/* The same for the `sluice run` loader `pid`: its page is the memfd it
 * holds ("sluice-evseq"), found in /proc/PID/fd and mapped read-only for
 * the call.  NULL when there is none (the run has no resolver page, or is
 * gone) or it cannot be read (EACCES: not root). */
struct json_object *sluice_dns_dropped_of_run(pid_t pid);

#endif
