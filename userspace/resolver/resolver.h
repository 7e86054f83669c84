/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * resolver.h - the decision core of sluice-resolver: pure functions from
 * DNS message bytes to a verdict and response bytes, so that they can be
 * unit-tested and fuzzed without sockets.  The event loop (server.c) and
 * the CLI (main.c) are thin layers around them.
 *
 * Flow of one query:
 *
 *   rsv_decide(query bytes)  --RSV_ACT_RESPOND-->  d.resp (no packet leaves)
 *                            --RSV_ACT_DROP----->  nothing is sent
 *                            --RSV_ACT_FORWARD-->  rsv_upstream_query() -> upstream
 *   upstream reply  -> rsv_process_reply() -> d.resp for the client
 *
 * DNS messages are parsed and built with ldns only (RFC 1035 4.1).
 */
#ifndef SLUICE_RESOLVER_H
#define SLUICE_RESOLVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ldns/ldns.h>

#include "netaddr.h"
#include "credentials.h"
#include "policy.h"

/* DNS response codes (RFC 1035 4.1.1, RFC 6895 2.3). */
#define RSV_NOERROR  0
#define RSV_FORMERR  1
#define RSV_SERVFAIL 2
#define RSV_NXDOMAIN 3
#define RSV_NOTIMP   4
#define RSV_REFUSED  5

/* What the server must do with a query. */
enum rsv_action {
	RSV_ACT_DROP = 1,      /* send nothing (no usable header, or QR=1) */
	RSV_ACT_RESPOND = 2,   /* send d->resp; nothing goes upstream */
	RSV_ACT_FORWARD = 3,   /* ask the upstream (rsv_upstream_query) */
};

/* The verdict, as logged in sluice.verdict. */
enum rsv_verdict {
	RSV_V_ALLOW = 1,       /* policy allows the name and qtype */
	RSV_V_DENY = 2,        /* policy denies it (on_deny answer) */
	RSV_V_WOULD_DENY = 3,  /* audit mode: would be denied, forwarded anyway */
	RSV_V_REFUSE = 4,      /* refused whatever the policy (malformed, ANY, CHAOS, ...) */
};

/* Limits of the DNS tunnelling heuristics (tunnel.c); see docs/events.md. */
struct rsv_tunnel_limits {
	unsigned long_label;     /* a label this long or longer is suspect (default 40) */
	unsigned long_prefix;    /* labels in front of the wildcard parent, total bytes (default 80) */
	unsigned entropy_min_len;/* labels this long are checked for entropy (default 20) */
	double entropy_bits;     /* Shannon entropy per byte at or above which a label is suspect (default 3.9) */
	double burst;            /* new distinct names per wildcard parent, bucket size (default 30) */
	double per_second;       /* refill rate (default 0.5: 30 per minute) */
	double suspect_cost;     /* tokens a suspect-looking new name costs (default 5) */
	double seen_ttl;         /* seconds a name stays "seen" (not new) (default 300) */
};

struct rsv_tunnel;

/* Everything the decision needs besides the message; owned by the caller. */
struct rsv_ctx {
	const struct sluice_policy *policy;
	struct sluice_name_index *names;         /* policy's names (sluice_name_index_new), or
						  * NULL: its entries are scanned */
	enum sluice_mode mode;
	const struct netaddr_cidr *allow_private; /* --allow-private-answers */
	size_t n_allow_private;
	struct rsv_tunnel *tunnel;            /* may be NULL: no tunnelling checks */
	const struct sluice_secrets *placeholders; /* may be NULL: the credentials' placeholders
						    * (--secrets-fd; no secret values) */
};

/* One answer record, for the log (dns.answers). */
struct rsv_answer {
	uint16_t type;
	char name[256];
	uint32_t ttl;
	char data[256];
	const char *dropped_why;  /* NULL, or why the filter objected ("private", "out_of_chain", ...) */
	bool sent;                /* in the response to the client (audit mode passes
				     non-public addresses on: sent and dropped_why) */
};

