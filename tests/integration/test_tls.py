"""TLS inspection (issue 12): https:// url entries and `inspect: true` host
entries, with real clients (curl, python) that are given no CA flag of
their own: `sluice run` makes the sandbox trust its own CA.

The world is test_proxy's (origin_server.py with HTTP :8081 and HTTPS
:8443 on every world address, the world's DNS on 192.0.2.53).  The origin's
certificate is self-signed (names api.example.com, other.example.com,
*.cdn.example.net, denied.example.org; not alias.example.com): the proxy
trusts it through --upstream-ca (never a switch that turns verification
off), and the sandbox's clients never see it, only the proxy's leaves.
"""
import json
import os
import re
import signal
import subprocess
import time

import world as W
import test_proxy as TP

TLS = TP.TLS_PORT
POLICY = """\
version: 1
name: tls-tests
allow:
  - url: https://api.example.com:%(tls)d/pub/
    why: GET and HEAD under /pub only
  - url: https://api.example.com:%(tls)d/upload/
    methods: [POST]
    why: uploads, POST only
  - host: other.example.com
    ports: [%(tls)d]
    inspect: true
    why: every request logged, any path
  - url: https://alias.example.com:%(tls)d/
    why: the origin's certificate does not name alias.example.com
  - host: "*.cdn.example.net"
    ports: [%(tls)d]
    why: a passthrough entry stays a passthrough
  - url: https://api.example.com:9000/
    why: the world's echo server, which does not speak TLS
""" % {"tls": TLS}


def env(w):
    e = TP.env(w)
    if not hasattr(w, "tls_policy"):
        w.tls_policy = w.write("tls-policy.yaml", POLICY)
    return e


def run(w, script, proxy_args=(), upstream_ca=True, timeout=120, policy=None):
    """`sh -c script` in a sandbox with the TLS policy (or `policy`, a path
    or YAML text); the origin's CA is given to the proxy only (`sluice run
    --upstream-ca`)."""
    e = env(w)
    extra = ["--upstream-dns", "192.0.2.53"]
    for c in TP.HATCH:
        # the world's documentation addresses: dialed by the proxy, and
        # answered to the sandbox's own lookups (test-only hatches)
        extra += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                  "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    if upstream_ca:
        extra += ["--upstream-ca", e.cert]
    for a in proxy_args:
        extra += ["--proxy-arg", a]
    r = w.sluice_run(["sh", "-c", script], policy=policy or w.tls_policy, extra=extra, timeout=timeout)
    r.proxy = [x for x in r.events if x.get("event.dataset") == "sluice.proxy"]
    return r


def curl_codes(r):
    """Lines "CODE <status> <url>" printed by the scripts below."""
    return [l.split(" ", 2)[1:] for l in r.stdout.splitlines() if l.startswith("CODE ")]


CURL = "curl -sS --max-time 10 -o /dev/null -w 'CODE %%{http_code} %s\\n'"


def curl(url, extra=""):
    return (CURL % url) + " " + extra + " '" + url + "'; "


def resolve(name, addr="192.0.2.10"):
    return "--resolve %s:%d:%s" % (name, TLS, addr)


