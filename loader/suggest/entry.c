/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/entry.c - `sluice policy suggest`: entries to write (ports,
 * methods, the why and review notes of each) and the YAML they are written
 * as. Rules: docs/policy.md, "Audit mode and suggest"; the parts:
 * suggest/internal.h.
 */
#include "internal.h"

void sg_oentry_note(struct oentry *e, char *text)
{
	PUSH(e->notes, e->n_notes, e->cap_notes);
	e->notes[e->n_notes++] = text;
}

void sg_oentry_free(struct oentry *e)
{
	free(e->target);
	free(e->ports);
	free(e->why);
	for (size_t i = 0; i < e->n_notes; i++)
		free(e->notes[i]);
	free(e->notes);
}

/* A set of ports as at most PORTS_MAX ranges; *wider when gaps had to be
 * closed to stay within the limit. */
void sg_bits_to_ranges(const uint8_t *bits, struct sluice_port_range **out, size_t *n, bool *wider)
{
	struct sluice_port_range *r = NULL;
	size_t nr = 0, cap = 0;

	*wider = false;
	for (unsigned p = 1; p <= 65535; p++) {
		unsigned lo;

		if (!(bits[p / 8] & (1u << (p % 8))))
			continue;
		lo = p;
		while (p < 65535 && (bits[(p + 1) / 8] & (1u << ((p + 1) % 8))))
			p++;
		PUSH(r, nr, cap);
		r[nr].lo = (uint16_t)lo;
		r[nr].hi = (uint16_t)p;
		nr++;
	}
	while (nr > PORTS_MAX) {
		/* close the smallest gap (rare: a scan of hundreds of ports) */
		size_t best = 0;
		unsigned gap = UINT_MAX;

		for (size_t i = 0; i + 1 < nr; i++)
			if ((unsigned)(r[i + 1].lo - r[i].hi) < gap) {
				gap = (unsigned)(r[i + 1].lo - r[i].hi);
				best = i;
			}
		r[best].hi = r[best + 1].hi;
		memmove(&r[best + 1], &r[best + 2], (nr - best - 2) * sizeof(*r));
		nr--;
		*wider = true;
	}
	*out = r;
	*n = nr;
}

void sg_ranges_text(FILE *f, const struct sluice_port_range *r, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (r[i].lo == r[i].hi)
			fprintf(f, "%s%u", i ? ", " : "", r[i].lo);
		else
			fprintf(f, "%s%u-%u", i ? ", " : "", r[i].lo, r[i].hi);
	}
	fputc(']', f);
}

void sg_methods_text(FILE *f, unsigned m)
{
	bool first = true;

	fputc('[', f);
	for (size_t i = 0; i < N_METHODS; i++)
		if (m & (1u << i)) {
			fprintf(f, "%s%s", first ? "" : ", ", sg_method_names[i]);
			first = false;
		}
	fputc(']', f);
}

const char *sg_via_text(enum via v)
{
	switch (v) {
	case VIA_TLS: return "TLS";
	case VIA_CONNECT: return "CONNECT";
	case VIA_HTTP: return "plain HTTP";
	case VIA_DIRECT: return "direct TCP";
	case VIA_NAME: return "";
	case VIA_CIDR_TCP: return "TCP";
	case VIA_CIDR_UDP: return "UDP";
	}
	return "?";
}

int sg_cmp_puse(const void *a, const void *b)
{
	const struct puse *x = a, *y = b;

	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return x->via < y->via ? -1 : x->via > y->via;
}

