// SPDX-License-Identifier: BSD-2-Clause
/*
 * netbench - servers and clients for the proxy and resolver scenarios of
 * `make bench` (bench/run.sh builds it; bench/scen_proxy.py drives it).
 * IPv4 only; every address is given on the command line (the bench uses
 * loopback and documentation addresses inside its own namespaces).
 *
 *   netbench origin --listen ADDR:PORT [--body BYTES] [--ready FILE]
 *       HTTP/1.1 origin: every request (any method, any target) gets
 *       "200 OK" with BYTES bytes of body (default 64), keep-alive.
 *       One thread, epoll, thousands of connections.
 *   netbench source --listen ADDR:PORT --bytes N [--ready FILE]
 *       bulk source: every accepted connection gets N bytes, then EOF
 *       (a child process per connection).
 *   netbench bulk --to ADDR:PORT [--connect HOST:PORT] --bytes N
 *       read N bytes from ADDR:PORT (via an HTTP CONNECT to HOST:PORT
 *       first, if given: ADDR:PORT is then a proxy); prints
 *       {"bytes":..,"seconds":..,"mb_per_s":..}
 *   netbench idle --to ADDR:PORT --n N --request STRING [--ready FILE]
 *       open N connections to ADDR:PORT, send STRING (with \r\n escapes
 *       expanded) on each and read one complete response (for a CONNECT
 *       request: the 200 head; the tunnel then stays idle), then hold them
 *       all open and idle until SIGTERM; after a second FILE gets "OK OPEN":
 *       how many got a 200 response and how many the peer has not closed
 *   netbench dns --server ADDR:PORT --names FILE --seconds S [--window W]
 *       UDP DNS load: A queries for the names of FILE (one per line) in
 *       turn, W outstanding at a time; prints queries/s and latency
 *       percentiles (answers with any rcode count; timeouts after 1 s are
 *       reported as lost)
 *
 * Exit status: 0 ok, 1 the measurement failed, 2 usage or environment error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_PROG "netbench"
#include "benchutil.h"

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: netbench origin|source|bulk|idle|dns ... (see bench/netbench.c)\n");
	exit(2);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void touch(const char *path, const char *text)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "we");
	if (!f)
		die(path);
	fputs(text, f);
	fclose(f);
}

static int listener(const char *spec)
{
	struct sockaddr_in sin;
	int fd, one = 1;

	if (parse_addr(spec, &sin) < 0)
		usage();
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("bind");
	if (listen(fd, 4096) < 0)
		die("listen");
	return fd;
}

static int dial(const struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* --- origin ----------------------------------------------------------------- */

struct oconn {
	int fd;
	size_t have;
	char buf[8192];
};

static int cmd_origin(int argc, char **argv)
{
	const char *ready = NULL, *listen_on = NULL;
	long body = 64;
	char resp[66000];
	int rlen, lfd, ep;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			listen_on = argv[++i];
		else if (!strcmp(argv[i], "--body") && i + 1 < argc)
			body = atol(argv[++i]);
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else
			usage();
	}
	if (!listen_on || body < 0 || body > 65000)
		usage();
	raise_nofile();
	rlen = snprintf(resp, sizeof(resp),
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %ld\r\n\r\n", body);
	memset(resp + rlen, 'x', (size_t)body);
	rlen += (int)body;
	lfd = listener(listen_on);
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

		epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	}
	touch(ready, "ready\n");
	for (;;) {
		struct epoll_event evs[256];
		int n = epoll_wait(ep, evs, 256, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			struct oconn *c = evs[i].data.ptr;

			if (!c) {
				int fd, one = 1;

				while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					struct epoll_event ev = { .events = EPOLLIN };

					c = calloc(1, sizeof(*c));
					if (!c) {
						close(fd);
						continue;
					}
					c->fd = fd;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					ev.data.ptr = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			for (;;) {
				ssize_t r = read(c->fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have);
				char *end;

				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
					close(c->fd);
					free(c);
					break;
				}
				if (r < 0)
					break;
				c->have += (size_t)r;
				c->buf[c->have] = 0;
				/* answer every complete request head (pipelining too) */
				while ((end = strstr(c->buf, "\r\n\r\n")) != NULL) {
					size_t used = (size_t)(end + 4 - c->buf);

					if (write(c->fd, resp, (size_t)rlen) != rlen) {
						/* a small response into an empty socket buffer: a short write means the peer is gone */
					}
					memmove(c->buf, c->buf + used, c->have - used + 1);
					c->have -= used;
				}
				if (c->have >= sizeof(c->buf) - 1) {
					close(c->fd);
					free(c);
					break;
				}
			}
		}
	}
}

