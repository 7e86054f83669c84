/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * accept_backoff.h - a libevent 2.1 listener out of descriptors, shared by
 * sluice-proxy and sluice-resolver.  At EMFILE or ENFILE accept(2) fails
 * while the client stays queued, so the listener stays readable and a loop
 * that only retries spins at 100 % CPU.  Instead: give up a reserved
 * descriptor, take one pending client with it and hand it to the owner to
 * refuse (the client learns at once, with the owner's line), take the
 * reserve back, and pause accepting, 50 ms doubling to 1 s, until a client
 * is accepted again.  ENOBUFS and ENOMEM pause the same way (warned).
 */
#ifndef SLUICE_ACCEPT_BACKOFF_H
#define SLUICE_ACCEPT_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct event;
struct event_base;
struct evconnlistener;

struct sluice_accept_backoff {
	int reserve_fd;                 /* /dev/null, given up at EMFILE to take one client; -1: none */
	unsigned pause_ms;              /* the current pause (0: none) */
	struct event *resume;           /* ends the pause */
	/* on: resume (true) or pause (false) every listener of the owner (a
	 * draining owner that no longer accepts leaves them paused) */
	void (*listen)(void *arg, bool on);
	/* refuse the client on fd (non-blocking, owned by the callee from now
	 * on), from sa (len bytes), with the owner's line and count */
	void (*refuse)(void *arg, int fd, const struct sockaddr *sa, socklen_t len);
	void *arg;
	uint64_t pauses;                /* times accepting was paused */
};

/* Set b up on base with the owner's callbacks.  Returns 0, or -1 with errno
 * set (the reserve could not be opened, or ENOMEM). */
int sluice_accept_backoff_init(struct sluice_accept_backoff *b, struct event_base *base,
			       void (*listen)(void *arg, bool on),
			       void (*refuse)(void *arg, int fd, const struct sockaddr *sa, socklen_t len),
			       void *arg);

/* A client was accepted: the next shortage starts at the shortest pause. */
void sluice_accept_backoff_ok(struct sluice_accept_backoff *b);

/* From the listener l's error callback, with err its EVUTIL_SOCKET_ERROR().
 * Returns true when err is a shortage (handled: a client refused at EMFILE
 * or ENFILE, accepting paused), false for any other error (the caller
 * reports it). */
bool sluice_accept_backoff_error(struct sluice_accept_backoff *b, struct evconnlistener *l, int err);

/* Release the reserve and the timer (a pending resume is cancelled). */
void sluice_accept_backoff_free(struct sluice_accept_backoff *b);

#endif
