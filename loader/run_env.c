/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_env.c - CMD's environment under `sluice run` (run_env.h).
 */
#include "run_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credentials.h"

extern char **environ;

/* the minimal environment: what a program needs to run and to print */
static const char *const base[] = { "PATH", "HOME", "USER", "LOGNAME", "PWD", "LANG", "TERM", "TZ", NULL };

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && strncasecmp(s + n - k, suffix, k) == 0;
}

static bool contains(const char *s, size_t n, const char *part)
{
	size_t k = strlen(part);

	for (size_t i = 0; i + k <= n; i++)
		if (strncasecmp(s + i, part, k) == 0)
			return true;
	return false;
}

bool sluice_env_looks_secret(const char *name)
{
	size_t n = strcspn(name, "=");

	return ends_with(name, n, "_TOKEN") || ends_with(name, n, "_KEY") || ends_with(name, n, "_SECRET") ||
	       ends_with(name, n, "_PAT") || contains(name, n, "PASSWORD") || contains(name, n, "PASSWD") ||
	       contains(name, n, "CREDENTIAL") || contains(name, n, "SECRET") || contains(name, n, "TOKEN") ||
	       contains(name, n, "APIKEY") || contains(name, n, "API_KEY") ||
	       (n >= 4 && strncasecmp(name, "AWS_", 4) == 0);
}

int sluice_run_env_add(struct sluice_run_env *e, const char *arg, char *msg, size_t msglen)
{
	size_t n = strcspn(arg, "=");
	char name[129];

	if (e->n == SLUICE_RUN_ENV_MAX) {
		snprintf(msg, msglen, "--env: at most %d", SLUICE_RUN_ENV_MAX);
		return -1;
	}
	if (n == 0 || n >= sizeof(name)) {
		snprintf(msg, msglen, "--env wants NAME or NAME=VALUE, not '%.64s'", arg);
		return -1;
	}
	memcpy(name, arg, n);
	name[n] = '\0';
	if (!sluice_cred_env_name_ok(name)) {
		snprintf(msg, msglen, "--env: '%s' is not a variable name (A-Z a-z 0-9 _)", name);
		return -1;
	}
	e->arg[e->n++] = arg;
	return sluice_env_looks_secret(name) ? 1 : 0;
}

void sluice_run_env_keep(struct sluice_run_env *e, const char *name)
{
	if (e->n_keep < SLUICE_RUN_ENV_MAX)
		e->keep[e->n_keep++] = name;
}

static bool name_is(const char *entry, const char *name)
{
	size_t k = strlen(name);

	return strncmp(entry, name, k) == 0 && entry[k] == '=';
}

static bool wanted(const struct sluice_run_env *e, const char *entry)
{
	if (strncmp(entry, "LC_", 3) == 0)
		return true;
	for (size_t i = 0; base[i]; i++)
		if (name_is(entry, base[i]))
			return true;
	for (size_t i = 0; i < e->n_keep; i++)
		if (name_is(entry, e->keep[i]))
			return true;
	for (size_t i = 0; i < e->n; i++)
		if (!strchr(e->arg[i], '=') && name_is(entry, e->arg[i]))
			return true;
	return false;
}

/* Is `entry`'s name assigned by a later --env NAME=VALUE? */
static bool assigned(const struct sluice_run_env *e, const char *entry)
{
	for (size_t i = 0; i < e->n; i++) {
		const char *eq = strchr(e->arg[i], '=');

		if (eq && strncmp(entry, e->arg[i], (size_t)(eq - e->arg[i]) + 1) == 0)
			return true;
	}
	return false;
}

char **sluice_run_env_build(const struct sluice_run_env *e)
{
	size_t n = 0, k = 0;
	char **out;

	for (char **p = environ; p && *p; p++)
		n++;
	out = calloc(n + e->n + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (char **p = environ; p && *p; p++)
		if ((e->inherit || wanted(e, *p)) && !assigned(e, *p))
			out[k++] = *p;
	for (size_t i = 0; i < e->n; i++) {
		const char *eq = strchr(e->arg[i], '=');

		/* the last assignment of a name wins */
		if (!eq)
			continue;
		for (size_t j = i + 1; j < e->n; j++)
			if (strchr(e->arg[j], '=') &&
			    strncmp(e->arg[j], e->arg[i], (size_t)(eq - e->arg[i]) + 1) == 0)
				eq = NULL;
		if (eq)
			out[k++] = (char *)e->arg[i];
	}
	out[k] = NULL;
	return out;
}

const char *sluice_run_env_names_json(const struct sluice_run_env *e, char *buf, size_t len)
{
	size_t off = 0;

	off += (size_t)snprintf(buf + off, len - off, "[");
	for (size_t i = 0; i < e->n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s\"%.*s\"", i ? "," : "",
					(int)strcspn(e->arg[i], "="), e->arg[i]);
	if (off < len)
		snprintf(buf + off, len - off, "]");
	return buf;
}
