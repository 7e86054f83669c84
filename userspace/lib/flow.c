/* SPDX-License-Identifier: BSD-2-Clause */
#include "flow.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "evlog.h"
#include "log.h"
#include "netaddr.h"

int sluice_flow_open(const char *path)
{
	int fd = bpf_obj_get(path);

	if (fd < 0) {
		/* libbpf returns -errno and sets errno (libbpf 1.x) */
		if (errno == 0)
			errno = -fd;
		return -1;
	}
	return fd;
}

int sluice_flow_key(const struct sockaddr *peer, uint64_t netns_cookie,
		   struct sluice_flow_key *key)
{
	memset(key, 0, sizeof(*key));
	key->netns_cookie = netns_cookie;
	if (peer->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)peer;

		key->family = SLUICE_AF_INET;
		memcpy(&key->saddr[0], &in->sin_addr, 4);
		key->sport = ntohs(in->sin_port);
		return 0;
	}
	if (peer->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)peer;

		if (netaddr_is_v4mapped(in6->sin6_addr.s6_addr)) {
			key->family = SLUICE_AF_INET;
			memcpy(&key->saddr[0], in6->sin6_addr.s6_addr + 12, 4);
		} else {
			key->family = SLUICE_AF_INET6;
			memcpy(key->saddr, in6->sin6_addr.s6_addr, 16);
		}
		key->sport = ntohs(in6->sin6_port);
		return 0;
	}
	return -1;
}

int sluice_flow_key_of_fd(int fd, struct sluice_flow_key *key)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint64_t cookie = 0;
	socklen_t cl = sizeof(cookie);

	memset(&ss, 0, sizeof(ss));
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &cl) < 0)
		return -1;
	if (sluice_flow_key((struct sockaddr *)&ss, cookie, key) < 0) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	return 0;
}

int sluice_flow_take(int map_fd, const struct sluice_flow_key *key, struct sluice_orig *out)
{
	int err;

	if (bpf_map_lookup_elem(map_fd, key, out) < 0) {
		err = errno;
		return err ? -err : -ENOENT;
	}
	/* Used once: a later connection reusing the port gets its own entry.
	 * A failed delete only leaves a stale entry for the sweep. */
	(void)bpf_map_delete_elem(map_fd, key);
	return 0;
}

int sluice_flow_udp_lookup(int map_fd, const struct sockaddr *peer, struct sluice_orig *out)
{
	struct sluice_flow_key key;

	if (sluice_flow_key(peer, 0, &key) < 0)
		return -EAFNOSUPPORT;
	key.protocol = SLUICE_FLOW_UDP;
	if (bpf_map_lookup_elem(map_fd, &key, out) < 0)
		return errno ? -errno : -ENOENT;
	return 0;
}

#define SWEEP_BATCH 4096

int sluice_flow_sweep(int map_fd, bool dns, uint64_t now_ns, uint64_t max_age_ns)
{
	static struct sluice_flow_key old[SWEEP_BATCH];
	struct sluice_flow_key key, next;
	struct sluice_orig o;
	size_t n = 0;
	int removed = 0;
	bool first = true;

	/* collect first, delete after: deleting the key a walk stands on
	 * restarts a hash map's walk from its first bucket */
	while (n < SWEEP_BATCH && bpf_map_get_next_key(map_fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(map_fd, &key, &o) < 0)
			continue;   /* taken meanwhile */
		if (dns != (key.protocol == SLUICE_FLOW_UDP || (o.flags & SLUICE_ORIG_DNS)))
			continue;
		if (o.ts_ns < now_ns && now_ns - o.ts_ns > max_age_ns)
			old[n++] = key;
	}
	if (first && errno != ENOENT)
		return -errno;
	for (size_t i = 0; i < n; i++)
		removed += bpf_map_delete_elem(map_fd, &old[i]) == 0;
	return removed;
}

struct sweeper {
	int map_fd;
	bool dns;
};

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
	const struct sweeper *sw = arg;
	struct timespec ts;
	int n;

	(void)fd;
	(void)what;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return;
	n = sluice_flow_sweep(sw->map_fd, sw->dns, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
			      SLUICE_FLOW_MAX_AGE_NS);
	if (n > 0)
		log_debug("flow map: %d entries no one took, removed", n);
}

struct event *sluice_flow_sweeper(struct event_base *base, int map_fd, bool dns)
{
	static struct sweeper sw;   /* one flow map a process */
	const struct timeval every = { .tv_sec = SLUICE_FLOW_SWEEP_SEC };
	struct event *ev;

	sw.map_fd = map_fd;
	sw.dns = dns;
	ev = event_new(base, -1, EV_PERSIST, on_sweep, &sw);
	if (!ev || event_add(ev, &every) < 0) {
		if (ev)
			event_free(ev);
		errno = ENOMEM;
		return NULL;
	}
	return ev;
}

void sluice_flow_put_orig(struct sluice_line *l, const struct sluice_orig *o, const char *exe)
{
	char ip[INET6_ADDRSTRLEN] = "", uid[24];
	char comm[sizeof(o->comm) + 1];
	size_t n;

	if (!inet_ntop(o->family == SLUICE_AF_INET6 ? AF_INET6 : AF_INET, o->daddr, ip, sizeof(ip)))
		ip[0] = '\0';
	if (ip[0])
		SL_STR(l, "sluice.orig_dst.ip", ip);
	SL_U64(l, "sluice.orig_dst.port", o->dport);
	SL_U64(l, "sluice.cgroup_id", o->cgroup_id);
	if (!o->pid)
		return;
	SL_I64(l, "process.pid", o->pid);
	memcpy(comm, o->comm, sizeof(o->comm));
	comm[sizeof(o->comm)] = '\0';
	if (comm[0])
		SL_STR(l, "process.name", comm);
	if (exe)
		SL_STR(l, "process.executable", exe);
	if (o->exe_ino) {
		char dev[24];

		snprintf(dev, sizeof(dev), "%u:%u", o->exe_dev >> 20, o->exe_dev & 0xfffff);
		SL_STR(l, "sluice.executable.device", dev);
		SL_U64(l, "sluice.executable.inode", o->exe_ino);
	}
	n = sluice_u64_dec(uid, o->uid);
	uid[n] = '\0';
	SL_STR(l, "user.id", uid);
}
