/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_fs.c - the `filesystem:` section of a policy (policy.h, struct
 * sluice_policy_fs; docs/filesystem.md): the file-system view of
 * `sluice run`'s sandbox profile, reviewed and digested with the rest.
 *
 *   filesystem:
 *     workdir: /srv/agent          # CMD starts here, writable
 *     read_only: [/opt/tools]      # as --ro
 *     read_write: [/var/cache/pip] # as --rw
 *     hide: [/etc/keys]            # as --hide
 *
 * Checked here for form only (absolute, no ".." segment, no NUL, no
 * duplicate, not / where it would be writable or hidden); `sluice run`
 * checks that each exists and that no system directory becomes writable
 * without --force-rw, and names the policy's file:line when it does not.
 */
#include "policy_internal.h"

#include <stdlib.h>
#include <string.h>

/* One path value: a string, absolute, without ".." segments. */
static int fs_path(struct ctx *c, const struct ynode *key, const struct ynode *v, const char *what,
		   bool not_root, struct sluice_fs_path *out)
{
	char b[80];
	const char *s;

	if (sluice_ywant_string(c, key, v) < 0)
		return -1;
	s = v->value;
	if (strlen(s) != v->len)
		return sluice_yfail(c, v, "%s: a path with a NUL byte", what);
	if (s[0] != '/')
		return sluice_yfail(c, v, "%s: '%s' is not an absolute path", what, sluice_yshown(v, b, sizeof(b)));
	if (v->len >= 4096)
		return sluice_yfail(c, v, "%s: path longer than 4095 bytes", what);
	for (const char *p = s; (p = strstr(p, "..")) != NULL; p += 2)
		if (p[-1] == '/' && (p[2] == '/' || p[2] == 0))
			return sluice_yfail(c, v, "%s: '%s' has a '..' segment", what, sluice_yshown(v, b, sizeof(b)));
	if (not_root && strspn(s, "/") == v->len)
		return sluice_yfail(c, v, "%s: '/' %s", what,
				    strcmp(what, "hide") == 0 ? "would hide everything" :
								 "cannot be writable (the host's root stays read-only)");
	out->path = strdup(s);
	if (!out->path)
		return sluice_yfail(c, v, "out of memory");
	out->line = v->line;
	out->column = v->col;
	return 0;
}

/* A list of paths (a sequence of strings, at most SLUICE_POLICY_MAX_FS_PATHS);
 * none may be in `other` (another role's list, `other_what`). */
static int fs_list(struct ctx *c, const struct ynode *map, const char *what, bool not_root,
		   struct sluice_fs_path **out, size_t *n, const struct sluice_fs_path *other, size_t n_other,
		   const char *other_what)
{
	const struct ynode *kn = NULL, *v = sluice_ymap_get(map, what, &kn);

	if (!v || sluice_yis_null(v))
		return 0;
	if (v->type != YN_SEQ)
		return sluice_yfail(c, v, "filesystem.%s must be a list of paths, not %s", what, sluice_ykind(v));
	if (v->n > SLUICE_POLICY_MAX_FS_PATHS)
		return sluice_yfail(c, v, "filesystem.%s: at most %d paths", what, SLUICE_POLICY_MAX_FS_PATHS);
	*out = calloc(v->n ? v->n : 1, sizeof(**out));
	if (!*out)
		return sluice_yfail(c, v, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		if (fs_path(c, kn, v->kids[i], what, not_root, &(*out)[i]) < 0)
			return -1;
		*n = i + 1;
		const char *pi = (*out)[i].path;   /* set by fs_path */

		for (size_t j = 0; pi && j < i; j++)
			if ((*out)[j].path && strcmp((*out)[j].path, pi) == 0)
				return sluice_yfail(c, v->kids[i], "filesystem.%s: %s is already listed at line %u", what, pi,
						    (*out)[j].line);
		for (size_t j = 0; pi && j < n_other; j++)
			if (other[j].path && strcmp(other[j].path, pi) == 0)
				return sluice_yfail(c, v->kids[i], "filesystem.%s: %s is also %s (line %u): one role per path",
						    what, pi, other_what, other[j].line);
	}
	return 0;
}

int sluice_fs_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p)
{
	static const char *const keys[] = { "workdir", "read_only", "read_write", "hide", NULL };
	struct sluice_policy_fs *fs = &p->fs;
	const struct ynode *kn = NULL, *v = sluice_ymap_get(root, "filesystem", &kn), *w, *wk = NULL;

	if (!v)
		return 0;
	fs->present = true;
	fs->line = kn ? kn->line : 0;
	if (sluice_yis_null(v))
		return 0;
	if (v->type != YN_MAP)
		return sluice_yfail(c, v, "'filesystem' must be a mapping (workdir, read_only, read_write, hide), not %s",
				    sluice_ykind(v));
	if (sluice_ycheck_keys(c, v, keys, "filesystem") < 0)
		return -1;
	w = sluice_ymap_get(v, "workdir", &wk);
	if (w && fs_path(c, wk, w, "workdir", true, &fs->workdir) < 0)
		return -1;
	/* one path, one role: read-only and writable, or writable and
	 * hidden, at once is a contradiction a reviewer should not resolve */
	if (fs_list(c, v, "read_only", false, &fs->read_only, &fs->n_read_only, NULL, 0, NULL) < 0 ||
	    fs_list(c, v, "read_write", true, &fs->read_write, &fs->n_read_write, fs->read_only, fs->n_read_only,
		    "read_only") < 0 ||
	    fs_list(c, v, "hide", true, &fs->hide, &fs->n_hide, fs->read_write, fs->n_read_write, "read_write") < 0)
		return -1;
	return 0;
}

static void free_list(struct sluice_fs_path *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].path);
	free(l);
}

void sluice_fs_free(struct sluice_policy *p)
{
	free(p->fs.workdir.path);
	free_list(p->fs.read_only, p->fs.n_read_only);
	free_list(p->fs.read_write, p->fs.n_read_write);
	free_list(p->fs.hide, p->fs.n_hide);
	memset(&p->fs, 0, sizeof(p->fs));
}
