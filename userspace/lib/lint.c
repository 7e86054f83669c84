/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lint.c - findings for `sluice policy check`: things a valid policy may
 * say but a reviewer should look at twice.  See docs/policy.md "Lints".
 */
#include "netaddr.h"
#include "policy_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct relay {
	char host[SLUICE_HOST_MAX + 1];
	bool wildcard;
	char path[SLUICE_PATH_MAX + 1];   /* "" when the whole host */
	char category[32];
};

struct lints {
	struct sluice_lint *v;
	size_t n, cap;
	bool oom;
};

/* vsnprintf() behind a function boundary: clang-analyzer mistakes a
 * va_list used right after va_start() for an uninitialised one when
 * _FORTIFY_SOURCE wraps vsnprintf(). */
static void vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	vsnprintf(buf, len, fmt, ap);
}

/* A finding about entry `e`, or (e NULL) about the families item `f`. */
static void vadd(struct lints *l, enum sluice_lint_code code, const struct sluice_entry *e,
		 const struct sluice_policy_family *f, const char *fmt, va_list ap)
{
	static const char *const names[] = {
		[SLUICE_LINT_RELAY] = "relay",
		[SLUICE_LINT_WILDCARD] = "wildcard",
		[SLUICE_LINT_WIDE_CIDR] = "wide-cidr",
		[SLUICE_LINT_SPECIAL_RANGE] = "special-range",
		[SLUICE_LINT_DNS_PORT] = "dns-port",
		[SLUICE_LINT_PLAIN_HTTP_BODY] = "plain-http-body",
		[SLUICE_LINT_UNIX_DAEMON] = "unix-daemon",
		[SLUICE_LINT_URL_SHADOWED] = "url-shadowed",
		[SLUICE_LINT_CREDENTIAL_PLAIN_HTTP] = "credential-plain-http",
		[SLUICE_LINT_PROGRAM_INTERPRETER] = "program-interpreter",
		[SLUICE_LINT_FAMILY] = "family",
	};
	struct sluice_lint *x;

	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct sluice_lint *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->oom = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	x = &l->v[l->n++];
	memset(x, 0, sizeof(*x));
	x->code = code;
	x->code_name = names[code];
	if (e) {
		x->entry = e->index;
		x->line = e->line;
		x->column = e->column;
	} else if (f) {
		x->entry = SLUICE_LINT_NO_ENTRY;
		x->family = f->name;
		x->line = f->line;
		x->column = f->column;
	}
	vformat(x->message, sizeof(x->message), fmt, ap);
}

__attribute__((format(printf, 4, 5)))
static void add(struct lints *l, enum sluice_lint_code code, const struct sluice_entry *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vadd(l, code, e, NULL, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 3, 4)))
static void add_family(struct lints *l, const struct sluice_policy_family *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vadd(l, SLUICE_LINT_FAMILY, NULL, f, fmt, ap);
	va_end(ap);
}

/* --- the relay list ----------------------------------------------------------- */

static FILE *open_default_relays(void)
{
	static const char *const rel[] = { "relays.txt", "../policies/relays.txt",
					   "../share/sluice/relays.txt",
					   "../../../policies/relays.txt" /* build/tests/unit */ };
	const char *env = getenv("SLUICE_RELAYS");
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n;
	char *slash;

	if (env && *env)
		return fopen(env, "re");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		errno = ENOENT;
		return NULL;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash) {
		errno = ENOENT;
		return NULL;
	}
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
		f = fopen(path, "re");
		if (f)
			return f;
	}
	errno = ENOENT;
	return NULL;
}

/* One line: PATTERN CATEGORY [# comment].  PATTERN is a host name, a
 * "*." wildcard, or a host name followed by a path prefix. */
