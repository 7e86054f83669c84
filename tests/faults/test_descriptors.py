"""Fault suite: the proxy at its descriptor limit.  The daemon (and so the
sandbox's proxy) runs with RLIMIT_NOFILE 1024; the sandbox opens 1,100
connections that send nothing.  The proxy admits what its limit leaves room
for (descriptors kept for each open connection's upstream and pipes),
refuses the rest at once, each with a JSON access-log line
(descriptor_limit), does not spin, and an open keep-alive connection keeps
working; once the idle ones are gone, new clients are served again.
The origin and DNS server are the test world's.
"""
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import Daemon, Workload  # noqa: E402
from test_proxy import Env, HATCH, HTTP_PORT  # noqa: E402
from test_control import _cpu_ticks  # noqa: E402
CLIENT = os.path.join(HERE, "fd_client.py")

POLICY = """\
version: 1
name: fd-limit
allow:
  - host: api.example.com
    ports: [%d]
    why: the API
""" % HTTP_PORT


def test_proxy_at_its_descriptor_limit_refuses_with_a_line(w):
    env = Env(w)
    hatch = []
    for c in HATCH:
        hatch += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                  "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    # idle clients are held (no header timeout within the case, even under ASan)
    d = Daemon(w, args=hatch + ["--proxy-arg", "--header-timeout", "--proxy-arg", "60"], nofile=1024)
    name = "ffd%d" % os.getpid()
    a = Workload(w, name)
    out = os.path.join(a.dir, "fd.json")
    try:
        pol = w.write(name + ".yaml", POLICY)
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r.stderr
        proxy = d.status()[name]["proxy_pid"]
        res = {}
        t = threading.Thread(target=lambda: res.update(r=a.run("python3", CLIENT, "api.example.com", HTTP_PORT,
                                                                1100, out, timeout=60)))
        t.start()
        deadline = time.time() + 30
        while not os.path.exists(out + ".mid") and time.time() < deadline:
            time.sleep(0.05)
        assert os.path.exists(out + ".mid"), "the client did not get its idle connections open"
        t0 = _cpu_ticks(proxy)
        time.sleep(1.0)
        used = (_cpu_ticks(proxy) - t0) / os.sysconf("SC_CLK_TCK")
        t.join(60)
        got = json.load(open(out))
        assert used < 0.3, "the proxy used %.2f s of CPU in 1 s at its limit" % used
        assert got["a1"].get("status") == 200, got
        assert got["idle_opened"] == 1100, got
        assert got["idle_refused"] >= 800, got           # refused at once, not left to a timeout
        assert got["a2"].get("status") == 200 and got["a2"]["s"] < 2, got   # the open connection works
        assert "error" in got["b1"] and got["b1"]["s"] < 2, got              # a new one: refused at once
        assert got["c1"].get("status") == 200, got                            # and served again later
        time.sleep(0.5)
        ev = [e for e in d.events_of(name) if e.get("event.dataset") == "sluice.proxy"]
        refused = [e for e in ev if e.get("event.reason") == "descriptor_limit"]
        assert len(refused) >= got["idle_refused"], (len(refused), got)
        e = refused[0]
        assert e["event.action"] == "proxy-connection" and e["event.outcome"] == "failure", e
        assert e.get("sluice.orig_dst.port") == HTTP_PORT, e
        assert d.status()[name]["proxy_pid"] == proxy, "the proxy died at its limit"
    finally:
        a.close()
        d.close()
