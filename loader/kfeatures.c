/* SPDX-License-Identifier: BSD-2-Clause */
#include "kfeatures.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cgroup.h"
#include "landlock.h"
#include "sandbox.h"
#include "version.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

int sluice_name_check(const char *name, char *msg, size_t msglen)
{
	size_t n = strlen(name);

	if (n == 0) {
		snprintf(msg, msglen, "sandbox name is empty");
		return -1;
	}
	if (n > SLUICE_NAME_MAX) {
		snprintf(msg, msglen, "sandbox name '%.*s...' is %zu bytes long: at most %d", SLUICE_NAME_MAX, name,
			 n, SLUICE_NAME_MAX);
		return -1;
	}
	for (const char *q = name; *q; q++)
		if (!(*q == '-' || *q == '_' || *q == '.' || (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') ||
		      (*q >= 'A' && *q <= 'Z')) || name[0] == '.') {
			snprintf(msg, msglen, "sandbox name '%s' may only hold letters, digits, '-', '_' and '.'", name);
			return -1;
		}
	return 0;
}

int sluice_probe_helper(enum bpf_prog_type type, enum bpf_func_id id)
{
	static struct {
		enum bpf_prog_type type;
		enum bpf_func_id id;
		int yes;
	} known[16];
	static size_t n_known;
	int r;

	for (size_t i = 0; i < n_known; i++)
		if (known[i].type == type && known[i].id == id)
			return known[i].yes;
	r = libbpf_probe_bpf_helper(type, id, NULL);
	if (r < 0)
		return 0;
	if (n_known < sizeof(known) / sizeof(known[0])) {
		known[n_known].type = type;
		known[n_known].id = id;
		known[n_known++].yes = r > 0;
	}
	return r > 0;
}

int sluice_have_set_retval(void)
{
	return sluice_probe_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_set_retval);
}

int sluice_bpf_lsm_loads(void)
{
	/* r0 = 0; exit: allow, on the hook sluice's own socket_create uses */
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_prog_load_opts opts = { .sz = sizeof(opts), .expected_attach_type = BPF_LSM_MAC };
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int id, fd, err;

	if (!vmlinux)
		return -ENOENT;
	id = btf__find_by_name_kind(vmlinux, "bpf_lsm_socket_create", BTF_KIND_FUNC);
	btf__free(vmlinux);
	if (id < 0)
		return -ENOENT;
	opts.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_LSM, "sluice_lsm_probe", "GPL", insns, 2, &opts);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	err = -errno;
	return err < 0 ? err : -EINVAL;
}

int sluice_have_exe(void)
{
	/* current_exe() in bpf/sluice_cidr.bpf.h: the task (BTF) and kernel reads */
	/* the socket hooks, sock_create's denial events, and the egress
	 * backstop (which shares the global functions, never calling them
	 * with a task) */
	static const enum bpf_prog_type types[] = { BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_PROG_TYPE_CGROUP_SOCK,
						    BPF_PROG_TYPE_CGROUP_SKB };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!sluice_probe_helper(types[i], BPF_FUNC_get_current_task_btf) ||
		    !sluice_probe_helper(types[i], BPF_FUNC_probe_read_kernel))
			return 0;
	return 1;
}

static int libbpf_silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* Is "bpf" one of the comma-separated LSM names? */
static bool lsm_has_bpf(const char *list)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (n == 3 && strncmp(p, "bpf", 3) == 0)
			return true;
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

/* A JSON boolean, or null for "unknown". */
static json_object *tri(int v)
{
	return v < 0 ? NULL : json_object_new_boolean(v);
}

