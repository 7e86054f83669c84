/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_inside.c - the sandbox's first process of `sluice run`, born in the
 * cgroup: its namespaces (network, cgroup, mount, pid) and mounts, the
 * canary that proves the hooks, the namespace's init, and in CMD's
 * process the confinement, the capabilities and the environment just
 * before exec (docs/threat-model.md, docs/filesystem.md).
 */
#include <errno.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Capabilities a sandboxed command must not hold: each would let it detach
 * the filter, open raw sockets or leave the cgroup (docs/threat-model.md). */
static const int dropped_caps[] = {
	CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE,
	CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_BOOT, CAP_MAC_ADMIN, CAP_MAC_OVERRIDE,
	CAP_SETPCAP, CAP_SYS_CHROOT, CAP_CHECKPOINT_RESTORE,
};

static int drop_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];

	for (size_t i = 0; i < sizeof(dropped_caps) / sizeof(dropped_caps[0]); i++)
		if (prctl(PR_CAPBSET_DROP, dropped_caps[i], 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(dropped_caps) / sizeof(dropped_caps[0]); i++) {
		int c = dropped_caps[i];

		data[c / 32].effective &= ~(1u << (c % 32));
		data[c / 32].permitted &= ~(1u << (c % 32));
		data[c / 32].inheritable &= ~(1u << (c % 32));
	}
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* Report a failure from the child to the parent through the error pipe. */
static void __attribute__((noreturn)) child_fail(int fd, int code, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	ssize_t w;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w = write(fd, buf, strlen(buf));
	(void)w;
	_exit(code);
}

static const char *errname(int e)
{
	return e == 0 ? "success" : strerror(e);
}

/*
 * The canary, run inside the cgroup before CMD: a UDP sendto and a TCP
 * connect to 127.0.0.1:`port` (a port the policy neither allows nor
 * proxies) and a raw ICMP socket must each be refused with EPERM.  A
 * missing hook would make them fail differently (loopback, closed port):
 * harmless, and caught here.  In audit mode the first two are let through
 * by design; the loader then checks that both were counted as would-deny.
 */
/*
 * The BPF LSM part of the canary (`foreign`: sockets the loader made
 * outside the cgroup, inherited here: a UDP socket and one end of a unix
 * datagram socketpair).  Sending on either and connecting the UDP one
 * from inside, and creating an AF_VSOCK socket, must each be refused with
 * EPERM, in audit mode too.
 */
static void canary_lsm(int errfd, const int foreign[2], const struct sockaddr_in *sin)
{
	int fd, r;

	r = (int)sendto(foreign[0], "x", 1, 0, (const struct sockaddr *)sin, sizeof(*sin));
	if (r >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: a UDP socket made outside the sandbox was usable inside (%s): hook lsm/socket_sendmsg not in force",
			   r >= 0 ? "sent" : errname(errno));
	r = connect(foreign[0], (const struct sockaddr *)sin, sizeof(*sin));
	if (r == 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: a UDP socket made outside the sandbox could be connected inside (%s): hook lsm/socket_connect not in force",
			   r == 0 ? "connected" : errname(errno));
	r = (int)send(foreign[1], "x", 1, 0);
	if (r >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: a unix socket made outside the sandbox was usable inside (%s): hook lsm/unix_may_send not in force",
			   r >= 0 ? "sent" : errname(errno));
	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: an AF_VSOCK socket was not refused (%s): hook lsm/socket_create not in force",
			   fd >= 0 ? "created" : errname(errno));
	close(foreign[0]);
	close(foreign[1]);
}

static bool unix_hooks, canary_audit; /* set in the canary child only */

/*
 * The unix part of the canary: a connect and an addressed send to an
 * abstract name no policy entry names (nobody listens there: a missing
 * hook gives ECONNREFUSED) must each be refused with EPERM.  Audit mode
 * lets them through to that empty name; the would-deny count shows them.
 */
static void canary_unix(int errfd)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t sl;
	int fd, r, n;

	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "sluice-canary-%d", (int)getpid());
	sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a unix socket: %s", strerror(errno));
	r = connect(fd, (struct sockaddr *)&sun, sl);
	if (r == 0 || (errno != EPERM && !canary_audit))
		child_fail(errfd, 2, "canary: a unix connect to @%s was not refused (%s): hook connect_unix not in force",
			   sun.sun_path + 1, r == 0 ? "connected" : errname(errno));
	close(fd);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a unix socket: %s", strerror(errno));
	r = (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&sun, sl);
	if (r >= 0 || (errno != EPERM && !canary_audit))
		child_fail(errfd, 2, "canary: a unix sendto @%s was not refused (%s): hook sendmsg_unix not in force",
			   sun.sun_path + 1, r >= 0 ? "sent" : errname(errno));
	close(fd);
}

