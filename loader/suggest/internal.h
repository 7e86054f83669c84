/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/internal.h - the parts of `sluice policy suggest` (public API:
 * loader/cmd_suggest.h) and what they share.  The steps, one file each:
 *   read.c    every line is parsed (json-c) and is either used (aggregated
 *             into an observation), noted (understood, but nothing a policy
 *             could allow: lifecycle lines, refusals no policy lifts) or
 *             skipped, which is always reported as "file:line: reason";
 *   plan.c    observations become targets: host entries from names the proxy
 *             saw (TLS SNI, CONNECT, HTTP Host) and from names the resolver
 *             answered before direct TCP to one of their addresses on a web
 *             port; url entries where the traffic was plain HTTP; cidr entries
 *             (/32, /128, the exact port and protocol) for the rest of the
 *             direct traffic;
 *   render.c  the policy text (entries and their YAML: entry.c), loaded back
 *             with the policy library and linted; every observation must be
 *             allowed by the result (else exit 2), lint findings become
 *             comments, wildcards are only ever offered as comments;
 *   against.c with --against POLICY, the smallest additions as a diff quoting
 *             POLICY's own lines.
 * util.c has the memory helpers, the hash map and text helpers; cmd.c the
 * command line.  Matching is the policy library's (sluice_policy_match_*,
 * sluice_entry_cidr_contains()), never a copy.
 */
#ifndef SLUICE_SUGGEST_INTERNAL_H
#define SLUICE_SUGGEST_INTERNAL_H

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../cmd_suggest.h"

#define EXIT_CLEAN    0
#define EXIT_FINDINGS 1
#define EXIT_ERROR    2
#define LINE_MAX_BYTES (1u << 20)  /* longer lines are reported, not parsed */
#define TS_LEN         40          /* "2026-11-30T06:24:59.430861Z" and room */
#define RUNS_KEPT      3           /* sandbox names a `why` lists */
#define NAMES_KEPT     4           /* names kept per address, per cidr entry */
#define WILDCARD_MIN   3           /* exact names under one parent before a wildcard is offered */
#define URL_GROUPS_MAX 16          /* path groups per host:port before one "/" entry */
#define PORTS_MAX      256         /* items in one ports list (the parser's limit) */
#define POLICY_TEXT_MAX (64u << 20) /* YAML the parser reads */
#define ENTRIES_MAX    200000      /* entries in one policy (the parser's limit) */
#define COMMENT_WIDTH  96

/* The methods a url entry may name (docs/policy.md), bit i = method i. */
extern const char *const sg_method_names[];
#define N_METHODS 7

/* How a host was reached. */
enum via {
	VIA_TLS = 1,     /* transparent TLS: the SNI */
	VIA_CONNECT,     /* explicit proxy CONNECT */
	VIA_HTTP,        /* plain HTTP (Host / absolute URI) */
	VIA_DIRECT,      /* direct TCP to an address the name resolved to */
	VIA_NAME,        /* only so that the name resolves (a cidr entry carries the traffic) */
	VIA_CIDR_TCP,    /* cidr targets */
	VIA_CIDR_UDP,
};

/* Append to a growing array: *v has *n elements and room for *cap. */
#define PUSH(v, n, cap) do {                                              \
		if ((n) == (cap)) {                                       \
			(cap) = (cap) ? (cap) * 2 : 8;                    \
			(v) = sg_xrealloc((v), (cap), sizeof(*(v)));      \
		}                                                         \
	} while (0)

/* --- a string-keyed hash map ------------------------------------------------- */

struct hnode {
	struct hnode *next;
	uint64_t h;
	void *val;
	char key[];
};

struct hmap {
	struct hnode **b;
	size_t nb, n;
};

/* The RR types the policy format knows by name (sluice_qtype_name()), once. */
struct qnames {
	uint16_t type[64];
	const char *name[64];
	size_t n;
};

struct seen {
	unsigned long long n;
	char first[TS_LEN], last[TS_LEN];
	const char *runs[RUNS_KEPT];   /* interned sandbox names */
	unsigned n_runs;
	bool more_runs;
};

/* A proxy attempt: one (via, host, port, method, path). */
struct pobs {
	enum via via;
	const char *host;      /* interned, normalised */
	uint16_t port;
	const char *method;    /* interned; VIA_HTTP only */
	char *path;            /* normalised; VIA_HTTP only */
	unsigned long long denied;
	struct seen seen;
};

