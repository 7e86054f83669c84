/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_seccomp.c - `sluice policy seccomp` (cmd_seccomp.h): the socket
 * family rules of seccomp_families.c as an OCI seccomp profile, alone or
 * merged into the container runtime's own default profile (--base).
 */
#include "cmd_seccomp.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <seccomp.h>

#include "cli.h"
#include "policy.h"
#include "seccomp_families.h"

#define EXIT_OK 0
#define EXIT_ERROR 2
#define ERRNO_EPERM 1

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice policy seccomp [--base PROFILE.json] [-o FILE] POLICY.yaml\n"
		"\n"
		"Print an OCI seccomp profile (JSON) that refuses, with EPERM, socket() and socketpair()\n"
		"of every family POLICY's families: does not name (unix, inet, inet6 and netlink\n"
		"route/sock_diag are always allowed), on every ABI of this machine (x86-64, i386 and x32;\n"
		"arm64 and arm), socketcall(SYS_SOCKET, SYS_SOCKETPAIR) and io_uring: the filter\n"
		"`sluice run` loads where the BPF LSM does not judge socket families.  A daemon's\n"
		"sandbox (`sluice attach`, the OCI hook) has no seccomp filter of sluice's: without the\n"
		"BPF LSM, run the container with this profile or its families are not judged.\n"
		"\n"
		"  --base PROFILE.json  merge into this profile (the runtime's default, e.g.\n"
		"                       /usr/share/containers/seccomp.json): its rules for socket,\n"
		"                       socketpair, socketcall and io_uring are replaced, the rest is\n"
		"                       kept.  Without --base every other system call is allowed: the\n"
		"                       profile then REPLACES the runtime's default filter (a warning says so)\n"
		"  -o FILE              write the profile to FILE instead of stdout\n"
		"\n"
		"Exit status: 0, or 2 (usage, a bad policy: file:line: message, a bad base profile).\n"
		"\n"
		"examples:\n"
		"  sluice policy seccomp --base /usr/share/containers/seccomp.json -o /etc/sluice/web.seccomp.json \\\n"
		"      /etc/sluice/policies/web.yaml\n"
		"  podman run --security-opt seccomp=/etc/sluice/web.seccomp.json IMAGE\n"
		"  # Kubernetes: copy it to /var/lib/kubelet/seccomp/sluice/web.json on every node and set\n"
		"  #   securityContext.seccompProfile: {type: Localhost, localhostProfile: sluice/web.json}\n");
}

/* The system calls whose base rules are replaced: every one the family rules name. */
static int collect_name(const struct sluice_seccomp_rule *rule, void *arg)
{
	json_object *names = arg;

	for (size_t i = 0; i < json_object_array_length(names); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), rule->syscall) == 0)
			return 0;
	json_object_array_add(names, json_object_new_string(rule->syscall));
	return 0;
}

static bool in_names(json_object *names, const char *s)
{
	for (size_t i = 0; s && i < json_object_array_length(names); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), s) == 0)
			return true;
	return false;
}

struct build {
	json_object *syscalls;      /* the profile's "syscalls" array (borrowed) */
	size_t first;               /* our entries start here */
	bool with_allow;            /* the default action refuses: the ALLOW rules go in too, for
				     * the native ABI alone (see build_profile) */
};

/* The args array of a rule, as the profile spells it. */
static json_object *rule_args(const struct sluice_seccomp_rule *r)
{
	json_object *args = json_object_new_array();

	for (unsigned i = 0; i < r->n_args; i++) {
		json_object *a = json_object_new_object();

		json_object_object_add(a, "index", json_object_new_int((int)r->args[i].index));
		json_object_object_add(a, "value", json_object_new_uint64(r->args[i].value));
		json_object_object_add(a, "valueTwo", json_object_new_int(0));
		json_object_object_add(a, "op", json_object_new_string(sluice_seccomp_op_name(r->args[i].op)));
		json_object_array_add(args, a);
	}
	return args;
}