/* The `why` of a new or widened entry (one line of printable ASCII). */
char *sg_target_why(const struct target *t)
{
	char *buf = NULL, name[SLUICE_HOST_MAX + 1];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool name_only = t->kind == SLUICE_ENTRY_HOST;

	if (!f)
		sg_oom();
	for (size_t i = 0; i < t->n_pu; i++)
		name_only &= t->pu[i].via == VIA_NAME;
	if (name_only) {
		sg_printable(name, sizeof(name), t->host);
		fprintf(f, "lets %s resolve: it was reached directly (see the cidr entry for its address); "
			"the resolver answers only names that a host entry allows", name);
	} else {
		sg_seen_text(f, &t->seen, t->denied && t->denied == t->seen.n);
		fputs(": ", f);
		if (t->kind == SLUICE_ENTRY_URL) {
			bool first = true;

			fprintf(f, "plain HTTP ");
			for (size_t i = 0; i < N_METHODS; i++)
				if (t->methods & (1u << i)) {
					fprintf(f, "%s%s", first ? "" : "/", sg_method_names[i]);
					first = false;
				}
			fprintf(f, " on %llu path%s", t->n_paths, t->n_paths == 1 ? "" : "s");
		} else {
			for (size_t i = 0; i < t->n_pu; i++) {
				const struct puse *u = &t->pu[i];

				if (u->via == VIA_NAME)
					continue;
				fprintf(f, "%s%s to %u", i ? ", " : "", sg_via_text(u->via), u->port);
				if (u->via == VIA_DIRECT)
					fprintf(f, " (%s, after resolving the name)", u->ip);
				if (u->n != t->seen.n)
					fprintf(f, " x%llu", u->n);
			}
			if (t->kind == SLUICE_ENTRY_CIDR && t->n_names) {
				sg_printable(name, sizeof(name), t->names[0]);
				fprintf(f, ", after resolving %s", name);
			}
		}
	}
	fclose(f);
	if (len > 400) {
		buf[396] = '\0';
		strcat(buf, "...");
	}
	return buf;
}

/* A note on e: `before`, t's names (printable, comma-separated), `after`. */
static void names_note(struct oentry *e, const struct target *t, const char *before, const char *after)
{
	char *buf = NULL, nm[SLUICE_HOST_MAX + 1];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		sg_oom();
	fputs(before, f);
	for (size_t i = 0; i < t->n_names; i++) {
		sg_printable(nm, sizeof(nm), t->names[i]);
		fprintf(f, "%s%s", i ? ", " : "", nm);
	}
	fputs(after, f);
	fclose(f);
	sg_oentry_note(e, buf);
}

/* Turn a target into an entry (new, or merged into the POLICY entry it widens). */
void sg_target_entry(struct suggest *s, const struct target *t, struct oentry *e)
{
	const struct sluice_policy *ag = s->o.against;
	const struct sluice_entry *x = t->existing >= 0 ? &ag->entries[t->existing] : NULL;
	uint8_t *bits = sg_xcalloc(65536 / 8, 1);
	bool wider = false;

	memset(e, 0, sizeof(*e));
	e->kind = t->kind;
	e->existing = t->existing;
	e->widened = x != NULL;
	e->t = t;
	switch (t->kind) {
	case SLUICE_ENTRY_HOST:
		e->target = sg_xstrdup(t->host);
		break;
	case SLUICE_ENTRY_URL:
		if (t->url_port == 80)
			e->target = sg_xasprintf("http://%s%s", t->host, t->prefix);
		else
			e->target = sg_xasprintf("http://%s:%u%s", t->host, t->url_port, t->prefix);
		e->methods = t->methods;
		if (x)
			for (size_t i = 0; i < x->n_methods; i++)
				if (sg_method_index(x->methods[i]) >= 0)
					e->methods |= 1u << sg_method_index(x->methods[i]);
		break;
	case SLUICE_ENTRY_CIDR:
		e->target = sg_xasprintf("%s/%u", t->ip, t->family == AF_INET ? 32 : 128);
		e->proto = t->proto;
		break;
	default: /* suggestions are host, url or cidr entries */
		break;
	}
	if (t->kind != SLUICE_ENTRY_URL) {
		for (size_t i = 0; i < t->n_pu; i++)
			bits[t->pu[i].port / 8] |= (uint8_t)(1u << (t->pu[i].port % 8));
		for (size_t i = 0; x && i < x->n_ports; i++)
			for (unsigned p = x->ports[i].lo; p <= x->ports[i].hi; p++)
				bits[p / 8] |= (uint8_t)(1u << (p % 8));
		sg_bits_to_ranges(bits, &e->ports, &e->n_ports, &wider);
		if (wider)
			sg_oentry_note(e, sg_xasprintf("review: more than %u port ranges were seen; gaps were closed to fit, so this allows more ports than were used",
						 PORTS_MAX));
	}
	free(bits);
	e->why = x ? sg_xstrdup(x->why) : sg_target_why(t);
	if (t->kind == SLUICE_ENTRY_CIDR && t->n_names)
		names_note(e, t, "address of ",
			   " in the resolver's answers; a cidr entry because the proxy passes only HTTP and TLS (the port is not a web port, or it is UDP)");
	if (t->kind == SLUICE_ENTRY_HOST && t->n_names)
		names_note(e, t, "review: the address reached directly also answered for ",
			   "; this name was the latest resolved before the connection");
	if (t->suspect)
		sg_oentry_note(e, sg_xasprintf("review: the resolver flagged queries under this name as DNS-tunnel-like (%s)",
					 t->suspect_reason ? t->suspect_reason : "suspect"));
}

