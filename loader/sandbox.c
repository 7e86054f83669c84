/* SPDX-License-Identifier: BSD-2-Clause */
#include "sandbox.h"
#include "sandbox_maps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "children.h"
#include "fds.h"
#include "kfeatures.h"
#include "ktunnel.h"
#include "pin_layout.h"
#include "sluice.skel.h"

/* A program's one name: its pin (link_NAME), its entry in `status`'s
 * "hooks", and, with the prefix sluice_, its function in bpf/sluice.bpf.c;
 * where one program is one event hook (loader/events.c), also the event's
 * sluice.hook. */
static const char *prog_names[SLUICE_PROG__MAX] = {
	[SLUICE_PROG_CONNECT4] = "connect4",
	[SLUICE_PROG_CONNECT6] = "connect6",
	[SLUICE_PROG_SENDMSG4] = "sendmsg4",
	[SLUICE_PROG_SENDMSG6] = "sendmsg6",
	[SLUICE_PROG_RECVMSG4] = "recvmsg4",
	[SLUICE_PROG_RECVMSG6] = "recvmsg6",
	[SLUICE_PROG_GETPEERNAME4] = "getpeername4",
	[SLUICE_PROG_GETPEERNAME6] = "getpeername6",
	[SLUICE_PROG_SOCK_CREATE] = "sock_create",
	[SLUICE_PROG_SOCKOPS] = "sockops",
	[SLUICE_PROG_SKB_EGRESS] = "skb_egress",
	[SLUICE_PROG_SOCK_RELEASE] = "sock_release",
	[SLUICE_PROG_CONNECT_UNIX] = "connect_unix",
	[SLUICE_PROG_SENDMSG_UNIX] = "sendmsg_unix",
	[SLUICE_PROG_LSM_POST_CREATE] = "lsm_post_create",
	[SLUICE_PROG_LSM_CREATE] = "lsm_socket_create",
	[SLUICE_PROG_LSM_CONNECT] = "lsm_connect",
	[SLUICE_PROG_LSM_SENDMSG] = "lsm_sendmsg",
	[SLUICE_PROG_LSM_UNIX_CONNECT] = "lsm_unix_connect",
	[SLUICE_PROG_LSM_UNIX_SEND] = "lsm_unix_send",
};

static const char *map_names[SLUICE_MAP__MAX] = {
	[SLUICE_MAP_ALLOW4] = "sluice_allow4",
	[SLUICE_MAP_ALLOW6] = "sluice_allow6",
	[SLUICE_MAP_EXACT4] = "sluice_exact4",
	[SLUICE_MAP_EXACT6] = "sluice_exact6",
	[SLUICE_MAP_PORTS] = "sluice_proxy_ports",
	[SLUICE_MAP_STATE] = "sluice_state",
	[SLUICE_MAP_GENCONF] = "sluice_genconf",
	[SLUICE_MAP_STATS] = "sluice_stats",
	[SLUICE_MAP_EVENTS] = "sluice_events",
	[SLUICE_MAP_FLOWS] = "sluice_flows",
	[SLUICE_MAP_CONFIG] = "sluice_config",
	[SLUICE_MAP_LISTENERS] = "sluice_listener_sk",
	[SLUICE_MAP_UNIX] = "sluice_unix_allow",
	[SLUICE_MAP_PROGS] = "sluice_prog_allow",
	[SLUICE_MAP_RING_BUDGET] = "sluice_ring_budget",
};

void sluice_link_path(const char *pin_dir, const char *prog, char *buf, size_t len)
{
	snprintf(buf, len, "%s/link_%s", pin_dir, prog);
}

const char *sluice_prog_name(enum sluice_prog_id id)
{
	return id < SLUICE_PROG__MAX ? prog_names[id] : "?";
}

const char *sluice_map_pin_name(enum sluice_map_id id)
{
	return id < SLUICE_MAP__MAX ? map_names[id] : "?";
}

static struct bpf_map *map_of(struct sluice_bpf *s, enum sluice_map_id id);

