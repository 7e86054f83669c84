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
    res = w.probe("tcp", "192.0.2.10", 5432, policy=pol, extra=["--allowed-signers", signers])
    assert res.rc == 2 and want in res.stderr, res
    assert res.events == [] and not w.arrived_since(mark), res   # nothing was made, nothing ran
    assert not W.leftovers(), W.leftovers()


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
    """The daemon of test_daemon.py, in signed mode (its own state dir; the
    sandbox names here are this file's own)."""

    def __init__(self, w, signers):
        self.signers = signers
        Daemon.__init__(self, w)

    def start(self):
        self.proc = subprocess.Popen([W.SLUICE, "daemon", "--state-dir", self.state, "--upstream-dns", "192.0.2.53",
                                      "--allowed-signers", self.signers],
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
