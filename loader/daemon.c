/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon.c - `sluice daemon`: one long-running process that holds the BPF
 * objects, the event stream, the proxy and the resolver of every attached
 * sandbox, and re-adopts them after a restart.
 *
 * State (root only, 0700):
 *   /run/sluice/control.sock            control socket
 *   /run/sluice/events.jsonl            every JSON line of every sandbox
 *   /run/sluice/sandboxes/NAME.json     what the sandbox is (cgroup, mode), its loss accounting
 *   /run/sluice/sandboxes/NAME.yaml     the policy in force (a copy)
 *   /run/sluice/sandboxes/NAME.ca.pem   the sandbox CA certificate (TLS inspection; public)
 *   /run/sluice/netns/NAME              bind mount of the sandbox's netns
 *   /sys/fs/bpf/sluice/NAME/            pinned links and maps
 * Fail closed: links are pinned, so the daemon dying leaves every sandbox
 * filtered; its proxies and resolvers die with it (PR_SET_PDEATHSIG), so
 * redirected connections fail until it is back.
 */
#include "daemon.h"

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
#include "children.h"
#include "ctlsrv.h"
#include "destroy.h"
#include "events.h"
#include "kfeatures.h"
#include "owner.h"
#include "inspect.h"
#include "log.h"
#include "policy.h"
#include "run_limits.h"
#include "sandbox.h"

#define ACCT_N (2 + 2 * SLUICE_DS__MAX)

struct dsandbox {
	char name[64];
	char cgroup[PATH_MAX];
	char netns[PATH_MAX];       /* bind mount under state dir */
	char policy_path[PATH_MAX]; /* copy under state dir */
	char mode[16];
	uint64_t cgroup_id;
	struct sluice_sandbox sb;
	struct sluice_policy *policy;
	struct sluice_listeners l;  /* kept: children are restarted on reload */
	pid_t proxy_pid, resolver_pid;
	struct sluice_restarts proxy_restarts, resolver_restarts;
	char ca_path[PATH_MAX];     /* the sandbox CA's certificate (TLS inspection); "" none */
	struct sluice_event_meta meta;
	struct sluice_evlog log;    /* this sandbox's lines (its envelope, its loss counts) */
	bool log_ready;
	struct sluice_consumer consumer;
	bool consumer_ok;
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
	char *ca_pem = NULL;
	struct sluice_child_opts co = {
		.policy_path = s->policy_path, .netns_path = s->netns[0] ? s->netns : NULL, .sandbox = s->name,
		.flow_map = flow_map, .log_fd = D.events, .upstream_dns = D.upstream_dns,
		.mode = s->mode, .extra = D.proxy_extra, .ca_pem = &ca_pem,
	};
	pid_t old_proxy = s->proxy_pid, old_resolver = s->resolver_pid;

