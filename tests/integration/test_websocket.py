"""WebSocket upgrades through the proxy (issue 14's ws:// item, issue 12's
"WebSocket upgrades inside TLS"; userspace/proxy/websocket.c): a url entry
with `websocket: true` lets a GET under its prefix upgrade, the proxy
relays the bytes both ways and writes one line (status 101, bytes both
ways, sluice.websocket); a path outside the prefix is refused before
anything is dialed; an entry without `websocket` refuses the upgrade (403
upgrade_not_supported); an origin that refuses the upgrade is logged as
what happened.  Real client: python `websockets` (python3-websockets),
plain ws:// and wss:// (inside inspected TLS, trusting the sandbox CA that
`sluice run` installs), transparently and through the proxy (HTTPS_PROXY:
a CONNECT tunnel; HTTP_PROXY: an absolute-form GET, by hand, as
websockets 10 has no proxy support).  The origin is ws_server.py in the
test world (api.example.com, 192.0.2.10).
"""
import json
import os
import subprocess
import time

import test_proxy as TP
import test_tls as T
import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
WS, WSS = 8090, 8490
POLICY = """\
version: 1
name: ws-tests
allow:
  - url: http://api.example.com:%(ws)d/ws/
    websocket: true
    why: the echo socket
  - url: http://api.example.com:%(ws)d/plain/
    why: plain GETs, no upgrade
  - url: http://api.example.com:%(ws)d/refuse/
    websocket: true
    why: the origin refuses these
  - url: https://api.example.com:%(wss)d/ws/
    websocket: true
    why: the echo socket in TLS
  - url: https://api.example.com:%(wss)d/plain/
    why: plain GETs in TLS, no upgrade
""" % {"ws": WS, "wss": WSS}

# Runs in the sandbox: each step {"uri", "via": "direct" | "proxy", "messages"}
# prints one JSON line {"uri", "ok", "status", "echo", "denied"}.
CLIENT = r'''
import asyncio, json, os, socket, ssl, sys, urllib.parse
import websockets
from websockets.frames import Frame, Opcode


def proxy_addr():
    u = urllib.parse.urlsplit(os.environ["SLUICE_PROXY"])
    return u.hostname, u.port


async def via_connect(uri, messages):
    """wss:// through the proxy: CONNECT, then the library over the tunnel."""
    u = urllib.parse.urlsplit(uri)
    s = socket.create_connection(proxy_addr(), timeout=15)
    s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (u.hostname, u.port, u.hostname, u.port)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise OSError("proxy closed")
        head += b
    if b" 200 " not in head.split(b"\r\n")[0]:
        return {"ok": False, "status": int(head.split()[1])}
    s.setblocking(False)
    return await talk(websockets.connect(uri, sock=s, server_hostname=u.hostname, open_timeout=15,
                                         compression=None), messages)


def via_absolute(uri, messages):
    """ws:// through the proxy (HTTP_PROXY): an absolute-form opening
    handshake, then frames made and masked by the library's Frame."""
    u = urllib.parse.urlsplit(uri)
    s = socket.create_connection(proxy_addr(), timeout=15)
    s.sendall(("GET http://%s:%d%s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
               % (u.hostname, u.port, u.path, u.hostname, u.port)).encode())
    f = s.makefile("rb")
    status = int(f.readline().split()[1])
    hdrs = {}
    while True:
        l = f.readline()
        if l in (b"\r\n", b""):
            break
        k, _, v = l.decode().partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if status != 101:
        return {"ok": False, "status": status, "denied": hdrs.get("x-sluice-denied")}
    echo = []
    for m in messages:
        s.sendall(Frame(Opcode.TEXT, m.encode()).serialize(mask=True))
        b0, b1 = f.read(2)
        n = b1 & 0x7f
        if n == 126:
            n = int.from_bytes(f.read(2), "big")
        echo.append(f.read(n).decode())
    s.sendall(Frame(Opcode.CLOSE, (1000).to_bytes(2, "big")).serialize(mask=True))
    f.read(4)   # the close frame back
    s.close()
    return {"ok": True, "status": 101, "echo": echo}


async def talk(conn, messages):
    try:
        async with conn as ws:
            echo = []
            for m in messages:
                await ws.send(m)
                echo.append(await ws.recv())
            return {"ok": True, "status": 101, "echo": echo}
    except websockets.exceptions.InvalidStatusCode as x:
        return {"ok": False, "status": x.status_code, "denied": x.headers.get("X-Sluice-Denied")}


async def main():
    for step in json.load(open(sys.argv[1])):
        uri, msgs = step["uri"], step.get("messages", ["hello"])
        try:
            if step.get("via") == "proxy":
                r = await via_connect(uri, msgs) if uri.startswith("wss:") else via_absolute(uri, msgs)
            else:
                r = await talk(websockets.connect(uri, open_timeout=15, compression=None), msgs)
        except Exception as x:
            r = {"ok": False, "error": "%s: %s" % (type(x).__name__, x)}
        r["uri"] = uri
        print(json.dumps(r), flush=True)

asyncio.run(main())
'''


