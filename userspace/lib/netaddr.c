/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * netaddr.c - the special-purpose address ranges and the CIDR matcher
 * (see netaddr.h).  The table below is the only list of special ranges in
 * sluice: change it here, and tests/unit/netaddr_vectors.h, and every
 * component changes with it.
 */
#include "netaddr.h"
#include "policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define V4(a, b, c, d, len, cls, what) { AF_INET, { a, b, c, d }, len, cls, what }
#define V6(len, cls, what, ...) { AF_INET6, { __VA_ARGS__ }, len, cls, what }

/*
 * Most specific first: the first row that contains an address names it.
 * IPv4: the IANA IPv4 Special-Purpose Address Registry, plus multicast
 * (RFC 5771) and the metadata endpoints.  Blocks the registry marks
 * globally reachable (192.31.196.0/24, 192.52.193.0/24, 192.175.48.0/24,
 * the 192.0.0.9/.10 anycast addresses) are still special here: they are
 * IETF infrastructure, never a destination a sandbox needs.
 */
static const struct netaddr_range ranges[] = {
	V4(169, 254, 169, 254, 32, NETADDR_METADATA, "the cloud metadata service"), /* AWS, GCP, Azure, OCI, ... */
	V4(169, 254, 170, 2, 32, NETADDR_METADATA, "the cloud metadata service"),   /* AWS ECS task metadata */
	V4(100, 100, 100, 200, 32, NETADDR_METADATA, "the cloud metadata service"), /* Alibaba Cloud */
	V4(192, 0, 0, 192, 32, NETADDR_METADATA, "the cloud metadata service"),     /* Oracle Cloud (legacy) */
	V4(0, 0, 0, 0, 8, NETADDR_THIS_NETWORK, "\"this network\""),                /* RFC 791, 1122 */
	V4(10, 0, 0, 0, 8, NETADDR_PRIVATE, "a private range"),                     /* RFC 1918 */
	V4(100, 64, 0, 0, 10, NETADDR_CGNAT, "carrier-grade NAT"),                  /* RFC 6598 */
	V4(127, 0, 0, 0, 8, NETADDR_LOOPBACK, "loopback"),                          /* RFC 1122 */
	V4(169, 254, 0, 0, 16, NETADDR_LINK_LOCAL, "link-local"),                   /* RFC 3927 */
	V4(172, 16, 0, 0, 12, NETADDR_PRIVATE, "a private range"),                  /* RFC 1918 */
	V4(192, 0, 0, 0, 24, NETADDR_IETF_PROTOCOL, "IETF protocol assignments"),   /* RFC 6890; DS-Lite, PCP, TURN, NAT64 discovery */
	V4(192, 0, 2, 0, 24, NETADDR_DOCUMENTATION, "a documentation range"),       /* RFC 5737 TEST-NET-1 */
	V4(192, 31, 196, 0, 24, NETADDR_AS112, "AS112 (reverse DNS sink)"),         /* RFC 7535 AS112-v4 */
	V4(192, 52, 193, 0, 24, NETADDR_AMT, "AMT relay anycast"),                  /* RFC 7450 */
	V4(192, 88, 99, 0, 24, NETADDR_6TO4, "the 6to4 relay anycast (deprecated)"), /* RFC 3068, 7526 */
	V4(192, 168, 0, 0, 16, NETADDR_PRIVATE, "a private range"),                 /* RFC 1918 */
	V4(192, 175, 48, 0, 24, NETADDR_AS112, "AS112 (reverse DNS sink)"),         /* RFC 7534 direct delegation */
	V4(198, 18, 0, 0, 15, NETADDR_BENCHMARKING, "benchmarking"),                /* RFC 2544 */
	V4(198, 51, 100, 0, 24, NETADDR_DOCUMENTATION, "a documentation range"),    /* RFC 5737 TEST-NET-2 */
	V4(203, 0, 113, 0, 24, NETADDR_DOCUMENTATION, "a documentation range"),     /* RFC 5737 TEST-NET-3 */
	V4(224, 0, 0, 0, 4, NETADDR_MULTICAST, "multicast"),                        /* RFC 5771 */
	V4(240, 0, 0, 0, 4, NETADDR_RESERVED, "reserved and broadcast"),            /* RFC 1112, 919 (255.255.255.255) */

	/* IPv6: the IANA IPv6 Special-Purpose Address Registry, then what the
	 * IPv6 Address Space registry does not make global unicast. */
	V6(128, NETADDR_METADATA, "the cloud metadata service",                     /* AWS IMDS fd00:ec2::254 */
	   0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54),
	V6(128, NETADDR_UNSPECIFIED, "the unspecified address", 0),                 /* ::/128 RFC 4291 */
	V6(128, NETADDR_LOOPBACK, "loopback",                                       /* ::1/128 RFC 4291 */
	   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1),
	V6(96, NETADDR_SIIT, "SIIT IPv4-translated addresses",                      /* ::ffff:0:0:0/96 RFC 2765, 6145 */
	   0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff),
	V6(96, NETADDR_V4_COMPAT, "IPv4-compatible addresses (deprecated)", 0),     /* ::/96 RFC 4291 2.5.5.1 */
	V6(96, NETADDR_NAT64, "NAT64, well-known prefix", 0x00, 0x64, 0xff, 0x9b),  /* 64:ff9b::/96 RFC 6052 */
	V6(48, NETADDR_NAT64_LOCAL, "NAT64, local-use prefix",                      /* 64:ff9b:1::/48 RFC 8215 */
	   0x00, 0x64, 0xff, 0x9b, 0x00, 0x01),
	V6(64, NETADDR_DISCARD, "discard-only", 0x01, 0x00),                        /* 100::/64 RFC 6666 */
	V6(32, NETADDR_TEREDO, "Teredo", 0x20, 0x01, 0x00, 0x00),                   /* 2001::/32 RFC 4380 */
	V6(48, NETADDR_BENCHMARKING, "benchmarking", 0x20, 0x01, 0x00, 0x02),       /* 2001:2::/48 RFC 5180 */
	V6(32, NETADDR_AMT, "AMT relay anycast", 0x20, 0x01, 0x00, 0x03),           /* 2001:3::/32 RFC 7450 */
	V6(48, NETADDR_AS112, "AS112 (reverse DNS sink)",                           /* 2001:4:112::/48 RFC 7535 */
	   0x20, 0x01, 0x00, 0x04, 0x01, 0x12),
	V6(28, NETADDR_ORCHID, "ORCHID (deprecated)", 0x20, 0x01, 0x00, 0x10),      /* 2001:10::/28 RFC 4843 */
	V6(28, NETADDR_ORCHID, "ORCHIDv2", 0x20, 0x01, 0x00, 0x20),                 /* 2001:20::/28 RFC 7343 */
	V6(23, NETADDR_IETF_PROTOCOL, "IETF protocol assignments", 0x20, 0x01),     /* 2001::/23 RFC 2928 */
	V6(32, NETADDR_DOCUMENTATION, "a documentation range", 0x20, 0x01, 0x0d, 0xb8), /* 2001:db8::/32 RFC 3849 */
	V6(16, NETADDR_6TO4, "6to4", 0x20, 0x02),                                   /* 2002::/16 RFC 3056, 7526 */
	V6(48, NETADDR_AS112, "AS112 (reverse DNS sink)",                           /* 2620:4f:8000::/48 RFC 7534 */
	   0x26, 0x20, 0x00, 0x4f, 0x80, 0x00),
	V6(20, NETADDR_DOCUMENTATION, "a documentation range", 0x3f, 0xff),         /* 3fff::/20 RFC 9637 */
	V6(16, NETADDR_SRV6_SID, "SRv6 segment identifiers", 0x5f, 0x00),          /* 5f00::/16 RFC 9602 */
	V6(7, NETADDR_ULA, "a unique-local range", 0xfc),                           /* fc00::/7 RFC 4193 */
	V6(10, NETADDR_LINK_LOCAL, "link-local", 0xfe, 0x80),                       /* fe80::/10 RFC 4291 */
	V6(10, NETADDR_SITE_LOCAL, "site-local (deprecated)", 0xfe, 0xc0),          /* fec0::/10 RFC 3879 */
	V6(8, NETADDR_MULTICAST, "multicast", 0xff),                                /* ff00::/8 RFC 4291 */
	/* Outside 2000::/3 (IANA IPv6 Address Space: "Reserved by IETF"),
	 * e.g. 64:ff9c::/96 or 4000::1: never global unicast today. */
	V6(3, NETADDR_NOT_GLOBAL_UNICAST, "space reserved by the IETF", 0x00),
	V6(2, NETADDR_NOT_GLOBAL_UNICAST, "space reserved by the IETF", 0x40),
	V6(1, NETADDR_NOT_GLOBAL_UNICAST, "space reserved by the IETF", 0x80),
};

