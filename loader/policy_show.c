/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_show.c - the text and JSON forms of a policy's entries and
 * errors, shared by `sluice policy check` (cmd_policy.c) and `diff`
 * (cmd_policy_diff.c).
 */
#include "policy_show.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *pol_proto_str(const struct sluice_entry *e)
{
	return e->protocol == IPPROTO_UDP ? "udp" : "tcp";
}

void pol_ports_str(const struct sluice_entry *e, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < e->n_ports && o + 1 < len; i++) {
		int n;

		if (e->ports[i].lo == e->ports[i].hi)
			n = snprintf(buf + o, len - o, "%s%u", i ? "," : "", e->ports[i].lo);
		else
			n = snprintf(buf + o, len - o, "%s%u-%u", i ? "," : "", e->ports[i].lo,
				     e->ports[i].hi);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
}

void pol_methods_str(const struct sluice_entry *e, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < e->n_methods; i++) {
		if (i)
			strncat(buf, ",", len - strlen(buf) - 1);
		strncat(buf, e->methods[i], len - strlen(buf) - 1);
	}
}

/* How the entry's traffic leaves: "direct" (cidr, the kernel alone),
 * "unix" (a unix socket, the kernel alone), "inspect" (TLS terminated,
 * each request decided and logged: https:// url entries and `inspect:
 * true` host entries) or "proxy". */
const char *pol_via_str(const struct sluice_entry *e)
{
	if (e->kind == SLUICE_ENTRY_CIDR)
		return "direct";
	if (e->kind == SLUICE_ENTRY_UNIX)
		return "unix";
	if ((e->kind == SLUICE_ENTRY_HOST && e->inspect) ||
	    (e->kind == SLUICE_ENTRY_URL && strcmp(e->url_scheme, "https") == 0))
		return "inspect";
	return "proxy";
}

/* What the entry allows, without the "allow[N] kind:" prefix. */
const char *pol_target_str(const struct sluice_entry *e)
{
	const char *colon = strchr(e->name, ':');

	return colon ? colon + 1 : e->name;
}

void pol_print_json(json_object *o)
{
	sluice_cli_json_print(o);
}

/* The programs of `e` as "a, b" into buf. */
const char *pol_programs_str(const struct sluice_entry *e, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < e->n_programs && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", e->programs[i].path);
	return buf;
}

json_object *pol_ports_json(const struct sluice_entry *e)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < e->n_ports; i++) {
		json_object *r = json_object_new_object();

		json_object_object_add(r, "lo", json_object_new_int(e->ports[i].lo));
		json_object_object_add(r, "hi", json_object_new_int(e->ports[i].hi));
		json_object_array_add(a, r);
	}
	return a;
}

json_object *pol_entry_json(const struct sluice_entry *e)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "index", json_object_new_int((int)e->index));
	json_object_object_add(o, "rule", jstr(e->name));
	json_object_object_add(o, "kind", jstr(sluice_entry_kind_name(e->kind)));
	json_object_object_add(o, "line", json_object_new_int((int)e->line));
	json_object_object_add(o, "column", json_object_new_int((int)e->column));
	json_object_object_add(o, "target", jstr(pol_target_str(e)));
	switch (e->kind) {
	case SLUICE_ENTRY_HOST:
		json_object_object_add(o, "host", jstr(e->host));
		json_object_object_add(o, "wildcard", json_object_new_boolean(e->wildcard));
		break;
	case SLUICE_ENTRY_URL: {
		json_object *m = json_object_new_array();

		json_object_object_add(o, "scheme", jstr(e->url_scheme));
		json_object_object_add(o, "host", jstr(e->url_host));
		json_object_object_add(o, "port", json_object_new_int(e->url_port));
		json_object_object_add(o, "path", jstr(e->url_path));
		for (size_t i = 0; i < e->n_methods; i++)
			json_object_array_add(m, jstr(e->methods[i]));
		json_object_object_add(o, "methods", m);
		if (e->credential)
			json_object_object_add(o, "credential", jstr(e->credential));
		json_object_object_add(o, "websocket", json_object_new_boolean(e->websocket));
		break;
	}
	case SLUICE_ENTRY_CIDR:
		json_object_object_add(o, "family", json_object_new_int(e->family == AF_INET6 ? 6 : 4));
		json_object_object_add(o, "prefix_len", json_object_new_int(e->prefix_len));
		break;
	case SLUICE_ENTRY_UNIX:
		json_object_object_add(o, "path", jstr(e->unix_path));
		json_object_object_add(o, "abstract", json_object_new_boolean(e->unix_abstract));
		json_object_object_add(o, "prefix", json_object_new_boolean(e->unix_prefix));
		break;
	}
	if (e->kind != SLUICE_ENTRY_UNIX) {
		json_object_object_add(o, "ports", pol_ports_json(e));
		json_object_object_add(o, "protocol", jstr(pol_proto_str(e)));
	}
	if (e->expires) {
		char t[32];

		json_object_object_add(o, "expires", jstr(sluice_rfc3339_str(e->expires, t, sizeof(t))));
	}
	if (e->owner)
		json_object_object_add(o, "owner", jstr(e->owner));
	if (e->ticket)
		json_object_object_add(o, "ticket", jstr(e->ticket));
	if (e->n_programs) {
		json_object *pr = json_object_new_array();

		for (size_t i = 0; i < e->n_programs; i++)
			json_object_array_add(pr, jstr(e->programs[i].path));
		json_object_object_add(o, "programs", pr);
	}
	json_object_object_add(o, "via", jstr(pol_via_str(e)));
	json_object_object_add(o, "inspect", json_object_new_boolean(strcmp(pol_via_str(e), "inspect") == 0));
	json_object_object_add(o, "why", jstr(e->why));
	return o;
}

json_object *pol_error_json(const struct sluice_policy_error *err)
{
	json_object *o = json_object_new_object();
	char buf[700];

	json_object_object_add(o, "file", jstr(err->file));
	json_object_object_add(o, "line", json_object_new_int((int)err->line));
	json_object_object_add(o, "column", json_object_new_int((int)err->column));
	json_object_object_add(o, "message", jstr(err->message));
	json_object_object_add(o, "text", jstr(sluice_policy_error_str(err, buf, sizeof(buf))));
	return o;
}

void pol_print_error(const struct sluice_policy_error *err)
{
	char buf[700];

	fprintf(stderr, "%s\n", sluice_policy_error_str(err, buf, sizeof(buf)));
}
