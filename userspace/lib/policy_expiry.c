/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy_expiry.c - the change-control keys of an allow entry: `expires:`
 * (an RFC 3339 date-time after which the entry allows nothing), `owner:`
 * and `ticket:` (strings its log lines carry).  docs/policy.md "Change
 * control".  policy.c calls sluice_entry_meta_set() for each of them; the
 * matchers call sluice_entry_expired().
 */
#include "policy_internal.h"
#include "evlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define META_MAX 200   /* owner and ticket: a name, an address, an issue id */

bool sluice_entry_meta_key(const char *key)
{
	return strcmp(key, "expires") == 0 || strcmp(key, "owner") == 0 || strcmp(key, "ticket") == 0;
}

static bool digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int month_days(int y, int m)
{
	static const int n[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return n[m - 1];
}

int sluice_rfc3339_parse(const char *s, int64_t *out, const char **why)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	size_t n = strlen(s);
	const char *z;

	/* full-date "T" partial-time time-offset (RFC 3339 5.6) */
	if (n < 19 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
	    !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) || s[13] != ':' ||
	    !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec)) {
		*why = "want an RFC 3339 date-time such as 2026-12-31T18:00:00Z";
		return -1;
	}
	z = s + 19;
	if (*z == '\0') {
		*why = "the time zone must be Z or a numeric offset such as +02:00 (RFC 3339): none given";
		return -1;
	}
	if (*z == '.') {
		*why = "fractional seconds are not supported (write whole seconds: 2026-12-31T18:00:00Z)";
		return -1;
	}
	if ((z[0] == 'Z' || z[0] == 'z') && z[1] == '\0') {
		sign = 0;
	} else if ((z[0] == '+' || z[0] == '-') && strlen(z) == 6 && digits(z + 1, 2, &oh) && z[3] == ':' &&
		   digits(z + 4, 2, &om)) {
		sign = z[0] == '+' ? 1 : -1;
		if (oh > 23 || om > 59) {
			*why = "time offset out of range (-23:59 to +23:59)";
			return -1;
		}
	} else {
		*why = "the time zone must be Z or a numeric offset such as +02:00 (RFC 3339)";
		return -1;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo)) {
		*why = "no such date";
		return -1;
	}
	if (h > 23 || mi > 59 || sec > 59) {
		/* a leap second (60) cannot be told from the next second here: refused */
		*why = "time out of range (00:00:00 to 23:59:59)";
		return -1;
	}
	if (y < 1970) {
		*why = "date before 1970";
		return -1;
	}
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60);
	return 0;
}

const char *sluice_rfc3339_str(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "@%lld", (long long)t);
	return buf;
}

int sluice_entry_meta_set(struct sluice_entry *e, const char *key, const char *value, size_t len, char *why,
			  size_t whylen)
{
	if (strcmp(key, "expires") == 0) {
		const char *r;
		int64_t t;

		/* the kernel's unix allowlist (an LPM trie of names) has no
		 * clock: an expiry there would silently never happen */
		if (e->kind == SLUICE_ENTRY_UNIX) {
			snprintf(why, whylen, "'expires' is not supported on a unix entry (the kernel could not end it)");
			return -1;
		}

		if (sluice_rfc3339_parse(value, &t, &r) < 0) {
			snprintf(why, whylen, "bad 'expires' '%.40s': %s", value, r);
			return -1;
		}
		if (t <= 0) {
			snprintf(why, whylen, "bad 'expires' '%.40s': at or before 1970-01-01T00:00:00Z", value);
			return -1;
		}
		e->expires = t;
		return 0;
	}
	/* owner, ticket: one line of printable text, as a reviewer reads it */
	if (len == 0 || len > META_MAX) {
		snprintf(why, whylen, "'%s' must be 1-%d bytes", key, META_MAX);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f) {
			snprintf(why, whylen, "'%s' contains a control byte", key);
			return -1;
		}
	{
		char *dup = strdup(value);
		char **slot = strcmp(key, "owner") == 0 ? &e->owner : &e->ticket;

		if (!dup) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		free(*slot);
		*slot = dup;
	}
	return 0;
}

bool sluice_entry_expired(const struct sluice_entry *e, int64_t now)
{
	struct timespec ts;

	if (!e || !e->expires)
		return false;
	if (now < 0) {
		if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
			return true;   /* cannot tell the time: the entry allows nothing */
		now = ts.tv_sec;
	}
	return now >= e->expires;
}

void sluice_entry_log_fields(struct sluice_line *l, const struct sluice_entry *e)
{
	char t[32];

	if (!e)
		return;
	if (e->owner)
		SL_STR(l, "sluice.rule_owner", e->owner);
	if (e->ticket)
		SL_STR(l, "sluice.rule_ticket", e->ticket);
	if (e->expires)
		SL_STR(l, "sluice.rule_expires", sluice_rfc3339_str(e->expires, t, sizeof(t)));
}
