/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flowcut.c - a reload cuts the kernel-allowed TCP flows the new policy no
 * longer allows (see flowcut.h).  The proxy re-decides what passes through
 * it (userspace/proxy/redecide.c); a connection a cidr entry let through in
 * the kernel never passes the proxy, so the loader finds it here: sock_diag
 * lists the netns's TCP sockets with their cgroup and their sluice_sk_orig
 * record; a socket of the sandbox's cgroups (its own or one below, not
 * another sandbox's attached there) that is connected neither to sluice's
 * own addresses (the proxy, the resolver) nor accepted (a PASSIVE record,
 * which any later connect of the socket drops) went where the kernel let
 * it: the new policy's cidr entries decide it again
 * (sluice_policy_cidr_tcp), and SOCK_DESTROY resets the ones it refuses.  The egress backstop lets each one's reset
 * out by its cookie in sluice_cut, written here around the destroy
 * (judged_reset in bpf/sluice_egress.bpf.h).
 */
#include "flowcut.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cgroup.h"
#include "events.h"
#include "evlog.h"
#include "log.h"
#include "policy.h"
#include "sandbox.h"

#define FLOWCUT_MAX (1u << 20) /* flows cut per reload (about 48 MiB of records); beyond, counted and
				* said: those keep the backstop, which drops their packets */
#define STATES ((1u << TCP_ESTABLISHED) | (1u << TCP_SYN_SENT) | (1u << TCP_CLOSE_WAIT))

/* One socket of the dump the new policy refuses. */
struct victim {
	struct inet_diag_sockid id;
	uint8_t family;
	enum sluice_cidr_verdict why;
};

/* v's socket cookie (the kernel's, as bpf_get_socket_cookie() reads it). */
static uint64_t victim_cookie(const struct victim *v)
{
	return (uint64_t)v->id.idiag_cookie[1] << 32 | v->id.idiag_cookie[0];
}

/* The flows a reload cuts: grown as the dump finds them. */
struct victims {
	struct victim *v;
	size_t n, cap;
	size_t over;                /* refused but past FLOWCUT_MAX (or out of memory): not cut */
};

/* The fd of sb's map `name` (the kernel keeps its first 15 characters),
 * found through the pinned link of program `prog` that uses it (an adopted
 * sandbox has no skeleton); -errno when not found. */
static int map_fd_by_name(const struct sluice_sandbox *sb, enum sluice_prog_id prog_id, const char *name)
{
	struct bpf_link_info li = { 0 };
	struct bpf_prog_info pi = { 0 };
	uint32_t ids[64], len = sizeof(li);
	char path[512];
	int link, prog, fd = -ENOENT;

	sluice_link_path(sb->pin_dir, sluice_prog_name(prog_id), path, sizeof(path));
	link = bpf_obj_get(path);
	if (link < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(link, &li, &len) < 0) {
		fd = -errno;
		close(link);
		return fd;
	}
	close(link);
	prog = bpf_prog_get_fd_by_id(li.prog_id);
	if (prog < 0)
		return -errno;
	pi.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	len = sizeof(pi);
	if (bpf_obj_get_info_by_fd(prog, &pi, &len) < 0) {
		fd = -errno;
		close(prog);
		return fd;
	}
	close(prog);
	for (uint32_t i = 0; i < pi.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]) && fd < 0; i++) {
		struct bpf_map_info mi = { 0 };
		int m = bpf_map_get_fd_by_id(ids[i]);

		len = sizeof(mi);
		if (m < 0)
			continue;
		/* BPF_OBJ_NAME_LEN: the kernel keeps 15 characters of a map's name */
		if (bpf_obj_get_info_by_fd(m, &mi, &len) == 0 && strncmp(mi.name, name, 15) == 0)
			fd = m;
		else
			close(m);
	}
	return fd;
}

/* A NETLINK_SOCK_DIAG socket in the netns at `path` (NULL: ours), or -errno. */
static int diag_socket(const char *path)
{
	int self = -1, target = -1, fd, err = 0;

	if (!path) {
		fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
		return fd < 0 ? -errno : fd;
	}
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	target = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) < 0) {
		err = -errno;
		fd = -1;
	} else {
		fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
		if (fd < 0)
			err = -errno;
		/* staying in the sandbox's netns would put the daemon's next
		 * sockets there: not survivable */
		if (setns(self, CLONE_NEWNET) < 0)
			fatal("flowcut: cannot return to the daemon's network namespace");
	}
	if (self >= 0)
		close(self);
	if (target >= 0)
		close(target);
	return fd >= 0 ? fd : err;
}

