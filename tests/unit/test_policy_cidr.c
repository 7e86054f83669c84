/* SPDX-License-Identifier: BSD-2-Clause */
/* test_policy_cidr.c - sluice_policy_cidr_tcp(): what a reload's flow cut asks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "policy.h"

static const char POL[] =
	"version: 1\n"
	"name: cidr\n"
	"allow:\n"
	"  - cidr: 198.51.100.0/24\n"
	"    ports: [5432, 9000-9010]\n"
	"    protocol: tcp\n"
	"    why: databases\n"
	"  - cidr: 2001:db8::10/128\n"
	"    ports: [443]\n"
	"    protocol: tcp\n"
	"    why: one v6 host\n"
	"  - cidr: 203.0.113.0/24\n"
	"    ports: [53]\n"
	"    protocol: udp\n"
	"    why: UDP is not TCP\n"
	"  - cidr: 192.0.2.10/32\n"
	"    ports: [22]\n"
	"    protocol: tcp\n"
	"    expires: 2020-01-01T00:00:00Z\n"
	"    why: expired long ago\n";

static struct sluice_policy *load(void)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;

	memset(&err, 0, sizeof(err));
	assert_int_equal(sluice_policy_load_buffer("cidr.yaml", POL, sizeof(POL) - 1, &p, &err), 0);
	return p;
}

static enum sluice_cidr_verdict v(const struct sluice_policy *p, const char *ip, uint16_t port)
{
	uint8_t a[16] = { 0 };
	int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;

	assert_int_equal(inet_pton(fam, ip, a), 1);
	return sluice_policy_cidr_tcp(p, fam, a, port, NULL, -1);
}

static void test_address_port_protocol_and_expiry(void **state)
{
	struct sluice_policy *p = load();

	(void)state;
	assert_int_equal(v(p, "198.51.100.7", 5432), SLUICE_CIDR_ALLOWED);
	assert_int_equal(v(p, "198.51.100.7", 9005), SLUICE_CIDR_ALLOWED);
	assert_int_equal(v(p, "198.51.100.7", 9011), SLUICE_CIDR_NO_ENTRY);
	assert_int_equal(v(p, "198.51.101.7", 5432), SLUICE_CIDR_NO_ENTRY);
	assert_int_equal(v(p, "::ffff:198.51.100.7", 5432), SLUICE_CIDR_ALLOWED);  /* v4-mapped is IPv4 */
	assert_int_equal(v(p, "2001:db8::10", 443), SLUICE_CIDR_ALLOWED);
	assert_int_equal(v(p, "2001:db8::11", 443), SLUICE_CIDR_NO_ENTRY);
	assert_int_equal(v(p, "203.0.113.5", 53), SLUICE_CIDR_NO_ENTRY);          /* a UDP entry */
	assert_int_equal(v(p, "192.0.2.10", 22), SLUICE_CIDR_EXPIRED);
	assert_int_equal(sluice_policy_cidr_tcp(NULL, AF_INET, (const uint8_t *)"\xc6\x33\x64\x07", 5432, NULL, -1),
			 SLUICE_CIDR_NO_ENTRY);
	sluice_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_address_port_protocol_and_expiry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
