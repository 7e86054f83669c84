/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * request.c - HTTP/1.1 heads as pure functions (request.h): scanning,
 * parsing and validating requests and responses, the request's target,
 * and the heads the proxy writes.  The policy decisions on them are in
 * decide.c.
 */
#include "request.h"

#include <netinet/in.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>

#include <event2/buffer.h>

#include "addr.h"
#include "evlog.h"

const struct proxy_limits proxy_default_limits = {
	.max_request_line = 8192,
	.max_head = 32768,
	.max_headers = PROXY_MAX_HEADERS,
};

static int refuse(struct proxy_refusal *err, int status, const char *reason)
{
	if (err) {
		err->status = status;
		err->reason = reason;
	}
	return -1;
}

/* --- head scanning --------------------------------------------------- */

/* RFC 9110 5.6.2 tchar */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A header line must be token ":" ...: no whitespace before the colon
 * (RFC 9112 5.1: a server MUST reject it), no line without a colon. */
static bool field_name_ok(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && is_tchar((unsigned char)line[i]))
		i++;
	return i > 0 && i < len && line[i] == ':';
}

enum proxy_scan_status proxy_head_scan(const char *buf, size_t len, const struct proxy_limits *lim,
				       bool strict, size_t *head_len, struct proxy_refusal *err)
{
	size_t line_start = 0, nlines = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];
		size_t content;
		bool crlf;

		if (nlines == 0 && i >= lim->max_request_line) {
			refuse(err, 414, "uri_too_long");
			return PROXY_SCAN_ERROR;
		}
		if (i >= lim->max_head) {
			refuse(err, 431, "headers_too_large");
			return PROXY_SCAN_ERROR;
		}
		if (ch == '\0') {
			refuse(err, 400, "nul_byte");
			return PROXY_SCAN_ERROR;
		}
		if (ch == '\r') {
			if (strict && i + 1 < len && buf[i + 1] != '\n') {
				refuse(err, 400, "bare_cr");
				return PROXY_SCAN_ERROR;
			}
			continue;
		}
		if (ch != '\n')
			continue;

		crlf = i > line_start && buf[i - 1] == '\r';
		if (!crlf && strict) {
			refuse(err, 400, "bare_lf");
			return PROXY_SCAN_ERROR;
		}
		content = i - line_start - (crlf ? 1 : 0);
		if (nlines == 0) {
			if (content == 0) {
				refuse(err, 400, "malformed_request");  /* leading empty line */
				return PROXY_SCAN_ERROR;
			}
		} else if (content == 0) {
			*head_len = i + 1;
			return PROXY_SCAN_COMPLETE;
		} else {
			if (strict && (buf[line_start] == ' ' || buf[line_start] == '\t')) {
				refuse(err, 400, "obs_fold");
				return PROXY_SCAN_ERROR;
			}
			if (strict && !field_name_ok(buf + line_start, content)) {
				refuse(err, 400, "bad_header_name");
				return PROXY_SCAN_ERROR;
			}
			if (nlines > lim->max_headers || nlines > PROXY_MAX_HEADERS) {
				refuse(err, 431, "headers_too_large");
				return PROXY_SCAN_ERROR;
			}
		}
		nlines++;
		line_start = i + 1;
	}
	return PROXY_SCAN_INCOMPLETE;
}

/* --- header collection (shared by requests and responses) ------------ */

struct hdr_sink {
	struct proxy_header *h;
	size_t *n;
	bool *in_value;
};

static int sink_field(struct hdr_sink s, const char *at, size_t len)
{
	struct proxy_header *last = *s.n ? &s.h[*s.n - 1] : NULL;

	if (!*s.in_value && last && last->name + last->name_len == at) {
		last->name_len += len;   /* continuation of the same name */
		return 0;
	}
	if (*s.n >= PROXY_MAX_HEADERS)
		return -1;
	last = &s.h[(*s.n)++];
	last->name = at;
	last->name_len = len;
	last->value = at + len;      /* empty until a value arrives */
	last->value_len = 0;
	*s.in_value = false;
	return 0;
}

static int sink_value(struct hdr_sink s, const char *at, size_t len)
{
	struct proxy_header *last;

	if (*s.n == 0)
		return -1;
	last = &s.h[*s.n - 1];
	if (*s.in_value && last->value + last->value_len == at) {
		last->value_len += len;
	} else {
		last->value = at;
		last->value_len = len;
	}
	*s.in_value = true;
	return 0;
}

