/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_status.c - what `sluice daemon` says about its sandboxes: the
 * `status` answer and the Prometheus metrics of `--metrics`
 * (daemon_internal.h; docs/daemon.md "Metrics").
 */
#include "daemon_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "daemon_events.h"
#include "dns_dropped.h"
#include "daemon_follow.h"
#include "version.h"

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

json_object *sandbox_json(struct dsandbox *s)
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

		sluice_link_path(s->sb.pin_dir, sluice_prog_name(i), path, sizeof(path));
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
	json_object_object_add(o, "secret_sources", secret_sources_json(s));
	json_object_object_add(o, "proxy_pid", json_object_new_int(s->proxy_pid));
	json_object_object_add(o, "resolver_pid", json_object_new_int(s->resolver_pid));
	json_object_object_add(o, "allowed", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_ALLOWED)));
	json_object_object_add(o, "redirected", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_REDIRECTED)));
	json_object_object_add(o, "denied", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_DENIED)));
	json_object_object_add(o, "would_deny", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_WOULD_DENY)));
	json_object_object_add(o, "events_lost", json_object_new_uint64(sandbox_stat(&s->sb, SLUICE_STAT_EVENTS_LOST)));
	/* lines the daemon could not write to the events file (ENOSPC, ...) */
	json_object_object_add(o, "event_lines_lost", json_object_new_uint64(s->log_ready ? sluice_evlog_lost_total(&s->log) : 0));
	/* its slot in the event ring buffer and what it has queued there now */
	json_object_object_add(o, "ring_slot", json_object_new_uint64(s->sb.cfg.ring_slot));
	json_object_object_add(o, "ring_queued_bytes",
			       json_object_new_uint64(s->ring ? sluice_event_ring_queued(s->ring, s->sb.cfg.ring_slot) : 0));
	/* DNS queries its resolvers dropped (rate-limited, queue full, at a stop) */
	json_object_object_add(o, "dns_dropped", sluice_dns_dropped_json(sluice_evlog_shared(&s->log)));
	return o;
}

json_object *do_status(json_object *req)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		json_object_array_add(arr, sandbox_json(s));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "events", json_object_new_string(D.events_path));
	/* the size cap (--events-max-size; null: none) and how often it rotated the file */
	if (D.events_max) {
		json_object *cap = json_object_new_object();

		json_object_object_add(cap, "max_bytes", json_object_new_uint64(D.events_max));
		json_object_object_add(cap, "keep", json_object_new_int((int)D.events_keep));
		json_object_object_add(cap, "rotations", json_object_new_uint64(D.events_rotations));
		json_object_object_add(o, "events_cap", cap);
	} else {
		json_object_object_add(o, "events_cap", NULL);
	}
	/* the sandboxes' shared event ring buffer (event_ring.h; null: none made yet) */
	if (D.ring) {
		json_object *ring = json_object_new_object();

		json_object_object_add(ring, "bytes", json_object_new_uint64(D.ring->bytes));
		json_object_object_add(ring, "sandboxes", json_object_new_uint64(D.ring->consumers));
		json_object_object_add(ring, "pool_bytes", json_object_new_uint64(D.ring->budget[SLUICE_RING_POOL]));
		json_object_object_add(ring, "share_bytes", json_object_new_uint64(D.ring->budget[SLUICE_RING_SHARE]));
		json_object_object_add(o, "event_ring", ring);
	} else {
		json_object_object_add(o, "event_ring", NULL);
	}
	/* records read of sandboxes no longer held (detached with events queued) */
	json_object_object_add(o, "events_orphaned", json_object_new_uint64(daemon_events_orphaned()));
	/* signed mode: which allowed-signers file every policy is checked against */
	json_object_object_add(o, "policy_signatures", json_object_new_string(D.signed_mode ? "required" : "not required"));
	json_object_object_add(o, "allowed_signers", D.signed_mode ? json_object_new_string(D.signers.path) : NULL);
	json_object_object_add(o, "boundary", D.boundary ? json_object_new_string(D.boundary_path) : NULL);
	json_object_object_add(o, "sandboxes", arr);
	json_object_object_add(o, "control", ctlsrv_stats_json());
	json_object_object_add(o, "follow", daemon_follow_stats_json());
	return o;
}

/* One scrape of `--metrics` (docs/daemon.md, "Metrics"): the kernel's
 * counters of every sandbox (kept in its pinned maps, so they survive a
 * daemon restart), and the daemon's own since it started. */
void metrics_fill(struct evbuffer *out, void *arg)
{
	static const struct { int stat; const char *verdict; } verdicts[] = {
		{ SLUICE_STAT_ALLOWED, "allowed" }, { SLUICE_STAT_REDIRECTED, "redirected" },
		{ SLUICE_STAT_DENIED, "denied" }, { SLUICE_STAT_WOULD_DENY, "would_deny" },
	};
	static const struct { int stat; const char *name, *help; } counters[] = {
		{ SLUICE_STAT_EVENTS_LOST, "sluice_kernel_events_lost_total",
		  "Denial events the kernel could not queue (ring buffer full, or the sandbox's budget in it); "
		  "counted, never silent." },
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
	sluice_prom_family(out, "sluice_event_ring_queued_bytes", "gauge",
			   "Bytes of the event ring buffer the sandbox's denial records take now (its budget's count).");
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		sluice_prom_sample(out, "sluice_event_ring_queued_bytes", (const char *const[]){ "sandbox", s->name, NULL },
				   s->ring ? sluice_event_ring_queued(s->ring, s->sb.cfg.ring_slot) : 0);
	sluice_prom_family(out, "sluice_kernel_events_orphaned_total", "counter",
			   "Denial records read after their sandbox was detached, dropped; since the daemon started.");
	sluice_prom_sample(out, "sluice_kernel_events_orphaned_total", NULL, daemon_events_orphaned());
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
