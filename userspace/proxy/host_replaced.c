/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * host_replaced.c - whether the head the proxy forwards says another Host
 * than the client sent (request.h, proxy_host_replaced), so the access-log
 * line can say so (sluice.host_header_replaced, docs/events.md).
 */
#include "request.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool proxy_host_replaced(const struct proxy_request *req, const struct proxy_target *t)
{
	/* static: struct proxy_target holds two 8 KiB path buffers, and the
	 * proxy is one thread */
	static struct proxy_target sent;
	struct proxy_refusal err;
	bool has_port = false;

	if (!req->host || t->is_connect || !req->target || req->target[0] == '/' || req->target[0] == '*')
		return false;       /* origin form: the Host header is the target */
	if (proxy_split_host_header(req->host->value, req->host->value_len, &sent, &has_port, &err) < 0)
		return true;        /* not a host at all: what is sent is the URI's */
	if (strcasecmp(sent.host, t->host) != 0)
		return true;
	return (has_port ? sent.port : (t->tls ? 443 : 80)) != t->port;
}
