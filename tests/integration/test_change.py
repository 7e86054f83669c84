"""Change control (docs/policy.md "Change control"): signed policies.

`sluice policy sign` signs the canonical digest (ssh-keygen -Y sign,
namespace sluice-policy); `sluice run --allowed-signers` and the daemon
refuse a policy whose POLICY.sig does not verify against the allowed
signers, before anything is made, and name the signer in the start,
attach and reload lines.  Keys are made here, in the test's own temporary
directory; traffic goes to the test world only.
"""
import json
import os
import shutil
import subprocess
import time

import world as W
from test_daemon import Daemon, Workload

POLICY = """\
version: 1
name: signed
allow:
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: database
"""


def _sluice(*args, **kw):
    return subprocess.run([W.SLUICE] + list(args), capture_output=True, text=True, timeout=60, **kw)


def _keys(w):
    """alice (in the allowed signers) and mallory (not); returns (dir, signers path)."""
    d = os.path.join(w.tmp, "keys")
    if not os.path.isdir(d):
        os.mkdir(d)
        for who in ("alice", "mallory"):
            W.sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f", os.path.join(d, who))
        pub = open(os.path.join(d, "alice.pub")).read().split()
        with open(os.path.join(d, "allowed_signers"), "w") as f:
            f.write("# who may sign sluice policies\n\nalice@example.com %s %s\n" % (pub[0], pub[1]))
    return d, os.path.join(d, "allowed_signers")


def _signed(w, name, text=POLICY, key="alice"):
    d, _ = _keys(w)
    path = w.write(name, text)
    r = _sluice("policy", "sign", "--key", os.path.join(d, key), path)
    assert r.returncode == 0 and r.stdout.startswith("signed  " + path), r
    assert open(path + ".sig").read().startswith("-----BEGIN SSH SIGNATURE-----")
    return path


def _start_line(res):
    st = [e for e in res.events if e.get("event.action") == "sandbox-start"]
    assert len(st) == 1, res
    return st[0]


def test_signed_policy_runs_and_names_its_signer(w):
    _, signers = _keys(w)
    pol = _signed(w, "good.yaml")
    mark = w.mark()
    res = w.probe("tcp", "192.0.2.10", 5432, policy=pol, extra=["--allowed-signers", signers])
    assert res.rc == 0 and res.probe()["result"] == "ok", res
    assert w.arrived_since(mark, port=5432)
    st = _start_line(res)
    assert st["sluice.policy_signature"] == "verified", st
    assert st["sluice.policy_signer"] == "alice@example.com", st
    assert st["sluice.policy_signer_key"].startswith("ED25519 SHA256:"), st
    # a layout-only edit keeps the digest, so the old signature still holds
    with open(pol, "a") as f:
        f.write("# reviewed in PR 42\n\n")
    res = w.probe("tcp", "192.0.2.10", 5432, policy=pol, extra=["--allowed-signers", signers])
    assert res.rc == 0 and res.probe()["result"] == "ok", res
    # unsigned mode says so
    res = w.probe("tcp", "192.0.2.10", 5432, policy=pol)
    assert res.rc == 0 and _start_line(res)["sluice.policy_signature"] == "unsigned", res
    r = _sluice("policy", "verify", "--allowed-signers", signers, pol)
    assert r.returncode == 0 and "signed by alice@example.com (ED25519 SHA256:" in r.stdout, r


def _refused(w, pol, signers, want):
    mark = w.mark()
    before = set(W.leftovers())   # a dead run's, left by whoever used this machine before
    res = w.probe("tcp", "192.0.2.10", 5432, policy=pol, extra=["--allowed-signers", signers])
    assert res.rc == 2 and want in res.stderr, res
    assert res.events == [] and not w.arrived_since(mark), res   # nothing was made, nothing ran
    assert set(W.leftovers()) <= before, (W.leftovers(), before)


def test_one_byte_tampered_policy_is_refused(w):
    _, signers = _keys(w)
    pol = _signed(w, "tamper.yaml")
    text = open(pol).read()
    assert "5432" in text
    with open(pol, "w") as f:
        f.write(text.replace("5432", "5433"))   # one byte: another port
    _refused(w, pol, signers, "does not verify for this policy")
    # a why is reviewed text too
    with open(pol, "w") as f:
        f.write(text.replace("why: database", "why: databasf"))
    _refused(w, pol, signers, "does not verify for this policy")
    # another policy's valid signature
    other = _signed(w, "other.yaml", POLICY.replace("name: signed", "name: other"))
    shutil.copy(other + ".sig", pol + ".sig")
    with open(pol, "w") as f:
        f.write(text)
    _refused(w, pol, signers, "does not verify for this policy")
    os.unlink(pol + ".sig")
    _refused(w, pol, signers, "tamper.yaml.sig: No such file")