/* The decision on one query and, later, on its upstream reply. */
struct rsv_decision {
	enum rsv_action action;
	enum rsv_verdict verdict;
	const char *reason;        /* stable, see docs/events.md ("allowed", "name_not_allowed", ...) */
	int rcode;                 /* of the response sent, -1 when none was sent */
	bool tcp;                  /* query came over TCP */

	/* From the query; name is "" until a question was read. */
	uint16_t id;
	bool have_question;
	char name[SLUICE_HOST_MAX + 1];  /* normalised; "" if not normalisable */
	char raw_name[1024];             /* as sent, presentation form (escaped) */
	uint16_t qtype, qclass;
	const struct sluice_entry *rule; /* matching allow entry, or NULL */
	const char *credential;          /* a credential whose placeholder was in the name
					  * (reason credential_misdirected), or NULL */
	bool tunnel_suspect;
	const char *tunnel_why;          /* "long_label", "high_entropy", "rate", ... */
	size_t trailing;                 /* trailing_bytes: bytes past what the header declares */
	const char *malformed;           /* reason malformed: what was wrong (error.message): ldns's
					  * status text, or the check that failed; static */

	/* Answers of the final response (kept and dropped). */
	struct rsv_answer *answers;
	size_t n_answers;
	size_t n_dropped;

	/* Response to the client, malloc'd wire bytes (RESPOND, or after a reply). */
	uint8_t *resp;
	size_t resp_len;

	bool truncated;            /* the response was sent with TC set */
	bool cached;               /* answered from the cache (rsv_process_cached) */
	uint32_t cache_ttl;        /* after a reply: seconds it may be cached, 0: not (TC,
				      SERVFAIL/REFUSED, negative without SOA) */

	/* private */
	ldns_pkt *query;           /* parsed client query */
	uint8_t opcode;            /* from the header, for responses without a parsed query */
	bool rd;
};

/*
 * Decide what to do with one client message `msg` of `len` bytes.  `tcp`
 * tells the transport it came on (UDP responses are limited to 512 bytes or
 * the client's EDNS size, RFC 6891 6.2.5).  `now` is a monotonic time in
 * seconds (tunnel rate limits).  Fills *d (free with rsv_decision_free());
 * returns d->action.  Never fails: out of memory yields RSV_ACT_DROP with
 * reason "internal_error".
 */
enum rsv_action rsv_decide(const struct rsv_ctx *ctx, const uint8_t *msg, size_t len,
			   bool tcp, double now, struct rsv_decision *d);

/*
 * Build the query sent upstream for a FORWARD decision: a fresh message with
 * ID `id`, RD set, the normalised name (never the client's bytes, so no
 * client-chosen EDNS option or extra record can carry data out) and EDNS0
 * with a 1232-byte UDP size.  Returns 0 and a malloc'd buffer, -1 on error.
 */
int rsv_upstream_query(const struct rsv_decision *d, uint16_t id, uint8_t **out, size_t *out_len);

/* Result of rsv_process_reply(). */
enum rsv_reply {
	RSV_REPLY_IGNORE = 1,     /* not the reply to our query: keep waiting (RFC 5452 9.1) */
	RSV_REPLY_TRUNCATED = 2,  /* TC set on a UDP reply: ask again over TCP */
	RSV_REPLY_DONE = 3,       /* d->resp holds the client's response */
};

/*
 * Check an upstream reply (`msg`, `len`) against the query we sent (`id`,
 * d's question; case-insensitive name), filter its answers (only the CNAME
 * chain from the question name and records of the qtype; A/AAAA in
 * non-public ranges dropped unless ctx allows them), and build the response
 * for the client in d->resp.  `via_tcp`: the reply came over TCP (TC is then
 * passed through as is).  If every address record was dropped, the client
 * gets the policy's on_deny code (reason "private_answer").
 */
enum rsv_reply rsv_process_reply(const struct rsv_ctx *ctx, struct rsv_decision *d, uint16_t id,
				 const uint8_t *msg, size_t len, bool via_tcp);

/*
 * Answer a FORWARD decision from a reply the upstream gave earlier (`msg`,
 * `len`: its bytes as received, for the same name and qtype) that is `age`
 * seconds old: every check of rsv_process_reply() runs again with the
 * current ctx (question, CNAME chain, the special-range answer filter), and
 * the TTLs sent are aged.  Sets d->cached.  Returns RSV_REPLY_DONE, or
 * RSV_REPLY_IGNORE when the bytes cannot be used (then ask the upstream).
 */
