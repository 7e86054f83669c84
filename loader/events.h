/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * events.h - kernel denial events as JSON lines (Elastic Common Schema
 * names; schema in docs/events.md), and the ring-buffer consumer.
 */
#ifndef SLUICE_EVENTS_H
#define SLUICE_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>

#include "evlog.h"
#include "sluice.h"

/* What every line of a sandbox carries besides the event itself. */
struct sluice_event_meta {
	const char *sandbox;        /* sluice.sandbox */
	const char *policy_name;    /* rule.ruleset and sluice.policy_name */
	const char *policy_digest;  /* rule.version and sluice.policy_sha256 (hex) */
	const char *mode;           /* "enforce" or "audit" (sluice.mode) */
	const char *container_id;   /* container.id, .name, .runtime (NULL: not a container) */
	const char *container_name;
	const char *container_runtime;
	const struct sluice_labels *labels; /* labels.KEY on every line (--label); NULL: none */
	int64_t boot_to_real_ns;    /* CLOCK_REALTIME - CLOCK_BOOTTIME, ns */
	uint32_t canary_pid;        /* events of this pid with comm "sluice-canary" are the canary's */
	/* the confinement (confine.h), on the sandbox-start/-stop lines when profile is set */
	const char *profile;        /* sluice.profile: "sandbox" or "egress-only" */
	const char *user_name;      /* user.name CMD runs as */
	uint32_t uid, gid;          /* user.id, group.id (strings, as ECS has them) */
	int landlock_abi;           /* sluice.landlock_abi: 0 if the kernel has none or egress-only */
};

/* Stable names of reasons ("tcp_port_not_allowed"), hooks ("connect4"),
 * verdicts ("deny", "would_deny"). "unknown" for numbers out of range. */
const char *sluice_reason_name(unsigned reason);
const char *sluice_hook_name(unsigned hook);

/* The reverse of sluice_reason_name(): the enum sluice_reason number of a
 * stable name read back from a log line ("tcp_port_not_allowed" -> 1), or -1
 * for a name no reason has (or NULL).  `sluice policy suggest` reads lines
 * by it. */
int sluice_reason_code(const char *name);

/* CLOCK_REALTIME - CLOCK_BOOTTIME in ns, for converting event timestamps. */
int64_t sluice_boot_to_real_ns(void);

/* The event's time as CLOCK_REALTIME ns (its boot-time stamp + m's offset). */
int64_t sluice_event_real_ns(const struct sluice_event *e, const struct sluice_event_meta *m);

/* Is e one of the start-up canary's own denials (m->canary_pid, comm
 * "sluice-canary")? */
bool sluice_event_is_canary(const struct sluice_event *e, const struct sluice_event_meta *m);

/*
 * Add the fields of one kernel event (docs/events.md, "Kernel events") to
 * a line begun with sluice_evlog_begin(..., SLUICE_DS_KERNEL, ...).  Pure:
 * no I/O.  Strings from the event (comm) are escaped, bad UTF-8 replaced.
 */
void sluice_event_fields(struct sluice_line *l, const struct sluice_event *e, const struct sluice_event_meta *m);

/* For a unix denial record (struct sluice_event_unix, hooks connect_unix and
 * sendmsg_unix): destination.address, the path or "@abstract-name". */
void sluice_event_unix_fields(struct sluice_line *l, const struct sluice_event_unix *u);

/*
 * @timestamp and the same fields as a JSON object (no envelope; tests and fuzzing)
 * into buf.  Returns the length (< len), or -1 if len < 128.
 */
int sluice_event_format(const struct sluice_event *e, const struct sluice_event_meta *m, char *buf,
			size_t len);

/* A lifecycle line (event.dataset sluice.lifecycle, event.kind state):
 * event.action `action` ("sandbox-start", ...), `message` (NULL: none).
 * Returns 0, or -errno when it was lost (counted by the writer). */
int sluice_lifecycle_write(struct sluice_evlog *w, const char *action, const char *message);

/* The envelope (sandbox, policy, mode) of m's lines, pointing into m. */
void sluice_envelope_of(const struct sluice_event_meta *m, struct sluice_envelope *env);

struct sluice_event_ring;
struct sluice_sandbox;

/* The consumer of one sandbox's records: writes its lines to `log`. */
struct sluice_consumer {
	struct sluice_event_ring *ring; /* where its records are (not owned) */
	uint32_t slot;              /* its slot there (sluice_bpf_config.ring_slot) */
	struct sluice_sandbox *sb;
	const struct sluice_event_meta *meta;
	struct sluice_evlog *log;   /* where lines go (not owned) */
	uint64_t lost_reported;     /* events_lost already written */
	uint64_t canary;            /* of which the canary's */
	uint64_t write_lost;        /* denial lines the writer could not write */
	uint64_t received;          /* events consumed (written, or lost in the writer) */
	/* events consumed per reason (SLUICE_REASON__MAX: an unknown one) and
	 * verdict ([0] deny, [1] would deny), the canary's left out */
	uint64_t by_reason[SLUICE_REASON__MAX + 1][2];
	bool skip_first;            /* a restart: the first record may be the one whose line */
	uint64_t skip_seq;          /* the previous daemon wrote as it was killed (this seq) */
	uint64_t duplicates;        /* records skipped so */
};

/* Consume sb's records, those of slot `slot` of `ring` (loader/event_ring.h);
 * lines go to `log` (written or counted lost there).  Returns 0 or -errno
 * (-EBUSY: the slot has a consumer). */
int sluice_consumer_init(struct sluice_consumer *c, struct sluice_event_ring *ring, uint32_t slot,
			 struct sluice_sandbox *sb, const struct sluice_event_meta *meta, struct sluice_evlog *log);

/* One record of c's slot (`size` bytes: struct sluice_event, or struct
 * sluice_event_unix), as its line; the ring calls it. */
void sluice_consumer_record(struct sluice_consumer *c, const void *data, size_t size);

/* A restarted daemon: the last kernel line of the sandbox in the events
 * file had sluice.seq `seq`; if the first record still queued has it, its
 * line is there already (the old daemon died between writing it and
 * consuming it): skip it, once. */
void sluice_consumer_skip_written(struct sluice_consumer *c, uint64_t seq);

/* epoll fd that becomes readable when events are ready (batched wakeups:
 * poll it with a finite timeout, then call sluice_consumer_drain). */
int sluice_consumer_fd(struct sluice_consumer *c);

/* Consume everything queued in c's ring (every slot's, each to its
 * consumer), then report c's new losses.  Returns the number of c's
 * events written, or -errno. */
int sluice_consumer_drain(struct sluice_consumer *c);

/* c's records have no consumer from now on (it leaves the ring). */
void sluice_consumer_free(struct sluice_consumer *c);

#endif
