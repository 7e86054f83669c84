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
#include "policy_within.h"
#include "upstream_ca.h"

#define EXIT_CLEAN    0
#define EXIT_FINDINGS 1
#define EXIT_ERROR    2

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

/* --- helpers ---------------------------------------------------------------- */

static const char *qtype_str(uint16_t t, char *buf, size_t len)
{
	const char *n = sluice_qtype_name(t);

	if (n)
		return n;
	snprintf(buf, len, "TYPE%u", t);
	return buf;
}

static const char *proto_str(const struct sluice_entry *e)
{
	return e->protocol == IPPROTO_UDP ? "udp" : "tcp";
}

static void ports_str(const struct sluice_entry *e, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < e->n_ports && o + 1 < len; i++) {
		int n;

		if (e->ports[i].lo == e->ports[i].hi)
			n = snprintf(buf + o, len - o, "%s%u", i ? "," : "", e->ports[i].lo);
		else
			n = snprintf(buf + o, len - o, "%s%u-%u", i ? "," : "", e->ports[i].lo,
				     e->ports[i].hi);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
}

static void methods_str(const struct sluice_entry *e, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < e->n_methods; i++) {
		if (i)
			strncat(buf, ",", len - strlen(buf) - 1);
		strncat(buf, e->methods[i], len - strlen(buf) - 1);
	}
}

/* How the entry's traffic leaves: "direct" (cidr, the kernel alone),
 * "unix" (a unix socket, the kernel alone), "inspect" (TLS terminated,
 * each request decided and logged: https:// url entries and `inspect:
 * true` host entries) or "proxy". */
static const char *via_str(const struct sluice_entry *e)
{
	if (e->kind == SLUICE_ENTRY_CIDR)
		return "direct";
	if (e->kind == SLUICE_ENTRY_UNIX)
		return "unix";
	if ((e->kind == SLUICE_ENTRY_HOST && e->inspect) ||
	    (e->kind == SLUICE_ENTRY_URL && strcmp(e->url_scheme, "https") == 0))
		return "inspect";
	return "proxy";
}

/* What the entry allows, without the "allow[N] kind:" prefix. */
static const char *target_str(const struct sluice_entry *e)
{
	const char *colon = strchr(e->name, ':');

	return colon ? colon + 1 : e->name;
}

static void print_json(json_object *o)
{
	sluice_cli_json_print(o);
}

/* The programs of `e` as "a, b" into buf. */
static const char *programs_str(const struct sluice_entry *e, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < e->n_programs && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", e->programs[i].path);
	return buf;
}

static json_object *jstr(const char *s)
{
	return json_object_new_string(s ? s : "");
}

static json_object *ports_json(const struct sluice_entry *e)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < e->n_ports; i++) {
		json_object *r = json_object_new_object();

		json_object_object_add(r, "lo", json_object_new_int(e->ports[i].lo));
		json_object_object_add(r, "hi", json_object_new_int(e->ports[i].hi));
		json_object_array_add(a, r);
	}
	return a;
}

static json_object *entry_json(const struct sluice_entry *e)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "index", json_object_new_int((int)e->index));
	json_object_object_add(o, "rule", jstr(e->name));
	json_object_object_add(o, "kind", jstr(sluice_entry_kind_name(e->kind)));
	json_object_object_add(o, "line", json_object_new_int((int)e->line));
	json_object_object_add(o, "column", json_object_new_int((int)e->column));
	json_object_object_add(o, "target", jstr(target_str(e)));
	switch (e->kind) {
	case SLUICE_ENTRY_HOST:
		json_object_object_add(o, "host", jstr(e->host));
		json_object_object_add(o, "wildcard", json_object_new_boolean(e->wildcard));
		break;
	case SLUICE_ENTRY_URL: {
		json_object *m = json_object_new_array();

		json_object_object_add(o, "scheme", jstr(e->url_scheme));
		json_object_object_add(o, "host", jstr(e->url_host));
		json_object_object_add(o, "port", json_object_new_int(e->url_port));
		json_object_object_add(o, "path", jstr(e->url_path));
		for (size_t i = 0; i < e->n_methods; i++)
			json_object_array_add(m, jstr(e->methods[i]));
		json_object_object_add(o, "methods", m);
		if (e->credential)
			json_object_object_add(o, "credential", jstr(e->credential));
		break;
	}
	case SLUICE_ENTRY_CIDR:
		json_object_object_add(o, "family", json_object_new_int(e->family == AF_INET6 ? 6 : 4));
		json_object_object_add(o, "prefix_len", json_object_new_int(e->prefix_len));
		break;
	case SLUICE_ENTRY_UNIX:
		json_object_object_add(o, "path", jstr(e->unix_path));
		json_object_object_add(o, "abstract", json_object_new_boolean(e->unix_abstract));
		json_object_object_add(o, "prefix", json_object_new_boolean(e->unix_prefix));
		break;
	}
	if (e->kind != SLUICE_ENTRY_UNIX) {
		json_object_object_add(o, "ports", ports_json(e));
		json_object_object_add(o, "protocol", jstr(proto_str(e)));
	}
	if (e->expires) {
		char t[32];

		json_object_object_add(o, "expires", jstr(sluice_rfc3339_str(e->expires, t, sizeof(t))));
	}
	if (e->owner)
		json_object_object_add(o, "owner", jstr(e->owner));
	if (e->ticket)
		json_object_object_add(o, "ticket", jstr(e->ticket));
	if (e->n_programs) {
		json_object *pr = json_object_new_array();

		for (size_t i = 0; i < e->n_programs; i++)
			json_object_array_add(pr, jstr(e->programs[i].path));
		json_object_object_add(o, "programs", pr);
	}
	json_object_object_add(o, "via", jstr(via_str(e)));
	json_object_object_add(o, "inspect", json_object_new_boolean(strcmp(via_str(e), "inspect") == 0));
	json_object_object_add(o, "why", jstr(e->why));
	return o;
}