/* The request: a dump of `family`'s TCP sockets in STATES with their
 * record in map `map_fd`, or (destroy) SOCK_DESTROY of socket `id`. */
struct diag_req {
	struct nlmsghdr nh;
	struct inet_diag_req_v2 r;
	struct nlattr storages;
	struct nlattr map;
	uint32_t map_fd;
};

static int diag_send(int fd, const struct diag_req *q)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	return sendto(fd, q, q->nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
}

#define NLA_NEXT_(a, len) ((len) -= NLA_ALIGN((a)->nla_len), (struct nlattr *)((char *)(a) + NLA_ALIGN((a)->nla_len)))
#define NLA_FITS_(a, len) ((len) >= (int)sizeof(*(a)) && (a)->nla_len >= sizeof(*(a)) && (a)->nla_len <= (len))

/* The attribute of type `type` among a[0..len), or NULL. */
static struct nlattr *nla_find(struct nlattr *a, int len, unsigned type)
{
	for (; NLA_FITS_(a, len); a = NLA_NEXT_(a, len))
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
	return NULL;
}

/* The record of a dumped socket in the one map asked for
 * (INET_DIAG_SK_BPF_STORAGES); NULL when it has none.  *vlen: its size. */
static const void *record_of(struct nlattr *a, int len, size_t *vlen)
{
	struct nlattr *st = nla_find(a, len, INET_DIAG_SK_BPF_STORAGES), *one, *val;

	if (!st || st->nla_len <= NLA_HDRLEN)
		return NULL;
	one = nla_find((struct nlattr *)((char *)st + NLA_HDRLEN), st->nla_len - NLA_HDRLEN, SK_DIAG_BPF_STORAGE);
	if (!one)
		return NULL;
	val = nla_find((struct nlattr *)((char *)one + NLA_HDRLEN), one->nla_len - NLA_HDRLEN,
		       SK_DIAG_BPF_STORAGE_MAP_VALUE);
	if (!val)
		return NULL;
	*vlen = val->nla_len - NLA_HDRLEN;
	return (const char *)val + NLA_HDRLEN;
}

/* The SLUICE_ORIG_* flags of the dumped socket's sluice_sk_orig record;
 * -1 when it has none. */
static int orig_flags(struct nlattr *a, int len)
{
	size_t vlen = 0;
	const uint8_t *o = record_of(a, len, &vlen);

	/* the value is 4-byte aligned in the message: its flags byte is read
	 * where it lies, not through a struct sluice_orig (8-byte aligned) */
	if (!o || vlen < sizeof(struct sluice_orig))
		return -1;
	return o[offsetof(struct sluice_orig, flags)];
}

/* The cgroup id of the dumped socket (INET_DIAG_CGROUP_ID, kernel 5.8+);
 * 0 when the kernel did not say. */
static uint64_t cgroup_of(struct nlattr *a, int len)
{
	struct nlattr *c = nla_find(a, len, INET_DIAG_CGROUP_ID);
	uint64_t id = 0;

	if (c && c->nla_len >= NLA_HDRLEN + sizeof(id))
		memcpy(&id, (const char *)c + NLA_HDRLEN, sizeof(id));
	return id;
}

/* The executable of the process holding socket inode `ino`; {0, 0} (which
 * no `programs:` entry names: fail closed) when no process of /proc has it. */
static struct sluice_exe_id owner_of(uint32_t ino)
{
	struct sluice_exe_id who = { 0, 0 };
	char want[32], path[64], link[64];
	struct dirent *p, *f;
	DIR *procs = opendir("/proc"), *fds;
	struct stat st;

	snprintf(want, sizeof(want), "socket:[%u]", ino);
	while (procs && (p = readdir(procs))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		if (!(fds = opendir(path)))
			continue;
		while ((f = readdir(fds))) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/fd/%.16s", p->d_name, f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0 || (link[n] = 0, strcmp(link, want) != 0))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/exe", p->d_name);
			if (stat(path, &st) == 0) {
				who.dev = sluice_kdev(st.st_dev);
				who.ino = st.st_ino;
			}
			closedir(fds);
			closedir(procs);
			return who;
		}
		closedir(fds);
	}
	if (procs)
		closedir(procs);
	return who;
}

