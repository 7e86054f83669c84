#!/usr/bin/env python3
"""For test_flowcut.py: TCP connections held across a reload.

  flowcut_hold.py OUT [--listen PORT | --reuse PORT]

Connects straight to the test world's echo server 198.51.100.10:5432 (a
cidr entry the reload takes away) and echoes once; with --listen, also
accepts one connection on PORT (IPv4, any address) and echoes once on it.
With --reuse, the outbound connection is made on the socket of a
connection accepted on PORT (after its hello), disconnected first
(connect with AF_UNSPEC): an accepted socket turned into an outbound one.
Writes OUT.mid ({"port": the connection's local port}) and waits for OUT.go
(the test reloads in between); then writes OUT (JSON): "out", how the
outbound connection stands ("alive", or the errno that ended it) and, with
--listen, "in": whether the accepted one still echoes ("ok" or the error).
"""
import ctypes
import errno
import json
import os
import select
import socket
import sys
import time


def echo(s, what):
    """Send `what` on s and read it back; True when it came back whole."""
    s.sendall(what)
    got = b""
    while len(got) < len(what):
        d = s.recv(len(what) - len(got))
        if not d:
            raise EOFError("closed")
        got += d
    return got == what


def accept_one(lst, out):
    """Say OUT.listening, accept one connection on lst and read its hello."""
    with open(out + ".listening", "w") as f:
        f.write("1")
    lst.settimeout(60)
    acc, _ = lst.accept()
    acc.settimeout(30)
    return acc, acc.recv(100)


def main():
    out = sys.argv[1]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    reuse = len(sys.argv) > 3 and sys.argv[2] == "--reuse"
    res = {}
    lst = acc = None
    if port:
        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("0.0.0.0", port))
        lst.listen(1)
    if reuse:
        c, _ = accept_one(lst, out)
        unspec = ctypes.create_string_buffer(16)     # struct sockaddr, sa_family AF_UNSPEC
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.connect(c.fileno(), unspec, 16) != 0:
            raise OSError(ctypes.get_errno(), "connect(AF_UNSPEC)")
        c.connect(("198.51.100.10", 5432))
        lst = None
    else:
        c = socket.create_connection(("198.51.100.10", 5432), timeout=60)
    assert echo(c, b"hello\n")
    mid = {"port": c.getsockname()[1]}
    if lst:
        # the peer (in the test world) says hello first and expects it back
        acc, hello = accept_one(lst, out)
        acc.sendall(hello)
    with open(out + ".mid", "w") as f:
        json.dump(mid, f)
    deadline = time.time() + 120
    while not os.path.exists(out + ".go") and time.time() < deadline:
        time.sleep(0.05)
    # the outbound connection: reset by the cut, or still there (nothing to read)
    r, _, _ = select.select([c], [], [], 1.0)
    if not r:
        res["out"] = "alive"
    else:
        try:
            res["out"] = "eof" if not c.recv(1) else "data"
        except OSError as e:
            res["out"] = errno.errorcode.get(e.errno, str(e.errno))
    if acc:
        try:
            d = acc.recv(100)
            acc.sendall(d)
            res["in"] = "ok" if d else "eof"
        except OSError as e:
            res["in"] = errno.errorcode.get(e.errno, str(e.errno))
    with open(out + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()
