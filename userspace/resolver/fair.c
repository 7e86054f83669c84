/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fair.c - per-client token buckets for the queries the resolver answers
 * itself, and the dropped-query accounting (fair.h).
 */
#include "fair.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dns_stats.h"
#include "evlog.h"
#include "evseq.h"

_Static_assert(RSV_DROP__MAX == SLUICE_DNS_DROP_N, "dns_stats.h counts the drops of enum rsv_drop");

#define BUCKETS 1024            /* clients tracked at once (a sandbox has a few addresses) */

struct bucket {
	uint8_t key[17];            /* family byte + address (16 bytes; IPv4 in the first 4) */
	bool used;
	double tokens, at;
};

struct rsv_fair {
	struct sluice_evlog *log;
	struct event *tick;
	void (*poll)(void *arg);
	void *poll_arg;
	unsigned rate, burst;
	uint64_t dropped[RSV_DROP__MAX], reported[RSV_DROP__MAX];
	uint64_t shed[RSV_TCP__MAX], shed_reported[RSV_TCP__MAX];
	struct bucket b[BUCKETS];
};

static void key_of(const struct sockaddr_storage *ss, uint8_t key[17])
{
	memset(key, 0, 17);
	key[0] = (uint8_t)ss->ss_family;
	if (ss->ss_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

/* FNV-1a over the key */
static unsigned slot_of(const uint8_t key[17])
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	return h % BUCKETS;
}

bool rsv_fair_admit(struct rsv_fair *f, const struct sockaddr_storage *client, double now)
{
	uint8_t key[17];
	struct bucket *b;

	if (!f || !f->rate)
		return true;
	key_of(client, key);
	b = &f->b[slot_of(key)];
	if (!b->used || memcmp(b->key, key, sizeof(key)) != 0) {
		/* a new client (or one that shares the slot): a full bucket */
		memcpy(b->key, key, sizeof(key));
		b->used = true;
		b->tokens = f->burst;
		b->at = now;
	}
	b->tokens += (now - b->at) * f->rate;
	if (b->tokens > f->burst)
		b->tokens = f->burst;
	b->at = now;
	if (b->tokens >= 1) {
		b->tokens -= 1;
		return true;
	}
	rsv_fair_count(f, RSV_DROP_RATE_LIMITED, 1);
	return false;
}

void rsv_fair_count(struct rsv_fair *f, enum rsv_drop why, uint64_t n)
{
	struct sluice_evseq *q;

	if (!f || (unsigned)why >= RSV_DROP__MAX)
		return;
	f->dropped[why] += n;
	/* `sluice status` and the metrics (evseq.h, loader/dns_dropped.c), as they happen */
	q = f->log ? sluice_evlog_shared(f->log) : NULL;
	if (q)
		sluice_evseq_add(&q->dns_dropped[why], n);
}

uint64_t rsv_fair_dropped(const struct rsv_fair *f, enum rsv_drop why)
{
	return f && (unsigned)why < RSV_DROP__MAX ? f->dropped[why] : 0;
}

void rsv_fair_count_tcp(struct rsv_fair *f, enum rsv_tcp_shed why)
{
	if (f && (unsigned)why < RSV_TCP__MAX)
		f->shed[why]++;
}

uint64_t rsv_fair_tcp(const struct rsv_fair *f, enum rsv_tcp_shed why)
{
	return f && (unsigned)why < RSV_TCP__MAX ? f->shed[why] : 0;
}

/* A metric line of counts per reason: its action, the keys of the sum since
 * the last line and in all, and one key per reason. */
struct count_line {
	const char *action, *since_key, *total_key;
	const char *const *reason_keys;
	int n;
};

static const char *const drop_keys[RSV_DROP__MAX] = {
	[RSV_DROP_RATE_LIMITED] = "sluice.dns_dropped_rate_limited",
	[RSV_DROP_SOCKET_OVERFLOW] = "sluice.dns_dropped_socket_overflow",
	[RSV_DROP_SHUTDOWN] = "sluice.dns_dropped_shutdown",
};
static const struct count_line drops_line = {
	"dns-queries-dropped", "sluice.dns_dropped", "sluice.dns_dropped_total", drop_keys, RSV_DROP__MAX,
};

static const char *const shed_keys[RSV_TCP__MAX] = {
	[RSV_TCP_CLOSED_IDLE] = "sluice.dns_tcp_closed_idle",
	[RSV_TCP_REFUSED_LIMIT] = "sluice.dns_tcp_refused_limit",
	[RSV_TCP_REFUSED_DESCRIPTORS] = "sluice.dns_tcp_refused_descriptors",
};
static const struct count_line shed_line = {
	"dns-tcp-refused", "sluice.dns_tcp_refused", "sluice.dns_tcp_refused_total", shed_keys, RSV_TCP__MAX,
};

/* One line `spec` for the counts[] since reported[], per reason, since and
 * in all; reported[] catches up once the line is written, so a count is
 * never lost with its line. */
static void report_counts(struct rsv_fair *f, const struct count_line *spec, const uint64_t *counts,
			  uint64_t *reported)
{
	uint64_t since = 0, total = 0;
	struct sluice_line *l;

	for (int i = 0; i < spec->n; i++) {
		since += counts[i] - reported[i];
		total += counts[i];
	}
	if (!since)
		return;
	l = sluice_evlog_begin(f->log, SLUICE_DS_RESOLVER, -1);
	SL_STR(l, "sluice.component", "resolver");
	SL_STR(l, "event.kind", "metric");
	SL_STR(l, "event.action", spec->action);
	SL_STR(l, "event.outcome", "failure");
	sluice_line_put_u64(l, spec->since_key, strlen(spec->since_key), since);
	sluice_line_put_u64(l, spec->total_key, strlen(spec->total_key), total);
	for (int i = 0; i < spec->n; i++)
		sluice_line_put_u64(l, spec->reason_keys[i], strlen(spec->reason_keys[i]), counts[i] - reported[i]);
	if (sluice_evlog_commit_retry(f->log) == 0)
		memcpy(reported, counts, sizeof(*counts) * (size_t)spec->n);
}

/* One line for the TCP clients shed since the last one. */
static void report_tcp(struct rsv_fair *f)
{
	report_counts(f, &shed_line, f->shed, f->shed_reported);
}

/* One line for what was dropped since the last one. */
static void report(struct rsv_fair *f)
{
	if (f->poll)
		f->poll(f->poll_arg);
	report_counts(f, &drops_line, f->dropped, f->reported);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	report(arg);
	report_tcp(arg);
}

struct rsv_fair *rsv_fair_new(struct event_base *base, struct sluice_evlog *log, unsigned rate, unsigned burst)
{
	struct rsv_fair *f = calloc(1, sizeof(*f));
	struct timeval tv = { 1, 0 };

	if (!f)
		return NULL;
	f->log = log;
	f->rate = rate;
	f->burst = burst ? burst : 1;
	f->tick = event_new(base, -1, EV_PERSIST, on_tick, f);
	if (!f->tick || event_add(f->tick, &tv) < 0) {
		if (f->tick)
			event_free(f->tick);
		free(f);
		return NULL;
	}
	return f;
}

void rsv_fair_set_poll(struct rsv_fair *f, void (*poll)(void *arg), void *arg)
{
	f->poll = poll;
	f->poll_arg = arg;
}

void rsv_fair_free(struct rsv_fair *f)
{
	if (!f)
		return;
	f->poll = NULL;   /* the server is gone: its last drops were counted as it stopped */
	report(f);
	report_tcp(f);
	event_free(f->tick);
	free(f);
}

_Static_assert(RSV_DROP__MAX <= SLUICE_EVC_DROPS, "evseq.h counts every drop reason");
