/* SPDX-License-Identifier: BSD-2-Clause */
#include "version.h"

#include <bpf/libbpf.h>

void sluice_version_print(FILE *f, const char *prog)
{
	fprintf(f, "%s v%s\nusing libbpf %s\n", prog, SLUICE_VERSION, libbpf_version_string());
}
