/* SPDX-License-Identifier: BSD-2-Clause */
#include "events.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "event_ring.h"
#include "evlog.h"
#include "policy.h"
#include "sandbox.h"

static const char *reason_names[SLUICE_REASON__MAX] = {
	[SLUICE_REASON_NONE] = "none",
	[SLUICE_REASON_TCP_PORT] = "tcp_port_not_allowed",
	[SLUICE_REASON_UDP] = "udp_not_allowed",
	[SLUICE_REASON_NO_RESOLVER] = "dns_no_resolver",
	[SLUICE_REASON_NO_PROXY] = "no_proxy",
	[SLUICE_REASON_SOCK_RAW] = "raw_socket",
	[SLUICE_REASON_SOCK_ICMP] = "icmp_socket",
	[SLUICE_REASON_SOCK_PROTO] = "socket_protocol",
	[SLUICE_REASON_BACKSTOP] = "egress_backstop",
	[SLUICE_REASON_PROTO] = "protocol_not_allowed",
	[SLUICE_REASON_REDIRECT_TARGET] = "redirect_target_not_ours",
	[SLUICE_REASON_FOREIGN_SOCKET] = "foreign_socket",
	[SLUICE_REASON_SOCKET_FAMILY] = "socket_family",
	[SLUICE_REASON_UNIX_OUTSIDE] = "unix_outside_sandbox",
	[SLUICE_REASON_UNIX_NOT_ALLOWED] = "unix_not_allowed",
	[SLUICE_REASON_ENTRY_EXPIRED] = "entry_expired",
	[SLUICE_REASON_PROGRAM] = "program_not_allowed",
};

static const char *hook_names[SLUICE_HOOK__MAX] = {
	[SLUICE_HOOK_CONNECT4] = "connect4",
	[SLUICE_HOOK_CONNECT6] = "connect6",
	[SLUICE_HOOK_SENDMSG4] = "sendmsg4",
	[SLUICE_HOOK_SENDMSG6] = "sendmsg6",
	[SLUICE_HOOK_SOCK_CREATE] = "sock_create",
	[SLUICE_HOOK_SKB_EGRESS] = "skb_egress",
	[SLUICE_HOOK_LSM_CONNECT] = "lsm_connect",
	[SLUICE_HOOK_LSM_SENDMSG] = "lsm_sendmsg",
	[SLUICE_HOOK_LSM_CREATE] = "lsm_socket_create",
	[SLUICE_HOOK_LSM_UNIX] = "lsm_unix",
	[SLUICE_HOOK_CONNECT_UNIX] = "connect_unix",
	[SLUICE_HOOK_SENDMSG_UNIX] = "sendmsg_unix",
};

const char *sluice_reason_name(unsigned reason)
{
	return reason < SLUICE_REASON__MAX && reason_names[reason] ? reason_names[reason] : "unknown";
}

int sluice_reason_code(const char *name)
{
	for (unsigned r = 0; name && r < SLUICE_REASON__MAX; r++)
		if (reason_names[r] && strcmp(reason_names[r], name) == 0)
			return (int)r;
	return -1;
}

const char *sluice_hook_name(unsigned hook)
{
	return hook < SLUICE_HOOK__MAX && hook_names[hook] ? hook_names[hook] : "unknown";
}

int64_t sluice_boot_to_real_ns(void)
{
	struct timespec r, b;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_BOOTTIME, &b);
	return ((int64_t)r.tv_sec - b.tv_sec) * 1000000000LL + (r.tv_nsec - b.tv_nsec);
}

static const char *transport_name(unsigned proto, unsigned sock_type)
{
	switch (proto) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_ICMPV6: return "ipv6-icmp";
	case IPPROTO_SCTP: return "sctp";
	case IPPROTO_UDPLITE: return "udplite";
	case 262: return "mptcp";
	case IPPROTO_RAW: return "raw";
	default: return sock_type == 3 ? "raw" : "other";
	}
}

int64_t sluice_event_real_ns(const struct sluice_event *e, const struct sluice_event_meta *m)
{
	/* unsigned: defined wrap-around for any ts_ns, never signed overflow */
	return (int64_t)((uint64_t)e->ts_ns + (uint64_t)m->boot_to_real_ns);
}

bool sluice_event_is_canary(const struct sluice_event *e, const struct sluice_event_meta *m)
{
	return m->canary_pid && e->pid == m->canary_pid &&
	       strncmp((const char *)e->comm, "sluice-canary", sizeof(e->comm)) == 0;
}

/*
 * process.executable of a denial: the file pid runs when the line is
 * written, if it is still the one the kernel saw (exe_dev, exe_ino).  One
 * entry of memory, at most a second old, so that a flood from one process
 * costs one readlink.
 */
