/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_suggest.c - `sluice policy suggest` (loader/suggest/) as pure
 * logic: JSON lines in, policy text (or --against diff) out.  Every result is
 * loaded back with the policy library and linted; the observations must be
 * allowed by it.  Also: bad lines reported with file:line and counted,
 * wildcards only ever offered as comments, relay-capable hosts marked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmd_suggest.h"
#include "policy.h"

static char relays_path[64];

static int setup(void **state)
{
	static const char relays[] =
		"gist.github.com   code-hosting  # anyone can create gists\n"
		"*.ngrok.io        tunnel\n";
	int fd;

	snprintf(relays_path, sizeof(relays_path), "/tmp/sluice-test-suggest-relays-XXXXXX");
	fd = mkstemp(relays_path);
	if (fd < 0)
		return -1;
	if (write(fd, relays, sizeof(relays) - 1) != (ssize_t)(sizeof(relays) - 1)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	unlink(relays_path);
	return 0;
}

/* --- building log lines ---------------------------------------------------------- */

#define COMMON "\"sluice.sandbox\":\"job-1\",\"sluice.policy_name\":\"default-deny\"," \
	"\"rule.ruleset\":\"%s\",\"sluice.policy_sha256\":\"%s\",\"sluice.mode\":\"%s\""

static char log_buf[1 << 16];
static size_t log_len;
static int log_t;
static const char *log_mode = "audit";
static const char *log_digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

static void log_reset(const char *mode)
{
	log_len = 0;
	log_buf[0] = '\0';
	log_t = 0;
	log_mode = mode;
}

/* Append one line: `body` are the fields after the common ones. */
__attribute__((format(printf, 1, 2)))
static void logline(const char *body, ...)
{
	char b[4096];
	va_list ap;
	int n;

	va_start(ap, body);
	vsnprintf(b, sizeof(b), body, ap);
	va_end(ap);
	n = snprintf(log_buf + log_len, sizeof(log_buf) - log_len,
		     "{\"@timestamp\":\"2026-11-30T06:%02d:%02d.000000Z\"," COMMON ",%s}\n", 10 + log_t / 60,
		     log_t % 60, log_digest, log_digest, log_mode, b);
	assert_true(n > 0 && (size_t)n < sizeof(log_buf) - log_len);
	log_len += (size_t)n;
	log_t++;
}

static void raw(const char *text)
{
	size_t n = strlen(text);

	assert_true(n < sizeof(log_buf) - log_len);
	memcpy(log_buf + log_len, text, n + 1);
	log_len += n;
}

static const char *verdict_of(bool deny)
{
	return deny ? "deny" : strcmp(log_mode, "audit") == 0 ? "would_deny" : "allow";
}

static void tls(const char *host, int port, bool deny)
{
	logline("\"sluice.component\":\"proxy\",\"event.kind\":\"event\",\"event.dataset\":\"sluice.proxy\","
	     "\"event.action\":\"proxy-tls\",\"event.outcome\":\"unknown\",\"event.reason\":\"%s\","
	     "\"sluice.verdict\":\"%s\",\"sluice.form\":\"transparent\",\"url.domain\":\"%s\","
	     "\"tls.client.server_name\":\"%s\",\"sluice.orig_dst\":\"203.0.113.10:%d\"",
	     deny || strcmp(log_mode, "audit") == 0 ? "host_not_allowed" : "allowed", verdict_of(deny), host,
	     host, port);
}

static void connect_(const char *host, int port)
{
	logline("\"sluice.component\":\"proxy\",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-connect\","
	     "\"event.outcome\":\"unknown\",\"event.reason\":\"host_not_allowed\",\"sluice.verdict\":\"would_deny\","
	     "\"sluice.form\":\"explicit\",\"url.domain\":\"%s\",\"http.request.method\":\"CONNECT\","
	     "\"destination.ip\":\"192.0.2.10\",\"destination.port\":%d,\"sluice.orig_dst\":\"127.0.0.1:40000\"",
	     host, port);
}

static void http(const char *method, const char *url, const char *host, const char *reason, const char *verdict)
{
	logline("\"sluice.component\":\"proxy\",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-http\","
	     "\"event.outcome\":\"unknown\",\"event.reason\":\"%s\",\"sluice.verdict\":\"%s\",\"sluice.form\":\"explicit\","
	     "\"url.full\":\"%s\",\"url.domain\":\"%s\",\"http.request.method\":\"%s\"",
	     reason, verdict, url, host, method);
}

static void kernel(const char *ip, int port, const char *proto, bool deny)
{
	logline("\"event.kind\":\"event\",\"event.category\":\"network\",\"event.action\":\"%s\","
	     "\"event.outcome\":\"%s\",\"event.reason\":\"%s\",\"sluice.reason_code\":1,\"sluice.verdict\":\"%s\","
	     "\"process.pid\":7,\"process.name\":\"probe\",\"destination.ip\":\"%s\",\"destination.port\":%d,"
	     "\"network.transport\":\"%s\",\"sluice.hook\":\"connect4\",\"sluice.seq\":%d",
	     deny ? "egress-denied" : "egress-would-deny", deny ? "failure" : "unknown",
	     strcmp(proto, "tcp") == 0 ? "tcp_port_not_allowed" : "udp_not_allowed", deny ? "deny" : "would_deny",
	     ip, port, proto, log_t);
}

/* A resolver line; `ips` comma-separated answers (A or AAAA by spelling). */
static void dns(const char *name, const char *qtype, const char *ips, const char *verdict, const char *reason)
{
	char answers[1024] = "", ip[64];
	const char *p = ips;

	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		snprintf(ip, sizeof(ip), "%.*s", (int)n, p);
		snprintf(answers + strlen(answers), sizeof(answers) - strlen(answers),
			 "%s{\"name\":\"%s\",\"type\":\"%s\",\"class\":\"IN\",\"ttl\":60,\"data\":\"%s\"}",
			 answers[0] ? "," : "", name, strchr(ip, ':') ? "AAAA" : "A", ip);
		p = c ? c + 1 : NULL;
	}
	logline("\"sluice.component\":\"resolver\",\"event.kind\":\"event\",\"event.dataset\":\"sluice.resolver\","
	     "\"event.action\":\"dns-query\",\"event.outcome\":\"unknown\",\"event.reason\":\"%s\","
	     "\"sluice.verdict\":\"%s\",\"dns.id\":1,\"dns.question.name\":\"%s\",\"dns.question.type\":\"%s\","
	     "\"dns.question.class\":\"IN\",\"dns.answers\":[%s],\"network.transport\":\"udp\"",
	     reason, verdict, name, qtype, answers);
}

