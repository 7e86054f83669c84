/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchutil.h - the pieces every bench client shares (bench/connect_bench.c,
 * bench/netbench.c, bench/tlsbench.c; each is built on its own by
 * bench/run.sh).  Define BENCH_PROG (the program's name, for messages)
 * before including it.
 */
#ifndef SLUICE_BENCHUTIL_H
#define SLUICE_BENCHUTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* `what` failed (errno says why): a message on stderr, exit status 2. */
static inline void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, BENCH_PROG ": %s: %s\n", what, strerror(errno));
	exit(2);
}

/* "A.B.C.D:PORT" (IPv4, port 1-65535) into *sin.  0, or -1 when malformed. */
static inline int parse_addr(const char *s, struct sockaddr_in *sin)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return -1;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