static void trim_values(struct proxy_header *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		while (h[i].value_len && (h[i].value[0] == ' ' || h[i].value[0] == '\t')) {
			h[i].value++;
			h[i].value_len--;
		}
		while (h[i].value_len && (h[i].value[h[i].value_len - 1] == ' ' ||
					  h[i].value[h[i].value_len - 1] == '\t'))
			h[i].value_len--;
	}
}

static bool name_is(const struct proxy_header *h, const char *name)
{
	return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

static bool value_is(const struct proxy_header *h, const char *v)
{
	return h->value_len == strlen(v) && strncasecmp(h->value, v, h->value_len) == 0;
}

/* --- requests ----------------------------------------------------------- */

static int req_on_url(http_parser *p, const char *at, size_t len)
{
	struct proxy_request *req = p->data;

	if (req->target && req->target + req->target_len == at) {
		req->target_len += len;
	} else if (!req->target) {
		req->target = at;
		req->target_len = len;
	} else {
		return -1;
	}
	return 0;
}

static int req_on_field(http_parser *p, const char *at, size_t len)
{
	struct proxy_request *req = p->data;

	return sink_field((struct hdr_sink){ req->headers, &req->n_headers, &req->in_value }, at, len);
}

static int req_on_value(http_parser *p, const char *at, size_t len)
{
	struct proxy_request *req = p->data;

	return sink_value((struct hdr_sink){ req->headers, &req->n_headers, &req->in_value }, at, len);
}

static int req_on_body(http_parser *p, const char *at, size_t len)
{
	struct proxy_request *req = p->data;

	if (req->body_cb)
		req->body_cb(req->body_arg, at, len);
	return 0;
}

static int req_on_complete(http_parser *p)
{
	struct proxy_request *req = p->data;

	req->message_complete = true;
	/* stop right at the end of this message: bytes after it (a pipelined
	 * or smuggled second request) are never read as part of it */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings req_settings = {
	.on_url = req_on_url,
	.on_header_field = req_on_field,
	.on_header_value = req_on_value,
	.on_body = req_on_body,
	.on_message_complete = req_on_complete,
};

static bool all_digits(const char *s, size_t n)
{
	if (n == 0 || n > 18)
		return false;   /* 18 digits fit in int64 */
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Framing and header checks on what was collected (also after a parser
 * error, so that the reason names the framing problem). */
static int validate_request_headers(struct proxy_request *req, struct proxy_refusal *err)
{
	unsigned n_cl = 0, n_te = 0, n_host = 0;
	bool te_ok = true, cl_ok = true;

	for (size_t i = 0; i < req->n_headers; i++) {
		const struct proxy_header *h = &req->headers[i];

		for (size_t j = 0; j < h->value_len; j++) {
			unsigned char c = (unsigned char)h->value[j];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return refuse(err, 400, "bad_header_value");
		}
		if (name_is(h, "content-length")) {
			n_cl++;
			if (!all_digits(h->value, h->value_len)) {
				cl_ok = false;
			} else {
				req->content_length = strtoull(h->value, NULL, 10);  /* digits end the value */
				req->has_content_length = true;
			}
		} else if (name_is(h, "transfer-encoding")) {
			n_te++;
			if (!value_is(h, "chunked"))
				te_ok = false;
		} else if (name_is(h, "host")) {
			n_host++;
			req->host = h;
		}
	}
	if (n_cl && n_te)
		return refuse(err, 400, "cl_te_conflict");
	if (n_cl > 1)
		return refuse(err, 400, "duplicate_content_length");
	if (!cl_ok)
		return refuse(err, 400, "bad_content_length");
	if (n_te > 1 || !te_ok)
		return refuse(err, 400, "bad_transfer_encoding");
	if (n_te && req->http_minor == 0)
		return refuse(err, 400, "bad_transfer_encoding");   /* RFC 9112 6.1: faulty on 1.0 */
	if (n_host > 1)
		return refuse(err, 400, "duplicate_host");
	req->chunked = n_te == 1;
	return 0;
}

int proxy_request_parse(struct proxy_request *req, const char *head, size_t head_len,
			struct proxy_refusal *err)
{
	enum http_errno e;
	size_t n;

	memset(req, 0, sizeof(*req));
	http_parser_init(&req->parser, HTTP_REQUEST);
	req->parser.data = req;
	n = http_parser_execute(&req->parser, &req_settings, head, head_len);
	e = HTTP_PARSER_ERRNO(&req->parser);
	req->http_major = req->parser.http_major;
	req->http_minor = req->parser.http_minor;
	trim_values(req->headers, req->n_headers);

	if (e != HPE_OK && e != HPE_PAUSED) {
		if (req->n_headers >= PROXY_MAX_HEADERS && e == HPE_CB_header_field)
			return refuse(err, 431, "headers_too_large");
		/* name the framing problem if that is what http-parser tripped on */
		if (validate_request_headers(req, err) < 0)
			return -1;
		if (e == HPE_INVALID_METHOD)
			return refuse(err, 400, "unrecognised_protocol");
		return refuse(err, 400, "malformed_request");
	}
	if (n != head_len && !req->parser.upgrade && e != HPE_PAUSED)
		return refuse(err, 400, "malformed_request");
	if (!req->target)
		return refuse(err, 400, "malformed_request");
	if (req->http_major != 1 || req->http_minor > 1)
		return refuse(err, 400, "http_version");
	if (validate_request_headers(req, err) < 0)
		return -1;

	req->method_id = req->parser.method;
	req->method = http_method_str(req->method_id);
	req->keep_alive = http_should_keep_alive(&req->parser) != 0;
	req->target_buf = malloc(req->target_len + 1);
	if (!req->target_buf)
		return refuse(err, 503, "out_of_memory");
	memcpy(req->target_buf, req->target, req->target_len);
	req->target_buf[req->target_len] = '\0';
	req->target = req->target_buf;
	return 0;
}

const char *proxy_request_attempted_host(const struct proxy_request *req, char *out, size_t len)
{
	const char *h = NULL, *end;
	size_t n = 0;

	if (!len)
		return NULL;
	if (req->target && req->target_len) {
		const char *t = req->target, *te = t + req->target_len;

		if ((size_t)(te - t) > 7 && strncasecmp(t, "http://", 7) == 0)
			h = t + 7;
		else if ((size_t)(te - t) > 8 && strncasecmp(t, "https://", 8) == 0)
			h = t + 8;
		else if (t[0] != '/' && t[0] != '*')
			h = t;                  /* authority form (CONNECT host:port) */
		if (h) {
			for (end = h; end < te && *end != '/' && *end != '?' && *end != '#'; end++)
				;
			n = (size_t)(end - h);
		}
	}
	if (!n && req->host && req->host->value_len) {
		h = req->host->value;
		n = req->host->value_len;
	}
	if (!n)
		return NULL;
	/* userinfo@ and :port off (a bracketed IPv6 literal keeps its colons) */
	for (size_t i = n; i > 0; i--)
		if (h[i - 1] == '@') {
			h += i;
			n -= i;
			break;
		}
	if (n && h[0] == '[') {
		const char *rb = memchr(h, ']', n);

		if (rb)
			n = (size_t)(rb - h) + 1;
	} else {
		const char *colon = memchr(h, ':', n);

		if (colon)
			n = (size_t)(colon - h);
	}
	if (!n)
		return NULL;
	if (n >= len)
		n = len - 1;
	memcpy(out, h, n);
	out[n] = '\0';
	return out;
}

int proxy_request_precheck(const char *buf, size_t len, struct proxy_refusal *err)
{
	static const http_parser_settings none;
	http_parser p;
	enum http_errno e;

	http_parser_init(&p, HTTP_REQUEST);
	(void)http_parser_execute(&p, &none, buf, len);
	e = HTTP_PARSER_ERRNO(&p);
	if (e == HPE_OK || e == HPE_PAUSED)
		return 0;
	if (e == HPE_INVALID_METHOD)
		return refuse(err, 400, "unrecognised_protocol");
	return refuse(err, 400, "malformed_request");
}

void proxy_request_free(struct proxy_request *req)
{
	free(req->target_buf);
	req->target_buf = NULL;
	req->target = NULL;
}

ssize_t proxy_body_feed(struct proxy_request *req, const char *data, size_t len,
			bool *done, struct proxy_refusal *err)
{
	size_t n;
	enum http_errno e;

	*done = req->message_complete;
	if (req->message_complete)
		return 0;
	req->parser.data = req;
	n = http_parser_execute(&req->parser, &req_settings, data, len);
	e = HTTP_PARSER_ERRNO(&req->parser);
	if (e == HPE_PAUSED || req->message_complete) {
		*done = true;
		return (ssize_t)n;
	}
	if (e != HPE_OK) {
		refuse(err, 400, "bad_body");
		return -1;
	}
	return (ssize_t)n;
}

/* Never forwarded, either direction: hop-by-hop (RFC 9110 7.6.1) and proxy
 * plumbing. */
static const char *const dropped_always[] = {
	"connection", "keep-alive", "proxy-connection", "proxy-authorization",
	"proxy-authenticate", "upgrade", "te", "trailer",
	NULL,
};

/* Request only: rebuilt by the proxy, or forwarding metadata a client must
 * not forge toward the origin. */
static const char *const dropped_request[] = {
	"host", "content-length", "transfer-encoding", "forwarded", "via", "x-real-ip",
	NULL,
};

static bool in_list(const char *const *list, const char *name, size_t len)
{
	for (; *list; list++)
		if (strlen(*list) == len && strncasecmp(*list, name, len) == 0)
			return true;
	return false;
}

/* Is `token` (`tl` bytes) one of the comma-separated tokens of any header
 * `name` (Connection, Upgrade)? */
static bool header_lists(const struct proxy_header *h, size_t n, const char *name, const char *token, size_t tl)
{
	for (size_t i = 0; i < n; i++) {
		const char *v, *end;

		if (!name_is(&h[i], name))
			continue;
		v = h[i].value;
		end = v + h[i].value_len;
		while (v < end) {
			const char *tok, *tend;

			while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
				v++;
			tok = v;
			while (v < end && *v != ',')
				v++;
			tend = v;
			while (tend > tok && (tend[-1] == ' ' || tend[-1] == '\t'))
				tend--;
			if ((size_t)(tend - tok) == tl && strncasecmp(tok, token, tl) == 0)
				return true;
		}
	}
	return false;
}

/* Is `name` one of the comma-separated tokens of any Connection header? */
static bool connection_lists(const struct proxy_header *h, size_t n, const char *name, size_t len)
{
	return header_lists(h, n, "connection", name, len);
}

static bool is_framing(const char *name, size_t len)
{
	return (len == 14 && strncasecmp(name, "content-length", 14) == 0) ||
	       (len == 17 && strncasecmp(name, "transfer-encoding", 17) == 0);
}

bool proxy_header_dropped(const struct proxy_request *req, const char *name, size_t len)
{
	if (in_list(dropped_always, name, len) || in_list(dropped_request, name, len))
		return true;
	if (len >= 6 && strncasecmp(name, "proxy-", 6) == 0)
		return true;
	if (len >= 12 && strncasecmp(name, "x-forwarded-", 12) == 0)
		return true;
	return connection_lists(req->headers, req->n_headers, name, len);
}

/* --- targets ------------------------------------------------------------ */

static bool url_has(const struct http_parser_url *u, int f)
{
	return (u->field_set & (1 << f)) != 0;
}

static int copy_field(const char *src, const struct http_parser_url *u, int f, char *dst, size_t dlen)
{
	size_t off = u->field_data[f].off, len = u->field_data[f].len;

	if (len + 1 > dlen)
		return -1;
	memcpy(dst, src + off, len);
	dst[len] = '\0';
	return 0;
}

int proxy_split_host_header(const char *v, size_t vlen, struct proxy_target *t,
				    bool *has_port, struct proxy_refusal *err)
{
	char buf[SLUICE_HOST_MAX + 32];
	struct http_parser_url u;
	int n;

	if (vlen == 0)
		return refuse(err, 400, "missing_host");
	if (vlen > SLUICE_HOST_MAX + 16)
		return refuse(err, 403, "bad_host");
	n = snprintf(buf, sizeof(buf), "http://%.*s/", (int)vlen, v);
	http_parser_url_init(&u);
	if (http_parser_parse_url(buf, (size_t)n, 0, &u) != 0)
		return refuse(err, 400, "bad_host_header");
	if (url_has(&u, UF_USERINFO))
		return refuse(err, 403, "userinfo");
	if (!url_has(&u, UF_HOST) || url_has(&u, UF_QUERY) || url_has(&u, UF_FRAGMENT) ||
	    u.field_data[UF_PATH].len != 1)
		return refuse(err, 400, "bad_host_header");
	if (copy_field(buf, &u, UF_HOST, t->host, sizeof(t->host)) < 0)
		return refuse(err, 403, "bad_host");
	*has_port = url_has(&u, UF_PORT);
	t->port = u.port;
	if (*has_port && u.port == 0)
		return refuse(err, 400, "bad_host_header");
	return 0;
}

/* Split "path?query" into the normalised path and the raw query. */
static int set_path(struct proxy_target *t, const char *path, size_t plen,
		    const char *query, size_t qlen, bool has_query, struct proxy_refusal *err)
{
	char raw[PROXY_TARGET_MAX];
	const char *why = NULL;

	if (plen == 0) {
		path = "/";
		plen = 1;
	}
	if (plen >= sizeof(raw) || qlen >= sizeof(t->query))
		return refuse(err, 414, "uri_too_long");
	if (memchr(path, '#', plen) || (query && memchr(query, '#', qlen)))
		return refuse(err, 403, "fragment");
	memcpy(raw, path, plen);
	raw[plen] = '\0';
	if (sluice_url_path_normalise(raw, t->path, sizeof(t->path), &why) < 0)
		return refuse(err, 403, "bad_path");
	if (has_query) {
		for (size_t i = 0; i < qlen; i++) {
			unsigned char c = (unsigned char)query[i];

			if (c <= 0x20 || c == 0x7f)
				return refuse(err, 403, "bad_path");
			if (c == '%' && i + 2 < qlen && query[i + 1] == '0' && query[i + 2] == '0')
				return refuse(err, 403, "bad_path");   /* %00 */
		}
		memcpy(t->query, query, qlen);
		t->query[qlen] = '\0';
		t->has_query = true;
	}
	return 0;
}

static int target_absolute(const struct proxy_request *req, enum proxy_form form, uint16_t orig_port,
			   struct proxy_target *t, struct proxy_refusal *err)
{
	struct http_parser_url u;
	const char *s = req->target;
	char scheme[16];

	http_parser_url_init(&u);
	if (http_parser_parse_url(s, req->target_len, 0, &u) != 0 || !url_has(&u, UF_SCHEMA))
		return refuse(err, 400, "malformed_request");
	if (copy_field(s, &u, UF_SCHEMA, scheme, sizeof(scheme)) < 0 || strcasecmp(scheme, "http") != 0)
		return refuse(err, 400, "scheme_not_supported");
	if (url_has(&u, UF_USERINFO))
		return refuse(err, 403, "userinfo");
	if (url_has(&u, UF_FRAGMENT))
		return refuse(err, 403, "fragment");
	if (!url_has(&u, UF_HOST) || u.field_data[UF_HOST].len == 0)
		return refuse(err, 400, "missing_host");
	if (copy_field(s, &u, UF_HOST, t->host, sizeof(t->host)) < 0)
		return refuse(err, 403, "bad_host");
	t->port = url_has(&u, UF_PORT) ? u.port : 80;
	if (t->port == 0)
		return refuse(err, 400, "malformed_request");
	if (form == PROXY_FORM_TRANSPARENT && t->port != orig_port)
		return refuse(err, 403, "host_port_mismatch");
	return set_path(t,
			url_has(&u, UF_PATH) ? s + u.field_data[UF_PATH].off : NULL,
			url_has(&u, UF_PATH) ? u.field_data[UF_PATH].len : 0,
			url_has(&u, UF_QUERY) ? s + u.field_data[UF_QUERY].off : NULL,
			url_has(&u, UF_QUERY) ? u.field_data[UF_QUERY].len : 0,
			url_has(&u, UF_QUERY), err);
}

int proxy_request_target(const struct proxy_request *req, enum proxy_form form, uint16_t orig_port,
			 struct proxy_target *t, struct proxy_refusal *err)
{
	/* not a full memset: the two path buffers are large */
	memset(t->host, 0, sizeof(t->host));
	t->is_connect = false;
	t->tls = false;
	t->port = 0;
	t->path[0] = '\0';
	t->query[0] = '\0';
	t->has_query = false;

	if (req->method_id == HTTP_CONNECT) {
		struct http_parser_url u;

		if (form == PROXY_FORM_TRANSPARENT)
			return refuse(err, 400, "unexpected_connect");
		if (memchr(req->target, '@', req->target_len))
			return refuse(err, 403, "userinfo");
		http_parser_url_init(&u);
		if (http_parser_parse_url(req->target, req->target_len, 1, &u) != 0 ||
		    !url_has(&u, UF_HOST) || !url_has(&u, UF_PORT) || u.port == 0)
			return refuse(err, 400, "bad_connect_target");
		if (copy_field(req->target, &u, UF_HOST, t->host, sizeof(t->host)) < 0)
			return refuse(err, 403, "bad_host");
		t->port = u.port;
		t->is_connect = true;
		strcpy(t->path, "/");
		return 0;
	}

	if (req->target[0] == '/') {
		const char *q = memchr(req->target, '?', req->target_len);
		bool has_port = false;

		if (form == PROXY_FORM_EXPLICIT)
			return refuse(err, 400, "not_proxy_request");
		if (!req->host)
			return refuse(err, 400, "missing_host");
		if (proxy_split_host_header(req->host->value, req->host->value_len, t, &has_port, err) < 0)
			return -1;
		if (has_port && t->port != orig_port)
			return refuse(err, 403, "host_port_mismatch");
		t->port = orig_port;
		if (q)
			return set_path(t, req->target, (size_t)(q - req->target), q + 1,
					req->target_len - (size_t)(q - req->target) - 1, true, err);
		return set_path(t, req->target, req->target_len, NULL, 0, false, err);
	}
	if (req->target[0] == '*')
		return refuse(err, 400, "malformed_request");
	return target_absolute(req, form, orig_port, t, err);
}

const char *proxy_target_url(const struct proxy_target *t, const char *host_norm,
			     char *buf, size_t len)
{
	char port[8] = "";
	bool v6 = strchr(host_norm, ':') != NULL;

	if (t->port != (t->tls ? 443 : 80))
		snprintf(port, sizeof(port), ":%u", t->port);
	snprintf(buf, len, "%s://%s%s%s%s%s%s%s", t->tls ? "https" : "http", v6 ? "[" : "", host_norm, v6 ? "]" : "",
		 port, t->path, t->has_query ? "?" : "", t->query);
	return buf;
}

/* --- building heads ----------------------------------------------------- */

/*
 * A head is assembled in a local buffer and added to `out` in one piece
 * (no printf per line: heads are built for every request).
 */
struct head_buf {
	char *p;
	size_t len, cap;
	char local[2048];
	bool failed;
	bool wipe;      /* holds a secret: OPENSSL_cleanse at the end */
};

static void hb_init(struct head_buf *b)
{
	b->p = b->local;
	b->len = 0;
	b->cap = sizeof(b->local);
	b->failed = false;
	b->wipe = false;
}

static void hb_add(struct head_buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n > b->cap) {
		size_t ncap = b->cap * 2;
		char *np;

		while (ncap < b->len + n)
			ncap *= 2;
		np = b->p == b->local ? malloc(ncap) : realloc(b->p, ncap);
		if (!np) {
			b->failed = true;
			return;
		}
		if (b->p == b->local)
			memcpy(np, b->local, b->len);
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

#define HB_LIT(b, lit) hb_add((b), (lit), sizeof(lit) - 1)

static void hb_str(struct head_buf *b, const char *s)
{
	hb_add(b, s, strlen(s));
}

static void hb_u64(struct head_buf *b, uint64_t v)
{
	char out[20];

	hb_add(b, out, sluice_u64_dec(out, v));
}

/* Into `out`, and free; returns 0 or -1. */
static int hb_finish(struct head_buf *b, struct evbuffer *out)
{
	int r = b->failed ? -1 : evbuffer_add(out, b->p, b->len);

	if (b->wipe)
		OPENSSL_cleanse(b->p, b->cap);
	if (b->p != b->local)
		free(b->p);
	return r < 0 ? -1 : 0;
}

static void hb_header(struct head_buf *b, const struct proxy_header *h)
{
	hb_add(b, h->name, h->name_len);
	HB_LIT(b, ": ");
	hb_add(b, h->value, h->value_len);
	HB_LIT(b, "\r\n");
}

int proxy_build_request_head(const struct proxy_request *req, const struct proxy_target *t,
			     const char *host_norm, bool keep_alive, struct evbuffer *out)
{
	return proxy_build_request_head_set(req, t, host_norm, keep_alive, NULL, out);
}

int proxy_build_request_head_set(const struct proxy_request *req, const struct proxy_target *t,
				 const char *host_norm, bool keep_alive, const struct proxy_set_header *set,
				 struct evbuffer *out)
{
	bool v6 = strchr(host_norm, ':') != NULL;
	struct head_buf b;

	hb_init(&b);
	b.wipe = set != NULL;
	hb_str(&b, req->method);
	HB_LIT(&b, " ");
	hb_str(&b, t->path);
	if (t->has_query) {
		HB_LIT(&b, "?");
		hb_str(&b, t->query);
	}
	HB_LIT(&b, " HTTP/1.1\r\n");
	for (size_t i = 0; i < req->n_headers; i++) {
		const struct proxy_header *h = &req->headers[i];

		if (set && h->name_len == set->name_len && strncasecmp(h->name, set->name, h->name_len) == 0)
			continue;   /* replaced, never doubled */
		if (!proxy_header_dropped(req, h->name, h->name_len))
			hb_header(&b, h);
	}
	if (set) {
		struct proxy_header sh = { set->name, set->name_len, set->value, set->value_len };

		hb_header(&b, &sh);
	}
	HB_LIT(&b, "Host: ");
	if (v6)
		HB_LIT(&b, "[");
	hb_str(&b, host_norm);
	if (v6)
		HB_LIT(&b, "]");
	if (t->port != (t->tls ? 443 : 80)) {
		HB_LIT(&b, ":");
		hb_u64(&b, t->port);
	}
	HB_LIT(&b, "\r\n");
	if (req->chunked) {
		HB_LIT(&b, "Transfer-Encoding: chunked\r\n");
	} else if (req->has_content_length) {
		HB_LIT(&b, "Content-Length: ");
		hb_u64(&b, req->content_length);
		HB_LIT(&b, "\r\n");
	}
	if (req->websocket)
		HB_LIT(&b, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
	else if (!keep_alive)
		HB_LIT(&b, "Connection: close\r\n");
	HB_LIT(&b, "\r\n");
	return hb_finish(&b, out);
}

/* --- responses ---------------------------------------------------------- */

static int resp_on_field(http_parser *p, const char *at, size_t len)
{
	struct proxy_response *r = p->data;

	return sink_field((struct hdr_sink){ r->headers, &r->n_headers, &r->in_value }, at, len);
}

static int resp_on_value(http_parser *p, const char *at, size_t len)
{
	struct proxy_response *r = p->data;

	return sink_value((struct hdr_sink){ r->headers, &r->n_headers, &r->in_value }, at, len);
}

static int resp_on_headers_complete(http_parser *p)
{
	struct proxy_response *r = p->data;

	return r->head_request ? 1 : 0;   /* 1: no body follows (RFC 9110 9.3.2) */
}

static int resp_on_complete(http_parser *p)
{
	struct proxy_response *r = p->data;

	r->message_complete = true;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings resp_settings = {
	.on_header_field = resp_on_field,
	.on_header_value = resp_on_value,
	.on_headers_complete = resp_on_headers_complete,
	.on_message_complete = resp_on_complete,
};

/* Does the body end only where the connection does (RFC 9112 6.3, item 8)?
 * (http-parser's http_message_needs_eof(), which its header does not
 * declare.) */
static bool response_needs_eof(const http_parser *p)
{
	if (p->status_code / 100 == 1 || p->status_code == 204 || p->status_code == 304 ||
	    (p->flags & F_SKIPBODY))
		return false;
	if ((p->flags & (F_CHUNKED | F_CONTENTLENGTH)) || p->content_length != ULLONG_MAX)
		return false;
	return true;
}

static int response_parse(struct proxy_response *r, const char *head, size_t head_len, bool head_request,
			  bool ws, struct proxy_refusal *err);

int proxy_response_parse(struct proxy_response *r, const char *head, size_t head_len,
			 bool head_request, struct proxy_refusal *err)
{
	return response_parse(r, head, head_len, head_request, false, err);
}

int proxy_response_parse_ws(struct proxy_response *r, const char *head, size_t head_len,
			    struct proxy_refusal *err)
{
	return response_parse(r, head, head_len, false, true, err);
}

bool proxy_ws_requested(const struct proxy_request *req)
{
	return header_lists(req->headers, req->n_headers, "upgrade", "websocket", 9);
}

static int response_parse(struct proxy_response *r, const char *head, size_t head_len, bool head_request,
			  bool ws, struct proxy_refusal *err)
{
	enum http_errno e;
	const char *eol;

	memset(r, 0, sizeof(*r));
	r->head_request = head_request;
	http_parser_init(&r->parser, HTTP_RESPONSE);
	r->parser.data = r;
	(void)http_parser_execute(&r->parser, &resp_settings, head, head_len);
	e = HTTP_PARSER_ERRNO(&r->parser);
	if (e != HPE_OK && e != HPE_PAUSED)
		return refuse(err, 502, "bad_upstream_response");
	r->status = (int)r->parser.status_code;
	if (r->status < 100 || r->status > 999)
		return refuse(err, 502, "bad_upstream_response");
	trim_values(r->headers, r->n_headers);
	if (r->status == 101) {
		/* only a switch to the WebSocket that was asked for */
		if (!ws || !header_lists(r->headers, r->n_headers, "upgrade", "websocket", 9) ||
		    !connection_lists(r->headers, r->n_headers, "upgrade", 7))
			return refuse(err, 502, "bad_upstream_response");
		r->upgrade = true;
	}
	/* the framing, read while the parser still holds the head's flags */
	r->needs_eof = response_needs_eof(&r->parser);
	r->keep_alive = !r->needs_eof && http_should_keep_alive(&r->parser) != 0;
	eol = memchr(head, '\n', head_len);
	if (!eol)
		return refuse(err, 502, "bad_upstream_response");
	r->status_line = head;
	r->status_line_len = (size_t)(eol - head);
	if (r->status_line_len && head[r->status_line_len - 1] == '\r')
		r->status_line_len--;
	for (size_t i = 0; i < r->status_line_len; i++)
		if ((unsigned char)head[i] < 0x20 && head[i] != '\t')
			return refuse(err, 502, "bad_upstream_response");
	/* "HTTP/x.y SP ...": the version is replaced by the proxy's own */
	if (!memchr(head, ' ', r->status_line_len))
		return refuse(err, 502, "bad_upstream_response");
	return 0;
}

ssize_t proxy_response_feed(struct proxy_response *r, const char *data, size_t len,
			    bool *done, struct proxy_refusal *err)
{
	size_t n;
	enum http_errno e;

	*done = r->message_complete;
	if (r->message_complete)
		return 0;
	r->parser.data = r;
	n = http_parser_execute(&r->parser, &resp_settings, data, len);
	e = HTTP_PARSER_ERRNO(&r->parser);
	if (e == HPE_PAUSED || r->message_complete) {
		*done = true;
		return (ssize_t)n;
	}
	if (e != HPE_OK) {
		refuse(err, 502, "bad_upstream_response");
		return -1;
	}
	return (ssize_t)n;
}

int proxy_build_response_head(const struct proxy_response *r, bool keep_alive, struct evbuffer *out)
{
	const char *sp = memchr(r->status_line, ' ', r->status_line_len);
	struct head_buf b;

	if (!sp)
		return -1;   /* proxy_response_parse refuses such a status line */
	hb_init(&b);
	HB_LIT(&b, "HTTP/1.1");
	hb_add(&b, sp, r->status_line_len - (size_t)(sp - r->status_line));
	HB_LIT(&b, "\r\n");
	for (size_t i = 0; i < r->n_headers; i++) {
		const struct proxy_header *h = &r->headers[i];

		if (in_list(dropped_always, h->name, h->name_len))
			continue;
		/* a Connection header may not remove the framing */
		if (!is_framing(h->name, h->name_len) &&
		    connection_lists(r->headers, r->n_headers, h->name, h->name_len))
			continue;
		hb_header(&b, h);
	}
	if (r->upgrade)
		HB_LIT(&b, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
	if (r->status >= 200) {
		if (keep_alive)
			HB_LIT(&b, "Connection: keep-alive\r\n");
		else
			HB_LIT(&b, "Connection: close\r\n");
	}
	HB_LIT(&b, "\r\n");
	return hb_finish(&b, out);
}

const char *proxy_status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 421: return "Misdirected Request";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	}
	return "Error";
}

int proxy_error_response(int status, const char *reason, bool keep_alive, struct evbuffer *out)
{
	char body[256];
	int n;

	if (status == 403)
		n = snprintf(body, sizeof(body), "sluice: request denied by policy (%s)\n", reason);
	else
		n = snprintf(body, sizeof(body), "sluice: %s (%s)\n", proxy_status_text(status), reason);
	if (n < 0)
		return -1;
	/* a policy denial says so in the reason phrase, which apt, pip, wget and
	 * git print: "403 Forbidden by sluice policy: host_not_allowed" */
	return evbuffer_add_printf(out,
				   "HTTP/1.1 %d %s%s%s\r\n"
				   "Content-Type: text/plain; charset=utf-8\r\n"
				   "Content-Length: %d\r\n"
				   "%s: %s\r\n"
				   "Cache-Control: no-store\r\n"
				   "Connection: %s\r\n"
				   "\r\n%s",
				   status, proxy_status_text(status), status == 403 ? " by sluice policy: " : "",
				   status == 403 ? reason : "", n,
				   status == 403 ? "X-Sluice-Denied" : "X-Sluice-Error", reason,
				   keep_alive ? "keep-alive" : "close", body) < 0 ? -1 : 0;
}
