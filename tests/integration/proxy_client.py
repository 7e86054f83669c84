#!/usr/bin/env python3
"""The client side of the proxy tests: runs inside the sandbox (under
`sluice run`), performs the steps of a JSON plan and prints one JSON line
with the results.

  proxy_client.py PLAN.json

A plan is a list of steps; each step is a dict with "op":

  http     send raw bytes ("send", latin-1) over TCP and read the response
           (to its end as its framing says: Content-Length, chunked, or
           EOF), then close.
           "via": "proxy" (the sandbox's proxy address, found with ss: the
           explicit HTTP_PROXY form) or "direct" (connect to "addr":"port";
           the kernel redirects it: the transparent form).
           Result: status, headers (lower-case names), body, error.
  session  several requests on one connection ("sends": a list): each sent
           after the previous response was read, or all at once with
           "pipeline": true.  Result: "responses" (as for http) and
           "closed": whether the proxy closed the connection after the last
           response; "port": the client's own port.
  tls      a TLS handshake + "GET path" with "sni" (None: no SNI), either
           direct to addr:port or through CONNECT "connect" via the proxy.
           "ech": true adds an encrypted_client_hello extension.
  slow     send "send" one byte every "delay" seconds (slow-header client).
  hold     open "n" connections to the proxy and keep them open.
  many     "n" concurrent "http" steps ("step"), counts statuses.
  wait     wait for the file "path" to appear (the test's go-ahead).
  touch    create the file "path" (tell the test something happened).
  sleep    wait "s" seconds.
  proxy    report the proxy's address.
"""
import asyncio
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import time

HELD = []


def find_proxy():
    """The proxy's listening address in this netns: $SLUICE_PROXY (set by
    sluice run); else the loopback TCP listener that has no UDP twin on its
    port (the resolver listens on one port for UDP and TCP; the sandbox
    cannot see other processes' sockets with ss -p)."""
    env = os.environ.get("SLUICE_PROXY")   # set by sluice run: http://127.0.0.1:PORT
    if env:
        hostport = env.split("://", 1)[-1].split("/", 1)[0]
        host, port = hostport.rsplit(":", 1)
        return host.strip("[]"), int(port)

    def listeners(flags):
        out = subprocess.run(["ss", "-H" + flags], capture_output=True, text=True).stdout
        found = []
        for line in out.splitlines():
            host, port = line.split()[3].rsplit(":", 1)
            found.append((host.strip("[]"), int(port)))
        return found
    udp_ports = {p for _, p in listeners("lun")}
    for host, port in listeners("ltn"):
        if host == "127.0.0.1" and port not in udp_ports:
            return host, port
    raise RuntimeError("no proxy listener found")


def connect(step):
    if step.get("via") == "proxy":
        addr = find_proxy()
    else:
        addr = (step["addr"], int(step["port"]))
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(step.get("timeout", 10))
    s.connect(addr)
    return s


def read_all(s):
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except socket.timeout:
        pass
    except OSError as e:
        if not out:
            raise e
    return out


def read_message(s, method="GET", buf=b""):
    """One response from s: (raw bytes of it, bytes read past it, eof).
    1xx heads are read past; the body is read as its framing says."""
    raw = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return raw + buf, b"", True
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        status = parse_response(head + b"\r\n\r\n")["status"]
        raw += head + b"\r\n\r\n"
        buf = rest
        if status is not None and 100 <= status < 200 and status != 101:
            continue
        break
    hdrs = parse_response(head + b"\r\n\r\n")["headers"]
    if method == "HEAD" or status in (204, 304):
        return raw, buf, False
    if "content-length" in hdrs:
        n = int(hdrs["content-length"])
        while len(buf) < n:
            d = s.recv(65536)
            if not d:
                return raw + buf, b"", True
            buf += d
        return raw + buf[:n], buf[n:], False
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        while chunked_end(buf) is None:
            d = s.recv(65536)
            if not d:
                return raw + buf, b"", True
            buf += d
        n = chunked_end(buf)
        return raw + buf[:n], buf[n:], False
    # delimited by EOF
    return raw + buf + read_all(s), b"", True


