"""Fault suite: a reload storm under proxy load.  A sandbox's client makes
keep-alive HTTP requests (small ones and 2 MB transfers) through the
transparent proxy while its policy is reloaded again and again, between two
policies that both allow them.  Each reload starts a new proxy and resolver
on the same sockets and tells the old ones to drain (SIGQUIT): no request
is cut, every request the client made has exactly one access-log line, and
none was closed by a drain deadline.  Servers are the test world's
(documentation addresses, in its own namespaces).
"""
import json
import os
import threading
import time

import world as W
from test_daemon import Daemon, Workload
from test_proxy import Env, HATCH, HTTP_PORT

HERE = os.path.dirname(os.path.abspath(__file__))
LOAD = os.path.join(HERE, "http_load.py")

POLICY = """\
version: 1
name: %s
allow:
  - host: api.example.com
    ports: [%d]
    why: the API under load
  - cidr: 192.0.2.10/32
    ports: [%d]
    protocol: tcp
    why: a second entry, so that the two policies differ
"""


def test_reload_storm_cuts_nothing_and_logs_every_request(w):
    env = Env(w)
    hatch = []
    for c in HATCH:
        hatch += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                  "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    d = Daemon(w, args=hatch)
    name = "frld%d" % os.getpid()
    a = Workload(w, name)
    out = os.path.join(a.dir, "load.json")
    try:
        pa = w.write(name + "-a.yaml", POLICY % ("reload-a", HTTP_PORT, 5432))
        pb = w.write(name + "-b.yaml", POLICY % ("reload-b", HTTP_PORT, 9000))
        r = d.ctl("attach", "--policy", pa, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r.stderr
        mark = env.mark()
        res = {}
        t = threading.Thread(target=lambda: res.update(r=a.run("python3", LOAD, "http://api.example.com:%d" % HTTP_PORT,
                                                                "8", "4", out, timeout=90)))
        t.start()
        reloads = 0
        t0 = time.time()
        while t.is_alive() and time.time() - t0 < 7.5:
            r = d.ctl("reload", "--policy", pb if reloads % 2 == 0 else pa, name)
            assert r.returncode == 0, r.stderr
            reloads += 1
            time.sleep(0.05)
        t.join(100)
        assert "r" in res, "the load did not finish"
        load = json.load(open(out))
        assert reloads >= 5, reloads          # (about 40 in a normal build, 5 under ASan)
        assert len(load["ok"]) > 100, load["ok"][:5]
        if load["cut"]:
            rid = load["cut"][0][0]
            why = [e for e in d.events_of(name) if rid in e.get("url.full", "")]
            raise AssertionError("%d requests cut (of %d) during %d reloads: %s; the first one's lines: %s" % (
                len(load["cut"]), len(load["ok"]) + len(load["cut"]), reloads, load["cut"][:5], why))
        # every request has its line: let the last drains finish first
        def lines():
            ev = d.events_of(name)
            return [e for e in ev if e.get("event.dataset") == "sluice.proxy" and e.get("event.action") == "proxy-http"]
        deadline = time.time() + 15
        while time.time() < deadline:
            got = lines()
            ids = {}
            for e in got:
                u = e.get("url.full", "")
                rid = u.rsplit("/load/", 1)[1] if "/load/" in u else \
                    u.split("id=", 1)[1].split("&")[0] if "id=" in u else None
                if rid:
                    ids[rid] = ids.get(rid, 0) + 1
            if all(rid in ids for rid in load["ok"]):
                break
            time.sleep(0.5)
        missing = [rid for rid in load["ok"] if rid not in ids]
        assert not missing, "%d of %d requests have no access-log line: %s" % (len(missing), len(load["ok"]), missing[:5])
        twice = [rid for rid, n in ids.items() if n > 1]
        assert not twice, "logged twice: %s" % twice[:5]
        bad = [e for e in lines() if e.get("event.reason") in ("drain_deadline", "proxy_stopped")]
        assert not bad, bad[:3]
        # and they reached the origin, each once
        seen = [o["path"] for o in env.origin()[mark:] if o.get("event") == "request"]
        assert len(seen) == len(load["ok"]), (len(seen), len(load["ok"]))
        st = d.status()[name]
        assert st["policy_name"] in ("reload-a", "reload-b"), st
    finally:
        a.close()
        d.close()
