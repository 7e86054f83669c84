/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_access_log.c - libFuzzer target for the proxy's access-log line
 * (userspace/proxy/accesslog.c, proxy_log_format): a hand-built JSON
 * writer fed with what the sandbox chooses (the comm in the kernel's flow
 * record, the SNI, Host, URL and method as far as they survive parsing).
 * Every line must be one JSON object on one line that json-c parses
 * strictly, as UTF-8, with the fields the schema promises.
 *
 * Input: 104 bytes of fixed fields (a struct sluice_orig, ports, numbers,
 * flags; zero-padded), then NUL-separated strings for url.full, url.domain,
 * the SNI, the method, the reason, rule.name, the sandbox and up to two
 * dropped answers.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "accesslog.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t fixed[104] = { 0 };
	struct sluice_orig orig;
	struct sockaddr_in src4 = { .sin_family = AF_INET };
	struct sockaddr_in6 dst6 = { .sin6_family = AF_INET6 };
	struct proxy_log_rec r;
	const uint8_t *p, *end = data + size;
	char *s[9] = { 0 };
	json_object *o, *v;
	char *line;
	size_t n;

	memcpy(fixed, data, size < sizeof(fixed) ? size : sizeof(fixed));
	p = size > sizeof(fixed) ? data + sizeof(fixed) : end;
	for (int i = 0; i < 9; i++)
		s[i] = fuzz_piece(&p, end);

	_Static_assert(sizeof(orig) <= 80, "orig fits the fixed bytes");
	memcpy(&orig, fixed, sizeof(orig));
	memcpy(&src4.sin_addr, fixed + 80, 4);
	src4.sin_port = (uint16_t)(fixed[84] | fixed[85] << 8);
	memcpy(&dst6.sin6_addr, fixed + 56, 16);
	dst6.sin6_port = (uint16_t)(fixed[86] | fixed[87] << 8);

	memset(&r, 0, sizeof(r));
	r.start.tv_sec = (time_t)(fixed[88] | fixed[89] << 8 | (uint32_t)fixed[90] << 16) * 1000;
	r.start.tv_nsec = (long)(fixed[91] % 100) * 10000000L;
	r.duration_ns = (uint64_t)fixed[92] << 40 | fixed[93];
	r.action = (fixed[94] & 3) == 0 ? "proxy-http" : (fixed[94] & 3) == 1 ? "proxy-connect" :
		   (fixed[94] & 3) == 2 ? "proxy-tls" : "proxy-connection";
	r.outcome = fixed[94] & 4 ? "failure" : "success";
	r.verdict = fixed[94] & 8 ? "deny" : "allow";
	r.form = fixed[94] & 16 ? "explicit" : "transparent";
	r.tunnel = fixed[94] & 32;
	r.status = fixed[95] | fixed[96] << 8;
	r.req_bytes = fixed[97] & 1 ? -1 : (int64_t)fixed[97] << 32;
	r.resp_bytes = fixed[98] & 1 ? -1 : (int64_t)fixed[98] << 16;
	r.src = (const struct sockaddr *)&src4;
	r.dst = fixed[99] & 1 ? (const struct sockaddr *)&dst6 : NULL;
	r.orig = fixed[99] & 2 ? &orig : NULL;
	r.orig_dst_mismatch = (int)(fixed[100] % 3) - 1;
	r.request_seq = fixed[101];
	r.upstream_conn = fixed[102] % 3;
	r.url_full = s[0];
	r.domain = s[1];
	r.sni = s[2];
	r.method = s[3];
	r.reason = s[4] ? s[4] : "allowed";
	r.rule = s[5];
	r.target_port = fixed[103];
	for (int i = 7; i < 9; i++)
		if (s[i])
			r.dropped[r.n_dropped++] = s[i];

	line = proxy_log_format(&r);
	if (line) {
		n = strlen(line);
		o = fuzz_json_line(line, n);
		if (!json_object_object_get_ex(o, "event.action", &v) ||
		    strcmp(json_object_get_string(v), r.action) != 0)
			abort();
		if (!json_object_object_get_ex(o, "@timestamp", &v) || !json_object_object_get_ex(o, "event.reason", &v))
			abort();
		json_object_put(o);
		free(line);
	}
	for (int i = 0; i < 9; i++)
		free(s[i]);
	return 0;
}