def test_transparent_curl_get_path_method(w):
    e = env(w)
    m = e.mark()
    base = "https://api.example.com:%d" % TLS
    r = run(w, curl(base + "/pub/file.txt", resolve("api.example.com")) +
            curl(base + "/private/key", resolve("api.example.com")) +
            curl(base + "/pub/x", resolve("api.example.com") + " -X POST -d data") +
            curl(base + "/upload/x", resolve("api.example.com") + " -X POST -d data") +
            curl(base + "/pub/../private/key", resolve("api.example.com") + " --path-as-is"))
    assert r.rc == 0, r
    assert [c[0] for c in curl_codes(r)] == ["200", "403", "403", "200", "403"], (curl_codes(r), r)
    got = e.arrived(m)
    # the origin saw exactly the allowed requests, over TLS, with its own SNI
    assert [(g["method"], g["path"]) for g in got] == [("GET", "/pub/file.txt"), ("POST", "/upload/x")], got
    assert all(g["scheme"] == "https" and g["sni"] == "api.example.com" for g in got), got
    assert got[0]["host"] == "api.example.com:%d" % TLS, got
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    assert len(lines) == 5, json.dumps(r.proxy, indent=1)
    ok = TP.only(lines, url__full=base + "/pub/file.txt")
    TP.check_common(ok, "success", "allowed", "proxy-http")
    assert ok["http.request.method"] == "GET" and ok["http.response.status_code"] == 200, ok
    assert ok["rule.name"] == "allow[0] url:https://api.example.com:%d/pub/" % TLS, ok
    assert ok["tls.version"] in ("TLSv1.3", "TLSv1.2") and ok["tls.cipher"], ok
    assert ok["tls.client.server_name"] == "api.example.com" and ok["sluice.form"] == "transparent", ok
    assert ok["destination.ip"] == "192.0.2.10" and ok["http.response.bytes"] > 0, ok
    # /private/key, and /pub/../private/key: dot segments are removed before matching
    den = [l for l in lines if l["url.full"] == base + "/private/key"]
    assert len(den) == 2, lines
    for l in den:
        TP.check_common(l, "failure", "path_not_allowed", "proxy-http")
        assert l["http.response.status_code"] == 403 and "destination.ip" not in l, l
    meth = TP.only(lines, url__full=base + "/pub/x")
    assert meth["event.reason"] == "method_not_allowed" and meth["http.request.method"] == "POST", meth
    # no line for the terminated connections themselves, and no passthrough line
    assert not [l for l in r.proxy if l["event.action"] == "proxy-tls"], r.proxy


def test_https_proxy_curl_and_python(w):
    e = env(w)
    m = e.mark()
    base = "https://api.example.com:%d" % TLS
    py = ("import os, sys, urllib.request, urllib.error\n"
          "for u in sys.argv[1:]:\n"
          "    try:\n"
          "        r = urllib.request.urlopen(u, timeout=10)\n"
          "        print('CODE', r.status, u)\n"
          "    except urllib.error.HTTPError as x:\n"
          "        print('CODE', x.code, u, x.headers.get('X-Sluice-Denied'))\n")
    script = w.write("fetch.py", py)
    r = run(w, 'export HTTPS_PROXY="$SLUICE_PROXY"; ' +
            curl(base + "/pub/curl") + curl(base + "/secret") +
            "python3 %s %s %s; " % (script, base + "/pub/python", base + "/nope") +
            # the transparent path for python too (no proxy: the kernel redirects)
            "unset HTTPS_PROXY; python3 -c 'import socket, ssl, sys; "
            "s = ssl.create_default_context().wrap_socket(socket.create_connection((\"192.0.2.10\", %d)), "
            "server_hostname=\"api.example.com\"); "
            "s.sendall(b\"GET /pub/raw HTTP/1.1\\r\\nHost: api.example.com:%d\\r\\nConnection: close\\r\\n\\r\\n\"); "
            "print(\"CODE\", s.recv(100).split()[1].decode(), \"raw\")'" % (TLS, TLS))
    assert r.rc == 0, r
    codes = curl_codes(r)
    assert [c[0] for c in codes] == ["200", "403", "200", "403", "200"], (codes, r)
    assert codes[3][1].endswith("path_not_allowed"), codes
    got = e.arrived(m)
    assert sorted(g["path"] for g in got) == ["/pub/curl", "/pub/python", "/pub/raw"], got
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    assert len(lines) == 5, r.proxy
    assert TP.only(lines, url__full=base + "/pub/curl")["sluice.form"] == "explicit"
    assert TP.only(lines, url__full=base + "/pub/raw")["sluice.form"] == "transparent"
    if subprocess.run(["python3", "-c", "import requests"], capture_output=True).returncode == 0:
        r = run(w, 'HTTPS_PROXY="$SLUICE_PROXY" python3 -c "import requests; '
                "print('CODE', requests.get('%s/pub/requests', timeout=10).status_code)\"" % base)
        assert r.rc == 0 and curl_codes(r) == [["200"]], r


def test_inspect_true_host_any_path_logged(w):
    e = env(w)
    m = e.mark()
    base = "https://other.example.com:%d" % TLS
    r = run(w, curl(base + "/anything/at/all?q=1", resolve("other.example.com")) +
            curl(base + "/x", resolve("other.example.com") + " -X PUT -d y"))
    assert [c[0] for c in curl_codes(r)] == ["200", "200"], r
    assert [g["path"] for g in e.arrived(m)] == ["/anything/at/all?q=1", "/x"]
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    assert [l["url.full"] for l in lines] == [base + "/anything/at/all?q=1", base + "/x"], lines
    assert all(l["rule.name"] == "allow[2] host:other.example.com" for l in lines), lines
    assert lines[1]["http.request.method"] == "PUT"