/* Add one rule: to an entry of ours with the same action and arguments
 * (socket and socketpair share theirs), else as a new entry. */
static int add_rule(const struct sluice_seccomp_rule *r, void *arg)
{
	struct build *b = arg;
	bool allow = r->verdict == SLUICE_SECCOMP_ALLOW;
	json_object *args, *e, *names;

	if ((allow && !b->with_allow) || (b->with_allow && strcmp(r->syscall, "socketcall") == 0))
		return 0; /* no socketcall on a native ABI of a 64-bit machine */
	args = rule_args(r);
	for (size_t i = b->first; i < json_object_array_length(b->syscalls); i++) {
		json_object *x = json_object_array_get_idx(b->syscalls, i), *xa, *xact, *xn;

		if (json_object_object_get_ex(x, "args", &xa) && json_object_object_get_ex(x, "action", &xact) &&
		    json_object_object_get_ex(x, "names", &xn) &&
		    strcmp(json_object_get_string(xact), allow ? "SCMP_ACT_ALLOW" : "SCMP_ACT_ERRNO") == 0 &&
		    json_object_equal(xa, args)) {
			json_object_put(args);
			json_object_array_add(xn, json_object_new_string(r->syscall));
			return 0;
		}
	}
	e = json_object_new_object();
	names = json_object_new_array();
	json_object_array_add(names, json_object_new_string(r->syscall));
	json_object_object_add(e, "names", names);
	json_object_object_add(e, "action", json_object_new_string(allow ? "SCMP_ACT_ALLOW" : "SCMP_ACT_ERRNO"));
	if (!allow)
		json_object_object_add(e, "errnoRet", json_object_new_int(ERRNO_EPERM));
	json_object_object_add(e, "args", args);
	json_object_array_add(b->syscalls, e);
	return 0;
}

/* The architectures `sluice run`'s filter covers (compat: with the 32-bit
 * ones), for a profile that names none. */
static json_object *native_arches(bool compat)
{
	json_object *a = json_object_new_array();
	uint32_t native = seccomp_arch_native();

	if (native == SCMP_ARCH_X86_64) {
		json_object_array_add(a, json_object_new_string("SCMP_ARCH_X86_64"));
		if (compat) {
			json_object_array_add(a, json_object_new_string("SCMP_ARCH_X86"));
			json_object_array_add(a, json_object_new_string("SCMP_ARCH_X32"));
		}
	} else if (native == SCMP_ARCH_AARCH64) {
		json_object_array_add(a, json_object_new_string("SCMP_ARCH_AARCH64"));
		if (compat)
			json_object_array_add(a, json_object_new_string("SCMP_ARCH_ARM"));
	}
	return a;
}

/* Take the replaced system calls out of the base's rules: a name out of an
 * entry's "names" (the entry goes when none is left), an entry whose old-style
 * "name" is one of them.  Returns 0, or -1 with a message (a malformed entry). */
static int strip_base(json_object *syscalls, json_object *ours, char *err, size_t errlen)
{
	for (size_t i = json_object_array_length(syscalls); i-- > 0;) {
		json_object *e = json_object_array_get_idx(syscalls, i), *names, *name, *kept;

		if (!json_object_is_type(e, json_type_object)) {
			snprintf(err, errlen, "syscalls[%zu] is not an object", i);
			return -1;
		}
		if (json_object_object_get_ex(e, "name", &name) && in_names(ours, json_object_get_string(name))) {
			json_object_array_del_idx(syscalls, i, 1);
			continue;
		}
		if (!json_object_object_get_ex(e, "names", &names))
			continue;
		if (!json_object_is_type(names, json_type_array)) {
			snprintf(err, errlen, "syscalls[%zu].names is not an array", i);
			return -1;
		}
		kept = json_object_new_array();
		for (size_t k = 0; k < json_object_array_length(names); k++) {
			json_object *n = json_object_array_get_idx(names, k);

			if (!in_names(ours, json_object_get_string(n)))
				json_object_array_add(kept, json_object_get(n));
		}
		if (json_object_array_length(kept) == 0 && json_object_array_length(names) > 0) {
			json_object_put(kept);
			json_object_array_del_idx(syscalls, i, 1);
		} else {
			json_object_object_add(e, "names", kept);
		}
	}
	return 0;
}

