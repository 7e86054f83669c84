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
#include "daemon_internal.h"
#include "daemon_user.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
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
#include "ctl_content.h"
#include "ctlsrv.h"
#include "daemon_events.h"
#include "daemon_follow.h"
#include "destroy.h"
#include "events.h"
#include "events_dest.h"
#include "gc.h"
#include "kfeatures.h"
#include "labels.h"
#include "owner.h"
#include "run_limits.h"
#include "inspect.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "policy_sig.h"
#include "expiry_watch.h"
#include "flowcut.h"
#include "policy_within.h"
#include "policy_ref.h"
#include "upstream_ca.h"
#include "run_limits.h"
#include "sandbox_ca.h"
#include "sandbox.h"
#include "sandbox_up.h"

struct daemon_globals D;





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
		daemon_emit(s, "sandbox-error", "sandbox %s: --kill-existing: %s", s->name, msg);
		return json_object_new_string(msg);
	}
	daemon_emit(s, "sandbox-kill-existing", "sandbox %s: closed %d connection(s) opened before the attach", s->name, r);
	return json_object_new_int(r);
}

/* ---- requests ------------------------------------------------------------ */

/* The policy content of an attach or reload: sent by the client (req's
 * descriptors), or, by name (the OCI hook, a user's run), read from the
 * admin's --policy-dir.  0, or -1 with msg. */
static int request_content(json_object *req, const struct ctlsrv_peer *peer, struct daemon_content *c, char *msg,
			   size_t msglen)
{
	const char *pname = ctlsrv_str(req, "policy_name");
	char path[PATH_MAX];

	if (pname && !ctlsrv_str(req, "policy") && !json_object_object_get(req, "policy_fd")) {
		if (sluice_policy_ref_resolve(D.policy_dir, pname, "policy name", path, sizeof(path), msg, msglen) < 0)
			return -1;
		return daemon_content_read(path, c, msg, msglen);
	}
	return daemon_content_take(req, peer, c, msg, msglen);
}

/* Refuse an attach that would filter the wrong cgroup or reuse a name.
 * NULL, or the error answer. */
static json_object *attach_refusal(const char *name, const char *cg)
{
	char cg2[PATH_MAX], msg[256];

	if (!name || !cg)
		return ctlsrv_error("attach needs name, cgroup and policy");
	if (sluice_name_check(name, msg, sizeof(msg)) < 0)
		return ctlsrv_error("%s", msg);
	if (daemon_find(name))
		return ctlsrv_error("a sandbox named '%s' is already attached", name);
	/* a `sluice run` of that name, or one a daemon left (sluice gc) */
	if (sluice_pins_in_use(name))
		return ctlsrv_error("a sandbox named '%s' is pinned under %s/%s, not by this daemon", name,
				    SLUICE_PIN_ROOT, name);
	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0)
		return ctlsrv_error("no cgroup2 mount");
	if (strncmp(cg, cg2, strlen(cg2)) != 0 || strstr(cg, "/.."))
		return ctlsrv_error("cgroup %s is not under the cgroup2 mount %s", cg, cg2);
	if (cgroup_too_wide(cg2, cg))
		return ctlsrv_error("refusing to attach to %s: it is the root of the hierarchy or contains sluice itself", cg);
	for (struct dsandbox *o2 = D.sandboxes; o2; o2 = o2->next)
		if (strcmp(o2->cgroup, cg) == 0)
			return ctlsrv_error("cgroup %s is already attached as sandbox %s", cg, o2->name);
	return NULL;
}

/* s's policy from the request's content: parsed once (signed mode:
 * verified), the mode asked for, within --boundary, its secrets, kept.
 * 0, or -1 with msg (nothing kept). */
