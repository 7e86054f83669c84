/* SPDX-License-Identifier: BSD-2-Clause */
#include "policy_ref.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfeatures.h"

int sluice_policy_ref_check(const char *ref, const char *what, char *name, size_t namelen, char *msg,
			    size_t msglen)
{
	char why[256];
	size_t n = strlen(ref);

	if (strchr(ref, '/')) {
		snprintf(msg, msglen, "%s='%s' is a path: it must name a policy of the admin's policy directory "
			 "(NAME for NAME.yaml)", what, ref);
		return -1;
	}
	if (n > 5 && strcmp(ref + n - 5, ".yaml") == 0)
		n -= 5;
	if (n == 0 || n >= namelen || n > SLUICE_NAME_MAX) {
		snprintf(msg, msglen, "%s='%s': not a policy name (1 to %d characters)", what, ref, SLUICE_NAME_MAX);
		return -1;
	}
	memcpy(name, ref, n);
	name[n] = '\0';
	/* the alphabet of sandbox names: no '/', no leading '.' (so no "..") */
	if (sluice_name_check(name, why, sizeof(why)) < 0) {
		snprintf(msg, msglen, "%s='%s': a policy name may only hold letters, digits, '-', '_' and '.', "
			 "not starting with '.'", what, ref);
		return -1;
	}
	return 0;
}

int sluice_policy_ref_resolve(const char *dir, const char *ref, const char *what, char *path, size_t pathlen,
			      char *msg, size_t msglen)
{
	char name[SLUICE_NAME_MAX + 1], file[PATH_MAX], real[PATH_MAX];

	if (sluice_policy_ref_check(ref, what, name, sizeof(name), msg, msglen) < 0)
		return -1;
	snprintf(file, sizeof(file), "%s/%s.yaml", dir ? dir : SLUICE_POLICY_DIR, name);
	if (!realpath(file, real)) {
		snprintf(msg, msglen, "policy '%s' (%s): %s: %s", name, what, file, strerror(errno));
		return -1;
	}
	snprintf(path, pathlen, "%s", real);
	return 0;
}
