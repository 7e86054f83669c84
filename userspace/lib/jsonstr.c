/* SPDX-License-Identifier: BSD-2-Clause */
#include "jsonstr.h"

#include <stdlib.h>
#include <string.h>

size_t sluice_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	unsigned lo = 0x80, hi = 0xbf;
	size_t need;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		if (c == 0xe0)
			lo = 0xa0;      /* no overlong 3-byte forms */
		else if (c == 0xed)
			hi = 0x9f;      /* no UTF-16 surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		if (c == 0xf0)
			lo = 0x90;      /* no overlong 4-byte forms */
		else if (c == 0xf4)
			hi = 0x8f;      /* nothing above U+10FFFF */
	} else {
		return 0;
	}
	if (n < need || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return need;
}

json_object *sluice_json_string(const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t n = strlen((const char *)s), o = 0;
	json_object *j;
	char *tmp;

	for (size_t i = 0; i < n;) {
		size_t k = sluice_utf8_seq_len(s + i, n - i);

		if (!k)
			break;
		i += k;
		if (i == n)
			return json_object_new_string((const char *)s); /* all valid: no copy */
	}
	if (n == 0)
		return json_object_new_string("");
	tmp = malloc(3 * n + 1); /* each byte becomes at most 3 (U+FFFD) */
	if (!tmp)
		return json_object_new_string("");
	for (size_t i = 0; i < n;) {
		size_t k = sluice_utf8_seq_len(s + i, n - i);

		if (k) {
			memcpy(tmp + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(tmp + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	tmp[o] = 0;
	j = json_object_new_string(tmp);
	free(tmp);
	return j;
}