def test_signature_by_a_key_not_allowed_is_refused(w):
    _, signers = _keys(w)
    pol = _signed(w, "mallory.yaml", key="mallory")
    _refused(w, pol, signers, "signed by a key that %s does not name" % signers)
    r = _sluice("policy", "verify", "--allowed-signers", signers, pol)
    assert r.returncode == 2 and "refused " + pol in r.stdout, r


def test_bad_allowed_signers_line_is_an_error(w):
    d, signers = _keys(w)
    pol = _signed(w, "bad-signers.yaml")
    good = open(signers).read()
    cases = [
        ("alice@example.com ssh-ed25519\n", ":4: "),                       # no key
        ("alice@example.com ssh-ed25519 not*base64\n", ":4: the key is not a base64 ssh-ed25519"),
        ("alice@example.com ssh-rsa " + good.split()[-1] + "\n", ":4: the key is not a base64 ssh-rsa"),
        ("alice@example.com nosuch-option ssh-ed25519 AAAA\n", ":4: bad options"),
        ("alice@example.com\n", ":4: want 'principals [options] keytype base64-key'"),
    ]
    for line, want in cases:
        bad = os.path.join(d, "bad_signers")
        with open(bad, "w") as f:
            f.write(good + line)
        _refused(w, pol, bad, bad + want)
        r = _sluice("policy", "verify", "--allowed-signers", bad, pol)
        assert r.returncode == 2 and bad + want in r.stderr, (line, r)
    empty = os.path.join(d, "empty_signers")
    open(empty, "w").write("# nobody\n")
    _refused(w, pol, empty, "names no key")
    # options are fine when they are the documented ones
    with open(os.path.join(d, "opt_signers"), "w") as f:
        f.write('alice@example.com namespaces="sluice-policy",valid-after="20200101" %s\n'
                % " ".join(good.split()[-2:]))
    res = w.probe("tcp", "192.0.2.10", 5432, policy=pol, extra=["--allowed-signers", os.path.join(d, "opt_signers")])
    assert res.rc == 0 and res.probe()["result"] == "ok", res
    # signed mode needs a policy file
    res = w.probe("tcp", "192.0.2.10", 5432, extra=["--allowed-signers", signers])
    assert res.rc == 2 and "--allowed-signers needs --policy" in res.stderr, res


class SignedDaemon(Daemon):
    """The daemon of test_daemon.py, in signed mode or with other options
    (its own state dir; the sandbox names here are this file's own)."""

    def __init__(self, w, signers, args=None):
        self.args = args if args is not None else ["--allowed-signers", signers]
        Daemon.__init__(self, w)

    def start(self):
        self.proc = subprocess.Popen([W.SLUICE, "daemon", "--state-dir", self.state, "--upstream-dns", "192.0.2.53"]
                                     + self.args,
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.w.tmp, "daemon.err"), "a"))
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.ctl("status").returncode == 0:
                return
            if self.proc.poll() is not None:
                raise AssertionError("daemon exited: " + open(os.path.join(self.w.tmp, "daemon.err")).read())
            time.sleep(0.05)
        raise AssertionError("daemon did not answer")