def test_passthrough_entry_unchanged(w):
    e = env(w)
    m = e.mark()
    # a host entry without inspect: the origin's own certificate, not a leaf
    r = run(w, curl("https://a.cdn.example.net:%d/pass" % TLS,
                    "--cacert %s %s" % (e.cert, resolve("a.cdn.example.net", "203.0.113.10"))))
    assert curl_codes(r) == [["200", "https://a.cdn.example.net:%d/pass" % TLS]], r
    assert [g["path"] for g in e.arrived(m)] == ["/pass"]
    line = TP.only(r.proxy, event__action="proxy-tls")
    assert "sluice.inspected" not in line and line["tls.client.server_name"] == "a.cdn.example.net", line


def test_denied_sni_gets_no_certificate(w):
    e = env(w)
    m = e.mark()
    py = ("import socket, ssl\n"
          "ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE\n"
          "s = ctx.wrap_socket(socket.socket(), server_hostname='denied.example.org', do_handshake_on_connect=False)\n"
          "s.connect(('192.0.2.10', %d))\n"
          "try:\n"
          "    s.do_handshake(); print('CERT', s.getpeercert(binary_form=True) is not None)\n"
          "except (ssl.SSLError, OSError) as x:\n"
          "    print('NOCERT', type(x).__name__)\n" % TLS)
    r = run(w, "python3 %s" % w.write("denied.py", py))
    assert "NOCERT" in r.stdout and "CERT True" not in r.stdout, r
    line = TP.only(r.proxy, event__action="proxy-tls")
    TP.check_common(line, "failure", "host_not_allowed", "proxy-tls")
    assert line["tls.client.server_name"] == "denied.example.org"
    assert not e.arrived(m)


def ca_of(bundle_text):
    """The last certificate of the sandbox's bundle (the sandbox CA) as PEM."""
    pems = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", bundle_text, re.S)
    return pems[-1]


def test_ca_in_bundle_constrained_key_out_of_reach(w):
    env(w)
    r = run(w, "cat /etc/ssl/certs/ca-certificates.crt; echo ENV; env; echo MOUNTS; cat /proc/self/mountinfo; "
            "echo PS; ls /proc | grep -E '^[0-9]+$' | while read p; do cat /proc/$p/comm 2>/dev/null; done; "
            "echo KEYS; grep -rlI -e 'PRIVATE KEY' /etc/ssl /tmp /dev/shm 2>/dev/null; echo END")
    assert r.rc == 0, r
    out = r.stdout
    bundle, rest = out.split("\nENV\n", 1)
    envtext, rest = rest.split("\nMOUNTS\n", 1)
    mounts, rest = rest.split("\nPS\n", 1)
    procs, keys = rest.split("\nKEYS\n", 1)
    # the host's roots are all still there, plus exactly one: the sandbox CA
    host = open("/etc/ssl/certs/ca-certificates.crt").read()
    assert bundle.count("BEGIN CERTIFICATE") == host.count("BEGIN CERTIFICATE") + 1
    ca = ca_of(bundle)
    text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=ca, capture_output=True, text=True).stdout
    assert "sluice sandbox CA" in text and "CA:TRUE, pathlen:0" in text, text
    assert "ASN1 OID: prime256v1" in text, text
    nc = text.split("X509v3 Name Constraints: critical", 1)[1].split("X509v3", 1)[0]
    permitted = re.findall(r"DNS:(\S+)", nc)
    assert sorted(permitted) == ["alias.example.com", "api.example.com", "other.example.com"], nc
    for var in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                "GIT_SSL_CAINFO", "PIP_CERT"):
        assert "%s=/etc/ssl/certs/ca-certificates.crt" % var in envtext, (var, envtext)
    # the CA key is nowhere the sandbox can look: not in its environment, its
    # files, its mount table, and its processes are its own (the proxy is not
    # among them, so no /proc/PID/mem or environ of it)
    assert "PRIVATE KEY" not in bundle + envtext + mounts + procs, "a private key in the sandbox's view"
    mine = [l for l in mounts.splitlines() if " /etc/ssl/certs/ca-certificates.crt " in l]
    assert len(mine) == 1 and " ro," in mine[0] and "tmpfs sluice-trust" in mine[0], mounts
    # the scratch tmpfs it was written on is gone again
    assert not [l for l in mounts.splitlines() if "sluice-trust" in l and l not in mine], mounts
    assert "sluice-proxy" not in procs, procs
    # private keys the sandbox can read (the world's own origin key is one:
    # the sandbox shares the host's files) are never the CA's
    ca_pub = subprocess.run(["openssl", "x509", "-noout", "-pubkey"], input=ca, capture_output=True,
                            text=True).stdout
    assert "PUBLIC KEY" in ca_pub
    for path in keys.split()[:-1]:
        # a PEM key is small: a large file that merely mentions the words
        # (a preprocessed C file in /tmp) is no key, and openssl would
        # take minutes over it
        try:
            if os.path.getsize(path) > (256 << 10):
                continue
        except OSError:
            continue
        pub = subprocess.run(["openssl", "pkey", "-pubout", "-in", path], capture_output=True, text=True,
                             timeout=30).stdout
        assert pub != ca_pub, "the sandbox CA's key is in %s" % path
    # the bundle is read-only, even for root in the sandbox
    r = run(w, "echo x >> /etc/ssl/certs/ca-certificates.crt && echo WROTE || echo REFUSED")
    assert "REFUSED" in r.stdout, r


