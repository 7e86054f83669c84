"""Fault suite: the daemon's events file on a full disk.  The daemon writes
its events to a 64 KiB tmpfs that a filler leaves ~28 KiB of; a sandbox
floods denials.  Lines are lost, never torn: each is written whole or not at
all; the loss is counted per sandbox (`status`: event_lines_lost), said on
stderr once when writing starts failing; enforcement goes on; once space is
freed, the next line is an events_lost line (write_failed, ENOSPC) saying how
many were lost meanwhile; and the kernel's denials = denial lines + the
counted losses (write_failed and ring_buffer_full), exactly.
`sluice run`'s variant (the stop line, the exit summary) is
tests/integration/test_events.py test_full_disk_*.  The denials aim at the
test world's server from the sandbox namespace.
"""
import json
import os
import subprocess
import time

import world as W
from test_daemon import POLICY_A, Daemon, Workload

FLOOD = 5000


def _account(d, name):
    """(denial lines, ring-buffer losses reported, write losses reported, the write-loss lines)"""
    ev = d.events_of(name)
    lines = [e for e in ev if e.get("event.action") == "egress-denied"]
    lost = [e for e in ev if e.get("event.action") == "events_lost" and e.get("event.dataset") == "sluice.kernel"]
    ring = sum(e["sluice.events_lost"] for e in lost if e.get("event.reason") == "ring_buffer_full")
    wrote = [e for e in lost if e.get("event.reason") == "write_failed"]
    return lines, ring, sum(e["sluice.events_lost"] for e in wrote), wrote


def _flood(a, k):
    r = a.run(W.PROBE, "flood-tcp", "192.0.2.10", "8080", k, timeout=120)
    got = json.loads(r.strip().splitlines()[-1])
    assert got["result"] == "ok" and int(got["detail"]) == k, got   # every connect refused (EPERM)


def test_daemon_events_on_a_full_disk_lose_lines_countably(w):
    mnt = os.path.join(w.tmp, "fulldisk")
    os.makedirs(mnt, exist_ok=True)
    W.sh("mount", "-t", "tmpfs", "-o", "size=64k", "sluice-fault-disk", mnt)
    d = a = None
    try:
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb") as f:
            f.write(b"x" * 36 * 1024)
        path = os.path.join(mnt, "events.jsonl")
        err_at = os.path.getsize(os.path.join(w.tmp, "daemon.err")) if os.path.exists(os.path.join(w.tmp, "daemon.err")) else 0
        d = Daemon(w, args=["--events", path])
        d.events = path
        name = "ffull%d" % os.getpid()
        a = Workload(w, name)
        d.attach(a, name, POLICY_A)
        mark = w.mark()
        _flood(a, FLOOD)            # fills the disk; enforcement goes on
        # while full: status counts the lines the daemon could not write
        deadline = time.time() + 20
        while d.status()[name]["event_lines_lost"] == 0 and time.time() < deadline:
            time.sleep(0.2)
        # and the daemon has read every record of the flood (a loaded
        # machine reads behind it): each is a line or a lost line by now
        deadline = time.time() + 20
        while True:
            st = d.status()[name]
            lines, _, _, _ = _account(d, name)
            if st["denied"] >= FLOOD and len(lines) + st["event_lines_lost"] + st["events_lost"] >= st["denied"]:
                break
            assert time.time() < deadline, ("the daemon never read the flood", len(lines), st)
            time.sleep(0.2)
        assert st["event_lines_lost"] > 0, st
        assert st["denied"] >= FLOOD, st
        lines, _, _, wrote = _account(d, name)
        assert len(lines) < FLOOD and not wrote, (len(lines), wrote)   # nothing said in the file yet: it is full
        err = open(os.path.join(w.tmp, "daemon.err")).read()[err_at:]
        assert "cannot write to %s: ENOSPC" % path in err, err[-2000:]
        assert err.count("cannot write to %s" % path) <= 3, err[-2000:]   # once per state change, not per line

        # space again: the next line says how many were lost meanwhile
        os.unlink(filler)
        _flood(a, 5)
        deadline, prev = time.time() + 20, None
        while time.time() < deadline:
            lines, ring, lost, wrote = _account(d, name)
            st = d.status()[name]
            cur = (len(lines), ring, lost, st["denied"])
            if wrote and len(lines) + ring + lost == st["denied"] and cur == prev:
                break
            prev = cur
            time.sleep(0.5)
        assert wrote, "no events_lost line after the disk recovered"
        assert all(e["error.code"] == "ENOSPC" for e in wrote), wrote
        assert lost > 0 and st["event_lines_lost"] >= lost, (lost, st)
        assert st["denied"] >= FLOOD + 5, st
        assert len(lines) + ring + lost == st["denied"], \
            "lines %d + ring-buffer losses %d + write losses %d != kernel denials %d; status %r; free %d bytes" % (
                len(lines), ring, lost, st["denied"], st, os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize)
        assert "writable again" in open(os.path.join(w.tmp, "daemon.err")).read()[err_at:]
        assert not w.arrived_since(mark, port=8080), "a denied connection got through"
        # never torn: every line whole
        with open(path, "rb") as f:
            data = f.read()
        assert data.endswith(b"\n"), "torn last line: %r" % data[-200:]
        for raw in data.split(b"\n")[:-1]:
            json.loads(raw.decode("utf-8"))
    finally:
        if a:
            a.close()
        if d:
            d.close()
        subprocess.run(["umount", "-l", mnt])
