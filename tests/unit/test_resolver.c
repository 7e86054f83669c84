/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_resolver.c - the resolver's decision logic as pure functions: query
 * bytes in, verdict and response bytes out (userspace/resolver/decide.c),
 * the upstream reply check and answer filter (the ranges: test_netaddr.c), tunnelling
 * heuristics, the query log line, and address parsing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "resolver.h"

static const char POLICY[] =
	"version: 1\n"
	"name: unit\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [443]\n"
	"    why: api\n"
	"  - host: \"*.pkg.example.org\"\n"
	"    ports: [443]\n"
	"    why: mirror\n"
	"  - url: http://deb.example.net/debian/\n"
	"    why: apt\n"
	"  - cidr: 198.51.100.0/24\n"
	"    ports: [5432]\n"
	"    protocol: tcp\n"
	"    why: database\n";

static const char POLICY_REFUSED[] =
	"version: 1\n"
	"name: unit-refused\n"
	"dns:\n"
	"  on_deny: refused\n"
	"  qtypes: [A, AAAA, TXT]\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [443]\n"
	"    why: api\n";

struct fx {
	struct sluice_policy *p;
	struct rsv_ctx ctx;
	struct rsv_decision d;
};

static struct sluice_policy *load(const char *text)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("unit.yaml", text, strlen(text), &p, &err) != 0)
		fail_msg("policy: %s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	return p;
}

/* The resolver's context on policy p, with its name index, as main.c makes it. */
static void use_policy(struct fx *f, struct sluice_policy *p)
{
	sluice_name_index_free(f->ctx.names);
	f->ctx.policy = p;
	f->ctx.names = sluice_name_index_new(p);
	assert_non_null(f->ctx.names);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	f->p = load(POLICY);
	use_policy(f, f->p);
	f->ctx.mode = SLUICE_MODE_ENFORCE;
	f->d.rcode = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	rsv_decision_free(&f->d);
	rsv_tunnel_free(f->ctx.tunnel);
	sluice_name_index_free(f->ctx.names);
	sluice_policy_free(f->p);
	free(f);
	return 0;
}

/* --- building test messages with ldns ------------------------------------ */

struct qopt {
	uint16_t id;
	uint16_t qclass;
	bool edns;
	uint16_t edns_size;
	uint8_t edns_version;
};

static size_t query(const char *name, uint16_t qtype, const struct qopt *o, uint8_t *out, size_t cap)
{
	ldns_rdf *dn = ldns_dname_new_frm_str(name);
	ldns_pkt *p;
	uint8_t *w = NULL;
	size_t len = 0;

	assert_non_null(dn);
	p = ldns_pkt_query_new(dn, (ldns_rr_type)qtype,
			       (ldns_rr_class)(o && o->qclass ? o->qclass : LDNS_RR_CLASS_IN), LDNS_RD);
	assert_non_null(p);
	ldns_pkt_set_id(p, o ? o->id : 0x4242);
	if (o && o->edns) {
		ldns_pkt_set_edns_udp_size(p, o->edns_size);
		ldns_pkt_set_edns_version(p, o->edns_version);
	}
	assert_int_equal(ldns_pkt2wire(&w, p, &len), LDNS_STATUS_OK);
	assert_true(len <= cap);
	memcpy(out, w, len);
	free(w);
	ldns_pkt_free(p);
	return len;
}

static ldns_pkt *resp_pkt(const struct rsv_decision *d)
{
	ldns_pkt *r = NULL;

	assert_non_null(d->resp);
	assert_int_equal(ldns_wire2pkt(&r, d->resp, d->resp_len), LDNS_STATUS_OK);
	assert_true(ldns_pkt_qr(r));
	assert_int_equal(ldns_pkt_id(r), d->id);
	return r;
}

/* An upstream reply to the query `d` would send with `id`; rrs in zone
 * format, NULL-terminated. */
static size_t reply(const struct rsv_decision *d, uint16_t id, int rcode, bool tc,
		    const char *const *rrs, uint8_t **out)
{
	uint8_t *q = NULL, *w = NULL;
	size_t qlen = 0, len = 0;
	ldns_pkt *p = NULL;

	assert_int_equal(rsv_upstream_query(d, id, &q, &qlen), 0);
	assert_int_equal(ldns_wire2pkt(&p, q, qlen), LDNS_STATUS_OK);
	free(q);
	ldns_pkt_set_qr(p, true);
	ldns_pkt_set_ra(p, true);
	ldns_pkt_set_tc(p, tc);
	ldns_pkt_set_rcode(p, (uint8_t)rcode);
	for (; rrs && *rrs; rrs++) {
		ldns_rr *rr = NULL;

		assert_int_equal(ldns_rr_new_frm_str(&rr, *rrs, 0, NULL, NULL), LDNS_STATUS_OK);
		ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
	}
	assert_int_equal(ldns_pkt2wire(&w, p, &len), LDNS_STATUS_OK);
	ldns_pkt_free(p);
	*out = w;
	return len;
}

static enum rsv_action decide(struct fx *f, const uint8_t *m, size_t len)
{
	rsv_decision_free(&f->d);
	return rsv_decide(&f->ctx, m, len, false, 100.0, &f->d);
}

static void expect_respond(struct fx *f, const uint8_t *m, size_t len, int rcode, const char *reason,
			   enum rsv_verdict v)
{
	ldns_pkt *r;

	assert_int_equal(decide(f, m, len), RSV_ACT_RESPOND);
	assert_string_equal(f->d.reason, reason);
	assert_int_equal(f->d.verdict, v);
	assert_int_equal(f->d.rcode, rcode);
	r = resp_pkt(&f->d);
	assert_int_equal(ldns_pkt_get_rcode(r), rcode & 0xf);
	assert_int_equal(ldns_pkt_ancount(r), 0);
	ldns_pkt_free(r);
}

/* --- queries -------------------------------------------------------------- */

