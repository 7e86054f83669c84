/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run_env.h - the environment `sluice run` gives CMD: a minimal one
 * (PATH, HOME, USER, LOGNAME, PWD, LANG, LC_*, TERM, TZ, and the proxy, CA
 * and credential-placeholder variables sluice sets) plus what `--env NAME`
 * or `--env NAME=VALUE` adds; `--inherit-env` keeps the host's whole
 * environment.  So a token in the invoking shell does not reach the
 * sandbox by accident (docs/policy.md "Credentials").
 */
#ifndef SLUICE_RUN_ENV_H
#define SLUICE_RUN_ENV_H

#include <stdbool.h>
#include <stddef.h>

#define SLUICE_RUN_ENV_MAX 64

/* getopt codes of `sluice run --env` and `--inherit-env` (confine.h has 0x1000...) */
enum { SLUICE_OPT_ENV = 0x1100, SLUICE_OPT_INHERIT_ENV };

struct sluice_run_env {
	bool inherit;                       /* --inherit-env */
	const char *arg[SLUICE_RUN_ENV_MAX]; /* --env arguments as given (NAME or NAME=VALUE) */
	size_t n;
	const char *keep[SLUICE_RUN_ENV_MAX]; /* names sluice itself set for CMD (see _keep) */
	size_t n_keep;
};

/*
 * Does the variable name look like it holds a secret (*_TOKEN, *_KEY,
 * *_SECRET, *PASSWORD*, *PASSWD*, *CREDENTIAL*, AWS_*, GITHUB_TOKEN,
 * ...)?  Case-insensitive.
 */
bool sluice_env_looks_secret(const char *name);

/*
 * Add one `--env` argument (NAME, or NAME=VALUE; kept by pointer).
 * Returns 0, 1 when NAME looks like a secret (the caller warns, naming
 * the credentials mechanism), or -1 with msg for a bad name or too many.
 */
int sluice_run_env_add(struct sluice_run_env *e, const char *arg, char *msg, size_t msglen);

/* Keep the variable `name` (one sluice set) in CMD's environment too. */
void sluice_run_env_keep(struct sluice_run_env *e, const char *name);

/*
 * Build CMD's environment from the current one (in the child, just before
 * exec): the minimal set, the kept names, --env NAME (from the current
 * environment, when present), then --env NAME=VALUE.  Returns a
 * NULL-terminated malloc'd array of "NAME=VALUE" pointers (into environ
 * or the --env arguments), or NULL when out of memory.  --inherit-env:
 * the current environment plus the --env assignments.
 */
char **sluice_run_env_build(const struct sluice_run_env *e);

/* The names passed with --env, as a JSON array ("[\"A\",\"B\"]"), into buf. */
const char *sluice_run_env_names_json(const struct sluice_run_env *e, char *buf, size_t len);

#endif /* SLUICE_RUN_ENV_H */
