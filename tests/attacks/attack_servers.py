#!/usr/bin/env python3
"""Servers of the test world that the attack suite aims at.

  attack_servers.py resolver --addr 203.0.113.53 --cert C --key K --log FILE --ready PATH
      a "public resolver": DoH (HTTPS :443, /dns-query), DoT (TLS :853),
      HTTP/3-style datagrams (UDP :443) and plain DNS (UDP+TCP :53).  Every
      name gets the answer 203.0.113.99.
  attack_servers.py origin --port 8082 --log FILE --ready PATH
      plain HTTP on [::]:PORT: /redirect?to=URL answers 302 to URL;
      /ws upgrades to a websocket only if the request asks for one
      (Upgrade: websocket), else 426; /ws-force answers 101 whatever was
      asked (a hostile origin).

Every connection, request and datagram is appended to --log as a JSON line
({"event", "port", ...}), so a test can show that a refused attempt never
arrived.  Runs in a network namespace of the test world; exits on SIGTERM.
"""
import argparse
import base64
import http.server
import json
import os
import signal
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
import dnswire  # noqa: E402
from httpsrv import DualStackServer, TLSHandshake, open_log, record  # noqa: E402

ANSWER = "203.0.113.99"


def answer(query):
    """A DNS response with ANSWER for the first question of `query`."""
    q = dnswire.parse(query)
    name = q["qd"][0][0] if q.get("qd") else "?"
    return name, dnswire.build_response(query, answers=[dnswire.rr(name, "A", ANSWER)])


# --- the public resolver --------------------------------------------------------

class DoH(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _reply(self, code, body, ctype="application/dns-message"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query).get("dns", [""])[0]
        try:
            msg = base64.urlsafe_b64decode(q + "=" * (-len(q) % 4))
            name, resp = answer(msg)
        except Exception:
            record(event="doh", port=443, method="GET", path=self.path, error="bad query")
            return self._reply(400, b"bad query", "text/plain")
        record(event="doh", port=443, method="GET", name=name, sni=getattr(self.connection, "sluice_sni", None))
        self._reply(200, resp)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        try:
            name, resp = answer(self.rfile.read(n))
        except Exception:
            record(event="doh", port=443, method="POST", error="bad query")
            return self._reply(400, b"bad query", "text/plain")
        record(event="doh", port=443, method="POST", name=name, sni=getattr(self.connection, "sluice_sni", None))
        self._reply(200, resp)

    def log_message(self, *a):
        pass


class TLSHTTP(TLSHandshake, socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_timeout = 10

    def on_accept(self, addr):
        record(event="accept", port=self.server_address[1], peer=addr[0])

    def on_tls_error(self, request, err):
        record(event="tls_error", port=self.server_address[1], error=str(err))


def serve_dot(ctx, addr):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 853))
    s.listen(64)

    def one(c, peer):
        record(event="accept", port=853, peer=peer[0])
        try:
            c.settimeout(10)
            t = ctx.wrap_socket(c, server_side=True)
            n = struct.unpack("!H", t.recv(2))[0]
            msg = b""
            while len(msg) < n:
                d = t.recv(n - len(msg))
                if not d:
                    break
                msg += d
            name, resp = answer(msg)
            record(event="dot", port=853, name=name)
            t.sendall(struct.pack("!H", len(resp)) + resp)
            t.close()
        except Exception as e:
            record(event="tls_error", port=853, error=str(e))
            c.close()

    while True:
        c, peer = s.accept()
        threading.Thread(target=one, args=(c, peer), daemon=True).start()


def serve_udp(addr, port, kind):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        data, peer = s.recvfrom(65535)
        if kind == "dns":
            try:
                name, resp = answer(data)
            except Exception:
                continue
            record(event="dns53", port=port, proto="udp", name=name, peer=peer[0])
            s.sendto(resp, peer)
        else:
            record(event="datagram", port=port, proto="udp", len=len(data), first=data[:1].hex(), peer=peer[0])


def serve_dns_tcp(addr):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 53))
    s.listen(16)
    while True:
        c, peer = s.accept()
        record(event="accept", port=53, peer=peer[0])
        try:
            c.settimeout(5)
            n = struct.unpack("!H", c.recv(2))[0]
            name, resp = answer(c.recv(n))
            record(event="dns53", port=53, proto="tcp", name=name)
            c.sendall(struct.pack("!H", len(resp)) + resp)
        except Exception:
            pass
        c.close()


def resolver(a):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    ctx.sni_callback = lambda sock, name, c: setattr(sock, "sluice_sni", name)
    doh = TLSHTTP((a.addr, 443), DoH)
    doh.ctx = ctx
    threads = [threading.Thread(target=doh.serve_forever),
               threading.Thread(target=serve_dot, args=(ctx, a.addr)),
               threading.Thread(target=serve_udp, args=(a.addr, 443, "quic")),
               threading.Thread(target=serve_udp, args=(a.addr, 853, "quic")),
               threading.Thread(target=serve_udp, args=(a.addr, 53, "dns")),
               threading.Thread(target=serve_dns_tcp, args=(a.addr,))]
    for t in threads:
        t.daemon = True
        t.start()


# --- the tricky origin -------------------------------------------------------------

class Origin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        upgrade = self.headers.get("Upgrade", "")
        record(event="request", port=self.server.server_address[1], path=self.path, host=self.headers.get("Host"),
               upgrade=upgrade, headers=dict(self.headers))
        if u.path == "/redirect":
            to = urllib.parse.parse_qs(u.query).get("to", ["/"])[0]
            self.send_response(302)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            return
        if u.path in ("/ws", "/ws-force"):
            if u.path == "/ws-force" or upgrade.lower() == "websocket":
                self.send_response(101)
                self.send_header("Upgrade", "websocket")
                self.send_header("Connection", "Upgrade")
                self.send_header("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
                self.end_headers()
                self.wfile.flush()
                # a websocket is a raw two-way pipe from here: echo what comes
                self.connection.settimeout(5)
                try:
                    d = self.connection.recv(4096)
                    if d:
                        record(event="ws_data", port=self.server.server_address[1], len=len(d))
                        self.connection.sendall(d)
                except OSError:
                    pass
                self.close_connection = True
                return
            body = b"upgrade required"
            self.send_response(426)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            return
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def origin(a):
    s = DualStackServer(("::", a.port), Origin)
    threading.Thread(target=s.serve_forever, daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["resolver", "origin"])
    ap.add_argument("--addr", default="203.0.113.53")
    ap.add_argument("--port", type=int, default=8082)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()
    open_log(a.log)
    (resolver if a.role == "resolver" else origin)(a)
    open(a.ready, "w").close()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