static int parse_relay_line(char *line, struct relay *r)
{
	char *pat, *cat, *rest, *slash, *host;
	const char *why;

	line[strcspn(line, "#\r\n")] = '\0';
	pat = strtok_r(line, " \t", &rest);
	if (!pat)
		return 0;    /* blank or comment */
	cat = strtok_r(NULL, " \t", &rest);
	if (!cat || strtok_r(NULL, " \t", &rest) || strlen(cat) >= sizeof(r->category))
		return -1;
	memset(r, 0, sizeof(*r));
	snprintf(r->category, sizeof(r->category), "%s", cat);
	slash = strchr(pat, '/');
	if (slash) {
		if (sluice_url_path_normalise(slash, r->path, sizeof(r->path), &why) < 0)
			return -1;
		*slash = '\0';
	}
	host = pat;
	if (strncmp(host, "*.", 2) == 0) {
		r->wildcard = true;
		host += 2;
	}
	if (sluice_host_normalise(host, r->host, sizeof(r->host), &why) < 0)
		return -1;
	return 1;
}

static int load_relays(const char *path, struct relay **out, size_t *n_out)
{
	FILE *f = path ? fopen(path, "re") : open_default_relays();
	struct relay *v = NULL, r;
	size_t n = 0, cap = 0;
	char line[1024];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int rc = parse_relay_line(line, &r);

		if (rc < 0) {
			free(v);
			fclose(f);
			errno = EINVAL;
			return -1;
		}
		if (rc == 0)
			continue;
		if (n == cap) {
			struct relay *t;

			cap = cap ? cap * 2 : 64;
			t = realloc(v, cap * sizeof(*t));
			if (!t) {
				free(v);
				fclose(f);
				errno = ENOMEM;
				return -1;
			}
			v = t;
		}
		v[n++] = r;
	}
	if (ferror(f)) {
		free(v);
		fclose(f);
		errno = EIO;
		return -1;
	}
	fclose(f);
	*out = v;
	*n_out = n;
	return 0;
}

/* Is `name` equal to or under `apex` (label boundary)? */
static bool at_or_under(const char *name, const char *apex)
{
	size_t n = strlen(name), a = strlen(apex);

	if (n == a)
		return strcmp(name, apex) == 0;
	return n > a && name[n - a - 1] == '.' && strcmp(name + n - a, apex) == 0;
}

static bool strictly_under(const char *name, const char *apex)
{
	return strlen(name) > strlen(apex) && at_or_under(name, apex);
}

/* Can some name be allowed by both (host, wildcard) patterns? */
static bool names_overlap(const char *h1, bool w1, const char *h2, bool w2)
{
	if (!w1 && !w2)
		return strcmp(h1, h2) == 0;
	if (w1 && !w2)
		return strictly_under(h2, h1);
	if (!w1 && w2)
		return strictly_under(h1, h2);
	return at_or_under(h1, h2) || at_or_under(h2, h1);
}

/* Do path prefixes a and b share any path? */
static bool paths_overlap(const char *a, const char *b)
{
	return sluice_path_prefix_match(a, b) || sluice_path_prefix_match(b, a);
}

static void lint_relays(struct lints *l, const struct sluice_entry *e,
			const struct relay *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *h = e->kind == SLUICE_ENTRY_HOST ? e->host : e->url_host;
		bool w = e->kind == SLUICE_ENTRY_HOST && e->wildcard;

		if (!names_overlap(h, w, r[i].host, r[i].wildcard))
			continue;
		const char *how;

		if (e->kind == SLUICE_ENTRY_URL && r[i].path[0] && !paths_overlap(e->url_path, r[i].path))
			continue;
		/* An https:// url entry is inspected: each request inside TLS
		 * must match its path prefix and methods.  Narrower than the
		 * whole name, it is not the open channel a host entry is. */
		if (e->kind == SLUICE_ENTRY_URL && strcmp(e->url_scheme, "https") == 0 && !r[i].path[0] &&
		    strcmp(e->url_path, "/") != 0)
			continue;
		if (e->kind == SLUICE_ENTRY_HOST)
			how = e->inspect ? " (inspect: true logs every request inside TLS but lets any path and method through; narrow it with https:// url entries)"
					 : " (a host entry is a passthrough: nothing inside TLS is checked; narrow it with https:// url entries, which are inspected)";
		else
			how = "";
		add(l, SLUICE_LINT_RELAY, e, "%s: reaches %s%s%s, a relay-capable service (%s): it can carry arbitrary data in or out%s",
		    e->name, r[i].wildcard ? "*." : "", r[i].host, r[i].path, r[i].category, how);
		return;   /* one relay finding per entry is enough */
	}
}