static const char *const class_names[NETADDR_N_CLASSES] = {
	[NETADDR_PUBLIC] = NULL,
	[NETADDR_METADATA] = "metadata",
	[NETADDR_THIS_NETWORK] = "this_network",
	[NETADDR_PRIVATE] = "private",
	[NETADDR_CGNAT] = "cgnat",
	[NETADDR_LOOPBACK] = "loopback",
	[NETADDR_LINK_LOCAL] = "link_local",
	[NETADDR_IETF_PROTOCOL] = "ietf_protocol",
	[NETADDR_DOCUMENTATION] = "documentation",
	[NETADDR_AS112] = "as112",
	[NETADDR_AMT] = "amt",
	[NETADDR_6TO4] = "6to4",
	[NETADDR_BENCHMARKING] = "benchmarking",
	[NETADDR_MULTICAST] = "multicast",
	[NETADDR_RESERVED] = "reserved",
	[NETADDR_UNSPECIFIED] = "unspecified",
	[NETADDR_V4_COMPAT] = "v4_compat",
	[NETADDR_SIIT] = "siit",
	[NETADDR_NAT64] = "nat64",
	[NETADDR_NAT64_LOCAL] = "nat64_local",
	[NETADDR_DISCARD] = "discard",
	[NETADDR_TEREDO] = "teredo",
	[NETADDR_ORCHID] = "orchid",
	[NETADDR_SRV6_SID] = "srv6_sid",
	[NETADDR_ULA] = "ula",
	[NETADDR_SITE_LOCAL] = "site_local",
	[NETADDR_NOT_GLOBAL_UNICAST] = "not_global_unicast",
	[NETADDR_UNKNOWN_FAMILY] = "unknown_family",
};

