/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * landlock.c - the Landlock layer (landlock.h).  The system headers of the
 * build machine may predate the running kernel's ABI: the rights and the
 * ruleset attribute's later fields are defined here with the kernel's
 * values (include/uapi/linux/landlock.h), and the attribute is passed with
 * the size the probed ABI knows.
 */
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/landlock.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

/* ABI 1 (5.13) */
#define LL_FS_WRITE_FILE   (1ULL << 1)
#define LL_FS_REMOVE_DIR   (1ULL << 4)
#define LL_FS_REMOVE_FILE  (1ULL << 5)
#define LL_FS_MAKE_CHAR    (1ULL << 6)
#define LL_FS_MAKE_DIR     (1ULL << 7)
#define LL_FS_MAKE_REG     (1ULL << 8)
#define LL_FS_MAKE_SOCK    (1ULL << 9)
#define LL_FS_MAKE_FIFO    (1ULL << 10)
#define LL_FS_MAKE_BLOCK   (1ULL << 11)
#define LL_FS_MAKE_SYM     (1ULL << 12)
/* ABI 2 (5.19) */
#define LL_FS_REFER        (1ULL << 13)
/* ABI 3 (6.2) */
#define LL_FS_TRUNCATE     (1ULL << 14)
/* ABI 6 (6.12) */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL               (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6 (handled_access_net: ABI 4) */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

int sluice_landlock_abi(void)
{
	long r = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return r < 0 ? 0 : (int)r;
}

/* The write rights this ABI knows: every right that creates, removes,
 * renames or changes a file, nothing that reads or executes. */
static uint64_t write_rights(int abi)
{
	uint64_t a = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR |
		     LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;

	if (abi >= 2)
		a |= LL_FS_REFER;
	if (abi >= 3)
		a |= LL_FS_TRUNCATE;
	return a;
}

static int add_path(int ruleset, const char *path, uint64_t rights, char *err, size_t errlen)
{
	struct ll_path_beneath pb = { 0 };
	struct stat sb;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errlen, "landlock: cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) == 0 && !S_ISDIR(sb.st_mode))
		rights &= LL_FS_WRITE_FILE | LL_FS_TRUNCATE; /* the only write rights a file takes */
	pb.allowed_access = rights;
	pb.parent_fd = fd;
	if (syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
		snprintf(err, errlen, "landlock: cannot allow writes beneath %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int sluice_landlock_apply(int abi, const char *const *write_paths, size_t n, const char *const *write_files,
			  size_t m, char *err, size_t errlen)
{
	struct ll_ruleset_attr attr = { .handled_access_fs = write_rights(abi) };
	/* ABI 1-3 know only the first field, 4-5 the first two */
	size_t attr_size = abi >= 6 ? sizeof(attr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
	int ruleset;

	if (abi >= 6)
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
	ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0) {
		snprintf(err, errlen, "landlock: cannot create a ruleset (ABI %d): %s", abi, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (add_path(ruleset, write_paths[i], attr.handled_access_fs, err, errlen) < 0)
			goto fail;
	for (size_t i = 0; i < m; i++)
		if (add_path(ruleset, write_files[i], LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0), err,
			     errlen) < 0)
			goto fail;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, errlen, "landlock: cannot set no_new_privs: %s", strerror(errno));
		goto fail;
	}
	if (syscall(__NR_landlock_restrict_self, ruleset, 0) < 0) {
		snprintf(err, errlen, "landlock: cannot restrict the command: %s", strerror(errno));
		goto fail;
	}
	close(ruleset);
	return 0;
fail:
	close(ruleset);
	return -1;
}
