/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sockabi.c - test program (x86-64 only; built by test_seccomp_abi.py and
 * test_seccomp_profile.py with cc): asks for one socket of FAMILY through
 * each way a 64-bit process has into the kernel's socket creation, and
 * prints one JSON line {PATH: "created" | errno name}:
 *
 *   native        socket(2), the x86-64 system call 41
 *   socketpair    socketpair(2), x86-64 53
 *   i386          socket(2) of the i386 ABI (359) through `int $0x80`
 *                 (seccomp sees AUDIT_ARCH_I386)
 *   socketcall    socketcall(2) of the i386 ABI (102, SYS_SOCKET), whose
 *                 arguments are in memory where seccomp cannot read them
 *   x32           socket(2) of the x32 ABI (41 | __X32_SYSCALL_BIT);
 *                 ENOSYS on a kernel without CONFIG_X86_X32_ABI
 *   io_uring      IORING_OP_SOCKET (Linux 5.19), no socket system call at all
 *
 * i386 and socketcall print "NOABI" where `int $0x80` itself faults (SIGSEGV:
 * a kernel booted with ia32_emulation=false, or a paravirtualised VM that
 * does not deliver it, as this project's CI machines): that way into the
 * kernel does not exist there, for the sandbox either.
 *
 * usage: sockabi FAMILY [TYPE [PATH...]]   (numbers: 40 vsock, 17 packet, 2 inet; TYPE 0 or absent:
 *        SOCK_STREAM, SOCK_DGRAM for packet; PATH: only those of the paths above, in that order)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#if !defined(__x86_64__)
int main(void)
{
	puts("{\"skip\": \"x86-64 only\"}");
	return 0;
}
#else

#define X32_SYSCALL_BIT 0x40000000L
#define I386_SOCKET 359
#define I386_SOCKETCALL 102
#define SYS_SOCKET_CALL 1

/* The i386 ABI from a 64-bit process: `int $0x80`, arguments in ebx, ecx,
 * edx, the result in eax (a negative errno). */
static long int80(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

/* Does `int $0x80` reach the kernel here?  Asked in a child (getpid, i386
 * 20): false only when the child dies of SIGSEGV, the trap itself refused.
 * A child killed otherwise (SIGSYS: a seccomp filter that kills the i386
 * ABI) reached the kernel. */
static bool have_int80(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int80(20, 0, 0, 0);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return true;   /* cannot tell: try it for real */
	return !(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

/* A result as the JSON value: "created" (and the socket closed) or the errno name. */
static const char *verdict(long r)
{
	static char buf[32];

	if (r >= 0) {
		close((int)r);
		return "created";
	}
	switch (-r) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOSYS: return "ENOSYS";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EINVAL: return "EINVAL";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EFAULT: return "EFAULT";
	default: snprintf(buf, sizeof(buf), "errno %ld", -r); return buf;
	}
}

static long raw(long nr, long a, long b, long c)
{
	long r = syscall(nr, a, b, c);

	return r < 0 ? -errno : r;
}

/* IORING_OP_SOCKET by hand (no liburing): one SQE, one CQE. */
struct sqe {
	uint8_t opcode, flags;
	uint16_t ioprio;
	int32_t fd;
	uint64_t off, addr;
	uint32_t len, rw_flags;
	uint64_t user_data;
	uint16_t buf_index, personality;
	int32_t file_index;
	uint64_t pad[2];
};
struct sq_off {
	uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1;
	uint64_t user_addr;
};
struct cq_off {
	uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1;
	uint64_t user_addr;
};
struct params {
	uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd, resv[3];
	struct sq_off sq;
	struct cq_off cq;
};
#define IORING_OP_SOCKET 45
#define IORING_ENTER_GETEVENTS 1
#define IORING_OFF_SQ_RING 0ULL
#define IORING_OFF_CQ_RING 0x8000000ULL
#define IORING_OFF_SQES 0x10000000ULL

static long uring_socket(int family, int type)
{
	struct params p;
	long fd, r;
	size_t sq_sz, cq_sz;
	char *sq, *cq;
	struct sqe *sqes;

	memset(&p, 0, sizeof(p));
	fd = raw(__NR_io_uring_setup, 1, (long)&p, 0);
	if (fd < 0)
		return fd;
	sq_sz = p.sq.array + p.sq_entries * sizeof(uint32_t);
	cq_sz = p.cq.cqes + p.cq_entries * 16;
	sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, (int)fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, (int)fd, IORING_OFF_CQ_RING);
	sqes = mmap(NULL, p.sq_entries * sizeof(struct sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		    (int)fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
		close((int)fd);
		return -EFAULT;
	}
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_SOCKET;
	sqes[0].fd = family;
	sqes[0].off = (uint64_t)type;
	sqes[0].len = 0; /* protocol */
	((uint32_t *)(sq + p.sq.array))[0] = 0;
	__atomic_store_n((uint32_t *)(sq + p.sq.tail), 1, __ATOMIC_RELEASE);
	r = syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	r = r < 0 ? -errno : 0;
	if (r == 0) {
		uint32_t head = *(uint32_t *)(cq + p.cq.head), tail = __atomic_load_n((uint32_t *)(cq + p.cq.tail),
										  __ATOMIC_ACQUIRE);

		r = head == tail ? -ENOSYS : *(int32_t *)(cq + p.cq.cqes + 8); /* struct io_uring_cqe.res */
	}
	close((int)fd);
	return r;
}

/* PATH is among argv[3...], or no list was given. */
static int wanted(int argc, char **argv, const char *path)
{
	if (argc <= 3)
		return 1;
	for (int i = 3; i < argc; i++)
		if (strcmp(argv[i], path) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int family, type, sv[2];
	const char *sep = "";
	uint32_t *args;
	long r;

	if (argc < 2) {
		fprintf(stderr, "usage: sockabi FAMILY [TYPE [PATH...]]\n");
		return 2;
	}
	family = atoi(argv[1]);
	type = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : family == AF_PACKET ? SOCK_DGRAM : SOCK_STREAM;
	/* socketcall's argument block must lie below 4 GiB: int $0x80 passes 32-bit pointers */
	args = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (args == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	args[0] = (uint32_t)family;
	args[1] = (uint32_t)type;
	args[2] = 0;

	bool i386 = (wanted(argc, argv, "i386") || wanted(argc, argv, "socketcall")) && have_int80();

	putchar('{');
	if (wanted(argc, argv, "native")) {
		printf("%s\"native\": \"%s\"", sep, verdict(raw(__NR_socket, family, type, 0)));
		sep = ", ";
	}
	if (wanted(argc, argv, "socketpair")) {
		r = socketpair(family, type, 0, sv);
		if (r == 0) {
			close(sv[1]);
			r = sv[0];
		} else {
			r = -errno;
		}
		printf("%s\"socketpair\": \"%s\"", sep, verdict(r));
		sep = ", ";
	}
	if (wanted(argc, argv, "i386")) {
		printf("%s\"i386\": \"%s\"", sep, i386 ? verdict(int80(I386_SOCKET, family, type, 0)) : "NOABI");
		sep = ", ";
	}
	if (wanted(argc, argv, "socketcall")) {
		printf("%s\"socketcall\": \"%s\"", sep,
		       i386 ? verdict(int80(I386_SOCKETCALL, SYS_SOCKET_CALL, (long)(uintptr_t)args, 0)) : "NOABI");
		sep = ", ";
	}
	if (wanted(argc, argv, "x32")) {
		printf("%s\"x32\": \"%s\"", sep, verdict(raw(X32_SYSCALL_BIT | __NR_socket, family, type, 0)));
		sep = ", ";
	}
	if (wanted(argc, argv, "io_uring"))
		printf("%s\"io_uring\": \"%s\"", sep, verdict(uring_socket(family, type)));
	puts("}");
	return 0;
}
#endif
