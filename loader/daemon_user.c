/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_user.c - `sluice run` for users who are not root, through the
 * daemon (daemon_user.h).  A run: a cgroup <cgroup2>/sluice/NAME made by
 * the daemon; the command forked, moved into it, and held on a pipe until
 * the daemon's attach (the admin's policy, by name) is in force; then it
 * drops to the caller's uid, gid and groups (without the user group), sets
 * no_new_privs and execs.  When it ends, the client hears its status, what
 * is left in the cgroup is killed, the cgroup removed, the sandbox detached:
 * nothing of it ever runs unfiltered.
 */
#include "daemon_user.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "ctlsrv.h"
#include "log.h"

#define ARGV_MAX   256     /* arguments of a command */
#define ENV_MAX    1024    /* its environment variables */
#define GROUPS_MAX 256     /* the caller's supplementary groups */
#define KILL_MS    5000    /* a finished run's cgroup: time for what is left to die */
#define RUNS_MAX   16      /* commands one user runs at once (each loads its own BPF programs) */

extern char **environ;

struct urun {
	struct urun *next;
	char name[64];
	char cgroup[PATH_MAX];
	uid_t uid;
	pid_t pid;
	int status_fd;            /* the client's status pipe; -1 once told */
};

static struct {
	gid_t gid;                /* the user group; (gid_t)-1 none */
	struct urun *runs;
	unsigned seq;
} U = { .gid = (gid_t)-1 };

static struct urun *find_run(const char *name)
{
	for (struct urun *r = U.runs; name && r; r = r->next)
		if (strcmp(r->name, name) == 0)
			return r;
	return NULL;
}

int daemon_user_setup(const char *group, bool required, const char *state_dir, const char *sock_path, char *msg,
		      size_t msglen)
{
	struct group *g;

	if (!group || !group[0])
		return 0;
	errno = 0;
	g = getgrnam(group);
	if (!g) {
		if (!required)
			return 0;
		snprintf(msg, msglen, "--user-group %s: no such group (groupadd --system %s)", group, group);
		return -1;
	}
	if (chown(state_dir, 0, g->gr_gid) < 0 || chmod(state_dir, 0710) < 0 || chown(sock_path, 0, g->gr_gid) < 0 ||
	    chmod(sock_path, 0660) < 0) {
		snprintf(msg, msglen, "cannot open the control socket to group %s: %s", group, strerror(errno));
		return -1;
	}
	U.gid = g->gr_gid;
	ctlsrv_allow_group(g->gr_gid);
	log_info("daemon: members of group %s (gid %u) may run commands in sandboxes of their own",
		 group, (unsigned)g->gr_gid);
	return 0;
}

bool daemon_user_handles(json_object *req)
{
	const char *cmd = ctlsrv_str(req, "cmd");

	if (!cmd)
		return false;
	return strcmp(cmd, "run") == 0 || strcmp(cmd, "stop") == 0 ||
	       (strcmp(cmd, "detach") == 0 && find_run(ctlsrv_str(req, "name")));
}

/* The cgroup2 path of process pid (its "0::" line, joined to the mount). */
static int proc_cgroup(pid_t pid, char *buf, size_t len)
{
	char path[64], line[PATH_MAX], cg2[PATH_MAX];
	FILE *f;
	int rc = -1;

	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(buf, len, "%s%s", cg2, line + 3);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* The groups the command gets: the caller's (its passwd entry's), without
 * the user group, so that nothing in the sandbox reaches the socket. */
static int user_groups(uid_t uid, gid_t gid, gid_t *out, int *n, char *msg, size_t msglen)
{
	struct passwd *pw = getpwuid(uid);
	gid_t all[GROUPS_MAX];
	int k = GROUPS_MAX, m = 0;

	if (!pw) {
		out[0] = gid;
		*n = 1;
		return 0;
	}
	if (getgrouplist(pw->pw_name, gid, all, &k) < 0) {
		snprintf(msg, msglen, "user %s is in more than %d groups", pw->pw_name, GROUPS_MAX);
		return -1;
	}
	for (int i = 0; i < k; i++)
		if (all[i] != U.gid)
			out[m++] = all[i];
	*n = m;
	return 0;
}

