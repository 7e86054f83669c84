/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_cidr.c - what a policy's cidr entries say of one TCP connection
 * (see sluice_policy_cidr_tcp() in policy.h): the user-space answer to the
 * question the connect hooks ask the kernel's maps, for connections that
 * are already open (a reload cutting the flows the new policy no longer
 * allows, loader/flowcut.c).
 */
#include "netaddr.h"
#include "policy.h"

#include <netinet/in.h>

enum sluice_cidr_verdict sluice_policy_cidr_tcp(const struct sluice_policy *p, int family, const uint8_t *addr,
						uint16_t port, const struct sluice_exe_id *who, int64_t now)
{
	enum sluice_cidr_verdict v = SLUICE_CIDR_NO_ENTRY;

	for (size_t i = 0; p && i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->kind != SLUICE_ENTRY_CIDR || e->protocol != IPPROTO_TCP || !sluice_entry_has_port(e, port) ||
		    !netaddr_in_prefix(e->family, e->addr, e->prefix_len, family, addr))
			continue;
		if (sluice_entry_expired(e, now)) {
			if (v == SLUICE_CIDR_NO_ENTRY)
				v = SLUICE_CIDR_EXPIRED;
			continue;
		}
		if (!sluice_entry_allows_program(e, who)) {
			v = SLUICE_CIDR_PROGRAM;
			continue;
		}
		return SLUICE_CIDR_ALLOWED;
	}
	return v;
}
