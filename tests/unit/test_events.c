/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests: kernel event -> JSON line (loader/events.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "evlog.h"
#include "events.h"

static const struct sluice_event_meta meta = {
	.sandbox = "sbx", .policy_name = "p", .mode = "enforce", .boot_to_real_ns = 1700000000LL * 1000000000LL,
	.policy_digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
};

/* The whole file of fd (a memfd) as text. */
static char *slurp(int fd)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *b = malloc((size_t)n + 1);

	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)n, 0), n);
	b[n] = 0;
	return b;
}

/* One kernel event through the real writer (envelope included), parsed. */
static json_object *format(const struct sluice_event *e, const struct sluice_event_meta *m)
{
	struct sluice_envelope env;
	static struct sluice_evlog w;
	int fd = memfd_create("ev", MFD_CLOEXEC);
	struct sluice_line *l;
	char *text;
	json_object *o;

	assert_true(fd >= 0);
	sluice_envelope_of(m, &env);
	sluice_evlog_init(&w, fd, "memfd", "test", &env);
	l = sluice_evlog_begin(&w, SLUICE_DS_KERNEL, sluice_event_real_ns(e, m));
	sluice_event_fields(l, e, m);
	assert_int_equal(sluice_evlog_commit(&w), 0);
	text = slurp(fd);
	close(fd);
	/* one line, ending in its newline */
	assert_true(strlen(text) > 2 && text[strlen(text) - 1] == '\n');
	assert_true(strchr(text, '\n') == text + strlen(text) - 1);
	o = json_tokener_parse(text);
	free(text);
	return o;
}

static const char *str(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("missing key %s", k);
	return json_object_get_string(v);
}

static int64_t num(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("missing key %s", k);
	return json_object_get_int64(v);
}

static void test_tcp_v4_denial(void **state)
{
	struct sluice_event e = { .ts_ns = 1500000, .seq = 42, .cgroup_id = 9, .pid = 100, .tid = 101, .uid = 1000,
				  .hook = SLUICE_HOOK_CONNECT4, .reason = SLUICE_REASON_TCP_PORT, .dport = 8080,
				  .family = SLUICE_AF_INET, .protocol = 6, .verdict = SLUICE_VERDICT_DENY };
	json_object *o;

	inet_pton(AF_INET, "192.0.2.10", &e.daddr[0]);
	memcpy(e.comm, "curl", 5);
	o = format(&e, &meta);
	assert_string_equal(str(o, "@timestamp"), "2023-11-14T22:13:20.001500Z");
	assert_string_equal(str(o, "event.action"), "egress-denied");
	assert_string_equal(str(o, "event.outcome"), "failure");
	assert_string_equal(str(o, "event.reason"), "tcp_port_not_allowed");
	assert_string_equal(str(o, "destination.ip"), "192.0.2.10");
	assert_int_equal(num(o, "destination.port"), 8080);
	assert_string_equal(str(o, "network.transport"), "tcp");
	assert_string_equal(str(o, "network.type"), "ipv4");
	assert_string_equal(str(o, "process.name"), "curl");
	assert_int_equal(num(o, "process.pid"), 100);
	assert_string_equal(str(o, "user.id"), "1000");
	assert_string_equal(str(o, "sluice.hook"), "connect4");
	assert_int_equal(num(o, "sluice.cgroup_id"), 9);
	assert_int_equal(num(o, "sluice.seq"), 42);
	assert_string_equal(str(o, "sluice.sandbox"), "sbx");
	/* ECS: the ruleset is the policy's name, its version the digest */
	assert_string_equal(str(o, "rule.ruleset"), "p");
	assert_string_equal(str(o, "rule.version"), meta.policy_digest);
	assert_string_equal(str(o, "sluice.policy_sha256"), meta.policy_digest);
	assert_string_equal(str(o, "ecs.version"), SLUICE_ECS_VERSION);
	assert_string_equal(str(o, "observer.type"), "firewall");
	assert_string_equal(str(o, "observer.product"), "sluice");
	assert_string_equal(str(o, "event.module"), "sluice");
	assert_string_equal(str(o, "event.dataset"), "sluice.kernel");
	assert_string_equal(str(o, "network.direction"), "egress");
	assert_true(strlen(str(o, "event.id")) > 17);
	json_object_put(o);
}

