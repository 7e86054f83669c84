/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * normalise.c - the one host name, IP literal and URL path normaliser of
 * sluice.  The policy, the proxy and the resolver all call these, so that
 * a name or path is compared in exactly one spelling everywhere.
 */
#include "netaddr.h"
#include "policy_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <idn2.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HOST_INPUT_MAX 1024   /* refuse absurd input before IDNA sees it */

static bool is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hex_val(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

/* Exactly four decimal parts 0..255, no leading zeros, nothing else. */
static bool parse_dotted_quad(const char *s, uint8_t out[4])
{
	for (int part = 0; part < 4; part++) {
		unsigned v = 0;
		int digits = 0;

		if (part > 0) {
			if (*s != '.')
				return false;
			s++;
		}
		if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
			return false;  /* leading zero: octal in inet_aton() */
		while (*s >= '0' && *s <= '9') {
			v = v * 10 + (unsigned)(*s - '0');
			if (++digits > 3 || v > 255)
				return false;
			s++;
		}
		if (digits == 0)
			return false;
		out[part] = (uint8_t)v;
	}
	return *s == '\0';
}

/* The WHATWG URL rule: a host whose last label is a number (decimal, or
 * 0x hex) is parsed as IPv4 by browsers and many libraries. */
static bool ends_in_number(const char *s)
{
	size_t n = strlen(s);
	const char *last;
	size_t ln;

	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0)
		return false;
	last = s + n;
	while (last > s && last[-1] != '.')
		last--;
	ln = (size_t)(s + n - last);
	if (ln == 0)
		return false;
	if (ln >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
		for (size_t i = 2; i < ln; i++)
			if (!is_hex((unsigned char)last[i]))
				return false;
		return true;
	}
	for (size_t i = 0; i < ln; i++)
		if (last[i] < '0' || last[i] > '9')
			return false;
	return true;
}

static bool looks_like_ipv6(const char *s, size_t n)
{
	bool colon = false;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == ':')
			colon = true;
		else if (c == '%')
			break;   /* a zone id ("fe80::1%eth0") follows */
		else if (!is_hex(c) && c != '.')
			return false;
	}
	return colon;
}

int sluice_ip_normalise(const char *in, int *family, uint8_t addr[16])
{
	char buf[INET6_ADDRSTRLEN + 2];
	const char *s = in;
	size_t n;
	struct in_addr a4;

	if (!in || !*in)
		return -1;
	n = strlen(s);
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(buf))
			return -1;
		memcpy(buf, s + 1, n - 2);
		buf[n - 2] = '\0';
		s = buf;
		n -= 2;
		if (!strchr(s, ':'))
			return -1;
	}
	if (strchr(s, ':')) {
		uint8_t a[16];

		if (n < sizeof(buf) && inet_pton(AF_INET6, s, a) == 1) {
			if (netaddr_is_v4mapped(a)) {
				*family = AF_INET;
				memset(addr, 0, 16);
				memcpy(addr, a + 12, 4);
			} else {
				*family = AF_INET6;
				memcpy(addr, a, 16);
			}
			return 0;
		}
		return looks_like_ipv6(s, n) ? 1 : -1;
	}
	{
		uint8_t q[4];

		if (parse_dotted_quad(s, q)) {
			*family = AF_INET;
			memset(addr, 0, 16);
			memcpy(addr, q, 4);
			return 0;
		}
	}
	/* Not canonical, but would something out there read it as IPv4?
	 * (0x7f000001, 017700000001, 2130706433, 127.1, 0x7f.1, 1.2.3.4.) */
	if (ends_in_number(s) || inet_aton(s, &a4) != 0)
		return 1;
	return -1;
}

static bool host_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.';
}