static const char *event_executable(const struct sluice_event *e)
{
	static struct sluice_exe_id last_id;
	static uint32_t last_pid;
	static struct timespec last_t;
	static char path[PATH_MAX];
	static bool have;
	struct sluice_exe_id who = { e->exe_dev, e->exe_ino };
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (e->pid == last_pid && who.dev == last_id.dev && who.ino == last_id.ino && now.tv_sec - last_t.tv_sec < 1)
		return have ? path : NULL;
	last_pid = e->pid;
	last_id = who;
	last_t = now;
	have = sluice_pid_executable((int)e->pid, &who, path, sizeof(path)) != NULL;
	return have ? path : NULL;
}

void sluice_event_fields(struct sluice_line *l, const struct sluice_event *e, const struct sluice_event_meta *m)
{
	char comm[sizeof(e->comm) + 1], ip[INET6_ADDRSTRLEN] = "", uid[16];
	int canary;
	bool would = e->verdict == SLUICE_VERDICT_WOULD_DENY;

	memcpy(comm, e->comm, sizeof(e->comm));
	comm[sizeof(e->comm)] = 0;
	canary = sluice_event_is_canary(e, m);

	SL_STR(l, "event.kind", "event");
	SL_STR(l, "event.category", "network");
	if (would)
		SL_RAW(l, "event.type", "[\"connection\",\"allowed\"]");
	else
		SL_RAW(l, "event.type", "[\"connection\",\"denied\"]");
	SL_STR(l, "event.action", canary ? "canary-denied" : would ? "egress-would-deny" : "egress-denied");
	SL_STR(l, "event.outcome", would ? "unknown" : "failure");
	SL_STR(l, "event.reason", sluice_reason_name(e->reason));
	SL_U64(l, "sluice.reason_code", e->reason);
	SL_STR(l, "sluice.verdict", would ? "would_deny" : "deny");
	if (e->pid) {
		SL_U64(l, "process.pid", e->pid);
		SL_U64(l, "process.thread.id", e->tid);
		SL_STR(l, "process.name", comm);
		if (e->exe_ino && !canary) {
			const char *exe = event_executable(e);
			char dev[24];

			/* the file itself, found or not (the process may be gone) */
			if (exe)
				SL_STR(l, "process.executable", exe);
			snprintf(dev, sizeof(dev), "%u:%u", e->exe_dev >> 20, e->exe_dev & 0xfffff);
			SL_STR(l, "sluice.executable.device", dev);
			SL_U64(l, "sluice.executable.inode", e->exe_ino);
		}
		snprintf(uid, sizeof(uid), "%u", e->uid);
		SL_STR(l, "user.id", uid);
	}
	if (e->hook == SLUICE_HOOK_LSM_UNIX || e->hook == SLUICE_HOOK_CONNECT_UNIX || e->hook == SLUICE_HOOK_SENDMSG_UNIX) {
		SL_U64(l, "sluice.socket_type", e->sock_type);
	} else if (e->hook != SLUICE_HOOK_SOCK_CREATE && e->hook != SLUICE_HOOK_LSM_CREATE) {
		if (e->family == SLUICE_AF_INET)
			inet_ntop(AF_INET, e->daddr, ip, sizeof(ip));
		else if (e->family == SLUICE_AF_INET6)
			inet_ntop(AF_INET6, e->daddr, ip, sizeof(ip));
		if (ip[0])
			SL_STR(l, "destination.ip", ip);
		SL_U64(l, "destination.port", e->dport);
	} else {
		SL_U64(l, "sluice.socket_type", e->sock_type);
		SL_U64(l, "sluice.socket_protocol", e->protocol);
		if (e->hook == SLUICE_HOOK_LSM_CREATE)
			SL_U64(l, "sluice.socket_family", e->family);
	}
	SL_STR(l, "network.transport", e->family == 1 /* AF_UNIX */ ? "unix" : transport_name(e->protocol, e->sock_type));
	SL_STR(l, "network.type", e->family == SLUICE_AF_INET6 ? "ipv6" : e->family == SLUICE_AF_INET ? "ipv4" : "other");
	SL_STR(l, "sluice.hook", sluice_hook_name(e->hook));
	SL_U64(l, "sluice.cgroup_id", e->cgroup_id);
	SL_U64(l, "sluice.socket_cookie", e->sock_cookie);
	SL_U64(l, "sluice.seq", e->seq);
	if (canary)
		SL_BOOL(l, "sluice.canary", true);
}

void sluice_event_unix_fields(struct sluice_line *l, const struct sluice_event_unix *u)
{
	/* ECS destination.address: a unix socket path, "@name" for an abstract
	 * one (cut at an embedded NUL; the name's length is in the event) */
	char name[sizeof(u->name) + 2];
	size_t n = u->len < sizeof(u->name) ? u->len : sizeof(u->name), o = 0;

	if (u->kind == SLUICE_UNIX_KIND_ABSTRACT)
		name[o++] = '@';
	memcpy(name + o, u->name, n);
	name[o + n] = 0;
	SL_STR(l, "destination.address", name);
}

