/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_adopt.c - a restarted `sluice daemon` re-adopts the sandboxes the
 * previous one left: their records (NAME.json), pinned maps (refused when
 * another build pinned them: pin_layout.h), policy copy, netns and
 * listening ports, loss accounting and last written line
 * (daemon_internal.h).
 */
#include "daemon_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "daemon_events.h"
#include "log.h"
#include "owner.h"
#include "policy_within.h"
#include "upstream_ca.h"

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

/* The policy in force of a sandbox a previous daemon left: from the
 * daemon's own copies (NAME.yaml, .yaml.sig, .upstream-ca.pem; a copy
 * from a build that kept no CA text: the policy's tls.upstream_ca read
 * again).  0, or -1 with msg. */
static int adopt_policy(struct dsandbox *s, char *msg, size_t msglen)
{
	struct daemon_content c;
	char path[PATH_MAX];
	int err, fd;

	if (daemon_content_read(s->policy_path, &c, msg, msglen) < 0)
		return -1;
	if (daemon_content_load(&c, D.signed_mode ? &D.signers : NULL, &s->policy, &s->signer, msg, msglen) < 0)
		goto fail;
	daemon_state_path(path, sizeof(path), s->name, "upstream-ca.pem");
	err = sluice_read_small_file(path, 2 * SLUICE_UPSTREAM_CA_MAX, &c.upstream_ca, &c.n_upstream_ca);
	if (err == -ENOENT)
		err = daemon_content_read_refs(&c, s->policy, msg, msglen) < 0 ? -EINVAL : 0;
	else if (err)
		snprintf(msg, msglen, "%s: %s", path, strerror(-err));
	fd = err ? -1 : sluice_policy_memfd(c.bytes, c.n_bytes);
	if (fd < 0) {
		if (!err)
			snprintf(msg, msglen, "cannot hold the policy in a memfd: %s", strerror(-fd));
		goto fail;
	}
	s->policy_fd = fd;
	s->upstream_ca = c.upstream_ca;
	s->n_upstream_ca = c.n_upstream_ca;
	c.upstream_ca = NULL;
	daemon_content_free(&c);
	return 0;
fail:
	daemon_content_free(&c);
	if (s->policy) {
		sluice_policy_free(s->policy);
		s->policy = NULL;
	}
	return -1;
}

/* Re-adopt every sandbox a previous daemon left (pins + state files). */
/* s's record from the NAME.json a previous daemon wrote (st; NULL: none). */
static void adopt_record(struct dsandbox *s, json_object *st)
{
	const char *v;
	char msg[512];

	snprintf(s->cgroup, sizeof(s->cgroup), "%s", st && ctlsrv_str(st, "cgroup") ? ctlsrv_str(st, "cgroup") : "");
	snprintf(s->mode, sizeof(s->mode), "%s", st && ctlsrv_str(st, "mode") ? ctlsrv_str(st, "mode") : "enforce");
	if (!st)
		return;
	if (set_secret_args(s, json_object_object_get(st, "secret_sources"), msg, sizeof(msg)) < 0)
		log_warnx("sandbox %s: %s", s->name, msg);
	if ((v = ctlsrv_str(st, "container_id")))
		snprintf(s->container_id, sizeof(s->container_id), "%s", v);
	if ((v = ctlsrv_str(st, "container_name")))
		snprintf(s->container_name, sizeof(s->container_name), "%s", v);
	if ((v = ctlsrv_str(st, "runtime")))
		snprintf(s->runtime, sizeof(s->runtime), "%s", v);
	if ((v = ctlsrv_str(st, "upstream_netns")))
		snprintf(s->upstream, sizeof(s->upstream), "%s", v);
	if (daemon_labels_from_json(&s->labels, json_object_object_get(st, "labels"), msg, sizeof(msg)) < 0)
		log_warnx("sandbox %s: its labels are not kept: %s", s->name, msg);
}

/* The maps, policy and listeners of s, which a previous daemon pinned.
 * 0, or -1 with msg (then it is not re-adopted; its filter stays). */
