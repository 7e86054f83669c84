/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_internal.h - what the parts of `sluice daemon` share (daemon.c:
 * requests and the event loop; daemon_sandbox.c: a sandbox's record and
 * state files; daemon_children.c: its proxy and resolver; daemon_netns.c:
 * the kept network namespaces; daemon_adopt.c: re-adoption after a
 * restart; daemon_status.c: status and metrics).  Not an API: one
 * program's pieces.
 */
#ifndef SLUICE_DAEMON_INTERNAL_H
#define SLUICE_DAEMON_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "children.h"
#include "credentials.h"
#include "ctl_content.h"
#include "ctlsrv.h"
#include "event_ring.h"
#include "events.h"
#include "evlog.h"
#include "expiry_watch.h"
#include "labels.h"
#include "metrics.h"
#include "policy.h"
#include "policy_sig.h"
#include "sandbox.h"

#define ACCT_N (2 + 2 * SLUICE_DS__MAX)

/* Which children start_children() starts. */
#define CHILD_PROXY    1u
#define CHILD_RESOLVER 2u
#define CHILD_BOTH     (CHILD_PROXY | CHILD_RESOLVER)

struct dsandbox {
	char name[64];
	char cgroup[PATH_MAX];
	char netns[PATH_MAX];       /* bind mount under state dir */
	char policy_path[PATH_MAX]; /* copy under state dir */
	int policy_fd;              /* the policy in force: a sealed memfd of its bytes, for the children */
	char *upstream_ca;          /* the policy's tls.upstream_ca text, as read at attach or reload
				     * (kept in NAME.upstream-ca.pem); NULL none */
	size_t n_upstream_ca;
	char mode[16];
	/* the container it is (sluice oci-hook, attach --container); "" none */
	char container_id[128], container_name[128], runtime[16];
	struct sluice_labels labels; /* labels.KEY on its lines (attach --label) */
	/* where its proxy and resolver dial from: "" the sandbox's netns, "host"
	 * the daemon's, else a bind mount under the state dir (--upstream-netns) */
	char upstream[PATH_MAX];
	uint64_t cgroup_id;
	struct sluice_sandbox sb;
	struct sluice_policy *policy;
	struct sluice_signer signer; /* --allowed-signers: who signed the policy in force */
	struct sluice_expiry_watch expiry; /* entry-expired lines of the policy in force */
	struct sluice_listeners l;  /* kept: children are restarted on reload */
	pid_t proxy_pid, resolver_pid;
	unsigned proxy_gen, resolver_gen; /* the events file generation each writes (daemon_follow_gen) */
	struct sluice_restarts proxy_restarts, resolver_restarts;
	char ca_path[PATH_MAX];     /* the sandbox CA's certificate (TLS inspection); "" none */
	char *ca;                   /* the sandbox CA, key and certificate (sandbox_ca.h); NULL none */
	char *ca_permitted;         /* the names it permits (sluice_ca_permitted) */
	struct sluice_event_meta meta;
	struct sluice_evlog log;    /* this sandbox's lines (its envelope, its loss counts) */
	bool log_ready;
	struct sluice_event_ring *ring; /* where its events are: D.ring, or a previous daemon's ring */
	struct sluice_consumer consumer;
	bool consumer_ok;
	uint64_t reloads_ok, reloads_refused; /* since the daemon started (metrics) */
	/* credentials: `--secret NAME=FILE` sources (paths, kept: each reload
	 * reads them again) and the secrets read from them (credentials.h) */
	char *secret_arg[SLUICE_SECRET_ARGS_MAX];
	struct sluice_secret_source secret_src[SLUICE_SECRET_ARGS_MAX];
	size_t n_secret_src;
	struct sluice_secrets secrets;
	uint64_t saved_acct[ACCT_N]; /* the loss counts as last written to NAME.json */
	bool acct_warned;           /* said once that NAME.json cannot be written */
	struct dsandbox *next;
};

