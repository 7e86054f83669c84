/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests: Community ID v1 (userspace/lib/community_id.c) against the
 * reference data of the spec (corelight/community-id-spec, baseline/
 * baseline_deflt.json and baseline_seed1.json: every flow of its pcaps,
 * both directions; ICMP rows give type and code already mapped to ports).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "community_id.h"

struct vec {
	uint8_t proto;
	const char *saddr, *daddr;
	uint16_t sport, dport;
	const char *seed0, *seed1;
};

static const struct vec vecs[] = {
	{ 58, "fe80::200:86ff:fe05:80da", "fe80::260:97ff:fe07:69ea", 135, 136,
	  "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=", "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=" },
	{ 58, "fe80::260:97ff:fe07:69ea", "fe80::200:86ff:fe05:80da", 136, 135,
	  "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=", "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=" },
	{ 58, "fe80::260:97ff:fe07:69ea", "fe80::200:86ff:fe05:80da", 135, 136,
	  "1:zavyT/cezQr1fmImYCwYnMXbgck=", "1:2hSqmsDZ2kdcY9kbiUzOEBic0iM=" },
	{ 58, "fe80::200:86ff:fe05:80da", "fe80::260:97ff:fe07:69ea", 136, 135,
	  "1:zavyT/cezQr1fmImYCwYnMXbgck=", "1:2hSqmsDZ2kdcY9kbiUzOEBic0iM=" },
	{ 58, "3ffe:501:1800:2345::2", "3ffe:507:0:1:200:86ff:fe05:80da", 3, 0,
	  "1:2ObVBgIn28oZvibYZhZMBgh7WdQ=", "1:lVEtCZpYu84Xqaa++3lXFyuu2n4=" },
	{ 58, "3ffe:501:410:0:2c0:dfff:fe47:33e", "3ffe:507:0:1:200:86ff:fe05:80da", 1, 4,
	  "1:hLZd0XGWojozrvxqE0dWB1iM6R0=", "1:W8MHwXpWzpoSTD+cGcaJr4u0ys8=" },
	{ 58, "3ffe:507:0:1:200:86ff:fe05:80da", "3ffe:501:0:1001::2", 128, 129,
	  "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=", "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=" },
	{ 58, "3ffe:501:0:1001::2", "3ffe:507:0:1:200:86ff:fe05:80da", 129, 128,
	  "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=", "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=" },
	{ 58, "fe80::200:86ff:fe05:80da", "ff02::2", 133, 134,
	  "1:hO+sN4H+MG5MY/8hIrXPqc4ZQz0=", "1:L7Ka0ZMYu+J3bL4ulW2PrqyXNo8=" },
	{ 58, "fe80::260:97ff:fe07:69ea", "ff02::1", 134, 133,
	  "1:pkvHqCL88/tg1k4cPigmZXUtL00=", "1:K/ee5UCqAMAQXDorP5nSa2CGLjc=" },
	{ 1, "192.168.0.89", "192.168.0.1", 8, 0,
	  "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=", "1:03g6IloqVBdcZlPyX8r0hgoE7kA=" },
	{ 1, "192.168.0.1", "192.168.0.89", 0, 8,
	  "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=", "1:03g6IloqVBdcZlPyX8r0hgoE7kA=" },
	{ 1, "10.0.0.1", "10.0.0.2", 11, 0,
	  "1:YHxtAirCG//0OzkcVAukqKQN9xM=", "1:XjUibYHaafLQ3pxQeiMI8g25q20=" },
	{ 6, "2001:470:e5bf:dead:4957:2174:e82c:4887", "2607:f8b0:400c:c03::1a", 63943, 25,
	  "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=", "1:eJYTW6AOzFLlSUoESovMjnu7rMw=" },
	{ 6, "2607:f8b0:400c:c03::1a", "2001:470:e5bf:dead:4957:2174:e82c:4887", 25, 63943,
	  "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=", "1:eJYTW6AOzFLlSUoESovMjnu7rMw=" },
	{ 132, "192.168.170.8", "192.168.170.56", 7, 7,
	  "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=", "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=" },
	{ 132, "192.168.170.56", "192.168.170.8", 7, 7,
	  "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=", "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=" },
	{ 6, "128.232.110.120", "66.35.250.204", 34855, 80,
	  "1:LQU9qZlK+B5F3KDmev6m5PMibrg=", "1:3V71V58M3Ksw/yuFALMcW0LAHvc=" },
	{ 6, "66.35.250.204", "128.232.110.120", 80, 34855,
	  "1:LQU9qZlK+B5F3KDmev6m5PMibrg=", "1:3V71V58M3Ksw/yuFALMcW0LAHvc=" },
	{ 17, "192.168.1.52", "8.8.8.8", 54585, 53,
	  "1:d/FP5EW3wiY1vCndhwleRRKHowQ=", "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=" },
	{ 17, "8.8.8.8", "192.168.1.52", 53, 54585,
	  "1:d/FP5EW3wiY1vCndhwleRRKHowQ=", "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=" },
	/* RSVP: no ports in the hash */
	{ 46, "10.1.12.1", "10.1.12.2", 0, 0,
	  "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=", "1:rYir8gphR31noO9iDRQmF/BteEI=" },
	{ 46, "10.1.12.2", "10.1.12.1", 0, 0,
	  "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=", "1:rYir8gphR31noO9iDRQmF/BteEI=" },
};

