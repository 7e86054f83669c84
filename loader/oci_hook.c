/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * oci_hook.c - `sluice oci-hook` (oci_hook.h, docs/containers.md).
 *
 * The runtime (runc, crun; podman and CRI-O through hooks.d, containerd
 * through its base runtime spec) runs the hook at createRuntime: the
 * container's namespaces and cgroup exist, its init process waits, its
 * program has not started.  The hook asks the daemon to attach that cgroup
 * and returns only when the filter is in place, so the container's first
 * instruction is already filtered.  Any failure (no daemon, a policy name
 * that does not resolve, a path instead of a name, a cgroup that cannot be
 * found) exits non-zero: the runtime then refuses to start the container.
 */
#include "oci_hook.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cgroup.h"
#include "daemon.h"
#include "events.h"
#include "evlog.h"
#include "inspect.h"
#include "log.h"
#include "policy_ref.h"

#define STATE_MAX (1u << 20)   /* an OCI state is a few KiB; annotations are bounded by the runtime */

static const char *ann(json_object *anns, const char *key)
{
	json_object *v;

	if (!anns || !json_object_object_get_ex(anns, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool has_prefix_key(json_object *anns, const char *prefix)
{
	if (!anns || !json_object_is_type(anns, json_type_object))
		return false;
	json_object_object_foreach(anns, k, v) {
		(void)v;
		if (strncmp(k, prefix, strlen(prefix)) == 0)
			return true;
	}
	return false;
}

/* Which engine made the container, from the annotations it sets. */
static const char *runtime_of(json_object *anns)
{
	const char *m = ann(anns, "io.container.manager");

	if (m && strcmp(m, "libpod") == 0)
		return "podman";       /* podman also sets io.kubernetes.cri-o.* keys: first */
	if (has_prefix_key(anns, "io.kubernetes.cri-o."))
		return "cri-o";
	if (has_prefix_key(anns, "io.kubernetes.cri.") || has_prefix_key(anns, "nerdctl/"))
		return "containerd";
	return "oci";
}

/* Is the container's pod in one of the `list` namespaces (CRI-O's and
 * containerd's CRI annotations)? */
static bool exempt(json_object *anns, const char *const *list)
{
	const char *ns = ann(anns, "io.kubernetes.pod.namespace");

	if (!ns)
		ns = ann(anns, "io.kubernetes.cri.sandbox-namespace");
	for (size_t i = 0; ns && list && list[i]; i++)
		if (strcmp(list[i], ns) == 0)
			return true;
	return false;
}

/* The default sandbox name: the id's first 12 characters, each outside the
 * name alphabet replaced by '_'. */
static void name_of_id(const char *id, char *out, size_t len)
{
	size_t i;

	for (i = 0; i < 12 && i + 1 < len && id[i]; i++) {
		char c = id[i];

		out[i] = (c == '-' || c == '_' || (c == '.' && i > 0) || (c >= '0' && c <= '9') ||
			  (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) ? c : '_';
	}
	out[i] = '\0';
}

int oci_hook_plan(const char *state, size_t len, const struct oci_hook_opts *o, struct oci_hook_plan *p,
		  char *msg, size_t msglen)
{
	json_tokener *tok = json_tokener_new();
	json_object *st, *anns = NULL, *v;
	const char *id, *status = NULL, *stage = o->stage, *ref, *mode, *nm;
	char why[256];
	int ret = -1;

	memset(p, 0, sizeof(*p));
	if (!tok) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	st = json_tokener_parse_ex(tok, state, (int)len);
	json_tokener_free(tok);
	if (!st || !json_object_is_type(st, json_type_object)) {
		snprintf(msg, msglen, "the container state on stdin is not a JSON object (OCI runtime spec, state)");
		goto out;
	}
	if (!json_object_object_get_ex(st, "id", &v) || !json_object_is_type(v, json_type_string) ||
	    !*(id = json_object_get_string(v))) {
		snprintf(msg, msglen, "the container state has no \"id\"");
		goto out;
	}
	snprintf(p->container_id, sizeof(p->container_id), "%s", id);
	if (json_object_object_get_ex(st, "status", &v) && json_object_is_type(v, json_type_string))
		status = json_object_get_string(v);
	if (json_object_object_get_ex(st, "pid", &v) && json_object_is_type(v, json_type_int))
		p->pid = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(st, "annotations", &anns) && !json_object_is_type(anns, json_type_object))
		anns = NULL;
	snprintf(p->runtime, sizeof(p->runtime), "%s", runtime_of(anns));

	if (!stage) {
		/* one hooks.d entry serves both stages: runc says "creating" at
		 * createRuntime, podman and runc "stopped" at poststop */
		if (status && (strcmp(status, "creating") == 0 || strcmp(status, "created") == 0))
			stage = "createRuntime";
		else if (status && strcmp(status, "stopped") == 0)
			stage = "poststop";
		else {
			snprintf(msg, msglen, "container %s is '%s': the hook runs at createRuntime (creating) or "
				 "poststop (stopped); later is too late to filter from the first instruction",
				 id, status ? status : "(no status)");
			goto out;
		}
	}
	if (strcmp(stage, "createRuntime") != 0 && strcmp(stage, "poststop") != 0) {
		snprintf(msg, msglen, "unknown stage '%s' (createRuntime or poststop)", stage);
		goto out;
	}

	ref = ann(anns, SLUICE_ANN_POLICY);
	if (!ref && o->default_policy && strcmp(o->default_policy, "none") != 0 && !exempt(anns, o->exempt))
		ref = o->default_policy;
	if (!ref) {
		p->action = OCI_HOOK_NOTHING;
		ret = 0;
		goto out;
	}
	nm = ann(anns, SLUICE_ANN_NAME);
	if (nm) {
		if (sluice_name_check(nm, why, sizeof(why)) < 0) {
			snprintf(msg, msglen, "annotation " SLUICE_ANN_NAME ": %s", why);
			goto out;
		}
		snprintf(p->name, sizeof(p->name), "%s", nm);
		snprintf(p->container_name, sizeof(p->container_name), "%s", nm);
	} else {
		const char *k8s = ann(anns, "io.kubernetes.cri.container-name");

		if (!k8s)
			k8s = ann(anns, "io.kubernetes.container.name");
		if (k8s)
			snprintf(p->container_name, sizeof(p->container_name), "%s", k8s);
		name_of_id(id, p->name, sizeof(p->name));
	}
	if (strcmp(stage, "poststop") == 0) {
		p->action = OCI_HOOK_DETACH;
		ret = 0;
		goto out;
	}
	if (sluice_policy_ref_check(ref, ann(anns, SLUICE_ANN_POLICY) ? "annotation " SLUICE_ANN_POLICY : "--default-policy",
				    p->policy, sizeof(p->policy), msg, msglen) < 0)
		goto out;
	mode = ann(anns, SLUICE_ANN_MODE);
	if (mode && strcmp(mode, "audit") != 0 && strcmp(mode, "enforce") != 0) {
		snprintf(msg, msglen, "annotation " SLUICE_ANN_MODE "='%s': audit or enforce", mode);
		goto out;
	}
	snprintf(p->mode, sizeof(p->mode), "%s", mode ? mode : "");
	if (p->pid <= 0) {
		snprintf(msg, msglen, "the container state of %s has no \"pid\": cannot find its cgroup", id);
		goto out;
	}
	p->action = OCI_HOOK_ATTACH;
	ret = 0;
out:
	if (st)
		json_object_put(st);
	return ret;
}

char *oci_hook_config_json(char *const argv[], int always)
{
	json_object *o = json_object_new_object(), *hook = json_object_new_object(), *args = json_object_new_array();
	json_object *when = json_object_new_object(), *stages = json_object_new_array();
	char *out;

	for (size_t i = 0; argv[i]; i++)
		json_object_array_add(args, json_object_new_string(argv[i]));
	json_object_object_add(o, "version", json_object_new_string("1.0.0"));
	json_object_object_add(hook, "path", json_object_new_string(argv[0]));
	json_object_object_add(hook, "args", args);
	json_object_object_add(o, "hook", hook);
	if (always) {
		json_object_object_add(when, "always", json_object_new_boolean(1));
	} else {
		json_object *a = json_object_new_object();

		json_object_object_add(a, "^io\\.sluice\\.policy$", json_object_new_string(".+"));
		json_object_object_add(when, "annotations", a);
	}
	json_object_object_add(o, "when", when);
	json_object_array_add(stages, json_object_new_string("createRuntime"));
	json_object_array_add(stages, json_object_new_string("poststop"));
	json_object_object_add(o, "stages", stages);
	out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}

/* ---- the command ----------------------------------------------------------- */

static char *read_all(int fd, size_t max, size_t *len)
{
	char *buf = malloc(max + 1);
	size_t got = 0;

	if (!buf)
		return NULL;
	while (got < max) {
		ssize_t n = read(fd, buf + got, max - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*len = got;
	return buf;
}

/*
 * A refusal is a line in the daemon's events file as well (an admin's
 * --events FILE, else events.jsonl beside the control socket when it
 * exists): the runtime's error message may end up nowhere anyone reads.
 */
static void refusal_line(const char *events, const struct oci_hook_plan *p, const char *why)
{
	char path[PATH_MAX], msg[1536];
	struct sluice_envelope env = { .container_id = p->container_id[0] ? p->container_id : NULL,
				       .container_name = p->container_name[0] ? p->container_name : NULL,
				       .container_runtime = p->runtime[0] ? p->runtime : NULL };
	struct sluice_evlog w;
	int fd;

	if (!events) {
		const char *sock = getenv("SLUICE_CONTROL_SOCK");
		const char *slash;

		if (!sock || !*sock)
			sock = SLUICE_CONTROL_SOCK;
		slash = strrchr(sock, '/');
		snprintf(path, sizeof(path), "%.*s/events.jsonl", slash ? (int)(slash - sock) : 1, slash ? sock : ".");
		if (access(path, W_OK) < 0)
			return;
		events = path;
	}
	fd = open(events, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		log_warn("oci-hook: cannot write the refusal to %s", events);
		return;
	}
	snprintf(msg, sizeof(msg), "oci-hook refused container %s: %s (the container does not start)",
		 p->container_id[0] ? p->container_id : "?", why);
	sluice_evlog_init(&w, fd, events, "sluice", &env);
	sluice_lifecycle_write(&w, "oci-hook-refused", msg);
	close(fd);
}

static const char *answer_error(json_object *resp)
{
	json_object *ok, *err;

	if (!resp)
		return "no answer from the daemon";
	if (json_object_object_get_ex(resp, "ok", &ok) && json_object_get_boolean(ok))
		return NULL;
	if (json_object_object_get_ex(resp, "error", &err))
		return json_object_get_string(err);
	return "the daemon refused";
}

/* Attach p's container through the daemon.  Returns 0; -1 with msg; -2 with
 * msg when the daemon refused (its line is written). */
static int hook_attach(const struct oci_hook_plan *p, const char *upstream, char *msg, size_t msglen)
{
	char cg2[PATH_MAX], cg[PATH_MAX], ns[64];
	json_object *req, *resp;
	const char *err;
	int ret = 0;

	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0) {
		snprintf(msg, msglen, "no cgroup2 mount in /proc/mounts");
		return -1;
	}
	if (inspect_pid_cgroup((pid_t)p->pid, cg2, cg, sizeof(cg)) < 0) {
		snprintf(msg, msglen, "cannot find the cgroup v2 of container %s (pid %ld)", p->container_id, p->pid);
		return -1;
	}
	snprintf(ns, sizeof(ns), "/proc/%ld/ns/net", p->pid);
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("attach"));
	json_object_object_add(req, "name", json_object_new_string(p->name));
	json_object_object_add(req, "cgroup", json_object_new_string(cg));
	json_object_object_add(req, "netns", json_object_new_string(ns));
	json_object_object_add(req, "policy_name", json_object_new_string(p->policy));
	if (p->mode[0])
		json_object_object_add(req, "mode", json_object_new_string(p->mode));
	json_object_object_add(req, "container_id", json_object_new_string(p->container_id));
	if (p->container_name[0])
		json_object_object_add(req, "container_name", json_object_new_string(p->container_name));
	json_object_object_add(req, "runtime", json_object_new_string(p->runtime));
	if (upstream)
		json_object_object_add(req, "upstream_netns", json_object_new_string(upstream));
	resp = sluice_ctl_call(req);
	err = answer_error(resp);
	if (err) {
		snprintf(msg, msglen, "the daemon did not attach it: %s", err);
		ret = resp ? -2 : -1;   /* -2: the daemon answered, and wrote the refusal's line */
	}
	if (resp)
		json_object_put(resp);
	return ret;
}

/* poststop: detach; a sandbox already gone (the daemon noticed its cgroup
 * removed) is fine. */
static int hook_detach(const struct oci_hook_plan *p, char *msg, size_t msglen)
{
	json_object *req = json_object_new_object(), *resp;
	const char *err;
	int ret = 0;

	json_object_object_add(req, "cmd", json_object_new_string("detach"));
	json_object_object_add(req, "name", json_object_new_string(p->name));
	resp = sluice_ctl_call(req);
	err = answer_error(resp);
	if (err && strncmp(err, "no sandbox named", 16) != 0) {
		snprintf(msg, msglen, "detach of container %s: %s", p->container_id, err);
		ret = -1;
	}
	if (resp)
		json_object_put(resp);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice oci-hook [--default-policy NAME|none] [--upstream-netns PATH|host]\n"
		"                       [--control-socket PATH] [--events FILE] [--stage createRuntime|poststop]\n"
		"                       [--exempt-namespace NS]...\n"
		"       sluice oci-hook --print-config [the same options]\n"
		"\n"
		"An OCI runtime hook (createRuntime and poststop): reads the container state on\n"
		"stdin and asks the daemon to attach the container's cgroup before its process\n"
		"runs, with the policy named by the annotation io.sluice.policy (NAME: the file\n"
		"NAME.yaml of the daemon's --policy-dir, default %s; never a path).\n"
		"If anything fails the hook fails and the runtime does not start the container.\n"
		"Annotations:\n"
		"  io.sluice.policy=NAME     the policy (containers without it: --default-policy,\n"
		"                            else not attached)\n"
		"  io.sluice.mode=audit      audit instead of the policy's mode\n"
		"  io.sluice.name=NAME       the sandbox's name (default: the id's first 12 characters)\n"
		"The admin's options (in the hook configuration, never from the container):\n"
		"  --upstream-netns PATH|host  the proxy and resolver dial from there\n"
		"  --control-socket PATH       the daemon (default $SLUICE_CONTROL_SOCK or %s)\n"
		"  --events FILE               where a refusal's line goes (default: events.jsonl\n"
		"                              beside the control socket)\n"
		"  --stage S                   the stage, where the state's status does not tell\n"
		"  --exempt-namespace NS       pods of Kubernetes namespace NS get no --default-policy\n"
		"                              (kube-system, sluice's own: its daemon cannot filter itself)\n"
		"--print-config prints the hooks.d file for podman and CRI-O (one entry for both\n"
		"stages), with these options as the hook's arguments:\n"
		"  sluice oci-hook --print-config > /usr/share/containers/oci/hooks.d/sluice.json\n"
		"  podman run --annotation io.sluice.policy=web ...\n",
		SLUICE_POLICY_DIR, SLUICE_CONTROL_SOCK);
}

int cmd_oci_hook(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "default-policy", required_argument, NULL, 'D' },
		{ "upstream-netns", required_argument, NULL, 'u' }, { "control-socket", required_argument, NULL, 'c' },
		{ "events", required_argument, NULL, 'e' },         { "stage", required_argument, NULL, 's' },
		{ "print-config", no_argument, NULL, 'P' },         { "help", no_argument, NULL, 'h' },
		{ "exempt-namespace", required_argument, NULL, 'x' },
		{ 0 },
	};
	struct oci_hook_opts o = { 0 };
	const char *exempts[17] = { 0 };
	int n_exempt = 0;
	struct oci_hook_plan p;
	const char *upstream = NULL, *sock = NULL, *events = NULL;
	char msg[1024], self[PATH_MAX];
	int print = 0, c, rc;
	size_t len;
	char *state;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': o.default_policy = optarg; break;
		case 'u': upstream = optarg; break;
		case 'c': sock = optarg; break;
		case 'e': events = optarg; break;
		case 's': o.stage = optarg; break;
		case 'x':
			if (n_exempt == 16) {
				log_warnx("oci-hook: at most 16 --exempt-namespace");
				return 2;
			}
			exempts[n_exempt++] = optarg;
			break;
		case 'P': print = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	o.exempt = exempts;
	if (upstream && strcmp(upstream, "host") != 0 && upstream[0] != '/') {
		log_warnx("oci-hook: --upstream-netns: an absolute path or 'host'");
		return 2;
	}
	if (print) {
		char *av[16 + 2 * 16], *json;
		int n = 0;

		if (!realpath("/proc/self/exe", self)) {
			log_warn("oci-hook: /proc/self/exe");
			return 2;
		}
		av[n++] = self;
		av[n++] = "oci-hook";
#define PASS(flag, val) do { if (val) { av[n++] = flag; av[n++] = (char *)(val); } } while (0)
		PASS("--default-policy", o.default_policy);
		PASS("--upstream-netns", upstream);
		PASS("--control-socket", sock);
		PASS("--events", events);
		for (int i = 0; i < n_exempt; i++)
			PASS("--exempt-namespace", exempts[i]);
#undef PASS
		av[n] = NULL;
		json = oci_hook_config_json(av, o.default_policy && strcmp(o.default_policy, "none") != 0);
		if (!json)
			return 2;
		printf("%s\n", json);
		free(json);
		return 0;
	}
	if (sock)
		setenv("SLUICE_CONTROL_SOCK", sock, 1);
	state = read_all(0, STATE_MAX, &len);
	if (!state) {
		log_warnx("oci-hook: out of memory");
		return 2;
	}
	rc = oci_hook_plan(state, len, &o, &p, msg, sizeof(msg));
	free(state);
	if (rc == 0 && p.action == OCI_HOOK_ATTACH)
		rc = hook_attach(&p, upstream, msg, sizeof(msg));
	else if (rc == 0 && p.action == OCI_HOOK_DETACH)
		rc = hook_detach(&p, msg, sizeof(msg));
	if (rc < 0) {
		log_warnx("oci-hook: container %s: %s", p.container_id[0] ? p.container_id : "?", msg);
		if (p.action != OCI_HOOK_DETACH && rc != -2)
			refusal_line(events, &p, msg);
		return 2;
	}
	return 0;
}
