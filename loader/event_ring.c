/* SPDX-License-Identifier: BSD-2-Clause */
/* event_ring.c - a ring buffer of denial events and its sandboxes (event_ring.h). */
#include "event_ring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "events.h"

/* A count of the budget, read as signed (bpf/sluice.h: never wrapped). */
static uint64_t budget_get(const struct sluice_event_ring *r, uint32_t i)
{
	int64_t n = (int64_t)__atomic_load_n(&r->budget[i], __ATOMIC_RELAXED);

	return n > 0 ? (uint64_t)n : 0;
}

static void budget_set(struct sluice_event_ring *r, uint32_t i, uint64_t v)
{
	__atomic_store_n(&r->budget[i], v, __ATOMIC_RELAXED);
}

/* A shared ring's share and pool for its consumers now (bpf/sluice.h,
 * with why the ring never overflows): half the ring split evenly, the
 * rest shared first come. */
static void set_shares(struct sluice_event_ring *r)
{
	uint64_t n = r->consumers ? r->consumers : 1, share = r->bytes / (2 * n);
	uint64_t others = (n - 1) * share + SLUICE_RING_SLACK;

	if (!r->shared)
		return;
	budget_set(r, SLUICE_RING_SHARE, share);
	budget_set(r, SLUICE_RING_POOL, r->bytes > others ? r->bytes - others : 0);
}

/* One record: its bytes back to its slot's budget, then to its consumer. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct sluice_event_ring *r = ctx;
	const struct sluice_event *e = data;
	uint32_t slot = size >= sizeof(*e) ? e->ring_slot : SLUICE_RING_SLOTS;
	uint64_t n = SLUICE_RING_RECORD_BYTES(size);

	if (slot < SLUICE_RING_SLOTS)
		__atomic_fetch_sub(&r->budget[SLUICE_RING_SLOT0 + slot], n, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&r->budget[SLUICE_RING_TOTAL], n, __ATOMIC_RELAXED);
	if (slot < SLUICE_RING_SLOTS && r->by_slot[slot])
		sluice_consumer_record(r->by_slot[slot], data, size);
	else
		r->orphans++;
	return 0;
}

int sluice_event_ring_open(struct sluice_event_ring *r, int events_fd, int budget_fd, bool shared)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	int err;

	memset(r, 0, sizeof(*r));
	r->events_fd = events_fd;
	r->budget_fd = budget_fd;
	r->shared = shared;
	if (bpf_obj_get_info_by_fd(events_fd, &info, &len) < 0) {
		err = -errno;
		goto fail;
	}
	r->events_id = info.id;
	r->bytes = info.max_entries;
	r->budget_len = ((size_t)SLUICE_RING_BUDGET_ENTRIES * sizeof(uint64_t) + (size_t)page - 1) & ~((size_t)page - 1);
	r->budget = mmap(NULL, r->budget_len, PROT_READ | PROT_WRITE, MAP_SHARED, budget_fd, 0);
	if (r->budget == MAP_FAILED) {
		err = -errno;
		r->budget = NULL;
		goto fail;
	}
	r->rb = ring_buffer__new(events_fd, on_record, r, NULL);
	if (!r->rb) {
		err = -errno;
		goto fail;
	}
	set_shares(r);
	return 0;
fail:
	sluice_event_ring_close(r);
	return err ? err : -EINVAL;
}

int sluice_event_ring_new(struct sluice_event_ring *r, uint64_t bytes)
{
	struct bpf_map_create_opts opts = { .sz = sizeof(opts), .map_flags = BPF_F_MMAPABLE };
	/* the names libbpf gives the object's maps (15 characters) */
	int ev = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "sluice_events", 0, 0, (uint32_t)bytes, NULL), bud;

	if (ev < 0)
		return -errno;
	bud = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sluice_ring_bud", sizeof(uint32_t), sizeof(uint64_t),
			     SLUICE_RING_BUDGET_ENTRIES, &opts);
	if (bud < 0) {
		int err = -errno;

		close(ev);
		return err;
	}
	return sluice_event_ring_open(r, ev, bud, true);
}

uint64_t sluice_event_ring_queued(const struct sluice_event_ring *r, uint32_t slot)
{
	return slot < SLUICE_RING_SLOTS ? budget_get(r, SLUICE_RING_SLOT0 + slot) : 0;
}

int sluice_event_ring_free_slot(const struct sluice_event_ring *r)
{
	for (uint32_t s = 0; s < SLUICE_RING_SLOTS; s++)
		if (!r->by_slot[s] && !sluice_event_ring_queued(r, s))
			return (int)s;
	return -ENOSPC;
}

int sluice_event_ring_add(struct sluice_event_ring *r, uint32_t slot, struct sluice_consumer *c)
{
	if (slot >= SLUICE_RING_SLOTS)
		return -ERANGE;
	if (r->by_slot[slot])
		return -EBUSY;
	r->by_slot[slot] = c;
	r->consumers++;
	set_shares(r);
	return 0;
}

void sluice_event_ring_remove(struct sluice_event_ring *r, uint32_t slot)
{
	if (slot >= SLUICE_RING_SLOTS || !r->by_slot[slot])
		return;
	r->by_slot[slot] = NULL;
	r->consumers--;
	set_shares(r);
}

int sluice_event_ring_fd(const struct sluice_event_ring *r)
{
	return ring_buffer__epoll_fd(r->rb);
}

int sluice_event_ring_consume(struct sluice_event_ring *r)
{
	/* libbpf 1.1 can miss a wakeup: callers poll with a timeout and
	 * always consume, whether or not epoll said so */
	int n = ring_buffer__consume(r->rb);

	return n == -EINTR ? 0 : n;
}

void sluice_event_ring_close(struct sluice_event_ring *r)
{
	ring_buffer__free(r->rb);
	r->rb = NULL;
	if (r->budget)
		munmap(r->budget, r->budget_len);
	r->budget = NULL;
	if (r->events_fd >= 0)
		close(r->events_fd);
	if (r->budget_fd >= 0)
		close(r->budget_fd);
	r->events_fd = r->budget_fd = -1;
}
