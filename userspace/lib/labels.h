/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * labels.h - `--label KEY=VALUE` (sluice run, sluice attach, the daemon's
 * attach request): operator-chosen keyword pairs written as `labels.KEY`
 * on every line of the sandbox, by every writer (ECS `labels`: keyword
 * values, no nesting).
 */
#ifndef SLUICE_LABELS_H
#define SLUICE_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#define SLUICE_LABELS_MAX      8
#define SLUICE_LABEL_KEY_MAX   32   /* bytes */
#define SLUICE_LABEL_VALUE_MAX 128  /* bytes, UTF-8 */
#define SLUICE_LABELS_BYTES    512  /* all keys and values together */

struct sluice_labels {
	size_t n;
	char key[SLUICE_LABELS_MAX][SLUICE_LABEL_KEY_MAX + 1];
	char value[SLUICE_LABELS_MAX][SLUICE_LABEL_VALUE_MAX + 1];
};

/*
 * Add one label given as "KEY=VALUE".  KEY: 1-32 bytes of a-z, 0-9 and
 * '_', starting with a letter (ECS: lower case, words joined by '_', no
 * dots, since `labels` is one flat object).  VALUE: 0-128 bytes of
 * well-formed UTF-8 without control characters.  A key given twice, more
 * than SLUICE_LABELS_MAX labels, or more than SLUICE_LABELS_BYTES of keys
 * and values in all are refused.  Returns 0, or -1 with a message in err
 * (the label as given, quoted, and what is wrong); ls is then unchanged.
 */
int sluice_label_add(struct sluice_labels *ls, const char *arg, char *err, size_t errlen);

/* The same for a key and a value given apart (the daemon's request). */
int sluice_label_add_kv(struct sluice_labels *ls, const char *key, const char *value, char *err, size_t errlen);

#endif