/* The caller's namespace of type ns ("mnt", "net") when it is not the
 * daemon's: an O_RDONLY fd to /proc/PID/ns/NS (the caller waits for the
 * answer: its pid is its own), else -1. */
static int foreign_ns(pid_t pid, const char *ns)
{
	char path[64];
	struct stat mine, theirs;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &mine) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &theirs) < 0 || (theirs.st_ino == mine.st_ino && theirs.st_dev == mine.st_dev)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* In the child, between fork and exec: wait for the filter, enter the
 * caller's mount and network namespaces (mnt_fd, net_fd; -1: the daemon's
 * are the caller's), become the caller, exec.  Never returns. */
static void child(int go, const int *fds, int mnt_fd, int net_fd, uid_t uid, gid_t gid, const gid_t *groups,
		  int n_groups, const char *cwd, char **argv, char **envp)
{
	char c;
	sigset_t all;

	/* the daemon's handlers and mask are not the command's */
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_PDEATHSIG, 0);
	/* held until the sandbox is attached: EOF means the attach failed */
	if (read(go, &c, 1) != 1)
		_exit(127);
	close(go);
	if ((net_fd >= 0 && setns(net_fd, CLONE_NEWNET) < 0) || (mnt_fd >= 0 && setns(mnt_fd, CLONE_NEWNS) < 0)) {
		dprintf(fds[2], "sluice: cannot enter your namespaces: %s\n", strerror(errno));
		_exit(127);
	}
	setsid();
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			_exit(127);
	/* only 0, 1 and 2 cross the exec (Linux 5.9; else each one) */
	if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
		for (int fd = 3; fd < 65536; fd++)
			close(fd);
	if (setgroups((size_t)n_groups, groups) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0 ||
	    getuid() != uid || geteuid() != uid || getegid() != gid) {
		dprintf(2, "sluice: cannot become uid %u: %s\n", (unsigned)uid, strerror(errno));
		_exit(127);
	}
	/* set-user-id programs give nothing: root could leave the cgroup */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		dprintf(2, "sluice: no_new_privs: %s\n", strerror(errno));
		_exit(127);
	}
	if (chdir(cwd) < 0) {
		dprintf(2, "sluice: cannot enter %s: %s\n", cwd, strerror(errno));
		_exit(127);
	}
	environ = envp;
	execvp(argv[0], argv);
	dprintf(2, "sluice: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* A JSON array of strings into a NULL-terminated malloc'd vector (pointers
 * into the JSON), at most max.  NULL when it is not one. */
static char **str_array(json_object *a, size_t min, size_t max, bool assignments)
{
	size_t n;
	char **v;

	if (!a || !json_object_is_type(a, json_type_array))
		return NULL;
	n = json_object_array_length(a);
	if (n < min || n > max)
		return NULL;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);

		if (!json_object_is_type(e, json_type_string) ||
		    (assignments && (!strchr(json_object_get_string(e), '=') || json_object_get_string(e)[0] == '='))) {
			free(v);
			return NULL;
		}
		v[i] = (char *)json_object_get_string(e);
	}
	return v;
}

/* Why run request of peer cannot be served (an answer), or NULL. */
static json_object *run_refusal(const char *pname, const char *cwd, const struct ctlsrv_peer *peer)
{
	unsigned n = 0;

	if (peer->uid == 0)
		return ctlsrv_error("run through the daemon is for users who are not root: root runs `sluice run` itself");
	if (!pname)
		return ctlsrv_error("run needs policy_name: a policy of the admin's, by name");
	if (!cwd || cwd[0] != '/')
		return ctlsrv_error("run needs cwd, an absolute path");
	if (peer->n_fds != 4 || peer->fds[0] < 0 || peer->fds[1] < 0 || peer->fds[2] < 0 || peer->fds[3] < 0)
		return ctlsrv_error("run needs four descriptors with the request (stdin, stdout, stderr, the status pipe)");
	for (struct urun *q = U.runs; q; q = q->next)
		n += q->uid == peer->uid;
	if (n >= RUNS_MAX)
		return ctlsrv_error("you run %u commands through the daemon already: at most %d at once", n, RUNS_MAX);
	if (peer->gid == U.gid)
		return ctlsrv_error("your primary group is the daemon's user group: the command would keep its access to "
			     "the control socket; run from another primary group (sg, newgrp)");
	return NULL;
}

