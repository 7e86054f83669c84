/* SPDX-License-Identifier: BSD-2-Clause */
#include "events.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "jsonstr.h"
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

void sluice_format_time(int64_t real_ns, char *buf, size_t len)
{
	/* floor division, so that times before 1970 keep usec in 0..999999 */
	int64_t sec = real_ns / 1000000000LL, rem = real_ns % 1000000000LL;
	time_t t;
	long usec;
	struct tm tm;

	if (rem < 0) {
		rem += 1000000000LL;
		sec--;
	}
	t = (time_t)sec;
	usec = (long)(rem / 1000);
	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm)); /* out of range: 1900-01-00, never garbage */
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
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

/* Take a finished json object, print it compactly into buf, free it. */
static int finish(json_object *o, char *buf, size_t len)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	int ret = -1;

	if (n < len) {
		memcpy(buf, s, n + 1);
		ret = (int)n;
	}
	json_object_put(o);
	return ret;
}

static void add_common(json_object *o, int64_t real_ns, const struct sluice_event_meta *m)
{
	char ts[40];

	sluice_format_time(real_ns, ts, sizeof(ts));
	json_object_object_add(o, "@timestamp", json_object_new_string(ts));
	json_object_object_add(o, "sluice.sandbox", sluice_json_string(m->sandbox));
	json_object_object_add(o, "sluice.policy_name", sluice_json_string(m->policy_name));
	json_object_object_add(o, "rule.ruleset", sluice_json_string(m->policy_digest));
	json_object_object_add(o, "sluice.policy_sha256", sluice_json_string(m->policy_digest));
	json_object_object_add(o, "sluice.mode", sluice_json_string(m->mode ? m->mode : "enforce"));
}

/*
 * A bounded JSON line builder for the hot path (one line per denial; a
 * flood makes millions).  json-c cost about 9 us per event here (allocation
 * per key; bench/ scenario 3 profile), more than the consumer can afford;
 * this writes straight into the caller's buffer.  Strings go through
 * jb_str(), which escapes as RFC 8259 requires and replaces bytes that are
 * not well-formed UTF-8 with U+FFFD (sluice_utf8_seq_len), like
 * sluice_json_string() does for the json-c paths.
 */
struct jb {
	char *p;
	size_t len, cap;
	bool over;
};

static void jb_raw(struct jb *b, const char *s, size_t n)
{
	if (b->over || b->len + n >= b->cap) {
		b->over = true;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* `n` bytes of `s` as a JSON string (NUL bytes escaped like any control byte). */
static void jb_strn(struct jb *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;

	jb_raw(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];

		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };

			jb_raw(b, esc, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			jb_raw(b, esc, 6);
			i++;
		} else if (c < 0x80) {
			jb_raw(b, (const char *)&u[i], 1);
			i++;
		} else {
			size_t l = sluice_utf8_seq_len(u + i, n - i);

			if (l == 0) {
				jb_raw(b, "\xef\xbf\xbd", 3); /* U+FFFD */
				i++;
			} else {
				jb_raw(b, (const char *)&u[i], l);
				i += l;
			}
		}
	}
	jb_raw(b, "\"", 1);
}

static void jb_str(struct jb *b, const char *s)
{
	jb_strn(b, s ? s : "", s ? strlen(s) : 0);
}

/* ,"key": (the first key of a line has no comma) */
static void jb_key(struct jb *b, const char *k)
{
	jb_raw(b, b->len > 1 ? ",\"" : "\"", b->len > 1 ? 2 : 1);
	jb_raw(b, k, strlen(k));
	jb_raw(b, "\":", 2);
}

static void jb_kv_str(struct jb *b, const char *k, const char *v)
{
	jb_key(b, k);
	jb_str(b, v);
}

static void jb_kv_u64(struct jb *b, const char *k, uint64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%llu", (unsigned long long)v);

	jb_key(b, k);
	jb_raw(b, num, (size_t)n);
}

/* The line of event `e`; `u`, when not NULL, is the same record with the
 * unix name (hooks connect_unix, sendmsg_unix). */
