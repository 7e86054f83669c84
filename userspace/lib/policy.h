/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy.h - the one policy parser, normaliser and matcher of sluice, used
 * by the loader, the proxy and the resolver alike.  Format: docs/policy.md.
 *
 * A policy is a positive allowlist (YAML, version 1).  Loading either
 * returns a complete, validated, normalised policy or an error naming
 * file:line:column and the problem; there is never a half-loaded policy.
 */
#ifndef SLUICE_POLICY_H
#define SLUICE_POLICY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLUICE_HOST_MAX 253          /* RFC 1035 2.3.4, presentation form without the trailing dot */
#define SLUICE_DIGEST_HEX_LEN 64     /* SHA-256 in lower-case hex */

enum sluice_entry_kind {
	SLUICE_ENTRY_HOST = 1,  /* proxied TCP, host level (HTTP Host / TLS SNI / CONNECT) */
	SLUICE_ENTRY_URL  = 2,  /* proxied TCP, full-URL rules (http://, and https:// with TLS inspection) */
	SLUICE_ENTRY_CIDR = 3,  /* direct, enforced in the kernel */
	SLUICE_ENTRY_UNIX = 4,  /* a unix socket outside the sandbox it may connect or send to (kernel) */
};

#define SLUICE_UNIX_PATH_MAX 107     /* sun_path is 108 bytes: a path and its NUL, or NUL + abstract name */

enum sluice_mode {
	SLUICE_MODE_ENFORCE = 0,
	SLUICE_MODE_AUDIT   = 1,
};

enum sluice_dns_on_deny {
	SLUICE_DNS_NXDOMAIN = 0,
	SLUICE_DNS_REFUSED  = 1,
};

struct sluice_port_range {
	uint16_t lo;   /* inclusive, 1..65535 */
	uint16_t hi;   /* inclusive, lo <= hi */
};

struct sluice_entry {
	enum sluice_entry_kind kind;
	unsigned index;           /* position in the allow list, 0-based */
	unsigned line, column;    /* 1-based position of the entry in the file */
	char *name;               /* stable rule name for logs, e.g. "allow[2] host:api.example.com" */
	char *why;                /* required justification, as written */
	struct sluice_port_range *ports;  /* host, url (derived from the URL) and cidr */
	size_t n_ports;

	/* SLUICE_ENTRY_HOST: normalised name (lower case, punycode, no trailing
	 * dot).  For a wildcard "*.pkg.example.org", host is "pkg.example.org"
	 * and wildcard is true: it matches one or more labels under it, never
	 * the apex itself. */
	char *host;
	bool wildcard;
	/* `inspect: true`: TLS to this name is terminated by the proxy (with
	 * the sandbox's CA) and every request inside is logged; any path and
	 * method pass.  false: a passthrough (SNI-checked, not decrypted). */
	bool inspect;

	/* SLUICE_ENTRY_URL: scheme ("http" or "https"), normalised host,
	 * port (explicit or the scheme's default), path prefix (normalised,
	 * starts with '/'), and upper-case methods (default GET, HEAD). */
	char *url_scheme;
	char *url_host;
	uint16_t url_port;
	char *url_path;
	char **methods;
	size_t n_methods;
	/* `websocket: true` (userspace/lib/policy_ws.c): a GET this entry
	 * allows may upgrade to a WebSocket (RFC 6455), which the proxy then
	 * relays both ways.  false: an upgrade is refused (403
	 * upgrade_not_supported). */
	bool websocket;

	/* SLUICE_ENTRY_CIDR: family AF_INET or AF_INET6, address in network
	 * byte order (IPv4 in addr[0..3]), prefix length, and protocol
	 * IPPROTO_TCP or IPPROTO_UDP.  Host bits are zero (checked). */
	int family;
	uint8_t addr[16];
	uint8_t prefix_len;
	uint8_t protocol;

	/* SLUICE_ENTRY_UNIX: an absolute path (exact, or every socket below a
	 * directory when it ends in '/'), or an abstract name (written
	 * "@name", stored without the '@'; exact).  Never empty, no NUL, no
	 * "." or ".." segment, at most SLUICE_UNIX_PATH_MAX bytes. */
	char *unix_path;
	bool unix_abstract;
	bool unix_prefix;

