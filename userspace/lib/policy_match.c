/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_match.c - matching against a loaded policy: ports, host and url
 * entries (with their programs and expiry), inspection, proxied ports,
 * names and DNS query types (policy.h).
 */
#include "policy_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

bool sluice_ports_contain(const struct sluice_port_range *r, size_t n, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (port >= r[i].lo && port <= r[i].hi)
			return true;
	return false;
}

bool sluice_entry_has_port(const struct sluice_entry *e, uint16_t port)
{
	return e && sluice_ports_contain(e->ports, e->n_ports, port);
}

const char *sluice_port_range_str(const struct sluice_port_range *r, char *buf, size_t len)
{
	if (r->lo == r->hi)
		snprintf(buf, len, "%u", r->lo);
	else
		snprintf(buf, len, "%u-%u", r->lo, r->hi);
	return buf;
}

const char *sluice_cidr_str(const struct sluice_entry *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(e->family, e->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, len, "%s/%u", a, e->prefix_len);
	return buf;
}

bool sluice_host_match(const struct sluice_entry *entry, const char *host)
{
	const char *name;
	size_t hl, nl;

	if (!entry || !host || sluice_entry_expired(entry, -1))
		return false;
	if (entry->kind == SLUICE_ENTRY_URL)
		return entry->url_host && strcmp(entry->url_host, host) == 0;
	if (entry->kind != SLUICE_ENTRY_HOST || !entry->host)
		return false;
	name = entry->host;
	if (!entry->wildcard)
		return strcmp(name, host) == 0;
	hl = strlen(host);
	nl = strlen(name);
	/* at least one label in front, joined on a '.' */
	return hl > nl + 1 && host[hl - nl - 1] == '.' && host[0] != '.' &&
	       strcmp(host + hl - nl, name) == 0;
}

const struct sluice_entry *sluice_policy_match_host(const struct sluice_policy *p,
						    const char *host, uint16_t port)
{
	return sluice_policy_match_host_for(p, host, port, NULL);
}

const struct sluice_entry *sluice_policy_match_host_for(const struct sluice_policy *p, const char *host,
							uint16_t port, const struct sluice_exe_id *who)
{
	if (!p || !host)
		return NULL;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->kind == SLUICE_ENTRY_HOST && sluice_entry_has_port(e, port) &&
		    sluice_host_match(e, host) && sluice_entry_allows_program(e, who))
			return e;
	}
	return NULL;
}

const struct sluice_entry *sluice_policy_match_url(const struct sluice_policy *p,
						   const char *scheme, const char *host,
						   uint16_t port, const char *method,
						   const char *path)
{
	return sluice_policy_match_url_for(p, scheme, host, port, method, path, NULL);
}

const struct sluice_entry *sluice_policy_match_url_for(const struct sluice_policy *p, const char *scheme,
						       const char *host, uint16_t port, const char *method,
						       const char *path, const struct sluice_exe_id *who)
{
	if (!p || !scheme || !host || !method || !path)
		return NULL;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];
		bool method_ok = false;

		if (e->kind != SLUICE_ENTRY_URL || e->url_port != port ||
		    strcmp(e->url_scheme, scheme) != 0 || !sluice_host_match(e, host) ||
		    !sluice_entry_allows_program(e, who))
			continue;
		for (size_t j = 0; j < e->n_methods; j++)
			if (strcmp(e->methods[j], method) == 0)
				method_ok = true;
		if (method_ok && sluice_path_prefix_match(e->url_path, path))
			return e;
	}
	return NULL;
}

bool sluice_policy_inspects(const struct sluice_policy *p, const char *host, uint16_t port)
{
	return sluice_policy_inspects_for(p, host, port, NULL);
}

bool sluice_policy_inspects_for(const struct sluice_policy *p, const char *host, uint16_t port,
				const struct sluice_exe_id *who)
{
	if (!p || !host)
		return false;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (!sluice_entry_allows_program(e, who))
			continue;
		if (e->kind == SLUICE_ENTRY_URL && e->url_port == port &&
		    strcmp(e->url_scheme, "https") == 0 && sluice_host_match(e, host))
			return true;
		if (e->kind == SLUICE_ENTRY_HOST && e->inspect && sluice_entry_has_port(e, port) &&
		    sluice_host_match(e, host))
			return true;
	}
	return false;
}

bool sluice_policy_has_inspection(const struct sluice_policy *p)
{
	for (size_t i = 0; p && i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if ((e->kind == SLUICE_ENTRY_URL && strcmp(e->url_scheme, "https") == 0) ||
		    (e->kind == SLUICE_ENTRY_HOST && e->inspect))
			return true;
	}
	return false;
}

bool sluice_policy_proxies_port(const struct sluice_policy *p, uint16_t port)
{
	if (!p)
		return false;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if ((e->kind == SLUICE_ENTRY_HOST || e->kind == SLUICE_ENTRY_URL) &&
		    sluice_entry_has_port(e, port))
			return true;
	}
	return false;
}

const struct sluice_entry *sluice_policy_name_entry(const struct sluice_policy *p, const char *host)
{
	if (!p || !host)
		return NULL;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if ((e->kind == SLUICE_ENTRY_HOST || e->kind == SLUICE_ENTRY_URL) &&
		    sluice_host_match(e, host))
			return e;
	}
	return NULL;
}

bool sluice_policy_allows_name(const struct sluice_policy *p, const char *host)
{
	return sluice_policy_name_entry(p, host) != NULL;
}

bool sluice_policy_allows_qtype(const struct sluice_policy *p, uint16_t qtype)
{
	if (!p)
		return false;
	for (size_t i = 0; i < p->n_dns_qtypes; i++)
		if (p->dns_qtypes[i] == qtype)
			return true;
	return false;
}