	snprintf(flow_map, sizeof(flow_map), "%s/sluice_flows", s->sb.pin_dir);
	if (s->sb.cfg.have_proxy && (which & CHILD_PROXY) && s->l.proxy4 >= 0) {
		pid_t p = sluice_child_start(D.proxy_bin, &s->l, &co, 10000, msg, msglen);
		int rc;

		if (p < 0)
			return -1;
		s->proxy_pid = p;
		/* a new proxy, a new CA: the workload must trust this one */
		rc = publish_ca(s, ca_pem, msg, msglen);
		free(ca_pem);
		co.ca_pem = NULL;
		if (rc < 0)
			return -1;
	}
	if (s->sb.cfg.have_dns && (which & CHILD_RESOLVER) && s->l.dns_udp4 >= 0) {
		pid_t p;

		co.flow_map = NULL;
		co.extra = D.resolver_extra;
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

/* Copy `src` to `dst` atomically (the policy in force, kept by the daemon). */
static int copy_file(const char *src, const char *dst)
{
	char tmp[PATH_MAX + 8], buf[65536];
	FILE *in = fopen(src, "re"), *out;
	size_t n;

	if (!in)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
	out = fopen(tmp, "we");
	if (!out) {
		fclose(in);
		return -errno;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	if (fclose(out) != 0 || rename(tmp, dst) < 0)
		return -errno;
	return 0;
}

static void free_sandbox(struct dsandbox *s)
{
	if (s->consumer_ok)
		sluice_consumer_free(&s->consumer);
	sluice_listeners_close(&s->l);
	if (s->policy)
		sluice_policy_free(s->policy);
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
		state_path(path, sizeof(path), s->name, "json");
		unlink(path);
		state_path(path, sizeof(path), s->name, "yaml");
		unlink(path);
		state_path(path, sizeof(path), s->name, "ca.pem");
		unlink(path);
		if (s->netns[0]) {
			umount2(s->netns, MNT_DETACH);
			unlink(s->netns);
			fdstore_forget(s->name);
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
	s->meta.boot_to_real_ns = sluice_boot_to_real_ns();
	sluice_envelope_of(&s->meta, &env);
	if (!s->log_ready)
		sluice_evlog_init(&s->log, D.events, D.events_path, "sluice", &env);
	else
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

			snprintf(path, sizeof(path), "%s/netns/%s", D.state_dir, name);
			state_path(json, sizeof(json), name, "json");
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

static json_object *reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_object *reply_error(const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

static const char *jstr(json_object *req, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
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
	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/link_%s", s->sb.pin_dir, sluice_prog_name(i));
		if (access(path, F_OK) == 0)
			json_object_array_add(hooks, json_object_new_string(sluice_prog_name(i)));
	}
	json_object_object_add(o, "hooks", hooks);
	/* foreign sockets, unix sockets and other families are judged only with it */
	json_object_object_add(o, "bpf_lsm", json_object_new_boolean(s->sb.cfg.have_lsm));
	json_object_object_add(o, "unix_hooks", json_object_new_boolean(s->sb.cfg.have_unix));
	if (s->sb.cfg.have_proxy)
		json_object_object_add(o, "proxy_port", json_object_new_int(s->sb.cfg.proxy4_port));
	if (s->sb.cfg.have_dns)
		json_object_object_add(o, "resolver_port", json_object_new_int(s->sb.cfg.dns4_port));
	json_object_object_add(o, "netns", json_object_new_string(s->netns));
	json_object_object_add(o, "ca_cert", s->ca_path[0] ? json_object_new_string(s->ca_path) : NULL);
	json_object_object_add(o, "proxy_pid", json_object_new_int(s->proxy_pid));
	json_object_object_add(o, "resolver_pid", json_object_new_int(s->resolver_pid));
	json_object_object_add(o, "allowed", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_ALLOWED)));
	json_object_object_add(o, "redirected", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_REDIRECTED)));
	json_object_object_add(o, "denied", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_DENIED)));
	json_object_object_add(o, "would_deny", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_WOULD_DENY)));
	json_object_object_add(o, "events_lost", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_EVENTS_LOST)));
	/* lines the daemon could not write to the events file (ENOSPC, ...) */
	json_object_object_add(o, "event_lines_lost", json_object_new_uint64(s->log_ready ? sluice_evlog_lost_total(&s->log) : 0));
	return o;
}