static int attach_policy(struct dsandbox *s, json_object *req, const struct ctlsrv_peer *peer, char *msg,
			 size_t msglen)
{
	const char *mode = ctlsrv_str(req, "mode");
	struct daemon_content c;
	int err;

	if (request_content(req, peer, &c, msg, msglen) < 0)
		return -1;
	if (daemon_content_load(&c, D.signed_mode ? &D.signers : NULL, &s->policy, &s->signer, msg, msglen) < 0 ||
	    daemon_content_read_refs(&c, s->policy, msg, msglen) < 0)
		goto fail;
	if (mode && strcmp(mode, "audit") != 0 && strcmp(mode, "enforce") != 0) {
		snprintf(msg, msglen, "mode must be audit or enforce");
		goto fail;
	}
	if (mode)
		s->policy->mode = strcmp(mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	snprintf(s->mode, sizeof(s->mode), "%s", s->policy->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	if (D.boundary && sluice_policy_check_within(s->policy, D.boundary, D.boundary_path, msg, msglen) != 0)
		goto fail;
	if (set_secret_args(s, json_object_object_get(req, "secrets"), msg, msglen) < 0 ||
	    load_secrets(s, &c, s->policy, &s->secrets, msg, msglen) < 0) {
		size_t n = strlen(msg);

		snprintf(msg + n, msglen - n, " (nothing attached)");
		goto fail;
	}
	err = keep_policy(s, &c);
	if (err) {
		snprintf(msg, msglen, "cannot copy policy to %s: %s", s->policy_path, strerror(-err));
		goto fail;
	}
	daemon_content_free(&c);
	return 0;
fail:
	daemon_content_free(&c);
	return -1;
}

/* Hold the sandbox's netns (and its upstream one) under the state dir.
 * 0, or -1 with msg. */
static int attach_netns(struct dsandbox *s, const char *netns, const char *upstream, char *msg, size_t msglen)
{
	if (netns) {
		int err;

		snprintf(s->netns, sizeof(s->netns), "%s/netns/%s", D.state_dir, s->name);
		err = keep_netns(netns, s->netns);
		if (err) {
			snprintf(msg, msglen, "cannot hold network namespace %s: %s", netns, strerror(-err));
			s->netns[0] = 0;
			return -1;
		}
		fdstore_netns(s->name, s->netns);
	}
	if (upstream && strcmp(upstream, "host") == 0) {
		snprintf(s->upstream, sizeof(s->upstream), "host");
	} else if (upstream) {
		char kept[PATH_MAX], fdname[96];
		int err;

		snprintf(kept, sizeof(kept), "%s/netns/%s.upstream", D.state_dir, s->name);
		err = keep_netns(upstream, kept);
		if (err) {
			snprintf(msg, msglen, "cannot hold upstream network namespace %s: %s", upstream, strerror(-err));
			return -1;
		}
		snprintf(s->upstream, sizeof(s->upstream), "%s", kept);
		snprintf(fdname, sizeof(fdname), "%s.upstream", s->name);
		fdstore_netns(fdname, kept);
	}
	return 0;
}

/* Listeners, BPF load, policy maps and pins of s (sandbox_up.c, as for
 * `sluice run`), its children, the attach to cg_fd, then only the pins
 * kept open (sandbox_keep_pins) and its ring buffer read.  0, or -1 with
 * msg. */
static int attach_bring_up(struct dsandbox *s, int cg_fd, char *msg, size_t msglen)
{
	struct sluice_ring_use ring;
	struct sandbox_up u = {
		.name = s->name, .netns = s->netns[0] ? s->netns : NULL, .want_proxy = D.proxy_bin[0] != 0,
		.want_dns = D.resolver_bin[0] != 0, .use_lsm = D.use_lsm, .require_lsm = D.require_lsm,
		.kernel_tunnels = sluice_args_have(D.proxy_extra, "--kernel-tunnels"), .policy = s->policy,
		.ring = &ring,
	};
	struct sluice_event_ring *r;
	int err, slot;

	/* the daemon's one ring buffer, a slot of its own in it (event_ring.h) */
	r = daemon_ring(&err);
	if (!r) {
		snprintf(msg, msglen, "cannot make the event ring buffer: %s", strerror(-err));
		return -1;
	}
	slot = sluice_event_ring_free_slot(r);
	if (slot < 0) {
		snprintf(msg, msglen, "no free slot in the event ring buffer (%u sandboxes at most)", SLUICE_RING_SLOTS);
		return -1;
	}
	ring = (struct sluice_ring_use){ .events_fd = r->events_fd, .budget_fd = r->budget_fd, .slot = (uint32_t)slot };
	if (sandbox_up(&u, &s->sb, &s->l, msg, msglen) < 0)
		return -1;
	init_meta(s);
	if (start_children(s, CHILD_BOTH, msg, msglen) < 0 || sandbox_attach(&s->sb, cg_fd, msg, msglen) < 0 ||
	    sandbox_keep_pins(&s->sb, msg, msglen) < 0)
		return -1;
	/* the ring keeps what the programs wrote since the attach */
	return daemon_consume(s, r, msg, msglen) < 0 ? -1 : 0;
}

static json_object *do_attach(json_object *req, const struct ctlsrv_peer *peer)
{
	const char *name = ctlsrv_str(req, "name"), *cg = ctlsrv_str(req, "cgroup");
	const char *cid = ctlsrv_str(req, "container_id"), *cname = ctlsrv_str(req, "container_name");
	const char *runtime = ctlsrv_str(req, "runtime");
	char msg[1536];
	struct dsandbox *s;
	int cg_fd = -1;
	json_object *o, *ke;

	o = attach_refusal(name, cg);
	if (o)
		return o;
	s = new_sandbox(name);
	if (!s)
		return ctlsrv_error("out of memory");
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", cg);
	snprintf(s->container_id, sizeof(s->container_id), "%s", cid ? cid : "");
	snprintf(s->container_name, sizeof(s->container_name), "%s", cname ? cname : "");
	snprintf(s->runtime, sizeof(s->runtime), "%s", runtime ? runtime : "");
	if (daemon_labels_from_json(&s->labels, json_object_object_get(req, "labels"), msg, sizeof(msg)) < 0 ||
	    attach_policy(s, req, peer, msg, sizeof(msg)) < 0) {
		free_sandbox(s);
		return ctlsrv_error("%s", msg);
	}
	cg_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd < 0) {
		static const char *const kept[] = { "yaml", "yaml.sig", "upstream-ca.pem" };
		char path[PATH_MAX];

		o = ctlsrv_error("cannot open cgroup %s: %s", cg, strerror(errno));
		for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
			daemon_state_path(path, sizeof(path), s->name, kept[i]);
			unlink(path);   /* what attach_policy kept, nothing else of the name's */
		}
		free_sandbox(s);
		return o;
	}
	s->cgroup_id = cg_id(cg);
	if (attach_netns(s, ctlsrv_str(req, "netns"), ctlsrv_str(req, "upstream_netns"), msg, sizeof(msg)) < 0 ||
	    attach_bring_up(s, cg_fd, msg, sizeof(msg)) < 0) {
		close(cg_fd);
		daemon_teardown(s, false);
		free_sandbox(s);
		return ctlsrv_error("%s", msg);
	}
	close(cg_fd);
	write_state(s, true);
	s->next = D.sandboxes;
	D.sandboxes = s;
	daemon_emit_signed(s, "sandbox-attach", "sandbox %s attached to %s: mode %s, policy %s (%.12s)%s%s%s%s", s->name,
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
		json_object *conns = inspect_cgroup_connections(cg);

		json_object_object_add(o, "existing_connections", conns);
		if (json_object_object_get_ex(req, "kill_existing", &ke) && json_object_get_boolean(ke))
			json_object_object_add(o, "destroyed", kill_existing(s, conns));
	}
	return o;
}

