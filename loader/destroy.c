/* SPDX-License-Identifier: BSD-2-Clause */
#include "destroy.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sluice_destroy.skel.h"

/* Run one iterator to its end (reading it is what visits the sockets). */
static int drain_iter(struct bpf_link *link)
{
	char buf[256];
	int fd = bpf_iter_create(bpf_link__fd(link));

	if (fd < 0)
		return -errno;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

int sluice_destroy_sockets(const char *netns_path, const uint64_t *inodes, size_t n, char *msg, size_t msglen)
{
	struct sluice_destroy_bpf *s;
	struct bpf_link *tcp = NULL, *udp = NULL;
	int self_ns = -1, ns = -1, ret = 0;
	uint8_t one = 1;

	if (n == 0)
		return 0;
	s = sluice_destroy_bpf__open_and_load();
	if (!s) {
		snprintf(msg, msglen, "cannot load the socket-destroy iterators (kernel 6.5+ with bpf_sock_destroy): %s",
			 strerror(errno));
		return -EOPNOTSUPP;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_update_elem(bpf_map__fd(s->maps.sluice_doomed), &inodes[i], &one, BPF_ANY);
	tcp = bpf_program__attach_iter(s->progs.sluice_destroy_tcp, NULL);
	udp = bpf_program__attach_iter(s->progs.sluice_destroy_udp, NULL);
	if (!tcp || !udp) {
		ret = -errno;
		snprintf(msg, msglen, "cannot attach the socket iterators: %s", strerror(errno));
		goto out;
	}
	/* an iterator walks the sockets of the netns of the task that creates it */
	if (netns_path) {
		self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		ns = open(netns_path, O_RDONLY | O_CLOEXEC);
		if (self_ns < 0 || ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
			ret = -errno;
			snprintf(msg, msglen, "cannot enter network namespace %s: %s", netns_path, strerror(errno));
			goto out;
		}
	}
	if ((ret = drain_iter(tcp)) < 0 || (ret = drain_iter(udp)) < 0)
		snprintf(msg, msglen, "socket iterator: %s", strerror(-ret));
	else
		ret = (int)s->bss->sluice_destroyed;
out:
	if (self_ns >= 0) {
		if (setns(self_ns, CLONE_NEWNET) < 0 && ret >= 0) {
			ret = -errno;
			snprintf(msg, msglen, "cannot return to own network namespace: %s", strerror(errno));
		}
		close(self_ns);
	}
	if (ns >= 0)
		close(ns);
	bpf_link__destroy(tcp);
	bpf_link__destroy(udp);
	sluice_destroy_bpf__destroy(s);
	return ret;
}
