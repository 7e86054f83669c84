// SPDX-License-Identifier: BSD-2-Clause
/*
 * tlsbench - the TLS origin and the HTTPS load client of `make bench`
 * scenario 8 (inspected HTTPS; bench/run.sh builds it, bench/scen_tls.py
 * drives it).  IPv4 only; every address is given on the command line (the
 * bench uses loopback and documentation addresses inside its own
 * namespaces).  OpenSSL for TLS, nothing home-made but the tiny HTTP/1.1
 * framing a fixed-size benchmark response needs.
 *
 *   tlsbench origin --listen ADDR:PORT --cert PEM --key PEM [--body BYTES] [--ready FILE]
 *       HTTPS/1.1 origin: every request gets "200 OK" with BYTES bytes of
 *       body (default 64), keep-alive.  A thread per connection.
 *   tlsbench get --to ADDR:PORT [--connect HOST:PORT] --sni NAME --conns C --seconds S
 *                [--new-conn] [--path PATH]
 *       C client threads for S seconds, each sending GET PATH (Host: NAME)
 *       over TLS (SNI NAME) to ADDR:PORT, through an HTTP CONNECT to
 *       HOST:PORT first when given (ADDR:PORT is then a proxy).  Keep-alive
 *       by default; --new-conn makes every request a new TCP connection,
 *       CONNECT and TLS handshake (full handshakes: no session resumption).
 *       Certificates are not verified (every variant's CA differs; the
 *       client's verify cost is the same in every variant and small).
 *       Prints {"requests":..,"errors":..,"seconds":..,"rps":..,
 *       "p50_us":..,"p99_us":..,"handshakes":..}
 *   tlsbench handshake --to ADDR:PORT [--connect HOST:PORT] --sni NAME --count N
 *       N handshakes one after another, each on a new TCP connection (and
 *       CONNECT), timed from connect(2) to the end of the TLS handshake;
 *       no request is sent.  A "%d" in NAME and HOST is replaced by the
 *       handshake's number, so every handshake asks for a name of its own
 *       (an interception proxy then mints a leaf for each: the uncached
 *       case).  Prints {"handshakes":..,"errors":..,"p50_us":..,"p99_us":..,
 *       "mean_us":..}
 *   tlsbench hold --to ADDR:PORT [--connect HOST:PORT] --sni NAME --count N
 *                 --ready FILE [--path PATH]
 *       Opens N connections (one at a time), answers one GET on each, then
 *       writes FILE ("N connections") and keeps every connection open and
 *       idle until killed: for measuring what an idle connection costs a
 *       proxy.
 *
 * Exit status: 0 ok, 1 the measurement failed (no request answered, or
 * more than 1% errors), 2 usage or environment error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BENCH_PROG "tlsbench"
#include "benchutil.h"

static void __attribute__((noreturn)) die_ssl(const char *what)
{
	fprintf(stderr, "tlsbench: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(2);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: tlsbench origin|get|handshake|hold ... (see bench/tlsbench.c)\n");
	exit(2);
}

/* Read until the end of an HTTP/1.1 response head plus its Content-Length
 * body (the only framing tlsbench's origin and the proxies send it).
 * Returns the status code, or -1. */
static int read_response(SSL *ssl, char *buf, size_t len)
{
	size_t have = 0;
	long clen = -1;
	char *end = NULL;

	for (;;) {
		int r = SSL_read(ssl, buf + have, (int)(len - 1 - have));

		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = 0;
		if (!end) {
			end = strstr(buf, "\r\n\r\n");
			if (end) {
				const char *cl = strcasestr(buf, "\r\ncontent-length:");

				clen = cl && cl < end ? strtol(cl + 17, NULL, 10) : 0;
			}
		}
		if (end && have >= (size_t)(end + 4 - buf) + (size_t)clen) {
			int code = 0;

			if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
				return -1;
			return code;
		}
		if (have >= len - 1)
			return -1;
	}
}

/* --- origin ------------------------------------------------------------------ */

static SSL_CTX *o_ctx;
static char o_resp[66000];
static int o_rlen;

