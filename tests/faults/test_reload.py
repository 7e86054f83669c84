"""Fault suite: a reload storm under proxy and kernel load.  A sandbox's
client makes keep-alive HTTP requests (small ones and 2 MB transfers)
through the transparent proxy, beside a flood of refused connects, while
its policy is reloaded again and again, between two policies that both
allow the requests and neither the connects.  Each reload starts a new proxy and resolver
on the same sockets and tells the old ones to drain (SIGQUIT): no request
is cut, every request the client made has exactly one access-log line, and
none was closed by a drain deadline, and every refused connect is a denial
line or a reported loss.  Servers are the test world's
(documentation addresses, in its own namespaces).
"""
import collections
import json
import os
import threading
import time

import world as W
from test_daemon import Daemon, Workload
from test_proxy import Env, HTTP_PORT, daemon_hatch

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
    hatch = daemon_hatch()
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
        wmark = w.mark()
        res = {}
        # kernel load beside the proxy load: refused connects to a port
        # neither policy allows, blocks of 1,000 (about 10,000 a second at
        # most) until the HTTP load has written its results
        flood = os.path.join(a.dir, "flood.jsonl")
        script = ("python3 %s http://api.example.com:%d 8 4 %s & "
                  "while [ ! -e %s ]; do %s flood-tcp 192.0.2.10 8080 1000 >>%s; sleep 0.1; done; wait"
                  % (LOAD, HTTP_PORT, out, out, W.PROBE, flood))
        t = threading.Thread(target=lambda: res.update(r=a.run("sh", "-c", script, timeout=90)))
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
        # the kernel's side: every flooded connect refused, each a line or a
        # reported loss, across every reload (each one a new generation)
        blocks = [json.loads(l) for l in open(flood) if l.strip()]
        assert blocks and all(b["result"] == "ok" for b in blocks), blocks[:3]
        attempts = sum(int(b["detail"]) for b in blocks)
        deadline, prev = time.time() + 20, None
        while time.time() < deadline:
            ev = d.events_of(name)
            cur = (len(ev), d.status()[name]["denied"])
            if cur == prev:
                break
            prev = cur
            time.sleep(0.5)
        ev = d.events_of(name)
        denials = [e for e in ev if e.get("event.action") == "egress-denied"]
        lost = sum(e["sluice.events_lost"] for e in ev
                   if e.get("event.action") == "events_lost" and e.get("event.dataset") == "sluice.kernel")
        st = d.status()[name]
        # (the HTTP client's address sorting also connect()s UDP sockets to
        # the origin's addresses, RFC 6724: refused too, no packet sent)
        flooded = sum(1 for e in denials if e.get("destination.port") == 8080)
        assert len(denials) + lost == st["denied"], (len(denials), lost, st["denied"])
        assert flooded <= attempts <= flooded + lost and st["denied"] >= attempts, (flooded, lost, attempts, st)
        assert not w.arrived_since(wmark, port=8080), "a denied connection got through during the storm"
    finally:
        a.close()
        d.close()


DNS_POLICY = """\
version: 1
name: %s
allow:
  - host: api.example.com
    ports: [443]
    why: answered at once
  - host: delay.example.com
    ports: [443]
    why: answered 0.5 s late by the world's server
  - cidr: 192.0.2.10/32
    ports: [%d]
    protocol: tcp
    why: a second entry, so that the two policies differ
"""
DNS_CLIENT = os.path.join(HERE, "dns_reload_client.py")


