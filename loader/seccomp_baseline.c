/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seccomp_baseline.c - the seccomp baseline of the sandbox profile (seccomp_baseline.h).
 * One table, named groups as systemd's seccomp-util.c has them; each row
 * is refused with EPERM (ENOSYS for clone3, see below) so a program sees
 * an ordinary error instead of being killed.
 */
#include "seccomp_baseline.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seccomp.h>

#include "seccomp_families.h"


enum scmp_cond {
	COND_NONE,          /* always refused */
	COND_NEWUSER,       /* refused when arg0 (flags) has CLONE_NEWUSER */
	COND_PERSONALITY,   /* refused for the flags that weaken the address space (ASLR off,
			     * READ_IMPLIES_EXEC, page 0); the query 0xffffffff is allowed */
	COND_FAMILY,        /* the socket family filter (seccomp_families.h: socket,
			     * socketpair, socketcall, io_uring): every family but unix,
			     * inet, inet6, netlink route/sock_diag and the policy's
			     * families: refused (what the BPF LSM's socket_create allows
			     * where it loads) */
};

struct scmp_row {
	const char *name;   /* system call, as libseccomp resolves it */
	const char *group;  /* why: the systemd-style group it belongs to */
	enum scmp_cond cond;
	int err;            /* errno returned */
};

/*
 * The baseline.  Rows whose system call this architecture lacks
 * (kexec_file_load on i386, ...) are skipped.  Egress-relevant ones (bpf,
 * perf_event_open, mounts) are also covered by dropped capabilities: this
 * is the second layer, and it holds for a command run as root.
 */
static const struct scmp_row sluice_seccomp_baseline[] = {
	{ "bpf", "@bpf", COND_NONE, EPERM },
	{ "perf_event_open", "@perf", COND_NONE, EPERM },
	{ "kexec_load", "@reboot", COND_NONE, EPERM },
	{ "kexec_file_load", "@reboot", COND_NONE, EPERM },
	{ "init_module", "@module", COND_NONE, EPERM },
	{ "finit_module", "@module", COND_NONE, EPERM },
	{ "delete_module", "@module", COND_NONE, EPERM },
	{ "keyctl", "@keyring", COND_NONE, EPERM },
	{ "add_key", "@keyring", COND_NONE, EPERM },
	{ "request_key", "@keyring", COND_NONE, EPERM },
	{ "userfaultfd", "@userfaultfd", COND_NONE, EPERM },
	{ "ptrace", "@debug", COND_NONE, EPERM },
	{ "process_vm_readv", "@debug", COND_NONE, EPERM },
	{ "process_vm_writev", "@debug", COND_NONE, EPERM },
	{ "pidfd_getfd", "@debug", COND_NONE, EPERM },
	{ "mount", "@mount", COND_NONE, EPERM },
	{ "umount", "@mount", COND_NONE, EPERM },
	{ "umount2", "@mount", COND_NONE, EPERM },
	{ "pivot_root", "@mount", COND_NONE, EPERM },
	{ "open_tree", "@mount", COND_NONE, EPERM },
	{ "move_mount", "@mount", COND_NONE, EPERM },
	{ "fsopen", "@mount", COND_NONE, EPERM },
	{ "fsconfig", "@mount", COND_NONE, EPERM },
	{ "fsmount", "@mount", COND_NONE, EPERM },
	{ "fspick", "@mount", COND_NONE, EPERM },
	{ "mount_setattr", "@mount", COND_NONE, EPERM },
	{ "swapon", "@swap", COND_NONE, EPERM },
	{ "swapoff", "@swap", COND_NONE, EPERM },
	{ "open_by_handle_at", "@handle", COND_NONE, EPERM },
	{ "setns", "@namespace", COND_NONE, EPERM },
	{ "unshare", "@namespace", COND_NEWUSER, EPERM },
	{ "clone", "@namespace", COND_NEWUSER, EPERM },
	/* clone3 passes its flags in memory, which seccomp cannot read:
	 * ENOSYS makes glibc and others fall back to clone (systemd does so) */
	{ "clone3", "@namespace", COND_NONE, ENOSYS },
	{ "personality", "@personality", COND_PERSONALITY, EPERM },
	/* vsock (a VM's host), packet, xdp, bluetooth, can, ...: families no inet hook sees;
	 * the rules of seccomp_families.c, for socketpair, socketcall and io_uring too */
	{ "socket", "@network-families", COND_FAMILY, EPERM },
};

