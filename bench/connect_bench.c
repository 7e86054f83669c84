// SPDX-License-Identifier: BSD-2-Clause
/*
 * connect_bench - the connect() cost benchmark of `make bench` (bench/run.sh).
 *
 *   connect_bench serve --listen ADDR:PORT [--listen ADDR:PORT]... [--ready FILE]
 *       accept and close every connection, forever (SIGTERM ends it)
 *
 *   connect_bench run --target ADDR:PORT --n N --blocks B [--warmup W]
 *                     [--netns PATH] [--settle-ms MS]
 *                     --variant NAME,cg=PATH[,netns=PATH][,target=ADDR:PORT][,expect=ok|eperm|refused]
 *                               [,stop=PID][,probe=ADDR:PORT=RESULT]...
 *       B rounds; in each round every variant runs one block of N
 *       socket()+connect()+close() in turn (the order rotates every round),
 *       after the process moved itself into the variant's cgroup (by
 *       writing its pid to PATH/cgroup.procs) and, with netns=, into the
 *       variant's network namespace (setns; --netns is the default, and
 *       --target the default target).  Variants are therefore
 *       interleaved in one process, under one CPU state.  `expect` is what
 *       every connect must give (ok: connected; eperm: refused by the
 *       filter; refused: ECONNREFUSED); a block with any other outcome is
 *       an error.  `stop=PID` sends SIGSTOP to PID before the variant's
 *       block and SIGCONT after it (the event consumer "off").  `probe`
 *       makes one connect to ADDR:PORT before the first round and checks
 *       its outcome (ok, EPERM, ECONNREFUSED): proof that the variant's
 *       filter is in force.
 *       Prints one JSON object: per variant the ns per connect of each
 *       block, in round order, and the count of unexpected outcomes.
 *
 * Closing uses SO_LINGER {1, 0} (an RST, no TIME_WAIT), so a long run never
 * runs out of ephemeral ports on loopback.
 *
 * Exit status: 0 ok, 1 an unexpected outcome or failed probe, 2 usage or
 * environment error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BENCH_PROG "connect_bench"
#include "benchutil.h"

#define MAX_VARIANTS 32
#define MAX_LISTEN   8

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: connect_bench serve --listen ADDR:PORT... [--ready FILE]\n"
		"       connect_bench run --target ADDR:PORT --n N --blocks B [--warmup W] [--netns PATH]\n"
		"                         [--settle-ms MS] --variant NAME,cg=PATH[,netns=PATH][,target=ADDR:PORT]\n"
		"                         [,expect=ok|eperm|refused][,stop=PID][,probe=ADDR:PORT=ok|EPERM|ECONNREFUSED]...\n");
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- serve ---------------------------------------------------------------- */

static int cmd_serve(int argc, char **argv)
{
	struct sockaddr_in sin;
	const char *ready = NULL;
	int lfd[MAX_LISTEN], nl = 0, ep, one = 1;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc && nl < MAX_LISTEN) {
			if (parse_addr(argv[++i], &sin) < 0)
				usage();
			lfd[nl] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (lfd[nl] < 0)
				die("socket");
			setsockopt(lfd[nl], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(lfd[nl], (struct sockaddr *)&sin, sizeof(sin)) < 0)
				die("bind");
			if (listen(lfd[nl], 4096) < 0)
				die("listen");
			nl++;
		} else if (!strcmp(argv[i], "--ready") && i + 1 < argc) {
			ready = argv[++i];
		} else {
			usage();
		}
	}
	if (!nl)
		usage();
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	for (int i = 0; i < nl; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd[i] };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd[i], &ev) < 0)
			die("epoll_ctl");
	}
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0)
			die("ready file");
		close(fd);
	}
	for (;;) {
		struct epoll_event evs[MAX_LISTEN];
		int n = epoll_wait(ep, evs, MAX_LISTEN, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			int c;

			/* drain the accept queue; the client already reset most of them */
			while ((c = accept4(evs[i].data.fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
				close(c);
		}
	}
}

/* --- run ------------------------------------------------------------------- */

enum expect { EXPECT_OK, EXPECT_EPERM, EXPECT_REFUSED };

struct variant {
	char name[64];
	char cg[512];
	int procs_fd;
	char netns[512];
	int netns_fd;
	int has_target;
	struct sockaddr_in target;
	enum expect expect;
	pid_t stop_pid;
	int has_probe;
	struct sockaddr_in probe;
	char probe_want[32];
	double *ns;              /* per block */
	uint64_t unexpected;
	char first_unexpected[64];
};

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case ECONNRESET: return "ECONNRESET";
	case ENETUNREACH: return "ENETUNREACH";
	default: return strerror(e);
	}
}

