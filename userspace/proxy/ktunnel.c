/* SPDX-License-Identifier: BSD-2-Clause */
#include "ktunnel.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sluice_tunnel.h"

struct ktunnel {
	int fd[2];             /* 0: client, 1: upstream (the caller's) */
	uint64_t cookie[2];
	uint64_t rx_base[2];   /* bytes of fd[i] user space read before the hand-over */
	uint64_t tx_base[2];   /* bytes user space wrote into fd[i] before it */
	int state;             /* 0: dir, 1: +held, 2: +sk (how far the insertion got) */
};

static int held_fd = -1, sk_fd = -1, dir_fd = -1;

int ktunnel_open(const char *pin_dir)
{
	char path[512];
	int *fds[] = { &held_fd, &sk_fd, &dir_fd };
	const char *names[] = { SLUICE_TUNNEL_PIN_HELD, SLUICE_TUNNEL_PIN_SK, SLUICE_TUNNEL_PIN_DIR };

	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, names[i]);
		*fds[i] = bpf_obj_get(path);
		if (*fds[i] < 0) {
			int err = -errno;

			for (int j = 0; j <= i; j++) {
				if (*fds[j] >= 0)
					close(*fds[j]);
				*fds[j] = -1;
			}
			return err;
		}
	}
	return 0;
}

bool ktunnel_available(void)
{
	return sk_fd >= 0;
}

static int tcp_counts(int fd, uint64_t *received, uint64_t *written)
{
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	int outq = 0;

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0)
		return -errno;
	if (tl < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return -ENOTSUP;   /* before 4.1 */
	if (written && ioctl(fd, SIOCOUTQ, &outq) < 0)
		return -errno;
	*received = ti.tcpi_bytes_received;
	if (written)
		*written = ti.tcpi_bytes_acked + (uint64_t)outq;
	return 0;
}

/* The counters before the hand-over, read until stable (an ACK or a
 * segment may arrive between two reads; nothing in user space moves bytes
 * now).  rx_base: received minus what waits in the receive queue. */
static int base_counts(struct ktunnel *k, int i)
{
	for (int tries = 0; tries < 100; tries++) {
		uint64_t r1 = 0, w1 = 0, r2 = 0, w2 = 0;
		int inq = 0, err;

		err = tcp_counts(k->fd[i], &r1, &w1);
		if (!err && ioctl(k->fd[i], SIOCINQ, &inq) < 0)
			err = -errno;
		if (!err)
			err = tcp_counts(k->fd[i], &r2, &w2);
		if (err)
			return err;
		if (r1 == r2 && w1 == w2) {
			k->rx_base[i] = r1 - (uint64_t)inq;
			k->tx_base[i] = w1;
			return 0;
		}
	}
	return -EAGAIN;
}

static void undo(struct ktunnel *k)
{
	for (int i = 0; i < 2; i++) {
		if (k->state >= 1)
			bpf_map_delete_elem(held_fd, &k->cookie[i]);
		bpf_map_delete_elem(dir_fd, &k->cookie[i]);
	}
}

enum ktunnel_start ktunnel_start(int cfd, int ufd, struct ktunnel **out, const char **why)
{
	struct ktunnel *k;
	int one = 1;

	*out = NULL;
	if (sk_fd < 0) {
		*why = "no tunnel maps";
		return KTUNNEL_FALLBACK;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		*why = "out of memory";
		return KTUNNEL_FALLBACK;
	}
	k->fd[0] = cfd;
	k->fd[1] = ufd;
	for (int i = 0; i < 2; i++) {
		socklen_t l = sizeof(k->cookie[i]);

		if (getsockopt(k->fd[i], SOL_SOCKET, SO_COOKIE, &k->cookie[i], &l) < 0) {
			*why = "SO_COOKIE";
			free(k);
			return KTUNNEL_FALLBACK;
		}
	}
	for (int i = 0; i < 2; i++) {
		struct sluice_tunnel_dir d = { .peer = k->cookie[1 - i] };

		if (bpf_map_update_elem(dir_fd, &k->cookie[i], &d, BPF_NOEXIST) < 0) {
			*why = "tunnel map full";
			goto fallback;
		}
	}
	/* targets first: a socket holds no program here, its bytes wait */
	k->state = 1;
	for (int i = 0; i < 2; i++) {
		uint64_t fd = (uint64_t)k->fd[i];

		if (bpf_map_update_elem(held_fd, &k->cookie[i], &fd, BPF_NOEXIST) < 0) {
			*why = "cannot insert into sluice_tunnel_held";
			goto fallback;
		}
	}
	for (int i = 0; i < 2; i++)
		if (base_counts(k, i) < 0) {
			*why = "tcp_info";
			goto fallback;
		}
	k->state = 2;
	for (int i = 0; i < 2; i++) {
		uint64_t fd = (uint64_t)k->fd[i];

		if (bpf_map_update_elem(sk_fd, &k->cookie[i], &fd, BPF_NOEXIST) < 0) {
			*why = "cannot insert into sluice_tunnel_sk";
			if (i == 0)
				goto fallback;   /* no byte was redirected yet */
			free(k);
			return KTUNNEL_BROKEN;
		}
	}
	/* Bytes that were queued before the verdict program came: setting
	 * SO_RCVLOWAT calls sk_data_ready, which runs the verdict on them
	 * (6.x; without it they would wait for the next segment). */
	for (int i = 0; i < 2; i++)
		setsockopt(k->fd[i], SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
	*out = k;
	return KTUNNEL_OK;
fallback:
	undo(k);
	free(k);
	return KTUNNEL_FALLBACK;
}

int ktunnel_dir_counts(const struct ktunnel *k, int i, bool fin, uint64_t *must, uint64_t *moved)
{
	uint64_t rx = 0, unused = 0, tx = 0;
	int err = tcp_counts(k->fd[i], &rx, NULL);

	if (!err)
		err = tcp_counts(k->fd[1 - i], &unused, &tx);
	if (err)
		return err;
	/* bytes_received counts a FIN as one (it advances rcv_nxt) */
	*must = rx - k->rx_base[i] - (fin && rx > k->rx_base[i] ? 1 : 0);
	*moved = tx - k->tx_base[1 - i];
	return 0;
}

uint64_t ktunnel_activity(const struct ktunnel *k)
{
	uint64_t sum = 0;

	for (int i = 0; i < 2; i++) {
		uint64_t rx = 0, tx = 0;

		if (tcp_counts(k->fd[i], &rx, &tx) == 0)
			sum += rx + tx;
	}
	return sum;
}

void ktunnel_free(struct ktunnel *k)
{
	if (!k)
		return;
	for (int i = 0; i < 2; i++)
		bpf_map_delete_elem(sk_fd, &k->cookie[i]);
	undo(k);
	free(k);
}
