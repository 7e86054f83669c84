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


HOLD = os.path.join(HERE, "flowcut_hold.py")


def stop(procs):
    """Kill what a test started (each in a session of its own) and reap it."""
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
# in the test world: connect into the sandbox, echo, wait for GO, echo again
PEER = """
import os, socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(b"hi\\n"); assert s.recv(10) == b"hi\\n"
while not os.path.exists(sys.argv[3]): time.sleep(0.05)
try:
    s.sendall(b"again\\n"); print("ok" if s.recv(10) == b"again\\n" else "bad")
except OSError as e:
    print("error", e)
"""


def test_the_cut_takes_the_sandboxs_own_flows_only(w):
    """The cut finds the sandbox's flows by their cgroup: a flow made in a
    cgroup below the sandbox's is cut like the sandbox's own, the same
    flow from another cgroup in the same network namespace (not this
    sandbox's) is left alone, and so is an inbound connection the sandbox
    accepted, whatever the new policy says of its peer."""
    d = Daemon(w)
    name = "ffs%d" % os.getpid()
    a = Workload(w, name)
    b = Workload(w, name + "x")      # not attached: another cgroup in the sandbox's netns
    child = os.path.join(a.cg, "child")
    outs = {k: os.path.join(w.tmp, "%s-%s.json" % (name, k)) for k in ("own", "child", "other")}
    procs, threads = [], []
    try:
        after = w.write(name + "-after.yaml", AFTER)
        d.attach(a, name, BEFORE, file=name + "-first.yaml")
        os.mkdir(child)
        threads.append(threading.Thread(target=lambda: a.run("python3", HOLD, outs["own"], "--listen", "7070",
                                                             timeout=150)))
        threads.append(threading.Thread(target=lambda: b.run("python3", HOLD, outs["other"], timeout=150)))
        for t in threads:
            t.start()
        # a process of the sandbox's cgroup below it: moved there before it
        # enters the netns (`ip netns exec` remounts /sys)
        procs.append(subprocess.Popen(["sh", "-c", "echo $$ > %s/cgroup.procs && exec ip netns exec %s python3 %s %s"
                                       % (child, w.sbx, HOLD, outs["child"])], start_new_session=True))
        wait_for("the sandbox's listener", lambda: os.path.exists(outs["own"] + ".listening"), 60)
        peer = subprocess.Popen(["ip", "netns", "exec", w.wld, "python3", "-c", PEER, "192.0.2.2", "7070",
                                 outs["own"] + ".go"], stdout=subprocess.PIPE, text=True, start_new_session=True)
        procs.append(peer)
        ports = {k: json.loads(wait_for(k, lambda k=k: os.path.exists(outs[k] + ".mid") and open(outs[k] + ".mid").read(),
                                        60))["port"] for k in outs}
        assert sorted(server_conns(w, 5432)) == sorted(ports.values()), ports
        r = d.ctl("reload", "--policy", after, "--json", name)
        assert r.returncode == 0, r.stderr
        wait_for("the sandbox's two flows reset", lambda: server_conns(w, 5432) == [ports["other"]], 10)
        for k in outs:
            open(outs[k] + ".go", "w").close()
        for t in threads:
            t.join(150)
        assert procs[0].wait(60) == 0
        got = {k: json.load(open(outs[k])) for k in outs}
        assert got["own"]["out"] in ("ECONNABORTED", "ECONNRESET"), got
        assert got["child"]["out"] in ("ECONNABORTED", "ECONNRESET"), got
        assert got["other"]["out"] == "alive", got
        # the inbound connection, from a peer no entry of either policy names, still echoes both ways
        assert got["own"]["in"] == "ok", got
        assert peer.communicate(timeout=30)[0].strip() == "ok"
        cuts = wait_for("the flow-cut lines",
                        lambda: [e for e in d.events_of(name) if e.get("event.action") == "flow-cut"], 10)
        assert sorted(e["source.port"] for e in cuts) == sorted([ports["own"], ports["child"]]), cuts
        assert json.loads(r.stdout)["reload"]["flows_cut"] == 2, r.stdout
    finally:
        stop(procs)
        b.close()
        for _ in range(100):
            try:
                os.rmdir(child)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        a.close()
        d.close()


PEER_HOLD = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(b"hi\\n")
time.sleep(60)
"""


def test_an_accepted_socket_reused_for_a_connect_is_cut(w):
    """An attacker's way round the cut: accept an inbound connection (the
    socket is marked as accepted, whose replies pass the backstop), drop it
    with connect(AF_UNSPEC) and connect the same socket to a cidr entry.
    The connect forgets the mark, so the reload that takes the entry away
    resets that flow like any other, and the backstop no longer passes it."""
    d = Daemon(w)
    name = "ffr%d" % os.getpid()
    a = Workload(w, name)
    out = os.path.join(w.tmp, name + "-reuse.json")
    procs = []
    try:
        after = w.write(name + "-after.yaml", AFTER)
        d.attach(a, name, BEFORE, file=name + "-first.yaml")
        t = threading.Thread(target=lambda: a.run("python3", HOLD, out, "--reuse", "7071", timeout=150))
        t.start()
        wait_for("the sandbox's listener", lambda: os.path.exists(out + ".listening"), 60)
        procs.append(subprocess.Popen(["ip", "netns", "exec", w.wld, "python3", "-c", PEER_HOLD, "192.0.2.2", "7071"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        port = json.loads(wait_for("the connection", lambda: os.path.exists(out + ".mid") and open(out + ".mid").read(),
                                   60))["port"]
        assert server_conns(w, 5432) == [port], (port, server_conns(w, 5432))
        r = d.ctl("reload", "--policy", after, "--json", name)
        assert r.returncode == 0, r.stderr
        wait_for("the reused socket's flow reset", lambda: not server_conns(w, 5432), 10)
        open(out + ".go", "w").close()
        t.join(150)
        got = json.load(open(out))
        assert got["out"] in ("ECONNABORTED", "ECONNRESET"), got
        cuts = wait_for("the flow-cut line", lambda: [e for e in d.events_of(name) if e.get("event.action") == "flow-cut"],
                        10)
        assert [e["source.port"] for e in cuts] == [port], cuts
    finally:
        stop(procs)
        a.close()
        d.close()
