/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/render.c - `sluice policy suggest`: rendering: the policy text,
 * loaded back, checked to allow every observation, linted, annotated; the
 * notes at the end. Rules: docs/policy.md, "Audit mode and suggest"; the
 * parts: suggest/internal.h.
 */
#include "internal.h"

void sg_render_free(struct render *r)
{
	for (size_t i = 0; i < r->n; i++)
		sg_oentry_free(&r->es[i]);
	free(r->es);
	free(r->qtypes);
	free(r->extra_qtypes);
	for (size_t i = 0; i < r->n_offers; i++) {
		free(r->offers[i].parent);
		sg_oentry_free(&r->offers[i].e);
	}
	free(r->offers);
}

static int cmp_target(const void *a, const void *b)
{
	const struct target *x = *(const struct target *const *)a, *y = *(const struct target *const *)b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(x->sortkey ? x->sortkey : "", y->sortkey ? y->sortkey : "");
}

static const char *name_or(const struct suggest *s)
{
	return s->o.name ? s->o.name : "suggested";
}

/* The policy text.  `comments`: with header, notes and offers. */
char *sg_policy_text(struct suggest *s, struct render *r, bool comments)
{
	const struct sluice_policy *ag = s->o.against;
	char *buf = NULL, q[16];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		sg_oom();
	if (comments && !ag) {
		char a[TS_LEN], b[TS_LEN], *hb = NULL;
		size_t hl = 0, n;
		FILE *h = open_memstream(&hb, &hl);
		void **runs, **pols;

		if (!h)
			sg_oom();
		sg_ts_short(a, sizeof(a), s->first_ts);
		sg_ts_short(b, sizeof(b), s->last_ts);
		fprintf(h, "Suggested by `sluice policy suggest` from ");
		for (unsigned long i = 0; i < s->n_files_named && i < 3; i++)
			fprintf(h, "%s%s", i ? ", " : "", s->files[i]);
		if (s->n_files_named > 3)
			fprintf(h, " and %lu more files", s->n_files_named - 3);
		fprintf(h, " (%lu line%s", s->c.lines, s->c.lines == 1 ? "" : "s");
		runs = sg_hmap_values(&s->runs, &n);
		if (n) {
			fprintf(h, "; %zu run%s: ", n, n == 1 ? "" : "s");
			for (size_t i = 0; i < n && i < 3; i++)
				fprintf(h, "%s%s", i ? ", " : "", (const char *)runs[i]);
			if (n > 3)
				fprintf(h, ", ...");
		}
		free(runs);
		if (s->first_ts[0])
			fprintf(h, "; %s to %s", a, b);
		fprintf(h, ").");
		fclose(h);
		sg_ycomment(f, "", "", hb);
		free(hb);
		sg_ycomment(f, "", "", "It allows what the job did while it was watched, not what it should do: review every entry before enforcing it. Each `why` says how often and when it was seen; \"review\" comments are lint findings (sluice policy check).");
		pols = sg_hmap_values(&s->policies, &n);
		for (size_t i = 0; i < n; i++) {
			char *t = sg_xasprintf("Logged under policy %s.", (const char *)pols[i]);

			sg_ycomment(f, "", "", t);
			free(t);
		}
		free(pols);
		if (s->other_policy)
			sg_ycomment(f, "", "", "Note: direct traffic that a cidr entry of those policies allowed is not in the logs (the kernel logs only denials): keep such entries, or use `suggest --against` to add to a policy.");
	}
	if (ag) {
		/* the merged policy: POLICY's header, its entries (some widened), the additions */
		fprintf(f, "version: 1\nname: ");
		sg_yq(f, ag->name);
		fprintf(f, "\nmode: %s\n", ag->mode == SLUICE_MODE_AUDIT ? "audit" : "enforce");
		fprintf(f, "dns:\n  on_deny: %s\n", ag->dns_on_deny == SLUICE_DNS_REFUSED ? "refused" : "nxdomain");
	} else {
		fprintf(f, "version: 1\nname: %s\nmode: enforce\n", name_or(s));
	}
	if (r->qtypes) {
		if (!ag)
			fprintf(f, "dns:\n");
		if (comments && !ag) {
			char *t = NULL;
			size_t tl = 0;
			FILE *m = open_memstream(&t, &tl);

			if (!m)
				sg_oom();
			fprintf(m, "Record types beyond A and AAAA were asked for names below:");
			for (size_t i = 0; i < r->n_extra; i++)
				fprintf(m, " %s", sluice_qtype_str(r->extra_qtypes[i], "", q, sizeof(q)));
			fprintf(m, ". TXT and other free-form records can carry data: drop what the job does not need.");
			fclose(m);
			sg_ycomment(f, "", "  ", t);
			free(t);
		}
		fprintf(f, "  qtypes: [");
		for (size_t i = 0; i < r->n_qtypes; i++)
			fprintf(f, "%s%s", i ? ", " : "", sluice_qtype_str(r->qtypes[i], "", q, sizeof(q)));
		fprintf(f, "]\n");
	}
	if (!r->n) {
		fprintf(f, "allow: []\n");
	} else {
		fprintf(f, "allow:\n");
		for (size_t i = 0; i < r->n; i++) {
			sg_yentry(f, "", "  ", &r->es[i], comments);
			for (size_t k = 0; comments && k < r->n_offers; k++)
				if (r->offers[k].last == i)
					sg_yoffer(f, "", &r->offers[k], r->es);
		}
	}
	fclose(f);
	return buf;
}

