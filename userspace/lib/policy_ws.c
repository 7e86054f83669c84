/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_ws.c - `websocket:` of a url entry (policy.h, sluice_entry
 * .websocket; docs/policy.md "WebSocket"):
 *
 *   - url: http://chat.example.com/socket/
 *     websocket: true       # a GET here may upgrade (RFC 6455); relayed both ways
 *     why: ...
 *
 * The opening handshake is a GET (RFC 6455 4.1), so the entry must allow
 * GET; the path prefix and the scheme (http:// or https://, inside
 * inspected TLS) are the entry's.  Without it an upgrade to a WebSocket
 * is refused by the proxy (403 upgrade_not_supported).  In the digest
 * (digest.c) only when true.
 */
#include "policy_internal.h"

#include <string.h>
#include <strings.h>

int sluice_ws_parse_entry(struct ctx *c, const struct ynode *m, struct sluice_entry *e)
{
	const struct ynode *kn = NULL, *v = sluice_ymap_get(m, "websocket", &kn);
	bool get = false;

	e->websocket = false;
	if (!v)
		return 0;
	if (!sluice_yis_bool(v))
		return sluice_yfail(c, v, "'websocket' must be true or false, not %s", sluice_ykind(v));
	if (strcasecmp(v->value, "true") != 0 && strcasecmp(v->value, "yes") != 0 &&
	    strcasecmp(v->value, "on") != 0)
		return 0;
	for (size_t i = 0; i < e->n_methods; i++)
		if (strcmp(e->methods[i], "GET") == 0)
			get = true;
	if (!get)
		return sluice_yfail(c, kn, "'websocket: true' needs GET in 'methods' (the opening handshake is a GET, RFC 6455 4.1)");
	e->websocket = true;
	return 0;
}
