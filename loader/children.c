/* SPDX-License-Identifier: BSD-2-Clause */
#include "children.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "credentials.h"
#include "evlog.h"
#include "labels.h"
#include "log.h"
#include "run_limits.h"
#include "zygote.h"

static int listen_on(int family, int type, uint16_t port, uint16_t *bound)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	fd = socket(family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		s4->sin_port = htons(port);
		sl = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		s6->sin6_port = htons(port);
		sl = sizeof(*s6);
	}
	if (type == SOCK_STREAM)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 ||
	    (type == SOCK_STREAM && listen(fd, SLUICE_LISTEN_BACKLOG) < 0) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	*bound = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					 : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static void set_v6_fallback(__u32 a[4], __u32 v4)
{
	a[0] = 0;
	a[1] = 0;
	a[2] = htonl(0x0000ffff);
	a[3] = v4;
}

/* Open the resolver's UDP+TCP pair on one port: `want` (0: any; retry on
 * a clash between the UDP and TCP ephemeral ranges). */
static int open_dns(int family, int *udp, int *tcp, uint16_t want, uint16_t *port)
{
	for (int tries = 0; tries < 16; tries++) {
		uint16_t p = 0, q = 0;
		int u = listen_on(family, SOCK_DGRAM, want, &p);
		int t;

		if (u < 0)
			return u;
		t = listen_on(family, SOCK_STREAM, p, &q);
		if (t >= 0) {
			*udp = u;
			*tcp = t;
			*port = p;
			return 0;
		}
		close(u);
		if (t != -EADDRINUSE || want)
			return t;
	}
	return -EADDRINUSE;
}

int sluice_listeners_open(struct sluice_listeners *l, const char *netns_path, int want_proxy,
			  int want_dns, struct sluice_bpf_config *cfg, char *msg, size_t msglen)
{
	int self_ns = -1, target_ns = -1, err = 0;
	uint16_t port = 0;

	l->proxy4 = l->proxy6 = l->dns_udp4 = l->dns_udp6 = l->dns_tcp4 = l->dns_tcp6 = -1;
	if (netns_path) {
		self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		target_ns = open(netns_path, O_RDONLY | O_CLOEXEC);
		if (self_ns < 0 || target_ns < 0) {
			err = -errno;
			snprintf(msg, msglen, "cannot open network namespace %s: %s", netns_path, strerror(errno));
			goto out;
		}
		if (setns(target_ns, CLONE_NEWNET) < 0) {
			err = -errno;
			snprintf(msg, msglen, "cannot enter network namespace %s: %s", netns_path, strerror(errno));
			goto out;
		}
	}
	/* cfg's ports, when set, are the ones to bind again (a restarted daemon
	 * re-creating the listeners of a pinned sandbox); 0 picks any */
	uint16_t want_p4 = cfg->proxy4_port, want_p6 = cfg->proxy6_port;
	uint16_t want_d4 = cfg->dns4_port, want_d6 = cfg->dns6_port;
	int v6_mapped_p = cfg->proxy6_addr[2] == htonl(0x0000ffff);
	int v6_mapped_d = cfg->dns6_addr[2] == htonl(0x0000ffff);

	if (want_proxy) {
		l->proxy4 = listen_on(AF_INET, SOCK_STREAM, want_p4, &port);
		if (l->proxy4 < 0) {
			err = l->proxy4;
			snprintf(msg, msglen, "cannot listen for the proxy on 127.0.0.1 (is loopback up in the sandbox's netns?): %s",
				 strerror(-err));
			goto out;
		}
		cfg->have_proxy = 1;
		cfg->proxy4_addr = htonl(INADDR_LOOPBACK);
		cfg->proxy4_port = port;
		l->proxy6 = want_p4 && v6_mapped_p ? -1 : listen_on(AF_INET6, SOCK_STREAM, want_p6, &port);
		if (l->proxy6 >= 0) {
			memcpy(cfg->proxy6_addr, &in6addr_loopback, 16);
			cfg->proxy6_port = port;
		} else {
			set_v6_fallback(cfg->proxy6_addr, cfg->proxy4_addr);
			cfg->proxy6_port = cfg->proxy4_port;
		}
	}
	if (want_dns) {
		err = open_dns(AF_INET, &l->dns_udp4, &l->dns_tcp4, want_d4, &port);
		if (err) {
			snprintf(msg, msglen, "cannot listen for the resolver on 127.0.0.1: %s", strerror(-err));
			goto out;
		}
		cfg->have_dns = 1;
		cfg->dns4_addr = htonl(INADDR_LOOPBACK);
		cfg->dns4_port = port;
		if (!(want_d4 && v6_mapped_d) && open_dns(AF_INET6, &l->dns_udp6, &l->dns_tcp6, want_d6, &port) == 0) {
			memcpy(cfg->dns6_addr, &in6addr_loopback, 16);
			cfg->dns6_port = port;
		} else {
			set_v6_fallback(cfg->dns6_addr, cfg->dns4_addr);
			cfg->dns6_port = cfg->dns4_port;
		}
		err = 0;
	}
out:
	if (self_ns >= 0) {
		if (setns(self_ns, CLONE_NEWNET) < 0 && !err) {
			err = -errno;
			snprintf(msg, msglen, "cannot return to own network namespace: %s", strerror(errno));
		}
		close(self_ns);
	}
	if (target_ns >= 0)
		close(target_ns);
	if (err)
		sluice_listeners_close(l);
	return err;
}

