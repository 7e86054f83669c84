/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.c - the daemon's Prometheus endpoint (metrics.h).
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

struct sluice_metrics {
	struct evhttp *http;
	sluice_metrics_fill_fn fill;
	void *arg;
};

int sluice_metrics_parse_addr(const char *addr, char *host, size_t hostlen, uint16_t *port, char *err, size_t errlen)
{
	const char *colon = addr ? strrchr(addr, ':') : NULL, *h = addr;
	size_t n;
	char *end;
	unsigned long p;
	unsigned char buf[sizeof(struct in6_addr)];

	if (!colon || colon == addr) {
		snprintf(err, errlen, "metrics address '%s': want IP:PORT or [IPv6]:PORT", addr ? addr : "");
		return -1;
	}
	n = (size_t)(colon - addr);
	if (addr[0] == '[') {
		if (colon[-1] != ']' || n < 3) {
			snprintf(err, errlen, "metrics address '%s': want [IPv6]:PORT", addr);
			return -1;
		}
		h = addr + 1;
		n -= 2;
	}
	if (n >= hostlen) {
		snprintf(err, errlen, "metrics address '%s': address too long", addr);
		return -1;
	}
	memcpy(host, h, n);
	host[n] = 0;
	if (inet_pton(addr[0] == '[' ? AF_INET6 : AF_INET, host, buf) != 1) {
		snprintf(err, errlen, "metrics address '%s': '%s' is not a numeric %s address (no names are resolved)",
			 addr, host, addr[0] == '[' ? "IPv6" : "IPv4");
		return -1;
	}
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || p < 1 || p > 65535) {
		snprintf(err, errlen, "metrics address '%s': port must be 1-65535", addr);
		return -1;
	}
	*port = (uint16_t)p;
	return 0;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct sluice_metrics *m = arg;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const char *uri = evhttp_request_get_uri(req);
	struct evbuffer *body;

	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
		evhttp_send_error(req, 405, "Method Not Allowed");
		return;
	}
	/* /metrics, with or without a query string (Prometheus adds none) */
	if (!uri || strncmp(uri, "/metrics", 8) != 0 || (uri[8] && uri[8] != '?')) {
		evhttp_send_error(req, HTTP_NOTFOUND, "Not Found: the metrics are at /metrics");
		return;
	}
	body = evbuffer_new();
	if (!body) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	m->fill(body, m->arg);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, HTTP_OK, "OK", body);
	evbuffer_free(body);
}

struct sluice_metrics *sluice_metrics_listen(struct event_base *base, const char *addr, sluice_metrics_fill_fn fill,
					     void *arg, char *err, size_t errlen)
{
	struct sluice_metrics *m;
	char host[INET6_ADDRSTRLEN + 1];
	uint16_t port;
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int fd, one = 1;

	if (sluice_metrics_parse_addr(addr, host, sizeof(host), &port, err, errlen) < 0)
		return NULL;
	if (addr[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, host, &s6->sin6_addr);
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		inet_pton(AF_INET, host, &s4->sin_addr);
		sl = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "metrics address %s: socket: %s", addr, strerror(errno));
		return NULL;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 16) < 0) {
		snprintf(err, errlen, "metrics address %s: %s", addr, strerror(errno));
		close(fd);
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->http = evhttp_new(base))) {
		snprintf(err, errlen, "metrics: out of memory");
		free(m);
		close(fd);
		return NULL;
	}
	m->fill = fill;
	m->arg = arg;
	/* a scraper sends a short GET: anything bigger or slower is refused */
	evhttp_set_max_headers_size(m->http, 8192);
	evhttp_set_max_body_size(m->http, 0);
	evhttp_set_timeout(m->http, 5);
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
						    EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(m->http, on_request, m);
	if (!evhttp_accept_socket_with_handle(m->http, fd)) {
		snprintf(err, errlen, "metrics address %s: cannot serve it", addr);
		evhttp_free(m->http);
		free(m);
		close(fd);
		return NULL;
	}
	return m;
}

void sluice_metrics_free(struct sluice_metrics *m)
{
	if (!m)
		return;
	evhttp_free(m->http); /* closes the listening socket too */
	free(m);
}

void sluice_prom_family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the text format wants it: backslash, double quote and
 * line feed escaped; everything else as is (UTF-8). */
static void put_label_value(struct evbuffer *out, const char *v)
{
	for (; v && *v; v++) {
		switch (*v) {
		case '\\': evbuffer_add(out, "\\\\", 2); break;
		case '"': evbuffer_add(out, "\\\"", 2); break;
		case '\n': evbuffer_add(out, "\\n", 2); break;
		default: evbuffer_add(out, v, 1); break;
		}
	}
}

void sluice_prom_sample(struct evbuffer *out, const char *name, const char *const *labels, uint64_t value)
{
	evbuffer_add(out, name, strlen(name));
	if (labels && labels[0]) {
		evbuffer_add(out, "{", 1);
		for (int i = 0; labels[i] && labels[i + 1]; i += 2) {
			evbuffer_add_printf(out, "%s%s=\"", i ? "," : "", labels[i]);
			put_label_value(out, labels[i + 1]);
			evbuffer_add(out, "\"", 1);
		}
		evbuffer_add(out, "}", 1);
	}
	evbuffer_add_printf(out, " %" PRIu64 "\n", value);
}
