/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_events.h - what the daemon adds to a sandbox's lines beyond the
 * envelope: its labels (attach's "labels" object, kept in NAME.json for a
 * restarted daemon) and its line counter (event.sequence, evseq.h), kept
 * in <state>/sandboxes/NAME.seq so that it outlives the daemon.
 */
#ifndef SLUICE_DAEMON_EVENTS_H
#define SLUICE_DAEMON_EVENTS_H

#include <stddef.h>

#include <json-c/json.h>

struct sluice_evlog;
struct sluice_labels;

/*
 * Read a "labels" object ({"KEY": "VALUE", ...}; NULL: none) into ls,
 * each checked as --label is (labels.h).  Returns 0, or -1 with the
 * message (a bad key or value, not an object, a value not a string).
 */
int daemon_labels_from_json(struct sluice_labels *ls, json_object *obj, char *msg, size_t msglen);

/* ls as a new "labels" object (the caller owns it), or NULL when empty. */
json_object *daemon_labels_to_json(const struct sluice_labels *ls);

/*
 * Number w's lines from the counter in `path` (created at 0 when missing;
 * a restarted daemon finds the one its predecessor used).  Failure is
 * said (log_warnx) and leaves w numbering by itself; never fatal (lines
 * are still written, numbered per writer).  Returns 0 or -errno.
 */
int daemon_seq_share(struct sluice_evlog *w, const char *path, const char *sandbox);

struct evbuffer;
struct sluice_evseq;

/*
 * The Prometheus families of what the sandboxes' writers count in their
 * shared pages (evseq.h): proxy requests by verdict, DNS queries by
 * verdict and by response code, DNS queries dropped by reason, lines
 * written and lost by dataset.  names[i] is sandbox i's name, pages[i] its
 * page (NULL: left out); n sandboxes.  Counters since the sandbox was
 * attached (the page outlives daemon restarts).
 */
void daemon_metrics_writers(struct evbuffer *out, const char *const *names, struct sluice_evseq *const *pages,
			    size_t n);

#endif