/* An attach refused is a line too (the OCI hook's container does not start). */
static json_object *attach_with(json_object *req, const struct ctlsrv_peer *peer)
{
	json_object *o = do_attach(req, peer), *ok;

	if (!json_object_object_get_ex(o, "ok", &ok) || !json_object_get_boolean(ok)) {
		const char *cid = ctlsrv_str(req, "container_id");

		daemon_emit(NULL, "sandbox-attach-refused", "attach of %s%s%s%s refused: %s", ctlsrv_str(req, "name") ? ctlsrv_str(req, "name") : "?",
		     cid ? " (container " : "", cid ? cid : "", cid ? ")" : "", ctlsrv_str(o, "error") ? ctlsrv_str(o, "error") : "?");
	}
	return o;
}

/* daemon_user.c's attach: by policy name, never with descriptors. */
static json_object *attach_or_say_why(json_object *req)
{
	return attach_with(req, NULL);
}

static json_object *do_detach(json_object *req)
{
	const char *name = ctlsrv_str(req, "name");
	struct dsandbox *s = name ? daemon_find(name) : NULL;
	json_object *o;

	if (!s)
		return ctlsrv_error("no sandbox named '%s'", name ? name : "");
	daemon_emit(s, "sandbox-detach", "sandbox %s detached from %s", s->name, s->cgroup);
	unlink_sandbox(s);
	daemon_teardown(s, false);
	free_sandbox(s);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
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
static int reload_secrets(struct dsandbox *s, json_object *req, const struct daemon_content *c,
			  const struct sluice_policy *np, struct sluice_secrets *nsec, char *msg, size_t msglen)
{
	struct dsandbox tmp = *s;
	json_object *arr = json_object_object_get(req, "secrets");
	int rc;

	memset(tmp.secret_arg, 0, sizeof(tmp.secret_arg));
	tmp.n_secret_src = 0;
	rc = arr ? set_secret_args(&tmp, arr, msg, msglen) : 0;
	if (rc == 0)
		rc = load_secrets(arr ? &tmp : s, c, np, nsec, msg, msglen);
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

static json_object *do_reload(json_object *req, const struct ctlsrv_peer *peer)
{
	const char *name = ctlsrv_str(req, "name");
	struct dsandbox *s = name ? daemon_find(name) : NULL;
	struct sluice_policy *np = NULL;
	struct sluice_signer who;
	struct sluice_secrets nsec = { NULL, 0 };
	struct daemon_content c;
	char msg[1536], old_digest[SLUICE_DIGEST_HEX_LEN + 1], old_name[128];
	const char *children = "restarted on the new policy";
	json_object *o, *r;
	int err, cut;

	if (!s)
		return ctlsrv_error("no sandbox named '%s'", name ? name : "");
	if (request_content(req, peer, &c, msg, sizeof(msg)) < 0)
		return ctlsrv_error("%s (nothing changed)", msg);
	msg[0] = 0;
	if (daemon_content_load(&c, D.signed_mode ? &D.signers : NULL, &np, &who, msg, sizeof(msg)) < 0) {
		np = NULL;   /* msg says why */
	} else if (daemon_content_read_refs(&c, np, msg, sizeof(msg)) < 0 ||
		   (D.boundary && sluice_policy_check_within(np, D.boundary, D.boundary_path, msg, sizeof(msg)) != 0) ||
		   reload_secrets(s, req, &c, np, &nsec, msg, sizeof(msg)) < 0) {
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
		daemon_content_free(&c);
		s->reloads_refused++;
		daemon_emit(s, "sandbox-reload-refused", "sandbox %s: reload refused, policy %.12s stays: %s", s->name,
		     s->policy->digest, msg);
		return ctlsrv_error("%s (nothing changed)", msg);
	}
	s->reloads_ok++;
	/* the old secrets are wiped; the children get the new ones */
	sluice_secrets_clear(&s->secrets);
	s->secrets = nsec;
	err = keep_policy(s, &c);
	if (err)
		log_warnx("sandbox %s: cannot keep the policy of %s in force: %s", s->name, c.file, strerror(-err));
	daemon_content_free(&c);
	s->signer = who;
	snprintf(old_digest, sizeof(old_digest), "%s", s->policy->digest);
	snprintf(old_name, sizeof(old_name), "%s", s->policy->name ? s->policy->name : "");
	sluice_policy_free(s->policy);
	s->policy = np;
	snprintf(s->mode, sizeof(s->mode), "%s", np->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
	init_meta(s);
	cut = sluice_flowcut(&s->sb, s->netns[0] ? s->netns : NULL, np, &s->log);
	if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0) {
		/* the children in place decide by the policy just replaced */
		retire_children(s);
		daemon_emit(s, "sandbox-error", "sandbox %s: proxy/resolver restart failed: %s (fail closed)", s->name, msg);
		children = "failed to restart (proxied and DNS traffic fails closed; see the events)";
	}
	write_state(s, true);
	daemon_emit_signed(s, "sandbox-reload", "sandbox %s: policy %.12s replaced by %.12s (generation %u)%s%s", s->name,
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
	json_object_object_add(r, "flows_cut", json_object_new_int(cut < 0 ? 0 : cut));
	json_object_object_add(o, "reload", r);
	return o;
}

/* What daemon_user.c asks of the daemon. */
static void user_emit(const char *name, const char *action, const char *message)
{
	daemon_emit(name ? daemon_find(name) : NULL, action, "%s", message);
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

	if (daemon_follow_handles(req))
		return daemon_follow_request(req, peer, &user_ops);
	if (peer->uid != 0 || daemon_user_handles(req))
		return daemon_user_request(req, peer, &user_ops);

	if (!cmd)
		return ctlsrv_error("malformed request: want one JSON object with \"cmd\"");
	if (strcmp(cmd, "attach") == 0)
		return attach_with(req, peer);
	if (strcmp(cmd, "detach") == 0)
		return do_detach(req);
	if (strcmp(cmd, "status") == 0)
		return do_status(req);
	if (strcmp(cmd, "reload") == 0)
		return do_reload(req, peer);
	return ctlsrv_error("unknown command '%s'", cmd);
}

/* The control socket's summary lines (timeouts, evictions, refusals). */
static void control_report(const char *action, const char *message)
{
	sluice_lifecycle_write(&D.log, action, message);
	log_warnx("%s", message);
}

/* Whether a sandbox's cgroup is still there is asked once a second, not
 * at every tick: a path lookup through cgroupfs for each sandbox was about
 * half of what an idle daemon of 400 sandboxes spent (4 % of a CPU, issue
 * 19).  Each sandbox has its own tick in the ten (its cgroup id), so the
 * lookups are spread over the second rather than made all at once. */
#define GONE_CHECK_TICKS 10

/* Every 100 ms: drain ring buffers (batched wakeups: poll, then consume),
 * notice dead children and vanished cgroups. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	static unsigned ticks;
	struct dsandbox *s, *next;
	int status;
	pid_t pid;

	retired_expire();
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (retired_reaped(pid) || daemon_user_reaped(pid, status, &user_ops))
			continue;
		for (struct dsandbox *t = D.sandboxes; t; t = t->next)
			if (pid == t->proxy_pid || pid == t->resolver_pid)
				child_exited(t, pid == t->proxy_pid);
	}
	ctlsrv_tick();
	daemon_events_check_size();
	daemon_follow_settle(children_oldest_gen());
	/* from the head again: a user's command that ended detached its sandbox above */
	for (s = D.sandboxes; s; s = next) {
		next = s->next;
		daemon_drain(s);
		if (s->log_ready)
			sluice_expiry_watch_tick(&s->expiry, &s->log, -1);
		if ((ticks + s->cgroup_id) % GONE_CHECK_TICKS == 0 && access(s->cgroup, F_OK) < 0 && errno == ENOENT) {
			daemon_emit(s, "sandbox-gone", "sandbox %s: cgroup %s was removed by its runtime; cleaning up", s->name,
			     s->cgroup);
			unlink_sandbox(s);
			daemon_teardown(s, false);
			free_sandbox(s);
		}
	}
	ticks++;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	sd_notify(0, "STOPPING=1");
	event_base_loopbreak(D.base);
}

int daemon_events_reopen(const char *why)
{
	int err;
	int n = 0;

	/* the journal's stream stays: there is no file to reopen */
	err = sluice_events_is_journald(D.events_path) ? 0 : log_reopen_fd(D.events, D.events_path, 0600);
	if (err)
		log_warnx("daemon: %s: cannot reopen %s: %s (still writing to the old file)", why, D.events_path,
			  strerror(-err));
	daemon_follow_reopened();
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		char msg[512];

		if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0)
			daemon_emit(s, "sandbox-error", "sandbox %s: %s: proxy/resolver restart failed: %s (fail closed)",
			     s->name, why, msg);
		n++;
	}
	return n;
}

