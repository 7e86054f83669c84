/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_sandbox.c - one sandbox of `sluice daemon`: its record, its lines,
 * its state files (NAME.json with the loss accounting, the policy copy, the
 * secret sources) and its teardown (daemon_internal.h).
 */
#include "daemon_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "daemon_events.h"
#include "log.h"
#include "owner.h"
#include "gc.h"
#include "sandbox_ca.h"

void daemon_emit(struct dsandbox *s, const char *action, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sluice_lifecycle_write(s && s->log_ready ? &s->log : &D.log, action, msg);
	log_info("%s", msg);
}

/* A lifecycle line that names who signed s's policy (attach, reload, adopt). */
void daemon_emit_signed(struct dsandbox *s, const char *action, const char *fmt, ...)
{
	struct sluice_evlog *w = s->log_ready ? &s->log : &D.log;
	struct sluice_line *l;
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l = sluice_evlog_begin(w, SLUICE_DS_LIFECYCLE, -1);
	SL_STR(l, "event.kind", "state");
	SL_STR(l, "event.action", action);
	SL_STR(l, "message", msg);
	sluice_signer_fields(l, &s->signer);
	sluice_evlog_commit(w);
	log_info("%s", msg);
}

struct dsandbox *daemon_find(const char *name)
{
	for (struct dsandbox *s = D.sandboxes; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

void daemon_state_path(char *buf, size_t len, const char *name, const char *ext)
{
	snprintf(buf, len, "%s/sandboxes/%s.%s", D.state_dir, name, ext);
}

/* The loss counts to carry across a daemon restart, into v (to notice change). */
void accounting_now(const struct dsandbox *s, uint64_t v[ACCT_N])
{
	v[0] = s->consumer.lost_reported;
	v[1] = s->consumer.write_lost;
	for (int ds = 0; ds < SLUICE_DS__MAX; ds++) {
		v[2 + ds] = s->log_ready ? s->log.lost[ds] : 0;
		v[2 + SLUICE_DS__MAX + ds] = s->log_ready ? s->log.lost_outage[ds] : 0;
	}
}

/* The loss accounting of s as JSON (NAME.json "accounting"): the ring-buffer
 * losses already reported in events_lost lines, the denial lines and every
 * line the writer lost, and those not yet reported (with the errno). */
json_object *accounting_json(const struct dsandbox *s)
{
	json_object *a = json_object_new_object(), *lost = json_object_new_array(), *outage = json_object_new_array();

	json_object_object_add(a, "events_lost_reported", json_object_new_uint64(s->consumer.lost_reported));
	json_object_object_add(a, "kernel_lines_lost", json_object_new_uint64(s->consumer.write_lost));
	for (int ds = 0; ds < SLUICE_DS__MAX; ds++) {
		json_object_array_add(lost, json_object_new_uint64(s->log_ready ? s->log.lost[ds] : 0));
		json_object_array_add(outage, json_object_new_uint64(s->log_ready ? s->log.lost_outage[ds] : 0));
	}
	json_object_object_add(a, "lines_lost", lost);
	json_object_object_add(a, "lines_lost_unreported", outage);
	json_object_object_add(a, "outage_errno", json_object_new_int(s->log_ready ? s->log.err : 0));
	return a;
}

/* Take the accounting a previous daemon wrote (accounting_json) into s's
 * consumer and writer, so that a restart neither reports a loss twice nor
 * forgets one. */
void accounting_restore(struct dsandbox *s, json_object *st)
{
	json_object *a, *v, *lost, *outage;
	uint64_t l[SLUICE_DS__MAX] = { 0 }, o[SLUICE_DS__MAX] = { 0 };
	int err = 0;

	if (!st || !json_object_object_get_ex(st, "accounting", &a))
		return;
	if (json_object_object_get_ex(a, "events_lost_reported", &v))
		s->consumer.lost_reported = json_object_get_uint64(v);
	if (json_object_object_get_ex(a, "kernel_lines_lost", &v))
		s->consumer.write_lost = json_object_get_uint64(v);
	if (json_object_object_get_ex(a, "outage_errno", &v))
		err = json_object_get_int(v);
	if (json_object_object_get_ex(a, "lines_lost", &lost) && json_object_object_get_ex(a, "lines_lost_unreported", &outage))
		for (size_t ds = 0; ds < SLUICE_DS__MAX; ds++) {
			l[ds] = json_object_get_uint64(json_object_array_get_idx(lost, ds));
			o[ds] = json_object_get_uint64(json_object_array_get_idx(outage, ds));
		}
	sluice_evlog_restore_lost(&s->log, l, o, err);
	accounting_now(s, s->saved_acct);
}

/* Where s's secrets are (`--secret` NAME=/path each, never their content). */
json_object *secret_sources_json(const struct dsandbox *s)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < s->n_secret_src; i++) {
		char b[PATH_MAX + 80];

		snprintf(b, sizeof(b), "%s=%s", s->secret_src[i].name, s->secret_src[i].file);
		json_object_array_add(a, json_object_new_string(b));
	}
	return a;
}