static json_object *error_json(const struct sluice_policy_error *err)
{
	json_object *o = json_object_new_object();
	char buf[700];

	json_object_object_add(o, "file", jstr(err->file));
	json_object_object_add(o, "line", json_object_new_int((int)err->line));
	json_object_object_add(o, "column", json_object_new_int((int)err->column));
	json_object_object_add(o, "message", jstr(err->message));
	json_object_object_add(o, "text", jstr(sluice_policy_error_str(err, buf, sizeof(buf))));
	return o;
}

static void print_error(const struct sluice_policy_error *err)
{
	char buf[700];

	fprintf(stderr, "%s\n", sluice_policy_error_str(err, buf, sizeof(buf)));
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
		printf(" %s", qtype_str(p->dns_qtypes[i], q, sizeof(q)));
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

		ports_str(e, ports, sizeof(ports));
		if (e->kind == SLUICE_ENTRY_URL) {
			char m[64];

			methods_str(e, m, sizeof(m));
			snprintf(target, sizeof(target), "%s %s", m, target_str(e));
		} else {
			snprintf(target, sizeof(target), "%s", target_str(e));
		}
		/* the first line of a folded `why` */
		nl = strchr(e->why, '\n');
		snprintf(why, sizeof(why), "%.*s%s", nl ? (int)(nl - e->why) : (int)strlen(e->why),
			 e->why, nl && nl[1] ? " ..." : "");
		printf("  %-4zu %-5s %-40s %-14s %-6s %-9s %s\n", i, sluice_entry_kind_name(e->kind),
		       target, ports, e->kind == SLUICE_ENTRY_UNIX ? "-" : proto_str(e), via_str(e), why);
		if (e->n_programs) {
			char list[3000];

			printf("       programs %s\n", programs_str(e, list, sizeof(list)));
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
		json_object_object_add(fo, "error", error_json(err));
		json_object_array_add(arr, fo);
	} else {
		print_error(err);
		printf("policy  %s\nresult  error (not loaded)\n", file);
	}
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
		struct sluice_policy *p = NULL;
		struct sluice_policy_error err;
		struct sluice_lint *lints = NULL;
		struct expiry_finding *exp = NULL;
		struct sluice_excess *outside = NULL;
		json_object *fo = json ? json_object_new_object() : NULL;
		int n, n_exp = 0, n_err = 0, n_out = 0;

		if (fo)
			json_object_object_add(fo, "file", jstr(files[i]));
		if (!json && i > 0)
			printf("\n");
		if (sluice_policy_load_file(files[i], &p, &err) < 0) {
			worst = EXIT_ERROR;
			report_not_loaded(fo, arr, &err, files[i]);
			continue;
		}
		{
			/* the secrets must be readable, private and well-formed
			 * (read here and wiped: never printed) */
			struct sluice_secrets sec;

			if (sluice_secrets_load(p, NULL, 0, getenv("CREDENTIALS_DIRECTORY"), &sec, &err) < 0) {
				worst = EXIT_ERROR;
				report_not_loaded(fo, arr, &err, files[i]);
				sluice_policy_free(p);
				continue;
			}
			sluice_secrets_clear(&sec);
		}
		{
			/* tls.upstream_ca: readable, PEM certificates only */
			char *pem = NULL;
			size_t n = 0;

			if (sluice_upstream_ca_load(NULL, p, &pem, &n, &err) < 0) {
				worst = EXIT_ERROR;
				report_not_loaded(fo, arr, &err, files[i]);
				sluice_policy_free(p);
				continue;
			}
			free(pem);
		}
		n = sluice_policy_lint(p, relays, &lints);
		if (n < 0) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s: cannot read the relay list %s: %s", files[i],
				 relays ? relays : "(default: $SLUICE_RELAYS or policies/relays.txt beside the binary)",
				 strerror(errno));
			worst = EXIT_ERROR;
			if (fo) {
				json_object *eo = json_object_new_object();

				json_object_object_add(eo, "file", jstr(files[i]));
				json_object_object_add(eo, "message", jstr(msg));
				json_object_object_add(fo, "ok", json_object_new_boolean(false));
				json_object_object_add(fo, "error", eo);
				json_object_array_add(arr, fo);
			} else {
				sluice_cli_error("%s", msg);
			}
			sluice_policy_free(p);
			continue;
		}
		if (n > 0 && worst < EXIT_FINDINGS)
			worst = EXIT_FINDINGS;
		if (boundary) {
			n_out = sluice_policy_within(p, boundary, &outside);
			if (n_out < 0) {
				sluice_cli_error("sluice policy check: out of memory");
				n_out = 0;
				worst = EXIT_ERROR;
			}
			if (n_out > 0)
				worst = EXIT_ERROR;
		}
		n_exp = expiry_findings(p, &exp);
		for (int k = 0; k < n_exp; k++)
			if (worst < (exp[k].expired ? EXIT_ERROR : EXIT_FINDINGS))
				worst = exp[k].expired ? EXIT_ERROR : EXIT_FINDINGS;
		if (fo) {
			json_object *ents = json_object_new_array(), *ws = json_object_new_array();
			json_object *dns = json_object_new_object(), *qt = json_object_new_array();
			char q[16];

			json_object_object_add(fo, "ok", json_object_new_boolean(true));
			json_object_object_add(fo, "name", jstr(p->name));
			json_object_object_add(fo, "version", json_object_new_int(p->version));
			json_object_object_add(fo, "mode", jstr(p->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce"));
			json_object_object_add(fo, "sha256", jstr(p->digest));
			json_object_object_add(dns, "on_deny",
					       jstr(p->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain"));
			for (size_t k = 0; k < p->n_dns_qtypes; k++)
				json_object_array_add(qt, jstr(qtype_str(p->dns_qtypes[k], q, sizeof(q))));
			json_object_object_add(dns, "qtypes", qt);
			json_object_object_add(fo, "dns", dns);
			for (size_t k = 0; k < p->n_entries; k++)
				json_object_array_add(ents, entry_json(&p->entries[k]));
			json_object_object_add(fo, "entries", ents);
			{
				json_object *cs = json_object_new_array();

				for (size_t k = 0; k < p->n_credentials; k++) {
					const struct sluice_credential *cr = &p->credentials[k];
					json_object *co = json_object_new_object();

					json_object_object_add(co, "name", jstr(cr->name));
					json_object_object_add(co, "header", jstr(cr->header));
					json_object_object_add(co, "env", cr->env ? jstr(cr->env) : NULL);
					json_object_object_add(co, "allow_plain_http",
							       json_object_new_boolean(cr->allow_plain_http));
					json_object_object_add(co, "line", json_object_new_int((int)cr->line));
					json_object_array_add(cs, co);
				}
				json_object_object_add(fo, "credentials", cs);
			}
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
			for (int k = 0; k < n; k++) {
				json_object *w = json_object_new_object();

				json_object_object_add(w, "code", jstr(lints[k].code_name));
				json_object_object_add(w, "entry", json_object_new_int((int)lints[k].entry));
				if (lints[k].family) {
					char fr[48];

					snprintf(fr, sizeof(fr), "family:%s", lints[k].family);
					json_object_object_add(w, "rule", jstr(fr));
				} else {
					json_object_object_add(w, "rule", jstr(p->entries[lints[k].entry].name));
				}
				json_object_object_add(w, "line", json_object_new_int((int)lints[k].line));
				json_object_object_add(w, "column", json_object_new_int((int)lints[k].column));
				json_object_object_add(w, "message", jstr(lints[k].message));
				json_object_array_add(ws, w);
			}
			for (int k = 0; k < n_exp; k++) {
				const struct sluice_entry *e = &p->entries[exp[k].entry];
				json_object *w = json_object_new_object();

				json_object_object_add(w, "code", jstr(exp[k].expired ? "expired" : "expiring"));
				json_object_object_add(w, "error", json_object_new_boolean(exp[k].expired));
				json_object_object_add(w, "entry", json_object_new_int((int)e->index));
				json_object_object_add(w, "rule", jstr(e->name));
				json_object_object_add(w, "line", json_object_new_int((int)e->line));
				json_object_object_add(w, "column", json_object_new_int((int)e->column));
				json_object_object_add(w, "message", jstr(exp[k].message));
				json_object_array_add(ws, w);
			}
			json_object_object_add(fo, "warnings", ws);
			if (boundary) {
				json_object *xs = json_object_new_array();

				for (int k = 0; k < n_out; k++) {
					json_object *x = json_object_new_object();
					bool whole = outside[k].entry == SLUICE_EXCESS_POLICY;

					json_object_object_add(x, "rule", whole ? NULL : jstr(p->entries[outside[k].entry].name));
					json_object_object_add(x, "line", json_object_new_int((int)outside[k].line));
					json_object_object_add(x, "column", json_object_new_int((int)outside[k].column));
					json_object_object_add(x, "what", jstr(outside[k].what));
					json_object_object_add(x, "example", jstr(outside[k].example));
					json_object_array_add(xs, x);
				}
				json_object_object_add(fo, "boundary", jstr(within));
				json_object_object_add(fo, "outside", xs);
			}
			json_object_array_add(arr, fo);
		} else {
			print_table(p);
			if (n > 0)
				printf("\n");
			for (int k = 0; k < n; k++)
				printf("%s:%u:%u: warning: [%s] %s\n", files[i], lints[k].line,
				       lints[k].column, lints[k].code_name, lints[k].message);
			for (int k = 0; k < n_exp; k++) {
				const struct sluice_entry *e = &p->entries[exp[k].entry];

				if (exp[k].expired) {
					fprintf(stderr, "%s:%u:%u: %s\n", files[i], e->line, e->column, exp[k].message);
					n_err++;
				} else {
					if (!n)
						printf("\n");
					printf("%s:%u:%u: warning: [expiring] %s\n", files[i], e->line, e->column,
					       exp[k].message);
					n++;
				}
			}
			for (int k = 0; k < n_out; k++) {
				if (outside[k].entry == SLUICE_EXCESS_POLICY)
					fprintf(stderr, "%s: outside the boundary %s: the policy allows %s\n", files[i], within,
						outside[k].example);
				else
					fprintf(stderr, "%s:%u:%u: outside the boundary %s: %s allows %s\n", files[i],
						outside[k].line, outside[k].column, within,
						p->entries[outside[k].entry].name, outside[k].example);
			}
			if (boundary)
				printf("%sboundary %s: %s\n", n || n_err ? "" : "\n", within,
				       n_out ? "OUTSIDE (see the lines above; `sluice run --boundary` refuses it)" :
					       "within (everything it allows, the boundary allows)");
			if (n_out)
				printf("result  error: %d thing%s allowed beyond the boundary\n", n_out, n_out == 1 ? "" : "s");
			else if (n_err)
				printf("%sresult  error: %d expired entr%s (they allow nothing: remove or renew them)\n",
				       n ? "" : "\n", n_err, n_err == 1 ? "y" : "ies");
			else
				printf("%sresult  %s", n || boundary ? "" : "\n", n ? "" : "ok, no warnings\n");
			if (n && !n_err && !n_out)
				printf("%d warning%s\n", n, n == 1 ? "" : "s");
		}
		free(lints);
		free(exp);
		free(outside);
		sluice_policy_free(p);
	}
	sluice_policy_free(boundary);
	if (root) {
		json_object_object_add(root, "ok", json_object_new_boolean(worst != EXIT_ERROR));
		json_object_object_add(root, "files", arr);
		json_object_object_add(root, "exit", json_object_new_int(worst));
		print_json(root);
		json_object_put(root);
	}
	return worst;
}

/* --- diff --------------------------------------------------------------------- */

/* A port set as a bitmap, for set differences of ranges. */
struct portset {
	uint8_t bits[65536 / 8];
};

static void ps_add(struct portset *s, const struct sluice_entry *e)
{
	for (size_t i = 0; i < e->n_ports; i++)
		for (unsigned p = e->ports[i].lo; p <= e->ports[i].hi; p++)
			s->bits[p / 8] |= (uint8_t)(1u << (p % 8));
}

static bool ps_has(const struct portset *s, unsigned p)
{
	return s->bits[p / 8] & (1u << (p % 8));
}

/* Ports in a but not b, as "80,8000-8080" (empty when none). */
static void ps_minus_str(const struct portset *a, const struct portset *b, char *buf, size_t len,
			 json_object *arr)
{
	size_t o = 0;

	buf[0] = '\0';
	for (unsigned p = 1; p <= 65535; p++) {
		unsigned lo;
		int n;

		if (!ps_has(a, p) || (b && ps_has(b, p)))
			continue;
		lo = p;
		while (p < 65535 && ps_has(a, p + 1) && !(b && ps_has(b, p + 1)))
			p++;
		if (arr) {
			json_object *r = json_object_new_object();

			json_object_object_add(r, "lo", json_object_new_int((int)lo));
			json_object_object_add(r, "hi", json_object_new_int((int)p));
			json_object_array_add(arr, r);
		}
		if (o + 1 >= len)
			continue;
		if (lo == p)
			n = snprintf(buf + o, len - o, "%s%u", o ? "," : "", lo);
		else
			n = snprintf(buf + o, len - o, "%s%u-%u", o ? "," : "", lo, p);
		if (n > 0)
			o += (size_t)n < len - o ? (size_t)n : len - o - 1;
	}
}

/* Entries with the same target: same kind, name/url/cidr and protocol. */
static void target_key(const struct sluice_entry *e, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s%s%s", sluice_entry_kind_name(e->kind), target_str(e),
		 e->kind == SLUICE_ENTRY_CIDR ? " " : "", e->kind == SLUICE_ENTRY_CIDR ? proto_str(e) : "");
}

static const struct sluice_entry *find_target(const struct sluice_policy *p, const char *key)
{
	char k[SLUICE_HOST_MAX + 2200];

	for (size_t i = 0; i < p->n_entries; i++) {
		target_key(&p->entries[i], k, sizeof(k));
		if (strcmp(k, key) == 0)
			return &p->entries[i];
	}
	return NULL;
}

struct diff_out {
	bool json;
	int changes;
	json_object *opens, *closes, *other;
};

static void emit(struct diff_out *d, json_object *list, char sign, const char *fmt_text,
		 json_object *obj)
{
	d->changes++;
	if (d->json)
		json_object_array_add(list, obj);
	else {
		printf("  %c %s\n", sign, fmt_text);
		json_object_put(obj);
	}
}

/* Opened (dir > 0) or closed (dir < 0) by `e` relative to `other` (may be NULL). */
static void diff_entry(struct diff_out *d, const struct sluice_entry *e,
		       const struct sluice_entry *other, int dir)
{
	char text[SLUICE_HOST_MAX + 2400], key[SLUICE_HOST_MAX + 2200];
	json_object *list = dir > 0 ? d->opens : d->closes;
	json_object *o;

	target_key(e, key, sizeof(key));
	if (e->kind == SLUICE_ENTRY_UNIX) {
		if (other)      /* the same socket (or directory) on both sides: nothing changed */
			return;
		o = json_object_new_object();
		json_object_object_add(o, "kind", jstr("unix"));
		json_object_object_add(o, "target", jstr(target_str(e)));
		json_object_object_add(o, "rule", jstr(e->name));
		json_object_object_add(o, "line", json_object_new_int((int)e->line));
		snprintf(text, sizeof(text), "%s %s  (%s, line %u)", key,
			 e->unix_prefix ? "every unix socket below it" : "unix socket", e->name, e->line);
	} else if (e->kind == SLUICE_ENTRY_URL) {
		json_object *ms = json_object_new_array();
		char m[64] = "";

		for (size_t i = 0; i < e->n_methods; i++) {
			bool in_other = false;

			for (size_t j = 0; other && j < other->n_methods; j++)
				if (strcmp(e->methods[i], other->methods[j]) == 0)
					in_other = true;
			if (in_other)
				continue;
			json_object_array_add(ms, jstr(e->methods[i]));
			if (m[0])
				strncat(m, ",", sizeof(m) - strlen(m) - 1);
			strncat(m, e->methods[i], sizeof(m) - strlen(m) - 1);
		}
		if (!m[0]) {
			json_object_put(ms);
			return;
		}
		o = json_object_new_object();
		json_object_object_add(o, "kind", jstr("url"));
		json_object_object_add(o, "target", jstr(target_str(e)));
		json_object_object_add(o, "methods", ms);
		json_object_object_add(o, "rule", jstr(e->name));
		json_object_object_add(o, "line", json_object_new_int((int)e->line));
		snprintf(text, sizeof(text), "%s methods %s  (%s, line %u)", key, m, e->name, e->line);
	} else {
		struct portset *a = calloc(1, sizeof(*a)), *b = other ? calloc(1, sizeof(*b)) : NULL;
		json_object *pa = json_object_new_array();
		char ports[256];

		if (!a || (other && !b)) {
			free(a);
			free(b);
			json_object_put(pa);
			return;
		}
		ps_add(a, e);
		if (b)
			ps_add(b, other);
		ps_minus_str(a, b, ports, sizeof(ports), pa);
		free(a);
		free(b);
		if (!ports[0]) {
			json_object_put(pa);
			return;
		}
		o = json_object_new_object();
		json_object_object_add(o, "kind", jstr(sluice_entry_kind_name(e->kind)));
		json_object_object_add(o, "target", jstr(target_str(e)));
		json_object_object_add(o, "protocol", jstr(proto_str(e)));
		json_object_object_add(o, "ports", pa);
		json_object_object_add(o, "rule", jstr(e->name));
		json_object_object_add(o, "line", json_object_new_int((int)e->line));
		snprintf(text, sizeof(text), "%s %s ports %s  (%s, line %u)", key,
			 e->kind == SLUICE_ENTRY_CIDR ? "direct" : "proxied", ports, e->name, e->line);
	}
	emit(d, list, dir > 0 ? '+' : '-', text, o);
}

static void other_change(struct diff_out *d, const char *what, const char *old, const char *new,
			 const char *text)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "what", jstr(what));
	json_object_object_add(o, "old", jstr(old));
	json_object_object_add(o, "new", jstr(new));
	emit(d, d->other, '~', text, o);
}

