/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * netrange.c - which answer addresses are not public: the special-purpose
 * ranges of RFC 6890 and the IANA IPv4/IPv6 special-purpose address
 * registries, plus cloud metadata addresses.  An answer in one of them is
 * dropped unless --allow-private-answers or a cidr entry allows it, so that
 * an allowed name cannot be used to reach the host's or the cloud's inside
 * (DNS rebinding).  The documentation ranges count as non-public too.
 */
#include "resolver.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct range {
	uint8_t addr[16];
	uint8_t plen;
	const char *name;
};

/* More specific ranges first: the first match names the class. */
static const struct range v4_ranges[] = {
	{ { 169, 254, 169, 254 }, 32, "metadata" },     /* AWS, GCP, Azure, OCI, ... */
	{ { 169, 254, 170, 2 }, 32, "metadata" },       /* AWS ECS task metadata */
	{ { 100, 100, 100, 200 }, 32, "metadata" },     /* Alibaba Cloud */
	{ { 192, 0, 0, 192 }, 32, "metadata" },         /* Oracle Cloud (legacy) */
	{ { 0, 0, 0, 0 }, 8, "unspecified" },           /* RFC 1122 "this network" */
	{ { 10, 0, 0, 0 }, 8, "private" },              /* RFC 1918 */
	{ { 100, 64, 0, 0 }, 10, "cgnat" },             /* RFC 6598 */
	{ { 127, 0, 0, 0 }, 8, "loopback" },            /* RFC 1122 */
	{ { 169, 254, 0, 0 }, 16, "link_local" },       /* RFC 3927 */
	{ { 172, 16, 0, 0 }, 12, "private" },           /* RFC 1918 */
	{ { 192, 0, 0, 0 }, 24, "reserved" },           /* RFC 6890 IETF protocol assignments */
	{ { 192, 0, 2, 0 }, 24, "documentation" },      /* RFC 5737 TEST-NET-1 */
	{ { 192, 31, 196, 0 }, 24, "reserved" },        /* RFC 7535 AS112-v4 */
	{ { 192, 52, 193, 0 }, 24, "reserved" },        /* RFC 7450 AMT */
	{ { 192, 88, 99, 0 }, 24, "6to4" },             /* RFC 3068 6to4 relay anycast */
	{ { 192, 168, 0, 0 }, 16, "private" },          /* RFC 1918 */
	{ { 192, 175, 48, 0 }, 24, "reserved" },        /* RFC 7534 direct delegation AS112 */
	{ { 198, 18, 0, 0 }, 15, "benchmarking" },      /* RFC 2544 */
	{ { 198, 51, 100, 0 }, 24, "documentation" },   /* RFC 5737 TEST-NET-2 */
	{ { 203, 0, 113, 0 }, 24, "documentation" },    /* RFC 5737 TEST-NET-3 */
	{ { 224, 0, 0, 0 }, 4, "multicast" },           /* RFC 5771 */
	{ { 240, 0, 0, 0 }, 4, "reserved" },            /* RFC 1112, incl. 255.255.255.255 */
};

#define V6(...) { __VA_ARGS__ }
static const struct range v6_ranges[] = {
	{ V6(0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54), 128, "metadata" }, /* AWS IMDS fd00:ec2::254 */
	{ V6(0), 128, "unspecified" },                                       /* ::/128 */
	{ V6(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1), 128, "loopback" }, /* ::1/128 */
	{ V6(0), 96, "v4_compat" },                                          /* ::/96 deprecated, RFC 4291 */
	{ V6(0x00, 0x64, 0xff, 0x9b), 96, "nat64" },                         /* 64:ff9b::/96 RFC 6052 */
	{ V6(0x00, 0x64, 0xff, 0x9b, 0x00, 0x01), 48, "nat64" },             /* 64:ff9b:1::/48 RFC 8215 */
	{ V6(0x01, 0x00), 64, "reserved" },                                  /* 100::/64 discard, RFC 6666 */
	{ V6(0x20, 0x01, 0x00, 0x00), 32, "teredo" },                        /* 2001::/32 RFC 4380 */
	{ V6(0x20, 0x01, 0x00, 0x02, 0x00, 0x00), 48, "benchmarking" },      /* 2001:2::/48 RFC 5180 */
	{ V6(0x20, 0x01, 0x00, 0x10), 28, "reserved" },                      /* 2001:10::/28 ORCHID */
	{ V6(0x20, 0x01, 0x00, 0x20), 28, "reserved" },                      /* 2001:20::/28 ORCHIDv2 */
	{ V6(0x20, 0x01, 0x0d, 0xb8), 32, "documentation" },                 /* 2001:db8::/32 RFC 3849 */
	{ V6(0x20, 0x02), 16, "6to4" },                                      /* 2002::/16 RFC 3056 */
	{ V6(0x3f, 0xff, 0x00, 0x00), 20, "documentation" },                 /* 3fff::/20 RFC 9637 */
	{ V6(0xfc, 0x00), 7, "ula" },                                        /* fc00::/7 RFC 4193 */
	{ V6(0xfe, 0x80), 10, "link_local" },                                /* fe80::/10 */
	{ V6(0xfe, 0xc0), 10, "reserved" },                                  /* fec0::/10 site-local, RFC 3879 */
	{ V6(0xff, 0x00), 8, "multicast" },                                  /* ff00::/8 */
};

