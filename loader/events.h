/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * events.h - kernel denial events as JSON lines (Elastic Common Schema
 * names; schema in docs/events.md), and the ring-buffer consumer.
 */
#ifndef SLUICE_EVENTS_H
#define SLUICE_EVENTS_H

#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>

#include "sluice.h"

/* What every line of a sandbox carries besides the event itself. */
struct sluice_event_meta {
	const char *sandbox;        /* sluice.sandbox */
	const char *policy_name;    /* rule.ruleset.name is not ECS; sluice.policy_name */
	const char *policy_digest;  /* rule.ruleset and sluice.policy_sha256 (hex) */
	const char *mode;           /* "enforce" or "audit" (sluice.mode) */
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

/* CLOCK_REALTIME - CLOCK_BOOTTIME in ns, for converting event timestamps. */
int64_t sluice_boot_to_real_ns(void);

/* "2026-11-30T06:13:47.123456Z" for a CLOCK_REALTIME time in ns. */
void sluice_format_time(int64_t real_ns, char *buf, size_t len);

/*
 * Format one kernel event as a JSON object on one line (no newline) into
 * buf.  Returns the length written (< len), or -1 if it does not fit.
 * Pure: no I/O.  Strings from the event (comm) are JSON-escaped.
 */
int sluice_event_format(const struct sluice_event *e, const struct sluice_event_meta *m, char *buf,
			size_t len);

/* The same for a unix denial record (struct sluice_event_unix): adds
 * destination.address, the path or "@abstract-name" the client asked for. */
int sluice_unix_event_format(const struct sluice_event_unix *u, const struct sluice_event_meta *m, char *buf,
			     size_t len);

/*
 * Format an "events_lost" line: `count` events could not be reserved in the
 * ring buffer since the previous such line (`total` since start).
 */
int sluice_events_lost_format(uint64_t count, uint64_t total, const struct sluice_event_meta *m,
			      char *buf, size_t len);

/* A "sandbox started"/"stopped" line (event.action sandbox-start/-stop);
 * with m->profile set, also the confinement fields of the meta. */
int sluice_lifecycle_format(const char *action, const char *message, const struct sluice_event_meta *m,
			    char *buf, size_t len);

/* A "syscall-denied" line: the seccomp baseline refused `syscall` (its
 * name) to process `pid` (host pid namespace); `count`: refusals so far. */
int sluice_syscall_denied_format(const char *syscall, uint32_t pid, uint64_t count, const struct sluice_event_meta *m,
				 char *buf, size_t len);

struct ring_buffer;
struct sluice_sandbox;

/* The consumer: reads the ring buffer, writes lines to `out`. */
struct sluice_consumer {
	struct ring_buffer *rb;
	struct sluice_sandbox *sb;
	const struct sluice_event_meta *meta;
	int out_fd;                 /* lines are appended with one write each */
	uint64_t lost_reported;     /* events_lost already written */
	uint64_t received;          /* events written */
};

/*
 * Append `line` (len bytes, no newline) and a newline to `fd` with ONE
 * writev(2): with O_APPEND, lines of the loader, the proxy and the resolver
 * sharing a file never interleave.  Retries on EINTR.  Returns 0 or -errno.
 */
int sluice_write_line(int fd, const char *line, size_t len);

/* Set up consumption of sb's ring buffer; lines go to out_fd.  Returns 0 or -errno. */
int sluice_consumer_init(struct sluice_consumer *c, struct sluice_sandbox *sb,
			 const struct sluice_event_meta *meta, int out_fd);

/* epoll fd that becomes readable when events are ready (batched wakeups:
 * poll it with a finite timeout, then call sluice_consumer_drain). */
int sluice_consumer_fd(struct sluice_consumer *c);

/* Consume everything queued, then report new losses.  Returns the number
 * of events written, or -errno. */
int sluice_consumer_drain(struct sluice_consumer *c);

void sluice_consumer_free(struct sluice_consumer *c);

#endif
