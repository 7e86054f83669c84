/* SPDX-License-Identifier: BSD-2-Clause */
#include "daemon_events.h"

#include <stdio.h>
#include <string.h>

#include "evlog.h"
#include "evseq.h"
#include "labels.h"
#include "log.h"

int daemon_labels_from_json(struct sluice_labels *ls, json_object *obj, char *msg, size_t msglen)
{
	struct sluice_labels tmp = { 0 };

	if (!obj)
		return 0;
	if (!json_object_is_type(obj, json_type_object)) {
		snprintf(msg, msglen, "labels must be an object of KEY: VALUE strings");
		return -1;
	}
	json_object_object_foreach(obj, key, val) {
		if (!json_object_is_type(val, json_type_string)) {
			snprintf(msg, msglen, "label '%.40s': the value must be a string", key);
			return -1;
		}
		if (sluice_label_add_kv(&tmp, key, json_object_get_string(val), msg, msglen) < 0)
			return -1;
	}
	*ls = tmp;
	return 0;
}

json_object *daemon_labels_to_json(const struct sluice_labels *ls)
{
	json_object *o;

	if (!ls->n)
		return NULL;
	o = json_object_new_object();
	for (size_t i = 0; o && i < ls->n; i++)
		json_object_object_add(o, ls->key[i], json_object_new_string(ls->value[i]));
	return o;
}

int daemon_seq_share(struct sluice_evlog *w, const char *path, const char *sandbox)
{
	int fd = sluice_evseq_file(path), err;

	err = fd < 0 ? fd : sluice_evlog_share_seq(w, fd);
	if (err < 0)
		log_warnx("sandbox %s: cannot keep its event.sequence counter in %s: %s (its writers "
			  "number their lines apart)", sandbox, path, strerror(-err));
	return err;
}
