/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/against.c - `sluice policy suggest`: --against: the diff that
 * quotes the policy's own lines and adds the smallest changes. Rules:
 * docs/policy.md, "Audit mode and suggest"; the parts: suggest/internal.h.
 */
#include "internal.h"

static void src_split(const char *text, struct src *sr)
{
	const char *p = text;

	memset(sr, 0, sizeof(*sr));
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		sr->line = sg_xrealloc(sr->line, sr->n + 1, sizeof(*sr->line));
		sr->line[sr->n++] = sg_xasprintf("%.*s", (int)(n && p[n - 1] == '\r' ? n - 1 : n), p);
		p += n + (nl ? 1 : 0);
	}
}

static void src_free(struct src *sr)
{
	for (size_t i = 0; i < sr->n; i++)
		free(sr->line[i]);
	free(sr->line);
}

static size_t indent_of(const char *l)
{
	size_t i = 0;

	while (l[i] == ' ')
		i++;
	return i;
}

static bool blank_or_comment(const char *l)
{
	l += indent_of(l);
	return !*l || *l == '#';
}

/* A top-level key line ("allow:", "dns:", ...). */
static bool top_key(const char *l, const char *key)
{
	size_t n = strlen(key);

	return strncmp(l, key, n) == 0 && l[n] == ':';
}

/* The last line (1-based) of the block that starts at top-level line `at`:
 * up to the next top-level key, without trailing blank and comment lines. */
static size_t block_end(const struct src *sr, size_t at)
{
	size_t last = at;

	for (size_t i = at + 1; i <= sr->n; i++) {
		const char *l = sr->line[i - 1];

		if (blank_or_comment(l))
			continue;
		if (indent_of(l) == 0 && l[0] != '-')
			break;
		last = i;
	}
	return last;
}

/* Where `key` is in the lines [from, to]: its line (0 if absent), the
 * text before it (indentation, "- ") in *lead, and the last line of its
 * value in *last (block sequences span lines). */
static size_t find_key(const struct src *sr, size_t from, size_t to, const char *key, size_t *lead,
		       size_t *last)
{
	size_t kn = strlen(key);

	for (size_t i = from; i <= to && i <= sr->n; i++) {
		/* from >= 1 (a policy line number), so i - 1 < sr->n */
		const char *l = sr->line[i - 1], *k = l + indent_of(l), *v; /* NOLINT(clang-analyzer-core.NullDereference) */

		if (k[0] == '-' && k[1] == ' ')
			k += 2 + indent_of(k + 2);
		if (strncmp(k, key, kn) != 0 || k[kn] != ':')
			continue;
		*lead = (size_t)(k - l);
		*last = i;
		v = k + kn + 1;
		v += indent_of(v);
		if (!*v || *v == '#') {
			/* block value: the lines after it that are deeper, or "- " at its level */
			for (size_t j = i + 1; j <= to && j <= sr->n; j++) {
				const char *m = sr->line[j - 1];
				size_t in = indent_of(m);

				if (blank_or_comment(m))
					continue;
				if (in > *lead || (in == *lead && m[in] == '-' && m[in + 1] == ' '))
					*last = j;
				else
					break;
			}
		}
		return i;
	}
	return 0;
}

/* The lines of entry `i` of `p` in `sr`. */
static void entry_lines(const struct src *sr, const struct sluice_policy *p, size_t i, size_t *from, size_t *to)
{
	size_t allow = 0;

	*from = p->entries[i].line;
	if (i + 1 < p->n_entries) {
		*to = p->entries[i + 1].line - 1;
		return;
	}
	for (size_t k = 1; k <= sr->n; k++)
		if (top_key(sr->line[k - 1], "allow"))
			allow = k;
	*to = allow ? block_end(sr, allow) : sr->n;
}

static void lines_out(FILE *f, char mark, const struct src *sr, size_t from, size_t to)
{
	for (size_t i = from; i <= to && i <= sr->n; i++) /* from >= 1: a line number */
		fprintf(f, "%c %s\n", mark, sr->line[i - 1]); /* NOLINT(clang-analyzer-core.NullDereference) */
}