def test_two_sandboxes_two_cas_and_leaves_of_theirs(w):
    env(w)
    script = ("cat /etc/ssl/certs/ca-certificates.crt; echo LEAF; "
              "openssl s_client -connect 192.0.2.10:%d -servername api.example.com -showcerts </dev/null 2>/dev/null"
              % TLS)
    a, b = run(w, script), run(w, script)
    ca_a, ca_b = ca_of(a.stdout.split("LEAF")[0]), ca_of(b.stdout.split("LEAF")[0])
    assert ca_a != ca_b

    def fingerprint(pem):
        return subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256"], input=pem,
                              capture_output=True, text=True).stdout

    assert fingerprint(ca_a) != fingerprint(ca_b)
    leaf = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", a.stdout.split("LEAF")[1], re.S)[0]
    lt = subprocess.run(["openssl", "x509", "-noout", "-text"], input=leaf, capture_output=True, text=True).stdout
    ct = subprocess.run(["openssl", "x509", "-noout", "-text"], input=ca_a, capture_output=True, text=True).stdout
    ski = ct.split("X509v3 Subject Key Identifier:", 1)[1].split()[0]
    assert ski in lt.split("X509v3 Authority Key Identifier:", 1)[1].split("X509v3", 1)[0], (ski, lt)
    assert "DNS:api.example.com" in lt and "sluice sandbox CA" in lt, lt
    # the leaf verifies against the sandbox CA (name constraints included) and not the other one
    for ca, want in ((ca_a, 0), (ca_b, 2)):
        cafile = w.write("ca-%d.pem" % want, ca)
        leaffile = w.write("leaf.pem", leaf)
        v = subprocess.run(["openssl", "verify", "-CAfile", cafile, "-verify_hostname", "api.example.com", leaffile],
                           capture_output=True, text=True)
        assert (v.returncode == 0) == (want == 0), (v.stdout, v.stderr)


def test_restarted_proxy_signs_with_the_runs_ca(w):
    """A proxy killed mid-run is restarted on the same sockets with the
    run's one CA: CMD, which trusts only that CA, keeps getting through."""
    import threading
    env(w)
    mark = os.path.join(w.tmp, "restart-%d" % time.monotonic_ns())
    get = curl("https://api.example.com:%d/pub/again" % TLS, resolve("api.example.com"))
    script = get + "touch %s.first; while [ ! -e %s.killed ]; do sleep 0.05; done; " % (mark, mark) + get
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", run(w, script)))
    t.start()
    try:
        deadline = time.time() + 120   # a sandbox start and a curl on a loaded machine
        while not os.path.exists(mark + ".first"):
            assert time.time() < deadline and t.is_alive(), out
            time.sleep(0.05)
        # the proxy of this run: its parent's command line names the mark
        killed = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if open("/proc/%s/comm" % pid).read().strip() != "sluice-proxy":
                    continue
                ppid = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1]
                if mark in open("/proc/%s/cmdline" % ppid).read():
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(pid)
            except (OSError, IndexError):
                pass
        assert len(killed) == 1, killed
    finally:
        open(mark + ".killed", "w").close()
        t.join(60)
    r = out["r"]
    assert r.rc == 0, r
    assert [c[0] for c in curl_codes(r)] == ["200", "200"], r.stdout + r.stderr
    assert [x for x in r.events if x.get("event.action") == "proxy-restarted"], r.events