static void canary(int errfd, uint16_t port, bool audit, const int foreign[2])
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, r;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a UDP socket: %s", strerror(errno));
	r = (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&sin, sizeof(sin));
	/* audit mode lets it through: the loader checks the would-deny counter instead */
	if (!audit && (r >= 0 || errno != EPERM))
		child_fail(errfd, 2, "canary: UDP sendto 127.0.0.1:%u from inside the cgroup was not refused (%s): hook sendmsg4 not in force",
			   port, r >= 0 ? "sent" : errname(errno));
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		child_fail(errfd, 2, "canary: cannot create a TCP socket: %s", strerror(errno));
	r = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (!audit && (r == 0 || errno != EPERM))
		child_fail(errfd, 2, "canary: TCP connect 127.0.0.1:%u from inside the cgroup was not refused (%s): hook connect4 not in force",
			   port, r == 0 ? "connected" : errname(errno));
	close(fd);
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd >= 0 || errno != EPERM)
		child_fail(errfd, 2, "canary: raw socket from inside the cgroup was not refused (%s): hook sock_create not in force",
			   fd >= 0 ? "created" : errname(errno));
	if (unix_hooks)
		canary_unix(errfd);
	if (foreign[0] >= 0)
		canary_lsm(errfd, foreign, &sin);
}

static volatile pid_t init_child;

static void init_forward(int sig)
{
	if (init_child > 0)
		kill(init_child, sig);
}

/*
 * pid 1 of the sandbox's pid namespace, after forking CMD: forward the
 * signals a user sends (sluice run forwards them here), reap every orphan,
 * and exit with CMD's status (128+N if signal N killed it) once CMD is
 * gone; the kernel then kills whatever else is left in the namespace.
 */
static void __attribute__((noreturn)) sandbox_init(int errfd, pid_t cmd)
{
	static const int fwd[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct sigaction sa;
	int status = 0;

	close(errfd); /* CMD holds its own copy until exec */
	prctl(PR_SET_NAME, "sluice-init", 0, 0, 0);
	init_child = cmd;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = init_forward;
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaction(fwd[i], &sa, NULL);
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, 0);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break;
		if (w == cmd) {
			status = st;
			break;
		}
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 2);
}

/* Enter the network namespace, make the cgroup, mount and pid views of
 * the sandbox, and run the canary (errors to st->errpipe[1]). */
