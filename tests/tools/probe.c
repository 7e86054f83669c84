// SPDX-License-Identifier: BSD-2-Clause
/*
 * sluice-probe - one network attempt, made exactly as a hostile program in
 * the sandbox would, with the outcome printed as one JSON line:
 *   {"op":"tcp","result":"ok","errno":0,"detail":"..."}
 * result is "ok" or the errno name (EPERM, ECONNREFUSED, ETIMEDOUT...).
 * Exit status 0 when result is "ok", 1 otherwise, 2 on usage errors.
 *
 * ops:
 *   tcp ADDR PORT              connect, send "ping\n", read the echo
 *   tcp-peer ADDR PORT         connect, print getpeername() as detail
 *   tcp-hold ADDR PORT SECONDS one connection, a round trip every 100 ms
 *   tcp-fastopen ADDR PORT     sendto(MSG_FASTOPEN) then read the echo
 *   udp ADDR PORT              sendto without connect, wait 1 s for the echo
 *   udp-connected ADDR PORT    connect + send + recv
 *   udp-connect-sendto A P A2 P2  connect to A:P, then sendto A2:P2
 *   sendmmsg ADDR PORT N       N datagrams in one sendmmsg()
 *   io-uring-connect ADDR PORT io_uring IORING_OP_CONNECT
 *   ping ADDR                  ICMP "ping" socket (SOCK_DGRAM, IPPROTO_ICMP[V6])
 *   raw ADDR                   raw ICMP socket
 *   thread-tcp ADDR PORT       tcp from a second thread
 *   child-tcp ADDR PORT        tcp from a forked child
 *   flood-udp ADDR PORT N      N denied sendto()s; detail = how many got EPERM
 *   flood-tcp ADDR PORT N      N denied connect()s; detail = how many got EPERM
 *   dns SERVER NAME            UDP A query to SERVER:53, detail = reply source and rcode
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *op;

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case EINVAL: return "EINVAL";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ECONNRESET: return "ECONNRESET";
	case EAGAIN: return "EAGAIN";
	case EINPROGRESS: return "EINPROGRESS";
	case ENOSYS: return "ENOSYS";
	case EPIPE: return "EPIPE";
	case ECONNABORTED: return "ECONNABORTED";
	default: return "EOTHER";
	}
}

static int report(int err, const char *detail)
{
	printf("{\"op\":\"%s\",\"result\":\"%s\",\"errno\":%d,\"detail\":\"%s\"}\n", op, errno_name(err), err,
	       detail ? detail : "");
	fflush(stdout);
	return err ? 1 : 0;
}

/* Parse ADDR PORT into a sockaddr; IPv6 literals (including ::ffff:) use AF_INET6. */
static socklen_t parse(const char *addr, const char *port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)atoi(port));
		if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
			exit(2);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)atoi(port));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
		exit(2);
	return sizeof(*s4);
}

static void set_timeouts(int fd, int sec)
{
	struct timeval tv = { .tv_sec = sec };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int read_echo(int fd, char *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len - 1, 0);

	if (n < 0)
		return errno == EAGAIN ? ETIMEDOUT : errno;
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\n' || buf[i] == '"' || buf[i] == '\\' || (unsigned char)buf[i] < 0x20)
			buf[i] = ' ';
	return n > 0 ? 0 : ECONNRESET;
}

static int do_tcp(const char *a, const char *p, char *detail, size_t dlen)
{
	struct sockaddr_storage ss;
	socklen_t sl = parse(a, p, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM, 0), err = 0;

	if (fd < 0)
		return errno;
	set_timeouts(fd, 3);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
		err = errno;
	else if (send(fd, "ping\n", 5, MSG_NOSIGNAL) < 0)
		err = errno;
	else
		err = read_echo(fd, detail, dlen);
	close(fd);
	return err;
}

struct targs {
	const char *a, *p;
	int err;
	char detail[256];
};

static void *thread_main(void *arg)
{
	struct targs *t = arg;

	t->err = do_tcp(t->a, t->p, t->detail, sizeof(t->detail));
	return NULL;
}

