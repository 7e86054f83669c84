/* SPDX-License-Identifier: BSD-2-Clause */
/* sandbox_up.c - a sandbox's bring-up up to its attach (sandbox_up.h). */
#include "sandbox_up.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kfeatures.h"
#include "ktunnel.h"
#include "log.h"
#include "pin_layout.h"
#include "policy.h"

int sandbox_up(struct sandbox_up *u, struct sluice_sandbox *sb, struct sluice_listeners *l, char *msg,
	       size_t msglen)
{
	struct sluice_bpf_config cfg;
	int err;

	memset(&cfg, 0, sizeof(cfg));
	snprintf(u->lsm_why, sizeof(u->lsm_why), "not loaded (--no-lsm)");
	if (sluice_listeners_open(l, u->netns, u->want_proxy, u->want_dns, &cfg, msg, msglen) < 0)
		return -1;
	cfg.have_set_retval = sluice_have_set_retval();
	cfg.have_lsm = u->use_lsm && sluice_bpf_lsm_active(u->lsm_why, sizeof(u->lsm_why));
	cfg.have_unix = 1;
	u->loaded = false;
	if (sandbox_load(sb, u->name, &cfg, u->policy, u->ring, msg, msglen) < 0)
		return -1;
	u->loaded = true;
	if (cfg.have_lsm && sb->lsm_err)
		snprintf(u->lsm_why, sizeof(u->lsm_why), "the kernel refused the BPF LSM programs (%s)",
			 strerror(-sb->lsm_err));
	if (u->require_lsm && !sb->cfg.have_lsm) {
		snprintf(msg, msglen, "--require-lsm: %s", u->lsm_why);
		return -1;
	}
	if (sluice_listeners_mark(l, sb->map_fd[SLUICE_MAP_LISTENERS], msg, msglen) < 0)
		return -1;
	if (sandbox_apply_policy(sb, u->policy, msg, msglen) < 0) {
		char m[1024];

		snprintf(m, sizeof(m), "%s", msg);
		snprintf(msg, msglen, "%s: %s", u->policy->path ? u->policy->path : "policy", m);
		return -1;
	}
	err = sandbox_pin_maps(sb);
	if (err) {
		snprintf(msg, msglen, "cannot pin maps under %s: %s (another sandbox named '%s'?)", sb->pin_dir,
			 strerror(-err), u->name);
		return -1;
	}
	/* what a later build checks before it re-adopts the sandbox */
	if (sluice_pin_layout_write(sb->pin_dir, msg, msglen) < 0)
		return -1;
	/* best effort: without them the proxy's tunnels use splice (and say so) */
	if (u->kernel_tunnels) {
		char why[256];

		if (sluice_ktunnel_pin(sb->pin_dir, why, sizeof(why)) < 0)
			log_warnx("sandbox %s: no kernel tunnels: %s", u->name, why);
	}
	return 0;
}

bool sluice_args_have(char *const *args, const char *arg)
{
	for (size_t i = 0; args && args[i]; i++)
		if (strcmp(args[i], arg) == 0)
			return true;
	return false;
}