/*
 * What `e`'s `programs:` allow that those of `other` (the same target in
 * the other policy; NULL: none there, diff_entry() said it) do not:
 * opened (dir > 0) or closed (dir < 0).  Paths compared, as digested.
 */
static void diff_programs(struct diff_out *d, const struct sluice_entry *e, const struct sluice_entry *other,
			  int dir)
{
	char key[SLUICE_HOST_MAX + 2200], text[SLUICE_HOST_MAX + 6000], list[3000];
	json_object *o;

	if (!other || !other->n_programs)
		return;     /* the other allows any program: e allows no more */
	target_key(e, key, sizeof(key));
	if (!e->n_programs) {
		o = json_object_new_object();
		json_object_object_add(o, "kind", jstr("programs"));
		json_object_object_add(o, "target", jstr(key));
		json_object_object_add(o, "program", jstr("*"));
		snprintf(text, sizeof(text), dir > 0 ? "programs of %s: %s -> any (it widens to every program)" :
			 "programs of %s: any -> %s (the entry narrows to them)", key,
			 programs_str(other, list, sizeof(list)));
		emit(d, dir > 0 ? d->opens : d->closes, dir > 0 ? '+' : '-', text, o);
		return;
	}
	for (size_t i = 0; i < e->n_programs; i++) {
		bool there = false;

		for (size_t j = 0; j < other->n_programs; j++)
			there |= strcmp(e->programs[i].path, other->programs[j].path) == 0;
		if (there)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "kind", jstr("programs"));
		json_object_object_add(o, "target", jstr(key));
		json_object_object_add(o, "program", jstr(e->programs[i].path));
		snprintf(text, sizeof(text), "programs of %s: %s %s", key, e->programs[i].path,
			 dir > 0 ? "added" : "removed");
		emit(d, dir > 0 ? d->opens : d->closes, dir > 0 ? '+' : '-', text, o);
	}
}

