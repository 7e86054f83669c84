"""Fault suite: the daemon's events file under a size cap
(`--events-max-size`, `--events-keep`).  A sandbox floods denials and makes
keep-alive HTTP requests through its transparent proxy while the daemon
rotates its events file again and again (every rotation starts the proxy and
resolver again, as a SIGHUP does): no line is lost or torn by a rotation
(every request has exactly one access-log line, denial lines plus reported
losses equal the kernel's denials, over the files kept), every rotated file
reached the cap, and with few files kept the oldest are removed, each removal
said in an events-rotated line.  Servers are the test world's (documentation
addresses, in its own namespaces).
"""
import json
import subprocess
import os
import threading
import time

import world as W
from test_daemon import POLICY_A, Daemon, Workload
from test_proxy import Env, HTTP_PORT, daemon_hatch

HERE = os.path.dirname(os.path.abspath(__file__))
LOAD = os.path.join(HERE, "http_load.py")
CAP = 1 << 20

POLICY = """\
version: 1
name: cap
allow:
  - host: api.example.com
    ports: [%d]
    why: the API under load
"""


def _files(d):
    """The events files, oldest first: FILE.N ... FILE.1, FILE."""
    n = 1
    while os.path.exists("%s.%d" % (d.events, n)):
        n += 1
    return ["%s.%d" % (d.events, i) for i in range(n - 1, 0, -1)] + [d.events]


def _whole(path):
    """Every line of a rotated file, each a whole JSON object."""
    data = open(path, "rb").read()
    assert data.endswith(b"\n"), "%s ends in a torn line: %r" % (path, data[-200:])
    return [json.loads(x) for x in data.splitlines() if x.strip()]


def _all(d, name=None):
    files = _files(d)
    ev = [e for f in files[:-1] for e in _whole(f)] + W.read_events(files[-1])
    return [e for e in ev if name is None or e.get("sluice.sandbox") == name]


def _rotations(d):
    r = d.ctl("status", "--json")
    assert r.returncode == 0, r
    return json.loads(r.stdout)["events_cap"]


def _flood(a, k, errors):
    r = a.run(W.PROBE, "flood-tcp", "192.0.2.10", "8080", k, timeout=120)
    got = json.loads(r.strip().splitlines()[-1])
    if got["result"] != "ok" or int(got["detail"]) != k:
        errors.append(got)


