/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctl.c - the daemon's clients: `sluice attach`, `detach`, `status`,
 * `reload`, `events`.  Each sends one JSON request line to the control
 * socket and prints the answer (docs/daemon.md).
 */
#include "daemon.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cgroup.h"
#include "cmd_seccomp.h"
#include "cli.h"
#include "ctl_content.h"
#include "kfeatures.h"
#include "gc.h"
#include "sandbox.h"
#include "daemon_events.h"
#include "dns_dropped.h"
#include "inspect.h"
#include "labels.h"
#include "log.h"
#include "owner.h"
#include "ocsf.h"
#include "events_follow.h"

static const char *sock_path(void)
{
	const char *e = getenv("SLUICE_CONTROL_SOCK");

	return e && *e ? e : SLUICE_CONTROL_SOCK;
}

#define CALL_TIMEOUT_S 120  /* an attach loads BPF programs and starts children: seconds */

int sluice_ctl_send(int fd, const char *line, size_t len, const int *fds, size_t n)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SLUICE_CTL_MAX_FDS)];
	} u;
	struct iovec iov = { .iov_base = (void *)line, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t w;

	if (n > SLUICE_CTL_MAX_FDS) {
		errno = E2BIG;
		return -1;
	}
	if (n) {
		struct cmsghdr *h;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * n);
	}
	do
		w = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -1;
	/* the rest of a long line, without the descriptors */
	for (size_t off = (size_t)w; off < len;) {
		w = send(fd, line + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

json_object *sluice_ctl_call_fds(json_object *req, const int *fds, size_t n_fds)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	static char buf[1 << 20];
	size_t got = 0, len = strlen(s);
	json_object *resp;
	char *msg;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path());
	{
		/* a daemon that stopped answering must not hang its clients */
		struct timeval tv = { .tv_sec = CALL_TIMEOUT_S };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		log_warn("cannot reach the sluice daemon at %s (is `sluice daemon` running?)", sun.sun_path);
		json_object_put(req);
		close(fd);
		return NULL;
	}
	msg = malloc(len + 2);
	if (!msg) {
		json_object_put(req);
		close(fd);
		return NULL;
	}
	memcpy(msg, s, len); /* NOLINT(bugprone-not-null-terminated-result): a line for send(), not a C string */
	msg[len] = '\n';
	json_object_put(req);
	if (sluice_ctl_send(fd, msg, len + 1, fds, n_fds) < 0) {
		log_warn("cannot send to the daemon");
		free(msg);
		close(fd);
		return NULL;
	}
	free(msg);
	for (;;) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			log_warnx("the sluice daemon did not answer within %d s", CALL_TIMEOUT_S);
			close(fd);
			return NULL;
		}
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got >= sizeof(buf) - 1)
			break;
	}
	close(fd);
	buf[got] = 0;
	resp = json_tokener_parse(buf);
	if (!resp)
		log_warnx("malformed answer from the daemon");
	return resp;
}

json_object *sluice_ctl_call(json_object *req)
{
	return sluice_ctl_call_fds(req, NULL, 0);
}

/* Print the answer: errors to stderr (exit 2), JSON as is with -j/--json
 * (a refusal too: {"ok": false, "error": ...}). */
static int finish(json_object *resp, int json, void (*human)(json_object *))
{
	json_object *ok, *err;
	int ret;

	if (!resp)
		return 2;
	json = json || sluice_cli_json();
	if (!json_object_object_get_ex(resp, "ok", &ok) || !json_object_get_boolean(ok)) {
		json_object_object_get_ex(resp, "error", &err);
		log_warnx("%s", err ? json_object_get_string(err) : "the daemon refused");
		ret = 2;
	} else {
		ret = 0;
	}
	if (json || (!human && ret == 0))
		sluice_cli_json_print(resp);
	else if (ret == 0)
		human(resp);
	json_object_put(resp);
	return ret;
}