/* NAME.json: what the sandbox is (cgroup, mode) and its loss accounting,
 * written atomically.  owner: also record the daemon as its owner. */
int write_state(struct dsandbox *s, bool owner)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	json_object *o = json_object_new_object();
	FILE *f;

	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "cgroup", json_object_new_string(s->cgroup));
	json_object_object_add(o, "mode", json_object_new_string(s->mode));
	if (s->n_secret_src)
		json_object_object_add(o, "secret_sources", secret_sources_json(s));
	if (s->container_id[0])
		json_object_object_add(o, "container_id", json_object_new_string(s->container_id));
	if (s->container_name[0])
		json_object_object_add(o, "container_name", json_object_new_string(s->container_name));
	if (s->runtime[0])
		json_object_object_add(o, "runtime", json_object_new_string(s->runtime));
	if (s->upstream[0])
		json_object_object_add(o, "upstream_netns", json_object_new_string(s->upstream));
	if (s->labels.n)
		json_object_object_add(o, "labels", daemon_labels_to_json(&s->labels));
	json_object_object_add(o, "accounting", accounting_json(s));
	daemon_state_path(path, sizeof(path), s->name, "json");
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f) {
		json_object_put(o);
		return -errno;
	}
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	accounting_now(s, s->saved_acct);
	/* `sluice gc` leaves a sandbox of a running daemon alone */
	return owner ? sluice_owner_write(s->name, "daemon") : 0;
}

/* Drain s's ring buffer, then keep its loss accounting on disk if it moved
 * (a kill -9 right after loses at most the window between the line and this). */
void daemon_drain(struct dsandbox *s)
{
	uint64_t now[ACCT_N];

	if (!s->consumer_ok)
		return;
	sluice_consumer_drain(&s->consumer);
	accounting_now(s, now);
	if (memcmp(now, s->saved_acct, sizeof(now)) == 0)
		return;
	if (write_state(s, false) < 0) {
		if (!s->acct_warned)
			log_warn("sandbox %s: cannot keep its loss accounting in %s/sandboxes (a restart may report losses again)",
				 s->name, D.state_dir);
		s->acct_warned = true;
	} else {
		s->acct_warned = false;
	}
}

/* Write `len` bytes to `dst` atomically (the policy in force and its
 * signature: the bytes that were parsed and verified, not the file again). */
int write_bytes(const char *dst, const char *buf, size_t len)
{
	char tmp[PATH_MAX + 8];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if ((len && sluice_write_all(fd, buf, len) < 0) || close(fd) < 0) {
		int e = errno;

		unlink(tmp);
		return -e;
	}
	if (rename(tmp, dst) < 0)
		return -errno;
	return 0;
}

void free_secret_args(struct dsandbox *s)
{
	for (size_t i = 0; i < s->n_secret_src; i++)
		free(s->secret_arg[i]);
	s->n_secret_src = 0;
}

/* s's --secret sources from a JSON array of "NAME=/path" (NULL: none).
 * 0, or -1 with msg. */
int set_secret_args(struct dsandbox *s, json_object *arr, char *msg, size_t msglen)
{
	size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;

	free_secret_args(s);
	if (n > SLUICE_SECRET_ARGS_MAX) {
		snprintf(msg, msglen, "at most %d --secret", SLUICE_SECRET_ARGS_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(arr, i));

		s->secret_arg[i] = a ? strdup(a) : NULL;
		s->n_secret_src = i + 1;
		if (!s->secret_arg[i] || sluice_secret_source_parse(s->secret_arg[i], &s->secret_src[i]) < 0) {
			snprintf(msg, msglen, "--secret wants NAME=/absolute/path");
			return -1;
		}
	}
	return 0;
}

/* The secrets of policy p for s: from what its client sent (c, sent),
 * else read from s's sources (the admin's policy, a re-adoption);
 * placeholders kept from s's current ones.  0 with *out, or -1 with msg
 * (file:line, the path). */
