/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_normalise.c - host names, IP literals, URL paths and matching
 * (userspace/lib/normalise.c, the matchers in policy.c).
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "policy.h"

/* --- host names ------------------------------------------------------------ */

static void host_ok(const char *in, const char *want)
{
	char out[SLUICE_HOST_MAX + 1];
	const char *why = "unset";

	if (sluice_host_normalise(in, out, sizeof(out), &why) != 0)
		fail_msg("'%s' refused: %s", in, why);
	assert_string_equal(out, want);
}

static void host_bad(const char *in, const char *why_part)
{
	char out[SLUICE_HOST_MAX + 1];
	const char *why = NULL;

	if (sluice_host_normalise(in, out, sizeof(out), &why) == 0)
		fail_msg("'%s' accepted as '%s'", in, out);
	assert_non_null(why);
	if (!strstr(why, why_part))
		fail_msg("'%s': reason '%s' lacks '%s'", in, why, why_part);
}

static void test_host_case_and_trailing_dot(void **state)
{
	(void)state;
	host_ok("api.example.com", "api.example.com");
	host_ok("API.Example.COM", "api.example.com");
	host_ok("api.example.com.", "api.example.com");
	host_ok("API.EXAMPLE.COM.", "api.example.com");
	host_ok("localhost", "localhost");
	host_ok("a-b_c.example", "a-b_c.example");
	host_bad("api.example.com..", "empty label");
	host_bad(".example.com", "empty label");
	host_bad(".", "empty host name");
	host_bad("", "empty host name");
}

static void test_host_idna(void **state)
{
	(void)state;
	host_ok("bücher.example", "xn--bcher-kva.example");
	host_ok("BÜCHER.example", "xn--bcher-kva.example");
	host_ok("Bücher.Example.", "xn--bcher-kva.example");
	host_ok("xn--bcher-kva.example", "xn--bcher-kva.example");
	host_ok("XN--BCHER-KVA.example", "xn--bcher-kva.example");
	/* IDNA2008 non-transitional: sharp s is kept (not "ss") */
	host_ok("faß.de", "xn--fa-hia.de");
	/* UTS#46 maps full-width forms */
	host_ok("\xef\xbd\x81\xef\xbd\x82\xef\xbd\x83.example", "abc.example");
	host_bad("xn--a.example", "IDNA");
	host_bad("\xff\xfe.example", "IDNA");
}

static void test_host_bad_bytes(void **state)
{
	(void)state;
	host_bad("a\x01.example.com", "control");
	host_bad("a\t.example.com", "control");
	host_bad("a\x7f.example.com", "control");
	host_bad("a b.example.com", "space");
	host_bad("user@example.com", "'@'");
	host_bad("a%2eexample.com", "'%'");
	host_bad("[example.com]", "brackets");
	host_bad("example.com:443", "':'");
	host_bad("*.example.com", "'*'");
	host_bad("a/b.example.com", "'/'");
	host_bad("a!b.example.com", "not allowed");
	/* full-width '@' maps to '@' under UTS#46: still refused */
	host_bad("user\xef\xbc\xa0" "example.com", "@");
}