static void diff_qtypes(struct diff_out *d, const struct sluice_policy *a,
			const struct sluice_policy *b, int dir)
{
	for (size_t i = 0; i < a->n_dns_qtypes; i++) {
		char q[16], text[64];
		json_object *o;

		if (sluice_policy_allows_qtype(b, a->dns_qtypes[i]))
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "kind", jstr("dns.qtype"));
		json_object_object_add(o, "target", jstr(qtype_str(a->dns_qtypes[i], q, sizeof(q))));
		snprintf(text, sizeof(text), "dns qtype %s", qtype_str(a->dns_qtypes[i], q, sizeof(q)));
		emit(d, dir > 0 ? d->opens : d->closes, dir > 0 ? '+' : '-', text, o);
	}
}

/* Where NEW (a) sends a credential that OLD (b) did not send there (the
 * same target without it, or with another one): opens (dir > 0), closes
 * (dir < 0). */
static void diff_credentials(struct diff_out *d, const struct sluice_policy *a,
			     const struct sluice_policy *b, int dir)
{
	char key[SLUICE_HOST_MAX + 2200], text[SLUICE_HOST_MAX + 2400];

	for (size_t i = 0; i < a->n_entries; i++) {
		const struct sluice_entry *e = &a->entries[i], *o;
		json_object *jo;

		if (!e->credential)
			continue;
		target_key(e, key, sizeof(key));
		o = find_target(b, key);
		if (o && o->credential && strcmp(o->credential, e->credential) == 0)
			continue;
		jo = json_object_new_object();
		json_object_object_add(jo, "kind", jstr("credential"));
		json_object_object_add(jo, "target", jstr(target_str(e)));
		json_object_object_add(jo, "credential", jstr(e->credential));
		json_object_object_add(jo, "rule", jstr(e->name));
		json_object_object_add(jo, "line", json_object_new_int((int)e->line));
		snprintf(text, sizeof(text), "credential %s %s %s  (%s, line %u)", e->credential,
			 dir > 0 ? "may now be sent to" : "is no longer sent to", key, e->name, e->line);
		emit(d, dir > 0 ? d->opens : d->closes, dir > 0 ? '+' : '-', text, jo);
	}
}

