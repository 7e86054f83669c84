/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_daemon.c - `sluice run` through the daemon for a user who is not root
 * (run_daemon.h).  Wire: one request line {"cmd":"run","policy_name":NAME,
 * "argv":[...],"cwd":DIR,"env":["K=V",...]} sent with four descriptors
 * (stdin, stdout, stderr, the write end of a status pipe); the answer line
 * names the sandbox; the daemon writes "exit N" or "signal N" to the pipe
 * when CMD ends (docs/daemon.md).
 */
#include "run_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon.h"
#include "log.h"
#include "run_env.h"

static volatile sig_atomic_t stop_asked;

static void on_stop(int sig)
{
	stop_asked = sig;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sluice run --policy NAME [--env NAME[=VALUE]]... [--inherit-env] -- CMD [ARG...]\n"
		   "\n"
		   "Not as root: the sluice daemon runs CMD as you, in a sandbox of its own, with the\n"
		   "policy NAME the admin placed in its policy directory (/etc/sluice/policies/NAME.yaml).\n"
		   "You must be a member of the daemon's user group (`sluice`). CMD gets your stdin,\n"
		   "stdout and stderr; sluice's exit status is CMD's (128+N for signal N), 2 if it did\n"
		   "not run. Ctrl-C (SIGINT, SIGTERM, SIGHUP) stops CMD and everything it started.\n");
}

/* The descriptor to hand over for `fd`: itself, or /dev/null when closed. */
static int fd_or_null(int fd, int *opened)
{
	if (fcntl(fd, F_GETFD) >= 0)
		return fd;
	*opened = open("/dev/null", O_RDWR | O_CLOEXEC);
	return *opened;
}

/* Read the answer line on fd.  Returns the parsed object or NULL. */
static json_object *read_answer(int fd)
{
	static char buf[1 << 16];
	size_t got = 0;

	while (got < sizeof(buf) - 1) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf + got - (size_t)n, '\n', (size_t)n))
			break;
	}
	buf[got] = 0;
	return got ? json_tokener_parse(buf) : NULL;
}

static json_object *request(const char *policy, char **cmd, char **env)
{
	json_object *req = json_object_new_object(), *a = json_object_new_array(), *e = json_object_new_array();
	char cwd[PATH_MAX];

	json_object_object_add(req, "cmd", json_object_new_string("run"));
	json_object_object_add(req, "policy_name", json_object_new_string(policy));
	for (size_t i = 0; cmd[i]; i++)
		json_object_array_add(a, json_object_new_string(cmd[i]));
	json_object_object_add(req, "argv", a);
	for (size_t i = 0; env && env[i]; i++)
		json_object_array_add(e, json_object_new_string(env[i]));
	json_object_object_add(req, "env", e);
	json_object_object_add(req, "cwd", json_object_new_string(getcwd(cwd, sizeof(cwd)) ? cwd : "/"));
	return req;
}

/* Ask the daemon to stop sandbox `name` (CMD and everything in its cgroup). */
static void ask_stop(const char *name)
{
	json_object *req = json_object_new_object(), *resp;

	json_object_object_add(req, "cmd", json_object_new_string("stop"));
	json_object_object_add(req, "name", json_object_new_string(name));
	resp = sluice_ctl_call(req);
	if (resp)
		json_object_put(resp);
}

/* Wait for "exit N" / "signal N" on fd; stop the sandbox on a signal of ours. */
static int wait_status(int fd, const char *name)
{
	char buf[64];
	size_t got = 0;
	int asked = 0, v;

	for (;;) {
		ssize_t n;

		if (stop_asked && !asked) {
			asked = 1;
			ask_stop(name);
		}
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got >= sizeof(buf) - 1 || memchr(buf, '\n', got))
			break;
	}
	buf[got] = 0;
	if (sscanf(buf, "exit %d", &v) == 1 && v >= 0 && v < 256)
		return v;
	if (sscanf(buf, "signal %d", &v) == 1 && v > 0 && v < 128)
		return 128 + v;
	log_warnx("run: the daemon stopped before %s ended (its sandbox stays filtered; root: `sluice detach %s`)",
		  name, name);
	return 2;
}

