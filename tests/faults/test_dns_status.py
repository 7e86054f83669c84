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
import json
import os
import subprocess
import sys
import threading
import time

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import Daemon, Workload  # noqa: E402
from test_proxy import HATCH, daemon_hatch, env as proxy_env  # noqa: E402
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
    hatch = daemon_hatch()
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


def test_a_run_sandboxes_dropped_queries_in_status(w):
    """`sluice run`: the same counts, read from the run's shared page
    (the one its resolver counts each drop into, dns_dropped.h), in the
    "runs" of `sluice status` while the run lives."""
    proxy_env(w)
    name = "fdsr%d" % os.getpid()
    pol = w.write(name + ".yaml", POLICY % "dns-status-run")
    out = os.path.join(w.tmp, name + ".json")
    extra = ["--name", name, "--resolver-arg", "--denied-rate", "--resolver-arg", "100"]
    for c in HATCH:
        extra += ["--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    res = {}
    # the flood, then the run stays until the test has looked (OUT.seen)
    cmd = ["sh", "-c", "python3 %s flood 192.0.2.53 53 2 %s && touch %s.flooded && "
           "for i in $(seq 600); do [ -e %s.seen ] && exit 0; sleep 0.1; done" % (FLOOD, out, out, out)]
    t = threading.Thread(target=lambda: res.update(r=w.sluice_run(cmd, policy=pol, extra=extra, timeout=120)))
    t.start()
    env = dict(os.environ, SLUICE_CONTROL_SOCK=os.path.join(w.tmp, "no-daemon.sock"))
    try:
        deadline = time.time() + 60
        while not os.path.exists(out + ".flooded"):
            assert time.time() < deadline and t.is_alive(), res
            time.sleep(0.1)
        # the resolver's summary lines come at most once a second: wait for
        # the counts to settle (the page is counted as the drops happen)
        last, runs = None, []
        deadline = time.time() + 20
        while time.time() < deadline:
            r = subprocess.run([W.SLUICE, "status", "--json"], capture_output=True, text=True, env=env, timeout=30)
            runs = [x for x in json.loads(r.stdout)["runs"] if x["name"] == name]
            assert runs, r.stdout
            dd = runs[0]["dns_dropped"]
            if dd == last:
                break
            last = dd
            time.sleep(1)
        assert dd["rate_limited"] > 1000 and dd["total"] == sum(dd[k] for k in ("rate_limited", "socket_overflow", "shutdown")), dd
        r = subprocess.run([W.SLUICE, "status"], capture_output=True, text=True, env=env, timeout=30)
        assert "dns dropped %d (rate-limited %d" % (dd["total"], dd["rate_limited"]) in r.stdout, r.stdout
    finally:
        open(out + ".seen", "w").close()
        t.join(120)
    # the run's own summary lines say the same (its shutdown drops, if any, come after)
    drops = [e for e in res["r"].events if e.get("event.action") == "dns-queries-dropped"]
    assert sum(e["sluice.dns_dropped_rate_limited"] for e in drops) == dd["rate_limited"], (drops, dd)
