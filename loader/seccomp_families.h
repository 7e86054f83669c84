/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seccomp_families.h - the socket family rule of seccomp, in one place
 * (docs/policy.md "Socket families"): which calls that create a socket
 * are refused for which arguments.  Two users: the filter `sluice run`
 * loads (seccomp_baseline.c, libseccomp) and the OCI seccomp profile
 * `sluice policy seccomp` prints for containers (cmd_seccomp.c).
 *
 * Every way a process has to create a socket of a family the policy does
 * not name:
 *   socket(2), socketpair(2)   refused for every family but unix, inet,
 *                              inet6, netlink route/sock_diag and the
 *                              policy's families: (argument 0, and for
 *                              netlink argument 2, the protocol); on every
 *                              architecture of the filter (x86-64, i386 through
 *                              `int $0x80`, x32; arm64 and arm), each with its
 *                              own system call numbers
 *   socketcall(2)              (i386) SYS_SOCKET and SYS_SOCKETPAIR refused for
 *                              every family: the arguments are in memory,
 *                              which seccomp cannot read
 *   io_uring_setup, _enter,    refused: IORING_OP_SOCKET (Linux 5.19) makes a
 *   _register                  socket without any socket system call
 * A system call the kernel lacks is refused by the kernel anyway; an
 * architecture outside the filter is killed (libseccomp's default).
 */
#ifndef SLUICE_SECCOMP_FAMILIES_H
#define SLUICE_SECCOMP_FAMILIES_H

#include <stdbool.h>
#include <stdint.h>

#include <seccomp.h>

enum sluice_seccomp_verdict {
	SLUICE_SECCOMP_REFUSE = 0,  /* EPERM (the loader: through its monitor when there is one) */
	SLUICE_SECCOMP_ALLOW,       /* the complement, for a profile whose default action refuses */
};

struct sluice_seccomp_arg {
	unsigned index;             /* argument number, 0-based */
	enum scmp_compare op;       /* SCMP_CMP_EQ or SCMP_CMP_GT */
	uint64_t value;
};

/* One rule: the system call (libseccomp's name) with its arguments and'ed. */
struct sluice_seccomp_rule {
	const char *syscall;
	enum sluice_seccomp_verdict verdict;
	unsigned n_args;            /* 0..2 */
	struct sluice_seccomp_arg args[2];
	bool io_uring;              /* an io_uring call (`sluice run --allow-io-uring` drops these) */
};

/* A rule receiver; returns 0 to go on, anything else stops the walk and is returned. */
typedef int (*sluice_seccomp_rule_fn)(const struct sluice_seccomp_rule *rule, void *arg);

/*
 * Call fn for every rule of the socket family filter, for a policy whose
 * families: is `allowed` (bit AF_x set: the family is named; netlink named:
 * every protocol).  The refusals alone decide the filter of `sluice run`
 * (default: allow); with the ALLOW rules too every argument of these system
 * calls is decided by a rule, so the set also holds in a profile whose
 * default action refuses.  Returns 0 or fn's first non-zero result.
 */
int sluice_seccomp_family_rules(uint64_t allowed, sluice_seccomp_rule_fn fn, void *arg);

/* "SCMP_CMP_EQ", "SCMP_CMP_GT" (the OCI profile's spelling of op); NULL for the others. */
const char *sluice_seccomp_op_name(enum scmp_compare op);

#endif
