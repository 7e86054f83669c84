/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * events_follow.c - `sluice events --follow`, the client (events_follow.h):
 * one follow request on the control socket, its answer line, then the
 * daemon's lines copied to stdout whole, one write per batch of lines.
 */
#include "events_follow.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli.h"
#include "daemon.h"
#include "log.h"
#include "ocsf.h"

#define IN_MAX (256u * 1024)    /* bytes read at once (lines are at most 4096) */
#define ANSWER_TIMEOUT_S 120    /* the answer line; the stream itself has no deadline */

static int connect_daemon(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *e = getenv("SLUICE_CONTROL_SOCK");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = ANSWER_TIMEOUT_S };

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", e && *e ? e : SLUICE_CONTROL_SOCK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		log_warn("events: cannot reach the sluice daemon at %s (is `sluice daemon` running?)", sun.sun_path);
		close(fd);
		return -1;
	}
	return fd;
}

static int send_request(int fd, const char *sandbox, bool has_since, uint64_t since)
{
	json_object *req = json_object_new_object();
	const char *s;
	char *line;
	size_t len;
	ssize_t n;

	json_object_object_add(req, "cmd", json_object_new_string("follow"));
	if (sandbox)
		json_object_object_add(req, "sandbox", json_object_new_string(sandbox));
	if (has_since)
		json_object_object_add(req, "since", json_object_new_int64((int64_t)since));
	s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	len = strlen(s);
	line = malloc(len + 1);
	if (!line) {
		json_object_put(req);
		return -1;
	}
	memcpy(line, s, len); /* NOLINT(bugprone-not-null-terminated-result): a line for send(), not a C string */
	line[len] = '\n';
	n = send(fd, line, len + 1, MSG_NOSIGNAL);
	free(line);
	json_object_put(req);
	if (n != (ssize_t)len + 1) {
		log_warn("events: cannot send to the daemon");
		return -1;
	}
	return 0;
}

/* Write n bytes to stdout.  Returns 0, or -1 when stdout is gone. */
static int out(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(1, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Print the whole lines of buf[0..n) (as they are, or as OCSF); returns
 * the bytes used, or -1 when stdout is gone. */
static long print_lines(const char *buf, size_t n, bool ocsf)
{
	static char conv[2 * 4096 + 1024];
	const char *end = buf + n, *p = buf, *last = NULL;

	for (const char *q = buf; q < end; q++)
		if (*q == '\n')
			last = q;
	if (!last)
		return 0;
	if (!ocsf)
		return out(buf, (size_t)(last - buf) + 1) < 0 ? -1 : (long)(last - buf) + 1;
	while (p <= last) {
		const char *nl = memchr(p, '\n', (size_t)(last - p) + 1);
		long m = sluice_ocsf_convert(p, (size_t)(nl - p), conv, sizeof(conv) - 1);

		if (m < 0) {
			log_warnx("events: a line that is not a JSON object (left out)");
		} else {
			conv[m] = '\n';
			if (out(conv, (size_t)m + 1) < 0)
				return -1;
		}
		p = nl + 1;
	}
	return (long)(last - buf) + 1;
}

int sluice_events_follow(const char *sandbox, bool has_since, uint64_t since, bool ocsf)
{
	char *buf = malloc(IN_MAX + 1);
	size_t got = 0;
	bool answered = false;
	int fd, rc = 1;

	if (!buf)
		return 2;
	signal(SIGPIPE, SIG_IGN);  /* stdout gone is EPIPE: a clean end, not a signal */
	fd = connect_daemon();
	if (fd < 0 || send_request(fd, sandbox, has_since, since) < 0) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return 2;
	}
	for (;;) {
		ssize_t n = recv(fd, buf + got, IN_MAX - got, 0);
		long used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && !answered && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			log_warnx("events: the sluice daemon did not answer within %d s", ANSWER_TIMEOUT_S);
			rc = 2;
			break;
		}
		if (n <= 0) {
			if (!answered) {
				log_warnx("events: the daemon closed the connection without an answer");
				rc = 2;
			} else {
				log_warnx("events: the daemon ended the stream (it stopped, or dropped this follower as too "
					  "slow: its log says which)");
			}
			break;
		}
		got += (size_t)n;
		if (!answered) {
			char *nl = memchr(buf, '\n', got);
			json_object *resp, *ok, *err;

			if (!nl) {
				if (got == IN_MAX) {
					log_warnx("events: malformed answer from the daemon");
					rc = 2;
					break;
				}
				continue;
			}
			*nl = 0;
			resp = json_tokener_parse(buf);
			if (!resp || !json_object_object_get_ex(resp, "ok", &ok) || !json_object_get_boolean(ok)) {
				log_warnx("events: %s", resp && json_object_object_get_ex(resp, "error", &err)
							  ? json_object_get_string(err) : "malformed answer from the daemon");
				json_object_put(resp);
				rc = 2;
				break;
			}
			json_object_put(resp);
			answered = true;
			sluice_cli_json_streamed();  /* -j: the lines are the output; no error document after them */
			/* the stream has no deadline: lines come when they come */
			{
				struct timeval tv = { 0 };

				setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			}
			got -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, got);
		}
		used = print_lines(buf, got, ocsf);
		if (used < 0) {
			rc = 0;   /* stdout went away (`| head`): done */
			break;
		}
		got -= (size_t)used;
		memmove(buf, buf + used, got);
		if (got == IN_MAX)
			got = 0;  /* no newline in 256 KiB: not a line of the daemon's */
	}
	close(fd);
	free(buf);
	return rc;
}