/* Move pid into cgroup cg: NULL, or the error answer. */
static json_object *move_into(const char *cg, pid_t pid)
{
	char procs[PATH_MAX + 16], pidbuf[16];
	int fd, len = snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, pidbuf, (size_t)len) != len) {
		json_object *o = ctlsrv_error("cannot move the command into %s: %s", cg, strerror(errno));

		if (fd >= 0)
			close(fd);
		return o;
	}
	close(fd);
	return NULL;
}

/* Attach cgroup cg as sandbox `name` with the admin's policy pname (the
 * netns of process netns_pid, when > 0): the attach's answer. */
static json_object *run_attach(const struct daemon_user_ops *ops, const char *name, const char *cg, const char *pname,
			       pid_t netns_pid)
{
	json_object *areq = json_object_new_object(), *o;

	json_object_object_add(areq, "cmd", json_object_new_string("attach"));
	json_object_object_add(areq, "name", json_object_new_string(name));
	json_object_object_add(areq, "cgroup", json_object_new_string(cg));
	json_object_object_add(areq, "policy_name", json_object_new_string(pname));
	if (netns_pid > 0) {
		/* the proxy and resolver listen where the command runs */
		char ns[64];

		snprintf(ns, sizeof(ns), "/proc/%d/ns/net", (int)netns_pid);
		json_object_object_add(areq, "netns", json_object_new_string(ns));
	}
	o = ops->attach(areq);
	json_object_put(areq);
	return o;
}

