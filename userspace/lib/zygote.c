/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zygote.c - the zygote's side (zygote.h): serve fork requests, and make
 * each child what an exec by the daemon would have made.
 */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static char req_buf[SLUICE_ZYGOTE_MSG_MAX];
static char *child_argv[SLUICE_ZYGOTE_ARGV_MAX + 1];

static bool is_target(const int32_t *target, unsigned n, int fd)
{
	for (unsigned i = 0; i < n; i++)
		if (target[i] == fd)
			return true;
	return false;
}

/* The child's descriptors at the numbers its command line names: each
 * received one (close-on-exec, anywhere) that sits on another's target
 * moved to the lowest number no target names (no higher than needed: the
 * targets are below RLIMIT_NOFILE), then dup2'd onto its target, which
 * clears close-on-exec as the exec'd child had it.  The copies made on
 * free targets while searching are each replaced by that dup2.  Returns 0
 * or -errno. */
static int place_fds(int *fds, const int32_t *target, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int m = 3, nfd;

		if (fds[i] == target[i] || !is_target(target, n, fds[i]))
			continue;
		for (;;) {
			nfd = fcntl(fds[i], F_DUPFD_CLOEXEC, m);
			if (nfd < 0)
				return -errno;
			if (!is_target(target, n, nfd))
				break;
			/* a target not yet taken: kept while searching */
			m = nfd + 1;
		}
		close(fds[i]);
		fds[i] = nfd;
	}
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] == target[i]) {
			if (fcntl(fds[i], F_SETFD, 0) < 0)
				return -errno;
			continue;
		}
		if (dup2(fds[i], target[i]) < 0)
			return -errno;
		close(fds[i]);
	}
	return 0;
}

/* Write argv (NUL-separated) over the zygote's own command line, the rest
 * zeroed: /proc/PID/cmdline and ps show the child's options. */
static void set_title(char *area, size_t len, char *const *argv)
{
	size_t off = 0;

	memset(area, 0, len);
	for (int i = 0; argv[i] && off + 1 < len; i++) {
		size_t n = strlen(argv[i]) + 1;

		if (n > len - 1 - off)
			n = len - 1 - off;
		memcpy(area + off, argv[i], n);
		off += n;
	}
}

/* In the grandchild: wait until the intermediate's exit made it the
 * daemon's (EOF on `gone`, the pipe only the intermediate held, then
 * the reparenting, which follows the closing of its files), then die
 * with the daemon.  False: the daemon is gone. */
static bool adopt_by(pid_t daemon, pid_t mid, int gone)
{
	char b;
	pid_t pp;

	while (read(gone, &b, 1) < 0 && errno == EINTR)
		;
	close(gone);
	while ((pp = getppid()) == mid)
		sched_yield();
	if (pp != daemon)
		return false;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	return getppid() == daemon;
}

/* The daemon's go-ahead on `go`, once it knows the child's pid: one
 * byte.  EOF (it gave up on this request: a timeout, a signal) means
 * exit, so that no child the daemon does not know of ever serves. */
static bool go_ahead(int go)
{
	char b;
	ssize_t r;

	while ((r = read(go, &b, 1)) < 0 && errno == EINTR)
		;
	close(go);
	return r == 1;
}

/* Close every descriptor from 3 up but the n targets.  0, or -1 when
 * close_range(2) (Linux 5.9) was refused: then some may still be open. */
static int close_others(const int32_t *target, unsigned n)
{
	unsigned lo = 3;

	for (;;) {
		unsigned next = ~0U;

		for (unsigned i = 0; i < n; i++)
			if ((unsigned)target[i] >= lo && (unsigned)target[i] < next)
				next = (unsigned)target[i];
		if (next > lo && close_range(lo, next == ~0U ? ~0U : next - 1, 0) < 0)
			return -1;
		if (next == ~0U)
			return 0;
		lo = next + 1;
	}
}

/* One request: its descriptors (the targets', then the go-ahead pipe),
 * its argv.  Returns the number of targets' descriptors (in fds, *go the
 * pipe) and sets *argc, or -errno (every descriptor closed). */
