"""Fault suite: hostile HTTP clients against the sandbox's proxy.  Heads far
over the proxy's limits (1 MiB of header bytes, 500 header lines, a 1 MiB
request line) get their status (431, 414) and a line each, are never
forwarded, and a keep-alive client next to them keeps being served; a 1 GB
upload streams through with the proxy's memory bounded, and its line says
how many bytes went up; 10,000 requests pipelined on one connection are each
answered (200, or 403 for the denied name among them), in order, each with
its line, the proxy's memory bounded.  The proxy's resident memory is
sampled from /proc while the hostile part runs.  The origin and DNS server
are the test world's (documentation addresses, in its own namespaces).
"""
import json
import os
import sys
import threading
import time

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_daemon import Daemon, Workload  # noqa: E402
from test_proxy import HTTP_PORT, daemon_hatch, env as proxy_env  # noqa: E402
CLIENT = os.path.join(HERE, "hostile_client.py")

POLICY = """\
version: 1
name: hostile
allow:
  - host: api.example.com
    ports: [%d]
    why: the API
""" % HTTP_PORT

GB = 1 << 30
# ASan's allocator keeps freed memory in quarantine (256 MiB): resident
# memory there says only that nothing grows with the traffic (a 1 GB body
# kept, 10,000 requests' state kept), not how little the proxy needs
ASAN = "ASAN_OPTIONS" in os.environ


def limit_kib(mib):
    return (512 if ASAN else mib) * 1024


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