static json_object *do_attach(json_object *req)
{
	const char *name = jstr(req, "name"), *cg = jstr(req, "cgroup"), *netns = jstr(req, "netns");
	const char *policy = jstr(req, "policy"), *mode = jstr(req, "mode");
	char cg2[PATH_MAX], msg[1024];
	struct sluice_policy_error perr;
	struct dsandbox *s;
	int cg_fd = -1;
	json_object *o;

	if (!name || !cg || !policy)
		return reply_error("attach needs name, cgroup and policy");
	if (sluice_name_check(name, msg, sizeof(msg)) < 0)
		return reply_error("%s", msg);
	if (find(name))
		return reply_error("a sandbox named '%s' is already attached", name);
	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0)
		return reply_error("no cgroup2 mount");
	if (strncmp(cg, cg2, strlen(cg2)) != 0 || strstr(cg, "/.."))
		return reply_error("cgroup %s is not under the cgroup2 mount %s", cg, cg2);
	if (cgroup_too_wide(cg2, cg))
		return reply_error("refusing to attach to %s: it is the root of the hierarchy or contains sluice itself", cg);
	for (struct dsandbox *o2 = D.sandboxes; o2; o2 = o2->next)
		if (strcmp(o2->cgroup, cg) == 0)
			return reply_error("cgroup %s is already attached as sandbox %s", cg, o2->name);

	s = calloc(1, sizeof(*s));
	if (!s)
		return reply_error("out of memory");
	s->l.proxy4 = s->l.proxy6 = s->l.dns_udp4 = s->l.dns_udp6 = s->l.dns_tcp4 = s->l.dns_tcp6 = -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", cg);
	if (sluice_policy_load_file(policy, &s->policy, &perr) < 0) {
		o = reply_error("%s", sluice_policy_error_str(&perr, msg, sizeof(msg)));
		free_sandbox(s);
		return o;
	}
	if (mode && strcmp(mode, "audit") != 0 && strcmp(mode, "enforce") != 0) {
		free_sandbox(s);
		return reply_error("mode must be audit or enforce");
	}
	if (mode)
		s->policy->mode = strcmp(mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	snprintf(s->mode, sizeof(s->mode), "%s", s->policy->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	cg_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd < 0) {
		o = reply_error("cannot open cgroup %s: %s", cg, strerror(errno));
		free_sandbox(s);
		return o;
	}
	s->cgroup_id = cg_id(cg);
	state_path(s->policy_path, sizeof(s->policy_path), name, "yaml");
	if (copy_file(policy, s->policy_path) < 0) {
		o = reply_error("cannot copy policy to %s: %s", s->policy_path, strerror(errno));
		goto fail;
	}
	if (netns) {
		snprintf(s->netns, sizeof(s->netns), "%s/netns/%s", D.state_dir, name);
		int err = keep_netns(netns, s->netns);

		if (err) {
			o = reply_error("cannot hold network namespace %s: %s", netns, strerror(-err));
			s->netns[0] = 0;
			goto fail;
		}
		fdstore_netns(name, s->netns);
	}
	{
		struct sluice_bpf_config cfg;

		memset(&cfg, 0, sizeof(cfg));
		if (sluice_listeners_open(&s->l, s->netns[0] ? s->netns : NULL, D.proxy_bin[0] != 0,
					  D.resolver_bin[0] != 0, &cfg, msg, sizeof(msg)) < 0) {
			o = reply_error("%s", msg);
			goto fail;
		}
		cfg.have_set_retval = libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_set_retval, NULL) > 0;
		cfg.have_lsm = D.use_lsm && sluice_bpf_lsm_active(msg, sizeof(msg));
		cfg.have_unix = 1;
		if (sandbox_load(&s->sb, name, &cfg, s->policy, msg, sizeof(msg)) < 0 ||
		    sluice_listeners_mark(&s->l, s->sb.map_fd[SLUICE_MAP_LISTENERS], msg, sizeof(msg)) < 0) {
			o = reply_error("%s", msg);
			goto fail;
		}
		if (D.require_lsm && !s->sb.cfg.have_lsm) {
			o = reply_error("--require-lsm: the kernel refused the BPF LSM programs (%s)",
					strerror(-s->sb.lsm_err));
			goto fail;
		}
	}
	if (sandbox_apply_policy(&s->sb, s->policy, msg, sizeof(msg)) < 0) {
		o = reply_error("%s: %s", policy, msg);
		goto fail;
	}
	if (sandbox_pin_maps(&s->sb) < 0) {
		o = reply_error("cannot pin maps under %s: %s", s->sb.pin_dir, strerror(errno));
		goto fail;
	}
	init_meta(s);
	if (sluice_consumer_init(&s->consumer, &s->sb, &s->meta, &s->log) < 0) {
		o = reply_error("cannot read the ring buffer: %s", strerror(errno));
		goto fail;
	}
	s->consumer_ok = true;
	if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0) {
		o = reply_error("%s", msg);
		goto fail;
	}
	if (sandbox_attach(&s->sb, cg_fd, msg, sizeof(msg)) < 0) {
		o = reply_error("%s", msg);
		goto fail;
	}
	close(cg_fd);
	write_state(s, true);
	s->next = D.sandboxes;
	D.sandboxes = s;
	emit(s, "sandbox-attach", "sandbox %s attached to %s: mode %s, policy %s (%.12s)", s->name, s->cgroup,
	     s->mode, s->policy->name, s->policy->digest);
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

