/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_family.c - the `families:` section of a policy (policy.h, struct
 * sluice_policy_families; docs/policy.md "Socket families"): the socket
 * families beyond inet, inet6, unix and netlink route/sock_diag that the
 * sandbox may make sockets of.
 *
 *   families:
 *     - family: packet
 *       why: tcpdump of the job's own interface
 *     - family: netlink          # every netlink protocol, not only route/diag
 *       why: ip monitor
 *
 * No family is judged by the inet hooks: a socket of a family named here
 * reaches whatever that family reaches (a VM host for vsock, raw frames
 * for packet with CAP_NET_RAW), unfiltered; `sluice policy check` says so
 * (lint `family`).  Enforced at socket() by the BPF LSM's socket_create
 * (sluice_genconf.families) and by sluice run's seccomp filter.
 */
#include "policy_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The names, by AF_* number (include/linux/socket.h; the numbers are
 * ABI).  unix, inet and inet6 are absent: always allowed, judged by the
 * unix and inet hooks.
 */
static const char *const family_names[] = {
	[3] = "ax25", [4] = "ipx", [5] = "appletalk", [6] = "netrom", [7] = "bridge", [8] = "atmpvc",
	[9] = "x25", [11] = "rose", [12] = "decnet", [13] = "netbeui", [14] = "security", [15] = "key",
	[16] = "netlink", [17] = "packet", [18] = "ash", [19] = "econet", [20] = "atmsvc", [21] = "rds",
	[22] = "sna", [23] = "irda", [24] = "pppox", [25] = "wanpipe", [26] = "llc", [27] = "ib",
	[28] = "mpls", [29] = "can", [30] = "tipc", [31] = "bluetooth", [32] = "iucv", [33] = "rxrpc",
	[34] = "isdn", [35] = "phonet", [36] = "ieee802154", [37] = "caif", [38] = "alg", [39] = "nfc",
	[40] = "vsock", [41] = "kcm", [42] = "qipcrtr", [43] = "smc", [44] = "xdp", [45] = "mctp",
};

#define N_NAMES (sizeof(family_names) / sizeof(family_names[0]))

const char *sluice_family_name(unsigned family)
{
	return family < N_NAMES ? family_names[family] : NULL;
}

int sluice_family_by_name(const char *name)
{
	for (unsigned f = 0; name && f < N_NAMES; f++)
		if (family_names[f] && strcmp(family_names[f], name) == 0)
			return (int)f;
	return -1;
}

bool sluice_policy_allows_family(const struct sluice_policy *p, int family, int protocol)
{
	/* AF_UNIX 1, AF_INET 2, AF_INET6 10; AF_NETLINK 16 with NETLINK_ROUTE 0, NETLINK_SOCK_DIAG 4 */
	if (family == 1 || family == 2 || family == 10 || (family == 16 && (protocol == 0 || protocol == 4)))
		return true;
	return p && family >= 0 && family < 64 && (p->families.mask & (1ULL << family));
}

const char *sluice_policy_families_str(const struct sluice_policy *p, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; p && i < p->families.n && off < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? "," : "", p->families.items[i].name);

		if (n < 0)
			break;
		off += (size_t)n;
	}
	return buf;
}

static int item_cmp(const void *a, const void *b)
{
	const struct sluice_policy_family *x = a, *y = b;

	return x->family < y->family ? -1 : x->family > y->family;
}

/* One item: a mapping of `family` (a name of the table) and `why`. */
static int parse_item(struct ctx *c, const struct ynode *m, struct sluice_policy *p, struct sluice_policy_family *out)
{
	static const char *const keys[] = { "family", "why", NULL };
	const struct ynode *kn = NULL, *v;
	char b[80];
	int f;

	if (m->type != YN_MAP)
		return sluice_yfail(c, m, "families: each item is a mapping (family, why), not %s", sluice_ykind(m));
	if (sluice_ycheck_keys(c, m, keys, "a families item") < 0)
		return -1;
	v = sluice_ymap_get(m, "family", &kn);
	if (!v)
		return sluice_yfail(c, m, "families: an item needs 'family' (netlink, packet, vsock, ...)");
	if (sluice_ywant_string(c, kn, v) < 0)
		return -1;
	if (strcmp(v->value, "unix") == 0 || strcmp(v->value, "inet") == 0 || strcmp(v->value, "inet6") == 0)
		return sluice_yfail(c, v, "families: '%s' is always allowed (%s)", v->value,
				    v->value[0] == 'u' ? "unix: entries judge its connects and sends" :
							 "cidr, host and url entries judge its traffic");
	f = strlen(v->value) == v->len ? sluice_family_by_name(v->value) : -1;
	if (f < 0)
		return sluice_yfail(c, v, "families: unknown socket family '%s' (the names are in docs/policy.md, "
				    "\"Socket families\": netlink, packet, vsock, xdp, bluetooth, can, alg, ...)",
				    sluice_yshown(v, b, sizeof(b)));
	if (p->families.mask & (1ULL << f)) {
		for (size_t i = 0; i < p->families.n; i++)
			if (p->families.items[i].family == (unsigned)f)
				return sluice_yfail(c, v, "families: %s is already listed at line %u", v->value,
						    p->families.items[i].line);
	}
	out->family = (unsigned)f;
	out->name = family_names[f];
	out->line = m->line;
	out->column = m->col;
	if (sluice_ywant_why(c, m, "a family", &out->why) < 0)
		return -1;
	p->families.mask |= 1ULL << f;
	return 0;
}

int sluice_family_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p)
{
	const struct ynode *kn = NULL, *v = sluice_ymap_get(root, "families", &kn);

	if (!v)
		return 0;
	p->families.present = true;
	p->families.line = kn ? kn->line : 0;
	if (sluice_yis_null(v))
		return 0;
	if (v->type != YN_SEQ)
		return sluice_yfail(c, v, "'families' must be a list of {family, why}, not %s", sluice_ykind(v));
	if (v->n > N_NAMES)
		return sluice_yfail(c, v, "families: at most %zu items", N_NAMES);
	p->families.items = calloc(v->n ? v->n : 1, sizeof(*p->families.items));
	if (!p->families.items)
		return sluice_yfail(c, v, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		if (parse_item(c, v->kids[i], p, &p->families.items[i]) < 0) {
			p->families.n = i + 1;   /* its why, if set, is freed */
			return -1;
		}
		p->families.n = i + 1;
	}
	qsort(p->families.items, p->families.n, sizeof(*p->families.items), item_cmp);
	return 0;
}

void sluice_family_free(struct sluice_policy *p)
{
	for (size_t i = 0; i < p->families.n; i++)
		free(p->families.items[i].why);
	free(p->families.items);
	memset(&p->families, 0, sizeof(p->families));
}