int main(int argc, char **argv)
{
	char detail[512] = "";
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd = -1, err = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: sluice-probe OP ARGS... (see the source header)\n");
		return 2;
	}
	op = argv[1];
	if (!strcmp(op, "tcp") && argc == 4) {
		err = do_tcp(argv[2], argv[3], detail, sizeof(detail));
		return report(err, detail);
	}
	if (!strcmp(op, "tcp-peer") && argc == 4) {
		struct sockaddr_storage peer;
		socklen_t pl = sizeof(peer);
		char ip[INET6_ADDRSTRLEN] = "";

		sl = parse(argv[2], argv[3], &ss);
		fd = socket(ss.ss_family, SOCK_STREAM, 0);
		set_timeouts(fd, 3);
		if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
			return report(errno, NULL);
		getpeername(fd, (struct sockaddr *)&peer, &pl);
		if (peer.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, ip, sizeof(ip));
		else
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&peer)->sin6_addr, ip, sizeof(ip));
		snprintf(detail, sizeof(detail), "%s %u", ip,
			 ntohs(peer.ss_family == AF_INET ? ((struct sockaddr_in *)&peer)->sin_port
							 : ((struct sockaddr_in6 *)&peer)->sin6_port));
		return report(0, detail);
	}
	if (!strcmp(op, "tcp-hold") && argc == 5) {
		/* one connection, a round trip every 100 ms for SECONDS: how long it lived */
		int ms = atoi(argv[4]) * 1000, trips = 0;
		char buf[64];

		sl = parse(argv[2], argv[3], &ss);
		fd = socket(ss.ss_family, SOCK_STREAM, 0);
		set_timeouts(fd, 3);
		if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
			return report(errno, "connect");
		printf("{\"op\":\"tcp-hold\",\"result\":\"connected\",\"errno\":0,\"detail\":\"\"}\n");
		fflush(stdout);
		for (int t = 0; t < ms; t += 100) {
			if (send(fd, "ping\n", 5, MSG_NOSIGNAL) < 0 || (err = read_echo(fd, buf, sizeof(buf))) != 0) {
				err = err ? err : errno;
				snprintf(detail, sizeof(detail), "after %d round trips", trips);
				return report(err, detail);
			}
			trips++;
			usleep(100000);
		}
		snprintf(detail, sizeof(detail), "%d round trips", trips);
		return report(0, detail);
	}
	if (!strcmp(op, "tcp-fastopen") && argc == 4) {
		sl = parse(argv[2], argv[3], &ss);
		fd = socket(ss.ss_family, SOCK_STREAM, 0);
		set_timeouts(fd, 3);
		if (sendto(fd, "ping\n", 5, MSG_FASTOPEN | MSG_NOSIGNAL, (struct sockaddr *)&ss, sl) < 0)
			return report(errno, NULL);
		return report(read_echo(fd, detail, sizeof(detail)), detail);
	}
	if ((!strcmp(op, "udp") || !strcmp(op, "udp-connected")) && argc == 4) {
		sl = parse(argv[2], argv[3], &ss);
		fd = socket(ss.ss_family, SOCK_DGRAM, 0);
		set_timeouts(fd, 1);
		if (!strcmp(op, "udp-connected")) {
			if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
				return report(errno, NULL);
			if (send(fd, "ping\n", 5, 0) < 0)
				return report(errno, NULL);
		} else if (sendto(fd, "ping\n", 5, 0, (struct sockaddr *)&ss, sl) < 0) {
			return report(errno, NULL);
		}
		return report(read_echo(fd, detail, sizeof(detail)), detail);
	}
	if (!strcmp(op, "udp-connect-sendto") && argc == 6) {
		struct sockaddr_storage s2;
		socklen_t l2;

		sl = parse(argv[2], argv[3], &ss);
		l2 = parse(argv[4], argv[5], &s2);
		fd = socket(ss.ss_family, SOCK_DGRAM, 0);
		set_timeouts(fd, 1);
		if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
			return report(errno, "connect");
		if (sendto(fd, "ping\n", 5, 0, (struct sockaddr *)&s2, l2) < 0)
			return report(errno, "sendto");
		return report(read_echo(fd, detail, sizeof(detail)), detail);
	}
	if (!strcmp(op, "sendmmsg") && argc == 5) {
		int n = atoi(argv[4]);
		struct mmsghdr msgs[64];
		struct iovec iov = { .iov_base = "ping\n", .iov_len = 5 };

		if (n < 1 || n > 64)
			return 2;
		sl = parse(argv[2], argv[3], &ss);
		fd = socket(ss.ss_family, SOCK_DGRAM, 0);
		set_timeouts(fd, 1);
		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < n; i++) {
			msgs[i].msg_hdr.msg_name = &ss;
			msgs[i].msg_hdr.msg_namelen = sl;
			msgs[i].msg_hdr.msg_iov = &iov;
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int r = sendmmsg(fd, msgs, n, 0);

		if (r < 0)
			return report(errno, NULL);
		snprintf(detail, sizeof(detail), "sent %d", r);
		return report(r == n ? 0 : EPERM, detail);
	}
	if (!strcmp(op, "io-uring-connect") && argc == 4) {
		struct io_uring ring;
		struct io_uring_sqe *sqe;
		struct io_uring_cqe *cqe;
		int r;

		sl = parse(argv[2], argv[3], &ss);
		fd = socket(ss.ss_family, SOCK_STREAM, 0);
		r = io_uring_queue_init(4, &ring, 0);
		if (r < 0)
			return report(-r == ENOSYS || -r == EPERM ? ENOSYS : -r, "io_uring unavailable");
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_connect(sqe, fd, (struct sockaddr *)&ss, sl);
		io_uring_submit(&ring);
		if (io_uring_wait_cqe(&ring, &cqe) < 0)
			return report(EINVAL, "wait");
		r = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		if (r < 0)
			return report(-r, NULL);
		set_timeouts(fd, 3);
		if (send(fd, "ping\n", 5, MSG_NOSIGNAL) < 0)
			return report(errno, NULL);
		return report(read_echo(fd, detail, sizeof(detail)), detail);
	}
	if (!strcmp(op, "ping") || !strcmp(op, "raw")) {
		int v6 = strchr(argv[2], ':') != NULL;

		fd = socket(v6 ? AF_INET6 : AF_INET, !strcmp(op, "raw") ? SOCK_RAW : SOCK_DGRAM,
			    v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
		if (fd < 0)
			return report(errno, "socket");
		close(fd);
		return report(0, "socket created");
	}
	if ((!strcmp(op, "thread-tcp") || !strcmp(op, "child-tcp")) && argc == 4) {
		struct targs t = { .a = argv[2], .p = argv[3] };

		if (!strcmp(op, "thread-tcp")) {
			pthread_t th;

			pthread_create(&th, NULL, thread_main, &t);
			pthread_join(th, NULL);
			return report(t.err, t.detail);
		}
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			op = "child-tcp";
			err = do_tcp(argv[2], argv[3], detail, sizeof(detail));
			_exit(report(err, detail));
		}
		waitpid(pid, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
	if ((!strcmp(op, "flood-udp") || !strcmp(op, "flood-tcp")) && argc == 5) {
		long n = atol(argv[4]), eperm = 0, other = 0;
		int udp = !strcmp(op, "flood-udp");

		sl = parse(argv[2], argv[3], &ss);
		if (udp)
			fd = socket(ss.ss_family, SOCK_DGRAM, 0);
		for (long i = 0; i < n; i++) {
			int r;

			if (udp) {
				r = (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, sl);
			} else {
				fd = socket(ss.ss_family, SOCK_STREAM, 0);
				r = connect(fd, (struct sockaddr *)&ss, sl);
			}
			if (r < 0 && errno == EPERM)
				eperm++;
			else
				other++;
			if (!udp)
				close(fd);
		}
		snprintf(detail, sizeof(detail), "%ld", eperm);
		return report(other ? EINVAL : 0, detail);
	}
	if (!strcmp(op, "dns") && argc == 4) {
		/* minimal A query for NAME, id 0x1234, RD */
		unsigned char q[300] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0 };
		size_t ql = 12;
		const char *name = argv[3];
		unsigned char r[1500];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		char ip[INET6_ADDRSTRLEN] = "";

		while (*name) {
			const char *dot = strchr(name, '.');
			size_t l = dot ? (size_t)(dot - name) : strlen(name);

			if (l == 0 || l > 63 || ql + l + 6 > sizeof(q))
				return 2;
			q[ql++] = (unsigned char)l;
			memcpy(q + ql, name, l);
			ql += l;
			name += l + (dot ? 1 : 0);
		}
		q[ql++] = 0;
		q[ql++] = 0;
		q[ql++] = 1;
		q[ql++] = 0;
		q[ql++] = 1;
		sl = parse(argv[2], "53", &ss);
		fd = socket(ss.ss_family, SOCK_DGRAM, 0);
		set_timeouts(fd, 3);
		if (sendto(fd, q, ql, 0, (struct sockaddr *)&ss, sl) < 0)
			return report(errno, NULL);
		ssize_t n = recvfrom(fd, r, sizeof(r), 0, (struct sockaddr *)&from, &fl);

		if (n < 0)
			return report(errno == EAGAIN ? ETIMEDOUT : errno, NULL);
		if (from.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&from)->sin_addr, ip, sizeof(ip));
		else
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&from)->sin6_addr, ip, sizeof(ip));
		snprintf(detail, sizeof(detail), "from %s %u rcode %d ancount %d", ip,
			 ntohs(from.ss_family == AF_INET ? ((struct sockaddr_in *)&from)->sin_port
							 : ((struct sockaddr_in6 *)&from)->sin6_port),
			 n >= 4 ? r[3] & 0xf : -1, n >= 8 ? (r[6] << 8 | r[7]) : -1);
		return report(0, detail);
	}
	fprintf(stderr, "sluice-probe: unknown op or wrong arguments: %s\n", op);
	return 2;
}
