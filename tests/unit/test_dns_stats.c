/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the resolver's shared dropped-query counts (userspace/lib/dns_stats.c). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "dns_stats.h"

static int tmp_fd(void)
{
	char path[] = "/tmp/sluice-dns-stats-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

/* A new file is sized and stamped; two mappings (the daemon's, a
 * resolver's) see the same counts; a later mapping continues them. */
static void test_shared_and_continued(void **state)
{
	int fd = tmp_fd();
	struct sluice_dns_stats *a = sluice_dns_stats_map(fd), *b = sluice_dns_stats_map(fd), *c;

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)sizeof(*a));
	sluice_dns_stats_add(a, 0, 5);
	sluice_dns_stats_add(b, 0, 2);
	sluice_dns_stats_add(b, 2, 1);
	sluice_dns_stats_add(a, SLUICE_DNS_DROP_N, 9);   /* out of range: ignored */
	sluice_dns_stats_add(NULL, 0, 9);
	assert_int_equal(sluice_dns_stats_get(a, 0), 7);
	assert_int_equal(sluice_dns_stats_get(b, 1), 0);
	assert_int_equal(sluice_dns_stats_get(a, 2), 1);
	assert_int_equal(sluice_dns_stats_get(NULL, 0), 0);
	sluice_dns_stats_unmap(a);
	sluice_dns_stats_unmap(b);
	c = sluice_dns_stats_map(fd);
	assert_non_null(c);
	assert_int_equal(sluice_dns_stats_get(c, 0), 7);
	sluice_dns_stats_unmap(c);
	close(fd);
}

/* A file that holds something else is refused (EINVAL), never overwritten. */
static void test_foreign_file_refused(void **state)
{
	int fd = tmp_fd();
	char junk[sizeof(struct sluice_dns_stats)] = "not a counts file";

	assert_int_equal(write(fd, junk, 10), 10);
	errno = 0;
	assert_null(sluice_dns_stats_map(fd));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	errno = 0;
	assert_null(sluice_dns_stats_map(fd));   /* the right size, the wrong magic */
	assert_int_equal(errno, EINVAL);
	close(fd);
	assert_int_equal(strcmp(sluice_dns_drop_names[1], "socket_overflow"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_and_continued),
		cmocka_unit_test(test_foreign_file_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