	/* Change control (userspace/lib/policy_expiry.c, docs/policy.md):
	 * `expires:` as Unix time in seconds (UTC; 0: never expires), and the
	 * `owner:` and `ticket:` strings as written (NULL: none), which the
	 * log lines of this entry carry.  An expired entry allows nothing:
	 * the matchers below skip it from that second on. */
	int64_t expires;
	char *owner;
	char *ticket;
	/* SLUICE_ENTRY_URL only: `credential:`, the name of one of the
	 * policy's credentials (NULL: none) and its index in p->credentials.
	 * A request this entry allows gets that credential's header. */
	char *credential;
	size_t credential_idx;
	/* `programs:` (userspace/lib/policy_prog.c, docs/policy.md "Per-program
	 * entries"; host, url and cidr entries): the entry applies only to
	 * connections made by one of these executables, sorted by path, each
	 * resolved to its file when the policy was loaded.  n_programs 0: any
	 * program. */
	struct sluice_program *programs;
	size_t n_programs;
};

/*
 * An executable as the kernel identifies the file a process runs
 * (current->mm->exe_file): its device in the kernel's encoding
 * (major << 20 | minor, sluice_kdev()) and its inode number.
 */
struct sluice_exe_id {
	uint32_t dev;
	uint64_t ino;
};

/* One path of `programs:` and the file it named at load (stat(2),
 * symlinks followed: the file execve() runs). */
struct sluice_program {
	char *path;               /* absolute, as written (no "." or ".." segment) */
	struct sluice_exe_id id;
	unsigned line, column;
};

/*
 * One `credentials:` item (docs/policy.md "Credentials").  The secret
 * itself is never part of a policy: sluice_secrets_load() reads it.
 */
struct sluice_credential {
	char *name;               /* 1-64 of A-Z a-z 0-9 . _ -; in log lines (sluice.credential) */
	char *file;               /* `file:` as written (absolute path), or NULL */
	char *header;             /* the template as written: "Authorization: Bearer {secret}" */
	char *header_name;        /* its field name: "Authorization" */
	char *env;                /* `env:`: variable given the placeholder in the sandbox, or NULL */
	bool allow_plain_http;    /* `allow_plain_http: true`: may be used by http:// entries */
	unsigned line, column;    /* 1-based position of the item */
	unsigned file_line, file_column;  /* of the `file:` value (0 when absent) */
};

/* A path of the `filesystem:` section and where it was written. */
struct sluice_fs_path {
	char *path;               /* absolute, no ".." segment, no NUL, as written */
	unsigned line, column;
};

#define SLUICE_POLICY_MAX_FS_PATHS 32   /* each of read_only, read_write, hide */

/*
 * `filesystem:` (userspace/lib/policy_fs.c, docs/filesystem.md): what
 * `sluice run`'s sandbox profile lets CMD see and write, as --workdir,
 * --ro, --rw and --hide do (the command line adds to it; --workdir
 * replaces the policy's).  The paths are checked for form at load; for
 * existence, and for system directories made writable, by `sluice run`.
 */
struct sluice_policy_fs {
	bool present;             /* the section was written (even empty) */
	struct sluice_fs_path workdir;   /* path NULL: not set */
	struct sluice_fs_path *read_only, *read_write, *hide;
	size_t n_read_only, n_read_write, n_hide;
	unsigned line;            /* of the `filesystem:` key */
};

/* One `families:` item (userspace/lib/policy_family.c, docs/policy.md
 * "Socket families"): a socket family the sandbox may create sockets of. */
struct sluice_policy_family {
	unsigned family;          /* AF_* number, < 64 */
	const char *name;         /* static: "netlink", "packet", "vsock", ... */
	char *why;
	unsigned line, column;
};

/*
 * `families:`: the socket families beyond inet, inet6, unix and netlink
 * route/sock_diag that sockets may be made of (everything else is refused
 * at socket(): the BPF LSM's socket_create where it loads, else sluice
 * run's seccomp filter).  Sorted by family; `mask` has bit `family` set
 * for each.
 */
struct sluice_policy_families {
	bool present;             /* the section was written (even empty) */
	struct sluice_policy_family *items;
	size_t n;
	uint64_t mask;
	unsigned line;            /* of the `families:` key */
};

/*
 * `tls:` (userspace/lib/policy_tls.c, docs/policy.md "TLS"): the CA
 * bundle trusted for the origins of inspected names, read by the loader
 * (upstream_ca.h), never by the proxy.
 */
struct sluice_policy_tls {
	bool present;             /* `tls:` written (it is then in the digest) */
	char *upstream_ca;        /* absolute path; NULL: none */
	unsigned line, column;    /* of its value */
};