static const char *get_str(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static void print_sandbox(json_object *s)
{
	json_object *hooks;

	printf("%s\n  cgroup      %s (id %s)\n  mode        %s\n  policy      %s sha256:%s (generation %s)\n",
	       get_str(s, "name"), get_str(s, "cgroup"), get_str(s, "cgroup_id"), get_str(s, "mode"),
	       get_str(s, "policy_name"), get_str(s, "policy_sha256"), get_str(s, "policy_generation"));
	{
		const char *signer = get_str(s, "policy_signer");

		if (signer && signer[0])
			printf("  signed by   %s (%s)\n", signer, get_str(s, "policy_signer_key"));
	}
	{
		json_object *ex;
		size_t shown = 0, expired = 0;

		if (json_object_object_get_ex(s, "expires", &ex)) {
			for (size_t i = 0; i < json_object_array_length(ex); i++) {
				json_object *e = json_object_array_get_idx(ex, i), *x;

				if (json_object_object_get_ex(e, "expired", &x) && json_object_get_boolean(x)) {
					expired++;
					continue;
				}
				if (shown++ < 3) {
					const char *owner = get_str(e, "owner"), *ticket = get_str(e, "ticket");

					printf("  %s %s at %s%s%s%s%s\n", shown == 1 ? "expires next" : "            ",
					       get_str(e, "rule"), get_str(e, "expires"), owner && owner[0] ? ", owner " : "",
					       owner ? owner : "", ticket && ticket[0] ? ", ticket " : "", ticket ? ticket : "");
				}
			}
			if (shown > 3)
				printf("              and %zu more\n", shown - 3);
			if (expired)
				printf("  expired     %zu entr%s (allowing nothing; remove or renew them)\n", expired,
				       expired == 1 ? "y" : "ies");
		}
	}
	printf("  hooks      ");
	if (json_object_object_get_ex(s, "hooks", &hooks))
		for (size_t i = 0; i < json_object_array_length(hooks); i++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(hooks, i)));
	printf("\n  families    %s", sluice_seccomp_status_note(get_str(s, "families_enforced_by")));
	printf("\n  counters    allowed %s, redirected %s, denied %s, would-deny %s, events lost %s, "
	       "event lines lost %s\n",
	       get_str(s, "allowed"), get_str(s, "redirected"), get_str(s, "denied"), get_str(s, "would_deny"),
	       get_str(s, "events_lost"), get_str(s, "event_lines_lost"));
	printf("  proxy pid   %s, resolver pid %s\n", get_str(s, "proxy_pid"), get_str(s, "resolver_pid"));
	{
		json_object *dd;   /* null: the daemon has no counts for it */

		if (json_object_object_get_ex(s, "dns_dropped", &dd) && dd)
			printf("  dns dropped %s (rate-limited %s, queue full %s, at a stop %s)\n", get_str(dd, "total"),
			       get_str(dd, "rate_limited"), get_str(dd, "socket_overflow"), get_str(dd, "shutdown"));
	}
	{
		const char *rt = get_str(s, "runtime"), *id = get_str(s, "container_id");
		const char *cn = get_str(s, "container_name"), *up = get_str(s, "upstream_netns");

		if (rt && rt[0])
			printf("  container   %s%s%s%s (runtime %s)\n", id && id[0] ? id : "?", cn && cn[0] ? " (" : "",
			       cn && cn[0] ? cn : "", cn && cn[0] ? ")" : "", rt);
		if (up && up[0])
			printf("  upstream    %s (the proxy and resolver dial from there)\n", up);
	}
	{
		const char *ca = get_str(s, "ca_cert");   /* null when nothing is inspected */

		if (ca && ca[0])
			printf("  ca cert     %s (TLS inspection: the workload must trust it, docs/daemon.md)\n", ca);
	}
}

static void human_attach(json_object *resp)
{
	json_object *s, *conns;

	if (json_object_object_get_ex(resp, "sandbox", &s)) {
		printf("attached: ");
		print_sandbox(s);
	}
	if (json_object_object_get_ex(resp, "existing_connections", &conns)) {
		size_t n = json_object_array_length(conns);

		json_object *d;

		printf("connections open before the attach (not judged by the filter): %zu\n", n);
		if (json_object_object_get_ex(resp, "destroyed", &d))
			printf("closed with --kill-existing: %s\n", json_object_get_string(d));
		for (size_t i = 0; i < n; i++) {
			json_object *c = json_object_array_get_idx(conns, i);

			printf("  pid %s (%s) fd %s %s %s -> %s %s\n", get_str(c, "pid"), get_str(c, "comm"),
			       get_str(c, "fd"), get_str(c, "proto"), get_str(c, "local"), get_str(c, "remote"),
			       get_str(c, "state"));
		}
	}
}

