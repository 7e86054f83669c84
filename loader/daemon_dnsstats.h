/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_dnsstats.h - the daemon's side of a sandbox's dropped-query counts
 * (userspace/lib/dns_stats.h): the file sandboxes/NAME.dns-stats, kept open
 * and mapped while the sandbox is, handed to each of its resolvers
 * (--stats-fd), read for `status` (docs/daemon.md).
 */
#ifndef SLUICE_DAEMON_DNSSTATS_H
#define SLUICE_DAEMON_DNSSTATS_H

struct json_object;
struct sluice_dns_stats;

struct daemon_dnsstats {
	int fd;                       /* valid while st is set */
	struct sluice_dns_stats *st;  /* NULL: not mapped */
};

/* Open (creating it, or continuing the counts a previous daemon left) and
 * map `path`, once; later calls do nothing.  0, or -errno (logged: the
 * counts are then missing from status, nothing else changes). */
int daemon_dnsstats_open(struct daemon_dnsstats *d, const char *path);

/* Unmap and close (the file stays: a restarted daemon continues it). */
void daemon_dnsstats_close(struct daemon_dnsstats *d);

/* {"rate_limited": N, "socket_overflow": N, "shutdown": N, "total": N},
 * or NULL (JSON null) when the counts are not open. */
struct json_object *daemon_dnsstats_json(const struct daemon_dnsstats *d);

#endif