/* --- address ranges -------------------------------------------------------------- */

/* "10.0.0.0/8", or the address alone for a host prefix, into buf
 * (>= INET6_ADDRSTRLEN + 4 bytes). */
static void prefix_text(int family, const uint8_t *a, unsigned plen, char *buf, size_t len)
{
	char t[INET6_ADDRSTRLEN];

	if (!inet_ntop(family, a, t, sizeof(t)))
		snprintf(t, sizeof(t), "?");
	if (plen == (family == AF_INET ? 32u : 128u))
		snprintf(buf, len, "%s", t);
	else
		snprintf(buf, len, "%s/%u", t, plen);
}

/*
 * Every special range (netaddr_ranges(), the classifier's own table) the
 * entry overlaps, most specific first, up to the first one that contains
 * it entirely: 169.254.169.254/32 says "metadata" once, 169.254.0.0/16
 * says metadata and link-local, 0.0.0.0/0 lists them all.  A host entry
 * (/32, /128) is reported exactly when netaddr_classify() calls the
 * address special.  For one IPv6 address that embeds an IPv4 address
 * (NAT64, 6to4, Teredo, ...), the message names the IPv4 address too.
 */
static void lint_special(struct lints *l, const struct sluice_entry *e)
{
	size_t n;
	const struct netaddr_range *r = netaddr_ranges(&n);
	struct netaddr_info info;

	netaddr_classify(e->family, e->addr, &info);
	for (size_t i = 0; i < n; i++) {
		char where[INET6_ADDRSTRLEN + 8], v4[INET_ADDRSTRLEN], embeds[96] = "";

		if (r[i].family != e->family || !netaddr_prefix_overlap(e->addr, e->prefix_len, r[i].addr, r[i].prefix_len))
			continue;
		prefix_text(r[i].family, r[i].addr, r[i].prefix_len, where, sizeof(where));
		if (e->prefix_len == 128 && info.embeds_v4 && info.cls == r[i].cls &&
		    inet_ntop(AF_INET, info.v4, v4, sizeof(v4)))
			snprintf(embeds, sizeof(embeds), ", which embeds %s (%s)", v4,
				 info.v4_cls == NETADDR_PUBLIC ? "public" : netaddr_class_name(info.v4_cls));
		add(l, SLUICE_LINT_SPECIAL_RANGE, e, "%s: includes %s (%s)%s", e->name, r[i].what, where, embeds);
		if (e->prefix_len >= r[i].prefix_len)
			break;
	}
}

/*
 * Unix sockets of daemons that act for their clients: whoever reaches one
 * gets what the daemon can do (the container engines' sockets are root on
 * the host; D-Bus and systemd start and talk to anything; an SSH agent
 * signs for its keys).  A directory entry covering one counts too.
 */
