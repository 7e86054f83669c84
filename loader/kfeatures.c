/* SPDX-License-Identifier: BSD-2-Clause */
#include "kfeatures.h"

#include <bpf/libbpf.h>
#include <limits.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cgroup.h"
#include "landlock.h"
#include "sandbox.h"

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

int sluice_have_set_retval(void)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_set_retval, NULL) > 0;
}

int sluice_have_exe(void)
{
	/* current_exe() in bpf/sluice.bpf.c: the task (BTF) and kernel reads */
	/* the socket hooks, sock_create's denial events, and the egress
	 * backstop (which shares the global functions, never calling them
	 * with a task) */
	static const enum bpf_prog_type types[] = { BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_PROG_TYPE_CGROUP_SOCK,
						    BPF_PROG_TYPE_CGROUP_SKB };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (libbpf_probe_bpf_helper(types[i], BPF_FUNC_get_current_task_btf, NULL) <= 0 ||
		    libbpf_probe_bpf_helper(types[i], BPF_FUNC_probe_read_kernel, NULL) <= 0)
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

void sluice_features_print(FILE *f)
{
	char lsm[512] = "", path[PATH_MAX];
	struct utsname u;
	struct statfs sfs;
	FILE *l = fopen("/sys/kernel/security/lsm", "re");
	bool root = geteuid() == 0;
	libbpf_print_fn_t old = libbpf_set_print(libbpf_silent);

	if (uname(&u) == 0)
		fprintf(f, "kernel %s %s\n", u.release, u.machine);
	fprintf(f, "features:\n");
	if (l) {
		if (!fgets(lsm, sizeof(lsm), l))
			lsm[0] = 0;
		fclose(l);
		lsm[strcspn(lsm, "\n")] = 0;
		fprintf(f, "  BPF LSM active       %s (lsm=%s)\n", lsm_has_bpf(lsm) ? "yes" : "no", lsm);
	} else {
		fprintf(f, "  BPF LSM active       unknown (no /sys/kernel/security/lsm: securityfs not mounted?)\n");
	}
	if (root) {
		fprintf(f, "  bpf_set_retval       %s\n", sluice_have_set_retval() ? "yes" : "no (kernel < 5.18: denials are EPERM)");
		fprintf(f, "  caller's executable  %s\n",
			sluice_have_exe() ? "yes (`programs:` entries)" : "no (`programs:` entries are refused)");
		fprintf(f, "  ring buffer          %s\n",
			libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) > 0 ? "yes" : "no (kernel < 5.8)");
	} else {
		fprintf(f, "  bpf_set_retval       unknown (needs root)\n");
		fprintf(f, "  ring buffer          unknown (needs root)\n");
		fprintf(f, "  caller's executable  unknown (needs root)\n");
	}
	{
		/* what `sluice run`'s sandbox profile gets (confine.h) */
		int abi = sluice_landlock_abi();

		if (abi > 0)
			fprintf(f, "  Landlock ABI         %d%s\n", abi,
				abi >= 6 ? " (abstract unix sockets and signals scoped)" : "");
		else
			fprintf(f, "  Landlock ABI         none (the sandbox profile relies on its mounts alone)\n");
	}
	if (cg2_find_mount("/proc/mounts", path, sizeof(path)) == 0)
		fprintf(f, "  cgroup2 mount        %s\n", path);
	else
		fprintf(f, "  cgroup2 mount        none found in /proc/mounts\n");
	if (statfs(SLUICE_BPFFS, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC)
		fprintf(f, "  BPF filesystem       %s\n", SLUICE_BPFFS);
	else
		fprintf(f, "  BPF filesystem       not mounted at %s (sluice mounts it when run as root)\n", SLUICE_BPFFS);
	libbpf_set_print(old);
}
