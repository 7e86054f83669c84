/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * websocket.c - WebSocket upgrades (RFC 6455) on plain HTTP and inside
 * inspected TLS (HTTP/1.1), docs/proxy.md "WebSocket":
 *
 *   GET /socket/x HTTP/1.1, Upgrade: websocket
 *      --decided (url entry: method, path prefix; proxy_ws_decide: the
 *        entry says `websocket: true`)--> forwarded with the upgrade
 *      --origin 101 (Upgrade: websocket)--> the 101 to the client, then
 *        the bytes both ways (relay.c) until either side closes
 *      --one access-log line: status 101, bytes both ways, the duration,
 *        sluice.websocket
 *
 * Refused upgrades are 403 "upgrade_not_supported" before anything is
 * dialed; an origin that answers something else than 101 has its answer
 * passed on and the line says "upgrade_refused" (outcome failure).  The
 * frames are not parsed: the proxy decided the URL; what the two ends say
 * inside the WebSocket is theirs (docs/threat-model.md L5).  Over HTTP/2
 * (RFC 8441 extended CONNECT) no WebSocket: SETTINGS_ENABLE_CONNECT_PROTOCOL
 * is never sent, so a client falls back to HTTP/1.1 or gives up.
 */
#include "proxy.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "relay.h"
#include "upool.h"

void proxy_ws_decide(const struct proxy_request *req, struct proxy_decision *d)
{
	if (!d->allow)
		return;
	if (d->entry && d->entry->kind == SLUICE_ENTRY_URL && d->entry->websocket &&
	    req->method_id == HTTP_GET && req->http_major == 1 && req->http_minor == 1 &&
	    req->message_complete && !req->has_content_length && !req->chunked)
		return;
	d->allow = false;
	d->audit_ok = true;
	d->status = 403;
	d->reason = "upgrade_not_supported";
	d->entry = NULL;
}

static void on_ws_done(void *arg, const char *err, uint64_t up, uint64_t down)
{
	struct conn *c = arg;

	c->req_bytes += (int64_t)up;
	c->resp_bytes += (int64_t)down;
	if (err) {
		c->failed = true;
		c->reason = err;
	}
	conn_finish(c);
}

void ws_relay_start(struct conn *c, struct evbuffer *from_client)
{
	size_t n = from_client ? evbuffer_get_length(from_client) : 0;
	char *init = NULL;
	struct event *ev[2];

	if (n) {
		init = malloc(n);
		if (!init) {
			c->failed = true;
			c->reason = "out_of_memory";
			conn_finish(c);
			return;
		}
		evbuffer_remove(from_client, init, n);
	}
	/* the client's and upstream's read events (and the upstream's pooled
	 * handler) give way to the relay's, made of the connection's own */
	http_free(c);
	conn_events_to_relay(c, ev);
	proxy_io_free(c->uio);
	c->uio = NULL;
	c->phase = PH_TUNNEL;
	c->relay = relay_start(NULL, c->px->base, c->cfd, c->ufd, init, n, ev, false, on_ws_done, c);
	if (!c->relay) {
		c->failed = true;
		c->reason = "out_of_memory";
		conn_finish(c);
	}
}
