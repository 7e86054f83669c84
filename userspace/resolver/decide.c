/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * decide.c - what sluice-resolver does with one client query: refuse it,
 * answer it from the policy (on_deny), or forward it; and what it makes of
 * the upstream's reply.  Pure functions of (policy, bytes, time): no I/O.
 *
 * Order of the checks (the first that fails decides, see docs/events.md):
 *   header shorter than 12 bytes ......... drop      malformed_header
 *   QR=1 (a response sent to us) ......... drop      response_received
 *   opcode other than QUERY .............. NOTIMP    opcode_not_query
 *   QDCOUNT != 1 ......................... FORMERR   qdcount
 *   unparseable, or answer/authority RRs . FORMERR   malformed
 *   bytes past the sections the header    FORMERR   trailing_bytes
 *   declares (a second question, garbage)
 *   EDNS version > 0 ..................... BADVERS   edns_version     (RFC 6891 6.1.3)
 *   class CH / other than IN ............. REFUSED   class_chaos / class_not_in
 *   qtype 0 or OPT ....................... FORMERR   qtype_meta
 *   AXFR/IXFR, ANY, other meta qtypes .... REFUSED   zone_transfer / qtype_any / qtype_meta
 *   name not a host name (LDH, <= 253) ... on_deny   invalid_name
 *   --- the policy's checks (audit mode forwards and logs would_deny) ---
 *   no host/url entry allows the name .... on_deny   name_not_allowed
 *   qtype not in dns.qtypes .............. REFUSED   qtype_not_allowed
 *   too many new names under a wildcard .. REFUSED   dns_tunnel_rate
 *   otherwise ............................ forward   allowed
 * The checks above the line refuse whatever the policy and the mode say:
 * no policy could allow them.
 */
#include "resolver.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RSV_EDNS_SIZE   1232   /* our EDNS0 UDP size (DNS flag day 2020) */
#define RSV_UDP_MAX     4096   /* largest UDP response we ever send */
#define RSV_BADVERS     16     /* extended RCODE, RFC 6891 */
#define RSV_MAX_CHAIN   16     /* CNAME chain length we follow in a reply */

const char *rsv_rcode_name(int rcode)
{
	switch (rcode) {
	case RSV_NOERROR: return "NOERROR";
	case RSV_FORMERR: return "FORMERR";
	case RSV_SERVFAIL: return "SERVFAIL";
	case RSV_NXDOMAIN: return "NXDOMAIN";
	case RSV_NOTIMP: return "NOTIMP";
	case RSV_REFUSED: return "REFUSED";
	case RSV_BADVERS: return "BADVERS";
	default: return "UNKNOWN";
	}
}

const char *rsv_verdict_name(enum rsv_verdict v)
{
	switch (v) {
	case RSV_V_ALLOW: return "allow";
	case RSV_V_DENY: return "deny";
	case RSV_V_WOULD_DENY: return "would_deny";
	case RSV_V_REFUSE: return "refuse";
	}
	return "unknown";
}

void rsv_decision_free(struct rsv_decision *d)
{
	if (!d)
		return;
	if (d->query)
		ldns_pkt_free(d->query);
	free(d->resp);
	free(d->answers);
	memset(d, 0, sizeof(*d));
	d->rcode = -1;
}

/* --- building responses ------------------------------------------------- */

static size_t udp_limit(const struct rsv_decision *d)
{
	size_t n;

	if (!d->query || !ldns_pkt_edns(d->query))
		return 512;
	n = ldns_pkt_edns_udp_size(d->query);
	if (n < 512)
		n = 512;
	if (n > RSV_UDP_MAX)
		n = RSV_UDP_MAX;
	return n;
}