/* One attempt: 0 if connected, else the errno. */
static int attempt(const struct sockaddr_in *to)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r, e = 0;

	if (fd < 0)
		return errno;
	r = connect(fd, (const struct sockaddr *)to, sizeof(*to));
	if (r < 0)
		e = errno;
	else
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	return e;
}

static int outcome_ok(enum expect x, int e)
{
	switch (x) {
	case EXPECT_OK: return e == 0;
	case EXPECT_EPERM: return e == EPERM;
	case EXPECT_REFUSED: return e == ECONNREFUSED;
	}
	return 0;
}

static void enter_cgroup(struct variant *v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (pwrite(v->procs_fd, buf, (size_t)n, 0) != n) {
		fprintf(stderr, "connect_bench: cannot move into %s: %s\n", v->cg, strerror(errno));
		exit(2);
	}
}

/* Enter the variant's network namespace unless this thread is already there. */
static void enter_netns(struct variant *v, int *cur_fd)
{
	if (v->netns_fd < 0 || v->netns_fd == *cur_fd)
		return;
	if (setns(v->netns_fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "connect_bench: setns %s: %s\n", v->netns, strerror(errno));
		exit(2);
	}
	*cur_fd = v->netns_fd;
}

static int parse_variant(char *spec, struct variant *v)
{
	char *save = NULL, *tok;
	int first = 1;

	memset(v, 0, sizeof(*v));
	v->procs_fd = -1;
	v->netns_fd = -1;
	for (tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save), first = 0) {
		if (first) {
			snprintf(v->name, sizeof(v->name), "%s", tok);
		} else if (!strncmp(tok, "cg=", 3)) {
			snprintf(v->cg, sizeof(v->cg), "%s", tok + 3);
		} else if (!strncmp(tok, "netns=", 6)) {
			snprintf(v->netns, sizeof(v->netns), "%s", tok + 6);
		} else if (!strncmp(tok, "target=", 7)) {
			if (parse_addr(tok + 7, &v->target) < 0)
				return -1;
			v->has_target = 1;
		} else if (!strcmp(tok, "expect=ok")) {
			v->expect = EXPECT_OK;
		} else if (!strcmp(tok, "expect=eperm")) {
			v->expect = EXPECT_EPERM;
		} else if (!strcmp(tok, "expect=refused")) {
			v->expect = EXPECT_REFUSED;
		} else if (!strncmp(tok, "stop=", 5)) {
			v->stop_pid = (pid_t)atoi(tok + 5);
		} else if (!strncmp(tok, "probe=", 6)) {
			char *eq = strrchr(tok + 6, '=');

			if (!eq)
				return -1;
			*eq = 0;
			if (parse_addr(tok + 6, &v->probe) < 0)
				return -1;
			snprintf(v->probe_want, sizeof(v->probe_want), "%s", eq + 1);
			v->has_probe = 1;
		} else {
			return -1;
		}
	}
	return v->name[0] && v->cg[0] ? 0 : -1;
}