struct sluice_policy {
	char *path;               /* file it came from, or "<built-in>" */
	char *name;               /* `name:`; appears in every log line */
	int version;              /* always 1 for now */
	enum sluice_mode mode;    /* `mode:` (audit|enforce), default enforce */
	enum sluice_dns_on_deny dns_on_deny;
	uint16_t *dns_qtypes;     /* RR type numbers (RFC 1035 3.2.2), default A, AAAA */
	size_t n_dns_qtypes;
	struct sluice_entry *entries;
	size_t n_entries;
	struct sluice_credential *credentials;   /* `credentials:`, in file order */
	size_t n_credentials;
	struct sluice_policy_fs fs;              /* `filesystem:` (sluice run's sandbox profile) */
	struct sluice_policy_families families;  /* `families:` (socket families, policy_family.c) */
	struct sluice_policy_tls tls;            /* `tls:` */
	char digest[SLUICE_DIGEST_HEX_LEN + 1]; /* SHA-256 of the canonical form, hex */
};

/* A load error: where and what.  line/column are 1-based, 0 when unknown. */
struct sluice_policy_error {
	char file[256];
	unsigned line, column;
	char message[256];
};

/*
 * Parse and validate the policy in `path`.  On success returns 0 and sets
 * *out to a policy the caller frees with sluice_policy_free().  On failure
 * returns -1 (-errno semantics are not used) and fills *err; *out is NULL.
 * Formats the error as "file:line:column: message" with
 * sluice_policy_error_str().
 */
int sluice_policy_load_file(const char *path, struct sluice_policy **out,
			    struct sluice_policy_error *err);

/* Same as sluice_policy_load_file() from memory; `name` is used as the file
 * name in errors.  `buf` need not be NUL-terminated. */
int sluice_policy_load_buffer(const char *name, const char *buf, size_t len,
			      struct sluice_policy **out,
			      struct sluice_policy_error *err);

/* The built-in default policy: allows nothing.  Caller frees it. */
struct sluice_policy *sluice_policy_default(void);

void sluice_policy_free(struct sluice_policy *p);

/* "file:line:column: message" into buf (always NUL-terminated). */
const char *sluice_policy_error_str(const struct sluice_policy_error *err,
				    char *buf, size_t len);

/*
 * Normalise a host name as the policy, the proxy and the resolver all must:
 * lower case, trailing dot removed, IDNA (UTS#46 / IDNA2008 via libidn2) to
 * punycode.  Rejects NUL/control bytes, spaces, '@', '%', brackets, empty
 * labels, labels over 63 and names over 253 bytes.  IP literals are NOT
 * host names: returns -1 with "ip literal" for them (use
 * sluice_ip_normalise()).  Writes at most `len` bytes including the NUL.
 * Returns 0, or -1 with a static reason in *why (may be NULL).
 */
int sluice_host_normalise(const char *in, char *out, size_t len, const char **why);

/*
 * Parse an IP literal strictly: IPv4 only as a canonical dotted quad (no
 * hex, octal, decimal-integer or short forms), IPv6 per RFC 4291 (brackets
 * allowed), ::ffff:a.b.c.d reduced to IPv4.  On success returns 0, sets
 * *family (AF_INET/AF_INET6) and addr (network byte order, 4 or 16 bytes);
 * otherwise -1.  Also used to detect "this host name is an IP literal"
 * including non-canonical spellings such as 0x7f.1 or 2130706433 (returns 1
 * for those: an IP, but not canonical — always refuse them).
 */
int sluice_ip_normalise(const char *in, int *family, uint8_t addr[16]);

/*
 * Does `entry` (kind HOST, or URL for its host) allow the normalised name
 * `host`?  Exact names compare equal; a wildcard matches only on a label
 * boundary with at least one label in front: "*.x" matches "a.x", "a.b.x",
 * never "x", "evilx" or "x.evil".
 */
bool sluice_host_match(const struct sluice_entry *entry, const char *host);

/* First HOST entry allowing normalised `host` on TCP `port`, or NULL. */
const struct sluice_entry *sluice_policy_match_host(const struct sluice_policy *p,
						    const char *host, uint16_t port);

/*
 * First URL entry allowing the request, or NULL.  `scheme` "http"/"https",
 * `host` normalised, `method` upper case, `path` already normalised by
 * sluice_url_path_normalise().  The path matches a prefix on a segment
 * boundary: prefix "/debian/" matches "/debian/x"; prefix "/debian"
 * matches "/debian" and "/debian/x" but not "/debianx".
 */
