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
	SLUICE_PROG_SKB_EGRESS,
	SLUICE_PROG_SOCK_RELEASE,
	/* unix sockets (cgroup, 6.7+; loaded only where cfg.have_unix) */
	SLUICE_PROG_CONNECT_UNIX,
	SLUICE_PROG_SENDMSG_UNIX,
	/* BPF LSM (global; loaded only where cfg.have_lsm) */
	SLUICE_PROG_LSM_POST_CREATE,
	SLUICE_PROG_LSM_CREATE,
	SLUICE_PROG_LSM_CONNECT,
	SLUICE_PROG_LSM_SENDMSG,
	SLUICE_PROG_LSM_UNIX_CONNECT,
	SLUICE_PROG_LSM_UNIX_SEND,
	SLUICE_PROG__MAX,
};

/* The maps user space drives, by fd: from the skeleton after a load, or
 * from their pins when a restarted daemon adopts a running sandbox. */
enum sluice_map_id {
	SLUICE_MAP_ALLOW4,
	SLUICE_MAP_ALLOW6,
	SLUICE_MAP_EXACT4,          /* hash: full-length (/32) cidr entries (struct sluice_exact4_key) */
	SLUICE_MAP_EXACT6,          /* hash: /128 cidr entries (struct sluice_exact6_key) */
	SLUICE_MAP_PORTS,
	SLUICE_MAP_STATE,
	SLUICE_MAP_GENCONF,
	SLUICE_MAP_STATS,
	SLUICE_MAP_EVENTS,
	SLUICE_MAP_FLOWS,
	SLUICE_MAP_CONFIG,          /* .rodata: struct sluice_bpf_config */
	SLUICE_MAP_LISTENERS,       /* socket storage: sluice's own listeners (struct sluice_listener_mark) */
	SLUICE_MAP_UNIX,            /* LPM trie: `unix:` entries (struct sluice_unix_key) */
	SLUICE_MAP_PROGS,           /* hash: programs of cidr entries (struct sluice_prog_key) */
	SLUICE_MAP_RING_BUDGET,     /* array: what each sandbox has queued in SLUICE_MAP_EVENTS (sluice.h) */
	SLUICE_MAP__MAX,
};

struct sluice_sandbox {
	char name[64];
	char pin_dir[256];          /* SLUICE_PIN_ROOT/<name> */
	struct sluice_bpf *skel;    /* NULL for an adopted sandbox */
	struct bpf_link *links[SLUICE_PROG__MAX];
	int map_fd[SLUICE_MAP__MAX];
	uint32_t map_id[SLUICE_MAP__MAX]; /* kernel ids, set by sandbox_keep_pins (0: not yet) */
	bool own_fds;               /* map_fd[] were opened from pins: close them */
	uint32_t gen;               /* generation now in force */
	bool pinned;
	struct sluice_bpf_config cfg; /* as loaded: cfg.have_lsm is 0 if the LSM programs could not be */
	int lsm_err;                /* -errno of the refused load with the LSM programs, or 0 */
	int unix_err;               /* -errno of the refused load with the unix programs, or 0 */
};

/* File name of a map's pin under pin_dir ("sluice_flows", ...). */
const char *sluice_map_pin_name(enum sluice_map_id id);

/* A map's shape as the kernel reports it (struct bpf_map_info). */
struct sluice_map_shape {
	unsigned type, key_size, value_size;
};

/* This build's shape of every map (its BPF object, opened, not loaded)
 * into out[SLUICE_MAP__MAX].  0 or -errno. */
int sluice_map_shapes(struct sluice_map_shape *out);

/*
 * Adopt the sandbox pinned under SLUICE_PIN_ROOT/<name> (left by a daemon
 * that died): open every map from its pin, read the configuration and the
 * generation in force.  The pinned links stay attached throughout.
 * Returns 0, or -errno with msg (e.g. a pin is missing).
 */
int sandbox_adopt(struct sluice_sandbox *sb, const char *name, char *msg, size_t msglen);

/* Are the links of this sandbox pinned (i.e. is it enforcing)?  Counts the
 * link pins present; returns that number (SLUICE_PROG__MAX when complete). */
int sandbox_links_pinned(const struct sluice_sandbox *sb);

/* Detach: remove the link pins (and links held by this process); the
 * cgroup is no longer filtered.  Maps stay until sandbox_destroy(). */
void sandbox_detach(struct sluice_sandbox *sb);

/* Is program `id` one of the BPF LSM programs? */
bool sluice_prog_is_lsm(enum sluice_prog_id id);

/* Does a sandbox with configuration `cfg` load and attach program `id`
 * (the LSM ones only where cfg->have_lsm, the unix ones where have_unix)? */
bool sluice_prog_loaded(const struct sluice_bpf_config *cfg, enum sluice_prog_id id);

/* How many programs a sandbox with configuration `cfg` attaches. */
int sluice_prog_count(const struct sluice_bpf_config *cfg);

/*
 * Is the BPF LSM active on this kernel (`bpf` in the active LSM list,
 * /sys/kernel/security/lsm; securityfs is mounted there if it is not)?
 * Returns 1 yes, 0 no (with why in msg), never fails.
 */
int sluice_bpf_lsm_active(char *msg, size_t msglen);

