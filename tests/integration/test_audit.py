"""Audit mode end to end: audit -> suggest -> check -> enforce, in the test world.

A scripted client (a shell script of curl, getent and the probe) runs under
`sluice run` in the sandbox netns and reaches five destinations:

  allowed by the starting policy     1. TLS through the proxy: CONNECT api.example.com:8443
                                     2. plain HTTP: GET files.example.com:8081/pub/{a,b}.txt
                                     3. DNS: api.example.com resolved (getent, glibc)
  unexpected                         4. a direct CIDR: TCP 198.51.100.10:5432
                                     5. DNS: cdn.example.net resolved, then TLS to its
                                        address (port 8443, so through the proxy, by SNI)

In audit mode nothing is blocked and every would-deny is logged by the part
that would deny it (kernel, proxy, resolver).  `sluice policy suggest` turns
the log into a policy, `sluice policy check` accepts it, and in enforce mode
with that policy the same client reaches exactly those five and is refused a
sixth (denied.example.org, by name and through CONNECT).  `suggest --against`
the starting policy, on an enforce-mode log, gives additions a reviewer can
apply.  Servers are the proxy tests' origin (origin_server.py) and the
resolver tests' upstream (dns_server.py), on the world's documentation
addresses; the proxy and resolver get the test-only hatches for them.
"""
import json
import os
import subprocess

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
HTTP_PORT, TLS_PORT = 8081, 8443
DOC = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"]

ZONE = {
    "api.example.com": {"A": ["192.0.2.10"]},
    "files.example.com": {"A": ["198.51.100.10"]},
    "cdn.example.net": {"A": ["203.0.113.10"]},
    "denied.example.org": {"A": ["192.0.2.20"]},
}

START = """\
version: 1
name: audit-start
allow:
  - host: api.example.com
    ports: [%d]
    why: the API, TLS through the proxy
  - url: http://files.example.com:%d/pub/
    methods: [GET]
    why: downloads over plain HTTP
""" % (TLS_PORT, HTTP_PORT)

# One line per step: "STEP <name> rc=<exit status> <output>".  $SLUICE_PROXY
# is the explicit proxy's URL (sluice run exports it).
CLIENT = r"""
step() { name=$1; shift; out=$("$@" 2>&1); rc=$?; echo "STEP $name rc=$rc $(echo $out | tr '\n' ' ')"; }
C="curl -sS --max-time 10 --cacert $CERT -o /dev/null -w %{http_code}"
step api $C --proxy "$SLUICE_PROXY" https://api.example.com:8443/api
step files-a $C --proxy "$SLUICE_PROXY" http://files.example.com:8081/pub/a.txt
step files-b $C --proxy "$SLUICE_PROXY" http://files.example.com:8081/pub/b.txt
step dns-api getent ahostsv4 api.example.com
step cidr $PROBE tcp 198.51.100.10 5432
step cdn $C --noproxy '*' https://cdn.example.net:8443/cdn
if [ -n "$SIXTH" ]; then
  step sixth-dns $C --noproxy '*' https://denied.example.org:8443/sixth
  step sixth-connect $C --proxy "$SLUICE_PROXY" https://denied.example.org:8443/sixth
fi
"""