/* Entries from an existing POLICY entry, unchanged. */
void sg_existing_entry(const struct sluice_entry *x, struct oentry *e)
{
	memset(e, 0, sizeof(*e));
	e->kind = x->kind;
	e->existing = (int)x->index;
	switch (x->kind) {
	case SLUICE_ENTRY_HOST:
		e->target = x->wildcard ? sg_xasprintf("*.%s", x->host) : sg_xstrdup(x->host);
		break;
	case SLUICE_ENTRY_URL:
		if (x->url_port == 80)
			e->target = sg_xasprintf("%s://%s%s", x->url_scheme, x->url_host, x->url_path);
		else
			e->target = sg_xasprintf("%s://%s:%u%s", x->url_scheme, x->url_host, x->url_port, x->url_path);
		for (size_t i = 0; i < x->n_methods; i++)
			if (sg_method_index(x->methods[i]) >= 0)
				e->methods |= 1u << sg_method_index(x->methods[i]);
		break;
	case SLUICE_ENTRY_CIDR: {
		char ip[INET6_ADDRSTRLEN];

		inet_ntop(x->family, x->addr, ip, sizeof(ip));
		e->target = sg_xasprintf("%s/%u", ip, x->prefix_len);
		e->proto = x->protocol;
		break;
	}
	case SLUICE_ENTRY_UNIX:
		e->target = sg_xasprintf("%s%s", x->unix_abstract ? "@" : "", x->unix_path);
		break;
	}
	if (x->kind != SLUICE_ENTRY_URL && x->kind != SLUICE_ENTRY_UNIX) {
		e->ports = sg_xcalloc(x->n_ports, sizeof(*e->ports));
		memcpy(e->ports, x->ports, x->n_ports * sizeof(*e->ports));
		e->n_ports = x->n_ports;
	}
	e->why = sg_xstrdup(x->why);
}

/*
 * The YAML writer.  A small one of suggest's own rather than libyaml's
 * emitter: libyaml (0.2.x) has no comment events, and the output is read
 * for its comments (the header, every lint finding above its entry, the
 * offered wildcards, the notes at the end); the --against diff also needs
 * each line with a "+ " or "- " in front.  The format written is narrow
 * (block mappings and sequences, flow lists of numbers and method names,
 * double-quoted strings), and every text written is loaded back with the
 * policy library's parser (libyaml) before it is given out: render.c.
 */