static void test_allowed_name_forwards(void **state)
{
	struct fx *f = *state;
	uint8_t m[512], *q = NULL;
	size_t len = query("API.Example.com.", LDNS_RR_TYPE_A, NULL, m, sizeof(m)), qlen;
	ldns_pkt *p = NULL;
	char *s;

	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_int_equal(f->d.verdict, RSV_V_ALLOW);
	assert_string_equal(f->d.reason, "allowed");
	assert_string_equal(f->d.name, "api.example.com");
	assert_non_null(f->d.rule);
	assert_string_equal(f->d.rule->name, f->p->entries[0].name);
	assert_null(f->d.resp);

	/* the upstream query is built fresh: our ID, RD, the normalised name, EDNS */
	assert_int_equal(rsv_upstream_query(&f->d, 0xbeef, &q, &qlen), 0);
	assert_int_equal(ldns_wire2pkt(&p, q, qlen), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_id(p), 0xbeef);
	assert_true(ldns_pkt_rd(p));
	assert_false(ldns_pkt_qr(p));
	assert_int_equal(ldns_pkt_qdcount(p), 1);
	assert_int_equal(ldns_pkt_arcount(p), 0);
	assert_int_equal(ldns_pkt_edns_udp_size(p), 1232);
	s = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(p), 0)));
	assert_string_equal(s, "api.example.com.");
	free(s);
	free(q);
	ldns_pkt_free(p);
}