int sluice_map_shapes(struct sluice_map_shape *out)
{
	struct sluice_bpf *s = sluice_bpf__open();

	if (!s)
		return errno ? -errno : -ENOMEM;
	for (int i = 0; i < SLUICE_MAP__MAX; i++) {
		const struct bpf_map *m = map_of(s, i);

		out[i].type = (unsigned)bpf_map__type(m);
		out[i].key_size = bpf_map__key_size(m);
		out[i].value_size = bpf_map__value_size(m);
	}
	sluice_bpf__destroy(s);
	return 0;
}

static struct bpf_map *map_of(struct sluice_bpf *s, enum sluice_map_id id)
{
	switch (id) {
	case SLUICE_MAP_ALLOW4: return s->maps.sluice_allow4;
	case SLUICE_MAP_ALLOW6: return s->maps.sluice_allow6;
	case SLUICE_MAP_EXACT4: return s->maps.sluice_exact4;
	case SLUICE_MAP_EXACT6: return s->maps.sluice_exact6;
	case SLUICE_MAP_PORTS: return s->maps.sluice_proxy_ports;
	case SLUICE_MAP_STATE: return s->maps.sluice_state;
	case SLUICE_MAP_GENCONF: return s->maps.sluice_genconf;
	case SLUICE_MAP_STATS: return s->maps.sluice_stats;
	case SLUICE_MAP_EVENTS: return s->maps.sluice_events;
	case SLUICE_MAP_FLOWS: return s->maps.sluice_flows;
	case SLUICE_MAP_CONFIG: return s->maps.rodata;
	case SLUICE_MAP_LISTENERS: return s->maps.sluice_listener_sk;
	case SLUICE_MAP_UNIX: return s->maps.sluice_unix_allow;
	case SLUICE_MAP_PROGS: return s->maps.sluice_prog_allow;
	case SLUICE_MAP_RING_BUDGET: return s->maps.sluice_ring_budget;
	default: return NULL;
	}
}

/* Program `id` of the object: the function sluice_NAME (prog_names[]),
 * NULL if this build's object has none. */
static struct bpf_program *prog_of(struct sluice_bpf *s, enum sluice_prog_id id)
{
	char fn[64];

	snprintf(fn, sizeof(fn), "sluice_%s", prog_names[id]);
	return bpf_object__find_program_by_name(s->obj, fn);
}

bool sluice_prog_is_lsm(enum sluice_prog_id id)
{
	return id >= SLUICE_PROG_LSM_POST_CREATE && id < SLUICE_PROG__MAX;
}

bool sluice_prog_loaded(const struct sluice_bpf_config *cfg, enum sluice_prog_id id)
{
	if (sluice_prog_is_lsm(id))
		return cfg->have_lsm;
	if (id == SLUICE_PROG_CONNECT_UNIX || id == SLUICE_PROG_SENDMSG_UNIX)
		return cfg->have_unix;
	return id < SLUICE_PROG__MAX;
}

int sluice_prog_count(const struct sluice_bpf_config *cfg)
{
	int n = 0;

	for (int i = 0; i < SLUICE_PROG__MAX; i++)
		n += sluice_prog_loaded(cfg, i);
	return n;
}

int sluice_bpf_lsm_active(char *msg, size_t msglen)
{
	static const char *path = "/sys/kernel/security/lsm";
	char buf[512], *tok, *save = NULL;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		/* securityfs not mounted: it is a single instance, mounting it
		 * here only makes it visible */
		mount("securityfs", "/sys/kernel/security", "securityfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		snprintf(msg, msglen, "cannot read %s: %s", path, strerror(errno));
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		snprintf(msg, msglen, "cannot read %s", path);
		return 0;
	}
	buf[n] = 0;
	for (tok = strtok_r(buf, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save))
		if (strcmp(tok, "bpf") == 0)
			return 1;
	snprintf(msg, msglen, "the BPF LSM is not active (no 'bpf' in %s; boot with lsm=...,bpf)", path);
	return 0;
}

static size_t count_unix(const struct sluice_policy *p)
{
	size_t n = 0;

	for (size_t i = 0; p && i < p->n_entries; i++)
		n += p->entries[i].kind == SLUICE_ENTRY_UNIX;
	return n;
}

static size_t count_cidr(const struct sluice_policy *p, int family)
{
	size_t n = 0;

	for (size_t i = 0; p && i < p->n_entries; i++)
		if (p->entries[i].kind == SLUICE_ENTRY_CIDR && p->entries[i].family == family)
			n++;
	return n;
}