enum rsv_reply rsv_process_cached(const struct rsv_ctx *ctx, struct rsv_decision *d,
				  const uint8_t *msg, size_t len, uint32_t age);

/* --- the answer cache (cache.c) ----------------------------------------- */

/*
 * A bounded cache of upstream replies keyed by (normalised name, qtype),
 * least recently used out first.  It holds the upstream's bytes, never a
 * verdict: every use goes through rsv_decide() (the policy, the tunnelling
 * limits) and rsv_process_cached() (the answer filter) again.
 */
struct rsv_cache;

/* `max_entries` replies (0: no cache, returns NULL with errno 0), each kept
 * at most `max_ttl` seconds and at most RSV_CACHE_MAX_MSG bytes.  NULL with
 * errno ENOMEM on failure. */
#define RSV_CACHE_MAX_MSG 4096
struct rsv_cache *rsv_cache_new(size_t max_entries, uint32_t max_ttl);
void rsv_cache_free(struct rsv_cache *c);

/* Keep reply `msg` (`len` bytes) for `name`/`qtype` for `ttl` seconds
 * (capped at max_ttl) from monotonic time `now` (seconds).  Does nothing for
 * ttl 0 or a message over RSV_CACHE_MAX_MSG.  Returns 0, -1 on ENOMEM. */
int rsv_cache_put(struct rsv_cache *c, const char *name, uint16_t qtype, const uint8_t *msg,
		  size_t len, uint32_t ttl, double now);

/* The live reply for `name`/`qtype` at `now`: its bytes (owned by the cache,
 * valid until the next put or drop) in *msg and *len and its age in whole
 * seconds in *age.  Returns false when there is none (expired ones are
 * dropped). */
bool rsv_cache_get(struct rsv_cache *c, const char *name, uint16_t qtype, double now,
		   const uint8_t **msg, size_t *len, uint32_t *age);

/* Forget the reply for `name`/`qtype` (it could not be used). */
void rsv_cache_drop(struct rsv_cache *c, const char *name, uint16_t qtype);

/* Entries held now; hits and misses so far. */
size_t rsv_cache_count(const struct rsv_cache *c);
void rsv_cache_stats(const struct rsv_cache *c, uint64_t *hits, uint64_t *misses);

/*
 * Build a response with rcode `rcode` and no answers for a FORWARD decision
 * that could not be completed (upstream timeout: SERVFAIL), or with TC set
 * (`tc`) to make the client retry over TCP.  Sets d->resp, d->rcode and the
 * given reason.  Returns 0, or -1 if no response can be built.
 */
int rsv_fail(struct rsv_decision *d, int rcode, bool tc, const char *reason);

void rsv_decision_free(struct rsv_decision *d);

/* Stable names: "NOERROR", ...; "RCODE<n>" style is never returned (unknown -> "UNKNOWN"). */
const char *rsv_rcode_name(int rcode);
const char *rsv_verdict_name(enum rsv_verdict v);

/* --- answer addresses (decide.c) --------------------------------------- */

/*
 * May an answer with this address (family, network byte order) be passed
 * on: public (netaddr_classify(), userspace/lib/netaddr.h), or inside an
 * --allow-private-answers range or a cidr entry of the policy (any
 * protocol)?  *why (may be NULL) gets the category name ("private",
 * "nat64", ...) when it may not, else NULL.
 */
bool rsv_answer_addr_ok(const struct rsv_ctx *ctx, int family, const uint8_t *addr, const char **why);

/* --- DNS tunnelling heuristics (tunnel.c) ------------------------------- */

void rsv_tunnel_limits_default(struct rsv_tunnel_limits *l);

/* State for the entries of one policy (n = policy->n_entries).  NULL on ENOMEM. */
struct rsv_tunnel *rsv_tunnel_new(size_t n_entries, const struct rsv_tunnel_limits *l);
void rsv_tunnel_free(struct rsv_tunnel *t);