struct daemon_globals {
	char state_dir[200];
	char sock_path[PATH_MAX];
	char events_path[PATH_MAX];
	int events;                 /* O_APPEND fd, one write per line */
	unsigned long long events_max; /* --events-max-size: bytes (0: no cap) */
	unsigned events_keep;       /* --events-keep: rotated files kept (FILE.1 .. FILE.N) */
	unsigned long long events_rotations; /* since start (status) */
	struct sluice_evlog log;    /* daemon-wide lines (no sandbox) */
	/* the event ring buffer of the sandboxes this daemon attaches (made at
	 * the first attach), and those of sandboxes a previous daemon attached
	 * that this one adopted, one per ring (event_ring.h) */
	struct sluice_event_ring *ring;
	struct sluice_event_ring *adopted_rings;
	uint64_t ring_bytes;        /* --event-ring: the size of D.ring */
	struct event_base *base;
	struct dsandbox *sandboxes;
	char proxy_bin[PATH_MAX], resolver_bin[PATH_MAX];
	const char *upstream_dns;
	char **proxy_extra, **resolver_extra;
	bool use_lsm;               /* load the BPF LSM programs where the kernel has the BPF LSM */
	bool require_lsm;           /* refuse a sandbox the LSM programs cannot guard */
	bool no_zygote;             /* --no-zygote: every proxy and resolver exec'd (children.h) */
	const char *metrics_addr;   /* --metrics IP:PORT, or NULL */
	struct sluice_metrics *metrics;
	bool signed_mode;           /* --allowed-signers: every policy must carry a valid signature */
	struct sluice_signers signers;
	struct sluice_policy *boundary; /* --boundary: every policy must be within it; NULL none */
	char boundary_path[PATH_MAX];
	char policy_dir[PATH_MAX];  /* where policy names resolve (attach "policy_name", the OCI hook) */
	const char *user_group;     /* members may run their own commands (daemon_user.h); "" none */
	bool user_group_set;        /* --user-group given: the group must exist */
	const char *upstream_ca;    /* --upstream-ca FILE: CAs every proxy trusts for origins */
};

extern struct daemon_globals D;

/* daemon.c ------------------------------------------------------------------ */

/* Reopen the events file (D.events keeps its number) and start every
 * sandbox's proxy and resolver again on their sockets, so that every writer
 * moves to the new file; the old children are retired once the new ones
 * are ready.  `why` names the cause in messages ("SIGHUP").  Returns the
 * number of sandboxes; a failure is said (the old file is written on). */
int daemon_events_reopen(const char *why);

/* daemon_rotate.c ----------------------------------------------------------- */

/* On the tick: with --events-max-size, rotate the events file once it has
 * reached the cap (FILE -> FILE.1 ... FILE.N, the oldest removed), then
 * daemon_events_reopen; an events-rotated line names what was removed, an
 * events-rotate-failed line (once per errno) a rename that failed. */
void daemon_events_check_size(void);

/* daemon_sandbox.c ---------------------------------------------------------- */

