/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * addr.h - address helpers of the proxy: which upstream addresses may be
 * dialed (special-purpose ranges are refused: the classifier and the CIDR
 * matcher are userspace/lib/netaddr.h) and sockaddr formatting for logs.
 * Pure functions, no I/O.
 */
#ifndef SLUICE_PROXY_ADDR_H
#define SLUICE_PROXY_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "netaddr.h"

/*
 * May the proxy dial `addr` (family, network byte order)?  True for a
 * public address, or for a special one (netaddr_classify()) inside one of
 * the `n` --allow-private-upstream CIDRs.  Sets *why (may be NULL) to the
 * category name ("private", "nat64", ...) when refusing, else NULL.  The
 * caller also lets a tcp cidr entry of the policy through
 * (proxy_policy_cidr_allows()).
 */
bool proxy_addr_dialable(int family, const uint8_t *addr,
			 const struct netaddr_cidr *allow, size_t n, const char **why);

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
