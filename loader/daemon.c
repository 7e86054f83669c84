/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon.c - `sluice daemon`: one long-running process that holds the BPF
 * objects, the event stream, the proxy and the resolver of every attached
 * sandbox, and re-adopts them after a restart.
 *
 * State (root only, 0700; 0710 root:GROUP with a user group, daemon_user.h):
 *   /run/sluice/control.sock            control socket
 *   /run/sluice/events.jsonl            every JSON line of every sandbox
 *   /run/sluice/sandboxes/NAME.json     what the sandbox is (cgroup, mode), its loss accounting
 *   /run/sluice/sandboxes/NAME.yaml     the policy in force (a copy of the bytes loaded)
 *   /run/sluice/sandboxes/NAME.yaml.sig its signature (--allowed-signers)
 *   /run/sluice/sandboxes/NAME.ca.pem   the sandbox CA certificate (TLS inspection; public)
 *   /run/sluice/netns/NAME              bind mount of the sandbox's netns
 *   /sys/fs/bpf/sluice/NAME/            pinned links and maps
 * Fail closed: links are pinned, so the daemon dying leaves every sandbox
 * filtered; its proxies and resolvers die with it (PR_SET_PDEATHSIG), so
 * redirected connections fail until it is back.
 */
#include "daemon.h"
#include "daemon_user.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "cgroup.h"
#include "cmd_seccomp.h"
#include "children.h"
#include "credentials.h"
#include "ctlsrv.h"
#include "daemon_events.h"
#include "daemon_dnsstats.h"
#include "destroy.h"
#include "events.h"
#include "gc.h"
#include "kfeatures.h"
#include "labels.h"
#include "owner.h"
#include "inspect.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "policy_sig.h"
#include "expiry_watch.h"
#include "policy_within.h"
#include "policy_ref.h"
#include "upstream_ca.h"
#include "run_limits.h"
#include "sandbox_ca.h"
#include "sandbox.h"

#define ACCT_N (2 + 2 * SLUICE_DS__MAX)

