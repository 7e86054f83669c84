/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_expect.h - the children's side of the policy hand-off
 * (docs/architecture.md "Child process interface"): the loader (`sluice
 * run`, the daemon) parses the policy once and hands each child the bytes
 * it parsed (a sealed memfd, `--policy /dev/fd/N`) with their digest
 * (`--policy-digest HEX`); the child parses the same bytes and refuses to
 * start unless it computes the same digest, so the kernel, the proxy and
 * the resolver provably enforce one policy.
 */
#ifndef SLUICE_POLICY_EXPECT_H
#define SLUICE_POLICY_EXPECT_H

#include "policy.h"

/*
 * Load the policy at `path` (sluice_policy_load_file()) and, when `digest`
 * is not NULL, check that its canonical digest (64 lower-case hex digits)
 * is exactly `digest`.  Returns 0 with *out, or -1 with *err: a policy
 * error as the parser reports it, or a mismatch as "PATH: policy digest
 * X, not Y as the loader handed over" (nothing loaded).
 */
int sluice_policy_load_expect(const char *path, const char *digest, struct sluice_policy **out,
			      struct sluice_policy_error *err);

#endif