static void inside_namespaces(struct run_state *st)
{
	char msg[512];

	close(st->errpipe[0]);
	close(st->syncpipe[0]);
	close(st->gopipe[1]);
	/* the listeners stay with the loader, never with the sandbox's init */
	sluice_listeners_close(&st->listeners);
	if (st->foreign_peer >= 0)
		close(st->foreign_peer);
	prctl(PR_SET_NAME, "sluice-canary", 0, 0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);   /* CMD's as a shell would leave it, whatever the loader does */
	if (st->netns_fd >= 0 && setns(st->netns_fd, CLONE_NEWNET) < 0)
		child_fail(st->errpipe[1], 2, "cannot enter network namespace %s: %s", st->netns_path, strerror(errno));
	/* its own cgroup namespace: cgroup.procs of any cgroup outside
	 * the sandbox is out of reach, even for root */
	if (unshare(CLONE_NEWCGROUP) < 0)
		child_fail(st->errpipe[1], 2, "unshare(CLONE_NEWCGROUP): %s", strerror(errno));
	/* its own mount namespace without bpffs: pinned links cannot be removed from inside */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		child_fail(st->errpipe[1], 2, "cannot make a private mount namespace: %s", strerror(errno));
	umount2(SLUICE_BPFFS, MNT_DETACH);
	if (sluice_trust_enter(&st->trust, msg, sizeof(msg)) < 0)
		child_fail(st->errpipe[1], 2, "%s", msg);
	/* and without the host's view of the cgroup2 hierarchy: without
	 * nsdelegate, root could write its pid into any cgroup.procs it
	 * can see.  A fresh cgroup2 mount here shows only the sandbox's
	 * own cgroup (the root of its cgroup namespace). */
	if (umount2(st->cg2, MNT_DETACH) < 0 || mount("cgroup2", st->cg2, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		child_fail(st->errpipe[1], 2, "cannot hide the host's cgroup2 mount %s: %s", st->cg2, strerror(errno));
	/* a /proc of the sandbox's own pid namespace */
	umount2("/proc", MNT_DETACH);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		child_fail(st->errpipe[1], 2, "cannot mount /proc for the sandbox's pid namespace: %s", strerror(errno));
	unix_hooks = st->cfg.have_unix;
	canary_audit = st->audit;
	canary(st->errpipe[1], (uint16_t)st->port, st->audit, st->foreign);
}

/* CMD's environment (in CMD's process, before exec): the proxy's URL, the
 * credentials' placeholders, the CA bundle's variables, --env. */
static void inside_env(struct run_state *st)
{
	if (st->cfg.have_proxy) {
		char url[64];

		/* where explicit-proxy clients find the sandbox's proxy */
		snprintf(url, sizeof(url), "http://127.0.0.1:%u", st->cfg.proxy4_port);
		setenv("SLUICE_PROXY", url, 1);
		if (st->o.proxy_env) {
			setenv("http_proxy", url, 1);
			setenv("https_proxy", url, 1);
			setenv("HTTP_PROXY", url, 1);
			setenv("HTTPS_PROXY", url, 1);
			unsetenv("no_proxy");
			unsetenv("NO_PROXY");
		}
	}
	/* the sandbox sees placeholders, never a secret */
	for (size_t i = 0; i < st->policy->n_credentials; i++) {
		const struct sluice_credential *cr = &st->policy->credentials[i];
		const struct sluice_secret *sec = sluice_secrets_find(&st->secrets, cr->name);

		if (cr->env && sec) {
			setenv(cr->env, sec->placeholder, 1);
			sluice_run_env_keep(&st->o.renv, cr->env);
		}
	}
	/* CMD's environment: the minimal one, what sluice set, --env */
	{
		char **envp;

		if (st->cfg.have_proxy)
			sluice_run_env_keep(&st->o.renv, "SLUICE_PROXY");
		else
			unsetenv("SLUICE_PROXY");
		if (st->cfg.have_proxy && st->o.proxy_env) {
			sluice_run_env_keep(&st->o.renv, "http_proxy");
			sluice_run_env_keep(&st->o.renv, "https_proxy");
			sluice_run_env_keep(&st->o.renv, "HTTP_PROXY");
			sluice_run_env_keep(&st->o.renv, "HTTPS_PROXY");
		}
		if (st->trust.bundle) {
			size_t n = 0;
			const char *const *names = sluice_trust_env_names(&n);

			for (size_t i = 0; i < n; i++)
				sluice_run_env_keep(&st->o.renv, names[i]);
		}
		envp = sluice_run_env_build(&st->o.renv);
		if (!envp)
			child_fail(st->errpipe[1], 2, "out of memory");
		environ = envp;
	}
}

void run_inside(struct run_state *st)
{
	char msg[512], go = 0;
	pid_t cmd_pid;

	inside_namespaces(st);
	/* tell the loader the canary is done; wait for its go-ahead */
	if (write(st->syncpipe[1], "c", 1) != 1 || read(st->gopipe[0], &go, 1) != 1 || go != 'g')
		_exit(2);
	close(st->syncpipe[1]);
	close(st->gopipe[0]);
	/*
	 * We are pid 1 of the sandbox's own pid namespace: CMD sees only
	 * its own processes in a fresh /proc, so no /proc/PID/root of a
	 * host process leads it back to the host's mount namespace (and
	 * its cgroup2 and bpffs mounts: docs/threat-model.md, F1 and F2).
	 * This process stays as the namespace's init: it reaps, forwards
	 * signals and exits with CMD's status.
	 */
	cmd_pid = fork();
	if (cmd_pid < 0)
		child_fail(st->errpipe[1], 2, "fork: %s", strerror(errno));
	if (cmd_pid > 0)
		sandbox_init(st->errpipe[1], cmd_pid);
	if (sluice_confine_enter(&st->o.conf, msg, sizeof(msg)) < 0)
		child_fail(st->errpipe[1], 2, "%s", msg);
	/* a non-root user has none left (sluice_confine_enter) */
	if (!st->o.keep_caps && st->o.conf.root && drop_caps() < 0)
		child_fail(st->errpipe[1], 2, "cannot drop capabilities: %s", strerror(errno));
	syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
	inside_env(st);
	execvp(st->o.cmd[0], st->o.cmd);
	child_fail(st->errpipe[1], 127, "cannot execute %s: %s", st->o.cmd[0], strerror(errno));
}
