/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_seccomp.h - `sluice policy seccomp`: the OCI seccomp profile of a
 * policy's `families:` (docs/containers.md "Socket families of a
 * container").  A daemon's sandbox (`sluice attach`, the OCI hook) has no
 * seccomp filter of sluice's; where the BPF LSM does not load, this profile,
 * given to the container runtime, is what refuses the families the policy
 * does not name.  The rules are seccomp_families.c's, as `sluice run` loads them.
 */
#ifndef SLUICE_CMD_SECCOMP_H
#define SLUICE_CMD_SECCOMP_H

#include <stdbool.h>

/*
 * `sluice policy seccomp [--base PROFILE.json] [-o FILE] POLICY.yaml`;
 * argv[0] is "seccomp".  Writes the profile (JSON, the OCI runtime spec's
 * linux.seccomp, as podman, docker, CRI-O and containerd read it) to
 * stdout or FILE.  Exit 0, or 2: usage, a bad policy (file:line: message),
 * an unreadable or malformed base profile, an unwritable FILE (nothing
 * written then).
 */
int cmd_policy_seccomp(int argc, char **argv);

/*
 * What judges a daemon's sandbox's socket families, for its attach line and
 * `sluice status`: have_lsm (the BPF LSM programs loaded) -> "" ; else a
 * sentence that says they are not judged unless the container runs with
 * `sluice policy seccomp`'s profile.  Static storage.
 */
const char *sluice_seccomp_attach_note(bool have_lsm);

/* The same for `sluice status`'s "families" row, from the sandbox's
 * families_enforced_by ("bpf_lsm", "none"; NULL or "": an older daemon's answer).
 * Static storage, or by itself. */
const char *sluice_seccomp_status_note(const char *enforced_by);

#endif