int load_secrets(const struct dsandbox *s, const struct daemon_content *c, const struct sluice_policy *p,
			struct sluice_secrets *out, char *msg, size_t msglen)
{
	struct sluice_policy_error perr;

	if (c && c->sent) {
		if (daemon_content_secrets(c, p, getenv("CREDENTIALS_DIRECTORY"), out, msg, msglen) < 0)
			return -1;
	} else if (sluice_secrets_load(p, s->secret_src, s->n_secret_src, getenv("CREDENTIALS_DIRECTORY"), out,
				       &perr) < 0) {
		sluice_policy_error_str(&perr, msg, msglen);
		return -1;
	}
	if (sluice_secrets_placeholders(out, &s->secrets) < 0) {
		sluice_secrets_clear(out);
		snprintf(msg, msglen, "no random bytes for the credentials' placeholders");
		return -1;
	}
	/* the daemon holds secrets from now on: no core dump of it */
	if (out->n && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		sluice_secrets_clear(out);
		snprintf(msg, msglen, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Keep the policy's content as s's: its bytes (and, signed, its
 * signature) as the state copy, the sealed memfd its children read, the
 * policy's upstream CA text (taken from c, kept beside).  0 or -errno. */
int keep_policy(struct dsandbox *s, struct daemon_content *c)
{
	char path[PATH_MAX + 8];
	int err, fd = sluice_policy_memfd(c->bytes, c->n_bytes);

	/* the children's copy first: the policy in force from here on */
	if (fd < 0)
		return fd;
	if (s->policy_fd >= 0)
		close(s->policy_fd);
	s->policy_fd = fd;
	free(s->upstream_ca);
	s->upstream_ca = c->upstream_ca;
	s->n_upstream_ca = c->n_upstream_ca;
	c->upstream_ca = NULL;
	c->n_upstream_ca = 0;
	err = write_bytes(s->policy_path, c->bytes, c->n_bytes);
	if (err)
		return err;
	sluice_policy_sig_path(s->policy_path, path, sizeof(path));
	if (c->sig)
		err = write_bytes(path, c->sig, c->n_sig);
	else
		unlink(path);
	if (err)
		return err;
	daemon_state_path(path, sizeof(path), s->name, "upstream-ca.pem");
	if (s->upstream_ca)
		return write_bytes(path, s->upstream_ca, s->n_upstream_ca);
	unlink(path);
	return 0;
}

/* A sandbox record with nothing open yet. */
struct dsandbox *new_sandbox(const char *name)
{
	struct dsandbox *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->l.proxy4 = s->l.proxy6 = s->l.dns_udp4 = s->l.dns_udp6 = s->l.dns_tcp4 = s->l.dns_tcp6 = -1;
	s->policy_fd = -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	daemon_state_path(s->policy_path, sizeof(s->policy_path), name, "yaml");
	return s;
}

struct sluice_event_ring *daemon_ring(int *err)
{
	struct sluice_event_ring *r;

	if (D.ring)
		return D.ring;
	r = calloc(1, sizeof(*r));
	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = sluice_event_ring_new(r, D.ring_bytes);
	if (*err) {
		free(r);
		return NULL;
	}
	D.ring = r;
	return r;
}

/* The adopted ring whose ring map is `events_fd`'s, opened (and owning
 * both fds) if none is yet; NULL with -errno in *err (the fds closed). */
static struct sluice_event_ring *adopted_ring(int events_fd, int budget_fd, int *err)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);
	struct sluice_event_ring *r;

	if (bpf_obj_get_info_by_fd(events_fd, &info, &len) < 0) {
		*err = -errno;
		close(events_fd);
		close(budget_fd);
		return NULL;
	}
	for (r = D.adopted_rings; r; r = r->next)
		if (r->events_id == info.id) {
			close(events_fd);
			close(budget_fd);
			return r;
		}
	r = calloc(1, sizeof(*r));
	if (!r) {
		*err = -ENOMEM;
		close(events_fd);
		close(budget_fd);
		return NULL;
	}
	/* shared: its sandboxes keep their shares of it under this daemon */
	*err = sluice_event_ring_open(r, events_fd, budget_fd, true);
	if (*err) {
		free(r);
		return NULL;
	}
	r->next = D.adopted_rings;
	D.adopted_rings = r;
	return r;
}

int daemon_consume(struct dsandbox *s, struct sluice_event_ring *r, char *msg, size_t msglen)
{
	int err = 0, ev, bud;

	if (!r) {
		err = sandbox_ring_open(&s->sb, &ev, &bud, msg, msglen);
		if (err)
			return err;
		r = adopted_ring(ev, bud, &err);
		if (!r) {
			snprintf(msg, msglen, "cannot read its ring buffer: %s", strerror(-err));
			return err;
		}
	}
	err = sluice_consumer_init(&s->consumer, r, s->sb.cfg.ring_slot, &s->sb, &s->meta, &s->log);
	if (err) {
		snprintf(msg, msglen, "cannot read its ring buffer (slot %u): %s", s->sb.cfg.ring_slot, strerror(-err));
		return err;
	}
	s->ring = r;
	s->consumer_ok = true;
	return 0;
}

uint64_t daemon_events_orphaned(void)
{
	uint64_t n = D.ring ? D.ring->orphans : 0;

	for (struct sluice_event_ring *r = D.adopted_rings; r; r = r->next)
		n += r->orphans;
	return n;
}

/* s reads no more events; an adopted ring that no sandbox reads any
 * more is closed (what is left in it is of sandboxes gone). */
static void consume_stop(struct dsandbox *s)
{
	struct sluice_event_ring **p;

	if (!s->consumer_ok)
		return;
	sluice_consumer_free(&s->consumer);
	s->consumer_ok = false;
	for (p = &D.adopted_rings; *p; p = &(*p)->next)
		if (*p == s->ring && !s->ring->consumers) {
			*p = s->ring->next;
			sluice_event_ring_close(s->ring);
			free(s->ring);
			break;
		}
	s->ring = NULL;
}

void free_sandbox(struct dsandbox *s)
{
	sluice_secrets_clear(&s->secrets);
	free_secret_args(s);
	consume_stop(s);
	sluice_listeners_close(&s->l);
	sluice_expiry_watch_free(&s->expiry);
	if (s->policy)
		sluice_policy_free(s->policy);
	sluice_ca_pem_free(s->ca);
	free(s->ca_permitted);
	free(s->upstream_ca);
	if (s->policy_fd >= 0)
		close(s->policy_fd);
	if (s->log_ready)
		sluice_evlog_release_seq(&s->log);
	free(s);
}

void daemon_teardown(struct dsandbox *s, bool keep_state)
{
	char path[PATH_MAX];

	if (s->consumer_ok)
		sluice_consumer_drain(&s->consumer);
	stop_children(s);
	sandbox_destroy(&s->sb);
	if (!keep_state) {
		sluice_owner_remove(s->name);
		for (size_t i = 0; sluice_state_exts[i]; i++) {
			daemon_state_path(path, sizeof(path), s->name, sluice_state_exts[i]);
			unlink(path);
		}
		if (s->netns[0]) {
			umount2(s->netns, MNT_DETACH);
			unlink(s->netns);
			fdstore_forget(s->name);
		}
		if (s->upstream[0] && strcmp(s->upstream, "host") != 0) {
			umount2(s->upstream, MNT_DETACH);
			unlink(s->upstream);
			snprintf(path, sizeof(path), "%s.upstream", s->name);
			fdstore_forget(path);
		}
	}
}

void unlink_sandbox(struct dsandbox *s)
{
	for (struct dsandbox **pp = &D.sandboxes; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			return;
		}
	}
}