static bool load_text(const char *name, const char *text, struct sluice_policy **p, FILE *diag)
{
	struct sluice_policy_error err;
	char msg[700];

	if (sluice_policy_load_buffer(name, text, strlen(text), p, &err) == 0)
		return true;
	fprintf(diag, "sluice policy suggest: internal error: the policy written does not load: %s\n",
		sluice_policy_error_str(&err, msg, sizeof(msg)));
	return false;
}

/* Every observation the plan took up must be allowed by `p`. */
static unsigned long long check_allowed(struct suggest *s, const struct sluice_policy *p, FILE *diag)
{
	size_t n;
	void **v;
	unsigned long long bad = 0;

	v = sg_hmap_values(&s->pobs, &n);
	for (size_t i = 0; i < n; i++) {
		const struct pobs *o = v[i];

		if (!sg_pobs_allowed(s, p, o)) {
			fprintf(diag, "sluice policy suggest: internal error: %s %s:%u%s is not allowed by the result\n",
				sg_via_text(o->via), o->host, o->port, o->path ? o->path : "");
			bad++;
		}
	}
	free(v);
	v = sg_hmap_values(&s->kobs, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kobs *k = v[i];
		const char *others[NAMES_KEPT], *name;
		size_t n_others;

		name = sg_correlate(s, k, others, &n_others);

		if (sg_cidr_allows(p, k->family, k->addr, k->proto, k->port))
			continue;
		if (name && k->proto == IPPROTO_TCP && sg_name_allowed_on(s, p, name, k->port))
			continue;
		fprintf(diag, "sluice policy suggest: internal error: %s %s port %u is not allowed by the result\n",
			k->proto == IPPROTO_TCP ? "tcp" : "udp", k->ip, k->port);
		bad++;
	}
	free(v);
	/* views are keyed by the policy's address: `p` is freed after this */
	sg_hmap_free(&s->views, sg_free_view);
	return bad;
}

/* Build the entry list: new targets (plain), or POLICY's entries with the
 * widened ones merged and the new targets appended (--against). */