/* A kernel denial / would-deny: one (address, protocol, port, run). */
struct kobs {
	int family;
	uint8_t addr[16];
	char ip[INET6_ADDRSTRLEN];
	uint8_t proto;
	uint16_t port;
	const char *run;
	unsigned long long denied;
	struct seen seen;
};

/* A name the resolver was asked. */
struct dname {
	const char *name;
	struct seen seen;
	uint16_t *qtypes;
	size_t n_qtypes, cap_qtypes;
	unsigned long long denied;   /* name_not_allowed in enforce mode: no address */
	bool answered;               /* some address in an answer */
	bool suspect;
	const char *suspect_reason;
	bool used;                   /* some entry was made from it */
};

/* One name an address was given for, in one run. */
struct dres {
	const char *name, *run;
	char first[TS_LEN];
};

struct daddr {
	struct dres *v;
	size_t n, cap;
};

/* A use of a target's port: how, how often, and (direct) to which address. */
struct puse {
	uint16_t port;
	enum via via;
	unsigned long long n;
	char ip[INET6_ADDRSTRLEN];
};

/* An entry in the making. */
struct target {
	enum sluice_entry_kind kind;
	const char *host;                 /* host, url */
	uint16_t url_port;                /* url */
	char *prefix;                     /* url */
	unsigned methods;                 /* url: bits of sg_method_names */
	unsigned long long n_paths;       /* url: distinct paths */
	int family;                       /* cidr */
	uint8_t addr[16];
	char ip[INET6_ADDRSTRLEN];
	uint8_t proto;
	struct puse *pu;                  /* host, cidr */
	size_t n_pu, cap_pu;
	struct seen seen;
	unsigned long long denied;
	const char *names[NAMES_KEPT];    /* cidr: names that resolved to the address; host: other such names */
	size_t n_names;
	bool named_by_url;                /* host: a url entry names it (so it resolves) */
	bool suspect;                     /* host: the resolver flagged names as tunnel-like */
	const char *suspect_reason;
	int existing;                     /* --against: index of the entry it widens, or -1 */
	char *sortkey;
};

/* Understood lines that give no entry, by kind. */
struct note {
	char *text;
	unsigned long long n;
	char where[300];      /* file:line of the first */
	int order;
};

struct suggest {
	struct suggest_opts o;
	struct suggest_counts c;
	FILE *diag;
	struct json_tokener *tok;
	struct hmap strings;      /* interned strings */
	struct hmap pobs, kobs, dnames, daddrs;
	struct hmap notes;
	int n_notes;
	struct hmap portless;     /* names of proxy lines without a port -> count */
	struct hmap policies;     /* "digest mode" -> "name (sha256, mode)" of the runs read */
	char default_digest[SLUICE_DIGEST_HEX_LEN + 1];
	bool other_policy;        /* some run had a policy other than the built-in default */
	char first_ts[TS_LEN], last_ts[TS_LEN];
	struct hmap runs;
	char files[3][128];
	unsigned long n_files_named;
	bool rendered;
	/* plan */
	struct hmap targets;
	struct hmap ag_hosts;     /* --against: exact host -> entry index + 1 */
	struct hmap views;        /* "policy\nhost" -> struct view */
	struct qnames qnames;
	bool ag_hosts_built;
	unsigned long long n_attempts, n_allowed_already, n_unallowable;
};

struct line_ctx {
	struct suggest *s;
	const char *file;
	unsigned long lineno;
	json_object *o;
	const char *ts, *run, *mode;
};

/*
 * The policy library's matchers walk every entry; logs hold many attempts
 * per name and policies may hold many entries.  A view is `p` with only the
 * host and url entries that match `host` (shallow copies, in order), built
 * once per name: the same matchers then give the same answers, faster.
 */
struct view {
	struct sluice_policy p;
};

struct oentry {
	enum sluice_entry_kind kind;
	char *target;                   /* "api.example.com", "*.x", url text, cidr text */
	struct sluice_port_range *ports;
	size_t n_ports;
	unsigned methods;               /* url */
	uint8_t proto;                  /* cidr */
	char *why;
	char **notes;                   /* comment lines above the entry */
	size_t n_notes, cap_notes;
	int existing;                   /* --against: POLICY index, -1 new */
	bool widened;
	const struct target *t;
};