/* Room for one more victim in vs: false when there is none (counted in over). */
static bool victims_room(struct victims *vs)
{
	struct victim *nv;
	size_t cap;

	if (vs->n < vs->cap)
		return true;
	cap = vs->cap ? 2 * vs->cap : 256;
	nv = vs->cap < FLOWCUT_MAX ? realloc(vs->v, cap * sizeof(*nv)) : NULL;
	if (!nv) {
		vs->over++;
		return false;
	}
	vs->v = nv;
	vs->cap = cap;
	return true;
}

/* What a cut works from. */
struct cut {
	const struct sluice_policy *np;     /* the policy now in force */
	const struct sluice_bpf_config *cfg; /* the sandbox's: its proxy's and resolver's addresses */
	bool programs;                      /* np has entries with `programs:` (a socket's owner is looked up) */
	uint64_t *cgroups;                  /* ids of the sandbox's cgroup and those below it, sorted */
	size_t ncgroups;
	struct victims vs;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Is the destination of dumped socket m sluice's own proxy or resolver
 * (a socket that connected there itself or was sent there: what a reload
 * restarts, not a flow a cidr entry let through)?  A v4-mapped destination
 * is either family's address (the IPv6 redirect falls back to v4-mapped
 * where the netns has no ::1). */
static bool at_sluice(const struct inet_diag_msg *m, const struct sluice_bpf_config *cfg)
{
	const uint32_t *a = m->id.idiag_dst;
	uint16_t port = ntohs(m->id.idiag_dport);

	if (m->idiag_family == AF_INET6) {
		if (sluice_cfg_addr6(cfg, false, a, port) || sluice_cfg_addr6(cfg, true, a, port))
			return true;
		if (!(a[0] == 0 && a[1] == 0 && a[2] == htonl(0xffff)))
			return false;
		a += 3;   /* v4-mapped: the IPv4 addresses too */
	}
	return sluice_cfg_addr4(cfg, false, a[0], port) || sluice_cfg_addr4(cfg, true, a[0], port);
}

/* Decide one dumped socket (attributes a[0..len)): one of the sandbox's
 * that reached its destination in the kernel (see the top) and the new
 * policy refuses is added to c->vs. */
static void decide(const struct inet_diag_msg *m, struct nlattr *a, int len, struct cut *c)
{
	uint64_t cg = cgroup_of(a, len);
	int flags = orig_flags(a, len);
	struct sluice_exe_id who;
	enum sluice_cidr_verdict why;

	if (!cg || !bsearch(&cg, c->cgroups, c->ncgroups, sizeof(cg), cmp_u64))
		return;  /* another sandbox's, or the host's */
	/* proxied or resolved (at sluice's addresses), or accepted: not the
	 * kernel's to cut; a record of the proxy's or the resolver's on a
	 * socket now connected elsewhere does not spare it */
	if (at_sluice(m, c->cfg) || (flags >= 0 && (flags & SLUICE_ORIG_PASSIVE) && !(flags & SLUICE_ORIG_AUDIT)))
		return;
	who = c->programs ? owner_of(m->idiag_inode) : (struct sluice_exe_id){ 0, 0 };
	why = sluice_policy_cidr_tcp(c->np, m->idiag_family, (const uint8_t *)m->id.idiag_dst,
				     ntohs(m->id.idiag_dport), c->programs ? &who : NULL, -1);
	if (why == SLUICE_CIDR_ALLOWED || !victims_room(&c->vs))
		return;
	c->vs.v[c->vs.n].id = m->id;
	c->vs.v[c->vs.n].family = m->idiag_family;
	c->vs.v[c->vs.n].why = why;
	c->vs.n++;
}

/* Dump `family`'s TCP sockets in STATES with their sluice_sk_orig record
 * (map orig_fd) and decide each one.  Returns 0 or -errno. */
static int dump(int fd, int orig_fd, uint8_t family, struct cut *c)
{
	struct diag_req q = {
		.nh = { .nlmsg_len = sizeof(q), .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = STATES },
		.storages = { .nla_len = NLA_HDRLEN * 2 + sizeof(uint32_t), .nla_type = NLA_F_NESTED | INET_DIAG_REQ_SK_BPF_STORAGES },
		.map = { .nla_len = NLA_HDRLEN + sizeof(uint32_t), .nla_type = SK_DIAG_BPF_STORAGE_REQ_MAP_FD },
		.map_fd = (uint32_t)orig_fd,
	};
	static char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	int err = diag_send(fd, &q);

	while (!err) {
		ssize_t got = recv(fd, buf, sizeof(buf), 0), len = got;
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : -EPROTO;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			decide(m, (struct nlattr *)(m + 1), (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m))), c);
		}
		if (got == 0)
			return -EPROTO;
	}
	return err;
}