/* Checks common to the raw input and to the IDNA output. */
static int host_bytes_check(const char *s, bool allow_8bit, const char **why)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;

		if (c < 0x20 || c == 0x7f) {
			*why = "control byte in host name";
			return -1;
		}
		if (c >= 0x80) {
			if (allow_8bit)
				continue;
			*why = "non-ASCII byte in host name after IDNA";
			return -1;
		}
		if (host_char_ok(c))
			continue;
		switch (c) {
		case ' ':
			*why = "space in host name";
			break;
		case '@':
			*why = "'@' in host name (no userinfo)";
			break;
		case '%':
			*why = "'%' in host name (no percent-encoding or zone id)";
			break;
		case '[':
		case ']':
			*why = "brackets in host name";
			break;
		case ':':
			*why = "':' in host name (a port goes in ports)";
			break;
		case '*':
			*why = "'*' in host name";
			break;
		case '/':
			*why = "'/' in host name";
			break;
		default:
			*why = "character not allowed in host name";
			break;
		}
		return -1;
	}
	return 0;
}

static bool has_ace_label(const char *s)
{
	for (const char *l = s; l; l = strchr(l, '.')) {
		if (*l == '.')
			l++;
		if (strncasecmp(l, "xn--", 4) == 0)
			return true;
	}
	return false;
}

int sluice_host_normalise(const char *in, char *out, size_t len, const char **why)
{
	const char *dummy;
	char *idna = NULL;
	const char *s = in;
	bool eight_bit = false;
	size_t n;
	int family;
	uint8_t addr[16];
	int rc = -1;

	if (!why)
		why = &dummy;
	*why = NULL;
	if (!in || !*in) {
		*why = "empty host name";
		return -1;
	}
	if (strlen(in) > HOST_INPUT_MAX) {
		*why = "host name longer than 253 bytes";
		return -1;
	}
	if (host_bytes_check(in, true, why) < 0) {
		/* say "ip literal" for [::1] or ::1 rather than "brackets" */
		if (sluice_ip_normalise(in, &family, addr) >= 0)
			*why = "ip literal";
		return -1;
	}
	if (sluice_ip_normalise(in, &family, addr) >= 0) {
		*why = "ip literal";
		return -1;
	}
	for (const unsigned char *p = (const unsigned char *)in; *p; p++)
		if (*p >= 0x80)
			eight_bit = true;
	if (eight_bit || has_ace_label(in)) {
		/* UTS#46 non-transitional mapping (IDNA2008), NFC first.  Maps
		 * case, full-width forms and ideographic full stops too, so the
		 * result is checked again below. */
		int r = idn2_to_ascii_8z(in, &idna, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);

		if (r != IDN2_OK) {
			*why = "not a valid internationalised name (IDNA2008/UTS#46)";
			goto out;
		}
		s = idna;
		if (host_bytes_check(s, false, why) < 0)
			goto out;
		if (sluice_ip_normalise(s, &family, addr) >= 0) {
			*why = "ip literal";
			goto out;
		}
	}
	n = strlen(s);
	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0) {
		*why = "empty host name";
		goto out;
	}
	if (n > SLUICE_HOST_MAX) {
		*why = "host name longer than 253 bytes";
		goto out;
	}
	if (n + 1 > len) {
		*why = "output buffer too small";
		goto out;
	}
	{
		size_t label = 0;

		for (size_t i = 0; i < n; i++) {
			if (s[i] == '.') {
				if (label == 0) {
					*why = "empty label in host name";
					goto out;
				}
				label = 0;
			} else if (++label > 63) {
				*why = "label longer than 63 bytes in host name";
				goto out;
			}
			out[i] = (char)tolower((unsigned char)s[i]);
		}
		if (label == 0) {
			*why = "empty label in host name";
			goto out;
		}
		out[n] = '\0';
	}
	rc = 0;
out:
	free(idna);
	return rc;
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 3986 3.3 pchar minus pct-encoded, plus '/'. */
static bool is_path_char(unsigned char c)
{
	return is_unreserved(c) || strchr("!$&'()*+,;=:@/", c) != NULL;
}

/* RFC 3986 5.2.4: remove "." and ".." segments from `in` (starts with '/'
 * or is empty) into `out` (at least strlen(in)+2 bytes). */