static void lifecycle(void)
{
	logline("\"event.kind\":\"state\",\"event.action\":\"sandbox-start\",\"message\":\"sandbox job-1 started\"");
}

/* --- running suggest ---------------------------------------------------------------- */

struct result {
	char *text;        /* policy or diff; NULL on a render error */
	char *diag;        /* what went to stderr */
	struct sluice_policy *p;   /* the policy loaded back (plain mode) */
	struct suggest_counts c;
	int exit_status;
};

static void run_opts(struct result *r, const char *name, const struct sluice_policy *against,
		     const char *against_text, bool load)
{
	size_t dlen = 0;
	FILE *diag = open_memstream(&r->diag, &dlen);
	struct suggest_opts o = { .name = name, .against = against, .against_path = "policy.yaml",
				  .against_text = against_text, .relays = relays_path, .diag = diag };
	struct suggest *s;
	FILE *in;

	memset(&r->c, 0, sizeof(r->c));
	r->text = NULL;
	r->p = NULL;
	assert_non_null(diag);
	s = suggest_new(&o);
	assert_non_null(s);
	in = log_len ? fmemopen(log_buf, log_len, "r") : fopen("/dev/null", "r");   /* fmemopen wants a size */
	assert_non_null(in);
	assert_int_equal(suggest_read(s, "f.jsonl", in), 0);
	fclose(in);
	r->text = suggest_render(s);
	if (getenv("SHOW_SUGGEST"))
		fprintf(stderr, "%s\n", r->text ? r->text : "(null)");
	r->c = *suggest_counts(s);
	r->exit_status = suggest_exit_status(s);
	suggest_summary(s, diag);
	suggest_free(s);
	fclose(diag);
	if (load && r->text) {
		struct sluice_policy_error err;
		char msg[700];

		if (sluice_policy_load_buffer("suggested.yaml", r->text, strlen(r->text), &r->p, &err) != 0)
			fail_msg("suggested policy does not load: %s\n%s", sluice_policy_error_str(&err, msg, sizeof(msg)),
				 r->text);
	}
}

static void run(struct result *r)
{
	run_opts(r, "t", NULL, NULL, true);
	assert_non_null(r->text);
}

static void result_free(struct result *r)
{
	free(r->text);
	free(r->diag);
	sluice_policy_free(r->p);
}

static bool has(const char *text, const char *part)
{
	return text && strstr(text, part) != NULL;
}

#define assert_has(text, part) do { if (!has((text), (part))) \
		fail_msg("missing \"%s\" in:\n%s", (part), (text) ? (text) : "(null)"); } while (0)
#define assert_lacks(text, part) do { if (has((text), (part))) \
		fail_msg("unexpected \"%s\" in:\n%s", (part), (text)); } while (0)

static const struct sluice_entry *entry_named(const struct sluice_policy *p, const char *rule_suffix)
{
	for (size_t i = 0; i < p->n_entries; i++) {
		const char *colon = strchr(p->entries[i].name, ':');

		if (colon && strcmp(colon + 1, rule_suffix) == 0)
			return &p->entries[i];
	}
	fail_msg("no entry %s", rule_suffix);
	return NULL;
}

static bool cidr_allows(const struct sluice_policy *p, const char *ip, uint8_t proto, uint16_t port)
{
	int fam;
	uint8_t a[16];

	assert_int_equal(sluice_ip_normalise(ip, &fam, a), 0);
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->kind == SLUICE_ENTRY_CIDR && e->family == fam && e->protocol == proto &&
		    memcmp(e->addr, a, fam == 2 ? 4 : 16) == 0 && sluice_entry_has_port(e, port))
			return true;
	}
	return false;
}

/* --- tests ----------------------------------------------------------------------------- */

/* The lines of a real audit run in the test world (tests/integration/test_audit.py). */
static void test_audit_run_to_policy(void **state)
{
	struct result r;
	struct sluice_lint *l = NULL;
	int n;

	log_reset("audit");
	lifecycle();
	dns("api.example.com", "A", "192.0.2.10", "allow", "allowed");
	dns("cdn.example.net", "A", "203.0.113.10", "would_deny", "name_not_allowed");
	logline("\"sluice.component\":\"proxy\",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-connect\","
	     "\"event.outcome\":\"success\",\"event.reason\":\"allowed\",\"sluice.verdict\":\"allow\","
	     "\"sluice.form\":\"explicit\",\"rule.name\":\"allow[0] host:api.example.com\",\"url.domain\":\"api.example.com\","
	     "\"tls.client.server_name\":\"api.example.com\",\"http.request.method\":\"CONNECT\","
	     "\"http.response.status_code\":200,\"destination.ip\":\"192.0.2.10\",\"destination.port\":8443,"
	     "\"sluice.orig_dst\":\"127.0.0.1:43479\"");
	http("GET", "http://files.example.com:8081/pub/a.txt", "files.example.com", "allowed", "allow");
	http("GET", "http://files.example.com:8081/pub/b.txt", "files.example.com", "allowed", "allow");
	tls("cdn.example.net", 8443, false);
	kernel("198.51.100.10", 5432, "tcp", false);
	run(&r);
	assert_int_equal(r.c.skipped, 0);
	assert_int_equal(r.exit_status, 0);
	assert_int_equal(r.c.used, 7);
	assert_int_equal(r.c.noted, 1);
	assert_int_equal(r.p->n_entries, 4);
	assert_int_equal(r.p->mode, SLUICE_MODE_ENFORCE);
	assert_string_equal(r.p->name, "t");
	/* what was seen is allowed... */
	assert_non_null(sluice_policy_match_host(r.p, "api.example.com", 8443));
	assert_non_null(sluice_policy_match_host(r.p, "cdn.example.net", 8443));
	assert_non_null(sluice_policy_match_url(r.p, "http", "files.example.com", 8081, "GET", "/pub/a.txt"));
	assert_non_null(sluice_policy_match_url(r.p, "http", "files.example.com", 8081, "GET", "/pub/b.txt"));
	assert_true(cidr_allows(r.p, "198.51.100.10", 6, 5432));
	/* ... and exactly that: no other port, method, path, protocol */
	assert_null(sluice_policy_match_host(r.p, "api.example.com", 443));
	assert_null(sluice_policy_match_host(r.p, "files.example.com", 8081));
	assert_null(sluice_policy_match_url(r.p, "http", "files.example.com", 8081, "POST", "/pub/a.txt"));
	assert_null(sluice_policy_match_url(r.p, "http", "files.example.com", 8081, "GET", "/private"));
	assert_false(cidr_allows(r.p, "198.51.100.10", 17, 5432));
	assert_false(cidr_allows(r.p, "198.51.100.10", 6, 5433));
	assert_string_equal(entry_named(r.p, "http://files.example.com:8081/pub/")->url_path, "/pub/");
	assert_has(r.text, "why: \"seen once at 2026-11-30T06:10:03Z in job-1: CONNECT to 8443\"");
	assert_has(r.text, "  - cidr: \"198.51.100.10/32\"\n    ports: [5432]\n    protocol: tcp\n");
	/* the output passes `sluice policy check`: it loaded, and lints run;
	 * the one warning is the test world's documentation address, which
	 * the proxy and the resolver refuse too (userspace/lib/netaddr.c) */
	n = sluice_policy_lint(r.p, relays_path, &l);
	assert_int_equal(n, 1);
	assert_int_equal(l[0].code, SLUICE_LINT_SPECIAL_RANGE);
	assert_non_null(strstr(l[0].message, "a documentation range (198.51.100.0/24)"));
	free(l);
	assert_has(r.diag, "1 file, 8 lines: 7 used, 1 noted");
	result_free(&r);
}

