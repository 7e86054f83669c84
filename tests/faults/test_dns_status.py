"""Fault suite: the resolver's dropped queries in `sluice status`.  A
daemon's sandbox floods denied names at its resolver (through the kernel's
DNS redirect); the resolver answers its client's rate and drops the rest,
each drop counted.  `sluice status --json` shows the counts per sandbox
(dns_dropped: rate_limited, socket_overflow, shutdown, total), the text
status says them, they equal the sums of the resolver's dns-queries-dropped
lines, and a reload (a new resolver) continues them instead of starting at
0.  The upstream DNS server is the test world's (192.0.2.53, in its own
namespace).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import Daemon, Workload  # noqa: E402
from test_proxy import HATCH, env as proxy_env  # noqa: E402
FLOOD = os.path.join(HERE, "dns_flood.py")

POLICY = """\
version: 1
name: %s
allow:
  - host: api.example.com
    ports: [443]
    why: one allowed name (the flood's are not)
"""


def line_sums(d, name):
    drops = [e for e in d.events_of(name) if e.get("event.action") == "dns-queries-dropped"]
    return {"rate_limited": sum(e["sluice.dns_dropped_rate_limited"] for e in drops),
            "socket_overflow": sum(e["sluice.dns_dropped_socket_overflow"] for e in drops),
            "shutdown": sum(e.get("sluice.dns_dropped_shutdown", 0) for e in drops)}


def settled(d, name, timeout=20):
    """The status counts once the summary lines (at most one a second) caught up."""
    deadline = time.time() + timeout
    while True:
        st = d.status()[name]["dns_dropped"]
        sums = line_sums(d, name)
        if all(st[k] == sums[k] for k in sums) or time.time() > deadline:
            return st, sums
        time.sleep(0.5)


def test_dropped_queries_per_sandbox_in_status_across_a_reload(w):
    proxy_env(w)   # the world's upstream DNS server
    hatch = []
    for c in HATCH:
        hatch += ["--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    d = Daemon(w, args=hatch + ["--resolver-arg", "--denied-rate", "--resolver-arg", "100"])
    name = "fdst%d" % os.getpid()
    a = Workload(w, name)
    try:
        pa = w.write(name + "-a.yaml", POLICY % "dns-status-a")
        pb = w.write(name + "-b.yaml", POLICY % "dns-status-b")
        r = d.ctl("attach", "--policy", pa, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r.stderr
        st = d.status()[name]
        assert st["dns_dropped"] == {"rate_limited": 0, "socket_overflow": 0, "shutdown": 0, "total": 0}, st
        a.run("python3", FLOOD, "flood", "192.0.2.53", 53, 2, os.path.join(a.dir, "f1.json"), timeout=60)
        first, sums = settled(d, name)
        assert first["rate_limited"] > 1000, first         # 2 s of a flood at 100/s answered
        assert first == dict(sums, total=sum(sums.values())), (first, sums)
        r = d.ctl("status")
        assert r.returncode == 0 and "dns dropped %d (rate-limited %d" % (first["total"], first["rate_limited"]) in r.stdout, r.stdout
        # a reload: a new resolver, the same counts going on
        old = d.status()[name]["resolver_pid"]
        r = d.ctl("reload", "--policy", pb, name)
        assert r.returncode == 0, r.stderr
        assert d.status()[name]["resolver_pid"] != old
        assert d.status()[name]["dns_dropped"]["total"] >= first["total"]
        a.run("python3", FLOOD, "flood", "192.0.2.53", 53, 2, os.path.join(a.dir, "f2.json"), timeout=60)
        second, sums = settled(d, name)
        assert second["rate_limited"] > first["rate_limited"] + 1000, (first, second)
        assert second == dict(sums, total=sum(sums.values())), (second, sums)
    finally:
        a.close()
        d.close()
