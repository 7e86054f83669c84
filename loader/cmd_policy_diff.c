/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_policy_diff.c - `sluice policy diff`: what NEW opens and closes
 * compared with OLD, per entry target, port and method, and the other
 * changes (mode, DNS, credentials, file system, socket families), as text
 * or one JSON document (docs/policy.md).
 */
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_show.h"

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
	snprintf(buf, len, "%s %s%s%s", sluice_entry_kind_name(e->kind), pol_target_str(e),
		 e->kind == SLUICE_ENTRY_CIDR ? " " : "", e->kind == SLUICE_ENTRY_CIDR ? pol_proto_str(e) : "");
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
		json_object_object_add(o, "target", jstr(pol_target_str(e)));
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
		json_object_object_add(o, "target", jstr(pol_target_str(e)));
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
		json_object_object_add(o, "target", jstr(pol_target_str(e)));
		json_object_object_add(o, "protocol", jstr(pol_proto_str(e)));
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

/* `websocket: true` on `e` and not on `other` (the same url target in the
 * other policy, or NULL: none there): an upgrade opened (dir > 0) or
 * closed (dir < 0) on that prefix. */
static void diff_websocket(struct diff_out *d, const struct sluice_entry *e, const struct sluice_entry *other,
			   int dir)
{
	char key[SLUICE_HOST_MAX + 2200], text[SLUICE_HOST_MAX + 2400];
	json_object *o;

	if (e->kind != SLUICE_ENTRY_URL || !e->websocket || (other && other->websocket))
		return;
	target_key(e, key, sizeof(key));
	o = json_object_new_object();
	json_object_object_add(o, "kind", jstr("websocket"));
	json_object_object_add(o, "target", jstr(pol_target_str(e)));
	json_object_object_add(o, "rule", jstr(e->name));
	json_object_object_add(o, "line", json_object_new_int((int)e->line));
	snprintf(text, sizeof(text), "%s websocket upgrade  (%s, line %u)", key, e->name, e->line);
	emit(d, dir > 0 ? d->opens : d->closes, dir > 0 ? '+' : '-', text, o);
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
			 pol_programs_str(other, list, sizeof(list)));
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
		json_object_object_add(o, "target", jstr(sluice_qtype_str(a->dns_qtypes[i], "TYPE", q, sizeof(q))));
		snprintf(text, sizeof(text), "dns qtype %s", sluice_qtype_str(a->dns_qtypes[i], "TYPE", q, sizeof(q)));
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
		json_object_object_add(jo, "target", jstr(pol_target_str(e)));
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

/* What `this` (NEW for opens, dir > 0; OLD for closes, dir < 0) allows
 * that `that` does not: the mode, each entry, its programs, the DNS
 * types, credentials and families; "(nothing)" when none. */
static void diff_side(struct diff_out *d, const struct sluice_policy *this, const struct sluice_policy *that, int dir)
{
	char key[SLUICE_HOST_MAX + 2200];
	int before = d->changes;

	if (!d->json)
		printf(dir > 0 ? "opens:\n" : "closes:\n");
	/* the mode: NEW in audit opens everything (OLD enforced), OLD in
	 * audit closes (NEW enforces): the audit side is `this` either way */
	if (this->mode == SLUICE_MODE_AUDIT && that->mode == SLUICE_MODE_ENFORCE) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "kind", jstr("mode"));
		json_object_object_add(o, "target", jstr(dir > 0 ? "audit" : "enforce"));
		if (dir > 0)
			emit(d, d->opens, '+', "mode enforce -> audit: NOTHING is enforced any more, denials are only logged", o);
		else
			emit(d, d->closes, '-', "mode audit -> enforce: the policy is now enforced", o);
	}
	for (size_t i = 0; i < this->n_entries; i++) {
		target_key(&this->entries[i], key, sizeof(key));
		diff_entry(d, &this->entries[i], find_target(that, key), dir);
		diff_programs(d, &this->entries[i], find_target(that, key), dir);
		diff_websocket(d, &this->entries[i], find_target(that, key), dir);
	}
	diff_qtypes(d, this, that, dir);
	diff_credentials(d, this, that, dir);
	diff_families(d, this, that, dir);
	if (!d->json && d->changes == before)
		printf("  (nothing)\n");
}

/* An entry's review fields that changed (expires, owner, ticket): other changes. */
static void diff_review_fields(struct diff_out *d, const char *key, const struct sluice_entry *o,
			       const struct sluice_entry *e)
{
	const char *oo = o->owner ? o->owner : "", *eo = e->owner ? e->owner : "";
	const char *otk = o->ticket ? o->ticket : "", *etk = e->ticket ? e->ticket : "";
	char ot[32] = "never", nt[32] = "never", text[SLUICE_HOST_MAX + 3200];

	if (o->expires == e->expires && !strcmp(oo, eo) && !strcmp(otk, etk))
		return;
	if (o->expires)
		sluice_rfc3339_str(o->expires, ot, sizeof(ot));
	if (e->expires)
		sluice_rfc3339_str(e->expires, nt, sizeof(nt));
	if (o->expires != e->expires) {
		snprintf(text, sizeof(text), "expires of %s: %s -> %s (%s)", key, ot, nt,
			 !e->expires ? "it no longer ends by itself" :
			 !o->expires || e->expires > o->expires ? "it allows for longer" : "it ends sooner");
		other_change(d, "expires", ot, nt, text);
	}
	if (strcmp(oo, eo)) {
		snprintf(text, sizeof(text), "owner of %s: \"%s\" -> \"%s\"", key, oo, eo);
		other_change(d, "owner", oo, eo, text);
	}
	if (strcmp(otk, etk)) {
		snprintf(text, sizeof(text), "ticket of %s: \"%s\" -> \"%s\"", key, otk, etk);
		other_change(d, "ticket", otk, etk, text);
	}
}