class Sampler:
    """The proxy's peak resident memory while a client runs."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, rss_kib(pid), False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop:
            try:
                self.peak = max(self.peak, rss_kib(self.pid))
            except (OSError, AssertionError):
                return
            time.sleep(0.05)

    def done(self):
        self.stop = True
        self.t.join(5)
        return self.peak


class Setup:
    def __init__(self, w, tag):
        self.env = proxy_env(w)
        hatch = daemon_hatch()
        self.d = Daemon(w, args=hatch)
        self.name = "fh%s%d" % (tag, os.getpid())
        self.a = Workload(w, self.name)
        try:
            pol = w.write(self.name + ".yaml", POLICY)
            r = self.d.ctl("attach", "--policy", pol, "--cgroup", self.a.cg, "--netns", w.sbx_path, "--name", self.name)
            assert r.returncode == 0, r.stderr
            self.proxy = self.d.status()[self.name]["proxy_pid"]
            # the proxy as it is when it has served a request (its pools and caches made)
            self.a.run("python3", CLIENT, "pipeline", "api.example.com", HTTP_PORT, 20, os.path.join(self.a.dir, "warm.json"),
                       timeout=60)
        except BaseException:
            self.close()
            raise

    def client(self, mode, n, timeout):
        """Run the client; returns (its result, the proxy's RSS before and its peak, in KiB)."""
        out = os.path.join(self.a.dir, mode + ".json")
        base = rss_kib(self.proxy)
        s = Sampler(self.proxy)
        try:
            self.a.run("python3", CLIENT, mode, "api.example.com", HTTP_PORT, n, out, timeout=timeout)
        finally:
            peak = s.done()
        assert os.path.exists(out), "the client wrote nothing"
        return json.load(open(out)), base, peak

    def lines(self, port=None, want=None, timeout=20):
        """The proxy's proxy-http lines (of the client port `port`); wait until there are `want`."""
        deadline = time.time() + timeout
        while True:
            got = [e for e in self.d.events_of(self.name)
                   if e.get("event.dataset") == "sluice.proxy" and e.get("event.action") == "proxy-http" and
                   (port is None or e.get("source.port") == port)]
            if want is None or len(got) >= want or time.time() > deadline:
                return got
            time.sleep(0.5)

    def close(self):
        self.a.close()
        self.d.close()


def test_huge_heads_get_their_status_and_a_line_and_nothing_else_waits(w):
    s = Setup(w, "h")
    try:
        m = s.env.mark()
        n = 30
        got, base, peak = s.client("headers", n, timeout=120)
        assert got["before"].get("status") == 200, got
        assert got["after"].get("status") == 200, got
        during = got["during"]
        assert all(x.get("status") == 200 for x in during), during
        # the normal client is not held up by the hostile ones (generous: a loaded CI machine)
        assert max(x["s"] for x in during) < 5, during
        want = {"header_bytes": 431, "header_lines": 431, "request_line": 414}
        wrong = [h for h in got["hostile"] if h.get("status") != want.get(h.get("kind"))]
        assert not wrong, wrong[:5]
        # nothing of them reached the origin; the normal requests did
        arrived = [o["path"] for o in s.env.arrived(m)]
        assert not [p for p in arrived if p.startswith("/hostile")], arrived[:5]
        assert sum(1 for p in arrived if p.startswith("/load/")) == 7, arrived
        # a line each: the status and why, the host it was for
        lines = s.lines(want=n + 7)
        bad = [l for l in lines if l.get("event.reason") in ("headers_too_large", "uri_too_long")]
        assert len(bad) == n, (len(bad), [l.get("event.reason") for l in lines])
        for l in bad:
            assert l["event.outcome"] == "failure", l
            assert l["http.response.status_code"] == (431 if l["event.reason"] == "headers_too_large" else 414), l
        assert len([l for l in bad if l["event.reason"] == "uri_too_long"]) == n // 3, bad
        ok = [l for l in lines if l.get("event.reason") == "allowed" and l.get("source.port") == got["port"]]
        assert len(ok) == 7, ok
        # 30 MiB of hostile heads at once: the proxy kept at most its limit of each
        assert peak - base < limit_kib(16), "the proxy grew from %d to %d KiB" % (base, peak)
        assert s.d.status()[s.name]["proxy_pid"] == s.proxy, "the proxy died"
    finally:
        s.close()


def test_a_1gb_upload_streams_with_bounded_memory(w):
    # the proxy listens on ::1 in the sandbox's namespace: loopback's 64 KiB
    # MTU makes the client's TCP send BIG TCP GSO packets (over 64 KiB, each
    # with an IPv6 Hop-by-Hop jumbo header), which the egress backstop once
    # took for an unknown protocol and dropped: the upload crawled at a few
    # hundred KiB/s (TCP resending smaller).  Bounded: 1 GB in < 45 s
    s = Setup(w, "u")
    try:
        got, base, peak = s.client("upload", GB, timeout=45)
        assert got.get("status") == 200, got
        assert got["sent"] == GB, got
        assert got["body"]["body_len"] == GB, got          # the origin got every byte
        assert peak - base < limit_kib(32), "the proxy grew from %d to %d KiB for a 1 GB upload" % (base, peak)
        lines = s.lines(port=got["port"], want=1)
        assert len(lines) == 1, lines
        l = lines[0]
        assert l["event.reason"] == "allowed" and l["http.response.status_code"] == 200, l
        assert l["http.request.method"] == "POST", l
        assert l["http.request.bytes"] > GB, l                  # head and body
        assert l["http.request.bytes"] < GB + 4096, l
        # the kernel dropped none of the client's packets to the proxy
        back = [e for e in s.d.events_of(s.name) if e.get("event.reason") == "egress_backstop"]
        assert not back, back[:3]
    finally:
        s.close()


def test_10000_pipelined_requests_each_answered_and_logged(w):
    s = Setup(w, "p")
    try:
        n = 10000
        m = s.env.mark()
        got, base, peak = s.client("pipeline", n, timeout=300)
        assert "error" not in got and "out_of_order" not in got and "send" not in got, got
        assert got["answered"] == n, got
        assert got["statuses"] == {"200": n - n // 10, "403": n // 10}, got
        assert got["denied_at"] == [9, 19, 29], got
        assert len([o for o in s.env.arrived(m) if o["path"].startswith("/pipe/")]) == n - n // 10
        lines = s.lines(port=got["port"], want=n, timeout=60)
        assert len(lines) == n, len(lines)
        assert sorted(l["sluice.request_seq"] for l in lines) == list(range(1, n + 1))
        reasons = {}
        for l in lines:
            reasons[l["event.reason"]] = reasons.get(l["event.reason"], 0) + 1
        assert reasons == {"allowed": n - n // 10, "host_not_allowed": n // 10}, reasons
        assert peak - base < limit_kib(16), "the proxy grew from %d to %d KiB for %d pipelined requests" % (base, peak, n)
        # the same number, every one for the denied name: the proxy answers
        # each itself, one after the other, as fast as they come
        got, base, peak = s.client("denied", n, timeout=300)
        assert "error" not in got and "send" not in got, got
        assert got["statuses"] == {"403": n}, got
        lines = s.lines(port=got["port"], want=n, timeout=60)
        assert len(lines) == n, len(lines)
        assert {l["event.reason"] for l in lines} == {"host_not_allowed"}, lines[:3]
        assert sorted(l["sluice.request_seq"] for l in lines) == list(range(1, n + 1))
        assert peak - base < limit_kib(16), "the proxy grew from %d to %d KiB for %d denied pipelined requests" % (base, peak, n)
        assert s.d.status()[s.name]["proxy_pid"] == s.proxy, "the proxy died"
    finally:
        s.close()
