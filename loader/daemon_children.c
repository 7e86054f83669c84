/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_children.c - the proxy and resolver of each sandbox of `sluice
 * daemon`: started with the policy in force (a sealed memfd and its
 * digest), the sandbox CA and the upstream CAs as content, restarted on
 * the same listening sockets when they die (within a budget), retired to
 * drain after a reload or SIGHUP (daemon_internal.h).
 */
#include "daemon_internal.h"
#include "daemon_follow.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "run_limits.h"
#include "sandbox_ca.h"
#include "upstream_ca.h"

/*
 * Retired children (a reload's or SIGHUP's old proxy and resolver): sent
 * SIGQUIT, they stop taking new work and finish what they have open (their
 * drain deadline, 10 s by default); on_tick reaps them, and kills one
 * still there RETIRE_KILL_MS later.
 */
#define RETIRE_MAX     1024
#define RETIRE_KILL_MS 30000

static struct retired {
	uint64_t kill_at;
	pid_t pid;
	unsigned gen;               /* the events file generation it writes (daemon_follow_gen) */
} retired[RETIRE_MAX];
static size_t n_retired;

/*
 * The CA certificate of s's proxy (public part, PEM; NULL: the policy
 * inspects nothing) goes to <state>/sandboxes/NAME.ca.pem, written
 * atomically, for the runtime to hand to the workload (docs/daemon.md).
 */
static int publish_ca(struct dsandbox *s, const char *pem, char *msg, size_t msglen)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	daemon_state_path(path, sizeof(path), s->name, "ca.pem");
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
		daemon_emit(s, "ca-reissued", "sandbox %s: the inspected names changed; the CA certificate in %s was re-issued "
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

static void retire(pid_t pid, unsigned gen)
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
	retired[n_retired].gen = gen;
	n_retired++;
}

unsigned children_oldest_gen(void)
{
	unsigned g = daemon_follow_gen();

	for (size_t i = 0; i < n_retired; i++)
		if (retired[i].gen < g)
			g = retired[i].gen;
	for (const struct dsandbox *s = D.sandboxes; s; s = s->next) {
		if (s->proxy_pid > 0 && s->proxy_gen < g)
			g = s->proxy_gen;
		if (s->resolver_pid > 0 && s->resolver_gen < g)
			g = s->resolver_gen;
	}
	return g;
}

/* pid exited: was it a retired child?  (Then it is forgotten.) */
bool retired_reaped(pid_t pid)
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
void retired_expire(void)
{
	uint64_t now = sluice_monotonic_ms();

	for (size_t i = 0; i < n_retired; i++)
		if (now >= retired[i].kill_at)
			kill(retired[i].pid, SIGKILL);
}

/* The daemon stops: every retired child stops now (SIGTERM: each open
 * connection and query in flight is logged), and is waited for. */
void retired_stop_all(void)
{
	for (size_t i = 0; i < n_retired; i++)
		kill(retired[i].pid, SIGTERM);
	for (size_t i = 0; i < n_retired; i++)
		waitpid(retired[i].pid, NULL, 0);
	n_retired = 0;
}