static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned plen)
{
	unsigned bytes = plen / 8, bits = plen % 8;

	if (memcmp(a, b, bytes) != 0)
		return false;
	if (bits) {
		uint8_t mask = (uint8_t)(0xff << (8 - bits));

		if ((a[bytes] & mask) != (b[bytes] & mask))
			return false;
	}
	return true;
}

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

const char *rsv_addr_special(int family, const uint8_t *addr)
{
	size_t i;

	if (family == AF_INET6 && memcmp(addr, v4mapped_prefix, 12) == 0)
		return rsv_addr_special(AF_INET, addr + 12);
	if (family == AF_INET) {
		for (i = 0; i < sizeof(v4_ranges) / sizeof(v4_ranges[0]); i++)
			if (prefix_eq(addr, v4_ranges[i].addr, v4_ranges[i].plen))
				return v4_ranges[i].name;
		return NULL;
	}
	if (family == AF_INET6) {
		for (i = 0; i < sizeof(v6_ranges) / sizeof(v6_ranges[0]); i++)
			if (prefix_eq(addr, v6_ranges[i].addr, v6_ranges[i].plen))
				return v6_ranges[i].name;
		return NULL;
	}
	return "unknown_family";
}

bool rsv_cidr_contains(const struct rsv_cidr *c, int family, const uint8_t *addr)
{
	if (family == AF_INET6 && c->family == AF_INET && memcmp(addr, v4mapped_prefix, 12) == 0)
		return prefix_eq(addr + 12, c->addr, c->plen);
	if (c->family != family)
		return false;
	return prefix_eq(addr, c->addr, c->plen);
}

int rsv_cidr_parse(const char *s, struct rsv_cidr *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned maxlen, plen, i;

	if (alen == 0 || alen >= sizeof(buf))
		return -1;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	memset(out, 0, sizeof(*out));
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
	out->plen = (uint8_t)plen;
	/* host bits must be zero: "10.0.0.1/8" is a typo, not a range */
	for (i = plen; i < maxlen; i++)
		if (out->addr[i / 8] & (0x80 >> (i % 8)))
			return -1;
	return 0;
}

bool rsv_answer_addr_ok(const struct rsv_ctx *ctx, int family, const uint8_t *addr, const char **why)
{
	const char *cls = rsv_addr_special(family, addr);
	size_t i;

	if (why)
		*why = cls;
	if (!cls)
		return true;
	for (i = 0; i < ctx->n_allow_private; i++)
		if (rsv_cidr_contains(&ctx->allow_private[i], family, addr))
			goto allowed;
	if (ctx->policy) {
		for (i = 0; i < ctx->policy->n_entries; i++) {
			const struct sluice_entry *e = &ctx->policy->entries[i];
			struct rsv_cidr c;

			if (e->kind != SLUICE_ENTRY_CIDR)
				continue;
			c.family = e->family;
			memcpy(c.addr, e->addr, sizeof(c.addr));
			c.plen = e->prefix_len;
			if (rsv_cidr_contains(&c, family, addr))
				goto allowed;
		}
	}
	return false;
allowed:
	if (why)
		*why = NULL;
	return true;
}
