/* SPDX-License-Identifier: BSD-2-Clause */
/* pin_layout.c - a pinned sandbox's map layout against this build's (pin_layout.h). */
#include "pin_layout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sandbox.h"
#include "sluice.h"

void sluice_pin_layout_ours(struct sluice_pin_layout *out)
{
	memset(out, 0, sizeof(*out));
	out->magic = SLUICE_LAYOUT_MAGIC;
	out->version = SLUICE_LAYOUT_VERSION;
	out->event_size = sizeof(struct sluice_event);
	out->orig_size = sizeof(struct sluice_orig);
	out->flow_key_size = sizeof(struct sluice_flow_key);
	out->config_size = sizeof(struct sluice_bpf_config);
}

int sluice_pin_layout_write(const char *pin_dir, char *msg, size_t msglen)
{
	struct sluice_pin_layout l;
	char path[512];
	uint32_t zero = 0;
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, SLUICE_LAYOUT_PIN, sizeof(zero), sizeof(l), 1, NULL);

	if (fd < 0) {
		snprintf(msg, msglen, "cannot make the layout stamp: %s", strerror(errno));
		return -1;
	}
	sluice_pin_layout_ours(&l);
	snprintf(path, sizeof(path), "%s/%s", pin_dir, SLUICE_LAYOUT_PIN);
	unlink(path);   /* a stamp of a sandbox of this name that was removed */
	if (bpf_map_update_elem(fd, &zero, &l, BPF_ANY) < 0 || bpf_obj_pin(fd, path) < 0) {
		snprintf(msg, msglen, "cannot pin the layout stamp %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Say that sandbox `name` is another build's, and what to do. */
__attribute__((format(printf, 4, 5)))
static int other_build(const char *name, char *msg, size_t msglen, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(msg, msglen, "sandbox %s was pinned by another sluice build (%s): this one cannot read its maps "
		 "(its filter stays in force). After an upgrade: `sluice detach --force %s`, then attach it again "
		 "(docs/daemon.md, \"Upgrades\")", name, what, name);
	return -1;
}

int sluice_pin_layout_check(const char *name, const char *pin_dir, const int *map_fd, char *msg, size_t msglen)
{
	struct sluice_map_shape want[SLUICE_MAP__MAX];
	int err = sluice_map_shapes(want);

	if (err) {
		snprintf(msg, msglen, "cannot open this build's BPF object to compare sandbox %s with: %s", name,
			 strerror(-err));
		return -1;
	}
	for (int i = 0; i < SLUICE_MAP__MAX; i++) {
		struct bpf_map_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(map_fd[i], &info, &len) < 0) {
			snprintf(msg, msglen, "sandbox %s: cannot inspect pinned map %s: %s", name, sluice_map_pin_name(i),
				 strerror(errno));
			return -1;
		}
		if (info.type != want[i].type || info.key_size != want[i].key_size ||
		    info.value_size != want[i].value_size)
			return other_build(name, msg, msglen,
					   "map %s: type %u, key %u bytes, value %u bytes; this build's: type %u, key %u, "
					   "value %u", sluice_map_pin_name(i), info.type, info.key_size, info.value_size,
					   want[i].type, want[i].key_size, want[i].value_size);
	}
	return sluice_pin_layout_stamp_check(name, pin_dir, msg, msglen);
}

int sluice_pin_layout_stamp_check(const char *name, const char *pin_dir, char *msg, size_t msglen)
{
	struct sluice_pin_layout ours, theirs;
	char path[512];
	uint32_t zero = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, SLUICE_LAYOUT_PIN);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : other_build(name, msg, msglen, "its %s: %s", SLUICE_LAYOUT_PIN,
							      strerror(errno));
	{
		struct bpf_map_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		memset(&theirs, 0, sizeof(theirs));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || info.value_size != sizeof(theirs) ||
		    bpf_map_lookup_elem(fd, &zero, &theirs) < 0) {
			close(fd);
			return other_build(name, msg, msglen, "a %s stamp of another format", SLUICE_LAYOUT_PIN);
		}
		close(fd);
	}
	sluice_pin_layout_ours(&ours);
	if (theirs.magic != ours.magic || theirs.version != ours.version)
		return other_build(name, msg, msglen, "layout version %u, this build's %u", theirs.version, ours.version);
	if (memcmp(&theirs, &ours, sizeof(ours)) != 0)
		return other_build(name, msg, msglen,
				   "struct sizes: event %u, orig %u, flow key %u, config %u; this build's: %u, %u, %u, %u",
				   theirs.event_size, theirs.orig_size, theirs.flow_key_size, theirs.config_size,
				   ours.event_size, ours.orig_size, ours.flow_key_size, ours.config_size);
	return 0;
}