/* Attach types of the unix hooks (UAPI 6.7); older headers lack the names. */
#define SLUICE_CGROUP_UNIX_CONNECT 49 /* BPF_CGROUP_UNIX_CONNECT */
#define SLUICE_CGROUP_UNIX_SENDMSG 50 /* BPF_CGROUP_UNIX_SENDMSG */

/* A ring of its own: the whole ring is its pool and its share (sluice.h). */
static int own_ring_budget(struct sluice_bpf *s)
{
	uint32_t k[2] = { SLUICE_RING_POOL, SLUICE_RING_SHARE };
	uint64_t all = SLUICE_RING_OWN_BYTES;

	for (int i = 0; i < 2; i++)
		if (bpf_map_update_elem(bpf_map__fd(s->maps.sluice_ring_budget), &k[i], &all, BPF_ANY))
			return -errno;
	return 0;
}

/* Open, size and load the object with configuration `cfg`, its events to
 * `ring` (NULL: a ring of its own); 0 or -errno (-ENOENT: a program of
 * prog_names[] is missing from the object). */
static int load_object(struct sluice_sandbox *sb, const struct sluice_bpf_config *cfg, size_t n4, size_t n6,
		       size_t nu, size_t np, const struct sluice_ring_use *ring)
{
	struct sluice_bpf *s = sluice_bpf__open();
	int err;

	if (!s)
		return -errno;
	*(struct sluice_bpf_config *)&s->rodata->sluice_cfg = *cfg;
	if (ring && ((err = bpf_map__reuse_fd(s->maps.sluice_events, ring->events_fd)) != 0 ||
		     (err = bpf_map__reuse_fd(s->maps.sluice_ring_budget, ring->budget_fd)) != 0)) {
		sluice_bpf__destroy(s);
		return err;
	}
	/* two generations side by side during a reload, plus slack; the
	 * exact maps sized alike, so that a reload may turn prefixes into
	 * single addresses (a hash's buckets, 16 bytes each, are its only
	 * memory before entries arrive) */
	bpf_map__set_max_entries(s->maps.sluice_allow4, 2 * (n4 + 16));
	bpf_map__set_max_entries(s->maps.sluice_allow6, 2 * (n6 + 16));
	bpf_map__set_max_entries(s->maps.sluice_exact4, 2 * (n4 + 16));
	bpf_map__set_max_entries(s->maps.sluice_exact6, 2 * (n6 + 16));
	bpf_map__set_max_entries(s->maps.sluice_unix_allow, 2 * (nu + 16));
	/* no preallocation: room for reloads that add programs costs nothing */
	bpf_map__set_max_entries(s->maps.sluice_prog_allow, 2 * (np + 1024));
	if (!ring)
		bpf_map__set_max_entries(s->maps.sluice_events, SLUICE_RING_OWN_BYTES);
	/* Allocated on demand (BPF_F_NO_PREALLOC): an idle sandbox holds
	 * nothing, where the LRU hash before was 5.8 MiB of kernel memory a
	 * sandbox whatever it did (issue 19, scenario 9).  The bound is what a
	 * busy sandbox can need: a TCP entry lives from the connect until the
	 * child accepts and takes it, so the full accept queues of the four
	 * TCP listeners (proxy and DNS over TCP, IPv4 and IPv6) bound them,
	 * and twice that leaves room for SYNs in flight and the DNS sockets
	 * open at once.  What no one takes is removed at the socket's release
	 * and by the children's sweep; a map filled anyway (about 5 MiB)
	 * costs only the sandbox that filled it: an insert fails and its proxy
	 * refuses that flow (no_flow_entry). */
	bpf_map__set_max_entries(s->maps.sluice_flows, 8 * SLUICE_LISTEN_BACKLOG);
	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		struct bpf_program *prog = prog_of(s, i);

		if (!prog) {   /* prog_names[] and bpf/sluice.bpf.c disagree: a build defect */
			sluice_bpf__destroy(s);
			return -ENOENT;
		}
		bpf_program__set_autoload(prog, sluice_prog_loaded(cfg, i));
	}
	bpf_program__set_expected_attach_type(s->progs.sluice_connect_unix, SLUICE_CGROUP_UNIX_CONNECT);
	bpf_program__set_expected_attach_type(s->progs.sluice_sendmsg_unix, SLUICE_CGROUP_UNIX_SENDMSG);
	err = sluice_bpf__load(s);
	if (!err && !ring)
		err = own_ring_budget(s);
	if (err) {
		sluice_bpf__destroy(s);
		return err;
	}
	sb->skel = s;
	sb->cfg = *cfg;
	return 0;
}

