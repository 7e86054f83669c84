/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * confine.c - identity and file system of the sandbox profile (confine.h,
 * docs/filesystem.md).  The mount layout, in CMD's private mount namespace:
 *
 *   /                     the host's tree, every mount read-only (recursive)
 *   /proc                 the sandbox's own (run.c mounts it), writable; /proc/sys read-only
 *   /dev                  a minimal tmpfs: null zero full random urandom tty, a fresh devpts,
 *                         /dev/shm (fresh tmpfs); read-only itself
 *   /tmp /var/tmp /run    fresh tmpfs (host sockets under /run and /var/run out of sight)
 *   homes                 $HOME, the invoking user's and the target user's home: an empty
 *                         tmpfs owned by the sandbox user (CMD's $HOME is one of them)
 *   --workdir, --rw       the host's directory, writable (bound from fds opened before
 *                         anything covered them, so a workdir under $HOME stays visible)
 *   --ro                  the host's path, read-only (on top of any of the above)
 *   --hide                an empty read-only tmpfs, last
 */
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "events.h"
#include "landlock.h"
#include "policy.h"
#include "seccomp_baseline.h"

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
struct mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif

#define NOBODY_ID 65534

const char sluice_confine_usage[] =
	"  --profile PROFILE    sandbox (default): CMD runs unprivileged on a read-only host with one\n"
	"                       writable workdir, fresh /tmp /var/tmp /run /dev/shm $HOME, Landlock and\n"
	"                       a seccomp baseline (docs/filesystem.md); egress-only: the network\n"
	"                       filter alone, CMD as root on the host's writable file system\n"
	"  --user USER[:GROUP]  run CMD as USER (name or number; root keeps root).  Default: the user\n"
	"                       who ran sudo/pkexec (SUDO_UID/SUDO_GID, PKEXEC_UID), else nobody\n"
	"                       (65534:65534); never supplementary groups\n"
	"  --workdir DIR        the one writable directory, where CMD starts (default: the current one)\n"
	"  --rw PATH            also writable (repeatable); / and system directories need --force-rw\n"
	"  --ro PATH            bind PATH read-only, also over a fresh tmpfs (repeatable)\n"
	"  --hide PATH          an empty read-only tmpfs over PATH (repeatable)\n"
	"  --force-rw           allow --rw or --workdir on /etc, /usr, /bin, /sbin, /lib*, /boot, /proc,\n"
	"                       /sys, /dev\n"
	"  --require-landlock   fail (exit 2) if the kernel has no Landlock instead of going on without\n"
	"  --allow-io-uring     let CMD use io_uring, which the seccomp filter refuses by default: its\n"
	"                       IORING_OP_SOCKET makes sockets of any family past the filter's socket\n"
	"                       rows (safe where the BPF LSM judges families; tests of the kernel hooks)\n";

/* Directories no --rw and no --workdir may make writable without --force-rw
 * (and anything beneath them). */
static const char *const system_dirs[] = {
	"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/proc", "/sys", "/dev",
};

/* The fresh tmpfs mounts every sandbox gets (if the directory exists on
 * the host; a symlink such as /var/run -> /run is left alone), and their mode. */
static const struct {
	const char *path;
	mode_t mode;
} fresh_dirs[] = {
	{ "/tmp", 01777 }, { "/var/tmp", 01777 }, { "/run", 0755 }, { "/var/run", 0755 },
};

/* What stays read-only in the sandbox's writable /proc (as container runtimes do). */
static const char *const proc_ro[] = { "/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus" };

/* Device nodes of the minimal /dev, bound from the host's. */
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

const char *sluice_profile_name(enum sluice_profile p)
{
	return p == SLUICE_PROFILE_EGRESS_ONLY ? "egress-only" : "sandbox";
}

void sluice_confine_init(struct sluice_confine *c)
{
	memset(c, 0, sizeof(*c));
	c->profile = SLUICE_PROFILE_SANDBOX;
	c->seccomp_sock = -1;
}

