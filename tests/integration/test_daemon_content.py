"""Policies reach the daemon as content, never as a path (docs/daemon.md,
"Wire format"): `sluice attach` and `sluice reload` read the file (and its
signature, upstream CA and secrets) and send the bytes; the daemon keeps its
own copy and hands its children a sealed memfd with the digest.  Each test
runs its own daemon (state dir and sandbox names of its own)."""
import json
import os
import socket
import subprocess
import time

import world as W
import test_daemon as TD

POLICY_A = TD.POLICY_A
POLICY_B = TD.POLICY_B


def digest(path):
    r = subprocess.run([W.SLUICE, "-j", "policy", "check", path], capture_output=True, text=True)
    assert r.returncode in (0, 1), r
    doc = json.loads(r.stdout)
    found = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("sha256", "digest") and isinstance(v, str) and len(v) == 64:
                    found.append(v)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(doc)
    assert found, doc
    return found[0]


def wait_for(cond, what, timeout=20):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, what
        time.sleep(0.1)


def hidden_dir(w):
    """A directory the test writes its policies to, and a daemon wrapper
    that hides it: the daemon runs in a mount namespace of its own with an
    empty tmpfs over it (as PrivateTmp= hides a client's /tmp)."""
    d = os.path.join(w.tmp, "caller-%d" % time.monotonic_ns())
    os.mkdir(d)
    wrap = ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs sluice-hide "$0" && exec "$@"', d]
    return d, wrap


