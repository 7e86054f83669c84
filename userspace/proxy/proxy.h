/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxy.h - the running proxy: configuration, global state and the
 * per-connection state machine (conn.c: accept, classify, decide, dial;
 * http.c: forward one plain-HTTP request; relay.c: tunnels).
 *
 * One connection goes through these phases:
 *
 *   accept --flow map--> READ (peek TLS ClientHello / read HTTP head)
 *          --decide--> RESOLVE (DNS cache or evdns) --vet--> CONNECT (an idle
 *                      pooled connection to a vetted address, or a new one)
 *          --> HTTP (forward one request; then, if both sides keep the
 *                    connection, back to READ for the next request)
 *            | HELLO (CONNECT: "200", then check the ClientHello's SNI)
 *            | TUNNEL (splice relay)
 *          ... LINGER (our own response sent; drain until the client closes)
 *
 * Every request, tunnel, or connection closed before a request ends with
 * exactly one access-log line (accesslog.h); a kept-alive client connection
 * that closes between requests leaves none of its own.
 */
#ifndef SLUICE_PROXY_H
#define SLUICE_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "accept_backoff.h"
#include "addr.h"
#include "evlog.h"
#include "credentials.h"
#include "policy.h"
#include "relay.h"
#include "request.h"
#include "resolve.h"
#include "sluice.h"

struct event;
struct event_base;
struct evdns_base;
struct evconnlistener;
struct bufferevent;
struct proxy_relay;
struct proxy_dnscache;
struct proxy_lookup;
struct proxy_upool;
struct proxy_ca;
struct tls_pump;
struct ssl_ctx_st;

#define PROXY_MAX_LISTEN 16
#define PROXY_MAX_ALLOW  32
#define PROXY_DROPPED_MAX 4

struct proxy_config {
	int listen_fds[PROXY_MAX_LISTEN];
	size_t n_listen_fds;
	const char *listen_addrs[PROXY_MAX_LISTEN];
	size_t n_listen_addrs;
	const char *flow_map;
	const char *tunnel_maps;        /* --tunnel-maps: the kernel tunnels' pin directory, or NULL */
	bool kernel_tunnels;            /* --kernel-tunnels: relay tunnels in the kernel (ktunnel.h) */
	const char *policy_path;        /* NULL: the built-in default (deny everything) */
	const char *policy_digest;      /* --policy-digest: the loader's digest of it; NULL: unchecked */
	const char *policy_next;        /* --policy-next: where a drain reads the policy that replaced
					 * ours (the daemon's copy); NULL: policy_path */
	const char *netns;
	const char *sandbox;
	const char *container_id;       /* container.id, .name, .runtime of every line; NULL: none */
	const char *container_name;
	const char *container_runtime;
	const char *log_path;           /* NULL: stdout */
	int log_fd;                     /* --log-fd: inherited destination; 0: none */
	const char *upstream_dns;       /* NULL: /etc/resolv.conf */
	int ready_fd;                   /* -1: none */
	int mode;                       /* -1: the policy's, else enum sluice_mode */
	struct netaddr_cidr allow_private[PROXY_MAX_ALLOW];
	size_t n_allow_private;
	unsigned max_conns;             /* per sandbox (this process serves one) */
	unsigned header_timeout_ms;
	unsigned idle_timeout_ms;
	unsigned connect_timeout_ms;
	unsigned linger_ms;
	unsigned keepalive_timeout_ms;  /* a client connection idle between requests; 0: no keep-alive */
	unsigned upstream_idle_ms;      /* an idle pooled upstream connection */
	unsigned upstream_pool;         /* idle upstream connections per (address, port, name); 0: no reuse */
	unsigned upstream_pool_total;   /* idle upstream connections in all */
	unsigned dns_cache_entries;     /* names kept; 0: no cache */
	unsigned dns_max_ttl;           /* seconds an answer is kept at most; 0: no cache */
	const char *upstream_ca;        /* a PEM file of CAs trusted for origins besides the host's */
	int upstream_ca_fd;             /* -1: none; else the same as content (PEM), read at start */
	int ca_cert_fd;                 /* -1: none; else the sandbox CA's certificate (PEM) is
					 * written there at start, then the fd is closed */
	int ca_fd;                      /* -1: none (the proxy makes its own CA); else the
					 * sandbox CA (key and certificate, PEM) is read from
					 * it at start, then the fd is closed (sandbox_ca.h) */
	struct proxy_limits limits;
	unsigned drain_timeout_ms;      /* SIGQUIT: open connections get this long to finish */
	int verbose;
};

/* Defaults for everything but the listeners and paths. */
void proxy_config_defaults(struct proxy_config *cfg);

struct proxy {
	struct proxy_config cfg;
	struct event_base *base;
	struct evdns_base *dns;
	struct sluice_policy *policy;
	enum sluice_mode mode;
	int flow_fd;
	struct event *flow_sweep;      /* removes flow entries no one took (flow.h) */
	int log_fd;
	struct sluice_evlog log;        /* the access log's writer, on log_fd */
	unsigned n_conns;               /* open client connections, the tunnels too */
	struct proxy_dnscache *dnscache;
	struct proxy_upool *upool;      /* NULL: upstream connections are not reused */
	struct proxy_ca *ca;            /* the sandbox CA; NULL when the policy inspects nothing */
	struct ssl_ctx_st *tls_server;  /* towards the sandbox (leaf per SNI), with ca */
	struct ssl_ctx_st *tls_client;  /* towards origins: verifies chain and name; NULL without
					 * inspection and --upstream-ca (proxy_tls_init) */
	struct proxy_cred *creds;       /* one per policy credential (p->credentials order); cred.c */
	size_t n_creds;
	struct sluice_secrets secrets;  /* from --secrets-fd: the secrets and placeholders */
	/* timeouts; the first five are libevent "common timeouts" (main.c), not
	 * plain timevals: pass them to event_add() only */
	struct timeval tv_header, tv_idle, tv_connect, tv_linger, tv_keepalive;
	struct timeval tv_upstream_idle;
	struct evconnlistener *listeners[2 * PROXY_MAX_LISTEN];
	size_t n_listeners;
	struct conn *conns;             /* every open client connection but the tunnels (drain.c) */
	LIST_HEAD(tunnel_list, tunnel) tunnels; /* every passthrough tunnel whose relay runs (tunnel.c) */
	unsigned fd_cap;                /* client connections the descriptor limit leaves room for */
	struct sluice_accept_backoff accept; /* at EMFILE: refuse one (logged) through a reserve, pause */
	bool draining;                  /* SIGQUIT: not accepting, finishing the open ones */
	bool stopping;                  /* SIGTERM: the same, for STOP_GRACE_MS (drain.c) */
	struct sluice_policy *next_policy; /* draining: the policy the reload brought (redecide.c), or NULL */
	struct event *drain_tick, *drain_deadline;
};

/* cred.c: credentials (docs/policy.md "Credentials") ------------------- */

struct proxy_cred {
	const struct sluice_credential *cr;   /* in px->policy */
	const struct sluice_secret *secret;   /* in px->secrets */
	char *value;                          /* the header's value, secret in it; wiped at exit */
	size_t value_len;
};

/*
 * Read the secrets handed over on `fd` (-1: none) and bind each of the
 * policy's credentials to its secret.  A policy with credentials and no
 * secret for one of them is refused (fail closed: the request would go out
 * without it, or worse with the sandbox's own).  0, or -1 with *why.
 */
int proxy_creds_init(struct proxy *px, int fd, const char **why);

/* Wipe (OPENSSL_cleanse) and free the secrets and header values. */
void proxy_creds_free(struct proxy *px);

/* The credential a request allowed by `e` gets, or NULL. */
const struct proxy_cred *proxy_cred_for(const struct proxy *px, const struct sluice_entry *e);

/*
 * Does `len` bytes of `data` (a request head, a URL, a body part) carry a
 * placeholder of a credential other than `allowed` (NULL: any)?  Returns
 * that credential's secret record, or NULL.
 */
const struct sluice_secret *proxy_cred_misdirected(const struct proxy *px, const struct proxy_cred *allowed,
						   const char *data, size_t len);

/* Handle one accepted client socket (non-blocking).  Takes ownership of fd.
 * refuse: NULL, or a reason ("descriptor_limit") to close it at once with
 * its access-log line (the kernel's flow record taken all the same).  Past
 * px->fd_cap open connections a client is refused so, too. */
void proxy_accept(struct proxy *px, int fd, const struct sockaddr *peer, socklen_t peerlen, const char *refuse);

/* A passthrough CONNECT is dialed once its ClientHello is checked; a client
 * silent this long after the 200 speaks a server-first protocol (SSH,
 * SMTP): dialed then, on the CONNECT host's decision. */
#define PROXY_SERVER_FIRST_MS 250

enum conn_phase {
	PH_READ = 0, PH_RESOLVE, PH_CONNECT, PH_HELLO, PH_HTTP, PH_TUNNEL, PH_LINGER,
	PH_TLS_ACCEPT,                  /* terminating the client's TLS (inspection) */
};

enum conn_kind {
	K_UNKNOWN = 0, K_HTTP, K_CONNECT, K_TLS,
};

union proxy_sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

struct conn_http;

/* One client connection, and the request on it now.  Kept small: an idle
 * accepted or kept-alive connection is this struct plus two events. */
struct conn {
	struct proxy *px;
	int cfd, ufd;
	enum conn_phase phase;
	enum conn_kind kind;
	enum proxy_form form;
	struct event *rev;              /* client readable, for the connection's life (its
					 * callback follows the phase: READ, HELLO, HTTP, LINGER) */
	bool rev_on;                    /* rev is added */
	struct event *uio;              /* upstream readable in HTTP (proxy_io_new: it goes to
					 * the pool with the socket) */
	struct event *timer;            /* header deadline, connect deadline (dialing: on
					 * c->ufd too, dial.c), idle, linger */
	struct sluice_orig orig;
	bool have_orig;
	char *exe;                      /* process.executable of orig.pid, when it still runs that file */
	bool over_cap;
	bool logged;
	bool failed;                    /* ended in an error or denial */
	union proxy_sa peer;
	union proxy_sa dst;             /* the dialed address */
	bool have_dst;
	bool reused;                    /* the upstream connection came from the pool */
	bool deferred;                  /* a pipelined request waits for the timer (conn_keepalive) */
	bool retried;                   /* ... went stale and the request was sent again on a new one */
	bool answer_cached;             /* the name's answer came from the DNS cache */
	bool req_ok;                    /* c->req parsed and valid (the framing is known) */
	bool ws;                        /* the request asks to upgrade to a WebSocket (websocket.c) */
	bool inspect;                   /* decided: TLS to terminate (proxy_decide_tls) */
	bool hello_wait;                /* a passthrough CONNECT's timer is set for
					 * PROXY_SERVER_FIRST_MS after its 200 */
	bool inspected;                 /* the requests come from inside terminated TLS */
	uint16_t tls_port;              /* inspected: the port the TLS connection was for */
	char *tls_host;                 /* inspected: the normalised SNI; malloc'd */
	const char *tls_version;        /* inspected: of the client's session (static text) */
	const char *tls_cipher;
	const char *http_version;       /* "2": a stream of an HTTP/2 connection (h2.c); NULL: HTTP/1.x */
	unsigned h2_seq;                /* that stream's place on its HTTP/2 connection (1, 2, ...) */
	struct tls_pump *pump;          /* a handshake in progress (client or upstream side) */
	unsigned nreq;                  /* requests finished on this client connection */
	struct timespec t_real;         /* when the request (or connection) started */
	struct timespec t_mono;

	/* bytes read from the client before the decision */
	char *buf;
	size_t len, cap, head_len;

	/* the decision */
	const char *verdict;            /* "allow", "deny", "would_deny" */
	const char *reason;             /* final reason for the log */
	const char *deny_reason;        /* the policy's denial in audit mode */
	const char *reload_reason;      /* refused by a reload's policy: what it said (redecide.c) */
	const char *rule;
	const struct proxy_cred *cred;  /* the credential this request gets (cred.c), or NULL */
	const char *cred_event;         /* "credential_echoed" once a response was redacted */
	const char *cred_name;          /* the credential of a misdirected placeholder */
	bool severity_high;             /* event.severity 73 (a credential misdirected) */
	const struct sluice_entry *rule_entry; /* the entry that allowed it (owner, ticket, expires), or NULL */
	const char *method;
	char *host;                     /* normalised name (or IP literal); malloc'd */
	char *sni;                      /* tls.client.server_name; malloc'd */
	char *host_sent;                /* sluice.host_header_replaced: the client's Host, printable,
					 * when the forwarded head says another (absolute form); malloc'd */
	uint16_t port;
	bool ip_literal;
	int ip_family;
	uint8_t ip[16];
	char *url_full;
	struct proxy_request *req;
	struct proxy_target *target;

	/* resolution and dialing */
	struct proxy_lookup *lookup;
	struct proxy_addrs *cands;
	size_t cand_i;
	uint32_t dial_end_ms;           /* the connect deadline: ms after t_mono (dial.c) */
	int orig_dst_mismatch;          /* -1 unknown */
	char *dropped[PROXY_DROPPED_MAX]; /* "addr range" of refused answers */
	size_t n_dropped;

	/* results */
	int status;
	int64_t req_bytes, resp_bytes;
	struct conn_http *http;
	struct proxy_relay *relay;
	struct conn *all_prev, *all_next;  /* in px->conns */
};

/*
 * tunnel.c: a passthrough tunnel (CONNECT after its 200, transparent TLS
 * not inspected) once its relay runs.  It takes its connection's place:
 * the record of a tunnel, with its relay's, is made in the memory of its
 * connection's (struct conn), and keeps only what its closing access-log
 * line (conn_log.c) and a reload's re-decision (redecide.c) read, so that
 * an idle tunnel holds no allocation its connection did not already hold.
 * What only an HTTP or inspected connection has (a URL, a credential, the
 * client's TLS session, HTTP/2, a WebSocket, a pooled upstream) is never
 * set on a passthrough tunnel and not kept.
 */
struct tunnel {
	struct proxy *px;
	LIST_ENTRY(tunnel) link;        /* in px->tunnels */
	struct proxy_relay *relay;      /* in relay_mem */
	struct timespec t_real, t_mono; /* as the connection's */
	struct sluice_orig orig;
	union proxy_sa peer, dst;
	char *exe, *host, *sni, *host_sent;   /* the connection's, taken over */
	char *dropped[PROXY_DROPPED_MAX];
	const char *verdict, *reason, *deny_reason, *reload_reason, *rule, *method;
	const struct sluice_entry *rule_entry;
	int cfd, ufd;
	enum conn_kind kind;
	enum proxy_form form;
	int status;
	int orig_dst_mismatch;
	unsigned nreq;
	uint16_t port;
	uint8_t n_dropped;
	bool have_orig, have_dst, req_ok, failed;
	_Alignas(uint64_t) unsigned char relay_mem[RELAY_RECORD_MAX];
};

/* c is a decided passthrough tunnel (K_CONNECT or K_TLS; from
 * proxy_accept), connected both ways (conn_upstream_ready): start relaying
 * it (relay.c; in the kernel when --kernel-tunnels) as a tunnel made in
 * c's memory, which takes over c's sockets, events and what its line
 * needs; c is gone.  Ends in one access-log line. */
void tunnel_start(struct conn *c);

/* Fill *v (zeroed first) with what t kept of its connection, for the
 * functions that read a struct conn (conn_log, the re-decision).  v
 * borrows t's strings and relay: not for conn_finish. */
void tunnel_view(const struct tunnel *t, struct conn *v);

/* End t now: its line (a failure, event.reason `reason`, the bytes moved
 * so far), both sockets closed, t freed. */
void tunnel_cut(struct tunnel *t, const char *reason);

/* drain.c: the open connections, a graceful stop (SIGQUIT: a reload's old
 * proxy) and an immediate one (SIGTERM), each open connection logged. */

/* Add c to px->conns (at accept) / remove it (conn_release). */
void proxy_conn_track(struct proxy *px, struct conn *c);
void proxy_conn_untrack(struct proxy *px, struct conn *c);

/* A connection or tunnel is gone (conn_finish, tunnel.c): a draining
 * proxy ends once nothing is left open (no connection, tunnel or TLS
 * relay). */
void proxy_drain_check(struct proxy *px);

/* SIGQUIT: stop accepting (free the listeners; the sockets stay open in the
 * loader and the next proxy), close connections idle between requests, let
 * the others finish; after cfg.drain_timeout_ms finish the rest with reason
 * "drain_deadline" (each logged), then leave the event loop. */
void proxy_drain_start(struct proxy *px);

/* SIGTERM: stop accepting and give the open connections a short grace
 * (300 ms) to end as they end, then finish the rest with reason
 * "proxy_stopped" (each request in progress logged) and leave the event
 * loop; a second SIGTERM, or one while draining, does that at once. */
void proxy_stop_now(struct proxy *px);

/* Draining: close c if it is idle between requests with nothing pending
 * (no line: no request).  May free c. */
void proxy_drain_idle(struct conn *c);

/* redecide.c: a reload's old proxy decides its open connections again
 * under the policy the reload brought (docs/reliability.md). */

/* Draining: read cfg.policy_next (else cfg.policy_path) again (the daemon
 * replaced it before the SIGQUIT); when it is another policy, keep it in px->next_policy and cut
 * each open tunnel or request in progress it refuses (a line each, reason
 * "policy_reloaded").  0, or -1 when the file cannot be read (logged; the
 * open connections finish under the old policy). */
int proxy_redecide_start(struct proxy *px);

/* Cut c if px->next_policy refuses what it is doing.  True when cut (c is
 * gone).  Connections still reading a head are left to proxy_redecide_head. */
bool proxy_redecide_conn(struct conn *c);

/* The same for a tunnel: cut (true, t is gone) when px->next_policy
 * refuses it. */
bool proxy_redecide_tunnel(struct tunnel *t);

/* A request or TLS connection decided (d: the old policy's decision) while
 * px->next_policy is set: when the old policy lets it through and the new
 * one does not, d becomes a refusal (403 "policy_reloaded"). */
void proxy_redecide_head(struct conn *c, struct proxy_decision *d);

void proxy_redecide_free(struct proxy *px);

/* The executable that made c (device and inode, as the kernel recorded it
 * in the flow map; 0/0: unknown, matches no `programs:` entry), in *who;
 * returns who.  For proxy_decide_*_for (request.h). */
const struct sluice_exe_id *conn_who(const struct conn *c, struct sluice_exe_id *who);

/* conn_log.c: write c's access-log line, once (c->logged); nothing when
 * it was written already. */
void conn_log(struct conn *c);

/* conn_log.c: nanoseconds since c's request (or connection) started
 * (t_mono, CLOCK_MONOTONIC): the line's event.duration, dial.c's deadline. */
uint64_t conn_elapsed_ns(const struct conn *c);

/* dial.c: resolve c->host (or take the audit-mode IP literal), vet the
 * answers, take a pooled connection or dial the candidates in turn; ends
 * in conn_upstream_ready() or conn_fail().  May free `c`. */
void conn_start_dial(struct conn *c);

/* TCP_NODELAY on a socket (each write is a whole head or message, or as
 * much as there is: send it now, not after the ACK of the previous one). */
void proxy_set_nodelay(int fd);

/* conn.c, also used by http.c.  Each of these may free `c`: call last. */

/* c->ufd is connected to the vetted c->dst (dial.c): go on with the
 * request (http_start, or upstream TLS first), or the tunnel. */
void conn_upstream_ready(struct conn *c);

/* Write the access-log line (once), close both sockets, free everything. */
void conn_finish(struct conn *c);

/* The same without the line and without freeing c's own memory (nor
 * taking it off px->n_conns): c becomes a tunnel (tunnel.c), which has
 * taken what it keeps (those of c's pointers NULL, its sockets -1). */
void conn_release(struct conn *c);

/* An error after the decision: our own HTTP answer `status` if the client
 * has seen nothing yet (HTTP, CONNECT before "200"), else just close;
 * `reason` is the log's event.reason. */
void conn_fail(struct conn *c, int status, const char *reason);

/* Answer `status` with X-Sluice-Denied (403) or X-Sluice-Error: reason,
 * log the line, then linger. */
void conn_reply(struct conn *c, int status, const char *reason);

/* Close the upstream side, shutdown(SHUT_WR) the client, read and discard
 * until it closes or the linger time (2 s) passes (so that our last bytes are not
 * lost to a reset), then conn_finish(). */
void conn_linger(struct conn *c);

/* Free c's client read event (rev, rev_on cleared): the socket is about
 * to belong to a TLS pump. */
void conn_drop_events(struct conn *c);

/* The sockets are about to belong to a relay (relay_start): hand it c's
 * client read event and its timer as ev[0] and ev[1] (deleted; NULL where
 * c has none; c->rev and c->timer become NULL). */
void conn_events_to_relay(struct conn *c, struct event *ev[2]);

/* c's timer as a plain timer again (deleted) when it waits on an upstream
 * connect (dial.c); nothing otherwise. */
void conn_timer_plain(struct conn *c);

/* Read the client socket or not (adds or deletes c->rev). */
void conn_client_reading(struct conn *c, bool on);

/* The end of a good request: log, then linger. */
void conn_done(struct conn *c);

/* The end of a request after which the client connection stays open: log,
 * keep the bytes the client sent after it (a pipelined request: requests
 * are served one after the other), forget everything else about it, and
 * wait for the next request (READ). */
void conn_keepalive(struct conn *c);

/* A pooled upstream connection turned out closed before any response byte:
 * dial the same vetted address again (a new connection) and start over
 * with http_start().  Only for requests without a body. */
void conn_redial(struct conn *c);

/* An inspected client connection: `fd` carries the plaintext of the
 * client's TLS session that `outer` terminated; its requests are read,
 * decided and logged like plain HTTP.  Returns NULL (fd closed) on
 * allocation failure. */
struct conn *conn_new_inspected(struct proxy *px, int fd, const struct conn *outer);

/* tls_inspect.c: set up the sandbox CA (when the policy inspects any name)
 * and the two SSL_CTXs; write the CA certificate to cfg.ca_cert_fd.
 * Returns 0, or -1 with a reason in *err. */
int proxy_tls_init(struct proxy *px, const char **err);
void proxy_tls_free(struct proxy *px);

/* tls_inspect.c: c (transparent TLS, or CONNECT after its 200) holds the
 * ClientHello of a name the policy inspects in c->buf: answer it with a
 * leaf for c->sni, then hand the plaintext to a new inspected connection.
 * Ends c (one log line only if the handshake fails). */
void inspect_start(struct conn *c);

/* tls_inspect.c: c->ufd of an inspected request is connected: run TLS
 * with the origin over it (verified), then http_start(); 502
 * upstream_cert_invalid when the origin's certificate does not verify. */
void inspect_upstream(struct conn *c);

/* websocket.c: the origin's 101 to an allowed WebSocket upgrade is out to
 * the client: relay the bytes both ways (`from_client`: what the client
 * sent after its request, first), then log one line (status 101, the
 * bytes both ways) and finish c. */
void ws_relay_start(struct conn *c, struct evbuffer *from_client);

/* http.c: forward the parsed, allowed request (c->req, c->target, c->host)
 * over the connected upstream socket c->ufd; ends in conn_done,
 * conn_keepalive, conn_redial or conn_fail. */
void http_start(struct conn *c);

/* Free the HTTP phase's buffers and write events (not the sockets, not
 * the client's read event c->rev).  Idempotent. */
void http_free(struct conn *c);

/* The connection's timer fired in the HTTP phase: nothing moved for
 * --idle-timeout. */
void http_timeout(struct conn *c);

/* Refuse the request in progress (a reload's policy refuses it): our own
 * answer `status` if the client has seen nothing of the response yet, else
 * close; `reason` is the line's event.reason.  Frees or lingers c. */
void http_refuse(struct conn *c, int status, const char *reason);

/* The client socket is readable in the HTTP phase. */
void http_client_readable(struct conn *c);

/* May the request (c->req) be sent again on a new upstream connection if a
 * pooled one turns out closed before answering?  (No body, a safe method.) */
bool http_replayable(const struct conn *c);

/* The client bytes the HTTP phase read past its request (NULL: none). */
struct evbuffer *http_client_input(struct conn *c);

/* Before conn_redial(): drop the upstream side of the HTTP phase (the
 * client side, with what the client sent after its request, stays for the
 * next http_start()). */
void http_upstream_reset(struct conn *c);

#endif
