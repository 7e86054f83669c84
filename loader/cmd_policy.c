/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_policy.c - `sluice policy check` and `sluice policy diff`: the
 * reviewer's tools for policy files (docs/policy.md).
 *
 * check: load each file, print its digest, a table of what it lets out and
 *        the lint warnings.  Exit 0 clean, 1 warnings, 2 errors.
 * diff:  what NEW opens and closes compared with OLD.  Exit 0 no change,
 *        1 changes, 2 errors.
 * --json prints the same as one JSON document on stdout (json-c).
 */
#include "cmd_policy.h"
#include "cmd_seccomp.h"
#include "cmd_sign.h"
#include "cmd_suggest.h"

#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "credentials.h"
#include "policy.h"
#include "policy_show.h"
#include "policy_within.h"
#include "upstream_ca.h"

#define EXPIRY_WARN_S (7 * 86400)   /* `check` warns about entries expiring within 7 days */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice policy check [--json] [--relays FILE] [--within BOUNDARY] FILE...\n"
		"       sluice policy diff [--json] OLD NEW\n"
		"       sluice policy suggest [--name NAME] [--against POLICY] [-o FILE] EVENTS.jsonl...\n"
		"       sluice policy sign --key KEY POLICY...\n"
		"       sluice policy verify --allowed-signers FILE POLICY...\n"
		"       sluice policy seccomp [--base PROFILE.json] [-o FILE] POLICY\n"
		"\n"
		"check  validate policy files, print each digest (sha256), a table of what\n"
		"       the policy lets out, and lint warnings.\n"
		"       exit 0 clean, 1 warnings only, 2 errors (file:line:column: message)\n"
		"       --within BOUNDARY: also prove that everything FILE allows, BOUNDARY allows\n"
		"       (decided exactly); each excess is an error with an example\n"
		"diff   show what NEW opens and closes compared with OLD, for reviewers.\n"
		"       exit 0 no change, 1 changes, 2 errors\n"
		"suggest  a policy from observed traffic (`sluice policy suggest --help`)\n"
		"sign     sign a policy's digest (POLICY.sig); verify: check it (`sluice policy sign --help`)\n"
		"seccomp  the OCI seccomp profile of the policy's families: for containers\n"
		"         (`sluice policy seccomp --help`)\n"
		"\n"
		"options:\n"
		"  --json         print one JSON document instead of text\n"
		"  --relays FILE  relay list for the relay lint (default: $SLUICE_RELAYS, or\n"
		"                 policies/relays.txt beside the binary)\n"
		"\n"
		"examples:\n"
		"  sluice policy check policies/*.yaml\n"
		"  sluice policy check --json policies/python-pip.yaml | jq .files[0].sha256\n"
		"  git show HEAD~1:policy.yaml > /tmp/old.yaml && sluice policy diff /tmp/old.yaml policy.yaml\n");
}

/* --- check ------------------------------------------------------------------- */

