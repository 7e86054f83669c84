/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * accesslog.h - the proxy's access log: one JSON object per line per
 * request or tunnel, with Elastic Common Schema field names written flat
 * ("destination.ip") like every sluice line.  Fields: docs/events.md,
 * "Proxy access log".
 */
#ifndef SLUICE_PROXY_ACCESSLOG_H
#define SLUICE_PROXY_ACCESSLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "sluice.h"

#define PROXY_LOG_MAX_DROPPED 8

/* One record.  NULL strings and negative numbers are left out. */
struct proxy_log_rec {
	struct timespec start;        /* CLOCK_REALTIME when the connection was accepted */
	uint64_t duration_ns;
	const char *action;           /* event.action: proxy-http, proxy-connect, proxy-tls, proxy-connection */
	const char *outcome;          /* event.outcome: success | failure | unknown (audit: let through) */
	const char *reason;           /* event.reason: "allowed" or a stable denial/error reason */
	const char *verdict;          /* sluice.verdict: allow | deny | would_deny */
	const char *form;             /* sluice.form: explicit | transparent */
	const char *url_full;
	const char *domain;           /* url.domain: normalised name (or IP literal) */
	const char *sni;              /* tls.client.server_name */
	const char *host_sent;        /* sluice.host_header_replaced: the Host the client sent,
				       * when the forwarded head carries the URI's instead */
	const char *method;
	int status;                   /* http.response.status_code, 0 = none */
	bool inspected;               /* sluice.inspected: a request inside TLS the proxy terminated */
	bool websocket;               /* sluice.websocket: the request asked to upgrade to a WebSocket */
	const char *tls_version;      /* tls.version (of the client's session, e.g. "TLSv1.3") */
	const char *tls_cipher;       /* tls.cipher */
	const char *http_version;     /* http.version: "2" for a stream of an HTTP/2 connection;
				       * NULL: left out (HTTP/1.x) */
	bool tunnel;                  /* bytes as source.bytes/destination.bytes, not http.* */
	int64_t req_bytes;            /* client -> upstream (or request) bytes, -1 = none */
	int64_t resp_bytes;           /* upstream -> client bytes, -1 = none */
	const char *tunnel_path;      /* a tunnel: "kernel", "splice" or "copy" (relay_mode()), or NULL */
	const struct sockaddr *src;   /* the client */
	const struct sockaddr *dst;   /* the dialed address, NULL when none */
	int target_port;              /* the port asked for (CONNECT target, Host), written as
				       * destination.port when nothing was dialed; 0 = none */
	const struct sluice_orig *orig;  /* the kernel's record, NULL when none */
	const char *exe;                 /* process.executable, NULL when not known */
	const char *rule;             /* rule.name */
	const char *credential;       /* sluice.credential: the credential whose header was set
				       * (or whose placeholder was misdirected / echoed); never the secret */
	int severity;                 /* event.severity (ECS, 0-100): 73 for a misdirected
				       * credential placeholder; 0 = left out */
	const char *cred_event;       /* sluice.credential_event: "credential_echoed" when a
				       * response had the secret replaced; NULL otherwise */
	const struct sluice_entry *rule_entry; /* its entry: sluice.rule_owner, _ticket, _expires; may be NULL */
	int orig_dst_mismatch;        /* -1 unknown, 0, 1 */
	int request_seq;              /* HTTP: the request's place on its client connection (1, 2, ...); 0 = none */
	int upstream_conn;            /* HTTP: 0 none, 1 a new upstream connection, 2 a pooled one */
	const char *dropped[PROXY_LOG_MAX_DROPPED];  /* "addr range" of refused DNS answers */
	size_t n_dropped;
	const char *reload_reason;    /* sluice.reload.reason: what the policy a reload brought said
				       * of a connection or request it refused (reason "policy_reloaded"); NULL: none */
	const char *reload_digest;    /* sluice.reload.policy_sha256: that policy's digest */
};

struct sluice_line;
struct sluice_evlog;

/* Add the record's fields (docs/events.md, "Proxy access log") to line l.
 * Pure: no I/O, no allocation. */
void proxy_log_fields(struct sluice_line *l, const struct proxy_log_rec *r);

/* r->start as CLOCK_REALTIME ns. */
int64_t proxy_log_real_ns(const struct proxy_log_rec *r);

/*
 * The record as one JSON object (no newline; @timestamp and the record's
 * fields, without the writer's envelope): tests and fuzzing.  Returns a
 * malloc'd string the caller frees, or NULL on allocation failure.
 */
char *proxy_log_format(const struct proxy_log_rec *r);

/*
 * Write the record as one line through w (envelope, dataset sluice.proxy).
 * Returns 0, or -errno when the line was lost (counted by w).
 */
int proxy_log_write(struct sluice_evlog *w, const struct proxy_log_rec *r);

#endif