size_t sluice_seccomp_count(void)
{
	return sizeof(sluice_seccomp_baseline) / sizeof(sluice_seccomp_baseline[0]);
}

const char *sluice_seccomp_name(size_t i)
{
	return i < sluice_seccomp_count() ? sluice_seccomp_baseline[i].name : NULL;
}

/* The socket family filter's refusals (seccomp_families.h); its ALLOW rules
 * are the filter's default action already. */
struct family_ctx {
	scmp_filter_ctx ctx;
	uint32_t act;
	unsigned flags;
};

static int add_family_rule(const struct sluice_seccomp_rule *rule, void *arg)
{
	struct family_ctx *fc = arg;
	struct scmp_arg_cmp cmp[2];
	int nr = seccomp_syscall_resolve_name(rule->syscall);

	if (rule->verdict != SLUICE_SECCOMP_REFUSE || nr == __NR_SCMP_ERROR ||
	    (rule->io_uring && (fc->flags & SLUICE_SECCOMP_ALLOW_IO_URING)))
		return 0; /* allowed by default; or no such call on any architecture of the filter */
	for (unsigned i = 0; i < rule->n_args; i++)
		cmp[i] = (struct scmp_arg_cmp){ .arg = rule->args[i].index, .op = rule->args[i].op,
						.datum_a = rule->args[i].value };
	return seccomp_rule_add_array(fc->ctx, fc->act, nr, rule->n_args, cmp);
}

static int add_family_rules(scmp_filter_ctx ctx, uint32_t act, uint64_t allowed, unsigned flags)
{
	struct family_ctx fc = { .ctx = ctx, .act = act, .flags = flags };

	return sluice_seccomp_family_rules(allowed, add_family_rule, &fc);
}

static int add_row(scmp_filter_ctx ctx, const struct scmp_row *r, int nr, bool notify, uint64_t families,
		   unsigned flags)
{
	/* EPERM rows go to the monitor when there is one (it answers EPERM) */
	uint32_t act = notify && r->err == EPERM ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO((uint32_t)r->err);

	switch (r->cond) {
	case COND_NEWUSER:
		return seccomp_rule_add(ctx, act, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	case COND_PERSONALITY: {
		/*
		 * libseccomp 2.5 takes one comparison per argument and rule, and
		 * rules are or'ed: refuse a dangerous flag when bit 31 is clear
		 * (no real persona has it), any value with bit 31 set but some
		 * other bit clear (only the query 0xffffffff has them all), and
		 * anything above 32 bits (the kernel truncates to unsigned int).
		 */
		static const uint32_t flags[] = {
			UNAME26, ADDR_NO_RANDOMIZE, FDPIC_FUNCPTRS, MMAP_PAGE_ZERO, ADDR_COMPAT_LAYOUT,
			READ_IMPLIES_EXEC, ADDR_LIMIT_32BIT, SHORT_INODE, WHOLE_SECONDS, STICKY_TIMEOUTS, ADDR_LIMIT_3GB,
		};
		int r = seccomp_rule_add(ctx, act, nr, 1, SCMP_A0(SCMP_CMP_GT, 0xffffffffULL));

		for (size_t i = 0; r == 0 && i < sizeof(flags) / sizeof(flags[0]); i++)
			r = seccomp_rule_add(ctx, act, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flags[i] | 0x80000000ULL, flags[i]));
		for (unsigned b = 0; r == 0 && b < 31; b++)
			r = seccomp_rule_add(ctx, act, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, (1ULL << b) | 0x80000000ULL, 0x80000000ULL));
		return r;
	}
	case COND_FAMILY:
		return add_family_rules(ctx, act, families, flags);
	case COND_NONE:
	default:
		return seccomp_rule_add(ctx, act, nr, 0);
	}
}