def test_daemon_signed_mode_attach_and_reload(w):
    d_keys, signers = _keys(w)
    # a bad allowed-signers file: the daemon does not start
    bad = os.path.join(d_keys, "bad_daemon_signers")
    open(bad, "w").write("alice@example.com ssh-ed25519 !!\n")
    r = subprocess.run([W.SLUICE, "daemon", "--state-dir", os.path.join(w.tmp, "state-bad"), "--allowed-signers", bad],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and bad + ":1: " in r.stderr, r
    name = "chg%d" % os.getpid()
    d = SignedDaemon(w, signers)
    a = Workload(w, name)
    try:
        r = d.ctl("status")
        assert r.returncode == 0 and "signed mode: every policy must be signed by a key in " + signers in r.stdout, r
        st = json.loads(d.ctl("status", "--json").stdout)
        assert st["policy_signatures"] == "required" and st["allowed_signers"] == signers, st
        unsigned = w.write("unsigned.yaml", POLICY)
        r = d.ctl("attach", "--policy", unsigned, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode != 0 and "unsigned.yaml.sig" in r.stderr + r.stdout, r
        assert name not in d.status()
        assert a.probe("tcp", "192.0.2.10", 8080) == "ok"   # not attached: nothing changed
        pol = _signed(w, "daemon.yaml")
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r
        s = d.status()[name]
        assert s["policy_signature"] == "verified" and s["policy_signer"] == "alice@example.com", s
        assert a.probe("tcp", "192.0.2.10", 5432) == "ok" and a.probe("tcp", "192.0.2.10", 9000) == "EPERM"
        # reload: a tampered policy (one byte) with the old signature changes nothing
        text = open(pol).read()
        wider = w.write("daemon2.yaml", text.replace("[5432]", "[5432, 9000]"))
        shutil.copy(pol + ".sig", wider + ".sig")
        r = d.ctl("reload", "--policy", wider, name)
        assert r.returncode != 0 and "does not verify" in r.stderr + r.stdout and "nothing changed" in r.stderr + r.stdout, r
        assert d.status()[name]["policy_sha256"] == s["policy_sha256"]
        assert a.probe("tcp", "192.0.2.10", 9000) == "EPERM"
        # signed, it goes in, and the reload line names the signer
        wider = _signed(w, "daemon2.yaml", text.replace("[5432]", "[5432, 9000]"))
        r = d.ctl("reload", "--policy", wider, name)
        assert r.returncode == 0, r
        assert a.probe("tcp", "192.0.2.10", 9000) == "ok"
        time.sleep(0.3)
        ev = d.events_of(name)
        att = [e for e in ev if e.get("event.action") == "sandbox-attach"]
        rel = [e for e in ev if e.get("event.action") == "sandbox-reload"]
        assert len(att) == 1 and att[0]["sluice.policy_signer"] == "alice@example.com", att
        assert len(rel) == 1 and rel[0]["sluice.policy_signer"] == "alice@example.com", rel
        assert rel[0]["sluice.policy_signer_key"].startswith("ED25519 SHA256:"), rel
        # the state copy is what was verified, with its signature beside it
        copy = os.path.join(d.state, "sandboxes", name + ".yaml")
        assert open(copy).read() == open(wider).read() and open(copy + ".sig").read() == open(wider + ".sig").read()
        # a restarted daemon re-verifies what it adopts
        d.kill9()
        d.start()
        s = d.status()[name]
        assert s["policy_signer"] == "alice@example.com", s
        assert d.ctl("detach", name).returncode == 0
    finally:
        a.close()
        d.close()


# --- expiring entries --------------------------------------------------------

EXPIRE_CLIENT = r'''
import json, os, socket, sys, time
sys.path.insert(0, %(here)r)
import dnswire

deadline = float(sys.argv[1])

def tcp():
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("192.0.2.10", 5432))
        return "ok"
    except PermissionError:
        return "EPERM"
    except OSError as e:
        return "error %%s" %% e
    finally:
        s.close()

def http():
    # transparently proxied (8081 is a host entry's port): the Host decides
    s = socket.create_connection(("192.0.2.10", 8081), timeout=5)
    try:
        s.sendall(b"GET /x HTTP/1.1\r\nHost: api.example.com:8081\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        return int(data.split(b" ", 2)[1])
    finally:
        s.close()

def dns():
    r = dnswire.udp_ask("192.0.2.53", 53, dnswire.build_query("api.example.com", "A"), timeout=3)
    return dnswire.parse(r)["rcode"] if r else "timeout"

out = {"before": [tcp(), http(), dns()]}
while time.time() < deadline:
    time.sleep(0.02)
out["after"] = [tcp(), http(), dns()]
out["after_s"] = time.time() - deadline
print(json.dumps(out))
'''


def test_entry_expiring_in_a_running_sandbox_stops_it_and_logs_once(w):
    from test_proxy import env as proxy_env, HATCH
    e = proxy_env(w)   # the origin (HTTP :8081) and the DNS server on 192.0.2.53
    expires = int(time.time()) + 4
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))
    pol = w.write("expiring.yaml", """\
version: 1
name: expiring
allow:
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: urgent database access
    expires: %(t)s
    owner: alice@example.com
    ticket: SEC-1
  - host: api.example.com
    ports: [8081]
    why: urgent API access
    expires: %(t)s
    owner: bob@example.com
    ticket: SEC-2
""" % {"t": stamp})
    client = w.write("expire_client.py", EXPIRE_CLIENT % {"here": os.path.dirname(os.path.abspath(__file__))})
    extra = ["--upstream-dns", "192.0.2.53", "--resolver-arg", "--allow-private-answers",
             "--resolver-arg", "192.0.2.0/24"]
    for c in HATCH:
        extra += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c]
    # 0.3 s after the expiry second: "within a second"
    res = w.sluice_run(["python3", client, str(expires + 0.3)], policy=pol, extra=extra, timeout=60)
    assert res.rc == 0, res
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert time.time() < expires + 30, "too slow to say anything about timing"
    assert out["before"] == ["ok", 200, "NOERROR"], out
    assert out["after"] == ["EPERM", 403, "NXDOMAIN"], out
    assert out["after_s"] < 0.7, out
    # the kernel says why
    den = [x for x in res.denials() if x.get("destination.port") == 5432]
    assert len(den) == 1 and den[0]["event.reason"] == "entry_expired", den
    # one line per entry, at the expiry second, with its owner and ticket
    exp = [x for x in res.events if x.get("event.action") == "entry-expired"]
    assert len(exp) == 2, exp
    by_rule = {x["rule.name"]: x for x in exp}
    c = by_rule["allow[0] cidr:192.0.2.10/32"]
    assert c["sluice.rule_owner"] == "alice@example.com" and c["sluice.rule_ticket"] == "SEC-1", c
    assert c["sluice.rule_expires"] == stamp, c
    assert by_rule["allow[1] host:api.example.com"]["sluice.rule_ticket"] == "SEC-2", exp
    # the proxy's and the resolver's lines of the live entry carry them too
    px = [x for x in res.events if x.get("event.dataset") == "sluice.proxy" and x.get("event.outcome") == "success"]
    assert px and px[0]["sluice.rule_owner"] == "bob@example.com" and px[0]["sluice.rule_expires"] == stamp, px
    dq = [x for x in res.events if x.get("event.dataset") == "sluice.resolver" and x.get("rule.name")]
    assert dq and dq[0]["sluice.rule_ticket"] == "SEC-2", dq
    denied = [x for x in res.events if x.get("event.dataset") == "sluice.proxy" and x.get("event.outcome") == "failure"]
    assert denied and denied[-1]["event.reason"] == "host_not_allowed", denied


