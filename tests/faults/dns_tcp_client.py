#!/usr/bin/env python3
"""Inside a sandbox's netns, for test_descriptors.py: DNS-over-TCP clients
that hold connections open, and a well-behaved client beside them.

  dns_tcp_client.py ADDR PORT

Reads commands on stdin, one a line, and answers each with one JSON line:
  hold N          open N TCP connections that send nothing -> {"opened": N, "errors": [...]}
  count           how many of the held ones the server closed -> {"held": H, "closed": C}
  udp NAME        one A lookup over UDP as a stub does (2 s, one retry) -> {"rcode", "answers", "s"}
  tcp NAME        one A lookup on a new TCP connection (5 s) -> {"rcode", "answers", "s"} or {"error"}
  release         close the held connections -> {}
"""
import json
import os
import random
import resource
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import dnswire as D  # noqa: E402

addr, port = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, closed = [], set()


def hold(n):
    errors = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect((addr, port))
            s.setblocking(False)
            held.append(s)
        except OSError as e:
            errors.append(str(e))
            s.close()
    return {"opened": n - len(errors), "errors": errors[:5]}


def count():
    for i, s in enumerate(held):
        if i in closed:
            continue
        try:
            if s.recv(1) == b"":
                closed.add(i)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(i)
    return {"held": len(held) - len(closed), "closed": len(closed)}


def result(r, t0):
    if r is None:
        return {"error": "no answer", "s": time.monotonic() - t0}
    p = D.parse(r)
    return {"rcode": p["rcode"], "answers": [a["data"] for a in p["answers"]], "s": time.monotonic() - t0}


def udp(name):
    t0 = time.monotonic()
    r = None
    for _ in range(2):
        r = D.udp_ask(addr, port, D.build_query(name, "A", qid=random.randrange(65536)), timeout=2.0)
        if r is not None:
            break
    return result(r, t0)


def tcp(name):
    t0 = time.monotonic()
    try:
        return result(D.tcp_ask(addr, port, D.build_query(name, "A", qid=random.randrange(65536)), timeout=5.0), t0)
    except OSError as e:
        return {"error": str(e), "s": time.monotonic() - t0}


def release():
    for s in held:
        s.close()
    held.clear()
    closed.clear()
    return {}


for line in sys.stdin:
    cmd, _, arg = line.strip().partition(" ")
    out = {"hold": lambda: hold(int(arg)), "count": count, "udp": lambda: udp(arg), "tcp": lambda: tcp(arg),
           "release": release}[cmd]()
    print(json.dumps(out), flush=True)
