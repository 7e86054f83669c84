/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_policy.c - libFuzzer target for the policy parser: load arbitrary
 * bytes as a policy; when they load, lint, serialise and match against the
 * result, and check the invariants every loaded policy must keep.
 *
 *   make build/fuzz/fuzz_policy
 *   build/fuzz/fuzz_policy -max_total_time=120 tests/fuzz/corpus/fuzz_policy
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

static void check_invariants(const struct sluice_policy *p)
{
	if (p->version != 1 || !p->name || strlen(p->digest) != SLUICE_DIGEST_HEX_LEN)
		abort();
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];
		char host[SLUICE_HOST_MAX + 1], path[4096];

		if (!e->name || !e->why || e->index != i || e->n_ports == 0)
			abort();
		for (size_t j = 0; j < e->n_ports; j++)
			if (e->ports[j].lo == 0 || e->ports[j].lo > e->ports[j].hi)
				abort();
		if (e->kind == SLUICE_ENTRY_HOST) {
			/* stored names are fixed points of the normaliser */
			if (sluice_host_normalise(e->host, host, sizeof(host), NULL) != 0 ||
			    strcmp(host, e->host) != 0)
				abort();
			if (!e->wildcard && !sluice_policy_match_host(p, e->host, e->ports[0].lo))
				abort();
		}
		if (e->kind == SLUICE_ENTRY_URL) {
			if (sluice_url_path_normalise(e->url_path, path, sizeof(path), NULL) != 0 ||
			    strcmp(path, e->url_path) != 0)
				abort();
			if (!sluice_policy_match_url(p, e->url_scheme, e->url_host, e->url_port,
						     e->methods[0], e->url_path))
				abort();
		}
	}
}

/* The normalisers see attacker input in the proxy and the resolver: run
 * them on the raw bytes too, and check they are idempotent. */
static void fuzz_normalisers(const uint8_t *data, size_t size)
{
	char in[4097], a[4097], b[4097];
	int family;
	uint8_t addr[16];

	if (size >= sizeof(in))
		return;
	memcpy(in, data, size);
	in[size] = '\0';
	if (sluice_host_normalise(in, a, SLUICE_HOST_MAX + 1, NULL) == 0) {
		if (sluice_host_normalise(a, b, SLUICE_HOST_MAX + 1, NULL) != 0 || strcmp(a, b) != 0)
			abort();
		if (sluice_ip_normalise(a, &family, addr) >= 0)
			abort();
	}
	(void)sluice_ip_normalise(in, &family, addr);
	if (sluice_url_path_normalise(in, a, sizeof(a), NULL) == 0) {
		if (a[0] != '/' || strstr(a, "/../") || strstr(a, "/./"))
			abort();
		if (sluice_url_path_normalise(a, b, sizeof(b), NULL) != 0 || strcmp(a, b) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sluice_policy *p = NULL;
	struct sluice_policy_error err;
	struct sluice_lint *lints = NULL;
	char buf[700], *canon;
	int n;

	fuzz_normalisers(data, size);
	if (sluice_policy_load_buffer("fuzz.yaml", (const char *)data, size, &p, &err) != 0) {
		if (p || !err.message[0])
			abort();
		sluice_policy_error_str(&err, buf, sizeof(buf));
		return 0;
	}
	check_invariants(p);
	canon = sluice_policy_canonical(p, NULL);
	free(canon);
	/* relay list from the source tree (make runs from the top); a
	 * missing list is fine here, the lint then reports -1 */
	n = sluice_policy_lint(p, "policies/relays.txt", &lints);
	if (n > 0 && !lints)
		abort();
	free(lints);
	sluice_policy_allows_name(p, "a.example.com");
	sluice_policy_proxies_port(p, 443);
	sluice_policy_free(p);
	return 0;
}