/* Send the listener fd over sock (SCM_RIGHTS).  Returns 0 or -errno. */
static int send_fd(int sock, int fd)
{
	char byte = 'n', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* The baseline (families_only: its socket() row alone, for the
 * egress-only profile; no_new_privs left to the caller). */
static int apply(int monitor_sock, uint64_t families, unsigned flags, bool families_only, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	uint32_t native = seccomp_arch_native();
	int r;

	if (!ctx) {
		snprintf(err, errlen, "seccomp: cannot initialise a filter (libseccomp)");
		return -1;
	}
	/* the compat architectures, so their system call numbers are filtered too */
	if (native == SCMP_ARCH_X86_64) {
		seccomp_arch_add(ctx, SCMP_ARCH_X86);
		seccomp_arch_add(ctx, SCMP_ARCH_X32);
	} else if (native == SCMP_ARCH_AARCH64) {
		seccomp_arch_add(ctx, SCMP_ARCH_ARM);
	}
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, families_only ? 0 : 1);
	if (r < 0)
		goto fail;
	for (size_t i = 0; i < sluice_seccomp_count(); i++) {
		const struct scmp_row *row = &sluice_seccomp_baseline[i];
		int nr = seccomp_syscall_resolve_name(row->name);

		if (nr == __NR_SCMP_ERROR || (families_only && row->cond != COND_FAMILY))
			continue; /* not a system call on any architecture of the filter */
		r = add_row(ctx, row, nr, monitor_sock >= 0, families, flags);
		if (r < 0) {
			snprintf(err, errlen, "seccomp: cannot add the rule for %s (%s): %s", row->name, row->group,
				 strerror(-r));
			seccomp_release(ctx);
			return -1;
		}
	}
	r = seccomp_load(ctx);
	if (r < 0)
		goto fail;
	if (monitor_sock >= 0) {
		int nfd = seccomp_notify_fd(ctx);

		r = nfd < 0 ? nfd : send_fd(monitor_sock, nfd);
		if (nfd >= 0)
			close(nfd);
		close(monitor_sock);
		if (r < 0) {
			/* without the monitor every refusal would wait forever: stop here */
			snprintf(err, errlen, "seccomp: cannot hand the listener to the loader: %s", strerror(-r));
			seccomp_release(ctx);
			return -1;
		}
	}
	seccomp_release(ctx);
	return 0;
fail:
	snprintf(err, errlen, "seccomp: cannot load the %s filter: %s", families_only ? "socket family" : "baseline",
		 strerror(-r));
	seccomp_release(ctx);
	return -1;
}

int sluice_seccomp_apply(int monitor_sock, uint64_t families, unsigned flags, char *err, size_t errlen)
{
	return apply(monitor_sock, families, flags, false, err, errlen);
}

int sluice_seccomp_apply_families(int monitor_sock, uint64_t families, unsigned flags, char *err, size_t errlen)
{
	return apply(monitor_sock, families, flags, true, err, errlen);
}

/* --- the monitor (the loader) ------------------------------------------ */

int sluice_seccomp_monitor_open(struct sluice_seccomp_monitor *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, m->sock) < 0) {
		m->sock[0] = m->sock[1] = -1;
		return -errno;
	}
	return 0;
}

/* Wait (stop-aware) for fd to become readable; 1 ready, 0 stop or hang-up. */
static int wait_in(struct sluice_seccomp_monitor *m, int fd)
{
	while (!m->stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, 100);

		if (r < 0 && errno != EINTR)
			return 0;
		if (r > 0 && (p.revents & POLLIN))
			return 1;
		if (r > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
			return 0;
	}
	return 0;
}