int sluice_confine_option(struct sluice_confine *c, int opt, const char *arg, char *err, size_t errlen)
{
	const char **list;
	size_t *n;

	switch (opt) {
	case SLUICE_OPT_PROFILE:
		if (strcmp(arg, "sandbox") == 0) {
			c->profile = SLUICE_PROFILE_SANDBOX;
		} else if (strcmp(arg, "egress-only") == 0) {
			c->profile = SLUICE_PROFILE_EGRESS_ONLY;
		} else {
			snprintf(err, errlen, "--profile must be sandbox or egress-only, not '%s'", arg);
			return -1;
		}
		return 0;
	case SLUICE_OPT_USER: c->user_arg = arg; return 0;
	case SLUICE_OPT_WORKDIR: c->workdir_arg = arg; return 0;
	case SLUICE_OPT_FORCE_RW: c->force_rw = true; return 0;
	case SLUICE_OPT_REQUIRE_LANDLOCK: c->require_landlock = true; return 0;
	case SLUICE_OPT_ALLOW_IO_URING: c->allow_io_uring = true; return 0;
	case SLUICE_OPT_RO: list = c->ro_arg; n = &c->n_ro; break;
	case SLUICE_OPT_RW: list = c->rw_arg; n = &c->n_rw; break;
	case SLUICE_OPT_HIDE: list = c->hide_arg; n = &c->n_hide; break;
	default: return 1;
	}
	if (*n >= SLUICE_CONFINE_MAX_PATHS) {
		snprintf(err, errlen, "at most %d paths for each of --ro, --rw and --hide", SLUICE_CONFINE_MAX_PATHS);
		return -1;
	}
	list[(*n)++] = arg;
	return 0;
}

int sluice_confine_from_policy(struct sluice_confine *c, const struct sluice_policy *p, char *err, size_t errlen)
{
	const struct sluice_policy_fs *fs = &p->fs;
	struct {
		const struct sluice_fs_path *l;
		size_t n;
		const char **arg;
		char **from;
		size_t *count;
		const char *what;
	} roles[] = {
		{ fs->read_only, fs->n_read_only, c->ro_arg, c->ro_from, &c->n_ro, "read_only" },
		{ fs->read_write, fs->n_read_write, c->rw_arg, c->rw_from, &c->n_rw, "read_write" },
		{ fs->hide, fs->n_hide, c->hide_arg, c->hide_from, &c->n_hide, "hide" },
	};

	c->families = p->families.mask;
	if (!fs->present)
		return 0;
	if (c->profile == SLUICE_PROFILE_EGRESS_ONLY) {
		snprintf(err, errlen, "%s:%u: the policy's filesystem section needs --profile sandbox (egress-only would "
			 "ignore it)", p->path ? p->path : "policy", fs->line);
		return -1;
	}
	if (fs->workdir.path && !c->workdir_arg) {
		c->workdir_arg = fs->workdir.path;
		if (asprintf(&c->workdir_from, "%s:%u: filesystem.workdir", p->path, fs->workdir.line) < 0)
			c->workdir_from = NULL;
	}
	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
		for (size_t i = 0; i < roles[r].n; i++) {
			size_t k = *roles[r].count;

			if (k >= SLUICE_CONFINE_MAX_PATHS) {
				snprintf(err, errlen, "%s:%u: filesystem.%s: with the command line's, more than %d paths",
					 p->path, roles[r].l[i].line, roles[r].what, SLUICE_CONFINE_MAX_PATHS);
				return -1;
			}
			roles[r].arg[k] = roles[r].l[i].path;
			if (asprintf(&roles[r].from[k], "%s:%u: filesystem.%s", p->path, roles[r].l[i].line,
				     roles[r].what) < 0)
				roles[r].from[k] = NULL;
			(*roles[r].count)++;
		}
	}
	return 0;
}

