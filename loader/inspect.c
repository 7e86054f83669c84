/* SPDX-License-Identifier: BSD-2-Clause */
#include "inspect.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

int inspect_pid_cgroup(pid_t pid, const char *cg2, char *out, size_t len)
{
	char path[64], line[PATH_MAX];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			if (strstr(line, "(deleted)")) {
				ret = -ENOENT;
				break;
			}
			snprintf(out, len, "%s%s", cg2, strcmp(line + 3, "/") == 0 ? "" : line + 3);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Run argv, return its stdout in buf (NUL-terminated, cut at len - 1
 * bytes; only the first line unless `whole`); 0, or -1 when it could not
 * run, printed nothing or exited non-zero. */
static int run_capture(char *const argv[], char *buf, size_t len, bool whole)
{
	int p[2], status;
	pid_t pid;
	ssize_t n;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		{
			int nul = open("/dev/null", O_WRONLY);

			if (nul >= 0)
				dup2(nul, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t got = 0;

	/* read to EOF: the writer must never see a closed pipe */
	while ((n = read(p[0], buf + (got < len - 1 ? got : 0), got < len - 1 ? len - 1 - got : len - 1)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (got < len - 1)
			got += (size_t)n;
	}
	close(p[0]);
	waitpid(pid, &status, 0);
	if (got == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	buf[got < len ? got : len - 1] = 0;
	if (!whole)
		buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* podman or docker: `inspect` answers "PID ID NAME" (docker's name starts
 * with '/'). */
static int find_podman_docker(const char *tool, const char *ref, struct inspect_container *c)
{
	char *argv[] = { (char *)tool, "inspect", "--format", "{{.State.Pid}} {{.Id}} {{.Name}}", (char *)ref, NULL };
	char buf[512], id[129] = "", name[129] = "";
	long pid = 0;

	if (run_capture(argv, buf, sizeof(buf), false) < 0 || sscanf(buf, "%ld %128s %128s", &pid, id, name) < 2 ||
	    pid <= 0)
		return -1;
	c->pid = (pid_t)pid;
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->name, sizeof(c->name), "%s", name[0] == '/' ? name + 1 : name);
	c->runtime = tool;
	return 0;
}

/* containerd through `ctr` ($CONTAINERD_ADDRESS or its default socket):
 * `ctr -n NS task ls` lists "TASK PID STATUS" lines. */
static int find_containerd(const char *ref, const char *ns, struct inspect_container *c)
{
	char *argv[] = { "ctr", "-n", (char *)ns, "task", "ls", NULL };
	static char buf[65536];
	char *save = NULL;

	if (run_capture(argv, buf, sizeof(buf), true) < 0)
		return -1;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char task[129], status[32];
		long pid;

		if (sscanf(line, "%128s %ld %31s", task, &pid, status) == 3 && strcmp(task, ref) == 0 && pid > 0) {
			if (strcmp(status, "RUNNING") != 0)
				return -1;
			c->pid = (pid_t)pid;
			snprintf(c->id, sizeof(c->id), "%s", task);
			snprintf(c->name, sizeof(c->name), "%s", task);
			snprintf(c->ns, sizeof(c->ns), "%s", ns);
			c->runtime = "containerd";
			return 0;
		}
	}
	return -1;
}

/* Does containerd know namespace `ns`?  1 yes, 0 no, -1 no answer. */
static int containerd_has_ns(const char *ns)
{
	char *argv[] = { "ctr", "namespaces", "ls", "-q", NULL };
	static char buf[65536];
	char *save = NULL;

	if (run_capture(argv, buf, sizeof(buf), true) < 0)
		return -1;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strcmp(line, ns) == 0)
			return 1;
	return 0;
}

int inspect_container(const char *ref, const char *ns, struct inspect_container *c, char *msg, size_t msglen)
{
	static const char *const namespaces[] = { "default", "k8s.io", "moby" };

	memset(c, 0, sizeof(*c));
	if (ns) {
		int has = containerd_has_ns(ns);

		if (has < 0) {
			snprintf(msg, msglen, "containerd does not answer (ctr namespaces ls; is containerd running, "
				 "$CONTAINERD_ADDRESS?)");
			return -ENOENT;
		}
		if (!has) {
			snprintf(msg, msglen, "containerd has no namespace '%s'", ns);
			return -ENOENT;
		}
		if (find_containerd(ref, ns, c) == 0)
			return 0;
		snprintf(msg, msglen, "no running containerd container '%s' in namespace %s", ref, ns);
		return -ENOENT;
	}
	if (find_podman_docker("podman", ref, c) == 0 || find_podman_docker("docker", ref, c) == 0)
		return 0;
	for (size_t i = 0; i < sizeof(namespaces) / sizeof(namespaces[0]); i++)
		if (find_containerd(ref, namespaces[i], c) == 0)
			return 0;
	snprintf(msg, msglen, "no running podman, docker or containerd (namespaces default, k8s.io, moby) "
		 "container '%s'", ref);
	return -ENOENT;
}

pid_t inspect_cgroup_first_pid(const char *cg)
{
	char path[PATH_MAX];
	FILE *f;
	int pid = -ENOENT;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%d", &pid) != 1)
		pid = -ENOENT;
	fclose(f);
	return pid;
}

static void collect_pids(const char *cg, int **pids, size_t *n, size_t *cap, int depth)
{
	char path[PATH_MAX];
	FILE *f;
	DIR *d;
	struct dirent *de;
	int pid;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "re");
	if (f) {
		while (fscanf(f, "%d", &pid) == 1) {
			if (*n == *cap) {
				int *np = realloc(*pids, (*cap * 2 + 16) * sizeof(int));

				if (!np)
					break;
				*pids = np;
				*cap = *cap * 2 + 16;
			}
			(*pids)[(*n)++] = pid;
		}
		fclose(f);
	}
	if (depth > 16 || !(d = opendir(cg)))
		return;
	while ((de = readdir(d))) {
		if (de->d_type == DT_DIR && de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", cg, de->d_name);
			collect_pids(path, pids, n, cap, depth + 1);
		}
	}
	closedir(d);
}

static const char *tcp_state(unsigned st)
{
	static const char *names[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
				       "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING" };

	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

/* "0100007F:1F90" (v4) or 32 hex digits (v6) -> "127.0.0.1:8080" */
static void proc_addr(const char *hex, char *out, size_t len)
{
	char a[33] = "";
	unsigned port = 0;
	unsigned char b[16];
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sscanf(hex, "%32[0-9A-Fa-f]:%x", a, &port) != 2) {
		snprintf(out, len, "?");
		return;
	}
	if (strlen(a) == 8) {
		uint32_t v = (uint32_t)strtoul(a, NULL, 16);

		inet_ntop(AF_INET, &v, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, port);
	} else if (strlen(a) == 32) {
		for (int w = 0; w < 4; w++) {
			char word[9];
			uint32_t v;

			memcpy(word, a + 8 * w, 8);
			word[8] = 0;
			v = (uint32_t)strtoul(word, NULL, 16);
			memcpy(b + 4 * w, &v, 4);
		}
		inet_ntop(AF_INET6, b, ip, sizeof(ip));
		snprintf(out, len, "[%s]:%u", ip, port);
	} else {
		snprintf(out, len, "?");
	}
}

struct json_object *inspect_cgroup_connections(const char *cg)
{
	static const char *tables[] = { "tcp", "tcp6", "udp", "udp6" };
	json_object *arr = json_object_new_array();
	int *pids = NULL;
	size_t n = 0, cap = 0;

	collect_pids(cg, &pids, &n, &cap, 0);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX], comm[64] = "";
		DIR *d;
		struct dirent *de;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", pids[i]);
		if ((f = fopen(path, "re"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/%d/fd", pids[i]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			char link[PATH_MAX], target[128];
			unsigned long inode;
			ssize_t l;

			snprintf(link, sizeof(link), "/proc/%d/fd/%s", pids[i], de->d_name);
			l = readlink(link, target, sizeof(target) - 1);
			if (l <= 0)
				continue;
			target[l] = 0;
			if (sscanf(target, "socket:[%lu]", &inode) != 1)
				continue;
			for (size_t t = 0; t < 4; t++) {
				char tp[64], line[512];

				snprintf(tp, sizeof(tp), "/proc/%d/net/%s", pids[i], tables[t]);
				f = fopen(tp, "re");
				if (!f)
					continue;
				while (fgets(line, sizeof(line), f)) {
					char loc[64], rem[64], lbuf[80], rbuf[80];
					unsigned st;
					unsigned long ino;

					if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %*d %*d %lu", loc, rem, &st, &ino) != 4 ||
					    ino != inode)
						continue;
					json_object *c = json_object_new_object();

					proc_addr(loc, lbuf, sizeof(lbuf));
					proc_addr(rem, rbuf, sizeof(rbuf));
					json_object_object_add(c, "pid", json_object_new_int(pids[i]));
					json_object_object_add(c, "comm", json_object_new_string(comm));
					json_object_object_add(c, "fd", json_object_new_int(atoi(de->d_name)));
					json_object_object_add(c, "inode", json_object_new_uint64(inode));
					json_object_object_add(c, "proto", json_object_new_string(tables[t]));
					json_object_object_add(c, "local", json_object_new_string(lbuf));
					json_object_object_add(c, "remote", json_object_new_string(rbuf));
					json_object_object_add(c, "state",
							       json_object_new_string(t < 2 ? tcp_state(st) : "-"));
					json_object_array_add(arr, c);
				}
				fclose(f);
			}
		}
		closedir(d);
	}
	free(pids);
	return arr;
}
