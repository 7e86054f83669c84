/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_attach.c - the daemon's requests that change what it holds:
 * attach (a cgroup, a netns, a container put under a policy), detach, and
 * reload (a new policy for a sandbox, atomically; its children restarted
 * on it).  daemon.c dispatches them; docs/daemon.md says what each does.
 */
#include "daemon.h"
#include "daemon_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "cgroup.h"
#include "cmd_seccomp.h"
#include "children.h"
#include "ctl_content.h"
#include "ctlsrv.h"
#include "daemon_events.h"
#include "destroy.h"
#include "events.h"
#include "kfeatures.h"
#include "run_limits.h"
#include "inspect.h"
#include "log.h"
#include "policy.h"
#include "flowcut.h"
#include "policy_within.h"
#include "policy_ref.h"
#include "upstream_ca.h"
#include "sandbox_ca.h"
#include "sandbox.h"
#include "sandbox_up.h"

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

json_object *attach_with(json_object *req, const struct ctlsrv_peer *peer)
{
	json_object *o = do_attach(req, peer), *ok;

	if (!json_object_object_get_ex(o, "ok", &ok) || !json_object_get_boolean(ok)) {
		const char *cid = ctlsrv_str(req, "container_id");

		daemon_emit(NULL, "sandbox-attach-refused", "attach of %s%s%s%s refused: %s", ctlsrv_str(req, "name") ? ctlsrv_str(req, "name") : "?",
		     cid ? " (container " : "", cid ? cid : "", cid ? ")" : "", ctlsrv_str(o, "error") ? ctlsrv_str(o, "error") : "?");
	}
	return o;
}

json_object *attach_or_say_why(json_object *req)
{
	return attach_with(req, NULL);
}

json_object *do_detach(json_object *req)
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

/* The flow cut of a reload of s to np (loader/flowcut.c): the sandbox's
 * cgroup and those below it, but for another sandbox's attached there
 * (whose flows its own reloads decide).  Returns the flows cut, or -errno. */
static int reload_cut(struct dsandbox *s, const struct sluice_policy *np)
{
	uint64_t *others;
	size_t n = 0;
	int cut;

	for (const struct dsandbox *o = D.sandboxes; o; o = o->next)
		n += o != s;
	others = calloc(n + 1, sizeof(*others));   /* + 1: never a zero-size allocation */
	if (!others) {
		log_warnx("sandbox %s: out of memory: no flows cut", s->name);
		return -ENOMEM;
	}
	n = 0;
	for (const struct dsandbox *o = D.sandboxes; o; o = o->next)
		if (o != s)
			others[n++] = o->cgroup_id;
	cut = sluice_flowcut(&s->sb, s->cgroup, others, n, s->netns[0] ? s->netns : NULL, np, &s->log);
	free(others);
	return cut;
}

json_object *do_reload(json_object *req, const struct ctlsrv_peer *peer)
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
	cut = reload_cut(s, np);
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