/* sb as nothing yet: no maps, named `name`, its pins under SLUICE_PIN_ROOT. */
static void sb_init(struct sluice_sandbox *sb, const char *name)
{
	memset(sb, 0, sizeof(*sb));
	for (int i = 0; i < SLUICE_MAP__MAX; i++)
		sb->map_fd[i] = -1;
	snprintf(sb->name, sizeof(sb->name), "%s", name);
	snprintf(sb->pin_dir, sizeof(sb->pin_dir), "%s/%s", SLUICE_PIN_ROOT, name);
}

/* Descriptors one load may need at once: the object's maps, programs and
 * BTF, libbpf's feature probes, and the links after it (a daemon then
 * keeps about 11 a sandbox: sandbox_keep_pins; scenario 9 in
 * docs/performance.md). */
#define LOAD_FDS 128

/* 0 when this process has LOAD_FDS descriptors to spare under its
 * RLIMIT_NOFILE; -EMFILE, with *used and *limit set, when it has not.
 * Checked before a load because a load that runs out of descriptors half
 * way fails with a wrong cause: at the daemon's limit it said EINVAL
 * (most likely a libbpf feature probe taken as a missing feature). */
static int fd_headroom(unsigned long *used, unsigned long *limit)
{
	struct rlimit rl;
	long nfds;

	*used = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	*limit = rl.rlim_cur;
	nfds = sluice_fds_open();
	if (nfds < 0)
		return nfds == -EMFILE || nfds == -ENFILE ? -EMFILE : 0;
	*used = (unsigned long)nfds;
	return *used + LOAD_FDS > *limit ? -EMFILE : 0;
}

/* Is a load's -errno `err` one a later load may not meet (memory or
 * descriptors short for a moment) rather than the kernel refusing the
 * programs themselves? */
static bool refusal_is_passing(int err)
{
	return err == -ENOMEM || err == -EMFILE || err == -ENFILE || err == -EAGAIN || err == -EINTR ||
	       err == -ENOSPC;
}