/* --- prepare (the loader) --------------------------------------------- */

/* Parse a decimal id (0..2^32-2) into *out.  Returns 0 or -1. */
static int parse_id(const char *s, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= 0xffffffffUL)
		return -1;
	*out = v;
	return 0;
}

static int resolve_user(struct sluice_confine *c, char *err, size_t errlen)
{
	const char *env;
	unsigned long id;

	if (c->user_arg) {
		char spec[256], *grp;
		struct passwd *pw;

		if (snprintf(spec, sizeof(spec), "%s", c->user_arg) >= (int)sizeof(spec) || !spec[0]) {
			snprintf(err, errlen, "--user: empty or too long");
			return -1;
		}
		grp = strchr(spec, ':');
		if (grp)
			*grp++ = 0;
		pw = getpwnam(spec);
		if (pw) {
			c->uid = pw->pw_uid;
			c->gid = pw->pw_gid;
			snprintf(c->user_name, sizeof(c->user_name), "%s", pw->pw_name);
		} else if (parse_id(spec, &id) == 0) {
			c->uid = (uid_t)id;
			pw = getpwuid(c->uid);
			c->gid = pw ? pw->pw_gid : (gid_t)id;
			snprintf(c->user_name, sizeof(c->user_name), "%s", pw ? pw->pw_name : spec);
		} else {
			snprintf(err, errlen, "--user: no user '%s' in the user database", spec);
			return -1;
		}
		if (grp) {
			struct group *gr = getgrnam(grp);

			if (gr)
				c->gid = gr->gr_gid;
			else if (parse_id(grp, &id) == 0)
				c->gid = (gid_t)id;
			else {
				snprintf(err, errlen, "--user: no group '%s' in the group database", grp);
				return -1;
			}
		}
		snprintf(c->user_source, sizeof(c->user_source), "--user");
	} else if ((env = getenv("SUDO_UID")) && parse_id(env, &id) == 0 && id != 0) {
		/* sudo from root (SUDO_UID=0) is no unprivileged user to return to */
		const char *g = getenv("SUDO_GID");
		unsigned long gid;
		struct passwd *pw = getpwuid((uid_t)id);

		c->uid = (uid_t)id;
		c->gid = g && parse_id(g, &gid) == 0 ? (gid_t)gid : pw ? pw->pw_gid : (gid_t)id;
		snprintf(c->user_name, sizeof(c->user_name), "%s", pw ? pw->pw_name : env);
		snprintf(c->user_source, sizeof(c->user_source), "SUDO_UID");
	} else if ((env = getenv("PKEXEC_UID")) && parse_id(env, &id) == 0 && id != 0) {
		struct passwd *pw = getpwuid((uid_t)id);

		c->uid = (uid_t)id;
		c->gid = pw ? pw->pw_gid : (gid_t)id;
		snprintf(c->user_name, sizeof(c->user_name), "%s", pw ? pw->pw_name : env);
		snprintf(c->user_source, sizeof(c->user_source), "PKEXEC_UID");
	} else {
		struct passwd *pw = getpwuid(NOBODY_ID);

		c->uid = NOBODY_ID;
		c->gid = NOBODY_ID;
		snprintf(c->user_name, sizeof(c->user_name), "%s", pw ? pw->pw_name : "65534");
		snprintf(c->user_source, sizeof(c->user_source), "default");
	}
	c->root = c->uid == 0;
	return 0;
}

/* A ".." component anywhere in p. */
static bool has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")) != NULL; s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == 0 || s[2] == '/'))
			return true;
	return false;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* The canonical path of `arg` (option `what`) into a malloc'd string. */