static int cmd_run(int argc, char **argv)
{
	static struct variant vs[MAX_VARIANTS];
	struct sockaddr_in target;
	const char *netns = NULL;
	long n = 0, blocks = 0, warmup = 200, settle_ms = 0;
	int nv = 0, have_target = 0, rc = 0, default_netns_fd = -1, cur_netns_fd = -1;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--target") && i + 1 < argc) {
			if (parse_addr(argv[++i], &target) < 0)
				usage();
			have_target = 1;
		} else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
			n = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
			blocks = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
			warmup = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--settle-ms") && i + 1 < argc) {
			settle_ms = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--netns") && i + 1 < argc) {
			netns = argv[++i];
		} else if (!strcmp(argv[i], "--variant") && i + 1 < argc && nv < MAX_VARIANTS) {
			if (parse_variant(argv[++i], &vs[nv]) < 0)
				usage();
			nv++;
		} else {
			usage();
		}
	}
	if (n < 1 || blocks < 1 || nv < 1 || warmup < 0)
		usage();
	for (int i = 0; i < nv; i++) {
		if (!vs[i].has_target) {
			if (!have_target)
				usage();
			vs[i].target = target;
		}
	}

	/* cgroup.procs first, while this process still sees the host's /sys */
	for (int i = 0; i < nv; i++) {
		char path[600];

		snprintf(path, sizeof(path), "%s/cgroup.procs", vs[i].cg);
		vs[i].procs_fd = open(path, O_WRONLY | O_CLOEXEC);
		if (vs[i].procs_fd < 0)
			die(path);
		vs[i].ns = calloc((size_t)blocks, sizeof(double));
		if (!vs[i].ns)
			die("calloc");
	}
	if (netns) {
		default_netns_fd = open(netns, O_RDONLY | O_CLOEXEC);
		if (default_netns_fd < 0)
			die(netns);
	}
	for (int i = 0; i < nv; i++) {
		if (vs[i].netns[0]) {
			vs[i].netns_fd = open(vs[i].netns, O_RDONLY | O_CLOEXEC);
			if (vs[i].netns_fd < 0)
				die(vs[i].netns);
		} else {
			vs[i].netns_fd = default_netns_fd;
		}
	}

	/* proof that each variant's filter is what we think it is */
	for (int i = 0; i < nv; i++) {
		if (!vs[i].has_probe)
			continue;
		enter_cgroup(&vs[i]);
		enter_netns(&vs[i], &cur_netns_fd);
		const char *got = errno_name(attempt(&vs[i].probe));

		if (strcmp(got, vs[i].probe_want) != 0) {
			fprintf(stderr, "connect_bench: probe of variant %s: got %s, want %s\n", vs[i].name, got,
				vs[i].probe_want);
			rc = 1;
		}
	}
	if (rc)
		return rc;

	for (long b = 0; b < blocks; b++) {
		for (int k = 0; k < nv; k++) {
			struct variant *v = &vs[(b + k) % nv];
			uint64_t t0, t1;

			enter_cgroup(v);
			enter_netns(v, &cur_netns_fd);
			for (long i = 0; i < warmup; i++)
				(void)attempt(&v->target);
			if (v->stop_pid > 0 && kill(v->stop_pid, SIGSTOP) < 0)
				die("kill SIGSTOP");
			t0 = now_ns();
			for (long i = 0; i < n; i++) {
				int e = attempt(&v->target);

				if (!outcome_ok(v->expect, e)) {
					if (!v->unexpected++)
						snprintf(v->first_unexpected, sizeof(v->first_unexpected), "%s",
							 errno_name(e));
				}
			}
			t1 = now_ns();
			if (v->stop_pid > 0 && kill(v->stop_pid, SIGCONT) < 0)
				die("kill SIGCONT");
			v->ns[b] = (double)(t1 - t0) / (double)n;
			if (settle_ms > 0) {
				struct timespec ts = { settle_ms / 1000, (settle_ms % 1000) * 1000000L };

				nanosleep(&ts, NULL);
			}
		}
	}

	printf("{\"n\":%ld,\"blocks\":%ld,\"warmup\":%ld,\"variants\":{", n, blocks, warmup);
	for (int i = 0; i < nv; i++) {
		printf("%s\"%s\":{\"ns\":[", i ? "," : "", vs[i].name);
		for (long b = 0; b < blocks; b++)
			printf("%s%.1f", b ? "," : "", vs[i].ns[b]);
		printf("],\"unexpected\":%llu,\"first_unexpected\":\"%s\"}", (unsigned long long)vs[i].unexpected,
		       vs[i].first_unexpected);
		if (vs[i].unexpected)
			rc = 1;
	}
	printf("}}\n");
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc, argv);
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc, argv);
	usage();
}
