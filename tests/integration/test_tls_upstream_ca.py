"""The CA certificates the proxy trusts for the origins of inspected names
(issue 12): a policy's `tls: {upstream_ca: FILE}`, read by the loader and
handed to the proxy as content (--upstream-ca-fd), in the digest, checked
by `sluice policy check`; bad files refused with file:line, exit 2.  The
world's origin certificate (self-signed, test_proxy's) is the private CA.
"""
import json
import os
import subprocess

import world as W
import test_proxy as TP
import test_tls as T

TLS = T.TLS
BASE = "https://api.example.com:%d" % TLS


def policy(w, name, ca):
    text = T.POLICY.replace("name: tls-tests\n", "name: tls-tests\ntls:\n  upstream_ca: %s\n" % ca)
    assert text != T.POLICY
    return w.write(name, text)


def check(path):
    return subprocess.run([W.SLUICE, "policy", "check", "--json", path], capture_output=True, text=True,
                          timeout=60)


def run_with(w, pol, script):
    T.env(w)
    saved = w.tls_policy
    w.tls_policy = pol
    try:
        return T.run(w, script, upstream_ca=False)
    finally:
        w.tls_policy = saved


def test_policy_upstream_ca_trusted_by_content(w):
    e = T.env(w)
    m = e.mark()
    ca = w.write("upstream-ca.pem", open(e.cert).read())
    pol = policy(w, "tls-ca.yaml", ca)
    r = run_with(w, pol, T.curl(BASE + "/pub/with-policy-ca", T.resolve("api.example.com")))
    assert r.rc == 0, r
    assert T.curl_codes(r) == [["200", BASE + "/pub/with-policy-ca"]], r
    assert [g["path"] for g in e.arrived(m)] == ["/pub/with-policy-ca"]
    line = TP.only(r.proxy, url__full=BASE + "/pub/with-policy-ca")
    assert line["event.reason"] == "allowed", line
    # the digest covers the section: the same policy without it differs
    c1, c0 = check(pol), check(w.tls_policy)
    assert c1.returncode in (0, 1) and c0.returncode in (0, 1), (c1, c0)
    d1 = json.loads(c1.stdout)["files"][0]["sha256"]
    d0 = json.loads(c0.stdout)["files"][0]["sha256"]
    assert d1 != d0 and line["rule.version"] == d1, (d1, d0, line)


def test_bad_upstream_ca_refused_with_file_line(w):
    e = T.env(w)
    key = w.write("not-a-ca.pem", open(e.key).read())
    garbage = w.write("garbage.pem", "hello\n")
    cases = [
        (os.path.join(w.tmp, "missing.pem"), "cannot read"),
        (garbage, "no PEM certificate"),
        (key, "a private key"),
    ]
    for i, (path, why) in enumerate(cases):
        pol = policy(w, "tls-bad-%d.yaml" % i, path)
        c = check(pol)
        assert c.returncode == 2, c
        text = subprocess.run([W.SLUICE, "policy", "check", pol], capture_output=True, text=True, timeout=60)
        assert text.returncode == 2, text
        out = text.stdout + text.stderr
        assert "%s:4:16: tls.upstream_ca: %s" % (pol, path) in out and why in out, out
        r = run_with(w, pol, "echo SHOULD_NOT_RUN")
        assert r.rc == 2 and "SHOULD_NOT_RUN" not in r.stdout, r
        assert "tls.upstream_ca" in r.stderr and why in r.stderr, r
    # a relative path is a policy error
    pol = policy(w, "tls-rel.yaml", "ca.pem")
    c = subprocess.run([W.SLUICE, "policy", "check", pol], capture_output=True, text=True, timeout=60)
    assert c.returncode == 2 and "%s:4:16: tls.upstream_ca must be an absolute path" % pol in c.stdout + c.stderr, c
    # and --upstream-ca of run is read by the loader too
    r = w.sluice_run(["echo", "SHOULD_NOT_RUN"], policy=w.tls_policy, extra=["--upstream-ca", garbage])
    assert r.rc == 2 and "--upstream-ca: %s: no PEM certificate" % garbage in r.stderr, r