static void test_url_host_and_wildcard(void **state)
{
	struct fx *f = *state;
	uint8_t m[512];
	size_t len;

	len = query("deb.example.net", LDNS_RR_TYPE_AAAA, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	len = query("a.b.pkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_string_equal(f->d.rule->name, f->p->entries[1].name);
	/* never the apex, never across a label boundary */
	len = query("pkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_NXDOMAIN, "name_not_allowed", RSV_V_DENY);
	len = query("evilpkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_NXDOMAIN, "name_not_allowed", RSV_V_DENY);
	len = query("api.example.com.evil.net", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_NXDOMAIN, "name_not_allowed", RSV_V_DENY);
}

static void test_denied_name_on_deny(void **state)
{
	struct fx *f = *state;
	struct qopt o = { .id = 0x7777, .edns = true, .edns_size = 4096 };
	uint8_t m[512];
	size_t len = query("exfil.attacker.example", LDNS_RR_TYPE_A, &o, m, sizeof(m));
	ldns_pkt *r;
	char *s;

	expect_respond(f, m, len, RSV_NXDOMAIN, "name_not_allowed", RSV_V_DENY);
	assert_null(f->d.rule);
	r = resp_pkt(&f->d);
	assert_int_equal(ldns_pkt_id(r), 0x7777);
	assert_true(ldns_pkt_rd(r));
	assert_true(ldns_pkt_ra(r));
	assert_int_equal(ldns_pkt_qdcount(r), 1);
	s = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(r), 0)));
	assert_string_equal(s, "exfil.attacker.example.");
	free(s);
	assert_true(ldns_pkt_edns(r));  /* OPT because the query had one */
	ldns_pkt_free(r);

	/* on_deny: refused */
	sluice_policy_free(f->p);
	f->p = load(POLICY_REFUSED);
	use_policy(f, f->p);
	expect_respond(f, m, len, RSV_REFUSED, "name_not_allowed", RSV_V_DENY);
}

static void test_qtypes(void **state)
{
	struct fx *f = *state;
	uint8_t m[512];
	size_t len;

	len = query("api.example.com", LDNS_RR_TYPE_TXT, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "qtype_not_allowed", RSV_V_DENY);
	len = query("api.example.com", LDNS_RR_TYPE_MX, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "qtype_not_allowed", RSV_V_DENY);
	/* a policy that lists TXT */
	sluice_policy_free(f->p);
	f->p = load(POLICY_REFUSED);
	use_policy(f, f->p);
	len = query("api.example.com", LDNS_RR_TYPE_TXT, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
}

static void test_audit_mode(void **state)
{
	struct fx *f = *state;
	uint8_t m[512];
	size_t len;

	f->ctx.mode = SLUICE_MODE_AUDIT;
	len = query("denied.example.com", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_int_equal(f->d.verdict, RSV_V_WOULD_DENY);
	assert_string_equal(f->d.reason, "name_not_allowed");
	assert_null(f->d.resp);
	len = query("api.example.com", LDNS_RR_TYPE_TXT, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_int_equal(f->d.verdict, RSV_V_WOULD_DENY);
	/* what no policy could allow is refused in audit mode too */
	len = query("api.example.com", LDNS_RR_TYPE_ANY, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "qtype_any", RSV_V_REFUSE);
	len = query("version.bind", LDNS_RR_TYPE_TXT, &(struct qopt){ .id = 1, .qclass = LDNS_RR_CLASS_CH },
		    m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "class_chaos", RSV_V_REFUSE);
}

/* Raw messages for what ldns would not build. */
static void test_refusal_classes(void **state)
{
	struct fx *f = *state;
	uint8_t m[512];
	size_t len;
	/* header + "a.b" A IN */
	static const uint8_t base[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
					1, 'a', 1, 'b', 0, 0, 1, 0, 1 };
	uint8_t b[sizeof(base) + 64];

	/* shorter than a header: nothing to answer to */
	assert_int_equal(decide(f, base, 11), RSV_ACT_DROP);
	assert_string_equal(f->d.reason, "malformed_header");
	assert_int_equal(f->d.rcode, -1);
	assert_int_equal(decide(f, base, 0), RSV_ACT_DROP);

	/* QR=1: a response sent to us is never answered */
	memcpy(b, base, sizeof(base));
	b[2] |= 0x80;
	assert_int_equal(decide(f, b, sizeof(base)), RSV_ACT_DROP);
	assert_string_equal(f->d.reason, "response_received");

	/* opcodes other than QUERY: NOTIFY (4), UPDATE (5), STATUS (2) */
	for (int op = 1; op < 16; op++) {
		memcpy(b, base, sizeof(base));
		b[2] = (uint8_t)((b[2] & ~0x78) | (op << 3));
		expect_respond(f, b, sizeof(base), RSV_NOTIMP, "opcode_not_query", RSV_V_REFUSE);
	}

	/* QDCOUNT 0 and 2 */
	memcpy(b, base, sizeof(base));
	b[5] = 0;
	expect_respond(f, b, 12, RSV_FORMERR, "qdcount", RSV_V_REFUSE);
	b[5] = 2;
	memcpy(b + sizeof(base), base + 12, sizeof(base) - 12);
	expect_respond(f, b, sizeof(base) + sizeof(base) - 12, RSV_FORMERR, "qdcount", RSV_V_REFUSE);

	/* QDCOUNT 1 and a second question after it; trailing garbage: one
	 * framing only, FORMERR (ldns alone would read the first question) */
	memcpy(b, base, sizeof(base));
	memcpy(b + sizeof(base), base + 12, sizeof(base) - 12);
	expect_respond(f, b, sizeof(base) + sizeof(base) - 12, RSV_FORMERR, "trailing_bytes", RSV_V_REFUSE);
	assert_int_equal(f->d.trailing, sizeof(base) - 12);
	memcpy(b, base, sizeof(base));
	b[sizeof(base)] = 0xde;
	expect_respond(f, b, sizeof(base) + 1, RSV_FORMERR, "trailing_bytes", RSV_V_REFUSE);
	assert_int_equal(f->d.trailing, 1);
	decide(f, base, sizeof(base));   /* the same query, exactly framed: judged by the policy */
	assert_string_not_equal(f->d.reason, "trailing_bytes");
	assert_int_equal(f->d.trailing, 0);

	/* truncated question, label running past the end, compression loop */
	expect_respond(f, base, sizeof(base) - 2, RSV_FORMERR, "malformed", RSV_V_REFUSE);
	memcpy(b, base, sizeof(base));
	b[12] = 60;
	expect_respond(f, b, sizeof(base), RSV_FORMERR, "malformed", RSV_V_REFUSE);
	memcpy(b, base, 12);
	b[12] = 0xc0;
	b[13] = 12;  /* points at itself */
	b[14] = 0; b[15] = 1; b[16] = 0; b[17] = 1;
	expect_respond(f, b, 18, RSV_FORMERR, "malformed", RSV_V_REFUSE);

	/* records in the answer section of a query */
	memcpy(b, base, sizeof(base));
	b[7] = 1;
	expect_respond(f, b, sizeof(base), RSV_FORMERR, "malformed", RSV_V_REFUSE);

	/* EDNS version 1: BADVERS (extended rcode 16) */
	len = query("api.example.com", LDNS_RR_TYPE_A,
		    &(struct qopt){ .id = 2, .edns = true, .edns_size = 1232, .edns_version = 1 }, m,
		    sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_RESPOND);
	assert_string_equal(f->d.reason, "edns_version");
	assert_int_equal(f->d.rcode, 16);

	/* classes */
	len = query("api.example.com", LDNS_RR_TYPE_A, &(struct qopt){ .id = 3, .qclass = LDNS_RR_CLASS_CH },
		    m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "class_chaos", RSV_V_REFUSE);
	len = query("api.example.com", LDNS_RR_TYPE_A, &(struct qopt){ .id = 3, .qclass = LDNS_RR_CLASS_HS },
		    m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "class_not_in", RSV_V_REFUSE);
	len = query("api.example.com", LDNS_RR_TYPE_A, &(struct qopt){ .id = 3, .qclass = LDNS_RR_CLASS_ANY },
		    m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "class_not_in", RSV_V_REFUSE);

	/* qtypes no policy can allow */
	len = query("api.example.com", LDNS_RR_TYPE_ANY, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "qtype_any", RSV_V_REFUSE);
	len = query("api.example.com", LDNS_RR_TYPE_AXFR, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "zone_transfer", RSV_V_REFUSE);
	len = query("api.example.com", LDNS_RR_TYPE_IXFR, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "zone_transfer", RSV_V_REFUSE);
	len = query("api.example.com", LDNS_RR_TYPE_OPT, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_FORMERR, "qtype_meta", RSV_V_REFUSE);
	len = query("api.example.com", LDNS_RR_TYPE_TSIG, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_REFUSED, "qtype_meta", RSV_V_REFUSE);
}

static void test_invalid_names(void **state)
{
	struct fx *f = *state;
	uint8_t m[512];
	size_t len;
	/* "a.b\x00c" would be a dot inside a label: "api\.example" + "com" */
	static const uint8_t dot_in_label[] = { 0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
						11, 'a', 'p', 'i', '.', 'e', 'x', 'a', 'm', 'p', 'l', 'e',
						3, 'c', 'o', 'm', 0, 0, 1, 0, 1 };
	static const uint8_t nul_in_label[] = { 0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
						3, 'a', 0, 'i', 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 0,
						0, 1, 0, 1 };

	expect_respond(f, dot_in_label, sizeof(dot_in_label), RSV_NXDOMAIN, "invalid_name", RSV_V_DENY);
	assert_string_equal(f->d.name, "");
	expect_respond(f, nul_in_label, sizeof(nul_in_label), RSV_NXDOMAIN, "invalid_name", RSV_V_DENY);
	len = query(".", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_NXDOMAIN, "invalid_name", RSV_V_DENY);
	len = query("192.0.2.1", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_NXDOMAIN, "invalid_name", RSV_V_DENY);
	len = query("a b.example.com", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	expect_respond(f, m, len, RSV_NXDOMAIN, "invalid_name", RSV_V_DENY);
	/* audit mode does not forward names no policy can hold */
	f->ctx.mode = SLUICE_MODE_AUDIT;
	expect_respond(f, dot_in_label, sizeof(dot_in_label), RSV_NXDOMAIN, "invalid_name", RSV_V_DENY);
}

/* --- replies -------------------------------------------------------------- */

static void forward(struct fx *f, const char *name, uint16_t qtype, bool tcp)
{
	uint8_t m[512];
	size_t len = query(name, qtype, NULL, m, sizeof(m));

	rsv_decision_free(&f->d);
	assert_int_equal(rsv_decide(&f->ctx, m, len, tcp, 100.0, &f->d), RSV_ACT_FORWARD);
}

static enum rsv_reply feed(struct fx *f, uint16_t id, int rcode, bool tc, const char *const *rrs,
			   bool via_tcp)
{
	uint8_t *w;
	size_t len = reply(&f->d, id, rcode, tc, rrs, &w);
	enum rsv_reply r = rsv_process_reply(&f->ctx, &f->d, id, w, len, via_tcp);

	free(w);
	return r;
}

static void answers_of(struct fx *f, char *out, size_t cap)
{
	ldns_pkt *r = resp_pkt(&f->d);
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < ldns_pkt_ancount(r); i++) {
		char *s = ldns_rdf2str(ldns_rr_rdf(ldns_rr_list_rr(ldns_pkt_answer(r), i), 0));

		o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? " " : "", s);
		free(s);
	}
	ldns_pkt_free(r);
}

static void test_reply_matching(void **state)
{
	struct fx *f = *state;
	static const char *const rrs[] = { "api.example.com. 60 IN A 203.0.113.7", NULL };
	uint8_t *w;
	size_t len;

	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	f->ctx.allow_private = &(struct netaddr_cidr){ .family = AF_INET, .addr = { 203, 0, 113 }, .prefix_len = 24 };
	f->ctx.n_allow_private = 1;
	/* wrong ID */
	len = reply(&f->d, 1111, RSV_NOERROR, false, rrs, &w);
	assert_int_equal(rsv_process_reply(&f->ctx, &f->d, 2222, w, len, false), RSV_REPLY_IGNORE);
	/* a query, not a reply */
	w[2] &= (uint8_t)~0x80;
	assert_int_equal(rsv_process_reply(&f->ctx, &f->d, 1111, w, len, false), RSV_REPLY_IGNORE);
	free(w);
	/* another question */
	{
		struct rsv_decision other;
		uint8_t m[512];
		size_t ml = query("deb.example.net", LDNS_RR_TYPE_A, NULL, m, sizeof(m));

		assert_int_equal(rsv_decide(&f->ctx, m, ml, false, 1, &other), RSV_ACT_FORWARD);
		len = reply(&other, 1111, RSV_NOERROR, false, NULL, &w);
		assert_int_equal(rsv_process_reply(&f->ctx, &f->d, 1111, w, len, false), RSV_REPLY_IGNORE);
		free(w);
		rsv_decision_free(&other);
	}
	/* garbage */
	assert_int_equal(rsv_process_reply(&f->ctx, &f->d, 1111, (const uint8_t *)"\x04\x57\x80", 3, false),
			 RSV_REPLY_IGNORE);
	/* the real one; the client gets its own ID back */
	assert_int_equal(feed(f, 1111, RSV_NOERROR, false, rrs, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.rcode, RSV_NOERROR);
	{
		char a[256];

		answers_of(f, a, sizeof(a));
		assert_string_equal(a, "203.0.113.7");
	}
}

static void test_truncated_reply(void **state)
{
	struct fx *f = *state;

	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 5, RSV_NOERROR, true, NULL, false), RSV_REPLY_TRUNCATED);
	assert_null(f->d.resp);
	/* over TCP a TC reply is passed through */
	assert_int_equal(feed(f, 5, RSV_NOERROR, true, NULL, true), RSV_REPLY_DONE);
	assert_true(f->d.truncated);
	/* the server's last resort: TC to the client */
	assert_int_equal(rsv_fail(&f->d, RSV_NOERROR, true, "upstream_truncated"), 0);
	{
		ldns_pkt *r = resp_pkt(&f->d);

		assert_true(ldns_pkt_tc(r));
		ldns_pkt_free(r);
	}
	assert_int_equal(rsv_fail(&f->d, RSV_SERVFAIL, false, "upstream_timeout"), 0);
	assert_int_equal(f->d.rcode, RSV_SERVFAIL);
	assert_string_equal(f->d.reason, "upstream_timeout");
}

static void test_upstream_rcodes(void **state)
{
	struct fx *f = *state;

	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 9, RSV_NXDOMAIN, false, NULL, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.rcode, RSV_NXDOMAIN);
	assert_int_equal(feed(f, 9, RSV_FORMERR, false, NULL, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.rcode, RSV_SERVFAIL);
	assert_int_equal(feed(f, 9, RSV_NOTIMP, false, NULL, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.rcode, RSV_SERVFAIL);
	assert_int_equal(feed(f, 9, RSV_REFUSED, false, NULL, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.rcode, RSV_REFUSED);
}

static void test_private_answers_dropped(void **state)
{
	struct fx *f = *state;
	static const char *const mixed[] = {
		"api.example.com. 60 IN A 10.0.0.5",
		"api.example.com. 60 IN A 8.8.8.8",
		"api.example.com. 60 IN A 169.254.169.254",
		NULL };
	static const char *const all_private[] = {
		"api.example.com. 60 IN A 127.0.0.1",
		"api.example.com. 60 IN A 192.168.1.1",
		"api.example.com. 60 IN A 192.0.2.1",
		NULL };
	static const char *const v6[] = {
		"api.example.com. 60 IN AAAA ::1",
		"api.example.com. 60 IN AAAA ::ffff:10.0.0.1",
		"api.example.com. 60 IN AAAA 64:ff9b::a00:1",
		"api.example.com. 60 IN AAAA 2002:a00:1::1",
		"api.example.com. 60 IN AAAA 2001:0:a00:1::1",
		"api.example.com. 60 IN AAAA fd00:ec2::254",
		"api.example.com. 60 IN AAAA 2001:db8::1",
		"api.example.com. 60 IN AAAA 2606:4700::1111",
		NULL };
	char a[512];

	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, mixed, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.rcode, RSV_NOERROR);
	assert_int_equal(f->d.verdict, RSV_V_ALLOW);
	answers_of(f, a, sizeof(a));
	assert_string_equal(a, "8.8.8.8");
	assert_int_equal(f->d.n_answers, 3);
	assert_int_equal(f->d.n_dropped, 2);
	assert_string_equal(f->d.answers[0].dropped_why, "private");
	assert_false(f->d.answers[0].sent);
	assert_true(f->d.answers[1].sent);
	assert_string_equal(f->d.answers[2].dropped_why, "metadata");

	/* nothing public left: on_deny (NXDOMAIN), reason private_answer */
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, all_private, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.rcode, RSV_NXDOMAIN);
	assert_int_equal(f->d.verdict, RSV_V_DENY);
	assert_string_equal(f->d.reason, "private_answer");
	answers_of(f, a, sizeof(a));
	assert_string_equal(a, "");

	forward(f, "api.example.com", LDNS_RR_TYPE_AAAA, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, v6, false), RSV_REPLY_DONE);
	answers_of(f, a, sizeof(a));
	assert_string_equal(a, "2606:4700::1111");
	assert_string_equal(f->d.answers[0].dropped_why, "loopback");
	assert_string_equal(f->d.answers[1].dropped_why, "private");
	assert_string_equal(f->d.answers[2].dropped_why, "nat64");
	assert_string_equal(f->d.answers[3].dropped_why, "6to4");
	assert_string_equal(f->d.answers[4].dropped_why, "teredo");
	assert_string_equal(f->d.answers[5].dropped_why, "metadata");
	assert_string_equal(f->d.answers[6].dropped_why, "documentation");
}

static void test_private_answer_exceptions(void **state)
{
	struct fx *f = *state;
	static const char *const rrs[] = {
		"api.example.com. 60 IN A 192.0.2.1",     /* --allow-private-answers */
		"api.example.com. 60 IN A 198.51.100.9",  /* the policy's cidr entry */
		"api.example.com. 60 IN A 203.0.113.1",   /* neither */
		NULL };
	struct netaddr_cidr c;
	char a[256];

	assert_int_equal(netaddr_cidr_parse("192.0.2.0/24", &c), 0);
	f->ctx.allow_private = &c;
	f->ctx.n_allow_private = 1;
	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, rrs, false), RSV_REPLY_DONE);
	answers_of(f, a, sizeof(a));
	assert_string_equal(a, "192.0.2.1 198.51.100.9");
	assert_int_equal(f->d.n_dropped, 1);

	/* audit mode passes non-public answers on, as would_deny */
	f->ctx.n_allow_private = 0;
	f->ctx.mode = SLUICE_MODE_AUDIT;
	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, rrs, false), RSV_REPLY_DONE);
	answers_of(f, a, sizeof(a));
	assert_string_equal(a, "192.0.2.1 198.51.100.9 203.0.113.1");
	assert_int_equal(f->d.verdict, RSV_V_WOULD_DENY);
	assert_string_equal(f->d.reason, "private_answer");
}