static void test_v6_and_audit(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_SENDMSG6, .reason = SLUICE_REASON_UDP, .dport = 443,
				  .family = SLUICE_AF_INET6, .protocol = 17, .verdict = SLUICE_VERDICT_WOULD_DENY, .pid = 1 };
	json_object *o;

	inet_pton(AF_INET6, "2001:db8::1", e.daddr);
	o = format(&e, &meta);
	assert_string_equal(str(o, "destination.ip"), "2001:db8::1");
	assert_string_equal(str(o, "network.type"), "ipv6");
	assert_string_equal(str(o, "network.transport"), "udp");
	assert_string_equal(str(o, "event.outcome"), "unknown");
	assert_string_equal(str(o, "sluice.verdict"), "would_deny");
	json_object_put(o);
}

/* comm is attacker-controlled (prctl PR_SET_NAME): it must be escaped. */
static void test_hostile_comm_is_escaped(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 5 };
	json_object *o;

	memcpy(e.comm, "a\"}\n{\"x\\\x01zzzzzzz", 16); /* no NUL terminator */
	o = format(&e, &meta);
	assert_non_null(o);
	assert_int_equal(strlen(str(o, "process.name")), 16);
	json_object_put(o);
}

/* bytes that are not UTF-8 become U+FFFD: the line stays valid JSON for
 * strict readers (a hostile comm must not make its own denial unreadable) */
static void test_invalid_utf8_comm_replaced(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 5 };
	static const char bad[16] = "a\xff\xc3(\xe2\x82\xed\xa0\x80\xc3\xa9\xf4\x90z";
	struct json_tokener *tok = json_tokener_new();
	char buf[2048];
	json_object *o;
	int n;

	memcpy(e.comm, bad, sizeof(bad));
	n = sluice_event_format(&e, &meta, buf, sizeof(buf));
	assert_true(n > 0);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, buf, n + 1);
	assert_non_null(o);
	/* each bad byte is one U+FFFD; the valid e-acute stays */
	assert_string_equal(str(o, "process.name"),
			    "a\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
			    "\xc3\xa9\xef\xbf\xbd\xef\xbf\xbdz");
	json_object_put(o);
	json_tokener_free(tok);
}

/* any ts_ns: no signed overflow, a well-formed timestamp */
static void test_time_extremes(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6 };
	char ts[40];
	json_object *o;

	e.ts_ns = (1ULL << 63) - 1000;
	o = format(&e, &meta);
	assert_int_equal(strlen(str(o, "@timestamp")), 27);
	json_object_put(o);
	sluice_format_time(-1, ts, sizeof(ts));
	assert_string_equal(ts, "1969-12-31T23:59:59.999999Z");
}

static void test_canary_is_marked(void **state)
{
	struct sluice_event_meta m = meta;
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 77 };
	json_object *o;

	m.canary_pid = 77;
	memcpy(e.comm, "sluice-canary", 14);
	o = format(&e, &m);
	assert_string_equal(str(o, "event.action"), "canary-denied");
	json_object_put(o);
	memcpy(e.comm, "sh", 3);   /* same pid after exec: no longer the canary */
	o = format(&e, &m);
	assert_string_equal(str(o, "event.action"), "egress-denied");
	json_object_put(o);
}

static void test_sock_create_has_no_destination(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_SOCK_CREATE, .reason = SLUICE_REASON_SOCK_RAW, .family = SLUICE_AF_INET,
				  .protocol = 1, .sock_type = 3, .pid = 1 };
	json_object *o = format(&e, &meta), *v;

	assert_false(json_object_object_get_ex(o, "destination.ip", &v));
	assert_string_equal(str(o, "event.reason"), "raw_socket");
	assert_string_equal(str(o, "network.transport"), "icmp");
	json_object_put(o);
}

