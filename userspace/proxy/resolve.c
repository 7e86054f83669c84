/* SPDX-License-Identifier: BSD-2-Clause */
#include "resolve.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>

struct proxy_resolve {
	proxy_resolve_cb cb;       /* NULL once abandoned */
	void *arg;
	int pending;               /* queries still out */
	int err;                   /* first error, DNS_ERR_NONE if any query answered */
	int answered;
	bool have_ttl;
	struct proxy_addrs res;
};

static void add_answers(struct proxy_resolve *r, char type, int count, const void *addrs)
{
	for (int i = 0; i < count && r->res.n < PROXY_RESOLVE_MAX; i++) {
		struct proxy_addr *a = &r->res.a[r->res.n];

		memset(a, 0, sizeof(*a));
		if (type == DNS_IPv4_A) {
			a->family = AF_INET;
			memcpy(a->addr, (const uint8_t *)addrs + 4 * i, 4);
		} else if (type == DNS_IPv6_AAAA) {
			a->family = AF_INET6;
			memcpy(a->addr, (const uint8_t *)addrs + 16 * i, 16);
		} else {
			return;
		}
		r->res.n++;
	}
}

static void on_answer(int result, char type, int count, int ttl, void *addresses, void *arg)
{
	struct proxy_resolve *r = arg;

	if (result == DNS_ERR_NONE) {
		r->answered++;
		add_answers(r, type, count, addresses);
		if (count > 0 && ttl >= 0 && (!r->have_ttl || (uint32_t)ttl < r->res.ttl)) {
			r->res.ttl = (uint32_t)ttl;
			r->have_ttl = true;
		}
	} else if (result == DNS_ERR_NODATA) {
		r->answered++;   /* the name exists, just not with this type */
	} else if (!r->err) {
		r->err = result;
	}
	if (--r->pending > 0)
		return;
	if (r->cb)
		r->cb(r->arg, r->answered ? 0 : (r->err ? r->err : DNS_ERR_NOTEXIST), &r->res);
	free(r);
}

struct proxy_resolve *proxy_resolve_start(struct evdns_base *dns, const char *name,
					  proxy_resolve_cb cb, void *arg)
{
	struct proxy_resolve *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cb = cb;
	r->arg = arg;
	/* pending is raised before each query: evdns may fail one immediately */
	r->pending = 2;
	if (!evdns_base_resolve_ipv4(dns, name, DNS_QUERY_NO_SEARCH, on_answer, r)) {
		r->pending--;
		r->err = DNS_ERR_UNKNOWN;
	}
	if (!evdns_base_resolve_ipv6(dns, name, DNS_QUERY_NO_SEARCH, on_answer, r)) {
		r->pending--;
		r->err = DNS_ERR_UNKNOWN;
	}
	if (r->pending == 0) {
		free(r);
		return NULL;
	}
	return r;
}

void proxy_resolve_abandon(struct proxy_resolve *r)
{
	if (r)
		r->cb = NULL;
}
