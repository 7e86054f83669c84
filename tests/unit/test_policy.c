/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy.c - loading policies (userspace/lib/policy.c, digest.c):
 * every error class with its message and position, the typed result,
 * the default policy and the digest's stability and sensitivity.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"
#include "policy_internal.h"

#define HEAD "version: 1\nname: t\n"

static struct sluice_policy *load(const char *yaml)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &err) != 0)
		fail_msg("load failed: %s", sluice_policy_error_str(&err, buf, sizeof(buf)));
	assert_non_null(p);
	return p;
}

/* Load must fail at line:col with a message containing `part`. */
static void bad_len(const char *yaml, size_t len, unsigned line, unsigned col, const char *part)
{
	struct sluice_policy *p = (struct sluice_policy *)0x1;
	struct sluice_policy_error err;
	char buf[600];

	if (sluice_policy_load_buffer("t.yaml", yaml, len, &p, &err) == 0)
		fail_msg("loaded, want error '%s' for:\n%s", part, yaml);
	assert_null(p);
	sluice_policy_error_str(&err, buf, sizeof(buf));
	if (!strstr(err.message, part))
		fail_msg("message '%s' lacks '%s'", buf, part);
	if (err.line != line || err.column != col)
		fail_msg("'%s': want position %u:%u", buf, line, col);
	assert_string_equal(err.file, "t.yaml");
}

static void bad(const char *yaml, unsigned line, unsigned col, const char *part)
{
	bad_len(yaml, strlen(yaml), line, col, part);
}

/* --- a good policy, typed --------------------------------------------------- */

static const char full[] =
	"# a comment\n"
	"version: 1\n"
	"name: build-sandbox\n"
	"mode: audit\n"
	"dns:\n"
	"  on_deny: refused\n"
	"  qtypes: [AAAA, A, 65]\n"
	"allow:\n"
	"  - host: API.Example.COM.\n"
	"    ports: [8443, 443, 8000-8080]\n"
	"    why: model API\n"
	"  - host: \"*.pkg.example.org\"\n"
	"    ports: [443]\n"
	"    why: package mirror\n"
	"  - url: HTTP://Deb.Example.NET/debian/./dists/../\n"
	"    why: apt\n"
	"  - url: http://deb.example.net:8080\n"
	"    methods: [post, GET]\n"
	"    why: uploads\n"
	"  - cidr: 198.51.100.0/24\n"
	"    ports: [5432]\n"
	"    why: database\n"
	"  - cidr: 2001:DB8::/32\n"
	"    ports: [3478]\n"
	"    protocol: udp\n"
	"    why: turn\n"
	"  - cidr: ::ffff:192.0.2.0/120\n"
	"    ports: [53]\n"
	"    protocol: udp\n"
	"    why: v4-mapped\n"
	"  - cidr: 203.0.113.9\n"
	"    ports: [22]\n"
	"    why: a single address\n";

static void test_load_full(void **state)
{
	struct sluice_policy *p = load(full);
	const struct sluice_entry *e;
	char a[INET6_ADDRSTRLEN];

	(void)state;
	assert_string_equal(p->path, "t.yaml");
	assert_string_equal(p->name, "build-sandbox");
	assert_int_equal(p->version, 1);
	assert_int_equal(p->mode, SLUICE_MODE_AUDIT);
	assert_int_equal(p->dns_on_deny, SLUICE_DNS_REFUSED);
	assert_int_equal(p->n_dns_qtypes, 3);
	assert_int_equal(p->dns_qtypes[0], 1);
	assert_int_equal(p->dns_qtypes[1], 28);
	assert_int_equal(p->dns_qtypes[2], 65);
	assert_int_equal(p->n_entries, 8);
	assert_int_equal(strlen(p->digest), SLUICE_DIGEST_HEX_LEN);

	e = &p->entries[0];
	assert_int_equal(e->kind, SLUICE_ENTRY_HOST);
	assert_int_equal(e->index, 0);
	assert_int_equal(e->line, 9);
	assert_int_equal(e->column, 5);
	assert_string_equal(e->host, "api.example.com");
	assert_false(e->wildcard);
	assert_string_equal(e->why, "model API");
	assert_string_equal(e->name, "allow[0] host:api.example.com");
	assert_int_equal(e->n_ports, 3);   /* sorted */
	assert_int_equal(e->ports[0].lo, 443);
	assert_int_equal(e->ports[1].lo, 8000);
	assert_int_equal(e->ports[1].hi, 8080);
	assert_int_equal(e->ports[2].lo, 8443);
	assert_int_equal(e->protocol, IPPROTO_TCP);

	e = &p->entries[1];
	assert_string_equal(e->host, "pkg.example.org");
	assert_true(e->wildcard);
	assert_string_equal(e->name, "allow[1] host:*.pkg.example.org");

	e = &p->entries[2];
	assert_int_equal(e->kind, SLUICE_ENTRY_URL);
	assert_string_equal(e->url_scheme, "http");
	assert_string_equal(e->url_host, "deb.example.net");
	assert_int_equal(e->url_port, 80);
	assert_string_equal(e->url_path, "/debian/");
	assert_int_equal(e->n_methods, 2);
	assert_string_equal(e->methods[0], "GET");
	assert_string_equal(e->methods[1], "HEAD");
	assert_int_equal(e->n_ports, 1);
	assert_int_equal(e->ports[0].lo, 80);
	assert_string_equal(e->name, "allow[2] url:http://deb.example.net/debian/");

	e = &p->entries[3];
	assert_int_equal(e->url_port, 8080);
	assert_string_equal(e->url_path, "/");
	assert_string_equal(e->methods[0], "GET");
	assert_string_equal(e->methods[1], "POST");
	assert_string_equal(e->name, "allow[3] url:http://deb.example.net:8080/");

	e = &p->entries[4];
	assert_int_equal(e->kind, SLUICE_ENTRY_CIDR);
	assert_int_equal(e->family, AF_INET);
	assert_int_equal(e->prefix_len, 24);
	assert_int_equal(e->protocol, IPPROTO_TCP);
	assert_string_equal(inet_ntop(AF_INET, e->addr, a, sizeof(a)), "198.51.100.0");
	assert_string_equal(e->name, "allow[4] cidr:198.51.100.0/24");

	e = &p->entries[5];
	assert_int_equal(e->family, AF_INET6);
	assert_int_equal(e->prefix_len, 32);
	assert_int_equal(e->protocol, IPPROTO_UDP);
	assert_string_equal(e->name, "allow[5] cidr:2001:db8::/32");

	e = &p->entries[6];   /* ::ffff:0:0/96 reduced to IPv4 */
	assert_int_equal(e->family, AF_INET);
	assert_int_equal(e->prefix_len, 24);
	assert_string_equal(e->name, "allow[6] cidr:192.0.2.0/24");

	e = &p->entries[7];
	assert_int_equal(e->prefix_len, 32);
	sluice_policy_free(p);
}