/* A credential of both whose header template, env or allow_plain_http changed. */
static void diff_credential_defs(struct diff_out *d, const struct sluice_policy *a,
				 const struct sluice_policy *b)
{
	char text[1200];

	for (size_t i = 0; i < b->n_credentials; i++) {
		const struct sluice_credential *n = &b->credentials[i];

		for (size_t j = 0; j < a->n_credentials; j++) {
			const struct sluice_credential *o = &a->credentials[j];

			if (strcmp(o->name, n->name) != 0)
				continue;
			if (strcmp(o->header, n->header) != 0) {
				snprintf(text, sizeof(text), "header of credential %s: \"%.400s\" -> \"%.400s\"",
					 n->name, o->header, n->header);
				other_change(d, "credential.header", o->header, n->header, text);
			}
			if ((o->env == NULL) != (n->env == NULL) || (o->env && strcmp(o->env, n->env) != 0)) {
				snprintf(text, sizeof(text), "env of credential %s: %s -> %s", n->name,
					 o->env ? o->env : "(none)", n->env ? n->env : "(none)");
				other_change(d, "credential.env", o->env ? o->env : "", n->env ? n->env : "", text);
			}
			if (o->allow_plain_http != n->allow_plain_http) {
				snprintf(text, sizeof(text), "allow_plain_http of credential %s: %s -> %s", n->name,
					 o->allow_plain_http ? "true" : "false", n->allow_plain_http ? "true" : "false");
				other_change(d, "credential.allow_plain_http", o->allow_plain_http ? "true" : "false",
					     n->allow_plain_http ? "true" : "false", text);
			}
		}
	}
}