static void test_bad_lines_reported_with_line_numbers(void **state)
{
	struct result r;

	log_reset("audit");
	tls("a.example.com", 443, false);                                  /* 1 */
	raw("this is not json\n");                                          /* 2 */
	raw("{\"foo\":1,\"bar\":[1,2]}\n");                                 /* 3: foreign */
	raw("[1,2,3]\n");                                                   /* 4 */
	raw("\n");                                                          /* 5: blank */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00Z\",\"sluice.mode\":\"audit\",\"event.action\":\"egress-would-deny\"\n"); /* 6 */
	raw("{\"@timestamp\":\"yesterday\",\"sluice.sandbox\":\"x\",\"sluice.hook\":\"connect4\"}\n");   /* 7 */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00Z\",\"sluice.sandbox\":\"x\",\"sluice.hook\":\"connect4\","
	    "\"sluice.verdict\":\"would_deny\",\"event.reason\":\"tcp_port_not_allowed\",\"network.transport\":\"tcp\","
	    "\"destination.ip\":\"0x7f.1\",\"destination.port\":80}\n");    /* 8: bad ip */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00Z\",\"sluice.sandbox\":\"x\"} {\"b\":2}\n");           /* 9: two */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00Z\",\"sluice.sandbox\":\"x\",\"event.action\":\"teleport\"}\n"); /* 10 */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00Z\",\"sluice.component\":\"proxy\",\"event.action\":\"proxy-connect\","
	    "\"sluice.verdict\":\"deny\",\"event.reason\":\"host_not_allowed\",\"url.domain\":\"b.example.com\"}\n"); /* 11 */
	tls("c.example.com", 443, false);                                  /* 12 */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00Z\",\"sluice.sand");    /* 13: cut off, no newline */
	run(&r);
	assert_has(r.diag, "f.jsonl:2: malformed JSON");
	assert_has(r.diag, "f.jsonl:3: not a sluice log line");
	assert_has(r.diag, "f.jsonl:4: JSON array, not an object");
	assert_has(r.diag, "f.jsonl:6: truncated JSON");
	assert_has(r.diag, "f.jsonl:7: sluice line without an @timestamp");
	assert_has(r.diag, "f.jsonl:8: kernel event tcp_port_not_allowed without a valid destination.ip");
	assert_has(r.diag, "f.jsonl:9: malformed JSON at byte");
	assert_has(r.diag, "f.jsonl:10: a sluice line of a kind suggest does not know (event.action teleport)");
	assert_has(r.diag, "f.jsonl:11: proxy-connect of b.example.com without the port");
	assert_has(r.diag, "f.jsonl:13: truncated: the file ends inside this line");
	assert_lacks(r.diag, "f.jsonl:1:");
	assert_lacks(r.diag, "f.jsonl:5:");
	assert_lacks(r.diag, "f.jsonl:12:");
	assert_int_equal(r.c.lines, 13);
	assert_int_equal(r.c.blank, 1);
	assert_int_equal(r.c.skipped, 10);
	assert_int_equal(r.c.used, 2);
	assert_int_equal(r.c.lines, r.c.blank + r.c.skipped + r.c.used + r.c.noted);
	assert_int_equal(r.exit_status, 1);
	assert_has(r.diag, "10 lines were skipped");
	/* the good lines still make their entries; the port-less name is listed */
	assert_int_equal(r.p->n_entries, 2);
	assert_has(r.text, "b.example.com (1)");
	result_free(&r);
}

static void test_nul_byte_and_long_line(void **state)
{
	struct result r;
	size_t dlen = 0;
	char *diag = NULL;
	FILE *d = open_memstream(&diag, &dlen);
	struct suggest_opts o = { .relays = relays_path, .diag = d };
	struct suggest *s = suggest_new(&o);
	char *big = malloc((1u << 20) + 10);

	assert_non_null(s);
	assert_non_null(big);
	suggest_line(s, "g", 1, "{\"a\":\"x\0y\"}", 11, true);
	memset(big, ' ', (1u << 20) + 9);
	big[0] = '{';
	suggest_line(s, "g", 2, big, (1u << 20) + 9, true);
	free(big);
	r.c = *suggest_counts(s);
	assert_int_equal(suggest_exit_status(s), 1);
	suggest_free(s);
	fclose(d);
	assert_int_equal(r.c.skipped, 2);
	assert_has(diag, "g:1: NUL byte");
	assert_has(diag, "g:2: line too long");
	free(diag);
}