/* A wildcard offered (never active) for exact host entries sharing a parent. */
struct offer {
	char *parent;
	size_t first, last;      /* entry indexes of the group */
	size_t n;
	struct oentry e;
};

struct render {
	struct oentry *es;
	size_t n;
	uint16_t *qtypes;          /* dns.qtypes to write; NULL: the default */
	size_t n_qtypes;
	uint16_t *extra_qtypes;    /* beyond the default / the POLICY's */
	size_t n_extra;
	struct offer *offers;
	size_t n_offers;
	unsigned n_review;
};

struct src {
	char **line;   /* line[i] is line i + 1 of the file, without its newline */
	size_t n;
};

/* --- functions shared between the parts (sg_: suggest's own) --- */

/* util.c */
/* Out of memory: a command-line tool says so and exits 2. */
__attribute__((noreturn)) void sg_oom(void);
void *sg_xcalloc(size_t n, size_t size);
void *sg_xrealloc(void *p, size_t n, size_t size);
char *sg_xstrdup(const char *s);
__attribute__((format(printf, 1, 2)))
char *sg_xasprintf(const char *fmt, ...);
struct hnode *sg_hmap_node(const struct hmap *m, const char *key);
void *sg_hmap_get(const struct hmap *m, const char *key);
struct hnode *sg_hmap_put(struct hmap *m, const char *key);
void **sg_hmap_values(const struct hmap *m, size_t *n);
void sg_hmap_free(struct hmap *m, void (*freeval)(void *));
void sg_printable(char *dst, size_t len, const char *src);
void sg_ts_short(char *dst, size_t len, const char *ts);
int sg_method_index(const char *m);
bool sg_is_web_port(uint16_t port);
void sg_qnames_init(struct qnames *q);
uint16_t sg_qtype_number(const struct qnames *q, const char *name);
char *sg_common_prefix(const char *a, const char *b);
char *sg_first_segment(const char *path);
char *sg_reversed_labels(const char *host);
void sg_seen_add(struct seen *s, const char *ts, const char *run, unsigned long long n);
void sg_seen_merge(struct seen *d, const struct seen *s);
void sg_seen_text(FILE *f, const struct seen *s, bool denied);

/* plan.c */
bool sg_cidr_allows(const struct sluice_policy *p, int family, const uint8_t *addr, uint8_t proto,
			uint16_t port);
void sg_free_view(void *x);
bool sg_pobs_allowed(struct suggest *s, const struct sluice_policy *p, const struct pobs *o);
bool sg_name_allowed_on(struct suggest *s, const struct sluice_policy *p, const char *name, uint16_t port);
const char *sg_correlate(struct suggest *s, const struct kobs *k, const char **others, size_t *n_others);
void sg_plan(struct suggest *s);

/* entry.c */
void sg_oentry_note(struct oentry *e, char *text);
void sg_oentry_free(struct oentry *e);
void sg_bits_to_ranges(const uint8_t *bits, struct sluice_port_range **out, size_t *n, bool *wider);
void sg_ranges_text(FILE *f, const struct sluice_port_range *r, size_t n);
void sg_methods_text(FILE *f, unsigned m);
const char *sg_via_text(enum via v);
int sg_cmp_puse(const void *a, const void *b);
char *sg_target_why(const struct target *t);
void sg_target_entry(struct suggest *s, const struct target *t, struct oentry *e);
void sg_existing_entry(const struct sluice_entry *x, struct oentry *e);
void sg_yq(FILE *f, const char *s);
void sg_ycomment_x(FILE *f, const char *prefix, const char *indent, const char *text, bool item);
void sg_ycomment(FILE *f, const char *prefix, const char *indent, const char *text);
void sg_yentry(FILE *f, const char *prefix, const char *indent, const struct oentry *e, bool notes);
bool sg_wildcard_loads(const char *parent);
void sg_yoffer(FILE *f, const char *prefix, const struct offer *o, struct oentry *es);

/* render.c */
void sg_render_free(struct render *r);
char *sg_policy_text(struct suggest *s, struct render *r, bool comments);
void sg_notes_text(struct suggest *s, FILE *f, const char *prefix);

/* against.c */
void sg_diff_text(struct suggest *s, struct render *r, const struct sluice_policy *merged, FILE *f);

#endif