static int adopt_maps_and_listeners(struct dsandbox *s, char *msg, size_t msglen)
{
	struct sluice_bpf_config cfg;

	snprintf(s->netns, sizeof(s->netns), "%s/netns/%s", D.state_dir, s->name);
	if (access(s->netns, F_OK) < 0)
		s->netns[0] = 0;
	else
		netns_recover(s);
	s->cgroup_id = cg_id(s->cgroup);
	if (sandbox_adopt(&s->sb, s->name, msg, msglen) < 0 || adopt_policy(s, msg, msglen) < 0)
		return -1;
	s->policy->mode = strcmp(s->mode, "audit") == 0 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	/* without its secrets the proxy refuses to start: the sandbox's
	 * proxied traffic fails closed, said in the log */
	if (load_secrets(s, NULL, s->policy, &s->secrets, msg, msglen) < 0)
		log_warnx("sandbox %s: %s (its proxy will not start: fail closed)", s->name, msg);
	if (D.boundary && sluice_policy_check_within(s->policy, D.boundary, D.boundary_path, msg, msglen) != 0)
		log_warnx("sandbox %s: the policy it was attached with is outside --boundary (kept in force: "
			  "its filter never stopped; reload it): %s", s->name, msg);
	if (sandbox_links_pinned(&s->sb) != sluice_prog_count(&s->sb.cfg))
		log_warnx("sandbox %s: only %d of %d hooks are pinned", s->name, sandbox_links_pinned(&s->sb),
			  sluice_prog_count(&s->sb.cfg));
	cfg = s->sb.cfg;
	/* the new sockets get the mark too: until then (the daemon
	 * was down) the kernel refused whatever sat on these ports */
	if (sluice_listeners_open(&s->l, s->netns[0] ? s->netns : NULL, cfg.have_proxy, cfg.have_dns, &cfg, msg,
				  msglen) < 0 ||
	    sluice_listeners_mark(&s->l, s->sb.map_fd[SLUICE_MAP_LISTENERS], msg, msglen) < 0) {
		char m[768];

		snprintf(m, sizeof(m), "%s", msg);
		snprintf(msg, msglen, "its listeners: %s", m);
		return -1;
	}
	return sandbox_keep_pins(&s->sb, msg, msglen);
}

/* Re-adopt sandbox `name`, whose NAME.json holds st (NULL: unreadable).
 * 0, or -1 (said why; its filter stays in force). */
static int adopt_one(const char *name, json_object *st)
{
	struct dsandbox *s = new_sandbox(name);
	char msg[1024];
	uint64_t seq;
	int err;

	if (!s) {
		log_warnx("cannot re-adopt sandbox %s: out of memory", name);
		return -1;
	}
	adopt_record(s, st);
	if (adopt_maps_and_listeners(s, msg, sizeof(msg)) < 0) {
		log_warnx("cannot re-adopt sandbox %s: %s", name, msg);
		/* its pins hold the filter for the next try, not our descriptors */
		sandbox_release(&s->sb);
		free_sandbox(s);
		return -1;
	}
	init_meta(s);
	/* the ring it was loaded with: a previous daemon's, shared with the
	 * others that daemon attached (its slots are never handed out again) */
	err = daemon_consume(s, NULL, msg, sizeof(msg));
	if (err)   /* its filter holds; what it denies is counted, not logged */
		log_warnx("sandbox %s: %s: its kernel events are not logged until the daemon restarts", name, msg);
	/* the previous daemon's loss counts carry on: each loss reported once */
	accounting_restore(s, st);
	/* and a line it wrote for a record it never consumed is not written twice */
	if (s->consumer_ok && last_written_seq(name, &seq) == 0)
		sluice_consumer_skip_written(&s->consumer, seq);
	if (start_children(s, CHILD_BOTH, msg, sizeof(msg)) < 0)
		log_warnx("sandbox %s: %s (fail closed)", name, msg);
	s->next = D.sandboxes;
	D.sandboxes = s;
	if (sluice_owner_write(name, "daemon") < 0)
		log_warn("sandbox %s: cannot record the daemon as its owner in %s", name, SLUICE_OWNER_DIR);
	daemon_emit_signed(s, "sandbox-adopt", "sandbox %s re-adopted after a daemon restart (generation %u)", name,
			   s->sb.gen);
	return 0;
}

int adopt_all(void)
{
	char dir[PATH_MAX];
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
		if (adopt_one(name, st) < 0)
			failures++;
		if (st)
			json_object_put(st);
	}
	closedir(d);
	return failures;
}