static void test_load_minimal_and_defaults(void **state)
{
	struct sluice_policy *p = load(HEAD);

	(void)state;
	assert_int_equal(p->n_entries, 0);
	assert_int_equal(p->mode, SLUICE_MODE_ENFORCE);
	assert_int_equal(p->dns_on_deny, SLUICE_DNS_NXDOMAIN);
	assert_int_equal(p->n_dns_qtypes, 2);
	sluice_policy_free(p);
	p = load(HEAD "mode: enforce\nallow: []\n");
	assert_int_equal(p->mode, SLUICE_MODE_ENFORCE);
	sluice_policy_free(p);
	p = load(HEAD "allow:\n");
	assert_int_equal(p->n_entries, 0);
	sluice_policy_free(p);
	/* flow style and quoting are just YAML */
	p = load("{version: 1, name: 't', allow: [{host: \"a.example\", ports: ['443'], why: x}]}");
	assert_int_equal(p->n_entries, 1);
	assert_int_equal(p->entries[0].ports[0].lo, 443);
	sluice_policy_free(p);
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/sluice-test-policy-XXXXXX";
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	char buf[600];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, HEAD "colour: red\n", strlen(HEAD "colour: red\n")),
			 (ssize_t)strlen(HEAD "colour: red\n"));
	close(fd);
	assert_int_equal(sluice_policy_load_file(path, &p, &err), -1);
	assert_null(p);
	assert_string_equal(err.file, path);
	assert_int_equal(err.line, 3);
	assert_int_equal(err.column, 1);
	sluice_policy_error_str(&err, buf, sizeof(buf));
	assert_non_null(strstr(buf, ":3:1: unknown key 'colour'"));
	unlink(path);
	assert_int_equal(sluice_policy_load_file("/nonexistent/p.yaml", &p, &err), -1);
	assert_null(p);
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.message, "cannot open"));
	sluice_policy_error_str(&err, buf, sizeof(buf));
	assert_non_null(strstr(buf, "/nonexistent/p.yaml: cannot open"));
}

/* --- error classes ----------------------------------------------------------------- */

static void test_err_syntax(void **state)
{
	(void)state;
	bad("", 1, 1, "empty policy");
	bad("# only a comment\n", 1, 1, "empty policy");
	bad(HEAD "allow: [\n", 4, 1, "YAML syntax error");
	bad(HEAD "allow:\n  - host: a\n   ports: [1]\n", 5, 4, "YAML syntax error");
	bad(HEAD "x: &a 1\n", 3, 4, "anchors are not supported");
	bad(HEAD "allow: *a\n", 3, 8, "aliases are not supported");
	bad(HEAD "mode: !!str audit\n", 3, 7, "tags are not supported");
	bad(HEAD "---\nversion: 1\n", 3, 1, "more than one YAML document");
	bad_len(HEAD "\0", sizeof(HEAD), 0, 0, "NUL byte");
	bad("- 1\n", 1, 1, "must be a mapping");
	bad("just a string\n", 1, 1, "must be a mapping");
}

static void test_err_unknown_keys(void **state)
{
	(void)state;
	bad(HEAD "colour: blue\n", 3, 1, "unknown key 'colour' in policy");
	bad(HEAD "dns:\n  on_denied: refused\n", 4, 3, "unknown key 'on_denied' in dns");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    why: x\n    prot: tcp\n",
	    7, 5, "unknown key 'prot' in allow entry");
	bad(HEAD "allow:\n  - host: a.example\n    methods: [GET]\n    ports: [443]\n    why: x\n",
	    5, 5, "'methods' is not allowed in a host entry");
	bad(HEAD "allow:\n  - url: http://a.example/\n    ports: [80]\n    why: x\n",
	    5, 5, "'ports' is not allowed in a url entry");
	bad(HEAD "allow:\n  - cidr: 192.0.2.0/24\n    methods: [GET]\n    ports: [1]\n    why: x\n",
	    5, 5, "'methods' is not allowed in a cidr entry");
	bad(HEAD "allow:\n  - hots: a.example\n    ports: [443]\n    why: x\n",
	    4, 5, "unknown key 'hots' in allow entry");
}

static void test_err_wrong_types(void **state)
{
	(void)state;
	bad("version: \"1\"\nname: t\n", 1, 10, "'version' must be an integer, not a string");
	bad("version: [1]\nname: t\n", 1, 10, "'version' must be an integer, not a sequence");
	bad("version: 1\nname: [t]\n", 2, 7, "'name' must be a string, not a sequence");
	bad("version: 1\nname:\n", 2, 6, "'name' must be a string, not null");
	bad(HEAD "allow: {}\n", 3, 8, "'allow' must be a sequence, not a mapping");
	bad(HEAD "allow: yes\n", 3, 8, "'allow' must be a sequence, not a boolean");
	bad(HEAD "dns: nxdomain\n", 3, 6, "'dns' must be a mapping, not a string");
	bad(HEAD "dns:\n  qtypes: A\n", 4, 11, "'qtypes' must be a sequence, not a string");
	bad(HEAD "allow:\n  - a.example\n", 4, 5, "allow[0] must be a mapping");
	bad(HEAD "allow:\n  - host: a.example\n    ports: 443\n    why: x\n",
	    5, 12, "'ports' must be a sequence, not an integer");
	bad(HEAD "allow:\n  - host: [a.example]\n    ports: [443]\n    why: x\n",
	    4, 11, "'host' must be a string, not a sequence");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    why: {a: b}\n",
	    6, 10, "'why' must be a string, not a mapping");
	bad(HEAD "allow:\n  - url: http://a.example/\n    methods: GET\n    why: x\n",
	    5, 14, "'methods' must be a sequence");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [[443]]\n    why: x\n",
	    5, 13, "a port must be a number");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [https]\n    why: x\n",
	    5, 13, "a port must be a number 1-65535 or a range lo-hi, not 'https'");
	bad(HEAD "? [a]\n: 1\n", 3, 3, "keys must be strings");
	bad(HEAD "mode: permissive\n", 3, 7, "mode must be audit or enforce");
	bad(HEAD "dns:\n  on_deny: drop\n", 4, 12, "dns.on_deny must be nxdomain or refused");
	bad(HEAD "dns:\n  qtypes: [A, BOGUS]\n", 4, 15, "unknown DNS qtype 'BOGUS'");
	bad(HEAD "allow:\n  - cidr: 192.0.2.0/24\n    ports: [1]\n    protocol: icmp\n    why: x\n",
	    6, 15, "protocol must be tcp or udp");
	bad(HEAD "allow:\n  - url: http://a.example/\n    methods: [BREW]\n    why: x\n",
	    5, 15, "unknown method 'BREW'");
	bad(HEAD "allow:\n  - url: http://a.example/\n    methods: []\n    why: x\n",
	    5, 14, "'methods' must not be empty");
}