const char *netaddr_class_name(enum netaddr_class cls)
{
	if ((unsigned)cls >= NETADDR_N_CLASSES)
		return "?";
	return class_names[cls];
}

const struct netaddr_range *netaddr_ranges(size_t *n)
{
	*n = sizeof(ranges) / sizeof(ranges[0]);
	return ranges;
}

bool netaddr_prefix_match(const uint8_t *a, const uint8_t *prefix, unsigned prefix_len)
{
	unsigned full = prefix_len / 8, rest = prefix_len % 8;

	if (memcmp(a, prefix, full) != 0)
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));

		if ((a[full] & mask) != (prefix[full] & mask))
			return false;
	}
	return true;
}

bool netaddr_prefix_overlap(const uint8_t *a, unsigned alen, const uint8_t *b, unsigned blen)
{
	return netaddr_prefix_match(a, b, alen < blen ? alen : blen);
}

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool netaddr_is_v4mapped(const uint8_t *a6)
{
	return memcmp(a6, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0;
}

int netaddr_unmap(int family, const uint8_t *addr, const uint8_t **out)
{
	*out = addr;
	if (family == AF_INET6 && netaddr_is_v4mapped(addr)) {
		*out = addr + 12;
		return AF_INET;
	}
	return family;
}

static enum netaddr_class lookup(int family, const uint8_t *a)
{
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (ranges[i].family == family && netaddr_prefix_match(a, ranges[i].addr, ranges[i].prefix_len))
			return ranges[i].cls;
	return NETADDR_PUBLIC;
}

/* Where an IPv6 form of category `cls` carries an IPv4 address, into v4. */
static bool embedded_v4(enum netaddr_class cls, const uint8_t *a6, uint8_t v4[4])
{
	switch (cls) {
	case NETADDR_V4_COMPAT:     /* ::a.b.c.d */
	case NETADDR_SIIT:          /* ::ffff:0:a.b.c.d */
	case NETADDR_NAT64:         /* 64:ff9b::a.b.c.d (RFC 6052 2.2, /96) */
	case NETADDR_NAT64_LOCAL:   /* 64:ff9b:1:...:a.b.c.d, assuming a /96 network-specific
				       prefix, the usual deployment; the verdict never depends on it */
		memcpy(v4, a6 + 12, 4);
		return true;
	case NETADDR_6TO4:          /* 2002:AABB:CCDD::/48 (RFC 3056 2) */
		memcpy(v4, a6 + 2, 4);
		return true;
	case NETADDR_TEREDO:        /* client address in the last 32 bits, inverted (RFC 4380 4) */
		for (int i = 0; i < 4; i++)
			v4[i] = (uint8_t)~a6[12 + i];
		return true;
	default:
		return false;
	}
}

bool netaddr_classify(int family, const uint8_t *addr, struct netaddr_info *info)
{
	struct netaddr_info tmp;
	const uint8_t *a;

	if (!info)
		info = &tmp;
	memset(info, 0, sizeof(*info));
	family = netaddr_unmap(family, addr, &a);
	if (family != AF_INET && family != AF_INET6)
		info->cls = NETADDR_UNKNOWN_FAMILY;
	else
		info->cls = lookup(family, a);
	if (family == AF_INET6 && embedded_v4(info->cls, a, info->v4)) {
		info->embeds_v4 = true;
		info->v4_cls = lookup(AF_INET, info->v4);
	}
	info->name = netaddr_class_name(info->cls);
	return info->cls != NETADDR_PUBLIC;
}

int netaddr_cidr_parse(const char *s, struct netaddr_cidr *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned maxlen, plen;

	memset(out, 0, sizeof(*out));
	if (alen == 0 || alen >= sizeof(buf))
		return -1;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		maxlen = 32;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		maxlen = 128;
	} else {
		return -1;
	}
	plen = maxlen;
	if (slash) {
		char *end;
		unsigned long v;

		if (slash[1] < '0' || slash[1] > '9')
			return -1;
		v = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || v > maxlen)
			return -1;
		plen = (unsigned)v;
	}
	for (unsigned bit = plen; bit < maxlen; bit++)
		if (out->addr[bit / 8] & (0x80 >> (bit % 8)))
			return -1;
	if (out->family == AF_INET6 && plen >= 96 && netaddr_is_v4mapped(out->addr)) {
		/* ::ffff:a.b.c.d/n is the IPv4 prefix a.b.c.d/(n-96) */
		memmove(out->addr, out->addr + 12, 4);
		memset(out->addr + 4, 0, 12);
		out->family = AF_INET;
		plen -= 96;
	}
	out->prefix_len = (uint8_t)plen;
	return 0;
}