const struct sluice_entry *sluice_policy_match_url(const struct sluice_policy *p,
						   const char *scheme, const char *host,
						   uint16_t port, const char *method,
						   const char *path);

/*
 * Normalise a request path (RFC 3986 5.2.4 remove_dot_segments, query and
 * fragment cut off at '?' / '#').  Refuses (returns -1 with *why) "%2F",
 * "%5C", "%00", any control byte, backslash, and bad percent escapes.
 * Writes at most `len` bytes including the NUL.  Returns 0 or -1.
 */
int sluice_url_path_normalise(const char *in, char *out, size_t len, const char **why);

/*
 * Does the path prefix `prefix` cover `path` (both normalised by
 * sluice_url_path_normalise(), prefix not empty) on a segment boundary, as
 * a url entry's path does: "/debian/" covers "/debian/x"; "/debian" covers
 * "/debian" and "/debian/x" but never "/debianx".  (normalise.c; also used
 * by `sluice policy suggest` to group paths under an entry's prefix.)
 */
bool sluice_path_prefix_match(const char *prefix, const char *path);

/*
 * Is TLS to the normalised name `host` on TCP `port` inspected (terminated
 * by the proxy)?  True when a URL entry with scheme "https" names exactly
 * that host and port, or a HOST entry with `inspect: true` allows it on
 * that port.  Such a name's requests are decided one by one with
 * sluice_policy_match_url(p, "https", ...), then host entries.
 */
bool sluice_policy_inspects(const struct sluice_policy *p, const char *host, uint16_t port);

/* Does the policy inspect any name at all (some https url entry or some
 * `inspect: true` host entry)?  Without one, no sandbox CA is needed. */
bool sluice_policy_has_inspection(const struct sluice_policy *p);

/* Is there any HOST or URL entry naming TCP `port`?  (kernel proxy ports) */
bool sluice_policy_proxies_port(const struct sluice_policy *p, uint16_t port);

/* Does the policy allow the DNS name `host` (normalised) to be resolved:
 * any HOST entry or URL host that matches it. */
bool sluice_policy_allows_name(const struct sluice_policy *p, const char *host);

/* The first entry of p, in file order, of kind HOST or URL that matches
 * the normalised name `host` (sluice_host_match()), by a scan of the
 * entries; NULL: none (or p or host NULL).  What sluice_policy_allows_name()
 * asks, and what sluice_name_index_first() must find. */
const struct sluice_entry *sluice_policy_name_entry(const struct sluice_policy *p, const char *host);

/*
 * An index of p's HOST entries and URL hosts by name (policy_names.c), for
 * a caller that asks per message, as the resolver does per query.  Built
 * from p as it is (borrows p's names: free it before p, rebuild it after
 * changing p's entries).  NULL on ENOMEM.
 */
struct sluice_name_index;
struct sluice_name_index *sluice_name_index_new(const struct sluice_policy *p);
void sluice_name_index_free(struct sluice_name_index *ix);

/* The first entry of p, in file order, of kind HOST or URL whose name
 * matches `host` (normalised, at most 253 bytes; sluice_host_match(), so
 * expiry counts): what a scan of p's entries finds, in time that grows with
 * the labels of `host`, not the entries.  NULL: none (or ix or p NULL). */
const struct sluice_entry *sluice_name_index_first(const struct sluice_name_index *ix,
						   const struct sluice_policy *p, const char *host);

/* Is RR type `qtype` (RFC 1035 number) in the policy's dns.qtypes? */
bool sluice_policy_allows_qtype(const struct sluice_policy *p, uint16_t qtype);

/* Socket families (userspace/lib/policy_family.c) ---------------------- */

/* The policy name of socket family `family` (AF_* number: "netlink",
 * "packet", "vsock", ...), or NULL for a number without one. */
const char *sluice_family_name(unsigned family);

/* The AF_* number of the family named `name` (as sluice_family_name()),
 * or -1. */
int sluice_family_by_name(const char *name);

/*
 * May a socket of `family` (AF_*) and `protocol` be made under policy `p`
 * (NULL: the default)?  Always for AF_UNIX, AF_INET, AF_INET6 and
 * AF_NETLINK with NETLINK_ROUTE or NETLINK_SOCK_DIAG; any other only when
 * `families:` names it (naming netlink allows every netlink protocol).
 */
bool sluice_policy_allows_family(const struct sluice_policy *p, int family, int protocol);