def test_origin_with_wrong_name_is_502_never_passthrough(w):
    e = env(w)
    m = e.mark()
    r = run(w, "curl -sS --max-time 10 --http1.1 -i %s https://alias.example.com:%d/x" % (resolve("alias.example.com"), TLS))
    assert r.stdout.startswith("HTTP/1.1 502"), r
    assert "X-Sluice-Error: upstream_cert_invalid" in r.stdout, r
    assert not e.arrived(m)
    line = TP.only(r.proxy, url__full="https://alias.example.com:%d/x" % TLS)
    TP.check_common(line, "failure", "upstream_cert_invalid", "proxy-http")
    assert line["http.response.status_code"] == 502 and line["sluice.inspected"] is True, line
    # without --upstream-ca the origin's self-signed certificate is refused too
    r = run(w, curl("https://api.example.com:%d/pub/a" % TLS, resolve("api.example.com")), upstream_ca=False)
    assert curl_codes(r) == [["502", "https://api.example.com:%d/pub/a" % TLS]], r
    assert TP.only(r.proxy, url__full="https://api.example.com:%d/pub/a" % TLS)["event.reason"] == "upstream_cert_invalid"
    assert not e.arrived(m)


def test_client_refusing_the_ca_is_logged(w):
    """A client that does not trust the sandbox CA (pinning, its own bundle)
    fails the handshake; the line says so, with the SNI; the origin never
    hears of it."""
    e = env(w)
    m = e.mark()
    r = run(w, "curl -sS --max-time 10 --cacert %s %s https://api.example.com:%d/pub/pinned; echo RC=$?; "
            'HTTPS_PROXY="$SLUICE_PROXY" curl -sS --max-time 10 --cacert %s https://api.example.com:%d/pub/pinned2; '
            "echo RC=$?" % (e.cert, resolve("api.example.com"), TLS, e.cert, TLS))
    assert r.stdout.count("RC=60") == 2, r   # curl: peer certificate cannot be authenticated
    assert not e.arrived(m)
    for action in ("proxy-tls", "proxy-connect"):
        line = TP.only(r.proxy, event__action=action)
        TP.check_common(line, "failure", "client_rejected_certificate", action)
        assert line["tls.client.server_name"] == "api.example.com", line


def test_keepalive_inside_tls_each_request_decided(w):
    e = env(w)
    m = e.mark()
    base = "https://api.example.com:%d" % TLS
    # one curl, one TLS connection, three requests: allowed, denied, allowed
    r = run(w, "curl -sS --max-time 10 %s -o /dev/null -o /dev/null -o /dev/null -w 'CODE %%{http_code} %%{num_connects}\\n' "
            "%s/pub/1 %s/nope %s/pub/2" % (resolve("api.example.com"), base, base, base))
    codes = curl_codes(r)
    assert [c[0] for c in codes] == ["200", "403", "200"], r
    assert [c[1] for c in codes] == ["1", "0", "0"], codes   # the client connected once
    assert [g["path"] for g in e.arrived(m)] == ["/pub/1", "/pub/2"]
    lines = sorted((l for l in r.proxy if l.get("sluice.inspected")), key=lambda l: l["sluice.request_seq"])
    assert [(l["sluice.request_seq"], l["event.reason"]) for l in lines] == [
        (1, "allowed"), (2, "path_not_allowed"), (3, "allowed")], lines
    assert len({l["source.port"] for l in lines}) == 1, lines
    # the second allowed request went over the verified TLS session to the
    # origin that the first one opened (kept in the upstream pool)
    assert [l.get("sluice.upstream_reused") for l in lines if l["event.reason"] == "allowed"] == [False, True], lines


