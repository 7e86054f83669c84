#!/usr/bin/env python3
"""Inside a sandbox's netns, for test_dns.py: a denied-name flood and, at
the same time, allowed lookups.

  dns_flood.py flood ADDR PORT SECONDS OUT [RATE]  random names under flood.example.net, as fast as
                                              it can (or RATE a second)
  dns_flood.py allowed ADDR PORT SECONDS OUT  api.example.com A every 50 ms, each awaited (2 s)

Writes {"sent": N} or {"latencies": [...], "failed": N} to OUT.
"""
import json
import os
import random
import socket
import string
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import dnswire as D  # noqa: E402

mode, addr, port, seconds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rate = float(sys.argv[6]) if len(sys.argv) > 6 else 0
res = {}
end = time.time() + seconds
if mode == "flood":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    sent = 0
    rnd = random.Random(1)
    tail = D.encode_name("flood.example.net")
    t0 = time.time()
    while time.time() < end:
        if rate and sent > (time.time() - t0) * rate:
            time.sleep(0.001)
            continue
        for _ in range(200):
            label = "".join(rnd.choice(string.ascii_lowercase) for _ in range(12)).encode()
            msg = struct.pack("!HHHHHH", sent & 0xFFFF, 0x0100, 1, 0, 0, 0) + bytes([len(label)]) + label + tail + \
                struct.pack("!HH", 1, 1)
            try:
                s.sendto(msg, (addr, port))
                sent += 1
            except BlockingIOError:
                pass
            try:
                while s.recv(4096):     # answers are not waited for, only taken off the queue
                    pass
            except BlockingIOError:
                pass
    res["sent"] = sent
else:
    # as a stub resolver does: one retry after a second (a datagram the
    # kernel dropped, the queue full, is never seen by the resolver)
    lat, failed, sent, retried = [], 0, 0, 0
    while time.time() < end:
        t0 = time.monotonic()
        for attempt in range(2):
            sent += 1
            r = D.udp_ask(addr, port, D.build_query("api.example.com", "A", qid=random.randrange(65536)), timeout=1.0)
            if r is not None:
                break
            retried += 1
        if r is None or r[3] & 0xF != 0:
            failed += 1
        else:
            lat.append(time.monotonic() - t0)
        time.sleep(0.05)
    res = {"latencies": lat, "failed": failed, "sent": sent, "retried": retried}
with open(out, "w") as f:
    json.dump(res, f)