static bool build(struct suggest *s, struct render *r)
{
	const struct sluice_policy *ag = s->o.against;
	struct target **tv;
	size_t nt, k = 0, n_widen = 0;

	tv = (struct target **)sg_hmap_values(&s->targets, &nt);
	qsort(tv, nt, sizeof(*tv), cmp_target);
	/* host targets made only to mark a name used by plain HTTP carry nothing */
	for (size_t i = 0; i < nt; i++)
		if (!(tv[i]->kind == SLUICE_ENTRY_HOST && tv[i]->n_pu == 0))
			tv[k++] = tv[i];
	nt = k;
	for (size_t i = 0; i < nt; i++) {
		n_widen += tv[i]->existing >= 0;
		if (tv[i]->n_pu)
			qsort(tv[i]->pu, tv[i]->n_pu, sizeof(*tv[i]->pu), sg_cmp_puse);
	}
	r->n = (ag ? ag->n_entries : 0) + nt - n_widen;
	if (r->n > ENTRIES_MAX) {
		fprintf(s->diag, "sluice policy suggest: %zu entries needed, more than a policy may hold (%u): "
			"split the logs by job\n", r->n, (unsigned)ENTRIES_MAX);
		free(tv);
		r->n = 0; /* sg_render_free() walks r->es[0..n): es is not allocated */
		return false;
	}
	r->es = sg_xcalloc(r->n, sizeof(*r->es));
	k = 0;
	if (ag) {
		const struct target **widen = sg_xcalloc(ag->n_entries, sizeof(*widen));

		for (size_t j = 0; j < nt; j++)
			if (tv[j]->existing >= 0 && (size_t)tv[j]->existing < ag->n_entries)
				widen[tv[j]->existing] = tv[j];
		for (size_t i = 0; i < ag->n_entries; i++) {
			if (widen[i])
				sg_target_entry(s, widen[i], &r->es[k++]);
			else
				sg_existing_entry(&ag->entries[i], &r->es[k++]);
		}
		free(widen);
	}
	for (size_t i = 0; i < nt; i++)
		if (tv[i]->existing < 0)
			sg_target_entry(s, tv[i], &r->es[k++]);
	free(tv);
	return true;
}

/* dns.qtypes: the types asked for names the result allows. */
static void plan_qtypes(struct suggest *s, struct render *r, const struct sluice_policy *draft)
{
	const struct sluice_policy *ag = s->o.against;
	uint8_t *want = sg_xcalloc(65536 / 8, 1);
	size_t n;
	void **v = sg_hmap_values(&s->dnames, &n);
	bool extra = false;

	if (ag)
		for (size_t i = 0; i < ag->n_dns_qtypes; i++)
			want[ag->dns_qtypes[i] / 8] |= (uint8_t)(1u << (ag->dns_qtypes[i] % 8));
	else
		want[1 / 8] |= 1u << 1, want[28 / 8] |= 1u << (28 % 8);
	for (size_t i = 0; i < n; i++) {
		const struct dname *d = v[i];

		if (!sluice_policy_allows_name(draft, d->name))
			continue;
		for (size_t j = 0; j < d->n_qtypes; j++) {
			uint16_t t = d->qtypes[j];

			if (!(want[t / 8] & (1u << (t % 8)))) {
				want[t / 8] |= (uint8_t)(1u << (t % 8));
				r->extra_qtypes = sg_xrealloc(r->extra_qtypes, r->n_extra + 1, sizeof(uint16_t));
				r->extra_qtypes[r->n_extra++] = t;
				extra = true;
			}
		}
	}
	free(v);
	/* sorted, for stable output */
	for (size_t i = 1; i < r->n_extra; i++)
		for (size_t j = i; j > 0 && r->extra_qtypes[j - 1] > r->extra_qtypes[j]; j--) {
			uint16_t x = r->extra_qtypes[j];

			r->extra_qtypes[j] = r->extra_qtypes[j - 1];
			r->extra_qtypes[j - 1] = x;
		}
	/* written out when it differs from the default: the policy's own (or
	 * A, AAAA) first, then the extras */
	if (extra || (ag && (ag->n_dns_qtypes != 2 || ag->dns_qtypes[0] != 1 || ag->dns_qtypes[1] != 28))) {
		size_t n_base = ag ? ag->n_dns_qtypes : 2;

		r->qtypes = sg_xcalloc(n_base + r->n_extra, sizeof(uint16_t));
		for (size_t i = 0; i < n_base; i++)
			r->qtypes[r->n_qtypes++] = ag ? ag->dns_qtypes[i] : (i ? 28 : 1);
		for (size_t i = 0; i < r->n_extra; i++)
			r->qtypes[r->n_qtypes++] = r->extra_qtypes[i];
	}
	free(want);
}

