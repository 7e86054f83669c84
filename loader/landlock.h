/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * landlock.h - Landlock as the second layer of the sandbox profile's file
 * system (docs/filesystem.md): writes are allowed only beneath the paths
 * the mounts make writable, so a mistake in the mount namespace is not the
 * only barrier.  Best effort per ABI, as the kernel's samples/landlock/
 * sandboxer.c: ABI 1 (5.13) the write rights, 2 (5.19) cross-directory
 * rename and link, 3 (6.2) truncate, 6 (6.12) abstract unix sockets and
 * signals scoped to the sandbox.  Reads and execution are not restricted
 * (the mounts decide what is visible).
 */
#ifndef SLUICE_LANDLOCK_H
#define SLUICE_LANDLOCK_H

#include <stddef.h>

/* The kernel's Landlock ABI version (landlock_create_ruleset(NULL, 0,
 * LANDLOCK_CREATE_RULESET_VERSION)), 0 if it has none (ENOSYS: not built;
 * EOPNOTSUPP: not enabled at boot). */
int sluice_landlock_abi(void);

/*
 * Restrict the calling thread (and what it execs) to writing beneath
 * write_paths[0..n) (directories: every write right; a file: write and
 * truncate) and writing and truncating files beneath write_files[0..m)
 * (devices under /dev, /proc, a stdio file).  abi: from sluice_landlock_abi(), > 0.
 * Sets no_new_privs.  A path that cannot be opened is an error.
 * Returns 0, or -1 with a message in err.
 */
int sluice_landlock_apply(int abi, const char *const *write_paths, size_t n, const char *const *write_files,
			  size_t m, char *err, size_t errlen);

#endif
