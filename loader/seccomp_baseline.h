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

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Load the baseline into the calling thread (families: the policy's
 * families:, bit AF_x; flags: SLUICE_SECCOMP_*) (inherited by everything it
 * forks and execs; no_new_privs is set).  Call last before exec: mount(2)
 * and friends are refused afterwards.  The native architecture and, on
 * x86-64 and arm64, the 32-bit ones too (so `int 0x80` is no way round).
 *
 * monitor_sock >= 0 (a sluice_seccomp_monitor's child end): the refusals
 * go through a seccomp user notification (Linux 5.0) to the monitor in
 * the loader, which answers EPERM and counts them; the listener fd is
 * sent over monitor_sock and closed here, so the command never holds it
 * (it could answer its own notifications).  If the loader is gone, the
 * kernel fails those calls with ENOSYS: still refused.  monitor_sock < 0:
 * plain EPERM, uncounted.
 * Returns 0, or -1 with a message in err.
 */
int sluice_seccomp_apply(int monitor_sock, uint64_t families, unsigned flags, char *err, size_t errlen);

/* flags of sluice_seccomp_apply() and _apply_families() */
#define SLUICE_SECCOMP_ALLOW_IO_URING 0x1u  /* leave io_uring alone (its IORING_OP_SOCKET is a way
					     * round the socket family rows: --allow-io-uring) */

/*
 * The baseline's socket family row alone (the egress-only profile, where
 * the BPF LSM does not judge socket families): socket() and socketpair() of
 * a family other than unix, inet, inet6, netlink route/sock_diag and those
 * of `families` (bit AF_x set: the policy's families:), on every ABI of
 * the filter, i386 socketcall(SYS_SOCKET, SYS_SOCKETPAIR) and io_uring
 * (unless flags has SLUICE_SECCOMP_ALLOW_IO_URING) fail with EPERM: the
 * rules of seccomp_families.h.  Does not set
 * no_new_privs: call it while the thread still has CAP_SYS_ADMIN (or
 * after no_new_privs).  monitor_sock as sluice_seccomp_apply.  Returns 0,
 * or -1 with a message in err.
 */
int sluice_seccomp_apply_families(int monitor_sock, uint64_t families, unsigned flags, char *err, size_t errlen);

#define SLUICE_SECCOMP_LOGGED 5

/* A refusal to report: the system call's name and the caller. */
struct sluice_seccomp_refusal {
	char syscall[32];
	int family;                 /* socket(): the family asked for (AF_*); else -1 */
	char abi[8];                /* "" the native ABI, else "i386", "x32", "arm" (sluice.syscall_abi) */
	unsigned pid;               /* host pid namespace */
	unsigned long long count;   /* refusals so far, this one included */
};

/* The loader's side of the refusal count (a thread; see sluice_seccomp_apply).
 * The thread only counts and records the first SLUICE_SECCOMP_LOGGED; the
 * loader's main loop writes them (sluice_seccomp_monitor_take): one writer
 * of event lines, one thread. */
struct sluice_seccomp_monitor {
	int sock[2];                /* [0] the loader's end, [1] the command's */
	pthread_mutex_t lock;       /* guards refused, first[], n_first */
	unsigned long long refused;
	struct sluice_seccomp_refusal first[SLUICE_SECCOMP_LOGGED];
	unsigned n_first, n_taken;
	volatile int stop;
	int running;
	pthread_t thread;
};

/* Before the sandbox's clone: the socket pair (close-on-exec).  Returns 0 or -errno. */
int sluice_seccomp_monitor_open(struct sluice_seccomp_monitor *m);

/* After the clone, in the loader: close the command's end and start the
 * thread that receives the listener and answers every refusal with EPERM,
 * recording the first SLUICE_SECCOMP_LOGGED.  Returns 0 or -errno. */
int sluice_seccomp_monitor_start(struct sluice_seccomp_monitor *m);

/* The next recorded refusal not yet taken, copied to *out: returns 1, or 0
 * when there is none.  Call from the loader's main thread. */
int sluice_seccomp_monitor_take(struct sluice_seccomp_monitor *m, struct sluice_seccomp_refusal *out);

/* Stop the thread (if any), close everything; returns the refusals counted.
 * Safe on a monitor that was opened but not started, and twice. */
unsigned long long sluice_seccomp_monitor_stop(struct sluice_seccomp_monitor *m);

/* Number of rows in the baseline table and the name of row i (tests, docs). */
size_t sluice_seccomp_count(void);
const char *sluice_seccomp_name(size_t i);

#endif
