/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_ref.h - policies by name: NAME is the file NAME.yaml in the
 * admin's policy directory (default /etc/sluice/policies, `sluice daemon
 * --policy-dir`).  The OCI hook's io.sluice.policy annotation is such a
 * name; a path is never accepted from a container (docs/containers.md).
 */
#ifndef SLUICE_POLICY_REF_H
#define SLUICE_POLICY_REF_H

#include <stddef.h>

#define SLUICE_POLICY_DIR "/etc/sluice/policies"

/*
 * Check that `ref` is a policy name: letters, digits, '-', '_', '.', not
 * starting with '.', at most 60 bytes (the sandbox-name rule), with an
 * optional ".yaml" suffix; no '/' (a path).  Writes the bare name to
 * `name` (namelen >= 61).  `what` names the source in messages ("annotation
 * io.sluice.policy").  Returns 0, or -1 with msg.
 */
int sluice_policy_ref_check(const char *ref, const char *what, char *name, size_t namelen, char *msg,
			    size_t msglen);

/*
 * Resolve `ref` (checked as above) to the absolute path of DIR/NAME.yaml
 * (realpath: it must exist).  Returns 0 with `path` set, or -1 with msg
 * ("policy 'NAME' (WHAT): DIR/NAME.yaml: No such file or directory").
 */
int sluice_policy_ref_resolve(const char *dir, const char *ref, const char *what, char *path, size_t pathlen,
			      char *msg, size_t msglen);

#endif
