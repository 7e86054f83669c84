/* SPDX-License-Identifier: BSD-2-Clause */
#include "gc.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cgroup.h"
#include "cli.h"
#include "daemon.h"
#include "kfeatures.h"
#include "log.h"
#include "owner.h"
#include "sandbox.h"

/* a sandbox with no owner record younger than this may be starting */
#define GC_MIN_AGE_S 60

struct gc_view {
	char name[SLUICE_NAME_MAX + 1];
	char pin_dir[PATH_MAX];
	char cgroup[PATH_MAX];      /* <cgroup2>/sluice/NAME, "" when absent */
	bool pins;
	int links, links_live;      /* link pins; those still attached to a cgroup */
	int procs;                  /* processes in cgroup (top level), -1 unknown */
	time_t pin_age;             /* seconds since the pin directory changed */
	int owner_err;              /* 0: owner read; -ENOENT: no record */
	struct sluice_owner owner;
	bool owner_alive;
	bool daemon_state;          /* SLUICE_STATE_DIR/sandboxes/NAME.json */
};

static int count_procs(const char *cg)
{
	char path[PATH_MAX];
	int n = 0, pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%d", &pid) == 1)
		n++;
	fclose(f);
	return n;
}

/* Count the link pins under dir and those whose cgroup still exists (a
 * cgroup link whose cgroup was removed reports cgroup_id 0). */
static void count_links(const char *dir, int *links, int *live)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	*links = *live = 0;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct bpf_link_info info;
		__u32 len = sizeof(info);
		int fd;

		if (strncmp(de->d_name, "link_", 5) != 0)
			continue;
		(*links)++;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == BPF_LINK_TYPE_CGROUP &&
		    info.cgroup.cgroup_id != 0)
			(*live)++;
		close(fd);
	}
	closedir(d);
}

static void gc_look(const char *name, const char *cg2, struct gc_view *v)
{
	char path[PATH_MAX];
	struct stat st;

	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", name);
	snprintf(v->pin_dir, sizeof(v->pin_dir), "%s/%s", SLUICE_PIN_ROOT, name);
	if (stat(v->pin_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		v->pins = true;
		v->pin_age = time(NULL) - st.st_mtime;
		count_links(v->pin_dir, &v->links, &v->links_live);
	}
	v->procs = -1;
	if (cg2 && cg2[0]) {
		snprintf(path, sizeof(path), "%s/sluice/%s", cg2, name);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(v->cgroup, sizeof(v->cgroup), "%s", path);
			v->procs = count_procs(path);
		}
	}
	v->owner_err = sluice_owner_read(name, &v->owner);
	v->owner_alive = v->owner_err == 0 && sluice_owner_alive(&v->owner);
	snprintf(path, sizeof(path), "%s/sandboxes/%s.json", SLUICE_STATE_DIR, name);
	v->daemon_state = access(path, F_OK) == 0;
}

/* Decide: true to remove, with the reason in why either way. */
static bool gc_verdict(const struct gc_view *v, char *why, size_t len)
{
	if (v->daemon_state || (v->owner_err == 0 && strcmp(v->owner.kind, "daemon") == 0)) {
		bool up = v->owner_err == 0 && v->owner_alive;

		snprintf(why, len, "held by the daemon (%s): `sluice detach %s`%s", up ? "running" : "not running",
			 v->name, up ? "" : ", or `sluice detach --force` if the daemon cannot start");
		return false;
	}
	if (v->owner_err == 0) {
		if (v->owner_alive) {
			snprintf(why, len, "its owner, sluice %s pid %d, is running", v->owner.kind, (int)v->owner.pid);
			return false;
		}
		snprintf(why, len, "its owner, sluice %s pid %d, is gone", v->owner.kind, (int)v->owner.pid);
		return true;
	}
	/* no owner record (made by an older sluice, or starting right now) */
	if (strncmp(v->name, "run-", 4) == 0) {
		char *end;
		long pid = strtol(v->name + 4, &end, 10);
		char p[64];

		snprintf(p, sizeof(p), "/proc/%ld", pid);
		if (*end == 0 && pid > 0 && access(p, F_OK) == 0) {
			snprintf(why, len, "no owner record, and pid %ld of its name is running", pid);
			return false;
		}
	}
	if (v->procs > 0) {
		snprintf(why, len, "no owner record, and %d processes run in %s", v->procs, v->cgroup);
		return false;
	}
	if (v->links_live > 0 && !v->cgroup[0]) {
		snprintf(why, len, "no owner record, and its filter is attached to a live cgroup");
		return false;
	}
	if (v->pins && v->pin_age < GC_MIN_AGE_S) {
		snprintf(why, len, "no owner record, made %lds ago (may be starting; gc waits %ds)", (long)v->pin_age,
			 GC_MIN_AGE_S);
		return false;
	}
	snprintf(why, len, "no owner record and %s", v->cgroup[0] ? "its cgroup is empty" : "its cgroup is gone");
	return true;
}

