#!/usr/bin/env python3
"""HTTP load from inside a sandbox, for the reload storm (test_reload.py).

  http_load.py URL_BASE SECONDS THREADS OUT

Each thread makes GET URL_BASE/load/<thread>-<n> requests (every fifth a
/big transfer of 2 MB) on keep-alive connections of up to 5 requests, for
SECONDS.  Like every HTTP/1.1 client (RFC 9112, 9.3.1), a request that
finds its reused connection closed before any byte of the answer is sent
again once on a new connection (counted: "retried").  Anything else that
goes wrong is a cut.  Writes {"ok": [...ids], "cut": [[id, error], ...],
"retried": N} to OUT.
"""
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

base, seconds, nthreads, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
u = urllib.parse.urlsplit(base)
ok, cut = [], []
retried = [0]
lock = threading.Lock()
RETRYABLE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def one(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, body


def worker(t):
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        for k in range(5):
            n += 1
            rid = "%d-%d" % (t, n)
            path = "/load/%s" % rid
            if n % 5 == 0:
                path = "/big?id=%s&n=2000000" % rid
            try:
                try:
                    status, body = one(conn, path)
                except RETRYABLE:
                    if k == 0:
                        raise       # a fresh connection: no excuse
                    with lock:
                        retried[0] += 1
                    conn.close()
                    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
                    status, body = one(conn, path)
                if status != 200 or (path.startswith("/big") and len(body) != 2000000):
                    raise RuntimeError("status %d, %d bytes" % (status, len(body)))
                with lock:
                    ok.append(rid)
            except Exception as e:  # noqa: BLE001 - every failure is reported
                with lock:
                    cut.append([rid, "%s: %s" % (type(e).__name__, e)])
                break
        conn.close()


ts = [threading.Thread(target=worker, args=(i,)) for i in range(nthreads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
with open(out + ".tmp", "w") as f:
    json.dump({"ok": ok, "cut": cut, "retried": retried[0]}, f)
os.rename(out + ".tmp", out)
print(json.dumps({"ok": len(ok), "cut": len(cut), "retried": retried[0]}))
