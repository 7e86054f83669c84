/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * suggest/plan.c - `sluice policy suggest`: planning: observations become
 * targets (host, url and cidr entries in the making); --against: what the
 * policy already allows. Rules: docs/policy.md, "Audit mode and suggest"; the
 * parts: suggest/internal.h.
 */
#include "internal.h"

static struct target *target_get(struct suggest *s, const char *key, enum sluice_entry_kind kind, bool *created)
{
	struct hnode *x = sg_hmap_put(&s->targets, key);
	struct target *t = x->val;

	if (created)
		*created = !t;
	if (!t) {
		t = sg_xcalloc(1, sizeof(*t));
		t->kind = kind;
		t->existing = -1;
		x->val = t;
	}
	return t;
}

static void puse_add(struct target *t, uint16_t port, enum via via, unsigned long long n, const char *ip)
{
	for (size_t i = 0; i < t->n_pu; i++)
		if (t->pu[i].port == port && t->pu[i].via == via) {
			t->pu[i].n += n;
			return;
		}
	PUSH(t->pu, t->n_pu, t->cap_pu);
	memset(&t->pu[t->n_pu], 0, sizeof(t->pu[0]));
	t->pu[t->n_pu].port = port;
	t->pu[t->n_pu].via = via;
	t->pu[t->n_pu].n = n;
	if (ip)
		snprintf(t->pu[t->n_pu].ip, sizeof(t->pu[0].ip), "%s", ip);
	t->n_pu++;
}

static bool target_has_port(const struct target *t, uint16_t port)
{
	for (size_t i = 0; i < t->n_pu; i++)
		if (t->pu[i].port == port && t->pu[i].via != VIA_NAME)
			return true;
	return false;
}

/* The exact host entry of --against POLICY for `host`, or -1 (a map built
 * once: policies may hold many entries). */
static int existing_host(struct suggest *s, const char *host)
{
	const struct sluice_policy *p = s->o.against;
	struct hnode *x;

	if (!p)
		return -1;
	if (!s->ag_hosts_built) {
		s->ag_hosts_built = true;
		for (size_t i = 0; i < p->n_entries; i++)
			if (p->entries[i].kind == SLUICE_ENTRY_HOST && !p->entries[i].wildcard) {
				x = sg_hmap_put(&s->ag_hosts, p->entries[i].host);
				if (!x->val)
					x->val = (void *)(uintptr_t)(i + 1);
			}
	}
	x = sg_hmap_node(&s->ag_hosts, host);
	return x ? (int)((uintptr_t)x->val - 1) : -1;
}

static struct target *host_target(struct suggest *s, const char *host)
{
	char *key = sg_xasprintf("h\n%s", host);
	bool created;
	struct target *t = target_get(s, key, SLUICE_ENTRY_HOST, &created);
	struct dname *d;

	free(key);
	if (created) {
		t->host = host;
		t->existing = existing_host(s, host);
		t->sortkey = sg_reversed_labels(host);
		d = sg_hmap_get(&s->dnames, host);
		if (d && d->suspect) {
			t->suspect = true;
			t->suspect_reason = d->suspect_reason;
		}
	}
	d = sg_hmap_get(&s->dnames, host);
	if (d)
		d->used = true;
	return t;
}

/* Does a cidr entry of `p` allow (family, addr, proto, port)? */
bool sg_cidr_allows(const struct sluice_policy *p, int family, const uint8_t *addr, uint8_t proto,
			uint16_t port)
{
	for (size_t i = 0; p && i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		if (e->protocol != proto || !sluice_entry_cidr_contains(e, family, addr))
			continue;
		if (sluice_entry_has_port(e, port))
			return true;
	}
	return false;
}

static const struct sluice_policy *view_for(struct suggest *s, const struct sluice_policy *p, const char *host)
{
	char *key = sg_xasprintf("%p\n%s", (const void *)p, host);
	struct hnode *x = sg_hmap_put(&s->views, key);
	struct view *v = x->val;

	free(key);
	if (!v) {
		v = sg_xcalloc(1, sizeof(*v));
		v->p = *p;
		v->p.entries = NULL;
		v->p.n_entries = 0;
		for (size_t i = 0; i < p->n_entries; i++) {
			const struct sluice_entry *e = &p->entries[i];

			if ((e->kind == SLUICE_ENTRY_HOST || e->kind == SLUICE_ENTRY_URL) && sluice_host_match(e, host)) {
				v->p.entries = sg_xrealloc(v->p.entries, v->p.n_entries + 1, sizeof(*v->p.entries));
				v->p.entries[v->p.n_entries++] = *e;
			}
		}
		x->val = v;
	}
	return &v->p;
}

void sg_free_view(void *x)
{
	struct view *v = x;

	free(v->p.entries);
	free(v);
}