struct dsandbox {
	char name[64];
	char cgroup[PATH_MAX];
	char netns[PATH_MAX];       /* bind mount under state dir */
	char policy_path[PATH_MAX]; /* copy under state dir */
	char mode[16];
	/* the container it is (sluice oci-hook, attach --container); "" none */
	char container_id[128], container_name[128], runtime[16];
	struct sluice_labels labels; /* labels.KEY on its lines (attach --label) */
	/* where its proxy and resolver dial from: "" the sandbox's netns, "host"
	 * the daemon's, else a bind mount under the state dir (--upstream-netns) */
	char upstream[PATH_MAX];
	uint64_t cgroup_id;
	struct daemon_dnsstats dns;  /* its resolvers' dropped queries (NAME.dns-stats) */
	struct sluice_sandbox sb;
	struct sluice_policy *policy;
	struct sluice_signer signer; /* --allowed-signers: who signed the policy in force */
	struct sluice_expiry_watch expiry; /* entry-expired lines of the policy in force */
	struct sluice_listeners l;  /* kept: children are restarted on reload */
	pid_t proxy_pid, resolver_pid;
	struct sluice_restarts proxy_restarts, resolver_restarts;
	char ca_path[PATH_MAX];     /* the sandbox CA's certificate (TLS inspection); "" none */
	char *ca;                   /* the sandbox CA, key and certificate (sandbox_ca.h); NULL none */
	char *ca_permitted;         /* the names it permits (sluice_ca_permitted) */
	struct sluice_event_meta meta;
	struct sluice_evlog log;    /* this sandbox's lines (its envelope, its loss counts) */
	bool log_ready;
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

static struct {
	char state_dir[200];
	char sock_path[PATH_MAX];
	char events_path[PATH_MAX];
	int events;                 /* O_APPEND fd, one write per line */
	struct sluice_evlog log;    /* daemon-wide lines (no sandbox) */
	struct event_base *base;
	struct dsandbox *sandboxes;
	char proxy_bin[PATH_MAX], resolver_bin[PATH_MAX];
	const char *upstream_dns;
	char **proxy_extra, **resolver_extra;
	bool use_lsm;               /* load the BPF LSM programs where the kernel has the BPF LSM */
	bool require_lsm;           /* refuse a sandbox the LSM programs cannot guard */
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
} D;

static void emit(struct dsandbox *s, const char *action, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void emit(struct dsandbox *s, const char *action, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sluice_lifecycle_write(s && s->log_ready ? &s->log : &D.log, action, msg);
	log_info("%s", msg);
}

/* A lifecycle line that names who signed s's policy (attach, reload, adopt). */
static void emit_signed(struct dsandbox *s, const char *action, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void emit_signed(struct dsandbox *s, const char *action, const char *fmt, ...)
{
	struct sluice_evlog *w = s->log_ready ? &s->log : &D.log;
	struct sluice_line *l;
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l = sluice_evlog_begin(w, SLUICE_DS_LIFECYCLE, -1);
	SL_STR(l, "event.kind", "state");
	SL_STR(l, "event.action", action);
	SL_STR(l, "message", msg);
	sluice_signer_fields(l, &s->signer);
	sluice_evlog_commit(w);
	log_info("%s", msg);
}

static struct dsandbox *find(const char *name)
{
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

static void state_path(char *buf, size_t len, const char *name, const char *ext)
{
	snprintf(buf, len, "%s/sandboxes/%s.%s", D.state_dir, name, ext);
}

/*
 * The CA certificate of s's proxy (public part, PEM; NULL: the policy
 * inspects nothing) goes to <state>/sandboxes/NAME.ca.pem, written
 * atomically, for the runtime to hand to the workload (docs/daemon.md).
 */
static int publish_ca(struct dsandbox *s, const char *pem, char *msg, size_t msglen)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	state_path(path, sizeof(path), s->name, "ca.pem");
	if (!pem) {
		unlink(path);
		s->ca_path[0] = '\0';
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (f && (fputs(pem, f) < 0 || fchmod(fileno(f), 0644) < 0)) {
		fclose(f);
		f = NULL;
	}
	if (!f || fclose(f) != 0 || rename(tmp, path) < 0) {
		snprintf(msg, msglen, "cannot write the sandbox CA certificate to %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	snprintf(s->ca_path, sizeof(s->ca_path), "%s", path);
	return 0;
}


/*
 * The CA s's proxies sign with (TLS inspection): made at the first start,
 * the same for every restart and for reloads that inspect the same names; a
 * reload that changes them re-issues the certificate for the same key
 * (sandbox_ca.h), published again with a `ca-reissued` line.  Returns 0 or
 * -1 with msg.
 */
static int sandbox_ca(struct dsandbox *s, char *msg, size_t msglen)
{
	char *want = sluice_ca_permitted(s->policy), *pem = NULL;
	const char *why = "";
	bool had = s->ca != NULL;
	int rc;

	if (!want) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	if (s->ca_permitted && strcmp(want, s->ca_permitted) == 0) {
		free(want);
		return 0;
	}
	rc = sluice_ca_make(s->policy, s->name, s->ca, &pem, &why);
	if (rc < 0) {
		snprintf(msg, msglen, "sandbox CA: %s", why);
		free(want);
		return -1;
	}
	if (rc > 0) {
		/* nothing inspected now: no certificate to trust; the key (if
		 * any) is kept for a reload back */
		free(s->ca_permitted);
		s->ca_permitted = want;
		return publish_ca(s, NULL, msg, msglen);
	}
	if (publish_ca(s, sluice_ca_cert_part(pem), msg, msglen) < 0) {
		sluice_ca_pem_free(pem);
		free(want);
		return -1;
	}
	sluice_ca_pem_free(s->ca);
	s->ca = pem;
	free(s->ca_permitted);
	s->ca_permitted = want;
	if (had)
		emit(s, "ca-reissued", "sandbox %s: the inspected names changed; the CA certificate in %s was re-issued "
		     "for the same key (names both permit keep validating; new ones once the workload trusts it)",
		     s->name, s->ca_path);
	return 0;
}

/* The netns the proxy and resolver join, so dial from: the upstream one
 * (--upstream-netns), else the sandbox's; NULL: the daemon's own. */
static const char *child_netns(const struct dsandbox *s)
{
	if (strcmp(s->upstream, "host") == 0)
		return NULL;
	if (s->upstream[0])
		return s->upstream;
	return s->netns[0] ? s->netns : NULL;
}

/*
 * Retired children (a reload's or SIGHUP's old proxy and resolver): sent
 * SIGQUIT, they stop taking new work and finish what they have open (their
 * drain deadline, 10 s by default); on_tick reaps them, and kills one
 * still there RETIRE_KILL_MS later.
 */
#define RETIRE_MAX     1024
#define RETIRE_KILL_MS 30000

static struct retired {
	pid_t pid;
	uint64_t kill_at;
} retired[RETIRE_MAX];
static size_t n_retired;

static void retire(pid_t pid)
{
	if (n_retired == RETIRE_MAX) {
		/* a reload storm beyond any drain: the oldest goes now */
		kill(retired[0].pid, SIGKILL);
		waitpid(retired[0].pid, NULL, 0);
		memmove(retired, retired + 1, (RETIRE_MAX - 1) * sizeof(retired[0]));
		n_retired--;
	}
	kill(pid, SIGQUIT);
	retired[n_retired].pid = pid;
	retired[n_retired].kill_at = sluice_monotonic_ms() + RETIRE_KILL_MS;
	n_retired++;
}

/* pid exited: was it a retired child?  (Then it is forgotten.) */
static bool retired_reaped(pid_t pid)
{
	for (size_t i = 0; i < n_retired; i++) {
		if (retired[i].pid == pid) {
			retired[i] = retired[--n_retired];
			return true;
		}
	}
	return false;
}

/* Kill retired children past their deadline (reaped by on_tick later). */
static void retired_expire(void)
{
	uint64_t now = sluice_monotonic_ms();

	for (size_t i = 0; i < n_retired; i++)
		if (now >= retired[i].kill_at)
			kill(retired[i].pid, SIGKILL);
}

/* The daemon stops: every retired child stops now (SIGTERM: each open
 * connection and query in flight is logged), and is waited for. */
static void retired_stop_all(void)
{
	for (size_t i = 0; i < n_retired; i++)
		kill(retired[i].pid, SIGTERM);
	for (size_t i = 0; i < n_retired; i++)
		waitpid(retired[i].pid, NULL, 0);
	n_retired = 0;
}

/* Which children start_children() starts. */
#define CHILD_PROXY    1u
#define CHILD_RESOLVER 2u
#define CHILD_BOTH     (CHILD_PROXY | CHILD_RESOLVER)

/* Start (or restart) the proxy and/or resolver of s (`which`), with s's policy copy. */
static int start_children(struct dsandbox *s, unsigned which, char *msg, size_t msglen)
{
	char flow_map[PATH_MAX];
	struct sluice_child_opts co = {
		.policy_path = s->policy_path, .netns_path = child_netns(s), .sandbox = s->name,
		.flow_map = flow_map, .log_fd = D.events, .upstream_dns = D.upstream_dns,
		.mode = s->mode, .extra = D.proxy_extra, .secrets = &s->secrets, .ocsf = D.log.ocsf,
		.seq_fd = sluice_evlog_seq_fd(&s->log), .labels = &s->labels,
		.container_id = s->meta.container_id, .container_name = s->meta.container_name,
		.container_runtime = s->meta.container_runtime,
	};
	pid_t old_proxy = s->proxy_pid, old_resolver = s->resolver_pid;

	snprintf(flow_map, sizeof(flow_map), "%s/sluice_flows", s->sb.pin_dir);
	if (s->sb.cfg.have_proxy && (which & CHILD_PROXY) && s->l.proxy4 >= 0) {
		pid_t p;

		char *upca = NULL;
		size_t upca_len = 0;
		struct sluice_policy_error perr;

		if (sandbox_ca(s, msg, msglen) < 0)
			return -1;
		co.ca = s->ca_path[0] ? s->ca : NULL;
		/* the CAs for origins: read by the daemon, content to the proxy */
		if (sluice_upstream_ca_load(D.upstream_ca, s->policy, &upca, &upca_len, &perr) < 0) {
			sluice_policy_error_str(&perr, msg, msglen);
			return -1;
		}
		co.upstream_ca = upca;
		p = sluice_child_start(D.proxy_bin, &s->l, &co, 10000, msg, msglen);
		free(upca);
		if (p < 0)
			return -1;
		s->proxy_pid = p;
	}
	if (s->sb.cfg.have_dns && (which & CHILD_RESOLVER) && s->l.dns_udp4 >= 0) {
		pid_t p;

		char stats[PATH_MAX];

		co.flow_map = NULL;
		co.extra = D.resolver_extra;
		state_path(stats, sizeof(stats), s->name, "dns-stats");
		if (daemon_dnsstats_open(&s->dns, stats) == 0)
			co.stats_fd = s->dns.fd;
		p = sluice_child_start(D.resolver_bin, &s->l, &co, 10000, msg, msglen);
		if (p < 0)
			return -1;
		s->resolver_pid = p;
	}
	/* the new children serve the same listening sockets; the old ones
	 * drain (finish and log what they have open) without the daemon
	 * waiting for them */
	if (old_proxy > 0 && old_proxy != s->proxy_pid)
		retire(old_proxy);
	if (old_resolver > 0 && old_resolver != s->resolver_pid)
		retire(old_resolver);
	return 0;
}

static void stop_children(struct dsandbox *s)
{
	pid_t *pids[] = { &s->proxy_pid, &s->resolver_pid };

	for (size_t i = 0; i < 2; i++) {
		if (*pids[i] > 0) {
			kill(*pids[i], SIGTERM);
			waitpid(*pids[i], NULL, 0);
			*pids[i] = 0;
		}
	}
}

/* The loss counts to carry across a daemon restart, into v (to notice change). */
static void accounting_now(const struct dsandbox *s, uint64_t v[ACCT_N])
{
	v[0] = s->consumer.lost_reported;
	v[1] = s->consumer.write_lost;
	for (int ds = 0; ds < SLUICE_DS__MAX; ds++) {
		v[2 + ds] = s->log_ready ? s->log.lost[ds] : 0;
		v[2 + SLUICE_DS__MAX + ds] = s->log_ready ? s->log.lost_outage[ds] : 0;
	}
}

/* The loss accounting of s as JSON (NAME.json "accounting"): the ring-buffer
 * losses already reported in events_lost lines, the denial lines and every
 * line the writer lost, and those not yet reported (with the errno). */
static json_object *accounting_json(const struct dsandbox *s)
{
	json_object *a = json_object_new_object(), *lost = json_object_new_array(), *outage = json_object_new_array();

	json_object_object_add(a, "events_lost_reported", json_object_new_uint64(s->consumer.lost_reported));
	json_object_object_add(a, "kernel_lines_lost", json_object_new_uint64(s->consumer.write_lost));
	for (int ds = 0; ds < SLUICE_DS__MAX; ds++) {
		json_object_array_add(lost, json_object_new_uint64(s->log_ready ? s->log.lost[ds] : 0));
		json_object_array_add(outage, json_object_new_uint64(s->log_ready ? s->log.lost_outage[ds] : 0));
	}
	json_object_object_add(a, "lines_lost", lost);
	json_object_object_add(a, "lines_lost_unreported", outage);
	json_object_object_add(a, "outage_errno", json_object_new_int(s->log_ready ? s->log.err : 0));
	return a;
}

/* Take the accounting a previous daemon wrote (accounting_json) into s's
 * consumer and writer, so that a restart neither reports a loss twice nor
 * forgets one. */
static void accounting_restore(struct dsandbox *s, json_object *st)
{
	json_object *a, *v, *lost, *outage;
	uint64_t l[SLUICE_DS__MAX] = { 0 }, o[SLUICE_DS__MAX] = { 0 };
	int err = 0;

	if (!st || !json_object_object_get_ex(st, "accounting", &a))
		return;
	if (json_object_object_get_ex(a, "events_lost_reported", &v))
		s->consumer.lost_reported = json_object_get_uint64(v);
	if (json_object_object_get_ex(a, "kernel_lines_lost", &v))
		s->consumer.write_lost = json_object_get_uint64(v);
	if (json_object_object_get_ex(a, "outage_errno", &v))
		err = json_object_get_int(v);
	if (json_object_object_get_ex(a, "lines_lost", &lost) && json_object_object_get_ex(a, "lines_lost_unreported", &outage))
		for (size_t ds = 0; ds < SLUICE_DS__MAX; ds++) {
			l[ds] = json_object_get_uint64(json_object_array_get_idx(lost, ds));
			o[ds] = json_object_get_uint64(json_object_array_get_idx(outage, ds));
		}
	sluice_evlog_restore_lost(&s->log, l, o, err);
	accounting_now(s, s->saved_acct);
}

/* NAME.json: what the sandbox is (cgroup, mode) and its loss accounting,
 * written atomically.  owner: also record the daemon as its owner. */
static int write_state(struct dsandbox *s, bool owner)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	json_object *o = json_object_new_object();
	FILE *f;

	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "cgroup", json_object_new_string(s->cgroup));
	json_object_object_add(o, "mode", json_object_new_string(s->mode));
	if (s->n_secret_src) {
		/* where the secrets are (paths, never their content) */
		json_object *a = json_object_new_array();

		for (size_t i = 0; i < s->n_secret_src; i++) {
			char b[PATH_MAX + 80];

			snprintf(b, sizeof(b), "%s=%s", s->secret_src[i].name, s->secret_src[i].file);
			json_object_array_add(a, json_object_new_string(b));
		}
		json_object_object_add(o, "secret_sources", a);
	}
	if (s->container_id[0])
		json_object_object_add(o, "container_id", json_object_new_string(s->container_id));
	if (s->container_name[0])
		json_object_object_add(o, "container_name", json_object_new_string(s->container_name));
	if (s->runtime[0])
		json_object_object_add(o, "runtime", json_object_new_string(s->runtime));
	if (s->upstream[0])
		json_object_object_add(o, "upstream_netns", json_object_new_string(s->upstream));
	if (s->labels.n)
		json_object_object_add(o, "labels", daemon_labels_to_json(&s->labels));
	json_object_object_add(o, "accounting", accounting_json(s));
	state_path(path, sizeof(path), s->name, "json");
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f) {
		json_object_put(o);
		return -errno;
	}
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	accounting_now(s, s->saved_acct);
	/* `sluice gc` leaves a sandbox of a running daemon alone */
	return owner ? sluice_owner_write(s->name, "daemon") : 0;
}

/* Drain s's ring buffer, then keep its loss accounting on disk if it moved
 * (a kill -9 right after loses at most the window between the line and this). */
static void drain(struct dsandbox *s)
{
	uint64_t now[ACCT_N];

	if (!s->consumer_ok)
		return;
	sluice_consumer_drain(&s->consumer);
	accounting_now(s, now);
	if (memcmp(now, s->saved_acct, sizeof(now)) == 0)
		return;
	if (write_state(s, false) < 0) {
		if (!s->acct_warned)
			log_warn("sandbox %s: cannot keep its loss accounting in %s/sandboxes (a restart may report losses again)",
				 s->name, D.state_dir);
		s->acct_warned = true;
	} else {
		s->acct_warned = false;
	}
}

/* Write `len` bytes to `dst` atomically (the policy in force and its
 * signature: the bytes that were parsed and verified, not the file again). */
static int write_bytes(const char *dst, const char *buf, size_t len)
{
	char tmp[PATH_MAX + 8];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if ((len && sluice_write_all(fd, buf, len) < 0) || close(fd) < 0) {
		int e = errno;

		unlink(tmp);
		return -e;
	}
	if (rename(tmp, dst) < 0)
		return -errno;
	return 0;
}

static void free_secret_args(struct dsandbox *s)
{
	for (size_t i = 0; i < s->n_secret_src; i++)
		free(s->secret_arg[i]);
	s->n_secret_src = 0;
}

/* s's --secret sources from a JSON array of "NAME=/path" (NULL: none).
 * 0, or -1 with msg. */
static int set_secret_args(struct dsandbox *s, json_object *arr, char *msg, size_t msglen)
{
	size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;

	free_secret_args(s);
	if (n > SLUICE_SECRET_ARGS_MAX) {
		snprintf(msg, msglen, "at most %d --secret", SLUICE_SECRET_ARGS_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(arr, i));

		s->secret_arg[i] = a ? strdup(a) : NULL;
		s->n_secret_src = i + 1;
		if (!s->secret_arg[i] || sluice_secret_source_parse(s->secret_arg[i], &s->secret_src[i]) < 0) {
			snprintf(msg, msglen, "--secret wants NAME=/absolute/path");
			return -1;
		}
	}
	return 0;
}

/* Read the secrets of policy p from s's sources (placeholders kept from
 * s's current ones).  0 with *out, or -1 with msg (file:line, the path). */
static int load_secrets(const struct dsandbox *s, const struct sluice_policy *p, struct sluice_secrets *out,
			char *msg, size_t msglen)
{
	struct sluice_policy_error perr;

	if (sluice_secrets_load(p, s->secret_src, s->n_secret_src, getenv("CREDENTIALS_DIRECTORY"), out, &perr) < 0) {
		sluice_policy_error_str(&perr, msg, msglen);
		return -1;
	}
	if (sluice_secrets_placeholders(out, &s->secrets) < 0) {
		sluice_secrets_clear(out);
		snprintf(msg, msglen, "no random bytes for the credentials' placeholders");
		return -1;
	}
	/* the daemon holds secrets from now on: no core dump of it */
	if (out->n && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		sluice_secrets_clear(out);
		snprintf(msg, msglen, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Keep the policy's bytes (and, signed, its signature) as s's state copy. */
static int keep_policy(struct dsandbox *s, const char *bytes, size_t n, const char *sig, size_t n_sig)
{
	char sigpath[PATH_MAX + 8];
	int err = write_bytes(s->policy_path, bytes, n);

	if (err)
		return err;
	sluice_policy_sig_path(s->policy_path, sigpath, sizeof(sigpath));
	if (sig)
		return write_bytes(sigpath, sig, n_sig);
	unlink(sigpath);
	return 0;
}

static void free_sandbox(struct dsandbox *s)
{
	sluice_secrets_clear(&s->secrets);
	free_secret_args(s);
	if (s->consumer_ok)
		sluice_consumer_free(&s->consumer);
	sluice_listeners_close(&s->l);
	sluice_expiry_watch_free(&s->expiry);
	daemon_dnsstats_close(&s->dns);
	if (s->policy)
		sluice_policy_free(s->policy);
	sluice_ca_pem_free(s->ca);
	free(s->ca_permitted);
	if (s->log_ready)
		sluice_evlog_release_seq(&s->log);
	free(s);
}

/* Undo everything of s: detach, stop children, unpin, remove state. */
static void fdstore_forget(const char *name);

static void teardown(struct dsandbox *s, bool keep_state)
{
	char path[PATH_MAX];

	if (s->consumer_ok)
		sluice_consumer_drain(&s->consumer);
	stop_children(s);
	sandbox_destroy(&s->sb);
	if (!keep_state) {
		sluice_owner_remove(s->name);
		for (size_t i = 0; sluice_state_exts[i]; i++) {
			state_path(path, sizeof(path), s->name, sluice_state_exts[i]);
			unlink(path);
		}
		if (s->netns[0]) {
			umount2(s->netns, MNT_DETACH);
			unlink(s->netns);
			fdstore_forget(s->name);
		}
		if (s->upstream[0] && strcmp(s->upstream, "host") != 0) {
			umount2(s->upstream, MNT_DETACH);
			unlink(s->upstream);
			snprintf(path, sizeof(path), "%s.upstream", s->name);
			fdstore_forget(path);
		}
	}
}

static void unlink_sandbox(struct dsandbox *s)
{
	for (struct dsandbox **pp = &D.sandboxes; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			return;
		}
	}
}

static void init_meta(struct dsandbox *s)
{
	struct sluice_envelope env;

	s->meta.sandbox = s->name;
	s->meta.policy_name = s->policy->name;
	s->meta.policy_digest = s->policy->digest;
	s->meta.mode = s->mode;
	s->meta.container_id = s->container_id[0] ? s->container_id : NULL;
	s->meta.container_name = s->container_name[0] ? s->container_name : NULL;
	s->meta.container_runtime = s->runtime[0] ? s->runtime : NULL;
	s->meta.labels = &s->labels;
	s->meta.boot_to_real_ns = sluice_boot_to_real_ns();
	/* a new policy, new expiries (a failed allocation: no lines, the
	 * kernel, proxy and resolver still stop at the time) */
	sluice_expiry_watch_free(&s->expiry);
	if (sluice_expiry_watch_init(&s->expiry, s->policy) < 0)
		log_warnx("sandbox %s: out of memory: its entry-expired lines are not written", s->name);
	sluice_envelope_of(&s->meta, &env);
	if (!s->log_ready) {
		char seq[PATH_MAX];

		sluice_evlog_init(&s->log, D.events, D.events_path, "sluice", &env);
		state_path(seq, sizeof(seq), s->name, "seq");
		daemon_seq_share(&s->log, seq, s->name);
	} else
		sluice_evlog_set_envelope(&s->log, &env);  /* a reload: loss counts carry on */
	s->log_ready = true;
}

/* Bind-mount the netns at `src` to a file of ours, so it outlives the
 * process it was found through and a restarted daemon can find it. */
static int keep_netns(const char *src, const char *dst)
{
	int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	close(fd);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		int err = -errno;

		unlink(dst);
		return err;
	}
	return 0;
}

/*
 * The netns bind mounts live in the daemon's mount namespace: under the
 * hardened unit (ProtectSystem= and friends) that namespace is the unit's
 * own and dies with the daemon, while the sandbox outlives it.  So each kept
 * netns also goes to systemd's file descriptor store (FileDescriptorStoreMax=,
 * sd_pid_notify_with_fds(3)), which hands it back to the restarted daemon
 * (sd_listen_fds_with_names(3)).  Outside systemd these are no-ops.
 */
#define NETNS_FDNAME "netns-"
#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

static void fdstore_netns(const char *name, const char *path)
{
	char msg[128];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=" NETNS_FDNAME "%s", name);
	if (sd_pid_notify_with_fds(0, 0, msg, &fd, 1) < 0)
		log_warnx("sandbox %s: cannot hand its netns to systemd's fd store", name);
	close(fd);
}

static void fdstore_forget(const char *name)
{
	sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=" NETNS_FDNAME "%s", name);
}

/* Bind each netns the fd store handed back onto its file under the state
 * dir, where the previous daemon's mount namespace had it.  Returns the
 * number restored. */
static int fdstore_restore(void)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names), restored = 0;

	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *nm = names ? names[i] : NULL;
		char path[PATH_MAX], src[64], json[PATH_MAX];
		struct statfs sfs;

		if (nm && strncmp(nm, NETNS_FDNAME, strlen(NETNS_FDNAME)) == 0) {
			const char *name = nm + strlen(NETNS_FDNAME);

			size_t nl = strlen(name);
			/* NAME.upstream: the sandbox NAME's upstream netns (--upstream-netns) */
			int base = nl > 9 && strcmp(name + nl - 9, ".upstream") == 0 ? (int)(nl - 9) : (int)nl;

			snprintf(path, sizeof(path), "%s/netns/%s", D.state_dir, name);
			snprintf(json, sizeof(json), "%s/sandboxes/%.*s.json", D.state_dir, base, name);
			if (access(json, F_OK) < 0) {
				fdstore_forget(name); /* detached meanwhile */
			} else if (statfs(path, &sfs) == 0 && sfs.f_type == NSFS_MAGIC) {
				restored++; /* still mounted (same namespace) */
			} else {
				int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

				if (f >= 0)
					close(f);
				snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
				if (f < 0 || mount(src, path, NULL, MS_BIND, NULL) < 0)
					log_warn("sandbox %s: cannot bind its stored netns onto %s", name, path);
				else
					restored++;
			}
		}
		close(fd);
		if (names)
			free(names[i]);
	}
	free(names);
	return restored;
}

/* Is `cg` the cgroup2 root, or an ancestor of (or equal to) our own cgroup?
 * Attaching there would filter the host, or sluice itself. */
static bool cgroup_too_wide(const char *cg2, const char *cg)
{
	char self[PATH_MAX], mine[PATH_MAX];
	size_t n = strlen(cg);

	if (strcmp(cg, cg2) == 0)
		return true;
	if (inspect_pid_cgroup(getpid(), cg2, self, sizeof(self)) < 0)
		return false;
	snprintf(mine, sizeof(mine), "%s/", self);
	return strncmp(mine, cg, n) == 0 && (mine[n] == '/' || mine[n] == 0);
}

/* Close the sockets in `conns` (from inspect_cgroup_connections) with
 * bpf_sock_destroy, inside s's netns.  Returns the count, or an error
 * string where the kernel cannot. */
static json_object *kill_existing(struct dsandbox *s, json_object *conns)
{
	size_t n = json_object_array_length(conns), k = 0;
	uint64_t inodes[4096];
	char msg[512];
	int r;

	for (size_t i = 0; i < n && k < sizeof(inodes) / sizeof(inodes[0]); i++) {
		json_object *ino;

		if (json_object_object_get_ex(json_object_array_get_idx(conns, i), "inode", &ino))
			inodes[k++] = (uint64_t)json_object_get_uint64(ino);
	}
	r = sluice_destroy_sockets(s->netns[0] ? s->netns : NULL, inodes, k, msg, sizeof(msg));
	if (r < 0) {
		emit(s, "sandbox-error", "sandbox %s: --kill-existing: %s", s->name, msg);
		return json_object_new_string(msg);
	}
	emit(s, "sandbox-kill-existing", "sandbox %s: closed %d connection(s) opened before the attach", s->name, r);
	return json_object_new_int(r);
}

/* ---- requests ------------------------------------------------------------ */

static int cmp_expiry(const void *a, const void *b)
{
	const struct sluice_entry *x = *(const struct sluice_entry *const *)a, *y = *(const struct sluice_entry *const *)b;

	return x->expires < y->expires ? -1 : x->expires > y->expires;
}

/* The policy's expiring entries, soonest first: rule, expires, owner,
 * ticket, expired (status: what expires next). */
static json_object *expiries_json(const struct sluice_policy *p)
{
	json_object *a = json_object_new_array();
	const struct sluice_entry **v = calloc(p->n_entries ? p->n_entries : 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return a;
	for (size_t i = 0; i < p->n_entries; i++)
		if (p->entries[i].expires)
			v[n++] = &p->entries[i];
	qsort(v, n, sizeof(*v), cmp_expiry);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();
		char t[32];

		json_object_object_add(o, "rule", json_object_new_string(v[i]->name));
		json_object_object_add(o, "expires", json_object_new_string(sluice_rfc3339_str(v[i]->expires, t, sizeof(t))));
		json_object_object_add(o, "expired", json_object_new_boolean(sluice_entry_expired(v[i], -1)));
		if (v[i]->owner)
			json_object_object_add(o, "owner", json_object_new_string(v[i]->owner));
		if (v[i]->ticket)
			json_object_object_add(o, "ticket", json_object_new_string(v[i]->ticket));
		json_object_array_add(a, o);
	}
	free(v);
	return a;
}

static json_object *sandbox_json(struct dsandbox *s)
{
	json_object *o = json_object_new_object(), *hooks = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "cgroup", json_object_new_string(s->cgroup));
	json_object_object_add(o, "cgroup_id", json_object_new_uint64(s->cgroup_id));
	json_object_object_add(o, "mode", json_object_new_string(s->mode));
	json_object_object_add(o, "policy_name", json_object_new_string(s->policy->name));
	json_object_object_add(o, "policy_sha256", json_object_new_string(s->policy->digest));
	json_object_object_add(o, "policy_generation", json_object_new_int64(s->sb.gen));
	json_object_object_add(o, "policy_signature", json_object_new_string(s->signer.principal[0] ? "verified" : "unsigned"));
	json_object_object_add(o, "expires", expiries_json(s->policy));
	if (s->signer.principal[0]) {
		json_object_object_add(o, "policy_signer", json_object_new_string(s->signer.principal));
		json_object_object_add(o, "policy_signer_key", json_object_new_string(s->signer.key));
	}
	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/link_%s", s->sb.pin_dir, sluice_prog_name(i));
		if (access(path, F_OK) == 0)
			json_object_array_add(hooks, json_object_new_string(sluice_prog_name(i)));
	}
	json_object_object_add(o, "hooks", hooks);
	/* foreign sockets, unix sockets and other families are judged only with it */
	json_object_object_add(o, "bpf_lsm", json_object_new_boolean(s->sb.cfg.have_lsm));
	/* a daemon's sandbox has no seccomp filter of sluice's: the BPF LSM or nothing */
	json_object_object_add(o, "families_enforced_by", json_object_new_string(s->sb.cfg.have_lsm ? "bpf_lsm" : "none"));
	json_object_object_add(o, "unix_hooks", json_object_new_boolean(s->sb.cfg.have_unix));
	if (s->sb.cfg.have_proxy)
		json_object_object_add(o, "proxy_port", json_object_new_int(s->sb.cfg.proxy4_port));
	if (s->sb.cfg.have_dns)
		json_object_object_add(o, "resolver_port", json_object_new_int(s->sb.cfg.dns4_port));
	json_object_object_add(o, "netns", json_object_new_string(s->netns));
	json_object_object_add(o, "upstream_netns", s->upstream[0] ? json_object_new_string(s->upstream) : NULL);
	json_object_object_add(o, "runtime", s->runtime[0] ? json_object_new_string(s->runtime) : NULL);
	json_object_object_add(o, "container_id", s->container_id[0] ? json_object_new_string(s->container_id) : NULL);
	json_object_object_add(o, "container_name",
			       s->container_name[0] ? json_object_new_string(s->container_name) : NULL);
	json_object_object_add(o, "ca_cert", s->ca_path[0] ? json_object_new_string(s->ca_path) : NULL);
	json_object_object_add(o, "labels", daemon_labels_to_json(&s->labels));
	json_object_object_add(o, "proxy_pid", json_object_new_int(s->proxy_pid));
	json_object_object_add(o, "resolver_pid", json_object_new_int(s->resolver_pid));
	json_object_object_add(o, "allowed", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_ALLOWED)));
	json_object_object_add(o, "redirected", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_REDIRECTED)));
	json_object_object_add(o, "denied", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_DENIED)));
	json_object_object_add(o, "would_deny", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_WOULD_DENY)));
	json_object_object_add(o, "events_lost", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_EVENTS_LOST)));
	/* lines the daemon could not write to the events file (ENOSPC, ...) */
	json_object_object_add(o, "event_lines_lost", json_object_new_uint64(s->log_ready ? sluice_evlog_lost_total(&s->log) : 0));
	/* DNS queries its resolvers dropped (rate-limited, queue full, at a stop) */
	json_object_object_add(o, "dns_dropped", daemon_dnsstats_json(&s->dns));
	return o;
}