/* The profile for `families` (bit AF_x), from base (consumed; NULL: allow by default). */
static json_object *build_profile(json_object *base, uint64_t families, char *err, size_t errlen)
{
	json_object *prof = base, *syscalls, *da, *ours = json_object_new_array();
	struct build b;

	if (!prof) {
		prof = json_object_new_object();
		json_object_object_add(prof, "defaultAction", json_object_new_string("SCMP_ACT_ALLOW"));
	}
	if (!json_object_object_get_ex(prof, "defaultAction", &da) || !json_object_is_type(da, json_type_string)) {
		snprintf(err, errlen, "no defaultAction (a string) in the base profile");
		goto fail;
	}
	/* a rule with the default action is refused by libseccomp (and skipped by runc) */
	b.with_allow = strcmp(json_object_get_string(da), "SCMP_ACT_ALLOW") != 0;
	if (b.with_allow) {
		/*
		 * A default that refuses needs socket() ALLOW rules with arguments.
		 * libseccomp turns each socket() rule of the i386 ABI into one for
		 * socketcall(SYS_SOCKET) without its arguments, so ALLOW and EPERM
		 * rules collide there (runc: "file exists"), and an ALLOW alone would
		 * open socketcall for every family.  The profile is the native ABI's
		 * alone then: the runtime kills a process calling through another
		 * (libseccomp's bad-architecture action).
		 */
		json_object_object_del(prof, "archMap");
		json_object_object_add(prof, "architectures", native_arches(false));
	} else if (!json_object_object_get_ex(prof, "architectures", NULL) &&
		   !json_object_object_get_ex(prof, "archMap", NULL)) {
		json_object_object_add(prof, "architectures", native_arches(true));
	}
	if (!json_object_object_get_ex(prof, "syscalls", &syscalls) || json_object_is_type(syscalls, json_type_null)) {
		syscalls = json_object_new_array();
		json_object_object_add(prof, "syscalls", syscalls);
	} else if (!json_object_is_type(syscalls, json_type_array)) {
		snprintf(err, errlen, "syscalls is not an array in the base profile");
		goto fail;
	}
	sluice_seccomp_family_rules(families, collect_name, ours);
	if (strip_base(syscalls, ours, err, errlen) < 0)
		goto fail;
	b.syscalls = syscalls;
	b.first = json_object_array_length(syscalls);
	sluice_seccomp_family_rules(families, add_rule, &b);
	json_object_put(ours);
	return prof;
fail:
	json_object_put(ours);
	json_object_put(prof);
	return NULL;
}

/* Write text to path (NULL: stdout).  Returns 0, or -1 with a message. */
static int write_out(const char *path, const char *text, char *err, size_t errlen)
{
	FILE *f = path ? fopen(path, "w") : stdout;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	bool bad = fputs(text, f) < 0 || fputc('\n', f) < 0;

	if (path)
		bad = fclose(f) != 0 || bad;
	else
		bad = fflush(f) != 0 || bad;
	if (bad) {
		snprintf(err, errlen, "%s: %s", path ? path : "stdout", strerror(errno));
		if (path)
			unlink(path); /* no half profile behind */
		return -1;
	}
	return 0;
}

