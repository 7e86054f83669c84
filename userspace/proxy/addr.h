/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * addr.h - address helpers of the proxy: which upstream addresses may be
 * dialed (special-purpose ranges are refused), CIDR lists for the test-only
 * --allow-private-upstream hatch, and sockaddr formatting for logs.
 * Pure functions, no I/O.
 */
#ifndef SLUICE_PROXY_ADDR_H
#define SLUICE_PROXY_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* One CIDR: family AF_INET/AF_INET6, address in network byte order. */
struct proxy_cidr {
	int family;
	uint8_t addr[16];
	uint8_t prefix;
};

/*
 * Parse "a.b.c.d/n", "x:y::/n", or a bare address (a host prefix).  Host
 * bits must be zero.  IPv4 uses addr[0..3].  Returns 0, or -1 on a syntax
 * error, a prefix out of range or host bits set.
 */
int proxy_cidr_parse(const char *s, struct proxy_cidr *out);

/* Is `addr` (family, network byte order) inside `c`?  Families must match;
 * an IPv4-mapped IPv6 address is compared as IPv4. */
bool proxy_cidr_contains(const struct proxy_cidr *c, int family, const uint8_t *addr);

/*
 * Which special-purpose range (RFC 6890 and successors) `addr` is in:
 * returns a stable short name ("loopback", "private", "link_local",
 * "cgnat", "metadata", "multicast", "documentation", "nat64", "6to4",
 * "teredo", "ula", ...) or NULL for a public unicast address.
 * Documentation ranges are special (they are reserved, never public).
 * IPv4-mapped IPv6 (::ffff:a.b.c.d) is classified as the IPv4 address.
 */
const char *proxy_addr_special(int family, const uint8_t *addr);

/*
 * May the proxy dial `addr`?  True for a public address, or for a special
 * one inside one of the `n` hatch CIDRs.  Sets *why (may be NULL) to the
 * range name when refusing.
 */
bool proxy_addr_dialable(int family, const uint8_t *addr,
			 const struct proxy_cidr *allow, size_t n, const char **why);

/*
 * Format a sockaddr (AF_INET/AF_INET6) as address text into ip (at least
 * INET6_ADDRSTRLEN bytes) and the port in host order into *port.  A
 * v4-mapped IPv6 address is printed as IPv4.  Returns 0 or -1.
 */
int proxy_sockaddr_str(const struct sockaddr *sa, char *ip, size_t iplen, uint16_t *port);

/* "ip:port" or "[ip6]:port" into buf.  Returns buf. */
const char *proxy_hostport_str(int family, const uint8_t *addr, uint16_t port,
			       char *buf, size_t len);

#endif