def test_policy_check_and_diff_on_expiries(w):
    now = int(time.time())
    t = lambda s: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s))
    base = """\
version: 1
name: exp
allow:
  - host: api.example.com
    ports: [443]
    why: an exception
    expires: %s
    owner: alice@example.com
"""
    later = w.write("later.yaml", base % t(now + 30 * 86400))
    soon = w.write("soon.yaml", base % t(now + 2 * 86400))
    gone = w.write("gone.yaml", base % t(now - 60))
    r = _sluice("policy", "check", later)
    assert r.returncode == 0 and "expires %s  owner alice@example.com" % t(now + 30 * 86400) in r.stdout, r
    r = _sluice("policy", "check", soon)
    assert r.returncode == 1 and "soon.yaml:4:5: warning: [expiring] allow[0] host:api.example.com expires at" in r.stdout, r
    r = _sluice("policy", "check", gone)
    assert r.returncode == 2 and "gone.yaml:4:5: allow[0] host:api.example.com expired at" in r.stderr, r
    r = _sluice("policy", "check", "--json", soon)
    assert r.returncode == 1 and json.loads(r.stdout)["files"][0]["warnings"][0]["code"] == "expiring", r
    r = _sluice("policy", "diff", later, soon)
    assert r.returncode == 1 and "expires of host api.example.com: %s -> %s (it ends sooner)" % (
        t(now + 30 * 86400), t(now + 2 * 86400)) in r.stdout, r
    noexp = w.write("noexp.yaml", (base % t(now)).replace("    expires: %s\n" % t(now), ""))
    r = _sluice("policy", "diff", later, noexp)
    assert r.returncode == 1 and "-> never (it no longer ends by itself)" in r.stdout, r
    # bad input: file:line errors
    for bad, want in (("2026-12-31T18:00:00", "the time zone must be Z or a numeric offset"),
                      ("2026-12-31T18:00:00 CET", "the time zone must be Z or a numeric offset"),
                      ("tomorrow", "want an RFC 3339 date-time"),
                      ("2026-13-01T00:00:00Z", "no such date")):
        p = w.write("bad.yaml", base % bad)
        r = _sluice("policy", "check", p)
        assert r.returncode == 2 and "bad.yaml:7:14: bad 'expires'" in r.stderr and want in r.stderr, (bad, r)


# --- boundaries --------------------------------------------------------------

BOUNDARY = """\
version: 1
name: org-boundary
allow:
  - cidr: 192.0.2.0/28
    ports: [5432, 9000]
    protocol: tcp
    why: the team's databases
  - host: "*.example.com"
    ports: [443]
    why: the org's APIs
"""


