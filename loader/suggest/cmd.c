/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/cmd.c - `sluice policy suggest`: the command line, the state's life
 * cycle and the summary. Rules: docs/policy.md, "Audit mode and suggest"; the
 * parts: suggest/internal.h.
 */
#include "internal.h"

static bool valid_name(const char *n)
{
	size_t len = strlen(n);

	if (len < 1 || len > 64)
		return false;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9') ||
		      *n == '.' || *n == '_' || *n == '-'))
			return false;
	return true;
}

struct suggest *suggest_new(const struct suggest_opts *o)
{
	struct suggest *s;
	struct sluice_policy *def;
	FILE *diag = o && o->diag ? o->diag : stderr;

	if (o && o->name && !valid_name(o->name)) {
		fprintf(diag, "sluice policy suggest: --name must be 1-64 characters of A-Z a-z 0-9 . _ -\n");
		return NULL;
	}
	s = sg_xcalloc(1, sizeof(*s));
	if (o)
		s->o = *o;
	s->diag = diag;
	s->tok = json_tokener_new();
	if (!s->tok)
		sg_oom();
	json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	def = sluice_policy_default();
	if (!def)
		sg_oom();
	memcpy(s->default_digest, def->digest, sizeof(s->default_digest));
	sluice_policy_free(def);
	sg_qnames_init(&s->qnames);
	return s;
}

static void free_pobs(void *v)
{
	struct pobs *p = v;

	free(p->path);
	free(p);
}

static void free_dname(void *v)
{
	struct dname *d = v;

	free(d->qtypes);
	free(d);
}

static void free_daddr(void *v)
{
	struct daddr *d = v;

	free(d->v);
	free(d);
}

static void free_target(void *v)
{
	struct target *t = v;

	free(t->prefix);
	free(t->pu);
	free(t->sortkey);
	free(t);
}

static void free_note(void *v)
{
	struct note *n = v;

	free(n->text);
	free(n);
}

void suggest_free(struct suggest *s)
{
	if (!s)
		return;
	json_tokener_free(s->tok);
	sg_hmap_free(&s->pobs, free_pobs);
	sg_hmap_free(&s->kobs, free);
	sg_hmap_free(&s->dnames, free_dname);
	sg_hmap_free(&s->daddrs, free_daddr);
	sg_hmap_free(&s->targets, free_target);
	sg_hmap_free(&s->ag_hosts, NULL);
	sg_hmap_free(&s->views, sg_free_view);
	sg_hmap_free(&s->notes, free_note);
	sg_hmap_free(&s->portless, NULL);
	sg_hmap_free(&s->policies, free);
	sg_hmap_free(&s->runs, NULL);
	sg_hmap_free(&s->strings, NULL);
	free(s);
}

const struct suggest_counts *suggest_counts(const struct suggest *s)
{
	return &s->c;
}

int suggest_exit_status(const struct suggest *s)
{
	return s->c.skipped || s->c.events_lost ? EXIT_FINDINGS : EXIT_CLEAN;
}

void suggest_summary(const struct suggest *s, FILE *f)
{
	fprintf(f, "sluice policy suggest: %lu file%s, %lu line%s: %lu used, %lu noted (nothing a policy could allow), "
		"%lu blank, %lu skipped\n",
		s->c.files, s->c.files == 1 ? "" : "s", s->c.lines, s->c.lines == 1 ? "" : "s", s->c.used,
		s->c.noted, s->c.blank, s->c.skipped);
	if (s->c.skipped)
		fprintf(f, "sluice policy suggest: %lu line%s skipped (reported above): the suggestion may miss what they recorded\n",
			s->c.skipped, s->c.skipped == 1 ? " was" : "s were");
	if (s->c.events_lost)
		fprintf(f, "sluice policy suggest: %llu kernel event%s lost (ring buffer full): the logs are incomplete, and so may be the suggestion\n",
			s->c.events_lost, s->c.events_lost == 1 ? " was" : "s were");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice policy suggest [--name NAME] [--against POLICY] [--relays FILE] [-o FILE]\n"
		"                             EVENTS.jsonl...\n"
		"\n"
		"Read kernel events, proxy access-log and resolver query-log lines (the\n"
		"--events file of `sluice run`, one or many runs; \"-\" is stdin) and write a\n"
		"version-1 policy that would have allowed exactly what was seen: host entries\n"
		"with the ports used, url entries where the traffic was plain HTTP, cidr\n"
		"entries (/32, /128, exact port and protocol) for direct traffic, each with a\n"
		"`why` saying how often and when.  Wildcards are only offered, as comments;\n"
		"lint findings (relay-capable hosts, ...) are marked for review.\n"
		"\n"
		"  --name NAME      the policy's name (default: suggested)\n"
		"  --against POLICY print only what POLICY lacks: the smallest additions that\n"
		"                   would have allowed the denials, as a diff\n"
		"  --relays FILE    relay list for the lints (default: as `sluice policy check`)\n"
		"  -o FILE          write the policy (or diff) to FILE instead of stdout\n"
		"\n"
		"Lines that cannot be read (malformed, truncated, not sluice's) are reported\n"
		"as file:line: reason on stderr and counted; none is skipped silently.\n"
		"Exit status: 0 every line read, 1 some line skipped or kernel events lost,\n"
		"2 usage or environment error.\n"
		"\n"
		"examples:\n"
		"  sluice run --mode audit --events audit.jsonl -- ./build.sh\n"
		"  sluice policy suggest --name build audit.jsonl -o build.yaml\n"
		"  sluice policy check build.yaml\n"
		"  sluice policy suggest --against build.yaml enforce.jsonl\n");
}