/* --- the answer cache ------------------------------------------------------ */

static void test_cache_ttl_and_bounds(void **state)
{
	struct fx *f = *state;
	static const char *const rrs[] = { "api.example.com. 60 IN A 198.51.100.9", NULL };
	struct rsv_cache *c = rsv_cache_new(2, 30);
	const uint8_t *m;
	size_t len;
	uint32_t age;
	uint8_t *w;
	size_t wl;
	uint64_t hits, misses;

	assert_non_null(c);
	assert_null(rsv_cache_new(0, 30));
	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	wl = reply(&f->d, 7, RSV_NOERROR, false, rrs, &w);
	assert_int_equal(rsv_process_reply(&f->ctx, &f->d, 7, w, wl, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.cache_ttl, 60);
	assert_int_equal(rsv_cache_put(c, "api.example.com", LDNS_RR_TYPE_A, w, wl, f->d.cache_ttl, 100.0), 0);
	/* capped at max_ttl (30), and keyed by qtype */
	assert_true(rsv_cache_get(c, "api.example.com", LDNS_RR_TYPE_A, 129.5, &m, &len, &age));
	assert_int_equal(age, 29);
	assert_int_equal(len, wl);
	assert_memory_equal(m, w, wl);
	assert_false(rsv_cache_get(c, "api.example.com", LDNS_RR_TYPE_AAAA, 101.0, &m, &len, &age));
	assert_false(rsv_cache_get(c, "api.example.com", LDNS_RR_TYPE_A, 130.0, &m, &len, &age));
	assert_int_equal(rsv_cache_count(c), 0);   /* the expired one was dropped */
	/* ttl 0 and oversized messages are not kept */
	assert_int_equal(rsv_cache_put(c, "a.example", 1, w, wl, 0, 100.0), 0);
	assert_int_equal(rsv_cache_put(c, "a.example", 1, w, RSV_CACHE_MAX_MSG + 1, 60, 100.0), 0);
	assert_int_equal(rsv_cache_count(c), 0);
	/* two entries at most, least recently used out first */
	assert_int_equal(rsv_cache_put(c, "a.example", 1, w, wl, 60, 100.0), 0);
	assert_int_equal(rsv_cache_put(c, "b.example", 1, w, wl, 60, 100.0), 0);
	assert_true(rsv_cache_get(c, "a.example", 1, 101.0, &m, &len, &age));
	assert_int_equal(rsv_cache_put(c, "c.example", 1, w, wl, 60, 100.0), 0);
	assert_int_equal(rsv_cache_count(c), 2);
	assert_false(rsv_cache_get(c, "b.example", 1, 101.0, &m, &len, &age));
	assert_true(rsv_cache_get(c, "a.example", 1, 101.0, &m, &len, &age));
	assert_true(rsv_cache_get(c, "c.example", 1, 101.0, &m, &len, &age));
	/* a replaced entry is not counted twice; a dropped one is gone */
	assert_int_equal(rsv_cache_put(c, "c.example", 1, w, wl, 60, 102.0), 0);
	assert_int_equal(rsv_cache_count(c), 2);
	rsv_cache_drop(c, "c.example", 1);
	assert_false(rsv_cache_get(c, "c.example", 1, 103.0, &m, &len, &age));
	rsv_cache_stats(c, &hits, &misses);
	assert_int_equal(hits, 4);
	assert_int_equal(misses, 4);
	free(w);
	rsv_cache_free(c);
}

static void test_cache_what_is_cacheable(void **state)
{
	struct fx *f = *state;
	static const char *const two[] = { "api.example.com. 60 IN A 198.51.100.9",
					   "api.example.com. 20 IN A 198.51.100.10", NULL };

	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, two, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.cache_ttl, 20);                 /* the smallest TTL */
	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_SERVFAIL, false, NULL, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.cache_ttl, 0);                  /* failures are not kept */
	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_NXDOMAIN, false, NULL, false), RSV_REPLY_DONE);
	assert_int_equal(f->d.cache_ttl, 0);                  /* negative without SOA (RFC 2308 5) */
	forward(f, "api.example.com", LDNS_RR_TYPE_A, true);
	assert_int_equal(feed(f, 1, RSV_NOERROR, true, two, true), RSV_REPLY_DONE);
	assert_int_equal(f->d.cache_ttl, 0);                  /* truncated */
}