static void human_reload(json_object *resp)
{
	json_object *r, *s;

	if (!json_object_object_get_ex(resp, "reload", &r) || !json_object_object_get_ex(resp, "sandbox", &s)) {
		printf("reloaded\n");
		return;
	}
	printf("reloaded %s: policy %s sha256:%.12s -> %s sha256:%.12s%s, generation %s in force\n",
	       get_str(s, "name"), get_str(r, "old_policy_name"), get_str(r, "old_policy_sha256"),
	       get_str(r, "new_policy_name"), get_str(r, "new_policy_sha256"),
	       strcmp(get_str(r, "old_policy_sha256"), get_str(r, "new_policy_sha256")) == 0 ? " (same content)" : "",
	       get_str(r, "generation"));
	printf("  mode %s; proxy and resolver %s\n", get_str(s, "mode"), get_str(r, "children"));
}

static void human_detach(json_object *resp)
{
	printf("detached\n");
}

static void print_runs(json_object *runs);

static void human_status(json_object *resp)
{
	json_object *arr;

	printf("events: %s\n", get_str(resp, "events"));
	{
		const char *as = get_str(resp, "allowed_signers");

		if (as && as[0])
			printf("signed mode: every policy must be signed by a key in %s\n", as);
		else
			printf("unsigned mode: policies are not checked for signatures (sluice daemon --allowed-signers)\n");
		as = get_str(resp, "boundary");
		if (as && as[0])
			printf("boundary: every policy must be within %s\n", as);
	}
	if (!json_object_object_get_ex(resp, "sandboxes", &arr) || json_object_array_length(arr) == 0)
		printf("no sandboxes attached\n");
	else
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			print_sandbox(json_object_array_get_idx(arr, i));
	if (json_object_object_get_ex(resp, "runs", &arr))
		print_runs(arr);
}

