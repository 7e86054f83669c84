#!/usr/bin/env python3
"""Inside a sandbox, for test_flowcut.py: direct TCP flows open across a reload.

  flowcut_client.py OUT

Opens, straight to the test world's echo server (cidr entries, no proxy):
  C4  198.51.100.10:5432 and C6 [2001:db8::10]:5432: the reload takes them away;
  K   203.0.113.10:9000: both policies allow it.
Each answers one echo; then a reader blocks on C4 and C6, OUT.mid is
written (with the local ports) and OUT.go is awaited (the test reloads in
between).  Then: how and when (wall clock) C4 and C6 ended, five more echoes
on K, and a new connect to C4's address (the new policy refuses it), in OUT
(JSON).
"""
import errno
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flowcut_hold import echo  # noqa: E402

out = sys.argv[1]
res = {}
ended = {}


def reader(name, s):
    try:
        d = s.recv(1)
        ended[name] = {"how": "data" if d else "eof", "t": time.time()}
    except OSError as e:
        ended[name] = {"how": errno.errorcode.get(e.errno, str(e.errno)), "t": time.time()}


conns = {"c4": ("198.51.100.10", 5432), "c6": ("2001:db8::10", 5432), "k": ("203.0.113.10", 9000)}
s = {}
for name, addr in conns.items():
    s[name] = socket.create_connection(addr, timeout=60)
    s[name].settimeout(60)
    assert echo(s[name], b"hello %s\n" % name.encode()), name
res["ports"] = {n: c.getsockname()[1] for n, c in s.items()}
threads = [threading.Thread(target=reader, args=(n, s[n]), daemon=True) for n in ("c4", "c6")]
for t in threads:
    t.start()
with open(out + ".mid", "w") as f:
    json.dump(res["ports"], f)
deadline = time.time() + 120
while not os.path.exists(out + ".go") and time.time() < deadline:
    time.sleep(0.05)
for t in threads:
    t.join(20)
res["ended"] = ended
ok = 0
try:
    for i in range(5):
        ok += echo(s["k"], b"after %d\n" % i)
except (OSError, EOFError) as e:
    res["k_error"] = str(e)
res["k_ok"] = ok
try:
    socket.create_connection(conns["c4"], timeout=10).close()
    res["new_c4"] = "ok"
except OSError as e:
    res["new_c4"] = errno.errorcode.get(e.errno, str(e.errno))
with open(out + ".tmp", "w") as f:
    json.dump(res, f)
os.rename(out + ".tmp", out)