/* The `filesystem:` sections (sluice run's sandbox profile): each path
 * added or removed, and the workdir, as other changes (they change what
 * CMD may read and write, never where it may connect). */
static void diff_filesystem(struct diff_out *d, const struct sluice_policy *a, const struct sluice_policy *b)
{
	static const char *const names[] = { "read_only", "read_write", "hide" };
	static const char *const plus[] = { "CMD sees it read-only", "CMD may now write there",
					    "hidden from CMD now" };
	static const char *const minus[] = { "no longer bound read-only", "CMD may no longer write there",
					     "no longer hidden: CMD sees it again" };
	const struct sluice_fs_path *la[] = { a->fs.read_only, a->fs.read_write, a->fs.hide };
	const struct sluice_fs_path *lb[] = { b->fs.read_only, b->fs.read_write, b->fs.hide };
	const size_t na[] = { a->fs.n_read_only, a->fs.n_read_write, a->fs.n_hide };
	const size_t nb[] = { b->fs.n_read_only, b->fs.n_read_write, b->fs.n_hide };
	const char *wa = a->fs.workdir.path ? a->fs.workdir.path : "", *wb = b->fs.workdir.path ? b->fs.workdir.path : "";
	char text[4400], what[64];

	for (int k = 0; k < 3; k++) {
		for (int dir = 0; dir < 2; dir++) {
			const struct sluice_fs_path *from = dir ? la[k] : lb[k], *in = dir ? lb[k] : la[k];
			size_t nf = dir ? na[k] : nb[k], ni = dir ? nb[k] : na[k];

			for (size_t i = 0; i < nf; i++) {
				bool found = false;

				for (size_t j = 0; j < ni && !found; j++)
					found = strcmp(from[i].path, in[j].path) == 0;
				if (found)
					continue;
				snprintf(what, sizeof(what), "filesystem.%s", names[k]);
				snprintf(text, sizeof(text), "%s %c %s (%s)", what, dir ? '-' : '+', from[i].path,
					 dir ? minus[k] : plus[k]);
				other_change(d, what, dir ? from[i].path : "", dir ? "" : from[i].path, text);
			}
		}
	}
	if (strcmp(wa, wb) != 0) {
		snprintf(text, sizeof(text), "filesystem.workdir %s -> %s", wa[0] ? wa : "(the current directory)",
			 wb[0] ? wb : "(the current directory)");
		other_change(d, "filesystem.workdir", wa, wb, text);
	}
}