static void one(const struct vec *v, uint16_t seed, const char *want)
{
	unsigned char s[16], d[16];
	int fam = strchr(v->saddr, ':') ? AF_INET6 : AF_INET;
	char out[SLUICE_COMMUNITY_ID_LEN];

	assert_int_equal(inet_pton(fam, v->saddr, s), 1);
	assert_int_equal(inet_pton(fam, v->daddr, d), 1);
	assert_int_equal(sluice_community_id(fam, s, d, v->sport, v->dport, v->proto, seed, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void test_baseline_seed0(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		one(&vecs[i], 0, vecs[i].seed0);
}

static void test_baseline_seed1(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		one(&vecs[i], 1, vecs[i].seed1);
}

/* Ports of a protocol without them are not hashed: any value, one ID. */
static void test_other_protocol_ignores_ports(void **state)
{
	unsigned char s[4] = { 10, 1, 12, 1 }, d[4] = { 10, 1, 12, 2 };
	char out[SLUICE_COMMUNITY_ID_LEN];

	(void)state;
	assert_int_equal(sluice_community_id(AF_INET, s, d, 1234, 80, 46, 0, out, sizeof(out)), 0);
	assert_string_equal(out, "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=");
}

/* The text form used on lines: the same IDs, both directions. */
static void test_text(void **state)
{
	char out[SLUICE_COMMUNITY_ID_LEN];

	(void)state;
	assert_int_equal(sluice_community_id_text("128.232.110.120", 34855, "66.35.250.204", 80, "tcp", out,
						  sizeof(out)), 0);
	assert_string_equal(out, "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
	assert_int_equal(sluice_community_id_text("8.8.8.8", 53, "192.168.1.52", 54585, "udp", out, sizeof(out)), 0);
	assert_string_equal(out, "1:d/FP5EW3wiY1vCndhwleRRKHowQ=");
	assert_int_equal(sluice_community_id_text("2607:f8b0:400c:c03::1a", 25,
						  "2001:470:e5bf:dead:4957:2174:e82c:4887", 63943, "tcp", out,
						  sizeof(out)), 0);
	assert_string_equal(out, "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=");
}

static void test_bad_input(void **state)
{
	char out[SLUICE_COMMUNITY_ID_LEN], small[8];
	unsigned char a[4] = { 0 };

	(void)state;
	assert_int_equal(sluice_community_id_text("192.0.2.1", 1, "2001:db8::1", 2, "tcp", out, sizeof(out)), -1);
	assert_string_equal(out, "");
	assert_int_equal(sluice_community_id_text("192.0.2.1", 1, "192.0.2.2", 2, "icmp", out, sizeof(out)), -1);
	assert_int_equal(sluice_community_id_text("192.0.2.1", 1, "nope", 2, "tcp", out, sizeof(out)), -1);
	assert_int_equal(sluice_community_id_text("192.0.2.1", 70000, "192.0.2.2", 2, "tcp", out, sizeof(out)), -1);
	assert_int_equal(sluice_community_id_text(NULL, 1, "192.0.2.2", 2, "tcp", out, sizeof(out)), -1);
	assert_int_equal(sluice_community_id(AF_INET, a, a, 1, 2, 6, 0, small, sizeof(small)), -1);
	assert_int_equal(sluice_community_id(AF_UNIX, a, a, 1, 2, 6, 0, out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_baseline_seed0),
		cmocka_unit_test(test_baseline_seed1),
		cmocka_unit_test(test_other_protocol_ignores_ports),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
