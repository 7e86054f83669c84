"""The bundled proxy (sluice-proxy): what a sandboxed client gets through it,
explicitly (HTTP_PROXY / CONNECT) and transparently (the kernel redirects
its connections), and the access-log line each attempt leaves.

Every case runs real clients (curl, or tests/integration/proxy_client.py for
raw bytes) under `sluice run` in the sandbox netns of the test world,
against origin servers (tests/integration/origin_server.py, HTTP :8081 and
HTTPS :8443 on every world address) and an upstream DNS server
(tests/integration/dns_server.py on 192.0.2.53) in the world netns.  Each
case checks the client's verdict, what the origin received (nothing, for
a refusal) and the proxy's JSON line.

The world's hosts are on documentation addresses, which the proxy refuses
to dial by default (reserved, not public): the cases pass the test-only
hatch --allow-private-upstream for them, and one case checks the refusal.
"""
import json
import os
import re
import signal
import subprocess
import time

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "proxy_client.py")
HTTP_PORT, TLS_PORT = 8081, 8443

ZONE = {
    "api.example.com": "192.0.2.10,2001:db8::10",
    "other.example.com": "192.0.2.10",
    "files.example.com": "198.51.100.10",
    "denied.example.org": "192.0.2.20",
    "a.cdn.example.net": "203.0.113.10",
    "cdn.example.net": "203.0.113.10",
    "evilapi.example.com": "192.0.2.20",
    "api.example.com.evil.org": "192.0.2.20",
    "v6only.example.com": "2001:db8::20",
    "private.example.com": "10.1.2.3,127.0.0.1",
    "meta.example.com": "169.254.169.254",
    "alias.example.com": "192.0.2.10",
    "cached.example.com": "192.0.2.10",
    "private-ttl.example.com": "10.1.2.3",
    # 192.0.2.99 is on the sandbox's link and no one's (no ARP answer: the
    # connect fails after about 3 s); 198.51.100.99 is routed to the world,
    # which drops it (a blackhole route: test_dial_tries_the_next_address...)
    "failover.example.com": "192.0.2.99,192.0.2.10",
    "blackhole.example.com": "198.51.100.99",
    "slowfail.example.com": "192.0.2.99,198.51.100.99",
}
REBIND = {"rebind.example.com": "192.0.2.10/127.0.0.1",
          "rebind-ttl.example.com": "192.0.2.10/127.0.0.1"}
# answers with a TTL (every other answer has TTL 0: never kept)
TTL = {"cached.example.com": 3, "rebind-ttl.example.com": 3, "private-ttl.example.com": 3}

POLICY = """\
version: 1
name: proxy-tests
allow:
  - host: api.example.com
    ports: [%(http)d, %(tls)d]
    why: the test API
  - host: other.example.com
    ports: [%(tls)d]
    why: a second name on the same origin, for SNI mismatches
  - host: "*.cdn.example.net"
    ports: [%(http)d, %(tls)d]
    why: wildcard
  - host: rebind.example.com
    ports: [%(http)d]
    why: DNS rebinding target
  - host: v6only.example.com
    ports: [%(http)d]
    why: reachable over IPv6 only
  - host: private.example.com
    ports: [%(http)d]
    why: resolves to private and loopback addresses only
  - host: meta.example.com
    ports: [%(http)d]
    why: resolves to the metadata address
  - url: http://files.example.com:%(http)d/pub/
    methods: [GET, HEAD]
    why: path-limited downloads
  - host: alias.example.com
    ports: [%(http)d]
    why: a second name on the API's address (upstream connections are per name)
  - host: cached.example.com
    ports: [%(http)d]
    why: answers with a TTL (the proxy's DNS cache)
  - host: rebind-ttl.example.com
    ports: [%(http)d]
    why: DNS rebinding after the TTL
  - host: private-ttl.example.com
    ports: [%(http)d]
    why: a private answer with a TTL, never kept (nothing to dial in it)
  - host: failover.example.com
    ports: [%(http)d]
    why: a first address that fails, then the origin
  - host: blackhole.example.com
    ports: [%(http)d]
    why: an address nothing answers
  - host: slowfail.example.com
    ports: [%(http)d]
    why: a first address that fails, then one nothing answers
""" % {"http": HTTP_PORT, "tls": TLS_PORT}

HATCH = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"]


def daemon_hatch():
    """`sluice daemon` options that let every sandbox's proxy dial, and its
    resolver answer, the test world's documentation ranges (HATCH)."""
    out = []
    for c in HATCH:
        out += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    return out