/* A lifecycle line of s (NULL: the daemon's own), also to stderr. */
void daemon_emit(struct dsandbox *s, const char *action, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same, naming who signed s's policy (attach, reload, adopt). */
void daemon_emit_signed(struct dsandbox *s, const char *action, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The sandbox named `name`, or NULL. */
struct dsandbox *daemon_find(const char *name);
/* D.ring, made at the first call; NULL with -errno in *err. */
struct sluice_event_ring *daemon_ring(int *err);
/* Read s's events from here on: from `r`, or (NULL) from the ring its
 * pinned maps name, found among D.adopted_rings or added there.  0, or
 * -errno with msg. */
int daemon_consume(struct dsandbox *s, struct sluice_event_ring *r, char *msg, size_t msglen);
/* Records of all rings dropped because their sandbox had gone (status). */
uint64_t daemon_events_orphaned(void);
/* "<state>/sandboxes/NAME.EXT" into buf. */
void daemon_state_path(char *buf, size_t len, const char *name, const char *ext);
/* The loss counts to carry across a restart, into v; as NAME.json's
 * "accounting"; taken back from a previous daemon's NAME.json. */
void accounting_now(const struct dsandbox *s, uint64_t v[ACCT_N]);
json_object *accounting_json(const struct dsandbox *s);
void accounting_restore(struct dsandbox *s, json_object *st);
/* s's --secret sources as "NAME=/path" strings (never a secret). */
json_object *secret_sources_json(const struct dsandbox *s);
/* Write NAME.json atomically (owner: record the daemon as the owner too). 0 or -errno. */
int write_state(struct dsandbox *s, bool owner);
/* Drain s's ring buffer; keep its loss accounting on disk if it moved. */
void daemon_drain(struct dsandbox *s);
/* Write len bytes to dst atomically.  0 or -errno. */
int write_bytes(const char *dst, const char *buf, size_t len);
/* s's --secret sources: freed; from a JSON array of "NAME=/path" (0 or -1 with msg). */
void free_secret_args(struct dsandbox *s);
int set_secret_args(struct dsandbox *s, json_object *arr, char *msg, size_t msglen);
/* The secrets of p for s (c: what its client sent; NULL or not sent: s's
 * sources).  0 with *out, or -1 with msg. */
int load_secrets(const struct dsandbox *s, const struct daemon_content *c, const struct sluice_policy *p,
		 struct sluice_secrets *out, char *msg, size_t msglen);
/* Keep c's policy as s's in force (memfd, state copies).  0 or -errno. */
int keep_policy(struct dsandbox *s, struct daemon_content *c);
/* A new record (nothing open), its free, its removal from the list. */
struct dsandbox *new_sandbox(const char *name);
void free_sandbox(struct dsandbox *s);
void unlink_sandbox(struct dsandbox *s);
/* Undo everything of s: detach, stop children, unpin, and unless
 * keep_state remove its state files and kept netns. */
void daemon_teardown(struct dsandbox *s, bool keep_state);
/* s's line envelope for its policy in force (first call: its writer). */
void init_meta(struct dsandbox *s);

/* daemon_children.c --------------------------------------------------------- */

/* Start (or restart) the proxy and/or resolver of s (`which`) with its
 * policy in force; the old ones are retired (drain).  0, or -1 with msg and
 * none of the new children running: s's children are the ones it had. */
int start_children(struct dsandbox *s, unsigned which, char *msg, size_t msglen);
/* Retire (drain) s's proxy and resolver, and start none: a reload whose
 * children could not start leaves no child deciding by the policy it
 * replaced (fail closed; the listeners stay, for the next reload). */
void retire_children(struct dsandbox *s);
/* Stop s's proxy and resolver now (SIGTERM) and wait for them. */
void stop_children(struct dsandbox *s);
/* t's proxy (proxy true) or resolver exited: restart it within its budget,
 * else close its listeners (fail closed); lines either way. */
void child_exited(struct dsandbox *t, bool proxy);
/* pid exited: was it a retired child (then forgotten)? */
bool retired_reaped(pid_t pid);
/* Kill retired children past their deadline; at the daemon's stop, every one. */
void retired_expire(void);
void retired_stop_all(void);
/* The oldest events file generation a living proxy or resolver (retired
 * or not) writes: daemon_follow_settle's argument. */
unsigned children_oldest_gen(void);

/* daemon_netns.c ------------------------------------------------------------ */

/* Bind-mount the netns at src onto the file dst (made).  0 or -errno. */
int keep_netns(const char *src, const char *dst);
/* Hand the kept netns at path to systemd's fd store as "netns-NAME"; take it out. */
void fdstore_netns(const char *name, const char *path);
void fdstore_forget(const char *name);
/* Bind each netns the fd store handed back onto its file; the number restored. */
int fdstore_restore(void);
/* s's kept netns gone with the previous daemon's mount namespace: found
 * again through a process of its cgroup, where there is one. */
void netns_recover(struct dsandbox *s);

/* daemon_adopt.c ------------------------------------------------------------ */

/* Re-adopt every sandbox a previous daemon left (pins + state files).
 * Returns how many could not be (each said why; their filters stay). */
int adopt_all(void);

/* daemon_attach.c ----------------------------------------------------------- */

struct ctlsrv_peer;
/* The control requests that change what the daemon holds, each answered
 * with a JSON object the caller owns ({"ok": true, ...} or ctlsrv_error()).
 * attach_with: attach (peer: who asked, for its descriptors and content;
 * NULL from daemon_user.c); a refusal is a sandbox-attach-refused line too
 * (an OCI hook's container does not start).  attach_or_say_why: the attach
 * of daemon_user.c, by policy name, never with descriptors. */
json_object *attach_with(json_object *req, const struct ctlsrv_peer *peer);
json_object *attach_or_say_why(json_object *req);
json_object *do_detach(json_object *req);
/* A new policy for a sandbox: in the kernel atomically, then its children
 * restarted on it (retired if they cannot be: fail closed). */
json_object *do_reload(json_object *req, const struct ctlsrv_peer *peer);

/* daemon_status.c ----------------------------------------------------------- */

/* s as `status` shows it (owned by the caller). */
json_object *sandbox_json(struct dsandbox *s);
/* The `status` answer: every sandbox, the events file, the signing mode, the control counters. */
json_object *do_status(json_object *req);
/* One scrape of --metrics into out (metrics.h's fill callback). */
void metrics_fill(struct evbuffer *out, void *arg);

#endif
