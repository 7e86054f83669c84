/* SPDX-License-Identifier: BSD-2-Clause */
/* daemon_dnsstats.c - a sandbox's dropped-query counts, daemon side (daemon_dnsstats.h). */
#include "daemon_dnsstats.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <json-c/json.h>

#include "dns_stats.h"
#include "log.h"

int daemon_dnsstats_open(struct daemon_dnsstats *d, const char *path)
{
	int err;

	if (d->st)
		return 0;
	/* CLOEXEC: sluice_child_start() clears it for the resolver only */
	d->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (d->fd < 0) {
		err = -errno;
		log_warn("cannot open %s (dropped DNS queries not in status)", path);
		return err;
	}
	d->st = sluice_dns_stats_map(d->fd);
	if (!d->st) {
		err = -errno;
		log_warn("cannot map %s (dropped DNS queries not in status)", path);
		close(d->fd);
		d->fd = -1;
		return err;
	}
	return 0;
}

void daemon_dnsstats_close(struct daemon_dnsstats *d)
{
	if (!d->st)
		return;   /* (fd is valid only while mapped) */
	sluice_dns_stats_unmap(d->st);
	d->st = NULL;
	close(d->fd);
	d->fd = -1;
}

struct json_object *daemon_dnsstats_json(const struct daemon_dnsstats *d)
{
	json_object *o;
	uint64_t total = 0;

	if (!d->st)
		return NULL;
	o = json_object_new_object();
	for (unsigned i = 0; i < SLUICE_DNS_DROP_N; i++) {
		uint64_t n = sluice_dns_stats_get(d->st, i);

		json_object_object_add(o, sluice_dns_drop_names[i], json_object_new_uint64(n));
		total += n;
	}
	json_object_object_add(o, "total", json_object_new_uint64(total));
	return o;
}