int sandbox_load(struct sluice_sandbox *sb, const char *name, const struct sluice_bpf_config *cfg,
		 const struct sluice_policy *policy, const struct sluice_ring_use *ring, char *msg, size_t msglen)
{
	size_t n4 = count_cidr(policy, 2), n6 = count_cidr(policy, 10), nu = count_unix(policy);
	size_t np = sluice_plan_count_programs(policy);
	int err;

	sb_init(sb, name);
	{
		unsigned long used = 0, limit = 0;

		if (fd_headroom(&used, &limit)) {
			snprintf(msg, msglen,
				 "cannot load BPF programs: out of file descriptors (%lu of RLIMIT_NOFILE %lu in use, a load needs %d)",
				 used, limit, LOAD_FDS);
			return -EMFILE;
		}
	}

	/* the LSM active is not enough: the kernel may still refuse
	 * tracing-type programs (lockdown, a hardened build); a kernel before
	 * 6.7 has no unix hooks.  Probe by the real load: on a refusal, drop
	 * the unix programs, then the LSM ones, then both, and the first load
	 * that passes says which the kernel refused; it is kept for the
	 * process's later sandboxes, and each sandbox says which hold.  A
	 * load short of memory or descriptors (refusal_is_passing) says
	 * nothing of the programs: the sandbox is refused, none dropped. */
	static int lsm_refused, unix_refused;
	struct sluice_bpf_config c = *cfg;
	int want_lsm, want_unix, errs[4] = { 0 };

	if (ring && ring->slot >= SLUICE_RING_SLOTS) {
		snprintf(msg, msglen, "cannot load BPF programs: ring buffer slot %u out of range", ring->slot);
		return -EINVAL;
	}
	c.ring_slot = ring ? ring->slot : 0;

	/* a kernel that lists the BPF LSM but refuses its programs (seen:
	 * EPERM for every one) is told by a two-instruction load, not by
	 * whole loads of the object that each verify the other programs
	 * before the first LSM one fails (two of them, about a third of a
	 * process's first attach or `sluice run`).  A pass proves only that
	 * much: the real load below still decides.  Once a process (it
	 * reads the vmlinux BTF). */
	static bool lsm_probed;

	if (c.have_lsm && !lsm_refused && !lsm_probed) {
		int probe = sluice_bpf_lsm_loads();

		/* a passing shortage (refusal_is_passing) is asked again next time */
		if (!refusal_is_passing(probe)) {
			lsm_probed = true;
			lsm_refused = probe;
		}
	}
	if (c.have_lsm && lsm_refused) {
		c.have_lsm = 0;
		sb->lsm_err = lsm_refused;
	}
	if (c.have_unix && unix_refused) {
		c.have_unix = 0;
		sb->unix_err = unix_refused;
	}
	/* expiring cidr entries are judged on CLOCK_TAI (6.1+) */
	c.have_tai = sluice_probe_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_ktime_get_tai_ns);
	/* a cidr entry's port rules and a unix name's bytes walked by
	 * bpf_loop (5.17+): the unrolled walks took the verifier about six
	 * times the instructions.  SLUICE_BPF_NO_LOOP (non-empty) takes the
	 * unrolled ones here too: what the tests check a pre-5.17 kernel by */
	{
		const char *nl = getenv("SLUICE_BPF_NO_LOOP");

		c.have_loop = sluice_probe_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_loop) &&
			      !(nl && *nl);
	}
	/* `programs:` on cidr entries and the flow map's executable */
	c.have_exe = sluice_have_exe();
	want_lsm = c.have_lsm;
	want_unix = c.have_unix;
	err = -EINVAL;
	/* bit 0 drops the unix programs, bit 1 the LSM ones */
	for (unsigned drop = 0; drop < 4 && err; drop++) {
		if (((drop & 1) && !want_unix) || ((drop & 2) && !want_lsm))
			continue;   /* the same load as one already tried */
		c.have_unix = want_unix && !(drop & 1);
		c.have_lsm = want_lsm && !(drop & 2);
		err = errs[drop] = load_object(sb, &c, n4, n6, nu, np, ring);
		if (err && refusal_is_passing(err))
			break;  /* not the programs: refuse the sandbox, drop none */
	}
	/* each refusal in the words of the load that had those programs
	 * without the others (drop 1: the LSM ones, drop 2: the unix ones),
	 * where it was tried; else of the first load */
	if (!err && want_lsm && !c.have_lsm)
		sb->lsm_err = lsm_refused = errs[1] ? errs[1] : errs[0];
	if (!err && want_unix && !c.have_unix)
		sb->unix_err = unix_refused = errs[2] ? errs[2] : errs[0];
	if (err) {
		snprintf(msg, msglen, "cannot load BPF programs: %s (does this kernel have BPF, BTF and cgroup sock_addr hooks? run as root)",
			 strerror(-err));
		return err;
	}
	for (int i = 0; i < SLUICE_MAP__MAX; i++)
		sb->map_fd[i] = bpf_map__fd(map_of(sb->skel, i));
	return 0;
}

/* Link pins that earlier builds named otherwise, moved to this build's
 * name on adoption so that status, flow cuts and detach find them. */
static const struct {
	enum sluice_prog_id id;
	const char *old;
} renamed_links[] = {
	/* until one name per program (issue 11) */
	{ SLUICE_PROG_SKB_EGRESS, "egress" },
	{ SLUICE_PROG_LSM_POST_CREATE, "lsm_socket_post_create" },
	{ SLUICE_PROG_LSM_CONNECT, "lsm_socket_connect" },
	{ SLUICE_PROG_LSM_SENDMSG, "lsm_socket_sendmsg" },
	{ SLUICE_PROG_LSM_UNIX_CONNECT, "lsm_unix_stream_connect" },
	{ SLUICE_PROG_LSM_UNIX_SEND, "lsm_unix_may_send" },
};

/* Rename sb's pinned links of renamed_links[] to their names in this build.
 * 0, or -errno with msg. */