def chunked_end(b):
    """Where a chunked body that starts b ends (past its trailers), or None."""
    i = 0
    while True:
        j = b.find(b"\r\n", i)
        if j < 0:
            return None
        size = int(b[i:j].split(b";")[0], 16)
        i = j + 2
        if size == 0:
            while True:
                k = b.find(b"\r\n", i)
                if k < 0:
                    return None
                if k == i:
                    return k + 2
                i = k + 2
        if len(b) < i + size + 2:
            return None
        i += size + 2


def method_of(send):
    return send.split(" ", 1)[0] if send else "GET"


def dechunk(body):
    out, rest = "", body
    while rest:
        line, _, rest = rest.partition("\r\n")
        try:
            n = int(line.split(";")[0], 16)
        except ValueError:
            return body
        if n == 0:
            return out
        out, rest = out + rest[:n], rest[n + 2:]
    return out


def parse_response(raw):
    res = {"raw_len": len(raw), "status": None, "headers": {}, "body": ""}
    if not raw:
        return res
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) >= 2 and parts[0].startswith("HTTP/") and parts[1].isdigit():
        res["status"] = int(parts[1])
    for l in lines[1:]:
        if ":" in l:
            k, v = l.split(":", 1)
            res["headers"][k.strip().lower()] = v.strip()
    res["body"] = body.decode("latin-1")[:4000]
    return res


def op_http(step):
    try:
        s = connect(step)
    except OSError as e:
        return {"error": "connect: %s" % e}
    try:
        s.sendall(step["send"].encode("latin-1"))
        if step.get("shut"):
            s.shutdown(socket.SHUT_WR)
        raw, _, _ = read_message(s, method_of(step["send"]))
        return parse_response(raw)
    except OSError as e:
        return {"error": str(e)}
    finally:
        s.close()


def op_session(step):
    """Requests one after another on one connection (keep-alive)."""
    try:
        s = connect(step)
    except OSError as e:
        return {"error": "connect: %s" % e}
    out = {"responses": [], "port": s.getsockname()[1]}
    buf, eof = b"", False
    try:
        sends = step["sends"]
        if step.get("pipeline"):
            s.sendall("".join(sends).encode("latin-1"))
        for i, req in enumerate(sends):
            if eof:
                break
            if not step.get("pipeline"):
                s.sendall(req.encode("latin-1"))
            raw, buf, eof = read_message(s, method_of(req), buf)
            if not raw and eof:
                break
            r = parse_response(raw)
            if r["headers"].get("transfer-encoding", "").lower() == "chunked":
                r["body"] = dechunk(r["body"])
            out["responses"].append(r)
        if not eof:
            s.settimeout(step.get("close_wait", 1.0))
            try:
                eof = s.recv(1) == b""
            except socket.timeout:
                eof = False
        out["closed"] = eof
    except OSError as e:
        out["error"] = str(e)
    finally:
        s.close()
    return out


def add_ech(hello):
    """Append an encrypted_client_hello (0xfe0d) extension to a ClientHello
    record, fixing the three enclosing lengths."""
    body = bytearray(hello[9:])
    # walk to the extensions: version, random, session id, suites, compression
    off = 2 + 32
    off += 1 + body[off]
    off += 2 + struct.unpack("!H", body[off:off + 2])[0]
    off += 1 + body[off]
    ext_len = struct.unpack("!H", body[off:off + 2])[0]
    ext = struct.pack("!HH", 0xfe0d, 8) + b"\x00\x00\x01\x00\x01\x01\x00\x00"
    body[off:off + 2] = struct.pack("!H", ext_len + len(ext))
    body += ext
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + bytes(body)
    return hello[:3] + struct.pack("!H", len(hs)) + hs


