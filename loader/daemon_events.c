/* SPDX-License-Identifier: BSD-2-Clause */
#include "daemon_events.h"

#include <stdio.h>
#include <string.h>

#include "evlog.h"
#include "evseq.h"
#include "labels.h"
#include "log.h"
#include "metrics.h"

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

/* The RCODE names of RFC 6895 section 2.3 (the resolver's dns.response_code). */
static const char *const rcode_names[SLUICE_EVC_RCODES] = {
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
	"NXRRSET", "NOTAUTH", "NOTZONE", "DSOTYPENI", "RCODE12", "RCODE13", "RCODE14", "RCODE15", "none",
};

/* enum rsv_drop (userspace/resolver/fair.h), by number */
static const char *const drop_names[SLUICE_EVC_DROPS] = { "rate_limited", "socket_overflow", "shutdown", "other" };

static const char *const verdict_names[SLUICE_EVC__VERDICTS] = { "allow", "deny", "would_deny", "refuse" };

void daemon_metrics_writers(struct evbuffer *out, const char *const *names, struct sluice_evseq *const *pages,
			    size_t n)
{
	sluice_prom_family(out, "sluice_proxy_requests_total", "counter",
			   "Requests and tunnels the sandbox's proxy logged, by verdict.");
	for (size_t i = 0; i < n; i++)
		for (int v = 0; pages[i] && v < SLUICE_EVC_REFUSE; v++)
			sluice_prom_sample(out, "sluice_proxy_requests_total",
					   (const char *const[]){ "sandbox", names[i], "verdict", verdict_names[v], NULL },
					   sluice_evseq_read(&pages[i]->proxy_requests[v]));
	sluice_prom_family(out, "sluice_dns_queries_total", "counter",
			   "DNS queries the sandbox's resolver logged, by verdict.");
	for (size_t i = 0; i < n; i++)
		for (int v = 0; pages[i] && v < SLUICE_EVC__VERDICTS; v++)
			sluice_prom_sample(out, "sluice_dns_queries_total",
					   (const char *const[]){ "sandbox", names[i], "verdict", verdict_names[v], NULL },
					   sluice_evseq_read(&pages[i]->dns_queries[v]));
	sluice_prom_family(out, "sluice_dns_responses_total", "counter",
			   "DNS queries the sandbox's resolver logged, by the response code the client got "
			   "(none: nothing was sent).");
	for (size_t i = 0; i < n; i++)
		for (int r = 0; pages[i] && r < SLUICE_EVC_RCODES; r++) {
			uint64_t v = sluice_evseq_read(&pages[i]->dns_rcodes[r]);

			/* the common codes always, the rare ones once seen */
			if (v || r <= 5 || r == 16)
				sluice_prom_sample(out, "sluice_dns_responses_total",
						   (const char *const[]){ "sandbox", names[i], "rcode", rcode_names[r], NULL },
						   v);
		}
	sluice_prom_family(out, "sluice_dns_dropped_total", "counter",
			   "DNS queries the sandbox's resolver dropped unanswered, by reason.");
	for (size_t i = 0; i < n; i++)
		for (int d = 0; pages[i] && d < 3; d++)
			sluice_prom_sample(out, "sluice_dns_dropped_total",
					   (const char *const[]){ "sandbox", names[i], "reason", drop_names[d], NULL },
					   sluice_evseq_read(&pages[i]->dns_dropped[d]));
	sluice_prom_family(out, "sluice_event_lines_total", "counter",
			   "Lines of the sandbox written to the events destination, by dataset, by all its writers.");
	for (size_t i = 0; i < n; i++)
		for (int ds = 0; pages[i] && ds < SLUICE_EVC_DATASETS; ds++)
			sluice_prom_sample(out, "sluice_event_lines_total",
					   (const char *const[]){ "sandbox", names[i], "dataset",
								  sluice_dataset_name((enum sluice_dataset)ds), NULL },
					   sluice_evseq_read(&pages[i]->lines[ds]));
	sluice_prom_family(out, "sluice_event_writer_lines_lost_total", "counter",
			   "Lines of the sandbox its writers (daemon, proxy, resolver) could not write, by dataset.");
	for (size_t i = 0; i < n; i++)
		for (int ds = 0; pages[i] && ds < SLUICE_EVC_DATASETS; ds++)
			sluice_prom_sample(out, "sluice_event_writer_lines_lost_total",
					   (const char *const[]){ "sandbox", names[i], "dataset",
								  sluice_dataset_name((enum sluice_dataset)ds), NULL },
					   sluice_evseq_read(&pages[i]->lost[ds]));
}
