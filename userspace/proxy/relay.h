/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * relay.h - moving the bytes of a decided tunnel (CONNECT, transparent TLS)
 * between the client and the upstream.  Each direction goes socket -> pipe
 * -> socket with splice(2), so payload bytes are never copied through user
 * space; a direction falls back to a read/write copy through a 16 KiB
 * buffer if it cannot get a pipe.  A direction borrows a pipe from a small
 * pool when bytes arrive and gives it back when it goes idle, so an idle
 * tunnel holds its two sockets and no buffer, pipe or extra descriptor.  A FIN in one
 * direction is passed on as shutdown(SHUT_WR); the relay ends when both
 * directions have ended, on an error, or after the idle timeout
 * (relay_idle_timeout).
 */
#ifndef SLUICE_PROXY_RELAY_H
#define SLUICE_PROXY_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;
struct timeval;
struct proxy_relay;

/*
 * Called once when the relay ends.  `err` is NULL for a clean end (both
 * sides closed), else a stable reason ("idle_timeout", "client_reset",
 * "upstream_reset", "relay_error").  `up` / `down` count the bytes moved
 * client -> upstream (including the initial bytes) and upstream -> client.
 * The callback may free the relay (relay_free) and close the sockets.
 */
typedef void (*relay_done_cb)(void *arg, const char *err, uint64_t up, uint64_t down);

/* The bytes a relay's record takes at most, for a caller that keeps it in
 * memory of its own (relay_start's `mem`; relay.c asserts it). */
#define RELAY_RECORD_MAX 280

/*
 * Start relaying between connected non-blocking sockets `cfd` and `ufd`
 * (in the kernel after relay_kernel_enable() if `kernel_ok`: a passthrough
 * tunnel; else with splice).
 * `initial` (malloc'd, may be NULL) holds bytes already read from the client
 * (a peeked ClientHello); the relay sends them upstream first and frees
 * them.  `ev` are two events from event_new() on `base`, not pending (any
 * fd and callback; NULL: the relay makes one): the relay assigns them anew
 * as its read events (the caller's events serve on instead of being freed
 * and made again, so an idle tunnel holds no event the connection's setup
 * did not already hold).  The relay ends after relay_idle_timeout()'s time
 * without a byte moved.  `mem`: RELAY_RECORD_MAX bytes, aligned as a
 * uint64_t, in which the relay keeps its record (in the caller's own
 * record, which it frees after relay_free), or NULL for one of its own.
 * The sockets stay owned by the caller; `initial` and `ev` are the relay's
 * in every case.  Returns NULL on allocation failure, or when a kernel
 * hand-over failed half-way (then close the sockets).
 */
struct proxy_relay *relay_start(void *mem, struct event_base *base, int cfd, int ufd,
				char *initial, size_t initial_len, struct event *ev[2],
				bool kernel_ok, relay_done_cb cb, void *arg);

/*
 * Every relay of the process (one event loop, `base`) ends when no byte
 * moved for `ms` milliseconds (0: never); they share one timer.  Call
 * once, before the first relay_start (none: no idle timeout).  0, or -1
 * when the timer cannot be made.
 */
int relay_idle_timeout(struct event_base *base, unsigned ms);

/* Free that timer (before its event base; after the last relay_free). */
void relay_idle_free(void);

/* Stop and free a relay (its events, pipes and buffers; not the sockets,
 * nor the memory its caller gave it). */
void relay_free(struct proxy_relay *r);

/* The bytes moved so far: client -> upstream (*up, the initial bytes
 * included) and upstream -> client (*down). */
void relay_counts(const struct proxy_relay *r, uint64_t *up, uint64_t *down);

/* Did this relay use splice for both directions so far?  (For tests/logs.) */
int relay_spliced(const struct proxy_relay *r);

/* How this relay moves the bytes: "kernel" (ktunnel.h), "splice" or "copy"
 * (the access log's sluice.tunnel_path). */
const char *relay_mode(const struct proxy_relay *r);

/*
 * Hand every later tunnel whose initial bytes fit at once to the kernel
 * (ktunnel.h), with the maps pinned in `pin_dir` (NULL: none).  When they
 * cannot be opened, says so once and tunnels use splice.
 */
void relay_kernel_enable(const char *pin_dir);

#endif