/* Name of a hook as `sluice status` and error messages print it ("connect4"). */
const char *sluice_prog_name(enum sluice_prog_id id);

/* The path of the pinned link of the program named `prog` (its name in
 * this build, or one an earlier build used) under `pin_dir`:
 * PIN_DIR/link_PROG, in buf (len bytes). */
void sluice_link_path(const char *pin_dir, const char *prog, char *buf, size_t len);

/* A ring buffer for a sandbox's events that other sandboxes share (a
 * daemon's: loader/event_ring.h): its two maps (not owned) and the slot
 * the sandbox takes in its budget (bpf/sluice.h, "The event ring buffer's
 * budget"). */
struct sluice_ring_use {
	int events_fd;              /* BPF_MAP_TYPE_RINGBUF */
	int budget_fd;              /* its sluice_ring_budget */
	uint32_t slot;              /* < SLUICE_RING_SLOTS, free in that budget */
};

/* Bytes of the ring buffer a sandbox with a ring of its own has (`sluice
 * run`): about 35,000 denial records of burst before losses are counted. */
#define SLUICE_RING_OWN_BYTES (4u << 20)

/*
 * Open, configure and load the BPF programs for a sandbox named `name`
 * with the read-only config `cfg` and map sizes fit for `policy`.  Its
 * events go to `ring` (NULL: a ring of its own, SLUICE_RING_OWN_BYTES,
 * with pool and share the whole ring).  Where
 * cfg->have_lsm is set but the kernel refuses the LSM programs, loads
 * without them: sb->cfg.have_lsm is then 0 and sb->lsm_err says why; the
 * same for cfg->have_unix (cgroup/connect_unix, 6.7+) and sb->unix_err.
 * Returns 0 or -errno; on error *msg explains (static or in sb->name scope).
 */
int sandbox_load(struct sluice_sandbox *sb, const char *name, const struct sluice_bpf_config *cfg,
		 const struct sluice_policy *policy, const struct sluice_ring_use *ring, char *msg, size_t msglen);

/*
 * Write `policy` as the next generation and switch to it with one store of
 * the generation number, then delete the previous generation's entries.
 * Every hook reads the generation once per decision, so a connection is
 * judged wholly by the old or wholly by the new policy.  Returns 0, or -1
 * with msg set; on error the generation in force is unchanged.
 */
int sandbox_apply_policy(struct sluice_sandbox *sb, const struct sluice_policy *policy, char *msg,
			 size_t msglen);

/* Is a sandbox named `name` pinned (SLUICE_PIN_ROOT/name exists and is not
 * empty)?  A new sandbox of that name would collide with it. */
bool sluice_pins_in_use(const char *name);

/* Create pin_dir and pin every map (the proxy opens sluice_flows; a
 * restarted daemon adopts the rest).  Returns 0 or -errno; -EEXIST when
 * pin_dir exists and is not empty (another sandbox of that name is pinned:
 * then nothing of it is touched, by this or by sandbox_destroy()). */
int sandbox_pin_maps(struct sluice_sandbox *sb);

/*
 * Attach every program to the cgroup `cg_fd` (the LSM programs globally,
 * with the cgroup in map sluice_cgroup) and pin each link under
 * pin_dir.  All or nothing: on failure detaches what was attached and
 * returns -errno with msg naming the hook and the reason.
 */
int sandbox_attach(struct sluice_sandbox *sb, int cg_fd, char *msg, size_t msglen);

/*
 * After sandbox_attach() (or sandbox_adopt()): hold the sandbox by its pins.
 * Keeps open only the map read all the time, the counters (reopened from
 * its pin; the ring buffer is its consumer's, loader/event_ring.h); lets go of the links' descriptors
 * (their pins keep them attached) and of the skeleton's programs, maps
 * and BTF.  sandbox_apply_policy() then opens the maps it writes from
 * their pins for as long as it takes, and refuses a pin that holds
 * another map than the one recorded here (sb->map_id[]).  A daemon holds
 * hundreds of sandboxes: the skeleton and links kept open were about 43
 * descriptors each (issue 19, scenario 9).  A no-op for an unpinned
 * sandbox.  0, or -errno with msg (then nothing changed but map_id[]).
 */
int sandbox_keep_pins(struct sluice_sandbox *sb, char *msg, size_t msglen);

/* Sum over CPUs of counter `stat` (enum sluice_stat). */
uint64_t sandbox_stat(struct sluice_sandbox *sb, int stat);

/* New descriptors of sb's event ring buffer and its budget map, for the
 * consumer (loader/event_ring.h), which owns them: from the skeleton, or
 * from the pins of a sandbox held by them (refused, -ESTALE, if a pin
 * holds another map than the sandbox was loaded with).  0, or -errno
 * with msg. */
int sandbox_ring_open(struct sluice_sandbox *sb, int *events_fd, int *budget_fd, char *msg, size_t msglen);

/* Unpin everything under pin_dir, destroy links and the skeleton. */
void sandbox_destroy(struct sluice_sandbox *sb);

/*
 * Close the map descriptors sb opened from its pins (sandbox_adopt,
 * sandbox_keep_pins) and keep the pins: the filter stays in force, held by
 * them, for a later daemon to adopt.  For a sandbox this process is not
 * adopting after all.  A no-op on descriptors it does not own.
 */
void sandbox_release(struct sluice_sandbox *sb);

#endif