static void test_err_version_and_name(void **state)
{
	(void)state;
	bad("version: 2\nname: t\n", 1, 10, "unsupported version 2");
	bad("version: 0\nname: t\n", 1, 10, "unsupported version 0");
	bad("name: t\n", 1, 1, "missing 'version'");
	bad("version: 1\n", 1, 1, "missing 'name'");
	bad("version: 1\nname: \"has space\"\n", 2, 7, "'name' must be 1-64 characters");
	bad("version: 1\nname: \"a\\nb\"\n", 2, 7, "'name' must be 1-64 characters");
}

static void test_err_duplicates(void **state)
{
	(void)state;
	/* the same target twice, even with other ports */
	bad(HEAD "allow:\n"
		 "  - host: api.example.com\n    ports: [443]\n    why: a\n"
		 "  - host: API.example.com.\n    ports: [8443]\n    why: b\n",
	    7, 5, "duplicate entry: host api.example.com already allowed by allow[0] at line 4");
	bad(HEAD "allow:\n"
		 "  - url: http://a.example/x/\n    why: a\n"
		 "  - url: http://A.example:80/x/y/..\n    methods: [POST]\n    why: b\n",
	    6, 5, "duplicate entry: url http://a.example/x/ already allowed by allow[0]");
	bad(HEAD "allow:\n"
		 "  - cidr: 192.0.2.0/24\n    ports: [1]\n    why: a\n"
		 "  - cidr: ::ffff:192.0.2.0/120\n    ports: [2]\n    why: b\n",
	    7, 5, "duplicate entry: cidr 192.0.2.0/24 already allowed by allow[0]");
	/* but not the same address with another protocol */
	sluice_policy_free(load(HEAD "allow:\n"
				     "  - cidr: 192.0.2.0/24\n    ports: [1]\n    why: a\n"
				     "  - cidr: 192.0.2.0/24\n    ports: [1]\n    protocol: udp\n    why: b\n"));
	/* nor exact and wildcard of the same name */
	sluice_policy_free(load(HEAD "allow:\n"
				     "  - host: a.example.com\n    ports: [1]\n    why: a\n"
				     "  - host: '*.a.example.com'\n    ports: [1]\n    why: b\n"));
	bad(HEAD "name: u\n", 3, 1, "duplicate key 'name' (first at line 2)");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    ports: [80]\n    why: x\n",
	    6, 5, "duplicate key 'ports'");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443, 80, 443]\n    why: x\n",
	    5, 22, "duplicate port: 443 overlaps");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [8000-8080, 8080]\n    why: x\n",
	    5, 24, "duplicate port: 8080 overlaps");
	bad(HEAD "allow:\n  - url: http://a.example/\n    methods: [GET, get]\n    why: x\n",
	    5, 20, "duplicate method 'GET'");
	bad(HEAD "dns:\n  qtypes: [A, 1]\n", 4, 15, "duplicate qtype '1'");
}

static void test_err_missing(void **state)
{
	(void)state;
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n", 4, 5,
	    "host entry needs 'why'");
	bad(HEAD "allow:\n  - url: http://a.example/\n", 4, 5, "url entry needs 'why'");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    why: \"  \"\n", 6, 10,
	    "'why' must not be empty");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    why:\n", 6, 9,
	    "'why' must be a string, not null");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    why: \"a\\x01b\"\n", 6, 10,
	    "'why' contains a control byte");
	bad(HEAD "allow:\n  - ports: [443]\n    why: x\n", 4, 5, "allow[0] needs one of host, url, cidr or unix");
	bad(HEAD "allow:\n  - host: a.example\n    cidr: 192.0.2.0/24\n    ports: [1]\n    why: x\n",
	    5, 5, "exactly one of host, url, cidr, unix: 'host' and 'cidr' together");
}

static void test_err_ports(void **state)
{
	(void)state;
	bad(HEAD "allow:\n  - host: a.example\n    why: x\n", 4, 5, "host entry needs 'ports'");
	bad(HEAD "allow:\n  - cidr: 192.0.2.0/24\n    why: x\n", 4, 5, "cidr entry needs 'ports'");
	bad(HEAD "allow:\n  - host: a.example\n    ports: []\n    why: x\n", 5, 12, "'ports' must not be empty");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [0]\n    why: x\n", 5, 13, "port 0 out of range (1-65535)");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443, 65536]\n    why: x\n", 5, 18,
	    "port 65536 out of range (1-65535)");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [1000000]\n    why: x\n", 5, 13,
	    "port 1000000 out of range");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [-1]\n    why: x\n", 5, 13, "port -1 out of range");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [8000-70000]\n    why: x\n", 5, 13,
	    "port 70000 out of range");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [0-80]\n    why: x\n", 5, 13, "port 0 out of range");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [8080-8000]\n    why: x\n", 5, 13,
	    "port range 8080-8000 is backwards");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [80-]\n    why: x\n", 5, 13, "bad port range '80-'");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [0443]\n    why: x\n", 5, 13, "leading zero");
	bad(HEAD "allow:\n  - url: http://a.example:0/\n    why: x\n", 4, 10, "port out of range");
	bad(HEAD "allow:\n  - url: http://a.example:65536/\n    why: x\n", 4, 10, "port out of range");
	bad(HEAD "allow:\n  - url: http://a.example:/\n    why: x\n", 4, 10, "port out of range");
}

/* `filesystem:` (policy_fs.c): the paths kept with their lines, in the
 * digest (order included: the bind mounts are made in that order), absent
 * from it when not written; wrong forms refused at their position. */