const char *const sluice_state_exts[] = { "json", "yaml", "yaml.sig", "ca.pem", "upstream-ca.pem", "seq", "dns-stats", NULL };

static int remove_pins(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char path[PATH_MAX];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) == 0)
			(*n)++;
		else if (errno != ENOENT)
			err = -errno;
	}
	closedir(d);
	if (!err && rmdir(dir) < 0 && errno != ENOENT)
		err = -errno;
	rmdir(SLUICE_PIN_ROOT); /* only if empty */
	return err;
}

int sluice_sandbox_remove(const char *name, const char *daemon_state_dir, bool dry_run, char *did, size_t didlen,
			  char *msg, size_t msglen)
{
	char cg2[PATH_MAX] = "", path[PATH_MAX];
	struct gc_view v;
	size_t at = 0;
	int err, pins = 0;
	bool has_state = false;

#define DID(...)                                                                   \
	do {                                                                       \
		if (at < didlen)                                                   \
			at += (size_t)snprintf(did + at, didlen - at, __VA_ARGS__); \
	} while (0)
	did[0] = 0;
	if (sluice_name_check(name, msg, msglen) < 0)
		return -EINVAL;
	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0)
		cg2[0] = 0;
	gc_look(name, cg2, &v);
	if (v.owner_err == 0 && v.owner_alive) {
		snprintf(msg, msglen, "sandbox %s is owned by sluice %s pid %d, which is running: stop it instead", name,
			 v.owner.kind, (int)v.owner.pid);
		return -EBUSY;
	}
	if (daemon_state_dir) {
		snprintf(path, sizeof(path), "%s/sandboxes/%s.json", daemon_state_dir, name);
		has_state = access(path, F_OK) == 0;
	}
	if (!v.pins && !v.cgroup[0] && v.owner_err != 0 && !has_state) {
		snprintf(msg, msglen, "no sandbox named '%s' (no pins under %s, no cgroup %s/sluice/%s)", name,
			 SLUICE_PIN_ROOT, cg2, name);
		return -ENOENT;
	}
	/* 1. its own cgroup, processes first: nothing in it runs unfiltered */
	if (v.cgroup[0]) {
		if (v.procs > 0)
			DID("%s %d process%s, ", dry_run ? "kill" : "killed", v.procs, v.procs == 1 ? "" : "es");
		if (!dry_run && (err = cg_kill_and_remove(v.cgroup, 5000)) < 0) {
			snprintf(msg, msglen, "cannot remove cgroup %s: %s (its filter stays)", v.cgroup, strerror(-err));
			return err;
		}
		DID("%s cgroup %s, ", dry_run ? "remove" : "removed", v.cgroup);
		snprintf(path, sizeof(path), "%s/sluice", cg2);
		if (!dry_run)
			rmdir(path); /* only if no other sandbox uses it */
	}
	/* 2. the filter */
	if (v.pins) {
		if (dry_run) {
			DID("unpin %s (%d links), ", v.pin_dir, v.links);
		} else {
			err = remove_pins(v.pin_dir, &pins);
			if (err < 0) {
				snprintf(msg, msglen, "cannot remove the pins under %s: %s", v.pin_dir, strerror(-err));
				return err;
			}
			DID("unpinned %s (%d pins), ", v.pin_dir, pins);
		}
	}
	/* 3. the daemon's records of it */
	if (daemon_state_dir) {
		for (size_t i = 0; sluice_state_exts[i]; i++) {
			snprintf(path, sizeof(path), "%s/sandboxes/%s.%s", daemon_state_dir, name, sluice_state_exts[i]);
			if (access(path, F_OK) == 0) {
				DID("%s %s, ", dry_run ? "remove" : "removed", path);
				if (!dry_run)
					unlink(path);
			}
		}
		/* its netns, and its upstream netns (--upstream-netns) */
		for (int u = 0; u < 2; u++) {
			snprintf(path, sizeof(path), "%s/netns/%s%s", daemon_state_dir, name, u ? ".upstream" : "");
			if (access(path, F_OK) == 0) {
				DID("%s %s, ", dry_run ? "release" : "released", path);
				if (!dry_run) {
					umount2(path, MNT_DETACH);
					unlink(path);
				}
			}
		}
	}
	if (v.owner_err == 0 && !dry_run)
		sluice_owner_remove(name);
	if (at >= 2 && at < didlen)
		did[at - 2] = 0; /* the last ", " */
	else if (!did[0])
		snprintf(did, didlen, "nothing left to remove");
	return 0;