static void test_wildcard_only_offered(void **state)
{
	struct result r;

	log_reset("audit");
	tls("a.pkg.example.org", 443, false);
	tls("b.pkg.example.org", 443, false);
	tls("c.pkg.example.org", 8443, false);
	tls("c.pkg.example.org", 443, false);
	tls("x.y.pkg.example.org", 443, false);   /* deeper: not a sibling */
	tls("one.example.net", 443, false);       /* alone under its parent */
	tls("two.example.net", 443, false);
	tls("a.github.io", 443, false);           /* github.io is a public suffix */
	tls("b.github.io", 443, false);
	tls("c.github.io", 443, false);
	run(&r);
	/* offered as a comment, with the ports its members used ... */
	assert_has(r.text, "  # - host: \"*.pkg.example.org\"\n  #   ports: [443, 8443]\n");
	assert_has(r.text, "Offered, NOT active: 3 names under pkg.example.org");
	/* ... never active: every entry loaded is exact */
	for (size_t i = 0; i < r.p->n_entries; i++)
		assert_false(r.p->entries[i].wildcard);
	assert_int_equal(r.p->n_entries, 9);
	assert_null(sluice_policy_match_host(r.p, "d.pkg.example.org", 443));
	/* not for two names, never over a public suffix */
	assert_lacks(r.text, "*.example.net");
	assert_lacks(r.text, "*.github.io");
	/* uncommenting the offer gives a policy that loads (and says wildcard) */
	{
		const char *o = strstr(r.text, "  # - host: \"*.pkg.example.org\"");
		char *text = malloc(strlen(o) + 100), *w;
		struct sluice_policy *p = NULL;
		struct sluice_policy_error err;
		size_t k = 0;

		assert_non_null(text);
		w = text + sprintf(text, "version: 1\nname: w\nallow:\n");
		for (int lines = 0; lines < 3; lines++) {
			const char *nl = strchr(o, '\n');

			w += sprintf(w, "  %.*s\n", (int)(nl - o - 4), o + 4);   /* drop "  # " */
			o = nl + 1;
			k++;
		}
		assert_int_equal(sluice_policy_load_buffer("w", text, strlen(text), &p, &err), 0);
		assert_true(p->entries[0].wildcard);
		assert_non_null(sluice_policy_match_host(p, "d.pkg.example.org", 443));
		sluice_policy_free(p);
		free(text);
	}
	result_free(&r);
}

static void test_relay_marked_for_review(void **state)
{
	struct result r;
	const char *mark, *entry;

	log_reset("audit");
	connect_("gist.github.com", 443);
	connect_("api.example.com", 443);
	run(&r);
	mark = strstr(r.text, "# REVIEW relay-capable host: allow[1] host:gist.github.com");
	entry = strstr(r.text, "  - host: \"gist.github.com\"");
	assert_non_null(mark);
	assert_non_null(entry);
	assert_true(mark < entry);
	/* the mark is the comment right above the entry */
	assert_null(memmem(mark, (size_t)(entry - mark), "- host:", 7));
	assert_lacks(r.text, "host:api.example.com: reaches");
	assert_int_equal(r.p->n_entries, 2);
	result_free(&r);
}

static void test_url_entries_only_for_plain_http(void **state)
{
	struct result r;

	log_reset("audit");
	http("GET", "http://deb.example.net/debian/dists/bookworm/InRelease", "deb.example.net", "host_not_allowed", "would_deny");
	http("HEAD", "http://deb.example.net/debian/pool/main/x.deb", "deb.example.net", "host_not_allowed", "would_deny");
	http("GET", "http://deb.example.net/debian-security/dists/x?y=1", "deb.example.net", "host_not_allowed", "would_deny");
	http("GET", "http://deb.example.net/debianx", "deb.example.net", "host_not_allowed", "would_deny");
	http("GET", "http://mirror.example.com:8080/a/b/../c/file", "mirror.example.com", "host_not_allowed", "would_deny");
	http("PROPFIND", "http://dav.example.com/x", "dav.example.com", "host_not_allowed", "would_deny");
	http("GET", "http://both.example.com:8443/x", "both.example.com", "host_not_allowed", "would_deny");
	tls("both.example.com", 8443, false);
	http("POST", "http://root.example.com/", "root.example.com", "host_not_allowed", "would_deny");
	http("GET", "http://root.example.com/deep/path", "root.example.com", "host_not_allowed", "would_deny");
	run(&r);
	/* a prefix per first segment, at a segment boundary */
	assert_string_equal(entry_named(r.p, "http://deb.example.net/debian/")->url_path, "/debian/");
	assert_non_null(entry_named(r.p, "http://deb.example.net/debian-security/dists/x"));
	assert_non_null(entry_named(r.p, "http://deb.example.net/debianx"));
	assert_null(sluice_policy_match_url(r.p, "http", "deb.example.net", 80, "GET", "/debianxy"));
	assert_null(sluice_policy_match_url(r.p, "http", "deb.example.net", 80, "POST", "/debian/x"));
	assert_non_null(sluice_policy_match_url(r.p, "http", "deb.example.net", 80, "HEAD", "/debian/pool/main/x.deb"));
	assert_has(r.text, "  - url: \"http://deb.example.net/debian/\"\n    methods: [GET, HEAD]\n");
	/* dot segments were removed: the normalised path is what the proxy matches */
	assert_non_null(entry_named(r.p, "http://mirror.example.com:8080/a/c/file"));
	/* a method no url entry can name: a host entry */
	assert_int_equal(entry_named(r.p, "dav.example.com")->kind, SLUICE_ENTRY_HOST);
	/* TLS on the same port already allows every path: no url entry */
	assert_int_equal(entry_named(r.p, "both.example.com")->kind, SLUICE_ENTRY_HOST);
	assert_lacks(r.text, "url: \"http://both.example.com");
	/* "/" itself was asked for: one entry for the whole host */
	assert_non_null(entry_named(r.p, "http://root.example.com/"));
	assert_has(r.text, "methods: [GET, POST]");
	assert_has(r.text, "review [plain-http-body]");
	result_free(&r);
}