static void test_filesystem_section(void **state)
{
	const char *base = "version: 1\nname: t\nallow: []\n";
	struct sluice_policy *none = load(base);
	struct sluice_policy *a = load("version: 1\nname: t\nfilesystem:\n  workdir: /srv/a\n"
				       "  read_only: [/opt/x, /opt/y]\n  read_write: [/var/cache/z]\n  hide: [/etc/k]\n"
				       "allow: []\n");
	struct sluice_policy *b = load("version: 1\nname: t\nfilesystem:\n  workdir: /srv/a\n"
				       "  read_only: [/opt/y, /opt/x]\n  read_write: [/var/cache/z]\n  hide: [/etc/k]\n"
				       "allow: []\n");
	struct sluice_policy *empty = load("version: 1\nname: t\nfilesystem:\nallow: []\n");

	assert_false(none->fs.present);
	assert_true(a->fs.present && empty->fs.present);
	assert_string_equal(a->fs.workdir.path, "/srv/a");
	assert_int_equal(a->fs.n_read_only, 2);
	assert_string_equal(a->fs.read_only[1].path, "/opt/y");
	assert_int_equal(a->fs.read_only[1].line, 5);
	assert_string_equal(a->fs.read_write[0].path, "/var/cache/z");
	assert_string_equal(a->fs.hide[0].path, "/etc/k");
	assert_string_not_equal(a->digest, b->digest);
	assert_string_not_equal(a->digest, none->digest);
	assert_string_not_equal(empty->digest, none->digest);
	sluice_policy_free(none);
	sluice_policy_free(a);
	sluice_policy_free(b);
	sluice_policy_free(empty);
	(void)base;
	bad("version: 1\nname: t\nfilesystem:\n  read_only: [rel/x]\nallow: []\n", 4, 15, "not an absolute path");
	bad("version: 1\nname: t\nfilesystem:\n  hide: [/a/..]\nallow: []\n", 4, 10, "'..' segment");
	bad("version: 1\nname: t\nfilesystem:\n  read_write: [//]\nallow: []\n", 4, 16, "cannot be writable");
	bad("version: 1\nname: t\nfilesystem:\n  workdir: /\nallow: []\n", 4, 12, "cannot be writable");
	bad("version: 1\nname: t\nfilesystem:\n  read_write: [/a]\n  hide: [/a]\nallow: []\n", 5, 10,
	    "also read_write");
	bad("version: 1\nname: t\nfilesystem: [/a]\nallow: []\n", 3, 13, "must be a mapping");
	bad("version: 1\nname: t\nfilesystem:\n  mounts: [/a]\nallow: []\n", 4, 3, "unknown key 'mounts'");
}

/* `tls:` (policy_tls.c): the path kept with its position, in the digest
 * only when written; wrong forms refused at their position. */
static void test_tls_section(void **state)
{
	struct sluice_policy *none = load("version: 1\nname: t\nallow: []\n");
	struct sluice_policy *a = load("version: 1\nname: t\ntls:\n  upstream_ca: /etc/ca/a.pem\nallow: []\n");
	struct sluice_policy *b = load("version: 1\nname: t\ntls:\n  upstream_ca: /etc/ca/b.pem\nallow: []\n");
	struct sluice_policy *empty = load("version: 1\nname: t\ntls:\nallow: []\n");

	(void)state;
	assert_false(none->tls.present);
	assert_true(a->tls.present && empty->tls.present);
	assert_string_equal(a->tls.upstream_ca, "/etc/ca/a.pem");
	assert_int_equal(a->tls.line, 4);
	assert_int_equal(a->tls.column, 16);
	assert_null(empty->tls.upstream_ca);
	assert_string_not_equal(a->digest, b->digest);
	assert_string_not_equal(a->digest, none->digest);
	assert_string_not_equal(empty->digest, none->digest);
	sluice_policy_free(none);
	sluice_policy_free(a);
	sluice_policy_free(b);
	sluice_policy_free(empty);
	bad("version: 1\nname: t\ntls:\n  upstream_ca: ca.pem\nallow: []\n", 4, 16, "must be an absolute path");
	bad("version: 1\nname: t\ntls: [/a]\nallow: []\n", 3, 6, "must be a mapping");
	bad("version: 1\nname: t\ntls:\n  verify: false\nallow: []\n", 4, 3, "unknown key 'verify'");
	bad("version: 1\nname: t\ntls:\n  upstream_ca: [/a]\nallow: []\n", 4, 16, "");
}

static void test_err_cidr(void **state)
{
	(void)state;
	bad(HEAD "allow:\n  - cidr: 198.51.100.7/24\n    ports: [1]\n    why: x\n", 4, 11,
	    "cidr '198.51.100.7/24' has host bits set (did you mean 198.51.100.0/24?)");
	bad(HEAD "allow:\n  - cidr: 10.0.0.1/8\n    ports: [1]\n    why: x\n", 4, 11,
	    "has host bits set (did you mean 10.0.0.0/8?)");
	bad(HEAD "allow:\n  - cidr: 2001:db8::1/32\n    ports: [1]\n    why: x\n", 4, 11,
	    "has host bits set (did you mean 2001:db8::/32?)");
	bad(HEAD "allow:\n  - cidr: 192.0.2.0/33\n    ports: [1]\n    why: x\n", 4, 11, "prefix length must be 0-32");
	bad(HEAD "allow:\n  - cidr: 2001:db8::/129\n    ports: [1]\n    why: x\n", 4, 11, "prefix length must be 0-128");
	bad(HEAD "allow:\n  - cidr: 192.0.2.0/024\n    ports: [1]\n    why: x\n", 4, 11, "prefix length");
	bad(HEAD "allow:\n  - cidr: 192.0.2.0/\n    ports: [1]\n    why: x\n", 4, 11, "prefix length");
	bad(HEAD "allow:\n  - cidr: 010.0.0.0/8\n    ports: [1]\n    why: x\n", 4, 11, "not a canonical IP address");
	bad(HEAD "allow:\n  - cidr: 0x0a000000/8\n    ports: [1]\n    why: x\n", 4, 11, "not a canonical IP address");
	bad(HEAD "allow:\n  - cidr: 10.1/16\n    ports: [1]\n    why: x\n", 4, 11, "not a canonical IP address");
	bad(HEAD "allow:\n  - cidr: db.example.com/32\n    ports: [1]\n    why: x\n", 4, 11, "is not an IP address");
	bad(HEAD "allow:\n  - cidr: \"[::1]/128\"\n    ports: [1]\n    why: x\n", 4, 11, "no brackets");
	bad(HEAD "allow:\n  - cidr: ::ffff:10.0.0.0/80\n    ports: [1]\n    why: x\n", 4, 11, "/96 or longer");
}