static void lint_unix(struct lints *l, const struct sluice_entry *e)
{
	static const struct {
		const char *path, *what;
	} daemons[] = {
		{ "/run/docker.sock", "the Docker engine (root on the host)" },
		{ "/var/run/docker.sock", "the Docker engine (root on the host)" },
		{ "/run/containerd/containerd.sock", "containerd (root on the host)" },
		{ "/run/podman/podman.sock", "podman (root on the host)" },
		{ "/run/crio/crio.sock", "CRI-O (root on the host)" },
		{ "/run/dbus/system_bus_socket", "the D-Bus system bus" },
		{ "/var/run/dbus/system_bus_socket", "the D-Bus system bus" },
		{ "/run/systemd/private", "systemd's private bus" },
		{ "/run/sluice/control.sock", "sluice's own control socket" },
	};

	static const char *const shared_dirs[] = { "/tmp/", "/var/tmp/", "/dev/shm/", "/run/user/" };

	if (e->unix_abstract)
		return;
	/* the kernel follows symlinks after the check: a directory others
	 * (or the sandbox) can write to may hold a link to any socket */
	for (size_t i = 0; e->unix_prefix && i < sizeof(shared_dirs) / sizeof(shared_dirs[0]); i++)
		if (strncmp(e->unix_path, shared_dirs[i], strlen(shared_dirs[i])) == 0 ||
		    strncmp(shared_dirs[i], e->unix_path, strlen(e->unix_path)) == 0) {
			add(l, SLUICE_LINT_UNIX_DAEMON, e, "%s: a directory entry in or over %s: a symlink placed there can lead to any socket on the host",
			    e->name, shared_dirs[i]);
			return;
		}
	for (size_t i = 0; i < sizeof(daemons) / sizeof(daemons[0]); i++) {
		size_t n = strlen(e->unix_path);

		if (e->unix_prefix ? strncmp(daemons[i].path, e->unix_path, n) == 0 : strcmp(daemons[i].path, e->unix_path) == 0) {
			add(l, SLUICE_LINT_UNIX_DAEMON, e, "%s: reaches %s at %s: the sandbox gets what the daemon can do",
			    e->name, daemons[i].what, daemons[i].path);
			return;
		}
	}
	if (strstr(e->unix_path, "ssh") && strstr(e->unix_path, "agent"))
		add(l, SLUICE_LINT_UNIX_DAEMON, e, "%s: looks like an SSH agent socket: the sandbox can sign with its keys",
		    e->name);
}

static void lint_cidr(struct lints *l, const struct sluice_entry *e)
{
	if ((e->family == AF_INET && e->prefix_len < 24) ||
	    (e->family == AF_INET6 && e->prefix_len < 48))
		add(l, SLUICE_LINT_WIDE_CIDR, e, "%s: wider than a /%u (%s addresses allowed directly, not proxied)",
		    e->name, e->family == AF_INET ? 24 : 48,
		    e->family == AF_INET ?
			    (e->prefix_len == 0 ? "all IPv4" : "more than 256") : "more than a /48 of");
	lint_special(l, e);
	if (sluice_entry_has_port(e, 53) || sluice_entry_has_port(e, 853))
		add(l, SLUICE_LINT_DNS_PORT, e, "%s: port %s directly: a resolver other than sluice's own is a tunnel",
		    e->name, sluice_entry_has_port(e, 53) ? "53 (DNS)" : "853 (DNS over TLS)");
}

static void lint_host_names(struct lints *l, const struct sluice_entry *e)
{
	static const char *const names[] = { "localhost", "metadata.google.internal",
					     "metadata.goog", "instance-data.ec2.internal" };
	const char *h = e->kind == SLUICE_ENTRY_HOST ? e->host : e->url_host;
	bool w = e->kind == SLUICE_ENTRY_HOST && e->wildcard;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names_overlap(h, w, names[i], false) || at_or_under(h, names[i])) {
			add(l, SLUICE_LINT_SPECIAL_RANGE, e, "%s: %s is a loopback or cloud metadata name",
			    e->name, names[i]);
			return;
		}
}

/* Every family `families:` names: sockets of it meet no inet hook, so what
 * they reach, they reach unfiltered. */