static json_object *do_run(json_object *req, struct ctlsrv_peer *peer, const struct daemon_user_ops *ops)
{
	const char *pname = ctlsrv_str(req, "policy_name"), *cwd = ctlsrv_str(req, "cwd");
	char **argv = NULL, **envp = NULL, cg2[PATH_MAX], cg[PATH_MAX], name[64], msg[512], line[1024];
	gid_t groups[GROUPS_MAX];
	int n_groups = 0, go[2] = { -1, -1 }, cgfd, mnt_fd = -1, net_fd = -1;
	json_object *o = NULL, *ok;
	struct urun *r = NULL;
	pid_t pid;

	o = run_refusal(pname, cwd, peer);
	if (o)
		return o;
	argv = str_array(json_object_object_get(req, "argv"), 1, ARGV_MAX, false);
	envp = str_array(json_object_object_get(req, "env"), 0, ENV_MAX, true);
	if (!argv || !envp || !argv[0][0]) {
		o = ctlsrv_error("run needs argv (1 to %d strings, the first not empty) and env (at most %d NAME=VALUE strings)",
			  ARGV_MAX, ENV_MAX);
		goto out;
	}
	if (user_groups(peer->uid, peer->gid, groups, &n_groups, msg, sizeof(msg)) < 0) {
		o = ctlsrv_error("%s", msg);
		goto out;
	}
	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0) {
		o = ctlsrv_error("no cgroup2 mount");
		goto out;
	}
	snprintf(name, sizeof(name), "u%u-%d-%u", (unsigned)peer->uid, (int)peer->pid, U.seq++);
	snprintf(cg, sizeof(cg), "%s/sluice", cg2);
	if (mkdir(cg, 0755) < 0 && errno != EEXIST) {
		o = ctlsrv_error("cannot make %s: %s", cg, strerror(errno));
		goto out;
	}
	snprintf(cg, sizeof(cg), "%s/sluice/%s", cg2, name);
	cgfd = cg_create(cg);
	if (cgfd < 0) {
		o = ctlsrv_error("cannot make cgroup %s: %s", cg, strerror(-cgfd));
		goto out;
	}
	close(cgfd);
	/* the command sees the caller's files and network, not the daemon's */
	mnt_fd = foreign_ns(peer->pid, "mnt");
	net_fd = foreign_ns(peer->pid, "net");
	if (pipe2(go, O_CLOEXEC) < 0) {
		o = ctlsrv_error("pipe: %s", strerror(errno));
		rmdir(cg);
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		o = ctlsrv_error("fork: %s", strerror(errno));
		rmdir(cg);
		goto out;
	}
	if (pid == 0) {
		close(go[1]);
		child(go[0], peer->fds, mnt_fd, net_fd, peer->uid, peer->gid, groups, n_groups, cwd, argv, envp);
	}
	close(go[0]);
	go[0] = -1;
	/* into the cgroup, then the filter, then the command's first instruction */
	o = move_into(cg, pid);
	if (o)
		goto fail;
	o = run_attach(ops, name, cg, pname, net_fd >= 0 ? peer->pid : 0);
	if (!json_object_object_get_ex(o, "ok", &ok) || !json_object_get_boolean(ok))
		goto fail;  /* the attach's own answer says why (and its refusal line) */
	json_object_put(o);
	o = NULL;
	r = calloc(1, sizeof(*r));
	if (!r || write(go[1], "g", 1) != 1) {
		o = ctlsrv_error("cannot start the command: %s", r ? strerror(errno) : "out of memory");
		free(r);
		r = NULL;
		{
			json_object *d = json_object_new_object(), *a;

			cg_kill_and_remove(cg, KILL_MS);
			json_object_object_add(d, "name", json_object_new_string(name));
			a = ops->detach(d);
			json_object_put(a);
			json_object_put(d);
		}
		waitpid(pid, NULL, 0);
		goto out;
	}
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", cg);
	r->uid = peer->uid;
	r->pid = pid;
	r->status_fd = peer->fds[3];
	peer->fds[3] = -1;
	r->next = U.runs;
	U.runs = r;
	{
		struct passwd *pw = getpwuid(peer->uid);

		snprintf(line, sizeof(line), "sandbox %s: %s (uid %u) runs %s (pid %d) with policy %s", name,
			 pw ? pw->pw_name : "?", (unsigned)peer->uid, argv[0], (int)pid, pname);
		ops->emit(name, "user-run", line);
	}
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "pid", json_object_new_int(pid));
	goto out;
fail:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	rmdir(cg);
out:
	if (mnt_fd >= 0)
		close(mnt_fd);
	if (net_fd >= 0)
		close(net_fd);
	if (go[0] >= 0)
		close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	free(argv);
	free(envp);
	return o;
}

/* Stop run r: kill everything in its cgroup; the reaping does the rest. */
static json_object *do_stop(struct urun *r)
{
	json_object *o = json_object_new_object();

	cg_kill_procs(r->cgroup);
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "name", json_object_new_string(r->name));
	return o;
}

/* Status with the peer's own sandboxes only. */
static json_object *own_status(json_object *req, uid_t uid, const struct daemon_user_ops *ops)
{
	json_object *all = ops->status(req), *arr, *mine = json_object_new_array(), *o = json_object_new_object();

	if (json_object_object_get_ex(all, "sandboxes", &arr) && json_object_is_type(arr, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *s = json_object_array_get_idx(arr, i);
			struct urun *r = find_run(ctlsrv_str(s, "name"));

			if (r && r->uid == uid)
				json_object_array_add(mine, json_object_get(s));
		}
	}
	json_object_put(all);
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "sandboxes", mine);
	return o;
}