def test_stalled_handshake_and_garbage_inside_tls(w):
    """A client that sends its ClientHello and then nothing is closed after
    --header-timeout; bytes inside TLS that are not HTTP get a 400 inside
    TLS; the proxy goes on serving."""
    env(w)
    py = ("import socket, ssl, time\n"
          "ctx = ssl.create_default_context()\n"
          "inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()\n"
          "o = ctx.wrap_bio(inc, out, server_hostname='api.example.com')\n"
          "try:\n"
          "    o.do_handshake()\n"
          "except ssl.SSLWantReadError:\n"
          "    pass\n"
          "s = socket.create_connection(('192.0.2.10', %d)); s.sendall(out.read())\n"
          "s.settimeout(5); t = time.time(); data = b''\n"
          "try:\n"
          "    while True:\n"
          "        d = s.recv(65536)\n"
          "        if not d: break\n"
          "        data += d\n"
          "except OSError:\n"
          "    pass\n"
          "print('STALL closed after %%.1f s' %% (time.time() - t))\n"
          "c = ctx.wrap_socket(socket.create_connection(('192.0.2.10', %d)), server_hostname='api.example.com')\n"
          "c.sendall(b'\\x00\\x01garbage\\r\\n\\r\\n'); print('GARBAGE', c.recv(200).split(b'\\r\\n')[0].decode())\n"
          % (TLS, TLS))
    r = run(w, "python3 %s; %s" % (w.write("stall.py", py), curl("https://api.example.com:%d/pub/after" % TLS,
                                                                  resolve("api.example.com"))),
            proxy_args=["--header-timeout", "1"])
    m = re.search(r"STALL closed after ([0-9.]+) s", r.stdout)
    assert m and float(m.group(1)) < 4, r
    assert "GARBAGE HTTP/1.1 400 Bad Request" in r.stdout, r
    assert curl_codes(r) == [["200", "https://api.example.com:%d/pub/after" % TLS]], r
    TP.only(r.proxy, event__reason="tls_handshake_timeout")
    line = TP.only(r.proxy, http__response__status_code=400)
    assert line["sluice.inspected"] is True and line["event.outcome"] == "failure", line


def test_wget_node_git_trust_the_sandbox_ca(w):
    """More real clients, no CA flag of their own: wget (transparently and
    through https_proxy), node's fetch (NODE_EXTRA_CA_CERTS), git (its smart
    HTTP discovery request: a GET under the prefix)."""
    e = env(w)
    m = e.mark()
    base = "https://api.example.com:%d" % TLS
    r = run(w, "wget -q -O /dev/null %s/pub/wget && echo CODE 200 wget; "
            "https_proxy=$SLUICE_PROXY wget -q -O /dev/null %s/pub/wget-proxy && echo CODE 200 wget-proxy; "
            "wget -q -O /dev/null %s/private/wget; echo CODE $? wget-denied; "
            "node -e \"fetch('%s/pub/node').then(r => console.log('CODE', r.status, 'node'), "
            "x => console.log('CODE', 'error', String(x.cause || x)))\"; "
            "GIT_TERMINAL_PROMPT=0 git ls-remote %s/pub/repo.git 2>&1 | tail -n 1" % (base, base, base, base, base))
    codes = curl_codes(r)
    assert codes[:4] == [["200", "wget"], ["200", "wget-proxy"], ["8", "wget-denied"], ["200", "node"]], r
    assert "certificate" not in r.stdout.lower() and "ssl" not in r.stdout.lower(), r
    paths = [g["path"] for g in e.arrived(m)]
    assert paths[:3] == ["/pub/wget", "/pub/wget-proxy", "/pub/node"], paths
    assert "/pub/repo.git/info/refs?service=git-upload-pack" in paths, paths
    assert "/private/wget" not in paths


def test_origin_that_does_not_speak_tls(w):
    """An inspected name whose origin answers TLS with garbage (the world's
    echo server sends the ClientHello back): 502 inside the client's TLS,
    one line; the client connection stays usable; never a passthrough."""
    env(w)
    r = run(w, "curl -sS --max-time 10 --http1.1 -i --resolve api.example.com:9000:192.0.2.10 "
            "https://api.example.com:9000/x https://api.example.com:9000/y")
    assert r.stdout.count("HTTP/1.1 502") == 2, r
    assert r.stdout.count("X-Sluice-Error: upstream_tls_failed") == 2, r
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    assert [(l["event.reason"], l["sluice.request_seq"]) for l in lines] == [
        ("upstream_tls_failed", 1), ("upstream_tls_failed", 2)], lines
    assert all(l["destination.port"] == 9000 for l in lines), lines


