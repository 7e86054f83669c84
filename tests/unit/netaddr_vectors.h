/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * netaddr_vectors.h - the peer address vectors: one table of addresses and
 * the category every component must give them (userspace/lib/netaddr.c's
 * classifier, the proxy's dial check, the resolver's answer check, the
 * `policy check` lint).  tests/unit/test_netaddr.c feeds each row to each
 * of them.  A new special range is a row here first.
 *
 * Unit tests only: no traffic is sent to any of these addresses.
 */
#ifndef SLUICE_TEST_NETADDR_VECTORS_H
#define SLUICE_TEST_NETADDR_VECTORS_H

#include <stdbool.h>

struct netaddr_vector {
	const char *addr;   /* inet_pton(3) text, IPv4 or IPv6 */
	const char *name;   /* expected category name, NULL: public (dialled, answered) */
	const char *v4;     /* the IPv4 address an IPv6 form embeds, or NULL */
};

static const struct netaddr_vector netaddr_vectors[] = {
	/* public */
	{ "8.8.8.8", NULL, NULL },
	{ "1.1.1.1", NULL, NULL },
	{ "93.184.216.34", NULL, NULL },
	{ "11.0.0.1", NULL, NULL },
	{ "172.32.0.1", NULL, NULL },             /* just past 172.16.0.0/12 */
	{ "172.15.255.255", NULL, NULL },         /* just before it */
	{ "100.128.0.1", NULL, NULL },            /* just past 100.64.0.0/10 */
	{ "192.0.1.1", NULL, NULL },              /* between 192.0.0.0/24 and 192.0.2.0/24 */
	{ "192.0.3.1", NULL, NULL },
	{ "198.20.0.1", NULL, NULL },             /* just past 198.18.0.0/15 */
	{ "223.255.255.255", NULL, NULL },        /* just before multicast */
	{ "::ffff:8.8.8.8", NULL, NULL },         /* v4-mapped: the IPv4 address itself */
	{ "::ffff:1.1.1.1", NULL, NULL },
	{ "2606:4700::1111", NULL, NULL },
	{ "2001:4860:4860::8888", NULL, NULL },
	{ "2001:200::1", NULL, NULL },            /* just past 2001::/23 */
	{ "2a00:1450::1", NULL, NULL },
	{ "3fff:1000::1", NULL, NULL },           /* just past 3fff::/20 */

	/* IPv4 special-purpose registry, and metadata */
	{ "0.0.0.0", "this_network", NULL },
	{ "0.1.2.3", "this_network", NULL },
	{ "10.0.0.1", "private", NULL },
	{ "10.255.0.1", "private", NULL },
	{ "172.16.0.1", "private", NULL },
	{ "172.31.255.255", "private", NULL },
	{ "192.168.0.1", "private", NULL },
	{ "192.168.1.1", "private", NULL },
	{ "100.64.0.1", "cgnat", NULL },
	{ "100.127.255.255", "cgnat", NULL },
	{ "127.0.0.1", "loopback", NULL },
	{ "127.0.0.53", "loopback", NULL },
	{ "127.255.0.9", "loopback", NULL },
	{ "169.254.1.1", "link_local", NULL },
	{ "169.254.169.254", "metadata", NULL },
	{ "169.254.170.2", "metadata", NULL },
	{ "100.100.100.200", "metadata", NULL },
	{ "192.0.0.192", "metadata", NULL },      /* was missing in the proxy */
	{ "192.0.0.1", "ietf_protocol", NULL },
	{ "192.0.0.9", "ietf_protocol", NULL },   /* PCP anycast */
	{ "192.0.0.170", "ietf_protocol", NULL }, /* NAT64 discovery */
	{ "192.0.2.1", "documentation", NULL },
	{ "192.0.2.10", "documentation", NULL },
	{ "198.51.100.1", "documentation", NULL },
	{ "203.0.113.1", "documentation", NULL },
	{ "203.0.113.9", "documentation", NULL },
	{ "192.31.196.1", "as112", NULL },        /* was missing in the proxy */
	{ "192.52.193.1", "amt", NULL },          /* was missing in the proxy */
	{ "192.175.48.1", "as112", NULL },        /* was missing in the proxy */
	{ "192.88.99.1", "6to4", NULL },
	{ "198.18.0.1", "benchmarking", NULL },
	{ "198.19.255.255", "benchmarking", NULL },
	{ "224.0.0.1", "multicast", NULL },
	{ "239.255.255.250", "multicast", NULL },
	{ "240.0.0.1", "reserved", NULL },
	{ "255.255.255.255", "reserved", NULL },

	/* v4-mapped: exactly the IPv4 verdict */
	{ "::ffff:10.0.0.1", "private", NULL },
	{ "::ffff:127.0.0.1", "loopback", NULL },
	{ "::ffff:169.254.169.254", "metadata", NULL },
	{ "::ffff:192.0.0.192", "metadata", NULL },
	{ "::ffff:192.0.2.1", "documentation", NULL },
	{ "::ffff:192.31.196.1", "as112", NULL },
	{ "::ffff:0.0.0.0", "this_network", NULL },

	/* IPv6 special-purpose registry */
	{ "::", "unspecified", NULL },
	{ "::1", "loopback", NULL },
	{ "fd00:ec2::254", "metadata", NULL },
	{ "100::1", "discard", NULL },
	{ "2001:1::1", "ietf_protocol", NULL },   /* PCP anycast */
	{ "2001:30::1", "ietf_protocol", NULL },  /* DETs, inside 2001::/23 */
	{ "2001:1ff::1", "ietf_protocol", NULL },
	{ "2001:2::1", "benchmarking", NULL },
	{ "2001:3::1", "amt", NULL },             /* was passed by the resolver */
	{ "2001:4:112::1", "as112", NULL },       /* was passed by the resolver */
	{ "2001:10::1", "orchid", NULL },
	{ "2001:20::1", "orchid", NULL },
	{ "2001:db8::1", "documentation", NULL },
	{ "2001:db8:5::1", "documentation", NULL },
	{ "3fff::1", "documentation", NULL },
	{ "3fff:fff::1", "documentation", NULL },
	{ "2620:4f:8000::1", "as112", NULL },
	{ "5f00::1", "srv6_sid", NULL },
	{ "fc00::1", "ula", NULL },
	{ "fd12:3456::1", "ula", NULL },
	{ "fe80::1", "link_local", NULL },
	{ "febf::1", "link_local", NULL },
	{ "fec0::1", "site_local", NULL },
	{ "ff02::1", "multicast", NULL },
	{ "4000::1", "not_global_unicast", NULL },
	{ "8000::1", "not_global_unicast", NULL },
	{ "1000::1", "not_global_unicast", NULL },
	{ "::1:0:0:1", "not_global_unicast", NULL },
	{ "64:ff9c::a00:1", "not_global_unicast", NULL },   /* was passed by the resolver */
	{ "64:ff9c::808:808", "not_global_unicast", NULL }, /* not in the registry: outside 2000::/3 */

	/* IPv6 forms that embed an IPv4 address: special whatever they carry */
	{ "::10.0.0.1", "v4_compat", "10.0.0.1" },
	{ "::127.0.0.1", "v4_compat", "127.0.0.1" },
	{ "::8.8.8.8", "v4_compat", "8.8.8.8" },
	{ "::0.0.0.2", "v4_compat", "0.0.0.2" },
	{ "::ffff:0:a00:1", "siit", "10.0.0.1" },          /* was passed by the resolver */
	{ "::ffff:0:7f00:1", "siit", "127.0.0.1" },        /* was passed by the resolver */
	{ "::ffff:0:808:808", "siit", "8.8.8.8" },
	{ "::ffff:0:c000:201", "siit", "192.0.2.1" },
	{ "64:ff9b::a00:1", "nat64", "10.0.0.1" },
	{ "64:ff9b::7f00:1", "nat64", "127.0.0.1" },
	{ "64:ff9b::a9fe:a9fe", "nat64", "169.254.169.254" },
	{ "64:ff9b::808:808", "nat64", "8.8.8.8" },
	{ "64:ff9b::1.2.3.4", "nat64", "1.2.3.4" },
	{ "64:ff9b::c000:201", "nat64", "192.0.2.1" },
	{ "64:ff9b:1::a00:1", "nat64_local", "10.0.0.1" },
	{ "64:ff9b:1:ffff::808:808", "nat64_local", "8.8.8.8" },
	{ "2002:a00:1::1", "6to4", "10.0.0.1" },
	{ "2002:7f00:1::1", "6to4", "127.0.0.1" },
	{ "2002:808:808::1", "6to4", "8.8.8.8" },
	{ "2002:c000:204::1", "6to4", "192.0.2.4" },
	/* Teredo: server 65.54.227.120, client address inverted in the last 32 bits */
	{ "2001:0:4136:e378:8000:63bf:f5ff:fffe", "teredo", "10.0.0.1" },
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", "teredo", "127.0.0.1" },
	{ "2001:0:4136:e378:8000:63bf:f7f7:f7f7", "teredo", "8.8.8.8" },
	{ "2001::1", "teredo", "255.255.255.254" },
};

