/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_yaml.c - the YAML side of loading a policy (policy.c): libyaml's
 * event parser builds a small tree (ynode) first, so that every node keeps
 * its position for error messages, duplicate keys are caught, and anchors,
 * aliases, tags and multiple documents are refused before any meaning is
 * given to the data; then typed access to its nodes, each failure a
 * `file:line:column: message` (policy_internal.h).
 */
#include "policy_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static void set_error(struct sluice_policy_error *err, const char *file, unsigned line,
		      unsigned col, const char *fmt, va_list ap)
{
	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "<policy>");
	err->line = line;
	err->column = col;
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
}

__attribute__((format(printf, 3, 4)))
int sluice_yfail(struct ctx *c, const struct ynode *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(c->err, c->file, n ? n->line : 0, n ? n->col : 0, fmt, ap);
	va_end(ap);
	return -1;
}

__attribute__((format(printf, 4, 5)))
int sluice_yfail_at(struct ctx *c, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(c->err, c->file, line, col, fmt, ap);
	va_end(ap);
	return -1;
}

void sluice_ynode_free(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		sluice_ynode_free(n->kids[i]);
	free(n->kids);
	free(n->value);
	free(n);
}

static int ynode_add(struct ynode *parent, struct ynode *kid)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		struct ynode **k = realloc(parent->kids, cap * sizeof(*k));

		if (!k)
			return -1;
		parent->kids = k;
		parent->cap = cap;
	}
	parent->kids[parent->n++] = kid;
	return 0;
}

/* Printable form of a scalar for messages: control bytes as '?', cut. */
const char *sluice_yshown(const struct ynode *n, char *buf, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n->len && o + 4 < len; i++) {
		unsigned char ch = (unsigned char)n->value[i];

		buf[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	if (o + 4 >= len && n->len > o) {
		buf[o++] = '.';
		buf[o++] = '.';
		buf[o++] = '.';
	}
	buf[o] = '\0';
	return buf;
}

static const char *yaml_what(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return ev->data.scalar.anchor ? "anchor" : "tag";
	case YAML_SEQUENCE_START_EVENT:
		return ev->data.sequence_start.anchor ? "anchor" : "tag";
	case YAML_MAPPING_START_EVENT:
		return ev->data.mapping_start.anchor ? "anchor" : "tag";
	default:
		return "alias";
	}
}

/* Parse `buf` into a tree; exactly one document, no anchors, aliases or
 * tags.  Returns the root, or NULL with the error filled in. */