static int rename_old_links(struct sluice_sandbox *sb, char *msg, size_t msglen)
{
	char from[512], to[512];

	for (size_t i = 0; i < sizeof(renamed_links) / sizeof(renamed_links[0]); i++) {
		sluice_link_path(sb->pin_dir, renamed_links[i].old, from, sizeof(from));
		sluice_link_path(sb->pin_dir, prog_names[renamed_links[i].id], to, sizeof(to));
		if (access(from, F_OK) < 0 || access(to, F_OK) == 0)
			continue;
		if (rename(from, to) < 0) {
			int err = -errno;

			snprintf(msg, msglen, "cannot rename the pinned link %s to %s: %s", from, to, strerror(errno));
			return err;
		}
	}
	return 0;
}

void sandbox_pins_close(int *fds, unsigned which)
{
	for (int i = 0; i < SLUICE_MAP__MAX; i++) {
		if ((which & (1u << i)) && fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
}

/* The kernel's id of map `fd`, or 0. */
static uint32_t map_id_of(int fd)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);

	return fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

int sandbox_pins_open(const char *pin_dir, unsigned want, int *fds, const uint32_t *ids, char *msg, size_t msglen)
{
	unsigned opened = 0;
	char path[512];

	for (int i = 0; i < SLUICE_MAP__MAX; i++) {
		if (!(want & (1u << i)) || fds[i] >= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir, map_names[i]);
		fds[i] = bpf_obj_get(path);
		if (fds[i] < 0) {
			int err = -errno;

			snprintf(msg, msglen, "cannot open pinned map %s: %s", path, strerror(errno));
			sandbox_pins_close(fds, opened);
			return err;
		}
		opened |= 1u << i;
		if (ids && ids[i] && map_id_of(fds[i]) != ids[i]) {
			snprintf(msg, msglen, "pinned map %s is not the map this sandbox was loaded with", path);
			sandbox_pins_close(fds, opened);
			return -ESTALE;
		}
	}
	return (int)opened;
}

int sandbox_adopt(struct sluice_sandbox *sb, const char *name, char *msg, size_t msglen)
{
	uint32_t zero = 0;
	struct sluice_state st;
	int err;

	sb_init(sb, name);
	sb->own_fds = true;
	sb->pinned = true;
	err = sandbox_pins_open(sb->pin_dir, MAPS_ALL, sb->map_fd, NULL, msg, msglen);
	/* a map missing: an older build's pins (one without the ring budget)
	 * are said to be that, with the way out */
	if (err == -ENOENT && sluice_pin_layout_stamp_check(name, sb->pin_dir, msg, msglen) < 0)
		return -EPROTO;
	if (err < 0)
		return err;
	/* pinned by another build: never read with this one's structs */
	if (sluice_pin_layout_check(name, sb->pin_dir, sb->map_fd, msg, msglen) < 0)
		return -EPROTO;
	err = rename_old_links(sb, msg, msglen);
	if (err < 0)
		return err;
	if (bpf_map_lookup_elem(sb->map_fd[SLUICE_MAP_CONFIG], &zero, &sb->cfg) ||
	    bpf_map_lookup_elem(sb->map_fd[SLUICE_MAP_STATE], &zero, &st)) {
		err = -errno;
		snprintf(msg, msglen, "cannot read the configuration of sandbox %s: %s", name, strerror(errno));
		return err;
	}
	sb->gen = st.gen;
	return 0;
}

/*
 * Unix names refused without an event: glibc's NSS connects to nscd's
 * socket on every name lookup (and falls back to its own resolver, so to
 * sluice's); refusing it is right (nscd would resolve anything), logging
 * each one is noise.  Counted (SLUICE_STAT_UNIX_QUIET, the stop line).
 */
static const char *const unix_quiet[] = { "/var/run/nscd/socket", "/run/nscd/socket" };

int sandbox_write_unix_quiet(struct sluice_sandbox *sb)
{
	int fd = bpf_map__fd(sb->skel->maps.sluice_unix_quiet);
	uint32_t one = 1;

	for (size_t i = 0; i < sizeof(unix_quiet) / sizeof(unix_quiet[0]); i++) {
		struct sluice_unix_key k;

		sluice_unix_key_of_addr((const unsigned char *)unix_quiet[i], strlen(unix_quiet[i]), 0, &k);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int mkdir_p(const char *dir)
{
	char tmp[256];

	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	}
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Does directory `dir` hold nothing?  false when it cannot be read. */
static bool dir_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool empty = d != NULL;

	while (d && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			empty = false;
			break;
		}
	if (d)
		closedir(d);
	return empty;
}

bool sluice_pins_in_use(const char *name)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/%s", SLUICE_PIN_ROOT, name);
	return access(dir, F_OK) == 0 && !dir_empty(dir);
}

int sandbox_pin_maps(struct sluice_sandbox *sb)
{
	char path[512];
	int err;

	err = mkdir_p(SLUICE_PIN_ROOT);
	if (err)
		return err;
	/* pin_dir is this sandbox's only if it made it or found it empty:
	 * the pins of another sandbox of that name (a `sluice run`, one a
	 * daemon left) are never touched, not even by the cleanup of this
	 * failed start (sandbox_destroy() unpins only where pinned is set) */
	if (mkdir(sb->pin_dir, 0700) < 0 && (errno != EEXIST || !dir_empty(sb->pin_dir)))
		return -EEXIST;
	sb->pinned = true;
	for (int i = 0; i < SLUICE_MAP__MAX; i++) {
		snprintf(path, sizeof(path), "%s/%s", sb->pin_dir, map_names[i]);
		err = bpf_map__pin(map_of(sb->skel, i), path);
		if (err)
			return err;
	}
	return 0;
}

int sandbox_attach(struct sluice_sandbox *sb, int cg_fd, char *msg, size_t msglen)
{
	char path[512];
	uint32_t zero = 0;

	if (sb->cfg.have_lsm && bpf_map_update_elem(bpf_map__fd(sb->skel->maps.sluice_cgroup), &zero, &cg_fd, BPF_ANY)) {
		snprintf(msg, msglen, "cannot set the sandbox's cgroup for the LSM programs: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		struct bpf_link *l;
		int err;

		if (!sluice_prog_loaded(&sb->cfg, i))
			continue;
		l = sluice_prog_is_lsm(i) ? bpf_program__attach_lsm(prog_of(sb->skel, i))
					  : bpf_program__attach_cgroup(prog_of(sb->skel, i), cg_fd);

		if (!l) {
			err = -errno;
			snprintf(msg, msglen, "cannot attach hook %s: %s", prog_names[i], strerror(-err));
			goto fail;
		}
		sb->links[i] = l;
		sluice_link_path(sb->pin_dir, prog_names[i], path, sizeof(path));
		err = bpf_link__pin(l, path);
		if (err) {
			snprintf(msg, msglen, "cannot pin link of hook %s at %s: %s", prog_names[i], path,
				 strerror(-err));
			goto fail;
		}
	}
	return 0;
fail:
	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		if (sb->links[i]) {
			bpf_link__unpin(sb->links[i]);
			bpf_link__destroy(sb->links[i]);
			sb->links[i] = NULL;
		}
	}
	return -1;
}

int sandbox_keep_pins(struct sluice_sandbox *sb, char *msg, size_t msglen)
{
	int fds[SLUICE_MAP__MAX];
	int err;

	if (!sb->pinned)
		return 0;
	/* what a reload will check its pins against */
	for (int i = 0; i < SLUICE_MAP__MAX; i++)
		sb->map_id[i] = map_id_of(sb->map_fd[i]);
	if (!sb->skel) {   /* adopted: its maps are its own */
		sandbox_pins_close(sb->map_fd, MAPS_ALL & ~MAPS_HOT);
		return 0;
	}
	for (int i = 0; i < SLUICE_MAP__MAX; i++)
		fds[i] = -1;
	err = sandbox_pins_open(sb->pin_dir, MAPS_HOT, fds, sb->map_id, msg, msglen);
	if (err < 0)
		return err;
	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		if (sb->links[i]) {
			/* closes the fd only (a disconnected link would keep
			 * it); the pin holds the link attached */
			bpf_link__destroy(sb->links[i]);
			sb->links[i] = NULL;
		}
	}
	sluice_bpf__destroy(sb->skel);
	sb->skel = NULL;
	memcpy(sb->map_fd, fds, sizeof(fds));
	sb->own_fds = true;
	return 0;
}

