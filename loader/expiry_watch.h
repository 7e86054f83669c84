/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * expiry_watch.h - one `entry-expired` line per expiring entry of a
 * sandbox's policy, written by its owner (`sluice run`'s loop, the
 * daemon's tick) at the second the entry stops allowing.  The kernel, the
 * proxy and the resolver stop by themselves (they compare the time); this
 * only tells.  docs/policy.md "Change control".
 */
#ifndef SLUICE_EXPIRY_WATCH_H
#define SLUICE_EXPIRY_WATCH_H

#include <stdint.h>

#include "evlog.h"
#include "policy.h"

struct sluice_expiry_watch {
	const struct sluice_policy *p;  /* not owned */
	uint8_t *told;                  /* per entry: its line was written */
	int64_t next;                   /* the next expiry not yet told (Unix s), 0: none */
};

/* Watch `p` (kept by the caller while watched).  Returns 0 or -ENOMEM. */
int sluice_expiry_watch_init(struct sluice_expiry_watch *w, const struct sluice_policy *p);
void sluice_expiry_watch_free(struct sluice_expiry_watch *w);

/* Write an `entry-expired` line to `log` for each entry whose `expires:`
 * is at or before `now` (Unix seconds; < 0: the clock) and not yet told.
 * Cheap when nothing is due.  Returns the number of lines written. */
int sluice_expiry_watch_tick(struct sluice_expiry_watch *w, struct sluice_evlog *log, int64_t now);

#endif
