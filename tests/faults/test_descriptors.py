"""Fault suite: the proxy and the resolver at a small descriptor limit.

The proxy: the daemon (and so the
sandbox's proxy) runs with RLIMIT_NOFILE 1024; the sandbox opens 1,100
connections that send nothing.  The proxy admits what its limit leaves room
for (descriptors kept for each open connection's upstream and pipes),
refuses the rest at once, each with a JSON access-log line
(descriptor_limit), does not spin, and an open keep-alive connection keeps
working; once the idle ones are gone, new clients are served again.
The origin and DNS server are the test world's.

The resolver: a sluice-resolver in the sandbox's netns at RLIMIT_NOFILE
128, while DNS-over-TCP clients hold 400 connections open that send
nothing: it fits its TCP clients and upstream queries into the limit, closes
the longest idle client for a new one (counted in dns-tcp-refused lines),
does not spin, and a well-behaved client's UDP and TCP lookups of an allowed
name keep being answered.  Then its limit is lowered under it (as if
something else had taken the descriptors): accept(2) fails with EMFILE, and
the resolver refuses one client at a time through a reserved descriptor,
counted, pausing in between instead of spinning; once the limit is back, it
answers again.
"""
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import Daemon, Workload  # noqa: E402
from test_proxy import Env, HTTP_PORT, daemon_hatch  # noqa: E402
from test_control import _cpu_ticks  # noqa: E402
import world as W  # noqa: E402
CLIENT = os.path.join(HERE, "fd_client.py")
DNS_CLIENT = os.path.join(HERE, "dns_tcp_client.py")
RESOLVER = os.path.join(W.BUILD, "sluice-resolver")

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
    hatch = daemon_hatch()
    # idle clients are held (no header timeout within the case, even under ASan)
    d = Daemon(w, args=hatch + ["--proxy-arg", "--header-timeout", "--proxy-arg", "60"], nofile=1024)
    name = "ffd%d" % os.getpid()
    a = Workload(w, name)
    out = os.path.join(a.dir, "fd.json")
    try:
        d.attach(a, name, POLICY)
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


RESOLVER_POLICY = """\
version: 1
name: dns-fd-limit
allow:
  - host: api.example.com
    ports: [443]
    why: an allowed name
"""
DNS_PORT = 5398
NOFILE = 128


