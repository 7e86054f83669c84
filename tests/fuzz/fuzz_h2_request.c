/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_h2_request.c - libFuzzer target for the HTTP/2 request path inside
 * inspected TLS (userspace/proxy/h2.c): the bytes a client sends after
 * the TLS handshake chose ALPN h2 (the decrypted plaintext the pump hands
 * over) go into a real h2 session on a socketpair: nghttp2 reads the
 * frames, each stream becomes an HTTP/1.1 request on an inspected
 * connection of its own (conn.c), which parses, decides and answers it
 * (here always refused: the policy inspects api.example.com on 8443, the
 * streams come for port 443, or for another name: 403 / 421 / 400), and
 * the answer goes back as the stream's HEADERS and DATA.  The client
 * connection preface is sent first; the input is the frames after it.
 * Invariants: no crash, no sanitizer report, no leak; at the end every
 * HTTP/2 connection and every stream's connection is gone (h2_live() and
 * px->n_conns are 0), whatever the frames were.
 *
 *   make build/fuzz/fuzz_h2_request
 *   build/fuzz/fuzz_h2_request -max_total_time=120 tests/fuzz/corpus/fuzz_h2_request
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy.h"
#include "h2.h"

static const char POLICY[] =
	"version: 1\n"
	"name: fuzz-h2\n"
	"allow:\n"
	"  - url: https://api.example.com:8443/pub/\n"
	"    methods: [GET, POST]\n"
	"    why: fuzz (inspects the name; nothing on 443 is allowed, so nothing is dialed)\n";

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static struct proxy px;

static void ms_tv(unsigned ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (suseconds_t)(ms % 1000) * 1000;
}

static void setup(void)
{
	struct sluice_policy_error perr;
	int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	proxy_config_defaults(&px.cfg);
	/* short timers: a stream left waiting ends within the run */
	px.cfg.linger_ms = 5;
	px.cfg.keepalive_timeout_ms = 50;
	if (sluice_policy_load_buffer("fuzz", POLICY, sizeof(POLICY) - 1, &px.policy, &perr) != 0)
		abort();
	px.mode = SLUICE_MODE_ENFORCE;
	px.base = event_base_new();
	if (!px.base || null_fd < 0)
		abort();
	px.log_fd = null_fd;
	sluice_evlog_init(&px.log, null_fd, "/dev/null", "fuzz", NULL);
	ms_tv(50, &px.tv_header);
	ms_tv(50, &px.tv_idle);
	ms_tv(50, &px.tv_connect);
	ms_tv(px.cfg.linger_ms, &px.tv_linger);
	ms_tv(px.cfg.keepalive_timeout_ms, &px.tv_keepalive);
	ms_tv(50, &px.tv_upstream_idle);
	px.accept.reserve_fd = -1;
	px.flow_fd = -1;
}

/* Read and drop what the session wrote to the client. */
static void drain(int fd)
{
	char sink[16384];

	while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conn outer;
	int sv[2];
	size_t off = 0;
	char sni[] = "api.example.com";

	if (!px.base)
		setup();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	memset(&outer, 0, sizeof(outer));
	outer.peer.in.sin_family = AF_INET;
	outer.peer.in.sin_addr.s_addr = htonl(0x7f000001);
	outer.peer.in.sin_port = htons(40000);
	outer.form = PROXY_FORM_TRANSPARENT;
	outer.port = 443;
	outer.sni = sni;
	if (h2_start(&px, sv[1], &outer, "TLSv1.3", "TLS_AES_128_GCM_SHA256") < 0) {
		close(sv[0]);
		return 0;
	}
	if (send(sv[0], PREFACE, sizeof(PREFACE) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(PREFACE) - 1))
		abort();
	/* the frames, as fast as the session takes them */
	for (int round = 0; off < size && round < 10000; round++) {
		ssize_t n = send(sv[0], data + off, size - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			break;
		event_base_loop(px.base, EVLOOP_NONBLOCK);
		drain(sv[0]);
	}
	/* let the streams be decided and answered, then the client goes away */
	for (int round = 0; round < 20; round++) {
		event_base_loop(px.base, EVLOOP_NONBLOCK);
		drain(sv[0]);
	}
	close(sv[0]);
	for (int round = 0; round < 2000 && (h2_live() || px.n_conns); round++)
		event_base_loop(px.base, EVLOOP_ONCE);
	if (h2_live() || px.n_conns)
		abort();   /* a connection outlived its client */
	return 0;
}