static void test_names_from_the_resolver(void **state)
{
	struct result r;

	log_reset("audit");
	dns("web.example.com", "A", "198.51.100.8", "would_deny", "name_not_allowed");
	dns("web.example.com", "AAAA", "2001:db8::8", "would_deny", "name_not_allowed");
	kernel("198.51.100.8", 443, "tcp", false);     /* web port: host entry, the proxy checks the name */
	kernel("2001:db8::8", 443, "tcp", false);
	dns("db.example.com", "A", "198.51.100.7", "would_deny", "name_not_allowed");
	kernel("198.51.100.7", 5432, "tcp", false);    /* other port: cidr, and the name must resolve */
	dns("stats.example.com", "A", "192.0.2.77", "would_deny", "name_not_allowed");
	kernel("192.0.2.77", 8125, "udp", false);
	dns("txt.example.com", "TXT", "", "would_deny", "name_not_allowed");
	tls("txt.example.com", 443, false);
	dns("idle.example.com", "A", "192.0.2.99", "would_deny", "name_not_allowed");
	kernel("203.0.113.50", 443, "tcp", false);     /* no name: cidr */
	kernel("2001:db8::77", 5353, "udp", false);    /* IPv6: /128 */
	dns("old.example.com", "A", "203.0.113.60", "would_deny", "name_not_allowed");
	dns("shared.example.com", "A", "203.0.113.60", "would_deny", "name_not_allowed");
	kernel("203.0.113.60", 443, "tcp", false);     /* two names, one address: the latest */
	run(&r);
	assert_non_null(sluice_policy_match_host(r.p, "shared.example.com", 443));
	assert_false(sluice_policy_allows_name(r.p, "old.example.com"));
	assert_has(r.text, "# review: the address reached directly also answered for old.example.com;");
	assert_int_equal(r.c.skipped, 0);
	assert_non_null(sluice_policy_match_host(r.p, "web.example.com", 443));
	assert_false(cidr_allows(r.p, "198.51.100.8", 6, 443));
	assert_has(r.text, "direct TCP to 443 (198.51.100.8, after resolving the name)");
	assert_true(cidr_allows(r.p, "198.51.100.7", 6, 5432));
	assert_true(sluice_policy_allows_name(r.p, "db.example.com"));
	assert_has(r.text, "lets db.example.com resolve");
	assert_has(r.text, "# address of db.example.com in the resolver's answers");
	assert_true(cidr_allows(r.p, "192.0.2.77", 17, 8125));
	assert_true(sluice_policy_allows_name(r.p, "stats.example.com"));
	assert_true(cidr_allows(r.p, "203.0.113.50", 6, 443));
	assert_true(cidr_allows(r.p, "2001:db8::77", 17, 5353));
	assert_has(r.text, "  - cidr: \"2001:db8::77/128\"\n    ports: [5353]\n    protocol: udp\n");
	assert_true(sluice_policy_allows_qtype(r.p, 16));
	assert_true(sluice_policy_allows_qtype(r.p, 1) && sluice_policy_allows_qtype(r.p, 28));
	assert_has(r.text, "  qtypes: [A, AAAA, TXT]\n");
	/* a name resolved with no traffic after it gives no entry, only a note */
	assert_false(sluice_policy_allows_name(r.p, "idle.example.com"));
	assert_has(r.text, "idle.example.com (1)");
	result_free(&r);
}

static void test_notes_and_lost_events(void **state)
{
	struct result r;

	log_reset("audit");
	logline("\"event.kind\":\"event\",\"event.action\":\"canary-denied\",\"event.reason\":\"udp_not_allowed\","
	     "\"sluice.verdict\":\"would_deny\",\"destination.ip\":\"127.0.0.1\",\"destination.port\":9,"
	     "\"network.transport\":\"udp\",\"sluice.hook\":\"sendmsg4\",\"sluice.canary\":true");
	logline("\"event.kind\":\"event\",\"event.action\":\"egress-denied\",\"event.reason\":\"raw_socket\","
	     "\"sluice.verdict\":\"deny\",\"network.transport\":\"icmp\",\"sluice.hook\":\"sock_create\"");
	logline("\"event.kind\":\"metric\",\"event.action\":\"events_lost\",\"sluice.events_lost\":12,"
	     "\"sluice.events_lost_total\":12");
	logline("\"sluice.component\":\"proxy\",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-http\","
	     "\"event.reason\":\"ip_literal\",\"sluice.verdict\":\"would_deny\",\"url.full\":\"http://192.0.2.10:8081/\","
	     "\"url.domain\":\"192.0.2.10\",\"http.request.method\":\"GET\"");
	logline("\"sluice.component\":\"proxy\",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-tls\","
	     "\"event.reason\":\"ech\",\"sluice.verdict\":\"would_deny\",\"tls.client.server_name\":\"x.example.com\","
	     "\"sluice.orig_dst\":\"192.0.2.10:443\"");
	logline("\"sluice.component\":\"resolver\",\"event.dataset\":\"sluice.resolver\",\"event.action\":\"dns-query\","
	     "\"event.reason\":\"zone_transfer\",\"sluice.verdict\":\"refuse\",\"dns.question.name\":\"example.com\","
	     "\"dns.question.type\":\"AXFR\"");
	/* audit mode logs the first reason only (host_not_allowed): the SNI says the rest */
	logline("\"sluice.component\":\"proxy\",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-connect\","
		"\"event.reason\":\"host_not_allowed\",\"sluice.verdict\":\"would_deny\",\"url.domain\":\"api.example.com\","
		"\"tls.client.server_name\":\"other.example.com\",\"destination.port\":443");
	run(&r);
	assert_int_equal(r.c.noted, 7);
	assert_has(r.text, "proxy sni_mismatch");
	assert_int_equal(r.c.skipped, 0);
	assert_int_equal(r.c.events_lost, 12);
	assert_int_equal(r.exit_status, 1);   /* the logs are incomplete */
	assert_has(r.diag, "12 kernel events were lost");
	assert_has(r.text, "kernel raw_socket: refused in audit mode too, no policy can allow it");
	assert_has(r.text, "IP literal 192.0.2.10 port 8081");
	assert_has(r.text, "proxy ech: refused in enforce mode whatever the policy says");
	assert_has(r.text, "resolver zone_transfer");
	assert_has(r.text, "allow: []\n");
	assert_int_equal(r.p->n_entries, 0);
	result_free(&r);
}