static char *canonical(const char *what, const char *arg, bool writable, bool force, char *err, size_t errlen)
{
	char *real;

	if (!arg[0]) {
		snprintf(err, errlen, "%s: empty path", what);
		return NULL;
	}
	if (has_dotdot(arg)) {
		snprintf(err, errlen, "%s %s: a path with '..' is not allowed", what, arg);
		return NULL;
	}
	real = realpath(arg, NULL);
	if (!real) {
		snprintf(err, errlen, "%s %s: %s", what, arg, strerror(errno));
		return NULL;
	}
	if (writable && strcmp(real, "/") == 0) {
		snprintf(err, errlen, "%s %s: the host's root cannot be writable (use --profile egress-only)", what,
			 arg);
		free(real);
		return NULL;
	}
	if (writable && !force)
		for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
			if (under(real, system_dirs[i])) {
				snprintf(err, errlen, "%s %s: %s is a system directory; writable only with --force-rw", what,
					 arg, system_dirs[i]);
				free(real);
				return NULL;
			}
	return real;
}

/* Add `dir` to the homes to cover if it is an existing directory other than
 * / and not a system directory (a service account's home may be /usr/...
 * or /bin: covering it would hide the system, not a home). */
static void add_home(struct sluice_confine *c, const char *dir)
{
	char real[PATH_MAX];
	struct stat sb;

	if (!dir || dir[0] != '/' || !realpath(dir, real) || strcmp(real, "/") == 0 || stat(real, &sb) < 0 ||
	    !S_ISDIR(sb.st_mode))
		return;
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
		if (under(real, system_dirs[i]))
			return;
	for (size_t i = 0; i < c->n_hide_home; i++)
		if (strcmp(c->hide_home[i], real) == 0)
			return;
	if (c->n_hide_home < SLUICE_CONFINE_MAX_HOMES)
		snprintf(c->hide_home[c->n_hide_home++], PATH_MAX, "%s", real);
}