static json_object *do_attach(json_object *req)
{
	const char *name = ctlsrv_str(req, "name"), *cg = ctlsrv_str(req, "cgroup"), *netns = ctlsrv_str(req, "netns");
	const char *policy = ctlsrv_str(req, "policy"), *mode = ctlsrv_str(req, "mode");
	const char *cid = ctlsrv_str(req, "container_id"), *cname = ctlsrv_str(req, "container_name");
	const char *runtime = ctlsrv_str(req, "runtime"), *upstream = ctlsrv_str(req, "upstream_netns");
	const char *pname = ctlsrv_str(req, "policy_name");
	char cg2[PATH_MAX], msg[1536], ppath[PATH_MAX], *bytes = NULL, *sig = NULL;
	size_t n_bytes = 0, n_sig = 0;
	struct dsandbox *s;
	int cg_fd = -1;
	json_object *o;

	if (!policy && pname) {
		/* by name, in the admin's directory: the OCI hook's annotation */
		if (sluice_policy_ref_resolve(D.policy_dir, pname, "policy name", ppath, sizeof(ppath), msg,
					      sizeof(msg)) < 0)
			return ctlsrv_error("%s", msg);
		policy = ppath;
	}
	if (!name || !cg || !policy)
		return ctlsrv_error("attach needs name, cgroup and policy");
	if (sluice_name_check(name, msg, sizeof(msg)) < 0)
		return ctlsrv_error("%s", msg);
	if (find(name))
		return ctlsrv_error("a sandbox named '%s' is already attached", name);
	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0)
		return ctlsrv_error("no cgroup2 mount");
	if (strncmp(cg, cg2, strlen(cg2)) != 0 || strstr(cg, "/.."))
		return ctlsrv_error("cgroup %s is not under the cgroup2 mount %s", cg, cg2);
	if (cgroup_too_wide(cg2, cg))
		return ctlsrv_error("refusing to attach to %s: it is the root of the hierarchy or contains sluice itself", cg);
	for (struct dsandbox *o2 = D.sandboxes; o2; o2 = o2->next)
		if (strcmp(o2->cgroup, cg) == 0)
			return ctlsrv_error("cgroup %s is already attached as sandbox %s", cg, o2->name);

	s = calloc(1, sizeof(*s));
	if (!s)
		return ctlsrv_error("out of memory");
	s->l.proxy4 = s->l.proxy6 = s->l.dns_udp4 = s->l.dns_udp6 = s->l.dns_tcp4 = s->l.dns_tcp6 = -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", cg);
	snprintf(s->container_id, sizeof(s->container_id), "%s", cid ? cid : "");
	snprintf(s->container_name, sizeof(s->container_name), "%s", cname ? cname : "");
	snprintf(s->runtime, sizeof(s->runtime), "%s", runtime ? runtime : "");
	if (daemon_labels_from_json(&s->labels, json_object_object_get(req, "labels"), msg, sizeof(msg)) < 0) {
		free_sandbox(s);
		return ctlsrv_error("%s", msg);
	}
	if (sluice_policy_load_checked(policy, D.signed_mode ? &D.signers : NULL, &s->policy, &s->signer, &bytes,
				       &n_bytes, &sig, &n_sig, msg, sizeof(msg)) < 0) {
		o = ctlsrv_error("%s", msg);
		free_sandbox(s);
		return o;
	}
	if (mode && strcmp(mode, "audit") != 0 && strcmp(mode, "enforce") != 0) {
		free(bytes);
		free(sig);
		free_sandbox(s);
		return ctlsrv_error("mode must be audit or enforce");
	}
	if (mode)
		s->policy->mode = strcmp(mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	snprintf(s->mode, sizeof(s->mode), "%s", s->policy->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	if (D.boundary && sluice_policy_check_within(s->policy, D.boundary, D.boundary_path, msg, sizeof(msg)) != 0) {
		free(bytes);
		free(sig);
		free_sandbox(s);
		return ctlsrv_error("%s", msg);
	}
	if (set_secret_args(s, json_object_object_get(req, "secrets"), msg, sizeof(msg)) < 0 ||
	    load_secrets(s, s->policy, &s->secrets, msg, sizeof(msg)) < 0) {
		free(bytes);
		free(sig);
		free_sandbox(s);
		return ctlsrv_error("%s (nothing attached)", msg);
	}
	cg_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd < 0) {
		o = ctlsrv_error("cannot open cgroup %s: %s", cg, strerror(errno));
		free(bytes);
		free(sig);
		free_sandbox(s);
		return o;
	}
	s->cgroup_id = cg_id(cg);
	state_path(s->policy_path, sizeof(s->policy_path), name, "yaml");
	{
		int err = keep_policy(s, bytes, n_bytes, sig, n_sig);

		free(bytes);
		free(sig);
		if (err) {
			o = ctlsrv_error("cannot copy policy to %s: %s", s->policy_path, strerror(-err));
			goto fail;
		}
	}
	if (netns) {
		snprintf(s->netns, sizeof(s->netns), "%s/netns/%s", D.state_dir, name);
		int err = keep_netns(netns, s->netns);

		if (err) {
			o = ctlsrv_error("cannot hold network namespace %s: %s", netns, strerror(-err));
			s->netns[0] = 0;
			goto fail;
		}
		fdstore_netns(name, s->netns);
	}
	if (upstream && strcmp(upstream, "host") == 0) {
		snprintf(s->upstream, sizeof(s->upstream), "host");
	} else if (upstream) {
		char kept[PATH_MAX];
		int err;

		snprintf(kept, sizeof(kept), "%s/netns/%s.upstream", D.state_dir, name);
		err = keep_netns(upstream, kept);
		if (err) {
			o = ctlsrv_error("cannot hold upstream network namespace %s: %s", upstream, strerror(-err));
			goto fail;
		}
		snprintf(s->upstream, sizeof(s->upstream), "%s", kept);
		snprintf(msg, sizeof(msg), "%s.upstream", name);
		fdstore_netns(msg, kept);
	}
	{
		struct sluice_bpf_config cfg;

		memset(&cfg, 0, sizeof(cfg));
		if (sluice_listeners_open(&s->l, s->netns[0] ? s->netns : NULL, D.proxy_bin[0] != 0,
					  D.resolver_bin[0] != 0, &cfg, msg, sizeof(msg)) < 0) {
			o = ctlsrv_error("%s", msg);
			goto fail;
		}
		cfg.have_set_retval = libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_set_retval, NULL) > 0;
		cfg.have_lsm = D.use_lsm && sluice_bpf_lsm_active(msg, sizeof(msg));
		cfg.have_unix = 1;
		if (sandbox_load(&s->sb, name, &cfg, s->policy, msg, sizeof(msg)) < 0 ||
		    sluice_listeners_mark(&s->l, s->sb.map_fd[SLUICE_MAP_LISTENERS], msg, sizeof(msg)) < 0) {
			o = ctlsrv_error("%s", msg);
			goto fail;
		}
		if (D.require_lsm && !s->sb.cfg.have_lsm) {
			o = ctlsrv_error("--require-lsm: the kernel refused the BPF LSM programs (%s)",
					strerror(-s->sb.lsm_err));
			goto fail;
		}
	}
	if (sandbox_apply_policy(&s->sb, s->policy, msg, sizeof(msg)) < 0) {
		o = ctlsrv_error("%s: %s", policy, msg);
		goto fail;
	}
	if (sandbox_pin_maps(&s->sb) < 0) {
		o = ctlsrv_error("cannot pin maps under %s: %s", s->sb.pin_dir, strerror(errno));
		goto fail;
	}
	init_meta(s);
	if (sluice_consumer_init(&s->consumer, &s->sb, &s->meta, &s->log) < 0) {
		o = ctlsrv_error("cannot read the ring buffer: %s", strerror(errno));
		goto fail;
	}
	s->consumer_ok = true;
	if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0) {
		o = ctlsrv_error("%s", msg);
		goto fail;
	}
	if (sandbox_attach(&s->sb, cg_fd, msg, sizeof(msg)) < 0) {
		o = ctlsrv_error("%s", msg);
		goto fail;
	}
	close(cg_fd);
	write_state(s, true);
	s->next = D.sandboxes;
	D.sandboxes = s;
	emit_signed(s, "sandbox-attach", "sandbox %s attached to %s: mode %s, policy %s (%.12s)%s%s%s%s", s->name,
		    s->cgroup, s->mode, s->policy->name, s->policy->digest, s->signer.principal[0] ? ", signed by " : "",
		    s->signer.principal,
		    /* the container's runtime decides its files; say so, not nothing */
		    s->policy->fs.present ? "; its filesystem section is not applied (it is sluice run's: "
					    "attach confines the network only)" : "",
		    sluice_seccomp_attach_note(s->sb.cfg.have_lsm));
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "sandbox", sandbox_json(s));
	{
		json_object *conns = inspect_cgroup_connections(cg), *ke;

		json_object_object_add(o, "existing_connections", conns);
		if (json_object_object_get_ex(req, "kill_existing", &ke) && json_object_get_boolean(ke))
			json_object_object_add(o, "destroyed", kill_existing(s, conns));
	}
	return o;