static int parse_req(struct msghdr *mh, ssize_t n, int *fds, int *go, int *argc)
{
	const struct sluice_zygote_req *h = (const void *)req_buf;
	struct rlimit rl;
	int nfds = 0, ac = 0, err = -EINVAL;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds < SLUICE_ZYGOTE_FDS_MAX + 1)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	/* another layout (a daemon older or newer than this binary) */
	if ((size_t)n < sizeof(h->magic) || h->magic != SLUICE_ZYGOTE_MAGIC) {
		err = -EPROTO;
		goto bad;
	}
	if ((size_t)n < sizeof(*h) + 1 || h->n_fds > SLUICE_ZYGOTE_FDS_MAX ||
	    h->n_fds + 1 != (uint32_t)nfds || (mh->msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || req_buf[n - 1] != 0)
		goto bad;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = 1024;
	for (unsigned i = 0; i < h->n_fds; i++) {
		if (h->target[i] < 3)
			goto bad;
		/* a limit raised in the daemon since: a fresh zygote has it */
		if ((rlim_t)h->target[i] >= rl.rlim_cur) {
			err = -EMFILE;
			goto bad;
		}
	}
	for (char *p = req_buf + sizeof(*h); p < req_buf + n; p += strlen(p) + 1) {
		if (ac == SLUICE_ZYGOTE_ARGV_MAX)
			goto bad;
		child_argv[ac++] = p;
	}
	child_argv[ac] = NULL;
	if (ac == 0)
		goto bad;
	*argc = ac;
	*go = fds[nfds - 1];
	return nfds - 1;
bad:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return err;
}

int sluice_zygote_serve(int *argc, char ***argv)
{
	char **av = *argv;
	pid_t daemon = getppid();
	char *title;
	size_t title_len;
	int ctl;

	if (*argc != 4 || strcmp(av[1], "--zygote") != 0)
		return 0;
	ctl = atoi(av[2]);
	if (ctl < 3 || fcntl(ctl, F_SETFD, FD_CLOEXEC) < 0)
		_exit(2);
	/* nothing of the daemon's but the socket, whatever it left open (a
	 * zygote that cannot be sure of that exits: the daemon execs instead) */
	if ((ctl > 3 && close_range(3, (unsigned)ctl - 1, 0) < 0) || close_range((unsigned)ctl + 1, ~0U, 0) < 0)
		_exit(2);
	title = av[0];
	title_len = (size_t)(av[3] + strlen(av[3]) + 1 - av[0]);
	for (;;) {
		union {
			char buf[CMSG_SPACE((SLUICE_ZYGOTE_FDS_MAX + 1) * sizeof(int))];
			struct cmsghdr align;
		} cm;
		struct iovec iov = { .iov_base = req_buf, .iov_len = sizeof(req_buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
				     .msg_controllen = sizeof(cm.buf) };
		int fds[SLUICE_ZYGOTE_FDS_MAX + 1], nfds, go = -1, ac = 0;
		int32_t reply;
		pid_t mid;
		int p[2];
		ssize_t n = recvmsg(ctl, &mh, MSG_CMSG_CLOEXEC);

		if (n == 0)
			_exit(0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		nfds = parse_req(&mh, n, fds, &go, &ac);
		reply = nfds < 0 ? nfds : 0;
		if (nfds >= 0 && pipe2(p, O_CLOEXEC) < 0)
			reply = -errno;
		if (reply == 0) {
			mid = fork();
			if (mid == 0) {
				pid_t self = getpid(), child;
				int q[2];

				close(ctl);
				close(p[0]);
				if (pipe2(q, O_CLOEXEC) < 0)
					_exit(1);
				child = fork();
				if (child == 0) {
					const struct sluice_zygote_req *h = (const void *)req_buf;

					close(p[1]);
					close(q[1]);
					if (!adopt_by(daemon, self, q[0]) || !go_ahead(go) ||
					    place_fds(fds, h->target, (unsigned)nfds) < 0 ||
					    close_others(h->target, (unsigned)nfds) < 0)
						_exit(127);
					set_title(title, title_len, child_argv);
					*argc = ac;
					*argv = child_argv;
					return 1;
				}
				reply = child > 0 ? child : -errno;
				(void)!write(p[1], &reply, sizeof(reply));
				_exit(0);
			}
			close(p[1]);
			if (mid < 0) {
				reply = -errno;
			} else {
				if (read(p[0], &reply, sizeof(reply)) != (ssize_t)sizeof(reply))
					reply = -EIO;
				while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
					;
			}
			close(p[0]);
		}
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (go >= 0)
			close(go);
		/* the next child gets no trace of this one's command line */
		memset(req_buf, 0, (size_t)n);
		if (send(ctl, &reply, sizeof(reply), MSG_NOSIGNAL) < 0)
			_exit(1);
	}
}