static void *origin_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	SSL *ssl = SSL_new(o_ctx);
	char buf[16384];
	size_t have = 0;

	if (!ssl || !SSL_set_fd(ssl, fd) || SSL_accept(ssl) <= 0)
		goto out;
	for (;;) {
		char *end;
		int r = SSL_read(ssl, buf + have, (int)(sizeof(buf) - 1 - have));

		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
			size_t used = (size_t)(end + 4 - buf);

			if (SSL_write(ssl, o_resp, o_rlen) != o_rlen)
				goto out;
			memmove(buf, buf + used, have - used + 1);
			have -= used;
		}
		if (have >= sizeof(buf) - 1)
			break;
	}
out:
	if (ssl) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	close(fd);
	return NULL;
}

static int cmd_origin(int argc, char **argv)
{
	const char *ready = NULL, *listen_on = NULL, *cert = NULL, *key = NULL;
	long body = 64;
	struct sockaddr_in sin;
	pthread_attr_t attr;
	int lfd, one = 1;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			listen_on = argv[++i];
		else if (!strcmp(argv[i], "--cert") && i + 1 < argc)
			cert = argv[++i];
		else if (!strcmp(argv[i], "--key") && i + 1 < argc)
			key = argv[++i];
		else if (!strcmp(argv[i], "--body") && i + 1 < argc)
			body = atol(argv[++i]);
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else
			usage();
	}
	if (!listen_on || !cert || !key || body < 0 || body > 65000 || parse_addr(listen_on, &sin) < 0)
		usage();
	o_ctx = SSL_CTX_new(TLS_server_method());
	if (!o_ctx || SSL_CTX_use_certificate_chain_file(o_ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(o_ctx, key, SSL_FILETYPE_PEM) != 1)
		die_ssl("cannot load the origin's certificate or key");
	/* every variant pays full handshakes to the origin alike */
	SSL_CTX_set_session_cache_mode(o_ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(o_ctx, SSL_OP_NO_TICKET);
	o_rlen = snprintf(o_resp, sizeof(o_resp),
			  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %ld\r\n\r\n", body);
	memset(o_resp + o_rlen, 'x', (size_t)body);
	o_rlen += (int)body;
	signal(SIGPIPE, SIG_IGN);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("bind");
	if (listen(lfd, 4096) < 0)
		die("listen");
	if (ready) {
		FILE *f = fopen(ready, "w");

		if (f) {
			fputs("ready\n", f);
			fclose(f);
		}
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (;;) {
		pthread_t t;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			die("accept");
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (pthread_create(&t, &attr, origin_conn, (void *)(intptr_t)fd) != 0)
			close(fd);
	}
}

/* --- get ------------------------------------------------------------------------ */

struct g_opts {
	struct sockaddr_in to;
	const char *connect_to, *sni, *path;
	double until;
	int new_conn;
	SSL_CTX *ctx;
};

struct g_thread {
	pthread_t t;
	const struct g_opts *o;
	uint32_t *lat_us;   /* one per answered request */
	size_t n, cap;
	unsigned long errors, handshakes;
};

/* A TLS connection to the origin (through a CONNECT when asked), or NULL. */
static SSL *g_open(struct g_thread *g, int *fdp)
{
	const struct g_opts *o = g->o;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	SSL *ssl;

	if (fd < 0)
		return NULL;
	if (connect(fd, (const struct sockaddr *)&o->to, sizeof(o->to)) < 0)
		goto fail;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (o->connect_to) {
		char req[600], buf[4096];
		size_t have = 0;
		int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", o->connect_to,
				 o->connect_to), code = 0;

		if (write(fd, req, (size_t)n) != n)
			goto fail;
		/* read byte by byte up to the end of the head: nothing of TLS may be eaten */
		while (have < sizeof(buf) - 1) {
			if (read(fd, buf + have, 1) != 1)
				goto fail;
			have++;
			buf[have] = 0;
			if (have >= 4 && !memcmp(buf + have - 4, "\r\n\r\n", 4))
				break;
		}
		if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1 || code != 200)
			goto fail;
	}
	ssl = SSL_new(o->ctx);
	if (!ssl)
		goto fail;
	SSL_set_tlsext_host_name(ssl, o->sni);
	if (!SSL_set_fd(ssl, fd) || SSL_connect(ssl) <= 0) {
		SSL_free(ssl);
		goto fail;
	}
	g->handshakes++;
	*fdp = fd;
	return ssl;
fail:
	close(fd);
	return NULL;
}

static void g_close(SSL *ssl, int fd)
{
	if (ssl) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	if (fd >= 0)
		close(fd);
}

static void *g_run(void *arg)
{
	struct g_thread *g = arg;
	const struct g_opts *o = g->o;
	char req[600], buf[70000];
	int rl = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: tlsbench\r\n\r\n", o->path,
			  o->sni);
	SSL *ssl = NULL;
	int fd = -1;

	while (now_s() < o->until) {
		double t0 = now_s();

		if (!ssl) {
			ssl = g_open(g, &fd);
			if (!ssl) {
				g->errors++;
				usleep(1000);
				continue;
			}
		}
		if (SSL_write(ssl, req, rl) != rl || read_response(ssl, buf, sizeof(buf)) != 200) {
			g->errors++;
			g_close(ssl, fd);
			ssl = NULL;
			fd = -1;
			continue;
		}
		if (g->n == g->cap) {
			size_t cap = g->cap ? g->cap * 2 : 4096;
			uint32_t *p = realloc(g->lat_us, cap * sizeof(*p));

			if (!p)
				break;
			g->lat_us = p;
			g->cap = cap;
		}
		g->lat_us[g->n++] = (uint32_t)((now_s() - t0) * 1e6);
		if (o->new_conn) {
			g_close(ssl, fd);
			ssl = NULL;
			fd = -1;
		}
	}
	g_close(ssl, fd);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmd_get(int argc, char **argv)
{
	struct g_opts o = { .path = "/" };
	const char *to = NULL;
	int conns = 0, seconds = 0;
	struct g_thread *th;
	unsigned long errors = 0, handshakes = 0;
	size_t total = 0, k = 0;
	uint32_t *all;
	double t0, t1;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--to") && i + 1 < argc)
			to = argv[++i];
		else if (!strcmp(argv[i], "--connect") && i + 1 < argc)
			o.connect_to = argv[++i];
		else if (!strcmp(argv[i], "--sni") && i + 1 < argc)
			o.sni = argv[++i];
		else if (!strcmp(argv[i], "--path") && i + 1 < argc)
			o.path = argv[++i];
		else if (!strcmp(argv[i], "--conns") && i + 1 < argc)
			conns = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--new-conn"))
			o.new_conn = 1;
		else
			usage();
	}
	if (!to || !o.sni || conns <= 0 || conns > 1024 || seconds <= 0 || parse_addr(to, &o.to) < 0)
		usage();
	signal(SIGPIPE, SIG_IGN);
	o.ctx = SSL_CTX_new(TLS_client_method());
	if (!o.ctx)
		die_ssl("SSL_CTX_new");
	SSL_CTX_set_verify(o.ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(o.ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(o.ctx, SSL_OP_NO_TICKET);
	th = calloc((size_t)conns, sizeof(*th));
	if (!th)
		die("calloc");
	t0 = now_s();
	o.until = t0 + seconds;
	for (int i = 0; i < conns; i++) {
		th[i].o = &o;
		if (pthread_create(&th[i].t, NULL, g_run, &th[i]) != 0)
			die("pthread_create");
	}
	for (int i = 0; i < conns; i++) {
		pthread_join(th[i].t, NULL);
		total += th[i].n;
		errors += th[i].errors;
		handshakes += th[i].handshakes;
	}
	t1 = now_s();
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		die("malloc");
	for (int i = 0; i < conns; i++) {
		if (th[i].n)
			memcpy(all + k, th[i].lat_us, th[i].n * sizeof(*all));
		k += th[i].n;
		free(th[i].lat_us);
	}
	qsort(all, total, sizeof(*all), cmp_u32);
	printf("{\"requests\":%zu,\"errors\":%lu,\"seconds\":%.3f,\"rps\":%.1f,\"p50_us\":%u,\"p99_us\":%u,"
	       "\"handshakes\":%lu}\n",
	       total, errors, t1 - t0, (double)total / (t1 - t0), total ? all[total / 2] : 0,
	       total ? all[total * 99 / 100] : 0, handshakes);
	free(all);
	free(th);
	SSL_CTX_free(o.ctx);
	return total == 0 || errors * 100 > total ? 1 : 0;
}

/* --- handshake, hold ---------------------------------------------------------------- */

/* The options handshake and hold share (parsed into o, count). */
static void hs_args(int argc, char **argv, struct g_opts *o, int *count, const char **ready)
{
	const char *to = NULL;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--to") && i + 1 < argc)
			to = argv[++i];
		else if (!strcmp(argv[i], "--connect") && i + 1 < argc)
			o->connect_to = argv[++i];
		else if (!strcmp(argv[i], "--sni") && i + 1 < argc)
			o->sni = argv[++i];
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			*count = atoi(argv[++i]);
		else if (ready && !strcmp(argv[i], "--ready") && i + 1 < argc)
			*ready = argv[++i];
		else if (ready && !strcmp(argv[i], "--path") && i + 1 < argc)
			o->path = argv[++i];
		else
			usage();
	}
	if (!to || !o->sni || *count <= 0 || *count > 100000 || parse_addr(to, &o->to) < 0 || (ready && !*ready))
		usage();
	signal(SIGPIPE, SIG_IGN);
	o->ctx = SSL_CTX_new(TLS_client_method());
	if (!o->ctx)
		die_ssl("SSL_CTX_new");
	SSL_CTX_set_verify(o->ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(o->ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(o->ctx, SSL_OP_NO_TICKET);
}

/* dst = pat with its first "%d" replaced by n (pat is never used as a format). */
static void name_n(char *dst, size_t len, const char *pat, int n)
{
	const char *at = strstr(pat, "%d");

	if (!at)
		snprintf(dst, len, "%s", pat);
	else
		snprintf(dst, len, "%.*s%d%s", (int)(at - pat), pat, n, at + 2);
}

static int cmd_handshake(int argc, char **argv)
{
	struct g_opts o = { .path = "/" };
	const char *sni_fmt, *connect_fmt;
	char sni[256], conn[300];
	int count = 0;
	struct g_thread g = { .o = &o };
	uint32_t *lat;
	size_t n = 0;
	double sum = 0;

	hs_args(argc, argv, &o, &count, NULL);
	sni_fmt = o.sni;
	connect_fmt = o.connect_to;
	lat = calloc((size_t)count, sizeof(*lat));
	if (!lat)
		die("calloc");
	for (int i = 0; i < count; i++) {
		double t0;
		SSL *ssl;
		int fd = -1;

		name_n(sni, sizeof(sni), sni_fmt, i);
		o.sni = sni;
		if (connect_fmt) {
			name_n(conn, sizeof(conn), connect_fmt, i);
			o.connect_to = conn;
		}
		t0 = now_s();
		ssl = g_open(&g, &fd);
		if (!ssl) {
			g.errors++;
			continue;
		}
		lat[n] = (uint32_t)((now_s() - t0) * 1e6);
		sum += lat[n++];
		g_close(ssl, fd);
	}
	qsort(lat, n, sizeof(*lat), cmp_u32);
	printf("{\"handshakes\":%zu,\"errors\":%lu,\"p50_us\":%u,\"p99_us\":%u,\"mean_us\":%.0f}\n", n, g.errors,
	       n ? lat[n / 2] : 0, n ? lat[n * 99 / 100] : 0, n ? sum / (double)n : 0.0);
	free(lat);
	SSL_CTX_free(o.ctx);
	return n == 0 || g.errors * 100 > n ? 1 : 0;
}

static int cmd_hold(int argc, char **argv)
{
	struct g_opts o = { .path = "/" };
	const char *ready = NULL;
	int count = 0, held = 0;
	struct g_thread g = { .o = &o };
	char req[600], buf[70000];
	int rl;
	FILE *f;

	hs_args(argc, argv, &o, &count, &ready);
	rl = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: tlsbench\r\n\r\n", o.path, o.sni);
	for (int i = 0; i < count; i++) {
		int fd = -1;
		SSL *ssl = g_open(&g, &fd);

		if (!ssl || SSL_write(ssl, req, rl) != rl || read_response(ssl, buf, sizeof(buf)) != 200) {
			g_close(ssl, fd);
			continue;
		}
		held++;   /* ssl and fd stay open until the process ends */
	}
	f = fopen(ready, "w");
	if (!f)
		die("ready file");
	fprintf(f, "%d connections\n", held);
	fclose(f);
	if (held == 0)
		return 1;
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "origin"))
		return cmd_origin(argc, argv);
	if (!strcmp(argv[1], "get"))
		return cmd_get(argc, argv);
	if (!strcmp(argv[1], "handshake"))
		return cmd_handshake(argc, argv);
	if (!strcmp(argv[1], "hold"))
		return cmd_hold(argc, argv);
	usage();
}
