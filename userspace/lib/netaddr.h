/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * netaddr.h - the one special-purpose address classifier of sluice, and the
 * one CIDR matcher.  The proxy (which upstream addresses it dials), the
 * resolver (which answer addresses it passes on), `sluice policy check`
 * (which cidr entries reach special ranges), `suggest` and the loader's map
 * writer all call this; nothing else keeps a range table.
 *
 * Addresses are byte arrays in network byte order: IPv4 in addr[0..3]
 * (family AF_INET), IPv6 in addr[0..15] (AF_INET6).  An IPv4-mapped IPv6
 * address (::ffff:a.b.c.d, RFC 4291 2.5.5.2) is the IPv4 address on the
 * wire (a dual-stack socket dials the IPv4 host), so it is classified and
 * matched as that IPv4 address, as the kernel program does
 * (bpf/sluice.h).  Other IPv6 forms that embed an IPv4 address (v4-
 * compatible, SIIT, NAT64, 6to4, Teredo) are special in themselves: they
 * are refused whatever IPv4 address they carry, which is decoded and
 * reported (struct netaddr_info).
 *
 * Sources: the IANA IPv4 and IPv6 Special-Purpose Address Registries
 * (RFC 6890, last updated 2024-10-22 for IPv6), the IANA IPv6 Address
 * Space registry (only 2000::/3 is global unicast), RFC 5771 / 4291
 * (multicast), RFC 3879 (site-local), and the cloud metadata endpoints.
 * Pure functions, no I/O, no allocation.
 */
#ifndef SLUICE_NETADDR_H
#define SLUICE_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The category of an address.  Every category but NETADDR_PUBLIC is
 * "special": never dialled by the proxy, never passed on in an answer by
 * the resolver (unless a test hatch or a cidr entry of the policy names it).
 * Values are not part of any wire format; the names are (logs, events).
 */
enum netaddr_class {
	NETADDR_PUBLIC = 0,        /* globally reachable unicast */
	NETADDR_METADATA,          /* "metadata": cloud instance metadata services */
	NETADDR_THIS_NETWORK,      /* "this_network": 0.0.0.0/8 (RFC 791, 1122) */
	NETADDR_PRIVATE,           /* "private": RFC 1918 */
	NETADDR_CGNAT,             /* "cgnat": 100.64.0.0/10 (RFC 6598) */
	NETADDR_LOOPBACK,          /* "loopback": 127.0.0.0/8, ::1 */
	NETADDR_LINK_LOCAL,        /* "link_local": 169.254.0.0/16, fe80::/10 */
	NETADDR_IETF_PROTOCOL,     /* "ietf_protocol": 192.0.0.0/24, 2001::/23 */
	NETADDR_DOCUMENTATION,     /* "documentation": RFC 5737, 3849, 9637 */
	NETADDR_AS112,             /* "as112": RFC 7534, 7535 */
	NETADDR_AMT,               /* "amt": RFC 7450 */
	NETADDR_6TO4,              /* "6to4": 2002::/16 and its relay 192.88.99.0/24 (RFC 3056, 7526) */
	NETADDR_BENCHMARKING,      /* "benchmarking": RFC 2544, 5180 */
	NETADDR_MULTICAST,         /* "multicast": 224.0.0.0/4, ff00::/8 */
	NETADDR_RESERVED,          /* "reserved": 240.0.0.0/4, incl. 255.255.255.255 */
	NETADDR_UNSPECIFIED,       /* "unspecified": ::/128 */
	NETADDR_V4_COMPAT,         /* "v4_compat": ::/96, deprecated (RFC 4291 2.5.5.1) */
	NETADDR_SIIT,              /* "siit": ::ffff:0:0:0/96, IPv4-translated (RFC 2765, 6145) */
	NETADDR_NAT64,             /* "nat64": 64:ff9b::/96 well-known prefix (RFC 6052) */
	NETADDR_NAT64_LOCAL,       /* "nat64_local": 64:ff9b:1::/48 local-use (RFC 8215) */
	NETADDR_DISCARD,           /* "discard": 100::/64 (RFC 6666) */
	NETADDR_TEREDO,            /* "teredo": 2001::/32 (RFC 4380) */
	NETADDR_ORCHID,            /* "orchid": 2001:10::/28, 2001:20::/28 (RFC 4843, 7343) */
	NETADDR_SRV6_SID,          /* "srv6_sid": 5f00::/16 (RFC 9602) */
	NETADDR_ULA,               /* "ula": fc00::/7 (RFC 4193) */
	NETADDR_SITE_LOCAL,        /* "site_local": fec0::/10, deprecated (RFC 3879) */
	NETADDR_NOT_GLOBAL_UNICAST,/* "not_global_unicast": outside 2000::/3, reserved by the IETF */
	NETADDR_UNKNOWN_FAMILY,    /* "unknown_family": neither AF_INET nor AF_INET6 */
	NETADDR_N_CLASSES
};