class _Client:
    """dns_tcp_client.py in the sandbox's netns: one command, one JSON line."""

    def __init__(self, w):
        self.p = subprocess.Popen(["ip", "netns", "exec", w.sbx, "python3", DNS_CLIENT, "127.0.0.1", str(DNS_PORT)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, cmd, timeout=60):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        assert r, "the client did not answer %r within %d s" % (cmd, timeout)
        line = self.p.stdout.readline()
        assert line, "the client died on %r" % cmd
        return json.loads(line)

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def _cpu_for_a_second(pid):
    t0 = _cpu_ticks(pid)
    time.sleep(1.0)
    return (_cpu_ticks(pid) - t0) / os.sysconf("SC_CLK_TCK")


def _answered(r):
    return r.get("rcode") == "NOERROR" and "192.0.2.10" in r.get("answers", [])


def test_resolver_at_its_descriptor_limit_keeps_answering(w):
    Env(w)   # the world's upstream DNS server (192.0.2.53)
    log = os.path.join(w.tmp, "dns-fd.jsonl")
    err = os.path.join(w.tmp, "dns-fd.err")
    pol = w.write("dns-fd.yaml", RESOLVER_POLICY)

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, RESOLVER, "--listen", "127.0.0.1:%d" % DNS_PORT, "--policy", pol,
                          "--log", log, "--upstream-dns", "192.0.2.53", "--allow-private-answers", "192.0.2.0/24"],
                         preexec_fn=limit, stderr=open(err, "w"))
    c = None
    try:
        deadline = time.time() + 10
        while "resolver-start" not in (open(log).read() if os.path.exists(log) else ""):
            assert time.time() < deadline and p.poll() is None, "the resolver did not start"
            time.sleep(0.05)
        base = len(os.listdir("/proc/%d/fd" % p.pid))
        c = _Client(w)
        lookups = [c.ask("udp api.example.com"), c.ask("tcp api.example.com")]
        assert all(_answered(r) for r in lookups), lookups

        # 400 idle clients: far more than 128 descriptors hold.  Checked at
        # once, before its 5 s idle deadline closes them: a resolver without
        # a budget is at EMFILE now (it spins, and UDP lookups get SERVFAIL:
        # no descriptor for the upstream query)
        opened = c.ask("hold 400")["opened"]
        assert opened >= 390, opened
        used = _cpu_for_a_second(p.pid)
        assert used < 0.3, "the resolver used %.2f s of CPU in 1 s at its client limit" % used
        # the well-behaved client, over UDP and over new TCP connections
        during = []
        for _ in range(5):
            during += [c.ask("udp api.example.com"), c.ask("tcp api.example.com")]
        assert all(_answered(r) for r in during), during
        assert max(r["s"] for r in during) < 5, during
        lookups += during
        deadline = time.time() + 10
        while c.ask("count")["held"] > NOFILE and time.time() < deadline:
            time.sleep(0.2)
        held = c.ask("count")
        assert held["held"] <= NOFILE, held
        c.ask("release")
        deadline = time.time() + 10    # until it has closed its side of them
        while len(os.listdir("/proc/%d/fd" % p.pid)) > base + 2 and time.time() < deadline:
            time.sleep(0.1)

        # the limit lowered under it (8 more than it holds, fewer than its
        # client limit): accept(2) now fails with EMFILE
        n_open = len(os.listdir("/proc/%d/fd" % p.pid))
        assert n_open <= base + 2, (n_open, base)
        resource.prlimit(p.pid, resource.RLIMIT_NOFILE, (n_open + 8, NOFILE))
        c.ask("hold 100")
        deadline = time.time() + 20
        while c.ask("count")["closed"] < 2 and time.time() < deadline:   # refused at once, not left queued
            time.sleep(0.2)
        assert c.ask("count")["closed"] >= 2, "no client was refused at EMFILE"
        used = _cpu_for_a_second(p.pid)
        assert used < 0.3, "the resolver used %.2f s of CPU in 1 s at EMFILE" % used
        assert p.poll() is None, "the resolver died at EMFILE"
        resource.prlimit(p.pid, resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
        c.ask("release")
        after = [c.ask("udp api.example.com")]
        deadline = time.time() + 20
        while True:   # the queued clients it accepts now, then ours
            after.append(c.ask("tcp api.example.com"))
            if _answered(after[-1]) or time.time() > deadline:
                break
        assert _answered(after[0]) and _answered(after[-1]), after
        lookups += [after[0], after[-1]]

        t_end = time.time()
        p.send_signal(signal.SIGTERM)   # the last summary line is written at exit
        assert p.wait(10) == 0
        lines = W.read_events(log)
        shed = [e for e in lines if e.get("event.action") == "dns-tcp-refused"]
        assert shed, "no dns-tcp-refused line"
        for e in shed:
            assert e["event.kind"] == "metric" and e["event.dataset"] == "sluice.resolver", e
            assert e["sluice.dns_tcp_refused"] == (e["sluice.dns_tcp_closed_idle"] + e["sluice.dns_tcp_refused_limit"]
                                                   + e["sluice.dns_tcp_refused_descriptors"]), e
        closed_idle = sum(e["sluice.dns_tcp_closed_idle"] for e in shed)
        refused_fd = sum(e["sluice.dns_tcp_refused_descriptors"] for e in shed)
        assert shed[-1]["sluice.dns_tcp_refused_total"] == sum(e["sluice.dns_tcp_refused"] for e in shed), shed
        # idle clients past the limit were closed by the resolver for newer
        # ones, and counted (all of them, but for those a loaded machine let
        # reach the 5 s idle deadline first)
        assert closed_idle >= (opened - NOFILE) // 2, (closed_idle, opened)
        assert refused_fd >= 2, refused_fd
        # summaries, not a line per client: at most one a second
        assert len(shed) <= t_end - os.path.getmtime(pol) + 3, len(shed)
        # each answered lookup has its line
        allowed = [e for e in lines if e.get("event.action") == "dns-query" and e.get("dns.question.name") == "api.example.com"
                   and e.get("dns.response_code") == "NOERROR"]
        assert len(allowed) >= len(lookups), (len(allowed), len(lookups))
        # refusals are lines and counts, not a flood on stderr
        errs = open(err).read().splitlines()
        assert len(errs) < 10, errs[:10]
    finally:
        if c:
            c.close()
        if p.poll() is None:
            p.kill()
            p.wait()