static void sanitize_name(char *name)
{
	for (char *q = name; *q; q++)
		if (!(*q == '-' || *q == '_' || *q == '.' || (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') ||
		      (*q >= 'A' && *q <= 'Z')))
			*q = '_';
	if (strlen(name) > SLUICE_NAME_MAX)
		name[SLUICE_NAME_MAX] = 0;
}

static int secret_arg(json_object **arr, const char *arg, const char *cmd);

/*
 * Send `req` (consumed) with the policy at `path` as content (ctl_content.h):
 * its bytes, signature, upstream CA and secrets (`secrets`: the --secret
 * "NAME=/abs/FILE" array, consumed, may be NULL; the paths go along as
 * the sandbox's record, where the daemon re-reads them after a restart),
 * then print the answer as finish() does.
 */
static int call_with_policy(json_object *req, const char *cmd, const char *path, json_object *secrets, int json,
			    void (*human)(json_object *))
{
	struct ctl_content_fds fds = { .n = 0 };
	char *args[SLUICE_SECRET_ARGS_MAX] = { NULL }, msg[1024];
	size_t n_args = secrets ? json_object_array_length(secrets) : 0;
	json_object *resp;

	if (n_args > SLUICE_SECRET_ARGS_MAX) {
		log_warnx("%s: at most %d --secret", cmd, SLUICE_SECRET_ARGS_MAX);
		json_object_put(secrets);
		json_object_put(req);
		return 2;
	}
	for (size_t i = 0; i < n_args; i++)
		args[i] = (char *)json_object_get_string(json_object_array_get_idx(secrets, i));
	if (ctl_content_prepare(req, path, args, n_args, &fds, msg, sizeof(msg)) < 0) {
		log_warnx("%s: %s", cmd, msg);
		if (secrets)
			json_object_put(secrets);
		json_object_put(req);
		return 2;
	}
	if (secrets)
		json_object_object_add(req, "secrets", secrets);
	resp = sluice_ctl_call_fds(req, fds.fd, fds.n);
	ctl_content_fds_close(&fds);
	return finish(resp, json, human);
}

static void usage_attach(void)
{
	printf("usage: sluice attach --policy FILE (--cgroup PATH | --pid PID | --container ID [--namespace NS])\n"
	       "                     [--name NAME] [--netns PATH] [--upstream-netns PATH|host]\n"
	       "                     [--mode audit|enforce] [--kill-existing] [--secret NAME=FILE]...\n"
	       "                     [--label KEY=VALUE]... [--json]\n\n"
	       "Put an existing cgroup under a policy, through the daemon.  --container asks\n"
	       "podman, docker, then containerd (`ctr`, namespaces default, k8s.io, moby, or\n"
	       "only --namespace NS; $CONTAINERD_ADDRESS picks its socket) for the container's\n"
	       "init pid; --pid uses that process's cgroup and network namespace.\n"
	       "--upstream-netns: the proxy and resolver listen in the sandbox's netns but dial\n"
	       "from this one (host: the daemon's), so a container without a network reaches\n"
	       "out only through them.  Lists connections that were open before;\n"
	       "--kill-existing closes them (bpf_sock_destroy, kernel 6.5+).  --secret: where\n"
	       "credential NAME's secret is (instead of its `file:`); the daemon reads it, and\n"
	       "again at each reload.\n\n"
	       "  sluice attach --policy policies/llm-api.yaml --container agent1\n"
	       "  sluice attach --policy web.yaml --container job7 --namespace k8s.io\n");
}

/*
 * The cgroup (into cgbuf, PATH_MAX bytes) and netns (into nsbuf, 64 bytes,
 * unless *netns is set) to attach: those of process pid (> 0), else the
 * real path of *cgroup and the netns of its first process.  0, or -1 said.
 */
static int attach_target(long pid, const char *cg2, const char **cgroup, const char **netns, char *cgbuf,
			 char *nsbuf)
{
	char real[PATH_MAX];
	pid_t first;

	if (pid > 0) {
		if (inspect_pid_cgroup((pid_t)pid, cg2, cgbuf, PATH_MAX) < 0) {
			log_warnx("attach: cannot find the cgroup v2 of pid %ld", pid);
			return -1;
		}
		*cgroup = cgbuf;
		if (!*netns) {
			snprintf(nsbuf, 64, "/proc/%ld/ns/net", pid);
			*netns = nsbuf;
		}
		return 0;
	}
	if (!realpath(*cgroup, real)) {
		log_warn("attach: cgroup %s", *cgroup);
		return -1;
	}
	snprintf(cgbuf, PATH_MAX, "%s", real);
	*cgroup = cgbuf;
	first = inspect_cgroup_first_pid(*cgroup);
	if (!*netns && first > 0) {
		snprintf(nsbuf, 64, "/proc/%d/ns/net", (int)first);
		*netns = nsbuf;
	}
	return 0;
}

int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' }, { "cgroup", required_argument, NULL, 'c' },
		{ "pid", required_argument, NULL, 'P' },    { "container", required_argument, NULL, 'C' },
		{ "name", required_argument, NULL, 'n' },   { "netns", required_argument, NULL, 'N' },
		{ "mode", required_argument, NULL, 'm' },   { "json", no_argument, NULL, 'j' },
		{ "kill-existing", no_argument, NULL, 'K' }, { "namespace", required_argument, NULL, 'z' },
		{ "upstream-netns", required_argument, NULL, 'U' },
		{ "secret", required_argument, NULL, 'S' },
		{ "label", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },         { 0 },
	};
	static struct sluice_labels labels;
	const char *policy = NULL, *cgroup = NULL, *container = NULL, *netns = NULL, *mode = NULL;
	const char *ctrd_ns = NULL, *upstream = NULL;
	struct inspect_container ci = { 0 };
	char name[SLUICE_NAME_MAX + 1] = "", cg2[PATH_MAX], cgbuf[PATH_MAX], nsbuf[64], msg[512];
	char absupstream[PATH_MAX];
	long pid = 0;
	int json = 0, kill_existing = 0, c;
	json_object *req, *secrets = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'K': kill_existing = 1; break;
		case 'S':
			if (secret_arg(&secrets, optarg, "attach") < 0)
				return 2;
			break;
		case 'L':
			if (sluice_label_add(&labels, optarg, msg, sizeof(msg)) < 0) {
				log_warnx("attach: --label: %s", msg);
				return 2;
			}
			break;
		case 'p': policy = optarg; break;
		case 'c': cgroup = optarg; break;
		case 'P': pid = strtol(optarg, NULL, 10); break;
		case 'C': container = optarg; break;
		case 'n':
			if (sluice_name_check(optarg, msg, sizeof(msg)) < 0) {
				log_warnx("attach: --name: %s", msg);
				return 2;
			}
			snprintf(name, sizeof(name), "%s", optarg);
			break;
		case 'N': netns = optarg; break;
		case 'm': mode = optarg; break;
		case 'z': ctrd_ns = optarg; break;
		case 'U': upstream = optarg; break;
		case 'j': json = 1; sluice_cli_set_json(); break;
		case 'h':
			usage_attach();
			return 0;
		default: return 2;
		}
	}
	if (!policy || (!!cgroup + !!pid + !!container) != 1) {
		log_warnx("attach: need --policy and exactly one of --cgroup, --pid, --container");
		return 2;
	}
	if (ctrd_ns && !container) {
		log_warnx("attach: --namespace is containerd's: it goes with --container");
		return 2;
	}
	if (upstream && strcmp(upstream, "host") != 0 && !realpath(upstream, absupstream)) {
		log_warn("attach: --upstream-netns %s", upstream);
		return 2;
	}
	if (upstream && strcmp(upstream, "host") != 0)
		upstream = absupstream;
	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0) {
		log_warnx("attach: no cgroup2 mount in /proc/mounts");
		return 2;
	}
	if (container) {
		if (inspect_container(container, ctrd_ns, &ci, msg, sizeof(msg)) < 0) {
			log_warnx("attach: %s", msg);
			return 2;
		}
		pid = ci.pid;
		if (!name[0]) {
			snprintf(name, sizeof(name), "%s", container);
			sanitize_name(name);
		}
	}
	if (attach_target(pid, cg2, &cgroup, &netns, cgbuf, nsbuf) < 0)
		return 2;
	if (!name[0]) {
		const char *base = strrchr(cgroup, '/');

		snprintf(name, sizeof(name), "%s", base ? base + 1 : cgroup);
		sanitize_name(name);
	}
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("attach"));
	json_object_object_add(req, "name", json_object_new_string(name));
	json_object_object_add(req, "cgroup", json_object_new_string(cgroup));
	if (netns)
		json_object_object_add(req, "netns", json_object_new_string(netns));
	if (mode)
		json_object_object_add(req, "mode", json_object_new_string(mode));
	if (kill_existing)
		json_object_object_add(req, "kill_existing", json_object_new_boolean(1));
	if (ci.runtime) {
		json_object_object_add(req, "container_id", json_object_new_string(ci.id));
		json_object_object_add(req, "container_name", json_object_new_string(ci.name));
		json_object_object_add(req, "runtime", json_object_new_string(ci.runtime));
	}
	if (upstream)
		json_object_object_add(req, "upstream_netns", json_object_new_string(upstream));
	if (labels.n)
		json_object_object_add(req, "labels", daemon_labels_to_json(&labels));
	return call_with_policy(req, "attach", policy, secrets, json, human_attach);
}