/* The cache holds bytes, never a verdict: a reply kept under one policy is
 * filtered under the policy of each use, and TTLs are aged. */
static void test_cached_reply_filtered_again(void **state)
{
	struct fx *f = *state;
	static const char *const rrs[] = { "api.example.com. 60 IN A 198.51.100.9",
					   "api.example.com. 60 IN A 203.0.113.1", NULL };
	struct sluice_policy *other = load(POLICY_REFUSED);   /* no cidr entry */
	uint8_t *w;
	size_t wl;
	char a[256];
	ldns_pkt *r;

	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	wl = reply(&f->d, 9, RSV_NOERROR, false, rrs, &w);
	assert_int_equal(rsv_process_reply(&f->ctx, &f->d, 9, w, wl, false), RSV_REPLY_DONE);
	assert_false(f->d.cached);

	/* same policy, 25 s later: the cidr entry's address only, TTL 35 */
	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(rsv_process_cached(&f->ctx, &f->d, w, wl, 25), RSV_REPLY_DONE);
	assert_true(f->d.cached);
	answers_of(f, a, sizeof(a));
	assert_string_equal(a, "198.51.100.9");
	r = resp_pkt(&f->d);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(r), 0)), 35);
	ldns_pkt_free(r);

	/* a policy without the cidr entry: nothing usable is left */
	use_policy(f, other);
	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(rsv_process_cached(&f->ctx, &f->d, w, wl, 1), RSV_REPLY_DONE);
	assert_string_equal(f->d.reason, "private_answer");
	assert_int_equal(f->d.verdict, RSV_V_DENY);
	assert_int_equal(f->d.rcode, RSV_REFUSED);

	/* bytes for another question are refused, never served */
	use_policy(f, f->p);
	forward(f, "x.pkg.example.org", LDNS_RR_TYPE_A, false);
	assert_int_equal(rsv_process_cached(&f->ctx, &f->d, w, wl, 1), RSV_REPLY_IGNORE);
	assert_false(f->d.cached);
	free(w);
	sluice_policy_free(other);
}

