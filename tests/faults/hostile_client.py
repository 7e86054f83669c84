#!/usr/bin/env python3
"""Hostile HTTP clients inside a sandbox, for test_hostile.py.  Every
connection is transparent (to HOST:PORT; the kernel sends it to the proxy).

  hostile_client.py headers  HOST PORT N OUT
      N connections at once each send a request head far over the proxy's
      limit (1 MiB of header bytes; every third one 500 header lines, every
      third a 1 MiB request line), while a keep-alive connection makes
      requests before, during and after: each hostile one must get its
      status (431, 414) and the normal one 200s without waiting for them.
  hostile_client.py upload   HOST PORT BYTES OUT
      one POST /sink with a BYTES-long body (Content-Length), streamed in
      256 KiB pieces: the answer must say the origin got all of it.
  hostile_client.py pipeline HOST PORT N OUT
      N requests written at once on one connection (every tenth for a
      denied name) while another thread reads the answers: each must be
      answered, in order (200, or 403 for the denied ones).
  hostile_client.py denied   HOST PORT N OUT
      the same, every request for the denied name (answered by the proxy
      itself, one after the other, without waiting for an origin).

Writes what happened to OUT (JSON); OUT + ".mid" once the hostile part is
under way (the test samples the proxy's memory then).
"""
import http.client
import json
import os
import socket
import sys
import threading
import time

mode, host, port, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
res = {}
MIB = 1 << 20


def connect(timeout=60):
    # HOSTILE_ADDR: the address to connect to instead of HOST's (HOST stays in the requests)
    s = socket.create_connection((os.environ.get("HOSTILE_ADDR", host), port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def get(conn, path):
    t0 = time.monotonic()
    try:
        conn.request("GET", path, headers={"Host": "%s:%d" % (host, port)})
        r = conn.getresponse()
        r.read()
        return {"status": r.status, "s": time.monotonic() - t0}
    except Exception as e:  # noqa: BLE001 - reported
        return {"error": "%s: %s" % (type(e).__name__, e), "s": time.monotonic() - t0}


def status_of(s):
    """The status of the first answer on s (None: closed without one)."""
    buf = b""
    try:
        while b"\r\n" not in buf:
            b = s.recv(4096)
            if not b:
                break
            buf += b
    except OSError:
        pass
    try:
        return int(buf.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def hostile(i, got):
    kind = ("header_bytes", "header_lines", "request_line")[i % 3]
    try:
        s = connect()
    except OSError as e:
        got[i] = {"kind": kind, "error": str(e)}
        return
    if kind == "header_bytes":
        head = b"GET /hostile/%d HTTP/1.1\r\nHost: %s:%d\r\nX-Big: " % (i, host.encode(), port) + b"a" * MIB + b"\r\n\r\n"
    elif kind == "header_lines":
        head = (b"GET /hostile/%d HTTP/1.1\r\nHost: %s:%d\r\n" % (i, host.encode(), port) +
                b"".join(b"X-H%d: v\r\n" % k for k in range(500)) + b"\r\n")
    else:
        head = b"GET /hostile/%d?%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (i, b"q" * MIB, host.encode(), port)

    def send():
        # the proxy answers long before all of it is sent, then throws the
        # rest away until the connection closes: a reset is fine here
        try:
            s.sendall(head)
        except OSError:
            pass
    t = threading.Thread(target=send)
    t.start()
    got[i] = {"kind": kind, "status": status_of(s)}
    s.close()
    t.join(30)


def run_headers():
    a = http.client.HTTPConnection(os.environ.get("HOSTILE_ADDR", host), port, timeout=30)
    res["before"] = get(a, "/load/before")
    got = {}
    ts = [threading.Thread(target=hostile, args=(i, got)) for i in range(n)]
    for t in ts:
        t.start()
    open(out + ".mid", "w").close()
    res["during"] = [get(a, "/load/during-%d" % k) for k in range(5)]
    for t in ts:
        t.join(60)
    res["hostile"] = [got.get(i, {"error": "no result"}) for i in range(n)]
    res["after"] = get(a, "/load/after")
    res["port"] = a.sock.getsockname()[1] if a.sock else None


def run_upload():
    total = n
    s = connect(timeout=120)
    res["port"] = s.getsockname()[1]
    s.sendall(b"POST /sink/upload HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/octet-stream\r\n"
              b"Content-Length: %d\r\n\r\n" % (host.encode(), port, total))
    piece = b"u" * (256 * 1024)
    sent = 0
    t0 = time.monotonic()
    open(out + ".mid", "w").close()
    try:
        while sent < total:
            k = min(len(piece), total - sent)
            s.sendall(piece[:k])
            sent += k
    except OSError as e:
        res["send_error"] = str(e)
    res["sent"] = sent
    f = s.makefile("rb")
    try:
        res["status"], body = read_response(f)
        res["body"] = json.loads(body)
    except Exception as e:  # noqa: BLE001 - reported
        res["error"] = "%s: %s" % (type(e).__name__, e)
    f.close()
    res["s"] = time.monotonic() - t0
    s.close()


def read_response(f):
    """One answer from the buffered reader f (all answers on one
    connection share it: a reader per answer would lose what it read
    ahead).  Content-Length framing only (what the proxy sends here)."""
    line = f.readline()
    if not line:
        raise EOFError("closed")
    st = int(line.split(b" ", 2)[1])
    length = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    body = f.read(length)
    if len(body) != length:
        raise EOFError("short body")
    return st, body


def run_pipeline():
    s = connect(timeout=120)
    res["port"] = s.getsockname()[1]
    reqs = []
    for i in range(n):
        name = "denied.example.org" if i % 10 == 9 or mode == "denied" else host
        reqs.append(b"GET /pipe/%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (i, name.encode(), port))
    blob = b"".join(reqs)
    err = {}

    def send():
        try:
            s.sendall(blob)
        except OSError as e:
            err["send"] = str(e)
    t = threading.Thread(target=send)
    t0 = time.monotonic()
    t.start()
    open(out + ".mid", "w").close()
    statuses = []
    f = s.makefile("rb")
    try:
        for i in range(n):
            st, body = read_response(f)
            statuses.append(st)
            if st == 200 and json.loads(body)["path"] != "/pipe/%d" % i:
                res["out_of_order"] = [i, json.loads(body)["path"]]
                break
    except Exception as e:  # noqa: BLE001 - reported
        res["error"] = "%s: %s after %d answers" % (type(e).__name__, e, len(statuses))
    t.join(60)
    res.update(err)
    res["s"] = time.monotonic() - t0
    res["statuses"] = {str(k): statuses.count(k) for k in set(statuses)}
    res["answered"] = len(statuses)
    res["denied_at"] = [i for i, st in enumerate(statuses) if st == 403][:3]
    s.close()


{"headers": run_headers, "upload": run_upload, "pipeline": run_pipeline, "denied": run_pipeline}[mode]()
with open(out + ".tmp", "w") as f:
    json.dump(res, f)
os.rename(out + ".tmp", out)
print(json.dumps({k: v for k, v in res.items() if k != "hostile"}))
