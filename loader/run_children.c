/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_children.c - the proxy and resolver of `sluice run`: found, started
 * side by side on the listeners the run keeps, and restarted on them when
 * one dies (within its budget; past it their traffic fails closed).
 */
#include <stdbool.h>
#include <stdio.h>

#include "children.h"
#include "log.h"
#include "run_internal.h"
#include "sandbox_ca.h"

/* The helpers the run starts, found (a missing one is an error:
 * --no-proxy / --no-resolver skip one).  Returns 0 or -1 said. */
int run_find_helpers(struct run_state *st)
{
	char tried[2 * 4096 + 8];

	if (!st->o.no_proxy && !sluice_helper_path("sluice-proxy", st->proxy_bin, sizeof(st->proxy_bin), tried,
						   sizeof(tried))) {
		log_warnx("run: sluice-proxy not found (tried %s); install it or pass --no-proxy", tried);
		return -1;
	}
	if (!st->o.no_resolver && !sluice_helper_path("sluice-resolver", st->resolver_bin, sizeof(st->resolver_bin),
						      tried, sizeof(tried))) {
		log_warnx("run: sluice-resolver not found (tried %s); install it or pass --no-resolver", tried);
		return -1;
	}
	return 0;
}

/* 5. The proxy and resolver, on listeners this process keeps (a child
 * that dies is restarted on them: its port is never free for another).
 * Returns 0 or -1 said. */
int run_start_children(struct run_state *st)
{
	char msg[512];
	struct sluice_child_opts co = {
		.policy_path = st->o.policy_path, .policy_fd = st->policy_fd,
		.policy_digest = st->policy_fd > 0 ? st->policy->digest : NULL, .netns_path = st->child_netns,
		.sandbox = st->o.name, .log_fd = st->events, .upstream_dns = st->o.upstream, .mode = st->mode,
		.secrets = &st->secrets, .ocsf = st->log.ocsf,
		.seq_fd = sluice_evlog_seq_fd(&st->log), .labels = st->o.labels,
	};

	snprintf(st->flow_map, sizeof(st->flow_map), "%s/sluice_flows", st->sb.pin_dir);
	st->proxy_co = co;
	st->proxy_co.flow_map = st->flow_map;
	st->proxy_co.tunnel_maps = st->sb.pin_dir;
	st->proxy_co.extra = st->o.proxy_extra;
	st->proxy_co.upstream_ca = st->upstream_ca;
	st->resolver_co = co;
	st->resolver_co.flow_map = st->flow_map;
	st->resolver_co.extra = st->o.resolver_extra;
	if (st->cfg.have_proxy) {
		const char *why = "";

		/* TLS inspection: the run's one CA (a restarted proxy gets
		 * it too) and the bundle CMD will trust (run_trust.h) */
		if (sluice_ca_make(st->policy, st->o.name, NULL, &st->ca, &why) < 0 ||
		    sluice_trust_prepare(&st->trust, sluice_ca_cert_part(st->ca), msg, sizeof(msg)) < 0) {
			log_warnx("run: %s", why[0] ? why : msg);
			return -1;
		}
		st->proxy_co.ca = st->ca;
	}
	/* side by side, as the daemon's (start_children) */
	if (sluice_children_start(st->proxy_bin, st->cfg.have_proxy ? &st->proxy_co : NULL, st->resolver_bin,
				  st->cfg.have_dns ? &st->resolver_co : NULL, &st->listeners, 10000, &st->proxy_pid,
				  &st->resolver_pid, msg, sizeof(msg)) < 0) {
		log_warnx("run: %s", msg);
		return -1;
	}
	return 0;
}

/*
 * The proxy (proxy) or resolver of the sandbox exited: start it again on
 * the listeners this process holds, within its restart budget.  Past the
 * budget, or if it does not come up, give up: close its listeners, so the
 * sandbox's traffic to it fails closed (a socket someone else binds there
 * later lacks sluice's mark: the kernel refuses it, redirect_target_not_ours).
 */
void run_restart_child(struct run_state *st, bool proxy)
{
	const char *what = proxy ? "sluice-proxy" : "sluice-resolver";
	struct sluice_restarts *r = proxy ? &st->proxy_restarts : &st->resolver_restarts;
	pid_t *pid = proxy ? &st->proxy_pid : &st->resolver_pid;
	char m[768], msg[512] = "";

	*pid = 0;
	/* one that dies again before it is ready uses up the budget too */
	while (sluice_restart_allowed(r, sluice_monotonic_ms())) {
		pid_t p = sluice_child_start(proxy ? st->proxy_bin : st->resolver_bin, &st->listeners,
					     proxy ? &st->proxy_co : &st->resolver_co, 10000, msg, sizeof(msg));

		if (p > 0) {
			*pid = p;
			snprintf(m, sizeof(m), "%s exited; restarted on the same listening sockets (pid %d, restart %u)",
				 what, p, r->total);
			sluice_lifecycle_write(&st->log, proxy ? "proxy-restarted" : "resolver-restarted", m);
			return;
		}
	}
	snprintf(m, sizeof(m), "%u restarts within %u s%s%s", SLUICE_RESTART_MAX, SLUICE_RESTART_WINDOW_MS / 1000,
		 msg[0] ? "; the last: " : "", msg);
	snprintf(msg, sizeof(msg), "%s", m);
	sluice_listeners_close_role(&st->listeners, proxy);
	snprintf(m, sizeof(m), "%s exited and is not restarted (%s): %s now fail (fail closed)", what, msg,
		 proxy ? "proxied connections" : "DNS queries");
	sluice_lifecycle_write(&st->log, proxy ? "proxy-gave-up" : "resolver-gave-up", m);
}
