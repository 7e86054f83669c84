/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_lint.c - the lints of `sluice policy check` (userspace/lib/lint.c)
 * and the shipped relay list policies/relays.txt.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"

#define HEAD "version: 1\nname: t\nallow:\n"

static char relays_path[64];

static const char relays_text[] =
	"# test relay list\n"
	"\n"
	"raw.githubusercontent.com   code-hosting   # raw files\n"
	"*.s3.amazonaws.com          object-storage\n"
	"discord.com/api/webhooks    webhook        # path prefix\n"
	"*.trycloudflare.com         tunnel\n"
	"dns.google                  doh\n"
	"upload.relay-example.net    file-share\n"
	"*.cdn.relay-example.net     cdn\n";

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(relays_path, sizeof(relays_path), "/tmp/sluice-test-relays-XXXXXX");
	fd = mkstemp(relays_path);
	if (fd < 0)
		return -1;
	if (write(fd, relays_text, sizeof(relays_text) - 1) != (ssize_t)(sizeof(relays_text) - 1)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(relays_path);
	return 0;
}

static struct sluice_policy *load(const char *yaml)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &err) != 0)
		fail_msg("load failed: %s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	return p;
}

/* Lint `yaml`; return the findings (count in *n). */
static struct sluice_lint *lint(const char *yaml, const char *relays, int *n)
{
	struct sluice_policy *p = load(yaml);
	struct sluice_lint *l = NULL;

	*n = sluice_policy_lint(p, relays ? relays : relays_path, &l);
	sluice_policy_free(p);
	if (*n < 0)
		fail_msg("lint failed: %s", strerror(errno));
	return l;
}

/* Exactly `want` findings with `code`, the first at entry/line/column, its
 * message containing `part`. */
static void expect(const char *yaml, enum sluice_lint_code code, int want, unsigned entry,
		   unsigned line, unsigned col, const char *part)
{
	int n, got = 0;
	struct sluice_lint *l = lint(yaml, NULL, &n), *first = NULL;

	for (int i = 0; i < n; i++)
		if (l[i].code == code) {
			if (!first)
				first = &l[i];
			got++;
		}
	if (got != want)
		fail_msg("want %d findings of code %d, got %d:\n%s", want, code, got, yaml);
	if (first) {
		assert_int_equal(first->entry, entry);
		assert_int_equal(first->line, line);
		assert_int_equal(first->column, col);
		if (!strstr(first->message, part))
			fail_msg("message '%s' lacks '%s'", first->message, part);
	}
	free(l);
}

static void test_clean(void **state)
{
	int n;
	struct sluice_lint *l;

	(void)state;
	l = lint(HEAD "  - host: api.example.com\n    ports: [443]\n    why: x\n"
		      "  - url: http://deb.example.net/debian/\n    why: x\n"
		      "  - cidr: 11.0.0.0/24\n    ports: [5432]\n    why: x\n", NULL, &n);
	assert_int_equal(n, 0);
	free(l);
	l = lint("version: 1\nname: nothing\n", NULL, &n);
	assert_int_equal(n, 0);
	free(l);
}

