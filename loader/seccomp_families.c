/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seccomp_families.c - the socket family rule of seccomp (seccomp_families.h).
 */
#include "seccomp_families.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

/* socketcall(2)'s call numbers (linux/net.h) */
#define SOCKETCALL_SOCKET 1
#define SOCKETCALL_SOCKETPAIR 8
#define SOCKETCALL_MAX 20

#define NETLINK_ROUTE_PROTO 0
#define NETLINK_SOCK_DIAG_PROTO 4

static int emit(sluice_seccomp_rule_fn fn, void *arg, const char *sc, enum sluice_seccomp_verdict v, unsigned n,
		unsigned i0, enum scmp_compare op0, uint64_t v0, unsigned i1, enum scmp_compare op1, uint64_t v1)
{
	struct sluice_seccomp_rule r = {
		.syscall = sc,
		.verdict = v,
		.n_args = n,
		.args = { { i0, op0, v0 }, { i1, op1, v1 } },
		.io_uring = strncmp(sc, "io_uring_", 9) == 0,
	};

	return fn(&r, arg);
}

#define RULE0(sc, v) emit(fn, arg, sc, v, 0, 0, SCMP_CMP_EQ, 0, 0, SCMP_CMP_EQ, 0)
#define RULE1(sc, v, op, x) emit(fn, arg, sc, v, 1, 0, op, x, 0, SCMP_CMP_EQ, 0)
#define RULE2(sc, v, x, op, y) emit(fn, arg, sc, v, 2, 0, SCMP_CMP_EQ, x, 2, op, y)

/* socket() or socketpair(): arguments (family, type, protocol).  The same
 * rule as sluice_policy_allows_family() and the BPF LSM's socket_create. */
static int family_rules(const char *sc, uint64_t allowed, sluice_seccomp_rule_fn fn, void *arg)
{
	int r = RULE1(sc, SLUICE_SECCOMP_REFUSE, SCMP_CMP_GT, 63);

	for (unsigned f = 0; r == 0 && f < 64; f++) {
		bool named = (allowed & (1ULL << f)) != 0;

		if (f == AF_UNIX || f == AF_INET || f == AF_INET6 || (named && f != AF_NETLINK)) {
			r = RULE1(sc, SLUICE_SECCOMP_ALLOW, SCMP_CMP_EQ, f);
		} else if (f == AF_NETLINK && named) {
			r = RULE1(sc, SLUICE_SECCOMP_ALLOW, SCMP_CMP_EQ, f);
		} else if (f == AF_NETLINK) {
			/* route (ip(8), getaddrinfo) and sock_diag (ss(8)) only */
			r = RULE2(sc, SLUICE_SECCOMP_ALLOW, AF_NETLINK, SCMP_CMP_EQ, NETLINK_ROUTE_PROTO);
			if (r == 0)
				r = RULE2(sc, SLUICE_SECCOMP_ALLOW, AF_NETLINK, SCMP_CMP_EQ, NETLINK_SOCK_DIAG_PROTO);
			for (unsigned p = 1; r == 0 && p < NETLINK_SOCK_DIAG_PROTO; p++)
				r = RULE2(sc, SLUICE_SECCOMP_REFUSE, AF_NETLINK, SCMP_CMP_EQ, p);
			if (r == 0)
				r = RULE2(sc, SLUICE_SECCOMP_REFUSE, AF_NETLINK, SCMP_CMP_GT, NETLINK_SOCK_DIAG_PROTO);
		} else {
			r = RULE1(sc, SLUICE_SECCOMP_REFUSE, SCMP_CMP_EQ, f);
		}
	}
	return r;
}

int sluice_seccomp_family_rules(uint64_t allowed, sluice_seccomp_rule_fn fn, void *arg)
{
	static const char *const uring[] = { "io_uring_setup", "io_uring_enter", "io_uring_register" };
	int r = family_rules("socket", allowed, fn, arg);

	if (r == 0)
		r = family_rules("socketpair", allowed, fn, arg);
	/* socketcall: the call number is in a register, its arguments are not */
	for (unsigned c = 0; r == 0 && c <= SOCKETCALL_MAX; c++) {
		bool makes = c == SOCKETCALL_SOCKET || c == SOCKETCALL_SOCKETPAIR;

		r = RULE1("socketcall", makes ? SLUICE_SECCOMP_REFUSE : SLUICE_SECCOMP_ALLOW, SCMP_CMP_EQ, c);
	}
	if (r == 0)
		r = RULE1("socketcall", SLUICE_SECCOMP_ALLOW, SCMP_CMP_GT, SOCKETCALL_MAX);
	for (size_t i = 0; r == 0 && i < sizeof(uring) / sizeof(uring[0]); i++)
		r = RULE0(uring[i], SLUICE_SECCOMP_REFUSE);
	return r;
}

const char *sluice_seccomp_op_name(enum scmp_compare op)
{
	return op == SCMP_CMP_EQ ? "SCMP_CMP_EQ" : op == SCMP_CMP_GT ? "SCMP_CMP_GT" : NULL;
}