def test_attach_from_a_directory_the_daemon_cannot_see(w):
    """The policy file is in a directory the daemon's mount namespace
    covers with an empty tmpfs: attach works (the bytes travel), the
    children start (their memfd's digest is the policy's), denials are
    the policy's, and reload by content switches to the new one."""
    pdir, wrap = hidden_dir(w)
    a, b = os.path.join(pdir, "a.yaml"), os.path.join(pdir, "b.yaml")
    open(a, "w").write(POLICY_A)
    open(b, "w").write(POLICY_B)
    name = "ct%d" % os.getpid()
    d = TD.Daemon(w, wrap=wrap)
    wl = None
    try:
        # the daemon really cannot see it
        r = subprocess.run(["nsenter", "-t", str(d.proc.pid), "-m", "ls", pdir], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == "", r
        wl = TD.Workload(w, name)
        r = d.ctl("attach", "--policy", a, "--cgroup", wl.cg, "--name", name, "--netns", w.sbx_path)
        assert r.returncode == 0, r
        st = d.status()[name]
        assert st["policy_sha256"] == digest(a), st
        assert st["proxy_pid"] > 0 and st["resolver_pid"] > 0, st
        assert wl.probe("tcp", "192.0.2.10", 5432) == "ok"
        assert wl.probe("tcp", "192.0.2.10", 9000) == "EPERM"
        r = d.ctl("reload", "--policy", b, name)
        assert r.returncode == 0, r
        assert d.status()[name]["policy_sha256"] == digest(b)
        wait_for(lambda: wl.probe("tcp", "192.0.2.10", 9000) == "ok", "reload by content did not take effect")
        # the daemon's copy is the bytes it was sent
        copy = os.path.join(d.state, "sandboxes", name + ".yaml")
        r = subprocess.run(["nsenter", "-t", str(d.proc.pid), "-m", "cat", copy], capture_output=True, text=True)
        assert r.stdout == POLICY_B, r
    finally:
        if wl:
            wl.close()
        d.close()


def test_a_file_changed_after_attach_changes_nothing_until_reload(w):
    """Attach, then rewrite (and then delete) the file: the policy in force
    stays, a proxy killed and restarted by the daemon starts on the policy
    in force (its memfd, its digest), not on the file; reload brings the
    new one."""
    path = os.path.join(w.tmp, "changing-%d.yaml" % os.getpid())
    open(path, "w").write(POLICY_A)
    want = digest(path)
    name = "cc%d" % os.getpid()
    d = TD.Daemon(w)
    wl = None
    try:
        wl = TD.Workload(w, name)
        r = d.ctl("attach", "--policy", path, "--cgroup", wl.cg, "--name", name, "--netns", w.sbx_path)
        assert r.returncode == 0, r
        open(path, "w").write(POLICY_B)
        newd = digest(path)
        assert newd != want
        old = d.status()[name]["proxy_pid"]
        os.kill(old, 9)
        wait_for(lambda: d.status()[name]["proxy_pid"] not in (0, old), "the proxy was not restarted")
        st = d.status()[name]
        assert st["policy_sha256"] == want, st
        assert wl.probe("tcp", "192.0.2.10", 9000) == "EPERM"
        os.unlink(path)
        r = d.ctl("reload", "--policy", path, name)
        assert r.returncode == 2 and path in r.stderr, r      # the client cannot read it: nothing sent
        assert d.status()[name]["policy_sha256"] == want
        open(path, "w").write(POLICY_B)
        r = d.ctl("reload", "--policy", path, name)
        assert r.returncode == 0, r
        assert d.status()[name]["policy_sha256"] == newd
        starts = [e for e in d.events_of(name) if e.get("event.action") == "proxy-exited"]
        assert len(starts) == 1, starts
    finally:
        if wl:
            wl.close()
        d.close()


def test_errors_name_the_callers_file(w):
    """An invalid policy is refused with the caller's file:line, and the
    refusal is on record; nothing is attached."""
    path = os.path.join(w.tmp, "bad-%d.yaml" % os.getpid())
    open(path, "w").write("version: 1\nname: bad\nallow:\n  - cidr: 300.1.2.3/32\n    why: nope\n")
    name = "ce%d" % os.getpid()
    d = TD.Daemon(w)
    wl = None
    try:
        wl = TD.Workload(w, name)
        r = d.ctl("attach", "--policy", path, "--cgroup", wl.cg, "--name", name)
        assert r.returncode == 2 and (path + ":4:") in r.stderr, r
        assert name not in d.status()
        refused = [e for e in W.read_events(d.events) if e.get("event.action") == "sandbox-attach-refused"]
        assert refused and path in refused[-1]["message"], refused
    finally:
        if wl:
            wl.close()
        d.close()


def raw_request(d, req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(os.path.join(d.state, "control.sock"))
    s.sendall((json.dumps(req) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)


def test_an_older_clients_path_is_refused(w):
    """A request naming the policy by path (what an older client sends) is
    refused with a message that says so, for attach and for reload; a
    descriptor that is not a sealed memfd is refused too."""
    path = os.path.join(w.tmp, "old-%d.yaml" % os.getpid())
    open(path, "w").write(POLICY_A)
    name = "co%d" % os.getpid()
    d = TD.Daemon(w)
    wl = None
    try:
        wl = TD.Workload(w, name)
        a = raw_request(d, {"cmd": "attach", "name": name, "cgroup": wl.cg, "policy": path})
        assert a["ok"] is False and "older sluice client" in a["error"] and path in a["error"], a
        assert name not in d.status()
        r = d.ctl("attach", "--policy", path, "--cgroup", wl.cg, "--name", name)
        assert r.returncode == 0, r
        a = raw_request(d, {"cmd": "reload", "name": name, "policy": path})
        assert a["ok"] is False and "older sluice client" in a["error"], a
        # a plain file descriptor instead of a sealed memfd
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(os.path.join(d.state, "control.sock"))
        with open(path, "rb") as f:
            line = json.dumps({"cmd": "reload", "name": name, "policy_file": path, "policy_fd": 0}) + "\n"
            socket.send_fds(s, [line.encode()], [f.fileno()])
        a = json.loads(s.makefile().readline())
        s.close()
        assert a["ok"] is False and "sealed memfd" in a["error"], a
    finally:
        if wl:
            wl.close()
        d.close()


def test_a_child_refuses_another_policy(w):
    """The proxy and the resolver refuse to start when the policy they
    read does not have the digest the loader handed over."""
    path = os.path.join(w.tmp, "child-%d.yaml" % os.getpid())
    open(path, "w").write(POLICY_A)
    good = digest(path)
    bad = "0" * 64
    for binary, extra in ((os.path.join(W.BUILD, "sluice-proxy"), ["--flow-map", "/nonexistent"]),
                          (os.path.join(W.BUILD, "sluice-resolver"), [])):
        r = subprocess.run([binary, "--listen", "127.0.0.1:0", "--policy", path, "--policy-digest", bad] + extra,
                           capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and "refusing to start" in r.stderr and good in r.stderr, (binary, r)


def restart_refused(d):
    """Start a daemon on d's state dir, expect it to refuse (exit 2); its stderr."""
    r = subprocess.run([W.SLUICE, "daemon", "--state-dir", d.state, "--upstream-dns", "192.0.2.53"],
                       capture_output=True, text=True, timeout=60, env=d.env)
    assert r.returncode == 2, r
    return r.stderr


def test_a_sandbox_pinned_by_another_build_is_refused(w):
    """A pin set whose maps or layout stamp are another build's (a value
    size, a ring-buffer record size, an older layout that lacks a map) is
    not re-adopted: the restarted
    daemon refuses to start, names the map and the way out, and the filter
    stays in force; `sluice detach --force NAME` then lets it start."""
    path = w.write("layout-%d.yaml" % os.getpid(), POLICY_A)
    for case in ("map", "stamp", "older"):
        name = "cl%s%d" % (case, os.getpid())
        d = TD.Daemon(w)
        wl = None
        try:
            wl = TD.Workload(w, name)
            r = d.ctl("attach", "--policy", path, "--cgroup", wl.cg, "--name", name, "--netns", w.sbx_path)
            assert r.returncode == 0, r
            pins = "/sys/fs/bpf/sluice/" + name
            assert os.path.exists(pins + "/sluice_layout")
            d.proc.send_signal(15)
            d.proc.wait(timeout=20)
            if case == "map":
                # sluice_flows as a build with an 8-byte smaller struct sluice_orig pinned it
                os.unlink(pins + "/sluice_flows")
                r = subprocess.run(["bpftool", "map", "create", pins + "/sluice_flows", "type", "lru_hash",
                                    "key", "32", "value", "72", "entries", "64", "name", "sluice_flows"],
                                   capture_output=True, text=True)
                assert r.returncode == 0, r
                want = "map sluice_flows"
            else:
                r = subprocess.run(["bpftool", "-j", "map", "lookup", "pinned", pins + "/sluice_layout",
                                    "key", "0", "0", "0", "0"], capture_output=True, text=True)
                assert r.returncode == 0, r
                val = [int(x, 16) for x in json.loads(r.stdout)["value"]]
                if case == "stamp":
                    # the stamp of a build whose ring-buffer records are 8 bytes longer
                    ev = int.from_bytes(bytes(val[8:12]), "little") + 8
                    val[8:12] = list(ev.to_bytes(4, "little"))
                    want = "struct sizes: event %d" % ev
                else:
                    # a layout-1 build's pins: no ring budget map (a ring of each sandbox's own)
                    os.unlink(pins + "/sluice_ring_budget")
                    val[4:8] = list((1).to_bytes(4, "little"))
                    want = "layout version 1, this build's 4"
                r = subprocess.run(["bpftool", "map", "update", "pinned", pins + "/sluice_layout", "key", "0", "0",
                                    "0", "0", "value"] + [str(v) for v in val], capture_output=True, text=True)
                assert r.returncode == 0, r
            err = restart_refused(d)
            assert "pinned by another sluice build" in err and want in err, err
            assert "sluice detach --force %s" % name in err, err
            assert wl.probe("tcp", "192.0.2.10", 9000) == "EPERM"     # still filtered
            r = subprocess.run([W.SLUICE, "detach", "--force", "--state-dir", d.state, name], capture_output=True,
                               text=True, env=d.env, timeout=60)
            assert r.returncode == 0, r
            assert not os.path.exists(pins)
            d.start()
            assert name not in d.status()
        finally:
            if wl:
                wl.close()
            d.close()