static void test_unknown_numbers_do_not_crash(void **state)
{
	assert_string_equal(sluice_reason_name(9999), "unknown");
	assert_string_equal(sluice_hook_name(0), "unknown");
}

/* A write error loses the line (counted, with the reason), never a torn
 * one; once the destination works again, an events_lost line says how many
 * were lost meanwhile, then lines flow again. */
/* sluice_reason_code() reads back every name sluice_reason_name() writes
 * (suggest reads kernel lines by it), and nothing else. */
static void test_reason_names_read_back(void **state)
{
	for (unsigned r = 0; r < SLUICE_REASON__MAX; r++)
		assert_int_equal(sluice_reason_code(sluice_reason_name(r)), (int)r);
	assert_int_equal(sluice_reason_code("tcp_port_not_allowed"), SLUICE_REASON_TCP_PORT);
	assert_int_equal(sluice_reason_code("unknown"), -1);
	assert_int_equal(sluice_reason_code("TCP_PORT_NOT_ALLOWED"), -1);
	assert_int_equal(sluice_reason_code(""), -1);
	assert_int_equal(sluice_reason_code(NULL), -1);
}

static void test_write_error_counted_then_recovery_line(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 5 };
	struct sluice_envelope env;
	static struct sluice_evlog w;
	int p[2], mfd = memfd_create("ev", MFD_CLOEXEC), fd;
	char *text, *nl, sum[512];
	json_object *o;

	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);                      /* nobody reads: EPIPE */
	fd = p[1];
	sluice_envelope_of(&meta, &env);
	sluice_evlog_init(&w, fd, "pipe", "test", &env);
	for (int i = 0; i < 3; i++) {
		sluice_event_fields(sluice_evlog_begin(&w, SLUICE_DS_KERNEL, -1), &e, &meta);
		assert_int_equal(sluice_evlog_commit(&w), -EPIPE);
	}
	assert_int_equal(sluice_evlog_lost(&w, SLUICE_DS_KERNEL), 3);
	assert_int_equal(sluice_evlog_lost(&w, SLUICE_DS_PROXY), 0);
	sluice_evlog_loss_summary(&w, sum, sizeof(sum));
	assert_non_null(strstr(sum, "3 event lines lost (kernel 3): EPIPE"));
	/* the destination recovers (same fd number, now a file) */
	assert_true(dup2(mfd, fd) == fd);
	w.regular = false;
	sluice_event_fields(sluice_evlog_begin(&w, SLUICE_DS_KERNEL, -1), &e, &meta);
	assert_int_equal(sluice_evlog_commit(&w), 0);
	text = slurp(mfd);
	nl = strchr(text, '\n');
	assert_non_null(nl);
	*nl = 0;
	o = json_tokener_parse(text);
	assert_string_equal(str(o, "event.action"), "events_lost");
	assert_string_equal(str(o, "event.reason"), "write_failed");
	assert_string_equal(str(o, "error.code"), "EPIPE");
	assert_string_equal(str(o, "event.dataset"), "sluice.kernel");
	assert_int_equal(num(o, "sluice.events_lost"), 3);
	json_object_put(o);
	o = json_tokener_parse(nl + 1);
	assert_string_equal(str(o, "event.action"), "egress-denied");
	json_object_put(o);
	free(text);
	close(fd);
	close(mfd);
}

/* A restarted daemon carries on an earlier writer's losses: the totals go on,
 * and an outage it never reported is reported by the first line written. */
