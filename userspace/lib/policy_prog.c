/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_prog.c - per-program entries: `programs: [/usr/bin/git, ...]` on a
 * host, url or cidr entry (docs/policy.md "Per-program entries").  The
 * paths are resolved here, when the policy is loaded (so at every load and
 * reload), to the file each names: device and inode, as the kernel names
 * the file a process runs (current->mm->exe_file).  The kernel judges cidr
 * entries by it (loader/policy_maps.c writes map sluice_prog_allow), the
 * proxy host and url entries (the flow map carries the caller's file).
 */
#include "policy_internal.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PROGRAMS_MAX 32   /* paths in one entry */

uint32_t sluice_kdev(uint64_t st_dev)
{
	/* MKDEV of include/linux/kdev_t.h: 12 bits of major, 20 of minor */
	return (uint32_t)((major((dev_t)st_dev) << 20) | (minor((dev_t)st_dev) & 0xfffff));
}

static bool bad_segment(const char *path)
{
	for (const char *s = path; *s; ) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return true;
		if (!e)
			break;
		s = e + 1;
	}
	return false;
}

static int prog_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sluice_program *)a)->path, ((const struct sluice_program *)b)->path);
}

int sluice_prog_parse_entry(struct ctx *c, const struct ynode *m, struct sluice_entry *e)
{
	const struct ynode *kn = NULL, *v = sluice_ymap_get(m, "programs", &kn);

	if (!v)
		return 0;
	if (e->kind == SLUICE_ENTRY_UNIX)
		return sluice_yfail(c, kn, "'programs' is not allowed in a unix entry (the kernel judges unix "
				    "sockets by name only)");
	if (v->type != YN_SEQ)
		return sluice_yfail(c, v, "'programs' must be a list of absolute paths, not %s", sluice_ykind(v));
	if (v->n == 0)
		return sluice_yfail(c, v, "'programs' must name at least one program (leave it out for any program)");
	if (v->n > PROGRAMS_MAX)
		return sluice_yfail(c, v, "too many programs (at most %d)", PROGRAMS_MAX);
	e->programs = calloc(v->n, sizeof(*e->programs));
	if (!e->programs)
		return sluice_yfail(c, v, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *x = v->kids[i];
		struct sluice_program *pr = &e->programs[e->n_programs];
		char b[80];
		struct stat st;

		if (sluice_ywant_string(c, kn, x) < 0)
			return -1;
		if (strlen(x->value) != x->len || x->value[0] != '/')
			return sluice_yfail(c, x, "program '%s' must be an absolute path", sluice_yshown(x, b, sizeof(b)));
		if (x->len >= PATH_MAX || bad_segment(x->value))
			return sluice_yfail(c, x, "program '%s': no '.' or '..' segment, shorter than %d bytes",
					    sluice_yshown(x, b, sizeof(b)), PATH_MAX);
		for (size_t j = 0; j < e->n_programs; j++)
			if (e->programs[j].path && strcmp(e->programs[j].path, x->value) == 0)
				return sluice_yfail(c, x, "program '%s' is listed twice", sluice_yshown(x, b, sizeof(b)));
		/* the file execve() would run: symlinks followed */
		if (stat(x->value, &st) < 0)
			return sluice_yfail(c, x, "program '%s': %s", sluice_yshown(x, b, sizeof(b)),
					    errno == ENOENT ? "no such file" : strerror(errno));
		if (!S_ISREG(st.st_mode))
			return sluice_yfail(c, x, "program '%s' is not a regular file", sluice_yshown(x, b, sizeof(b)));
		pr->path = strdup(x->value);
		if (!pr->path)
			return sluice_yfail(c, x, "out of memory");
		pr->id.dev = sluice_kdev(st.st_dev);
		pr->id.ino = st.st_ino;
		pr->line = x->line;
		pr->column = x->col;
		e->n_programs++;
	}
	qsort(e->programs, e->n_programs, sizeof(*e->programs), prog_cmp);
	return 0;
}

void sluice_prog_free(struct sluice_entry *e)
{
	for (size_t i = 0; i < e->n_programs; i++)
		free(e->programs[i].path);
	free(e->programs);
	e->programs = NULL;
	e->n_programs = 0;
}

const char *sluice_entry_program_path(const struct sluice_entry *e, const struct sluice_exe_id *who)
{
	for (size_t i = 0; e && who && i < e->n_programs; i++)
		if (e->programs[i].id.dev == who->dev && e->programs[i].id.ino == who->ino)
			return e->programs[i].path;
	return NULL;
}

bool sluice_entry_allows_program(const struct sluice_entry *e, const struct sluice_exe_id *who)
{
	if (!e->n_programs || !who)
		return true;
	return sluice_entry_program_path(e, who) != NULL;
}

bool sluice_policy_has_programs(const struct sluice_policy *p)
{
	for (size_t i = 0; p && i < p->n_entries; i++)
		if (p->entries[i].n_programs)
			return true;
	return false;
}

const char *sluice_pid_executable(int pid, const struct sluice_exe_id *who, char *buf, size_t len)
{
	char link[64];
	struct stat st;
	ssize_t n;

	if (pid <= 0 || len < 2)
		return NULL;
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, buf, len - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	/* the link names the file even after it was replaced: check it is
	 * still the one the kernel saw (stat of the link is the file itself) */
	if (who && (stat(link, &st) < 0 || sluice_kdev(st.st_dev) != who->dev || st.st_ino != who->ino))
		return NULL;
	return buf;
}

/* Does the file name `base` begin with one of the interpreters' names
 * (followed by nothing, digits, dots or '-': "python3.11", "perl5.36")? */
static const char *interpreter_name(const char *base)
{
	static const char *const names[] = {
		"sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "busybox", "python", "pypy",
		"perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh", "wish", "expect",
		"Rscript", "java", "env", "ld-linux", "ld-musl", "ld.so", "gdb", "awk", "gawk", "mawk", "xargs", NULL,
	};

	for (size_t i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);
		const char *t = base + n;

		if (strncmp(base, names[i], n) != 0)
			continue;
		while (*t && ((*t >= '0' && *t <= '9') || *t == '.' || *t == '-' || *t == '_' ||
			      (*t >= 'a' && *t <= 'z' && strncmp(names[i], "ld-", 3) == 0)))
			t++;
		if (!*t)
			return names[i];
	}
	return NULL;
}

const char *sluice_program_interpreter(const char *path)
{
	char *copy = strdup(path), *real;
	const char *what = NULL;

	if (copy)
		what = interpreter_name(basename(copy));
	free(copy);
	if (!what && (real = realpath(path, NULL)) != NULL) {
		what = interpreter_name(basename(real));
		free(real);
	}
	return what;
}
