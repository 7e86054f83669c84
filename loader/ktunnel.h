/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ktunnel.h - the kernel tunnels' maps and verdict program
 * (bpf/sluice_tunnel.bpf.c), loaded and pinned with a sandbox's other maps.
 */
#ifndef SLUICE_LOADER_KTUNNEL_H
#define SLUICE_LOADER_KTUNNEL_H

#include <stddef.h>

/*
 * Load the tunnel program, attach it to sluice_tunnel_sk as its stream
 * verdict (the map keeps it) and pin the three maps in `pin_dir`
 * (SLUICE_TUNNEL_PIN_*; an older set there is replaced).  Best effort: the
 * proxy falls back to splice when the pins are missing.  Returns 0, or
 * -errno with msg set (nothing left pinned).
 */
int sluice_ktunnel_pin(const char *pin_dir, char *msg, size_t msglen);

/* Remove the pins of sluice_ktunnel_pin() from `pin_dir` (absent: fine). */
void sluice_ktunnel_unpin(const char *pin_dir);

#endif