static int format_event(const struct sluice_event *e, const struct sluice_event_unix *u,
			const struct sluice_event_meta *m, char *buf, size_t len)
{
	struct jb b = { .p = buf, .cap = len };
	char comm[sizeof(e->comm) + 1], ip[INET6_ADDRSTRLEN] = "", uid[16], ts[40];
	int canary;
	bool would = e->verdict == SLUICE_VERDICT_WOULD_DENY;

	if (len == 0)
		return -1;
	memcpy(comm, e->comm, sizeof(e->comm));
	comm[sizeof(e->comm)] = 0;
	canary = m->canary_pid && e->pid == m->canary_pid && strcmp(comm, "sluice-canary") == 0;

	/* unsigned: defined wrap-around for any ts_ns, never signed overflow */
	sluice_format_time((int64_t)((uint64_t)e->ts_ns + (uint64_t)m->boot_to_real_ns), ts, sizeof(ts));
	jb_raw(&b, "{", 1);
	jb_kv_str(&b, "@timestamp", ts);
	jb_kv_str(&b, "sluice.sandbox", m->sandbox);
	jb_kv_str(&b, "sluice.policy_name", m->policy_name);
	jb_kv_str(&b, "rule.ruleset", m->policy_digest);
	jb_kv_str(&b, "sluice.policy_sha256", m->policy_digest);
	jb_kv_str(&b, "sluice.mode", m->mode ? m->mode : "enforce");
	jb_kv_str(&b, "event.kind", "event");
	jb_kv_str(&b, "event.category", "network");
	jb_kv_str(&b, "event.action", canary ? "canary-denied" : would ? "egress-would-deny" : "egress-denied");
	jb_kv_str(&b, "event.outcome", would ? "unknown" : "failure");
	jb_kv_str(&b, "event.reason", sluice_reason_name(e->reason));
	jb_kv_u64(&b, "sluice.reason_code", e->reason);
	jb_kv_str(&b, "sluice.verdict", would ? "would_deny" : "deny");
	if (e->pid) {
		jb_kv_u64(&b, "process.pid", e->pid);
		jb_kv_u64(&b, "process.thread.id", e->tid);
		jb_kv_str(&b, "process.name", comm);
		snprintf(uid, sizeof(uid), "%u", e->uid);
		jb_kv_str(&b, "user.id", uid);
	}
	if (u) {
		/* ECS destination.address: a unix socket path; "@name" for an abstract one */
		char name[sizeof(u->name) + 2];
		size_t n = u->len < sizeof(u->name) ? u->len : sizeof(u->name);
		size_t o = 0;

		if (u->kind == SLUICE_UNIX_KIND_ABSTRACT)
			name[o++] = '@';
		memcpy(name + o, u->name, n);
		name[o + n] = 0;
		jb_key(&b, "destination.address");
		jb_strn(&b, name, o + n);
		jb_kv_u64(&b, "sluice.socket_type", e->sock_type);
	} else if (e->hook == SLUICE_HOOK_LSM_UNIX || e->hook == SLUICE_HOOK_CONNECT_UNIX ||
		   e->hook == SLUICE_HOOK_SENDMSG_UNIX) {
		jb_kv_u64(&b, "sluice.socket_type", e->sock_type);
	} else if (e->hook != SLUICE_HOOK_SOCK_CREATE && e->hook != SLUICE_HOOK_LSM_CREATE) {
		if (e->family == SLUICE_AF_INET)
			inet_ntop(AF_INET, e->daddr, ip, sizeof(ip));
		else if (e->family == SLUICE_AF_INET6)
			inet_ntop(AF_INET6, e->daddr, ip, sizeof(ip));
		if (ip[0])
			jb_kv_str(&b, "destination.ip", ip);
		jb_kv_u64(&b, "destination.port", e->dport);
	} else {
		jb_kv_u64(&b, "sluice.socket_type", e->sock_type);
		jb_kv_u64(&b, "sluice.socket_protocol", e->protocol);
		if (e->hook == SLUICE_HOOK_LSM_CREATE)
			jb_kv_u64(&b, "sluice.socket_family", e->family);
	}
	jb_kv_str(&b, "network.transport", e->family == 1 /* AF_UNIX */ ? "unix" : transport_name(e->protocol, e->sock_type));
	jb_kv_str(&b, "network.type", e->family == SLUICE_AF_INET6 ? "ipv6" : e->family == SLUICE_AF_INET ? "ipv4" : "other");
	jb_kv_str(&b, "sluice.hook", sluice_hook_name(e->hook));
	jb_kv_u64(&b, "sluice.cgroup_id", e->cgroup_id);
	jb_kv_u64(&b, "sluice.socket_cookie", e->sock_cookie);
	jb_kv_u64(&b, "sluice.seq", e->seq);
	if (canary) {
		jb_key(&b, "sluice.canary");
		jb_raw(&b, "true", 4);
	}
	jb_raw(&b, "}", 1);
	if (b.over)
		return -1;
	buf[b.len] = 0;
	return (int)b.len;
}

int sluice_event_format(const struct sluice_event *e, const struct sluice_event_meta *m, char *buf,
			size_t len)
{
	return format_event(e, NULL, m, buf, len);
}

int sluice_unix_event_format(const struct sluice_event_unix *u, const struct sluice_event_meta *m, char *buf,
			     size_t len)
{
	return format_event(&u->ev, u, m, buf, len);
}

int sluice_events_lost_format(uint64_t count, uint64_t total, const struct sluice_event_meta *m,
			      char *buf, size_t len)
{
	json_object *o = json_object_new_object();
	struct timespec r;

	clock_gettime(CLOCK_REALTIME, &r);
	add_common(o, (int64_t)r.tv_sec * 1000000000LL + r.tv_nsec, m);
	json_object_object_add(o, "event.kind", json_object_new_string("metric"));
	json_object_object_add(o, "event.action", json_object_new_string("events_lost"));
	json_object_object_add(o, "event.reason", json_object_new_string("ring_buffer_full"));
	json_object_object_add(o, "sluice.events_lost", json_object_new_uint64(count));
	json_object_object_add(o, "sluice.events_lost_total", json_object_new_uint64(total));
	return finish(o, buf, len);
}