static void test_restored_losses_carry_on(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 5 };
	const uint64_t lost[SLUICE_DS__MAX] = { 7, 0, 0, 1 }, outage[SLUICE_DS__MAX] = { 4, 0, 0, 0 };
	const uint64_t none[SLUICE_DS__MAX] = { 0 };
	struct sluice_envelope env;
	static struct sluice_evlog w;
	int fd = memfd_create("ev", MFD_CLOEXEC);
	char *text, *nl;
	json_object *o;

	sluice_envelope_of(&meta, &env);
	sluice_evlog_init(&w, fd, "memfd", "test", &env);
	sluice_evlog_restore_lost(&w, lost, outage, ENOSPC);
	assert_int_equal(sluice_evlog_lost(&w, SLUICE_DS_KERNEL), 7);
	assert_int_equal(sluice_evlog_lost_total(&w), 8);
	sluice_event_fields(sluice_evlog_begin(&w, SLUICE_DS_KERNEL, -1), &e, &meta);
	assert_int_equal(sluice_evlog_commit(&w), 0);
	text = slurp(fd);
	nl = strchr(text, '\n');
	assert_non_null(nl);
	*nl = 0;
	o = json_tokener_parse(text);
	assert_string_equal(str(o, "event.action"), "events_lost");
	assert_string_equal(str(o, "error.code"), "ENOSPC");
	assert_int_equal(num(o, "sluice.events_lost"), 4);
	assert_int_equal(num(o, "sluice.events_lost_total"), 7);
	json_object_put(o);
	o = json_tokener_parse(nl + 1);
	assert_string_equal(str(o, "event.action"), "egress-denied");
	json_object_put(o);
	free(text);
	/* nothing pending: no report line, nothing else changes */
	sluice_evlog_init(&w, fd, "memfd", "test", &env);
	sluice_evlog_restore_lost(&w, lost, none, 0);
	assert_int_equal(w.err, 0);
	close(fd);
}

/* Write `n` resolver lines with sluice_evlog_hold() on, each with a
 * message of `pad` bytes (to size them); returns the commits' results OR'd. */
static int held_lines(struct sluice_evlog *w, char *buf, size_t cap, int n, size_t pad)
{
	char msg[2048];
	int r = 0;

	memset(msg, 'x', pad);
	msg[pad] = 0;
	sluice_evlog_hold(w, buf, cap);
	for (int i = 0; i < n; i++) {
		struct sluice_line *l = sluice_evlog_begin(w, SLUICE_DS_RESOLVER, -1);

		SL_STR(l, "event.action", "dns-query");
		SL_I64(l, "n", i);
		SL_STR(l, "message", msg);
		r |= sluice_evlog_commit(w);
	}
	return r;
}

/* Lines held (the resolver's UDP batch) are written at the flush, not
 * before, whole and in their order, numbered as they were begun; a run
 * bigger than the buffer writes what it holds first.  Into a pipe, each
 * write(2) is at most PIPE_BUF bytes of whole lines. */
static void test_held_lines_written_at_flush_in_order(void **state)
{
	static struct sluice_evlog w;
	static char buf[16384];
	struct sluice_envelope env;
	int fd = memfd_create("ev", MFD_CLOEXEC), p[2];
	char *text, *line, *save = NULL, chunk[8192];
	int i = 0;

	sluice_envelope_of(&meta, &env);
	sluice_evlog_init(&w, fd, "memfd", "test", &env);
	assert_int_equal(held_lines(&w, buf, sizeof(buf), 40, 200), 0);
	/* 40 lines of ~700 bytes are more than 16 KiB: some went at a commit */
	assert_true(lseek(fd, 0, SEEK_END) > 0);
	assert_int_equal(sluice_evlog_flush(&w), 0);
	assert_int_equal(sluice_evlog_flush(&w), 0);   /* nothing held: nothing */
	text = slurp(fd);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		json_object *o = json_tokener_parse(line);

		assert_non_null(o);
		assert_int_equal(num(o, "n"), i);
		assert_int_equal(num(o, "event.sequence"), i);
		json_object_put(o);
	}
	assert_int_equal(i, 40);
	assert_int_equal(w.written[SLUICE_DS_RESOLVER], 40);
	free(text);
	/* held, nothing is written before the flush */
	assert_int_equal(held_lines(&w, buf, sizeof(buf), 3, 10), 0);
	assert_int_equal(w.hold_n, 3);
	assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)strlen(text = slurp(fd)));
	free(text);
	close(fd);

	/* not a regular file (a pipe, the journal's stream): writes of whole
	 * lines, each at most PIPE_BUF; a SOCK_SEQPACKET pair keeps each
	 * write(2) apart for the reader */
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, p), 0);
	sluice_evlog_init(&w, p[1], "socket", "test", &env);
	assert_int_equal(held_lines(&w, buf, sizeof(buf), 12, 1000), 0);
	assert_int_equal(sluice_evlog_flush(&w), 0);
	close(p[1]);
	i = 0;
	for (int writes = 0;; writes++) {
		ssize_t n = read(p[0], chunk, sizeof(chunk));

		if (n <= 0) {
			/* lines of 1-2 KiB: two to a write, not one each */
			assert_true(writes >= 3 && writes <= 7);
			break;
		}
		assert_true(n <= SLUICE_LINE_MAX);
		assert_int_equal(chunk[n - 1], '\n');   /* a write(2) ends on a line's end */
		for (ssize_t k = 0; k < n; k++)
			i += chunk[k] == '\n';
	}
	assert_int_equal(i, 12);
	close(p[0]);
}