static void test_host_lengths(void **state)
{
	char name[400], label[70];

	(void)state;
	/* 63-byte label fine, 64 refused */
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(name, sizeof(name), "%s.example", label);
	host_ok(name, name);
	memset(label, 'a', 64);
	label[64] = '\0';
	snprintf(name, sizeof(name), "%s.example", label);
	host_bad(name, "label longer than 63");
	/* 253 bytes fine (also with its trailing dot), 254 refused */
	memset(name, 0, sizeof(name));
	for (int i = 0; i < 4; i++)
		memcpy(name + i * 64, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.", 64);
	name[253] = '\0';   /* 3*64 + 61 */
	assert_int_equal(strlen(name), 253);
	host_ok(name, name);
	name[253] = '.';
	name[254] = '\0';
	{
		char want[254];

		memcpy(want, name, 253);
		want[253] = '\0';
		host_ok(name, want);
	}
	name[253] = 'a';
	name[254] = '\0';
	host_bad(name, "longer than 253");
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	host_bad(name, "longer than 253");
}

static void test_host_ip_literals(void **state)
{
	(void)state;
	host_bad("127.0.0.1", "ip literal");
	host_bad("::1", "ip literal");
	host_bad("[::1]", "ip literal");
	host_bad("0x7f000001", "ip literal");
	host_bad("017700000001", "ip literal");
	host_bad("2130706433", "ip literal");
	host_bad("127.1", "ip literal");
	host_bad("0x7f.1", "ip literal");
	host_bad("127.0.0.1.", "ip literal");
	host_bad("1.2.3.4.5", "ip literal");
	host_bad("example.0x10", "ip literal");
	host_bad("example.123", "ip literal");
	/* full-width digits map to ASCII digits under UTS#46 */
	host_bad("\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1", "ip literal");
	/* a label that merely starts with digits is a name */
	host_ok("123abc.example", "123abc.example");
	host_ok("1e100.net", "1e100.net");
}

/* --- IP literals -------------------------------------------------------------- */

static void ip_is(const char *in, int rc, int family, const char *canon)
{
	int fam = -1;
	uint8_t addr[16];
	char buf[INET6_ADDRSTRLEN];

	memset(addr, 0xaa, sizeof(addr));
	if (sluice_ip_normalise(in, &fam, addr) != rc)
		fail_msg("'%s': want rc %d", in, rc);
	if (rc != 0)
		return;
	assert_int_equal(fam, family);
	assert_non_null(inet_ntop(fam, addr, buf, sizeof(buf)));
	assert_string_equal(buf, canon);
}

static void test_ip_canonical(void **state)
{
	(void)state;
	ip_is("127.0.0.1", 0, AF_INET, "127.0.0.1");
	ip_is("0.0.0.0", 0, AF_INET, "0.0.0.0");
	ip_is("255.255.255.255", 0, AF_INET, "255.255.255.255");
	ip_is("::1", 0, AF_INET6, "::1");
	ip_is("[::1]", 0, AF_INET6, "::1");
	ip_is("2001:DB8:0:0::1", 0, AF_INET6, "2001:db8::1");
	ip_is("2001:0db8:0000:0000:0000:0000:0000:0001", 0, AF_INET6, "2001:db8::1");
	/* ::ffff:a.b.c.d (and its hex spelling) is IPv4 */
	ip_is("::ffff:192.0.2.1", 0, AF_INET, "192.0.2.1");
	ip_is("::FFFF:c000:0201", 0, AF_INET, "192.0.2.1");
	ip_is("[::ffff:127.0.0.1]", 0, AF_INET, "127.0.0.1");
}

static void test_ip_noncanonical(void **state)
{
	(void)state;
	/* IP addresses, but never in these spellings */
	ip_is("0x7f000001", 1, 0, NULL);
	ip_is("017700000001", 1, 0, NULL);
	ip_is("2130706433", 1, 0, NULL);
	ip_is("127.1", 1, 0, NULL);
	ip_is("127.0.1", 1, 0, NULL);
	ip_is("0x7f.0.0.1", 1, 0, NULL);
	ip_is("0177.0.0.1", 1, 0, NULL);
	ip_is("127.000.000.001", 1, 0, NULL);
	ip_is("127.0.0.01", 1, 0, NULL);
	ip_is("256.0.0.1", 1, 0, NULL);
	ip_is("1.2.3.4.", 1, 0, NULL);
	ip_is("fe80::1%eth0", 1, 0, NULL);
	ip_is("1:2:3:4:5:6:7:8:9", 1, 0, NULL);
	/* not IP addresses at all */
	ip_is("example.com", -1, 0, NULL);
	ip_is("", -1, 0, NULL);
	ip_is("[example.com]", -1, 0, NULL);
	ip_is("[1.2.3.4]", -1, 0, NULL);
	ip_is("a:b:zz", -1, 0, NULL);
}

/* --- URL paths -------------------------------------------------------------------- */

static void path_ok(const char *in, const char *want)
{
	char out[512];
	const char *why = "unset";

	if (sluice_url_path_normalise(in, out, sizeof(out), &why) != 0)
		fail_msg("'%s' refused: %s", in, why);
	if (strcmp(out, want) != 0)
		fail_msg("'%s' -> '%s', want '%s'", in, out, want);
}

static void path_bad(const char *in, const char *why_part)
{
	char out[512];
	const char *why = NULL;

	if (sluice_url_path_normalise(in, out, sizeof(out), &why) == 0)
		fail_msg("'%s' accepted as '%s'", in, out);
	assert_non_null(why);
	if (!strstr(why, why_part))
		fail_msg("'%s': reason '%s' lacks '%s'", in, why, why_part);
}

static void test_path_dot_segments(void **state)
{
	(void)state;
	/* RFC 3986 5.2.4 and its examples */
	path_ok("/a/b/c/./../../g", "/a/g");
	path_ok("/mid/content=5/../6", "/mid/6");
	path_ok("/", "/");
	path_ok("", "/");
	path_ok("/.", "/");
	path_ok("/..", "/");
	path_ok("/../../..", "/");
	path_ok("/a/..", "/");
	path_ok("/a/.", "/a/");
	path_ok("/a/./b", "/a/b");
	path_ok("/debian/../etc/passwd", "/etc/passwd");
	path_ok("/debian/dists/", "/debian/dists/");
	path_ok("/a//b", "/a//b");
	path_ok("/a/..b/c", "/a/..b/c");
	path_ok("/a/.b", "/a/.b");
	/* query and fragment are cut */
	path_ok("/a/b?c=/../d", "/a/b");
	path_ok("/a/b#x", "/a/b");
	path_ok("?x", "/");
}

static void test_path_percent(void **state)
{
	(void)state;
	/* unreserved are decoded (so %2e%2e is ".."), others upper-cased */
	path_ok("/debian/%2e%2e/secret", "/secret");
	path_ok("/debian/%2E%2E/secret", "/secret");
	path_ok("/debian/.%2e/secret", "/secret");
	path_ok("/%7Euser/%41", "/~user/A");
	path_ok("/a%3fb", "/a%3Fb");
	path_ok("/a%20b", "/a%20b");
	path_ok("/a%25", "/a%25");
	path_bad("/a%2Fb", "%2F");
	path_bad("/a%2fb", "%2F");
	path_bad("/a%5Cb", "%5C");
	path_bad("/a%5cb", "%5C");
	path_bad("/a%00", "%00");
	path_bad("/a%0a", "control");
	path_bad("/a%7F", "control");
	path_bad("/a%", "bad percent");
	path_bad("/a%4", "bad percent");
	path_bad("/a%zz", "bad percent");
	path_bad("/a%4g", "bad percent");
}

static void test_path_refused(void **state)
{
	(void)state;
	path_bad("/a\\b", "backslash");
	path_bad("/a\x01" "b", "control");
	path_bad("/a\tb", "control");
	path_bad("/a\x7f", "control");
	path_bad("/a b", "not allowed");
	path_bad("/a\"b", "not allowed");
	path_bad("/a<b", "not allowed");
	path_bad("/\xc3\xa9", "non-ASCII");
	path_bad("a/b", "must start with '/'");
	path_bad("*", "must start with '/'");
	{
		char big[8000];

		memset(big, 'a', sizeof(big) - 1);
		big[0] = '/';
		big[sizeof(big) - 1] = '\0';
		path_bad(big, "too long");
	}
	{
		char out[4];
		const char *why = NULL;

		assert_int_equal(sluice_url_path_normalise("/abcdef", out, sizeof(out), &why), -1);
		assert_non_null(why);
	}
}

/* --- matching -------------------------------------------------------------------------- */

static struct sluice_policy *load(const char *yaml)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("test.yaml", yaml, strlen(yaml), &p, &err) != 0)
		fail_msg("load failed: %s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	return p;
}

