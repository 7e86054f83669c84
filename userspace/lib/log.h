/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.h - the small diagnostic log API of every sluice binary (after OpenBSD
 * httpd's log.c).  Diagnostics go to stderr, prefixed with the program name;
 * they are for people.  Machine-read records (events, access logs) are JSON
 * lines written elsewhere, never through this API.
 */
#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* Set the program name used as prefix ("sluice", "sluice-proxy", ...) and
 * the verbosity (0 = warnings and info, 1 = + debug).  When stderr is the
 * journal ($JOURNAL_STREAM names it, systemd.exec(5)), each line starts with
 * its syslog priority, sd-daemon(3) style: <3> fatal, <4> warn, <6> info,
 * <7> debug. */
void log_init(const char *progname, int verbose);

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* adds ": strerror(errno)" */
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Log and exit with status 2 (usage or environment error, see README). */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn)); /* adds strerror */
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Keep the text of the last warning or fatal error (without the program
 * prefix, with strerror where the call adds it) in buf, len bytes, cut to
 * fit; buf stays the caller's.  For `sluice --json`, which repeats the error
 * on stdout as JSON.  len 0 stops keeping.  Empties buf. */
void log_keep_last(char *buf, size_t len);

/* Reopen the log file at `path` onto descriptor fd (O_APPEND, created with
 * `mode`), for SIGHUP after a rotation: fd keeps its number, so every holder
 * of it writes to the new file.  Returns 0, or -errno (fd unchanged). */
int log_reopen_fd(int fd, const char *path, unsigned mode);

/* Write all n bytes of s to fd, retrying EINTR and short writes.  Returns 0,
 * or -1 with errno set (a write that wrote nothing counts as an error). */
int sluice_write_all(int fd, const char *s, size_t n);

/* Read fd to its end (retrying EINTR), at most `max` bytes.  Returns a
 * malloc'd NUL-terminated buffer with *len its length (0: an empty stream),
 * or NULL with errno set (EFBIG: more than max). */
char *sluice_read_all(int fd, size_t max, size_t *len);

#endif