/* SOCK_DESTROY of v; returns 0 or -errno (the kernel's ack). */
static int destroy(int fd, const struct victim *v, uint32_t seq)
{
	struct diag_req q = {
		.nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(q.r)), .nlmsg_type = SOCK_DESTROY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = seq },
		.r = { .sdiag_family = v->family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u, .id = v->id },
	};
	char buf[512] __attribute__((aligned(NLMSG_ALIGNTO)));
	int err = diag_send(fd, &q);

	while (!err) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			return -errno;
		/* the ack of this request (what a failed dump left unread is skipped) */
		for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len))
			if (h->nlmsg_seq == seq && h->nlmsg_type == NLMSG_ERROR)
				return ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
	}
	return err;
}

static const char *why_name(enum sluice_cidr_verdict why)
{
	switch (why) {
	case SLUICE_CIDR_EXPIRED: return sluice_reason_name(SLUICE_REASON_ENTRY_EXPIRED);
	case SLUICE_CIDR_PROGRAM: return sluice_reason_name(SLUICE_REASON_PROGRAM);
	default: return sluice_reason_name(SLUICE_REASON_TCP_PORT);
	}
}

/* The line of one cut (err 0) or failed cut. */
static void cut_line(struct sluice_evlog *log, const struct victim *v, const struct sluice_policy *np, int err)
{
	struct sluice_line *l = sluice_evlog_begin(log, SLUICE_DS_LIFECYCLE, -1);
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], msg[256], en[32];
	int af = v->family == AF_INET6 ? AF_INET6 : AF_INET;

	inet_ntop(af, v->id.idiag_src, src, sizeof(src));
	inet_ntop(af, v->id.idiag_dst, dst, sizeof(dst));
	if (err)
		snprintf(msg, sizeof(msg), "flow to %s port %u not allowed by policy %.12s: cannot cut it: %s", dst,
			 ntohs(v->id.idiag_dport), np->digest, strerror(-err));
	else
		snprintf(msg, sizeof(msg), "flow to %s port %u cut: policy %.12s does not allow it (%s)", dst,
			 ntohs(v->id.idiag_dport), np->digest, why_name(v->why));
	SL_STR(l, "event.kind", "event");
	SL_STR(l, "event.category", "network");
	SL_RAW(l, "event.type", "[\"connection\",\"denied\"]");
	SL_STR(l, "event.action", "flow-cut");
	SL_STR(l, "event.outcome", err ? "failure" : "success");
	SL_STR(l, "event.reason", "policy_reloaded");
	SL_STR(l, "sluice.verdict", "deny");
	SL_STR(l, "sluice.reload.reason", why_name(v->why));
	SL_STR(l, "sluice.reload.policy_sha256", np->digest);
	if (err)
		SL_STR(l, "error.code", sluice_errno_name(-err, en, sizeof(en)));
	SL_STR(l, "source.ip", src);
	SL_U64(l, "source.port", ntohs(v->id.idiag_sport));
	SL_STR(l, "destination.ip", dst);
	SL_U64(l, "destination.port", ntohs(v->id.idiag_dport));
	SL_STR(l, "network.transport", "tcp");
	SL_STR(l, "network.type", af == AF_INET6 ? "ipv6" : "ipv4");
	SL_U64(l, "sluice.socket_cookie", victim_cookie(v));
	SL_STR(l, "message", msg);
	sluice_evlog_commit(log);
	if (err)
		log_warnx("%s", msg);
}

/* The flows past FLOWCUT_MAX (or memory): refused, not cut, said in one line. */
static void over_line(struct sluice_evlog *log, const char *name, const struct sluice_policy *np, size_t over)
{
	struct sluice_line *l = sluice_evlog_begin(log, SLUICE_DS_LIFECYCLE, -1);
	char msg[256];

	snprintf(msg, sizeof(msg), "sandbox %s: %zu more flows are not allowed by policy %.12s but were not cut "
		 "(at most %u a reload): the egress backstop drops their packets", name, over, np->digest,
		 FLOWCUT_MAX);
	SL_STR(l, "event.kind", "event");
	SL_STR(l, "event.action", "flow-cut-incomplete");
	SL_STR(l, "event.outcome", "failure");
	SL_STR(l, "event.reason", "policy_reloaded");
	SL_U64(l, "sluice.flows_not_cut", over);
	SL_STR(l, "sluice.reload.policy_sha256", np->digest);
	SL_STR(l, "message", msg);
	sluice_evlog_commit(log);
	log_warnx("%s", msg);
}