/* A full disk while lines are held: the lines that fit are kept, the torn
 * one is taken back (no partial line in the file) and it and the rest are
 * counted lost; the next line written reports the loss first. */
static void test_held_lines_on_a_full_file(void **state)
{
	static struct sluice_evlog w;
	static char buf[65536];
	struct sluice_envelope env;
	struct rlimit old, lim;
	char path[] = "/tmp/sluice-evhold-XXXXXX", *text, *nl;
	int fd = mkstemp(path), n = 0;
	off_t size;
	json_object *o;

	assert_true(fd >= 0);
	unlink(path);
	signal(SIGXFSZ, SIG_IGN);
	sluice_envelope_of(&meta, &env);
	sluice_evlog_init(&w, fd, "file", "test", &env);
	assert_int_equal(held_lines(&w, buf, sizeof(buf), 10, 500), 0);
	/* room for a little over two lines of the ten */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)(w.hold_end[1] + (w.hold_end[2] - w.hold_end[1]) / 2);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(sluice_evlog_flush(&w), -ENOSPC);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	size = lseek(fd, 0, SEEK_END);
	assert_int_equal(size, (off_t)w.hold_end[1]);     /* two whole lines, the torn third taken back */
	assert_int_equal(sluice_evlog_lost(&w, SLUICE_DS_RESOLVER), 8);
	assert_int_equal(w.written[SLUICE_DS_RESOLVER], 2);
	/* recovered: the loss is said first */
	assert_int_equal(held_lines(&w, buf, sizeof(buf), 1, 10), 0);
	assert_int_equal(sluice_evlog_flush(&w), 0);
	text = malloc(1 << 16);
	assert_non_null(text);
	n = (int)pread(fd, text, (1 << 16) - 1, size);
	assert_true(n > 0);
	text[n] = 0;
	nl = strchr(text, '\n');
	assert_non_null(nl);
	*nl = 0;
	o = json_tokener_parse(text);
	assert_string_equal(str(o, "event.action"), "events_lost");
	assert_string_equal(str(o, "event.dataset"), "sluice.resolver");
	assert_int_equal(num(o, "sluice.events_lost"), 8);
	json_object_put(o);
	o = json_tokener_parse(nl + 1);
	assert_string_equal(str(o, "event.action"), "dns-query");
	json_object_put(o);
	free(text);
	close(fd);
}

/* A file a killed writer left with a torn last line: the next writer starts
 * on a new line, and a file that ends in a newline gets nothing added. */
