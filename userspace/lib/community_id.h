/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * community_id.h - Community ID Flow Hashing, version 1
 * (https://github.com/corelight/community-id-spec): a flow's endpoints and
 * protocol hashed into a string such as "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
 * the same for both directions, so that a sluice line can be joined with
 * what Zeek, Suricata, Packetbeat or Elasticsearch's community_id processor
 * say about the same flow (ECS `network.community_id`).
 */
#ifndef SLUICE_COMMUNITY_ID_H
#define SLUICE_COMMUNITY_ID_H

#include <stddef.h>
#include <stdint.h>

/* "1:" + base64 of a 20-byte SHA-1 = 30 bytes, NUL included: 31 */
#define SLUICE_COMMUNITY_ID_LEN 32

/*
 * Community ID v1 of a flow.  family: AF_INET (saddr/daddr 4 bytes) or
 * AF_INET6 (16 bytes), network byte order.  proto: the IP protocol number
 * (6 TCP, 17 UDP, 132 SCTP, ...).  sport, dport: host byte order; for TCP,
 * UDP and SCTP the ports, for ICMP/ICMPv6 the type and the code (or
 * counter-type) as the spec maps them; for other protocols ignored (the
 * hash has no ports).  seed: 0 unless the operator chose one (host byte
 * order).  Writes the NUL-terminated ID to out (len >= SLUICE_COMMUNITY_ID_LEN).
 * Returns 0, or -1 for an unknown family, a short buffer or a SHA-1 failure
 * (OpenSSL's EVP; out is then "").
 */
int sluice_community_id(int family, const void *saddr, const void *daddr, uint16_t sport, uint16_t dport,
			uint8_t proto, uint16_t seed, char *out, size_t len);

/*
 * The same from the text forms a line carries: ip as inet_pton(3) reads it
 * (IPv4 or IPv6; both the same family), transport as ECS network.transport
 * names it ("tcp", "udp", "sctp").  Returns 0, or -1 when an address does
 * not parse, the families differ or the transport is not one of those.
 */
int sluice_community_id_text(const char *sip, int sport, const char *dip, int dport, const char *transport,
			     char *out, size_t len);

#endif