struct ynode *sluice_ytree(struct ctx *c, const char *buf, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct ynode *stack[SLUICE_POLICY_MAX_DEPTH + 1];
	int depth = 0;
	struct ynode *root = NULL;
	int docs = 0;
	bool done = false;

	if (!yaml_parser_initialize(&parser)) {
		sluice_yfail_at(c, 0, 0, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done) {
		struct ynode *n = NULL;
		unsigned line, col;

		if (!yaml_parser_parse(&parser, &ev)) {
			sluice_yfail_at(c, (unsigned)parser.problem_mark.line + 1,
				(unsigned)parser.problem_mark.column + 1, "YAML syntax error: %s%s%s",
				parser.problem ? parser.problem : "unknown problem",
				parser.context ? " " : "", parser.context ? parser.context : "");
			goto bad;
		}
		line = (unsigned)ev.start_mark.line + 1;
		col = (unsigned)ev.start_mark.column + 1;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				sluice_yfail_at(c, line, col, "more than one YAML document in a policy file");
				yaml_event_delete(&ev);
				goto bad;
			}
			break;
		case YAML_ALIAS_EVENT:
			sluice_yfail_at(c, line, col, "YAML aliases are not supported in a policy");
			yaml_event_delete(&ev);
			goto bad;
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT: {
			bool tagged, anchored;

			if (ev.type == YAML_SCALAR_EVENT) {
				anchored = ev.data.scalar.anchor != NULL;
				/* plain scalars carry no tag unless one was written */
				tagged = ev.data.scalar.tag != NULL;
			} else if (ev.type == YAML_SEQUENCE_START_EVENT) {
				anchored = ev.data.sequence_start.anchor != NULL;
				tagged = ev.data.sequence_start.tag != NULL;
			} else {
				anchored = ev.data.mapping_start.anchor != NULL;
				tagged = ev.data.mapping_start.tag != NULL;
			}
			if (anchored || tagged) {
				sluice_yfail_at(c, line, col, "YAML %ss are not supported in a policy",
					yaml_what(&ev));
				yaml_event_delete(&ev);
				goto bad;
			}
			if (++c->n_nodes > SLUICE_POLICY_MAX_NODES) {
				sluice_yfail_at(c, line, col, "policy too large (more than %u YAML nodes)",
					SLUICE_POLICY_MAX_NODES);
				yaml_event_delete(&ev);
				goto bad;
			}
			n = calloc(1, sizeof(*n));
			if (!n) {
				sluice_yfail_at(c, line, col, "out of memory");
				yaml_event_delete(&ev);
				goto bad;
			}
			n->line = line;
			n->col = col;
			if (ev.type == YAML_SCALAR_EVENT) {
				n->type = YN_SCALAR;
				n->len = ev.data.scalar.length;
				n->value = malloc(n->len + 1);
				if (!n->value) {
					free(n);
					sluice_yfail_at(c, line, col, "out of memory");
					yaml_event_delete(&ev);
					goto bad;
				}
				memcpy(n->value, ev.data.scalar.value, n->len);
				n->value[n->len] = '\0';
				n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			} else {
				n->type = ev.type == YAML_SEQUENCE_START_EVENT ? YN_SEQ : YN_MAP;
			}
			if (depth == 0) {
				if (root) {   /* cannot happen with one document */
					sluice_ynode_free(n);
					sluice_yfail_at(c, line, col, "more than one YAML document in a policy file");
					yaml_event_delete(&ev);
					goto bad;
				}
				root = n;
			} else if (ynode_add(stack[depth - 1], n) < 0) {
				sluice_ynode_free(n);
				sluice_yfail_at(c, line, col, "out of memory");
				yaml_event_delete(&ev);
				goto bad;
			}
			if (n->type != YN_SCALAR) {
				if (depth >= SLUICE_POLICY_MAX_DEPTH) {
					sluice_yfail_at(c, line, col, "YAML nested too deeply (more than %d levels)",
						SLUICE_POLICY_MAX_DEPTH);
					yaml_event_delete(&ev);
					goto bad;
				}
				stack[depth++] = n;
			}
			break;
		}
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (depth > 0)
				depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (!root)
		sluice_yfail_at(c, 1, 1, "empty policy (need at least version and name)");
	return root;
bad:
	yaml_parser_delete(&parser);
	sluice_ynode_free(root);
	return NULL;
}

bool sluice_yis_null(const struct ynode *n)
{
	if (n->type != YN_SCALAR || !n->plain)
		return false;
	return n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
	       strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0;
}

bool sluice_yis_int(const struct ynode *n)
{
	if (n->type != YN_SCALAR || !n->plain || n->len == 0)
		return false;
	for (size_t i = 0; i < n->len; i++) {
		char ch = n->value[i];

		if ((ch < '0' || ch > '9') && !(i == 0 && (ch == '-' || ch == '+') && n->len > 1))
			return false;
	}
	return true;
}

bool sluice_yis_bool(const struct ynode *n)
{
	static const char *const words[] = { "true", "false", "True", "False", "TRUE", "FALSE",
					     "yes", "no", "on", "off", "Yes", "No", "On", "Off",
					     "YES", "NO", "ON", "OFF" };

	if (n->type != YN_SCALAR || !n->plain)
		return false;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(n->value, words[i]) == 0)
			return true;
	return false;
}