def test_run_and_daemon_refuse_a_policy_outside_the_boundary(w):
    bnd = w.write("boundary.yaml", BOUNDARY)
    inside = w.write("inside.yaml", POLICY)
    outside = w.write("outside.yaml", POLICY.replace("192.0.2.10/32", "192.0.2.0/27"))
    r = _sluice("policy", "check", "--within", bnd, inside)
    assert r.returncode == 1 and "boundary %s: within" % bnd in r.stdout, r   # 1: the special-range warning
    r = _sluice("policy", "check", "--within", bnd, outside)
    assert r.returncode == 2, r
    assert "outside.yaml:4:5: outside the boundary %s: allow[0] cidr:192.0.2.0/27 allows TCP to 192.0.2.16:5432" % bnd \
        in r.stderr, r
    res = w.probe("tcp", "192.0.2.10", 5432, policy=inside, extra=["--boundary", bnd])
    assert res.rc == 0 and res.probe()["result"] == "ok", res
    mark = w.mark()
    res = w.probe("tcp", "192.0.2.10", 5432, policy=outside, extra=["--boundary", bnd])
    assert res.rc == 2 and "allows TCP to 192.0.2.16:5432" in res.stderr and res.events == [], res
    assert not w.arrived_since(mark)
    # --mode audit is a policy that lets everything through
    res = w.probe("tcp", "192.0.2.10", 5432, policy=inside, extra=["--boundary", bnd, "--mode", "audit"])
    assert res.rc == 2 and "the policy allows everything (mode audit" in res.stderr, res
    # an invalid boundary is an error, nothing runs
    bad = w.write("bad-boundary.yaml", BOUNDARY.replace("ports: [443]", "ports: [443]\n    colour: red"))
    res = w.probe("tcp", "192.0.2.10", 5432, policy=inside, extra=["--boundary", bad])
    assert res.rc == 2 and "bad-boundary.yaml:10:5: unknown key 'colour'" in res.stderr and res.events == [], res
    name = "bnd%d" % os.getpid()
    d = SignedDaemon(w, None, args=["--boundary", bnd])
    a = Workload(w, name)
    try:
        st = json.loads(d.ctl("status", "--json").stdout)
        assert st["boundary"] == bnd and st["policy_signatures"] == "not required", st
        r = d.ctl("attach", "--policy", outside, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode != 0 and "outside the boundary" in r.stderr + r.stdout, r
        assert name not in d.status()
        r = d.ctl("attach", "--policy", inside, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r
        digest = d.status()[name]["policy_sha256"]
        r = d.ctl("reload", "--policy", outside, name)
        assert r.returncode != 0 and "outside the boundary" in r.stderr + r.stdout and "nothing changed" in r.stderr + r.stdout, r
        assert d.status()[name]["policy_sha256"] == digest
        assert a.probe("tcp", "192.0.2.20", 5432) == "EPERM"
        assert d.ctl("detach", name).returncode == 0
    finally:
        a.close()
        d.close()


def test_daemon_entry_expires_without_a_reload(w):
    name = "exp%d" % os.getpid()
    expires = int(time.time()) + 4
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))
    pol = w.write("daemon-expiring.yaml", POLICY.replace("    why: database\n", "    why: database\n    expires: %s\n"
                                                         "    ticket: SEC-9\n" % stamp))
    d = SignedDaemon(w, None, args=[])
    a = Workload(w, name)
    try:
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r
        st = d.status()[name]
        assert st["expires"] == [{"rule": "allow[0] cidr:192.0.2.10/32", "expires": stamp, "expired": False,
                                  "ticket": "SEC-9"}], st
        r = d.ctl("status")
        assert "expires next allow[0] cidr:192.0.2.10/32 at %s, ticket SEC-9" % stamp in r.stdout, r
        assert a.probe("tcp", "192.0.2.10", 5432) == "ok"
        while time.time() < expires + 0.3:
            time.sleep(0.05)
        assert a.probe("tcp", "192.0.2.10", 5432) == "EPERM"
        time.sleep(0.5)
        ev = d.events_of(name)
        exp = [e for e in ev if e.get("event.action") == "entry-expired"]
        assert len(exp) == 1 and exp[0]["sluice.rule_ticket"] == "SEC-9", exp
        den = [e for e in ev if e.get("event.action") == "egress-denied" and e.get("destination.port") == 5432]
        assert den and den[-1]["event.reason"] == "entry_expired", den
        st = d.status()[name]
        assert st["expires"][0]["expired"] is True, st
        assert "expired     1 entry" in d.ctl("status").stdout
        assert d.ctl("detach", name).returncode == 0
    finally:
        a.close()
        d.close()
