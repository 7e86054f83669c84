/* SPDX-License-Identifier: BSD-2-Clause */
/* policy_expect.c - a child loads the policy it was handed and checks its digest (policy_expect.h). */
#include "policy_expect.h"

#include <stdio.h>
#include <string.h>

int sluice_policy_load_expect(const char *path, const char *digest, struct sluice_policy **out,
			      struct sluice_policy_error *err)
{
	if (sluice_policy_load_file(path, out, err) < 0)
		return -1;
	if (!digest || strcmp((*out)->digest, digest) == 0)
		return 0;
	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", path);
	snprintf(err->message, sizeof(err->message),
		 "policy digest %.64s, not %.64s as the loader handed over: refusing to start on another policy", (*out)->digest,
		 digest);
	sluice_policy_free(*out);
	*out = NULL;
	return -1;
}
