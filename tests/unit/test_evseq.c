/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: the shared line counter (userspace/lib/evseq.c) and the
 * writer numbering from it (evlog.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "evlog.h"
#include "evseq.h"

static void test_memfd_shared_between_processes(void **state)
{
	int fd = sluice_evseq_memfd();
	struct sluice_evseq *q;
	pid_t pid;
	int st;

	(void)state;
	assert_true(fd >= 0);
	q = sluice_evseq_map(fd);
	assert_non_null(q);
	assert_int_equal(sluice_evseq_take(q), 0);
	pid = fork();
	if (pid == 0) {
		/* another process, its own mapping of the same fd */
		struct sluice_evseq *c = sluice_evseq_map(fd);

		for (int i = 0; c && i < 1000; i++)
			sluice_evseq_take(c);
		_exit(c ? 0 : 1);
	}
	for (int i = 0; i < 1000; i++)
		sluice_evseq_take(q);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(sluice_evseq_take(q), 2001);   /* no number lost or taken twice */
	/* sealed: nobody can shrink it under a mapping */
	assert_int_equal(ftruncate(fd, 0), -1);
	sluice_evseq_unmap(q);
	close(fd);
}

static void test_file_carries_on(void **state)
{
	char path[] = "/tmp/sluice-evseq-XXXXXX";
	int tmp = mkstemp(path), fd;
	struct sluice_evseq *q;

	(void)state;
	assert_true(tmp >= 0);
	close(tmp);                       /* an empty file: not a counter yet */
	fd = sluice_evseq_file(path);
	assert_true(fd >= 0);
	q = sluice_evseq_map(fd);
	assert_non_null(q);
	assert_int_equal(sluice_evseq_take(q), 0);
	assert_int_equal(sluice_evseq_take(q), 1);
	sluice_evseq_add(&q->dns_queries[SLUICE_EVC_DENY], 3);
	sluice_evseq_unmap(q);
	close(fd);
	/* a restarted daemon opens it again: carries on */
	fd = sluice_evseq_file(path);
	q = sluice_evseq_map(fd);
	assert_non_null(q);
	assert_int_equal(sluice_evseq_take(q), 2);
	assert_int_equal(sluice_evseq_read(&q->dns_queries[SLUICE_EVC_DENY]), 3);
	sluice_evseq_unmap(q);
	close(fd);
	unlink(path);
}

static void test_map_refuses_what_is_not_a_counter(void **state)
{
	int fd = memfd_create("x", MFD_CLOEXEC);

	(void)state;
	assert_null(sluice_evseq_map(fd));               /* empty */
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_null(sluice_evseq_map(fd));               /* no magic */
	close(fd);
	assert_int_equal(sluice_evc_verdict("would_deny"), SLUICE_EVC_WOULD_DENY);
	assert_int_equal(sluice_evc_verdict("maybe"), -1);
	assert_int_equal(sluice_evc_verdict(NULL), -1);
}

/* Two writers on one counter: event.sequence 0..3 between them, and the
 * lines and losses counted in the page. */
static void test_writers_share_it(void **state)
{
	struct sluice_evlog a, b;
	struct sluice_envelope env = { .sandbox = "s", .policy_name = "p", .policy_digest = "d", .mode = "enforce" };
	int p[2], fd = sluice_evseq_memfd();
	char buf[8192];
	ssize_t n;

	(void)state;
	assert_int_equal(pipe(p), 0);
	sluice_evlog_init(&a, p[1], "pipe", "a", &env);
	sluice_evlog_init(&b, p[1], "pipe", "b", &env);
	assert_int_equal(sluice_evlog_share_seq(&a, dup(fd)), 0);
	assert_int_equal(sluice_evlog_share_seq(&b, fd), 0);
	assert_true(sluice_evlog_seq_fd(&a) >= 0);
	sluice_evlog_begin(&a, SLUICE_DS_KERNEL, -1);
	sluice_evlog_commit(&a);
	sluice_evlog_begin(&b, SLUICE_DS_PROXY, -1);
	sluice_evlog_commit(&b);
	sluice_evlog_begin(&a, SLUICE_DS_LIFECYCLE, -1);
	sluice_evlog_commit(&a);
	sluice_evlog_begin(&b, SLUICE_DS_PROXY, -1);
	sluice_evlog_commit(&b);
	n = read(p[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	for (int i = 0; i < 4; i++) {
		char want[32];

		const char *at;

		snprintf(want, sizeof(want), "\"event.sequence\":%d", i);
		at = strstr(buf, want);
		if (!at || (at[strlen(want)] != ',' && at[strlen(want)] != '}'))
			fail_msg("no %s in %s", want, buf);
	}
	assert_int_equal(sluice_evseq_read(&sluice_evlog_shared(&a)->lines[SLUICE_DS_PROXY]), 2);
	/* a lost line: its number is taken (a gap) and the loss counted */
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	sluice_evlog_begin(&a, SLUICE_DS_KERNEL, -1);
	assert_true(sluice_evlog_commit(&a) < 0);
	assert_int_equal(sluice_evseq_read(&sluice_evlog_shared(&b)->lost[SLUICE_DS_KERNEL]), 1);
	assert_int_equal(sluice_evseq_take(sluice_evlog_shared(&b)), 5);
	sluice_evlog_release_seq(&a);
	sluice_evlog_release_seq(&b);
	assert_int_equal(sluice_evlog_seq_fd(&a), -1);
	close(p[1]);
}

/* A writer that never shared a counter owns no fd: releasing it closes
 * nothing (not fd 0 of a zeroed struct). */
static void test_release_without_counter(void **state)
{
	struct sluice_evlog w;

	(void)state;
	memset(&w, 0, sizeof(w));
	int probe = dup(0);

	assert_true(probe >= 0);
	sluice_evlog_release_seq(&w);
	assert_true(fcntl(0, F_GETFD) >= 0);          /* fd 0 still open */
	assert_true(sluice_evlog_share_seq(&w, -1) < 0);
	close(probe);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memfd_shared_between_processes),
		cmocka_unit_test(test_file_carries_on),
		cmocka_unit_test(test_map_refuses_what_is_not_a_counter),
		cmocka_unit_test(test_writers_share_it),
		cmocka_unit_test(test_release_without_counter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
