/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_netns.c - the network namespaces `sluice daemon` keeps for its
 * sandboxes: bind mounts under <state>/netns/, handed to systemd's file
 * descriptor store so they outlive the unit's mount namespace, found again
 * after a restart (daemon_internal.h).
 */
#include "daemon_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "inspect.h"
#include "log.h"

/*
 * The netns bind mounts live in the daemon's mount namespace: under the
 * hardened unit (ProtectSystem= and friends) that namespace is the unit's
 * own and dies with the daemon, while the sandbox outlives it.  So each kept
 * netns also goes to systemd's file descriptor store (FileDescriptorStoreMax=,
 * sd_pid_notify_with_fds(3)), which hands it back to the restarted daemon
 * (sd_listen_fds_with_names(3)).  Outside systemd these are no-ops.
 */
#define NETNS_FDNAME "netns-"
#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

/* Bind-mount the netns at `src` to a file of ours, so it outlives the
 * process it was found through and a restarted daemon can find it. */
int keep_netns(const char *src, const char *dst)
{
	int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	close(fd);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		int err = -errno;

		unlink(dst);
		return err;
	}
	return 0;
}

void fdstore_netns(const char *name, const char *path)
{
	char msg[128];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=" NETNS_FDNAME "%s", name);
	if (sd_pid_notify_with_fds(0, 0, msg, &fd, 1) < 0)
		log_warnx("sandbox %s: cannot hand its netns to systemd's fd store", name);
	close(fd);
}

void fdstore_forget(const char *name)
{
	sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=" NETNS_FDNAME "%s", name);
}

/* Bind each netns the fd store handed back onto its file under the state
 * dir, where the previous daemon's mount namespace had it.  Returns the
 * number restored. */
int fdstore_restore(void)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names), restored = 0;

	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *nm = names ? names[i] : NULL;
		char path[PATH_MAX], src[64], json[PATH_MAX];
		struct statfs sfs;

		if (nm && strncmp(nm, NETNS_FDNAME, strlen(NETNS_FDNAME)) == 0) {
			const char *name = nm + strlen(NETNS_FDNAME);

			size_t nl = strlen(name);
			/* NAME.upstream: the sandbox NAME's upstream netns (--upstream-netns) */
			int base = nl > 9 && strcmp(name + nl - 9, ".upstream") == 0 ? (int)(nl - 9) : (int)nl;

			snprintf(path, sizeof(path), "%s/netns/%s", D.state_dir, name);
			snprintf(json, sizeof(json), "%s/sandboxes/%.*s.json", D.state_dir, base, name);
			if (access(json, F_OK) < 0) {
				fdstore_forget(name); /* detached meanwhile */
			} else if (statfs(path, &sfs) == 0 && sfs.f_type == NSFS_MAGIC) {
				restored++; /* still mounted (same namespace) */
			} else {
				int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

				if (f >= 0)
					close(f);
				snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
				if (f < 0 || mount(src, path, NULL, MS_BIND, NULL) < 0)
					log_warn("sandbox %s: cannot bind its stored netns onto %s", name, path);
				else
					restored++;
			}
		}
		close(fd);
		if (names)
			free(names[i]);
	}
	free(names);
	return restored;
}

/*
 * The kept netns of s is a bind mount in the previous daemon's mount
 * namespace; where that died with it and no fd store handed it back (a
 * container's daemon: the Kubernetes DaemonSet), the file is left empty.
 * Find the namespace again through a process of the sandbox's cgroup and
 * keep it anew.  Nothing found: the file stays, and the adoption fails as
 * it would have.
 */
void netns_recover(struct dsandbox *s)
{
	struct statfs sfs;
	char src[64];
	pid_t pid;

	if (statfs(s->netns, &sfs) == 0 && sfs.f_type == NSFS_MAGIC)
		return;
	pid = inspect_cgroup_first_pid(s->cgroup);
	if (pid <= 0)
		return;
	snprintf(src, sizeof(src), "/proc/%d/ns/net", (int)pid);
	if (mount(src, s->netns, NULL, MS_BIND, NULL) < 0) {
		log_warn("sandbox %s: cannot keep the netns of pid %d of its cgroup", s->name, (int)pid);
		return;
	}
	fdstore_netns(s->name, s->netns);
	log_info("sandbox %s: its kept netns was gone with the previous daemon; found again through pid %d of %s",
		 s->name, (int)pid, s->cgroup);
}
