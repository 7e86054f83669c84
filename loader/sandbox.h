/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sandbox.h - one sandbox's BPF objects: the split lifecycle
 * open -> configure (.rodata, map sizes) -> load -> fill maps -> attach,
 * with one pinned bpf_link per hook so that enforcement outlives the loader.
 */
#ifndef SLUICE_SANDBOX_H
#define SLUICE_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "sluice.h"
#include "policy.h"
#include "policy_maps.h"

#define SLUICE_BPFFS "/sys/fs/bpf"
#define SLUICE_PIN_ROOT SLUICE_BPFFS "/sluice"

struct sluice_bpf;
struct bpf_link;

enum sluice_prog_id {
	SLUICE_PROG_CONNECT4,
	SLUICE_PROG_CONNECT6,
	SLUICE_PROG_SENDMSG4,
	SLUICE_PROG_SENDMSG6,
	SLUICE_PROG_RECVMSG4,
	SLUICE_PROG_RECVMSG6,
	SLUICE_PROG_GETPEERNAME4,
	SLUICE_PROG_GETPEERNAME6,
	SLUICE_PROG_SOCK_CREATE,
	SLUICE_PROG_SOCKOPS,
	SLUICE_PROG_EGRESS,
	SLUICE_PROG__MAX,
};

struct sluice_sandbox {
	char name[64];
	char pin_dir[256];          /* SLUICE_PIN_ROOT/<name> */
	struct sluice_bpf *skel;
	struct bpf_link *links[SLUICE_PROG__MAX];
	uint32_t gen;               /* generation now in force */
	bool pinned;
	struct sluice_bpf_config cfg;
};

/* Name of a hook as `sluice status` and error messages print it ("connect4"). */
const char *sluice_prog_name(enum sluice_prog_id id);

/*
 * Open, configure and load the BPF programs for a sandbox named `name`
 * with the read-only config `cfg` and map sizes fit for `policy`.
 * Returns 0 or -errno; on error *msg explains (static or in sb->name scope).
 */
int sandbox_load(struct sluice_sandbox *sb, const char *name, const struct sluice_bpf_config *cfg,
		 const struct sluice_policy *policy, char *msg, size_t msglen);

/*
 * Write `policy` as the next generation and switch to it with one store of
 * the generation number, then delete the previous generation's entries.
 * Every hook reads the generation once per decision, so a connection is
 * judged wholly by the old or wholly by the new policy.  Returns 0, or -1
 * with msg set; on error the generation in force is unchanged.
 */
int sandbox_apply_policy(struct sluice_sandbox *sb, const struct sluice_policy *policy, char *msg,
			 size_t msglen);

/* Pin the maps the children need (sluice_flows) and create pin_dir.
 * Returns 0 or -errno. */
int sandbox_pin_maps(struct sluice_sandbox *sb);

/*
 * Attach every program to the cgroup `cg_fd` and pin each link under
 * pin_dir.  All or nothing: on failure detaches what was attached and
 * returns -errno with msg naming the hook and the reason.
 */
int sandbox_attach(struct sluice_sandbox *sb, int cg_fd, char *msg, size_t msglen);

/* Sum over CPUs of counter `stat` (enum sluice_stat). */
uint64_t sandbox_stat(struct sluice_sandbox *sb, int stat);

/* Ring-buffer map fd, for the event consumer. */
int sandbox_events_fd(struct sluice_sandbox *sb);

/* Unpin everything under pin_dir, destroy links and the skeleton. */
void sandbox_destroy(struct sluice_sandbox *sb);

#endif
