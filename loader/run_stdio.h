/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_stdio.h - the sockets `sluice run` finds as CMD's descriptors 0-2
 * (docs/threat-model.md L1).  They were made by the launcher, outside the
 * sandbox, so the cgroup hooks never see their use.  A unix socket stays
 * usable (journald, a CI runner's stdio) and the start line says it is
 * there; any other (inet, vsock, ...) is judged by the BPF LSM where it
 * loads (foreign_socket on each use) and refused at start where it does
 * not: its use could not be judged.
 */
#ifndef SLUICE_RUN_STDIO_H
#define SLUICE_RUN_STDIO_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Look at descriptors 0, 1 and 2 of this process.  Writes the sockets
 * among them into `found` ("0:unix,1:inet6"; "" for none; always
 * NUL-terminated).  Returns 0, or -1 with a message in err when one is a
 * socket of a family other than unix and `have_lsm` is false (the caller
 * refuses to start, exit 2).
 */
int sluice_stdio_sockets(bool have_lsm, char *found, size_t foundlen, char *err, size_t errlen);

#endif /* SLUICE_RUN_STDIO_H */