fail:
	if (cg_fd >= 0)
		close(cg_fd);
	teardown(s, false);
	free_sandbox(s);
	return o;
}

/* An attach refused is a line too (the OCI hook's container does not start). */
static json_object *attach_or_say_why(json_object *req)
{
	json_object *o = do_attach(req), *ok;

	if (!json_object_object_get_ex(o, "ok", &ok) || !json_object_get_boolean(ok)) {
		const char *cid = ctlsrv_str(req, "container_id");

		emit(NULL, "sandbox-attach-refused", "attach of %s%s%s%s refused: %s", ctlsrv_str(req, "name") ? ctlsrv_str(req, "name") : "?",
		     cid ? " (container " : "", cid ? cid : "", cid ? ")" : "", ctlsrv_str(o, "error") ? ctlsrv_str(o, "error") : "?");
	}
	return o;
}

static json_object *do_detach(json_object *req)
{
	const char *name = ctlsrv_str(req, "name");
	struct dsandbox *s = name ? find(name) : NULL;
	json_object *o;

	if (!s)
		return ctlsrv_error("no sandbox named '%s'", name ? name : "");
	emit(s, "sandbox-detach", "sandbox %s detached from %s", s->name, s->cgroup);
	unlink_sandbox(s);
	teardown(s, false);
	free_sandbox(s);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

static json_object *do_status(json_object *req)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		json_object_array_add(arr, sandbox_json(s));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "events", json_object_new_string(D.events_path));
	/* signed mode: which allowed-signers file every policy is checked against */
	json_object_object_add(o, "policy_signatures", json_object_new_string(D.signed_mode ? "required" : "not required"));
	json_object_object_add(o, "allowed_signers", D.signed_mode ? json_object_new_string(D.signers.path) : NULL);
	json_object_object_add(o, "boundary", D.boundary ? json_object_new_string(D.boundary_path) : NULL);
	json_object_object_add(o, "sandboxes", arr);
	json_object_object_add(o, "control", ctlsrv_stats_json());
	return o;
}