static const char match_yaml[] =
	"version: 1\n"
	"name: match\n"
	"dns:\n"
	"  qtypes: [A, AAAA, HTTPS]\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [443]\n"
	"    why: exact\n"
	"  - host: \"*.pkg.example.org\"\n"
	"    ports: [443, 8000-8080]\n"
	"    why: wildcard\n"
	"  - url: http://deb.example.net/debian/\n"
	"    why: prefix with slash\n"
	"  - url: http://deb.example.net:8080/pool\n"
	"    methods: [get, POST]\n"
	"    why: prefix without slash, other port\n"
	"  - cidr: 198.51.100.0/24\n"
	"    ports: [5432]\n"
	"    why: database\n";

static void test_match_host(void **state)
{
	struct sluice_policy *p = load(match_yaml);
	const struct sluice_entry *e;

	(void)state;
	e = sluice_policy_match_host(p, "api.example.com", 443);
	assert_non_null(e);
	assert_int_equal(e->index, 0);
	assert_string_equal(e->name, "allow[0] host:api.example.com");
	assert_null(sluice_policy_match_host(p, "api.example.com", 80));
	assert_null(sluice_policy_match_host(p, "x.api.example.com", 443));
	assert_null(sluice_policy_match_host(p, "example.com", 443));
	assert_null(sluice_policy_match_host(p, "api.example.com.evil", 443));
	assert_null(sluice_policy_match_host(p, "evilapi.example.com", 443));
	/* wildcard: label-bounded, never the apex */
	e = sluice_policy_match_host(p, "a.pkg.example.org", 443);
	assert_non_null(e);
	assert_int_equal(e->index, 1);
	assert_non_null(sluice_policy_match_host(p, "a.b.pkg.example.org", 8080));
	assert_non_null(sluice_policy_match_host(p, "a.pkg.example.org", 8000));
	assert_null(sluice_policy_match_host(p, "a.pkg.example.org", 8081));
	assert_null(sluice_policy_match_host(p, "a.pkg.example.org", 7999));
	assert_null(sluice_policy_match_host(p, "pkg.example.org", 443));
	assert_null(sluice_policy_match_host(p, "evilpkg.example.org", 443));
	assert_null(sluice_policy_match_host(p, "pkg.example.org.evil", 443));
	assert_null(sluice_policy_match_host(p, ".pkg.example.org", 443));
	assert_null(sluice_policy_match_host(p, "a.pkg.example.org.evil.com", 443));
	/* url entries are not host entries */
	assert_null(sluice_policy_match_host(p, "deb.example.net", 80));
	assert_null(sluice_policy_match_host(p, NULL, 443));
	sluice_policy_free(p);
}

