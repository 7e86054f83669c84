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
	const char *method;
	int status;                   /* http.response.status_code, 0 = none */
	bool inspected;               /* sluice.inspected: a request inside TLS the proxy terminated */
	const char *tls_version;      /* tls.version (of the client's session, e.g. "TLSv1.3") */
	const char *tls_cipher;       /* tls.cipher */
	bool tunnel;                  /* bytes as source.bytes/destination.bytes, not http.* */
	int64_t req_bytes;            /* client -> upstream (or request) bytes, -1 = none */
	int64_t resp_bytes;           /* upstream -> client bytes, -1 = none */
	const struct sockaddr *src;   /* the client */
	const struct sockaddr *dst;   /* the dialed address, NULL when none */
	const struct sluice_orig *orig;  /* the kernel's record, NULL when none */
	const char *sandbox;
	const char *rule;             /* rule.name */
	const char *policy_digest;    /* rule.ruleset and sluice.policy_sha256 */
	const char *policy_name;
	const char *mode;             /* sluice.mode: enforce | audit */
	int orig_dst_mismatch;        /* -1 unknown, 0, 1 */
	int request_seq;              /* HTTP: the request's place on its client connection (1, 2, ...); 0 = none */
	int upstream_conn;            /* HTTP: 0 none, 1 a new upstream connection, 2 a pooled one */
	const char *dropped[PROXY_LOG_MAX_DROPPED];  /* "addr range" of refused DNS answers */
	size_t n_dropped;
};

/*
 * Format `r` as one JSON object (no newline).  `sandbox`, `policy_name`,
 * `policy_digest` and `mode` are escaped once and reused while the same
 * pointers come: their strings must not change in place.  Returns a malloc'd string
 * the caller frees, or NULL on allocation failure.
 */
char *proxy_log_format(const struct proxy_log_rec *r);

/*
 * Append the record and a newline to `fd` with one write(2) (lines from
 * concurrent writers on an O_APPEND file do not interleave).  Returns 0 or
 * -1 with errno set.
 */
int proxy_log_write(int fd, const struct proxy_log_rec *r);

#endif
