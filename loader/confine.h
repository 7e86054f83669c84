/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * confine.h - what `sluice run` confines besides the network (issue 13):
 * the identity CMD runs as, its view of the file system (a read-only host,
 * one writable workdir, fresh tmpfs state), Landlock (landlock.h) and the
 * seccomp baseline (seccomp_baseline.h).  Profiles: "sandbox" (the default, all of
 * it) and "egress-only" (network filter only, root, the host writable: the
 * behaviour of sluice before 13).  docs/filesystem.md describes the layout.
 *
 * Two steps: sluice_confine_prepare() in the loader checks and resolves
 * every option before anything is created (a bad option is exit 2 with
 * nothing left behind); sluice_confine_enter() in CMD's process, after the
 * canary and before exec, builds the mounts and drops the identity.
 */
#ifndef SLUICE_CONFINE_H
#define SLUICE_CONFINE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SLUICE_CONFINE_MAX_PATHS 32
#define SLUICE_CONFINE_MAX_HOMES 3

enum sluice_profile {
	SLUICE_PROFILE_SANDBOX = 0,     /* the default */
	SLUICE_PROFILE_EGRESS_ONLY,
};

/* The command-line options of `sluice run` this module owns (getopt codes). */
enum {
	SLUICE_OPT_PROFILE = 0x1000,
	SLUICE_OPT_USER,
	SLUICE_OPT_WORKDIR,
	SLUICE_OPT_RO,
	SLUICE_OPT_RW,
	SLUICE_OPT_HIDE,
	SLUICE_OPT_FORCE_RW,
	SLUICE_OPT_REQUIRE_LANDLOCK,
	SLUICE_OPT_ALLOW_IO_URING,
};

/* getopt_long entries for the options above, to splice into a command's table. */
#define SLUICE_CONFINE_LONGOPTS                                                        \
	{ "profile", required_argument, NULL, SLUICE_OPT_PROFILE },                    \
	{ "user", required_argument, NULL, SLUICE_OPT_USER },                          \
	{ "workdir", required_argument, NULL, SLUICE_OPT_WORKDIR },                    \
	{ "ro", required_argument, NULL, SLUICE_OPT_RO },                              \
	{ "rw", required_argument, NULL, SLUICE_OPT_RW },                              \
	{ "hide", required_argument, NULL, SLUICE_OPT_HIDE },                          \
	{ "force-rw", no_argument, NULL, SLUICE_OPT_FORCE_RW },                        \
	{ "require-landlock", no_argument, NULL, SLUICE_OPT_REQUIRE_LANDLOCK },             \
	{ "allow-io-uring", no_argument, NULL, SLUICE_OPT_ALLOW_IO_URING }

/* --help text for the options above (one block, ends with a newline). */
extern const char sluice_confine_usage[];

struct sluice_confine {
	/* options, as given (strings borrowed from argv) */
	enum sluice_profile profile;
	const char *user_arg;           /* --user USER[:GROUP], NULL: the default */
	const char *workdir_arg;        /* --workdir, NULL: the current directory */
	const char *ro_arg[SLUICE_CONFINE_MAX_PATHS];
	const char *rw_arg[SLUICE_CONFINE_MAX_PATHS];
	const char *hide_arg[SLUICE_CONFINE_MAX_PATHS];
	size_t n_ro, n_rw, n_hide;
	/* where a path came from, for messages: NULL for the command line,
	 * else "FILE:LINE: filesystem.read_only" and so on (the policy's
	 * `filesystem:` section; owned, freed by sluice_confine_free) */
	char *ro_from[SLUICE_CONFINE_MAX_PATHS], *rw_from[SLUICE_CONFINE_MAX_PATHS];
	char *hide_from[SLUICE_CONFINE_MAX_PATHS], *workdir_from;
	bool force_rw, require_landlock, keep_caps;
	bool allow_io_uring;            /* --allow-io-uring: the seccomp filter leaves io_uring alone */
	int seccomp_sock;               /* a sluice_seccomp_monitor's command end, or -1 */
	uint64_t families;              /* the policy's families: (bit AF_x), for the seccomp filter */
	bool families_seccomp;          /* egress-only: install the socket family filter alone (the
					 * BPF LSM does not judge families); the sandbox profile's
					 * baseline always has it */