/* Reload: validate first (an invalid policy changes nothing), then switch
 * the kernel generation atomically, then restart the children on the same
 * listening sockets with the new policy. */
/*
 * The secrets again for a reload of s to np, from the sources given now
 * (req's "secrets") or at attach: a rotated secret is used from then on; a
 * missing one refuses the reload and the old stays.  Returns 0 with *nsec,
 * or -1 with msg (nothing of s changed).
 */
static int reload_secrets(struct dsandbox *s, json_object *req, const struct sluice_policy *np,
			  struct sluice_secrets *nsec, char *msg, size_t msglen)
{
	struct dsandbox tmp = *s;
	json_object *arr = json_object_object_get(req, "secrets");
	int rc;

	memset(tmp.secret_arg, 0, sizeof(tmp.secret_arg));
	tmp.n_secret_src = 0;
	rc = arr ? set_secret_args(&tmp, arr, msg, msglen) : 0;
	if (rc == 0)
		rc = load_secrets(arr ? &tmp : s, np, nsec, msg, msglen);
	if (rc < 0) {
		free_secret_args(&tmp);
		return -1;
	}
	if (arr) {
		free_secret_args(s);
		memcpy(s->secret_arg, tmp.secret_arg, sizeof(s->secret_arg));
		memcpy(s->secret_src, tmp.secret_src, sizeof(s->secret_src));
		s->n_secret_src = tmp.n_secret_src;
	}
	return 0;
}

static json_object *do_reload(json_object *req)
{
	const char *name = ctlsrv_str(req, "name"), *policy = ctlsrv_str(req, "policy");
	struct dsandbox *s = name ? find(name) : NULL;
	struct sluice_policy *np = NULL;
	struct sluice_signer who;
	struct sluice_secrets nsec = { NULL, 0 };
	char msg[1536], old_digest[SLUICE_DIGEST_HEX_LEN + 1], old_name[128], *bytes = NULL, *sig = NULL;
	size_t n_bytes = 0, n_sig = 0;
	const char *children = "restarted on the new policy";
	json_object *o, *r;

	if (!s)
		return ctlsrv_error("no sandbox named '%s'", name ? name : "");
	if (!policy)
		return ctlsrv_error("reload needs a policy");
	msg[0] = 0;
	if (sluice_policy_load_checked(policy, D.signed_mode ? &D.signers : NULL, &np, &who, &bytes, &n_bytes, &sig,
				       &n_sig, msg, sizeof(msg)) < 0) {
		np = NULL;   /* msg says why */
	} else if ((D.boundary && sluice_policy_check_within(np, D.boundary, D.boundary_path, msg, sizeof(msg)) != 0) ||
		 reload_secrets(s, req, np, &nsec, msg, sizeof(msg)) < 0) {
		sluice_policy_free(np);
		np = NULL;
	} else if (sandbox_apply_policy(&s->sb, np, msg, sizeof(msg)) < 0) {
		sluice_secrets_clear(&nsec);
		sluice_policy_free(np);
		np = NULL;
	}
	if (!np) {
		/* refused: a step that failed without saying why still refuses */
		if (!msg[0])
			snprintf(msg, sizeof(msg), "reload refused");
		/* the sandbox keeps its policy; the refusal is in its stream too */
		free(bytes);
		free(sig);
		s->reloads_refused++;
		emit(s, "sandbox-reload-refused", "sandbox %s: reload refused, policy %.12s stays: %s", s->name,
		     s->policy->digest, msg);
		return ctlsrv_error("%s (nothing changed)", msg);
	}
	s->reloads_ok++;
	/* the old secrets are wiped; the children get the new ones */
	sluice_secrets_clear(&s->secrets);
	s->secrets = nsec;
	if (keep_policy(s, bytes, n_bytes, sig, n_sig) < 0)
		log_warn("cannot keep a copy of %s", policy);
	free(bytes);
	free(sig);
	s->signer = who;
	snprintf(old_digest, sizeof(old_digest), "%s", s->policy->digest);
	snprintf(old_name, sizeof(old_name), "%s", s->policy->name ? s->policy->name : "");
	sluice_policy_free(s->policy);
	s->policy = np;
	snprintf(s->mode, sizeof(s->mode), "%s", np->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	init_meta(s);
	if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0) {
		emit(s, "sandbox-error", "sandbox %s: proxy/resolver restart failed: %s (fail closed)", s->name, msg);
		children = "failed to restart (proxied and DNS traffic fails closed; see the events)";
	}
	write_state(s, true);
	emit_signed(s, "sandbox-reload", "sandbox %s: policy %.12s replaced by %.12s (generation %u)%s%s", s->name,
		    old_digest, np->digest, s->sb.gen, who.principal[0] ? ", signed by " : "", who.principal);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "sandbox", sandbox_json(s));
	r = json_object_new_object();
	json_object_object_add(r, "old_policy_name", json_object_new_string(old_name));
	json_object_object_add(r, "old_policy_sha256", json_object_new_string(old_digest));
	json_object_object_add(r, "new_policy_name", json_object_new_string(np->name ? np->name : ""));
	json_object_object_add(r, "new_policy_sha256", json_object_new_string(np->digest));
	json_object_object_add(r, "generation", json_object_new_int64(s->sb.gen));
	json_object_object_add(r, "policy_signer", who.principal[0] ? json_object_new_string(who.principal) : NULL);
	json_object_object_add(r, "children", json_object_new_string(children));
	json_object_object_add(o, "reload", r);
	return o;
}

/* What daemon_user.c asks of the daemon. */
static void user_emit(const char *name, const char *action, const char *message)
{
	emit(name ? find(name) : NULL, action, "%s", message);
}

static bool user_in_sandbox(const char *path)
{
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		size_t n = strlen(s->cgroup);

		if (strncmp(path, s->cgroup, n) == 0 && (path[n] == 0 || path[n] == '/'))
			return true;
	}
	return false;
}

static const struct daemon_user_ops user_ops = {
	.attach = attach_or_say_why, .detach = do_detach, .status = do_status, .emit = user_emit,
	.in_sandbox = user_in_sandbox,
};

/* One control request (ctlsrv.c reads it and sends the answer). */
static json_object *handle_request(json_object *req, struct ctlsrv_peer *peer)
{
	const char *cmd = req ? ctlsrv_str(req, "cmd") : NULL;

	if (peer->uid != 0 || daemon_user_handles(req))
		return daemon_user_request(req, peer, &user_ops);

	if (!cmd)
		return ctlsrv_error("malformed request: want one JSON object with \"cmd\"");
	if (strcmp(cmd, "attach") == 0)
		return attach_or_say_why(req);
	if (strcmp(cmd, "detach") == 0)
		return do_detach(req);
	if (strcmp(cmd, "status") == 0)
		return do_status(req);
	if (strcmp(cmd, "reload") == 0)
		return do_reload(req);
	return ctlsrv_error("unknown command '%s'", cmd);
}