static void test_untrusted_text_cannot_inject_yaml(void **state)
{
	struct result r;

	log_reset("audit");
	/* a sandbox name and a path chosen to break out of a string or a comment */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00.000000Z\",\"sluice.sandbox\":\"x\\\"\\n  - host: evil.example.com\\n#\","
	    "\"sluice.mode\":\"audit\",\"sluice.policy_name\":\"p\\n- cidr: 0.0.0.0/0\",\"sluice.policy_sha256\":\"a\","
	    "\"sluice.component\":\"proxy\",\"event.dataset\":\"sluice.proxy\",\"event.action\":\"proxy-http\","
	    "\"event.reason\":\"host_not_allowed\",\"sluice.verdict\":\"would_deny\","
	    "\"url.full\":\"http://ok.example.com/a%22b\",\"url.domain\":\"ok.example.com\",\"http.request.method\":\"GET\"}\n");
	/* a second line whose path the proxy would refuse: reported */
	raw("{\"@timestamp\":\"2026-11-30T06:10:00.000000Z\",\"sluice.sandbox\":\"x\",\"sluice.component\":\"proxy\","
	    "\"event.action\":\"proxy-http\",\"event.reason\":\"host_not_allowed\",\"sluice.verdict\":\"would_deny\","
	    "\"url.full\":\"http://ok.example.com/a%0Ab\",\"url.domain\":\"ok.example.com\",\"http.request.method\":\"GET\"}\n");
	run(&r);
	assert_int_equal(r.c.skipped, 1);
	assert_has(r.diag, "f.jsonl:2: proxy-http line: ");
	assert_int_equal(r.p->n_entries, 1);
	assert_int_equal(r.p->entries[0].kind, SLUICE_ENTRY_URL);
	assert_string_equal(r.p->entries[0].url_path, "/a%22b");
	assert_lacks(r.text, "\n  - host: evil");
	assert_lacks(r.text, "\n- cidr");
	result_free(&r);
}

/* url.full split by http-parser: the port and path taken, what it cannot
 * read reported (and the line skipped), never guessed at. */
static void test_url_full_parsed(void **state)
{
	struct result r;

	log_reset("audit");
	http("GET", "http://ok.example.com:8080/a/./b?q=1", "ok.example.com", "host_not_allowed", "would_deny");
	http("GET", "http://ok.example.com:99999/x", "ok.example.com", "host_not_allowed", "would_deny");
	http("GET", "http://ok.example.com:0/x", "ok.example.com", "host_not_allowed", "would_deny");
	http("GET", "http:///x", "ok.example.com", "host_not_allowed", "would_deny");
	http("GET", "ftp://ok.example.com/x", "ok.example.com", "host_not_allowed", "would_deny");
	run(&r);
	assert_int_equal(r.c.skipped, 4);
	assert_has(r.diag, "f.jsonl:2: proxy-http line: url.full has a bad port (line skipped)");
	assert_has(r.diag, "f.jsonl:3: proxy-http line: url.full has a bad port (line skipped)");
	assert_has(r.diag, "f.jsonl:4: proxy-http line: url.full is not an http:// or https:// URL (line skipped)");
	assert_has(r.diag, "f.jsonl:5: proxy-http line: url.full is not an http:// or https:// URL (line skipped)");
	assert_int_equal(r.p->n_entries, 1);
	assert_int_equal(r.p->entries[0].url_port, 8080);
	assert_string_equal(r.p->entries[0].url_path, "/a/b");
	result_free(&r);
}

static void test_empty_input(void **state)
{
	struct result r;

	log_reset("audit");
	run(&r);
	assert_int_equal(r.c.lines, 0);
	assert_int_equal(r.exit_status, 0);
	assert_int_equal(r.p->n_entries, 0);
	assert_has(r.text, "allow: []\n");
	result_free(&r);
}

static void test_bad_name_option(void **state)
{
	size_t dlen = 0;
	char *diag = NULL;
	FILE *d = open_memstream(&diag, &dlen);
	struct suggest_opts o = { .name = "has space", .diag = d };

	assert_null(suggest_new(&o));
	fclose(d);
	assert_has(diag, "--name");
	free(diag);
}

static struct sluice_policy *load(const char *yaml)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char msg[700];

	if (sluice_policy_load_buffer("policy.yaml", yaml, strlen(yaml), &p, &err) != 0)
		fail_msg("%s", sluice_policy_error_str(&err, msg, sizeof(msg)));
	return p;
}

static const char against_yaml[] =
	"version: 1\n"
	"name: job\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [443]\n"
	"    why: the API\n"
	"  - url: http://files.example.com:8081/pub/\n"
	"    why: downloads\n"
	"  - cidr: 198.51.100.10/32\n"
	"    ports: [5432]\n"
	"    why: database\n";

/* Apply a diff the way a reviewer would, to the policy's text: in each
 * hunk the "- " lines are replaced by the "+ " lines; without "- " lines the
 * "+ " lines go after the context line ("  " prefix).  "(line N)" in the
 * hunk header says where to look. */