static void lint_families(struct lints *l, const struct sluice_policy *p)
{
	static const struct { const char *name, *what; } notes[] = {
		{ "vsock", "reaches the VM host (and, on a host, its guests) directly" },
		{ "packet", "sends raw frames on any interface of the network namespace (with CAP_NET_RAW)" },
		{ "netlink", "every netlink protocol (audit, xfrm, netfilter, generic ...), not only route and sock_diag" },
		{ "xdp", "sends frames straight to a NIC queue (with CAP_NET_RAW)" },
		{ "bluetooth", "reaches nearby devices over the host's Bluetooth" },
		{ "can", "reaches a CAN bus of the host" },
		{ "alg", "the kernel's crypto API: no network of its own" },
	};

	for (size_t i = 0; i < p->families.n; i++) {
		const struct sluice_policy_family *f = &p->families.items[i];
		const char *what = "its traffic";

		for (size_t k = 0; k < sizeof(notes) / sizeof(notes[0]); k++)
			if (strcmp(notes[k].name, f->name) == 0)
				what = notes[k].what;
		add_family(l, f, "family:%s: %s; sockets of it are not judged by sluice (what they reach, they reach unfiltered)",
			   f->name, what);
	}
}

int sluice_policy_lint(const struct sluice_policy *p, const char *relays_path,
		       struct sluice_lint **out)
{
	struct lints l = { 0 };
	struct relay *relays = NULL;
	size_t n_relays = 0;

	*out = NULL;
	if (!p) {
		errno = EINVAL;
		return -1;
	}
	if (load_relays(relays_path, &relays, &n_relays) < 0)
		return -1;
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct sluice_entry *e = &p->entries[i];

		switch (e->kind) {
		case SLUICE_ENTRY_HOST:
			lint_relays(&l, e, relays, n_relays);
			if (e->wildcard)
				add(&l, SLUICE_LINT_WILDCARD, e, "%s: wildcard: every name under %s is allowed, including ones created later",
				    e->name, e->host);
			lint_host_names(&l, e);
			break;
		case SLUICE_ENTRY_URL: {
			char body[64] = "";

			lint_relays(&l, e, relays, n_relays);
			lint_host_names(&l, e);
			if (strcmp(e->url_scheme, "https") == 0) {
				/* inside inspected TLS a host entry for the name and
				 * port lets every request through: the url entry's
				 * path and methods no longer narrow anything */
				const struct sluice_entry *h = sluice_policy_match_host(p, e->url_host, e->url_port);

				if (h)
					add(&l, SLUICE_LINT_URL_SHADOWED, e, "%s: %s also allows %s on port %u, with any path and method: this url entry narrows nothing",
					    e->name, h->name, e->url_host, e->url_port);
				break;
			}
			if (strcmp(e->url_scheme, "http") != 0)
				break;
			if (e->credential)
				add(&l, SLUICE_LINT_CREDENTIAL_PLAIN_HTTP, e, "%s: credential %s is sent over plain http (allow_plain_http: true): anyone on the path reads the secret",
				    e->name, e->credential);
			for (size_t j = 0; j < e->n_methods; j++) {
				const char *m = e->methods[j];

				if (strcmp(m, "POST") && strcmp(m, "PUT") && strcmp(m, "PATCH") &&
				    strcmp(m, "DELETE"))
					continue;
				if (body[0])
					strncat(body, ",", sizeof(body) - strlen(body) - 1);
				strncat(body, m, sizeof(body) - strlen(body) - 1);
			}
			if (body[0])
				add(&l, SLUICE_LINT_PLAIN_HTTP_BODY, e, "%s: %s over plain http: request bodies go out unencrypted and can carry data",
				    e->name, body);
			break;
		}
		case SLUICE_ENTRY_CIDR:
			lint_cidr(&l, e);
			break;
		case SLUICE_ENTRY_UNIX:
			lint_unix(&l, e);
			break;
		}
		for (size_t j = 0; j < e->n_programs; j++) {
			const char *what = sluice_program_interpreter(e->programs[j].path);

			if (what)
				add(&l, SLUICE_LINT_PROGRAM_INTERPRETER, e, "%s: program %s is %s, an interpreter or a shell: it runs "
				    "whatever script or command it is given, so the entry is any such program's", e->name,
				    e->programs[j].path, what);
		}
	}
	lint_families(&l, p);
	free(relays);
	if (l.oom) {
		free(l.v);
		errno = ENOMEM;
		return -1;
	}
	*out = l.v;
	return (int)l.n;
}
