/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kfeatures.h - what the running kernel offers sluice (`sluice -V`, and the
 * probes `sluice run` and the daemon decide by), and the sandbox name rule.
 */
#ifndef SLUICE_FEATURES_H
#define SLUICE_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <json-c/json.h>
#include <linux/bpf.h>

/* Longest sandbox name (bytes): it is a cgroup directory, a bpffs pin
 * directory and the "sluice.sandbox" of every event. */
#define SLUICE_NAME_MAX 60

/* Is `name` a valid sandbox name: 1..SLUICE_NAME_MAX bytes of letters,
 * digits, '-', '_', '.', not starting with '.'?  Returns 0, or -1 with
 * the reason in msg (naming the name, cut to the limit for display). */
int sluice_name_check(const char *name, char *msg, size_t msglen);

/* libbpf_probe_bpf_helper(type, id), remembered for the process: a
 * kernel's helpers do not change while it runs, and a daemon asked again
 * at every attach (nine program loads, issue 19).  An error (no memory, no
 * descriptors) is no answer and is asked again next time.  Returns 1 yes,
 * 0 no (or the error).  Needs CAP_BPF. */
int sluice_probe_helper(enum bpf_prog_type type, enum bpf_func_id id);

/* Can a cgroup sock_addr program call bpf_set_retval (kernel 5.18+)?
 * A BPF program load: needs CAP_BPF.  Returns 1 yes, 0 no. */
int sluice_have_set_retval(void);

/* Can a cgroup sock_addr program read the calling task's executable
 * (bpf_get_current_task_btf and bpf_probe_read_kernel there; `programs:`
 * entries)?  A BPF program load: needs CAP_BPF.  Returns 1 yes, 0 no. */
int sluice_have_exe(void);

/* Does this kernel load a BPF LSM program (BPF_PROG_TYPE_LSM on
 * bpf_lsm_socket_create, found in the vmlinux BTF; kernel 5.7+ with "bpf"
 * in the LSM list)?  0 yes, or -errno: -ENOENT no BTF or no such hook,
 * -EPERM a kernel that refuses them although the LSM is listed.  Needs
 * CAP_BPF (root). */
int sluice_bpf_lsm_loads(void);

/* Print `sluice -V`'s feature lines (the BPF LSM in /sys/kernel/security/lsm,
 * bpf_set_retval, the ring buffer map, the cgroup2 and bpffs mounts) to f.
 * Probes that need privileges say "unknown (needs root)" without them. */
void sluice_features_print(FILE *f);

/* The same as one JSON object (`sluice -j -V`), the caller's to put:
 * {"sluice": VERSION, "libbpf": "v1.1", "kernel": {"release", "machine"},
 *  "features": {"bpf_lsm", "lsm", "bpf_set_retval", "ringbuf": true, false
 *  or null (unknown: no securityfs, or not root), "landlock_abi": N (0 none),
 *  "cgroup2_mount", "bpffs": the path or null}}. */
json_object *sluice_features_json(void);

#endif