/* SIGHUP (systemctl reload, logrotate): reopen the events file and move
 * every writer to it (daemon_events_reopen); every sandbox keeps running. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
	int n;

	sd_notify(0, "RELOADING=1");
	n = daemon_events_reopen("SIGHUP");
	daemon_emit(NULL, "daemon-reopen", "sluice daemon reopened %s on SIGHUP (%d sandboxes)", D.events_path, n);
	sd_notifyf(0, "READY=1\nSTATUS=serving %s, %d sandboxes", D.sock_path, n);
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

static void usage(void)
{
	printf("usage: sluice daemon [--state-dir DIR] [--events FILE] [--upstream-dns ADDR]\n"
	       "                     [--events-max-size SIZE [--events-keep N]] [--event-ring SIZE]\n"
	       "                     [--proxy-arg ARG]... [--resolver-arg ARG]... [--upstream-ca FILE]\n"
	       "                     [--require-lsm | --no-lsm] [--metrics IP:PORT]\n"
	       "                     [--allowed-signers FILE] [--boundary FILE] [--policy-dir DIR]\n"
	       "                     [--control-clients N] [--control-deadlines IDLE_MS:TOTAL_MS]\n"
	       "                     [--user-group GROUP] [--upstream-ca FILE]\n\n"
	       "  --events DEST  FILE (appended; default DIR/events.jsonl) or journald (one\n"
	       "                 journal entry per line, identifier sluice)\n"
	       "  --events-max-size SIZE  rotate the events file when it reaches SIZE (512M,\n"
	       "                 1G; at least 1M): FILE becomes FILE.1, ..., FILE.N, the oldest\n"
	       "                 is removed (--events-keep N files, default 4); default: no cap\n"
	       "                 (SIGHUP reopens it for logrotate)\n"
	       "  --event-ring SIZE  the kernel's ring buffer of denial records that every sandbox\n"
	       "                 shares (a power of 2 from 64K to 1G; default 16M): half of it\n"
	       "                 split evenly among the sandboxes, the rest first come\n"
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
}

/* The options of `sluice daemon` and what they set (D, *ctl, the paths of
 * the signers and boundary files).  0 to go on, else the exit status. */