class Env:
    def __init__(self, w):
        self.w = w
        self.tp = T.env(w)   # the world's DNS (api.example.com = 192.0.2.10) and its certificate
        self.log = os.path.join(w.tmp, "ws.jsonl")
        w.start_server(["/usr/bin/python3", os.path.join(HERE, "ws_server.py"), "--ws", str(WS),
                        "--wss", str(WSS), "--cert", self.tp.cert, "--key", self.tp.key, "--log", self.log],
                       name="ws")
        self.policy = w.write("ws-policy.yaml", POLICY)
        self.client = w.write("ws_client.py", CLIENT)

    def records(self):
        try:
            with open(self.log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def run(self, steps, mode=None):
        plan = self.w.write("ws-plan.json", json.dumps(steps))
        extra = ["--upstream-dns", "192.0.2.53", "--upstream-ca", self.tp.cert]
        if mode:
            extra += ["--mode", mode]
        for c in TP.HATCH:
            extra += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                      "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
        mark = len(self.records())
        r = self.w.sluice_run(["/usr/bin/python3", self.client, plan], policy=self.policy, extra=extra,
                              timeout=120)
        r.proxy = [x for x in r.events if x.get("event.dataset") == "sluice.proxy"]
        r.results = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        r.mark = mark
        r.origin = self.records()[mark:]
        assert len(r.results) == len(steps), r
        return r


def env(w):
    if not hasattr(w, "ws_env"):
        w.ws_env = Env(w)
    return w.ws_env


def ws_lines(r):
    return [l for l in r.proxy if l.get("event.action") == "proxy-http"]


def check_relayed(line, url, form, inspected):
    TP.check_common(line, "success", "allowed", "proxy-http")
    assert line["url.full"] == url and line["sluice.form"] == form, line
    assert line["http.response.status_code"] == 101 and line["sluice.websocket"] is True, line
    assert line["http.request.method"] == "GET" and line["destination.ip"] == "192.0.2.10", line
    # bytes both ways: the opening handshake and the frames after it
    assert line["http.request.bytes"] > 150 and line["http.response.bytes"] > 100, line
    assert line["event.duration"] > 0, line
    assert bool(line.get("sluice.inspected")) == inspected, line


def test_allowed_echo_plain_and_tls_transparent(w):
    e = env(w)
    big = "x" * 70000   # more than one read, both ways
    r = e.run([{"uri": "ws://api.example.com:%d/ws/chat" % WS, "messages": ["hello", "world", big]},
               {"uri": "wss://api.example.com:%d/ws/chat" % WSS, "messages": ["secure", big]}])
    assert r.rc == 0, r
    assert r.results[0]["ok"] and r.results[0]["echo"] == ["hello", "world", big], r.results
    assert r.results[1]["ok"] and r.results[1]["echo"] == ["secure", big], r.results
    # the origin notes a WebSocket's end once the closing handshake is through: wait for it
    deadline = time.time() + 20
    while True:
        closed = [o for o in e.records()[r.mark:] if o["event"] == "closed"]
        if len(closed) >= 2 or time.time() > deadline:
            break
        time.sleep(0.1)
    assert sorted((o["scheme"], o["messages"]) for o in closed) == [("ws", 3), ("wss", 2)], closed
    lines = ws_lines(r)
    assert len(lines) == 2, json.dumps(r.proxy, indent=1)
    plain = TP.only(lines, url__full="http://api.example.com:%d/ws/chat" % WS)
    check_relayed(plain, "http://api.example.com:%d/ws/chat" % WS, "transparent", False)
    assert plain["http.request.bytes"] > 70000 + 10 and plain["http.response.bytes"] > 70000 + 10, plain
    tls = TP.only(lines, url__full="https://api.example.com:%d/ws/chat" % WSS)
    check_relayed(tls, "https://api.example.com:%d/ws/chat" % WSS, "transparent", True)
    assert tls["tls.client.server_name"] == "api.example.com", tls
    assert tls["http.request.bytes"] > 70000 and tls["http.response.bytes"] > 70000, tls


def test_allowed_echo_through_the_proxy(w):
    e = env(w)
    r = e.run([{"uri": "ws://api.example.com:%d/ws/explicit" % WS, "via": "proxy", "messages": ["a", "b"]},
               {"uri": "wss://api.example.com:%d/ws/explicit" % WSS, "via": "proxy", "messages": ["c"]}])
    assert r.rc == 0, r
    assert [x.get("echo") for x in r.results] == [["a", "b"], ["c"]], r.results
    lines = ws_lines(r)
    assert len(lines) == 2, json.dumps(r.proxy, indent=1)
    check_relayed(TP.only(lines, url__full="http://api.example.com:%d/ws/explicit" % WS),
                  "http://api.example.com:%d/ws/explicit" % WS, "explicit", False)
    check_relayed(TP.only(lines, url__full="https://api.example.com:%d/ws/explicit" % WSS),
                  "https://api.example.com:%d/ws/explicit" % WSS, "explicit", True)


def test_path_outside_the_prefix_refused_never_arrives(w):
    e = env(w)
    r = e.run([{"uri": "ws://api.example.com:%d/admin/ws" % WS},
               {"uri": "wss://api.example.com:%d/admin/ws" % WSS},
               {"uri": "ws://api.example.com:%d/admin/ws" % WS, "via": "proxy"}])
    assert [(x["ok"], x.get("status"), x.get("denied")) for x in r.results] == [
        (False, 403, "path_not_allowed")] * 3, r.results
    assert not r.origin, r.origin   # the origin never saw them
    lines = ws_lines(r)
    assert len(lines) == 3, r.proxy
    for l in lines:
        TP.check_common(l, "failure", "path_not_allowed", "proxy-http")
        assert l["http.response.status_code"] == 403 and l["sluice.websocket"] is True, l
        assert "destination.ip" not in l, l


def test_entry_without_websocket_refuses_the_upgrade(w):
    e = env(w)
    r = e.run([{"uri": "ws://api.example.com:%d/plain/x" % WS},
               {"uri": "wss://api.example.com:%d/plain/x" % WSS},
               {"uri": "ws://api.example.com:%d/plain/x" % WS, "via": "proxy"}])
    assert [(x["ok"], x.get("status"), x.get("denied")) for x in r.results] == [
        (False, 403, "upgrade_not_supported")] * 3, r.results
    assert not r.origin, r.origin
    lines = ws_lines(r)
    assert len(lines) == 3, r.proxy
    for l in lines:
        TP.check_common(l, "failure", "upgrade_not_supported", "proxy-http")
        assert l["http.response.status_code"] == 403 and l["sluice.websocket"] is True, l
        assert l["sluice.verdict"] == "deny" and "destination.ip" not in l, l


def test_origin_refusing_the_upgrade_is_logged_as_such(w):
    e = env(w)
    r = e.run([{"uri": "ws://api.example.com:%d/refuse/x" % WS}])
    assert (r.results[0]["ok"], r.results[0].get("status")) == (False, 403), r.results
    assert [o["path"] for o in r.origin if o["event"] == "request"] == ["/refuse/x"], r.origin
    line = TP.only(ws_lines(r), url__full="http://api.example.com:%d/refuse/x" % WS)
    # the policy allowed it (verdict allow), the origin said no: a failure, not a success
    assert line["sluice.verdict"] == "allow" and line["event.outcome"] == "failure", line
    assert line["event.reason"] == "upgrade_refused" and line["http.response.status_code"] == 403, line
    assert line["sluice.websocket"] is True and line["destination.ip"] == "192.0.2.10", line


def test_audit_mode_relays_what_enforce_refuses(w):
    e = env(w)
    r = e.run([{"uri": "ws://api.example.com:%d/plain/audit" % WS, "messages": ["m"]}], mode="audit")
    assert r.results[0].get("echo") == ["m"], r.results
    line = TP.only(ws_lines(r), url__full="http://api.example.com:%d/plain/audit" % WS)
    assert line["sluice.verdict"] == "would_deny" and line["event.reason"] == "upgrade_not_supported", line
    assert line["http.response.status_code"] == 101, line


def test_policy_check_and_diff_show_websocket(w):
    base = "version: 1\nname: ws\nallow:\n  - url: http://chat.example.com/socket/\n%s    why: chat\n"
    a = w.write("ws-a.yaml", base % "")
    b = w.write("ws-b.yaml", base % "    websocket: true\n")
    bad = w.write("ws-bad.yaml", base % "    methods: [POST]\n    websocket: true\n")

    def cli(*args):
        return subprocess.run([W.SLUICE, "policy"] + list(args), capture_output=True, text=True, timeout=30)
    r = cli("check", "--json", b)
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    assert out["files"][0]["entries"][0]["websocket"] is True, out
    r = cli("check", b)
    assert "GET,HEAD+websocket http://chat.example.com/socket/" in r.stdout, r
    r = cli("diff", a, b)
    assert r.returncode == 1 and "+ url http://chat.example.com/socket/ websocket upgrade" in r.stdout, r
    assert r.stdout.index("websocket upgrade") < r.stdout.index("closes:"), r.stdout   # under opens
    r = cli("diff", b, a)
    assert "- url http://chat.example.com/socket/ websocket upgrade" in r.stdout, r
    assert r.stdout.index("websocket upgrade") > r.stdout.index("closes:"), r.stdout
    r = cli("diff", "--json", a, b)
    assert [o["kind"] for o in json.loads(r.stdout)["opens"]] == ["websocket"], r.stdout
    r = cli("check", bad)
    assert r.returncode == 2 and bad + ":6:5:" in r.stderr and "needs GET" in r.stderr, r
