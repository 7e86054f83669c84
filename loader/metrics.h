/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.h - the daemon's Prometheus endpoint (`sluice daemon --metrics
 * ADDR`): GET /metrics answers in the text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), served by
 * libevent's evhttp on the daemon's own event base (docs/daemon.md lists
 * the metrics).
 */
#ifndef SLUICE_METRICS_H
#define SLUICE_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct event_base;
struct sluice_metrics;

/* Fills `out` with the samples of one scrape (the caller's state, read on
 * the event loop's thread: no locking). */
typedef void (*sluice_metrics_fill_fn)(struct evbuffer *out, void *arg);

/* Parse "IP:PORT" or "[IPv6]:PORT" (numeric only: the daemon resolves no
 * names) into host (without brackets) and port (1-65535, host byte order).
 * Returns 0, or -1 with a message in err. */
int sluice_metrics_parse_addr(const char *addr, char *host, size_t hostlen, uint16_t *port, char *err, size_t errlen);

/* Listen on addr (see sluice_metrics_parse_addr) and answer GET or HEAD
 * /metrics from fill(); other paths get 404, other methods 405.  Requests
 * are bounded (8 KiB of headers, no body, 5 s to send them).  Returns the
 * endpoint (free with sluice_metrics_free), or NULL with a message in err
 * (bad address, address in use, ...). */
struct sluice_metrics *sluice_metrics_listen(struct event_base *base, const char *addr, sluice_metrics_fill_fn fill,
					     void *arg, char *err, size_t errlen);

void sluice_metrics_free(struct sluice_metrics *m);

/* Writers for fill().  A family is announced once, before its samples:
 * `# HELP name help` and `# TYPE name type` (type: "counter" or "gauge").
 * A sample is `name{k="v",...} value`; labels is NULL or k, v, k, v, ...,
 * NULL, each value escaped as the format requires (\\, \", \n). */
void sluice_prom_family(struct evbuffer *out, const char *name, const char *type, const char *help);
void sluice_prom_sample(struct evbuffer *out, const char *name, const char *const *labels, uint64_t value);

#endif