/* The socket families NEW (a) names that OLD (b) did not: opens (dir >
 * 0), closes (dir < 0); dir 0: a family in both whose why changed (an
 * other change). */
static void diff_families(struct diff_out *d, const struct sluice_policy *a, const struct sluice_policy *b, int dir)
{
	char text[1200];

	for (size_t i = 0; i < a->families.n; i++) {
		const struct sluice_policy_family *f = &a->families.items[i], *o = NULL;
		json_object *jo;

		for (size_t j = 0; j < b->families.n && !o; j++)
			if (b->families.items[j].family == f->family)
				o = &b->families.items[j];
		if (o) {
			if (dir == 0 && strcmp(o->why, f->why) != 0) {
				snprintf(text, sizeof(text), "why of family %s: \"%.400s\" -> \"%.400s\"", f->name, o->why,
					 f->why);
				other_change(d, "family.why", o->why, f->why, text);
			}
			continue;
		}
		if (dir == 0)
			continue;
		jo = json_object_new_object();
		json_object_object_add(jo, "kind", jstr("family"));
		json_object_object_add(jo, "target", jstr(f->name));
		json_object_object_add(jo, "line", json_object_new_int((int)f->line));
		snprintf(text, sizeof(text), "family %s: sockets of it %s  (line %u)", f->name,
			 dir > 0 ? "may now be made (not judged by sluice)" : "are refused again", f->line);
		emit(d, dir > 0 ? d->opens : d->closes, dir > 0 ? '+' : '-', text, jo);
	}
}