static void print_table(const struct sluice_policy *p)
{
	char q[16];

	printf("policy  %s\n", p->path);
	printf("name    %s\n", p->name);
	printf("mode    %s\n", p->mode == SLUICE_MODE_AUDIT ?
	       "audit (denials are logged, NOT enforced: everything gets out)" : "enforce");
	printf("sha256  %s\n", p->digest);
	printf("dns     on_deny %s, qtypes", p->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain");
	for (size_t i = 0; i < p->n_dns_qtypes; i++)
		printf(" %s", sluice_qtype_str(p->dns_qtypes[i], "TYPE", q, sizeof(q)));
	printf("%s\n", p->n_dns_qtypes ? "" : " (none)");
	if (p->fs.present) {
		/* sluice run's sandbox profile: what CMD may see and write */
		static const char *const what[] = { "read-only", "writable", "hidden" };
		const struct sluice_fs_path *l[] = { p->fs.read_only, p->fs.read_write, p->fs.hide };
		const size_t n[] = { p->fs.n_read_only, p->fs.n_read_write, p->fs.n_hide };

		printf("files   workdir %s", p->fs.workdir.path ? p->fs.workdir.path : "(the current directory)");
		for (int k = 0; k < 3; k++)
			for (size_t i = 0; i < n[k]; i++)
				printf("; %s %s", what[k], l[k][i].path);
		printf("\n");
	}
	if (p->families.n) {
		/* socket families beyond inet and unix (policy_family.c) */
		printf("families");
		for (size_t i = 0; i < p->families.n; i++)
			printf("%s%s", i ? ", " : " ", p->families.items[i].name);
		printf(" (sockets of them are not judged)\n");
	}
	if (p->n_entries == 0) {
		printf("allows  nothing (default deny)\n");
		return;
	}
	printf("\n  %-4s %-5s %-40s %-14s %-6s %-9s %s\n", "#", "kind", "allows", "ports", "proto",
	       "via", "why");
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];
		char ports[128], target[SLUICE_HOST_MAX + 2200], why[80];
		const char *nl;

		pol_ports_str(e, ports, sizeof(ports));
		if (e->kind == SLUICE_ENTRY_URL) {
			char m[64];

			pol_methods_str(e, m, sizeof(m));
			snprintf(target, sizeof(target), "%s%s %s", m, e->websocket ? "+websocket" : "", pol_target_str(e));
		} else {
			snprintf(target, sizeof(target), "%s", pol_target_str(e));
		}
		/* the first line of a folded `why` */
		nl = strchr(e->why, '\n');
		snprintf(why, sizeof(why), "%.*s%s", nl ? (int)(nl - e->why) : (int)strlen(e->why),
			 e->why, nl && nl[1] ? " ..." : "");
		printf("  %-4zu %-5s %-40s %-14s %-6s %-9s %s\n", i, sluice_entry_kind_name(e->kind),
		       target, ports, e->kind == SLUICE_ENTRY_UNIX ? "-" : pol_proto_str(e), pol_via_str(e), why);
		if (e->n_programs) {
			char list[3000];

			printf("       programs %s\n", pol_programs_str(e, list, sizeof(list)));
		}
		if (e->expires || e->owner || e->ticket) {
			char t[32];

			printf("       %s%s%s%s%s%s\n", e->expires ? "expires " : "",
			       e->expires ? sluice_rfc3339_str(e->expires, t, sizeof(t)) : "", e->owner ? "  owner " : "",
			       e->owner ? e->owner : "", e->ticket ? "  ticket " : "", e->ticket ? e->ticket : "");
		}
	}
	for (size_t i = 0; i < p->n_credentials; i++) {
		const struct sluice_credential *cr = &p->credentials[i];

		printf("%s  %s: sets %s%s%s%s, sent to", i ? "           " : "\ncredential", cr->name,
		       cr->header_name, cr->env ? "; sandbox gets a placeholder in $" : "", cr->env ? cr->env : "",
		       cr->allow_plain_http ? "; plain http allowed" : "");
		for (size_t k = 0, n = 0; k < p->n_entries; k++)
			if (p->entries[k].credential && p->entries[k].credential_idx == i)
				printf("%s %s", n++ ? "," : "", p->entries[k].name);
		printf("\n");
	}
}

/* An entry that expired (an error: it allows nothing) or expires within
 * EXPIRY_WARN_S (a warning). */
struct expiry_finding {
	unsigned entry;
	bool expired;
	char message[256];
};

static int expiry_findings(const struct sluice_policy *p, struct expiry_finding **out)
{
	time_t now = time(NULL);
	int n = 0;

	*out = calloc(p->n_entries ? p->n_entries : 1, sizeof(**out));
	if (!*out)
		return 0;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];
		struct expiry_finding *f = &(*out)[n];
		char t[32];

		if (!e->expires || e->expires - now > EXPIRY_WARN_S)
			continue;
		f->entry = (unsigned)i;
		f->expired = e->expires <= now;
		sluice_rfc3339_str(e->expires, t, sizeof(t));
		if (f->expired)
			snprintf(f->message, sizeof(f->message), "%s expired at %s: it allows nothing (remove or renew it)",
				 e->name, t);
		else
			snprintf(f->message, sizeof(f->message), "%s expires at %s, in %lld h%s%s", e->name, t,
				 (long long)((e->expires - now + 3599) / 3600), e->owner ? "; owner " : "",
				 e->owner ? e->owner : "");
		n++;
	}
	return n;
}