static void test_answer_chain(void **state)
{
	struct fx *f = *state;
	static const char *const rrs[] = {
		"x.pkg.example.org. 60 IN CNAME cdn.example.net.",
		"cdn.example.net. 60 IN CNAME edge.example.net.",
		"edge.example.net. 60 IN A 93.184.216.34",
		"unrelated.example.com. 60 IN A 93.184.216.35",   /* not on the chain */
		"edge.example.net. 60 IN TXT \"hello\"",          /* not the qtype */
		"edge.example.net. 60 IN AAAA 2606:4700::1",      /* not the qtype */
		NULL };
	char a[512];

	forward(f, "x.pkg.example.org", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, rrs, false), RSV_REPLY_DONE);
	answers_of(f, a, sizeof(a));
	assert_string_equal(a, "cdn.example.net. edge.example.net. 93.184.216.34");
	assert_string_equal(f->d.answers[3].dropped_why, "out_of_chain");
	assert_string_equal(f->d.answers[4].dropped_why, "unexpected_type");
	assert_string_equal(f->d.answers[5].dropped_why, "unexpected_type");
}

static void test_udp_size_limit(void **state)
{
	struct fx *f = *state;
	const char *rrs[41];
	char buf[40][64];
	ldns_pkt *r;
	int i;

	for (i = 0; i < 40; i++) {
		snprintf(buf[i], sizeof(buf[i]), "api.example.com. 60 IN AAAA 2606:4700::%x", i + 1);
		rrs[i] = buf[i];
	}
	rrs[40] = NULL;
	/* 40 AAAA records are > 512 bytes: a UDP client without EDNS gets TC */
	forward(f, "api.example.com", LDNS_RR_TYPE_AAAA, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, rrs, true), RSV_REPLY_DONE);
	assert_true(f->d.resp_len <= 512);
	assert_true(f->d.truncated);
	r = resp_pkt(&f->d);
	assert_true(ldns_pkt_tc(r));
	assert_int_equal(ldns_pkt_ancount(r), 0);
	ldns_pkt_free(r);
	/* over TCP it all goes */
	forward(f, "api.example.com", LDNS_RR_TYPE_AAAA, true);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, rrs, true), RSV_REPLY_DONE);
	assert_false(f->d.truncated);
	r = resp_pkt(&f->d);
	assert_int_equal(ldns_pkt_ancount(r), 40);
	ldns_pkt_free(r);
}

/* --- tunnelling ----------------------------------------------------------- */

static void test_entropy(void **state)
{
	assert_true(rsv_entropy("aaaa", 4) < 1e-9);
	assert_true(rsv_entropy("ab", 2) > 0.999 && rsv_entropy("ab", 2) < 1.001);
	assert_true(rsv_entropy("abcdefgh", 8) > 2.999 && rsv_entropy("abcdefgh", 8) < 3.001);
	assert_true(rsv_entropy("", 0) == 0);
}

