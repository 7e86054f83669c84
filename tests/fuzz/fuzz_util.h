/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_util.h - what the fuzz targets share: splitting the input into
 * strings, and the strict check every JSON log line must pass.
 */
#ifndef SLUICE_FUZZ_UTIL_H
#define SLUICE_FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* The next NUL-terminated piece of [*p, end) as a fresh string, or NULL. */
static inline char *fuzz_piece(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *nul;
	size_t n;
	char *s;

	if (*p >= end)
		return NULL;
	nul = memchr(*p, 0, (size_t)(end - *p));
	n = nul ? (size_t)(nul - *p) : (size_t)(end - *p);
	s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, *p, n);
	s[n] = 0;
	*p += nul ? n + 1 : n;
	return s;
}

/*
 * `line` (n bytes) must be exactly one JSON object on one line, parsed
 * strictly and as valid UTF-8 (RFC 8259): no raw CR/LF, nothing after it.
 * Aborts otherwise; returns the object (caller puts it).
 */
static inline json_object *fuzz_json_line(const char *line, size_t n)
{
	struct json_tokener *tok;
	json_object *o;

	if (n != strlen(line) || memchr(line, '\n', n) || memchr(line, '\r', n))
		abort();
	tok = json_tokener_new();
	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, line, (int)n + 1); /* with the NUL: the end of input */
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    (size_t)json_tokener_get_parse_end(tok) < n || !json_object_is_type(o, json_type_object))
		abort();
	json_tokener_free(tok);
	return o;
}

#endif