/* What netaddr_classify() found out about one address. */
struct netaddr_info {
	enum netaddr_class cls;    /* the most specific range the address is in */
	const char *name;          /* stable short name of cls ("private", ...); NULL when public */
	bool embeds_v4;            /* v4_compat, siit, nat64, nat64_local, 6to4 (IPv6) or teredo */
	uint8_t v4[4];             /* the embedded IPv4 address (Teredo: the client's, de-obfuscated) */
	enum netaddr_class v4_cls; /* its own category (for the log and the lint message) */
};

/*
 * Classify `addr` (family AF_INET or AF_INET6, network byte order).  A
 * v4-mapped IPv6 address is classified as its IPv4 address.  Fills *info
 * (may be NULL) and returns true if the address is special: private or
 * otherwise non-public, never dialled by the proxy, never answered by the
 * resolver.  An unknown family is special (NETADDR_UNKNOWN_FAMILY).
 */
bool netaddr_classify(int family, const uint8_t *addr, struct netaddr_info *info);

/* Stable short name of a category ("private", "nat64", ...); NULL for
 * NETADDR_PUBLIC, "?" out of range. */
const char *netaddr_class_name(enum netaddr_class cls);

/* One row of the range table: a prefix and its category. */
struct netaddr_range {
	int family;                /* AF_INET or AF_INET6 */
	uint8_t addr[16];          /* network byte order, host bits zero */
	uint8_t prefix_len;
	enum netaddr_class cls;
	const char *what;          /* for people: "a private range", "NAT64 (well-known prefix)" */
};

/*
 * The table itself, most specific rows first (the first row containing an
 * address names it), for callers that judge prefixes rather than addresses
 * (the lint: which special ranges does a cidr entry overlap).  The v4-mapped
 * space has no row: it is the IPv4 table.  Sets *n; never NULL.
 */
const struct netaddr_range *netaddr_ranges(size_t *n);

/* --- v4-mapped and prefixes ----------------------------------------------- */

/* Is the 16-byte IPv6 address `a6` v4-mapped (::ffff:0:0/96)? */
bool netaddr_is_v4mapped(const uint8_t *a6);

/*
 * Reduce a v4-mapped IPv6 address to IPv4: returns AF_INET and points *out
 * at addr + 12 for ::ffff:a.b.c.d; otherwise returns `family` and *out =
 * addr.
 */
int netaddr_unmap(int family, const uint8_t *addr, const uint8_t **out);

/* Do the first `prefix_len` bits of `a` and `prefix` agree?  (Byte arrays,
 * network order, at least ceil(prefix_len / 8) bytes each.) */
bool netaddr_prefix_match(const uint8_t *a, const uint8_t *prefix, unsigned prefix_len);

/* Do prefixes (a, alen) and (b, blen) share any address (one contains the
 * other)? */
bool netaddr_prefix_overlap(const uint8_t *a, unsigned alen, const uint8_t *b, unsigned blen);

/* --- CIDRs (the test hatches, cidr entries) ------------------------------- */

/* One CIDR: family AF_INET/AF_INET6, address in network byte order (IPv4
 * in addr[0..3]), host bits zero.  Same layout as a cidr entry's fields. */
struct netaddr_cidr {
	int family;
	uint8_t addr[16];
	uint8_t prefix_len;
};

/*
 * Parse "a.b.c.d/n", "x:y::/n" or a bare address (a host prefix), as
 * inet_pton(3) reads addresses.  A v4-mapped prefix ::ffff:a.b.c.d/n
 * (n >= 96) becomes the IPv4 prefix a.b.c.d/(n-96).  Returns 0, or -1 on a
 * syntax error, a prefix out of range or host bits set ("10.0.0.1/8" is a
 * typo, not a range).
 */
int netaddr_cidr_parse(const char *s, struct netaddr_cidr *out);

/*
 * Is `addr` (family, network byte order) inside the prefix (cfamily, caddr,
 * prefix_len)?  The one CIDR matcher: a v4-mapped address is matched as its
 * IPv4 address, families must then be equal, so an IPv6 prefix such as ::/0
 * never contains an IPv4 or v4-mapped address (as in the kernel's maps).
 */
bool netaddr_in_prefix(int cfamily, const uint8_t *caddr, unsigned prefix_len,
		       int family, const uint8_t *addr);

/* netaddr_in_prefix() for a struct netaddr_cidr. */
bool netaddr_cidr_contains(const struct netaddr_cidr *c, int family, const uint8_t *addr);

/*
 * The shared part of the proxy's and the resolver's address check: NULL if
 * `addr` is public or inside one of the `n` hatch CIDRs `allow` (may be NULL
 * when n is 0), else the name of its category.  Callers add what their own
 * decision allows besides (cidr entries of the policy).
 */
const char *netaddr_refusal(int family, const uint8_t *addr, const struct netaddr_cidr *allow, size_t n);

#endif /* SLUICE_NETADDR_H */