static int parse_options(int argc, char **argv, struct ctlsrv_limits *ctl, const char **signers_path,
			 const char **boundary_path)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "events", required_argument, NULL, 'e' },
		{ "events-format", required_argument, NULL, 'O' },
		{ "events-max-size", required_argument, NULL, 'Z' },
		{ "events-keep", required_argument, NULL, 'K' },
		{ "event-ring", required_argument, NULL, 'R' },
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
	int npx = 0, nrx = 0, c;

	snprintf(D.state_dir, sizeof(D.state_dir), "%s", SLUICE_STATE_DIR);
	snprintf(D.policy_dir, sizeof(D.policy_dir), "%s", SLUICE_POLICY_DIR);
	D.use_lsm = true;
	D.user_group = "sluice";
	D.events_keep = 4;
	D.ring_bytes = SLUICE_RING_SHARED_BYTES;
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
		case 'Z': {
			char why[160];
			uint64_t v;

			if (sluice_parse_memory(optarg, &v, why, sizeof(why)) < 0) {
				log_warnx("daemon: --events-max-size: %s", why);
				return 2;
			}
			D.events_max = v;
			break;
		}
		case 'R': {
			char why[160];
			uint64_t v;

			if (sluice_parse_memory(optarg, &v, why, sizeof(why)) < 0 || v < (64u << 10) ||
			    v > (1u << 30) || (v & (v - 1))) {
				log_warnx("daemon: --event-ring: want a power of 2 from 64K to 1G (16M), not '%s'",
					  optarg);
				return 2;
			}
			D.ring_bytes = v;
			break;
		}
		case 'K':
			if (parse_uint(optarg, 1, 1000, &D.events_keep) < 0) {
				log_warnx("daemon: --events-keep: want a number of files from 1 to 1000, not '%s'", optarg);
				return 2;
			}
			break;
		case 'u': D.upstream_dns = optarg; break;
		case 'x': if (npx < 31) px[npx++] = optarg; break;
		case 'k': D.upstream_ca = optarg; break;
		case 'y': if (nrx < 31) rx[nrx++] = optarg; break;
		case 'L': D.require_lsm = true; break;
		case 'l': D.use_lsm = false; break;
		case 'm': D.metrics_addr = optarg; break;
		case 'S': *signers_path = optarg; break;
		case 'B': *boundary_path = optarg; break;
		case 'P': snprintf(D.policy_dir, sizeof(D.policy_dir), "%s", optarg); break;
		case 'G': D.user_group = optarg; D.user_group_set = true; break;
		case 'C':
			if (parse_uint(optarg, 1, 100000, &ctl->max_clients) < 0) {
				log_warnx("daemon: --control-clients: want a number from 1 to 100000, not '%s'", optarg);
				return 2;
			}
			break;
		case 'T': {
			char *colon = strchr(optarg, ':');

			if (!colon || (*colon = 0, parse_uint(optarg, 1, 3600000, &ctl->idle_ms) < 0) ||
			    parse_uint(colon + 1, 1, 3600000, &ctl->total_ms) < 0) {
				log_warnx("daemon: --control-deadlines: want IDLE_MS:TOTAL_MS, e.g. 2000:5000");
				return 2;
			}
			break;
		}
		case 'h':
			usage();
			return -1;
		default: return 2;
		}
	}
	if (D.events_max && sluice_events_is_journald(D.events_path)) {
		log_warnx("daemon: --events-max-size caps an events file; the journal has its own limits "
			  "(SystemMaxUse= in journald.conf)");
		return 2;
	}
	D.proxy_extra = px;
	D.resolver_extra = rx;
	return 0;
}

