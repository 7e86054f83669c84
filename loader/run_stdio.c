/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_stdio.c - the sockets among CMD's descriptors 0-2 (run_stdio.h).
 */
#include "run_stdio.h"

#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

int sluice_stdio_sockets(bool have_lsm, char *found, size_t foundlen, char *err, size_t errlen)
{
	static const char *const fdname[] = { "stdin", "stdout", "stderr" };
	size_t off = 0;

	if (foundlen)
		found[0] = 0;
	for (int fd = 0; fd <= 2; fd++) {
		struct stat sb;
		int dom = -1, type = -1;
		socklen_t l = sizeof(dom);
		const char *name;
		char num[16];

		if (fstat(fd, &sb) < 0 || !S_ISSOCK(sb.st_mode))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) < 0)
			dom = -1;
		l = sizeof(type);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0)
			type = -1;
		name = dom == AF_UNIX ? "unix" : dom == AF_INET ? "inet" : dom == AF_INET6 ? "inet6" :
		       dom >= 0 ? sluice_family_name((unsigned)dom) : NULL;
		if (!name) {
			snprintf(num, sizeof(num), "family%d", dom);
			name = num;
		}
		if (off < foundlen) {
			int n = snprintf(found + off, foundlen - off, "%s%d:%s", off ? "," : "", fd, name);

			if (n > 0)
				off += (size_t)n;
		}
		if (dom != AF_UNIX && !have_lsm) {
			snprintf(err, errlen, "%s (fd %d) is a%s %s %s socket made outside the sandbox: without the BPF LSM "
				 "its use would not be judged (give CMD a pipe or a file there, or run where the BPF LSM "
				 "loads)", fdname[fd], fd, name[0] == 'i' ? "n" : "", name,
				 type == SOCK_DGRAM ? "datagram" : type == SOCK_STREAM ? "stream" : "other");
			return -1;
		}
	}
	return 0;
}