static void test_host_match_direct(void **state)
{
	struct sluice_entry e;

	(void)state;
	memset(&e, 0, sizeof(e));
	e.kind = SLUICE_ENTRY_HOST;
	e.host = (char *)"x";
	e.wildcard = true;
	assert_true(sluice_host_match(&e, "a.x"));
	assert_true(sluice_host_match(&e, "a.b.x"));
	assert_false(sluice_host_match(&e, "x"));
	assert_false(sluice_host_match(&e, "evilx"));
	assert_false(sluice_host_match(&e, "x.evil"));
	assert_false(sluice_host_match(&e, ".x"));
	e.wildcard = false;
	assert_true(sluice_host_match(&e, "x"));
	assert_false(sluice_host_match(&e, "a.x"));
	assert_false(sluice_host_match(NULL, "x"));
}

static void test_match_url(void **state)
{
	struct sluice_policy *p = load(match_yaml);
	const struct sluice_entry *e;

	(void)state;
	e = sluice_policy_match_url(p, "http", "deb.example.net", 80, "GET", "/debian/dists/InRelease");
	assert_non_null(e);
	assert_int_equal(e->index, 2);
	assert_string_equal(e->url_path, "/debian/");
	assert_int_equal(e->url_port, 80);
	assert_int_equal(e->n_methods, 2);
	assert_non_null(sluice_policy_match_url(p, "http", "deb.example.net", 80, "HEAD", "/debian/x"));
	/* prefix "/debian/" does not cover "/debian" itself */
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 80, "GET", "/debian"));
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 80, "GET", "/debianx/"));
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 80, "POST", "/debian/x"));
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 81, "GET", "/debian/x"));
	assert_null(sluice_policy_match_url(p, "https", "deb.example.net", 80, "GET", "/debian/x"));
	assert_null(sluice_policy_match_url(p, "http", "x.deb.example.net", 80, "GET", "/debian/x"));
	/* prefix "/pool" covers "/pool" and "/pool/x", not "/poolx" */
	assert_non_null(sluice_policy_match_url(p, "http", "deb.example.net", 8080, "GET", "/pool"));
	assert_non_null(sluice_policy_match_url(p, "http", "deb.example.net", 8080, "POST", "/pool/a/b"));
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 8080, "GET", "/poolx"));
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 8080, "HEAD", "/pool"));
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 8080, "GET", "/"));
	sluice_policy_free(p);
}

