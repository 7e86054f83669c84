/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sockaddr.c - numeric socket addresses for --listen and --upstream-dns, and
 * the default upstream from resolv.conf(5).  Never looks a name up: the
 * resolver must not depend on DNS to find DNS.
 */
#include "resolver.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end != '\0' || v < 1 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int rsv_parse_hostport(const char *s, uint16_t default_port, struct sockaddr_storage *ss,
		       unsigned *len)
{
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2], serv[8];
	const char *colon, *portstr = NULL;
	size_t hlen;
	uint16_t port = default_port;
	struct addrinfo hints, *res = NULL;

	if (!s || !*s)
		return -1;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb)
			return -1;
		hlen = (size_t)(rb - s - 1);
		if (rb[1] == ':')
			portstr = rb + 2;
		else if (rb[1] != '\0')
			return -1;
		s++;
	} else if ((colon = strchr(s, ':')) && !strchr(colon + 1, ':')) {
		hlen = (size_t)(colon - s);   /* exactly one colon: v4:port */
		portstr = colon + 1;
	} else {
		hlen = strlen(s);             /* v4, or bare v6 */
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -1;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (portstr && parse_port(portstr, &port) < 0)
		return -1;
	if (port == 0)
		return -1;
	if (!strchr(host, ':')) {
		/* getaddrinfo() takes inet_aton() forms ("0x7f.1"): only dotted quads */
		struct in_addr a4;

		if (inet_pton(AF_INET, host, &a4) != 1)
			return -1;
	}
	snprintf(serv, sizeof(serv), "%u", port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	hints.ai_socktype = SOCK_DGRAM;
	if (getaddrinfo(host, serv, &hints, &res) != 0 || !res)
		return -1;
	if (res->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return -1;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = (unsigned)res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

const char *rsv_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
	return buf;
}

bool rsv_sockaddr_is_loopback(const struct sockaddr *sa)
{
	struct netaddr_info info;

	if (sa->sa_family == AF_INET)
		netaddr_classify(AF_INET, (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr, &info);
	else if (sa->sa_family == AF_INET6)
		netaddr_classify(AF_INET6, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, &info);
	else
		return false;
	return info.cls == NETADDR_LOOPBACK;
}

int rsv_resolv_conf_first(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[512];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "nameserver", 10) != 0 || (p[10] != ' ' && p[10] != '\t'))
			continue;
		p += 10;
		while (*p == ' ' || *p == '\t')
			p++;
		end = p;
		while (*end && !isspace((unsigned char)*end) && *end != '#' && *end != ';')
			end++;
		if (end == p)
			continue;
		*end = '\0';
		snprintf(out, len, "%s", p);
		fclose(f);
		return 0;
	}
	fclose(f);
	errno = ENOENT;
	return -1;
}