/* Does a daemon answer on the control socket?  (No message either way.) */
static bool daemon_reachable(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool up;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path());
	up = fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	if (fd >= 0)
		close(fd);
	return up;
}

static void usage_detach(FILE *f)
{
	fprintf(f,
		"usage: sluice detach [--json] [--force [--state-dir DIR]] NAME\n"
		"\n"
		"Remove the filter from sandbox NAME, through the daemon: its cgroup is no\n"
		"longer filtered (the daemon stops its proxy and resolver).\n"
		"\n"
		"  --force          also without a daemon (one that refuses to start because a\n"
		"                   pinned sandbox cannot be re-adopted): unpin NAME's filter\n"
		"                   under %s/NAME and remove the daemon's records of it\n"
		"                   in DIR (default %s).  The attached cgroup's processes\n"
		"                   keep running, UNFILTERED; a cgroup sluice made itself\n"
		"                   (<cgroup2>/sluice/NAME) has its processes killed first.\n"
		"                   Refused while the sandbox's recorded owner is running.\n"
		"  --state-dir DIR  the daemon's state directory (as `sluice daemon --state-dir`)\n"
		"  -j, --json       the answer as JSON (the daemon's, or {\"ok\", \"detached\",\n"
		"                   \"daemon\": false, \"removed\"} after --force without one)\n",
		SLUICE_PIN_ROOT, SLUICE_STATE_DIR);
}