/* Wildcards to offer (as comments) for new exact host entries. */
static void plan_offers(struct render *r)
{
	for (size_t i = 0; i < r->n;) {
		const char *d;
		size_t j, members = 0, last = i;
		char *parent;
		uint8_t *bits;
		struct seen seen = { 0 };
		bool wider;

		if (r->es[i].kind != SLUICE_ENTRY_HOST || r->es[i].existing >= 0 || !(d = strchr(r->es[i].target, '.'))) {
			i++;
			continue;
		}
		parent = sg_xstrdup(d + 1);
		bits = sg_xcalloc(65536 / 8, 1);
		for (j = i; j < r->n; j++) {
			const char *dj;

			if (r->es[j].kind != SLUICE_ENTRY_HOST || r->es[j].existing >= 0)
				break;
			dj = strchr(r->es[j].target, '.');
			if (!dj || strcmp(dj + 1, parent) != 0) {
				/* deeper names sort between siblings: skip them */
				size_t pl = strlen(parent), tl = strlen(r->es[j].target);

				if (tl > pl + 1 && strcmp(r->es[j].target + tl - pl, parent) == 0 &&
				    r->es[j].target[tl - pl - 1] == '.')
					continue;
				break;
			}
			members++;
			last = j;
			for (size_t p = 0; p < r->es[j].n_ports; p++)
				for (unsigned q = r->es[j].ports[p].lo; q <= r->es[j].ports[p].hi; q++)
					bits[q / 8] |= (uint8_t)(1u << (q % 8));
			if (r->es[j].t)
				sg_seen_merge(&seen, &r->es[j].t->seen);
		}
		if (members >= WILDCARD_MIN && sg_wildcard_loads(parent)) {
			struct offer *o;
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);

			if (!f)
				sg_oom();
			r->offers = sg_xrealloc(r->offers, r->n_offers + 1, sizeof(*r->offers));
			o = &r->offers[r->n_offers++];
			memset(o, 0, sizeof(*o));
			o->parent = parent;
			o->first = i;
			o->last = last;
			o->n = members;
			o->e.kind = SLUICE_ENTRY_HOST;
			sg_bits_to_ranges(bits, &o->e.ports, &o->e.n_ports, &wider);
			sg_seen_text(f, &seen, false);
			fprintf(f, ": %zu names under %s", members, parent);
			fclose(f);
			o->e.why = buf;
			parent = NULL;
		}
		free(parent);
		free(bits);
		i = j > i ? j : i + 1;
	}
}

/* Lint findings (and the relay mark) as comments on their entries. */
static bool annotate(struct suggest *s, struct render *r, const struct sluice_policy *p)
{
	struct sluice_lint *l = NULL;
	int n = sluice_policy_lint(p, s->o.relays, &l);

	if (n < 0) {
		fprintf(s->diag, "sluice policy suggest: cannot read the relay list %s: %s\n",
			s->o.relays ? s->o.relays : "(default: $SLUICE_RELAYS or policies/relays.txt beside the binary)",
			strerror(errno));
		return false;
	}
	for (int i = 0; i < n; i++) {
		struct oentry *e;

		if (l[i].entry >= r->n)
			continue;
		e = &r->es[l[i].entry];
		if (s->o.against && e->existing >= 0 && !e->widened)
			continue;   /* the policy's own findings: `sluice policy check` shows them */
		if (l[i].code == SLUICE_LINT_RELAY)
			sg_oentry_note(e, sg_xasprintf("REVIEW relay-capable host: %s", l[i].message));
		else
			sg_oentry_note(e, sg_xasprintf("review [%s]: %s", l[i].code_name, l[i].message));
		r->n_review++;
	}
	free(l);
	return true;
}