static ldns_pkt *skeleton(const struct rsv_decision *d, int rcode, bool tc)
{
	ldns_pkt *r = ldns_pkt_new();

	if (!r)
		return NULL;
	ldns_pkt_set_id(r, d->id);
	ldns_pkt_set_qr(r, true);
	ldns_pkt_set_ra(r, true);
	ldns_pkt_set_tc(r, tc);
	if (d->query) {
		ldns_rr_list *ql = ldns_pkt_question(d->query);

		ldns_pkt_set_opcode(r, ldns_pkt_get_opcode(d->query));
		ldns_pkt_set_rd(r, ldns_pkt_rd(d->query));
		ldns_pkt_set_cd(r, ldns_pkt_cd(d->query));
		if (ldns_rr_list_rr_count(ql) == 1) {
			ldns_rr *q = ldns_rr_clone(ldns_rr_list_rr(ql, 0));

			if (!q || !ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, q)) {
				ldns_rr_free(q);
				ldns_pkt_free(r);
				return NULL;
			}
		}
		/* RFC 6891 7: a response carries OPT only if the query did */
		if (ldns_pkt_edns(d->query))
			ldns_pkt_set_edns_udp_size(r, RSV_EDNS_SIZE);
	} else {
		ldns_pkt_set_opcode(r, (ldns_pkt_opcode)d->opcode);
		ldns_pkt_set_rd(r, d->rd);
	}
	if (rcode >= 16) {
		/* extended RCODE: upper 8 bits in OPT, lower 4 in the header */
		ldns_pkt_set_edns_udp_size(r, RSV_EDNS_SIZE);
		ldns_pkt_set_edns_extended_rcode(r, (uint8_t)(rcode >> 4));
		ldns_pkt_set_rcode(r, (uint8_t)(rcode & 0xf));
	} else {
		ldns_pkt_set_rcode(r, (uint8_t)rcode);
	}
	return r;
}

/*
 * Wire bytes of r, uncompressed when that fits `limit` (ldns's compression
 * searches a tree of every name written and was a sixth of the resolver's
 * CPU per answer), else compressed (RFC 1035 4.1.4).  Returns 0 and a
 * malloc'd buffer, -1 on error.
 */
static int pkt_wire(const ldns_pkt *r, size_t limit, uint8_t **wire, size_t *wlen)
{
	ldns_buffer *b = ldns_buffer_new(512);

	*wire = NULL;
	*wlen = 0;
	if (b && ldns_pkt2buffer_wire_compress(b, r, NULL) == LDNS_STATUS_OK &&
	    ldns_buffer_position(b) <= limit) {
		*wlen = ldns_buffer_position(b);
		*wire = ldns_buffer_export(b);
		ldns_buffer_free(b);
		return *wire ? 0 : -1;
	}
	ldns_buffer_free(b);
	if (ldns_pkt2wire(wire, r, wlen) != LDNS_STATUS_OK) {
		free(*wire);
		*wire = NULL;
		return -1;
	}
	return 0;
}

/* Serialise a response with `answers` (borrowed, cloned); if it does not
 * fit the client's UDP size, send it again empty with TC (RFC 2181 9). */
static int build_resp(struct rsv_decision *d, int rcode, const ldns_rr_list *answers, bool tc)
{
	ldns_pkt *r = skeleton(d, rcode, tc);
	uint8_t *wire = NULL;
	size_t wlen = 0, i, limit = d->tcp ? 65535 : udp_limit(d);

	if (!r)
		return -1;
	for (i = 0; answers && i < ldns_rr_list_rr_count(answers); i++) {
		ldns_rr *c = ldns_rr_clone(ldns_rr_list_rr(answers, i));

		if (!c || !ldns_pkt_push_rr(r, LDNS_SECTION_ANSWER, c)) {
			ldns_rr_free(c);
			ldns_pkt_free(r);
			return -1;
		}
	}
	if (pkt_wire(r, limit, &wire, &wlen) < 0) {
		ldns_pkt_free(r);
		return -1;
	}
	ldns_pkt_free(r);
	if (wlen > limit) {
		free(wire);
		if (!answers)
			return -1;
		return build_resp(d, rcode, NULL, true);
	}
	free(d->resp);
	d->resp = wire;
	d->resp_len = wlen;
	d->rcode = rcode;
	d->truncated = tc;
	return 0;
}

static enum rsv_action drop(struct rsv_decision *d, enum rsv_verdict v, const char *reason)
{
	d->action = RSV_ACT_DROP;
	d->verdict = v;
	d->reason = reason;
	d->rcode = -1;
	return d->action;
}

static enum rsv_action respond(struct rsv_decision *d, enum rsv_verdict v, int rcode,
			       const char *reason)
{
	d->verdict = v;
	d->reason = reason;
	if (build_resp(d, rcode, NULL, false) < 0)
		return drop(d, v, "internal_error");
	d->action = RSV_ACT_RESPOND;
	return d->action;
}