int sluice_lifecycle_format(const char *action, const char *message, const struct sluice_event_meta *m,
			    char *buf, size_t len)
{
	json_object *o = json_object_new_object();
	struct timespec r;

	clock_gettime(CLOCK_REALTIME, &r);
	add_common(o, (int64_t)r.tv_sec * 1000000000LL + r.tv_nsec, m);
	json_object_object_add(o, "event.kind", json_object_new_string("state"));
	json_object_object_add(o, "event.action", json_object_new_string(action));
	if (m->profile) {
		char id[16];

		json_object_object_add(o, "sluice.profile", json_object_new_string(m->profile));
		json_object_object_add(o, "user.name", sluice_json_string(m->user_name ? m->user_name : ""));
		snprintf(id, sizeof(id), "%u", m->uid);
		json_object_object_add(o, "user.id", json_object_new_string(id));
		snprintf(id, sizeof(id), "%u", m->gid);
		json_object_object_add(o, "group.id", json_object_new_string(id));
		json_object_object_add(o, "sluice.landlock_abi", json_object_new_int(m->landlock_abi));
	}
	if (message)
		json_object_object_add(o, "message", sluice_json_string(message));
	return finish(o, buf, len);
}

int sluice_syscall_denied_format(const char *syscall, uint32_t pid, uint64_t count, const struct sluice_event_meta *m,
				 char *buf, size_t len)
{
	json_object *o = json_object_new_object();
	struct timespec r;

	clock_gettime(CLOCK_REALTIME, &r);
	add_common(o, (int64_t)r.tv_sec * 1000000000LL + r.tv_nsec, m);
	json_object_object_add(o, "event.kind", json_object_new_string("event"));
	json_object_object_add(o, "event.category", json_object_new_string("process"));
	json_object_object_add(o, "event.action", json_object_new_string("syscall-denied"));
	json_object_object_add(o, "event.outcome", json_object_new_string("failure"));
	json_object_object_add(o, "event.reason", json_object_new_string("seccomp_baseline"));
	json_object_object_add(o, "process.pid", json_object_new_int64(pid));
	json_object_object_add(o, "sluice.syscall", sluice_json_string(syscall));
	json_object_object_add(o, "sluice.syscalls_denied", json_object_new_uint64(count));
	return finish(o, buf, len);
}

int sluice_write_line(int fd, const char *line, size_t len)
{
	struct iovec iov[2] = { { .iov_base = (void *)line, .iov_len = len }, { .iov_base = "\n", .iov_len = 1 } };
	ssize_t w;

	do {
		w = writev(fd, iov, 2);
	} while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	return (size_t)w == len + 1 ? 0 : -EIO;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct sluice_consumer *c = ctx;
	char line[2048];
	int n;

	if (size < sizeof(struct sluice_event))
		return 0;
	n = size >= sizeof(struct sluice_event_unix) ? sluice_unix_event_format(data, c->meta, line, sizeof(line))
						     : sluice_event_format(data, c->meta, line, sizeof(line));
	if (n < 0)
		return 0;
	sluice_write_line(c->out_fd, line, (size_t)n);
	c->received++;
	return 0;
}

int sluice_consumer_init(struct sluice_consumer *c, struct sluice_sandbox *sb,
			 const struct sluice_event_meta *meta, int out_fd)
{
	memset(c, 0, sizeof(*c));
	c->sb = sb;
	c->meta = meta;
	c->out_fd = out_fd;
	c->rb = ring_buffer__new(sandbox_events_fd(sb), on_event, c, NULL);
	if (!c->rb)
		return -errno;
	return 0;
}

int sluice_consumer_fd(struct sluice_consumer *c)
{
	return ring_buffer__epoll_fd(c->rb);
}

int sluice_consumer_drain(struct sluice_consumer *c)
{
	uint64_t before = c->received, lost;
	int err;

	/* libbpf 1.1 can miss a wakeup: callers poll with a timeout and we
	 * always consume, whether or not epoll said so. */
	err = ring_buffer__consume(c->rb);
	if (err < 0 && err != -EINTR)
		return err;
	lost = sandbox_stat(c->sb, SLUICE_STAT_EVENTS_LOST);
	if (lost > c->lost_reported) {
		char line[1024];

		/* events lost before this point were never queued, so reporting
		 * after draining keeps lines + losses exact */
		int n = sluice_events_lost_format(lost - c->lost_reported, lost, c->meta, line, sizeof(line));

		if (n > 0)
			sluice_write_line(c->out_fd, line, (size_t)n);
		c->lost_reported = lost;
	}
	return (int)(c->received - before);
}

void sluice_consumer_free(struct sluice_consumer *c)
{
	ring_buffer__free(c->rb);
	c->rb = NULL;
}
