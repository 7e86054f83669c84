/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * child_start.h - the start-up sluice-proxy and sluice-resolver share
 * (docs/architecture.md, "Child process interface"): join the sandbox's
 * network namespace, open the events destination, start the line writer
 * on the shared sequence counter, say `ready`, and say at exit what the
 * writer lost.  Errors that stop the start are fatal (log.h).
 */
#ifndef SLUICE_CHILD_START_H
#define SLUICE_CHILD_START_H

#include "evlog.h"

/* --netns PATH: join that network namespace (every socket made after it
 * lives there).  NULL: nothing.  Fatal when it cannot. */
void sluice_child_join_netns(const char *path);

/*
 * The events destination: --log-fd N (inherited; made close-on-exec), or
 * --log PATH (appended, created 0640), or standard output.  Returns the
 * fd.  Fatal for both options at once or a destination that cannot be
 * used.
 */
int sluice_child_log_fd(const char *path, int fd);

/*
 * Start `w` on `fd` for program `prog` with the envelope `env`; the
 * destination named `path`, else "stdout", "stderr" or "fd N".  seq_fd
 * >= 0: number lines from that shared counter (--seq-fd; made
 * close-on-exec).  Returns 0, or -1 after saying why on stderr (the
 * caller exits 2).
 */
int sluice_child_evlog(struct sluice_evlog *w, int fd, const char *path, const char *prog,
		       const struct sluice_envelope *env, int seq_fd);

/* --ready-fd N: write "ready\n" to it and close it (a failed write is
 * said, not fatal).  fd < 0: nothing. */
void sluice_child_ready(int fd);

/* At exit: one line on stderr when the writer lost lines. */
void sluice_child_loss_summary(const struct sluice_evlog *w);

#endif /* SLUICE_CHILD_START_H */