static void qtypes_list(FILE *f, const uint16_t *t, size_t n)
{
	char q[16];

	fputc('[', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", sluice_qtype_str(t[i], "", q, sizeof(q)));
	fputc(']', f);
}

/* The lines the diff quotes, into *sr: the file's own, or (when the text
 * given does not match the policy) the policy written out again, loaded
 * into *synth (the entries' line numbers are then its own). */
static void diff_source(struct suggest *s, const char *path, struct src *sr, struct sluice_policy **synth, FILE *f)
{
	const struct sluice_policy *ag = s->o.against;
	char *own = NULL;

	if (s->o.against_text) {
		struct sluice_policy *chk = NULL;
		struct sluice_policy_error err;

		if (sluice_policy_load_buffer(path, s->o.against_text, strlen(s->o.against_text), &chk, &err) == 0 &&
		    strcmp(chk->digest, ag->digest) == 0)
			own = sg_xstrdup(s->o.against_text);
		sluice_policy_free(chk);
	}
	if (!own) {
		struct render orig = { 0 };
		struct sluice_policy_error err;

		orig.n = ag->n_entries;
		orig.es = sg_xcalloc(orig.n, sizeof(*orig.es));
		for (size_t i = 0; i < ag->n_entries; i++)
			sg_existing_entry(&ag->entries[i], &orig.es[i]);
		if (ag->n_dns_qtypes != 2 || ag->dns_qtypes[0] != 1 || ag->dns_qtypes[1] != 28) {
			orig.qtypes = sg_xcalloc(ag->n_dns_qtypes, sizeof(uint16_t));
			memcpy(orig.qtypes, ag->dns_qtypes, ag->n_dns_qtypes * sizeof(uint16_t));
			orig.n_qtypes = ag->n_dns_qtypes;
		}
		own = sg_policy_text(s, &orig, false);
		sg_render_free(&orig);
		if (sluice_policy_load_buffer(path, own, strlen(own), synth, &err) != 0)
			*synth = NULL;
		fprintf(f, "# (%s as written by sluice: its own text was not given)\n", path);
	}
	src_split(own, sr);
	free(own);
}

/* One widened entry: its ports or methods line, replaced (or added). */
static void diff_widened(const struct suggest *s, const struct src *sr, const struct sluice_policy *sp,
			 const struct oentry *e, FILE *f)
{
	const struct sluice_policy *ag = s->o.against;
	size_t from, to, at, lead, last;
	const char *key = e->kind == SLUICE_ENTRY_URL ? "methods" : "ports";
	char *pad;

	entry_lines(sr, sp, (size_t)e->existing, &from, &to);
	at = find_key(sr, from, to, key, &lead, &last);
	fprintf(f, "@@ %s (line %u): add %s @@\n", ag->entries[e->existing].name, ag->entries[e->existing].line, key);
	if (at) {
		lines_out(f, '-', sr, at, last);
		/* at != 0: find_key found line `at` of sr */
		pad = sg_xasprintf("%.*s", (int)lead, sr->line[at - 1]); /* NOLINT(clang-analyzer-core.NullDereference) */
	} else if (from >= 1 && from <= sr->n) {
		/* not written (url methods default to GET, HEAD): a new line after the first */
		const char *l = sr->line[from - 1], *k = l + indent_of(l);

		lines_out(f, ' ', sr, from, from);
		if (k[0] == '-' && k[1] == ' ')
			k += 2 + indent_of(k + 2);
		pad = sg_xasprintf("%*s", (int)(k - l), "");
	} else {
		pad = sg_xstrdup("    ");
	}
	fprintf(f, "+ %s%s: ", pad, key);
	if (e->kind == SLUICE_ENTRY_URL)
		sg_methods_text(f, e->methods);
	else
		sg_ranges_text(f, e->ports, e->n_ports);
	fputc('\n', f);
	/* comments at the key's column ("- " would start a new item) */
	for (char *c = pad; *c; c++)
		*c = ' ';
	for (size_t k = 0; k < e->n_notes; k++)
		sg_ycomment(f, "+ ", pad, e->notes[k]);
	if (e->t) {
		char *why = sg_target_why(e->t);

		sg_ycomment(f, "+ ", pad, why);
		free(why);
	}
	free(pad);
}

/* dns.qtypes: the list replaced, or added to dns: (or a dns: block added after name:). */
static void diff_qtypes(const struct render *r, const struct src *sr, FILE *f)
{
	char q[16];
	size_t at, lead, last;
	size_t dns = 0, name = 0;

	for (size_t k = 1; k <= sr->n; k++) {
		if (top_key(sr->line[k - 1], "dns"))
			dns = k;
		if (top_key(sr->line[k - 1], "name"))
			name = k;
	}
	fprintf(f, "@@ dns.qtypes: add");
	for (size_t i = 0; i < r->n_extra; i++)
		fprintf(f, " %s", sluice_qtype_str(r->extra_qtypes[i], "", q, sizeof(q)));
	fprintf(f, " @@\n");
	if (dns && (at = find_key(sr, dns + 1, block_end(sr, dns), "qtypes", &lead, &last))) {
		lines_out(f, '-', sr, at, last);
		fprintf(f, "+ %.*sqtypes: ", (int)lead, sr->line[at - 1]);
	} else if (dns) {
		size_t in = 2;

		for (size_t k = dns + 1; k <= block_end(sr, dns); k++)
			if (!blank_or_comment(sr->line[k - 1])) {
				in = indent_of(sr->line[k - 1]);
				break;
			}
		lines_out(f, ' ', sr, dns, dns);
		fprintf(f, "+ %*sqtypes: ", (int)in, "");
	} else {
		lines_out(f, ' ', sr, name ? name : 1, name ? name : 1);
		fprintf(f, "+ dns:\n+   qtypes: ");
	}
	qtypes_list(f, r->qtypes, r->n_qtypes);
	fputc('\n', f);
}

/* The n_new new entries: after the last line of the allow list. */
static void diff_new_entries(const struct render *r, const struct src *sr, const struct sluice_policy *sp,
			     size_t n_new, FILE *f)
{
	size_t allow = 0, in = 2, end;
	const char *v = NULL;

	for (size_t k = 1; k <= sr->n; k++)
		if (top_key(sr->line[k - 1], "allow"))
			allow = k;
	if (sp->n_entries && sp->entries[0].line >= 1 && sp->entries[0].line <= sr->n)
		in = indent_of(sr->line[sp->entries[0].line - 1]);
	fprintf(f, "@@ allow: append %zu new entr%s @@\n", n_new, n_new == 1 ? "y" : "ies");
	if (allow) {
		v = sr->line[allow - 1] + 6;
		v += indent_of(v);
	}
	if (allow && v && *v && *v != '#') {
		/* "allow: []" or "allow: null" */
		lines_out(f, '-', sr, allow, allow);
		fprintf(f, "+ allow:\n");
	} else if (allow) {
		end = block_end(sr, allow);
		lines_out(f, ' ', sr, end, end);
	} else {
		end = sr->n;
		while (end > 1 && blank_or_comment(sr->line[end - 1]))
			end--;
		lines_out(f, ' ', sr, end, end);
		fprintf(f, "+ allow:\n");
	}
	{
		char *pad = sg_xasprintf("%*s", (int)in, "");

		for (size_t i = 0; i < r->n; i++) {
			if (r->es[i].existing >= 0)
				continue;
			sg_yentry(f, "+ ", pad, &r->es[i], true);
			for (size_t k = 0; k < r->n_offers; k++)
				if (r->offers[k].last == i)
					sg_yoffer(f, "+ ", &r->offers[k], r->es);
		}
		free(pad);
	}
}

void sg_diff_text(struct suggest *s, struct render *r, const struct sluice_policy *merged, FILE *f)
{
	const struct sluice_policy *ag = s->o.against, *sp;
	struct sluice_policy *synth = NULL;
	struct src sr;
	char path[256];
	size_t n_new = 0, n_wide = 0;
	bool qt = r->qtypes && r->n_extra;

	sg_printable(path, sizeof(path), s->o.against_path ? s->o.against_path : ag->path);
	diff_source(s, path, &sr, &synth, f);
	sp = synth ? synth : ag;
	for (size_t i = 0; i < r->n; i++) {
		n_new += r->es[i].existing < 0;
		n_wide += r->es[i].widened;
	}
	fprintf(f, "# sluice policy suggest --against %s\n", path);
	fprintf(f, "--- %s\tsha256 %s\n", path, ag->digest);
	fprintf(f, "+++ %s with the additions\tsha256 %s\n", path, merged->digest);
	if (!n_new && !n_wide && !qt)
		fprintf(f, "# nothing to add: %s allows every attempt in the logs that a policy can allow\n", path);
	for (size_t i = 0; i < r->n; i++)
		if (r->es[i].widened)
			diff_widened(s, &sr, sp, &r->es[i], f);
	if (qt)
		diff_qtypes(r, &sr, f);
	if (n_new)
		diff_new_entries(r, &sr, sp, n_new, f);
	sg_notes_text(s, f, "");
	fprintf(f, "# summary: %llu attempt%s in the logs, %llu already allowed by %s; the additions (%zu new entr%s, %zu widened%s) allow the other %llu\n",
		s->n_attempts, s->n_attempts == 1 ? "" : "s", s->n_allowed_already, path, n_new,
		n_new == 1 ? "y" : "ies", n_wide, qt ? ", dns.qtypes" : "",
		s->n_attempts - s->n_allowed_already);
	src_free(&sr);
	sluice_policy_free(synth);
}
