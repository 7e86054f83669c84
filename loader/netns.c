/* SPDX-License-Identifier: BSD-2-Clause */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bring `lo` up in the current netns (SIOCSIFFLAGS, netdevice(7)). */
static int loopback_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (s < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		err = -errno;
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			err = -errno;
	}
	close(s);
	return err;
}

int sluice_netns_isolated(char *msg, size_t msglen)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), fresh = -1, err;

	if (self < 0) {
		err = -errno;
		snprintf(msg, msglen, "cannot open /proc/self/ns/net: %s", strerror(errno));
		return err;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		err = -errno;
		snprintf(msg, msglen, "cannot make a network namespace (unshare CLONE_NEWNET): %s", strerror(errno));
		close(self);
		return err;
	}
	err = loopback_up();
	if (err)
		snprintf(msg, msglen, "cannot bring up loopback in the new network namespace: %s", strerror(-err));
	else if ((fresh = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
		err = -errno;
		snprintf(msg, msglen, "cannot open the new network namespace: %s", strerror(errno));
	}
	/* back where we were, whatever happened: the loader never stays inside */
	if (setns(self, CLONE_NEWNET) < 0) {
		int e = -errno;

		snprintf(msg, msglen, "cannot return to the original network namespace: %s", strerror(errno));
		close(self);
		if (fresh >= 0)
			close(fresh);
		return e;
	}
	close(self);
	if (err) {
		if (fresh >= 0)
			close(fresh);
		return err;
	}
	return fresh;
}