int sluice_confine_prepare(struct sluice_confine *c, char *err, size_t errlen)
{
	struct passwd *pw;
	const char *env;
	unsigned long id;
	char *wd;

	if (c->profile == SLUICE_PROFILE_EGRESS_ONLY) {
		if (c->user_arg || c->workdir_arg || c->n_ro || c->n_rw || c->n_hide || c->require_landlock) {
			snprintf(err, errlen, "--user, --workdir, --ro, --rw, --hide and --require-landlock belong to --profile sandbox");
			return -1;
		}
		c->root = true;
		c->uid = 0;
		c->gid = 0;
		snprintf(c->user_name, sizeof(c->user_name), "root");
		return 0;
	}
	if (resolve_user(c, err, errlen) < 0)
		return -1;
	if (c->keep_caps && !c->root) {
		snprintf(err, errlen, "--keep-caps keeps root's capabilities: it needs --user root (or --profile egress-only)");
		return -1;
	}
	wd = canonical(c->workdir_from ? c->workdir_from : "--workdir", c->workdir_arg ? c->workdir_arg : ".", true,
		       c->force_rw, err, errlen);
	if (!wd)
		return -1;
	{
		struct stat sb;

		if (stat(wd, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
			snprintf(err, errlen, "%s %s: not a directory", c->workdir_from ? c->workdir_from : "--workdir",
				 c->workdir_arg ? c->workdir_arg : wd);
			free(wd);
			return -1;
		}
	}
	snprintf(c->workdir, sizeof(c->workdir), "%s", wd);
	free(wd);
	for (size_t i = 0; i < c->n_rw; i++)
		if (!(c->rw[i] = canonical(c->rw_from[i] ? c->rw_from[i] : "--rw", c->rw_arg[i], true, c->force_rw, err,
					   errlen)))
			return -1;
	for (size_t i = 0; i < c->n_ro; i++)
		if (!(c->ro[i] = canonical(c->ro_from[i] ? c->ro_from[i] : "--ro", c->ro_arg[i], false, false, err, errlen)))
			return -1;
	/* a resolv.conf that links into /run (systemd-resolved's stub) stays
	 * readable through the fresh /run */
	{
		char *rc = realpath("/etc/resolv.conf", NULL);

		if (rc && (under(rc, "/run") || under(rc, "/var/run")) && c->n_ro < SLUICE_CONFINE_MAX_PATHS)
			c->ro[c->n_ro++] = rc;
		else
			free(rc);
	}
	for (size_t i = 0; i < c->n_hide; i++) {
		if (!(c->hide[i] = canonical(c->hide_from[i] ? c->hide_from[i] : "--hide", c->hide_arg[i], false, false, err,
					     errlen)))
			return -1;
		if (strcmp(c->hide[i], "/") == 0) {
			snprintf(err, errlen, "--hide /: nothing would be left to run");
			return -1;
		}
	}

	/* homes: the target user's, then $HOME, then the sudo/pkexec user's */
	pw = getpwuid(c->uid);
	add_home(c, pw ? pw->pw_dir : NULL);
	add_home(c, getenv("HOME"));
	if (((env = getenv("SUDO_UID")) || (env = getenv("PKEXEC_UID"))) && parse_id(env, &id) == 0) {
		struct passwd *inv = getpwuid((uid_t)id);

		add_home(c, inv ? inv->pw_dir : NULL);
	}
	if (c->n_hide_home)
		snprintf(c->home, sizeof(c->home), "%s", c->hide_home[0]);
	else
		snprintf(c->home, sizeof(c->home), "/tmp");

	c->landlock_abi = sluice_landlock_abi();
	if (!c->landlock_abi && c->require_landlock) {
		snprintf(err, errlen, "--require-landlock: this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK, lsm=landlock)");
		return -1;
	}
	return 0;
}

void sluice_confine_free(struct sluice_confine *c)
{
	for (size_t i = 0; i < SLUICE_CONFINE_MAX_PATHS; i++) {
		free(c->ro[i]);
		free(c->rw[i]);
		free(c->hide[i]);
		c->ro[i] = c->rw[i] = c->hide[i] = NULL;
		free(c->ro_from[i]);
		free(c->rw_from[i]);
		free(c->hide_from[i]);
		c->ro_from[i] = c->rw_from[i] = c->hide_from[i] = NULL;
	}
	free(c->workdir_from);
	c->workdir_from = NULL;
}

void sluice_confine_meta(const struct sluice_confine *c, struct sluice_event_meta *m)
{
	m->profile = sluice_profile_name(c->profile);
	m->user_name = c->user_name;
	m->uid = (uint32_t)c->uid;
	m->gid = (uint32_t)c->gid;
	m->landlock_abi = c->profile == SLUICE_PROFILE_SANDBOX ? c->landlock_abi : 0;
}

const char *sluice_confine_describe(const struct sluice_confine *c, char *buf, size_t len)
{
	char ll[32];

	if (c->profile == SLUICE_PROFILE_EGRESS_ONLY) {
		snprintf(buf, len, "profile egress-only, user root (0:0), host file system writable%s",
			 c->allow_io_uring ? ", io_uring allowed" : "");
		return buf;
	}
	if (c->landlock_abi)
		snprintf(ll, sizeof(ll), "landlock ABI %d", c->landlock_abi);
	else
		snprintf(ll, sizeof(ll), "landlock unavailable");
	snprintf(buf, len, "profile sandbox, user %s (%u:%u, %s), workdir %s, %s, seccomp baseline%s", c->user_name,
		 (unsigned)c->uid, (unsigned)c->gid, c->user_source, c->workdir, ll,
		 c->allow_io_uring ? " (io_uring allowed)" : "");
	return buf;
}

/* --- enter (CMD's process) -------------------------------------------- */

static int fail(char *err, size_t errlen, const char *what, const char *path)
{
	snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
	return -1;
}

static int setattr(const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
	struct mount_attr a = { .attr_set = set, .attr_clr = clr };

	return (int)syscall(__NR_mount_setattr, AT_FDCWD, path, flags, &a, sizeof(a));
}

/* mkdir -p `path` (absolute); directories it creates belong to uid:gid.
 * `file`: the last component is an empty file (a mount point for a file). */
static int make_point(const char *path, bool file, uid_t uid, gid_t gid)
{
	char buf[PATH_MAX];
	struct stat sb;

	if (lstat(path, &sb) == 0)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = buf + 1;; s++) {
		bool last = *s == 0;

		if (*s != '/' && !last)
			continue;
		*s = 0;
		if (lstat(buf, &sb) < 0) {
			if (last && file) {
				int fd = open(buf, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

				if (fd < 0)
					return -1;
				close(fd);
			} else if (mkdir(buf, 0755) < 0) {
				return -1;
			}
			if (chown(buf, uid, gid) < 0)
				return -1;
		}
		if (last)
			return 0;
		*s = '/';
	}
}

/* Bind the host object open at `fd` (O_PATH, opened before any cover) to `target`. */
static int bind_fd(int fd, const char *target, bool rdonly, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char src[64];
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return fail(err, errlen, "cannot stat", target);
	if (make_point(target, !S_ISDIR(sb.st_mode), uid, gid) < 0)
		return fail(err, errlen, "cannot make a mount point at", target);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) < 0)
		return fail(err, errlen, "cannot bind", target);
	if (setattr(target, AT_RECURSIVE, rdonly ? MOUNT_ATTR_RDONLY : 0, rdonly ? 0 : MOUNT_ATTR_RDONLY) < 0)
		return fail(err, errlen, rdonly ? "cannot make read-only" : "cannot make writable", target);
	return 0;
}