bool sg_pobs_allowed(struct suggest *s, const struct sluice_policy *p, const struct pobs *o)
{
	p = view_for(s, p, o->host);
	if (o->via == VIA_HTTP && sluice_policy_match_url(p, "http", o->host, o->port, o->method, o->path))
		return true;
	return sluice_policy_match_host(p, o->host, o->port) != NULL;
}

bool sg_name_allowed_on(struct suggest *s, const struct sluice_policy *p, const char *name, uint16_t port)
{
	return sluice_policy_match_host(view_for(s, p, name), name, port) != NULL;
}

/* The name an address was most likely reached by: a name of the same run
 * answered before the attempt, else the latest of any run. */
const char *sg_correlate(struct suggest *s, const struct kobs *k, const char **others, size_t *n_others)
{
	struct daddr *da = sg_hmap_get(&s->daddrs, k->ip);
	const struct dres *best = NULL;
	int best_score = -1;

	*n_others = 0;
	if (!da || !da->n)
		return NULL;
	for (size_t i = 0; i < da->n; i++) {
		const struct dres *r = &da->v[i];
		int score = (r->run == k->run ? 2 : 0) + (strcmp(r->first, k->seen.first) <= 0 ? 1 : 0);

		if (score > best_score || (score == best_score && strcmp(r->first, best->first) > 0)) {
			best = r;
			best_score = score;
		}
	}
	if (!best)
		return NULL;
	for (size_t i = 0; i < da->n && *n_others < NAMES_KEPT; i++) {
		bool dup = da->v[i].name == best->name;

		for (size_t j = 0; j < *n_others && !dup; j++)
			dup = others[j] == da->v[i].name;
		if (!dup)
			others[(*n_others)++] = da->v[i].name;
	}
	return best->name;
}

static int cmp_pobs(const void *a, const void *b)
{
	const struct pobs *x = *(const struct pobs *const *)a, *y = *(const struct pobs *const *)b;
	int c = strcmp(x->host, y->host);

	if (c)
		return c;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->via != y->via)
		return x->via < y->via ? -1 : 1;
	c = strcmp(x->path ? x->path : "", y->path ? y->path : "");
	if (c)
		return c;
	return strcmp(x->method ? x->method : "", y->method ? y->method : "");
}

static int cmp_kobs(const void *a, const void *b)
{
	const struct kobs *x = *(const struct kobs *const *)a, *y = *(const struct kobs *const *)b;
	int c;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	c = memcmp(x->addr, y->addr, 16);
	if (c)
		return c;
	if (x->proto != y->proto)
		return x->proto < y->proto ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return strcmp(x->run ? x->run : "", y->run ? y->run : "");
}