static json_object *do_detach(json_object *req)
{
	const char *name = jstr(req, "name");
	struct dsandbox *s = name ? find(name) : NULL;
	json_object *o;

	if (!s)
		return reply_error("no sandbox named '%s'", name ? name : "");
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
	json_object_object_add(o, "sandboxes", arr);
	json_object_object_add(o, "control", ctlsrv_stats_json());
	return o;
}

/* Reload: validate first (an invalid policy changes nothing), then switch
 * the kernel generation atomically, then restart the children on the same
 * listening sockets with the new policy. */
static json_object *do_reload(json_object *req)
{
	const char *name = jstr(req, "name"), *policy = jstr(req, "policy");
	struct dsandbox *s = name ? find(name) : NULL;
	struct sluice_policy *np = NULL;
	struct sluice_policy_error perr;
	char msg[1024], old_digest[SLUICE_DIGEST_HEX_LEN + 1], old_name[128];
	const char *children = "restarted on the new policy";
	json_object *o, *r;

	if (!s)
		return reply_error("no sandbox named '%s'", name ? name : "");
	if (!policy)
		return reply_error("reload needs a policy");
	if (sluice_policy_load_file(policy, &np, &perr) < 0)
		return reply_error("%s (nothing changed)", sluice_policy_error_str(&perr, msg, sizeof(msg)));
	if (sandbox_apply_policy(&s->sb, np, msg, sizeof(msg)) < 0) {
		sluice_policy_free(np);
		return reply_error("%s (nothing changed)", msg);
	}
	if (copy_file(policy, s->policy_path) < 0)
		log_warn("cannot keep a copy of %s", policy);
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
	emit(s, "sandbox-reload", "sandbox %s: policy %.12s replaced by %.12s (generation %u)", s->name, old_digest,
	     np->digest, s->sb.gen);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "sandbox", sandbox_json(s));
	r = json_object_new_object();
	json_object_object_add(r, "old_policy_name", json_object_new_string(old_name));
	json_object_object_add(r, "old_policy_sha256", json_object_new_string(old_digest));
	json_object_object_add(r, "new_policy_name", json_object_new_string(np->name ? np->name : ""));
	json_object_object_add(r, "new_policy_sha256", json_object_new_string(np->digest));
	json_object_object_add(r, "generation", json_object_new_int64(s->sb.gen));
	json_object_object_add(r, "children", json_object_new_string(children));
	json_object_object_add(o, "reload", r);
	return o;
}