/* Notes, at the end of the output: what was seen but gave no entry. */
void sg_notes_text(struct suggest *s, FILE *f, const char *prefix)
{
	size_t n, nd;
	void **v = sg_hmap_values(&s->notes, &n), **dv;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	bool any = false;

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && ((struct note *)v[j - 1])->order > ((struct note *)v[j])->order; j--) {
			void *x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	/* names the resolver answered (or refused) that gave no entry */
	dv = sg_hmap_values(&s->dnames, &nd);
	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;

		m = open_memstream(&buf, &len);
		if (!m)
			sg_oom();
		for (size_t i = 0; i < nd; i++) {
			const struct dname *d = dv[i];
			bool refused = d->denied && !d->answered;

			if (d->used || refused != (pass == 1))
				continue;
			if (s->o.against && sluice_policy_allows_name(s->o.against, d->name))
				continue;
			if (k < 12)
				fprintf(m, "%s%s (%llu)", k ? ", " : "", d->name, d->seen.n);
			k++;
		}
		if (k > 12)
			fprintf(m, " and %zu more", k - 12);
		fclose(m);
		if (k) {
			char *t;

			if (!any)
				fprintf(f, "%s\n%s# Seen, but not made into entries:\n", prefix, prefix);
			any = true;
			if (pass == 0)
				t = sg_xasprintf("%zu name%s resolved, but no traffic to %s addresses is in the logs (a host entry lets a name resolve; add one with the ports the job uses, if it needs them): %s",
					      k, k == 1 ? "" : "s", k == 1 ? "its" : "their", buf);
			else
				t = sg_xasprintf("%zu name%s the resolver refused, so the job never learned an address and the port is unknown (add host entries with the right ports, or learn them in audit mode): %s",
					      k, k == 1 ? "" : "s", buf);
			sg_ycomment_x(f, prefix, "", t, true);
			free(t);
		}
		free(buf);
		buf = NULL;
	}
	free(dv);
	if (s->portless.n) {
		size_t k = 0;

		m = open_memstream(&buf, &len);
		if (!m)
			sg_oom();
		for (size_t i = 0; i < s->portless.nb; i++)
			for (struct hnode *x = s->portless.b[i]; x; x = x->next)
				if (k++ < 12)
					fprintf(m, "%s%s (%lu)", k > 1 ? ", " : "", x->key, (unsigned long)(uintptr_t)x->val);
		fclose(m);
		if (!any)
			fprintf(f, "%s\n%s# Seen, but not made into entries:\n", prefix, prefix);
		any = true;
		{
			char *t = sg_xasprintf("%zu name%s reached through the proxy without a port in its log (reported as skipped lines; add host entries with the right ports by hand): %s%s",
					    k, k == 1 ? "" : "s", buf, k > 12 ? " and more" : "");

			sg_ycomment_x(f, prefix, "", t, true);
			free(t);
		}
		free(buf);
		buf = NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct note *x = v[i];
		char *t;

		if (!any)
			fprintf(f, "%s\n%s# Seen, but not made into entries:\n", prefix, prefix);
		any = true;
		t = sg_xasprintf("%llu line%s: %s (first: %s)", x->n, x->n == 1 ? "" : "s", x->text, x->where);
		sg_ycomment_x(f, prefix, "", t, true);
		free(t);
	}
	free(v);
}

char *suggest_render(struct suggest *s)
{
	struct render r = { 0 };
	struct sluice_policy *draft = NULL, *final = NULL;
	char *text = NULL, *out = NULL;
	bool ok = false;

	if (s->rendered) {
		fprintf(s->diag, "sluice policy suggest: render called twice\n");
		return NULL;
	}
	s->rendered = true;
	sg_plan(s);
	if (!build(s, &r))
		goto done;
	/* 1. entries only: which names does it allow (for dns.qtypes)? */
	text = sg_policy_text(s, &r, false);
	if (!load_text("suggested policy", text, &draft, s->diag))
		goto done;
	free(text);
	plan_qtypes(s, &r, draft);
	/* 2. with dns.qtypes: lint it, check that it allows everything taken up */
	text = sg_policy_text(s, &r, false);
	sluice_policy_free(draft);
	draft = NULL;
	if (!load_text("suggested policy", text, &draft, s->diag))
		goto done;
	if (check_allowed(s, draft, s->diag))
		goto done;
	if (!annotate(s, &r, draft))
		goto done;
	plan_offers(&r);
	/* 3. the text with comments must mean exactly the same */
	free(text);
	text = sg_policy_text(s, &r, true);
	if (!load_text("suggested policy", text, &final, s->diag))
		goto done;
	if (strcmp(final->digest, draft->digest) != 0) {
		fprintf(s->diag, "sluice policy suggest: internal error: comments changed the policy's digest\n");
		goto done;
	}
	if (s->o.against) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			sg_oom();
		sg_diff_text(s, &r, final, f);
		fclose(f);
		out = buf;
	} else {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			sg_oom();
		fputs(text, f);
		sg_notes_text(s, f, "");
		fclose(f);
		out = buf;
	}
	ok = true;
done:
	free(text);
	sluice_policy_free(draft);
	sluice_policy_free(final);
	sg_render_free(&r);
	if (!ok) {
		free(out);
		return NULL;
	}
	return out;
}