/* Empty sb's sluice_cut (fd): what a loader killed between a write and
 * its delete left there would fill it. */
static void cut_map_clear(int fd)
{
	uint64_t k;

	while (bpf_map_get_next_key(fd, NULL, &k) == 0)
		if (bpf_map_delete_elem(fd, &k) < 0)
			break;
}

int sluice_flowcut(const struct sluice_sandbox *sb, const char *cgroup, const uint64_t *others, size_t nothers,
		   const char *netns_path, const struct sluice_policy *np, struct sluice_evlog *log)
{
	struct cut c = { .np = np, .cfg = &sb->cfg, .programs = sluice_policy_has_programs(np) };
	int orig_fd, cut_fd, fd, err, cut = 0;
	const uint8_t one = 1;
	size_t missed = 0;
	bool said = false;

	if (np->mode == SLUICE_MODE_AUDIT)
		return 0;
	err = cg_subtree_ids(cgroup, others, nothers, &c.cgroups, &c.ncgroups, &missed);
	if (err < 0) {
		log_warnx("sandbox %s: cannot list its cgroups to cut flows: %s", sb->name, strerror(-err));
		return err;
	}
	if (missed)
		log_warnx("sandbox %s: %zu of its cgroups could not be listed (too deep, or unreadable): their flows "
			  "are not cut (the egress backstop drops their packets)", sb->name, missed);
	qsort(c.cgroups, c.ncgroups, sizeof(*c.cgroups), cmp_u64);
	orig_fd = map_fd_by_name(sb, SLUICE_PROG_CONNECT4, "sluice_sk_orig");
	if (orig_fd < 0) {
		log_warnx("sandbox %s: cannot find its socket records to cut flows: %s", sb->name, strerror(-orig_fd));
		free(c.cgroups);
		return orig_fd;
	}
	fd = diag_socket(netns_path);
	if (fd < 0) {
		close(orig_fd);
		free(c.cgroups);
		log_warnx("sandbox %s: cannot list its sockets to cut flows: %s", sb->name, strerror(-fd));
		return fd;
	}
	err = dump(fd, orig_fd, AF_INET, &c);
	if (!err)
		err = dump(fd, orig_fd, AF_INET6, &c);
	close(orig_fd);
	free(c.cgroups);
	if (err)
		log_warnx("sandbox %s: cannot list its sockets to cut flows: %s", sb->name, strerror(-err));
	cut_fd = c.vs.n ? map_fd_by_name(sb, SLUICE_PROG_SKB_EGRESS, "sluice_cut") : -ENOENT;
	if (c.vs.n && cut_fd < 0)
		log_warnx("sandbox %s: cannot find its map of flows being cut (their resets stay in the sandbox): %s",
			  sb->name, strerror(-cut_fd));
	if (cut_fd >= 0)
		cut_map_clear(cut_fd);
	/* what the dump found before an error is cut all the same, a batch at
	 * a time: each one's cookie in sluice_cut while it is destroyed, so
	 * that the backstop lets its RST out to the peer */
	for (size_t b = 0; b < c.vs.n; b += SLUICE_CUT_BATCH) {
		size_t end = c.vs.n - b > SLUICE_CUT_BATCH ? b + SLUICE_CUT_BATCH : c.vs.n;

		for (size_t i = b; i < end && cut_fd >= 0; i++) {
			uint64_t k = victim_cookie(&c.vs.v[i]);

			if (bpf_map_update_elem(cut_fd, &k, &one, BPF_ANY) < 0 && !said) {
				log_warnx("sandbox %s: cannot let the reset of a flow it cuts out: %s", sb->name,
					  strerror(errno));
				said = true;
			}
		}
		for (size_t i = b; i < end; i++) {
			int e = destroy(fd, &c.vs.v[i], (uint32_t)i + 1);

			/* ENOENT: it closed meanwhile (nothing left to cut) */
			if (e == -ENOENT)
				continue;
			cut_line(log, &c.vs.v[i], np, e);
			cut += !e;
		}
		for (size_t i = b; i < end && cut_fd >= 0; i++) {
			uint64_t k = victim_cookie(&c.vs.v[i]);

			bpf_map_delete_elem(cut_fd, &k);
		}
	}
	if (c.vs.over)
		over_line(log, sb->name, np, c.vs.over);
	free(c.vs.v);
	close(fd);
	if (cut_fd >= 0)
		close(cut_fd);
	return err ? err : cut;
}