uint64_t sandbox_stat(struct sluice_sandbox *sb, int stat)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0;
	uint32_t key = stat;

	if (ncpu <= 0 || sb->map_fd[SLUICE_MAP_STATS] < 0)
		return 0;

	uint64_t vals[ncpu];

	if (bpf_map_lookup_elem(sb->map_fd[SLUICE_MAP_STATS], &key, vals))
		return 0;
	for (int i = 0; i < ncpu; i++)
		sum += vals[i];
	return sum;
}

int sandbox_ring_open(struct sluice_sandbox *sb, int *events_fd, int *budget_fd, char *msg, size_t msglen)
{
	int fds[SLUICE_MAP__MAX], err;

	for (int i = 0; i < SLUICE_MAP__MAX; i++)
		fds[i] = -1;
	if (sb->map_fd[SLUICE_MAP_EVENTS] >= 0 && sb->map_fd[SLUICE_MAP_RING_BUDGET] >= 0) {
		/* loaded, or adopted before sandbox_keep_pins() */
		fds[SLUICE_MAP_EVENTS] = fcntl(sb->map_fd[SLUICE_MAP_EVENTS], F_DUPFD_CLOEXEC, 3);
		fds[SLUICE_MAP_RING_BUDGET] = fcntl(sb->map_fd[SLUICE_MAP_RING_BUDGET], F_DUPFD_CLOEXEC, 3);
		if (fds[SLUICE_MAP_EVENTS] < 0 || fds[SLUICE_MAP_RING_BUDGET] < 0) {
			err = -errno;
			snprintf(msg, msglen, "cannot hold the ring buffer: %s", strerror(errno));
			sandbox_pins_close(fds, MAPS_RING);
			return err;
		}
	} else if ((err = sandbox_pins_open(sb->pin_dir, MAPS_RING, fds, sb->map_id, msg, msglen)) < 0) {
		return err;
	}
	*events_fd = fds[SLUICE_MAP_EVENTS];
	*budget_fd = fds[SLUICE_MAP_RING_BUDGET];
	return 0;
}