static int fresh_tmpfs(const char *path, mode_t mode, uid_t uid, gid_t gid, unsigned long flags, char *err,
		       size_t errlen)
{
	char opts[96];

	snprintf(opts, sizeof(opts), "mode=%o,uid=%u,gid=%u", (unsigned)mode, (unsigned)uid, (unsigned)gid);
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | flags, opts) < 0)
		return fail(err, errlen, "cannot mount a tmpfs on", path);
	return 0;
}

/* The minimal /dev (see the top of the file); host nodes opened in devfd[]. */
static int minimal_dev(const int *devfd, char *err, size_t errlen)
{
	static const char *const links[][2] = {
		{ "/dev/fd", "/proc/self/fd" }, { "/dev/stdin", "/proc/self/fd/0" },
		{ "/dev/stdout", "/proc/self/fd/1" }, { "/dev/stderr", "/proc/self/fd/2" },
		{ "/dev/ptmx", "pts/ptmx" },
	};
	char path[64];

	if (fresh_tmpfs("/dev", 0755, 0, 0, MS_NOEXEC, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		if (devfd[i] < 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		if (bind_fd(devfd[i], path, false, 0, 0, err, errlen) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][1], links[i][0]) < 0)
			return fail(err, errlen, "cannot link", links[i][0]);
	if (mkdir("/dev/pts", 0755) < 0 || mkdir("/dev/shm", 01777) < 0)
		return fail(err, errlen, "cannot make", "/dev/pts, /dev/shm");
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
		return fail(err, errlen, "cannot mount a fresh devpts on", "/dev/pts");
	if (fresh_tmpfs("/dev/shm", 01777, 0, 0, 0, err, errlen) < 0)
		return -1;
	/* nothing new in /dev itself; the nodes stay writable (device files) */
	if (mount(NULL, "/dev", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return fail(err, errlen, "cannot make read-only", "/dev");
	return 0;
}

/* Set the identity: no supplementary groups, gid, uid; an empty bounding
 * set and ambient set before, no capabilities after (setresuid to
 * non-zero clears the permitted and effective sets; capset makes sure). */
static int drop_identity(const struct sluice_confine *c, char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];

	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
			snprintf(err, errlen, "cannot drop capability %d from the bounding set: %s", cap, strerror(errno));
			return -1;
		}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
		snprintf(err, errlen, "cannot clear the ambient capabilities: %s", strerror(errno));
		return -1;
	}
	if (setgroups(0, NULL) < 0 || setresgid(c->gid, c->gid, c->gid) < 0 || setresuid(c->uid, c->uid, c->uid) < 0) {
		snprintf(err, errlen, "cannot become %s (%u:%u): %s", c->user_name, (unsigned)c->uid, (unsigned)c->gid,
			 strerror(errno));
		return -1;
	}
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0) {
		snprintf(err, errlen, "cannot clear the capabilities: %s", strerror(errno));
		return -1;
	}
	/* and no way back: setuid(0) must fail */
	if (setuid(0) == 0) {
		snprintf(err, errlen, "setuid(0) still succeeds after dropping to %s", c->user_name);
		return -1;
	}
	return 0;
}

