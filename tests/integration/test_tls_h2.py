"""HTTP/2 inside inspected TLS (issue 12; userspace/proxy/h2.c): ALPN h2
towards the sandbox, every stream decided against the policy and logged on
its own (http.version "2"), a denied stream answered 403 on that stream
while the others on the same connection go on; HTTP/1.1 towards the
origin.  Real clients: curl --http2, python httpx (h2), and a raw client
of frames (python's hyperframe and hpack) for the limits a polite client
never reaches.  The world and the policy are test_tls's.
"""
import json

import test_proxy as TP
import test_tls as T

TLS = T.TLS
BASE = "https://api.example.com:%d" % TLS
RESOLVE = T.resolve("api.example.com")


def inspected(r):
    return [l for l in r.proxy if l.get("sluice.inspected")]


def test_curl_http2_streams_decided_one_by_one(w):
    e = T.env(w)
    m = e.mark()
    fmt = "'CODE %{http_code} %{http_version} %{num_connects}\\n'"
    big = 300000   # more than one flow-control window (65,535 bytes)
    r = T.run(w, "curl -sS --max-time 20 --http2 %s -w %s -o /dev/null -o /dev/null -o /dev/null "
              "%s/pub/1 %s/private/x %s/pub/2; " % (RESOLVE, fmt, BASE, BASE, BASE) +
              "head -c %d /dev/zero > $HOME/body; " % big +
              "curl -sS --max-time 20 --http2 %s -w %s -o /dev/null -o /dev/null "
              "--data-binary @$HOME/body %s/upload/big %s/pub/post" % (RESOLVE, fmt, BASE, BASE))
    assert r.rc == 0, r
    codes = T.curl_codes(r)
    assert [c[0] for c in codes] == ["200", "403", "200", "200", "403"], r
    # HTTP/2, one connection for each curl
    assert [c[1].split()[0] for c in codes] == ["2"] * 5, codes
    assert [c[1].split()[1] for c in codes] == ["1", "0", "0", "1", "0"], codes
    got = e.arrived(m)
    # the origin saw exactly the allowed requests (HTTP/1.1 in TLS), the whole body
    assert [(g["method"], g["path"]) for g in got] == [
        ("GET", "/pub/1"), ("GET", "/pub/2"), ("POST", "/upload/big")], got
    assert got[2]["body_len"] == big, got[2]
    assert all(g["sni"] == "api.example.com" and g["host"] == "api.example.com:%d" % TLS for g in got), got
    lines = inspected(r)
    assert len(lines) == 5, json.dumps(r.proxy, indent=1)
    assert all(l["http.version"] == "2" and l["event.action"] == "proxy-http" for l in lines), lines
    first = sorted((l for l in lines if l["url.full"] in (BASE + "/pub/1", BASE + "/private/x", BASE + "/pub/2")),
                   key=lambda l: l["sluice.request_seq"])
    assert [(l["sluice.request_seq"], l["url.full"], l["event.reason"]) for l in first] == [
        (1, BASE + "/pub/1", "allowed"), (2, BASE + "/private/x", "path_not_allowed"),
        (3, BASE + "/pub/2", "allowed")], first
    assert len({l["source.port"] for l in first}) == 1, first
    den = TP.only(lines, url__full=BASE + "/private/x")
    TP.check_common(den, "failure", "path_not_allowed", "proxy-http")
    assert den["http.response.status_code"] == 403 and "destination.ip" not in den, den
    up = TP.only(lines, url__full=BASE + "/upload/big")
    assert up["http.request.method"] == "POST" and up["http.response.status_code"] == 200, up
    assert up["http.request.bytes"] >= big, up
    meth = TP.only(lines, url__full=BASE + "/pub/post")
    assert meth["event.reason"] == "method_not_allowed", meth


def test_curl_http2_through_https_proxy(w):
    e = T.env(w)
    m = e.mark()
    r = T.run(w, 'export HTTPS_PROXY="$SLUICE_PROXY"; '
              "curl -sS --max-time 20 --http2 -w 'CODE %%{http_code} %%{http_version}\\n' "
              "-o /dev/null -o /dev/null %s/pub/via-proxy %s/nope" % (BASE, BASE))
    assert r.rc == 0, r
    assert T.curl_codes(r) == [["200", "2"], ["403", "2"]], r
    assert [g["path"] for g in e.arrived(m)] == ["/pub/via-proxy"]
    lines = inspected(r)
    assert sorted((l["url.full"], l["sluice.form"], l["http.version"]) for l in lines) == [
        (BASE + "/nope", "explicit", "2"), (BASE + "/pub/via-proxy", "explicit", "2")], lines