int sandbox_links_pinned(const struct sluice_sandbox *sb)
{
	char path[512];
	int n = 0;

	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		sluice_link_path(sb->pin_dir, prog_names[i], path, sizeof(path));
		if (access(path, F_OK) == 0)
			n++;
	}
	return n;
}

void sandbox_detach(struct sluice_sandbox *sb)
{
	char path[512];

	for (int i = 0; i < SLUICE_PROG__MAX; i++) {
		sluice_link_path(sb->pin_dir, prog_names[i], path, sizeof(path));
		if (sb->pinned)   /* never another sandbox's pins (sandbox_pin_maps) */
			unlink(path);
		if (sb->links[i]) {
			bpf_link__destroy(sb->links[i]);
			sb->links[i] = NULL;
		}
	}
}

void sandbox_release(struct sluice_sandbox *sb)
{
	if (sb->own_fds) {
		for (int i = 0; i < SLUICE_MAP__MAX; i++)
			if (sb->map_fd[i] >= 0)
				close(sb->map_fd[i]);
		sb->own_fds = false;
	}
	for (int i = 0; i < SLUICE_MAP__MAX; i++)
		sb->map_fd[i] = -1;
}

void sandbox_destroy(struct sluice_sandbox *sb)
{
	char path[512];

	sandbox_detach(sb);
	if (sb->pinned) {
		for (int i = 0; i < SLUICE_MAP__MAX; i++) {
			snprintf(path, sizeof(path), "%s/%s", sb->pin_dir, map_names[i]);
			unlink(path);
		}
		snprintf(path, sizeof(path), "%s/%s", sb->pin_dir, SLUICE_LAYOUT_PIN);
		unlink(path);
		sluice_ktunnel_unpin(sb->pin_dir);
		rmdir(sb->pin_dir);
		rmdir(SLUICE_PIN_ROOT); /* only if empty */
		sb->pinned = false;
	}
	sandbox_release(sb);
	if (sb->skel) {
		sluice_bpf__destroy(sb->skel);
		sb->skel = NULL;
	}
}
