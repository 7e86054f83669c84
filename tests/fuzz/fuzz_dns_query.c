/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_dns_query.c - libFuzzer target for the resolver's decision core:
 * rsv_decide() on arbitrary client messages, and rsv_process_reply() on
 * upstream replies whose answer section is arbitrary.
 *
 * Input: byte 0 = flags (bit 0 TCP, bit 1 audit mode, bit 2 feed a reply,
 * bit 3 reply TC), byte 1 = answer count of the reply, then the client
 * message; if bit 2 is set, the last 1/4 of the rest is the raw answer
 * section appended to our own upstream query turned into a reply (so that
 * ID and question match and the answer filter gets to run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "resolver.h"

static const char POLICY[] =
	"version: 1\n"
	"name: fuzz\n"
	"dns:\n"
	"  qtypes: [A, AAAA, TXT, CNAME, HTTPS]\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [443]\n"
	"    why: fuzz\n"
	"  - host: \"*.pkg.example.org\"\n"
	"    ports: [443]\n"
	"    why: fuzz\n"
	"  - host: a\n"
	"    ports: [443]\n"
	"    why: fuzz\n"
	"  - host: \"*.example.com\"\n"
	"    ports: [80]\n"
	"    why: fuzz, overlaps the first (the index keeps file order)\n"
	"  - host: \"*.sub.api.example.com\"\n"
	"    ports: [80]\n"
	"    why: fuzz\n"
	"  - cidr: 198.51.100.0/24\n"
	"    ports: [5432]\n"
	"    protocol: tcp\n"
	"    why: fuzz\n";

static struct sluice_policy *policy;
static struct rsv_tunnel *tunnel;
static struct sluice_name_index *names;
static double now;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rsv_ctx ctx;
	struct rsv_decision d;
	struct rsv_logmeta m = { .src_ip = "127.0.0.1", .src_port = 1 };
	struct sluice_policy_error err;
	struct netaddr_cidr allow = { .family = 2 /* AF_INET */, .addr = { 192, 0, 2 }, .prefix_len = 24 };
	uint8_t flags, ancount, *q = NULL;
	size_t qlen, msglen, anslen = 0;
	char *line;

	if (!policy) {
		if (sluice_policy_load_buffer("fuzz.yaml", POLICY, sizeof(POLICY) - 1, &policy, &err) != 0)
			abort();
		tunnel = rsv_tunnel_new(policy->n_entries, NULL);
		names = sluice_name_index_new(policy);
		if (!names)
			abort();
	}
	if (size < 2)
		return 0;
	flags = data[0];
	ancount = data[1];
	data += 2;
	size -= 2;
	msglen = size;
	if (flags & 4) {
		anslen = size / 4;
		msglen = size - anslen;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.policy = policy;
	ctx.names = names;
	ctx.mode = flags & 2 ? SLUICE_MODE_AUDIT : SLUICE_MODE_ENFORCE;
	ctx.allow_private = &allow;
	ctx.n_allow_private = 1;
	ctx.tunnel = tunnel;
	now += 0.01;

	rsv_decide(&ctx, data, msglen, flags & 1, now, &d);
	if (d.name[0] && sluice_name_index_first(names, policy, d.name) != sluice_policy_name_entry(policy, d.name))
		abort();
	if (d.action == RSV_ACT_RESPOND && !d.resp)
		abort();
	if (d.action == RSV_ACT_FORWARD && rsv_upstream_query(&d, 0x1234, &q, &qlen) == 0) {
		if (flags & 4) {
			uint8_t *r = malloc(qlen + anslen);

			if (r) {
				memcpy(r, q, qlen);
				/* drop the OPT record, set QR/TC, point ANCOUNT at the fuzz bytes */
				r[2] |= 0x80;
				if (flags & 8)
					r[2] |= 0x02;
				r[6] = 0;
				r[7] = ancount;
				r[10] = 0;
				r[11] = 0;
				qlen -= 11;  /* the OPT RR ldns appends is 11 bytes */
				memcpy(r + qlen, data + msglen, anslen);
				rsv_process_reply(&ctx, &d, 0x1234, r, qlen + anslen, flags & 1);
				free(r);
			}
		}
		free(q);
	}
	line = rsv_log_line(&d, &m);
	if (line) {
		/* one strict JSON object, then its newline */
		line[strlen(line) - 1] = 0;
		json_object_put(fuzz_json_line(line, strlen(line)));
	}
	free(line);
	rsv_decision_free(&d);
	return 0;
}