/* Plain-HTTP observations of one host:port [i, j) of the sorted array. */
static void plan_http_group(struct suggest *s, struct pobs **v, size_t i, size_t j)
{
	const struct sluice_policy *ag = s->o.against;
	const char *host = v[i]->host;
	uint16_t port = v[i]->port;
	struct target *ht;
	bool unknown_method = false;
	char *key;
	size_t n_groups = 0;
	char **groups = NULL;
	bool root = false;

	key = sg_xasprintf("h\n%s", host);
	ht = sg_hmap_get(&s->targets, key);
	free(key);
	for (size_t k = i; k < j; k++)
		unknown_method |= sg_method_index(v[k]->method) < 0;
	/* a host entry on this port (TLS, CONNECT) already allows every path */
	if ((ht && target_has_port(ht, port)) || unknown_method) {
		ht = host_target(s, host);
		for (size_t k = i; k < j; k++) {
			puse_add(ht, port, VIA_HTTP, v[k]->seen.n, NULL);
			sg_seen_merge(&ht->seen, &v[k]->seen);
			ht->denied += v[k]->denied;
		}
		return;
	}
	/* --against: an entry of the policy covering the path lacks the method */
	if (ag) {
		size_t keep = i;

		for (size_t k = i; k < j; k++) {
			int found = -1;

			for (size_t e = 0; e < ag->n_entries && found < 0; e++) {
				const struct sluice_entry *x = &ag->entries[e];

				if (x->kind == SLUICE_ENTRY_URL && strcmp(x->url_scheme, "http") == 0 &&
				    x->url_port == port && strcmp(x->url_host, host) == 0 &&
				    sluice_path_prefix_match(x->url_path, v[k]->path))
					found = (int)e;
			}
			if (found >= 0) {
				struct target *t;

				key = sg_xasprintf("e\n%d", found);
				t = target_get(s, key, SLUICE_ENTRY_URL, NULL);
				free(key);
				t->existing = found;
				t->host = host;
				t->url_port = port;
				if (!t->prefix)
					t->prefix = sg_xstrdup(ag->entries[found].url_path);
				t->methods |= 1u << sg_method_index(v[k]->method);
				t->n_paths++;
				sg_seen_merge(&t->seen, &v[k]->seen);
				t->denied += v[k]->denied;
				if (!t->sortkey)
					t->sortkey = sg_xasprintf("%08d", found);
			} else {
				v[keep++] = v[k];
			}
		}
		j = keep;
		if (j == i)
			return;
	}
	/* group by first path segment; "/" itself, or too many groups: one "/" entry */
	for (size_t k = i; k < j; k++) {
		char *g = sg_first_segment(v[k]->path);
		bool have = false;

		root |= strcmp(v[k]->path, "/") == 0;
		for (size_t x = 0; x < n_groups && !have; x++)
			have = strcmp(groups[x], g) == 0;
		if (!have) {
			groups = sg_xrealloc(groups, n_groups + 1, sizeof(*groups));
			groups[n_groups++] = g;
		} else {
			free(g);
		}
	}
	if (root || n_groups > URL_GROUPS_MAX) {
		for (size_t x = 0; x < n_groups; x++)
			free(groups[x]);
		n_groups = 0;
	}
	for (size_t k = i; k < j; k++) {
		char *g = n_groups ? sg_first_segment(v[k]->path) : sg_xstrdup("");
		struct target *t;
		char *rl;

		key = sg_xasprintf("u\n%s\n%u\n%s", host, port, g);
		t = target_get(s, key, SLUICE_ENTRY_URL, NULL);
		free(key);
		free(g);
		if (!t->host) {
			t->host = host;
			t->url_port = port;
			t->prefix = sg_xstrdup(n_groups ? v[k]->path : "/");
			rl = sg_reversed_labels(host);
			t->sortkey = sg_xasprintf("%s %05u %s", rl, port, t->prefix);
			free(rl);
		} else if (!sluice_path_prefix_match(t->prefix, v[k]->path)) {
			char *c = sg_common_prefix(t->prefix, v[k]->path);

			free(t->prefix);
			t->prefix = c;
		}
		t->methods |= 1u << sg_method_index(v[k]->method);
		t->n_paths++;
		sg_seen_merge(&t->seen, &v[k]->seen);
		t->denied += v[k]->denied;
		host_target(s, host)->named_by_url = true;   /* marks the name used; no entry by itself */
	}
	for (size_t x = 0; x < n_groups; x++)
		free(groups[x]);
	free(groups);
}

/* Add the interned `names` t does not have yet, up to NAMES_KEPT. */
static void add_names(struct target *t, const char *const *names, size_t n)
{
	for (size_t o = 0; o < n; o++) {
		bool dup = false;

		for (size_t x = 0; x < t->n_names; x++)
			dup |= t->names[x] == names[o];
		if (!dup && t->n_names < NAMES_KEPT)
			t->names[t->n_names++] = names[o];
	}
}

/* A new cidr target for k's address and protocol; --against: the /32 or
 * /128 entry of the policy it widens. */
static void cidr_target_init(struct suggest *s, struct target *t, const struct kobs *k)
{
	const struct sluice_policy *ag = s->o.against;

	t->family = k->family;
	memcpy(t->addr, k->addr, 16);
	memcpy(t->ip, k->ip, sizeof(t->ip));
	t->proto = k->proto;
	t->sortkey = sg_xasprintf("%d %02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x %u",
			       k->family == AF_INET ? 4 : 6, k->addr[0], k->addr[1], k->addr[2],
			       k->addr[3], k->addr[4], k->addr[5], k->addr[6], k->addr[7],
			       k->addr[8], k->addr[9], k->addr[10], k->addr[11], k->addr[12],
			       k->addr[13], k->addr[14], k->addr[15], k->proto);
	for (size_t e = 0; ag && e < ag->n_entries; e++) {
		const struct sluice_entry *x = &ag->entries[e];

		if (x->kind == SLUICE_ENTRY_CIDR && x->family == k->family && x->protocol == k->proto &&
		    x->prefix_len == (k->family == AF_INET ? 32 : 128) &&
		    memcmp(x->addr, k->addr, k->family == AF_INET ? 4 : 16) == 0)
			t->existing = (int)e;
	}
}

/* Names reached directly whose host entry must let them resolve (step 4 of plan). */
struct need {
	const char **name;
	uint16_t *port;
	size_t n;
};

/* Step 2 of plan, for one kernel observation: direct TCP on a web port to
 * an address a name resolved to becomes a host entry (the proxy will check
 * the name); the rest cidr entries, whose names go to `nd`. */