/* A policy `check` could not load (it, or a secret it names): the error,
 * into fo (--json, then fo goes into arr) or printed. */
static void report_not_loaded(json_object *fo, json_object *arr, const struct sluice_policy_error *err,
			      const char *file)
{
	if (fo) {
		json_object_object_add(fo, "ok", json_object_new_boolean(false));
		json_object_object_add(fo, "error", pol_error_json(err));
		json_object_array_add(arr, fo);
	} else {
		pol_print_error(err);
		printf("policy  %s\nresult  error (not loaded)\n", file);
	}
}

/* What `check` found in one loaded policy. */
struct check_file {
	const char *file;
	struct sluice_policy *p;
	struct sluice_lint *lints;
	int n;                      /* lints (and, in text, the expiring entries) */
	struct expiry_finding *exp;
	int n_exp;
	struct sluice_excess *outside; /* --within: what the boundary does not allow */
	int n_out;
	int n_err;                  /* text: expired entries */
};

/* The secrets (read and wiped: never printed) and tls.upstream_ca of a
 * loaded policy must be readable, private and well-formed.  Returns 0, or
 * -1 with err set. */
static int check_contents(const struct sluice_policy *p, struct sluice_policy_error *err)
{
	struct sluice_secrets sec;
	char *pem = NULL;
	size_t n = 0;

	if (sluice_secrets_load(p, NULL, 0, getenv("CREDENTIALS_DIRECTORY"), &sec, err) < 0)
		return -1;
	sluice_secrets_clear(&sec);
	if (sluice_upstream_ca_load(NULL, p, &pem, &n, err) < 0)
		return -1;
	free(pem);
	return 0;
}

/* The relay list could not be read: the error, into fo (then into arr) or printed. */
static void report_relays(json_object *fo, json_object *arr, const char *file, const char *relays)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "%s: cannot read the relay list %s: %s", file,
		 relays ? relays : "(default: $SLUICE_RELAYS or policies/relays.txt beside the binary)",
		 strerror(errno));
	if (fo) {
		json_object *eo = json_object_new_object();

		json_object_object_add(eo, "file", jstr(file));
		json_object_object_add(eo, "message", jstr(msg));
		json_object_object_add(fo, "ok", json_object_new_boolean(false));
		json_object_object_add(fo, "error", eo);
		json_object_array_add(arr, fo);
	} else {
		sluice_cli_error("%s", msg);
	}
}