	/* resolved by sluice_confine_prepare() */
	uid_t uid;
	gid_t gid;
	bool root;                      /* uid 0: the current capability drop list, not all */
	char user_name[64];             /* "nobody", "alice", or the number */
	char user_source[16];           /* "--user", "SUDO_UID", "PKEXEC_UID", "default" */
	char workdir[PATH_MAX];         /* canonical; CMD starts here */
	char home[PATH_MAX];            /* CMD's $HOME: a fresh tmpfs owned by uid */
	char hide_home[SLUICE_CONFINE_MAX_HOMES][PATH_MAX]; /* homes covered by an empty tmpfs */
	size_t n_hide_home;
	/* canonical --ro, --rw, --hide paths; ro[] may hold one more than ro_arg[]:
	 * /etc/resolv.conf's target when it lies under /run */
	char *ro[SLUICE_CONFINE_MAX_PATHS], *rw[SLUICE_CONFINE_MAX_PATHS], *hide[SLUICE_CONFINE_MAX_PATHS];
	int landlock_abi;               /* 0: the kernel has no Landlock */
};

/* Defaults: profile sandbox, everything else unset. */
void sluice_confine_init(struct sluice_confine *c);

/*
 * Take one of the SLUICE_OPT_* options (arg: getopt's optarg, borrowed
 * until sluice_confine_free).  Returns 0, 1 if `opt` is not one of ours,
 * or -1 with a message in err (a bad profile name, too many paths).
 */
int sluice_confine_option(struct sluice_confine *c, int opt, const char *arg, char *err, size_t errlen);

struct sluice_policy;

/*
 * Add the policy's `filesystem:` section (policy.h, struct sluice_policy_fs)
 * to the options given so far: its read_only, read_write and hide paths
 * after the command line's, its workdir unless --workdir was given.  Call
 * after the options, before sluice_confine_prepare(); the paths are
 * borrowed from p until sluice_confine_free.  Returns 0, or -1 with a
 * message in err: a section under --profile egress-only (it would be
 * ignored), too many paths.
 */
int sluice_confine_from_policy(struct sluice_confine *c, const struct sluice_policy *p, char *err, size_t errlen);

/*
 * Check and resolve the options in the loader, before anything is created:
 * the user exists, every path is absolute or relative to the current
 * directory, has no ".." component, exists, and (for --rw and the workdir)
 * is neither / nor a system directory unless --force-rw; Landlock is probed.
 * Reads the environment (SUDO_UID, SUDO_GID, PKEXEC_UID, HOME) and the
 * user database; changes nothing.  No-op for the egress-only profile.
 * Returns 0, or -1 with a message in err (the caller exits 2).
 */
int sluice_confine_prepare(struct sluice_confine *c, char *err, size_t errlen);

/*
 * In CMD's process (root, a private mount namespace, the sandbox's /proc
 * mounted), just before exec: the mounts, the identity, no_new_privs,
 * Landlock and the seccomp baseline, then chdir(workdir) and $HOME.  For
 * the root user the caller still drops its capability list afterwards.
 * For the egress-only profile only the socket family filter, when
 * families_seccomp is set.  Returns 0, or -1
 * with a message in err (the caller reports it and exits 2); on error the
 * process is half confined and must not exec.
 */
int sluice_confine_enter(const struct sluice_confine *c, char *err, size_t errlen);

/* "profile sandbox, user nobody (65534:65534), landlock ABI 7, seccomp baseline"
 * for the sandbox-start line.  Returns buf. */
const char *sluice_confine_describe(const struct sluice_confine *c, char *buf, size_t len);

struct sluice_event_meta;
/* Fill the confinement fields of the event meta (strings borrowed from c). */
void sluice_confine_meta(const struct sluice_confine *c, struct sluice_event_meta *m);

/* The profile's name ("sandbox", "egress-only"). */
const char *sluice_profile_name(enum sluice_profile p);

/* Free what prepare allocated. */
void sluice_confine_free(struct sluice_confine *c);

#endif
