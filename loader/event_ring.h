/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * event_ring.h - one BPF ring buffer of denial events and the sandboxes
 * that write to it.  `sluice run` has a ring of its own; a daemon's
 * sandboxes share one (a 4 MiB ring a sandbox was most of what a sandbox
 * cost the host, issue 19), each record stamped with its sandbox's slot,
 * and each sandbox held to its budget (bpf/sluice.h, "The event ring
 * buffer's budget") so that none can fill the ring and blind the others.
 * Consuming the ring hands each record to the consumer of its slot
 * (loader/events.h) and gives its bytes back to that slot's budget.
 */
#ifndef SLUICE_EVENT_RING_H
#define SLUICE_EVENT_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct ring_buffer;
struct sluice_consumer;

struct sluice_event_ring {
	struct ring_buffer *rb;
	int events_fd;              /* BPF_MAP_TYPE_RINGBUF (owned) */
	int budget_fd;              /* its sluice_ring_budget (owned) */
	uint64_t *budget;           /* that map, mapped: SLUICE_RING_BUDGET_ENTRIES counts */
	size_t budget_len;          /* bytes mapped */
	uint32_t events_id;         /* the ring map's kernel id */
	uint64_t bytes;             /* the ring's data size */
	bool shared;                /* pool and share set here for the consumers (else the loader's) */
	unsigned consumers;         /* slots with a consumer */
	struct sluice_consumer *by_slot[SLUICE_RING_SLOTS];
	uint64_t orphans;           /* records of a slot without a consumer (its sandbox went) */
	struct sluice_event_ring *next; /* the daemon's list of rings */
};

/* Bytes of the ring a daemon makes for its sandboxes by default (`daemon
 * --event-ring`): a sandbox alone gets all of it; 1,000 get 8 KiB each
 * of their own and the shared half. */
#define SLUICE_RING_SHARED_BYTES (16u << 20)

/*
 * Take over `events_fd` and `budget_fd` (a ring and its budget map, both
 * closed here on failure too) as r.  shared: this ring's pool and share
 * are set here as consumers come and go (a daemon's); else they are the
 * loader's (a ring of its own, sandbox_load()).  0, or -errno.
 */
int sluice_event_ring_open(struct sluice_event_ring *r, int events_fd, int budget_fd, bool shared);

/* Make a shared ring of `bytes` (a power of 2 pages, as the kernel
 * wants) and its budget map, unpinned, and open it as r.  0, or -errno. */
int sluice_event_ring_new(struct sluice_event_ring *r, uint64_t bytes);

/* A slot of r's budget with no consumer and nothing queued, or -ENOSPC. */
int sluice_event_ring_free_slot(const struct sluice_event_ring *r);

/* Hand slot's records to c from now on (-EBUSY: the slot has a consumer,
 * -ERANGE: no such slot); a shared ring's shares are set anew. */
int sluice_event_ring_add(struct sluice_event_ring *r, uint32_t slot, struct sluice_consumer *c);

/* Slot's records have no consumer from now on: they are taken back and
 * counted in r->orphans when read. */
void sluice_event_ring_remove(struct sluice_event_ring *r, uint32_t slot);

/* epoll fd that becomes readable when records are ready (batched wakeups:
 * poll it with a finite timeout, then consume). */
int sluice_event_ring_fd(const struct sluice_event_ring *r);

/* Read every record queued, each to its slot's consumer.  Returns the
 * number read, or -errno. */
int sluice_event_ring_consume(struct sluice_event_ring *r);

/* Ring bytes slot has queued now (its budget count). */
uint64_t sluice_event_ring_queued(const struct sluice_event_ring *r, uint32_t slot);

/* Close r (its consumers must be gone). */
void sluice_event_ring_close(struct sluice_event_ring *r);

#endif