static int recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

#define X32_SYSCALL_BIT 0x40000000

/* The name of a compat ABI for sluice.syscall_abi. */
static const char *abi_name(uint32_t arch)
{
	switch (arch) {
	case SCMP_ARCH_X86: return "i386";
	case SCMP_ARCH_X32: return "x32";
	case SCMP_ARCH_ARM: return "arm";
	default: return "other";
	}
}

static void *monitor_main(void *arg)
{
	struct sluice_seccomp_monitor *m = arg;
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	uint32_t native = seccomp_arch_native(), arch;
	int nfd;

	/* the command's end stays open in the sandbox's init: no EOF to wait for */
	if (!wait_in(m, m->sock[0]) || (nfd = recv_fd(m->sock[0])) < 0)
		return NULL;
	if (seccomp_notify_alloc(&req, &resp) < 0) {
		close(nfd);
		return NULL;
	}
	while (wait_in(m, nfd)) {
		char *name;

		memset(req, 0, sizeof(*req));
		if (seccomp_notify_receive(nfd, req) < 0)
			continue; /* the caller went away (ENOENT) or a signal */
		memset(resp, 0, sizeof(*resp));
		resp->id = req->id;
		resp->error = -EPERM;
		seccomp_notify_respond(nfd, resp);
		arch = req->data.arch;
		/* x32 shares x86-64's audit arch; its numbers carry __X32_SYSCALL_BIT */
		if (arch == SCMP_ARCH_X86_64 && (req->data.nr & X32_SYSCALL_BIT))
			arch = SCMP_ARCH_X32;
		name = seccomp_syscall_resolve_num_arch(arch, req->data.nr);
		pthread_mutex_lock(&m->lock);
		m->refused++;
		if (m->n_first < SLUICE_SECCOMP_LOGGED) {
			struct sluice_seccomp_refusal *f = &m->first[m->n_first++];

			snprintf(f->syscall, sizeof(f->syscall), "%s", name ? name : "unknown");
			f->family = name && (strcmp(name, "socket") == 0 || strcmp(name, "socketpair") == 0)
					    ? (int)(uint32_t)req->data.args[0] : -1;
			f->pid = req->pid;
			snprintf(f->abi, sizeof(f->abi), "%s", arch == native ? "" : abi_name(arch));
			f->count = m->refused;
		}
		pthread_mutex_unlock(&m->lock);
		free(name);
	}
	seccomp_notify_free(req, resp);
	close(nfd);
	return NULL;
}

int sluice_seccomp_monitor_start(struct sluice_seccomp_monitor *m)
{
	pthread_t t;
	int r;

	if (m->sock[1] >= 0) {
		close(m->sock[1]);
		m->sock[1] = -1;
	}
	r = pthread_create(&t, NULL, monitor_main, m);
	if (r)
		return -r;
	m->thread = t;
	m->running = 1;
	return 0;
}

int sluice_seccomp_monitor_take(struct sluice_seccomp_monitor *m, struct sluice_seccomp_refusal *out)
{
	int got = 0;

	if (!m->running)
		return 0;
	pthread_mutex_lock(&m->lock);
	if (m->n_taken < m->n_first) {
		*out = m->first[m->n_taken++];
		got = 1;
	}
	pthread_mutex_unlock(&m->lock);
	return got;
}

unsigned long long sluice_seccomp_monitor_stop(struct sluice_seccomp_monitor *m)
{
	if (m->running) {
		m->stop = 1;
		pthread_join(m->thread, NULL);
		m->running = 0;
	}
	for (int i = 0; i < 2; i++)
		if (m->sock[i] >= 0) {
			close(m->sock[i]);
			m->sock[i] = -1;
		}
	return m->refused;
}