HTTPX = """
import asyncio, sys, httpx
async def main():
    base = sys.argv[1]
    async with httpx.AsyncClient(http2=True, timeout=20) as c:
        paths = ["/pub/a%d" % i if i % 2 == 0 else "/private/b%d" % i for i in range(10)]
        rs = await asyncio.gather(*(c.get(base + p) for p in paths))
        for p, r in zip(paths, rs):
            print("CODE", r.status_code, r.http_version, p, r.headers.get("x-sluice-denied", "-"))
        r = await c.post(base + "/upload/x", content=b"y" * 100000)
        print("CODE", r.status_code, r.http_version, "/upload/x", len(r.json()["body"]))
asyncio.run(main())
"""


def test_httpx_concurrent_streams_on_one_connection(w):
    """Ten streams at once on one connection (transparent: the kernel
    redirects), half of them denied: each answered on its own stream."""
    e = T.env(w)
    m = e.mark()
    script = w.write("h2x.py", HTTPX)
    # the sandbox's lookups go to the world's DNS: api.example.com is 192.0.2.10
    r = T.run(w, "/usr/bin/python3 %s %s" % (script, BASE))
    assert r.rc == 0, r
    codes = T.curl_codes(r)
    assert len(codes) == 11, r
    for c in codes[:10]:
        status, version, path = c[0], c[1].split()[0], c[1].split()[1]
        assert version == "HTTP/2", c
        if path.startswith("/pub/"):
            assert status == "200", c
        else:
            assert status == "403" and c[1].split()[2] == "path_not_allowed", c
    assert codes[10][:2] == ["200", "HTTP/2 /upload/x 100000"], codes
    got = e.arrived(m)
    assert sorted(g["path"] for g in got) == sorted(["/pub/a%d" % i for i in range(0, 10, 2)] + ["/upload/x"]), got
    lines = inspected(r)
    assert len(lines) == 11 and all(l["http.version"] == "2" for l in lines), lines
    assert len({l["source.port"] for l in lines}) == 1, lines   # one client connection
    assert sorted(l["sluice.request_seq"] for l in lines) == list(range(1, 12)), lines
    assert all(l["sluice.form"] == "transparent" for l in lines), lines


# A client of raw frames: 101 streams at once and a header list past the
# limit, which curl and httpx never send.  It prints what it saw.
RAW = r"""
import socket, ssl, sys
import hpack, hyperframe.frame as F
host, port = sys.argv[1], int(sys.argv[2])
ctx = ssl.create_default_context()
ctx.set_alpn_protocols(["h2"])
s = ctx.wrap_socket(socket.create_connection(("192.0.2.10", port), timeout=30), server_hostname=host)
print("ALPN", s.selected_alpn_protocol())
enc, dec = hpack.Encoder(), hpack.Decoder()
dec.max_allowed_table_size = 65536
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + F.SettingsFrame(0).serialize())
def req(sid, method, path, end, extra=()):
    h = F.HeadersFrame(sid)
    h.data = enc.encode([(":method", method), (":scheme", "https"), (":authority", "%s:%d" % (host, port)),
                         (":path", path)] + list(extra))
    h.flags.add("END_HEADERS")
    if end:
        h.flags.add("END_STREAM")
    return h.serialize()
# 101 uploads whose bodies have not come yet: the last one is refused
s.sendall(b"".join(req(1 + 2 * i, "POST", "/upload/s%d" % i, False, [("content-length", "5")])
                   for i in range(101)))
buf = b""
def frames():
    global buf
    while True:
        while len(buf) >= 9:
            f, n = F.Frame.parse_frame_header(memoryview(buf[:9]))
            if len(buf) < 9 + n:
                break
            f.parse_body(memoryview(buf[9:9 + n]))
            buf = buf[9 + n:]
            yield f
        d = s.recv(65536)
        if not d:
            return
        buf += d
status, body = {}, {}
want = {"refused": False, 1: False, 203: False}
for f in frames():
    if isinstance(f, F.SettingsFrame) and "ACK" not in f.flags:
        print("SETTINGS", f.settings.get(F.SettingsFrame.MAX_CONCURRENT_STREAMS),
              f.settings.get(F.SettingsFrame.MAX_HEADER_LIST_SIZE))
        s.sendall(F.SettingsFrame(0, flags=["ACK"]).serialize())
    elif isinstance(f, F.RstStreamFrame):
        print("RST", f.stream_id, f.error_code)
        if f.stream_id == 201:
            want["refused"] = True
            # the first upload's body: it goes on
            d = F.DataFrame(1, b"hello")
            d.flags.add("END_STREAM")
            s.sendall(d.serialize())
    elif isinstance(f, F.HeadersFrame):
        status[f.stream_id] = dict(dec.decode(f.data)).get(":status")
        print("STATUS", f.stream_id, status[f.stream_id])
        if f.stream_id == 1:
            # past the header list limit: 431 on its own stream
            # (one field 40 times: HPACK sends it once, then by index;
            # the list it decodes to is ~41 KB)
            s.sendall(req(203, "GET", "/pub/big-head", True, [("x-big", "a" * 1000)] * 40))
    elif isinstance(f, F.DataFrame):
        body[f.stream_id] = body.get(f.stream_id, b"") + f.data
        if f.stream_id and f.data:
            u = F.WindowUpdateFrame(0)
            u.window_increment = len(f.data)
            s.sendall(u.serialize())
        if "END_STREAM" in f.flags and f.stream_id in want:
            want[f.stream_id] = True
            print("END", f.stream_id, len(body[f.stream_id]))
    if all(want.values()):
        break
print("DONE", all(want.values()))
"""