def op_tls(step):
    ctx = ssl.create_default_context(cafile=step.get("cafile"))
    if not step.get("verify", True):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if step.get("sni") is None:
        ctx.check_hostname = False
    try:
        s = connect(step)
    except OSError as e:
        return {"error": "connect: %s" % e}
    res = {}
    try:
        if step.get("connect"):
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (step["connect"], step["connect"])).encode())
            head = b""
            while b"\r\n\r\n" not in head:
                d = s.recv(1)
                if not d:
                    break
                head += d
            r = parse_response(head)
            res["connect_status"] = r["status"]
            res["connect_headers"] = r["headers"]
            if r["status"] != 200:
                res["connect_body"] = read_all(s).decode("latin-1")
                return res
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_side=False, server_hostname=step.get("sni"))
        first = True
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                data = out.read()
                if first and step.get("ech"):
                    data = add_ech(data)
                first = False
                if data:
                    s.sendall(data)
                d = s.recv(65536)
                if not d:
                    raise ConnectionError("closed during handshake")
                inc.write(d)
        req = "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (step.get("path", "/"), step.get("host", step.get("sni") or "x"))
        obj.write(req.encode())
        s.sendall(out.read())
        raw = b""
        while True:
            try:
                raw += obj.read(65536)
                continue
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            d = s.recv(65536)
            if not d:
                break
            inc.write(d)
        res.update(parse_response(raw))
    except Exception as e:
        res["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()
    return res


def op_slow(step):
    try:
        s = connect(step)
    except OSError as e:
        return {"error": "connect: %s" % e}
    t0 = time.time()
    sent = 0
    try:
        for ch in step["send"].encode("latin-1"):
            s.sendall(bytes([ch]))
            sent += 1
            time.sleep(step.get("delay", 0.5))
            if time.time() - t0 > step.get("max_time", 30):
                break
    except OSError:
        pass
    try:
        r = parse_response(read_all(s))
    except OSError as e:
        r = {"error": str(e)}
    r["sent"] = sent
    r["elapsed"] = time.time() - t0
    s.close()
    return r


def op_hold(step):
    n = 0
    for _ in range(step["n"]):
        try:
            HELD.append(connect({"via": "proxy"}))
            n += 1
        except OSError:
            pass
    time.sleep(step.get("settle", 0.3))
    return {"held": n}


async def one_async(step, addr):
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(*addr), 30)
        w.write(step["send"].encode("latin-1"))
        await w.drain()
        raw = await asyncio.wait_for(r.read(), 60)
        w.close()
        return parse_response(raw)["status"]
    except Exception as e:
        return "error:%s" % type(e).__name__


async def many_async(step):
    sub = step["step"]
    addr = find_proxy() if sub.get("via") == "proxy" else (sub["addr"], int(sub["port"]))
    return await asyncio.gather(*[one_async(sub, addr) for _ in range(step["n"])])


def op_many(step):
    t0 = time.time()
    results = asyncio.run(many_async(step))
    counts = {}
    for r in results:
        counts[str(r)] = counts.get(str(r), 0) + 1
    return {"counts": counts, "elapsed": time.time() - t0}


def op_wait(step):
    deadline = time.time() + step.get("timeout", 30)
    while not os.path.exists(step["path"]):
        if time.time() > deadline:
            return {"error": "timeout"}
        time.sleep(0.05)
    return {}


def op_touch(step):
    open(step["path"], "w").close()
    return {}


def op_sleep(step):
    time.sleep(step["s"])
    return {}


def op_proxy(step):
    return {"addr": list(find_proxy())}


OPS = {"http": op_http, "session": op_session, "tls": op_tls, "slow": op_slow, "hold": op_hold, "many": op_many,
       "wait": op_wait, "touch": op_touch, "sleep": op_sleep, "proxy": op_proxy}


def main():
    plan = json.load(open(sys.argv[1]))
    results = []
    for step in plan:
        try:
            results.append(OPS[step["op"]](step))
        except Exception as e:
            results.append({"error": "%s: %s" % (type(e).__name__, e)})
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main()
