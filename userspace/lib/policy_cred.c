/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_cred.c - the `credentials:` section of a policy and the
 * `credential:` key of url entries (docs/policy.md "Credentials").
 *
 * A credential names a secret sluice keeps outside the sandbox and the
 * header the proxy sets from it on requests an entry carrying it allows.
 * Parsing never reads the secret (secrets.c does, in the loader): a policy
 * is the same text for the loader, the proxy and `policy check`.
 */
#include "policy_internal.h"
#include "credentials.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CRED_MAX 64   /* credentials in one policy */

/* RFC 9110 5.6.2 tchar */
static bool is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > SLUICE_CRED_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '-' || ch == '_' || ch == '.'))
			return false;
	}
	return true;
}

bool sluice_cred_env_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 128 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_'))
			return false;
	}
	return true;
}

int sluice_cred_template_check(const char *t, size_t len, size_t *name_len, const char **why)
{
	static const char *const framing[] = { "host", "content-length", "transfer-encoding", "connection",
						"te", "trailer", "upgrade", "keep-alive", "proxy-connection",
						"expect", NULL };
	const char *colon, *sec;
	size_t n;

	if (memchr(t, '\r', len) || memchr(t, '\n', len)) {
		*why = "contains CR or LF (a header template is one header line)";
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] < 0x20 && t[i] != '\t') {
			*why = "contains a control byte";
			return -1;
		} else if ((unsigned char)t[i] == 0x7f) {
			*why = "contains a control byte";
			return -1;
		}
	colon = memchr(t, ':', len);
	if (!colon || colon == t) {
		*why = "must be 'Field-Name: value with {secret}'";
		return -1;
	}
	n = (size_t)(colon - t);
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)t[i])) {
			*why = "has a field name that is not an HTTP token (RFC 9110 5.6.2)";
			return -1;
		}
	for (size_t i = 0; framing[i]; i++)
		if (strlen(framing[i]) == n && strncasecmp(t, framing[i], n) == 0) {
			*why = "names a header that frames or routes the request (Host, Content-Length, Transfer-Encoding, Connection, ...)";
			return -1;
		}
	sec = strstr(colon, "{secret}");
	if (!sec) {
		*why = "has no {secret} in its value";
		return -1;
	}
	if (strstr(sec + 8, "{secret}")) {
		*why = "has {secret} more than once";
		return -1;
	}
	for (const char *p = colon; p < t + len; p++) {
		if (p == sec) {
			p += 7;
			continue;
		}
		if (*p == '{' || *p == '}') {
			*why = "has a '{' or '}' other than {secret} (the only placeholder)";
			return -1;
		}
	}
	*name_len = n;
	return 0;
}

static int parse_one(struct ctx *c, const struct ynode *m, struct sluice_credential *cr,
		     struct sluice_policy *p, size_t idx)
{
	static const char *const keys[] = { "name", "file", "header", "env", "allow_plain_http", NULL };
	const struct ynode *kn = NULL, *v;
	const char *why = NULL;
	size_t hn = 0;
	char b[80];

	cr->line = m->line;
	cr->column = m->col;
	if (m->type != YN_MAP)
		return sluice_yfail(c, m, "credentials[%zu] must be a mapping (name, file, header, env), not %s",
				    idx, sluice_ykind(m));
	if (sluice_ycheck_keys(c, m, keys, "credential") < 0)
		return -1;
	v = sluice_ymap_get(m, "name", &kn);
	if (!v)
		return sluice_yfail(c, m, "credential needs 'name' (entries and log lines refer to it)");
	if (sluice_ywant_string(c, kn, v) < 0)
		return -1;
	if (!name_ok(v->value, v->len))
		return sluice_yfail(c, v, "credential name must be 1-64 characters of A-Z a-z 0-9 . _ -, not '%s'",
				    sluice_yshown(v, b, sizeof(b)));
	for (size_t i = 0; i < idx; i++)
		if (strcmp(p->credentials[i].name, v->value) == 0)
			return sluice_yfail(c, v, "duplicate credential '%s' (first at line %u)", v->value,
					    p->credentials[i].line);
	cr->name = strdup(v->value);
	if (!cr->name)
		return sluice_yfail(c, v, "out of memory");

	v = sluice_ymap_get(m, "file", &kn);
	if (v) {
		if (sluice_ywant_string(c, kn, v) < 0)
			return -1;
		if (v->value[0] != '/')
			return sluice_yfail(c, v, "credential '%s': 'file' must be an absolute path, not '%s'",
					    cr->name, sluice_yshown(v, b, sizeof(b)));
		cr->file = strdup(v->value);
		if (!cr->file)
			return sluice_yfail(c, v, "out of memory");
		cr->file_line = v->line;
		cr->file_column = v->col;
	}

