/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fds.h - how many descriptors this process has open, for the components
 * that fit their work to RLIMIT_NOFILE (the resolver's caps, the loader's
 * check before a BPF load).
 */
#ifndef SLUICE_FDS_H
#define SLUICE_FDS_H

/* The descriptors open now: the entries of /proc/self/fd, the directory's
 * own descriptor included.  Returns the count, or -errno when the directory
 * cannot be read (-EMFILE or -ENFILE: none was left to read it with). */
long sluice_fds_open(void);

#endif