def test_daemon_publishes_the_ca_for_attached_workloads(w):
    """sluice attach: the sandbox's proxy makes its own CA; the daemon writes
    its certificate to a path (status --json: ca_cert) that a runtime hands
    to the workload; requests inside TLS are then decided as under run."""
    import test_daemon as TD
    e = env(w)
    d = TD.Daemon.__new__(TD.Daemon)
    d.w = w
    d.state = os.path.join(w.tmp, "tls-state-%d" % os.getpid())
    d.env = dict(os.environ, SLUICE_CONTROL_SOCK=os.path.join(d.state, "control.sock"))
    d.events = os.path.join(d.state, "events.jsonl")
    d.proc = subprocess.Popen([W.SLUICE, "daemon", "--state-dir", d.state, "--upstream-dns", "192.0.2.53",
                               "--upstream-ca", e.cert]
                              + sum((["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c]
                                     for c in TP.HATCH), []),
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(w.tmp, "daemon-tls.err"), "a"))
    name = "tls-%d" % os.getpid()
    a = None
    try:
        for _ in range(200):
            if d.ctl("status").returncode == 0:
                break
            time.sleep(0.05)
        a = TD.Workload(w, "tls")
        r = d.ctl("attach", "--policy", w.tls_policy, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0 and "ca cert" in r.stdout, r
        ca_path = d.status()[name]["ca_cert"]
        assert ca_path and os.path.exists(ca_path), d.status()
        ca = open(ca_path).read()
        assert "PRIVATE" not in ca and ca.count("BEGIN CERTIFICATE") == 1, ca
        text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=ca, capture_output=True, text=True).stdout
        assert "X509v3 Name Constraints: critical" in text and "DNS:api.example.com" in text, text
        m = e.mark()
        base = "https://api.example.com:%d" % TLS
        out = a.run("sh", "-c", "curl -sS --max-time 10 --cacert %s %s -o /dev/null -o /dev/null -w 'CODE %%{http_code}\\n' "
                    "%s/pub/attached %s/private" % (ca_path, resolve("api.example.com"), base, base))
        assert out.split() == ["CODE", "200", "CODE", "403"], out
        assert [g["path"] for g in e.arrived(m)] == ["/pub/attached"]
        # the workload keeps its copy of the CA: a restarted proxy, and
        # reloads, sign with the CA it already trusts
        kept = w.write("kept-ca-%d.pem" % os.getpid(), ca)
        get = ("curl -sS --max-time 10 --cacert %s %s -o /dev/null -w 'CODE %%{http_code}\\n' %s/pub/again"
               % (kept, resolve("api.example.com"), base))
        pid = d.status()[name]["proxy_pid"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 10
        while d.status()[name]["proxy_pid"] in (0, pid):
            assert time.time() < deadline, d.status()
            time.sleep(0.05)
        assert a.run("sh", "-c", get).split() == ["CODE", "200"], "a restarted proxy signs with another CA"
        assert d.ctl("reload", name, "--policy", w.tls_policy).returncode == 0
        assert a.run("sh", "-c", get).split() == ["CODE", "200"], "a reload changed the CA"
        assert open(ca_path).read() == ca
        # fewer inspected names: the certificate is re-issued for the same
        # key; the old one still validates the names both permit
        fewer = w.write("tls-fewer.yaml", "\n".join(l for l in POLICY.splitlines()
                                                    if "alias.example.com" not in l and "not name alias" not in l) + "\n")
        assert d.ctl("reload", name, "--policy", fewer).returncode == 0
        new = open(ca_path).read()
        assert new != ca

        def pubkey(pem):
            return subprocess.run(["openssl", "x509", "-noout", "-pubkey"], input=pem, capture_output=True,
                                  text=True).stdout

        assert pubkey(new) == pubkey(ca) and "PUBLIC KEY" in pubkey(ca)
        text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=new, capture_output=True, text=True).stdout
        assert "DNS:alias.example.com" not in text and "DNS:api.example.com" in text, text
        assert a.run("sh", "-c", get).split() == ["CODE", "200"], "the old certificate no longer validates"
        reissued = [x for x in W.read_events(d.events) if x.get("sluice.sandbox") == name
                    and x.get("event.action") == "ca-reissued"]
        assert len(reissued) == 1, reissued
        assert d.ctl("detach", name).returncode == 0
        assert not os.path.exists(ca_path)
    finally:
        if a:
            a.close()
        d.close()