/* The families `families:` names, comma-separated in family order
 * ("netlink,packet"; "" for none), into buf (always NUL-terminated). */
const char *sluice_policy_families_str(const struct sluice_policy *p, char *buf, size_t len);

/* Expiring entries (userspace/lib/policy_expiry.c) ------------------------ */

/* Has `e` expired at Unix time `now` (seconds)?  False for entries without
 * `expires:`.  `now` < 0: the current CLOCK_REALTIME second. */
bool sluice_entry_expired(const struct sluice_entry *e, int64_t now);

/*
 * Parse an RFC 3339 date-time ("2026-12-31T18:00:00Z", or with an offset
 * "+02:00" / "-05:30"; 'T' or 't', 'Z' or 'z'; no fractional seconds) into
 * Unix seconds.  Returns 0, or -1 with a static reason in *why.
 */
int sluice_rfc3339_parse(const char *s, int64_t *out, const char **why);

/* `t` (Unix seconds) as "2026-12-31T18:00:00Z" into buf (>= 21 bytes). */
const char *sluice_rfc3339_str(int64_t t, char *buf, size_t len);

/* The change-control fields of a log line about entry `e` (NULL: none):
 * sluice.rule_owner, sluice.rule_ticket, sluice.rule_expires, each only
 * when the entry has it (docs/events.md). */
struct sluice_line;
void sluice_entry_log_fields(struct sluice_line *l, const struct sluice_entry *e);

/* Per-program entries (userspace/lib/policy_prog.c) ---------------------- */

/* The kernel's encoding of a stat(2) st_dev (what inode->i_sb->s_dev holds). */
uint32_t sluice_kdev(uint64_t st_dev);

/* Does entry `e` apply to a connection made by executable `who`?  True for
 * an entry without `programs:`; for one with, true only when `who` is one
 * of them.  `who` NULL: the question is not asked (tools that reason about
 * what the policy allows to some program): true. */
bool sluice_entry_allows_program(const struct sluice_entry *e, const struct sluice_exe_id *who);

/* Does any entry of `p` carry `programs:`? */
bool sluice_policy_has_programs(const struct sluice_policy *p);

/* Is `path` (a `programs:` path; its symlink target is looked at too) an
 * interpreter, a shell or another program that runs what it is told
 * (python, sh, node, env, ld.so, busybox, ...)?  Returns the name that
 * says so, or NULL. */
const char *sluice_program_interpreter(const char *path);

/* The path of `e`'s program that is `who`, or NULL. */
const char *sluice_entry_program_path(const struct sluice_entry *e, const struct sluice_exe_id *who);

/*
 * The executable process `pid` runs now (readlink of /proc/PID/exe) into
 * buf, if it is the file `who` (when not NULL; checked with stat(2)): the
 * `process.executable` of a log line.  Returns buf, or NULL (gone, another
 * file since, no permission).
 */
const char *sluice_pid_executable(int pid, const struct sluice_exe_id *who, char *buf, size_t len);

/* As sluice_policy_match_host() and sluice_policy_match_url(), for a
 * connection made by executable `who` (NULL: any program): entries whose
 * `programs:` do not name it are skipped. */
const struct sluice_entry *sluice_policy_match_host_for(const struct sluice_policy *p, const char *host,
							uint16_t port, const struct sluice_exe_id *who);
const struct sluice_entry *sluice_policy_match_url_for(const struct sluice_policy *p, const char *scheme,
						       const char *host, uint16_t port, const char *method,
						       const char *path, const struct sluice_exe_id *who);
bool sluice_policy_inspects_for(const struct sluice_policy *p, const char *host, uint16_t port,
				const struct sluice_exe_id *who);

/* Lint findings (sluice policy check) ------------------------------------ */

enum sluice_lint_code {
	SLUICE_LINT_RELAY = 1,        /* relay-capable / exfiltration-friendly host (policies/relays.txt) */
	SLUICE_LINT_WILDCARD,         /* a wildcard host entry */
	SLUICE_LINT_WIDE_CIDR,        /* wider than /24 (v4) or /48 (v6) */
	SLUICE_LINT_SPECIAL_RANGE,    /* private, loopback, link-local, CGNAT, metadata ... */
	SLUICE_LINT_DNS_PORT,         /* port 53 or 853 in a cidr entry */
	SLUICE_LINT_PLAIN_HTTP_BODY,  /* url on http:// with methods that carry bodies */
	SLUICE_LINT_UNIX_DAEMON,      /* unix socket of a daemon that acts for its clients (docker, dbus, ...) */
	SLUICE_LINT_URL_SHADOWED,     /* an https:// url entry whose name a host entry allows whole */
	SLUICE_LINT_CREDENTIAL_PLAIN_HTTP, /* a credential sent on http:// (allow_plain_http: true) */
	SLUICE_LINT_PROGRAM_INTERPRETER,   /* `programs:` names an interpreter or a shell: every script it runs */
	SLUICE_LINT_FAMILY,           /* a `families:` item: sockets no inet hook judges */
};