static void test_relay(void **state)
{
	(void)state;
	expect(HEAD "  - host: raw.githubusercontent.com\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "raw.githubusercontent.com, a relay-capable service (code-hosting)");
	/* under a wildcard pattern */
	expect(HEAD "  - host: a.b\n    ports: [1]\n    why: x\n"
		    "  - host: mybucket.s3.amazonaws.com\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 1, 7, 5, "*.s3.amazonaws.com");
	/* a wildcard entry covering a listed name */
	expect(HEAD "  - host: \"*.relay-example.net\"\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "upload.relay-example.net, a relay-capable service (file-share)");
	/* and a wildcard entry under a wildcard pattern */
	expect(HEAD "  - host: \"*.x.cdn.relay-example.net\"\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "*.cdn.relay-example.net");
	/* a host entry allows every path, so a path pattern matches it */
	expect(HEAD "  - host: discord.com\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "discord.com/api/webhooks, a relay-capable service (webhook)");
	/* a url entry only when the paths overlap */
	expect(HEAD "  - url: http://discord.com/api/\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "discord.com/api/webhooks");
	expect(HEAD "  - url: http://discord.com/api/webhooks/123/abc\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "discord.com/api/webhooks");
	expect(HEAD "  - url: http://discord.com/assets/\n    why: x\n", SLUICE_LINT_RELAY, 0, 0, 0, 0, "");
	expect(HEAD "  - url: http://dns.google/resolve\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "(doh)");
	/* label boundaries: not the apex of a wildcard pattern, not a suffix */
	expect(HEAD "  - host: s3.amazonaws.com\n    ports: [443]\n    why: x\n", SLUICE_LINT_RELAY, 0, 0, 0, 0, "");
	expect(HEAD "  - host: notdns.google\n    ports: [443]\n    why: x\n", SLUICE_LINT_RELAY, 0, 0, 0, 0, "");
	expect(HEAD "  - host: dns.google.example.com\n    ports: [443]\n    why: x\n", SLUICE_LINT_RELAY, 0, 0, 0, 0, "");
	/* one finding per entry, even when several patterns match */
	expect(HEAD "  - host: \"*.relay-example.net\"\n    ports: [443]\n    why: x\n", SLUICE_LINT_RELAY, 1, 0, 4, 5, "relay-example.net");
	expect(HEAD "  - host: \"*.cdn.relay-example.net\"\n    ports: [443]\n    why: x\n", SLUICE_LINT_RELAY, 1, 0, 4, 5, "*.cdn.relay-example.net");
}

/* https:// url entries are inspected: a narrow one does not warn; one for
 * the whole name does, and so does `inspect: true` on a host entry */
static void test_relay_https(void **state)
{
	(void)state;
	expect(HEAD "  - url: https://raw.githubusercontent.com/org/repo/\n    why: x\n",
	       SLUICE_LINT_RELAY, 0, 0, 0, 0, "");
	expect(HEAD "  - url: https://raw.githubusercontent.com/\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "raw.githubusercontent.com, a relay-capable service");
	expect(HEAD "  - url: https://discord.com/api/webhooks/1/\n    methods: [POST]\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "discord.com/api/webhooks");
	expect(HEAD "  - host: raw.githubusercontent.com\n    ports: [443]\n    inspect: true\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "inspect: true logs every request inside TLS but lets any path and method through");
	expect(HEAD "  - host: raw.githubusercontent.com\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_RELAY, 1, 0, 4, 5, "a host entry is a passthrough");
	/* a host entry for the same name and port makes the url entry moot */
	expect(HEAD "  - url: https://api.example.com/v1/\n    why: x\n"
		    "  - host: api.example.com\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_URL_SHADOWED, 1, 0, 4, 5, "allow[1] host:api.example.com also allows api.example.com on port 443");
	expect(HEAD "  - url: https://api.example.com/v1/\n    why: x\n"
		    "  - host: api.example.com\n    ports: [8443]\n    why: x\n",
	       SLUICE_LINT_URL_SHADOWED, 0, 0, 0, 0, "");
	/* https bodies are encrypted: no plain-http-body finding */
	expect(HEAD "  - url: https://api.example.com/v1/\n    methods: [POST]\n    why: x\n",
	       SLUICE_LINT_PLAIN_HTTP_BODY, 0, 0, 0, 0, "");
}

static void test_wildcard(void **state)
{
	(void)state;
	expect(HEAD "  - host: a.example.com\n    ports: [443]\n    why: x\n"
		    "  - host: \"*.pkg.example.org\"\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WILDCARD, 1, 1, 7, 5, "every name under pkg.example.org");
	expect(HEAD "  - host: pkg.example.org\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WILDCARD, 0, 0, 0, 0, "");
}

static void test_wide_cidr(void **state)
{
	(void)state;
	expect(HEAD "  - cidr: 198.51.0.0/16\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WIDE_CIDR, 1, 0, 4, 5, "wider than a /24");
	expect(HEAD "  - cidr: 198.51.100.0/23\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WIDE_CIDR, 1, 0, 4, 5, "wider than a /24");
	expect(HEAD "  - cidr: 198.51.100.0/24\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WIDE_CIDR, 0, 0, 0, 0, "");
	expect(HEAD "  - cidr: 0.0.0.0/0\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WIDE_CIDR, 1, 0, 4, 5, "all IPv4");
	expect(HEAD "  - cidr: 2001:db8::/32\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WIDE_CIDR, 1, 0, 4, 5, "wider than a /48");
	expect(HEAD "  - cidr: 2001:db8::/47\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WIDE_CIDR, 1, 0, 4, 5, "wider than a /48");
	expect(HEAD "  - cidr: 2001:db8::/48\n    ports: [443]\n    why: x\n",
	       SLUICE_LINT_WIDE_CIDR, 0, 0, 0, 0, "");
}

static void test_special_ranges(void **state)
{
	static const struct {
		const char *cidr, *part;
	} cases[] = {
		{ "10.1.2.0/24", "private range (10.0.0.0/8)" },
		{ "172.16.0.0/24", "private range (172.16.0.0/12)" },
		{ "172.31.255.0/24", "private range (172.16.0.0/12)" },
		{ "192.168.1.0/24", "private range (192.168.0.0/16)" },
		{ "127.0.0.1/32", "loopback" },
		{ "169.254.1.0/24", "link-local" },
		{ "169.254.169.254/32", "cloud metadata" },
		{ "100.64.0.0/24", "carrier-grade NAT" },
		{ "0.0.0.0/32", "this network" },
		{ "224.0.0.0/24", "multicast" },
		{ "::1/128", "loopback (::1)" },
		{ "fd00:ec2::254/128", "cloud metadata service (fd00:ec2::254)" },
		{ "fd12:3456::/48", "unique-local" },
		{ "fe80::/64", "link-local (fe80::/10)" },
		{ "::ffff:127.0.0.1/128", "loopback (127.0.0.0/8)" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char y[512];

		snprintf(y, sizeof(y), HEAD "  - cidr: \"%s\"\n    ports: [443]\n    why: x\n", cases[i].cidr);
		expect(y, SLUICE_LINT_SPECIAL_RANGE, 1, 0, 4, 5, cases[i].part);
	}
	/* public ranges are not special; neighbours of private ones neither */
	expect(HEAD "  - cidr: 172.32.0.0/24\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 0, 0, 0, 0, "");
	expect(HEAD "  - cidr: 11.0.0.0/24\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 0, 0, 0, 0, "");
	expect(HEAD "  - cidr: 2a00:1450::/48\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 0, 0, 0, 0, "");
	/* documentation ranges are special too (never on the internet): the
	 * proxy and the resolver refuse them without a hatch */
	expect(HEAD "  - cidr: 198.51.100.0/24\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 1, 0, 4, 5,
	       "a documentation range (198.51.100.0/24)");
	expect(HEAD "  - cidr: 2001:db8::/48\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 1, 0, 4, 5,
	       "a documentation range (2001:db8::/32)");
	/* an IPv6 form that embeds an IPv4 address names it */
	expect(HEAD "  - cidr: 64:ff9b::a9fe:a9fe/128\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 1, 0, 4, 5,
	       "NAT64, well-known prefix (64:ff9b::/96), which embeds 169.254.169.254 (metadata)");
	expect(HEAD "  - cidr: 2002:a00:1::/48\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 1, 0, 4, 5,
	       "6to4 (2002::/16)");
	/* a wide range that contains special ones says which: every row of
	 * the IPv4 table (userspace/lib/netaddr.c) */
	expect(HEAD "  - cidr: 0.0.0.0/0\n    ports: [443]\n    why: x\n", SLUICE_LINT_SPECIAL_RANGE, 22, 0, 4, 5, "metadata");
	/* metadata and loopback names on host entries */
	expect(HEAD "  - host: metadata.google.internal\n    ports: [80]\n    why: x\n",
	       SLUICE_LINT_SPECIAL_RANGE, 1, 0, 4, 5, "metadata.google.internal");
	expect(HEAD "  - host: localhost\n    ports: [80]\n    why: x\n",
	       SLUICE_LINT_SPECIAL_RANGE, 1, 0, 4, 5, "localhost");
}

static void test_dns_port(void **state)
{
	(void)state;
	expect(HEAD "  - cidr: 198.51.100.0/24\n    ports: [53]\n    protocol: udp\n    why: x\n",
	       SLUICE_LINT_DNS_PORT, 1, 0, 4, 5, "port 53 (DNS)");
	expect(HEAD "  - cidr: 198.51.100.0/24\n    ports: [853]\n    why: x\n",
	       SLUICE_LINT_DNS_PORT, 1, 0, 4, 5, "port 853 (DNS over TLS)");
	expect(HEAD "  - cidr: 198.51.100.0/24\n    ports: [1-1024]\n    why: x\n",
	       SLUICE_LINT_DNS_PORT, 1, 0, 4, 5, "port 53");
	expect(HEAD "  - cidr: 198.51.100.0/24\n    ports: [54-852, 854]\n    why: x\n",
	       SLUICE_LINT_DNS_PORT, 0, 0, 0, 0, "");
	/* host entries go through the proxy: not this lint */
	expect(HEAD "  - host: ns.example.com\n    ports: [53]\n    why: x\n",
	       SLUICE_LINT_DNS_PORT, 0, 0, 0, 0, "");
}

static void test_plain_http_body(void **state)
{
	(void)state;
	expect(HEAD "  - url: http://up.example.com/in/\n    methods: [GET, POST, PUT]\n    why: x\n",
	       SLUICE_LINT_PLAIN_HTTP_BODY, 1, 0, 4, 5, "POST,PUT over plain http");
	expect(HEAD "  - url: http://up.example.com/in/\n    methods: [PATCH]\n    why: x\n",
	       SLUICE_LINT_PLAIN_HTTP_BODY, 1, 0, 4, 5, "PATCH");
	expect(HEAD "  - url: http://up.example.com/in/\n    methods: [DELETE]\n    why: x\n",
	       SLUICE_LINT_PLAIN_HTTP_BODY, 1, 0, 4, 5, "DELETE");
	expect(HEAD "  - url: http://up.example.com/in/\n    methods: [GET, HEAD, OPTIONS]\n    why: x\n",
	       SLUICE_LINT_PLAIN_HTTP_BODY, 0, 0, 0, 0, "");
	expect(HEAD "  - url: http://up.example.com/in/\n    why: x\n",
	       SLUICE_LINT_PLAIN_HTTP_BODY, 0, 0, 0, 0, "");
}

static void test_code_names_and_order(void **state)
{
	int n;
	struct sluice_lint *l;

	(void)state;
	l = lint(HEAD "  - host: \"*.bucket.s3.amazonaws.com\"\n    ports: [443]\n    why: x\n"
		      "  - cidr: 10.0.0.0/8\n    ports: [53]\n    why: x\n"
		      "  - url: http://a.example/\n    methods: [POST]\n    why: x\n", NULL, &n);
	assert_int_equal(n, 6);
	assert_string_equal(l[0].code_name, "relay");
	assert_int_equal(l[0].entry, 0);
	assert_string_equal(l[1].code_name, "wildcard");
	assert_string_equal(l[2].code_name, "wide-cidr");
	assert_int_equal(l[2].entry, 1);
	assert_string_equal(l[3].code_name, "special-range");
	assert_string_equal(l[4].code_name, "dns-port");
	assert_string_equal(l[5].code_name, "plain-http-body");
	assert_int_equal(l[5].entry, 2);
	assert_int_equal(l[5].line, 10);
	assert_non_null(strstr(l[0].message, "allow[0] host:*.bucket.s3.amazonaws.com"));
	free(l);
}

static void test_relay_list_errors(void **state)
{
	struct sluice_policy *p = load(HEAD "  - host: a.example\n    ports: [1]\n    why: x\n");
	struct sluice_lint *l = (struct sluice_lint *)0x1;
	char bad[] = "/tmp/sluice-test-badrelays-XXXXXX";
	static const char *const bodies[] = { "only-a-pattern\n", "a.example cat extra\n",
					       "a b.example cat\n", "*bad.example cat\n",
					       "127.0.0.1 cat\n", "a.example/%2F cat\n" };

	(void)state;
	errno = 0;
	assert_int_equal(sluice_policy_lint(p, "/nonexistent/relays.txt", &l), -1);
	assert_int_equal(errno, ENOENT);
	assert_null(l);
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		int fd;

		memcpy(bad, "/tmp/sluice-test-badrelays-XXXXXX", sizeof(bad));
		fd = mkstemp(bad);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, bodies[i], strlen(bodies[i])), (ssize_t)strlen(bodies[i]));
		close(fd);
		errno = 0;
		if (sluice_policy_lint(p, bad, &l) != -1 || errno != EINVAL)
			fail_msg("relay list line '%s' accepted", bodies[i]);
		unlink(bad);
	}
	sluice_policy_free(p);
}

/* The shipped list: parses, and knows the services the issue names. */
static void test_shipped_relays(void **state)
{
	static const char *const hosts[] = {
		"raw.githubusercontent.com", "gist.github.com", "api.github.com", "pastebin.com",
		"transfer.sh", "s3.amazonaws.com", "bucket.s3.amazonaws.com", "storage.googleapis.com",
		"acct.blob.core.windows.net", "webhook.site", "hooks.slack.com", "discord.com",
		"ngrok.io", "x.ngrok-free.app", "x.trycloudflare.com", "dns.google",
		"cloudflare-dns.com", "dns.quad9.net", "d111.cloudfront.net", "x.azureedge.net",
		"x.fastly.net", "app.herokuapp.com", "w.workers.dev",
	};
	const char *path = "policies/relays.txt";

	(void)state;
	if (access(path, R_OK) != 0)
		path = "../../../policies/relays.txt";
	if (access(path, R_OK) != 0)
		skip();
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		char y[512];
		int n;
		struct sluice_lint *l;

		snprintf(y, sizeof(y), HEAD "  - host: %s\n    ports: [443]\n    why: x\n", hosts[i]);
		l = lint(y, path, &n);
		if (n != 1 || l[0].code != SLUICE_LINT_RELAY)
			fail_msg("%s: not flagged as a relay by %s", hosts[i], path);
		free(l);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_relay),
		cmocka_unit_test(test_relay_https),
		cmocka_unit_test(test_wildcard),
		cmocka_unit_test(test_wide_cidr),
		cmocka_unit_test(test_special_ranges),
		cmocka_unit_test(test_dns_port),
		cmocka_unit_test(test_plain_http_body),
		cmocka_unit_test(test_code_names_and_order),
		cmocka_unit_test(test_relay_list_errors),
		cmocka_unit_test(test_shipped_relays),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