/* --- source ---------------------------------------------------------------------- */

static int cmd_source(int argc, char **argv)
{
	const char *ready = NULL, *listen_on = NULL;
	long long bytes = 0;
	static char chunk[1 << 16];
	int lfd;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			listen_on = argv[++i];
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			bytes = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else
			usage();
	}
	if (!listen_on || bytes <= 0)
		usage();
	signal(SIGCHLD, SIG_IGN);
	memset(chunk, 'z', sizeof(chunk));
	lfd = listener(listen_on);
	touch(ready, "ready\n");
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		if (fork() == 0) {
			long long left = bytes;

			close(lfd);
			while (left > 0) {
				ssize_t w = write(c, chunk, left < (long long)sizeof(chunk) ? (size_t)left : sizeof(chunk));

				if (w <= 0)
					_exit(1);
				left -= w;
			}
			shutdown(c, SHUT_WR);
			/* wait for the peer's close so nothing is reset in flight */
			while (read(c, chunk, sizeof(chunk)) > 0)
				;
			_exit(0);
		}
		close(c);
	}
}

/* Read an HTTP response head from fd; returns the status code or -1. */
static int read_head(int fd, char *buf, size_t len, size_t *extra_off, size_t *extra_len)
{
	size_t have = 0;

	while (have < len - 1) {
		ssize_t r = read(fd, buf + have, len - 1 - have);
		char *end;

		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
		if (end) {
			int code = 0;

			if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
				return -1;
			*extra_off = (size_t)(end + 4 - buf);
			*extra_len = have - *extra_off;
			return code;
		}
	}
	return -1;
}

/* --- bulk -------------------------------------------------------------------------- */

static int cmd_bulk(int argc, char **argv)
{
	const char *to = NULL, *via_connect = NULL;
	long long bytes = 0, got = 0;
	static char buf[1 << 17];
	struct sockaddr_in sin;
	double t0, t1;
	int fd;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--to") && i + 1 < argc)
			to = argv[++i];
		else if (!strcmp(argv[i], "--connect") && i + 1 < argc)
			via_connect = argv[++i];
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			bytes = atoll(argv[++i]);
		else
			usage();
	}
	if (!to || bytes <= 0 || parse_addr(to, &sin) < 0)
		usage();
	t0 = now_s();
	fd = dial(&sin);
	if (fd < 0)
		die("connect");
	if (via_connect) {
		char req[512];
		size_t off, extra;
		int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", via_connect, via_connect);
		int code;

		if (write(fd, req, (size_t)n) != n)
			die("write CONNECT");
		code = read_head(fd, buf, 4096, &off, &extra);
		if (code != 200) {
			fprintf(stderr, "netbench: CONNECT %s: status %d\n", via_connect, code);
			return 1;
		}
		got = (long long)extra;
	}
	while (got < bytes) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += r;
	}
	t1 = now_s();
	close(fd);
	printf("{\"bytes\":%lld,\"seconds\":%.6f,\"mb_per_s\":%.1f}\n", got, t1 - t0, (double)got / 1e6 / (t1 - t0));
	return got >= bytes ? 0 : 1;
}

/* --- idle ------------------------------------------------------------------------------ */

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = sig;
}