/* The control socket's summary lines (timeouts, evictions, refusals). */
static void control_report(const char *action, const char *message)
{
	sluice_lifecycle_write(&D.log, action, message);
	log_warnx("%s", message);
}

/* Every 100 ms: drain ring buffers (batched wakeups: poll, then consume),
 * notice dead children and vanished cgroups. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct dsandbox *s, *next;
	int status;
	pid_t pid;

	retired_expire();
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (retired_reaped(pid) || daemon_user_reaped(pid, status, &user_ops))
			continue;
		for (struct dsandbox *t = D.sandboxes; t; t = t->next) {
			if (pid == t->proxy_pid || pid == t->resolver_pid) {
				bool proxy = pid == t->proxy_pid;
				char msg[512];

				struct sluice_restarts *r = proxy ? &t->proxy_restarts : &t->resolver_restarts;
				const char *what = proxy ? "sluice-proxy" : "sluice-resolver";

				if (proxy)
					t->proxy_pid = 0;
				else
					t->resolver_pid = 0;
				emit(t, proxy ? "proxy-exited" : "resolver-exited",
				     "sandbox %s: %s exited; restarting it on the same listening sockets", t->name, what);
				/* one that dies again before it is ready uses up the budget too */
				bool up = false;

				msg[0] = 0;
				while (!up && sluice_restart_allowed(r, sluice_monotonic_ms()))
					up = start_children(t, proxy ? CHILD_PROXY : CHILD_RESOLVER, msg, sizeof(msg)) == 0;
				if (!up) {
					/* give up: close its sockets; whatever binds the
					 * ports later lacks sluice's mark and is refused */
					sluice_listeners_close_role(&t->l, proxy);
					emit(t, proxy ? "proxy-gave-up" : "resolver-gave-up",
					     "sandbox %s: %s not restarted (%u restarts within %u s%s%s): %s now fail (fail closed)",
					     t->name, what, SLUICE_RESTART_MAX, SLUICE_RESTART_WINDOW_MS / 1000,
					     msg[0] ? "; the last: " : "", msg, proxy ? "proxied connections" : "DNS queries");
				}
			}
		}
	}
	ctlsrv_tick();
	/* from the head again: a user's command that ended detached its sandbox above */
	for (s = D.sandboxes; s; s = next) {
		next = s->next;
		drain(s);
		if (s->log_ready)
			sluice_expiry_watch_tick(&s->expiry, &s->log, -1);
		if (access(s->cgroup, F_OK) < 0 && errno == ENOENT) {
			emit(s, "sandbox-gone", "sandbox %s: cgroup %s was removed by its runtime; cleaning up", s->name,
			     s->cgroup);
			unlink_sandbox(s);
			teardown(s, false);
			free_sandbox(s);
		}
	}
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	sd_notify(0, "STOPPING=1");
	event_base_loopbreak(D.base);
}

/* SIGHUP (systemctl reload, logrotate): reopen the events file, then start
 * each sandbox's proxy and resolver again on their listening sockets (they
 * write to the inherited events fd: the new ones get the reopened file; the
 * old ones are retired once the new ones are ready); every sandbox keeps
 * running. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
	int err;
	int n = 0;

	sd_notify(0, "RELOADING=1");
	err = log_reopen_fd(D.events, D.events_path, 0600);
	if (err)
		log_warnx("daemon: SIGHUP: cannot reopen %s: %s (still writing to the old file)", D.events_path,
			  strerror(-err));
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		char msg[512];

		if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0)
			emit(s, "sandbox-error", "sandbox %s: SIGHUP: proxy/resolver restart failed: %s (fail closed)",
			     s->name, msg);
		n++;
	}
	emit(NULL, "daemon-reopen", "sluice daemon reopened %s on SIGHUP (%d sandboxes)", D.events_path, n);
	sd_notifyf(0, "READY=1\nSTATUS=serving %s, %d sandboxes", D.sock_path, n);
}

/*
 * The kept netns of s is a bind mount in the previous daemon's mount
 * namespace; where that died with it and no fd store handed it back (a
 * container's daemon: the Kubernetes DaemonSet), the file is left empty.
 * Find the namespace again through a process of the sandbox's cgroup and
 * keep it anew.  Nothing found: the file stays, and the adoption fails as
 * it would have.
 */
static void netns_recover(struct dsandbox *s)
{
	struct statfs sfs;
	char src[64];
	pid_t pid;

	if (statfs(s->netns, &sfs) == 0 && sfs.f_type == NSFS_MAGIC)
		return;
	pid = inspect_cgroup_first_pid(s->cgroup);
	if (pid <= 0)
		return;
	snprintf(src, sizeof(src), "/proc/%d/ns/net", (int)pid);
	if (mount(src, s->netns, NULL, MS_BIND, NULL) < 0) {
		log_warn("sandbox %s: cannot keep the netns of pid %d of its cgroup", s->name, (int)pid);
		return;
	}
	fdstore_netns(s->name, s->netns);
	log_info("sandbox %s: its kept netns was gone with the previous daemon; found again through pid %d of %s",
		 s->name, (int)pid, s->cgroup);
}

/*
 * The sluice.seq of the last kernel line of sandbox `name` in the events
 * file's last MiB (the one a killed daemon may have written without
 * consuming its record).  Returns 0 and *seq, or -1 when there is none.
 */
static int last_written_seq(const char *name, uint64_t *seq)
{
	char needle[128], *buf, *p;
	int fd = open(D.events_path, O_RDONLY | O_CLOEXEC), rc = -1;
	off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1, from;
	ssize_t n;

	if (size <= 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	from = size > (1 << 20) ? size - (1 << 20) : 0;
	buf = malloc((size_t)(size - from) + 1);
	n = buf ? pread(fd, buf, (size_t)(size - from), from) : -1;
	close(fd);
	if (n <= 0) {
		free(buf);
		return -1;
	}
	buf[n] = 0;
	snprintf(needle, sizeof(needle), "\"sluice.sandbox\":\"%s\"", name);
	/* from the end: the last line of ours that has a sequence number */
	for (p = buf + n; p > buf;) {
		char *line = p, *q;

		while (line > buf && line[-1] != '\n')
			line--;
		if (p < buf + n)
			*p = 0;
		if (strstr(line, needle) && strstr(line, "\"event.dataset\":\"sluice.kernel\"") &&
		    (q = strstr(line, "\"sluice.seq\":"))) {
			*seq = strtoull(q + strlen("\"sluice.seq\":"), NULL, 10);
			rc = 0;
			break;
		}
		p = line > buf ? line - 1 : buf;
	}
	free(buf);
	return rc;
}

/* Re-adopt every sandbox a previous daemon left (pins + state files). */
static int adopt_all(void)
{
	char dir[PATH_MAX], msg[1024];
	DIR *d;
	struct dirent *de;
	int failures = 0;

	snprintf(dir, sizeof(dir), "%s/sandboxes", D.state_dir);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char path[PATH_MAX], name[64], buf[8192];
		json_object *st;
		struct dsandbox *s;
		FILE *f;

		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0 || n - 5 >= sizeof(name))
			continue;
		memcpy(name, de->d_name, n - 5);
		name[n - 5] = 0;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		st = json_tokener_parse(buf);
		s = calloc(1, sizeof(*s));
		if (!s) {
			if (st)
				json_object_put(st);
			closedir(d);
			return failures + 1;
		}
		s->l.proxy4 = s->l.proxy6 = s->l.dns_udp4 = s->l.dns_udp6 = s->l.dns_tcp4 = s->l.dns_tcp6 = -1;
		snprintf(s->name, sizeof(s->name), "%s", name);
		snprintf(s->cgroup, sizeof(s->cgroup), "%s", st && ctlsrv_str(st, "cgroup") ? ctlsrv_str(st, "cgroup") : "");
		snprintf(s->mode, sizeof(s->mode), "%s", st && ctlsrv_str(st, "mode") ? ctlsrv_str(st, "mode") : "enforce");
		if (st && set_secret_args(s, json_object_object_get(st, "secret_sources"), msg, sizeof(msg)) < 0)
			log_warnx("sandbox %s: %s", name, msg);
		if (st && ctlsrv_str(st, "container_id"))
			snprintf(s->container_id, sizeof(s->container_id), "%s", ctlsrv_str(st, "container_id"));
		if (st && ctlsrv_str(st, "container_name"))
			snprintf(s->container_name, sizeof(s->container_name), "%s", ctlsrv_str(st, "container_name"));
		if (st && ctlsrv_str(st, "runtime"))
			snprintf(s->runtime, sizeof(s->runtime), "%s", ctlsrv_str(st, "runtime"));
		if (st && ctlsrv_str(st, "upstream_netns"))
			snprintf(s->upstream, sizeof(s->upstream), "%s", ctlsrv_str(st, "upstream_netns"));
		if (st && daemon_labels_from_json(&s->labels, json_object_object_get(st, "labels"), msg,
						  sizeof(msg)) < 0)
			log_warnx("sandbox %s: its labels are not kept: %s", name, msg);
		state_path(s->policy_path, sizeof(s->policy_path), name, "yaml");
		snprintf(s->netns, sizeof(s->netns), "%s/netns/%s", D.state_dir, name);
		if (access(s->netns, F_OK) < 0)
			s->netns[0] = 0;
		else
			netns_recover(s);
		s->cgroup_id = cg_id(s->cgroup);
		if (sandbox_adopt(&s->sb, name, msg, sizeof(msg)) < 0 ||
		    sluice_policy_load_checked(s->policy_path, D.signed_mode ? &D.signers : NULL, &s->policy, &s->signer,
					       NULL, NULL, NULL, NULL, msg, sizeof(msg)) < 0) {
			log_warnx("cannot re-adopt sandbox %s: %s", name, msg);
			if (st)
				json_object_put(st);
			failures++;
			free_sandbox(s);
			continue;
		}
		s->policy->mode = strcmp(s->mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
		/* without its secrets the proxy refuses to start: the sandbox's
		 * proxied traffic fails closed, said in the log */
		if (load_secrets(s, s->policy, &s->secrets, msg, sizeof(msg)) < 0)
			log_warnx("sandbox %s: %s (its proxy will not start: fail closed)", name, msg);
		if (D.boundary && sluice_policy_check_within(s->policy, D.boundary, D.boundary_path, msg, sizeof(msg)) != 0)
			log_warnx("sandbox %s: the policy it was attached with is outside --boundary (kept in force: "
				  "its filter never stopped; reload it): %s", name, msg);
		if (sandbox_links_pinned(&s->sb) != sluice_prog_count(&s->sb.cfg))
			log_warnx("sandbox %s: only %d of %d hooks are pinned", name, sandbox_links_pinned(&s->sb),
				  sluice_prog_count(&s->sb.cfg));
		{
			struct sluice_bpf_config cfg = s->sb.cfg;

			/* the new sockets get the mark too: until then (the daemon
			 * was down) the kernel refused whatever sat on these ports */
			if (sluice_listeners_open(&s->l, s->netns[0] ? s->netns : NULL, cfg.have_proxy, cfg.have_dns, &cfg,
						  msg, sizeof(msg)) < 0 ||
			    sluice_listeners_mark(&s->l, s->sb.map_fd[SLUICE_MAP_LISTENERS], msg, sizeof(msg)) < 0) {
				log_warnx("cannot re-adopt sandbox %s: its listeners: %s", name, msg);
				if (st)
					json_object_put(st);
				failures++;
				free_sandbox(s);
				continue;
			}
		}
		init_meta(s);
		if (sluice_consumer_init(&s->consumer, &s->sb, &s->meta, &s->log) == 0)
			s->consumer_ok = true;
		/* the previous daemon's loss counts carry on: each loss reported once */
		accounting_restore(s, st);
		{
			uint64_t seq;

			/* and a line it wrote for a record it never consumed is not written twice */
			if (s->consumer_ok && last_written_seq(name, &seq) == 0)
				sluice_consumer_skip_written(&s->consumer, seq);
		}
		if (st)
			json_object_put(st);
		if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0)
			log_warnx("sandbox %s: %s (fail closed)", name, msg);
		s->next = D.sandboxes;
		D.sandboxes = s;
		if (sluice_owner_write(name, "daemon") < 0)
			log_warn("sandbox %s: cannot record the daemon as its owner in %s", name, SLUICE_OWNER_DIR);
		emit_signed(s, "sandbox-adopt", "sandbox %s re-adopted after a daemon restart (generation %u)", name,
			    s->sb.gen);
	}
	closedir(d);
	return failures;
}

