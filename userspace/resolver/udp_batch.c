/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp_batch.c - a batch of UDP queries: recvmmsg(2), decide each (the
 * caller's), one write of the lines, sendmmsg(2) of the answers
 * (udp_batch.h).
 *
 * Why this order: the query log promises that a query's line is out before
 * its answer (docs/events.md); writing the batch's lines first, then its
 * answers, keeps that with one write(2) for up to RSV_UDP_BATCH lines
 * instead of one each, and one sendmmsg(2) instead of a sendto(2) each.
 * Every datagram is read whole (a slot holds the largest UDP payload), so a
 * query is decided on the same bytes as when it was read alone.
 */
#include "udp_batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "evlog.h"
#include "log.h"

#define SLOT      65536              /* > the largest UDP payload (65,507) */
#define LINES_BUF (64 * 1024)        /* the batch's query lines, held */

struct answer {
	int fd;
	struct sockaddr_storage to;
	socklen_t tolen;
	uint8_t *resp;
	size_t len;
};

struct rsv_udp_batch {
	uint8_t *slots;                          /* RSV_UDP_BATCH * SLOT */
	struct mmsghdr in[RSV_UDP_BATCH];
	struct iovec in_iov[RSV_UDP_BATCH];
	struct sockaddr_storage from[RSV_UDP_BATCH];
	struct answer out[RSV_UDP_BATCH];
	size_t n_out;
	bool serving;
	struct sluice_evlog *log;                /* held while serving */
	char lines[LINES_BUF];
};

struct rsv_udp_batch *rsv_udp_batch_new(void)
{
	struct rsv_udp_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	/* malloc, not calloc: an mmap'd block whose pages are touched only by
	 * the datagrams written into them */
	b->slots = malloc((size_t)RSV_UDP_BATCH * SLOT);
	if (!b->slots) {
		free(b);
		return NULL;
	}
	return b;
}

void rsv_udp_batch_free(struct rsv_udp_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_out; i++)
		free(b->out[i].resp);
	free(b->slots);
	free(b);
}

/* Send out[from, to) (all on one fd) with as few sendmmsg(2) as it takes;
 * an answer the kernel refuses is skipped (as a failed sendto(2) was). */
static void send_run(struct rsv_udp_batch *b, size_t from, size_t to)
{
	struct mmsghdr mm[RSV_UDP_BATCH];
	struct iovec iov[RSV_UDP_BATCH];
	size_t n = to - from, i = 0;

	memset(mm, 0, n * sizeof(mm[0]));
	for (size_t k = 0; k < n; k++) {
		struct answer *a = &b->out[from + k];

		iov[k].iov_base = a->resp;
		iov[k].iov_len = a->len;
		mm[k].msg_hdr.msg_name = &a->to;
		mm[k].msg_hdr.msg_namelen = a->tolen;
		mm[k].msg_hdr.msg_iov = &iov[k];
		mm[k].msg_hdr.msg_iovlen = 1;
	}
	while (i < n) {
		int r = sendmmsg(b->out[from].fd, mm + i, (unsigned)(n - i), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* the first of the rest failed: skip it, send the others */
			log_debug("sendmmsg client: %s", r < 0 ? strerror(errno) : "nothing sent");
			i++;
			continue;
		}
		i += (size_t)r;
	}
}

/* Write the lines held so far, then send the answers taken so far. */
static void batch_out(struct rsv_udp_batch *b)
{
	size_t i = 0;

	/* a line that cannot be written is counted lost by the writer; the
	 * answer goes all the same (as when each line was written alone) */
	if (b->log)
		(void)sluice_evlog_flush(b->log);
	while (i < b->n_out) {
		size_t j = i + 1;

		while (j < b->n_out && b->out[j].fd == b->out[i].fd)
			j++;
		send_run(b, i, j);
		i = j;
	}
	for (i = 0; i < b->n_out; i++)
		free(b->out[i].resp);
	b->n_out = 0;
}

bool rsv_udp_batch_answer(struct rsv_udp_batch *b, int fd, const struct sockaddr_storage *to,
			  socklen_t tolen, uint8_t **resp, size_t len)
{
	struct answer *a;

	if (!b || !b->serving || tolen > sizeof(a->to))
		return false;
	if (b->n_out == RSV_UDP_BATCH) {
		/* more answers than datagrams read (none is expected): out with
		 * what is held, lines first, and go on holding */
		batch_out(b);
		if (b->log)
			sluice_evlog_hold(b->log, b->lines, sizeof(b->lines));
	}
	a = &b->out[b->n_out++];
	a->fd = fd;
	memcpy(&a->to, to, tolen);
	a->tolen = tolen;
	a->resp = *resp;
	a->len = len;
	*resp = NULL;
	return true;
}

/* recvmmsg(2) into the slots: the count read, 0 when none or on error. */
static size_t batch_read(struct rsv_udp_batch *b, int fd)
{
	for (size_t i = 0; i < RSV_UDP_BATCH; i++) {
		b->in_iov[i].iov_base = b->slots + i * SLOT;
		b->in_iov[i].iov_len = SLOT;
		memset(&b->in[i].msg_hdr, 0, sizeof(b->in[i].msg_hdr));
		b->in[i].msg_hdr.msg_name = &b->from[i];
		b->in[i].msg_hdr.msg_namelen = sizeof(b->from[i]);
		b->in[i].msg_hdr.msg_iov = &b->in_iov[i];
		b->in[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		int n = recvmmsg(fd, b->in, RSV_UDP_BATCH, MSG_DONTWAIT, NULL);

		if (n >= 0)
			return (size_t)n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warn("recvmmsg");
		return 0;
	}
}

size_t rsv_udp_batch_serve(struct rsv_udp_batch *b, int fd, struct sluice_evlog *log,
			   rsv_udp_query_fn query, void *arg)
{
	size_t n = batch_read(b, fd);

	if (!n)
		return 0;
	b->log = log;
	if (log)
		sluice_evlog_hold(log, b->lines, sizeof(b->lines));
	b->serving = true;
	for (size_t i = 0; i < n; i++)
		query(arg, b->in_iov[i].iov_base, b->in[i].msg_len, &b->from[i],
		      b->in[i].msg_hdr.msg_namelen, fd);
	b->serving = false;
	batch_out(b);
	b->log = NULL;
	return n;
}
