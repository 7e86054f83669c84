/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sandbox_up.h - a sandbox's bring-up up to its attach, once for `sluice
 * run` (loader/run.c) and the daemon's attach (loader/daemon.c): the
 * proxy's and resolver's listeners in the sandbox's netns, the kernel's
 * features probed, the BPF object loaded, the listeners marked, the policy
 * written as the first generation, the maps pinned with the layout stamp
 * (pin_layout.h), and for a proxy started with --kernel-tunnels the
 * kernel tunnels' maps (ktunnel.h, best effort: without them it splices).
 * What follows differs by caller: run makes the cgroup and starts CMD in
 * it; the daemon attaches an existing cgroup.
 */
#ifndef SLUICE_SANDBOX_UP_H
#define SLUICE_SANDBOX_UP_H

#include <stdbool.h>
#include <stddef.h>

#include "children.h"
#include "sandbox.h"

struct sluice_policy;

struct sandbox_up {
	/* in */
	const char *name;                  /* the sandbox's name (sluice_name_check()ed) */
	const char *netns;                 /* its netns (a path), NULL: the loader's own */
	bool want_proxy, want_dns;         /* listeners for the proxy, the resolver */
	bool use_lsm;                      /* load the BPF LSM programs where the kernel has them */
	bool require_lsm;                  /* refuse to go on without them (--require-lsm) */
	bool kernel_tunnels;               /* the proxy relays tunnels in the kernel: pin its maps (ktunnel.h) */
	const struct sluice_policy *policy;
	const struct sluice_ring_use *ring; /* the shared ring its events go to; NULL: a ring of its own */
	/* out */
	bool loaded;                       /* sandbox_load() succeeded: sb wants sandbox_destroy() */
	char lsm_why[256];                 /* with sb->cfg.have_lsm 0: why the BPF LSM is not in force */
};

/*
 * Bring sandbox u->name up to its attach: sb (zeroed by the caller, as for
 * sandbox_load()) is loaded, filled with u->policy and pinned under
 * SLUICE_PIN_ROOT/NAME; l holds the listeners (sluice_listeners_open()).
 * Returns 0, or -1 with msg ("cannot pin maps under ...", "--require-lsm:
 * ..."); on error what was made is left in sb and l for the caller's
 * teardown (sandbox_destroy(), sluice_listeners_close()).
 */
int sandbox_up(struct sandbox_up *u, struct sluice_sandbox *sb, struct sluice_listeners *l, char *msg,
	       size_t msglen);

/* Is `arg` one of the NULL-terminated `args` (a child's --proxy-arg list)? */
bool sluice_args_have(char *const *args, const char *arg);

#endif