/* Before anything is adopted: root, the signers and boundary, the BPF LSM,
 * the state dir, the fd store's netns, bpffs, the helpers.  0 or 2. */
static int prepare(const char *signers_path, const char *boundary_path)
{
	char lsm_msg[256] = "", msg[1024], tried[2 * PATH_MAX + 8];

	log_init("sluice-daemon", 0);
	if (geteuid() != 0) {
		log_warnx("daemon: must run as root");
		return 2;
	}
	if (signers_path) {
		if (sluice_signers_load(signers_path, &D.signers, msg, sizeof(msg)) < 0) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
		D.signed_mode = true;
	}
	if (boundary_path) {
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
	if (!sluice_helper_path("sluice-proxy", D.proxy_bin, sizeof(D.proxy_bin), tried, sizeof(tried))) {
		log_warnx("daemon: sluice-proxy not found (tried %s)", tried);
		return 2;
	}
	if (!sluice_helper_path("sluice-resolver", D.resolver_bin, sizeof(D.resolver_bin), tried, sizeof(tried))) {
		log_warnx("daemon: sluice-resolver not found (tried %s)", tried);
		return 2;
	}
	libbpf_set_print(libbpf_quiet);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The events file, the metrics address, the pinned sandboxes, then the
 * control socket (one daemon at a time).  0 or 2. */
static int start_serving(const struct ctlsrv_limits *ctl)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char msg[512];
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old;

	/* one daemon at a time: a live control socket means another is running */
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", D.sock_path);
	if (connect(lfd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		log_warnx("daemon: another sluice daemon is serving %s", D.sock_path);
		return 2;
	}
	close(lfd);
	unlink(D.sock_path);
	D.events = sluice_events_open(D.events_path, 0600);
	if (D.events < 0) {
		log_warnx("daemon: cannot open %s: %s", sluice_events_is_journald(D.events_path) ?
			  "the journal (--events journald: is systemd-journald running?)" : D.events_path,
			  strerror(-D.events));
		return 2;
	}
	sluice_evlog_init(&D.log, D.events, D.events_path, "sluice", NULL);
	/* the metrics address is taken before anything is adopted: one in use
	 * (another daemon's?) refuses the start with nothing changed */
	D.base = event_base_new();
	if (D.metrics_addr) {
		D.metrics = sluice_metrics_listen(D.base, D.metrics_addr, metrics_fill, NULL, msg, sizeof(msg));
		if (!D.metrics) {
			log_warnx("daemon: %s", msg);
			return 2;
		}
	}
	if (adopt_all() > 0) {
		log_warnx("daemon: refusing to start: some pinned sandboxes could not be re-adopted (see above); "
			  "their filters stay in force; `sluice detach --force NAME` removes one without the daemon");
		return 2;
	}
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	old = umask(0177);
	if (bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(lfd, 256) < 0) {
		umask(old);
		log_warn("daemon: cannot listen on %s", D.sock_path);
		return 2;
	}
	umask(old);
	if (daemon_user_setup(D.user_group, D.user_group_set, D.state_dir, D.sock_path, msg, sizeof(msg)) < 0) {
		log_warnx("daemon: %s", msg);
		return 2;
	}
	if (ctlsrv_start(D.base, lfd, ctl, handle_request, control_report) < 0) {
		log_warn("daemon: cannot serve %s", D.sock_path);
		return 2;
	}
	if (daemon_follow_init(D.base, D.events_path, D.log.ocsf, user_emit) < 0)
		log_warn("daemon: cannot serve followers of %s (sluice events --follow)", D.events_path);
	return 0;
}

int cmd_daemon(int argc, char **argv)
{
	const char *signers_path = NULL, *boundary_path = NULL;
	struct event *tick, *sigs[3];
	struct timeval tv = { 0, 100000 };
	struct ctlsrv_limits ctl = { 0 };
	int rc = parse_options(argc, argv, &ctl, &signers_path, &boundary_path), n = 0;

	if (rc)
		return rc < 0 ? 0 : rc;
	/* Every attach loads a BPF object, and libbpf 1.1 reads the kernel's
	 * BTF (5 MiB and more) into fresh buffers for each: above glibc's
	 * mmap threshold, so each attach page-faulted some 11 MiB anew (about
	 * a quarter of an attach under a hypervisor, issue 19).  Kept in the
	 * heap instead, the daemon holds that much once, and the pages stay. */
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	rc = prepare(signers_path, boundary_path);
	if (rc == 0)
		rc = start_serving(&ctl);
	if (rc)
		return rc;
	tick = event_new(D.base, -1, EV_PERSIST, on_tick, NULL);
	event_add(tick, &tv);
	sigs[0] = evsignal_new(D.base, SIGTERM, on_signal, NULL);
	sigs[1] = evsignal_new(D.base, SIGINT, on_signal, NULL);
	sigs[2] = evsignal_new(D.base, SIGHUP, on_hup, NULL);
	event_add(sigs[0], NULL);
	event_add(sigs[1], NULL);
	event_add(sigs[2], NULL);
	daemon_emit(NULL, "daemon-start", "sluice daemon serving %s, events in %s%s%s; policy signatures %s%s", D.sock_path,
	     D.events_path, D.metrics ? ", metrics at http://" : "", D.metrics ? D.metrics_addr : "",
	     D.signed_mode ? "required, allowed signers " : "not required (unsigned mode)",
	     D.signed_mode ? D.signers.path : "");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		n++;
	/* Type=notify: ready once the socket listens and the pinned sandboxes are adopted */
	sd_notifyf(0, "READY=1\nSTATUS=serving %s, %d sandboxes", D.sock_path, n);
	event_base_dispatch(D.base);
	ctlsrv_stop();
	daemon_follow_stop();

	/* A clean stop keeps every sandbox filtered and pinned (fail closed);
	 * `sluice detach` is how a filter is removed. */
	for (struct dsandbox *s = D.sandboxes; s; s = s->next) {
		daemon_drain(s);
		stop_children(s);
	}
	sluice_metrics_free(D.metrics);
	retired_stop_all();
	daemon_emit(NULL, "daemon-stop", "sluice daemon stopped; sandboxes stay filtered (pinned)");
	unlink(D.sock_path);
	return 0;
}