static void test_tunnel_shape(void **state)
{
	struct fx *f = *state;
	uint8_t m[512];
	size_t len;

	f->ctx.tunnel = rsv_tunnel_new(f->p->n_entries, NULL);
	assert_non_null(f->ctx.tunnel);
	/* ordinary names are not suspect */
	len = query("mirror-eu-west-1.pkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_false(f->d.tunnel_suspect);
	len = query("download.pkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_false(f->d.tunnel_suspect);
	/* a long label (dnscat2-style hex) */
	len = query("6e8f01a3c9b27d45e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3.pkg.example.org",
		    LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_true(f->d.tunnel_suspect);
	assert_string_equal(f->d.tunnel_why, "long_label");
	/* base32-looking labels */
	len = query("mzxw6ytboi2dsnrtgq3donzy.pkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_true(f->d.tunnel_suspect);
	assert_string_equal(f->d.tunnel_why, "high_entropy");
	/* many labels adding up */
	len = query("aaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbb.cccccccccccccccccccccccccc."
		    "dddddddddddddd.pkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_true(f->d.tunnel_suspect);
	assert_string_equal(f->d.tunnel_why, "long_name");
	/* exact entries are a closed set: never checked */
	len = query("api.example.com", LDNS_RR_TYPE_A, NULL, m, sizeof(m));
	assert_int_equal(decide(f, m, len), RSV_ACT_FORWARD);
	assert_false(f->d.tunnel_suspect);
}

static void test_tunnel_rate(void **state)
{
	struct fx *f = *state;
	struct rsv_tunnel_limits l;
	const struct sluice_entry *w = &f->p->entries[1];
	const char *why;
	char name[64];
	int i;

	rsv_tunnel_limits_default(&l);
	l.burst = 10;
	l.per_second = 1;
	f->ctx.tunnel = rsv_tunnel_new(f->p->n_entries, &l);
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "n%d.pkg.example.org", i);
		assert_int_equal(rsv_tunnel_check(f->ctx.tunnel, w, name, 50.0, &why), 0);
	}
	/* the 11th new name within the same second is limited */
	assert_int_equal(rsv_tunnel_check(f->ctx.tunnel, w, "n10.pkg.example.org", 50.0, &why),
			 RSV_TUNNEL_SUSPECT | RSV_TUNNEL_LIMITED);
	assert_string_equal(why, "rate");
	/* names already seen are never limited */
	assert_int_equal(rsv_tunnel_check(f->ctx.tunnel, w, "n3.pkg.example.org", 50.0, &why), 0);
	/* two seconds later two more new names pass */
	assert_int_equal(rsv_tunnel_check(f->ctx.tunnel, w, "n10.pkg.example.org", 52.0, &why), 0);
	assert_int_equal(rsv_tunnel_check(f->ctx.tunnel, w, "n11.pkg.example.org", 52.0, &why), 0);
	assert_int_equal(rsv_tunnel_check(f->ctx.tunnel, w, "n12.pkg.example.org", 52.0, &why),
			 RSV_TUNNEL_SUSPECT | RSV_TUNNEL_LIMITED);

	/* through rsv_decide: REFUSED in enforce, forwarded in audit */
	{
		uint8_t m[512];
		size_t len = query("n13.pkg.example.org", LDNS_RR_TYPE_A, NULL, m, sizeof(m));

		rsv_decision_free(&f->d);
		assert_int_equal(rsv_decide(&f->ctx, m, len, false, 52.0, &f->d), RSV_ACT_RESPOND);
		assert_string_equal(f->d.reason, "dns_tunnel_rate");
		assert_int_equal(f->d.rcode, RSV_REFUSED);
		assert_true(f->d.tunnel_suspect);
		f->ctx.mode = SLUICE_MODE_AUDIT;
		rsv_decision_free(&f->d);
		assert_int_equal(rsv_decide(&f->ctx, m, len, false, 52.0, &f->d), RSV_ACT_FORWARD);
		assert_int_equal(f->d.verdict, RSV_V_WOULD_DENY);
	}
}

/* --- the log line --------------------------------------------------------- */

static const char *jstr(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("missing key %s", k);
	return json_object_get_string(v);
}

static json_object *logline(struct fx *f, const struct rsv_logmeta *m)
{
	char *s = rsv_log_line(&f->d, m);
	json_object *o;

	assert_non_null(s);
	assert_int_equal(s[strlen(s) - 1], '\n');
	assert_null(strchr(s, '\n') == s + strlen(s) - 1 ? NULL : "inner newline");
	o = json_tokener_parse(s);
	assert_non_null(o);
	free(s);
	return o;
}

static void test_log_allowed(void **state)
{
	struct fx *f = *state;
	static const char *const rrs[] = {
		"api.example.com. 60 IN A 8.8.4.4",
		"api.example.com. 60 IN A 10.0.0.1",
		NULL };
	struct timespec ts = { .tv_sec = 1700000000, .tv_nsec = 1500000 };
	struct rsv_logmeta m = { .src_ip = "127.0.0.1", .src_port = 40000, .duration_ns = 1234,
				 .upstream = "127.0.0.1:53", .upstream_transport = "udp",
				 .upstream_tries = 1, .now = &ts };
	json_object *o, *arr, *v;

	forward(f, "api.example.com", LDNS_RR_TYPE_A, false);
	assert_int_equal(feed(f, 1, RSV_NOERROR, false, rrs, false), RSV_REPLY_DONE);
	o = logline(f, &m);
	assert_string_equal(jstr(o, "@timestamp"), "2023-11-14T22:13:20.001500Z");
	assert_string_equal(jstr(o, "event.action"), "dns-query");
	assert_string_equal(jstr(o, "event.outcome"), "success");
	assert_string_equal(jstr(o, "event.reason"), "allowed");
	assert_string_equal(jstr(o, "dns.question.name"), "api.example.com");
	assert_string_equal(jstr(o, "dns.question.type"), "A");
	assert_string_equal(jstr(o, "dns.response_code"), "NOERROR");
	assert_string_equal(jstr(o, "source.ip"), "127.0.0.1");
	assert_string_equal(jstr(o, "source.port"), "40000");
	/* the envelope (sandbox, policy, mode) is the writer's: test_events.c */
	assert_string_equal(jstr(o, "sluice.verdict"), "allow");
	assert_string_equal(jstr(o, "rule.name"), f->p->entries[0].name);
	assert_string_equal(jstr(o, "network.transport"), "udp");
	assert_string_equal(jstr(o, "sluice.upstream.ip"), "127.0.0.1");
	assert_string_equal(jstr(o, "sluice.upstream.port"), "53");
	assert_true(json_object_object_get_ex(o, "dns.answers", &arr));
	assert_int_equal(json_object_array_length(arr), 1);
	v = json_object_array_get_idx(arr, 0);
	assert_string_equal(jstr(v, "type"), "A");
	assert_string_equal(jstr(v, "data"), "8.8.4.4");
	assert_true(json_object_object_get_ex(o, "sluice.dns_filtered_answers", &arr));
	assert_int_equal(json_object_array_length(arr), 1);
	assert_string_equal(jstr(json_object_array_get_idx(arr, 0), "data"), "10.0.0.1");
	assert_string_equal(jstr(json_object_array_get_idx(arr, 0), "sluice_filter"), "private");
	assert_false(json_object_object_get_ex(o, "sluice.dns_tunnel_suspect", &v));
	json_object_put(o);
}

static void test_log_denied_and_audit(void **state)
{
	struct fx *f = *state;
	struct rsv_logmeta m = { .src_ip = "::1", .src_port = 5, .duration_ns = 1 };
	uint8_t q[512];
	size_t len = query("Evil\\\"name.example", LDNS_RR_TYPE_A, NULL, q, sizeof(q));
	json_object *o, *v;

	/* a quote in a label: invalid, and escaped in the log */
	expect_respond(f, q, len, RSV_NXDOMAIN, "invalid_name", RSV_V_DENY);
	o = logline(f, &m);
	assert_string_equal(jstr(o, "event.outcome"), "failure");
	assert_string_equal(jstr(o, "sluice.verdict"), "deny");
	assert_string_equal(jstr(o, "dns.response_code"), "NXDOMAIN");
	assert_non_null(strstr(jstr(o, "dns.question.name"), "name.example"));
	assert_false(json_object_object_get_ex(o, "sluice.upstream.ip", &v));
	assert_false(json_object_object_get_ex(o, "rule.name", &v));
	json_object_put(o);

	f->ctx.mode = SLUICE_MODE_AUDIT;
	len = query("other.example", LDNS_RR_TYPE_A, NULL, q, sizeof(q));
	assert_int_equal(decide(f, q, len), RSV_ACT_FORWARD);
	assert_int_equal(feed(f, 3, RSV_NOERROR, false, NULL, false), RSV_REPLY_DONE);
	o = logline(f, &m);
	assert_string_equal(jstr(o, "event.outcome"), "unknown");
	assert_string_equal(jstr(o, "sluice.verdict"), "would_deny");
	assert_string_equal(jstr(o, "event.reason"), "name_not_allowed");
	json_object_put(o);

	/* dropped messages: no response code */
	assert_int_equal(decide(f, q, 5), RSV_ACT_DROP);
	o = logline(f, &m);
	assert_false(json_object_object_get_ex(o, "dns.response_code", &v));
	assert_false(json_object_object_get_ex(o, "dns.question.name", &v));
	assert_string_equal(jstr(o, "event.reason"), "malformed_header");
	json_object_put(o);
}

static void test_log_tunnel_flag(void **state)
{
	struct fx *f = *state;
	struct rsv_logmeta m = { .src_port = -1 };
	uint8_t q[512];
	size_t len = query("6e8f01a3c9b27d45e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3.pkg.example.org",
			   LDNS_RR_TYPE_A, NULL, q, sizeof(q));
	json_object *o, *v;

	f->ctx.tunnel = rsv_tunnel_new(f->p->n_entries, NULL);
	assert_int_equal(decide(f, q, len), RSV_ACT_FORWARD);
	o = logline(f, &m);
	assert_true(json_object_object_get_ex(o, "sluice.dns_tunnel_suspect", &v));
	assert_true(json_object_get_boolean(v));
	assert_string_equal(jstr(o, "sluice.dns_tunnel_reason"), "long_label");
	json_object_put(o);
}

/* --- addresses ------------------------------------------------------------ */

static void test_hostport(void **state)
{
	struct sockaddr_storage ss;
	unsigned len;
	char buf[64];

	assert_int_equal(rsv_parse_hostport("127.0.0.1", 53, &ss, &len), 0);
	assert_string_equal(rsv_sockaddr_str((struct sockaddr *)&ss, buf, sizeof(buf)), "127.0.0.1:53");
	assert_true(rsv_sockaddr_is_loopback((struct sockaddr *)&ss));
	assert_int_equal(rsv_parse_hostport("192.0.2.1:5353", 53, &ss, &len), 0);
	assert_string_equal(rsv_sockaddr_str((struct sockaddr *)&ss, buf, sizeof(buf)), "192.0.2.1:5353");
	assert_false(rsv_sockaddr_is_loopback((struct sockaddr *)&ss));
	assert_int_equal(rsv_parse_hostport("::1", 53, &ss, &len), 0);
	assert_string_equal(rsv_sockaddr_str((struct sockaddr *)&ss, buf, sizeof(buf)), "[::1]:53");
	assert_true(rsv_sockaddr_is_loopback((struct sockaddr *)&ss));
	assert_int_equal(rsv_parse_hostport("[2001:db8::1]:853", 53, &ss, &len), 0);
	assert_string_equal(rsv_sockaddr_str((struct sockaddr *)&ss, buf, sizeof(buf)), "[2001:db8::1]:853");
	assert_int_equal(rsv_parse_hostport("[::ffff:127.0.0.1]", 53, &ss, &len), 0);
	assert_true(rsv_sockaddr_is_loopback((struct sockaddr *)&ss));
	assert_int_equal(rsv_parse_hostport("localhost", 53, &ss, &len), -1);   /* no lookups */
	assert_int_equal(rsv_parse_hostport("dns.example:53", 53, &ss, &len), -1);
	assert_int_equal(rsv_parse_hostport("127.0.0.1:0", 53, &ss, &len), -1);
	assert_int_equal(rsv_parse_hostport("127.0.0.1:65536", 53, &ss, &len), -1);
	assert_int_equal(rsv_parse_hostport("127.0.0.1:", 53, &ss, &len), -1);
	assert_int_equal(rsv_parse_hostport("[::1", 53, &ss, &len), -1);
	assert_int_equal(rsv_parse_hostport("[::1]x", 53, &ss, &len), -1);
	assert_int_equal(rsv_parse_hostport("", 53, &ss, &len), -1);
	assert_int_equal(rsv_parse_hostport("0x7f.1", 53, &ss, &len), -1);
}

static void test_resolv_conf(void **state)
{
	char path[] = "/tmp/test_resolver_XXXXXX", out[64];
	int fd = mkstemp(path);
	static const char text[] = "# generated\nsearch example.com\n  nameserver\t192.0.2.53 # first\n"
				   "nameserver 198.51.100.53\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	assert_int_equal(rsv_resolv_conf_first(path, out, sizeof(out)), 0);
	assert_string_equal(out, "192.0.2.53");
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "search x\n", 9), 9);
	close(fd);
	assert_int_equal(rsv_resolv_conf_first(path, out, sizeof(out)), -1);
	unlink(path);
	assert_int_equal(rsv_resolv_conf_first("/nonexistent/resolv.conf", out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_allowed_name_forwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_url_host_and_wildcard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denied_name_on_deny, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qtypes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusal_classes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_matching, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_rcodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private_answers_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private_answer_exceptions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_ttl_and_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_what_is_cacheable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cached_reply_filtered_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_size_limit, setup, teardown),
		cmocka_unit_test(test_entropy),
		cmocka_unit_test_setup_teardown(test_tunnel_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tunnel_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_denied_and_audit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_tunnel_flag, setup, teardown),
		cmocka_unit_test(test_hostport),
		cmocka_unit_test(test_resolv_conf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