static int cmd_idle(int argc, char **argv)
{
	const char *to = NULL, *ready = NULL, *reqspec = NULL;
	char req[2048], buf[70000], status[64];
	struct sockaddr_in sin;
	long n = 0, ok = 0;
	size_t rl = 0;
	int *fds;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--to") && i + 1 < argc)
			to = argv[++i];
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = atol(argv[++i]);
		else if (!strcmp(argv[i], "--request") && i + 1 < argc)
			reqspec = argv[++i];
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else
			usage();
	}
	if (!to || n < 1 || !reqspec || parse_addr(to, &sin) < 0)
		usage();
	for (const char *p = reqspec; *p && rl < sizeof(req) - 1; p++) {
		if (p[0] == '\\' && p[1] == 'r') {
			req[rl++] = '\r';
			p++;
		} else if (p[0] == '\\' && p[1] == 'n') {
			req[rl++] = '\n';
			p++;
		} else {
			req[rl++] = *p;
		}
	}
	raise_nofile();
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	/* WORKERS processes open the connections side by side (a proxy may
	 * take milliseconds per new connection); each holds its own share */
	{
		enum { WORKERS = 16 };
		int pfd[2];
		pid_t kids[WORKERS];
		long tot_ok = 0, tot_open = 0;

		if (pipe(pfd) < 0)
			die("pipe");
		for (int k = 0; k < WORKERS; k++) {
			long share = n / WORKERS + (k < n % WORKERS);

			kids[k] = fork();
			if (kids[k] < 0)
				die("fork");
			if (kids[k] > 0)
				continue;
			close(pfd[0]);
			fds = calloc((size_t)share + 1, sizeof(int));
			if (!fds)
				_exit(2);
			for (long i = 0; i < share && !stop; i++) {
				size_t off, extra;
				int code;

				fds[i] = dial(&sin);
				if (fds[i] < 0)
					continue;
				if (write(fds[i], req, rl) != (ssize_t)rl) {
					close(fds[i]);
					fds[i] = -1;
					continue;
				}
				code = read_head(fds[i], buf, sizeof(buf), &off, &extra);
				if (code == 200 && !strncmp(req, "CONNECT ", 8)) {
					ok++;
				} else if (code == 200) {
					/* the body is small: read up to Content-Length */
					const char *cl = strcasestr(buf, "\r\ncontent-length:");
					long want = cl ? atol(cl + 17) : 0;

					while ((long)extra < want) {
						ssize_t r = read(fds[i], buf, sizeof(buf));

						if (r <= 0)
							break;
						extra += (size_t)r;
					}
					ok++;
				}
			}
			sleep(1);
			{
				long open_ = 0, res[2];

				for (long i = 0; i < share; i++) {
					char c;

					/* still open: nothing to read and no EOF */
					if (fds[i] > 0 && recv(fds[i], &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN)
						open_++;
				}
				res[0] = ok;
				res[1] = open_;
				if (write(pfd[1], res, sizeof(res)) != sizeof(res))
					_exit(2);
			}
			while (!stop)
				pause();
			_exit(0);
		}
		close(pfd[1]);
		for (int k = 0; k < WORKERS; k++) {
			long res[2];

			if (read(pfd[0], res, sizeof(res)) == sizeof(res)) {
				tot_ok += res[0];
				tot_open += res[1];
			}
		}
		snprintf(status, sizeof(status), "%ld %ld\n", tot_ok, tot_open);
		touch(ready, status);
		while (!stop)
			pause();
		for (int k = 0; k < WORKERS; k++) {
			kill(kids[k], SIGTERM);
			waitpid(kids[k], NULL, 0);
		}
		return 0;
	}
}

/* --- dns -------------------------------------------------------------------------------- */