json_object *daemon_user_request(json_object *req, struct ctlsrv_peer *peer, const struct daemon_user_ops *ops)
{
	const char *cmd = ctlsrv_str(req, "cmd");
	struct urun *r;

	if (peer->uid != 0) {
		char path[PATH_MAX];

		/* nothing inside a sandbox speaks for its user: it could stop its own filter */
		if (proc_cgroup(peer->pid, path, sizeof(path)) < 0 || ops->in_sandbox(path)) {
			snprintf(path, sizeof(path), "uid %u (pid %d), from inside a sandbox or from nowhere known, "
				 "refused on the control socket", (unsigned)peer->uid, (int)peer->pid);
			ops->emit(NULL, "control-client-not-permitted", path);
			return ctlsrv_error("permission denied: not from inside a sandbox");
		}
	}
	if (!cmd)
		return ctlsrv_error("malformed request: want one JSON object with \"cmd\"");
	if (strcmp(cmd, "run") == 0)
		return do_run(req, peer, ops);
	if (strcmp(cmd, "stop") == 0 || strcmp(cmd, "detach") == 0) {
		r = find_run(ctlsrv_str(req, "name"));
		if (!r || (peer->uid != 0 && r->uid != peer->uid))
			return ctlsrv_error("no sandbox of yours named '%s'", ctlsrv_str(req, "name") ? ctlsrv_str(req, "name") : "");
		return do_stop(r);
	}
	if (strcmp(cmd, "status") == 0)
		return own_status(req, peer->uid, ops);
	return ctlsrv_error("permission denied: '%s' is root's (members of the user group may run, stop and see their own "
		     "sandboxes)", cmd);
}

int daemon_user_may_follow(const struct ctlsrv_peer *peer, const char *sandbox, const struct daemon_user_ops *ops,
			   char *msg, size_t msglen)
{
	char path[PATH_MAX];
	struct urun *r;

	if (peer->uid == 0)
		return 0;
	if (proc_cgroup(peer->pid, path, sizeof(path)) < 0 || ops->in_sandbox(path)) {
		snprintf(msg, msglen, "permission denied: not from inside a sandbox");
		return -1;
	}
	if (!sandbox) {
		snprintf(msg, msglen, "permission denied: following every sandbox is root's (name one of yours: --sandbox)");
		return -1;
	}
	r = find_run(sandbox);
	if (!r || r->uid != peer->uid) {
		snprintf(msg, msglen, "permission denied: no sandbox of yours named '%s'", sandbox);
		return -1;
	}
	return 0;
}

bool daemon_user_reaped(pid_t pid, int status, const struct daemon_user_ops *ops)
{
	struct urun **pp, *r = NULL;
	char line[256], msg[PATH_MAX + 128];
	json_object *d, *a;
	int err;

	for (pp = &U.runs; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == pid) {
			r = *pp;
			*pp = r->next;
			break;
		}
	if (!r)
		return false;
	if (WIFSIGNALED(status))
		snprintf(line, sizeof(line), "signal %d\n", WTERMSIG(status));
	else
		snprintf(line, sizeof(line), "exit %d\n", WEXITSTATUS(status));
	if (write(r->status_fd, line, strlen(line)) < 0)
		log_debug("daemon: %s: the client is gone: %s", r->name, strerror(errno));
	close(r->status_fd);
	line[strcspn(line, "\n")] = 0;
	/* first what is left in it, then the filter: never unfiltered */
	err = cg_kill_and_remove(r->cgroup, KILL_MS);
	if (err < 0) {
		snprintf(msg, sizeof(msg), "sandbox %s: the command ended (%s), but its cgroup %s could not be emptied: %s; "
			 "its filter stays", r->name, line, r->cgroup, strerror(-err));
		ops->emit(r->name, "user-run-exit", msg);
		free(r);
		return true;
	}
	snprintf(msg, sizeof(msg), "sandbox %s: the command ended (%s)", r->name, line);
	ops->emit(r->name, "user-run-exit", msg);
	d = json_object_new_object();
	json_object_object_add(d, "name", json_object_new_string(r->name));
	a = ops->detach(d);
	json_object_put(a);
	json_object_put(d);
	free(r);
	return true;
}
