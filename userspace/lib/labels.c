/* SPDX-License-Identifier: BSD-2-Clause */
#include "labels.h"

#include <stdio.h>
#include <string.h>

#include "jsonstr.h"

static bool key_ok(const char *k, size_t n)
{
	if (n == 0 || n > SLUICE_LABEL_KEY_MAX || !(k[0] >= 'a' && k[0] <= 'z'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	return true;
}

/* Well-formed UTF-8 (RFC 3629) without C0/C1 controls or DEL. */
static bool value_ok(const char *v, size_t n)
{
	const unsigned char *u = (const unsigned char *)v;

	for (size_t i = 0; i < n;) {
		size_t k;

		if (u[i] < 0x20 || u[i] == 0x7f)
			return false;
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		k = sluice_utf8_seq_len(u + i, n - i);
		if (k == 0)
			return false;
		if (k == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0)   /* U+0080..U+009F */
			return false;
		i += k;
	}
	return true;
}

int sluice_label_add_kv(struct sluice_labels *ls, const char *key, const char *value, char *err, size_t errlen)
{
	size_t kn = key ? strlen(key) : 0, vn = value ? strlen(value) : 0, total = kn + vn;

	if (kn > SLUICE_LABEL_KEY_MAX) {
		snprintf(err, errlen, "label key '%.40s...' is too long: at most %d characters", key,
			 SLUICE_LABEL_KEY_MAX);
		return -1;
	}
	if (!key_ok(key ? key : "", kn)) {
		snprintf(err, errlen, "label key '%.40s' is not valid: 1-%d characters of a-z, 0-9 and '_', "
			 "starting with a letter (ECS labels: lower case, no dots)", key ? key : "",
			 SLUICE_LABEL_KEY_MAX);
		return -1;
	}
	if (vn > SLUICE_LABEL_VALUE_MAX) {
		snprintf(err, errlen, "label '%s': the value has %zu bytes, at most %d", key, vn,
			 SLUICE_LABEL_VALUE_MAX);
		return -1;
	}
	if (!value_ok(value ? value : "", vn)) {
		snprintf(err, errlen, "label '%s': the value is not UTF-8 text (control characters or bad bytes)", key);
		return -1;
	}
	for (size_t i = 0; i < ls->n; i++) {
		if (strcmp(ls->key[i], key) == 0) {
			snprintf(err, errlen, "label '%s' given twice", key);
			return -1;
		}
		total += strlen(ls->key[i]) + strlen(ls->value[i]);
	}
	if (ls->n >= SLUICE_LABELS_MAX) {
		snprintf(err, errlen, "label '%s': at most %d labels", key, SLUICE_LABELS_MAX);
		return -1;
	}
	if (total > SLUICE_LABELS_BYTES) {
		snprintf(err, errlen, "label '%s': the labels' keys and values come to %zu bytes, at most %d", key,
			 total, SLUICE_LABELS_BYTES);
		return -1;
	}
	memcpy(ls->key[ls->n], key, kn + 1);
	memcpy(ls->value[ls->n], value ? value : "", vn + 1);
	ls->n++;
	return 0;
}

int sluice_label_add(struct sluice_labels *ls, const char *arg, char *err, size_t errlen)
{
	const char *eq = arg ? strchr(arg, '=') : NULL;
	char key[SLUICE_LABEL_KEY_MAX + 2];
	size_t kn;

	if (!eq) {
		snprintf(err, errlen, "--label '%.60s': want KEY=VALUE", arg ? arg : "");
		return -1;
	}
	kn = (size_t)(eq - arg);
	if (kn > SLUICE_LABEL_KEY_MAX)
		kn = SLUICE_LABEL_KEY_MAX + 1;   /* too long: sluice_label_add_kv says so */
	memcpy(key, arg, kn);
	key[kn] = '\0';
	return sluice_label_add_kv(ls, key, eq + 1, err, errlen);
}
