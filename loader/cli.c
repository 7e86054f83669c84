/* SPDX-License-Identifier: BSD-2-Clause */
/* cli.c - the global -j/--json option and the JSON error object (cli.h). */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static bool json_on;
static bool printed;          /* the command printed its document */
static char last_error[1024]; /* log_keep_last() writes here */

int sluice_cli_global_opts(int argc, char **argv)
{
	int i = 1;

	while (i < argc && (strcmp(argv[i], "-j") == 0 || strcmp(argv[i], "--json") == 0)) {
		sluice_cli_set_json();
		i++;
	}
	return i - 1;
}

void sluice_cli_set_json(void)
{
	if (!json_on)
		log_keep_last(last_error, sizeof(last_error));
	json_on = true;
}

bool sluice_cli_json(void)
{
	return json_on;
}

void sluice_cli_json_print(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	printed = true;
}

void sluice_cli_json_streamed(void)
{
	printed = true;
}

const char *sluice_cli_last_error(void)
{
	return last_error;
}

void sluice_cli_error(const char *fmt, ...)
{
	char buf[sizeof(last_error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", buf);
	if (json_on)
		snprintf(last_error, sizeof(last_error), "%s", buf);
}

int sluice_cli_finish(const char *cmd, int rc)
{
	json_object *o;

	if (!json_on || printed || rc == 0)
		return rc;
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "command", json_object_new_string(cmd));
	json_object_object_add(o, "exit", json_object_new_int(rc));
	/* a message the command wrote with fprintf, not log_warnx, is on stderr only */
	json_object_object_add(o, "error", json_object_new_string(last_error[0] ? last_error
								   : "failed: the diagnostics are on stderr"));
	sluice_cli_json_print(o);
	json_object_put(o);
	return rc;
}
