"""Fault suite: the sandboxes of one daemon share one event ring buffer
(loader/event_ring.h; bpf/sluice.h, "The event ring buffer's budget").  A
sandbox that floods while the daemon reads nothing (SIGSTOP) takes the
pool (the ring less the other's share) and then loses records, counted; a quiet sandbox
beside it keeps its own share: every one of its denials has its line.  For
both, the kernel's denials = denial lines + counted ring-buffer losses,
exactly, and `status` shows the ring and each sandbox's slot.  Without the
budget the flood fills the whole ring and the quiet sandbox's lines are
lost (checked by hand when this test was written).  The denials aim at the
test world's server from the sandbox namespace.
"""
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import POLICY_A, Daemon, Workload  # noqa: E402
from test_full_disk import _account, _flood  # noqa: E402

RECORD = 112 + 8    # struct sluice_event and the ring's record header (SLUICE_RING_RECORD_BYTES)
QUIET = 1000


def _settled(d, names, want):
    """Wait until each sandbox's lines + ring losses equal its kernel
    denials, and those are `want[name]`; returns {name: (lines, lost, status)}."""
    deadline, got = time.time() + 60, {}
    while time.time() < deadline:
        st = d.status()
        got = {}
        for n in names:
            lines, ring, _, _ = _account(d, n)
            got[n] = (len(lines), ring, st[n])
        if all(got[n][2]["denied"] == want[n] and got[n][0] + got[n][1] == want[n] for n in names):
            return got
        time.sleep(0.5)
    raise AssertionError("not settled: %r" % {n: (g[0], g[1], g[2]["denied"]) for n, g in got.items()})


def test_a_flooding_sandbox_does_not_blind_another(w):
    # a 1 MiB ring: 256 KiB a share for two (about 2,100 records), a pool of 704 KiB
    d = Daemon(w, args=["--event-ring", "1M"])
    a = b = None
    loud, quiet = "rbloud%d" % os.getpid(), "rbquiet%d" % os.getpid()
    try:
        a = Workload(w, loud)
        b = Workload(w, quiet)
        d.attach(a, loud, POLICY_A)
        d.attach(b, quiet, POLICY_A)
        top = json.loads(d.ctl("status", "--json").stdout)
        ring = top["event_ring"]
        assert ring and ring["sandboxes"] == 2 and ring["bytes"] == 1 << 20, ring
        # bpf/sluice.h: share = ring / 2N, pool = ring - (N - 1) shares - 64 KiB of slack
        assert ring["share_bytes"] == ring["bytes"] // 4, ring
        assert ring["pool_bytes"] == ring["bytes"] - ring["share_bytes"] - (64 << 10), ring
        st = d.status()
        assert st[loud]["ring_slot"] != st[quiet]["ring_slot"], st
        # more records than the whole ring holds: without the budget the
        # loud sandbox alone would fill it
        flood = ring["bytes"] // RECORD + 20000
        mark = w.mark()
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            _flood(a, flood)
            _flood(b, QUIET)
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        got = _settled(d, [loud, quiet], {loud: flood, quiet: QUIET})
        lines, lost, _ = got[loud]
        # the loud one had the pool, no more (its share is within it)
        held = ring["pool_bytes"] // RECORD + 1
        assert lost > 0 and lines <= held, (lines, lost, held)
        lines, lost, _ = got[quiet]
        assert (lines, lost) == (QUIET, 0), (lines, lost)
        assert not w.arrived_since(mark, port=8080), "a denied connection got through"
        # every record read, every byte given back
        st = d.status()
        assert st[loud]["ring_queued_bytes"] == 0 and st[quiet]["ring_queued_bytes"] == 0, st
    finally:
        if a:
            a.close()
        if b:
            b.close()
        d.close()
