/* SPDX-License-Identifier: BSD-2-Clause */
#include "addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct special_range {
	int family;
	uint8_t addr[16];
	uint8_t prefix;
	const char *name;
};

/*
 * Most specific first: the first containing range names the address.
 * Sources: RFC 6890 (special-purpose registries), RFC 6598 (CGNAT),
 * RFC 5737 / 3849 / 9637 (documentation), RFC 6052 / 8215 (NAT64),
 * RFC 3056 / 7526 (6to4), RFC 4380 (Teredo), cloud metadata endpoints.
 */
static const struct special_range special_ranges[] = {
	{ AF_INET, { 169, 254, 169, 254 }, 32, "metadata" },   /* AWS, GCP, Azure, ... */
	{ AF_INET, { 169, 254, 170, 2 }, 32, "metadata" },     /* ECS task metadata */
	{ AF_INET, { 100, 100, 100, 200 }, 32, "metadata" },   /* Alibaba */
	{ AF_INET, { 0 }, 8, "this_network" },
	{ AF_INET, { 10 }, 8, "private" },
	{ AF_INET, { 100, 64 }, 10, "cgnat" },
	{ AF_INET, { 127 }, 8, "loopback" },
	{ AF_INET, { 169, 254 }, 16, "link_local" },
	{ AF_INET, { 172, 16 }, 12, "private" },
	{ AF_INET, { 192, 0, 0 }, 24, "ietf_protocol" },
	{ AF_INET, { 192, 0, 2 }, 24, "documentation" },
	{ AF_INET, { 192, 88, 99 }, 24, "6to4" },               /* 6to4 relay anycast */
	{ AF_INET, { 192, 168 }, 16, "private" },
	{ AF_INET, { 198, 18 }, 15, "benchmarking" },
	{ AF_INET, { 198, 51, 100 }, 24, "documentation" },
	{ AF_INET, { 203, 0, 113 }, 24, "documentation" },
	{ AF_INET, { 224 }, 4, "multicast" },
	{ AF_INET, { 240 }, 4, "reserved" },                     /* includes 255.255.255.255 */

	{ AF_INET6, { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54 }, 128, "metadata" }, /* fd00:ec2::254 */
	{ AF_INET6, { 0 }, 128, "unspecified" },
	{ AF_INET6, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 128, "loopback" },
	{ AF_INET6, { 0 }, 96, "v4_compat" },              /* ::/96, deprecated */
	{ AF_INET6, { 0, 0x64, 0xff, 0x9b }, 96, "nat64" },      /* 64:ff9b::/96 */
	{ AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, "nat64" },/* 64:ff9b:1::/48 */
	{ AF_INET6, { 0x01, 0x00 }, 64, "discard" },             /* 100::/64 */
	{ AF_INET6, { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation" },
	{ AF_INET6, { 0x20, 0x01, 0x00, 0x00 }, 32, "teredo" },
	{ AF_INET6, { 0x20, 0x01, 0x00, 0x00 }, 23, "ietf_protocol" },
	{ AF_INET6, { 0x20, 0x02 }, 16, "6to4" },
	{ AF_INET6, { 0x3f, 0xff }, 20, "documentation" },      /* 3fff::/20 */
	{ AF_INET6, { 0xfc }, 7, "ula" },
	{ AF_INET6, { 0xfe, 0x80 }, 10, "link_local" },
	{ AF_INET6, { 0xfe, 0xc0 }, 10, "site_local" },
	{ AF_INET6, { 0xff }, 8, "multicast" },
};

static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));
		if ((a[full] & mask) != (b[full] & mask))
			return false;
	}
	return true;
}

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* Reduce ::ffff:a.b.c.d to IPv4; returns the family to use and sets *a. */
static int unmap(int family, const uint8_t *addr, const uint8_t **a)
{
	*a = addr;
	if (family == AF_INET6 && memcmp(addr, v4mapped_prefix, 12) == 0) {
		*a = addr + 12;
		return AF_INET;
	}
	return family;
}

int proxy_cidr_parse(const char *s, struct proxy_cidr *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long prefix;
	char *end;

	memset(out, 0, sizeof(*out));
	if (alen == 0 || alen >= sizeof(buf))
		return -1;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, out->addr) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, out->addr) == 1)
		out->family = AF_INET6;
	else
		return -1;

	prefix = out->family == AF_INET ? 32 : 128;
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9')
			return -1;
		prefix = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || prefix > (out->family == AF_INET ? 32u : 128u))
			return -1;
	}
	out->prefix = (uint8_t)prefix;

	/* host bits must be zero */
	for (unsigned bit = out->prefix; bit < (out->family == AF_INET ? 32u : 128u); bit++)
		if (out->addr[bit / 8] & (0x80 >> (bit % 8)))
			return -1;
	return 0;
}

bool proxy_cidr_contains(const struct proxy_cidr *c, int family, const uint8_t *addr)
{
	const uint8_t *a;

	family = unmap(family, addr, &a);
	if (family != c->family)
		return false;
	return prefix_eq(a, c->addr, c->prefix);
}

const char *proxy_addr_special(int family, const uint8_t *addr)
{
	const uint8_t *a;

	family = unmap(family, addr, &a);
	for (size_t i = 0; i < sizeof(special_ranges) / sizeof(special_ranges[0]); i++) {
		const struct special_range *r = &special_ranges[i];

		if (r->family == family && prefix_eq(a, r->addr, r->prefix))
			return r->name;
	}
	if (family == AF_INET6 && (a[0] & 0xe0) != 0x20)
		return "not_global_unicast";   /* outside 2000::/3 */
	if (family != AF_INET && family != AF_INET6)
		return "unknown_family";
	return NULL;
}

bool proxy_addr_dialable(int family, const uint8_t *addr,
			 const struct proxy_cidr *allow, size_t n, const char **why)
{
	const char *special = proxy_addr_special(family, addr);

	if (why)
		*why = special;
	if (!special)
		return true;
	for (size_t i = 0; i < n; i++)
		if (proxy_cidr_contains(&allow[i], family, addr))
			return true;
	return false;
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

		if (memcmp(a, v4mapped_prefix, 12) == 0) {
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

	family = unmap(family, addr, &a);
	if (!inet_ntop(family, a, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	if (family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", ip, port);
	else
		snprintf(buf, len, "%s:%u", ip, port);
	return buf;
}
