"""Fault suite: exact accounting across daemon restarts.  A sandbox floods
denials while its daemon is killed with SIGKILL and restarted twice; the
ring buffer overflows while no daemon reads it.  Afterwards the kernel's
denials equal the denial lines plus every loss reported (events_lost lines,
ring_buffer_full and write_failed): a restarted daemon continues the
reported count it finds in the sandbox's state (NAME.json "accounting")
instead of reporting the kernel's whole loss count again.
The denials aim at the test world's server from the sandbox namespace.
"""
import json
import os
import threading
import time

import world as W
from test_daemon import POLICY_A, Daemon, Workload


def _account(d, name):
    ev = d.events_of(name)
    lines = [e for e in ev if e.get("event.action") == "egress-denied"]
    lost = [e for e in ev if e.get("event.action") == "events_lost" and e.get("event.dataset") == "sluice.kernel"]
    return lines, sum(e["sluice.events_lost"] for e in lost), lost


def test_two_kill9_restarts_account_for_every_denial(w):
    n = 200000
    # a 1 MiB ring (about 8,700 records): each outage's 50,000 overflow it
    d = Daemon(w, args=["--event-ring", "1M"])
    name = "frst%d" % os.getpid()
    a = Workload(w, name)
    try:
        d.attach(a, name, POLICY_A)
        mark = w.mark()
        errors = []

        def flood(k):
            r = a.run(W.PROBE, "flood-tcp", "192.0.2.10", "8080", k, timeout=120)
            got = json.loads(r.strip().splitlines()[-1])
            if got["result"] != "ok" or int(got["detail"]) != k:
                errors.append(got)

        # a quarter with the daemon reading; then twice: the daemon killed
        # as a flood starts, the flood goes on with nobody reading the ring
        # buffer (it overflows whatever the machine's speed), and a restart
        flood(n // 4)
        for _ in range(2):
            t = threading.Thread(target=flood, args=(n // 4,))
            t.start()
            time.sleep(0.05)
            d.kill9()
            t.join(130)
            assert not t.is_alive(), "the flood did not finish"
            d.start()
            time.sleep(0.5)
        assert not errors, errors
        n = 3 * (n // 4)
        # every queued event read and every loss reported: the counts settle
        deadline, prev = time.time() + 20, None
        while time.time() < deadline:
            lines, lost, _ = _account(d, name)
            st = d.status()[name]
            cur = (len(lines), lost, st["denied"])
            if cur == prev and st["denied"] == st["denied"]:
                break
            prev = cur
            time.sleep(0.5)
        lines, lost, lost_lines = _account(d, name)
        st = d.status()[name]
        assert st["denied"] >= n, st
        assert lost > 0, "the ring buffer never overflowed: the case proves nothing (%d lines)" % len(lines)
        assert st["events_lost"] >= lost, st
        assert len(lines) + lost == st["denied"], \
            "lines %d + reported losses %d != kernel denials %d (kernel lost %d; reports %s)" % (
                len(lines), lost, st["denied"], st["events_lost"],
                [(e["sluice.events_lost"], e["sluice.events_lost_total"]) for e in lost_lines])
        # no line twice (a restart re-reading what the last daemon wrote)
        keys = [(e.get("sluice.socket_cookie"), e.get("sluice.seq")) for e in lines]
        assert len(set(keys)) == len(keys), "%d duplicate lines" % (len(keys) - len(set(keys)))
        assert sum(1 for e in d.events_of(name) if e.get("event.action") == "sandbox-adopt") == 2
        assert not w.arrived_since(mark, port=8080), "a denied connection got through"
    finally:
        a.close()
        d.close()