int cmd_detach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' }, { "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },  { "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	const char *state_dir = SLUICE_STATE_DIR;
	char msg[512], did[2048];
	int force = 0, c;
	json_object *req, *resp, *ok;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hj", opts, NULL)) != -1) {
		switch (c) {
		case 'f': force = 1; break;
		case 'j': sluice_cli_set_json(); break;
		case 's': state_dir = optarg; break;
		case 'h': usage_detach(stdout); return 0;
		default: usage_detach(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		log_warnx("usage: sluice detach [--json] [--force] NAME");
		return 2;
	}
	if (sluice_name_check(argv[optind], msg, sizeof(msg)) < 0) {
		log_warnx("detach: %s", msg);
		return 2;
	}
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("detach"));
	json_object_object_add(req, "name", json_object_new_string(argv[optind]));
	if (!force)
		return finish(sluice_ctl_call(req), 0, human_detach);
	if (daemon_reachable()) {
		/* a running daemon that holds it detaches it the ordinary way */
		resp = sluice_ctl_call(req);
		if (!resp)
			return 2;
		if (json_object_object_get_ex(resp, "ok", &ok) && json_object_get_boolean(ok))
			return finish(resp, 0, human_detach);
		json_object_put(resp);
	} else {
		json_object_put(req);
	}
	if (geteuid() != 0) {
		log_warnx("detach --force: must run as root (bpffs pins)");
		return 2;
	}
	if (sluice_sandbox_remove(argv[optind], state_dir, false, did, sizeof(did), msg, sizeof(msg)) < 0) {
		log_warnx("detach --force: %s", msg);
		return 2;
	}
	if (sluice_cli_json()) {
		resp = json_object_new_object();
		json_object_object_add(resp, "ok", json_object_new_boolean(1));
		json_object_object_add(resp, "detached", json_object_new_string(argv[optind]));
		json_object_object_add(resp, "daemon", json_object_new_boolean(0));
		json_object_object_add(resp, "removed", json_object_new_string(did));
		sluice_cli_json_print(resp);
		json_object_put(resp);
		return 0;
	}
	printf("detached %s without the daemon: %s\n", argv[optind], did);
	return 0;
}

/* One `sluice run` sandbox whose recorded owner is alive, into the array. */
static int add_run(const char *name, const struct sluice_owner *o, void *arg)
{
	json_object *r;

	if (strcmp(o->kind, "run") != 0 || !sluice_owner_alive(o))
		return 0;
	r = json_object_new_object();
	json_object_object_add(r, "name", json_object_new_string(name));
	json_object_object_add(r, "pid", json_object_new_int(o->pid));
	json_object_object_add(r, "info", json_object_new_string(o->info));
	json_object_object_add(r, "dns_dropped", sluice_dns_dropped_of_run(o->pid));
	json_object_array_add(arg, r);
	return 0;
}

/* The `sluice run` sandboxes of this host, from their owner records
 * (owner.h): name, the loader's pid, its policy and confinement. */
static json_object *run_sandboxes(void)
{
	json_object *a = json_object_new_array();

	sluice_owner_each(add_run, a);
	return a;
}

static void print_runs(json_object *runs)
{
	size_t n = json_object_array_length(runs);

	printf("sluice run sandboxes: %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(runs, i);

		json_object *dd;

		printf("  %s (pid %s): %s\n", get_str(r, "name"), get_str(r, "pid"), get_str(r, "info"));
		if (json_object_object_get_ex(r, "dns_dropped", &dd) && dd)
			printf("    dns dropped %s (rate-limited %s, queue full %s, at a stop %s)\n", get_str(dd, "total"),
			       get_str(dd, "rate_limited"), get_str(dd, "socket_overflow"), get_str(dd, "shutdown"));
	}
}

