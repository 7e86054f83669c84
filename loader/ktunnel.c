/* SPDX-License-Identifier: BSD-2-Clause */
#include "ktunnel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sluice_tunnel.h"
#include "sluice_tunnel.skel.h"

static const char *const pins[] = { SLUICE_TUNNEL_PIN_HELD, SLUICE_TUNNEL_PIN_SK, SLUICE_TUNNEL_PIN_DIR };

void sluice_ktunnel_unpin(const char *pin_dir)
{
	char path[512];

	for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, pins[i]);
		unlink(path);
	}
}

int sluice_ktunnel_pin(const char *pin_dir, char *msg, size_t msglen)
{
	struct sluice_tunnel_bpf *s;
	struct bpf_map *maps[3];
	char path[512];
	int err;

	sluice_ktunnel_unpin(pin_dir);
	s = sluice_tunnel_bpf__open_and_load();
	if (!s) {
		err = -errno;
		snprintf(msg, msglen, "cannot load the kernel tunnel program: %s", strerror(-err));
		return err;
	}
	/* a program attached to a sockhash lives as long as the map */
	if (bpf_prog_attach(bpf_program__fd(s->progs.sluice_tunnel_verdict), bpf_map__fd(s->maps.sluice_tunnel_sk),
			    BPF_SK_SKB_STREAM_VERDICT, 0) < 0) {
		err = -errno;
		snprintf(msg, msglen, "cannot attach the kernel tunnel verdict: %s", strerror(-err));
		goto out;
	}
	maps[0] = s->maps.sluice_tunnel_held;
	maps[1] = s->maps.sluice_tunnel_sk;
	maps[2] = s->maps.sluice_tunnel_dir;
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, pins[i]);
		err = bpf_map__pin(maps[i], path);
		if (err) {
			snprintf(msg, msglen, "cannot pin %s: %s", path, strerror(-err));
			sluice_ktunnel_unpin(pin_dir);
			goto out;
		}
	}
	err = 0;
out:
	sluice_tunnel_bpf__destroy(s);
	return err;
}