/* What changes the digest without opening or closing anything (and so
 * must be reviewed too): name, dns.on_deny, credential definitions,
 * families' reasons, the file system, each entry's why, inspect, review
 * fields and rule name. */
static void diff_other(struct diff_out *d, const struct sluice_policy *a, const struct sluice_policy *b)
{
	char key[SLUICE_HOST_MAX + 2200], text[SLUICE_HOST_MAX + 3200];
	int before = d->changes;

	if (!d->json)
		printf("other changes:\n");
	if (strcmp(a->name, b->name) != 0) {
		snprintf(text, sizeof(text), "name %s -> %s (log lines change)", a->name, b->name);
		other_change(d, "name", a->name, b->name, text);
	}
	if (a->dns_on_deny != b->dns_on_deny) {
		const char *o = a->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain";
		const char *n = b->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain";

		snprintf(text, sizeof(text), "dns.on_deny %s -> %s", o, n);
		other_change(d, "dns.on_deny", o, n, text);
	}
	diff_credential_defs(d, a, b);
	diff_families(d, b, a, 0);
	diff_filesystem(d, a, b);
	for (size_t i = 0; i < b->n_entries; i++) {
		const struct sluice_entry *e = &b->entries[i], *o;

		target_key(e, key, sizeof(key));
		o = find_target(a, key);
		if (!o)
			continue;
		if (strcmp(o->why, e->why) != 0) {
			snprintf(text, sizeof(text), "why of %s: \"%.300s\" -> \"%.300s\"", key, o->why, e->why);
			other_change(d, "why", o->why, e->why, text);
		}
		if (e->kind == SLUICE_ENTRY_HOST && o->inspect != e->inspect) {
			/* neither opens nor closes a destination: what the proxy
			 * sees of it (and whether the sandbox CA covers it) */
			snprintf(text, sizeof(text), "inspect of %s: %s -> %s (%s)", key,
				 o->inspect ? "true" : "false", e->inspect ? "true" : "false",
				 e->inspect ? "TLS is now terminated and each request logged" :
					      "TLS now passes through undecrypted");
			other_change(d, "inspect", o->inspect ? "true" : "false", e->inspect ? "true" : "false", text);
		}
		diff_review_fields(d, key, o, e);
		if (o->index != e->index) {
			snprintf(text, sizeof(text), "%s is now %s (rule names in logs change)", o->name, e->name);
			other_change(d, "rule", o->name, e->name, text);
		}
	}
	if (!d->json && d->changes == before)
		printf("  (nothing)\n");
}

/* A policy that did not load: the error, as JSON or on stderr. */
static void diff_report_error(bool json, const struct sluice_policy_error *err)
{
	json_object *root;

	if (!json) {
		pol_print_error(err);
		return;
	}
	root = json_object_new_object();
	json_object_object_add(root, "ok", json_object_new_boolean(false));
	json_object_object_add(root, "error", pol_error_json(err));
	json_object_object_add(root, "exit", json_object_new_int(EXIT_ERROR));
	pol_print_json(root);
	json_object_put(root);
}

/* The JSON document of a diff (it takes d's lists), printed. */
static void diff_print_json(struct diff_out *d, const struct sluice_policy *a, const struct sluice_policy *b, int rc)
{
	json_object *root = json_object_new_object(), *o;

	json_object_object_add(root, "ok", json_object_new_boolean(true));
	o = json_object_new_object();
	json_object_object_add(o, "file", jstr(a->path));
	json_object_object_add(o, "sha256", jstr(a->digest));
	json_object_object_add(root, "old", o);
	o = json_object_new_object();
	json_object_object_add(o, "file", jstr(b->path));
	json_object_object_add(o, "sha256", jstr(b->digest));
	json_object_object_add(root, "new", o);
	json_object_object_add(root, "opens", d->opens);
	json_object_object_add(root, "closes", d->closes);
	json_object_object_add(root, "other", d->other);
	json_object_object_add(root, "exit", json_object_new_int(rc));
	pol_print_json(root);
	json_object_put(root);
}

int policy_diff(bool json, const char *oldf, const char *newf)
{
	struct sluice_policy *a = NULL, *b = NULL;
	struct sluice_policy_error err;
	struct diff_out d = { .json = json };
	int rc;

	if (sluice_policy_load_file(oldf, &a, &err) < 0 ||
	    sluice_policy_load_file(newf, &b, &err) < 0) {
		diff_report_error(json, &err);
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
	diff_side(&d, b, a, +1);    /* opens: everything NEW allows that OLD did not */
	diff_side(&d, a, b, -1);    /* closes: everything OLD allowed that NEW does not */
	diff_other(&d, a, b);
	if (d.changes == 0 && strcmp(a->digest, b->digest) != 0) {
		/* cannot happen: every digested field is compared above */
		other_change(&d, "digest", a->digest, b->digest, "digest differs");
	}
	rc = strcmp(a->digest, b->digest) == 0 && d.changes == 0 ? EXIT_CLEAN : EXIT_FINDINGS;
	if (json) {
		diff_print_json(&d, a, b, rc);
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