int cmd_status(int argc, char **argv)
{
	json_object *req = json_object_new_object(), *resp, *runs;
	int local = argc > 1 && (strcmp(argv[1], "--json") == 0 || strcmp(argv[1], "-j") == 0), json;

	if (local)
		sluice_cli_set_json();
	json = sluice_cli_json();
	if (argc > 1 + local) {
		bool help = strcmp(argv[1 + local], "--help") == 0 || strcmp(argv[1 + local], "-h") == 0;

		fprintf(help ? stdout : stderr,
			"usage: sluice status [-j|--json]\n\n"
			"The daemon's sandboxes: name, cgroup (and id), mode, policy name, sha256 and\n"
			"generation, the hooks attached, the counters (allowed, redirected, denied,\n"
			"would-deny, events lost), the proxy's and resolver's pids, the DNS queries\n"
			"its resolvers dropped (rate-limited, queue full, at a stop), and the events\n"
			"file; then the `sluice run` sandboxes of this host (name, pid, policy, the\n"
			"confinement: profile, user, Landlock ABI, seccomp).  --json: the daemon's\n"
			"answer with \"runs\" added.  Exit 2 when no daemon answers (the runs are\n"
			"listed all the same).\n");
		json_object_put(req);
		return help ? 0 : 2;
	}
	json_object_object_add(req, "cmd", json_object_new_string("status"));
	resp = sluice_ctl_call(req);
	runs = run_sandboxes();
	if (!resp) {
		/* no daemon: still say what `sluice run` holds */
		if (json) {
			resp = json_object_new_object();
			json_object_object_add(resp, "ok", json_object_new_boolean(0));
			json_object_object_add(resp, "command", json_object_new_string("status"));
			json_object_object_add(resp, "exit", json_object_new_int(2));
			json_object_object_add(resp, "error", json_object_new_string(sluice_cli_last_error()));
			json_object_object_add(resp, "runs", runs);
			sluice_cli_json_print(resp);
			json_object_put(resp);
			return 2;
		}
		print_runs(runs);
		json_object_put(runs);
		return 2;
	}
	json_object_object_add(resp, "runs", runs);
	return finish(resp, json, human_status);
}

/* The `--secret` sources sandbox `name` was attached with (the daemon's
 * status: "NAME=/path" each, never a secret), for a reload without
 * --secret to read again here; NULL: none, or no answer (the reload
 * then says what is missing). */
static json_object *recorded_secret_sources(const char *name)
{
	json_object *req = json_object_new_object(), *resp, *arr, *src, *out = NULL;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	resp = sluice_ctl_call(req);
	if (resp && json_object_object_get_ex(resp, "sandboxes", &arr))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *s = json_object_array_get_idx(arr, i);

			if (strcmp(get_str(s, "name"), name) == 0 && json_object_object_get_ex(s, "secret_sources", &src) &&
			    json_object_is_type(src, json_type_array) && json_object_array_length(src))
				out = json_object_get(src);
		}
	if (resp)
		json_object_put(resp);
	return out;
}

int cmd_reload(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' }, { "name", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },         { "help", no_argument, NULL, 'h' },
		{ "secret", required_argument, NULL, 'S' },
		{ 0 },
	};
	const char *policy = NULL, *name = NULL;
	char msg[256];
	json_object *req, *secrets = NULL;
	int c, json = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (secret_arg(&secrets, optarg, "reload") < 0)
				return 2;
			break;
		case 'p': policy = optarg; break;
		case 'n': name = optarg; break;
		case 'j': json = 1; sluice_cli_set_json(); break;
		case 'h':
			printf("usage: sluice reload --policy FILE [--secret NAME=FILE]... [--json] [--name] NAME\n\n"
			       "Atomically replace sandbox NAME's policy: every connection is judged wholly by\n"
			       "the old or wholly by the new one.  An invalid policy changes nothing.  Says\n"
			       "what it did: the old and new policy (name, sha256), the generation now in\n"
			       "force, whether the proxy and resolver were restarted on the new policy.\n"
			       "The credentials' secrets are read again (a rotated secret is used from now on);\n"
			       "a missing one refuses the reload and the old stays.  --secret replaces the\n"
			       "sources given at attach.\n");
			return 0;
		default: return 2;
		}
	}
	if (!name && optind < argc)
		name = argv[optind];
	if (!policy || !name) {
		log_warnx("usage: sluice reload --policy FILE [--name] NAME");
		return 2;
	}
	if (sluice_name_check(name, msg, sizeof(msg)) < 0) {
		log_warnx("reload: %s", msg);
		return 2;
	}
	if (!secrets)
		secrets = recorded_secret_sources(name);
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("reload"));
	json_object_object_add(req, "name", json_object_new_string(name));
	return call_with_policy(req, "reload", policy, secrets, json, human_reload);
}

/* --secret NAME=FILE: appended to *arr as "NAME=/abs/FILE" (the daemon,
 * root, reads the file; a path crosses the socket, never a secret). */
