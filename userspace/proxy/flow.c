/* SPDX-License-Identifier: BSD-2-Clause */
#include "flow.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "netaddr.h"

int proxy_flow_open(const char *path)
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

int proxy_flow_key(const struct sockaddr *peer, uint64_t netns_cookie,
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

int proxy_flow_key_of_fd(int fd, struct sluice_flow_key *key)
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
	if (proxy_flow_key((struct sockaddr *)&ss, cookie, key) < 0) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	return 0;
}

int proxy_flow_take(int map_fd, const struct sluice_flow_key *key, struct sluice_orig *out)
{
	int err;

	if (bpf_map_lookup_elem(map_fd, key, out) < 0) {
		err = errno;
		return err ? -err : -ENOENT;
	}
	/* Used once: a later connection reusing the port gets its own entry.
	 * A failed delete only leaves a stale entry for the LRU to evict. */
	(void)bpf_map_delete_elem(map_fd, key);
	return 0;
}