void sluice_listeners_close(struct sluice_listeners *l)
{
	int *fds[] = { &l->proxy4, &l->proxy6, &l->dns_udp4, &l->dns_udp6, &l->dns_tcp4, &l->dns_tcp6 };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

void sluice_listeners_close_role(struct sluice_listeners *l, int proxy)
{
	int *px[] = { &l->proxy4, &l->proxy6 };
	int *dn[] = { &l->dns_udp4, &l->dns_udp6, &l->dns_tcp4, &l->dns_tcp6 };
	int **fds = proxy ? px : dn;
	size_t n = proxy ? 2 : 4;

	for (size_t i = 0; i < n; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int sluice_listeners_mark(const struct sluice_listeners *l, int map_fd, char *msg, size_t msglen)
{
	const struct {
		int fd;
		__u32 role;
	} all[] = {
		{ l->proxy4, SLUICE_LISTENER_PROXY }, { l->proxy6, SLUICE_LISTENER_PROXY },
		{ l->dns_udp4, SLUICE_LISTENER_DNS }, { l->dns_udp6, SLUICE_LISTENER_DNS },
		{ l->dns_tcp4, SLUICE_LISTENER_DNS }, { l->dns_tcp6, SLUICE_LISTENER_DNS },
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct sluice_listener_mark m = { .role = all[i].role };
		int fd = all[i].fd;

		if (fd < 0)
			continue;
		if (bpf_map_update_elem(map_fd, &fd, &m, BPF_ANY) < 0) {
			int err = -errno;

			snprintf(msg, msglen, "cannot mark listener fd %d as sluice's own (socket storage, kernel 5.2+): %s",
				 fd, strerror(errno));
			return err;
		}
	}
	return 0;
}

bool sluice_restart_allowed(struct sluice_restarts *r, uint64_t now_ms)
{
	if (r->in_window == 0 || now_ms - r->window_start_ms >= SLUICE_RESTART_WINDOW_MS) {
		r->window_start_ms = now_ms;
		r->in_window = 0;
	}
	if (r->in_window >= SLUICE_RESTART_MAX)
		return false;
	r->in_window++;
	r->total++;
	return true;
}

#ifndef SLUICE_LIBEXECDIR
#define SLUICE_LIBEXECDIR "/usr/local/libexec/sluice"
#endif

const char *sluice_helper_path(const char *name, char *buf, size_t len, char *tried, size_t tried_len)
{
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	/* 1. the installed helpers (make install: $(LIBEXECDIR)/sluice) */
	snprintf(buf, len, "%s/%s", SLUICE_LIBEXECDIR, name);
	if (tried)
		snprintf(tried, tried_len, "%s", buf);
	if (access(buf, X_OK) == 0)
		return buf;
	/* 2. beside the binary (the build tree) */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	snprintf(buf, len, "%s/%s", self, name);
	if (tried) {
		size_t used = strlen(tried);

		snprintf(tried + used, tried_len - used, ", %s", buf);
	}
	return access(buf, X_OK) == 0 ? buf : NULL;
}

/* A pipe holding `pem` whole (the read end for the child, the write end
 * closed): the CA reaches the proxy before it starts, and only it.
 * Returns 0 or -errno. */
static int ca_pipe(const char *pem, int *rfd)
{
	size_t n = strlen(pem);
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if ((n >= 65536 && fcntl(p[1], F_SETPIPE_SZ, (int)n + 1) < 0) || sluice_write_all(p[1], pem, n) < 0) {
		int e = errno ? errno : EIO;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	close(p[1]);
	*rfd = p[0];
	return 0;
}

/* The command line of one child as it is built: argv points into the
 * buffers here; keep[] are the descriptors it inherits across exec; the
 * pipes and memfd made for it, closed by child_cmd_close(). */
struct child_cmd {
	char *argv[96];
	int argc;
	char num[16][16];           /* descriptor numbers as text */
	int n_num;
	char policyfd[32];
	char labelbuf[SLUICE_LABELS_MAX][SLUICE_LABEL_KEY_MAX + SLUICE_LABEL_VALUE_MAX + 2];
	int keep[16];
	int n_keep;
	int ready[2], cafd, upfd, secfd;
};

static void cmd_arg(struct child_cmd *c, const char *flag, const char *value)
{
	c->argv[c->argc++] = (char *)flag;
	c->argv[c->argc++] = (char *)value;
}

/* `flag N` for the descriptor fd, which the child inherits. */
static void cmd_fd(struct child_cmd *c, const char *flag, int fd)
{
	snprintf(c->num[c->n_num], sizeof(c->num[c->n_num]), "%d", fd);
	cmd_arg(c, flag, c->num[c->n_num++]);
	c->keep[c->n_keep++] = fd;
}

static void child_cmd_close(struct child_cmd *c)
{
	int *fds[] = { &c->ready[0], &c->ready[1], &c->cafd, &c->upfd, &c->secfd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* The options every child takes: its sockets, the flow map, the policy,
 * where it runs and logs, the labels and container fields, the mode. */
static void cmd_common(struct child_cmd *c, bool is_proxy, const struct sluice_listeners *l,
		       const struct sluice_child_opts *o)
{
	const int sock[] = { l->proxy4, l->proxy6, l->dns_udp4, l->dns_udp6, l->dns_tcp4, l->dns_tcp6 };
	const char *flag[] = { "--listen-fd", "--listen-fd", "--udp-fd", "--udp-fd", "--tcp-fd", "--tcp-fd" };

	for (int i = is_proxy ? 0 : 2; i < (is_proxy ? 2 : 6); i++)
		if (sock[i] >= 0)
			cmd_fd(c, flag[i], sock[i]);
	if (o->flow_map)
		cmd_arg(c, "--flow-map", o->flow_map);
	if (is_proxy && o->tunnel_maps)
		cmd_arg(c, "--tunnel-maps", o->tunnel_maps);
	if (o->policy_fd > 0) {
		snprintf(c->policyfd, sizeof(c->policyfd), "/dev/fd/%d", o->policy_fd);
		cmd_arg(c, "--policy", c->policyfd);
		c->keep[c->n_keep++] = o->policy_fd;
	} else if (o->policy_path) {
		cmd_arg(c, "--policy", o->policy_path);
	}
	if (o->policy_digest)
		cmd_arg(c, "--policy-digest", o->policy_digest);
	if (is_proxy && o->policy_next)
		cmd_arg(c, "--policy-next", o->policy_next);
	if (o->netns_path)
		cmd_arg(c, "--netns", o->netns_path);
	if (o->sandbox)
		cmd_arg(c, "--sandbox", o->sandbox);
	if (o->log_fd > 0)
		cmd_fd(c, "--log-fd", o->log_fd);
	if (o->seq_fd > 0)
		cmd_fd(c, "--seq-fd", o->seq_fd);
	for (size_t i = 0; o->labels && i < o->labels->n && i < SLUICE_LABELS_MAX; i++) {
		snprintf(c->labelbuf[i], sizeof(c->labelbuf[i]), "%s=%s", o->labels->key[i], o->labels->value[i]);
		cmd_arg(c, "--label", c->labelbuf[i]);
	}
	if (o->upstream_dns)
		cmd_arg(c, "--upstream-dns", o->upstream_dns);
	if (o->mode)
		cmd_arg(c, "--mode", o->mode);
	if (o->container_id)
		cmd_arg(c, "--container-id", o->container_id);
	if (o->container_name)
		cmd_arg(c, "--container-name", o->container_name);
	if (o->container_runtime)
		cmd_arg(c, "--container-runtime", o->container_runtime);
	if (o->ocsf)
		cmd_arg(c, "--events-format", "ocsf");
}

/* What is handed over as content: the sandbox CA and the upstream CAs
 * (proxy) in pipes, the credentials in a sealed memfd.  Returns 0, or
 * -errno with msg set. */
static int cmd_content(struct child_cmd *c, bool is_proxy, const struct sluice_child_opts *o, char *msg,
		       size_t msglen)
{
	int err;

	if (is_proxy && o->ca) {
		err = ca_pipe(o->ca, &c->cafd);
		if (err < 0) {
			snprintf(msg, msglen, "cannot hand the sandbox CA to the proxy: %s", strerror(-err));
			return err;
		}
		cmd_fd(c, "--ca-fd", c->cafd);
	}
	if (is_proxy && o->upstream_ca && o->upstream_ca[0]) {
		err = ca_pipe(o->upstream_ca, &c->upfd);
		if (err < 0) {
			snprintf(msg, msglen, "cannot hand the upstream CA certificates to the proxy: %s", strerror(-err));
			return err;
		}
		cmd_fd(c, "--upstream-ca-fd", c->upfd);
	}
	if (o->secrets && o->secrets->n) {
		/* content, not paths: the proxy never opens a secret file */
		c->secfd = sluice_secrets_to_memfd(o->secrets, is_proxy);
		if (c->secfd < 0) {
			err = c->secfd;
			snprintf(msg, msglen, "cannot hand the credentials over: %s", strerror(-err));
			return err;
		}
		cmd_fd(c, "--secrets-fd", c->secfd);
	}
	return 0;
}

/* poll(2) for POLLIN on fd for at most timeout_ms, through signals (the
 * daemon's handlers interrupt it).  Returns poll's answer: 1, 0, -1. */
static int poll_in(int fd, int timeout_ms)
{
	uint64_t end = sluice_monotonic_ms() + (uint64_t)timeout_ms;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	int r;

	while ((r = poll(&pf, 1, timeout_ms)) < 0 && errno == EINTR) {
		uint64_t now = sluice_monotonic_ms();

		timeout_ms = now >= end ? 0 : (int)(end - now);
	}
	return r;
}

pid_t sluice_child_wait_ready(const char *binary, pid_t pid, int rfd, int timeout_ms, char *msg, size_t msglen)
{
	char buf[16] = "";
	int r = poll_in(rfd, timeout_ms);

	if (r > 0)
		r = (int)read(rfd, buf, sizeof(buf) - 1);
	close(rfd);
	if (r <= 0 || strncmp(buf, "ready", 5) != 0) {
		sluice_child_abandon(pid, -1);
		snprintf(msg, msglen, "%s did not become ready%s", binary, r == 0 ? " (timed out or exited)" : "");
		return -EIO;
	}
	return pid;
}

/* What the child of child_spawn() needs: all of it the parent's memory,
 * which the child shares until its exec. */
struct spawn_arg {
	const char *binary;
	const struct child_cmd *c;
	sigset_t mask;              /* the parent's signal mask, the child's again before exec */
};

/* The child's side: no stdio, no malloc (the parent's memory is its own). */
static int child_exec(void *p)
{
	const struct spawn_arg *a = p;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	static const char fail[] = "sluice: cannot execute the proxy or resolver: ";

	/* a handler of the parent's must not run here (CLONE_VM, without
	 * CLONE_SIGHAND: the table is the child's copy) */
	for (int sig = 1; sig < _NSIG; sig++) {
		struct sigaction old;

		if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
			sigaction(sig, &dfl, NULL);
	}
	sigprocmask(SIG_SETMASK, &a->mask, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the listeners, the ready pipe and what was handed over stay open across exec */
	for (int i = 0; i < a->c->n_keep; i++)
		fcntl(a->c->keep[i], F_SETFD, 0);
	execv(a->binary, a->c->argv);
	/* errno as digits: strerror() is not for a child sharing the parent's memory */
	char num[32] = " (errno ";
	size_t n = 8 + sluice_u64_dec(num + 8, (uint64_t)errno);

	num[n++] = ')';
	num[n++] = '\n';
	if (write(2, fail, sizeof(fail) - 1) >= 0 && write(2, a->binary, strlen(a->binary)) >= 0)
		(void)!write(2, num, n);
	_exit(127);
}

/*
 * Fork and exec c's command without copying the parent's page tables:
 * clone(CLONE_VM | CLONE_VFORK), as posix_spawn does, with what posix_spawn
 * cannot do (PR_SET_PDEATHSIG, descriptors kept across exec).  A fork of a
 * daemon holding hundreds of sandboxes copied the page tables of every
 * event ring buffer it maps (about 18 ms a fork at 300 sandboxes, two
 * forks an attach).  The parent waits until the child has exec'd (or
 * exited).  Returns the pid or -errno.
 */
static pid_t child_spawn(const char *binary, const struct child_cmd *c)
{
	const size_t stack_size = 64 * 1024;
	struct spawn_arg a = { .binary = binary, .c = c };
	sigset_t all;
	void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pid_t pid;
	int err = 0;

	if (stack == MAP_FAILED)
		return -errno;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &a.mask);
	pid = clone(child_exec, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	if (pid < 0)
		err = -errno;
	sigprocmask(SIG_SETMASK, &a.mask, NULL);
	munmap(stack, stack_size);
	return pid < 0 ? err : pid;
}

/* The zygotes (userspace/lib/zygote.h): one per binary, started at the
 * first spawn after sluice_child_zygotes(); sock < 0: none running. */
static struct zygote {
	char binary[PATH_MAX];
	int sock;
	int pidfd;                 /* signalled through, never by pid: no pid reuse */
	struct stat st;            /* the binary it was exec'd from */
} zygotes[2] = { { .sock = -1, .pidfd = -1 }, { .sock = -1, .pidfd = -1 } };
static bool zygotes_on;

int sluice_child_zygotes(void)
{
	/* the zygote's grandchildren become ours when their parent exits */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return -errno;
	zygotes_on = true;
	return 0;
}

#ifndef P_PIDFD
#define P_PIDFD 3   /* Linux 5.4 */
#endif

/* Forget z, kill it (a zygote that did not answer in time may hang) and
 * reap it now: a start-up or a SIGHUP that renews many would otherwise
 * leave zombies counting against the unit's tasks until the next tick. */
static void zygote_stop(struct zygote *z)
{
	if (z->sock >= 0)
		close(z->sock);
	z->sock = -1;
	if (z->pidfd >= 0) {
		siginfo_t si;

		syscall(SYS_pidfd_send_signal, z->pidfd, SIGKILL, NULL, 0);
		while (waitid((idtype_t)P_PIDFD, (id_t)z->pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
		close(z->pidfd);
	}
	z->pidfd = -1;
}

void sluice_child_zygotes_renew(void)
{
	for (size_t i = 0; i < 2; i++)
		zygote_stop(&zygotes[i]);
}

/* Exec `binary --zygote FD PAD` (a clean process: nothing of ours but
 * the socket).  Returns 0 or -errno. */
static int zygote_start(struct zygote *z, const char *binary)
{
	static char pad[SLUICE_ZYGOTE_TITLE - 64];
	struct child_cmd c = { .ready = { -1, -1 }, .cafd = -1, .upfd = -1, .secfd = -1 };
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	memset(pad, ' ', sizeof(pad) - 1);
	c.argv[c.argc++] = (char *)binary;
	cmd_fd(&c, "--zygote", sv[1]);
	c.argv[c.argc++] = pad;
	c.argv[c.argc] = NULL;
	if (stat(binary, &z->st) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	pid = child_spawn(binary, &c);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return (int)pid;
	}
	z->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (z->pidfd < 0) {
		int err = -errno;

		kill(pid, SIGKILL);   /* not reaped yet: still its pid */
		close(sv[0]);
		return err;
	}
	snprintf(z->binary, sizeof(z->binary), "%s", binary);
	z->sock = sv[0];
	return 0;
}

/* Has `binary` been replaced since z was exec'd from it (a package
 * upgrade)?  Then z goes, and the next child comes from a fresh one. */
static bool zygote_stale(const struct zygote *z, const char *binary)
{
	struct stat st;

	return stat(binary, &st) < 0 || st.st_dev != z->st.st_dev || st.st_ino != z->st.st_ino ||
	       st.st_mtim.tv_sec != z->st.st_mtim.tv_sec || st.st_mtim.tv_nsec != z->st.st_mtim.tv_nsec;
}

/* c's command forked by the zygote z: one request, one reply (5 s at
 * most), then the child's go-ahead.  Returns the pid (our child), or
 * -errno: the zygote's own answer (fork refused, the child gone before
 * its go-ahead: z is kept, z->sock >= 0), or no answer that can be
 * trusted (no reply, a short one, -EMFILE: z is stopped, z->sock < 0, and
 * the next spawn starts another).  A child forked meanwhile sees its
 * go-ahead pipe closed and exits. */
static pid_t zygote_spawn(struct zygote *z, const struct child_cmd *c)
{
	static char buf[SLUICE_ZYGOTE_MSG_MAX];
	struct sluice_zygote_req *h = (void *)buf;
	union {
		char buf[CMSG_SPACE((SLUICE_ZYGOTE_FDS_MAX + 1) * sizeof(int))];
		struct cmsghdr align;
	} cm;
	int fds[SLUICE_ZYGOTE_FDS_MAX + 1], go[2];
	size_t off = sizeof(*h), nfds = (size_t)c->n_keep + 1;
	struct iovec iov = { .iov_base = buf };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
	struct cmsghdr *cmsg;
	int32_t reply = -EIO;
	bool trusted = false;

	if (c->n_keep > SLUICE_ZYGOTE_FDS_MAX || c->argc > SLUICE_ZYGOTE_ARGV_MAX)
		return -E2BIG;
	memset(h, 0, sizeof(*h));
	h->magic = SLUICE_ZYGOTE_MAGIC;
	h->n_fds = (uint32_t)c->n_keep;
	for (int i = 0; i < c->n_keep; i++)
		h->target[i] = fds[i] = c->keep[i];
	for (int i = 0; i < c->argc; i++) {
		size_t n = strlen(c->argv[i]) + 1;

		if (off + n > sizeof(buf))
			return -E2BIG;
		memcpy(buf + off, c->argv[i], n);
		off += n;
	}
	iov.iov_len = off;
	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	fds[c->n_keep] = go[0];
	memset(&cm, 0, sizeof(cm));
	cmsg = CMSG_FIRSTHDR(&mh);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
	if (sendmsg(z->sock, &mh, MSG_NOSIGNAL) != (ssize_t)off)
		reply = -(errno ? errno : EIO);
	else if (poll_in(z->sock, 5000) != 1)
		reply = -ETIMEDOUT;
	else if (recv(z->sock, &reply, sizeof(reply), 0) != (ssize_t)sizeof(reply))
		reply = -EIO;
	else
		/* a pid or the zygote's -errno; -EMFILE: a target over its
		 * RLIMIT_NOFILE, which a fresh zygote takes from ours again */
		trusted = reply != 0 && reply != -EMFILE;
	close(go[0]);
	if (reply > 0 && write(go[1], "g", 1) != 1)
		reply = -EPIPE;    /* the child is gone: reaped as a stranger */
	close(go[1]);
	if (!trusted)
		zygote_stop(z);
	return reply ? reply : -EIO;
}

/* Start c's command: forked by the zygote of `binary` where zygotes are
 * on (one started if none runs, a second try on a fresh one when the
 * first gave no answer), else, or if that fails, exec'd by child_spawn()
 * (said at most once every ten seconds, with the count since). */
static pid_t spawn(const char *binary, const struct child_cmd *c)
{
	static uint64_t said_ms;
	static unsigned unsaid;
	struct zygote *z = NULL;
	uint64_t now;
	int err = 0;

	if (!zygotes_on)
		return child_spawn(binary, c);
	for (size_t i = 0; i < 2 && !z; i++)
		if (zygotes[i].sock >= 0 && strcmp(zygotes[i].binary, binary) == 0)
			z = &zygotes[i];
	for (size_t i = 0; i < 2 && !z; i++)
		if (zygotes[i].sock < 0)
			z = &zygotes[i];
	for (int attempt = 0; z && attempt < 2; attempt++) {
		pid_t pid;

		if (z->sock >= 0 && zygote_stale(z, binary))
			zygote_stop(z);
		if (z->sock < 0 && (err = zygote_start(z, binary)) < 0)
			break;
		pid = zygote_spawn(z, c);
		if (pid > 0)
			return pid;
		err = (int)pid;
		if (z->sock >= 0)
			break;   /* its own answer: a fresh zygote would not do better */
	}
	unsaid++;
	now = sluice_monotonic_ms();
	if (!said_ms || now - said_ms >= 10000) {
		log_warnx("%s: not forked by a zygote (%s); exec'd instead (each child its own copy of the "
			  "libraries' data; %u child(ren) exec'd so since the last such line)", binary,
			  z ? strerror(-err) : "more binaries than zygotes", unsaid);
		said_ms = now;
		unsaid = 0;
	}
	return child_spawn(binary, c);
}

pid_t sluice_child_spawn(const char *binary, const struct sluice_listeners *l, const struct sluice_child_opts *o,
			 int *ready_fd, char *msg, size_t msglen)
{
	struct child_cmd c = { .cafd = -1, .upfd = -1, .secfd = -1 };
	const char *base = strrchr(binary, '/') ? strrchr(binary, '/') + 1 : binary;
	bool is_proxy = strstr(base, "proxy") != NULL;
	pid_t pid;
	int err;

	if (pipe2(c.ready, O_CLOEXEC) < 0) {
		snprintf(msg, msglen, "pipe: %s", strerror(errno));
		return -errno;
	}
	c.argv[c.argc++] = (char *)binary;
	cmd_common(&c, is_proxy, l, o);
	err = cmd_content(&c, is_proxy, o, msg, msglen);
	if (err < 0) {
		child_cmd_close(&c);
		return err;
	}
	cmd_fd(&c, "--ready-fd", c.ready[1]);
	for (int i = 0; o->extra && o->extra[i] && c.argc < 94; i++)
		c.argv[c.argc++] = o->extra[i];
	c.argv[c.argc] = NULL;

	pid = spawn(binary, &c);
	if (pid < 0) {
		err = -pid;
		snprintf(msg, msglen, "clone: %s", strerror(err));
		child_cmd_close(&c);
		return -err;
	}
	*ready_fd = c.ready[0];
	c.ready[0] = -1;
	child_cmd_close(&c);
	return pid;
}

void sluice_child_abandon(pid_t pid, int ready_fd)
{
	if (pid <= 0)
		return;
	if (ready_fd >= 0)
		close(ready_fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

pid_t sluice_child_start(const char *binary, const struct sluice_listeners *l,
			 const struct sluice_child_opts *o, int timeout_ms, char *msg, size_t msglen)
{
	int rfd = -1;
	pid_t pid = sluice_child_spawn(binary, l, o, &rfd, msg, msglen);

	return pid < 0 ? pid : sluice_child_wait_ready(binary, pid, rfd, timeout_ms, msg, msglen);
}

int sluice_children_start(const char *proxy_bin, const struct sluice_child_opts *proxy_co,
			  const char *resolver_bin, const struct sluice_child_opts *resolver_co,
			  const struct sluice_listeners *l, int timeout_ms, pid_t *proxy_pid, pid_t *resolver_pid,
			  char *msg, size_t msglen)
{
	pid_t proxy = 0, resolver = 0;
	int proxy_ready = -1, resolver_ready = -1;

	*proxy_pid = *resolver_pid = 0;
	if (proxy_co) {
		proxy = sluice_child_spawn(proxy_bin, l, proxy_co, &proxy_ready, msg, msglen);
		if (proxy < 0)
			return -1;
	}
	if (resolver_co) {
		resolver = sluice_child_spawn(resolver_bin, l, resolver_co, &resolver_ready, msg, msglen);
		if (resolver < 0) {
			sluice_child_abandon(proxy, proxy_ready);
			return -1;
		}
	}
	if (proxy > 0 && sluice_child_wait_ready(proxy_bin, proxy, proxy_ready, timeout_ms, msg, msglen) < 0) {
		sluice_child_abandon(resolver, resolver_ready);
		return -1;
	}
	if (resolver > 0 &&
	    sluice_child_wait_ready(resolver_bin, resolver, resolver_ready, timeout_ms, msg, msglen) < 0) {
		sluice_child_abandon(proxy, -1);   /* ready: its pipe is closed */
		return -1;
	}
	*proxy_pid = proxy;
	*resolver_pid = resolver;
	return 0;
}
