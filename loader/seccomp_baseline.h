/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seccomp_baseline.h - the seccomp baseline of the sandbox profile (libseccomp):
 * system calls a sandboxed command has no business making (loading BPF,
 * kernel modules, kexec, the kernel keyring, userfaultfd, ptrace, mounts,
 * new user namespaces, personality tricks) fail with EPERM.  The list is
 * one table in seccomp_baseline.c (sluice_seccomp_baseline), systemd seccomp-util
 * style; docs/filesystem.md shows it.
 */
#ifndef SLUICE_SECCOMP_BASELINE_H
#define SLUICE_SECCOMP_BASELINE_H

#include <stddef.h>

/*
 * Load the baseline into the calling thread (inherited by everything it
 * forks and execs; no_new_privs is set).  Call last before exec: mount(2)
 * and friends are refused afterwards.  The native architecture and, on
 * x86-64 and arm64, the 32-bit ones too (so `int 0x80` is no way round).
 * Returns 0, or -1 with a message in err.
 */
int sluice_seccomp_apply(char *err, size_t errlen);

/* Number of rows in the baseline table and the name of row i (tests, docs). */
size_t sluice_seccomp_count(void);
const char *sluice_seccomp_name(size_t i);

#endif