/* A policy file's text, for diffs that quote it (NULL: not readable; the
 * diff then quotes the policy as sluice writes it). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = sg_xcalloc(POLICY_TEXT_MAX + 2, 1);
	n = fread(buf, 1, POLICY_TEXT_MAX + 1, f);
	fclose(f);
	if (n > POLICY_TEXT_MAX || memchr(buf, '\0', n)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_out(const char *path, const char *text)
{
	FILE *f;
	int ok;

	if (!path) {
		fputs(text, stdout);
		return fflush(stdout) == 0 ? 0 : -1;
	}
	f = fopen(path, "we");
	if (!f)
		return -1;
	ok = fputs(text, f) >= 0;
	if (fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

int cmd_suggest(int argc, char **argv)
{
	struct suggest_opts o = { .diag = stderr };
	struct sluice_policy *against = NULL;
	const char *against_path = NULL, *out_path = NULL;
	const char **files;
	int n = 0, rc = EXIT_ERROR;
	bool opts = true;
	struct suggest *s = NULL;
	char *text = NULL, *against_text = NULL;

	files = sg_xcalloc((size_t)argc, sizeof(*files));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;

		if (opts && strcmp(a, "--") == 0) {
			opts = false;
			continue;
		}
		if (opts && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			usage(stdout);
			free(files);
			return EXIT_CLEAN;
		}
		if (opts && strcmp(a, "--name") == 0)
			dst = &o.name;
		else if (opts && strcmp(a, "--against") == 0)
			dst = &against_path;
		else if (opts && strcmp(a, "--relays") == 0)
			dst = &o.relays;
		else if (opts && strcmp(a, "-o") == 0)
			dst = &out_path;
		if (dst) {
			if (i + 1 >= argc) {
				fprintf(stderr, "sluice policy suggest: %s needs an argument\n", a);
				usage(stderr);
				free(files);
				return EXIT_ERROR;
			}
			*dst = argv[++i];
			continue;
		}
		if (opts && strncmp(a, "--name=", 7) == 0)
			o.name = a + 7;
		else if (opts && strncmp(a, "--against=", 10) == 0)
			against_path = a + 10;
		else if (opts && strncmp(a, "--relays=", 9) == 0)
			o.relays = a + 9;
		else if (opts && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "sluice policy suggest: unknown option '%s'\n", a);
			usage(stderr);
			free(files);
			return EXIT_ERROR;
		} else {
			files[n++] = a;
		}
	}
	if (n == 0) {
		fprintf(stderr, "sluice policy suggest: no EVENTS file given\n");
		usage(stderr);
		free(files);
		return EXIT_ERROR;
	}
	if (against_path) {
		struct sluice_policy_error err;
		char msg[700];

		if (sluice_policy_load_file(against_path, &against, &err) < 0) {
			fprintf(stderr, "%s\n", sluice_policy_error_str(&err, msg, sizeof(msg)));
			free(files);
			return EXIT_ERROR;
		}
		o.against = against;
		o.against_path = against_path;
		against_text = slurp(against_path);
		o.against_text = against_text;
	}
	s = suggest_new(&o);
	if (!s)
		goto out;
	for (int i = 0; i < n; i++) {
		bool is_stdin = strcmp(files[i], "-") == 0;
		FILE *f = is_stdin ? stdin : fopen(files[i], "re");
		int r;

		if (!f) {
			fprintf(stderr, "sluice policy suggest: %s: %s\n", files[i], strerror(errno));
			goto out;
		}
		r = suggest_read(s, is_stdin ? "<stdin>" : files[i], f);
		if (r < 0)
			fprintf(stderr, "sluice policy suggest: %s: read error: %s\n", files[i], strerror(errno));
		if (!is_stdin)
			fclose(f);
		if (r < 0)
			goto out;
	}
	text = suggest_render(s);
	if (!text)
		goto out;
	if (write_out(out_path, text) < 0) {
		fprintf(stderr, "sluice policy suggest: cannot write %s: %s\n", out_path ? out_path : "stdout",
			strerror(errno));
		goto out;
	}
	suggest_summary(s, stderr);
	rc = suggest_exit_status(s);
out:
	free(text);
	free(against_text);
	suggest_free(s);
	sluice_policy_free(against);
	free(files);
	return rc;
}
