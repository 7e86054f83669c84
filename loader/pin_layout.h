/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pin_layout.h - is a pinned sandbox's layout this build's?  A daemon
 * re-adopts sandboxes pinned by the daemon before it (docs/daemon.md "Fail
 * closed"); after an upgrade that changed a wire struct (bpf/sluice.h:
 * struct sluice_orig in sluice_flows, struct sluice_event in the ring
 * buffer) it must not read those maps with the new layout.  Two checks:
 * every pinned map's type, key size and value size against this build's
 * BPF object, and a stamp pinned beside the maps (SLUICE_LAYOUT_PIN, an
 * array of one struct sluice_pin_layout) with the sizes no map shows (a
 * ring buffer record).  A pin set without the stamp (a build before it)
 * is judged by the maps alone.
 */
#ifndef SLUICE_PIN_LAYOUT_H
#define SLUICE_PIN_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define SLUICE_LAYOUT_PIN     "sluice_layout"
#define SLUICE_LAYOUT_MAGIC   0x736c6331u   /* "slc1" */
#define SLUICE_LAYOUT_VERSION 4u            /* bump it when a map changes meaning (2: the ring buffer
                                             * shared by a daemon's sandboxes, with its budget; 3: the
                                             * flow map allocated on demand, emptied at socket release;
                                             * 4: full-length cidr entries in sluice_exact4/6, not the
                                             * tries) */

struct sluice_pin_layout {
	uint32_t magic;             /* SLUICE_LAYOUT_MAGIC */
	uint32_t version;           /* SLUICE_LAYOUT_VERSION of the build that pinned */
	uint32_t event_size;        /* sizeof(struct sluice_event): a ring buffer record */
	uint32_t orig_size;         /* sizeof(struct sluice_orig): a sluice_flows value */
	uint32_t flow_key_size;     /* sizeof(struct sluice_flow_key) */
	uint32_t config_size;       /* sizeof(struct sluice_bpf_config) */
};

/* This build's stamp. */
void sluice_pin_layout_ours(struct sluice_pin_layout *out);

/*
 * Pin this build's stamp as PIN_DIR/SLUICE_LAYOUT_PIN (a one-entry array
 * map made here, BPF_MAP_TYPE_ARRAY).  0, or -1 with msg.
 */
int sluice_pin_layout_write(const char *pin_dir, char *msg, size_t msglen);

/*
 * Check the pinned maps map_fd[0..SLUICE_MAP__MAX) (sandbox.h) and the
 * stamp in pin_dir of sandbox `name` against this build.  0: the same
 * layout; -1 with msg naming what differs and the way out (`sluice
 * detach --force NAME`, then attach again): the maps are not read.
 */
int sluice_pin_layout_check(const char *name, const char *pin_dir, const int *map_fd, char *msg, size_t msglen);

/*
 * The stamp alone (sluice_pin_layout_check's second half): for a pin set
 * that lacks a map this build has, so that an older build's pins are
 * named as such, with the way out, and not as a missing pin.  0: no stamp,
 * or this build's; -1 with msg.
 */
int sluice_pin_layout_stamp_check(const char *name, const char *pin_dir, char *msg, size_t msglen);

#endif
