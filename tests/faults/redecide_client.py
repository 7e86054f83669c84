#!/usr/bin/env python3
"""Inside a sandbox, for test_redecide.py: connections open across a reload.

  redecide_client.py OUT

Opens, through the transparent proxy (192.0.2.10 is api/other.example.com,
198.51.100.10 files.example.com; TLS on 8443, HTTP on 8081):
  K  a keep-alive connection to api, one request answered;
  F  a 50 MB download from files, not read yet (the proxy holds it);
  A  a 20 MB download from api, not read yet;
  P  a 20 MB download from api with a request for files pipelined behind it;
  T  a TLS connection to api:8443, handshake done, idle (a tunnel);
  T2 a TLS connection to other.example.com:8443, the same.
Then writes OUT.mid and waits for OUT.go (the test reloads in between),
then finishes each and writes what happened to OUT (JSON).
"""
import json
import os
import socket
import ssl
import sys
import time

out = sys.argv[1]
API, FILES, HTTP, TLS = "192.0.2.10", "198.51.100.10", 8081, 8443
res = {}


def conn(addr, port):
    s = socket.create_connection((addr, port), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    return s


def req(host, path):
    return b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path.encode(), host.encode(), HTTP)


def response(f):
    """One answer from the buffered reader f: status, headers, body length,
    complete or not."""
    line = f.readline()
    if not line:
        return {"error": "closed"}
    r = {"status": int(line.split(b" ", 2)[1]), "headers": {}}
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.partition(b":")
        r["headers"][k.strip().lower().decode()] = v.strip().decode()
    want = int(r["headers"].get("content-length", "0"))
    got = 0
    try:
        while got < want:
            b = f.read1(min(1 << 16, want - got))
            if not b:
                break
            got += len(b)
    except OSError as e:
        r["error"] = type(e).__name__
    r["body_len"], r["complete"] = got, got == want
    return r


def tls(name):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(conn(API, TLS), server_hostname=name)
    return s


k = conn(API, HTTP)
kf = k.makefile("rb")
k.sendall(req("api.example.com", "/load/k1"))
res["k1"] = response(kf)

f = conn(FILES, HTTP)
f.sendall(req("files.example.com", "/big?n=50000000"))
a = conn(API, HTTP)
a.sendall(req("api.example.com", "/big?n=20000000"))
p = conn(API, HTTP)
p.sendall(req("api.example.com", "/big?n=20000000") + req("files.example.com", "/p2"))
t = tls("api.example.com")
t2 = tls("other.example.com")
open(out + ".mid", "w").close()
deadline = time.time() + 120
while not os.path.exists(out + ".go") and time.time() < deadline:
    time.sleep(0.05)

res["f"] = response(f.makefile("rb"))
res["a"] = response(a.makefile("rb"))
pf = p.makefile("rb")
res["p1"] = response(pf)
res["p2"] = response(pf)
for name, s in (("t", t), ("t2", t2)):
    try:
        s.sendall(b"GET /tls HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        s.settimeout(20)
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        res[name] = {"status": int(data.split(b" ", 2)[1]) if data else None}
    except (OSError, ssl.SSLError) as e:
        res[name] = {"error": type(e).__name__}
# K: the old proxy closed it idle; like any client, once more on a new connection
try:
    k.sendall(req("api.example.com", "/load/k2"))
    res["k2"] = response(kf)
except OSError as e:
    res["k2"] = {"error": type(e).__name__}
if "status" not in res["k2"]:
    k = conn(API, HTTP)
    k.sendall(req("api.example.com", "/load/k2"))
    res["k2"] = response(k.makefile("rb"))
    res["k2"]["reconnected"] = True
with open(out + ".tmp", "w") as fh:
    json.dump(res, fh)
os.rename(out + ".tmp", out)
print(json.dumps(res))