#undef DID
}

static int add_name(char ***names, size_t *n, size_t *cap, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*names)[i], name) == 0)
			return 0;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		char **t = realloc(*names, nc * sizeof(*t));

		if (!t)
			return -ENOMEM;
		*names = t;
		*cap = nc;
	}
	(*names)[*n] = strdup(name);
	if (!(*names)[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Every sandbox name: pin directories and cgroups under <cgroup2>/sluice. */
static int list_names(const char *cg2, char ***names, size_t *n)
{
	const char *dirs[3] = { SLUICE_PIN_ROOT, SLUICE_OWNER_DIR, NULL };
	char cgdir[PATH_MAX];
	size_t cap = 0;

	if (cg2[0]) {
		snprintf(cgdir, sizeof(cgdir), "%s/sluice", cg2);
		dirs[2] = cgdir;
	}
	for (int i = 0; i < 3; i++) {
		DIR *d = dirs[i] ? opendir(dirs[i]) : NULL;
		struct dirent *de;

		if (!d)
			continue;
		while ((de = readdir(d))) {
			char msg[128];

			if (de->d_type != (i == 1 ? DT_REG : DT_DIR) || de->d_name[0] == '.' ||
			    sluice_name_check(de->d_name, msg, sizeof(msg)) < 0)
				continue;
			if (add_name(names, n, &cap, de->d_name) < 0) {
				closedir(d);
				return -ENOMEM;
			}
		}
		closedir(d);
	}
	return 0;
}

/* One sandbox's line: "ACTION NAME: WHY" as text, or {"name", "action",
 * "why"} appended to arr under -j.  action: removed, would remove, kept,
 * failed. */
static void say(json_object *arr, const char *action, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void say(json_object *arr, const char *action, const char *name, const char *fmt, ...)
{
	char why[4096];
	va_list ap;
	json_object *o;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!arr) {
		printf("%s %s: %s\n", action, name, why);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "action", json_object_new_string(action));
	json_object_object_add(o, "why", json_object_new_string(why));
	json_object_array_add(arr, o);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void usage_gc(FILE *f)
{
	fprintf(f,
		"usage: sluice gc [--dry-run] [--json] [NAME...]\n"
		"\n"
		"Find sandboxes left behind (a `sluice run` killed with SIGKILL leaves its pins\n"
		"under " SLUICE_PIN_ROOT "/NAME and its cgroup <cgroup2>/sluice/NAME) and remove\n"
		"them: the processes still in such a sandbox's cgroup are killed and the cgroup\n"
		"removed first, then its filter is unpinned (nothing runs unfiltered).\n"
		"\n"
		"Never removed: a sandbox whose owner (the `sluice run` or daemon recorded in\n"
		SLUICE_OWNER_DIR "/NAME, by pid and start time) is alive; one the daemon\n"
		"holds (`sluice detach NAME`); one without an owner record whose cgroup still\n"
		"has processes, or that is younger than %d s.\n"
		"\n"
		"  --dry-run  list what would be removed and why, change nothing\n"
		"  -j, --json one JSON document: {\"ok\", \"dry_run\", \"sandboxes\": [{\"name\",\n"
		"             \"action\", \"why\"}]}\n"
		"  NAME...    only these sandboxes (default: every one found)\n"
		"\n"
		"Prints one line per sandbox: `removed`, `would remove`, `kept` or `failed`, and why.\n"
		"Exit status: 0, or 2 if a removal failed (that sandbox stays filtered).\n",
		GC_MIN_AGE_S);
}

int cmd_gc(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	char cg2[PATH_MAX] = "", msg[512], why[512], did[2048];
	char **names = NULL;
	size_t n = 0, cap = 0;
	bool dry_run = false;
	int c, ret = 0, found = 0;
	json_object *arr = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hj", opts, NULL)) != -1) {
		switch (c) {
		case 'n': dry_run = true; break;
		case 'j': sluice_cli_set_json(); break;
		case 'h': usage_gc(stdout); return 0;
		default: usage_gc(stderr); return 2;
		}
	}
	if (geteuid() != 0) {
		log_warnx("gc: must run as root (bpffs pins, cgroups)");
		return 2;
	}
	if (cg2_find_mount("/proc/mounts", cg2, sizeof(cg2)) < 0)
		cg2[0] = 0;
	for (int i = optind; i < argc; i++) {
		if (sluice_name_check(argv[i], msg, sizeof(msg)) < 0) {
			log_warnx("gc: %s", msg);
			ret = 2;
			goto out;
		}
		if (add_name(&names, &n, &cap, argv[i]) < 0) {
			ret = 2;
			goto out;
		}
	}
	if (optind >= argc && list_names(cg2, &names, &n) < 0) {
		log_warnx("gc: out of memory");
		ret = 2;
		goto out;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	if (sluice_cli_json())
		arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct gc_view v;

		gc_look(names[i], cg2, &v);
		if (!v.pins && !v.cgroup[0]) {
			/* an owner record that outlived its sandbox (pins removed by hand) */
			if (v.owner_err == 0 && !v.owner_alive) {
				if (!dry_run)
					sluice_owner_remove(names[i]);
				say(arr, dry_run ? "would remove" : "removed", names[i],
				    "a stale owner record (sluice %s pid %d is gone, no pins, no cgroup)", v.owner.kind,
				    (int)v.owner.pid);
				found++;
			} else if (optind < argc) {
				say(arr, "kept", names[i], "no such sandbox");
			}
			continue;
		}
		found++;
		if (!gc_verdict(&v, why, sizeof(why))) {
			say(arr, "kept", names[i], "%s", why);
			continue;
		}
		if (sluice_sandbox_remove(names[i], NULL, dry_run, did, sizeof(did), msg, sizeof(msg)) < 0) {
			say(arr, "failed", names[i], "%s: %s", why, msg);
			ret = 2;
			continue;
		}
		say(arr, dry_run ? "would remove" : "removed", names[i], "%s; %s", why, did);
	}
	if (arr) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "ok", json_object_new_boolean(ret == 0));
		json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run));
		json_object_object_add(o, "sandboxes", arr);
		sluice_cli_json_print(o);
		json_object_put(o);
	} else if (!found) {
		printf("no sandboxes found\n");
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}