static int build_mounts(const struct sluice_confine *c, char *err, size_t errlen)
{
	int wd_fd, rw_fd[SLUICE_CONFINE_MAX_PATHS], ro_fd[SLUICE_CONFINE_MAX_PATHS];
	int dev_fd[sizeof(dev_nodes) / sizeof(dev_nodes[0])], ret = -1;
	struct stat sb;
	char path[64];

	for (size_t i = 0; i < SLUICE_CONFINE_MAX_PATHS; i++)
		rw_fd[i] = ro_fd[i] = -1;
	/* 1. everything that is bound back later, opened before anything covers it */
	wd_fd = open(c->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (wd_fd < 0)
		return fail(err, errlen, "cannot open the workdir", c->workdir);
	for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		dev_fd[i] = open(path, O_PATH | O_CLOEXEC);
	}
	for (size_t i = 0; i < c->n_rw; i++)
		if ((rw_fd[i] = open(c->rw[i], O_PATH | O_CLOEXEC)) < 0) {
			fail(err, errlen, "cannot open", c->rw[i]);
			goto out;
		}
	for (size_t i = 0; i < c->n_ro; i++)
		if ((ro_fd[i] = open(c->ro[i], O_PATH | O_CLOEXEC)) < 0) {
			fail(err, errlen, "cannot open", c->ro[i]);
			goto out;
		}

	/* 2. the host read-only, every mount of it; the sandbox's /proc writable
	 * again but for /proc/sys and /proc/sysrq-trigger */
	if (setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0) < 0) {
		fail(err, errlen, "cannot make the host read-only (mount_setattr, Linux 5.12+):", "/");
		goto out;
	}
	if (setattr("/proc", 0, 0, MOUNT_ATTR_RDONLY) < 0) {
		fail(err, errlen, "cannot make writable", "/proc");
		goto out;
	}
	for (size_t i = 0; i < sizeof(proc_ro) / sizeof(proc_ro[0]); i++) {
		if (lstat(proc_ro[i], &sb) < 0)
			continue;
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    setattr(proc_ro[i], AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0) < 0) {
			fail(err, errlen, "cannot make read-only", proc_ro[i]);
			goto out;
		}
	}

	/* 3. fresh state */
	for (size_t i = 0; i < sizeof(fresh_dirs) / sizeof(fresh_dirs[0]); i++) {
		if (lstat(fresh_dirs[i].path, &sb) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		if (fresh_tmpfs(fresh_dirs[i].path, fresh_dirs[i].mode, 0, 0, 0, err, errlen) < 0)
			goto out;
	}
	for (size_t i = 0; i < c->n_hide_home; i++)
		if (fresh_tmpfs(c->hide_home[i], 0700, c->uid, c->gid, 0, err, errlen) < 0)
			goto out;
	if (minimal_dev(dev_fd, err, errlen) < 0)
		goto out;

	/* 4. the writable and read-only binds, on top of the fresh state */
	if (bind_fd(wd_fd, c->workdir, false, c->uid, c->gid, err, errlen) < 0)
		goto out;
	for (size_t i = 0; i < c->n_rw; i++)
		if (bind_fd(rw_fd[i], c->rw[i], false, c->uid, c->gid, err, errlen) < 0)
			goto out;
	for (size_t i = 0; i < c->n_ro; i++)
		if (bind_fd(ro_fd[i], c->ro[i], true, c->uid, c->gid, err, errlen) < 0)
			goto out;

	/* 5. what the user hides, last */
	for (size_t i = 0; i < c->n_hide; i++)
		if (fresh_tmpfs(c->hide[i], 0755, 0, 0, MS_RDONLY, err, errlen) < 0)
			goto out;
	ret = 0;
out:
	close(wd_fd);
	for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++)
		if (dev_fd[i] >= 0)
			close(dev_fd[i]);
	for (size_t i = 0; i < SLUICE_CONFINE_MAX_PATHS; i++) {
		if (rw_fd[i] >= 0)
			close(rw_fd[i]);
		if (ro_fd[i] >= 0)
			close(ro_fd[i]);
	}
	return ret;
}