/* The policy's settings, entries, credentials and families, as `check --json` shows them. */
static void check_json_policy(json_object *fo, const struct sluice_policy *p)
{
	json_object *ents = json_object_new_array(), *dns = json_object_new_object(), *qt = json_object_new_array();
	json_object *cs = json_object_new_array();
	char q[16];

	json_object_object_add(fo, "ok", json_object_new_boolean(true));
	json_object_object_add(fo, "name", jstr(p->name));
	json_object_object_add(fo, "version", json_object_new_int(p->version));
	json_object_object_add(fo, "mode", jstr(p->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce"));
	json_object_object_add(fo, "sha256", jstr(p->digest));
	json_object_object_add(dns, "on_deny", jstr(p->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain"));
	for (size_t k = 0; k < p->n_dns_qtypes; k++)
		json_object_array_add(qt, jstr(sluice_qtype_str(p->dns_qtypes[k], "TYPE", q, sizeof(q))));
	json_object_object_add(dns, "qtypes", qt);
	json_object_object_add(fo, "dns", dns);
	for (size_t k = 0; k < p->n_entries; k++)
		json_object_array_add(ents, pol_entry_json(&p->entries[k]));
	json_object_object_add(fo, "entries", ents);
	for (size_t k = 0; k < p->n_credentials; k++) {
		const struct sluice_credential *cr = &p->credentials[k];
		json_object *co = json_object_new_object();

		json_object_object_add(co, "name", jstr(cr->name));
		json_object_object_add(co, "header", jstr(cr->header));
		json_object_object_add(co, "env", cr->env ? jstr(cr->env) : NULL);
		json_object_object_add(co, "allow_plain_http", json_object_new_boolean(cr->allow_plain_http));
		json_object_object_add(co, "line", json_object_new_int((int)cr->line));
		json_object_array_add(cs, co);
	}
	json_object_object_add(fo, "credentials", cs);
	if (p->families.present) {
		json_object *fs = json_object_new_array();

		for (size_t k = 0; k < p->families.n; k++) {
			json_object *fa = json_object_new_object();

			json_object_object_add(fa, "family", jstr(p->families.items[k].name));
			json_object_object_add(fa, "why", jstr(p->families.items[k].why));
			json_object_object_add(fa, "line", json_object_new_int((int)p->families.items[k].line));
			json_object_array_add(fs, fa);
		}
		json_object_object_add(fo, "families", fs);
	}
}

/* The findings of one file as `check --json` shows them: warnings (lints,
 * expiring and expired entries) and, with --within, what lies outside. */
static void check_json_findings(json_object *fo, const struct check_file *cf, const char *within)
{
	const struct sluice_policy *p = cf->p;
	json_object *ws = json_object_new_array();

	for (int k = 0; k < cf->n; k++) {
		const struct sluice_lint *l = &cf->lints[k];
		json_object *w = json_object_new_object();

		json_object_object_add(w, "code", jstr(l->code_name));
		json_object_object_add(w, "entry", json_object_new_int((int)l->entry));
		if (l->family) {
			char fr[48];

			snprintf(fr, sizeof(fr), "family:%s", l->family);
			json_object_object_add(w, "rule", jstr(fr));
		} else {
			json_object_object_add(w, "rule", jstr(p->entries[l->entry].name));
		}
		json_object_object_add(w, "line", json_object_new_int((int)l->line));
		json_object_object_add(w, "column", json_object_new_int((int)l->column));
		json_object_object_add(w, "message", jstr(l->message));
		json_object_array_add(ws, w);
	}
	for (int k = 0; k < cf->n_exp; k++) {
		const struct sluice_entry *e = &p->entries[cf->exp[k].entry];
		json_object *w = json_object_new_object();

		json_object_object_add(w, "code", jstr(cf->exp[k].expired ? "expired" : "expiring"));
		json_object_object_add(w, "error", json_object_new_boolean(cf->exp[k].expired));
		json_object_object_add(w, "entry", json_object_new_int((int)e->index));
		json_object_object_add(w, "rule", jstr(e->name));
		json_object_object_add(w, "line", json_object_new_int((int)e->line));
		json_object_object_add(w, "column", json_object_new_int((int)e->column));
		json_object_object_add(w, "message", jstr(cf->exp[k].message));
		json_object_array_add(ws, w);
	}
	json_object_object_add(fo, "warnings", ws);
	if (within) {
		json_object *xs = json_object_new_array();

		for (int k = 0; k < cf->n_out; k++) {
			const struct sluice_excess *x = &cf->outside[k];
			json_object *xo = json_object_new_object();
			bool whole = x->entry == SLUICE_EXCESS_POLICY;

			json_object_object_add(xo, "rule", whole ? NULL : jstr(p->entries[x->entry].name));
			json_object_object_add(xo, "line", json_object_new_int((int)x->line));
			json_object_object_add(xo, "column", json_object_new_int((int)x->column));
			json_object_object_add(xo, "what", jstr(x->what));
			json_object_object_add(xo, "example", jstr(x->example));
			json_object_array_add(xs, xo);
		}
		json_object_object_add(fo, "boundary", jstr(within));
		json_object_object_add(fo, "outside", xs);
	}
}

/* The findings of one file as text: the table, the warnings on stdout,
 * the errors (expired entries, what lies outside --within) on stderr, the
 * result line. */
static void check_print(struct check_file *cf, const char *within)
{
	const struct sluice_policy *p = cf->p;
	const char *file = cf->file;
	int n = cf->n, n_err = 0, n_out = cf->n_out;

	print_table(p);
	if (n > 0)
		printf("\n");
	for (int k = 0; k < n; k++)
		printf("%s:%u:%u: warning: [%s] %s\n", file, cf->lints[k].line, cf->lints[k].column,
		       cf->lints[k].code_name, cf->lints[k].message);
	for (int k = 0; k < cf->n_exp; k++) {
		const struct sluice_entry *e = &p->entries[cf->exp[k].entry];

		if (cf->exp[k].expired) {
			fprintf(stderr, "%s:%u:%u: %s\n", file, e->line, e->column, cf->exp[k].message);
			n_err++;
		} else {
			if (!n)
				printf("\n");
			printf("%s:%u:%u: warning: [expiring] %s\n", file, e->line, e->column, cf->exp[k].message);
			n++;
		}
	}
	for (int k = 0; k < n_out; k++) {
		const struct sluice_excess *x = &cf->outside[k];

		if (x->entry == SLUICE_EXCESS_POLICY)
			fprintf(stderr, "%s: outside the boundary %s: the policy allows %s\n", file, within, x->example);
		else
			fprintf(stderr, "%s:%u:%u: outside the boundary %s: %s allows %s\n", file, x->line, x->column,
				within, p->entries[x->entry].name, x->example);
	}
	if (within)
		printf("%sboundary %s: %s\n", n || n_err ? "" : "\n", within,
		       n_out ? "OUTSIDE (see the lines above; `sluice run --boundary` refuses it)" :
			       "within (everything it allows, the boundary allows)");
	if (n_out)
		printf("result  error: %d thing%s allowed beyond the boundary\n", n_out, n_out == 1 ? "" : "s");
	else if (n_err)
		printf("%sresult  error: %d expired entr%s (they allow nothing: remove or renew them)\n",
		       n ? "" : "\n", n_err, n_err == 1 ? "y" : "ies");
	else
		printf("%sresult  %s", n || within ? "" : "\n", n ? "" : "ok, no warnings\n");
	if (n && !n_err && !n_out)
		printf("%d warning%s\n", n, n == 1 ? "" : "s");
}

/* Check one file: load it, its contents, lints, the boundary, expiry;
 * the findings into fo (then into arr) or printed.  Returns the worst
 * exit status it found. */
static int check_file(json_object *fo, json_object *arr, const char *file, const char *relays,
		      const struct sluice_policy *boundary, const char *within)
{
	struct check_file cf = { .file = file };
	struct sluice_policy_error err;
	int worst = EXIT_CLEAN;

	if (sluice_policy_load_file(file, &cf.p, &err) < 0) {
		report_not_loaded(fo, arr, &err, file);
		return EXIT_ERROR;
	}
	if (check_contents(cf.p, &err) < 0) {
		report_not_loaded(fo, arr, &err, file);
		sluice_policy_free(cf.p);
		return EXIT_ERROR;
	}
	cf.n = sluice_policy_lint(cf.p, relays, &cf.lints);
	if (cf.n < 0) {
		report_relays(fo, arr, file, relays);
		sluice_policy_free(cf.p);
		return EXIT_ERROR;
	}
	if (cf.n > 0)
		worst = EXIT_FINDINGS;
	if (boundary) {
		cf.n_out = sluice_policy_within(cf.p, boundary, &cf.outside);
		if (cf.n_out < 0) {
			sluice_cli_error("sluice policy check: out of memory");
			cf.n_out = 0;
			worst = EXIT_ERROR;
		}
		if (cf.n_out > 0)
			worst = EXIT_ERROR;
	}
	cf.n_exp = expiry_findings(cf.p, &cf.exp);
	for (int k = 0; k < cf.n_exp; k++)
		if (worst < (cf.exp[k].expired ? EXIT_ERROR : EXIT_FINDINGS))
			worst = cf.exp[k].expired ? EXIT_ERROR : EXIT_FINDINGS;
	if (fo) {
		check_json_policy(fo, cf.p);
		check_json_findings(fo, &cf, boundary ? within : NULL);
		json_object_array_add(arr, fo);
	} else {
		check_print(&cf, boundary ? within : NULL);
	}
	free(cf.lints);
	free(cf.exp);
	free(cf.outside);
	sluice_policy_free(cf.p);
	return worst;
}

static int check(bool json, const char *relays, const char *within, char **files, int n_files)
{
	json_object *root = json ? json_object_new_object() : NULL;
	json_object *arr = json ? json_object_new_array() : NULL;
	struct sluice_policy *boundary = NULL;
	int worst = EXIT_CLEAN;

	if (within) {
		char msg[1024];

		if (sluice_boundary_load(within, &boundary, msg, sizeof(msg)) < 0) {
			sluice_cli_error("%s", msg);
			json_object_put(root);
			json_object_put(arr);
			return EXIT_ERROR;
		}
	}
	for (int i = 0; i < n_files; i++) {
		json_object *fo = json ? json_object_new_object() : NULL;
		int w;

		if (fo)
			json_object_object_add(fo, "file", jstr(files[i]));
		if (!json && i > 0)
			printf("\n");
		w = check_file(fo, arr, files[i], relays, boundary, within);
		if (w > worst)
			worst = w;
	}
	sluice_policy_free(boundary);
	if (root) {
		json_object_object_add(root, "ok", json_object_new_boolean(worst != EXIT_ERROR));
		json_object_object_add(root, "files", arr);
		json_object_object_add(root, "exit", json_object_new_int(worst));
		pol_print_json(root);
		json_object_put(root);
	}
	return worst;
}

/* --- dispatch ------------------------------------------------------------------- */

int cmd_policy(int argc, char **argv)
{
	const char *relays = NULL, *within = NULL;
	bool json = sluice_cli_json(), opts = true;
	char **files;
	int n = 0, rc;

	if (argc < 2) {
		usage(stderr);
		return EXIT_ERROR;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_CLEAN;
	}
	if (strcmp(argv[1], "suggest") == 0) {
		if (sluice_cli_json()) {
			sluice_cli_error("sluice policy suggest: no -j/--json: it writes a YAML policy");
			return EXIT_ERROR;
		}
		return cmd_suggest(argc - 1, argv + 1);
	}
	if (strcmp(argv[1], "sign") == 0 || strcmp(argv[1], "verify") == 0)
		return cmd_policy_sign(argc - 1, argv + 1);
	if (strcmp(argv[1], "seccomp") == 0)
		return cmd_policy_seccomp(argc - 1, argv + 1);
	if (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "diff") != 0) {
		sluice_cli_error("sluice policy: unknown subcommand '%s'", argv[1]);
		usage(stderr);
		return EXIT_ERROR;
	}
	files = calloc((size_t)argc, sizeof(*files));
	if (!files) {
		sluice_cli_error("sluice policy: out of memory");
		return EXIT_ERROR;
	}
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (opts && strcmp(a, "--") == 0) {
			opts = false;
		} else if (opts && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			usage(stdout);
			free(files);
			return EXIT_CLEAN;
		} else if (opts && (strcmp(a, "--json") == 0 || strcmp(a, "-j") == 0)) {
			json = true;
			sluice_cli_set_json();
		} else if (opts && strcmp(a, "--relays") == 0 && strcmp(argv[1], "check") == 0) {
			if (i + 1 >= argc) {
				sluice_cli_error("sluice policy: --relays needs a FILE");
				free(files);
				return EXIT_ERROR;
			}
			relays = argv[++i];
		} else if (opts && strncmp(a, "--relays=", 9) == 0 && strcmp(argv[1], "check") == 0) {
			relays = a + 9;
		} else if (opts && strcmp(a, "--within") == 0 && strcmp(argv[1], "check") == 0) {
			if (i + 1 >= argc) {
				sluice_cli_error("sluice policy: --within needs a BOUNDARY file");
				free(files);
				return EXIT_ERROR;
			}
			within = argv[++i];
		} else if (opts && a[0] == '-' && a[1] != '\0') {
			sluice_cli_error("sluice policy %s: unknown option '%s'", argv[1], a);
			usage(stderr);
			free(files);
			return EXIT_ERROR;
		} else {
			files[n++] = argv[i];
		}
	}
	if (strcmp(argv[1], "check") == 0) {
		if (n == 0) {
			sluice_cli_error("sluice policy check: no FILE given");
			usage(stderr);
			rc = EXIT_ERROR;
		} else {
			rc = check(json, relays, within, files, n);
		}
	} else if (n != 2) {
		sluice_cli_error("sluice policy diff: need exactly OLD and NEW");
		usage(stderr);
		rc = EXIT_ERROR;
	} else {
		rc = policy_diff(json, files[0], files[1]);
	}
	free(files);
	return rc;
}
