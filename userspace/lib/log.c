/* SPDX-License-Identifier: BSD-2-Clause */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *log_progname = "sluice";
static int log_verbose;

void log_init(const char *progname, int verbose)
{
	if (progname)
		log_progname = progname;
	log_verbose = verbose;
}

static void vlog(const char *fmt, va_list ap, int with_errno)
{
	int saved = errno;
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (with_errno)
		fprintf(stderr, "%s: %s: %s\n", log_progname, buf, strerror(saved));
	else
		fprintf(stderr, "%s: %s\n", log_progname, buf);
	errno = saved;
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap, 1);
	va_end(ap);
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap, 0);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap, 0);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap, 0);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap, 1);
	va_end(ap);
	exit(2);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap, 0);
	va_end(ap);
	exit(2);
}