static int diff(bool json, const char *oldf, const char *newf)
{
	struct sluice_policy *a = NULL, *b = NULL;
	struct sluice_policy_error err;
	struct diff_out d = { .json = json };
	json_object *root = NULL;
	char key[SLUICE_HOST_MAX + 2200], text[SLUICE_HOST_MAX + 3200];
	int rc;

	if (sluice_policy_load_file(oldf, &a, &err) < 0 ||
	    sluice_policy_load_file(newf, &b, &err) < 0) {
		if (json) {
			root = json_object_new_object();
			json_object_object_add(root, "ok", json_object_new_boolean(false));
			json_object_object_add(root, "error", error_json(&err));
			json_object_object_add(root, "exit", json_object_new_int(EXIT_ERROR));
			print_json(root);
			json_object_put(root);
		} else {
			print_error(&err);
		}
		sluice_policy_free(a);
		return EXIT_ERROR;
	}
	d.opens = json_object_new_array();
	d.closes = json_object_new_array();
	d.other = json_object_new_array();
	if (!json) {
		printf("old  %s  sha256 %s\n", a->path, a->digest);
		printf("new  %s  sha256 %s\n", b->path, b->digest);
	}

	/* opens: everything NEW allows that OLD did not */
	if (!json)
		printf("opens:\n");
	if (a->mode == SLUICE_MODE_ENFORCE && b->mode == SLUICE_MODE_AUDIT) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "kind", jstr("mode"));
		json_object_object_add(o, "target", jstr("audit"));
		emit(&d, d.opens, '+', "mode enforce -> audit: NOTHING is enforced any more, denials are only logged", o);
	}
	for (size_t i = 0; i < b->n_entries; i++) {
		target_key(&b->entries[i], key, sizeof(key));
		diff_entry(&d, &b->entries[i], find_target(a, key), +1);
		diff_programs(&d, &b->entries[i], find_target(a, key), +1);
	}
	diff_qtypes(&d, b, a, +1);
	diff_credentials(&d, b, a, +1);
	diff_families(&d, b, a, +1);
	if (!json && d.changes == 0)
		printf("  (nothing)\n");

	/* closes: everything OLD allowed that NEW does not */
	rc = d.changes;
	if (!json)
		printf("closes:\n");
	if (a->mode == SLUICE_MODE_AUDIT && b->mode == SLUICE_MODE_ENFORCE) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "kind", jstr("mode"));
		json_object_object_add(o, "target", jstr("enforce"));
		emit(&d, d.closes, '-', "mode audit -> enforce: the policy is now enforced", o);
	}
	for (size_t i = 0; i < a->n_entries; i++) {
		target_key(&a->entries[i], key, sizeof(key));
		diff_entry(&d, &a->entries[i], find_target(b, key), -1);
		diff_programs(&d, &a->entries[i], find_target(b, key), -1);
	}
	diff_qtypes(&d, a, b, -1);
	diff_credentials(&d, a, b, -1);
	diff_families(&d, a, b, -1);
	if (!json && d.changes == rc)
		printf("  (nothing)\n");

	/* other changes: what does not open or close anything, but changes
	 * the digest (and so must be reviewed too) */
	rc = d.changes;
	if (!json)
		printf("other changes:\n");
	if (strcmp(a->name, b->name) != 0) {
		snprintf(text, sizeof(text), "name %s -> %s (log lines change)", a->name, b->name);
		other_change(&d, "name", a->name, b->name, text);
	}
	if (a->dns_on_deny != b->dns_on_deny) {
		const char *o = a->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain";
		const char *n = b->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain";

		snprintf(text, sizeof(text), "dns.on_deny %s -> %s", o, n);
		other_change(&d, "dns.on_deny", o, n, text);
	}
	diff_credential_defs(&d, a, b);
	diff_families(&d, b, a, 0);
	diff_filesystem(&d, a, b);
	for (size_t i = 0; i < b->n_entries; i++) {
		const struct sluice_entry *e = &b->entries[i], *o;

		target_key(e, key, sizeof(key));
		o = find_target(a, key);
		if (!o)
			continue;
		if (strcmp(o->why, e->why) != 0) {
			snprintf(text, sizeof(text), "why of %s: \"%.300s\" -> \"%.300s\"", key, o->why, e->why);
			other_change(&d, "why", o->why, e->why, text);
		}
		if (e->kind == SLUICE_ENTRY_HOST && o->inspect != e->inspect) {
			/* neither opens nor closes a destination: what the proxy
			 * sees of it (and whether the sandbox CA covers it) */
			snprintf(text, sizeof(text), "inspect of %s: %s -> %s (%s)", key,
				 o->inspect ? "true" : "false", e->inspect ? "true" : "false",
				 e->inspect ? "TLS is now terminated and each request logged" :
					      "TLS now passes through undecrypted");
			other_change(&d, "inspect", o->inspect ? "true" : "false", e->inspect ? "true" : "false", text);
		}
		if (o->expires != e->expires || strcmp(o->owner ? o->owner : "", e->owner ? e->owner : "") ||
		    strcmp(o->ticket ? o->ticket : "", e->ticket ? e->ticket : "")) {
			char ot[32] = "never", nt[32] = "never";

			if (o->expires)
				sluice_rfc3339_str(o->expires, ot, sizeof(ot));
			if (e->expires)
				sluice_rfc3339_str(e->expires, nt, sizeof(nt));
			if (o->expires != e->expires) {
				snprintf(text, sizeof(text), "expires of %s: %s -> %s (%s)", key, ot, nt,
					 !e->expires ? "it no longer ends by itself" :
					 !o->expires || e->expires > o->expires ? "it allows for longer" : "it ends sooner");
				other_change(&d, "expires", ot, nt, text);
			}
			if (strcmp(o->owner ? o->owner : "", e->owner ? e->owner : "")) {
				snprintf(text, sizeof(text), "owner of %s: \"%s\" -> \"%s\"", key, o->owner ? o->owner : "",
					 e->owner ? e->owner : "");
				other_change(&d, "owner", o->owner ? o->owner : "", e->owner ? e->owner : "", text);
			}
			if (strcmp(o->ticket ? o->ticket : "", e->ticket ? e->ticket : "")) {
				snprintf(text, sizeof(text), "ticket of %s: \"%s\" -> \"%s\"", key,
					 o->ticket ? o->ticket : "", e->ticket ? e->ticket : "");
				other_change(&d, "ticket", o->ticket ? o->ticket : "", e->ticket ? e->ticket : "", text);
			}
		}
		if (o->index != e->index) {
			snprintf(text, sizeof(text), "%s is now %s (rule names in logs change)", o->name, e->name);
			other_change(&d, "rule", o->name, e->name, text);
		}
	}
	if (!json && d.changes == rc)
		printf("  (nothing)\n");

	if (d.changes == 0 && strcmp(a->digest, b->digest) != 0) {
		/* cannot happen: every digested field is compared above */
		other_change(&d, "digest", a->digest, b->digest, "digest differs");
	}
	rc = strcmp(a->digest, b->digest) == 0 && d.changes == 0 ? EXIT_CLEAN : EXIT_FINDINGS;
	if (json) {
		json_object *o;

		root = json_object_new_object();
		json_object_object_add(root, "ok", json_object_new_boolean(true));
		o = json_object_new_object();
		json_object_object_add(o, "file", jstr(a->path));
		json_object_object_add(o, "sha256", jstr(a->digest));
		json_object_object_add(root, "old", o);
		o = json_object_new_object();
		json_object_object_add(o, "file", jstr(b->path));
		json_object_object_add(o, "sha256", jstr(b->digest));
		json_object_object_add(root, "new", o);
		json_object_object_add(root, "opens", d.opens);
		json_object_object_add(root, "closes", d.closes);
		json_object_object_add(root, "other", d.other);
		json_object_object_add(root, "exit", json_object_new_int(rc));
		print_json(root);
		json_object_put(root);
	} else {
		printf("result  %s\n", rc == EXIT_CLEAN ? "no change" : "changed");
		json_object_put(d.opens);
		json_object_put(d.closes);
		json_object_put(d.other);
	}
	sluice_policy_free(a);
	sluice_policy_free(b);
	return rc;
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
		rc = diff(json, files[0], files[1]);
	}
	free(files);
	return rc;
}
