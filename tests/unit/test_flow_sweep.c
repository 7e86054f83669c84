/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the flow map's sweep (userspace/lib/flow.c), on a real BPF
 * hash map of the flow map's shape (root, as `make test` runs; skipped
 * with the reason where the kernel refuses the map). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "flow.h"

#define SEC_NS 1000000000ull
#define NOW    (100000 * SEC_NS)   /* 27 h after boot */

static int map_fd = -1;

static int setup(void **state)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);

	(void)state;
	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "sweep_test", sizeof(struct sluice_flow_key),
				sizeof(struct sluice_orig), 8192, &o);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (map_fd >= 0)
		close(map_fd);
	return 0;
}

/* Put an entry: port, protocol (0 or SLUICE_FLOW_UDP), flags, age in s. */
static void put(uint16_t sport, uint8_t protocol, uint8_t flags, uint64_t age_s)
{
	struct sluice_flow_key k = { .sport = sport, .family = SLUICE_AF_INET, .protocol = protocol };
	struct sluice_orig v = { .flags = flags, .ts_ns = NOW - age_s * SEC_NS };

	k.saddr[0] = 0x0100007f;
	assert_int_equal(bpf_map_update_elem(map_fd, &k, &v, BPF_ANY), 0);
}

static bool has(uint16_t sport, uint8_t protocol)
{
	struct sluice_flow_key k = { .sport = sport, .family = SLUICE_AF_INET, .protocol = protocol };
	struct sluice_orig v;

	k.saddr[0] = 0x0100007f;
	return bpf_map_lookup_elem(map_fd, &k, &v) == 0;
}

static void test_each_child_sweeps_its_own_old_entries(void **state)
{
	(void)state;
	if (map_fd < 0)
		skip();
	put(1001, 0, SLUICE_ORIG_REDIRECTED, 120);          /* the proxy's, old */
	put(1002, 0, SLUICE_ORIG_EXPLICIT, 5);              /* the proxy's, recent */
	put(1003, SLUICE_FLOW_UDP, SLUICE_ORIG_DNS, 61);    /* the resolver's UDP query, old */
	put(1004, 0, SLUICE_ORIG_DNS, 300);                 /* the resolver's DNS over TCP, old */
	put(1005, SLUICE_FLOW_UDP, SLUICE_ORIG_DNS, 1);     /* a query being answered */

	assert_int_equal(sluice_flow_sweep(map_fd, false, NOW, SLUICE_FLOW_MAX_AGE_NS), 1);
	assert_false(has(1001, 0));
	assert_true(has(1002, 0) && has(1003, SLUICE_FLOW_UDP) && has(1004, 0) && has(1005, SLUICE_FLOW_UDP));

	assert_int_equal(sluice_flow_sweep(map_fd, true, NOW, SLUICE_FLOW_MAX_AGE_NS), 2);
	assert_false(has(1003, SLUICE_FLOW_UDP) || has(1004, 0));
	assert_true(has(1002, 0) && has(1005, SLUICE_FLOW_UDP));

	/* nothing old left: nothing more removed */
	assert_int_equal(sluice_flow_sweep(map_fd, false, NOW, SLUICE_FLOW_MAX_AGE_NS), 0);
	assert_int_equal(sluice_flow_sweep(map_fd, true, NOW, SLUICE_FLOW_MAX_AGE_NS), 0);
}

static void test_more_than_one_batch_is_swept_over_calls(void **state)
{
	int total, n;

	(void)state;
	if (map_fd < 0)
		skip();
	for (uint16_t p = 2000; p < 2000 + 5000; p++)   /* more than a call takes */
		put(p, 0, SLUICE_ORIG_REDIRECTED, 3600);
	/* a call is bounded; the next takes the rest */
	assert_int_equal(sluice_flow_sweep(map_fd, false, NOW, SLUICE_FLOW_MAX_AGE_NS), 4096);
	total = 4096;
	while ((n = sluice_flow_sweep(map_fd, false, NOW, SLUICE_FLOW_MAX_AGE_NS)) > 0)
		total += n;
	assert_int_equal(n, 0);
	assert_int_equal(total, 5000);
	assert_true(has(1002, 0));
}

static void test_an_empty_map_is_no_error(void **state)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	int fd;

	(void)state;
	if (map_fd < 0)
		skip();
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "sweep_empty", sizeof(struct sluice_flow_key),
			    sizeof(struct sluice_orig), 16, &o);
	assert_true(fd >= 0);
	assert_int_equal(sluice_flow_sweep(fd, true, NOW, SLUICE_FLOW_MAX_AGE_NS), 0);
	close(fd);
	/* a descriptor that is no map: the error, not a count */
	assert_true(sluice_flow_sweep(-1, true, NOW, SLUICE_FLOW_MAX_AGE_NS) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_child_sweeps_its_own_old_entries),
		cmocka_unit_test(test_more_than_one_batch_is_swept_over_calls),
		cmocka_unit_test(test_an_empty_map_is_no_error),
	};

	setup(NULL);
	if (map_fd < 0)
		fprintf(stderr, "test_flow_sweep: cannot create a BPF hash map (%s): the sweep's tests are skipped\n",
			strerror(errno));
	return cmocka_run_group_tests(tests, NULL, teardown);
}
