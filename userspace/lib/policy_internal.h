/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_internal.h - helpers shared by policy.c, normalise.c, digest.c and
 * lint.c.  Not part of the API: include policy.h instead.
 */
#ifndef SLUICE_POLICY_INTERNAL_H
#define SLUICE_POLICY_INTERNAL_H

#include "policy.h"

/* Hard limits on what the parser accepts (a policy is a small file). */
#define SLUICE_POLICY_MAX_BYTES   (64u << 20) /* 64 MiB of YAML */
#define SLUICE_POLICY_MAX_DEPTH   16          /* YAML nesting */
#define SLUICE_POLICY_MAX_NODES   4000000     /* ~ 200,000 entries */
#define SLUICE_POLICY_MAX_ENTRIES 200000      /* the benchmarks use 100,000 */
#define SLUICE_POLICY_MAX_PORTS   256         /* items in one ports list */
#define SLUICE_POLICY_MAX_QTYPES  64
#define SLUICE_PATH_MAX           2048        /* url path prefixes and request paths */

/* The YAML tree policy.c builds (each node keeps its position). */
enum ynode_type { YN_SCALAR, YN_SEQ, YN_MAP };

struct ynode {
	enum ynode_type type;
	unsigned line, col;
	char *value;          /* scalar bytes, NUL-terminated (may hold a NUL) */
	size_t len;
	bool plain;           /* plain scalar (type is resolved from content) */
	struct ynode **kids;  /* seq: items; map: key, value, key, value ... */
	size_t n, cap;
};

/* One load: the file name for errors, the error, the policy being built. */
struct ctx {
	const char *file;
	struct sluice_policy_error *err;
	size_t n_nodes;
	struct sluice_policy *policy;
};

/* policy_yaml.c: the tree of `len` bytes of YAML `buf` (exactly one
 * document, no anchors, aliases or tags), NULL with c->err set; its
 * release. */
struct ynode *sluice_ytree(struct ctx *c, const char *buf, size_t len);
void sluice_ynode_free(struct ynode *n);

/* policy_yaml.c's node helpers: fail (sets c->err, returns -1; _at: at a
 * line and column), a node shown for a message, null / integer / boolean
 * tests, what a node is ("a string", ...), a string value, a mapping or
 * sequence value, known and unique keys, a key's value (NULL when absent;
 * *keynode its key). */
__attribute__((format(printf, 3, 4)))
int sluice_yfail(struct ctx *c, const struct ynode *n, const char *fmt, ...);
__attribute__((format(printf, 4, 5)))
int sluice_yfail_at(struct ctx *c, unsigned line, unsigned col, const char *fmt, ...);
const char *sluice_yshown(const struct ynode *n, char *buf, size_t len);
bool sluice_yis_null(const struct ynode *n);
bool sluice_yis_int(const struct ynode *n);
bool sluice_yis_bool(const struct ynode *n);
const char *sluice_ykind(const struct ynode *n);
int sluice_ywant_string(struct ctx *c, const struct ynode *key, const struct ynode *v);
int sluice_ywant_kind(struct ctx *c, const struct ynode *key, const struct ynode *v, enum ynode_type t);
int sluice_ycheck_keys(struct ctx *c, const struct ynode *map, const char *const *known, const char *where);
const struct ynode *sluice_ymap_get(const struct ynode *map, const char *key, const struct ynode **keynode);

/* policy_cred.c: the `credentials:` section of `root` into p->credentials
 * (before the allow entries are parsed), `credential:` of the url entry
 * `m` into e->credential (checked against p->credentials), and their
 * release.  0 or -1 with c->err set. */
int sluice_cred_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p);
int sluice_cred_parse_entry(struct ctx *c, const struct ynode *m, struct sluice_entry *e);
void sluice_cred_free(struct sluice_policy *p);

/* policy_fs.c: the `filesystem:` section of `root` into p->fs, and its
 * release.  0 or -1 with c->err set. */
int sluice_fs_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p);
void sluice_fs_free(struct sluice_policy *p);

/* policy_family.c: the `families:` section of `root` into p->families,
 * and its release.  0 or -1 with c->err set. */
int sluice_family_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p);
void sluice_family_free(struct sluice_policy *p);

/* policy_yaml.c: the `why:` of mapping `m` (an item of kind `what`: "host",
 * "family", ...): a string, not blank, no control byte, strdup()ed into
 * *out.  0 or -1 with c->err set. */
int sluice_ywant_why(struct ctx *c, const struct ynode *m, const char *what, char **out);

/* policy_ws.c: `websocket:` of the url entry `m` (its methods parsed)
 * into e->websocket: a plain boolean, and true only with GET among the
 * methods.  0 or -1 with c->err set. */
int sluice_ws_parse_entry(struct ctx *c, const struct ynode *m, struct sluice_entry *e);

/* policy_tls.c: the `tls:` section of `root` into p->tls, and its
 * release.  0 or -1 with c->err set. */
int sluice_tls_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p);
void sluice_tls_free(struct sluice_policy *p);

/* digest.c: compute p->digest from the canonical serialisation. */
int sluice_policy_compute_digest(struct sluice_policy *p);

/* policy.c: the public-suffix test used for wildcard entries.  Returns 1
 * when `name` (normalised) is a public suffix, 0 when it is not, -1 when
 * no public suffix list is available (callers fail closed). */
int sluice_is_public_suffix(const char *name);

/* Is `port` inside one of the ranges? */
bool sluice_ports_contain(const struct sluice_port_range *r, size_t n, uint16_t port);

/* Format "a-b" or "a" into buf. */
const char *sluice_port_range_str(const struct sluice_port_range *r, char *buf, size_t len);

/* Canonical cidr text "198.51.100.0/24" into buf (>= 64 bytes). */
const char *sluice_cidr_str(const struct sluice_entry *e, char *buf, size_t len);

/* policy_expiry.c: is `key` one of the change-control keys of an entry
 * (expires, owner, ticket)? */
bool sluice_entry_meta_key(const char *key);

/* policy_expiry.c: set the change-control key `key` of `e` from the string
 * scalar `value` (`len` bytes).  Returns 0, or -1 with the message in why. */
int sluice_entry_meta_set(struct sluice_entry *e, const char *key, const char *value, size_t len, char *why,
			  size_t whylen);

/* policy_prog.c: `programs:` of the entry `m` into e->programs (each path
 * resolved to its file now: a path that does not exist or is not a regular
 * file is an error at its line), and their release.  0 or -1 with c->err
 * set.  Refused on unix entries. */
int sluice_prog_parse_entry(struct ctx *c, const struct ynode *m, struct sluice_entry *e);
void sluice_prog_free(struct sluice_entry *e);

#endif