static void plan_direct(struct suggest *s, const struct kobs *k, struct need *nd)
{
	const struct sluice_policy *ag = s->o.against;
	const char *others[NAMES_KEPT], *name;
	size_t n_others;
	struct target *t;
	char *key;

	s->n_attempts += k->seen.n;
	name = sg_correlate(s, k, others, &n_others);
	if (ag && (sg_cidr_allows(ag, k->family, k->addr, k->proto, k->port) ||
		   (name && k->proto == IPPROTO_TCP && sg_name_allowed_on(s, ag, name, k->port)))) {
		s->n_allowed_already += k->seen.n;
		return;
	}
	if (name && k->proto == IPPROTO_TCP && sg_is_web_port(k->port)) {
		t = host_target(s, name);
		puse_add(t, k->port, VIA_DIRECT, k->seen.n, k->ip);
		sg_seen_merge(&t->seen, &k->seen);
		t->denied += k->denied;
		/* other names the address was given for: the reviewer decides */
		add_names(t, others, n_others);
		return;
	}
	key = sg_xasprintf("c\n%s\n%u", k->ip, k->proto);
	t = target_get(s, key, SLUICE_ENTRY_CIDR, NULL);
	free(key);
	if (!t->ip[0])
		cidr_target_init(s, t, k);
	puse_add(t, k->port, k->proto == IPPROTO_TCP ? VIA_CIDR_TCP : VIA_CIDR_UDP, k->seen.n, NULL);
	sg_seen_merge(&t->seen, &k->seen);
	t->denied += k->denied;
	if (name) {
		const char *all[NAMES_KEPT + 1];
		size_t n_all = 0;
		struct dname *d;

		all[n_all++] = name;
		for (size_t o = 0; o < n_others; o++)
			all[n_all++] = others[o];
		add_names(t, all, n_all);
		/* the name must still resolve: see step 4 */
		nd->name = sg_xrealloc(nd->name, nd->n + 1, sizeof(*nd->name));
		nd->port = sg_xrealloc(nd->port, nd->n + 1, sizeof(*nd->port));
		nd->name[nd->n] = name;
		nd->port[nd->n++] = k->port;
		d = sg_hmap_get(&s->dnames, name);
		if (d)
			d->used = true;
	}
}

void sg_plan(struct suggest *s)
{
	const struct sluice_policy *ag = s->o.against;
	struct pobs **pv;
	struct kobs **kv;
	size_t np, nk;
	struct need nd = { 0 };

	pv = (struct pobs **)sg_hmap_values(&s->pobs, &np);
	kv = (struct kobs **)sg_hmap_values(&s->kobs, &nk);
	qsort(pv, np, sizeof(*pv), cmp_pobs);
	qsort(kv, nk, sizeof(*kv), cmp_kobs);

	/* 1. names through the proxy: TLS and CONNECT make host entries */
	for (size_t i = 0; i < np; i++) {
		struct target *t;

		s->n_attempts += pv[i]->seen.n;
		if (ag && sg_pobs_allowed(s, ag, pv[i])) {
			s->n_allowed_already += pv[i]->seen.n;
			pv[i] = NULL;
			continue;
		}
		if (pv[i]->via == VIA_HTTP)
			continue;
		t = host_target(s, pv[i]->host);
		puse_add(t, pv[i]->port, pv[i]->via, pv[i]->seen.n, NULL);
		sg_seen_merge(&t->seen, &pv[i]->seen);
		t->denied += pv[i]->denied;
		pv[i] = NULL;
	}
	/* 2. direct traffic: host entries on web ports, else cidr entries */
	for (size_t i = 0; i < nk; i++)
		plan_direct(s, kv[i], &nd);
	/* 3. plain HTTP: url entries (after the host entries they may fall under) */
	{
		size_t w = 0;

		for (size_t i = 0; i < np; i++)
			if (pv[i])
				pv[w++] = pv[i];
		np = w;
	}
	for (size_t i = 0; i < np;) {
		size_t j = i + 1;

		while (j < np && pv[j]->host == pv[i]->host && pv[j]->port == pv[i]->port)
			j++;
		plan_http_group(s, pv, i, j);
		i = j;
	}
	/* 4. names reached directly that no entry lets resolve yet */
	for (size_t i = 0; i < nd.n; i++) {
		char *key = sg_xasprintf("h\n%s", nd.name[i]);
		struct target *t = sg_hmap_get(&s->targets, key);
		bool resolves = false;

		free(key);
		if (ag && sluice_policy_allows_name(ag, nd.name[i]))
			continue;
		for (size_t u = 0; t && u < t->n_pu; u++)
			resolves |= t->pu[u].via != VIA_NAME;
		if (resolves || (t && t->named_by_url))
			continue;
		t = host_target(s, nd.name[i]);
		puse_add(t, nd.port[i], VIA_NAME, 0, NULL);
	}
	free(nd.name);
	free(nd.port);
	free(pv);
	free(kv);
}