static int secret_arg(json_object **arr, const char *arg, const char *cmd)
{
	const char *eq = strchr(arg, '=');
	char abs[PATH_MAX], buf[PATH_MAX + 80];

	if (!eq || eq == arg || (size_t)(eq - arg) > 64 || !realpath(eq + 1, abs)) {
		log_warnx("%s: --secret wants NAME=FILE (an existing file), not '%s'", cmd, arg);
		return -1;
	}
	snprintf(buf, sizeof(buf), "%.*s=%s", (int)(eq - arg), arg, abs);
	if (!*arr)
		*arr = json_object_new_array();
	json_object_array_add(*arr, json_object_new_string(buf));
	return 0;
}

/* `sluice events [--follow] [--sandbox NAME]`: the daemon's JSON lines
 * (kernel, proxy and resolver), from its events file, filtered. */
int cmd_events(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "follow", no_argument, NULL, 'f' }, { "sandbox", required_argument, NULL, 's' },
		{ "file", required_argument, NULL, 'F' }, { "format", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },   { "since", required_argument, NULL, 'S' }, { 0 },
	};
	const char *sandbox = NULL, *file = SLUICE_STATE_DIR "/events.jsonl", *since = NULL;
	int follow = 0, ocsf = 0, c, file_given = 0;
	static char conv[2 * 4096 + 1024];
	char *line = NULL, needle[128];
	size_t cap = 0;
	FILE *f;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': follow = 1; break;
		case 's': sandbox = optarg; break;
		case 'F': file = optarg; file_given = 1; break;
		case 'S': since = optarg; break;
		case 'o':
			if (strcmp(optarg, "ocsf") != 0 && strcmp(optarg, "ecs") != 0) {
				log_warnx("events: --format must be ecs or ocsf, not '%s'", optarg);
				return 2;
			}
			ocsf = strcmp(optarg, "ocsf") == 0;
			break;
		case 'h':
			printf("usage: sluice events [--follow [--since SEQ]] [--sandbox NAME] [--file FILE] [--format ecs|ocsf]\n\n"
			       "Print the daemon's JSON event lines (kernel denials, proxy and resolver logs).\n"
			       "--follow: streamed by the daemon over its control socket as they are written\n"
			       "(root: any sandbox or all; a member of the user group: a sandbox of its own);\n"
			       "--since SEQ (with --sandbox): first the sandbox's lines from event.sequence SEQ.\n"
			       "--follow --file FILE tails FILE instead.\n"
			       "--format ocsf: each line as an OCSF %s event (4001 Network Activity, 4002 HTTP\n"
			       "Activity, 4003 DNS Activity, 6002 Application Lifecycle; docs/events.md).\n",
			       SLUICE_OCSF_VERSION);
			return 0;
		default: return 2;
		}
	}
	if (since && (!follow || file_given || !sandbox)) {
		log_warnx("events: --since SEQ needs --follow and --sandbox (event.sequence is per sandbox), not --file");
		return 2;
	}
	if (follow && !file_given) {
		char *end;
		unsigned long long seq = since ? strtoull(since, &end, 10) : 0;

		if (since && (!*since || *end || *since == '-')) {
			log_warnx("events: --since wants an event.sequence (a number), not '%s'", since);
			return 2;
		}
		return sluice_events_follow(sandbox, since != NULL, (uint64_t)seq, ocsf);
	}
	f = fopen(file, "re");
	if (!f) {
		log_warn("events: %s", file);
		return 2;
	}
	snprintf(needle, sizeof(needle), "\"sluice.sandbox\":\"%s\"", sandbox ? sandbox : "");
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		ssize_t n = getline(&line, &cap, f);

		if (n < 0) {
			if (!follow)
				break;
			clearerr(f);
			poll(NULL, 0, 100);
			continue;
		}
		if (sandbox && !strstr(line, needle))
			continue;
		if (ocsf) {
			long m = sluice_ocsf_convert(line, (size_t)n, conv, sizeof(conv));

			/* a line that is not JSON (torn by a crash) is said, not dropped silently */
			if (m < 0)
				log_warnx("events: %s: a line that is not a JSON object (left out)", file);
			else
				printf("%s\n", conv);
			continue;
		}
		fputs(line, stdout);
	}
	free(line);
	fclose(f);
	return 0;
}