int rsv_fail(struct rsv_decision *d, int rcode, bool tc, const char *reason)
{
	free(d->answers);
	d->answers = NULL;
	d->n_answers = d->n_dropped = 0;
	d->reason = reason;
	return build_resp(d, rcode, NULL, tc);
}

/* --- the question ------------------------------------------------------- */

/*
 * A wire-format name in presentation form with the trailing dot, as
 * ldns_rdf2str() writes it, for the common case only: every byte a letter,
 * digit, '-' or '_' (nothing to escape).  Returns 0, or -1 when the name
 * needs ldns_rdf2str() (other bytes, the root, overflow).  It saves
 * ldns's per-character printf on every query and answer record.
 */
static int dname_text(const ldns_rdf *dn, char *out, size_t outlen)
{
	const uint8_t *p = ldns_rdf_data(dn);
	size_t len = ldns_rdf_size(dn), pos = 0, o = 0;

	while (pos < len) {
		uint8_t l = p[pos++];

		if (l == 0)
			break;
		if (l > 63 || pos + l > len || o + l + 2 > outlen)
			return -1;
		while (l--) {
			uint8_t c = p[pos++];

			if (!(isalnum(c) || c == '-' || c == '_') || c > 127)
				return -1;
			out[o++] = (char)c;
		}
		out[o++] = '.';
	}
	if (o == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

/*
 * Turn a wire-format name into dotted form without the trailing dot if every
 * byte is a letter, digit, '-' or '_' (anything else cannot be in a policy:
 * the normaliser refuses it).  Returns 0, or -1 for the root, other bytes,
 * or overflow.
 */
static int dname_to_host(const ldns_rdf *dn, char *out, size_t outlen)
{
	size_t n;

	if (dname_text(dn, out, outlen) < 0)
		return -1;
	n = strlen(out);
	out[n - 1] = '\0';   /* dname_text's trailing dot: it wrote at least one label */
	return 0;
}

static int on_deny_rcode(const struct sluice_policy *p)
{
	return p && p->dns_on_deny == SLUICE_DNS_REFUSED ? RSV_REFUSED : RSV_NXDOMAIN;
}

/* A check the policy decides: deny in enforce mode, forward in audit mode. */
static enum rsv_action policy_deny(const struct rsv_ctx *ctx, struct rsv_decision *d, int rcode,
				   const char *reason)
{
	if (ctx->mode == SLUICE_MODE_AUDIT) {
		d->verdict = RSV_V_WOULD_DENY;
		d->reason = reason;
		d->action = RSV_ACT_FORWARD;
		return d->action;
	}
	return respond(d, RSV_V_DENY, rcode, reason);
}

/*
 * Where the message ends by its header: the offset after the QDCOUNT
 * questions and the ANCOUNT + NSCOUNT + ARCOUNT records (ldns reads each,
 * compression pointers included).  Returns it, or 0 when a section does not
 * parse.  ldns_wire2pkt() itself ignores what follows.
 */
static size_t declared_len(const uint8_t *msg, size_t len)
{
	static const ldns_pkt_section sec[4] = { LDNS_SECTION_QUESTION, LDNS_SECTION_ANSWER,
						 LDNS_SECTION_AUTHORITY, LDNS_SECTION_ADDITIONAL };
	unsigned count[4] = { LDNS_QDCOUNT(msg), LDNS_ANCOUNT(msg), LDNS_NSCOUNT(msg), LDNS_ARCOUNT(msg) };
	size_t pos = LDNS_HEADER_SIZE;

	for (int i = 0; i < 4; i++) {
		for (unsigned n = 0; n < count[i]; n++) {
			ldns_rr *rr = NULL;

			if (ldns_wire2rr(&rr, msg, len, &pos, sec[i]) != LDNS_STATUS_OK)
				return 0;
			ldns_rr_free(rr);
		}
	}
	return pos;
}

enum rsv_action rsv_decide(const struct rsv_ctx *ctx, const uint8_t *msg, size_t len,
			   bool tcp, double now, struct rsv_decision *d)
{
	char host[SLUICE_HOST_MAX + 2];
	const char *why = NULL;
	ldns_status st;
	ldns_rr *q;
	char *s;
	size_t i;
	bool allowed;
	int tflags;

	memset(d, 0, sizeof(*d));
	d->rcode = -1;
	d->tcp = tcp;
	if (len < LDNS_HEADER_SIZE)
		return drop(d, RSV_V_REFUSE, "malformed_header");
	d->id = LDNS_ID_WIRE(msg);
	d->opcode = (uint8_t)LDNS_OPCODE_WIRE(msg);
	d->rd = LDNS_RD_WIRE(msg) != 0;
	/* never answer a response: two responders must not ping-pong
	 * (what Unbound and BIND do too) */
	if (LDNS_QR_WIRE(msg))
		return drop(d, RSV_V_REFUSE, "response_received");
	if (d->opcode != LDNS_PACKET_QUERY)
		return respond(d, RSV_V_REFUSE, RSV_NOTIMP, "opcode_not_query");
	if (LDNS_QDCOUNT(msg) != 1)
		return respond(d, RSV_V_REFUSE, RSV_FORMERR, "qdcount");
	st = ldns_wire2pkt(&d->query, msg, len);
	if (st != LDNS_STATUS_OK || !d->query) {
		d->query = NULL;
		d->malformed = st != LDNS_STATUS_OK ? ldns_get_errorstr_by_id(st) : NULL;
		if (!d->malformed)
			d->malformed = "ldns could not parse the query";
		return respond(d, RSV_V_REFUSE, RSV_FORMERR, "malformed");
	}
	q = ldns_rr_list_rr(ldns_pkt_question(d->query), 0);
	if (!q || !ldns_rr_owner(q)) {
		d->malformed = "question without a name";
		return respond(d, RSV_V_REFUSE, RSV_FORMERR, "malformed");
	}
	d->have_question = true;
	d->qtype = (uint16_t)ldns_rr_get_type(q);
	d->qclass = (uint16_t)ldns_rr_get_class(q);
	if (dname_text(ldns_rr_owner(q), d->raw_name, sizeof(d->raw_name)) < 0) {
		s = ldns_rdf2str(ldns_rr_owner(q));
		if (s) {
			snprintf(d->raw_name, sizeof(d->raw_name), "%s", s);
			free(s);
		}
	}
	if (ldns_pkt_ancount(d->query) || ldns_pkt_nscount(d->query)) {
		d->malformed = ldns_pkt_ancount(d->query) ? "answer records in a query"
							  : "authority records in a query";
		return respond(d, RSV_V_REFUSE, RSV_FORMERR, "malformed");
	}
	{
		/* one framing only: what the header declares is the whole message */
		size_t end = declared_len(msg, len);

		if (end == 0) {
			d->malformed = "a record the header declares does not parse";
			return respond(d, RSV_V_REFUSE, RSV_FORMERR, "malformed");
		}
		if (end < len) {
			d->trailing = len - end;
			return respond(d, RSV_V_REFUSE, RSV_FORMERR, "trailing_bytes");
		}
	}
	if (ldns_pkt_edns(d->query) && ldns_pkt_edns_version(d->query) > 0)
		return respond(d, RSV_V_REFUSE, RSV_BADVERS, "edns_version");
	if (d->qclass == LDNS_RR_CLASS_CH)
		return respond(d, RSV_V_REFUSE, RSV_REFUSED, "class_chaos");
	if (d->qclass != LDNS_RR_CLASS_IN)
		return respond(d, RSV_V_REFUSE, RSV_REFUSED, "class_not_in");
	switch (d->qtype) {
	case 0:
	case LDNS_RR_TYPE_OPT:
		return respond(d, RSV_V_REFUSE, RSV_FORMERR, "qtype_meta");
	case LDNS_RR_TYPE_AXFR:
	case LDNS_RR_TYPE_IXFR:
		return respond(d, RSV_V_REFUSE, RSV_REFUSED, "zone_transfer");
	case LDNS_RR_TYPE_ANY:
		return respond(d, RSV_V_REFUSE, RSV_REFUSED, "qtype_any");
	case LDNS_RR_TYPE_TSIG:
	case LDNS_RR_TYPE_TKEY:
	case LDNS_RR_TYPE_MAILA:
	case LDNS_RR_TYPE_MAILB:
		return respond(d, RSV_V_REFUSE, RSV_REFUSED, "qtype_meta");
	default:
		break;
	}

	/* The name we check is the name we forward: it must already be in
	 * normal form (up to case), so that nothing the normaliser changes
	 * can make the upstream see another name than the policy did. */
	if (dname_to_host(ldns_rr_owner(q), host, sizeof(host)) < 0 ||
	    sluice_host_normalise(host, d->name, sizeof(d->name), &why) < 0) {
		d->name[0] = '\0';
		return respond(d, RSV_V_DENY, on_deny_rcode(ctx->policy), "invalid_name");
	}
	for (i = 0; host[i]; i++)
		host[i] = (char)tolower((unsigned char)host[i]);
	if (strcmp(host, d->name) != 0) {
		d->name[0] = '\0';
		return respond(d, RSV_V_DENY, on_deny_rcode(ctx->policy), "invalid_name");
	}

	/* a credential's placeholder as (part of) a label is exfiltration
	 * of something the sandbox was told is a secret: refused whatever
	 * the policy and the mode say, and logged */
	if (ctx->placeholders) {
		const struct sluice_secret *ph = sluice_secrets_find_placeholder(ctx->placeholders, d->name,
										 strlen(d->name), true);

		if (ph) {
			d->credential = ph->name;
			return respond(d, RSV_V_DENY, RSV_REFUSED, "credential_misdirected");
		}
	}
	/* the entry that allows it (what sluice_policy_allows_name() checks) */
	d->rule = ctx->names ? sluice_name_index_first(ctx->names, ctx->policy, d->name)
			     : sluice_policy_name_entry(ctx->policy, d->name);
	allowed = d->rule != NULL;
	if (!allowed)
		return policy_deny(ctx, d, on_deny_rcode(ctx->policy), "name_not_allowed");
	if (!sluice_policy_allows_qtype(ctx->policy, d->qtype))
		return policy_deny(ctx, d, RSV_REFUSED, "qtype_not_allowed");
	tflags = rsv_tunnel_check(ctx->tunnel, d->rule, d->name, now, &d->tunnel_why);
	if (tflags & RSV_TUNNEL_SUSPECT)
		d->tunnel_suspect = true;
	if (tflags & RSV_TUNNEL_LIMITED)
		return policy_deny(ctx, d, RSV_REFUSED, "dns_tunnel_rate");
	d->verdict = RSV_V_ALLOW;
	d->reason = "allowed";
	d->action = RSV_ACT_FORWARD;
	return d->action;
}

int rsv_upstream_query(const struct rsv_decision *d, uint16_t id, uint8_t **out, size_t *out_len)
{
	ldns_rdf *dn;
	ldns_pkt *p;
	ldns_status st;

	*out = NULL;
	*out_len = 0;
	if (d->action != RSV_ACT_FORWARD || !d->name[0])
		return -1;
	dn = ldns_dname_new_frm_str(d->name);
	if (!dn)
		return -1;
	p = ldns_pkt_query_new(dn, (ldns_rr_type)d->qtype, LDNS_RR_CLASS_IN, LDNS_RD);
	if (!p) {
		/* ldns_pkt_query_new() takes dn only when it succeeds */
		ldns_rdf_deep_free(dn);
		return -1;
	}
	ldns_pkt_set_id(p, id);
	ldns_pkt_set_edns_udp_size(p, RSV_EDNS_SIZE);
	st = ldns_pkt2wire(out, p, out_len);
	ldns_pkt_free(p);
	if (st != LDNS_STATUS_OK) {
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* --- the reply ---------------------------------------------------------- */

static bool in_chain(ldns_rdf *const *chain, size_t n, const ldns_rdf *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ldns_dname_compare(chain[i], name) == 0)
			return true;
	return false;
}

/* The text of rdata field `rd` into out, without ldns's allocation and
 * printf where it is an address or a plain name; -1: use ldns_rdf2str(). */
static int rdf_text(const ldns_rdf *rd, char *out, size_t outlen)
{
	size_t l;

	switch (ldns_rdf_get_type(rd)) {
	case LDNS_RDF_TYPE_A:
		return ldns_rdf_size(rd) == 4 && inet_ntop(AF_INET, ldns_rdf_data(rd), out,
							   (socklen_t)outlen) ? 0 : -1;
	case LDNS_RDF_TYPE_AAAA:
		return ldns_rdf_size(rd) == 16 && inet_ntop(AF_INET6, ldns_rdf_data(rd), out,
							    (socklen_t)outlen) ? 0 : -1;
	case LDNS_RDF_TYPE_DNAME:
		if (dname_text(rd, out, outlen) < 0)
			return -1;
		l = strlen(out);
		if (l > 1)
			out[l - 1] = '\0';   /* no trailing dot in the log */
		return 0;
	default:
		return -1;
	}
}

static void answer_record(struct rsv_answer *a, const ldns_rr *rr)
{
	char *s;
	size_t i, o = 0;

	memset(a, 0, sizeof(*a));
	a->type = (uint16_t)ldns_rr_get_type(rr);
	a->ttl = ldns_rr_ttl(rr);
	if (rdf_text(ldns_rr_owner(rr), a->name, sizeof(a->name)) == 0) {
		/* done */
	} else if ((s = ldns_rdf2str(ldns_rr_owner(rr)))) {
		size_t l = strlen(s);

		if (l > 1 && s[l - 1] == '.')
			s[l - 1] = '\0';
		snprintf(a->name, sizeof(a->name), "%s", s);
		free(s);
	}
	if (ldns_rr_rd_count(rr) == 1 && rdf_text(ldns_rr_rdf(rr, 0), a->data, sizeof(a->data)) == 0)
		return;
	for (i = 0; i < ldns_rr_rd_count(rr) && o + 1 < sizeof(a->data); i++) {
		s = ldns_rdf2str(ldns_rr_rdf(rr, i));
		if (!s)
			continue;
		if (ldns_rdf_get_type(ldns_rr_rdf(rr, i)) == LDNS_RDF_TYPE_DNAME) {
			size_t l = strlen(s);

			if (l > 1 && s[l - 1] == '.')
				s[l - 1] = '\0';
		}
		o += (size_t)snprintf(a->data + o, sizeof(a->data) - o, "%s%s", i ? " " : "", s);
		if (o >= sizeof(a->data))
			o = sizeof(a->data) - 1;
		free(s);
	}
}

bool rsv_answer_addr_ok(const struct rsv_ctx *ctx, int family, const uint8_t *addr, const char **why)
{
	const char *refusal = netaddr_refusal(family, addr, ctx->allow_private, ctx->n_allow_private);

	for (size_t i = 0; refusal && ctx->policy && i < ctx->policy->n_entries; i++)
		if (sluice_entry_cidr_contains(&ctx->policy->entries[i], family, addr))
			refusal = NULL;
	if (why)
		*why = refusal;
	return refusal == NULL;
}

/* Address of an A/AAAA record, or -1 (bad rdata). */
static int rr_addr(const ldns_rr *rr, int *family, uint8_t addr[16])
{
	const ldns_rdf *rd = ldns_rr_rdf(rr, 0);

	if (!rd)
		return -1;
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_A && ldns_rdf_size(rd) == 4) {
		*family = AF_INET;
		memcpy(addr, ldns_rdf_data(rd), 4);
		return 0;
	}
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_AAAA && ldns_rdf_size(rd) == 16) {
		*family = AF_INET6;
		memcpy(addr, ldns_rdf_data(rd), 16);
		return 0;
	}
	return -1;
}

/* Age every record of the answer and authority sections of r by `age`
 * seconds (a cached reply, RFC 1035 3.2.1: the TTL counts down). */
static void age_records(ldns_pkt *r, uint32_t age)
{
	ldns_rr_list *lists[2] = { ldns_pkt_answer(r), ldns_pkt_authority(r) };

	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < ldns_rr_list_rr_count(lists[k]); i++) {
			ldns_rr *rr = ldns_rr_list_rr(lists[k], i);
			uint32_t ttl = ldns_rr_ttl(rr);

			ldns_rr_set_ttl(rr, ttl > age ? ttl - age : 0);
		}
}