class Env:
    """Servers of the world for these tests, started once per World."""

    def __init__(self, w):
        self.w = w
        d = w.tmp
        self.cert, self.key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        names = ["api.example.com", "other.example.com", "*.cdn.example.net", "denied.example.org"]
        W.sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key,
             "-out", self.cert, "-days", "2", "-subj", "/CN=api.example.com",
             "-addext", "subjectAltName=" + ",".join("DNS:" + n for n in names))
        self.origin_log = os.path.join(d, "origin.jsonl")
        self.dns_log = os.path.join(d, "dns.jsonl")
        w.start_server([os.path.join(HERE, "origin_server.py"), "--http", str(HTTP_PORT),
                        "--https", str(TLS_PORT), "--cert", self.cert, "--key", self.key,
                        "--log", self.origin_log], name="origin")
        dns = [os.path.join(HERE, "dns_server.py"), "--listen", "192.0.2.53:53", "--log", self.dns_log,
               "--default-ttl", "0"]
        for name, addrs in ZONE.items():
            dns += ["--zone", "%s=%s" % (name, addrs)]
        for name, seq in REBIND.items():
            dns += ["--rebind", "%s=%s" % (name, seq)]
        for name, ttl in TTL.items():
            dns += ["--ttl", "%s=%d" % (name, ttl)]
        w.start_server(dns, name="dns")
        self.policy = w.write("proxy-policy.yaml", POLICY)

    def origin(self):
        try:
            with open(self.origin_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def mark(self):
        return len(self.origin())

    def dns_queries(self):
        try:
            with open(self.dns_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def arrived(self, mark):
        return [r for r in self.origin()[mark:] if r.get("event") == "request"]

    def run(self, argv, proxy_args=(), hatch=True, policy=None, mode=None, env=None, timeout=120):
        extra = ["--upstream-dns", "192.0.2.53"]
        if mode:
            extra += ["--mode", mode]
        args = list(proxy_args) + (sum((["--allow-private-upstream", c] for c in HATCH), []) if hatch else [])
        for a in args:
            extra += ["--proxy-arg", a]
        r = self.w.sluice_run(argv, policy=policy or self.policy, extra=extra, timeout=timeout, env=env)
        r.proxy = [e for e in r.events if e.get("event.dataset") == "sluice.proxy"]
        return r

    def client(self, steps, **kw):
        path = self.w.write("plan-%d.json" % time.monotonic_ns(), json.dumps(steps))
        r = self.run(["python3", CLIENT, path], **kw)
        for line in reversed(r.stdout.splitlines()):
            if line.startswith("{"):
                r.results = json.loads(line)["results"]
                return r
        raise AssertionError("client printed nothing: %r" % r)

    def curl(self, *args, **kw):
        return self.run(["curl", "-sS", "--max-time", "10", "--cacert", self.cert] + list(args), **kw)


def env(w):
    if not hasattr(w, "proxy_env"):
        w.proxy_env = Env(w)
    return w.proxy_env


def explicit(target, headers="", method="GET", body=""):
    """An absolute-URI request for the explicit proxy."""
    return "%s %s HTTP/1.1\r\n%s\r\n%s" % (method, target, headers, body)


def only(lines, **want):
    """The one proxy line matching `want` (dotted ECS names as keys)."""
    found = [e for e in lines if all(e.get(k.replace("__", ".")) == v for k, v in want.items())]
    assert len(found) == 1, "expected one line with %r, got %d: %s" % (want, len(found), json.dumps(lines, indent=1))
    return found[0]


def check_common(line, outcome, reason, action):
    assert line["event.outcome"] == outcome, line
    assert line["event.reason"] == reason, line
    assert line["event.action"] == action, line
    for k in ("@timestamp", "sluice.sandbox", "sluice.policy_sha256", "rule.ruleset", "sluice.mode",
              "source.ip", "source.port", "sluice.cgroup_id", "process.pid", "event.duration"):
        assert k in line, (k, line)
    assert line["rule.version"] == line["sluice.policy_sha256"] and len(line["rule.version"]) == 64, line


# --- explicit proxy: absolute-URI HTTP ------------------------------------------

def test_explicit_http_allowed_and_denied(w):
    e = env(w)
    m = e.mark()
    r = e.client([
        {"op": "http", "via": "proxy", "send": explicit("http://api.example.com:%d/hello?q=1" % HTTP_PORT)},
        {"op": "http", "via": "proxy", "send": explicit("http://denied.example.org:%d/" % HTTP_PORT)},
    ])
    ok, denied = r.results
    assert ok["status"] == 200 and json.loads(ok["body"])["path"] == "/hello?q=1", ok
    assert denied["status"] == 403 and denied["headers"].get("x-sluice-denied") == "host_not_allowed", denied
    assert "denied by policy" in denied["body"]
    got = e.arrived(m)
    assert [g["path"] for g in got] == ["/hello?q=1"], got
    line = only(r.proxy, url__domain="api.example.com")
    check_common(line, "success", "allowed", "proxy-http")
    assert line["url.full"] == "http://api.example.com:%d/hello?q=1" % HTTP_PORT
    assert line["http.request.method"] == "GET" and line["http.response.status_code"] == 200
    assert line["sluice.form"] == "explicit" and line["rule.name"].endswith("host:api.example.com")
    assert line["destination.ip"] == "192.0.2.10" and line["destination.port"] == HTTP_PORT
    assert line["http.request.bytes"] > 0 and line["http.response.bytes"] > 0
    line = only(r.proxy, url__domain="denied.example.org")
    check_common(line, "failure", "host_not_allowed", "proxy-http")
    assert line["http.response.status_code"] == 403 and "destination.ip" not in line


def test_url_entry_path_and_method(w):
    e = env(w)
    m = e.mark()
    base = "http://files.example.com:%d" % HTTP_PORT
    r = e.client([
        {"op": "http", "via": "proxy", "send": explicit(base + "/pub/file.txt")},
        {"op": "http", "via": "proxy", "send": explicit(base + "/private/key")},
        {"op": "http", "via": "proxy", "send": explicit(base + "/pub/../private/key")},
        {"op": "http", "via": "proxy", "send": explicit(base + "/pub/x", "Content-Length: 2\r\n", "POST", "hi")},
        {"op": "http", "via": "proxy", "send": explicit(base + "/pub%2F..%2Fprivate")},
        {"op": "http", "via": "proxy", "send": explicit(base + "/pubx")},
        {"op": "http", "via": "proxy", "send": explicit("http://user:pw@files.example.com:%d/pub/a" % HTTP_PORT)},
    ])
    st = [(x["status"], x["headers"].get("x-sluice-denied")) for x in r.results]
    assert st == [(200, None), (403, "path_not_allowed"), (403, "path_not_allowed"),
                  (403, "method_not_allowed"), (403, "bad_path"), (403, "path_not_allowed"),
                  (403, "userinfo")], st
    assert [g["path"] for g in e.arrived(m)] == ["/pub/file.txt"]
    line = only(r.proxy, event__reason="allowed")
    assert line["rule.name"].startswith("allow[7] url:"), line
    line = only(r.proxy, event__reason="method_not_allowed")
    assert line["http.request.method"] == "POST" and line["url.full"].endswith("/pub/x")
    # the dot segments were removed before matching, and the log says so
    assert any(l["url.full"].endswith("/private/key") for l in r.proxy if l["event.reason"] == "path_not_allowed")


def test_hop_by_hop_and_proxy_headers_dropped(w):
    e = env(w)
    m = e.mark()
    hdrs = ("Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"
            "Connection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\n"
            "X-Forwarded-For: 10.0.0.1\r\nForwarded: for=10.0.0.1\r\nVia: 1.1 evil\r\n"
            "Upgrade: h2c\r\nTE: trailers\r\nX-Kept: yes\r\n")
    r = e.client([{"op": "http", "via": "proxy",
                   "send": explicit("http://api.example.com:%d/h" % HTTP_PORT, "Host: ignored.example\r\n" + hdrs)}])
    assert r.results[0]["status"] == 200, r.results
    got = e.arrived(m)[0]["headers"]
    names = {k.lower() for k in got}
    for h in ("proxy-authorization", "proxy-connection", "x-secret", "keep-alive", "x-forwarded-for",
              "forwarded", "via", "upgrade", "te"):
        assert h not in names, (h, got)
    # the client's Connection header never passes; the proxy's own upstream
    # request asks for nothing (HTTP/1.1: persistent, the pool may reuse it)
    assert got["X-Kept"] == "yes" and "Connection" not in got, got
    assert got["Host"] == "api.example.com:%d" % HTTP_PORT   # the request-target wins over Host
    assert r.results[0]["headers"]["connection"] == "keep-alive"


def test_host_header_replaced_is_on_the_line(w):
    """An absolute-form request is sent with Host = the URI's authority (RFC
    9112 3.2.2); the line names the Host the client sent when it differed."""
    e = env(w)
    m = e.mark()
    url = "http://api.example.com:%d" % HTTP_PORT
    # curl with a Host header of its own, through the explicit proxy
    r = e.run(["sh", "-c", 'curl -sS --max-time 10 -x "$SLUICE_PROXY" -H "Host: other.example" %s/curl-host'
               % url])
    assert r.rc == 0 and json.loads(r.stdout)["path"] == "/curl-host", r
    got = e.arrived(m)
    assert len(got) == 1 and got[0]["headers"]["Host"] == "api.example.com:%d" % HTTP_PORT, got
    line = only(r.proxy, event__action="proxy-http")
    check_common(line, "success", "allowed", "proxy-http")
    assert line["sluice.host_header_replaced"] == "other.example", line
    assert line["url.domain"] == "api.example.com", line
    # same name in another case with the port: nothing replaced, no field;
    # the name without the URI's port, and no host at all (a space): replaced,
    # sanitised like url.domain on a 400
    r = e.client([
        {"op": "http", "via": "proxy", "send": explicit(url + "/same", "Host: API.example.com:%d\r\n" % HTTP_PORT)},
        {"op": "http", "via": "proxy", "send": explicit(url + "/noport", "Host: api.example.com\r\n")},
        {"op": "http", "via": "proxy", "send": explicit(url + "/odd", "Host: evil example\r\n")},
        {"op": "http", "via": "proxy", "send": explicit(url + "/none")},
    ])
    assert [x["status"] for x in r.results] == [200, 200, 200, 200], r.results
    by_path = {l["url.full"].rsplit("/", 1)[1]: l for l in r.proxy}
    assert set(by_path) == {"same", "noport", "odd", "none"}, r.proxy
    assert "sluice.host_header_replaced" not in by_path["same"], by_path["same"]
    assert "sluice.host_header_replaced" not in by_path["none"], by_path["none"]
    assert by_path["noport"]["sluice.host_header_replaced"] == "api.example.com", by_path["noport"]
    assert by_path["odd"]["sluice.host_header_replaced"] == "evil?example", by_path["odd"]


def test_chunked_body_reframed(w):
    e = env(w)
    m = e.mark()
    body = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    r = e.client([{"op": "http", "via": "proxy",
                   "send": explicit("http://api.example.com:%d/up" % HTTP_PORT, "Transfer-Encoding: chunked\r\n",
                                    "POST", body)}])
    assert r.results[0]["status"] == 200 and json.loads(r.results[0]["body"])["body"] == "hello world", r.results
    assert e.arrived(m)[0]["body_len"] == 11
    line = only(r.proxy, http__request__method="POST")
    assert line["event.outcome"] == "success" and line["http.request.bytes"] >= len(body)


# --- CONNECT ----------------------------------------------------------------------

def test_connect_with_curl_https_proxy(w):
    e = env(w)
    m = e.mark()
    r = e.run(["sh", "-c", 'HTTPS_PROXY="$SLUICE_PROXY" curl -sS --max-time 10 --cacert %s '
               'https://api.example.com:%d/via-connect' % (e.cert, TLS_PORT)])
    assert r.rc == 0 and json.loads(r.stdout)["path"] == "/via-connect", r
    got = e.arrived(m)
    assert len(got) == 1 and got[0]["sni"] == "api.example.com"
    line = only(r.proxy, event__action="proxy-connect")
    check_common(line, "success", "allowed", "proxy-connect")
    assert line["tls.client.server_name"] == "api.example.com" and line["url.domain"] == "api.example.com"
    assert line["http.response.status_code"] == 200 and line["source.bytes"] > 0 and line["destination.bytes"] > 0
    assert line["destination.ip"] in ("192.0.2.10", "2001:db8::10")


def test_connect_denied_and_sni_checks(w):
    e = env(w)
    m = e.mark()
    tls = {"op": "tls", "via": "proxy", "cafile": e.cert}
    r = e.client([
        dict(tls, connect="denied.example.org:%d" % TLS_PORT, sni="denied.example.org"),
        dict(tls, connect="api.example.com:%d" % TLS_PORT, sni="other.example.com"),
        dict(tls, connect="api.example.com:%d" % TLS_PORT, sni=None, verify=False),
        dict(tls, connect="api.example.com:%d" % TLS_PORT, sni="api.example.com", ech=True),
        dict(tls, connect="API.Example.COM.:%d" % TLS_PORT, sni="api.example.com", path="/case"),
    ])
    den, mism, nosni, ech, case = r.results
    assert den["connect_status"] == 403 and den["connect_headers"]["x-sluice-denied"] == "host_not_allowed", den
    assert mism["connect_status"] == 200 and mism.get("status") is None and "error" in mism, mism
    assert nosni["connect_status"] == 200 and nosni.get("status") is None, nosni
    assert ech["connect_status"] == 200 and ech.get("status") is None, ech
    assert case["status"] == 200, case
    # the origin saw no request of the refused tunnels, no handshake, and
    # not even a TCP connection: a CONNECT is dialed only once its
    # ClientHello passed
    got = e.arrived(m)
    assert [g["path"] for g in got] == ["/case"], got
    accepts = [a for a in e.origin()[m:] if a.get("event") == "accept"]
    assert len(accepts) == 1, accepts
    for reason in ("sni_mismatch", "no_sni", "ech"):
        line = only(r.proxy, event__reason=reason)
        check_common(line, "failure", reason, "proxy-connect")
    assert only(r.proxy, event__reason="sni_mismatch")["tls.client.server_name"] == "other.example.com"
    assert only(r.proxy, event__reason="host_not_allowed")["http.response.status_code"] == 403


BANNER = """\
import socket, sys, threading
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.10", 2222))
s.listen(16)
open(sys.argv[sys.argv.index("--ready") + 1], "w").close()
def serve(c):
    c.sendall(b"SSH-2.0-sluice-test\\r\\n")
    c.sendall(c.recv(100).upper())
    c.close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"""

# The start of a client script: a CONNECT to api.example.com:PORT through
# the proxy, read to the end of the answer's head (in buf).
CONNECT_HEAD = """\
import os, socket, ssl, sys, time, urllib.parse
u = urllib.parse.urlsplit(os.environ["SLUICE_PROXY"])
c = socket.create_connection((u.hostname, u.port), timeout=10)
c.sendall(b"CONNECT api.example.com:%(port)d HTTP/1.1\\r\\nHost: api.example.com:%(port)d\\r\\n\\r\\n")
buf = b""
while b"\\r\\n\\r\\n" not in buf:
    buf += c.recv(1000)
"""

CLIENT_SERVER_FIRST = CONNECT_HEAD % {"port": 2222} + """\
head, rest = buf.split(b"\\r\\n\\r\\n", 1)
t0 = time.time()
while b"\\n" not in rest:
    rest += c.recv(1000)
waited = time.time() - t0
c.sendall(b"ping")
echo = c.recv(100)
print(head.split(b"\\r\\n")[0].decode(), rest.strip().decode(), echo.decode(), "%.2f" % waited)
"""


def test_connect_server_first_protocol(w):
    """SSH through an HTTP proxy (ProxyCommand, corkscrew): the client sends
    nothing until the server's banner.  The dial waits for a ClientHello to
    check, then, after a short silence, dials on the CONNECT host."""
    e = env(w)
    if not hasattr(w, "banner"):
        w.banner = w.start_server([w.write("banner.py", BANNER)], name="banner")
    pol = w.write("server-first.yaml", POLICY.replace("    ports: [%d, %d]\n    why: the test API\n" % (HTTP_PORT, TLS_PORT),
                                                      "    ports: [%d, %d, 2222]\n    why: the test API, and ssh\n"
                                                      % (HTTP_PORT, TLS_PORT), 1))
    assert "2222" in open(pol).read()
    r = e.run(["python3", "-c", CLIENT_SERVER_FIRST], policy=pol)
    assert r.rc == 0, r
    assert r.stdout.startswith("HTTP/1.1 200") and "SSH-2.0-sluice-test" in r.stdout and "PING" in r.stdout, r.stdout
    assert float(r.stdout.split()[-1]) < 5, r.stdout
    line = only(r.proxy, event__action="proxy-connect")
    check_common(line, "success", "allowed", "proxy-connect")
    assert line["destination.port"] == 2222 and line["destination.bytes"] > 0, line


# A ClientHello whose first five bytes (its record's header) come at once
# after the 200 and the rest a second later, past the server-first wait.
CLIENT_SLOW_HELLO = CONNECT_HEAD % {"port": TLS_PORT} + """\
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname=sys.argv[1])
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = out.read()
c.sendall(hello[:5])
time.sleep(1.0)
c.sendall(hello[5:])
try:
    how = "data" if c.recv(100) else "eof"
except OSError as e:
    how = type(e).__name__
print(buf.split(b"\\r\\n")[0].decode(), how)
"""


def test_connect_hello_begun_before_the_server_first_wait_is_checked(w):
    """A ClientHello that began before the server-first wait (250 ms) ended
    is waited for and checked, however long the rest takes within the
    header time: its SNI must still be the CONNECT host's."""
    e = env(w)
    m = e.mark()
    bad = e.run(["python3", "-c", CLIENT_SLOW_HELLO, "other.example.com"])
    good = e.run(["python3", "-c", CLIENT_SLOW_HELLO, "api.example.com"])
    assert bad.rc == 0 and good.rc == 0, (bad, good)
    assert bad.stdout.split() in (["HTTP/1.1", "200", "Connection", "established", how]
                                  for how in ("eof", "ConnectionResetError")), bad.stdout
    assert good.stdout.split() == ["HTTP/1.1", "200", "Connection", "established", "data"], good.stdout
    line = only(bad.proxy, event__action="proxy-connect")
    check_common(line, "failure", "sni_mismatch", "proxy-connect")
    assert only(good.proxy, event__action="proxy-connect")["tls.client.server_name"] == "api.example.com"
    accepts = [a for a in e.origin()[m:] if a.get("event") == "accept"]
    assert len(accepts) == 1, accepts


# --- transparent -----------------------------------------------------------------------

def test_curl_noproxy_is_still_proxied(w):
    e = env(w)
    m = e.mark()
    r = e.curl("--noproxy", "*", "--resolve", "api.example.com:%d:192.0.2.10" % TLS_PORT,
               "https://api.example.com:%d/transparent" % TLS_PORT)
    assert r.rc == 0 and json.loads(r.stdout)["path"] == "/transparent", r
    line = only(r.proxy, event__action="proxy-tls")
    check_common(line, "success", "allowed", "proxy-tls")
    assert line["sluice.form"] == "transparent" and line["tls.client.server_name"] == "api.example.com"
    assert (line["sluice.orig_dst.ip"], line["sluice.orig_dst.port"]) == ("192.0.2.10", TLS_PORT) and line["sluice.orig_dst_mismatch"] is False
    r = e.curl("--noproxy", "*", "--resolve", "api.example.com:%d:192.0.2.10" % HTTP_PORT,
               "http://api.example.com:%d/plain" % HTTP_PORT)
    assert r.rc == 0 and json.loads(r.stdout)["path"] == "/plain", r
    line = only(r.proxy, event__action="proxy-http")
    assert line["sluice.form"] == "transparent" and line["url.full"].endswith("/plain")
    assert [g["path"] for g in e.arrived(m)] == ["/transparent", "/plain"]


def test_transparent_denials(w):
    e = env(w)
    m = e.mark()
    tls = {"op": "tls", "via": "direct", "addr": "192.0.2.10", "port": TLS_PORT, "cafile": e.cert}
    http = {"op": "http", "via": "direct", "addr": "192.0.2.10", "port": HTTP_PORT}
    r = e.client([
        dict(tls, sni="denied.example.org"),
        dict(tls, sni=None, verify=False),
        dict(tls, sni="api.example.com", ech=True),
        dict(http, send="GET / HTTP/1.1\r\nHost: denied.example.org\r\n\r\n"),
        dict(http, send="GET / HTTP/1.1\r\nHost: api.example.com:9999\r\n\r\n"),
        dict(http, send="GET / HTTP/1.1\r\n\r\n"),
        dict(http, send="SSH-2.0-OpenSSH_9.2\r\n"),
        # allowed name, but the client connected to another address: dial the name's, log it
        dict(http, addr="198.51.100.10", send="GET /elsewhere HTTP/1.1\r\nHost: api.example.com\r\n\r\n"),
    ])
    res = r.results
    assert all(x.get("status") is None for x in res[:3]), res[:3]
    assert res[3]["status"] == 403 and res[3]["headers"]["x-sluice-denied"] == "host_not_allowed"
    assert res[4]["status"] == 403 and res[4]["headers"]["x-sluice-denied"] == "host_port_mismatch"
    assert res[5]["status"] == 400
    assert res[6].get("status") is None
    assert res[7]["status"] == 200 and json.loads(res[7]["body"])["origin"] == "192.0.2.10", res[7]
    assert [g["path"] for g in e.arrived(m)] == ["/elsewhere"]
    only(r.proxy, event__action="proxy-tls", event__reason="host_not_allowed")
    only(r.proxy, event__reason="no_sni")
    only(r.proxy, event__reason="ech")
    only(r.proxy, event__reason="missing_host")
    only(r.proxy, event__reason="unrecognised_protocol")
    line = only(r.proxy, event__reason="allowed")
    assert line["sluice.orig_dst_mismatch"] is True and (line["sluice.orig_dst.ip"], line["sluice.orig_dst.port"]) == ("198.51.100.10", HTTP_PORT)
    assert line["destination.ip"] == "192.0.2.10"


def test_transparent_ipv6(w):
    e = env(w)
    m = e.mark()
    r = e.client([
        {"op": "http", "via": "direct", "addr": "2001:db8::10", "port": HTTP_PORT,
         "send": "GET /six HTTP/1.1\r\nHost: api.example.com\r\n\r\n"},
        {"op": "tls", "via": "direct", "addr": "2001:db8::10", "port": TLS_PORT, "sni": "api.example.com",
         "cafile": e.cert, "path": "/six-tls"},
    ])
    assert r.results[0]["status"] == 200 and json.loads(r.results[0]["body"])["origin"] == "2001:db8::10", r.results
    assert r.results[1]["status"] == 200, r.results
    assert sorted(g["path"] for g in e.arrived(m)) == ["/six", "/six-tls"]
    for line in r.proxy:
        assert line["event.outcome"] == "success", line
        assert line["sluice.orig_dst.ip"] == "2001:db8::10", line
        assert line["destination.ip"] == "2001:db8::10" and line["sluice.orig_dst_mismatch"] is False, line
        assert ":" in line["source.ip"], line


def test_names_ip_literals_and_boundaries(w):
    e = env(w)
    m = e.mark()
    p = HTTP_PORT
    cases = [
        ("http://api.example.com.:%d/dot" % p, 200, None),
        ("http://API.EXAMPLE.com:%d/case" % p, 200, None),
        ("http://a.cdn.example.net:%d/wild" % p, 200, None),
        ("http://cdn.example.net:%d/" % p, 403, "host_not_allowed"),
        ("http://evilapi.example.com:%d/" % p, 403, "host_not_allowed"),
        ("http://api.example.com.evil.org:%d/" % p, 403, "host_not_allowed"),
        ("http://192.0.2.10:%d/" % p, 403, "ip_literal"),
        ("http://[::ffff:192.0.2.10]:%d/" % p, 403, "ip_literal"),
        ("http://[2001:db8::10]:%d/" % p, 403, "ip_literal"),
        ("http://3221225994:%d/" % p, 403, "ip_literal"),
        ("http://0xc0.0.2.10:%d/" % p, 403, "ip_literal"),
        ("http://0300.0.2.012:%d/" % p, 403, "ip_literal"),
        ("http://api%%2eexample.com:%d/" % p, None, None),   # refused: 400 or 403, never forwarded
    ]
    steps = [{"op": "http", "via": "proxy", "send": explicit(u)} for u, _, _ in cases]
    steps.append({"op": "http", "via": "direct", "addr": "192.0.2.10", "port": p,
                  "send": "GET / HTTP/1.1\r\nHost: 192.0.2.10:%d\r\n\r\n" % p})
    steps.append({"op": "tls", "via": "proxy", "connect": "192.0.2.10:%d" % TLS_PORT, "sni": "api.example.com",
                  "cafile": e.cert})
    r = e.client(steps)
    for (u, status, reason), res in zip(cases, r.results):
        if status is None:
            assert res["status"] in (400, 403), (u, res)
            continue
        assert res["status"] == status, (u, res)
        assert res["headers"].get("x-sluice-denied") == reason, (u, res)
    assert r.results[-2]["status"] == 403 and r.results[-2]["headers"]["x-sluice-denied"] == "ip_literal"
    assert r.results[-1]["connect_status"] == 403
    assert sorted(g["path"] for g in e.arrived(m)) == ["/case", "/dot", "/wild"]
    assert len([l for l in r.proxy if l["event.reason"] == "ip_literal"]) == 8
    line = only(r.proxy, url__full="http://api.example.com:%d/dot" % p)
    assert line["url.domain"] == "api.example.com"


def test_smuggling_framings_get_400(w):
    e = env(w)
    m = e.mark()
    t = "POST http://api.example.com:%d/s HTTP/1.1\r\n" % HTTP_PORT
    cases = [
        ("cl_te_conflict", t + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("duplicate_content_length", t + "Content-Length: 1\r\nContent-Length: 1\r\n\r\nx"),
        ("bad_content_length", t + "Content-Length: +1\r\n\r\nx"),
        ("obs_fold", t + "X-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n"),
        ("bare_lf", t + "Content-Length: 0\n\r\n"),
        ("bad_transfer_encoding", t + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
        ("bad_transfer_encoding", t + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("bad_transfer_encoding", t + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"),
        ("bad_header_name", t + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n"),
        ("bad_header_name", t + "Content-Length: 0\r\nno colon here\r\n\r\n"),
    ]
    r = e.client([{"op": "http", "via": "proxy", "send": s} for _, s in cases])
    for (reason, _), res in zip(cases, r.results):
        assert res["status"] == 400 and res["headers"].get("x-sluice-error") == reason, (reason, res)
    assert e.arrived(m) == []
    for reason in set(c[0] for c in cases):
        for line in [l for l in r.proxy if l["event.reason"] == reason]:
            check_common(line, "failure", reason, "proxy-http")
            assert line["http.response.status_code"] == 400


def test_limits_414_431(w):
    e = env(w)
    r = e.client([
        {"op": "http", "via": "proxy", "send": explicit("http://api.example.com:%d/%s" % (HTTP_PORT, "a" * 9000))},
        {"op": "http", "via": "proxy",
         "send": explicit("http://api.example.com:%d/" % HTTP_PORT, "".join("X-H%d: %s\r\n" % (i, "v" * 500) for i in range(80)))},
        {"op": "http", "via": "proxy",
         "send": explicit("http://api.example.com:%d/" % HTTP_PORT, "".join("X-%d: 1\r\n" % i for i in range(150)))},
    ])
    assert [x["status"] for x in r.results] == [414, 431, 431], r.results
    only(r.proxy, event__reason="uri_too_long")
    assert len([l for l in r.proxy if l["event.reason"] == "headers_too_large"]) == 2


# --- keep-alive, upstream reuse, DNS cache -------------------------------------------------

def get(url, headers=""):
    return explicit(url, headers)


def test_keepalive_each_request_decided_and_logged(w):
    """Several requests on one client connection: each is decided and logged
    on its own; a denial in between does not poison what follows."""
    e = env(w)
    m = e.mark()
    api, files = "http://api.example.com:%d" % HTTP_PORT, "http://files.example.com:%d" % HTTP_PORT
    r = e.client([{"op": "session", "via": "proxy", "sends": [
        get(api + "/ka1"),
        get("http://denied.example.org:%d/ka" % HTTP_PORT),
        get(api + "/ka2"),
        get(files + "/private/ka"),
        get(files + "/pub/ka3"),
        get(api + "/ka4", "Connection: close\r\n"),
    ]}])
    res = r.results[0]
    st = [(x["status"], x["headers"].get("x-sluice-denied")) for x in res["responses"]]
    assert st == [(200, None), (403, "host_not_allowed"), (200, None), (403, "path_not_allowed"),
                  (200, None), (200, None)], res
    assert [x["headers"].get("connection") for x in res["responses"]] == ["keep-alive"] * 5 + ["close"], res
    assert res["closed"], res
    assert [g["path"] for g in e.arrived(m)] == ["/ka1", "/ka2", "/pub/ka3", "/ka4"]
    lines = sorted(r.proxy, key=lambda l: l["sluice.request_seq"])
    assert [l["sluice.request_seq"] for l in lines] == [1, 2, 3, 4, 5, 6], lines
    assert {l["source.port"] for l in lines} == {res["port"]}, lines
    assert [l["event.reason"] for l in lines] == ["allowed", "host_not_allowed", "allowed", "path_not_allowed",
                                                  "allowed", "allowed"], lines
    for l, (outcome, reason) in zip(lines, [("success", "allowed"), ("failure", "host_not_allowed"),
                                            ("success", "allowed"), ("failure", "path_not_allowed"),
                                            ("success", "allowed"), ("success", "allowed")]):
        check_common(l, outcome, reason, "proxy-http")
        assert l["sluice.form"] == "explicit"
    assert [l["url.domain"] for l in lines] == ["api.example.com", "denied.example.org", "api.example.com",
                                                "files.example.com", "files.example.com", "api.example.com"]
    assert "destination.ip" not in lines[1] and "destination.ip" not in lines[3]
    # the API's requests went over one upstream connection (idle in the pool in between)
    ka = {g["path"]: g["peer"] for g in e.arrived(m)}
    assert ka["/ka1"] == ka["/ka2"] == ka["/ka4"], ka
    assert [l.get("sluice.upstream_reused") for l in lines if l["url.domain"] == "api.example.com"] == \
        [False, True, True], lines


def test_keepalive_transparent_and_pipelined(w):
    """The transparent form keeps the connection too (each request decided
    by its own Host); pipelined requests are answered one after the other,
    in order, each decided on its own."""
    e = env(w)
    m = e.mark()
    hdr = "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
    r = e.client([
        {"op": "session", "via": "direct", "addr": "192.0.2.10", "port": HTTP_PORT, "sends": [
            hdr % ("/t1", "api.example.com", HTTP_PORT),
            hdr % ("/t2", "denied.example.org", HTTP_PORT),
            hdr % ("/t3", "api.example.com", HTTP_PORT)]},
        {"op": "session", "via": "proxy", "pipeline": True, "sends": [
            get("http://api.example.com:%d/p1" % HTTP_PORT),
            get("http://denied.example.org:%d/p2" % HTTP_PORT),
            explicit("http://api.example.com:%d/p3" % HTTP_PORT, "Content-Length: 5\r\n", "POST", "hello"),
            get("http://api.example.com:%d/p4" % HTTP_PORT)]},
    ])
    tr, pl = r.results
    assert [x["status"] for x in tr["responses"]] == [200, 403, 200], tr
    assert not tr["closed"], tr
    assert [x["status"] for x in pl["responses"]] == [200, 403, 200, 200], pl
    assert json.loads(pl["responses"][2]["body"])["body"] == "hello", pl
    assert json.loads(pl["responses"][3]["body"])["path"] == "/p4", pl
    assert [g["path"] for g in e.arrived(m)] == ["/t1", "/t3", "/p1", "/p3", "/p4"]
    t = sorted([l for l in r.proxy if l["source.port"] == tr["port"]], key=lambda l: l["sluice.request_seq"])
    assert [(l["sluice.form"], l["event.reason"], l["sluice.request_seq"]) for l in t] == [
        ("transparent", "allowed", 1), ("transparent", "host_not_allowed", 2), ("transparent", "allowed", 3)], t
    p = sorted([l for l in r.proxy if l["source.port"] == pl["port"]], key=lambda l: l["sluice.request_seq"])
    assert [(l["event.reason"], l.get("url.full", "").rsplit("/", 1)[-1]) for l in p] == [
        ("allowed", "p1"), ("host_not_allowed", "p2"), ("allowed", "p3"), ("allowed", "p4")], p


def test_keepalive_ends_on_framing_errors_and_idle(w):
    """A smuggling framing on a kept-alive connection is still 400, and
    closes it: what follows is never read as a request.  An idle kept-alive
    connection is closed after --keepalive-timeout without a line of its own."""
    e = env(w)
    m = e.mark()
    api = "http://api.example.com:%d" % HTTP_PORT
    smuggled = "GET %s/smuggled HTTP/1.1\r\n\r\n" % api
    r = e.client([
        {"op": "session", "via": "proxy", "pipeline": True, "sends": [
            get(api + "/f1"),
            "POST %s/f2 HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % api +
            smuggled,
            smuggled]},
        {"op": "session", "via": "proxy", "close_wait": 4, "sends": [get(api + "/idle")]},
    ], proxy_args=["--keepalive-timeout", "2"])
    pl, idle = r.results
    assert [x["status"] for x in pl["responses"]] == [200, 400], pl
    assert pl["responses"][1]["headers"]["x-sluice-error"] == "cl_te_conflict"
    assert pl["responses"][1]["headers"]["connection"] == "close"
    assert pl["closed"], pl
    assert [x["status"] for x in idle["responses"]] == [200] and idle["closed"], idle
    assert [g["path"] for g in e.arrived(m)] == ["/f1", "/idle"]
    assert len([l for l in r.proxy if l["source.port"] == pl["port"]]) == 2, r.proxy
    assert len([l for l in r.proxy if l["source.port"] == idle["port"]]) == 1, r.proxy


def test_upstream_reuse_per_name_and_clean_ends_only(w):
    """The origin sees fewer connections than requests; a connection is
    never shared across names (even on the same address), and never reused
    after a response that was not cleanly delimited or that closed."""
    e = env(w)
    m = e.mark()
    api, alias = "http://api.example.com:%d" % HTTP_PORT, "http://alias.example.com:%d" % HTTP_PORT
    steps = []
    for i in range(3):
        steps.append({"op": "http", "via": "proxy", "send": get(api + "/n%d" % i)})
        steps.append({"op": "http", "via": "proxy", "send": get(alias + "/a%d" % i)})
    for path in ("/eof", "/after-eof", "/extra", "/after-extra", "/close", "/after-close"):
        steps.append({"op": "http", "via": "proxy", "send": get(api + path)})
    r = e.client(steps)
    assert all(x["status"] == 200 for x in r.results), r.results
    assert "stray" not in r.results[8]["body"] and "stray" not in r.results[9]["body"], r.results
    got = e.arrived(m)
    peer = {g["path"]: g["peer"] for g in got}
    api_peers = {peer["/n%d" % i] for i in range(3)}
    alias_peers = {peer["/a%d" % i] for i in range(3)}
    # 6 requests, 2 connections: one per name, never one for both
    assert len(api_peers) == 1 and len(alias_peers) == 1, peer
    assert not api_peers & alias_peers, peer
    assert len({g["peer"] for g in got}) < len(got)
    # not reused after: a body that ended at EOF, stray bytes after a
    # response, Connection: close from the origin
    assert peer["/after-eof"] != peer["/eof"], peer
    assert peer["/after-extra"] != peer["/extra"], peer
    assert peer["/after-close"] != peer["/close"], peer
    eof = only(r.proxy, url__full=api + "/eof")
    assert eof["event.outcome"] == "success" and eof["sluice.upstream_reused"] is True, eof
    assert r.results[6]["headers"]["connection"] == "close"   # the client cannot tell where that body ends
    assert only(r.proxy, url__full=api + "/after-eof")["sluice.upstream_reused"] is False
    assert only(r.proxy, url__full=api + "/after-extra")["sluice.upstream_reused"] is False
    assert only(r.proxy, url__full=api + "/after-close")["sluice.upstream_reused"] is False


def test_upstream_reuse_off(w):
    """--upstream-pool 0: a new upstream connection per request, asked to close."""
    e = env(w)
    m = e.mark()
    api = "http://api.example.com:%d" % HTTP_PORT
    r = e.client([{"op": "session", "via": "proxy", "sends": [get(api + "/o1"), get(api + "/o2")]}],
                 proxy_args=["--upstream-pool", "0"])
    assert [x["status"] for x in r.results[0]["responses"]] == [200, 200], r.results
    got = e.arrived(m)
    assert len({g["peer"] for g in got}) == 2 and all(g["headers"].get("Connection") == "close" for g in got), got
    assert all(l["sluice.upstream_reused"] is False for l in r.proxy), r.proxy


def test_dns_cache_one_query_per_ttl_and_rebinding_vetted_again(w):
    """An answer is kept for its TTL: the upstream DNS server sees one
    query per name per TTL, however many requests.  After the TTL the name
    is looked up again and the new answer vetted like the first: a
    rebinding answer (loopback) is refused, and the pooled connection to the
    old address is not used for it.  Only vetted answers are kept: one with
    nothing to dial is asked for again."""
    e = env(w)
    m = e.mark()
    q0 = len(e.dns_queries())
    cached = "http://cached.example.com:%d" % HTTP_PORT
    rebind = "http://rebind-ttl.example.com:%d" % HTTP_PORT
    steps = [{"op": "http", "via": "proxy", "send": get(cached + "/c%d" % i)} for i in range(4)]
    steps += [{"op": "session", "via": "proxy", "sends": [get(rebind + "/r1"), get(rebind + "/r2")]}]
    steps += [{"op": "sleep", "s": 3.5}]
    steps += [{"op": "http", "via": "proxy", "send": get(cached + "/c-later")}]
    steps += [{"op": "http", "via": "proxy", "send": get(rebind + "/r3")}]
    private = "http://private-ttl.example.com:%d" % HTTP_PORT
    steps += [{"op": "http", "via": "proxy", "send": get(private + "/p%d" % i)} for i in range(2)]
    r = e.client(steps)
    res = r.results
    assert [x["status"] for x in res[:4]] == [200] * 4, res
    assert [x["status"] for x in res[4]["responses"]] == [200, 200], res[4]
    assert res[6]["status"] == 200, res[6]
    assert res[7]["status"] == 502 and res[7]["headers"]["x-sluice-error"] == "no_public_address", res[7]
    q = e.dns_queries()[q0:]
    a = [x["name"].lower() for x in q if x["qtype"] == 1]
    # one A query per name per TTL: before and after the sleep
    assert a.count("cached.example.com") == 2, q
    assert a.count("rebind-ttl.example.com") == 2, q
    assert [x["status"] for x in res[8:10]] == [502, 502], res[8:10]
    assert a.count("private-ttl.example.com") == 2, q
    assert [g["path"] for g in e.arrived(m)] == ["/c0", "/c1", "/c2", "/c3", "/r1", "/r2", "/c-later"]
    line = only(r.proxy, url__full=rebind + "/r3")
    assert line["event.reason"] == "no_public_address" and line["sluice.dropped_answers"] == ["127.0.0.1 loopback"]
    assert "destination.ip" not in line, line


# --- dialing: vetting, rebinding ------------------------------------------------------

def test_rebinding_and_private_answers(w):
    e = env(w)
    m = e.mark()
    u = "http://rebind.example.com:%d/r" % HTTP_PORT
    r = e.client([
        {"op": "http", "via": "proxy", "send": explicit(u)},
        {"op": "http", "via": "proxy", "send": explicit(u)},
        {"op": "http", "via": "proxy", "send": explicit("http://private.example.com:%d/" % HTTP_PORT)},
        {"op": "http", "via": "proxy", "send": explicit("http://meta.example.com:%d/" % HTTP_PORT)},
        {"op": "http", "via": "proxy", "send": explicit("http://v6only.example.com:%d/six" % HTTP_PORT)},
    ])
    first, second, priv, meta, six = r.results
    assert first["status"] == 200, first
    assert second["status"] == 502 and second["headers"]["x-sluice-error"] == "no_public_address", second
    assert priv["status"] == 502 and meta["status"] == 502
    assert six["status"] == 200 and json.loads(six["body"])["origin"] == "2001:db8::20", six
    assert [g["path"] for g in e.arrived(m)] == ["/r", "/six"]
    lines = [l for l in r.proxy if l.get("url.domain") == "rebind.example.com"]
    assert [l["event.outcome"] for l in lines] == ["success", "failure"], lines
    assert lines[1]["event.reason"] == "no_public_address"
    assert lines[1]["sluice.dropped_answers"] == ["127.0.0.1 loopback"]
    assert "destination.ip" not in lines[1]
    line = only(r.proxy, url__domain="private.example.com")
    assert sorted(line["sluice.dropped_answers"]) == ["10.1.2.3 private", "127.0.0.1 loopback"]
    assert only(r.proxy, url__domain="meta.example.com")["sluice.dropped_answers"] == ["169.254.169.254 metadata"]
    assert only(r.proxy, url__domain="v6only.example.com")["destination.ip"] == "2001:db8::20"


def test_dial_tries_the_next_address_within_one_deadline(w):
    """An address of the name that fails gives way to its next one; one
    connect deadline (--connect-timeout) covers resolving and every address,
    and ends a dial nothing answers with 504 connect_timeout."""
    e = env(w)
    # dropped without a word, whether or not the world forwards (a new
    # netns takes ip_forward from the host's, which container tests set)
    w.ns(w.wld, "ip", "route", "replace", "blackhole", "198.51.100.99/32")
    m = e.mark()
    r = e.client([
        {"op": "http", "via": "proxy", "send": explicit("http://failover.example.com:%d/next" % HTTP_PORT)},
        {"op": "http", "via": "proxy", "send": explicit("http://blackhole.example.com:%d/" % HTTP_PORT)},
        {"op": "http", "via": "proxy", "send": explicit("http://slowfail.example.com:%d/" % HTTP_PORT)},
    ], proxy_args=["--connect-timeout", "5"], timeout=90)
    nxt, hole, slow = r.results
    assert nxt["status"] == 200 and json.loads(nxt["body"])["origin"] == "192.0.2.10", nxt
    assert [g["path"] for g in e.arrived(m)] == ["/next"]
    assert only(r.proxy, url__domain="failover.example.com")["destination.ip"] == "192.0.2.10"
    for res, name in ((hole, "blackhole"), (slow, "slowfail")):
        assert res["status"] == 504 and res["headers"]["x-sluice-error"] == "connect_timeout", res
        line = only(r.proxy, url__domain=name + ".example.com")
        assert line["event.reason"] == "connect_timeout", line
        # the deadline, not something else, ended it: about 5 s after the
        # request, also after a first address failed (not 5 s after that)
        assert 4.5e9 <= line["event.duration"] < 7.5e9, line


def test_documentation_addresses_need_the_hatch(w):
    e = env(w)
    m = e.mark()
    r = e.client([{"op": "http", "via": "proxy", "send": explicit("http://api.example.com:%d/" % HTTP_PORT)}],
                 hatch=False)
    assert r.results[0]["status"] == 502, r.results
    assert e.arrived(m) == []
    line = only(r.proxy, url__domain="api.example.com")
    assert line["event.reason"] == "no_public_address"
    assert sorted(line["sluice.dropped_answers"]) == ["192.0.2.10 documentation", "2001:db8::10 documentation"]

    # a cidr entry naming the address and port makes it dialable (the kernel
    # would let the sandbox reach it directly anyway)
    policy = w.write("cidr-policy.yaml", POLICY + """\
  - cidr: 192.0.2.10/32
    ports: [%d]
    why: the API host, also reached directly
""" % HTTP_PORT)
    r = e.client([{"op": "http", "via": "proxy", "send": explicit("http://api.example.com:%d/cidr" % HTTP_PORT)}],
                 hatch=False, policy=policy)
    assert r.results[0]["status"] == 200, r.results
    line = only(r.proxy, url__domain="api.example.com")
    assert line["destination.ip"] == "192.0.2.10" and line["sluice.dropped_answers"] == ["2001:db8::10 documentation"]


# --- robustness ------------------------------------------------------------------------------

def test_slow_header_client(w):
    e = env(w)
    t0 = time.time()
    r = e.client([{"op": "slow", "via": "proxy", "delay": 0.5, "max_time": 8,
                   "send": explicit("http://api.example.com:%d/" % HTTP_PORT, "X-Pad: " + "a" * 40 + "\r\n")}],
                 proxy_args=["--header-timeout", "2"])
    res = r.results[0]
    assert res["status"] == 408 and res["headers"]["x-sluice-error"] == "header_timeout", res
    assert res["elapsed"] < 6 and time.time() - t0 < 30, res
    only(r.proxy, event__reason="header_timeout")


def test_head_in_many_pieces_arrives_whole(w):
    """A request head that comes in many small pieces is forwarded whole:
    the proxy's buffer is first as large as the first piece and grows with
    what arrives (userspace/proxy/conn.c, read_more)."""
    e = env(w)
    m = e.mark()
    pad = "".join(chr(ord("a") + i % 26) for i in range(3000))
    r = e.client([{"op": "slow", "via": "proxy", "delay": 0.0005, "max_time": 60,
                   "send": explicit("http://api.example.com:%d/pieces" % HTTP_PORT,
                                    "X-Pad: %s\r\nConnection: close\r\n" % pad)}],
                 proxy_args=["--header-timeout", "60"], timeout=180)
    res = r.results[0]
    assert res["status"] == 200 and res["sent"] > 3000, res
    got = [g for g in e.arrived(m) if g["path"] == "/pieces"]
    assert len(got) == 1 and got[0]["headers"].get("X-Pad") == pad, got


def test_connection_cap_503(w):
    e = env(w)
    r = e.client([
        {"op": "hold", "n": 3},
        {"op": "http", "via": "proxy", "send": explicit("http://api.example.com:%d/over" % HTTP_PORT)},
    ], proxy_args=["--max-conns", "3", "--header-timeout", "3"])
    assert r.results[0]["held"] == 3
    assert r.results[1]["status"] == 503 and r.results[1]["headers"]["x-sluice-error"] == "connection_limit"
    only(r.proxy, event__reason="connection_limit")


def test_thousand_concurrent_clients(w):
    e = env(w)
    m = e.mark()
    n = 1000
    r = e.client([{"op": "many", "n": n, "step": {
        "op": "http", "via": "direct", "addr": "192.0.2.10", "port": HTTP_PORT,
        "send": "GET /many HTTP/1.1\r\nHost: api.example.com:%d\r\nConnection: close\r\n\r\n" % HTTP_PORT}}],
        timeout=300)
    assert r.results[0]["counts"] == {"200": n}, r.results
    got = [g for g in e.arrived(m) if g["path"] == "/many"]
    assert len(got) == n, (len(got), [g for g in e.origin()[m:] if g.get("path") != "/many"])
    ok = [l for l in r.proxy if l.get("url.full", "").endswith("/many") and l["event.outcome"] == "success"]
    assert len(ok) == n


def test_audit_mode_lets_denials_through_and_says_so(w):
    e = env(w)
    m = e.mark()
    try:
        r = e.client([{"op": "http", "via": "proxy", "send": explicit("http://denied.example.org:%d/audit" % HTTP_PORT)}],
                     mode="audit")
    except AssertionError as ex:
        if "canary" in str(ex):
            raise W.Skip("sluice run --mode audit does not start here (its canary): %s" % str(ex)[-200:])
        raise
    assert r.results[0]["status"] == 200, r.results
    assert [g["path"] for g in e.arrived(m)] == ["/audit"]
    line = only(r.proxy, url__domain="denied.example.org")
    assert line["sluice.verdict"] == "would_deny" and line["event.outcome"] == "unknown"
    assert line["event.reason"] == "host_not_allowed" and line["sluice.mode"] == "audit"


def test_no_flow_entry_and_a_killed_proxy_restarts_on_its_socket(w):
    """A connection the kernel did not attribute is closed and logged; a
    dead proxy makes the sandbox's connections fail, never pass."""
    e = env(w)
    go, ready, done = (os.path.join(w.tmp, n) for n in ("go", "ready", "killed"))
    for p in (go, ready, done):
        if os.path.exists(p):
            os.unlink(p)
    plan = w.write("kill-plan.json", json.dumps([
        {"op": "http", "via": "direct", "addr": "192.0.2.10", "port": HTTP_PORT,
         "send": "GET /before HTTP/1.1\r\nHost: api.example.com\r\n\r\n"},
        {"op": "proxy"},
        {"op": "touch", "path": ready},
        {"op": "wait", "path": done},
        {"op": "http", "via": "direct", "addr": "192.0.2.10", "port": HTTP_PORT,
         "send": "GET /after HTTP/1.1\r\nHost: api.example.com\r\n\r\n"},
        {"op": "http", "via": "direct", "addr": "192.0.2.10", "port": TLS_PORT, "send": "x"},
    ]))
    events = os.path.join(w.tmp, "kill-events.jsonl")
    # egress-only: the client reads its plan from the host's /tmp
    cmd = [W.SLUICE, "run", "--profile", "egress-only", "--events", events, "--netns", w.sbx_path, "--policy", e.policy,
           "--upstream-dns", "192.0.2.53"]
    for c in HATCH:
        cmd += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c]
    m = e.mark()
    p = subprocess.Popen(cmd + ["--", "python3", CLIENT, plan], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while not os.path.exists(ready):
            assert time.time() < deadline and p.poll() is None, p.communicate()
            time.sleep(0.05)
        # the proxy's listener, seen from outside the sandbox (with owners:
        # sluice itself holds it too, so that it outlives the proxy)
        ss = w.ns(w.sbx, "ss", "-Htlnp").stdout
        lines = [l for l in ss.splitlines() if '"sluice-proxy"' in l and "127.0.0.1:" in l]
        assert lines, "no sluice-proxy listener in the sandbox netns: %r" % ss
        line = lines[0]
        assert '"sluice",' in line, "sluice run does not hold the proxy's listener itself: %r" % line
        port = int(line.split()[3].rsplit(":", 1)[1])
        pid = int(re.search(r'"sluice-proxy",pid=(\d+)', line).group(1))
        # a connection from outside the sandbox: no flow entry, never relayed
        probe = ("import socket; s = socket.create_connection(('127.0.0.1', %d)); "
                 "s.sendall(b'GET http://api.example.com:%d/outsider HTTP/1.1\\r\\n\\r\\n'); "
                 "s.settimeout(5); print(repr(s.recv(100)))" % (port, HTTP_PORT))
        out = w.ns(w.sbx, "python3", "-c", probe, check=False)
        assert "HTTP/1.1 200" not in out.stdout, out
        os.kill(pid, signal.SIGKILL)
        # the squatter: any process of the netns binding the dead proxy's port
        squat = ("import socket, errno\n"
                 "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                 "try:\n    s.bind(('127.0.0.1', %d)); s.listen(8); print('BOUND')\n"
                 "except OSError as e:\n    print(errno.errorcode[e.errno])\n" % port)
        for _ in range(20):
            out = w.ns(w.sbx, "python3", "-c", squat, check=False)
            assert "BOUND" not in out.stdout, "the dead proxy's port was free for another process"
            time.sleep(0.05)
        assert "EADDRINUSE" in out.stdout, out
        open(done, "w").close()
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = [l for l in stdout.splitlines() if l.startswith("{")]
    assert out, "client printed nothing: rc=%r stderr=%r" % (p.returncode, stderr)
    results = json.loads(out[-1])["results"]
    assert results[0]["status"] == 200, results
    # served by the restarted proxy, on the same socket
    assert results[4]["status"] == 200, results[4]
    assert results[5].get("status") is None, results[5]      # not TLS: closed, nothing relayed
    assert [g["path"] for g in e.arrived(m)] == ["/before", "/after"]
    lines = W.read_events(events)
    proxy = [l for l in lines if l.get("event.dataset") == "sluice.proxy"]
    outsider = only(proxy, event__reason="no_flow_entry")
    assert outsider["event.outcome"] == "failure" and "sluice.orig_dst.ip" not in outsider
    assert any(l.get("event.action") == "proxy-restarted" for l in lines), lines
    assert not any(l.get("event.action") == "proxy-gave-up" for l in lines), lines