int sluice_run_via_daemon(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "env", required_argument, NULL, SLUICE_OPT_ENV },
		{ "inherit-env", no_argument, NULL, SLUICE_OPT_INHERIT_ENV },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sluice_run_env env = { 0 };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *policy = NULL, *sock = getenv("SLUICE_CONTROL_SOCK");
	int c, fd = -1, pipefd[2] = { -1, -1 }, opened[3] = { -1, -1, -1 }, fds[4], rc = 2;
	char msg[512], **envp = NULL, *line = NULL;
	json_object *req = NULL, *resp = NULL, *v;
	struct sigaction sa = { .sa_handler = on_stop };

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': policy = optarg; break;
		case SLUICE_OPT_ENV:
			if (sluice_run_env_add(&env, optarg, msg, sizeof(msg)) < 0) {
				log_warnx("run: %s", msg);
				return 2;
			}
			break;
		case SLUICE_OPT_INHERIT_ENV: env.inherit = true; break;
		case 'h': usage(stdout); return 0;
		default:
			log_warnx("run: %s is root's (not root, `sluice run` goes through the daemon: --policy NAME, "
				  "--env, --inherit-env only)", argv[optind - 1]);
			return 2;
		}
	}
	if (!policy || optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (strchr(policy, '/')) {
		log_warnx("run: --policy %s: not root, a policy is named (a file in the daemon's policy directory), "
			  "not a path", policy);
		return 2;
	}
	envp = sluice_run_env_build(&env);
	req = request(policy, argv + optind, envp);
	free(envp);
	{
		const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
		size_t len = strlen(s);

		line = malloc(len + 2);
		if (!line)
			goto out;
		memcpy(line, s, len); /* NOLINT(bugprone-not-null-terminated-result): a line for send() */
		line[len] = '\n';
		line[len + 1] = 0;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock && *sock ? sock : SLUICE_CONTROL_SOCK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		if (errno == EACCES || errno == EPERM)
			log_warn("run: cannot reach the sluice daemon at %s (not root, `sluice run` goes through it; "
				 "only root and members of its user group, `sluice` by default, may)", sun.sun_path);
		else
			log_warn("run: cannot reach the sluice daemon at %s (not root, `sluice run` goes through it: "
				 "is `sluice daemon` running?)", sun.sun_path);
		goto out;
	}
	{
		/* a daemon that stopped answering must not hang its client (an
		 * attach loads BPF programs and starts children: seconds) */
		struct timeval tv = { .tv_sec = 120 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		log_warn("run: pipe");
		goto out;
	}
	for (int i = 0; i < 3; i++)
		fds[i] = fd_or_null(i, &opened[i]);
	fds[3] = pipefd[1];
	/* from here a signal stops CMD rather than this client alone */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (sluice_ctl_send(fd, line, strlen(line), fds, 4) < 0) {
		int e = errno;

		/* a daemon that refuses a client says why before it closes */
		resp = read_answer(fd);
		if (!resp) {
			log_warnx("run: cannot send to the daemon: %s", strerror(e));
			goto out;
		}
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	if (!resp)
		resp = read_answer(fd);
	if (!resp) {
		log_warnx("run: no answer from the daemon");
		goto out;
	}
	if (!json_object_object_get_ex(resp, "ok", &v) || !json_object_get_boolean(v)) {
		log_warnx("run: %s", json_object_object_get_ex(resp, "error", &v) ? json_object_get_string(v) : "refused");
		goto out;
	}
	if (!json_object_object_get_ex(resp, "name", &v)) {
		log_warnx("run: malformed answer from the daemon");
		goto out;
	}
	close(fd);
	fd = -1;
	rc = wait_status(pipefd[0], json_object_get_string(v));
out:
	if (resp)
		json_object_put(resp);
	if (req)
		json_object_put(req);
	free(line);
	for (int i = 0; i < 3; i++)
		if (opened[i] >= 0)
			close(opened[i]);
	for (int i = 0; i < 2; i++)
		if (pipefd[i] >= 0)
			close(pipefd[i]);
	if (fd >= 0)
		close(fd);
	return rc;
}