	v = sluice_ymap_get(m, "header", &kn);
	if (!v)
		return sluice_yfail(c, m, "credential '%s' needs 'header' (e.g. \"Authorization: Bearer {secret}\")",
				    cr->name);
	if (sluice_ywant_string(c, kn, v) < 0)
		return -1;
	if (sluice_cred_template_check(v->value, v->len, &hn, &why) < 0)
		return sluice_yfail(c, v, "credential '%s': header template %s", cr->name, why);
	cr->header = strdup(v->value);
	cr->header_name = strndup(v->value, hn);
	if (!cr->header || !cr->header_name)
		return sluice_yfail(c, v, "out of memory");

	v = sluice_ymap_get(m, "env", &kn);
	if (v) {
		if (sluice_ywant_string(c, kn, v) < 0)
			return -1;
		if (!sluice_cred_env_name_ok(v->value))
			return sluice_yfail(c, v, "credential '%s': 'env' must be a variable name (A-Z a-z 0-9 _, not starting with a digit), not '%s'",
					    cr->name, sluice_yshown(v, b, sizeof(b)));
		for (size_t i = 0; i < idx; i++)
			if (p->credentials[i].env && strcmp(p->credentials[i].env, v->value) == 0)
				return sluice_yfail(c, v, "credential '%s': env %s is already the placeholder of '%s'",
						    cr->name, v->value, p->credentials[i].name);
		cr->env = strdup(v->value);
		if (!cr->env)
			return sluice_yfail(c, v, "out of memory");
	}

	v = sluice_ymap_get(m, "allow_plain_http", &kn);
	if (v) {
		if (!sluice_yis_bool(v))
			return sluice_yfail(c, v, "'allow_plain_http' must be true or false, not %s", sluice_ykind(v));
		cr->allow_plain_http = strcasecmp(v->value, "true") == 0 || strcasecmp(v->value, "yes") == 0 ||
				       strcasecmp(v->value, "on") == 0;
	}
	return 0;
}

int sluice_cred_parse(struct ctx *c, const struct ynode *root, struct sluice_policy *p)
{
	const struct ynode *kn = NULL, *v = sluice_ymap_get(root, "credentials", &kn);

	if (!v || sluice_yis_null(v))
		return 0;
	if (v->type != YN_SEQ)
		return sluice_yfail(c, v, "'credentials' must be a sequence, not %s", sluice_ykind(v));
	if (v->n > CRED_MAX)
		return sluice_yfail(c, v, "too many credentials (at most %d)", CRED_MAX);
	p->credentials = calloc(v->n ? v->n : 1, sizeof(*p->credentials));
	if (!p->credentials)
		return sluice_yfail(c, v, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		p->n_credentials = i + 1;
		if (parse_one(c, v->kids[i], &p->credentials[i], p, i) < 0)
			return -1;
	}
	return 0;
}

int sluice_cred_parse_entry(struct ctx *c, const struct ynode *m, struct sluice_entry *e)
{
	const struct ynode *kn = NULL, *v = sluice_ymap_get(m, "credential", &kn);
	const struct sluice_policy *p = c->policy;
	char b[80];

	if (!v)
		return 0;
	if (sluice_ywant_string(c, kn, v) < 0)
		return -1;
	for (size_t i = 0; p && i < p->n_credentials; i++) {
		const struct sluice_credential *cr = &p->credentials[i];

		if (strcmp(cr->name, v->value) != 0)
			continue;
		if (strcmp(e->url_scheme, "http") == 0 && !cr->allow_plain_http)
			return sluice_yfail(c, v, "credential '%s' on a plain http:// entry: the secret would cross the network unencrypted (set 'allow_plain_http: true' on the credential to accept that)",
					    cr->name);
		e->credential = strdup(cr->name);
		if (!e->credential)
			return sluice_yfail(c, v, "out of memory");
		e->credential_idx = i;
		return 0;
	}
	if (!p || p->n_credentials == 0)
		return sluice_yfail(c, v, "unknown credential '%s' (the policy has no 'credentials:' section)",
				    sluice_yshown(v, b, sizeof(b)));
	return sluice_yfail(c, v, "unknown credential '%s' (not in 'credentials:')", sluice_yshown(v, b, sizeof(b)));
}

void sluice_cred_free(struct sluice_policy *p)
{
	for (size_t i = 0; i < p->n_credentials; i++) {
		struct sluice_credential *cr = &p->credentials[i];

		free(cr->name);
		free(cr->file);
		free(cr->header);
		free(cr->header_name);
		free(cr->env);
	}
	free(p->credentials);
	p->credentials = NULL;
	p->n_credentials = 0;
}

const struct sluice_credential *sluice_entry_credential(const struct sluice_policy *p,
							const struct sluice_entry *e)
{
	if (!p || !e || !e->credential || e->credential_idx >= p->n_credentials)
		return NULL;
	return &p->credentials[e->credential_idx];
}
