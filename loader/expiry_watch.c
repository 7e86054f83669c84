/* SPDX-License-Identifier: BSD-2-Clause */
/* expiry_watch.c - the `entry-expired` lines (expiry_watch.h). */
#include "expiry_watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void find_next(struct sluice_expiry_watch *w)
{
	w->next = 0;
	for (size_t i = 0; i < w->p->n_entries; i++) {
		int64_t t = w->p->entries[i].expires;

		if (t && !w->told[i] && (!w->next || t < w->next))
			w->next = t;
	}
}

int sluice_expiry_watch_init(struct sluice_expiry_watch *w, const struct sluice_policy *p)
{
	memset(w, 0, sizeof(*w));
	w->p = p;
	w->told = calloc(p->n_entries ? p->n_entries : 1, 1);
	if (!w->told)
		return -ENOMEM;
	find_next(w);
	return 0;
}

void sluice_expiry_watch_free(struct sluice_expiry_watch *w)
{
	free(w->told);
	w->told = NULL;
	w->p = NULL;
	w->next = 0;
}

int sluice_expiry_watch_tick(struct sluice_expiry_watch *w, struct sluice_evlog *log, int64_t now)
{
	int n = 0;

	if (!w->p || !w->next)
		return 0;
	if (now < 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		now = ts.tv_sec;
	}
	if (now < w->next)
		return 0;
	for (size_t i = 0; i < w->p->n_entries; i++) {
		const struct sluice_entry *e = &w->p->entries[i];
		struct sluice_line *l;
		char msg[512], t[32];

		if (!e->expires || w->told[i] || now < e->expires)
			continue;
		w->told[i] = 1;
		snprintf(msg, sizeof(msg), "%s expired at %s: it allows nothing from now on%s%s%s%s", e->name,
			 sluice_rfc3339_str(e->expires, t, sizeof(t)), e->owner ? "; owner " : "",
			 e->owner ? e->owner : "", e->ticket ? "; ticket " : "", e->ticket ? e->ticket : "");
		l = sluice_evlog_begin(log, SLUICE_DS_LIFECYCLE, -1);
		SL_STR(l, "event.kind", "state");
		SL_STR(l, "event.action", "entry-expired");
		SL_STR(l, "event.reason", "entry_expired");
		SL_STR(l, "message", msg);
		SL_STR(l, "rule.name", e->name);
		sluice_entry_log_fields(l, e);
		sluice_evlog_commit(log);   /* or counted lost by the writer */
		n++;
	}
	find_next(w);
	return n;
}