int cmd_policy_seccomp(int argc, char **argv)
{
	const char *base_path = NULL, *out_path = NULL, *policy_path = NULL;
	struct sluice_policy *p = NULL;
	struct sluice_policy_error perr;
	json_object *base = NULL, *prof;
	char err[512], fam[256];
	static const struct option longopts[] = {
		{ "base", required_argument, NULL, 'b' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	int c;

	if (sluice_cli_json()) {
		sluice_cli_error("sluice policy seccomp: no -j/--json: it writes a seccomp profile (JSON already)");
		return EXIT_ERROR;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': base_path = optarg; break;
		case 'o': out_path = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default:
			sluice_cli_error("sluice policy seccomp: unknown option or missing value '%s'", argv[optind - 1]);
			usage(stderr);
			return EXIT_ERROR;
		}
	}
	if (argc - optind > 1) {
		sluice_cli_error("sluice policy seccomp: one policy file, not '%s' too", argv[optind + 1]);
		return EXIT_ERROR;
	}
	policy_path = optind < argc ? argv[optind] : NULL;
	if (!policy_path) {
		usage(stderr);
		return EXIT_ERROR;
	}
	if (sluice_policy_load_file(policy_path, &p, &perr) < 0) {
		char m[600];

		sluice_policy_error_str(&perr, m, sizeof(m));
		sluice_cli_error("%s", m);
		return EXIT_ERROR;
	}
	if (base_path) {
		base = json_object_from_file(base_path);
		if (!base || !json_object_is_type(base, json_type_object)) {
			sluice_cli_error("sluice policy seccomp: %s: not a seccomp profile (a JSON object): %s", base_path,
					 base ? "another JSON type" : json_util_get_last_err());
			json_object_put(base);
			sluice_policy_free(p);
			return EXIT_ERROR;
		}
	}
	prof = build_profile(base, p->families.mask, err, sizeof(err));
	if (!prof) {
		sluice_cli_error("sluice policy seccomp: %s: %s", base_path, err);
		sluice_policy_free(p);
		return EXIT_ERROR;
	}
	if (write_out(out_path, json_object_to_json_string_ext(prof, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE),
		      err, sizeof(err)) < 0) {
		sluice_cli_error("sluice policy seccomp: %s", err);
		json_object_put(prof);
		sluice_policy_free(p);
		return EXIT_ERROR;
	}
	sluice_policy_families_str(p, fam, sizeof(fam));
	{
		json_object *da;

		if (base_path && json_object_object_get_ex(prof, "defaultAction", &da) &&
		    strcmp(json_object_get_string(da), "SCMP_ACT_ALLOW") != 0)
			fprintf(stderr, "sluice policy seccomp: the base refuses by default: the profile covers the native "
					"ABI alone, a process calling through a 32-bit one (i386, x32, arm) is killed\n");
	}
	if (!base_path)
		fprintf(stderr, "sluice policy seccomp: without --base this profile allows every other system call: "
				"it replaces the runtime's default seccomp filter (give --base the runtime's default "
				"profile to keep it)\n");
	fprintf(stderr, "sluice policy seccomp: policy %s (sha256:%.12s): families beyond unix, inet, inet6 and "
			"netlink route/sock_diag: %s\n", p->name, p->digest, fam[0] ? fam : "none");
	json_object_put(prof);
	sluice_policy_free(p);
	return EXIT_OK;
}

const char *sluice_seccomp_status_note(const char *enforced_by)
{
	if (!enforced_by || !enforced_by[0])
		return "unknown";
	if (strcmp(enforced_by, "none") == 0)
		return "NOT judged (no BPF LSM): vsock, packet and the rest are refused only if the container "
		       "runs with the profile of `sluice policy seccomp`";
	if (strcmp(enforced_by, "bpf_lsm") == 0)
		return "judged by the BPF LSM (socket_create)";
	return enforced_by;
}

const char *sluice_seccomp_attach_note(bool have_lsm)
{
	return have_lsm ? ""
			: "; socket families are not judged (no BPF LSM): only a container run with the seccomp "
			  "profile of `sluice policy seccomp` refuses vsock, packet and the rest";
}
