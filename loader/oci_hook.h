/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * oci_hook.h - `sluice oci-hook`: an OCI runtime hook (runtime spec,
 * config.md "POSIX-platform Hooks") that puts a container under a policy
 * before its process runs.  As a createRuntime hook it reads the container
 * state on stdin, takes the policy NAME from the annotation io.sluice.policy
 * (a file NAME.yaml in the daemon's policy directory, never a path), and asks
 * the daemon to attach the container's cgroup; any failure fails the hook,
 * and the runtime does not start the container.  As a poststop hook it
 * detaches.  docs/containers.md.
 */
#ifndef SLUICE_OCI_HOOK_H
#define SLUICE_OCI_HOOK_H

#include <stddef.h>

#include "kfeatures.h" /* SLUICE_NAME_MAX */

/* The annotations the hook reads (the container's; io.sluice.upstream is
 * deliberately not one: where a sandbox dials from is the admin's choice,
 * a hook argument). */
#define SLUICE_ANN_POLICY "io.sluice.policy"
#define SLUICE_ANN_MODE   "io.sluice.mode"
#define SLUICE_ANN_NAME   "io.sluice.name"

/* What the admin's hook configuration says (hooks.d arguments). */
struct oci_hook_opts {
	const char *default_policy; /* for containers without io.sluice.policy; NULL or "none": not attached */
	const char *stage;          /* "createRuntime" / "poststop"; NULL: from the state's status */
	const char *const *exempt;  /* Kubernetes namespaces whose pods are left alone (the default
				     * policy does not apply to them), NULL-terminated; may be NULL */
};

enum oci_hook_action {
	OCI_HOOK_NOTHING,           /* no policy annotation and no default (or an exempt namespace):
				     * leave the container alone */
	OCI_HOOK_ATTACH,
	OCI_HOOK_DETACH,
};

/* What to do for one container, from its state. */
struct oci_hook_plan {
	enum oci_hook_action action;
	char name[SLUICE_NAME_MAX + 1];   /* the sandbox: io.sluice.name, else the id's first 12 characters */
	char policy[SLUICE_NAME_MAX + 1]; /* the policy's name (annotated, or the default); the
					   * daemon resolves it in its --policy-dir */
	char mode[16];                    /* "audit", "enforce", or "" (the policy's own) */
	char container_id[128];
	char container_name[128];         /* io.sluice.name, else the Kubernetes container name; "" none */
	char runtime[16];                 /* podman, cri-o, containerd, oci */
	long pid;                         /* the container's init process (0 for poststop) */
};

/*
 * Decide what the hook does for the OCI state `state` (`len` bytes of JSON:
 * id, status, pid, annotations) under the admin's options `o`.  Checks the
 * annotations: the policy must be a name (sluice_policy_ref_check: no
 * path); the mode audit or enforce; the name a valid sandbox name.  Whether
 * the policy exists is the daemon's to say (it holds the policy directory).  Returns 0 with *p filled, or -1 with the reason in msg (the
 * hook then fails and the container does not start).  No side effects.
 */
int oci_hook_plan(const char *state, size_t len, const struct oci_hook_opts *o, struct oci_hook_plan *p,
		  char *msg, size_t msglen);

/*
 * The hooks.d file (containers-common oci-hooks(5), version 1.0.0) for
 * podman and CRI-O: `argv` (NULL-terminated; argv[0] the absolute path of
 * sluice) run at createRuntime and poststop, for containers annotated
 * io.sluice.policy, or for all when `always` is non-zero (a default policy).
 * Returns a malloc'd JSON text, or NULL when out of memory.
 */
char *oci_hook_config_json(char *const argv[], int always);

#endif