#define RSV_TUNNEL_SUSPECT 1   /* the name looks like encoded data */
#define RSV_TUNNEL_LIMITED 2   /* too many new names under this parent */

/*
 * Check the normalised `name` allowed by wildcard `entry` (index < n) at
 * time `now`: returns a mask of RSV_TUNNEL_* and a reason in *why
 * ("long_label", "long_name", "high_entropy", "rate").  A name that is not
 * limited is remembered as seen; a seen name is never limited again within
 * seen_ttl.  Entries that are not wildcards are never checked (returns 0).
 */
int rsv_tunnel_check(struct rsv_tunnel *t, const struct sluice_entry *entry, const char *name,
		     double now, const char **why);

/* Shannon entropy of s[0..len) in bits per byte (0 for len 0). */
double rsv_entropy(const char *s, size_t len);

/* --- socket addresses and the upstream (sockaddr.c) -------------------- */

struct sockaddr;
struct sockaddr_storage;

/*
 * Parse a numeric "ADDR", "ADDR:PORT", "[V6]", "[V6]:PORT" or "V6%scope"
 * (never a host name: no lookup is made).  Port defaults to
 * `default_port`; 1..65535.  Returns 0 and fills *ss and *len, or -1.
 */
int rsv_parse_hostport(const char *s, uint16_t default_port, struct sockaddr_storage *ss,
		       unsigned *len);

/* "ADDR:PORT" or "[V6]:PORT" into buf (always NUL-terminated). */
const char *rsv_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len);

/* Is the address 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104? */
bool rsv_sockaddr_is_loopback(const struct sockaddr *sa);

/*
 * The first "nameserver" of a resolv.conf(5) file into out.  Returns 0, or
 * -1 with errno set (ENOENT when the file has none).
 */
int rsv_resolv_conf_first(const char *path, char *out, size_t len);

/* --- the query log (qlog.c), one JSON line per query: docs/events.md ---- */

/* What every line says besides the query: the writer's envelope
 * (struct sluice_envelope, userspace/lib/evlog.h). */
struct rsv_logctx {
	const char *sandbox;                 /* --sandbox, may be NULL */
	const struct sluice_policy *policy;
	enum sluice_mode mode;
};

struct sluice_orig;

/* Where the query came from and how it went. */
struct rsv_logmeta {
	const char *src_ip;       /* may be NULL */
	int src_port;             /* -1: unknown */
	const struct sluice_orig *orig; /* the kernel's flow entry (flow.h): the server asked, who
					 * asked; NULL: not redirected (sent to the resolver itself) */
	int64_t duration_ns;      /* from receipt to response (or drop) */
	const char *upstream;     /* "ADDR:PORT" asked, NULL if nothing left */
	const char *upstream_transport; /* "udp" or "tcp" */
	unsigned upstream_tries;  /* queries sent upstream (retries included) */
	const struct timespec *now; /* CLOCK_REALTIME; NULL: read the clock */
};

struct sluice_line;
struct sluice_evlog;

/* Add the fields of decision `d` (docs/events.md, "Resolver query log") to
 * line l.  Pure: no I/O, no allocation. */
void rsv_log_fields(struct sluice_line *l, const struct rsv_decision *d, const struct rsv_logmeta *m);

/*
 * @timestamp and the fields of `d` as one JSON object ending in '\n',
 * without the writer's envelope (tests and fuzzing).  Returns a malloc'd
 * string, or NULL on ENOMEM.
 */
char *rsv_log_line(const struct rsv_decision *d, const struct rsv_logmeta *m);

/* Write the line of `d` through w (dataset sluice.resolver).  Returns 0, or
 * -errno when it was lost (counted by w). */
int rsv_log_query(struct sluice_evlog *w, const struct rsv_decision *d, const struct rsv_logmeta *m);

/* The first line the resolver writes: event.action "resolver-start" with the
 * upstream ("ADDR:PORT") and where it listens, so that the mode and the
 * policy (the envelope) are on record before the first query.  0 or -errno. */
int rsv_log_start(struct sluice_evlog *w, const char *upstream, const char *listen);

#endif /* SLUICE_RESOLVER_H */