static char *apply(const char *policy, const char *diff)
{
	char *lines[256], *ins[257], *out;
	bool deleted[256] = { false };
	size_t n = 0, len = 0;
	const char *p = policy, *d = diff;

	while (*p) {
		const char *nl = strchr(p, '\n');

		assert_true(n < 256);
		lines[n] = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
		ins[n++] = calloc(1, 1);
		p = nl ? nl + 1 : p + strlen(p);
	}
	ins[n] = calloc(1, 1);
	while (*d) {
		char *minus[32], *plus[128], *ctx = NULL;
		size_t nm = 0, np = 0, from = 0;
		const char *h;

		if (strncmp(d, "@@", 2) != 0) {
			d = strchr(d, '\n') ? strchr(d, '\n') + 1 : d + strlen(d);
			continue;
		}
		h = strstr(d, "(line ");
		if (h && h < strchr(d, '\n'))
			from = (size_t)atoi(h + 6) - 1;
		d = strchr(d, '\n') + 1;
		while (*d && strncmp(d, "@@", 2) != 0 && (d[0] == '-' || d[0] == '+' || d[0] == ' ') && d[1] == ' ') {
			const char *nl = strchr(d, '\n');
			char *l = strndup(d + 2, (size_t)(nl - d - 2));

			if (d[0] == '-')
				minus[nm++] = l;
			else if (d[0] == '+')
				plus[np++] = l;
			else {
				free(ctx);
				ctx = l;
			}
			d = nl + 1;
		}
		if (nm) {
			size_t at = n;

			for (size_t i = from; i + nm <= n && at == n; i++) {
				bool eq = true;

				for (size_t k = 0; k < nm && eq; k++)
					eq = strcmp(lines[i + k], minus[k]) == 0;
				if (eq)
					at = i;
			}
			if (at == n)
				fail_msg("the diff's \"- %s\" is not in the policy", minus[0]);
			for (size_t k = 0; k < nm; k++)
				deleted[at + k] = true;
			for (size_t k = 0; k < np; k++) {
				ins[at] = realloc(ins[at], strlen(ins[at]) + strlen(plus[k]) + 2);
				strcat(strcat(ins[at], plus[k]), "\n");
			}
		} else {
			size_t at = n;

			assert_non_null(ctx);
			for (size_t i = n; i-- > from;)
				if (strcmp(lines[i], ctx) == 0 && (at == n || from))
					at = i;
			if (at == n)
				fail_msg("the diff's context \"%s\" is not in the policy", ctx);
			for (size_t k = 0; k < np; k++) {
				ins[at + 1] = realloc(ins[at + 1], strlen(ins[at + 1]) + strlen(plus[k]) + 2);
				strcat(strcat(ins[at + 1], plus[k]), "\n");
			}
		}
		for (size_t k = 0; k < nm; k++)
			free(minus[k]);
		for (size_t k = 0; k < np; k++)
			free(plus[k]);
		free(ctx);
	}
	for (size_t i = 0; i <= n; i++)
		len += strlen(ins[i]) + (i < n ? strlen(lines[i]) + 1 : 0);
	out = calloc(1, len + 1);
	assert_non_null(out);
	for (size_t i = 0; i <= n; i++) {
		strcat(out, ins[i]);
		free(ins[i]);
		if (i < n) {
			if (!deleted[i])
				strcat(strcat(out, lines[i]), "\n");
			free(lines[i]);
		}
	}
	return out;
}

static void test_against_smallest_additions(void **state)
{
	struct sluice_policy *p = load(against_yaml), *merged;
	struct result r;
	char *applied;

	log_reset("enforce");
	tls("api.example.com", 443, false);                      /* allowed already */
	tls("api.example.com", 8443, true);                      /* same host, another port: widen */
	http("POST", "http://files.example.com:8081/pub/up", "files.example.com", "method_not_allowed", "deny");
	http("GET", "http://files.example.com:8081/other/x", "files.example.com", "path_not_allowed", "deny");
	kernel("198.51.100.10", 5432, "tcp", true);              /* allowed by the cidr (another policy's log) */
	kernel("198.51.100.10", 5433, "tcp", true);              /* widen the cidr */
	kernel("192.0.2.44", 9999, "udp", true);                 /* new */
	tls("new.example.com", 443, true);                       /* new */
	dns("api.example.com", "TXT", "", "deny", "qtype_not_allowed");
	dns("nope.example.org", "A", "", "deny", "name_not_allowed");
	run_opts(&r, NULL, p, against_yaml, false);
	assert_non_null(r.text);
	assert_int_equal(r.c.skipped, 0);
	assert_has(r.text, "--- policy.yaml\tsha256 ");
	assert_has(r.text, "@@ allow[0] host:api.example.com (line 4): add ports @@\n-     ports: [443]\n+     ports: [443, 8443]\n");
	/* the url entry has no methods line (the default): one is added after its first line */
	assert_has(r.text, "@@ allow[1] url:http://files.example.com:8081/pub/ (line 7): add methods @@\n"
			   "    - url: http://files.example.com:8081/pub/\n+     methods: [GET, HEAD, POST]\n");
	assert_has(r.text, "@@ allow[2] cidr:198.51.100.10/32 (line 9): add ports @@\n-     ports: [5432]\n+     ports: [5432-5433]\n");
	/* no dns block: one is added after name: */
	assert_has(r.text, "@@ dns.qtypes: add TXT @@\n  name: job\n+ dns:\n+   qtypes: [A, AAAA, TXT]\n");
	assert_has(r.text, "@@ allow: append 3 new entries @@\n      why: database\n");
	assert_has(r.text, "+   - host: \"new.example.com\"\n+     ports: [443]\n");
	assert_has(r.text, "+   - url: \"http://files.example.com:8081/other/x\"\n+     methods: [GET]\n");
	assert_has(r.text, "+   - cidr: \"192.0.2.44/32\"\n+     ports: [9999]\n+     protocol: udp\n");
	/* only additions: the policy's own entries are not repeated */
	assert_lacks(r.text, "+   - host: \"api.example.com\"");
	assert_lacks(r.text, "why: the API");
	/* a refused name has no known port: a note, not an entry */
	assert_has(r.text, "nope.example.org (1)");
	assert_lacks(r.text, "+   - host: \"nope.example.org\"");
	assert_has(r.text, "# summary: 8 attempts in the logs, 2 already allowed");
	/* accepted by a reviewer, the diff gives a policy that allows every denial */
	applied = apply(against_yaml, r.text);
	merged = load(applied);
	assert_int_equal(merged->n_entries, 6);
	assert_non_null(sluice_policy_match_host(merged, "api.example.com", 8443));
	assert_non_null(sluice_policy_match_host(merged, "new.example.com", 443));
	assert_non_null(sluice_policy_match_url(merged, "http", "files.example.com", 8081, "POST", "/pub/up"));
	assert_non_null(sluice_policy_match_url(merged, "http", "files.example.com", 8081, "GET", "/other/x"));
	assert_true(cidr_allows(merged, "198.51.100.10", 6, 5433));
	assert_true(cidr_allows(merged, "192.0.2.44", 17, 9999));
	assert_true(sluice_policy_allows_qtype(merged, 16));
	sluice_policy_free(merged);
	free(applied);
	result_free(&r);
	sluice_policy_free(p);
}

