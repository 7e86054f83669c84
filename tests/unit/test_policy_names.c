/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the name index (userspace/lib/policy_names.c) finds what a
 * scan of the entries (sluice_policy_name_entry()) finds, the first
 * matching entry in file order. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_fixture.h"

static const char POLICY[] =
	"version: 1\n"
	"name: names\n"
	"allow:\n"
	"  - cidr: 198.51.100.0/24\n"
	"    ports: [5432]\n"
	"    why: not a name\n"
	"  - host: \"*.b.example.com\"\n"
	"    ports: [80]\n"
	"    why: a wildcard before the exact name it covers\n"
	"  - host: a.b.example.com\n"
	"    ports: [443]\n"
	"    why: exact\n"
	"  - url: https://a.b.example.com/v1/\n"
	"    why: url host, after both\n"
	"  - url: https://only-url.example.net/\n"
	"    why: a name only a url entry has\n"
	"  - host: \"*.example.com\"\n"
	"    ports: [443]\n"
	"    why: the wider wildcard, later\n"
	"  - host: x.example.com\n"
	"    ports: [443]\n"
	"    why: exact, after the wildcard that covers it\n"
	"  - host: example.com\n"
	"    ports: [443]\n"
	"    why: the apex, which no wildcard above covers\n";

static void test_first_in_file_order(void **state)
{
	struct sluice_policy *p = load(POLICY);
	struct sluice_name_index *ix = sluice_name_index_new(p);
	static const struct {
		const char *name;
		int entry;   /* index in p->entries, -1: none */
	} cases[] = {
		{ "a.b.example.com", 1 },       /* the wildcard comes first */
		{ "z.b.example.com", 1 },
		{ "deep.z.b.example.com", 1 },
		{ "b.example.com", 5 },         /* "*.b.x" never matches "b.x" */
		{ "x.example.com", 5 },         /* wildcard before the exact entry */
		{ "example.com", 7 },
		{ "only-url.example.net", 4 },
		{ "sub.only-url.example.net", -1 },
		{ "evilexample.com", -1 },      /* no label boundary */
		{ "example.com.evil", -1 },
		{ ".example.com", -1 },
		{ "com", -1 },
		{ "", -1 },
		{ "198.51.100.7", -1 },
	};

	assert_non_null(ix);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct sluice_entry *want = cases[i].entry < 0 ? NULL : &p->entries[cases[i].entry];

		if (sluice_name_index_first(ix, p, cases[i].name) != want || sluice_policy_name_entry(p, cases[i].name) != want)
			fail_msg("%s: index %p, scan %p, want %p", cases[i].name,
				 (void *)sluice_name_index_first(ix, p, cases[i].name), (void *)sluice_policy_name_entry(p, cases[i].name),
				 (void *)want);
	}
	assert_null(sluice_name_index_first(NULL, p, "example.com"));
	assert_null(sluice_name_index_first(ix, NULL, "example.com"));
	assert_null(sluice_name_index_first(ix, p, NULL));
	sluice_name_index_free(ix);
	sluice_policy_free(p);
}

static void test_expired_entries_are_passed_over(void **state)
{
	struct sluice_policy *p = load(POLICY);
	struct sluice_name_index *ix = sluice_name_index_new(p);

	/* expiry is judged at the lookup, as sluice_host_match() does */
	p->entries[1].expires = 1;   /* 1970 */
	assert_ptr_equal(sluice_name_index_first(ix, p, "a.b.example.com"), &p->entries[2]);
	assert_ptr_equal(sluice_name_index_first(ix, p, "z.b.example.com"), &p->entries[5]);
	p->entries[2].expires = 1;
	assert_ptr_equal(sluice_name_index_first(ix, p, "a.b.example.com"), &p->entries[3]);
	p->entries[3].expires = 1;
	p->entries[5].expires = 1;
	assert_null(sluice_name_index_first(ix, p, "a.b.example.com"));
	assert_ptr_equal(sluice_name_index_first(ix, p, "x.example.com"), &p->entries[6]);
	sluice_name_index_free(ix);
	sluice_policy_free(p);
}

/* Random policies over a few labels under example.com (a wildcard must
 * not be over a top-level domain), every name of up to four of them there:
 * the index and the scan agree on each. */
static void test_agrees_with_the_scan(void **state)
{
	static const char *labels[] = { "a", "b", "ab", "example", "com", "x-y" };
	static const char apex[] = "example.com";
	const size_t nl = sizeof(labels) / sizeof(labels[0]);
	char text[65536], name[256];
	unsigned seed = 19;

	for (int round = 0; round < 40; round++) {
		struct sluice_policy *p;
		struct sluice_name_index *ix;
		size_t off = (size_t)snprintf(text, sizeof(text), "version: 1\nname: r%d\nallow:\n", round);
		size_t checked = 0, found = 0;
		int n = 1 + (int)(rand_r(&seed) % 60);

		for (int i = 0; i < n; i++) {
			int depth = (int)(rand_r(&seed) % 4), kind = (int)(rand_r(&seed) % 4);

			name[0] = '\0';
			for (int d = 0; d < depth; d++)
				snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s.",
					 labels[rand_r(&seed) % nl]);
			strcat(name, apex);
			if (kind != 3) {   /* one host entry a name (the loader refuses duplicates) */
				char key[300];

				snprintf(key, sizeof(key), "\"%s%s\"", kind == 0 ? "*." : "", name);
				if (strstr(text, key))
					continue;
			}
			if (kind == 3)
				off += (size_t)snprintf(text + off, sizeof(text) - off,
							"  - url: https://%s/p%d/\n    why: r\n", name, i);
			else
				off += (size_t)snprintf(text + off, sizeof(text) - off,
							"  - host: \"%s%s\"\n    ports: [%d]\n    why: r\n",
							kind == 0 ? "*." : "", name, 1000 + i);
		}
		p = load(text);
		ix = sluice_name_index_new(p);
		assert_non_null(ix);
		/* every name of none to four labels under the apex: 1 + 6 + ... + 1296 */
		for (size_t depth = 0; depth <= 4; depth++) {
			size_t total = 1;

			for (size_t d = 0; d < depth; d++)
				total *= nl;
			for (size_t k = 0; k < total; k++) {
				size_t v = k;
				const struct sluice_entry *a, *b;

				name[0] = '\0';
				for (size_t d = 0; d < depth; d++, v /= nl)
					snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s.", labels[v % nl]);
				strcat(name, apex);
				a = sluice_name_index_first(ix, p, name);
				b = sluice_policy_name_entry(p, name);
				if (a != b)
					fail_msg("round %d, %s: index entry %td, scan %td", round, name,
						 a ? a - p->entries : -1, b ? b - p->entries : -1);
				checked++;
				found += b != NULL;
			}
		}
		assert_true(checked == 1555 && found > 0);
		sluice_name_index_free(ix);
		sluice_policy_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_in_file_order),
		cmocka_unit_test(test_expired_entries_are_passed_over),
		cmocka_unit_test(test_agrees_with_the_scan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
