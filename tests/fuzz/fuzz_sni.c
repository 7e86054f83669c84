/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_sni.c - libFuzzer target for the TLS ClientHello reader
 * (userspace/proxy/sni.c): arbitrary first bytes of a connection, whole and
 * as every prefix the proxy would see while reading.  Invariants: a prefix
 * of a parse that needed more never "succeeds" differently, SNI_OK reports
 * how many bytes it used, and the name is NUL-terminated without inner NULs.
 *
 *   make build/fuzz/fuzz_sni
 *   build/fuzz/fuzz_sni -max_total_time=120 tests/fuzz/corpus/fuzz_sni
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sni_result r;
	size_t need = 0;
	enum sni_status st = sni_parse(data, size, &r, &need);

	if (st == SNI_OK) {
		if (r.hello_bytes == 0 || r.hello_bytes > size)
			abort();
		if (r.has_sni && (strlen(r.sni) == 0 || strlen(r.sni) > SNI_NAME_MAX))
			abort();
		/* the same bytes with more after them give the same answer */
		if (size < 65536) {
			uint8_t *more = malloc(size + 16);
			struct sni_result r2;

			memcpy(more, data, size);
			memset(more + size, 0x17, 16);
			if (sni_parse(more, size + 16, &r2, NULL) != SNI_OK || r2.has_sni != r.has_sni ||
			    r2.has_ech != r.has_ech || strcmp(r2.sni, r.sni) != 0)
				abort();
			free(more);
		}
	} else if (st == SNI_NEED_MORE) {
		if (need <= size)
			abort();
	}
	/* the proxy parses growing prefixes: each must be safe on its own */
	if (size < 4096)
		for (size_t n = 0; n < size; n += 1 + n / 8)
			(void)sni_parse(data, n, &r, &need);
	return 0;
}
