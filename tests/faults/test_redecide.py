"""Fault suite: a reload decides the proxy's open connections again.  The
sandbox holds, through the transparent proxy, downloads in progress, a
pipelined request waiting behind one, idle TLS tunnels and a keep-alive
connection; then its policy is reloaded to one without files.example.com
and without api.example.com on the TLS port.  What the new policy refuses
is cut at once by the old proxy (the download from files, the tunnel to
api:8443), or refused when it comes (the pipelined request for files: 403),
each with a line saying policy_reloaded, what the new policy said and its
digest; what both policies allow (the downloads from api, the tunnel to
other.example.com, the keep-alive client) is not touched.  The origin and
DNS server are the test world's (documentation addresses, in its own
namespaces).
"""
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import Daemon, Workload  # noqa: E402
from test_proxy import HTTP_PORT, TLS_PORT, daemon_hatch, env as proxy_env  # noqa: E402
CLIENT = os.path.join(HERE, "redecide_client.py")

BEFORE = """\
version: 1
name: redecide-before
allow:
  - host: api.example.com
    ports: [%(http)d, %(tls)d]
    why: the API, plain and TLS
  - host: other.example.com
    ports: [%(tls)d]
    why: a TLS name both policies allow
  - host: files.example.com
    ports: [%(http)d]
    why: downloads the reload takes away
""" % {"http": HTTP_PORT, "tls": TLS_PORT}

AFTER = """\
version: 1
name: redecide-after
allow:
  - host: api.example.com
    ports: [%(http)d]
    why: the API, plain only now
  - host: other.example.com
    ports: [%(tls)d]
    why: a TLS name both policies allow
""" % {"http": HTTP_PORT, "tls": TLS_PORT}


def wait_for(what, cond, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def test_reload_cuts_what_the_new_policy_refuses_and_nothing_else(w):
    reload_cuts(w, [])


def test_reload_cuts_kernel_tunnels_too(w):
    """The same with the tunnels relayed in the kernel (--kernel-tunnels):
    the tunnel the new policy refuses is cut (its sockets are the old
    proxy's, closed), the one both allow keeps its bytes."""
    final = reload_cuts(w, ["--proxy-arg", "--kernel-tunnels"])
    tls = [e for e in final if e["event.action"] == "proxy-tls"]
    assert tls and tls[0]["sluice.tunnel_path"] == "kernel", tls


def reload_cuts(w, extra):
    env = proxy_env(w)
    hatch = daemon_hatch() + list(extra)
    d = Daemon(w, args=hatch)
    name = "frdc%s%d" % ("k" if extra else "", os.getpid())
    a = Workload(w, name)
    out = os.path.join(a.dir, "redecide.json")
    try:
        before = w.write(name + "-before.yaml", BEFORE)
        after = w.write(name + "-after.yaml", AFTER)
        r = d.ctl("attach", "--policy", before, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r.stderr
        old_proxy = d.status()[name]["proxy_pid"]
        m = env.mark()
        res = {}
        t = threading.Thread(target=lambda: res.update(r=a.run("python3", CLIENT, out, timeout=180)))
        t.start()
        wait_for("the client's connections", lambda: os.path.exists(out + ".mid"), 60)
        # the three downloads reached their origins (so each is in progress in the proxy)
        wait_for("the downloads at the origin",
                 lambda: len([o for o in env.arrived(m) if o["path"].startswith("/big")]) >= 3, 30)

        def lines():
            return [e for e in d.events_of(name) if e.get("event.dataset") == "sluice.proxy"]
        r = d.ctl("reload", "--policy", after, name)
        assert r.returncode == 0, r.stderr
        digest = d.status()[name]["policy_sha256"]
        assert d.status()[name]["proxy_pid"] != old_proxy
        # the old proxy cuts the download from files and the tunnel to api:8443 at once
        cut = wait_for("the cut lines (policy_reloaded)",
                       lambda: [e for e in lines() if e.get("event.reason") == "policy_reloaded"]
                       if len([e for e in lines() if e.get("event.reason") == "policy_reloaded"]) >= 2 else None)
        open(out + ".go", "w").close()
        t.join(180)
        assert os.path.exists(out), "the client did not finish: %s" % res
        got = json.load(open(out))
        # refused by the new policy: cut (or our own 403 when nothing of the answer was out yet)
        f = got["f"]
        assert not (f.get("status") == 200 and f.get("complete")), f
        if f.get("status") == 403:
            assert f["headers"].get("x-sluice-denied") == "policy_reloaded", f
        assert "status" not in got["t"] or got["t"]["status"] is None, got["t"]
        # the pipelined request behind an allowed download: refused when it came
        assert got["p1"]["status"] == 200 and got["p1"]["complete"], got["p1"]
        assert got["p2"]["status"] == 403 and got["p2"]["headers"].get("x-sluice-denied") == "policy_reloaded", got["p2"]
        assert "/p2" not in [o["path"] for o in env.arrived(m)]
        # allowed by both: untouched
        assert got["a"]["status"] == 200 and got["a"]["complete"], got["a"]
        assert got["t2"].get("status") == 200, got["t2"]
        assert got["k1"]["status"] == 200 and got["k2"]["status"] == 200, got
        # every cut and refusal has its line: why, and the policy that refused it
        final = wait_for("the refused pipelined request's line",
                         lambda: [e for e in lines() if e.get("event.reason") == "policy_reloaded"]
                         if len([e for e in lines() if e.get("event.reason") == "policy_reloaded"]) >= 3 else None)
        by = {}
        for e in final:
            key = e.get("url.full", "").rsplit("/", 1)[-1] if e["event.action"] == "proxy-http" else e["event.action"]
            by[key] = e
        assert set(by) == {"big?n=50000000", "p2", "proxy-tls"}, final
        for e in final:
            assert e["event.outcome"] == "failure" and e["sluice.verdict"] == "deny", e
            assert e["sluice.reload.reason"] == "host_not_allowed", e
            assert e["sluice.reload.policy_sha256"] == digest, e
        assert by["proxy-tls"]["tls.client.server_name"] == "api.example.com", by["proxy-tls"]
        assert by["p2"]["http.response.status_code"] == 403, by["p2"]
        assert cut  # (the first two lines came before the client read anything)
        # nothing allowed by both was cut or closed by a deadline
        others = [e for e in lines() if e.get("event.reason") != "policy_reloaded"]
        bad = [e for e in others if e.get("event.outcome") == "failure"]
        assert not bad, bad
        assert len([e for e in others if e.get("url.full", "").endswith("/big?n=20000000")]) == 2, others
        kept = [e for e in others if e.get("tls.client.server_name") == "other.example.com"]
        assert len(kept) == 1, others
        if extra:
            assert kept[0]["sluice.tunnel_path"] == "kernel", kept
        return final
    finally:
        a.close()
        d.close()
