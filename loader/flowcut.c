/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flowcut.c - a reload cuts the kernel-allowed TCP flows the new policy no
 * longer allows (see flowcut.h).  The proxy re-decides what passes through
 * it (userspace/proxy/redecide.c); a connection a cidr entry let through in
 * the kernel never passes the proxy, so the loader finds it here: sock_diag
 * lists the netns's TCP sockets with their sluice_sk_judged record (only a
 * socket of this sandbox whose connect a cidr entry allowed has one), the
 * new policy's cidr entries decide each again (sluice_policy_cidr_tcp), and
 * SOCK_DESTROY resets the ones it refuses.  The egress backstop lets the
 * reset itself out (judged_reset in bpf/sluice.bpf.c).
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
		/* BPF_OBJ_NAME_LEN: the kernel keeps 15 characters of "sluice_sk_judged" */
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

/* Does the dumped socket hold a record in the map asked for: for
 * sluice_sk_judged any record (a cidr entry allowed its connect); for
 * sluice_sk_orig one marked SLUICE_ORIG_AUDIT (an audit-mode policy let a
 * connect through that it would have refused). */
static bool has_record(struct nlattr *a, int len, bool audit)
{
	size_t vlen = 0;
	const uint8_t *o = record_of(a, len, &vlen);

	if (!o)
		return false;
	/* the value is 4-byte aligned in the message: its flags byte is read
	 * where it lies, not through a struct sluice_orig (8-byte aligned) */
	return !audit || (vlen >= sizeof(struct sluice_orig) &&
			  (o[offsetof(struct sluice_orig, flags)] & SLUICE_ORIG_AUDIT));
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

/* Decide one dumped socket under np; adds it to vs when refused. */
static void decide(const struct inet_diag_msg *m, const struct sluice_policy *np, struct victims *vs)
{
	bool programs = sluice_policy_has_programs(np);
	struct sluice_exe_id who;
	enum sluice_cidr_verdict why;

	who = programs ? owner_of(m->idiag_inode) : (struct sluice_exe_id){ 0, 0 };
	why = sluice_policy_cidr_tcp(np, m->idiag_family, (const uint8_t *)m->id.idiag_dst, ntohs(m->id.idiag_dport),
				     programs ? &who : NULL, -1);
	if (why == SLUICE_CIDR_ALLOWED || !victims_room(vs))
		return;
	vs->v[vs->n].id = m->id;
	vs->v[vs->n].family = m->idiag_family;
	vs->v[vs->n].why = why;
	vs->n++;
}

/* Dump `family`'s sockets and decide each one with a record in map_fd
 * (audit: sluice_sk_orig, the records marked audit).  Returns 0 or -errno. */
static int dump(int fd, int map_fd, uint8_t family, const struct sluice_policy *np, struct victims *vs, bool audit)
{
	struct diag_req q = {
		.nh = { .nlmsg_len = sizeof(q), .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = STATES },
		.storages = { .nla_len = NLA_HDRLEN * 2 + sizeof(uint32_t), .nla_type = NLA_F_NESTED | INET_DIAG_REQ_SK_BPF_STORAGES },
		.map = { .nla_len = NLA_HDRLEN + sizeof(uint32_t), .nla_type = SK_DIAG_BPF_STORAGE_REQ_MAP_FD },
		.map_fd = (uint32_t)map_fd,
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
			if (has_record((struct nlattr *)(m + 1), (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m))), audit))
				decide(m, np, vs);
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
	SL_U64(l, "sluice.socket_cookie", (uint64_t)v->id.idiag_cookie[1] << 32 | v->id.idiag_cookie[0]);
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

int sluice_flowcut(const struct sluice_sandbox *sb, const char *netns_path, const struct sluice_policy *np,
		   struct sluice_evlog *log)
{
	struct victims vs = { 0 };
	int map_fd, orig_fd, fd, err, cut = 0;

	if (np->mode == SLUICE_MODE_AUDIT)
		return 0;
	map_fd = map_fd_by_name(sb, SLUICE_PROG_SKB_EGRESS, "sluice_sk_judged");
	if (map_fd < 0) {
		log_warnx("sandbox %s: cannot find its socket records to cut flows: %s", sb->name, strerror(-map_fd));
		return map_fd;
	}
	fd = diag_socket(netns_path);
	if (fd < 0) {
		close(map_fd);
		log_warnx("sandbox %s: cannot list its sockets to cut flows: %s", sb->name, strerror(-fd));
		return fd;
	}
	err = dump(fd, map_fd, AF_INET, np, &vs, false);
	if (!err)
		err = dump(fd, map_fd, AF_INET6, np, &vs, false);
	/* what an audit-mode policy let through that it would have refused:
	 * decided under the new one like the rest */
	orig_fd = map_fd_by_name(sb, SLUICE_PROG_CONNECT4, "sluice_sk_orig");
	if (!err && orig_fd >= 0)
		err = dump(fd, orig_fd, AF_INET, np, &vs, true);
	if (!err && orig_fd >= 0)
		err = dump(fd, orig_fd, AF_INET6, np, &vs, true);
	if (orig_fd >= 0)
		close(orig_fd);
	else
		log_warnx("sandbox %s: cannot find its audit records (connections an audit-mode policy let through "
			  "are not cut): %s", sb->name, strerror(-orig_fd));
	if (err)
		log_warnx("sandbox %s: cannot list its sockets to cut flows: %s", sb->name, strerror(-err));
	/* what the dump found before an error is cut all the same */
	for (size_t i = 0; i < vs.n; i++) {
		int e = destroy(fd, &vs.v[i], (uint32_t)i + 1);

		/* ENOENT: it closed meanwhile (nothing left to cut) */
		if (e == -ENOENT)
			continue;
		cut_line(log, &vs.v[i], np, e);
		cut += !e;
	}
	if (vs.over)
		over_line(log, sb->name, np, vs.over);
	free(vs.v);
	close(fd);
	close(map_fd);
	return err ? err : cut;
}