static void test_torn_tail_gets_a_newline_first(void **state)
{
	struct sluice_event e = { .hook = SLUICE_HOOK_CONNECT4, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6, .pid = 5 };
	static const char torn[] = "{\"@timestamp\":\"2026-12-01T00:00:00Z\",\"event.act";
	struct sluice_envelope env;
	static struct sluice_evlog w;
	int fd = memfd_create("ev", MFD_CLOEXEC);
	char *text, *line, *nl = NULL;
	json_object *o;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, torn, sizeof(torn) - 1), (ssize_t)sizeof(torn) - 1);
	sluice_envelope_of(&meta, &env);
	sluice_evlog_init(&w, fd, "memfd", "test", &env);
	sluice_event_fields(sluice_evlog_begin(&w, SLUICE_DS_KERNEL, -1), &e, &meta);
	assert_int_equal(sluice_evlog_commit(&w), 0);
	/* a second writer on the now whole file adds no empty line */
	sluice_evlog_init(&w, fd, "memfd", "test", &env);
	sluice_event_fields(sluice_evlog_begin(&w, SLUICE_DS_KERNEL, -1), &e, &meta);
	assert_int_equal(sluice_evlog_commit(&w), 0);
	text = slurp(fd);
	close(fd);
	assert_memory_equal(text, torn, sizeof(torn) - 1);
	assert_int_equal(text[sizeof(torn) - 1], '\n');
	line = text + sizeof(torn);
	for (int i = 0; i < 2; i++, line = nl + 1) {
		nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = 0;
		o = json_tokener_parse(line);
		assert_non_null(o);
		assert_string_equal(str(o, "event.action"), "egress-denied");
		json_object_put(o);
	}
	assert_int_equal(*line, 0);
	free(text);
}

/* Lines are bounded: a huge value is cut at a UTF-8 boundary, the line says
 * so and stays one strict JSON object that fits SLUICE_LINE_MAX. */
static void test_line_is_bounded(void **state)
{
	char *big = malloc(20001), buf[SLUICE_LINE_MAX];
	struct json_tokener *tok = json_tokener_new();
	struct sluice_line l;
	json_object *o, *v;
	size_t n;

	for (int i = 0; i < 20000; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);      /* e-acute: cutting mid-sequence would be bad UTF-8 */
	big[20000] = 0;
	sluice_line_init(&l, buf, sizeof(buf));
	SL_STR(&l, "a", big);
	SL_STR(&l, "b", big);
	SL_U64(&l, "d", 7);
	n = sluice_line_end(&l);
	assert_true(n < SLUICE_LINE_MAX - 1);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, buf, (int)n + 1);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "sluice.truncated", &v) && json_object_get_boolean(v));
	assert_true(strlen(str(o, "a")) <= SLUICE_LINE_VAL_MAX);
	assert_int_equal(num(o, "d"), 7);
	json_object_put(o);
	json_tokener_free(tok);
	free(big);
}

static void test_small_buffer_fails_cleanly(void **state)
{
	struct sluice_event e = { .hook = 1, .reason = 1, .family = SLUICE_AF_INET, .protocol = 6 };
	char buf[16];

	assert_int_equal(sluice_event_format(&e, &meta, buf, sizeof(buf)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_v4_denial),
		cmocka_unit_test(test_v6_and_audit),
		cmocka_unit_test(test_hostile_comm_is_escaped),
		cmocka_unit_test(test_invalid_utf8_comm_replaced),
		cmocka_unit_test(test_time_extremes),
		cmocka_unit_test(test_canary_is_marked),
		cmocka_unit_test(test_sock_create_has_no_destination),
		cmocka_unit_test(test_unknown_numbers_do_not_crash),
		cmocka_unit_test(test_reason_names_read_back),
		cmocka_unit_test(test_write_error_counted_then_recovery_line),
		cmocka_unit_test(test_restored_losses_carry_on),
		cmocka_unit_test(test_torn_tail_gets_a_newline_first),
		cmocka_unit_test(test_held_lines_written_at_flush_in_order),
		cmocka_unit_test(test_held_lines_on_a_full_file),
		cmocka_unit_test(test_line_is_bounded),
		cmocka_unit_test(test_small_buffer_fails_cleanly),
	};

	return cmocka_run_group_tests_name("events", tests, NULL, NULL);
}