static void test_match_url_after_normalise(void **state)
{
	struct sluice_policy *p = load(match_yaml);
	char path[256];

	(void)state;
	/* a traversal out of the prefix is caught by normalising first */
	assert_int_equal(sluice_url_path_normalise("/debian/%2e%2e/private/key", path, sizeof(path), NULL), 0);
	assert_null(sluice_policy_match_url(p, "http", "deb.example.net", 80, "GET", path));
	assert_int_equal(sluice_url_path_normalise("/other/../debian/./x?y=1", path, sizeof(path), NULL), 0);
	assert_non_null(sluice_policy_match_url(p, "http", "deb.example.net", 80, "GET", path));
	sluice_policy_free(p);
}

static void test_proxies_names_qtypes(void **state)
{
	struct sluice_policy *p = load(match_yaml);

	(void)state;
	assert_true(sluice_policy_proxies_port(p, 443));
	assert_true(sluice_policy_proxies_port(p, 8000));
	assert_true(sluice_policy_proxies_port(p, 8080));
	assert_true(sluice_policy_proxies_port(p, 80));    /* from the url */
	assert_false(sluice_policy_proxies_port(p, 5432)); /* cidr: direct */
	assert_false(sluice_policy_proxies_port(p, 22));
	assert_true(sluice_policy_allows_name(p, "api.example.com"));
	assert_true(sluice_policy_allows_name(p, "a.pkg.example.org"));
	assert_true(sluice_policy_allows_name(p, "deb.example.net"));
	assert_false(sluice_policy_allows_name(p, "pkg.example.org"));
	assert_false(sluice_policy_allows_name(p, "example.com"));
	assert_false(sluice_policy_allows_name(p, "evil.com"));
	assert_true(sluice_policy_allows_qtype(p, 1));
	assert_true(sluice_policy_allows_qtype(p, 28));
	assert_true(sluice_policy_allows_qtype(p, 65));
	assert_false(sluice_policy_allows_qtype(p, 16));
	assert_false(sluice_policy_allows_qtype(p, 255));
	sluice_policy_free(p);

	p = sluice_policy_default();
	assert_non_null(p);
	assert_false(sluice_policy_proxies_port(p, 443));
	assert_false(sluice_policy_allows_name(p, "example.com"));
	assert_true(sluice_policy_allows_qtype(p, 1));
	assert_true(sluice_policy_allows_qtype(p, 28));
	assert_false(sluice_policy_allows_qtype(p, 16));
	assert_null(sluice_policy_match_host(p, "example.com", 443));
	sluice_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_case_and_trailing_dot),
		cmocka_unit_test(test_host_idna),
		cmocka_unit_test(test_host_bad_bytes),
		cmocka_unit_test(test_host_lengths),
		cmocka_unit_test(test_host_ip_literals),
		cmocka_unit_test(test_ip_canonical),
		cmocka_unit_test(test_ip_noncanonical),
		cmocka_unit_test(test_path_dot_segments),
		cmocka_unit_test(test_path_percent),
		cmocka_unit_test(test_path_refused),
		cmocka_unit_test(test_match_host),
		cmocka_unit_test(test_host_match_direct),
		cmocka_unit_test(test_match_url),
		cmocka_unit_test(test_match_url_after_normalise),
		cmocka_unit_test(test_proxies_names_qtypes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