#define SLUICE_LINT_NO_ENTRY UINT_MAX  /* sluice_lint.entry of a finding about a families item */

struct sluice_lint {
	enum sluice_lint_code code;
	const char *code_name;    /* stable: "relay", "wildcard", ... */
	unsigned entry;           /* index into entries, or SLUICE_LINT_NO_ENTRY */
	const char *family;       /* static family name when entry is SLUICE_LINT_NO_ENTRY, else NULL */
	unsigned line, column;
	char message[512];
};

/*
 * Lint `p` against the relay list file `relays_path` (NULL: the installed
 * default, policies/relays.txt beside the binary or SLUICE_RELAYS).  Returns
 * the number of findings (>= 0) and a malloc'd array in *out (caller frees),
 * or -1 with errno set if the relay list cannot be read.
 */
int sluice_policy_lint(const struct sluice_policy *p, const char *relays_path,
		       struct sluice_lint **out);

/* Additions (issue 3) ------------------------------------------------------ */

/* "host", "url", "cidr" or "unix" ("?" for anything else). */
const char *sluice_entry_kind_name(enum sluice_entry_kind kind);

/* Mnemonic of a DNS RR type ("A", "AAAA", ...) or NULL when unknown. */
const char *sluice_qtype_name(uint16_t qtype);

/* The mnemonic of qtype, or for a type without one `unknown_prefix` and its
 * number in buf (len bytes): "TYPE65280" (RFC 3597 section 5) with prefix
 * "TYPE", "65280" (as a policy's dns.qtypes takes it) with "".  Returns
 * the mnemonic or buf. */
const char *sluice_qtype_str(uint16_t qtype, const char *unknown_prefix, char *buf, size_t len);

/* Does `e` (HOST or CIDR, or URL for its one port) name TCP/UDP `port`? */
bool sluice_entry_has_port(const struct sluice_entry *e, uint16_t port);

/*
 * Is `addr` (family AF_INET/AF_INET6, network byte order) inside the cidr
 * entry `e`?  False for other kinds.  The one CIDR matcher
 * (netaddr_in_prefix(), userspace/lib/netaddr.c): a v4-mapped address is
 * matched as IPv4, as the kernel does; protocol and ports are not looked at.
 */
bool sluice_entry_cidr_contains(const struct sluice_entry *e, int family, const uint8_t *addr);

/* What sluice_policy_cidr_tcp() found: allowed, or why not. */
enum sluice_cidr_verdict {
	SLUICE_CIDR_ALLOWED,
	SLUICE_CIDR_NO_ENTRY,   /* no cidr entry names this TCP address and port */
	SLUICE_CIDR_EXPIRED,    /* only entries past their `expires:` do */
	SLUICE_CIDR_PROGRAM,    /* only entries whose `programs:` do not name `who` do */
};

/*
 * Does a cidr entry of `p` allow a TCP connection to `addr` (family AF_INET
 * or AF_INET6, network byte order; v4-mapped counts as IPv4) port `port`
 * (host order) made by the executable `who` (NULL: any; a `programs:` entry
 * then allows it) at `now` (Unix seconds, -1: the clock's)?  The kernel's
 * connect-time rule (cidr, protocol, ports, expiry, programs) over the
 * parsed policy (userspace/lib/policy_cidr.c).
 */
enum sluice_cidr_verdict sluice_policy_cidr_tcp(const struct sluice_policy *p, int family, const uint8_t *addr,
						uint16_t port, const struct sluice_exe_id *who, int64_t now);

/*
 * The canonical serialisation the digest is the SHA-256 of (compact JSON,
 * sorted keys, normalised values, entries in order; see docs/policy.md).
 * Returns a malloc'd NUL-terminated string (length in *len if non-NULL)
 * the caller frees, or NULL on allocation failure.
 */
char *sluice_policy_canonical(const struct sluice_policy *p, size_t *len);

#endif /* SLUICE_POLICY_H */