/* How long the reply r may be kept (RFC 2181 8, RFC 2308 5): the smallest
 * TTL of its answer and authority records, for a negative answer the SOA's
 * TTL and MINIMUM; 0 (not cacheable) for TC, other rcodes, a negative
 * answer without SOA or no records at all. */
static uint32_t reply_cache_ttl(const ldns_pkt *r, int rcode)
{
	ldns_rr_list *ans = ldns_pkt_answer(r), *auth = ldns_pkt_authority(r);
	uint32_t ttl = UINT32_MAX;
	bool soa = false;

	if (ldns_pkt_tc(r) || (rcode != RSV_NOERROR && rcode != RSV_NXDOMAIN))
		return 0;
	for (size_t i = 0; i < ldns_rr_list_rr_count(ans); i++)
		if (ldns_rr_ttl(ldns_rr_list_rr(ans, i)) < ttl)
			ttl = ldns_rr_ttl(ldns_rr_list_rr(ans, i));
	for (size_t i = 0; i < ldns_rr_list_rr_count(auth); i++) {
		ldns_rr *rr = ldns_rr_list_rr(auth, i);

		if (ldns_rr_ttl(rr) < ttl)
			ttl = ldns_rr_ttl(rr);
		if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_SOA && ldns_rr_rd_count(rr) == 7) {
			uint32_t min = ldns_rdf2native_int32(ldns_rr_rdf(rr, 6));

			soa = true;
			if (min < ttl)
				ttl = min;
		}
	}
	if (ldns_rr_list_rr_count(ans) == 0 && !soa)
		return 0;
	return ttl == UINT32_MAX ? 0 : ttl;
}