static int mkdirs(void)
{
	char p[PATH_MAX];

	if (mkdir(D.state_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(p, sizeof(p), "%s/sandboxes", D.state_dir);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(p, sizeof(p), "%s/netns", D.state_dir);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* A decimal number in [lo, hi] (strtonum's spirit).  0 or -1. */
static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN && getenv("SLUICE_LIBBPF_VERBOSE") ? vfprintf(stderr, fmt, ap) : 0;
}

/* One scrape of `--metrics` (docs/daemon.md, "Metrics"): the kernel's
 * counters of every sandbox (kept in its pinned maps, so they survive a
 * daemon restart), and the daemon's own since it started. */
static void metrics_fill(struct evbuffer *out, void *arg)
{
	static const struct { int stat; const char *verdict; } verdicts[] = {
		{ SLUICE_STAT_ALLOWED, "allowed" }, { SLUICE_STAT_REDIRECTED, "redirected" },
		{ SLUICE_STAT_DENIED, "denied" }, { SLUICE_STAT_WOULD_DENY, "would_deny" },
	};
	static const struct { int stat; const char *name, *help; } counters[] = {
		{ SLUICE_STAT_EVENTS_LOST, "sluice_kernel_events_lost_total",
		  "Denial events the kernel could not queue (ring buffer full); counted, never silent." },
		{ SLUICE_STAT_BACKSTOP, "sluice_backstop_drops_total", "Packets dropped by the cgroup egress backstop." },
		{ SLUICE_STAT_UNIX_QUIET, "sluice_unix_quiet_denials_total",
		  "Unix connects refused without an event (glibc asking nscd)." },
	};
	int n = 0;

	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		n++;
	sluice_prom_family(out, "sluice_build_info", "gauge", "The running sluice daemon's version.");
	sluice_prom_sample(out, "sluice_build_info", (const char *const[]){ "version", SLUICE_VERSION, NULL }, 1);
	sluice_prom_family(out, "sluice_sandboxes", "gauge", "Sandboxes the daemon holds.");
	sluice_prom_sample(out, "sluice_sandboxes", NULL, (uint64_t)n);
	sluice_prom_family(out, "sluice_sandbox_info", "gauge", "A sandbox and the policy in force (always 1).");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		sluice_prom_sample(out, "sluice_sandbox_info",
				   (const char *const[]){ "sandbox", s->name, "policy_name", s->policy->name ? s->policy->name : "",
							  "policy_sha256", s->policy->digest, "mode", s->mode, NULL }, 1);
	sluice_prom_family(out, "sluice_kernel_verdicts_total", "counter",
			   "Connection attempts the kernel judged, by verdict, since the sandbox was attached.");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
			sluice_prom_sample(out, "sluice_kernel_verdicts_total",
					   (const char *const[]){ "sandbox", s->name, "verdict", verdicts[i].verdict, NULL },
					   sandbox_stat(&s->sb, verdicts[i].stat));
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		sluice_prom_family(out, counters[i].name, "counter", counters[i].help);
		for (struct dsandbox *s = D.sandboxes; s; s = s->next)
			sluice_prom_sample(out, counters[i].name, (const char *const[]){ "sandbox", s->name, NULL },
					   sandbox_stat(&s->sb, counters[i].stat));
	}
	sluice_prom_family(out, "sluice_denial_events_total", "counter",
			   "Denial events the daemon consumed, by reason and verdict (the start-up canary's left out), "
			   "since the daemon started.");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		for (unsigned r = 0; s->consumer_ok && r <= SLUICE_REASON__MAX; r++)
			for (int w = 0; w < 2; w++)
				if (s->consumer.by_reason[r][w])
					sluice_prom_sample(out, "sluice_denial_events_total",
							   (const char *const[]){ "sandbox", s->name, "reason", sluice_reason_name(r),
										  "verdict", w ? "would_deny" : "deny", NULL },
							   s->consumer.by_reason[r][w]);
	sluice_prom_family(out, "sluice_event_lines_lost_total", "counter",
			   "Lines the daemon could not write to the events file (ENOSPC, EIO, ...).");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		sluice_prom_sample(out, "sluice_event_lines_lost_total", (const char *const[]){ "sandbox", s->name, NULL },
				   s->log_ready ? sluice_evlog_lost_total(&s->log) : 0);
	sluice_prom_sample(out, "sluice_event_lines_lost_total", (const char *const[]){ "sandbox", "", NULL },
			   sluice_evlog_lost_total(&D.log));
	sluice_prom_family(out, "sluice_child_up", "gauge", "1 while the sandbox's proxy or resolver runs.");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		if (s->sb.cfg.have_proxy)
			sluice_prom_sample(out, "sluice_child_up", (const char *const[]){ "sandbox", s->name, "child", "proxy", NULL },
					   s->proxy_pid > 0);
		if (s->sb.cfg.have_dns)
			sluice_prom_sample(out, "sluice_child_up",
					   (const char *const[]){ "sandbox", s->name, "child", "resolver", NULL }, s->resolver_pid > 0);
	}
	sluice_prom_family(out, "sluice_child_restarts_total", "counter",
			   "Restarts of a dead proxy or resolver since the daemon started.");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		sluice_prom_sample(out, "sluice_child_restarts_total",
				   (const char *const[]){ "sandbox", s->name, "child", "proxy", NULL }, s->proxy_restarts.total);
		sluice_prom_sample(out, "sluice_child_restarts_total",
				   (const char *const[]){ "sandbox", s->name, "child", "resolver", NULL }, s->resolver_restarts.total);
	}
	{
		/* what the proxy and resolver count (their shared pages) */
		const char **names = calloc((size_t)n + 1, sizeof(*names));
		struct sluice_evseq **pages = calloc((size_t)n + 1, sizeof(*pages));
		size_t k = 0;

		for (struct dsandbox *s = D.sandboxes; names && pages && s; s = s->next, k++) {
			names[k] = s->name;
			pages[k] = s->log_ready ? sluice_evlog_shared(&s->log) : NULL;
		}
		if (names && pages)
			daemon_metrics_writers(out, names, pages, k);
		free(names);
		free(pages);
	}
	sluice_prom_family(out, "sluice_reloads_total", "counter", "Policy reloads, by result, since the daemon started.");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		sluice_prom_sample(out, "sluice_reloads_total", (const char *const[]){ "sandbox", s->name, "result", "ok", NULL },
				   s->reloads_ok);
		sluice_prom_sample(out, "sluice_reloads_total",
				   (const char *const[]){ "sandbox", s->name, "result", "refused", NULL }, s->reloads_refused);
	}
}

