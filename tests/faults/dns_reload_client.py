#!/usr/bin/env python3
"""Inside a sandbox, for test_reload.py: a steady stream of DNS queries
while the sandbox's policy is reloaded again and again.

  dns_reload_client.py ADDR PORT SECONDS OUT [tcp]

udp (the default): from one socket, every 10 ms an A query with an ID of its
own, for delay.example.com (the test world's server answers it 0.5 s late:
in flight across reloads) and api.example.com in turn (TTL 0: no cache
answers them); no retries; then waits up to 10 s for the last answers.
tcp: one query after the other, each on a new connection (5 s).  Writes
{"sent": [[port, id, name]], "answered": {"port/id": rcode}, "failed":
{"port/id": what happened}, "error": a traceback or null} to OUT: the
resolver's lines carry the same source.port and dns.id.  Whatever goes
wrong, OUT is written (the agent that runs this keeps stdout only).
"""
import json
import os
import socket
import struct
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import dnswire as D  # noqa: E402

addr, port, seconds, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
tcp = len(sys.argv) > 5 and sys.argv[5] == "tcp"
sent, answered, failed = [], {}, {}
end = time.monotonic() + seconds
n = 0


def tcp_one(name, qid):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(5.0)
        try:
            s.connect((addr, port))
            key = "%d/%d" % (s.getsockname()[1], qid)
            sent.append([s.getsockname()[1], qid, name])
            q = D.build_query(name, "A", qid=qid)
            s.sendall(struct.pack("!H", len(q)) + q)
            buf = b""
            while len(buf) < 2 or len(buf) < 2 + struct.unpack("!H", buf[:2])[0]:
                c = s.recv(4096)
                if not c:
                    failed[key] = "closed after %d bytes" % len(buf)
                    return
                buf += c
            answered[key] = D.parse(buf[2:])["rcode"]
        except OSError as e:
            failed[key if "key" in dir() else "connect-%d" % qid] = str(e)


error = None
try:
    if tcp:
        while time.monotonic() < end:
            tcp_one("api.example.com" if n % 2 else "delay.example.com", n % 65536)
            n += 1
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.settimeout(0.005)
        s.connect((addr, port))
        sport = s.getsockname()[1]

        def take():
            while True:
                try:
                    r = s.recv(4096)
                except (socket.timeout, BlockingIOError):
                    return
                except OSError as e:    # e.g. an ICMP error queued on the socket
                    failed["recv-%d" % len(failed)] = str(e)
                    return
                if len(r) < 12:
                    failed["short-%d" % len(failed)] = "a %d-byte datagram" % len(r)
                    continue
                answered["%d/%d" % (sport, struct.unpack("!H", r[:2])[0])] = D.parse(r)["rcode"]

        nxt = time.monotonic()
        while time.monotonic() < end and n < 65536:
            if time.monotonic() >= nxt:
                name = "delay.example.com" if n % 2 == 0 else "api.example.com"
                try:
                    s.send(D.build_query(name, "A", qid=n))
                    sent.append([sport, n, name])
                except OSError as e:  # not sent: not counted as sent
                    failed["send-%d" % n] = str(e)
                n += 1
                nxt += 0.01
            take()
        deadline = time.monotonic() + 10
        while len(answered) < len(sent) and time.monotonic() < deadline:
            take()
except Exception:
    error = traceback.format_exc()
    print(error)
with open(out + ".tmp", "w") as f:
    json.dump({"sent": sent, "answered": answered, "failed": failed, "error": error}, f)
os.rename(out + ".tmp", out)