const char *sluice_ykind(const struct ynode *n)
{
	if (n->type == YN_MAP)
		return "a mapping";
	if (n->type == YN_SEQ)
		return "a sequence";
	if (sluice_yis_null(n))
		return "null";
	if (sluice_yis_int(n))
		return "an integer";
	if (sluice_yis_bool(n))
		return "a boolean";
	return "a string";
}

/* A string value: any non-null scalar (quoted or plain). */
int sluice_ywant_string(struct ctx *c, const struct ynode *key, const struct ynode *v)
{
	if (v->type != YN_SCALAR || sluice_yis_null(v))
		return sluice_yfail(c, v, "'%s' must be a string, not %s", key->value, sluice_ykind(v));
	if (memchr(v->value, '\0', v->len)) {
		if (strcmp(key->value, "host") == 0)
			return sluice_yfail(c, v, "invalid host name: NUL byte in host name");
		return sluice_yfail(c, v, "'%s' contains a NUL byte", key->value);
	}
	return 0;
}

int sluice_ywant_kind(struct ctx *c, const struct ynode *key, const struct ynode *v,
		     enum ynode_type t)
{
	if (v->type != t)
		return sluice_yfail(c, v, "'%s' must be %s, not %s", key->value,
			    t == YN_MAP ? "a mapping" : "a sequence", sluice_ykind(v));
	return 0;
}

/* Keys must be plain or quoted strings, known, and unique within their
 * mapping.  Unknown keys are refused before the duplicate test, so that
 * test is over a handful of keys however large the mapping. */
int sluice_ycheck_keys(struct ctx *c, const struct ynode *map, const char *const *known,
		      const char *where)
{
	char b[64];

	for (size_t i = 0; i < map->n; i += 2) {
		const struct ynode *k = map->kids[i];
		bool ok = false;

		if (k->type != YN_SCALAR)
			return sluice_yfail(c, k, "%s: keys must be strings, not %s", where, sluice_ykind(k));
		if (memchr(k->value, '\0', k->len))
			return sluice_yfail(c, k, "%s: key contains a NUL byte", where);
		for (size_t j = 0; known[j]; j++)
			if (strcmp(k->value, known[j]) == 0)
				ok = true;
		if (!ok)
			return sluice_yfail(c, k, "unknown key '%s' in %s", sluice_yshown(k, b, sizeof(b)), where);
		for (size_t j = 0; j < i; j += 2)
			if (strcmp(map->kids[j]->value, k->value) == 0)
				return sluice_yfail(c, k, "duplicate key '%s' (first at line %u)", k->value,
					    map->kids[j]->line);
	}
	return 0;
}

const struct ynode *sluice_ymap_get(const struct ynode *map, const char *key,
				   const struct ynode **keynode)
{
	for (size_t i = 0; i + 1 < map->n; i += 2)
		if (strcmp(map->kids[i]->value, key) == 0) {
			if (keynode)
				*keynode = map->kids[i];
			return map->kids[i + 1];
		}
	return NULL;
}

int sluice_ywant_why(struct ctx *c, const struct ynode *m, const char *what, char **out)
{
	const struct ynode *kn, *v = sluice_ymap_get(m, "why", &kn);
	size_t blank = 0;

	if (!v)
		return sluice_yfail(c, m, "%s entry needs 'why' (a justification a reviewer can read)", what);
	if (sluice_ywant_string(c, kn, v) < 0)
		return -1;
	for (size_t i = 0; i < v->len; i++) {
		unsigned char ch = (unsigned char)v->value[i];

		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
			blank++;
		else if (ch < 0x20 || ch == 0x7f)
			return sluice_yfail(c, v, "'why' contains a control byte");
	}
	if (blank == v->len)
		return sluice_yfail(c, v, "'why' must not be empty");
	*out = strdup(v->value);
	return *out ? 0 : sluice_yfail(c, v, "out of memory");
}