/* One control request (ctlsrv.c reads it and sends the answer). */
static json_object *handle_request(json_object *req)
{
	const char *cmd = req ? jstr(req, "cmd") : NULL;

	if (!cmd)
		return reply_error("malformed request: want one JSON object with \"cmd\"");
	if (strcmp(cmd, "attach") == 0)
		return do_attach(req);
	if (strcmp(cmd, "detach") == 0)
		return do_detach(req);
	if (strcmp(cmd, "status") == 0)
		return do_status(req);
	if (strcmp(cmd, "reload") == 0)
		return do_reload(req);
	return reply_error("unknown command '%s'", cmd);
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
	struct dsandbox *s = D.sandboxes, *next;
	int status;
	pid_t pid;

	retired_expire();
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (retired_reaped(pid))
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
	for (; s; s = next) {
		next = s->next;
		drain(s);
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
		struct sluice_policy_error perr;
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
		snprintf(s->cgroup, sizeof(s->cgroup), "%s", st && jstr(st, "cgroup") ? jstr(st, "cgroup") : "");
		snprintf(s->mode, sizeof(s->mode), "%s", st && jstr(st, "mode") ? jstr(st, "mode") : "enforce");
		state_path(s->policy_path, sizeof(s->policy_path), name, "yaml");
		snprintf(s->netns, sizeof(s->netns), "%s/netns/%s", D.state_dir, name);
		if (access(s->netns, F_OK) < 0)
			s->netns[0] = 0;
		s->cgroup_id = cg_id(s->cgroup);
		if (sandbox_adopt(&s->sb, name, msg, sizeof(msg)) < 0 ||
		    sluice_policy_load_file(s->policy_path, &s->policy, &perr) < 0) {
			log_warnx("cannot re-adopt sandbox %s: %s", name, msg);
			if (st)
				json_object_put(st);
			failures++;
			free_sandbox(s);
			continue;
		}
		s->policy->mode = strcmp(s->mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
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
		emit(s, "sandbox-adopt", "sandbox %s re-adopted after a daemon restart (generation %u)", name, s->sb.gen);
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

int cmd_daemon(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "events", required_argument, NULL, 'e' },
		{ "upstream-dns", required_argument, NULL, 'u' },
		{ "proxy-arg", required_argument, NULL, 'x' },
		{ "resolver-arg", required_argument, NULL, 'y' },
		{ "require-lsm", no_argument, NULL, 'L' },
		{ "no-lsm", no_argument, NULL, 'l' },
		{ "control-clients", required_argument, NULL, 'C' },
		{ "control-deadlines", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static char *px[32], *rx[32];
	char lsm_msg[256] = "";
	int npx = 0, nrx = 0, c, lfd;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct event *tick, *sigs[3];
	struct timeval tv = { 0, 100000 };
	struct ctlsrv_limits ctl = { 0 };

	snprintf(D.state_dir, sizeof(D.state_dir), "%s", SLUICE_STATE_DIR);
	D.use_lsm = true;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': snprintf(D.state_dir, sizeof(D.state_dir), "%s", optarg); break;
		case 'e': snprintf(D.events_path, sizeof(D.events_path), "%s", optarg); break;
		case 'u': D.upstream_dns = optarg; break;
		case 'x': if (npx < 31) px[npx++] = optarg; break;
		case 'y': if (nrx < 31) rx[nrx++] = optarg; break;
		case 'L': D.require_lsm = true; break;
		case 'l': D.use_lsm = false; break;
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
			       "                     [--proxy-arg ARG]... [--resolver-arg ARG]...\n"
			       "                     [--require-lsm | --no-lsm] [--control-clients N]\n"
			       "                     [--control-deadlines IDLE_MS:TOTAL_MS]\n\n"
			       "  --require-lsm  refuse to start where the BPF LSM is not active (foreign sockets,\n"
			       "                 unix sockets and socket families would not be judged)\n"
			       "  --no-lsm       do not load the BPF LSM programs (testing the fallback)\n"
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
	D.base = event_base_new();
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
	emit(NULL, "daemon-start", "sluice daemon serving %s, events in %s", D.sock_path, D.events_path);
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
	retired_stop_all();
	emit(NULL, "daemon-stop", "sluice daemon stopped; sandboxes stay filtered (pinned)");
	unlink(D.sock_path);
	return 0;
}