static const char block_yaml[] =
	"version: 1\n"
	"name: blocky\n"
	"allow:\n"
	"- host: api.example.com   # the API\n"
	"  ports:\n"
	"  - 443\n"
	"  - 8000-8010\n"
	"  why: >-\n"
	"    the API,\n"
	"    folded\n"
	"- url: http://files.example.com/pub/\n"
	"  methods:\n"
	"    - GET\n"
	"  why: downloads\n"
	"dns:\n"
	"  on_deny: refused\n"
	"  qtypes:\n"
	"    - A\n"
	"mode: enforce\n";

static void test_against_quotes_block_style(void **state)
{
	struct sluice_policy *p = load(block_yaml), *merged;
	struct result r;
	char *applied;

	log_reset("enforce");
	tls("api.example.com", 9443, true);
	http("HEAD", "http://files.example.com/pub/x", "files.example.com", "method_not_allowed", "deny");
	dns("api.example.com", "AAAA", "", "deny", "qtype_not_allowed");
	tls("new.example.com", 443, true);
	run_opts(&r, NULL, p, block_yaml, false);
	assert_non_null(r.text);
	assert_has(r.text, "-   ports:\n-   - 443\n-   - 8000-8010\n+   ports: [443, 8000-8010, 9443]\n");
	assert_has(r.text, "-   methods:\n-     - GET\n+   methods: [GET, HEAD]\n");
	assert_has(r.text, "-   qtypes:\n-     - A\n+   qtypes: [A, AAAA]\n");
	/* new entries at the list's own indentation, after its last line (not at the end of the file) */
	assert_has(r.text, "@@ allow: append 1 new entry @@\n    why: downloads\n+ - host: \"new.example.com\"\n");
	applied = apply(block_yaml, r.text);
	merged = load(applied);
	assert_int_equal(merged->n_entries, 3);
	assert_int_equal(merged->dns_on_deny, SLUICE_DNS_REFUSED);
	assert_non_null(sluice_policy_match_host(merged, "api.example.com", 9443));
	assert_non_null(sluice_policy_match_host(merged, "api.example.com", 8005));
	assert_non_null(sluice_policy_match_url(merged, "http", "files.example.com", 80, "HEAD", "/pub/x"));
	assert_non_null(sluice_policy_match_host(merged, "new.example.com", 443));
	assert_true(sluice_policy_allows_qtype(merged, 28));
	assert_string_equal(merged->entries[0].why, "the API, folded");
	sluice_policy_free(merged);
	free(applied);
	result_free(&r);

	/* without the policy's text the diff quotes it as sluice writes it, and says so */
	log_reset("enforce");
	tls("api.example.com", 9443, true);
	run_opts(&r, NULL, p, NULL, false);
	assert_has(r.text, "(policy.yaml as written by sluice: its own text was not given)");
	assert_has(r.text, "-     ports: [443, 8000-8010]\n+     ports: [443, 8000-8010, 9443]\n");
	result_free(&r);
	/* a text that is not the policy's is not quoted */
	run_opts(&r, NULL, p, against_yaml, false);
	assert_has(r.text, "as written by sluice");
	result_free(&r);
	sluice_policy_free(p);
}

static void test_against_nothing_to_add(void **state)
{
	struct sluice_policy *p = load(against_yaml);
	struct result r;

	log_reset("enforce");
	tls("api.example.com", 443, false);
	http("GET", "http://files.example.com:8081/pub/a", "files.example.com", "allowed", "allow");
	run_opts(&r, NULL, p, against_yaml, false);
	assert_has(r.text, "# nothing to add");
	assert_lacks(r.text, "\n+ ");
	assert_lacks(r.text, "\n@@");
	assert_int_equal(r.exit_status, 0);
	result_free(&r);
	sluice_policy_free(p);
}

static void test_many_runs_and_files(void **state)
{
	struct result r;
	size_t dlen = 0;
	char *diag = NULL;
	FILE *d = open_memstream(&diag, &dlen), *in;
	struct suggest_opts o = { .relays = relays_path, .diag = d };
	struct suggest *s = suggest_new(&o);
	char *text;

	assert_non_null(s);
	for (int run_no = 0; run_no < 5; run_no++) {
		char name[32];

		log_reset("audit");
		tls("api.example.com", 443, false);
		tls("api.example.com", 443, false);
		snprintf(name, sizeof(name), "run%d.jsonl", run_no);
		/* each file its own sandbox name */
		for (char *x = strstr(log_buf, "job-1"); x; x = strstr(x + 5, "job-1"))
			x[4] = (char)('1' + run_no);
		in = fmemopen(log_buf, log_len, "r");
		assert_int_equal(suggest_read(s, name, in), 0);
		fclose(in);
	}
	text = suggest_render(s);
	r.c = *suggest_counts(s);
	suggest_free(s);
	fclose(d);
	assert_non_null(text);
	assert_int_equal(r.c.files, 5);
	assert_has(text, "seen 10 times from 2026-11-30T06:10:00Z to 2026-11-30T06:10:01Z in job-1, job-2, job-3 and more runs");
	assert_has(text, "from run0.jsonl, run1.jsonl, run2.jsonl and 2 more files");
	free(text);
	free(diag);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_audit_run_to_policy),
		cmocka_unit_test(test_bad_lines_reported_with_line_numbers),
		cmocka_unit_test(test_nul_byte_and_long_line),
		cmocka_unit_test(test_wildcard_only_offered),
		cmocka_unit_test(test_relay_marked_for_review),
		cmocka_unit_test(test_url_entries_only_for_plain_http),
		cmocka_unit_test(test_names_from_the_resolver),
		cmocka_unit_test(test_notes_and_lost_events),
		cmocka_unit_test(test_untrusted_text_cannot_inject_yaml),
		cmocka_unit_test(test_url_full_parsed),
		cmocka_unit_test(test_empty_input),
		cmocka_unit_test(test_bad_name_option),
		cmocka_unit_test(test_against_smallest_additions),
		cmocka_unit_test(test_against_quotes_block_style),
		cmocka_unit_test(test_against_nothing_to_add),
		cmocka_unit_test(test_many_runs_and_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
