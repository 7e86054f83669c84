/* SPDX-License-Identifier: BSD-2-Clause */
#include "addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

bool proxy_addr_dialable(int family, const uint8_t *addr,
			 const struct netaddr_cidr *allow, size_t n, const char **why)
{
	const char *refusal = netaddr_refusal(family, addr, allow, n);

	if (why)
		*why = refusal;
	return refusal == NULL;
}

int proxy_sockaddr_str(const struct sockaddr *sa, char *ip, size_t iplen, uint16_t *port)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		if (!inet_ntop(AF_INET, &in->sin_addr, ip, (socklen_t)iplen))
			return -1;
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		const uint8_t *a = in6->sin6_addr.s6_addr;

		if (netaddr_is_v4mapped(a)) {
			if (!inet_ntop(AF_INET, a + 12, ip, (socklen_t)iplen))
				return -1;
		} else if (!inet_ntop(AF_INET6, a, ip, (socklen_t)iplen)) {
			return -1;
		}
		*port = ntohs(in6->sin6_port);
		return 0;
	}
	return -1;
}

const char *proxy_hostport_str(int family, const uint8_t *addr, uint16_t port,
			       char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	const uint8_t *a;

	family = netaddr_unmap(family, addr, &a);
	if (!inet_ntop(family, a, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	if (family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", ip, port);
	else
		snprintf(buf, len, "%s:%u", ip, port);
	return buf;
}