def test_reload_storm_answers_and_logs_every_dns_query(w):
    """Steady streams of DNS queries at once, over UDP (100 a second, half
    of them answered 0.5 s late by the world's server: in flight in the old
    resolver when a reload retires it) and over TCP (one connection per
    query: some just accepted by the old resolver when its drain begins),
    while the policy is reloaded again and again: every query the
    client sent is answered, or counted dropped (status dns_dropped), and
    every answered one has exactly one dns-query line (matched by the
    client's port and the query's ID)."""
    Env(w)
    hatch = daemon_hatch()
    d = Daemon(w, args=hatch)
    name = "frdn%d" % os.getpid()
    a = Workload(w, name)
    out = os.path.join(a.dir, "dns")
    try:
        pa = w.write(name + "-a.yaml", DNS_POLICY % ("dns-reload-a", 5432))
        pb = w.write(name + "-b.yaml", DNS_POLICY % ("dns-reload-b", 9000))
        r = d.ctl("attach", "--policy", pa, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r.stderr
        # both clients at once, in one command: the agent runs its commands
        # one after the other
        both = " & ".join("python3 %s 192.0.2.53 53 8 %s.%s %s" % (DNS_CLIENT, out, m, m) for m in ("udp", "tcp"))
        res = {}
        t = threading.Thread(target=lambda: res.update(r=a.run("sh", "-c", both + " & wait", timeout=60)))
        t.start()
        reloads, pids = 0, set()
        t0 = time.time()
        while time.time() - t0 < 7:
            r = d.ctl("reload", "--policy", pb if reloads % 2 == 0 else pa, name)
            assert r.returncode == 0, r.stderr
            pids.add(d.status()[name]["resolver_pid"])
            reloads += 1
            time.sleep(0.1)
        t.join(60)
        assert "r" in res, "the clients did not finish"
        for m in ("udp", "tcp"):
            assert os.path.exists(out + "." + m), "the %s client wrote nothing; they printed: %s" % (m, res["r"])
        got = {m: json.load(open(out + "." + m)) for m in ("udp", "tcp")}
        for m, g in got.items():
            assert g["error"] is None, "the %s client failed: %s" % (m, g["error"])
        assert not got["udp"]["failed"], "UDP errors on the client's socket: %s" % list(got["udp"]["failed"].items())[:5]
        assert reloads >= 5 and len(pids) >= 5, (reloads, len(pids))
        assert len(got["udp"]["sent"]) > 200 and len(got["tcp"]["sent"]) > 50, {m: len(g["sent"]) for m, g in got.items()}

        def lines():
            return [e for e in d.events_of(name) if e.get("event.action") == "dns-query"]
        deadline = time.time() + 15
        while True:
            by = {}
            for e in lines():
                k = (e["network.transport"], "%d/%s" % (e["source.port"], e["dns.id"]))
                by[k] = by.get(k, 0) + 1
            if all((m, k) in by for m, g in got.items() for k in g["answered"]) or time.time() > deadline:
                break
            time.sleep(0.5)
        dropped = d.status()[name]["dns_dropped"]["total"]
        for m, g in got.items():
            unanswered = [q for q in g["sent"] if "%d/%d" % (q[0], q[1]) not in g["answered"]]
            print("dns reload, %s: %d reloads, sent %d, answered %d, dropped %d; failed %s" % (
                m, reloads, len(g["sent"]), len(g["answered"]), dropped, list(g["failed"].items())[:3]))
            assert len(unanswered) <= dropped, "%s: %d queries neither answered nor counted (dropped %d): %s %s" % (
                m, len(unanswered), dropped, unanswered[:5], list(g["failed"].items())[:5])
            assert all(rc == "NOERROR" or rc == "NXDOMAIN" for rc in g["answered"].values()), \
                collections.Counter(g["answered"].values())
            missing = [k for k in g["answered"] if (m, k) not in by]
            assert not missing, "%s: %d of %d answered queries have no line: %s" % (m, len(missing), len(g["answered"]),
                                                                                  missing[:5])
        twice = [k for k, n in by.items() if n > 1]
        assert not twice, "logged twice: %s" % twice[:5]
        late = [q for q in got["udp"]["sent"] if q[2] == "delay.example.com" and "%d/%d" % (q[0], q[1]) in got["udp"]["answered"]]
        assert len(late) > 100, len(late)      # the slow ones were in flight, and answered
        bad = [e for e in lines() if e.get("event.reason") in ("shutdown", "dns_tunnel_rate")]
        assert not bad, bad[:3]                # none cut by a drain deadline or a stop
        writers = {e["event.id"].rsplit("-", 1)[0] for e in lines()}
        assert len(writers) >= 5, len(writers)  # answered by the old resolvers as well as the new
    finally:
        a.close()
        d.close()