bool netaddr_in_prefix(int cfamily, const uint8_t *caddr, unsigned prefix_len,
		       int family, const uint8_t *addr)
{
	const uint8_t *a;

	family = netaddr_unmap(family, addr, &a);
	if (family != cfamily || (family != AF_INET && family != AF_INET6))
		return false;
	if (prefix_len > (family == AF_INET ? 32u : 128u))
		return false;
	return netaddr_prefix_match(a, caddr, prefix_len);
}

bool netaddr_cidr_contains(const struct netaddr_cidr *c, int family, const uint8_t *addr)
{
	return netaddr_in_prefix(c->family, c->addr, c->prefix_len, family, addr);
}

bool sluice_entry_cidr_contains(const struct sluice_entry *e, int family, const uint8_t *addr)
{
	return e->kind == SLUICE_ENTRY_CIDR && !sluice_entry_expired(e, -1) &&
	       netaddr_in_prefix(e->family, e->addr, e->prefix_len, family, addr);
}

const char *netaddr_refusal(int family, const uint8_t *addr, const struct netaddr_cidr *allow, size_t n)
{
	struct netaddr_info info;

	if (!netaddr_classify(family, addr, &info))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (netaddr_cidr_contains(&allow[i], family, addr))
			return NULL;
	return info.name;
}