int cmd_daemon(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "events", required_argument, NULL, 'e' },
		{ "events-format", required_argument, NULL, 'O' },
		{ "upstream-dns", required_argument, NULL, 'u' },
		{ "proxy-arg", required_argument, NULL, 'x' },
		{ "upstream-ca", required_argument, NULL, 'k' },
		{ "resolver-arg", required_argument, NULL, 'y' },
		{ "require-lsm", no_argument, NULL, 'L' },
		{ "no-lsm", no_argument, NULL, 'l' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "allowed-signers", required_argument, NULL, 'S' },
		{ "boundary", required_argument, NULL, 'B' },
		{ "policy-dir", required_argument, NULL, 'P' },
		{ "control-clients", required_argument, NULL, 'C' },
		{ "control-deadlines", required_argument, NULL, 'T' },
		{ "user-group", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static char *px[32], *rx[32];
	const char *signers_path = NULL, *boundary_path = NULL;
	char lsm_msg[256] = "";
	int npx = 0, nrx = 0, c, lfd;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct event *tick, *sigs[3];
	struct timeval tv = { 0, 100000 };
	struct ctlsrv_limits ctl = { 0 };

	snprintf(D.state_dir, sizeof(D.state_dir), "%s", SLUICE_STATE_DIR);
	snprintf(D.policy_dir, sizeof(D.policy_dir), "%s", SLUICE_POLICY_DIR);
	D.use_lsm = true;
	D.user_group = "sluice";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': snprintf(D.state_dir, sizeof(D.state_dir), "%s", optarg); break;
		case 'e': snprintf(D.events_path, sizeof(D.events_path), "%s", optarg); break;
		case 'O':
			if (strcmp(optarg, "ecs") != 0 && strcmp(optarg, "ocsf") != 0) {
				log_warnx("daemon: --events-format must be ecs or ocsf, not '%s'", optarg);
				return 2;
			}
			sluice_evlog_use_ocsf(strcmp(optarg, "ocsf") == 0);
			break;
		case 'u': D.upstream_dns = optarg; break;
		case 'x': if (npx < 31) px[npx++] = optarg; break;
		case 'k': D.upstream_ca = optarg; break;
		case 'y': if (nrx < 31) rx[nrx++] = optarg; break;
		case 'L': D.require_lsm = true; break;
		case 'l': D.use_lsm = false; break;
		case 'm': D.metrics_addr = optarg; break;
		case 'S': signers_path = optarg; break;
		case 'B': boundary_path = optarg; break;
		case 'P': snprintf(D.policy_dir, sizeof(D.policy_dir), "%s", optarg); break;
		case 'G': D.user_group = optarg; D.user_group_set = true; break;
		case 'C':
			if (parse_uint(optarg, 1, 100000, &ctl.max_clients) < 0) {
				log_warnx("daemon: --control-clients: want a number from 1 to 100000, not '%s'", optarg);
				return 2;
			}
			break;
		case 'T': {
			char *colon = strchr(optarg, ':');

			if (!colon || (*colon = 0, parse_uint(optarg, 1, 3600000, &ctl.idle_ms) < 0) ||
			    parse_uint(colon + 1, 1, 3600000, &ctl.total_ms) < 0) {
				log_warnx("daemon: --control-deadlines: want IDLE_MS:TOTAL_MS, e.g. 2000:5000");
				return 2;
			}
			break;
		}
		case 'h':
			printf("usage: sluice daemon [--state-dir DIR] [--events FILE] [--upstream-dns ADDR]\n"
			       "                     [--proxy-arg ARG]... [--resolver-arg ARG]... [--upstream-ca FILE]\n"
			       "                     [--require-lsm | --no-lsm] [--metrics IP:PORT]\n"
			       "                     [--allowed-signers FILE] [--boundary FILE] [--policy-dir DIR]\n"
			       "                     [--control-clients N] [--control-deadlines IDLE_MS:TOTAL_MS]\n"
			       "                     [--user-group GROUP] [--upstream-ca FILE]\n\n"
			       "  --user-group GROUP  its members may `sluice run --policy NAME -- CMD` without\n"
			       "                 root: the daemon runs CMD as them (default: sluice, when that\n"
			       "                 group exists; '' root only)\n"
			       "  --upstream-ca FILE  every sandbox's proxy also trusts the CA certificates (PEM)\n"
			       "                 in FILE for the origins of inspected names (read at each proxy\n"
			       "                 start, with the policy's tls.upstream_ca; handed over as content)\n"
			       "  --allowed-signers FILE  signed mode: attach and reload refuse a policy unless\n"
			       "                 POLICY.sig is a valid `sluice policy sign` signature by a key\n"
			       "                 FILE names (OpenSSH allowed-signers; read once, at start)\n"
			       "  --boundary FILE  attach and reload refuse a policy that allows anything FILE\n"
			       "                 (a policy) does not (`sluice policy check --within`)\n"
			       "  --policy-dir DIR  where policy names resolve (NAME: DIR/NAME.yaml; the OCI\n"
			       "                 hook's io.sluice.policy annotation); default " SLUICE_POLICY_DIR "\n"
			       "  --require-lsm  refuse to start where the BPF LSM is not active (foreign sockets,\n"
			       "                 unix sockets and socket families would not be judged)\n"
			       "  --no-lsm       do not load the BPF LSM programs (testing the fallback)\n"
			       "  --metrics IP:PORT  serve Prometheus metrics at http://IP:PORT/metrics\n"
			       "                 (e.g. 127.0.0.1:9464; numeric addresses only)\n"
			       "  --control-clients N  control clients open at once (default %d; more: the one\n"
			       "                 idle the longest is closed)\n"
			       "  --control-deadlines IDLE_MS:TOTAL_MS  a control client is closed after IDLE_MS\n"
			       "                 without a byte, or TOTAL_MS for its request (default %d:%d)\n\n"
			       "Holds every attached sandbox (sluice attach); control socket DIR/control.sock\n"
			       "(default %s), events DIR/events.jsonl.  Runs in the foreground; a systemd\n"
			       "unit is in packaging/sluice.service (Type=notify: ready once it serves).\n"
			       "Restarted, it re-adopts the sandboxes it finds pinned, or refuses to start and\n"
			       "says why.  SIGHUP reopens the events file (the proxies and resolvers reopen\n"
			       "theirs); SIGTERM stops it, every sandbox staying filtered.\n", SLUICE_CTL_MAX_CLIENTS,
			       SLUICE_CTL_IDLE_MS, SLUICE_CTL_TOTAL_MS, SLUICE_STATE_DIR);
			return 0;
		default: return 2;
		}
	}
	D.proxy_extra = px;
	D.resolver_extra = rx;
	log_init("sluice-daemon", 0);
	if (geteuid() != 0) {
		log_warnx("daemon: must run as root");
		return 2;
	}
	if (signers_path) {
		char msg[1024];

		if (sluice_signers_load(signers_path, &D.signers, msg, sizeof(msg)) < 0) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
		D.signed_mode = true;
	}
	if (boundary_path) {
		char msg[1024];

		if (sluice_boundary_load(boundary_path, &D.boundary, msg, sizeof(msg)) < 0) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
		snprintf(D.boundary_path, sizeof(D.boundary_path), "%s", boundary_path);
	}
	if (D.use_lsm && !sluice_bpf_lsm_active(lsm_msg, sizeof(lsm_msg))) {
		if (D.require_lsm) {
			log_warnx("daemon: --require-lsm: %s", lsm_msg);
			return 2;
		}
		log_warnx("daemon: %s: sockets made outside a sandbox, unix sockets and socket families other than inet are not judged",
			  lsm_msg);
	}
	if (!D.events_path[0])
		snprintf(D.events_path, sizeof(D.events_path), "%s/events.jsonl", D.state_dir);
	snprintf(D.sock_path, sizeof(D.sock_path), "%s/control.sock", D.state_dir);
	if (mkdirs() < 0) {
		log_warn("daemon: cannot create %s", D.state_dir);
		return 2;
	}
	{
		/* first, before any other descriptor is opened: SD_LISTEN_FDS_START on */
		int n = fdstore_restore();

		if (n > 0)
			log_info("daemon: %d network namespaces handed back by systemd's fd store", n);
	}
	if (bpffs_ensure(SLUICE_BPFFS) < 0) {
		log_warn("daemon: no BPF filesystem at %s", SLUICE_BPFFS);
		return 2;
	}
	{
		char tried[2 * PATH_MAX + 8];

		if (!sluice_helper_path("sluice-proxy", D.proxy_bin, sizeof(D.proxy_bin), tried, sizeof(tried))) {
			log_warnx("daemon: sluice-proxy not found (tried %s)", tried);
			return 2;
		}
		if (!sluice_helper_path("sluice-resolver", D.resolver_bin, sizeof(D.resolver_bin), tried, sizeof(tried))) {
			log_warnx("daemon: sluice-resolver not found (tried %s)", tried);
			return 2;
		}
	}
	libbpf_set_print(libbpf_quiet);
	signal(SIGPIPE, SIG_IGN);

	/* one daemon at a time: a live control socket means another is running */
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", D.sock_path);
	if (connect(lfd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		log_warnx("daemon: another sluice daemon is serving %s", D.sock_path);
		return 2;
	}
	close(lfd);
	unlink(D.sock_path);

	{
		D.events = open(D.events_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (D.events < 0) {
			log_warn("daemon: cannot open %s", D.events_path);
			return 2;
		}
		sluice_evlog_init(&D.log, D.events, D.events_path, "sluice", NULL);
	}
	/* the metrics address is taken before anything is adopted: one in use
	 * (another daemon's?) refuses the start with nothing changed */
	D.base = event_base_new();
	if (D.metrics_addr) {
		char err[256];

		D.metrics = sluice_metrics_listen(D.base, D.metrics_addr, metrics_fill, NULL, err, sizeof(err));
		if (!D.metrics) {
			log_warnx("daemon: %s", err);
			return 2;
		}
	}
	if (adopt_all() > 0) {
		log_warnx("daemon: refusing to start: some pinned sandboxes could not be re-adopted (see above); "
			  "their filters stay in force; `sluice detach --force NAME` removes one without the daemon");
		return 2;
	}

	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	{
		mode_t old = umask(0177);

		if (bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(lfd, 256) < 0) {
			umask(old);
			log_warn("daemon: cannot listen on %s", D.sock_path);
			return 2;
		}
		umask(old);
	}
	{
		char msg[512];

		if (daemon_user_setup(D.user_group, D.user_group_set, D.state_dir, D.sock_path, msg, sizeof(msg)) < 0) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
	}
	if (ctlsrv_start(D.base, lfd, &ctl, handle_request, control_report) < 0) {
		log_warn("daemon: cannot serve %s", D.sock_path);
		return 2;
	}
	tick = event_new(D.base, -1, EV_PERSIST, on_tick, NULL);
	event_add(tick, &tv);
	sigs[0] = evsignal_new(D.base, SIGTERM, on_signal, NULL);
	sigs[1] = evsignal_new(D.base, SIGINT, on_signal, NULL);
	sigs[2] = evsignal_new(D.base, SIGHUP, on_hup, NULL);
	event_add(sigs[0], NULL);
	event_add(sigs[1], NULL);
	event_add(sigs[2], NULL);
	emit(NULL, "daemon-start", "sluice daemon serving %s, events in %s%s%s; policy signatures %s%s", D.sock_path,
	     D.events_path, D.metrics ? ", metrics at http://" : "", D.metrics ? D.metrics_addr : "",
	     D.signed_mode ? "required, allowed signers " : "not required (unsigned mode)",
	     D.signed_mode ? D.signers.path : "");
	{
		int n = 0;

		for (struct dsandbox *s = D.sandboxes; s; s = s->next)
			n++;
		/* Type=notify: ready once the socket listens and the pinned sandboxes are adopted */
		sd_notifyf(0, "READY=1\nSTATUS=serving %s, %d sandboxes", D.sock_path, n);
	}
	event_base_dispatch(D.base);
	ctlsrv_stop();

	/* A clean stop keeps every sandbox filtered and pinned (fail closed);
	 * `sluice detach` is how a filter is removed. */
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		drain(s);
		stop_children(s);
	}
	sluice_metrics_free(D.metrics);
	retired_stop_all();
	emit(NULL, "daemon-stop", "sluice daemon stopped; sandboxes stay filtered (pinned)");
	unlink(D.sock_path);
	return 0;
}
