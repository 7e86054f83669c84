/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * accept_backoff.c - refuse through a reserved descriptor and pause, instead
 * of spinning, when a listener runs out of descriptors (accept_backoff.h).
 */
#include "accept_backoff.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "log.h"

#define PAUSE_FIRST_MS 50
#define PAUSE_MAX_MS   1000

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct sluice_accept_backoff *b = arg;

	b->listen(b->arg, true);
}

int sluice_accept_backoff_init(struct sluice_accept_backoff *b, struct event_base *base,
			       void (*listen)(void *arg, bool on),
			       void (*refuse)(void *arg, int fd, const struct sockaddr *sa, socklen_t len),
			       void *arg)
{
	memset(b, 0, sizeof(*b));
	b->listen = listen;
	b->refuse = refuse;
	b->arg = arg;
	b->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (b->reserve_fd < 0)
		return -1;
	b->resume = evtimer_new(base, on_resume, b);
	if (!b->resume) {
		close(b->reserve_fd);
		b->reserve_fd = -1;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void sluice_accept_backoff_ok(struct sluice_accept_backoff *b)
{
	b->pause_ms = 0;
}

/* Out of descriptors: take one pending client with the reserved descriptor
 * and let the owner refuse it (it learns at once, instead of waiting in the
 * queue), then get the reserve back. */
static void refuse_one(struct sluice_accept_backoff *b, struct evconnlistener *l)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	if (b->reserve_fd >= 0) {
		close(b->reserve_fd);
		b->reserve_fd = -1;
	}
	fd = accept4(evconnlistener_get_fd(l), (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		b->refuse(b->arg, fd, (struct sockaddr *)&ss, sl);
	b->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

bool sluice_accept_backoff_error(struct sluice_accept_backoff *b, struct evconnlistener *l, int err)
{
	struct timeval tv;

	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
		return false;
	if (err == EMFILE || err == ENFILE)
		refuse_one(b, l);
	else
		log_warnx("accept: %s", evutil_socket_error_to_string(err));
	b->pause_ms = b->pause_ms ? b->pause_ms * 2 : PAUSE_FIRST_MS;
	if (b->pause_ms > PAUSE_MAX_MS)
		b->pause_ms = PAUSE_MAX_MS;
	tv.tv_sec = b->pause_ms / 1000;
	tv.tv_usec = (suseconds_t)(b->pause_ms % 1000) * 1000;
	b->pauses++;
	b->listen(b->arg, false);
	if (evtimer_add(b->resume, &tv) < 0)
		b->listen(b->arg, true);   /* no timer: better a busy loop than a deaf one */
	return true;
}

void sluice_accept_backoff_free(struct sluice_accept_backoff *b)
{
	if (b->resume)
		event_free(b->resume);
	b->resume = NULL;
	if (b->reserve_fd >= 0)
		close(b->reserve_fd);
	b->reserve_fd = -1;
}