static void test_err_ip_literal_in_host(void **state)
{
	static const char *const lits[] = { "127.0.0.1", "\"::1\"", "\"[::1]\"", "0x7f000001",
					    "017700000001", "2130706433", "127.1", "192.0.2.1." };

	(void)state;
	for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		char y[256];

		snprintf(y, sizeof(y), HEAD "allow:\n  - host: %s\n    ports: [443]\n    why: x\n", lits[i]);
		bad(y, 4, 11, "IP literal");
		bad(y, 4, 11, "use a cidr entry");
	}
	bad(HEAD "allow:\n  - url: http://127.0.0.1/x\n    why: x\n", 4, 10, "IP literal '127.0.0.1' in a url");
	bad(HEAD "allow:\n  - url: http://[::1]/x\n    why: x\n", 4, 10, "IP literal in url");
}

static void test_err_bad_wildcards(void **state)
{
	(void)state;
	bad(HEAD "allow:\n  - host: \"*example.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "bad wildcard '*example.com': '*' must be a whole label");
	bad(HEAD "allow:\n  - host: \"a.*.example.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "bad wildcard 'a.*.example.com': '*' is only allowed as the whole leftmost label");
	bad(HEAD "allow:\n  - host: \"*.*.example.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "only allowed as the whole leftmost label");
	bad(HEAD "allow:\n  - host: \"ex*.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "only allowed as the whole leftmost label");
	bad(HEAD "allow:\n  - host: \"*\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "bad wildcard '*': would allow every name");
	bad(HEAD "allow:\n  - host: \"*.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "bad wildcard '*.com': over a top-level domain");
	bad(HEAD "allow:\n  - host: \"*.co.uk\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "bad wildcard '*.co.uk': 'co.uk' is a public suffix");
	bad(HEAD "allow:\n  - host: \"*.github.io\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "'github.io' is a public suffix");
	bad(HEAD "allow:\n  - host: \"*.S3.amazonaws.com.\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "'s3.amazonaws.com' is a public suffix");
	bad(HEAD "allow:\n  - host: \"*.192.0.2.1\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "not over an IP address");
	bad(HEAD "allow:\n  - url: \"http://*.a.example/\"\n    why: x\n", 4, 10,
	    "wildcards are not allowed in a url entry");
	/* a wildcard under a registrable name is fine */
	sluice_policy_free(load(HEAD "allow:\n  - host: \"*.example.co.uk\"\n    ports: [443]\n    why: x\n"));
}

static void test_err_bad_host_bytes(void **state)
{
	char y[1024], longname[300];

	(void)state;
	bad(HEAD "allow:\n  - host: \"a\\0.example.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "NUL byte in host name");
	bad(HEAD "allow:\n  - host: \"a\\x01.example.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "control byte in host name");
	bad(HEAD "allow:\n  - host: \"a\\tb.example.com\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "control byte in host name");
	bad(HEAD "allow:\n  - host: a b.example.com\n    ports: [443]\n    why: x\n", 4, 11,
	    "space in host name");
	bad(HEAD "allow:\n  - host: user@example.com\n    ports: [443]\n    why: x\n", 4, 11,
	    "'@' in host name");
	bad(HEAD "allow:\n  - host: a%2e.example.com\n    ports: [443]\n    why: x\n", 4, 11,
	    "'%' in host name");
	bad(HEAD "allow:\n  - host: \"[example.com]\"\n    ports: [443]\n    why: x\n", 4, 11,
	    "brackets in host name");
	bad(HEAD "allow:\n  - host: example.com:443\n    ports: [443]\n    why: x\n", 4, 11,
	    "':' in host name");
	bad(HEAD "allow:\n  - host: a..example.com\n    ports: [443]\n    why: x\n", 4, 11,
	    "empty label");
	bad(HEAD "allow:\n  - url: http://user@a.example/\n    why: x\n", 4, 10, "userinfo");
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	for (size_t i = 60; i < sizeof(longname) - 1; i += 61)
		longname[i] = '.';
	snprintf(y, sizeof(y), HEAD "allow:\n  - host: %s\n    ports: [443]\n    why: x\n", longname);
	bad(y, 4, 11, "longer than 253 bytes");
	snprintf(y, sizeof(y), HEAD "allow:\n  - url: http://%s/\n    why: x\n", longname);
	bad(y, 4, 10, "longer than 253 bytes");
}

static void test_err_url(void **state)
{
	(void)state;
	bad(HEAD "allow:\n  - url: https://user@api.example.com/v1/\n    why: x\n", 4, 10, "userinfo");
	bad(HEAD "allow:\n  - url: https://*.example.com/v1/\n    why: x\n", 4, 10, "wildcards are not allowed");
	bad(HEAD "allow:\n  - url: https://192.0.2.1/v1/\n    why: x\n", 4, 10, "IP literal");
	bad(HEAD "allow:\n  - url: https://a.example:0/\n    why: x\n", 4, 10, "port out of range");
	bad(HEAD "allow:\n  - url: https://a.example/v1/?x\n    why: x\n", 4, 10, "query or fragment");
	bad(HEAD "allow:\n  - url: ftp://a.example/\n    why: x\n", 4, 10, "must start with http://");
	bad(HEAD "allow:\n  - url: a.example/x\n    why: x\n", 4, 10, "must start with http://");
	bad(HEAD "allow:\n  - url: http://a.example/x?y=1\n    why: x\n", 4, 10, "query or fragment");
	bad(HEAD "allow:\n  - url: http://a.example/x#f\n    why: x\n", 4, 10, "query or fragment");
	bad(HEAD "allow:\n  - url: http:///x\n    why: x\n", 4, 10, "has no host");
	bad(HEAD "allow:\n  - url: http://a.example/a%2Fb\n    why: x\n", 4, 10, "encoded slash %2F");
	bad(HEAD "allow:\n  - url: \"http://a.example/a\\\\b\"\n    why: x\n", 4, 10, "backslash");
}

/* --- https url entries and inspect ------------------------------------------ */

static void test_https_url(void **state)
{
	struct sluice_policy *p;
	const struct sluice_entry *e;

	(void)state;
	p = load(HEAD "allow:\n"
		 "  - url: HTTPS://API.Example.COM./v1/./models/../\n"
		 "    why: model API\n"
		 "  - url: https://files.example.com:8443/pub\n"
		 "    methods: [get, post]\n"
		 "    why: uploads\n"
		 "  - url: http://api.example.com/v1/\n"
		 "    why: the same path over plain http is another entry\n");
	assert_int_equal(p->n_entries, 3);
	e = &p->entries[0];
	assert_int_equal(e->kind, SLUICE_ENTRY_URL);
	assert_string_equal(e->url_scheme, "https");
	assert_string_equal(e->url_host, "api.example.com");
	assert_int_equal(e->url_port, 443);
	assert_string_equal(e->url_path, "/v1/");
	assert_int_equal(e->n_methods, 2);
	assert_string_equal(e->methods[0], "GET");
	assert_string_equal(e->methods[1], "HEAD");
	assert_int_equal(e->n_ports, 1);
	assert_int_equal(e->ports[0].lo, 443);
	assert_string_equal(e->name, "allow[0] url:https://api.example.com/v1/");
	assert_string_equal(p->entries[1].name, "allow[1] url:https://files.example.com:8443/pub");
	assert_string_equal(p->entries[2].name, "allow[2] url:http://api.example.com/v1/");

	/* matching: scheme, port, method, segment-bounded prefix */
	assert_ptr_equal(sluice_policy_match_url(p, "https", "api.example.com", 443, "GET", "/v1/models"), e);
	assert_null(sluice_policy_match_url(p, "https", "api.example.com", 443, "POST", "/v1/models"));
	assert_null(sluice_policy_match_url(p, "https", "api.example.com", 443, "GET", "/v1"));
	assert_null(sluice_policy_match_url(p, "https", "api.example.com", 8443, "GET", "/v1/x"));
	assert_ptr_equal(sluice_policy_match_url(p, "http", "api.example.com", 80, "GET", "/v1/x"), &p->entries[2]);
	assert_null(sluice_policy_match_url(p, "http", "api.example.com", 443, "GET", "/v1/x"));
	assert_ptr_equal(sluice_policy_match_url(p, "https", "files.example.com", 8443, "POST", "/pub/a"),
			 &p->entries[1]);
	assert_null(sluice_policy_match_url(p, "https", "files.example.com", 8443, "GET", "/pubx"));

	/* which names are inspected: https url hosts on their port only */
	assert_true(sluice_policy_has_inspection(p));
	assert_true(sluice_policy_inspects(p, "api.example.com", 443));
	assert_false(sluice_policy_inspects(p, "api.example.com", 80));
	assert_false(sluice_policy_inspects(p, "api.example.com", 8443));
	assert_true(sluice_policy_inspects(p, "files.example.com", 8443));
	assert_false(sluice_policy_inspects(p, "x.api.example.com", 443));
	/* the kernel sends the port to the proxy; the resolver answers the name */
	assert_true(sluice_policy_proxies_port(p, 443));
	assert_true(sluice_policy_proxies_port(p, 8443));
	assert_true(sluice_policy_allows_name(p, "files.example.com"));
	/* a url entry is not a host entry: CONNECT/SNI passthrough is not allowed by it */
	assert_null(sluice_policy_match_host(p, "api.example.com", 443));
	sluice_policy_free(p);

	/* duplicates are by scheme, host, port and path */
	bad(HEAD "allow:\n  - url: https://a.example/x/\n    why: x\n"
		 "  - url: https://A.example:443/x/\n    why: y\n", 6, 5, "duplicate entry: url https://a.example/x/");
}

static void test_inspect(void **state)
{
	struct sluice_policy *p, *q, *r;

	(void)state;
	p = load(HEAD "allow:\n"
		 "  - host: api.example.com\n    ports: [443, 8443]\n    inspect: true\n    why: logged\n"
		 "  - host: \"*.pkg.example.org\"\n    ports: [443]\n    inspect: yes\n    why: mirrors\n"
		 "  - host: pass.example.com\n    ports: [443]\n    inspect: false\n    why: passthrough\n");
	assert_true(p->entries[0].inspect);
	assert_true(p->entries[1].inspect);
	assert_false(p->entries[2].inspect);
	assert_true(sluice_policy_inspects(p, "api.example.com", 8443));
	assert_false(sluice_policy_inspects(p, "api.example.com", 80));
	assert_true(sluice_policy_inspects(p, "a.pkg.example.org", 443));
	assert_false(sluice_policy_inspects(p, "pkg.example.org", 443));
	assert_false(sluice_policy_inspects(p, "pass.example.com", 443));
	assert_true(sluice_policy_has_inspection(p));

	/* `inspect: false` is the default: same digest as no key; true differs */
	q = load(HEAD "allow:\n  - host: pass.example.com\n    ports: [443]\n    why: passthrough\n");
	r = load(HEAD "allow:\n  - host: pass.example.com\n    ports: [443]\n    inspect: false\n    why: passthrough\n");
	assert_string_equal(q->digest, r->digest);
	assert_false(sluice_policy_has_inspection(q));
	sluice_policy_free(r);
	r = load(HEAD "allow:\n  - host: pass.example.com\n    ports: [443]\n    inspect: true\n    why: passthrough\n");
	assert_string_not_equal(q->digest, r->digest);
	{
		char *c = sluice_policy_canonical(r, NULL);

		assert_non_null(strstr(c, "{\"host\":\"pass.example.com\",\"inspect\":true,\"ports\":[[443,443]],"));
		free(c);
		c = sluice_policy_canonical(q, NULL);
		assert_null(strstr(c, "inspect"));
		free(c);
	}
	sluice_policy_free(p);
	sluice_policy_free(q);
	sluice_policy_free(r);

	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    inspect: 1\n    why: x\n", 6, 14,
	    "'inspect' must be true or false, not an integer");
	bad(HEAD "allow:\n  - host: a.example\n    ports: [443]\n    inspect: \"true\"\n    why: x\n", 6, 14,
	    "'inspect' must be true or false, not a string");
	bad(HEAD "allow:\n  - url: https://a.example/\n    inspect: true\n    why: x\n", 5, 5,
	    "'inspect' is not allowed in a url entry (https:// url entries are always inspected)");
	bad(HEAD "allow:\n  - cidr: 198.51.100.0/24\n    ports: [443]\n    inspect: true\n    why: x\n", 6, 5,
	    "'inspect' is not allowed in a cidr entry");
}

/* --- default policy ---------------------------------------------------------------- */

static void test_default(void **state)
{
	struct sluice_policy *d = sluice_policy_default(), *f;

	(void)state;
	assert_non_null(d);
	assert_string_equal(d->name, "default-deny");
	assert_string_equal(d->path, "<built-in>");
	assert_int_equal(d->version, 1);
	assert_int_equal(d->n_entries, 0);
	assert_int_equal(d->mode, SLUICE_MODE_ENFORCE);
	assert_int_equal(strlen(d->digest), SLUICE_DIGEST_HEX_LEN);
	/* digest computed the same way: equal to the same policy written out */
	f = load("version: 1\nname: default-deny\nallow: []\n");
	assert_string_equal(d->digest, f->digest);
	sluice_policy_free(f);
	f = load("version: 1\nname: default-deny\ndns: {on_deny: nxdomain, qtypes: [AAAA, A]}\n");
	assert_string_equal(d->digest, f->digest);
	sluice_policy_free(f);
	sluice_policy_free(d);
	sluice_policy_free(NULL);
}

/* --- digest -------------------------------------------------------------------------- */

static const char base[] =
	"version: 1\n"
	"name: dig\n"
	"allow:\n"
	"  - host: api.example.com\n"
	"    ports: [443]\n"
	"    why: model API\n"
	"  - url: http://deb.example.net/debian/\n"
	"    why: apt\n"
	"  - cidr: 198.51.100.0/24\n"
	"    ports: [5432]\n"
	"    why: database\n";

static void digest_of(const char *yaml, char out[SLUICE_DIGEST_HEX_LEN + 1])
{
	struct sluice_policy *p = load(yaml);

	memcpy(out, p->digest, SLUICE_DIGEST_HEX_LEN + 1);
	sluice_policy_free(p);
}

static void test_digest_canonical_form(void **state)
{
	struct sluice_policy *p = load(base);
	size_t len = 0;
	char *c = sluice_policy_canonical(p, &len);

	(void)state;
	assert_non_null(c);
	assert_string_equal(c,
		"{\"allow\":["
		"{\"host\":\"api.example.com\",\"ports\":[[443,443]],\"why\":\"model API\"},"
		"{\"methods\":[\"GET\",\"HEAD\"],\"url\":\"http://deb.example.net:80/debian/\",\"why\":\"apt\"},"
		"{\"cidr\":\"198.51.100.0/24\",\"ports\":[[5432,5432]],\"protocol\":\"tcp\",\"why\":\"database\"}"
		"],\"dns\":{\"on_deny\":\"nxdomain\",\"qtypes\":[1,28]},\"mode\":\"enforce\",\"name\":\"dig\",\"version\":1}");
	assert_int_equal(len, strlen(c));
	/* sha256 of exactly that text (pinned: changing the canonical form
	 * changes every digest in every log, so it must be deliberate) */
	assert_string_equal(p->digest, "36709d57261707e7a7b28cf88ae6c64210b0a5662f983701d201cae14c37afae");
	free(c);
	sluice_policy_free(p);
}

static void test_digest_stable(void **state)
{
	char d0[SLUICE_DIGEST_HEX_LEN + 1], d1[SLUICE_DIGEST_HEX_LEN + 1];
	static const char *const same[] = {
		/* comments, blank lines */
		"# reviewed by alice\n"
		"version: 1   # always 1\n"
		"\n"
		"name: dig\n"
		"allow:\n"
		"  # the model\n"
		"  - host: api.example.com  # exact\n"
		"    ports: [443]\n"
		"    why: model API\n"
		"  - url: http://deb.example.net/debian/\n"
		"    why: apt\n"
		"  - cidr: 198.51.100.0/24\n"
		"    ports: [5432]\n"
		"    why: database\n",
		/* key order, flow style, quoting */
		"allow:\n"
		"  - why: \"model API\"\n"
		"    ports:\n"
		"      - 443\n"
		"    host: 'api.example.com'\n"
		"  - {why: apt, url: \"http://deb.example.net/debian/\"}\n"
		"  - protocol: tcp\n"
		"    why: database\n"
		"    ports: ['5432']\n"
		"    cidr: 198.51.100.0/24\n"
		"name: \"dig\"\n"
		"version: 1\n",
		/* spellings that normalise to the same values, explicit defaults */
		"version: 1\n"
		"name: dig\n"
		"mode: enforce\n"
		"dns:\n"
		"  on_deny: nxdomain\n"
		"  qtypes: [AAAA, a]\n"
		"allow:\n"
		"  - host: API.Example.Com.\n"
		"    ports: [443]\n"
		"    why: model API\n"
		"  - url: HTTP://deb.example.net:80/debian/pool/../\n"
		"    methods: [HEAD, get]\n"
		"    why: apt\n"
		"  - cidr: ::ffff:198.51.100.0/120\n"
		"    ports: [5432]\n"
		"    why: database\n",
	};

	(void)state;
	digest_of(base, d0);
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		digest_of(same[i], d1);
		if (strcmp(d0, d1) != 0)
			fail_msg("variant %zu changed the digest", i);
	}
}

static void test_digest_sensitive(void **state)
{
	char d0[SLUICE_DIGEST_HEX_LEN + 1], d1[SLUICE_DIGEST_HEX_LEN + 1];
	static const struct {
		const char *from, *to;
	} changes[] = {
		{ "name: dig", "name: dig2" },
		{ "version: 1\n", "version: 1\nmode: audit\n" },
		{ "version: 1\n", "version: 1\ndns: {on_deny: refused}\n" },
		{ "version: 1\n", "version: 1\ndns: {qtypes: [A]}\n" },
		{ "version: 1\n", "version: 1\ndns: {qtypes: [A, AAAA, TXT]}\n" },
		{ "host: api.example.com", "host: api2.example.com" },
		{ "host: api.example.com", "host: \"*.api.example.com\"" },
		{ "ports: [443]", "ports: [444]" },
		{ "ports: [443]", "ports: [443, 8443]" },
		{ "ports: [443]", "ports: [443-444]" },
		{ "why: model API", "why: model api" },
		{ "deb.example.net/debian/", "deb.example.net/debian" },
		{ "deb.example.net/debian/", "deb.example.net:8080/debian/" },
		{ "deb.example.net/debian/", "deb2.example.net/debian/" },
		{ "    why: apt\n", "    methods: [GET]\n    why: apt\n" },
		{ "    why: apt\n", "    methods: [GET, HEAD, POST]\n    why: apt\n" },
		{ "198.51.100.0/24", "198.51.100.0/25" },
		{ "198.51.100.0/24", "198.51.101.0/24" },
		{ "    why: database\n", "    protocol: udp\n    why: database\n" },
		{ "ports: [5432]", "ports: [5433]" },
	};

	(void)state;
	digest_of(base, d0);
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		char y[2048];
		const char *at = strstr(base, changes[i].from);

		assert_non_null(at);
		snprintf(y, sizeof(y), "%.*s%s%s", (int)(at - base), base, changes[i].to,
			 at + strlen(changes[i].from));
		digest_of(y, d1);
		if (strcmp(d0, d1) == 0)
			fail_msg("change %zu (%s -> %s) kept the digest", i, changes[i].from, changes[i].to);
	}
	/* order of entries matters (it names the rules) */
	digest_of("version: 1\nname: dig\nallow:\n"
		  "  - cidr: 198.51.100.0/24\n    ports: [5432]\n    why: database\n"
		  "  - host: api.example.com\n    ports: [443]\n    why: model API\n"
		  "  - url: http://deb.example.net/debian/\n    why: apt\n", d1);
	assert_string_not_equal(d0, d1);
}

static void test_limits(void **state)
{
	char *y;
	size_t n = 0, cap = (SLUICE_POLICY_MAX_ENTRIES + 10) * 64;

	(void)state;
	/* deep nesting is refused, not recursed into */
	{
		char deep[512];
		size_t o = 0;

		o += (size_t)snprintf(deep, sizeof(deep), HEAD "x: ");
		for (int i = 0; i < 40; i++)
			deep[o++] = '[';
		deep[o] = '\0';
		/* "x: " then the 16th "[" (the root mapping is the 1st level) */
		bad(deep, 3, 4 + 15, "nested too deeply");
	}
	/* more than SLUICE_POLICY_MAX_ENTRIES entries */
	y = malloc(cap);
	assert_non_null(y);
	n += (size_t)snprintf(y + n, cap - n, HEAD "allow:\n");
	for (int i = 0; i < SLUICE_POLICY_MAX_ENTRIES + 4; i++)
		n += (size_t)snprintf(y + n, cap - n, "  - {host: h%d.example, ports: [1], why: x}\n", i);
	bad(y, 4, 3, "too many allow entries");
	/* more than 256 ports in one list */
	n = (size_t)snprintf(y, cap, HEAD "allow:\n  - host: a.example\n    why: x\n    ports: [1");
	for (int i = 2; i <= 300; i++)
		n += (size_t)snprintf(y + n, cap - n, ", %d", i);
	snprintf(y + n, cap - n, "]\n");
	bad(y, 6, 12, "too many ports (at most 256: use ranges)");
	/* a huge mapping fails on its first unknown key, at once */
	n = (size_t)snprintf(y, cap, HEAD);
	for (int i = 0; i < 20000; i++)
		n += (size_t)snprintf(y + n, cap - n, "k%d: 1\n", i);
	bad(y, 3, 1, "unknown key 'k0' in policy");
	free(y);
}

/* unix entries: paths, directories, abstract names; every refusal at file:line:col. */
static void test_unix_entries(void **state)
{
	struct sluice_policy *p = load(HEAD "allow:\n"
				       "  - unix: /run/postgresql/.s.PGSQL.5432\n    why: db\n"
				       "  - unix: /srv/sockets/\n    why: a directory\n"
				       "  - unix: \"@dbus-abc\"\n    why: abstract\n");

	assert_int_equal(p->n_entries, 3);
	assert_int_equal(p->entries[0].kind, SLUICE_ENTRY_UNIX);
	assert_string_equal(p->entries[0].unix_path, "/run/postgresql/.s.PGSQL.5432");
	assert_false(p->entries[0].unix_prefix);
	assert_true(p->entries[1].unix_prefix);
	assert_true(p->entries[2].unix_abstract);
	assert_string_equal(p->entries[2].unix_path, "dbus-abc");
	assert_string_equal(p->entries[2].name, "allow[2] unix:@dbus-abc");
	sluice_policy_free(p);

	bad(HEAD "allow:\n  - unix: rel.sock\n    why: x\n", 4, 11, "absolute path");
	bad(HEAD "allow:\n  - unix: /a/../b\n    why: x\n", 4, 11, "'..' segment");
	bad(HEAD "allow:\n  - unix: /a/./b\n    why: x\n", 4, 11, "'.'");
	bad(HEAD "allow:\n  - unix: /a//b\n    why: x\n", 4, 11, "empty");
	bad(HEAD "allow:\n  - unix: /\n    why: x\n", 4, 11, "every socket");
	bad(HEAD "allow:\n  - unix: \"@\"\n    why: x\n", 4, 11, "abstract name");
	bad(HEAD "allow:\n  - unix: \"/a\\0b\"\n    why: x\n", 4, 11, "NUL");
	bad(HEAD "allow:\n  - unix: /a\n    ports: [1]\n    why: x\n", 5, 5, "'ports' is not allowed in a unix entry");
	bad(HEAD "allow:\n  - unix: /a\n    host: x.example\n    why: x\n", 5, 5, "exactly one of");
	{
		char y[512], long_name[120];

		memset(long_name, 'x', 108);
		long_name[108] = 0;
		snprintf(y, sizeof(y), HEAD "allow:\n  - unix: \"@%s\"\n    why: x\n", long_name);
		bad(y, 4, 11, "longer than 107");
		snprintf(y, sizeof(y), HEAD "allow:\n  - unix: \"/%s\"\n    why: x\n", long_name);
		bad(y, 4, 11, "longer than 107");
	}
}

/* The digest covers unix entries; the same socket twice is a duplicate. */
static void test_unix_digest_and_duplicates(void **state)
{
	struct sluice_policy *a = load(HEAD "allow:\n  - unix: /run/a.sock\n    why: x\n");
	struct sluice_policy *b = load(HEAD "allow:\n  - unix: /run/b.sock\n    why: x\n");
	struct sluice_policy *c = load(HEAD "allow:\n  - unix: \"@run/a.sock\"\n    why: x\n");

	assert_string_not_equal(a->digest, b->digest);
	assert_string_not_equal(a->digest, c->digest);
	sluice_policy_free(a);
	sluice_policy_free(b);
	sluice_policy_free(c);
	bad(HEAD "allow:\n  - unix: /run/a.sock\n    why: x\n  - unix: /run/a.sock\n    why: y\n", 6, 5, "duplicate entry: unix /run/a.sock");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unix_entries),
		cmocka_unit_test(test_unix_digest_and_duplicates),
		cmocka_unit_test(test_load_full),
		cmocka_unit_test(test_load_minimal_and_defaults),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_err_syntax),
		cmocka_unit_test(test_err_unknown_keys),
		cmocka_unit_test(test_err_wrong_types),
		cmocka_unit_test(test_err_version_and_name),
		cmocka_unit_test(test_err_duplicates),
		cmocka_unit_test(test_err_missing),
		cmocka_unit_test(test_err_ports),
		cmocka_unit_test(test_err_cidr),
		cmocka_unit_test(test_filesystem_section),
		cmocka_unit_test(test_tls_section),
		cmocka_unit_test(test_err_ip_literal_in_host),
		cmocka_unit_test(test_err_bad_wildcards),
		cmocka_unit_test(test_err_bad_host_bytes),
		cmocka_unit_test(test_err_url),
		cmocka_unit_test(test_https_url),
		cmocka_unit_test(test_inspect),
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_digest_canonical_form),
		cmocka_unit_test(test_digest_stable),
		cmocka_unit_test(test_digest_sensitive),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