def test_raw_h2_stream_limit_header_limit(w):
    e = T.env(w)
    m = e.mark()
    script = w.write("h2raw.py", RAW)
    r = T.run(w, "/usr/bin/python3 %s api.example.com %d" % (script, TLS), timeout=180)
    assert r.rc == 0, r
    out = r.stdout.splitlines()
    assert "ALPN h2" in out, r
    assert "SETTINGS 100 32768" in out, r
    assert "RST 201 7" in out, r            # REFUSED_STREAM, the 101st
    assert "STATUS 1 200" in out, r         # the first upload went on
    assert "STATUS 203 431" in out, r       # past the header list limit
    assert "DONE True" in out, r
    # the other 99 uploads never had their bodies: their heads stayed here
    got = [g for g in e.arrived(m) if g["path"].startswith("/upload/s")]
    assert [(g["path"], g["body_len"]) for g in got] == [("/upload/s0", 5)], got
    assert not [g for g in e.arrived(m) if g["path"] == "/pub/big-head"]
    lines = inspected(r)
    big = TP.only(lines, event__reason="headers_too_large")
    assert big["http.response.status_code"] == 431 and big["http.version"] == "2", big
    assert not [l for l in lines if l.get("url.full") == BASE + "/upload/s100"], lines


# One request, then nothing: the connection with no stream open gets
# GOAWAY (NO_ERROR) after the keep-alive timeout, and is closed.
IDLE = r"""
import socket, ssl, sys, time
import hpack, hyperframe.frame as F
host, port = sys.argv[1], int(sys.argv[2])
ctx = ssl.create_default_context()
ctx.set_alpn_protocols(["h2"])
s = ctx.wrap_socket(socket.create_connection(("192.0.2.10", port), timeout=30), server_hostname=host)
enc = hpack.Encoder()
h = F.HeadersFrame(1)
h.data = enc.encode([(":method", "GET"), (":scheme", "https"), (":authority", "%s:%d" % (host, port)),
                     (":path", "/pub/idle")])
h.flags.add("END_HEADERS")
h.flags.add("END_STREAM")
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + F.SettingsFrame(0).serialize() + h.serialize())
buf, t0 = b"", time.monotonic()
while True:
    d = s.recv(65536)
    if not d:
        print("CLOSED", round(time.monotonic() - t0))
        break
    buf += d
    while len(buf) >= 9:
        f, n = F.Frame.parse_frame_header(memoryview(buf[:9]))
        if len(buf) < 9 + n:
            break
        f.parse_body(memoryview(buf[9:9 + n]))
        buf = buf[9 + n:]
        if isinstance(f, F.SettingsFrame) and "ACK" not in f.flags:
            s.sendall(F.SettingsFrame(0, flags=["ACK"]).serialize())
        if isinstance(f, F.DataFrame) and "END_STREAM" in f.flags:
            print("END", f.stream_id)
        if isinstance(f, F.GoAwayFrame):
            print("GOAWAY", f.error_code, f.last_stream_id)
"""


def test_idle_connection_gets_goaway(w):
    T.env(w)
    script = w.write("h2idle.py", IDLE)
    r = T.run(w, "/usr/bin/python3 %s api.example.com %d" % (script, TLS), proxy_args=("--keepalive-timeout", "1"))
    assert r.rc == 0, r
    out = r.stdout.splitlines()
    assert out[0] == "END 1" and "GOAWAY 0 1" in out and out[-1].startswith("CLOSED"), r
    assert int(out[-1].split()[1]) < 25, r