int sluice_event_format(const struct sluice_event *e, const struct sluice_event_meta *m, char *buf,
			size_t len)
{
	struct sluice_line l;
	char ts[40];

	if (len < 128)
		return -1;
	sluice_line_init(&l, buf, len);
	sluice_format_time(sluice_event_real_ns(e, m), ts, sizeof(ts));
	SL_STR(&l, "@timestamp", ts);
	sluice_event_fields(&l, e, m);
	return (int)sluice_line_end(&l);
}

int sluice_lifecycle_write(struct sluice_evlog *w, const char *action, const char *message)
{
	struct sluice_line *l = sluice_evlog_begin(w, SLUICE_DS_LIFECYCLE, -1);

	SL_STR(l, "event.kind", "state");
	SL_STR(l, "event.action", action);
	SL_STR(l, "message", message);
	return sluice_evlog_commit(w);
}

void sluice_envelope_of(const struct sluice_event_meta *m, struct sluice_envelope *env)
{
	env->sandbox = m->sandbox;
	env->policy_name = m->policy_name;
	env->policy_digest = m->policy_digest;
	env->mode = m->mode ? m->mode : "enforce";
	env->container_id = m->container_id;
	env->container_name = m->container_name;
	env->container_runtime = m->container_runtime;
	env->labels = m->labels;
}

void sluice_consumer_record(struct sluice_consumer *c, const void *data, size_t size)
{
	const struct sluice_event *e = data;
	struct sluice_line *l;

	if (size < sizeof(struct sluice_event))
		return;
	if (c->skip_first) {
		c->skip_first = false;
		if (e->seq == c->skip_seq) {
			c->duplicates++;
			return;
		}
	}
	l = sluice_evlog_begin(c->log, SLUICE_DS_KERNEL, sluice_event_real_ns(e, c->meta));
	sluice_event_fields(l, e, c->meta);
	if (size >= sizeof(struct sluice_event_unix))
		sluice_event_unix_fields(l, data);
	if (sluice_event_is_canary(e, c->meta))
		c->canary++;
	else
		c->by_reason[e->reason < SLUICE_REASON__MAX ? e->reason : SLUICE_REASON__MAX]
			    [e->verdict == SLUICE_VERDICT_WOULD_DENY]++;
	/* written, or counted lost (by the writer, per dataset, and here: the
	 * denial lines alone, for denials = lines + ring losses + these) */
	if (sluice_evlog_commit(c->log) < 0)
		c->write_lost++;
	c->received++;
}

int sluice_consumer_init(struct sluice_consumer *c, struct sluice_event_ring *ring, uint32_t slot,
			 struct sluice_sandbox *sb, const struct sluice_event_meta *meta, struct sluice_evlog *log)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->sb = sb;
	c->meta = meta;
	c->log = log;
	c->slot = slot;
	err = sluice_event_ring_add(ring, slot, c);
	if (err)
		return err;
	c->ring = ring;
	return 0;
}

void sluice_consumer_skip_written(struct sluice_consumer *c, uint64_t seq)
{
	c->skip_first = true;
	c->skip_seq = seq;
}

int sluice_consumer_fd(struct sluice_consumer *c)
{
	return sluice_event_ring_fd(c->ring);
}

int sluice_consumer_drain(struct sluice_consumer *c)
{
	uint64_t before = c->received, lost;
	int err;

	err = sluice_event_ring_consume(c->ring);
	if (err < 0)
		return err;
	lost = sandbox_stat(c->sb, SLUICE_STAT_EVENTS_LOST);
	if (lost > c->lost_reported) {
		/* events lost before this point were never queued, so reporting
		 * after draining keeps lines + losses exact */
		struct sluice_line *l = sluice_evlog_begin(c->log, SLUICE_DS_KERNEL, -1);

		SL_STR(l, "event.kind", "metric");
		SL_STR(l, "event.action", "events_lost");
		SL_STR(l, "event.reason", "ring_buffer_full");
		SL_U64(l, "sluice.events_lost", lost - c->lost_reported);
		SL_U64(l, "sluice.events_lost_total", lost);
		/* kept until written: the count is never lost with the line */
		if (sluice_evlog_commit_retry(c->log) == 0)
			c->lost_reported = lost;
	}
	return (int)(c->received - before);
}

void sluice_consumer_free(struct sluice_consumer *c)
{
	if (c->ring)
		sluice_event_ring_remove(c->ring, c->slot);
	c->ring = NULL;
}
