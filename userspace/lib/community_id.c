/* SPDX-License-Identifier: BSD-2-Clause */
#include "community_id.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/evp.h>

/* The protocols whose hash includes the two ports (the spec's "TCP / UDP /
 * SCTP" and the ICMP mapping); any other is hashed on addresses alone. */
static int has_ports(uint8_t proto)
{
	return proto == 6 || proto == 17 || proto == 132 || proto == 1 || proto == 58;
}

int sluice_community_id(int family, const void *saddr, const void *daddr, uint16_t sport, uint16_t dport,
			uint8_t proto, uint16_t seed, char *out, size_t len)
{
	/* seed(2) saddr(16) daddr(16) proto(1) pad(1) sport(2) dport(2) */
	unsigned char in[40], md[EVP_MAX_MD_SIZE];
	const unsigned char *a = saddr, *b = daddr;
	size_t alen, n = 0;
	unsigned mdlen = 0;
	int cmp;

	if (len < SLUICE_COMMUNITY_ID_LEN)
		return -1;
	out[0] = '\0';
	if (family == AF_INET)
		alen = 4;
	else if (family == AF_INET6)
		alen = 16;
	else
		return -1;
	if (!has_ports(proto))
		sport = dport = 0;
	/* no direction: the smaller address (then port) first */
	cmp = memcmp(a, b, alen);
	if (cmp > 0 || (cmp == 0 && sport > dport)) {
		const unsigned char *t = a;
		uint16_t tp = sport;

		a = b;
		b = t;
		sport = dport;
		dport = tp;
	}
	in[n++] = (unsigned char)(seed >> 8);
	in[n++] = (unsigned char)seed;
	memcpy(in + n, a, alen);
	n += alen;
	memcpy(in + n, b, alen);
	n += alen;
	in[n++] = proto;
	in[n++] = 0;
	if (has_ports(proto)) {
		in[n++] = (unsigned char)(sport >> 8);
		in[n++] = (unsigned char)sport;
		in[n++] = (unsigned char)(dport >> 8);
		in[n++] = (unsigned char)dport;
	}
	if (EVP_Digest(in, n, md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != 20)
		return -1;
	memcpy(out, "1:", 2);
	/* 20 bytes -> 28 characters and a NUL */
	if (EVP_EncodeBlock((unsigned char *)out + 2, md, (int)mdlen) != 28) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

int sluice_community_id_text(const char *sip, int sport, const char *dip, int dport, const char *transport,
			     char *out, size_t len)
{
	unsigned char s[16], d[16];
	int fam;
	uint8_t proto;

	if (len)
		out[0] = '\0';
	if (!sip || !dip || !transport || sport < 0 || sport > 65535 || dport < 0 || dport > 65535)
		return -1;
	if (strcmp(transport, "tcp") == 0)
		proto = 6;
	else if (strcmp(transport, "udp") == 0)
		proto = 17;
	else if (strcmp(transport, "sctp") == 0)
		proto = 132;
	else
		return -1;
	if (inet_pton(AF_INET, sip, s) == 1 && inet_pton(AF_INET, dip, d) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, sip, s) == 1 && inet_pton(AF_INET6, dip, d) == 1)
		fam = AF_INET6;
	else
		return -1;
	return sluice_community_id(fam, s, d, (uint16_t)sport, (uint16_t)dport, proto, 0, out, len);
}
