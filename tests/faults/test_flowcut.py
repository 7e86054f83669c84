"""Fault suite: a reload cuts the direct TCP flows (cidr entries, allowed
in the kernel, never through the proxy) the new policy no longer allows.
The sandbox holds long-lived connections to the test world's echo server
on two cidr entries (IPv4 and IPv6) and on a third both policies allow;
the reload takes the first two away.  Those two are reset within seconds
(the sandbox's reader sees ECONNABORTED, the server's side is gone: the
RST got out), each with one flow-cut line naming the new policy's reason
and digest; the third keeps echoing; a new connect to a removed entry is
refused.  The servers are the test world's (documentation addresses, in
its own namespaces).
"""
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import Daemon, Workload  # noqa: E402
CLIENT = os.path.join(HERE, "flowcut_client.py")

BEFORE = """\
version: 1
name: flowcut-before
allow:
  - cidr: 198.51.100.10/32
    ports: [5432]
    protocol: tcp
    why: a database the reload takes away
  - cidr: 2001:db8::10/128
    ports: [5432]
    protocol: tcp
    why: the same over IPv6
  - cidr: 203.0.113.10/32
    ports: [9000]
    protocol: tcp
    why: a service both policies allow
"""

AFTER = """\
version: 1
name: flowcut-after
allow:
  - cidr: 203.0.113.10/32
    ports: [9000]
    protocol: tcp
    why: a service both policies allow
"""


def wait_for(what, f, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = f()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def server_conns(w, port):
    """The world's established TCP connections on server port `port` (their peers' ports)."""
    r = subprocess.run(["ip", "netns", "exec", w.wld, "ss", "-tnH", "state", "established", "( sport = :%d )" % port],
                       capture_output=True, text=True, check=True)
    return [int(l.split()[-1].rsplit(":", 1)[1]) for l in r.stdout.splitlines() if l.strip()]


def attach_with_connections(w, d, a, name, policy_text):
    """Attach a's cgroup under policy_text, start the client (two
    connections to port 5432, one to 9000, held open until OUT.go) and wait
    until the world's server has all three.  Returns (thread, out, ports)."""
    d.attach(a, name, policy_text, file=name + "-first.yaml")
    out = os.path.join(a.dir, "flowcut.json")
    t = threading.Thread(target=lambda: a.run("python3", CLIENT, out, timeout=150))
    t.start()
    ports = json.loads(wait_for("the client's connections",
                                lambda: os.path.exists(out + ".mid") and open(out + ".mid").read(), 60))
    assert sorted(server_conns(w, 5432)) == sorted([ports["c4"], ports["c6"]]), ports
    return t, out, ports


def test_reload_cuts_the_direct_flows_the_new_policy_refuses(w):
    d = Daemon(w)
    name = "ffc%d" % os.getpid()
    a = Workload(w, name)
    try:
        after = w.write(name + "-after.yaml", AFTER)
        t, out, ports = attach_with_connections(w, d, a, name, BEFORE)
        t0 = time.time()
        r = d.ctl("reload", "--policy", after, "--json", name)
        assert r.returncode == 0, r.stderr
        digest = d.status()[name]["policy_sha256"]
        # the server's side is gone (the RST got out of the sandbox)
        try:
            wait_for("the server's side reset", lambda: not server_conns(w, 5432), 10)
        except AssertionError:
            raise AssertionError("not reset: %s %s %s" % (r.stdout, [e for e in d.events_of(name) if e.get("event.action")
                                                           in ("flow-cut", "egress-denied")][:4], open(os.path.join(w.tmp, "daemon.err")).read()[-3000:]))
        assert server_conns(w, 9000) == [ports["k"]]
        open(out + ".go", "w").close()
        t.join(150)
        assert os.path.exists(out), "the client did not finish"
        got = json.load(open(out))
        for c in ("c4", "c6"):
            e = got["ended"].get(c)
            assert e and e["how"] in ("ECONNABORTED", "ECONNRESET"), got
            assert e["t"] - t0 < 10, (e, t0)
        assert got["k_ok"] == 5, got
        assert got["new_c4"] == "EPERM", got
        cuts = wait_for("the flow-cut lines",
                        lambda: [e for e in d.events_of(name) if e.get("event.action") == "flow-cut"], 10)
        assert len(cuts) == 2, cuts
        by = {e["destination.ip"]: e for e in cuts}
        assert set(by) == {"198.51.100.10", "2001:db8::10"}, cuts
        for e in cuts:
            assert e["event.outcome"] == "success" and e["sluice.verdict"] == "deny", e
            assert e["event.reason"] == "policy_reloaded", e
            assert e["sluice.reload.reason"] == "tcp_port_not_allowed", e
            assert e["sluice.reload.policy_sha256"] == digest == e["sluice.policy_sha256"], e
            assert e["destination.port"] == 5432 and e["network.transport"] == "tcp", e
        assert by["198.51.100.10"]["source.port"] == ports["c4"], by
        assert by["2001:db8::10"]["source.port"] == ports["c6"], by
        assert by["2001:db8::10"]["network.type"] == "ipv6", by
        assert json.loads(r.stdout)["reload"]["flows_cut"] == 2, r.stdout
        # a reload to the same policy cuts nothing more
        r = d.ctl("reload", "--policy", after, "--json", name)
        assert r.returncode == 0 and json.loads(r.stdout)["reload"]["flows_cut"] == 0, r.stdout
    finally:
        a.close()
        d.close()


AUDIT = """\
version: 1
name: flowcut-audit
mode: audit
allow:
  - cidr: 203.0.113.10/32
    ports: [9000]
    protocol: tcp
    why: a service both policies allow
"""


def test_moving_from_audit_to_enforce_cuts_what_audit_let_through(w):
    """The natural rollout (audit first, then enforce) must not leave the
    connections audit mode let through open: the reload to the enforcing
    policy resets each one it refuses (found by the audit mark the connect
    hook left in the socket's storage), and keeps the one it allows."""
    d = Daemon(w)
    name = "ffa%d" % os.getpid()
    a = Workload(w, name)
    try:
        after = w.write(name + "-after.yaml", AFTER)
        # audit mode lets the two connections the policy does not allow through
        t, out, ports = attach_with_connections(w, d, a, name, AUDIT)
        r = d.ctl("reload", "--policy", after, "--json", name)
        assert r.returncode == 0, (r.stderr, open(os.path.join(w.tmp, "daemon.err")).read()[-3000:])
        wait_for("the server's side reset", lambda: not server_conns(w, 5432), 10)
        assert server_conns(w, 9000) == [ports["k"]]
        open(out + ".go", "w").close()
        t.join(150)
        got = json.load(open(out))
        for c in ("c4", "c6"):
            e = got["ended"].get(c)
            assert e and e["how"] in ("ECONNABORTED", "ECONNRESET"), got
        assert got["k_ok"] == 5 and got["new_c4"] == "EPERM", got
        cuts = wait_for("the flow-cut lines",
                        lambda: [e for e in d.events_of(name) if e.get("event.action") == "flow-cut"], 10)
        assert sorted(e["destination.ip"] for e in cuts) == ["198.51.100.10", "2001:db8::10"], cuts
        assert all(e["event.outcome"] == "success" for e in cuts), cuts
        assert json.loads(r.stdout)["reload"]["flows_cut"] == 2, r.stdout
    finally:
        a.close()
        d.close()