def test_rotations_under_load_lose_and_tear_nothing(w):
    env = Env(w)
    hatch = daemon_hatch()
    d = Daemon(w, args=hatch + ["--events-max-size", "1M", "--events-keep", "1000"])
    name = "fcap%d" % os.getpid()
    a = Workload(w, name)
    out = os.path.join(a.dir, "load.json")
    fo = None
    try:
        cap = _rotations(d)
        assert cap == {"max_bytes": CAP, "keep": 1000, "rotations": 0}, cap
        d.attach(a, name, POLICY % HTTP_PORT)
        # a follower from the attach on: it must get every line of every file
        fo_out = os.path.join(a.dir, "follow.jsonl")
        fo = subprocess.Popen([W.SLUICE, "events", "--follow", "--sandbox", name, "--since", "0"],
                              stdout=open(fo_out, "w"), stderr=subprocess.PIPE, env=d.env)
        res, errors = {}, []
        t = threading.Thread(target=lambda: res.update(r=a.run("python3", LOAD, "http://api.example.com:%d" % HTTP_PORT,
                                                                "8", "4", out, timeout=90)))
        t.start()
        # denials until the file has been rotated a few times (each ~1 MiB of lines)
        deadline = time.time() + 60
        while _rotations(d)["rotations"] < 3:
            assert time.time() < deadline, ("no third rotation", _rotations(d), os.path.getsize(d.events))
            _flood(a, 3000, errors)
        t.join(100)
        assert "r" in res, "the load did not finish"
        assert not errors, errors
        load = json.load(open(out))
        assert len(load["ok"]) > 100, load["ok"][:5]
        assert not load["cut"], "%d requests cut during rotations: %s" % (len(load["cut"]), load["cut"][:5])
        # the counts settle: every queued denial read, the last drains done
        deadline, prev = time.time() + 20, None
        while time.time() < deadline:
            ev = _all(d, name)
            cur = (len(ev), d.status()[name]["denied"], _rotations(d)["rotations"])
            if cur == prev:
                break
            prev = cur
            time.sleep(0.5)
        cap = _rotations(d)
        files = _files(d)
        assert len(files) == cap["rotations"] + 1, (files, cap)
        for f in files[:-1]:
            assert os.path.getsize(f) >= CAP, "%s was rotated before the cap: %d bytes" % (f, os.path.getsize(f))
        ev = _all(d, name)
        # every request: exactly one access-log line, in whichever file
        ids = {}
        for e in ev:
            u = e.get("url.full", "")
            if e.get("event.dataset") != "sluice.proxy":
                continue
            # http_load.py: small requests /load/ID, large ones ?id=ID
            rid = u.rsplit("/load/", 1)[1] if "/load/" in u else \
                u.split("id=", 1)[1].split("&")[0] if "id=" in u else None
            if rid:
                ids[rid] = ids.get(rid, 0) + 1
        missing = [rid for rid in load["ok"] if rid not in ids]
        assert not missing, "%d of %d requests have no line: %s" % (len(missing), len(load["ok"]), missing[:5])
        assert not [rid for rid, n in ids.items() if n > 1], "a request logged twice"
        # every denial: a line or a reported loss
        lines = [e for e in ev if e.get("event.action") == "egress-denied"]
        lost = sum(e["sluice.events_lost"] for e in ev
                   if e.get("event.action") == "events_lost" and e.get("event.dataset") == "sluice.kernel")
        st = d.status()[name]
        assert len(lines) + lost == st["denied"], (len(lines), lost, st["denied"])
        # one events-rotated line per rotation, each in the file it opened
        daemon = _all(d)
        rot = [e for e in daemon if e.get("event.action") == "events-rotated"]
        assert len(rot) == cap["rotations"], (len(rot), cap)
        assert all("cap %d" % CAP in e.get("message", "") for e in rot), rot[:2]
        # the follower moved from file to file and missed nothing, also not
        # what the retired proxies logged to the old file while they drained
        # (--since replays from the attach line: the children's start lines before it are not asked for)
        at = [i for i, e in enumerate(ev) if e.get("event.action") == "sandbox-attach"][0]
        want = {e["event.id"] for e in ev[at:]}
        deadline = time.time() + 20
        while True:
            got = {e["event.id"] for e in W.read_events(fo_out)}
            if want <= got or time.time() > deadline:
                break
            time.sleep(0.5)
        assert fo.poll() is None, fo.stderr.read()
        assert want <= got, "the follower missed %d of %d lines: %s" % (
            len(want - got), len(want), [e for e in ev if e["event.id"] in want - got][:3])
    finally:
        if fo is not None:
            fo.kill()
            fo.wait()
        a.close()
        d.close()


def test_few_files_kept_the_oldest_removed_and_said(w):
    d = Daemon(w, args=["--events-max-size", "1M", "--events-keep", "2"])
    name = "fcpk%d" % os.getpid()
    a = Workload(w, name)
    try:
        d.attach(a, name, POLICY_A)
        mark = w.mark()
        errors = []
        deadline = time.time() + 60
        while _rotations(d)["rotations"] < 4:
            assert time.time() < deadline, ("no fourth rotation", _rotations(d))
            _flood(a, 3000, errors)
        assert not errors, errors
        # the daemon writes the queued denials, and may rotate again: let it settle
        deadline, prev = time.time() + 20, None
        while time.time() < deadline:
            cur = _rotations(d)["rotations"]
            if cur == prev:
                break
            prev = cur
            time.sleep(1.0)
        # FILE, FILE.1, FILE.2 and nothing older: the disk holds at most keep + 1 files
        assert _files(d) == [d.events + ".2", d.events + ".1", d.events], _files(d)
        assert not os.path.exists(d.events + ".3")
        rot = [e for e in _all(d) if e.get("event.action") == "events-rotated"]
        assert rot and all("removed the oldest" in e["message"] for e in rot[-1:]), rot[-2:]
        assert not w.arrived_since(mark, port=8080), "a denied connection got through"
        # the sandbox still filters after the rotations
        assert a.probe("tcp", "192.0.2.10", 8080) == "EPERM"
    finally:
        a.close()
        d.close()


def test_a_bad_cap_is_refused_and_nothing_starts(w):
    for args, said in ((["--events-max-size", "10K"], "too small"),
                       (["--events-max-size", "lots"], "not a size"),
                       (["--events-keep", "0"], "--events-keep")):
        state = os.path.join(w.tmp, "capbad-%d" % time.monotonic_ns())
        r = subprocess.run([W.SLUICE, "daemon", "--state-dir", state] + args, capture_output=True, text=True,
                             timeout=20)
        assert r.returncode == 2 and said in r.stderr, (args, r.returncode, r.stderr)
        assert not os.path.exists(os.path.join(state, "control.sock")), args