static int encode_query(uint8_t *out, uint16_t id, const char *name)
{
	int n = 12;
	const char *p = name;

	memset(out, 0, 12);
	out[0] = id >> 8;
	out[1] = id & 0xff;
	out[2] = 0x01; /* RD */
	out[5] = 1;    /* QDCOUNT */
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (l == 0 || l > 63 || n + (int)l + 6 > 512)
			return -1;
		out[n++] = (uint8_t)l;
		memcpy(out + n, p, l);
		n += (int)l;
		p += l;
		if (*p == '.')
			p++;
	}
	out[n++] = 0;
	out[n++] = 0;
	out[n++] = 1; /* A */
	out[n++] = 0;
	out[n++] = 1; /* IN */
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmd_dns(int argc, char **argv)
{
	const char *server = NULL, *names_path = NULL;
	double seconds = 0;
	long window = 32;
	struct sockaddr_in sin;
	char **names = NULL, line[300];
	size_t nnames = 0, cap = 0, next = 0;
	FILE *f;
	int fd;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--server") && i + 1 < argc)
			server = argv[++i];
		else if (!strcmp(argv[i], "--names") && i + 1 < argc)
			names_path = argv[++i];
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--window") && i + 1 < argc)
			window = atol(argv[++i]);
		else
			usage();
	}
	if (!server || !names_path || seconds <= 0 || window < 1 || window > 60000 || parse_addr(server, &sin) < 0)
		usage();
	f = fopen(names_path, "re");
	if (!f)
		die(names_path);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0])
			continue;
		if (nnames == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				die("realloc");
		}
		names[nnames++] = strdup(line);
	}
	fclose(f);
	if (!nnames)
		usage();
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	/* connect(): replies from elsewhere are dropped by the kernel.  Under
	 * sluice the kernel redirects to the resolver and recvmsg/getpeername
	 * make the replies look as if they came from SERVER. */
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("connect");
	{
		int sz = 4 << 20;
		struct timeval tv = { 0, 100000 };

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}

	/* id -> send time (0 = free) */
	static double sent_at[65536];
	size_t lat_cap = 1 << 20, nlat = 0;
	double *lat = malloc(lat_cap * sizeof(double));
	long outstanding = 0, lost = 0, bad = 0, sent = 0, not_noerror = 0;
	uint16_t id = 1;
	double t0 = now_s(), end = t0 + seconds, t;

	if (!lat)
		die("malloc");
	while ((t = now_s()) < end) {
		uint8_t q[512], r[1500];
		ssize_t n;

		while (outstanding < window) {
			int len;

			while (sent_at[id] != 0 || id == 0)
				id++;
			len = encode_query(q, id, names[next++ % nnames]);
			if (len < 0)
				usage();
			if (send(fd, q, (size_t)len, 0) != len) {
				if (errno == EPERM || errno == ECONNREFUSED) {
					fprintf(stderr, "netbench: send: %s\n", strerror(errno));
					return 1;
				}
				break;
			}
			sent_at[id] = now_s();
			id++;
			outstanding++;
			sent++;
		}
		n = recv(fd, r, sizeof(r), 0);
		if (n >= 12) {
			uint16_t rid = (uint16_t)(r[0] << 8 | r[1]);

			if (sent_at[rid] != 0) {
				if ((r[3] & 0x0f) != 0)
					not_noerror++;  /* answered, but refused or failed */
				if (nlat < lat_cap)
					lat[nlat++] = now_s() - sent_at[rid];
				sent_at[rid] = 0;
				outstanding--;
			} else {
				bad++;
			}
		}
		/* expire queries unanswered for a second */
		if (n < 0 || (sent & 1023) == 0) {
			double now = now_s();

			for (int i = 1; i < 65536; i++) {
				if (sent_at[i] != 0 && now - sent_at[i] > 1.0) {
					sent_at[i] = 0;
					outstanding--;
					lost++;
				}
			}
		}
	}
	t = now_s() - t0;
	qsort(lat, nlat, sizeof(double), cmp_double);
	printf("{\"seconds\":%.3f,\"answered\":%zu,\"qps\":%.1f,\"lost\":%ld,\"unmatched\":%ld,"
	       "\"not_noerror\":%ld,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
	       t, nlat, (double)nlat / t, lost, bad, not_noerror, nlat ? lat[nlat / 2] * 1e6 : 0.0,
	       nlat ? lat[(size_t)((double)nlat * 0.99)] * 1e6 : 0.0);
	return nlat ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(argv[1], "origin"))
		return cmd_origin(argc, argv);
	if (!strcmp(argv[1], "source"))
		return cmd_source(argc, argv);
	if (!strcmp(argv[1], "bulk"))
		return cmd_bulk(argc, argv);
	if (!strcmp(argv[1], "idle"))
		return cmd_idle(argc, argv);
	if (!strcmp(argv[1], "dns"))
		return cmd_dns(argc, argv);
	usage();
}
