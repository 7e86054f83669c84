#!/usr/bin/env python3
"""Inside a sandbox, for test_limits.py: the proxy at its descriptor limit.

  fd_client.py HOST PORT N_IDLE OUT

Opens a keep-alive connection A and makes a request on it, then N_IDLE
connections that send nothing, then: a second request on A (an open
connection must keep working), a request on a new connection B (expected:
refused at once, not left waiting), and, once the idle ones are closed, one
on a new connection C (served again).  Writes what happened to OUT (JSON).
"""
import http.client
import json
import os
import resource
import socket
import sys
import time

host, port, n_idle, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
resource.setrlimit(resource.RLIMIT_NOFILE, (n_idle + 200, max(n_idle + 200, resource.getrlimit(resource.RLIMIT_NOFILE)[1])))
res = {}


def get(conn, path):
    t0 = time.monotonic()
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        return {"status": r.status, "len": len(body), "s": time.monotonic() - t0}
    except Exception as e:  # noqa: BLE001 - reported
        return {"error": type(e).__name__, "s": time.monotonic() - t0}


a = http.client.HTTPConnection(host, port, timeout=15)
res["a1"] = get(a, "/load/a1")
addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
idle = []
for _ in range(n_idle):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(addr)
        idle.append(s)
    except OSError as e:
        res.setdefault("connect_errors", []).append(str(e))
        s.close()
time.sleep(1.5)
closed = 0
for s in idle:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
res["idle_opened"], res["idle_refused"] = len(idle), closed
with open(out + ".mid", "w") as f:     # the test measures the proxy's CPU now
    f.write("1")
time.sleep(1.2)
res["a2"] = get(a, "/load/a2")
res["b1"] = get(http.client.HTTPConnection(host, port, timeout=15), "/load/b1")
for s in idle:
    s.close()
time.sleep(0.5)
res["c1"] = get(http.client.HTTPConnection(host, port, timeout=15), "/load/c1")
a.close()
with open(out + ".tmp", "w") as f:
    json.dump(res, f)
os.rename(out + ".tmp", out)
print(json.dumps(res))
