"""Fault suite: strict DNS framing.  A query whose bytes go past what its
header declares (a second question after QDCOUNT 1, trailing garbage) gets
FORMERR, like any malformed message, and its line says what was wrong
(trailing_bytes, sluice.dns_trailing_bytes); the same query framed exactly
is judged by the policy.  A standalone sluice-resolver on 127.0.0.1 (its
upstream a closed loopback port: nothing here is forwarded).
"""
import json
import os
import socket
import struct
import subprocess
import time

import world as W
import dnswire as D

RESOLVER = os.path.join(W.BUILD, "sluice-resolver")
POLICY = """\
version: 1
name: dns-framing
allow:
  - host: api.example.com
    ports: [443]
    why: an allowed name
"""


def _free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_trailing_bytes_and_second_question_get_formerr(w):
    port = _free_udp_port()
    log = os.path.join(w.tmp, "dns-framing.jsonl")
    pol = w.write("dns-framing.yaml", POLICY)
    p = subprocess.Popen([RESOLVER, "--listen", "127.0.0.1:%d" % port, "--policy", pol, "--log", log,
                          "--upstream-dns", "127.0.0.1:9"], stderr=subprocess.DEVNULL)
    try:
        q = D.build_query("denied.example.org", "A", qid=0x4242)
        deadline = time.time() + 5
        while D.udp_ask("127.0.0.1", port, q, timeout=0.2) is None:
            assert time.time() < deadline and p.poll() is None, "the resolver did not start"
        # QDCOUNT 1 and a second question after the first; trailing garbage
        cases = {0x5001: (q + q[12:], len(q) - 12), 0x5002: (q + b"\xde\xad\xbe\xef", 4)}
        for qid, (msg, _) in cases.items():
            r = D.udp_ask("127.0.0.1", port, struct.pack("!H", qid) + msg[2:])
            assert r is not None, "no answer to %#x" % qid
            assert struct.unpack("!H", r[:2])[0] == qid
            assert r[3] & 0xF == 1, "%#x: rcode %d, want FORMERR" % (qid, r[3] & 0xF)
        ok = D.udp_ask("127.0.0.1", port, struct.pack("!H", 0x5003) + q[2:])
        assert ok is not None and ok[3] & 0xF == 3, "the exactly framed query: want NXDOMAIN (on_deny)"
        time.sleep(0.2)
        lines = [json.loads(l) for l in open(log) if l.strip()]
        by = {int(e["dns.id"]): e for e in lines if "dns.id" in e}
        for qid, (_, extra) in cases.items():
            e = by[qid]
            assert e["event.reason"] == "trailing_bytes" and e["dns.response_code"] == "FORMERR", e
            assert e["sluice.dns_trailing_bytes"] == extra, e
        assert by[0x5003]["event.reason"] == "name_not_allowed", by[0x5003]
    finally:
        p.terminate()
        p.wait(5)


def test_denied_name_flood_allowed_names_answered_every_drop_counted(w):
    """One client floods random denied names (as fast as Python sends) while
    another looks up an allowed name every 50 ms, in the sandbox netns: the
    allowed lookups are all answered, fast; the flood is answered at its
    client's rate (--denied-rate 200) and every query sent is a line or
    counted in a dns-queries-dropped summary (rate_limited, socket_overflow,
    shutdown)."""
    from test_proxy import Env
    Env(w)   # the world's upstream DNS server (192.0.2.53) and origins
    log = os.path.join(w.tmp, "dns-flood.jsonl")
    pol = w.write("dns-flood.yaml", POLICY)
    flood = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dns_flood.py")
    port = 5399
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, RESOLVER, "--listen", "127.0.0.1:%d" % port, "--policy", pol,
                          "--log", log, "--upstream-dns", "192.0.2.53", "--allow-private-answers", "192.0.2.0/24",
                          "--denied-rate", "200"], stderr=subprocess.DEVNULL)
    procs = []
    try:
        deadline = time.time() + 5
        while not os.path.exists(log) or "resolver-start" not in open(log).read():
            assert time.time() < deadline and p.poll() is None, "the resolver did not start"
            time.sleep(0.05)
        outs = [os.path.join(w.tmp, n) for n in ("flood.json", "allowed.json")]
        # under ASan (make test SANITIZE=1) the resolver is some times slower: a
        # flood it can read (beyond, the kernel drops allowed queries too: counted)
        rate = "2000" if "ASAN_OPTIONS" in os.environ else "0"
        for mode, o in zip(("flood", "allowed"), outs):
            procs.append(subprocess.Popen(["ip", "netns", "exec", w.sbx, "python3", flood, mode, "127.0.0.1", str(port),
                                           "4", o] + ([rate] if mode == "flood" else [])))
        for q in procs:
            assert q.wait(30) == 0
        sent = json.load(open(outs[0]))["sent"]
        allowed = json.load(open(outs[1]))
        time.sleep(1.5)         # the resolver reads what is still queued
        p.terminate()           # its last summary line is written at exit
        p.wait(10)
        lines = [json.loads(l) for l in open(log) if l.strip()]
        answered = sum(1 for e in lines if e.get("dns.question.name", "").endswith(".flood.example.net"))
        # the allowed client's queries share the socket (the kernel may drop them too, counted)
        answered_allowed = sum(1 for e in lines if e.get("dns.question.name") == "api.example.com")
        drops = [e for e in lines if e.get("event.action") == "dns-queries-dropped"]
        rl = sum(e["sluice.dns_dropped_rate_limited"] for e in drops)
        ovf = sum(e["sluice.dns_dropped_socket_overflow"] + e.get("sluice.dns_dropped_shutdown", 0) for e in drops)
        print("flood: sent %d, answered %d, rate-limited %d, overflow %d; allowed p50 %.1f ms" % (
            sent, answered, rl, ovf, 1000 * sorted(allowed["latencies"] or [0])[len(allowed["latencies"]) // 2]))
        assert sent > (6000 if rate != "0" else 20000), "the flood sent only %d queries" % sent
        assert answered + answered_allowed + rl + ovf == sent + allowed["sent"], \
            "sent %d + %d != answered %d + %d + rate-limited %d + overflow/shutdown %d" % (
                sent, allowed["sent"], answered, answered_allowed, rl, ovf)
        assert answered <= 400 + 200 * 6, answered      # the burst, then 200/s
        assert len(drops) <= 8, len(drops)              # summaries, at most one a second
        lat = sorted(allowed["latencies"])
        assert allowed["failed"] == 0 and len(lat) >= (20 if rate != "0" else 40), allowed
        slow = 4 if "ASAN_OPTIONS" in os.environ else 1
        assert lat[len(lat) // 2] < 0.05 * slow and lat[int(len(lat) * 0.9)] < 0.2 * slow, lat
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
        if p.poll() is None:
            p.kill()
            p.wait()
