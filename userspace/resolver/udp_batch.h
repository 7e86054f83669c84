/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp_batch.h - sluice-resolver's UDP listeners served a batch at a time:
 * the datagrams queued on a socket read with one recvmmsg(2), each query
 * decided on its own (server.c, exactly as a query read alone), the batch's
 * query lines written with one write(2) (evlog.h, sluice_evlog_hold), then
 * the answers sent with one sendmmsg(2).  A query's line is out before its
 * answer is sent.
 */
#ifndef SLUICE_RESOLVER_UDP_BATCH_H
#define SLUICE_RESOLVER_UDP_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct sluice_evlog;

#define RSV_UDP_BATCH 32          /* datagrams read per recvmmsg(2) */

struct rsv_udp_batch;

/* One query read from UDP socket `fd`: `msg` (`len` bytes, valid during the
 * call) from `from`.  The callee decides it, and may answer it (through
 * rsv_udp_batch_answer) and log it (through the evlog being held). */
typedef void (*rsv_udp_query_fn)(void *arg, const uint8_t *msg, size_t len,
				 const struct sockaddr_storage *from, socklen_t fromlen, int fd);

/* The buffers of one batch (2 MiB of address space for whole datagrams,
 * of which only what datagrams fill is touched).  NULL on ENOMEM. */
struct rsv_udp_batch *rsv_udp_batch_new(void);
void rsv_udp_batch_free(struct rsv_udp_batch *b);

/*
 * Read at most RSV_UDP_BATCH datagrams queued on `fd` (non-blocking), call
 * query(arg, ...) for each in the order read, with `log`'s lines held
 * meanwhile; then write the held lines (sluice_evlog_flush: a lost line is
 * counted there) and send every answer given.  Returns the datagrams read
 * (0: none queued, or an error other than EINTR, said with log_warn).
 */
size_t rsv_udp_batch_serve(struct rsv_udp_batch *b, int fd, struct sluice_evlog *log,
			   rsv_udp_query_fn query, void *arg);

/*
 * Within rsv_udp_batch_serve(): take the answer *resp (`len` bytes, malloc'd;
 * owned by the batch from now on, *resp set to NULL) to send to `to` on
 * `fd` once the batch's lines are written.  Returns false outside a batch
 * (b NULL, or not serving): the caller sends it itself.
 */
bool rsv_udp_batch_answer(struct rsv_udp_batch *b, int fd, const struct sockaddr_storage *to,
			  socklen_t tolen, uint8_t **resp, size_t len);

#endif /* SLUICE_RESOLVER_UDP_BATCH_H */