static enum rsv_reply process_reply(const struct rsv_ctx *ctx, struct rsv_decision *d, uint16_t id,
				    const uint8_t *msg, size_t len, bool via_tcp, uint32_t age);

enum rsv_reply rsv_process_reply(const struct rsv_ctx *ctx, struct rsv_decision *d, uint16_t id,
				 const uint8_t *msg, size_t len, bool via_tcp)
{
	return process_reply(ctx, d, id, msg, len, via_tcp, 0);
}

enum rsv_reply rsv_process_cached(const struct rsv_ctx *ctx, struct rsv_decision *d,
				  const uint8_t *msg, size_t len, uint32_t age)
{
	enum rsv_reply r;

	if (len < LDNS_HEADER_SIZE || LDNS_TC_WIRE(msg))
		return RSV_REPLY_IGNORE;
	r = process_reply(ctx, d, LDNS_ID_WIRE(msg), msg, len, true, age);
	if (r == RSV_REPLY_DONE)
		d->cached = true;
	return r;
}

static enum rsv_reply process_reply(const struct rsv_ctx *ctx, struct rsv_decision *d, uint16_t id,
				    const uint8_t *msg, size_t len, bool via_tcp, uint32_t age)
{
	ldns_pkt *r = NULL;
	ldns_rdf *qname = NULL, *chain[RSV_MAX_CHAIN + 1];
	ldns_rr_list *ans, *keep = NULL;
	ldns_rr *rq;
	size_t n_chain = 0, i, n, n_addr_kept = 0, n_addr_bad = 0;
	int rcode;
	bool changed;
	enum rsv_reply ret = RSV_REPLY_IGNORE;

	if (len < LDNS_HEADER_SIZE || !LDNS_QR_WIRE(msg) || LDNS_ID_WIRE(msg) != id ||
	    LDNS_OPCODE_WIRE(msg) != LDNS_PACKET_QUERY || LDNS_QDCOUNT(msg) != 1)
		return RSV_REPLY_IGNORE;
	if (ldns_wire2pkt(&r, msg, len) != LDNS_STATUS_OK || !r)
		return RSV_REPLY_IGNORE;
	qname = ldns_dname_new_frm_str(d->name);
	rq = ldns_rr_list_rr(ldns_pkt_question(r), 0);
	if (!qname || !rq || ldns_dname_compare(ldns_rr_owner(rq), qname) != 0 ||
	    ldns_rr_get_type(rq) != d->qtype || ldns_rr_get_class(rq) != LDNS_RR_CLASS_IN)
		goto out;
	if (ldns_pkt_tc(r) && !via_tcp) {
		ret = RSV_REPLY_TRUNCATED;
		goto out;
	}

	rcode = ldns_pkt_get_rcode(r);
	if (ldns_pkt_edns_extended_rcode(r) != 0)
		rcode = RSV_SERVFAIL;
	d->cache_ttl = reply_cache_ttl(r, rcode);
	if (age)
		age_records(r, age);
	switch (rcode) {
	case RSV_NOERROR:
	case RSV_NXDOMAIN:
	case RSV_SERVFAIL:
	case RSV_REFUSED:
		break;
	default:
		/* FORMERR/NOTIMP to a query we built mean the upstream is broken */
		rcode = RSV_SERVFAIL;
		break;
	}

	/* The CNAME chain from the question name (RFC 1034 3.6.2). */
	chain[n_chain++] = qname;
	ans = ldns_pkt_answer(r);
	n = ldns_rr_list_rr_count(ans);
	do {
		changed = false;
		for (i = 0; i < n && n_chain <= RSV_MAX_CHAIN; i++) {
			ldns_rr *rr = ldns_rr_list_rr(ans, i);

			if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_CNAME &&
			    ldns_rr_get_class(rr) == LDNS_RR_CLASS_IN &&
			    ldns_rr_rdf(rr, 0) && in_chain(chain, n_chain, ldns_rr_owner(rr)) &&
			    !in_chain(chain, n_chain, ldns_rr_rdf(rr, 0))) {
				chain[n_chain++] = ldns_rr_rdf(rr, 0);  /* borrowed from r */
				changed = true;
			}
		}
	} while (changed && n_chain <= RSV_MAX_CHAIN);

	free(d->answers);
	d->answers = n ? calloc(n, sizeof(*d->answers)) : NULL;
	d->n_answers = d->n_dropped = 0;
	keep = ldns_rr_list_new();
	if ((n && !d->answers) || !keep)
		goto out;
	for (i = 0; i < n; i++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, i);
		uint16_t t = (uint16_t)ldns_rr_get_type(rr);
		struct rsv_answer *a = &d->answers[d->n_answers++];
		const char *bad = NULL;
		uint8_t addr[16];
		int fam;

		answer_record(a, rr);
		if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN ||
		    !in_chain(chain, n_chain, ldns_rr_owner(rr)))
			bad = "out_of_chain";
		else if (t != LDNS_RR_TYPE_CNAME && t != d->qtype)
			bad = "unexpected_type";
		else if (t == LDNS_RR_TYPE_A || t == LDNS_RR_TYPE_AAAA) {
			if (rr_addr(rr, &fam, addr) < 0)
				bad = "bad_rdata";
			else if (!rsv_answer_addr_ok(ctx, fam, addr, &bad))
				n_addr_bad++;
			else
				n_addr_kept++;
			/* audit mode passes non-public answers on (would_deny) */
			if (bad && strcmp(bad, "bad_rdata") != 0 && ctx->mode == SLUICE_MODE_AUDIT) {
				a->dropped_why = bad;
				a->sent = true;
				d->n_dropped++;
				if (!ldns_rr_list_push_rr(keep, rr))
					goto out;
				continue;
			}
		}
		if (bad) {
			a->dropped_why = bad;
			d->n_dropped++;
			continue;
		}
		a->sent = true;
		if (!ldns_rr_list_push_rr(keep, rr))  /* borrowed, build_resp clones */
			goto out;
	}

	if (n_addr_bad && ctx->mode == SLUICE_MODE_AUDIT) {
		if (d->verdict == RSV_V_ALLOW) {
			d->verdict = RSV_V_WOULD_DENY;
			d->reason = "private_answer";
		}
	} else if (n_addr_bad && n_addr_kept == 0) {
		/* every address was non-public: the name is not usable here */
		d->verdict = RSV_V_DENY;
		d->reason = "private_answer";
		for (i = 0; i < d->n_answers; i++)
			d->answers[i].sent = false;
		if (build_resp(d, on_deny_rcode(ctx->policy), NULL, false) < 0)
			goto out;
		ret = RSV_REPLY_DONE;
		goto out;
	}
	if (build_resp(d, rcode, keep, via_tcp && ldns_pkt_tc(r)) < 0)
		goto out;
	ret = RSV_REPLY_DONE;
out:
	if (keep) {
		/* entries are borrowed from r: free only the list */
		ldns_rr_list_free(keep);
	}
	ldns_rdf_deep_free(qname);
	ldns_pkt_free(r);
	return ret;
}