static int apply_landlock(const struct sluice_confine *c, char *err, size_t errlen)
{
	const char *w[SLUICE_CONFINE_MAX_PATHS + SLUICE_CONFINE_MAX_HOMES + 8];
	static const char *const stdio_links[] = { "/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2" };
	const char *files[2 + 3] = { "/dev", "/proc" };
	size_t n = 0, m = 2;
	struct stat sb;

	/*
	 * A regular file the launcher gave as stdin/stdout/stderr for writing
	 * (`sluice run ... > out.log`) lies outside the writable paths; the
	 * command may write it through the descriptor anyway, so reopening it
	 * (`> /dev/stdout`, /proc/self/fd/1) is allowed too, that file only.
	 */
	for (int fd = 0; fd <= 2; fd++) {
		int fl = fcntl(fd, F_GETFL);

		if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
			files[m++] = stdio_links[fd];
	}

	w[n++] = c->workdir;
	for (size_t i = 0; i < c->n_rw; i++)
		w[n++] = c->rw[i];
	for (size_t i = 0; i < c->n_hide_home; i++)
		w[n++] = c->hide_home[i];
	for (size_t i = 0; i < sizeof(fresh_dirs) / sizeof(fresh_dirs[0]); i++)
		if (lstat(fresh_dirs[i].path, &sb) == 0 && S_ISDIR(sb.st_mode))
			w[n++] = fresh_dirs[i].path;
	w[n++] = "/dev/shm";
	return sluice_landlock_apply(c->landlock_abi, w, n, files, m, err, errlen);
}

static unsigned seccomp_flags(const struct sluice_confine *c)
{
	return c->allow_io_uring ? SLUICE_SECCOMP_ALLOW_IO_URING : 0;
}

int sluice_confine_enter(const struct sluice_confine *c, char *err, size_t errlen)
{
	if (c->profile == SLUICE_PROFILE_EGRESS_ONLY)
		return c->families_seccomp ? sluice_seccomp_apply_families(c->seccomp_sock, c->families, seccomp_flags(c),
									   err, errlen)
					   : 0;
	if (build_mounts(c, err, errlen) < 0)
		return -1;
	if (!c->root && drop_identity(c, err, errlen) < 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, errlen, "cannot set no_new_privs: %s", strerror(errno));
		return -1;
	}
	if (chdir(c->workdir) < 0)
		return fail(err, errlen, "cannot change to the workdir", c->workdir);
	if (setenv("HOME", c->home, 1) < 0 || setenv("USER", c->user_name, 1) < 0 ||
	    setenv("LOGNAME", c->user_name, 1) < 0 || setenv("PWD", c->workdir, 1) < 0) {
		snprintf(err, errlen, "cannot set the environment: %s", strerror(errno));
		return -1;
	}
	if (c->landlock_abi > 0 && apply_landlock(c, err, errlen) < 0)
		return -1;
	return sluice_seccomp_apply(c->seccomp_sock, c->families, seccomp_flags(c), err, errlen);
}
