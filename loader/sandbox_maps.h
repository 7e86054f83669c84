/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sandbox_maps.h - inside the sandbox module (sandbox.c, sandbox_gen.c):
 * which of a sandbox's maps a task opens from their pins, and the opening.
 */
#ifndef SLUICE_SANDBOX_MAPS_H
#define SLUICE_SANDBOX_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "sandbox.h"

/* Every map; the one a running sandbox reads all the time (the counters;
 * the ring buffer and its budget are the consumer's: sandbox_ring_open);
 * those a reload writes.  A bit per enum sluice_map_id.
 * The rest are opened from their pins for a reload (sandbox_keep_pins). */
#define MAPS_ALL ((1u << SLUICE_MAP__MAX) - 1)
#define MAPS_HOT (1u << SLUICE_MAP_STATS)
#define MAPS_RING ((1u << SLUICE_MAP_EVENTS) | (1u << SLUICE_MAP_RING_BUDGET))
#define MAPS_RELOAD ((1u << SLUICE_MAP_ALLOW4) | (1u << SLUICE_MAP_ALLOW6) | (1u << SLUICE_MAP_EXACT4) | \
		     (1u << SLUICE_MAP_EXACT6) | (1u << SLUICE_MAP_PORTS) | \
		     (1u << SLUICE_MAP_STATE) | (1u << SLUICE_MAP_GENCONF) | (1u << SLUICE_MAP_UNIX) | \
		     (1u << SLUICE_MAP_PROGS))

/* Open from its pin under pin_dir each map of `want` whose fds[] entry is
 * -1.  With ids (a kernel map id per map, 0: unknown), a pin that holds
 * another map than that is refused (-ESTALE): a pin replaced under the
 * daemon is never written through.  Returns the bits of the maps it
 * opened, or -errno with msg (then it left none of them open). */
int sandbox_pins_open(const char *pin_dir, unsigned want, int *fds, const uint32_t *ids, char *msg, size_t msglen);

/* Close the maps of fds[] in `which` (bits as sandbox_pins_open's) and
 * mark them -1. */
void sandbox_pins_close(int *fds, unsigned which);

/* The unix names refused without an event (nscd's socket), written once at
 * a sandbox's first load; 0 or -errno. */
int sandbox_write_unix_quiet(struct sluice_sandbox *sb);

#endif