class Env:
    def __init__(self, w):
        self.w = w
        d = w.tmp
        self.cert, key = os.path.join(d, "audit-cert.pem"), os.path.join(d, "audit-key.pem")
        W.sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", self.cert,
             "-days", "2", "-subj", "/CN=api.example.com",
             "-addext", "subjectAltName=" + ",".join("DNS:" + n for n in ZONE))
        self.origin_log = os.path.join(d, "audit-origin.jsonl")
        w.start_server([os.path.join(HERE, "origin_server.py"), "--http", str(HTTP_PORT), "--https", str(TLS_PORT),
                        "--cert", self.cert, "--key", key, "--log", self.origin_log], name="audit-origin")
        w.start_server([os.path.join(HERE, "dns_server.py"), "--listen", "192.0.2.53:53",
                        "--zone-file", w.write("audit-zone.json", json.dumps(ZONE)),
                        "--log", os.path.join(d, "audit-dns.jsonl")], name="audit-dns")
        self.start = w.write("audit-start.yaml", START)
        self.script = w.write("audit-client.sh", CLIENT)

    def origin(self):
        try:
            with open(self.origin_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def run(self, policy, mode, sixth=False, events=None):
        """The client under sluice run; returns (steps {name: (rc, out)}, Result)."""
        extra = ["--upstream-dns", "192.0.2.53", "--mode", mode]
        for c in DOC:
            extra += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                      "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
        env = dict(os.environ, CERT=self.cert, PROBE=W.PROBE, SIXTH="1" if sixth else "")
        # CMD gets a minimal environment: the script's variables by name
        extra += ["--env", "CERT", "--env", "PROBE", "--env", "SIXTH"]
        r = self.w.sluice_run(["sh", self.script], policy=policy, extra=extra, timeout=120, env=env)
        steps = {}
        for line in r.stdout.splitlines():
            if line.startswith("STEP "):
                _, name, rc, *out = line.split(" ")
                steps[name] = (int(rc[3:]), " ".join(out))
        return steps, r

    def arrived(self, mark):
        return [(g.get("sni") or g.get("host", "").split(":")[0], g["path"])
                for g in self.origin()[mark:] if g.get("event") == "request"]


def env(w):
    if not hasattr(w, "audit_env"):
        w.audit_env = Env(w)
    return w.audit_env


def suggest(w, *args):
    return subprocess.run([W.SLUICE, "policy", "suggest"] + list(args), capture_output=True, text=True, timeout=60)


def denials(events):
    """Everything any part denied or would deny (the canary's own attempts left out)."""
    return [e for e in events if e.get("sluice.verdict") in ("deny", "would_deny", "refuse")
            and not e.get("sluice.canary") and e.get("event.action") != "canary-denied"]


def ok(steps, name):
    rc, out = steps[name]
    if name.startswith("dns"):
        return rc == 0 and out.strip() != ""
    if name == "cidr":
        return rc == 0 and '"result":"ok"' in out
    return rc == 0 and out.strip() == "200"


FIVE = ["api", "files-a", "files-b", "dns-api", "cidr", "cdn"]


def test_audit_suggest_check_enforce(w):
    e = env(w)
    mark, echo_mark = len(e.origin()), w.mark()

    # 1. audit: nothing is blocked ...
    steps, r = e.run(e.start, "audit")
    assert r.rc == 0, r
    assert sorted(steps) == sorted(FIVE), r
    for name in FIVE:
        assert ok(steps, name), (name, steps[name], r)
    assert sorted(e.arrived(mark)) == sorted([("api.example.com", "/api"), ("files.example.com", "/pub/a.txt"),
                                              ("files.example.com", "/pub/b.txt"), ("cdn.example.net", "/cdn")])
    assert w.arrived_since(echo_mark, port=5432, proto="tcp"), "the direct TCP never arrived"
    # ... and every would-deny is logged, by the part that would have denied it
    got = denials(r.events)
    assert all(x["sluice.verdict"] == "would_deny" and x["event.outcome"] == "unknown" for x in got), got
    assert all(x["sluice.mode"] == "audit" for x in r.events), r.events
    # inet ones (the unix ones are glibc asking nscd, which no policy here names)
    kern = [x for x in got if x.get("event.action") == "egress-would-deny" and x.get("network.transport") != "unix"]
    assert [(x["destination.ip"], x["destination.port"], x["network.transport"]) for x in kern] == [
        ("198.51.100.10", 5432, "tcp")], kern
    res = [x for x in got if x.get("event.dataset") == "sluice.resolver"]
    assert {x["dns.question.name"] for x in res} == {"cdn.example.net"}, res
    assert all(x["event.reason"] == "name_not_allowed" for x in res), res
    assert any(a["data"] == "203.0.113.10" for x in res for a in x["dns.answers"]), res
    prox = [x for x in got if x.get("event.dataset") == "sluice.proxy"]
    assert [(x["tls.client.server_name"], x["event.reason"]) for x in prox] == [
        ("cdn.example.net", "host_not_allowed")], prox
    unix = [x for x in got if x.get("network.transport") == "unix"]
    assert all(x["destination.address"] == "/var/run/nscd/socket" for x in unix), unix
    assert len(got) == len(kern) + len(unix) + len(res) + len(prox), got
    audit_log = w.write("audit.jsonl", "".join(json.dumps(x) + "\n" for x in r.events))

    # 2. suggest: a policy from the log, every line read
    out = os.path.join(w.tmp, "suggested.yaml")
    p = suggest(w, "--name", "audited", audit_log, "-o", out)
    assert p.returncode == 0, p
    assert " 0 skipped" in p.stderr, p.stderr
    text = open(out).read()
    assert "*." not in text.replace("# - host: \"*.", ""), text   # no active wildcard

    # 3. check: it loads and lints; what it lets out is exactly the five
    c = subprocess.run([W.SLUICE, "policy", "check", "--json", out], capture_output=True, text=True)
    assert c.returncode in (0, 1), c
    doc = json.loads(c.stdout)["files"][0]
    assert doc["ok"] and doc["name"] == "audited" and doc["mode"] == "enforce", doc
    got = sorted((x["kind"], x["target"], tuple((q["lo"], q["hi"]) for q in x["ports"]), x["protocol"])
                 for x in doc["entries"])
    assert got == sorted([
        ("host", "api.example.com", ((TLS_PORT, TLS_PORT),), "tcp"),
        ("host", "cdn.example.net", ((TLS_PORT, TLS_PORT),), "tcp"),
        ("url", "http://files.example.com:%d/pub/" % HTTP_PORT, ((HTTP_PORT, HTTP_PORT),), "tcp"),
        ("cidr", "198.51.100.10/32", ((5432, 5432),), "tcp"),
    ]), got
    assert [x["methods"] for x in doc["entries"] if x["kind"] == "url"] == [["GET"]], doc
    assert all("seen" in x["why"] for x in doc["entries"]), doc

    # 4. enforce with it: the same client gets through, a sixth destination does not
    mark, echo_mark = len(e.origin()), w.mark()
    steps, r = e.run(out, "enforce", sixth=True)
    for name in FIVE:
        assert ok(steps, name), (name, steps[name], r)
    assert steps["sixth-dns"][0] == 6, steps        # curl: could not resolve (NXDOMAIN)
    assert steps["sixth-connect"][0] != 0, steps    # CONNECT refused (403)
    assert ("denied.example.org", "/sixth") not in e.arrived(mark), e.arrived(mark)
    assert w.arrived_since(echo_mark, port=5432, proto="tcp")
    got = denials(r.events)
    assert got, r.events
    assert all(x.get("dns.question.name") == "denied.example.org" or x.get("url.domain") == "denied.example.org"
               for x in got), got
    assert all(x["sluice.verdict"] == "deny" and x["sluice.mode"] == "enforce" for x in got), got


def test_from_scratch_without_a_policy(w):
    """Audit with no policy: no port is proxied, so the TLS to cdn.example.net
    goes out directly; suggest names it from the resolver's answer."""
    e = env(w)
    steps, r = e.run(None, "audit")
    for name in FIVE:
        assert ok(steps, name), (name, steps[name], r)
    kern = [(x["destination.ip"], x["destination.port"]) for x in denials(r.events)
            if x.get("event.action") == "egress-would-deny"]
    assert sorted(kern) == [("198.51.100.10", 5432), ("203.0.113.10", TLS_PORT)], kern
    log = w.write("scratch.jsonl", "".join(json.dumps(x) + "\n" for x in r.events))
    out = os.path.join(w.tmp, "scratch.yaml")
    p = suggest(w, log, "-o", out)
    assert p.returncode == 0, p
    c = subprocess.run([W.SLUICE, "policy", "check", "--json", out], capture_output=True, text=True)
    doc = json.loads(c.stdout)["files"][0]
    got = sorted((x["kind"], x["target"]) for x in doc["entries"])
    assert got == [("cidr", "198.51.100.10/32"), ("host", "api.example.com"), ("host", "cdn.example.net"),
                   ("url", "http://files.example.com:%d/pub/" % HTTP_PORT)], doc
    cdn = [x for x in doc["entries"] if x["target"] == "cdn.example.net"][0]
    assert "direct TCP to %d (203.0.113.10, after resolving the name)" % TLS_PORT in cdn["why"], cdn
    steps, r = e.run(out, "enforce", sixth=True)
    for name in FIVE:
        assert ok(steps, name), (name, steps[name], r)
    assert not ok(steps, "sixth-dns") and not ok(steps, "sixth-connect"), steps


def apply_diff(policy, diff):
    """Apply `suggest --against` output the way a reviewer would (see its
    format in docs/policy.md): per hunk, "- " lines are replaced by the "+ "
    lines, or the "+ " lines go after the "  " context line."""
    lines = policy.splitlines()
    out = list(lines)
    hunks, cur = [], None
    for l in diff.splitlines():
        if l.startswith("@@"):
            cur = {"minus": [], "plus": [], "ctx": None}
            hunks.append(cur)
        elif cur is not None and l[:2] in ("- ", "+ ", "  "):
            key = {"- ": "minus", "+ ": "plus"}.get(l[:2])
            if key:
                cur[key].append(l[2:])
            else:
                cur["ctx"] = l[2:]
        else:
            cur = None
    for h in reversed(hunks):
        if h["minus"]:
            i = next(i for i in range(len(out)) if out[i:i + len(h["minus"])] == h["minus"])
            out[i:i + len(h["minus"])] = h["plus"]
        else:
            i = max(i for i in range(len(out)) if out[i] == h["ctx"])
            out[i + 1:i + 1] = h["plus"]
    return "\n".join(out) + "\n"


def test_against_the_starting_policy(w):
    e = env(w)
    # the starting policy enforced: the two unexpected destinations are refused
    steps, r = e.run(e.start, "enforce")
    for name in ("api", "files-a", "files-b", "dns-api"):
        assert ok(steps, name), (name, steps[name], r)
    assert not ok(steps, "cidr") and not ok(steps, "cdn"), steps
    log = w.write("enforce-start.jsonl", "".join(json.dumps(x) + "\n" for x in r.events))
    p = suggest(w, "--against", e.start, log)
    assert p.returncode == 0, p
    diff = p.stdout
    # the direct CIDR is an addition; the refused name had no port to learn
    assert '+   - cidr: "198.51.100.10/32"\n+     ports: [5432]\n+     protocol: tcp\n' in diff, diff
    assert "cdn.example.net (" in diff and "port is unknown" in diff, diff
    assert "api.example.com" not in diff.split("# summary")[0].split("+++")[1], diff   # allowed already
    merged = w.write("merged.yaml", apply_diff(START, diff))
    c = subprocess.run([W.SLUICE, "policy", "check", merged], capture_output=True, text=True)
    assert c.returncode in (0, 1), (c, open(merged).read())
    steps, r = e.run(merged, "enforce")
    assert ok(steps, "cidr"), steps


def test_audit_mode_still_refuses(w):
    """What no policy could allow stays refused in audit mode: raw and ICMP
    sockets, other protocols, malformed DNS, the proxy's own address."""
    e = env(w)
    w.ns(w.sbx, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647")
    script = r"""
$PROBE ping 192.0.2.10
$PROBE raw 192.0.2.10
python3 -c '
import socket
for name, args in (("udplite", (socket.AF_INET, socket.SOCK_DGRAM, 136)), ("sctp", (socket.AF_INET, socket.SOCK_STREAM, 132))):
    try:
        socket.socket(*args).close(); print("PROTO", name, "ok")
    except OSError as e:
        print("PROTO", name, e.errno)
'
python3 %s/dns_client.py %s
curl -sS --max-time 10 -o /dev/null -w "SELF %%{http_code}\n" --proxy "$SLUICE_PROXY" "$SLUICE_PROXY/loop"
""" % (HERE, w.write("malformed-dns.json", json.dumps([{"raw_hex": "0001", "timeout": 1},
                                                         {"name": "api.example.com", "qdcount": 2, "timeout": 1}])))
    extra = ["--upstream-dns", "192.0.2.53", "--mode", "audit", "--keep-caps", "--env", "PROBE"]
    for c in DOC:
        extra += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c]
    r = w.sluice_run(["sh", "-c", script], policy=e.start, extra=extra, timeout=120,
                     env=dict(os.environ, PROBE=W.PROBE))
    out = r.stdout
    probes = [json.loads(l) for l in out.splitlines() if l.startswith('{"op"')]
    assert [(x["op"], x["result"]) for x in probes] == [("ping", "EPERM"), ("raw", "EPERM")], r
    assert "PROTO udplite 1" in out, out                     # EPERM from sock_create
    assert "PROTO sctp 1" in out or "PROTO sctp 93" in out, out   # EPERM, or no SCTP in this kernel
    dns = [json.loads(l) for l in out.splitlines() if l.startswith('{"step"')]
    assert len(dns) == 2 and dns[0].get("error") == "timeout" and dns[1].get("rcode") == "FORMERR", (dns, r)
    assert "SELF 502" in out or "SELF 403" in out, r
    kern = [x for x in r.events if x.get("sluice.hook") == "sock_create" and not x.get("sluice.canary")]
    assert sorted(x["event.reason"] for x in kern) in (
        sorted(["icmp_socket", "raw_socket", "socket_protocol"]),
        sorted(["icmp_socket", "raw_socket", "socket_protocol", "socket_protocol"])), kern
    assert all(x["sluice.verdict"] == "deny" for x in kern), kern
    res = [x for x in r.events if x.get("event.dataset") == "sluice.resolver" and x.get("event.action") == "dns-query"]
    assert sorted(x["event.reason"] for x in res) == ["malformed_header", "qdcount"], res
    assert all(x["sluice.verdict"] == "refuse" for x in res), res
    prox = [x for x in r.events if x.get("event.dataset") == "sluice.proxy"]
    assert len(prox) == 1 and prox[0]["event.outcome"] == "failure", prox
    assert prox[0]["event.reason"] in ("no_public_address", "ip_literal"), prox
    # and suggest says these are nothing a policy could allow
    p = suggest(w, w.write("refusals.jsonl", "".join(json.dumps(x) + "\n" for x in r.events)))
    assert p.returncode == 0, p
    assert "allow: []" in p.stdout, p.stdout
    assert "no policy can allow it" in p.stdout and "refused whatever the policy says" in p.stdout, p.stdout


GOLDEN = os.path.join(W.ROOT, "tests", "golden", "suggest")
# (name, arguments): each case's stdout and stderr (with "rc=N") are in
# tests/golden/suggest/NAME.out and NAME.err; the logs (made by gen.py) cover
# every kind of line suggest reads, notes or skips.  SLUICE_GOLDEN_UPDATE=1
# rewrites the expected files (after a change that is meant to alter output).
GOLDEN_CASES = [
    ("audit", ["--name", "job", "audit.jsonl"]),
    ("against-enforce", ["--against", "against.yaml", "enforce.jsonl"]),
    ("against-both", ["--against", "against.yaml", "audit.jsonl", "enforce.jsonl"]),
    ("both", ["audit.jsonl", "enforce.jsonl"]),
]


def test_suggest_golden_outputs(w):
    """The same logs give byte for byte the same policy, diff and report."""
    relays = os.path.join(W.ROOT, "policies", "relays.txt")
    for name, args in GOLDEN_CASES:
        r = subprocess.run([W.SLUICE, "policy", "suggest", "--relays", relays] + args, cwd=GOLDEN,
                           capture_output=True, text=True, timeout=60)
        err = r.stderr + "rc=%d\n" % r.returncode
        if os.environ.get("SLUICE_GOLDEN_UPDATE") == "1":
            open(os.path.join(GOLDEN, name + ".out"), "w").write(r.stdout)
            open(os.path.join(GOLDEN, name + ".err"), "w").write(err)
            continue
        want_out = open(os.path.join(GOLDEN, name + ".out")).read()
        want_err = open(os.path.join(GOLDEN, name + ".err")).read()
        assert r.stdout == want_out, (name, r.stdout)
        assert err == want_err, (name, err)