/* A double-quoted YAML scalar (escapes for '"', '\\' and control bytes). */
void sg_yq(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02X", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A comment, word-wrapped, never more than one physical line per line;
 * `item`: a list item ("# - " then "#   "). */
void sg_ycomment_x(FILE *f, const char *prefix, const char *indent, const char *text, bool item)
{
	char buf[2048] = "";
	const char *p = buf;
	bool first = true;

	sg_printable(buf, sizeof(buf), text);
	while (*p) {
		size_t n = strlen(p);

		if (n > COMMENT_WIDTH) {
			size_t cut = COMMENT_WIDTH;

			while (cut > 20 && p[cut] != ' ')
				cut--;
			if (p[cut] != ' ')
				cut = COMMENT_WIDTH;
			n = cut;
		}
		fprintf(f, "%s%s# %s%.*s\n", prefix, indent, item ? (first ? "- " : "  ") : "", (int)n, p);
		first = false;
		p += n;
		while (*p == ' ')
			p++;
	}
}

void sg_ycomment(FILE *f, const char *prefix, const char *indent, const char *text)
{
	sg_ycomment_x(f, prefix, indent, text, false);
}

void sg_yentry(FILE *f, const char *prefix, const char *indent, const struct oentry *e, bool notes)
{
	for (size_t i = 0; notes && i < e->n_notes; i++)
		sg_ycomment(f, prefix, indent, e->notes[i]);
	fprintf(f, "%s%s- %s: ", prefix, indent, sluice_entry_kind_name(e->kind));
	sg_yq(f, e->target);
	fputc('\n', f);
	if (e->kind == SLUICE_ENTRY_URL) {
		fprintf(f, "%s%s  methods: ", prefix, indent);
		sg_methods_text(f, e->methods);
		fputc('\n', f);
	} else if (e->kind != SLUICE_ENTRY_UNIX) {
		fprintf(f, "%s%s  ports: ", prefix, indent);
		sg_ranges_text(f, e->ports, e->n_ports);
		fputc('\n', f);
	}
	if (e->kind == SLUICE_ENTRY_CIDR)
		fprintf(f, "%s%s  protocol: %s\n", prefix, indent, e->proto == IPPROTO_UDP ? "udp" : "tcp");
	fprintf(f, "%s%s  why: ", prefix, indent);
	sg_yq(f, e->why);
	fputc('\n', f);
}

bool sg_wildcard_loads(const char *parent)
{
	char *text = sg_xasprintf("version: 1\nname: offer\nallow:\n  - host: \"*.%s\"\n    ports: [443]\n    why: offer\n",
			       parent);
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	int r = sluice_policy_load_buffer("offer", text, strlen(text), &p, &err);

	free(text);
	sluice_policy_free(p);
	return r == 0;
}

void sg_yoffer(FILE *f, const char *prefix, const struct offer *o, struct oentry *es)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char line[SLUICE_HOST_MAX + 64];

	if (!m)
		sg_oom();
	fprintf(m, "Offered, NOT active: %zu names under %s were seen (", o->n, o->parent);
	for (size_t i = o->first, k = 0; i <= o->last; i++)
		if (es[i].kind == SLUICE_ENTRY_HOST && es[i].existing < 0) {
			const char *d = strchr(es[i].target, '.');

			if (d && strcmp(d + 1, o->parent) == 0)
				fprintf(m, "%s%s", k++ ? ", " : "", es[i].target);
		}
	fprintf(m, "). A wildcard allows every name under it, including names created later; the exact entries above allow only these. To use it, uncomment it and delete the exact entries it covers.");
	fclose(m);
	sg_ycomment(f, prefix, "  ", buf);
	free(buf);
	snprintf(line, sizeof(line), "- host: \"*.%s\"", o->parent);
	fprintf(f, "%s  # %s\n%s  #   ports: ", prefix, line, prefix);
	sg_ranges_text(f, o->e.ports, o->e.n_ports);
	fprintf(f, "\n%s  #   why: ", prefix);
	sg_yq(f, o->e.why);
	fputc('\n', f);
}