/* A hatch (--allow-private-upstream / --allow-private-answers, or a cidr
 * entry of the policy) and whether it lets `addr` through. */
struct netaddr_hatch_vector {
	const char *addr;
	const char *cidr;
	bool allowed;
};

static const struct netaddr_hatch_vector netaddr_hatch_vectors[] = {
	{ "192.0.2.10", "192.0.2.0/24", true },
	{ "::ffff:192.0.2.10", "192.0.2.0/24", true },
	{ "192.0.2.10", "::ffff:192.0.2.0/120", true },   /* a v4-mapped prefix is the IPv4 one */
	{ "::ffff:192.0.2.10", "::ffff:192.0.2.0/120", true },
	{ "2001:db8:5::1", "2001:db8::/32", true },
	{ "10.0.0.1", "0.0.0.0/0", true },
	{ "127.0.0.1", "192.0.2.0/24", false },
	{ "192.0.3.1", "192.0.2.0/24", true },            /* public anyway */
	{ "64:ff9b::c000:20a", "192.0.2.0/24", false },   /* NAT64 form of a hatched address */
	{ "::ffff:0:c000:20a", "192.0.2.0/24", false },   /* SIIT form */
	{ "2002:c000:20a::1", "192.0.2.0/24", false },    /* 6to4 form */
	{ "::192.0.2.10", "192.0.2.0/24", false },        /* v4-compatible form */
	{ "::ffff:10.0.0.1", "::/0", false },             /* an IPv6 prefix never holds v4-mapped */
	{ "10.0.0.1", "::/0", false },
	{ "fd00::1", "::/0", true },
	{ "2001:db8::1", "192.0.2.0/24", false },
	{ "192.0.2.10", "2001:db8::/32", false },
};

#endif