static void remove_dot_segments(const char *in, char *out)
{
	size_t n = strlen(in), i = 0, o = 0;

	while (i < n) {
		const char *s = in + i;
		size_t left = n - i;

		if (left >= 3 && memcmp(s, "../", 3) == 0) {
			i += 3;                          /* A */
		} else if (left >= 2 && memcmp(s, "./", 2) == 0) {
			i += 2;                          /* A */
		} else if (left >= 3 && memcmp(s, "/./", 3) == 0) {
			i += 2;                          /* B: "/./" -> "/" */
		} else if (left == 2 && memcmp(s, "/.", 2) == 0) {
			out[o++] = '/';                  /* B: "/." -> "/" */
			break;
		} else if ((left >= 4 && memcmp(s, "/../", 4) == 0) ||
			   (left == 3 && memcmp(s, "/..", 3) == 0)) {
			/* C: drop the last output segment and its '/' */
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			if (left == 3) {
				out[o++] = '/';
				break;
			}
			i += 3;
		} else if ((left == 1 && s[0] == '.') || (left == 2 && memcmp(s, "..", 2) == 0)) {
			break;                           /* D */
		} else {
			do                               /* E: move one segment */
				out[o++] = in[i++];
			while (i < n && in[i] != '/');
		}
	}
	out[o] = '\0';
}

int sluice_url_path_normalise(const char *in, char *out, size_t len, const char **why)
{
	const char *dummy;
	char dec[SLUICE_PATH_MAX * 3 + 4] = "";  /* zeroed: keeps the analyser sure of it */
	char res[sizeof(dec) + 2];
	size_t d = 0, n;

	if (!why)
		why = &dummy;
	*why = NULL;
	if (!in) {
		*why = "no path";
		return -1;
	}
	n = strcspn(in, "?#");
	if (n == 0) {
		in = "/";
		n = 1;
	}
	if (in[0] != '/') {
		*why = "path must start with '/'";
		return -1;
	}
	if (n > SLUICE_PATH_MAX * 3) {
		*why = "path too long";
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c < 0x20 || c == 0x7f) {
			*why = "control byte in path";
			return -1;
		}
		if (c == '\\') {
			*why = "backslash in path";
			return -1;
		}
		if (c >= 0x80) {
			*why = "non-ASCII byte in path (must be percent-encoded)";
			return -1;
		}
		if (c == '%') {
			unsigned v;

			if (i + 2 >= n) {
				*why = "bad percent escape in path";
				return -1;
			}
			if (!is_hex((unsigned char)in[i + 1]) || !is_hex((unsigned char)in[i + 2])) {
				*why = "bad percent escape in path";
				return -1;
			}
			v = (unsigned)(hex_val((unsigned char)in[i + 1]) * 16 +
				       hex_val((unsigned char)in[i + 2]));
			i += 2;
			if (v == 0) {
				*why = "%00 in path";
				return -1;
			}
			if (v == '/') {
				*why = "encoded slash %2F in path";
				return -1;
			}
			if (v == '\\') {
				*why = "encoded backslash %5C in path";
				return -1;
			}
			if (v < 0x20 || v == 0x7f) {
				*why = "encoded control byte in path";
				return -1;
			}
			if (is_unreserved((unsigned char)v)) {
				/* RFC 3986 6.2.2.2: decode unreserved, so that
				 * %2e%2e is a dot segment like ".." */
				dec[d++] = (char)v;
			} else {
				static const char hx[] = "0123456789ABCDEF";

				dec[d++] = '%';
				dec[d++] = hx[v >> 4];
				dec[d++] = hx[v & 15];
			}
			continue;
		}
		if (!is_path_char(c)) {
			*why = "character not allowed in path";
			return -1;
		}
		dec[d++] = (char)c;
	}
	dec[d] = '\0';
	remove_dot_segments(dec, res);
	if (res[0] == '\0') {
		res[0] = '/';
		res[1] = '\0';
	}
	if (strlen(res) > SLUICE_PATH_MAX) {
		*why = "path too long";
		return -1;
	}
	if (strlen(res) + 1 > len) {
		*why = "output buffer too small";
		return -1;
	}
	memcpy(out, res, strlen(res) + 1);
	return 0;
}

bool sluice_path_prefix_match(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);

	if (strncmp(prefix, path, n) != 0)
		return false;
	/* "/debian/" covers "/debian/x"; "/debian" covers "/debian" and
	 * "/debian/x" but never "/debianx". */
	if (n > 0 && prefix[n - 1] == '/')
		return true;
	return path[n] == '\0' || path[n] == '/';
}