json_object *sluice_features_json(void)
{
	char lsm[512] = "", path[PATH_MAX];
	struct utsname u;
	struct statfs sfs;
	FILE *l = fopen("/sys/kernel/security/lsm", "re");
	bool root = geteuid() == 0;
	libbpf_print_fn_t old = libbpf_set_print(libbpf_silent);
	json_object *o = json_object_new_object(), *k = json_object_new_object(), *f = json_object_new_object();
	int abi;

	json_object_object_add(o, "sluice", json_object_new_string(SLUICE_VERSION));
	json_object_object_add(o, "libbpf", json_object_new_string(libbpf_version_string()));
	if (uname(&u) == 0) {
		json_object_object_add(k, "release", json_object_new_string(u.release));
		json_object_object_add(k, "machine", json_object_new_string(u.machine));
	}
	json_object_object_add(o, "kernel", k);
	if (l) {
		if (!fgets(lsm, sizeof(lsm), l))
			lsm[0] = 0;
		fclose(l);
		lsm[strcspn(lsm, "\n")] = 0;
		json_object_object_add(f, "bpf_lsm", tri(lsm_has_bpf(lsm)));
		json_object_object_add(f, "lsm", json_object_new_string(lsm));
		/* in the list is not enough: a kernel build may still refuse the
		 * programs (seen: EPERM for every LSM program) */
		if (root && lsm_has_bpf(lsm)) {
			int err = sluice_bpf_lsm_loads();

			json_object_object_add(f, "bpf_lsm_loads", json_object_new_boolean(err == 0));
			if (err)
				json_object_object_add(f, "bpf_lsm_error", json_object_new_string(strerror(-err)));
		}
	} else {
		json_object_object_add(f, "bpf_lsm", NULL);
		json_object_object_add(f, "lsm", NULL);
	}
	json_object_object_add(f, "bpf_set_retval", tri(root ? sluice_have_set_retval() : -1));
	json_object_object_add(f, "caller_executable", tri(root ? sluice_have_exe() : -1));
	json_object_object_add(f, "ringbuf", tri(root ? libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) > 0 : -1));
	/* what `sluice run`'s sandbox profile gets (confine.h) */
	abi = sluice_landlock_abi();
	json_object_object_add(f, "landlock_abi", json_object_new_int(abi > 0 ? abi : 0));
	json_object_object_add(f, "cgroup2_mount", cg2_find_mount("/proc/mounts", path, sizeof(path)) == 0 ?
				json_object_new_string(path) : NULL);
	json_object_object_add(f, "bpffs", statfs(SLUICE_BPFFS, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC ?
				json_object_new_string(SLUICE_BPFFS) : NULL);
	json_object_object_add(o, "features", f);
	libbpf_set_print(old);
	return o;
}

/* f's key as a string, "" for null */
static const char *str_of(json_object *f, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(f, key, &v) && v ? json_object_get_string(v) : "";
}

/* f's key: 1 true, 0 false, -1 null (unknown) */
static int tri_of(json_object *f, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(f, key, &v) || !v)
		return -1;
	return json_object_get_boolean(v);
}

void sluice_features_print(FILE *out)
{
	json_object *o = sluice_features_json(), *k = NULL, *f = NULL;
	int abi, v;

	json_object_object_get_ex(o, "kernel", &k);
	json_object_object_get_ex(o, "features", &f);
	if (*str_of(k, "release"))
		fprintf(out, "kernel %s %s\n", str_of(k, "release"), str_of(k, "machine"));
	fprintf(out, "features:\n");
	v = tri_of(f, "bpf_lsm");
	if (v > 0 && tri_of(f, "bpf_lsm_loads") == 0)
		fprintf(out, "  BPF LSM active       listed (lsm=%s) but its programs are refused: %s "
			"(foreign sockets and unix sockets not judged; families by seccomp under run)\n",
			str_of(f, "lsm"), str_of(f, "bpf_lsm_error"));
	else if (v > 0 && tri_of(f, "bpf_lsm_loads") < 0)
		fprintf(out, "  BPF LSM active       listed (lsm=%s); whether its programs load: unknown (needs root)\n",
			str_of(f, "lsm"));
	else if (v >= 0)
		fprintf(out, "  BPF LSM active       %s (lsm=%s)\n", v ? "yes" : "no", str_of(f, "lsm"));
	else
		fprintf(out, "  BPF LSM active       unknown (no /sys/kernel/security/lsm: securityfs not mounted?)\n");
	v = tri_of(f, "bpf_set_retval");
	fprintf(out, "  bpf_set_retval       %s\n",
		v < 0 ? "unknown (needs root)" : v ? "yes" : "no (kernel < 5.18: denials are EPERM)");
	v = tri_of(f, "caller_executable");
	fprintf(out, "  caller's executable  %s\n",
		v < 0 ? "unknown (needs root)" : v ? "yes (`programs:` entries)" : "no (`programs:` entries are refused)");
	v = tri_of(f, "ringbuf");
	fprintf(out, "  ring buffer          %s\n", v < 0 ? "unknown (needs root)" : v ? "yes" : "no (kernel < 5.8)");
	abi = atoi(str_of(f, "landlock_abi"));
	if (abi > 0)
		fprintf(out, "  Landlock ABI         %d%s\n", abi,
			abi >= 6 ? " (abstract unix sockets and signals scoped)" : "");
	else
		fprintf(out, "  Landlock ABI         none (the sandbox profile relies on its mounts alone)\n");
	if (*str_of(f, "cgroup2_mount"))
		fprintf(out, "  cgroup2 mount        %s\n", str_of(f, "cgroup2_mount"));
	else
		fprintf(out, "  cgroup2 mount        none found in /proc/mounts\n");
	if (*str_of(f, "bpffs"))
		fprintf(out, "  BPF filesystem       %s\n", SLUICE_BPFFS);
	else
		fprintf(out, "  BPF filesystem       not mounted at %s (sluice mounts it when run as root)\n", SLUICE_BPFFS);
	json_object_put(o);
}
