/* SPDX-License-Identifier: BSD-2-Clause */
/* dns_stats.c - the names of the resolver's dropped-query reasons (dns_stats.h). */
#include "dns_stats.h"

const char *const sluice_dns_drop_names[SLUICE_DNS_DROP_N] = {
	"rate_limited", "socket_overflow", "shutdown",
};