void init_meta(struct dsandbox *s)
{
	struct sluice_envelope env;

	s->meta.sandbox = s->name;
	s->meta.policy_name = s->policy->name;
	s->meta.policy_digest = s->policy->digest;
	s->meta.mode = s->mode;
	s->meta.container_id = s->container_id[0] ? s->container_id : NULL;
	s->meta.container_name = s->container_name[0] ? s->container_name : NULL;
	s->meta.container_runtime = s->runtime[0] ? s->runtime : NULL;
	s->meta.labels = &s->labels;
	s->meta.boot_to_real_ns = sluice_boot_to_real_ns();
	/* a new policy, new expiries (a failed allocation: no lines, the
	 * kernel, proxy and resolver still stop at the time) */
	sluice_expiry_watch_free(&s->expiry);
	if (sluice_expiry_watch_init(&s->expiry, s->policy) < 0)
		log_warnx("sandbox %s: out of memory: its entry-expired lines are not written", s->name);
	sluice_envelope_of(&s->meta, &env);
	if (!s->log_ready) {
		char seq[PATH_MAX];

		sluice_evlog_init(&s->log, D.events, D.events_path, "sluice", &env);
		daemon_state_path(seq, sizeof(seq), s->name, "seq");
		daemon_seq_share(&s->log, seq, s->name);
	} else
		sluice_evlog_set_envelope(&s->log, &env);  /* a reload: loss counts carry on */
	s->log_ready = true;
}
