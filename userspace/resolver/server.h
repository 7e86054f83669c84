/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server.h - the event loop side of sluice-resolver (libevent 2.1): UDP and
 * TCP listeners, the answer cache (cache.c), upstream queries over UDP (fresh
 * socket, random source port and ID per attempt, one retry) and TCP, and the
 * query log.  Every decision
 * is rsv_decide()/rsv_process_reply() (resolver.h).
 */
#ifndef SLUICE_RESOLVER_SERVER_H
#define SLUICE_RESOLVER_SERVER_H

#include <sys/socket.h>

#include <event2/event.h>

#include "resolver.h"

struct rsv_server_cfg {
	struct rsv_ctx ctx;               /* policy, mode, answer exceptions, tunnel state */
	struct rsv_logctx lc;             /* sandbox, policy, mode for every log line */
	int log_fd;                       /* JSON lines go here */
	struct sluice_evlog *log;         /* through this writer (on log_fd; not owned) */
	struct sockaddr_storage upstream; /* where allowed queries go */
	socklen_t upstream_len;
	unsigned timeout_ms;              /* per UDP attempt (default 2000) */
	unsigned tcp_timeout_ms;          /* per TCP attempt, and client idle (default 5000) */
	unsigned max_inflight;            /* upstream queries at once (default 1024; lowered by
					   * rsv_server_fit_descriptors) */
	unsigned max_tcp_clients;         /* default 256; at the limit the longest idle one is
					   * closed for a new one, else the new one refused */
	struct rsv_fair *fair;            /* per-client limit on denied names, drop counts (fair.h;
					   * not owned; NULL: none) */
	unsigned cache_size;              /* upstream replies kept (default 4096; 0: no cache) */
	unsigned cache_max_ttl;           /* seconds a reply is kept at most (default 300) */
	int flow_fd;                      /* the sandbox's sluice_flows (flow.h): which server a
					   * redirected query asked, who sent it; -1: none */
};

struct rsv_server;

/* Fill `c` with defaults (no policy, no fds, log to stdout). */
void rsv_server_cfg_default(struct rsv_server_cfg *c);

/* A server on `base` using `cfg` (kept by reference: it must outlive the
 * server), with a cache of cfg->cache_size replies.  NULL on ENOMEM. */
struct rsv_server *rsv_server_new(struct event_base *base, struct rsv_server_cfg *cfg);

/*
 * Serve DNS on `fd`, a bound UDP socket or a listening TCP socket
 * (inherited or opened with rsv_listen()).  The fd is made non-blocking and
 * is owned by the server from now on.  Returns 0, or -1 with errno set.
 */
int rsv_server_add_udp(struct rsv_server *s, int fd);
int rsv_server_add_tcp(struct rsv_server *s, int fd);

/* Open a UDP (`type` SOCK_DGRAM) or listening TCP (SOCK_STREAM) socket on
 * `sa`.  Returns the fd, or -1 with errno set. */
int rsv_listen(const struct sockaddr *sa, socklen_t len, int type);

/* Fit the TCP client limit and the upstream queries in flight (each holds
 * a descriptor) into what RLIMIT_NOFILE leaves beside the descriptors open
 * now, half each, 16 kept spare: at its limit the resolver sheds TCP
 * clients (counted, rsv_fair_count_tcp) and fails upstream queries with
 * SERVFAIL "overloaded" instead of running out of descriptors for UDP.
 * Call once the sockets and the log are open.  Never raises a limit. */
void rsv_server_fit_descriptors(struct rsv_server *s);

/* Is `sa` the local address of one of the server's sockets?  (An upstream
 * that is the resolver itself would forward each query to itself forever.) */
bool rsv_server_is_own_address(const struct rsv_server *s, const struct sockaddr *sa);

/* Drain (a reload's old resolver, SIGQUIT): read no new query from the
 * shared sockets (they stay open for the next resolver), answer and log
 * each one in flight and what each open TCP client sends in the next
 * second (then close it: a query on its way is answered, not reset), and
 * leave the event loop once none is left (the caller bounds it with a
 * deadline, then calls rsv_server_free). */
void rsv_server_drain(struct rsv_server *s);

/* Count what the kernel dropped on the UDP sockets since the last call
 * (receive queue full) into cfg->fair.  Called before each summary. */
void rsv_server_count_drops(struct rsv_server *s);

/* Stop serving: close every socket, answer nothing more (queries in flight
 * get SERVFAIL, reason "shutdown", and their line).  Frees s. */
void rsv_server_free(struct rsv_server *s);

#endif /* SLUICE_RESOLVER_SERVER_H */