/* Start (or restart) the proxy and/or resolver of s (`which`), with s's policy copy. */
int start_children(struct dsandbox *s, unsigned which, char *msg, size_t msglen)
{
	char flow_map[PATH_MAX];
	struct sluice_child_opts co = {
		.policy_fd = s->policy_fd, .policy_digest = s->policy->digest, .policy_next = s->policy_path,
		.netns_path = child_netns(s), .sandbox = s->name,
		.flow_map = flow_map, .tunnel_maps = s->sb.pin_dir, .log_fd = D.events, .upstream_dns = D.upstream_dns,
		.mode = s->mode, .extra = D.proxy_extra, .secrets = &s->secrets, .ocsf = D.log.ocsf,
		.seq_fd = sluice_evlog_seq_fd(&s->log), .labels = &s->labels,
		.container_id = s->meta.container_id, .container_name = s->meta.container_name,
		.container_runtime = s->meta.container_runtime,
	};
	struct sluice_child_opts proxy_co, resolver_co;
	bool want_proxy = s->sb.cfg.have_proxy && (which & CHILD_PROXY) && s->l.proxy4 >= 0;
	bool want_resolver = s->sb.cfg.have_dns && (which & CHILD_RESOLVER) && s->l.dns_udp4 >= 0;
	pid_t old_proxy = s->proxy_pid, old_resolver = s->resolver_pid, proxy, resolver;
	unsigned old_proxy_gen = s->proxy_gen, old_resolver_gen = s->resolver_gen;
	char *upca = NULL;
	int err;

	snprintf(flow_map, sizeof(flow_map), "%s/sluice_flows", s->sb.pin_dir);
	proxy_co = resolver_co = co;
	resolver_co.extra = D.resolver_extra;
	if (want_proxy) {
		size_t upca_len = 0;
		struct sluice_policy_error perr;

		if (sandbox_ca(s, msg, msglen) < 0)
			return -1;
		proxy_co.ca = s->ca_path[0] ? s->ca : NULL;
		/* the CAs for origins: the daemon's --upstream-ca read now, the
		 * policy's as its client sent it; content to the proxy */
		if (sluice_upstream_ca_load(D.upstream_ca, NULL, &upca, &upca_len, &perr) < 0) {
			sluice_policy_error_str(&perr, msg, msglen);
			return -1;
		}
		if (s->upstream_ca) {
			char *both = realloc(upca, upca_len + s->n_upstream_ca + 1);

			if (!both) {
				free(upca);
				snprintf(msg, msglen, "out of memory");
				return -1;
			}
			memcpy(both + upca_len, s->upstream_ca, s->n_upstream_ca);
			upca_len += s->n_upstream_ca;
			both[upca_len] = '\0';
			upca = both;
		}
		proxy_co.upstream_ca = upca;
	}
	/* the two start side by side (each is mostly its own dynamic
	 * loading and setup: an attach waited for one, then the other) */
	err = sluice_children_start(D.proxy_bin, want_proxy ? &proxy_co : NULL, D.resolver_bin,
				    want_resolver ? &resolver_co : NULL, &s->l, 10000, &proxy, &resolver, msg, msglen);
	free(upca);
	if (err < 0)
		return -1;
	if (proxy > 0) {
		s->proxy_pid = proxy;
		s->proxy_gen = daemon_follow_gen();
	}
	if (resolver > 0) {
		s->resolver_pid = resolver;
		s->resolver_gen = daemon_follow_gen();
	}
	/* the new children serve the same listening sockets; the old ones
	 * drain (finish and log what they have open) without the daemon
	 * waiting for them */
	if (old_proxy > 0 && old_proxy != s->proxy_pid)
		retire(old_proxy, old_proxy_gen);
	if (old_resolver > 0 && old_resolver != s->resolver_pid)
		retire(old_resolver, old_resolver_gen);
	return 0;
}

void retire_children(struct dsandbox *s)
{
	if (s->proxy_pid > 0)
		retire(s->proxy_pid, s->proxy_gen);
	if (s->resolver_pid > 0)
		retire(s->resolver_pid, s->resolver_gen);
	s->proxy_pid = s->resolver_pid = 0;
}

void stop_children(struct dsandbox *s)
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

/* t's proxy (or resolver) exited: restart it on the same listening
 * sockets within its budget, else close them (fail closed). */
void child_exited(struct dsandbox *t, bool proxy)
{
	struct sluice_restarts *r = proxy ? &t->proxy_restarts : &t->resolver_restarts;
	const char *what = proxy ? "sluice-proxy" : "sluice-resolver";
	bool up = false;
	char msg[512];

	if (proxy)
		t->proxy_pid = 0;
	else
		t->resolver_pid = 0;
	daemon_emit(t, proxy ? "proxy-exited" : "resolver-exited",
		    "sandbox %s: %s exited; restarting it on the same listening sockets", t->name, what);
	/* one that dies again before it is ready uses up the budget too */
	msg[0] = 0;
	while (!up && sluice_restart_allowed(r, sluice_monotonic_ms()))
		up = start_children(t, proxy ? CHILD_PROXY : CHILD_RESOLVER, msg, sizeof(msg)) == 0;
	if (!up) {
		/* give up: close its sockets; whatever binds the
		 * ports later lacks sluice's mark and is refused */
		sluice_listeners_close_role(&t->l, proxy);
		daemon_emit(t, proxy ? "proxy-gave-up" : "resolver-gave-up",
			    "sandbox %s: %s not restarted (%u restarts within %u s%s%s): %s now fail (fail closed)",
			    t->name, what, SLUICE_RESTART_MAX, SLUICE_RESTART_WINDOW_MS / 1000,
			    msg[0] ? "; the last: " : "", msg, proxy ? "proxied connections" : "DNS queries");
	}
}
