#!/usr/bin/env python3
"""Origin servers for the proxy tests: plain HTTP and HTTPS, dual-stack.

  origin_server.py --http 8081 --https 8443 --cert C --key K --log FILE --ready PATH

Every TCP connection to the HTTPS port is logged as an "accept" line, and
every request that reaches an origin as a JSON line (local
address, port, scheme, method, path, Host, SNI, headers, body length, and
"peer": the client's address and port, one per TCP connection), so a test
can prove a refused request never arrived and count the connections that
carried the requests.  Responses are JSON too:
{"origin": "<local addr>", "path": ..., "headers": {...}, "body": ...}.
Plain HTTP connections are kept alive (HTTP/1.1) unless the request says
close; HTTPS ones are closed after each response (so that a tunnel ends,
and logs, when its one request is done).
Special paths: /big?n=N (N bytes); /close (answers with Connection: close);
/eof (a body delimited by closing the connection: no Content-Length);
/extra (a complete response followed by stray bytes); /sink (the body is
read in 256 KiB pieces and thrown away, only its length kept: a 1 GB upload
costs the origin no memory).
With --auth-tokens FILE (one token a line, read at each request), every
request needs "Authorization: Bearer <a token in FILE>", else 401: the
origin of the credentials tests, which only the real secret opens.
Chunked request bodies are read.  Runs in the world netns; exits on SIGTERM.
"""
import argparse
import http.server
import json
import signal
import socket
import ssl
import sys
import threading
import time

from httpsrv import DualStackServer, TLSHandshake, open_log, read_body, record

AUTH_TOKENS = None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # the head and the body are two writes: without this the body waits
        # for the ACK of the head (Nagle against a delayed ACK: 40 ms an
        # answer, which 10,000 pipelined requests would pay in full)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _body(self):
        return read_body(self)

    def _sink(self):
        """Read the body without keeping it: its length (and that of a
        chunked one) is what the test checks."""
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return n
                while size:
                    got = len(self.rfile.read(min(size, 1 << 18)))
                    if not got:
                        return n
                    n, size = n + got, size - got
                self.rfile.readline()
        left = int(self.headers.get("Content-Length") or 0)
        while left:
            got = len(self.rfile.read(min(left, 1 << 18)))
            if not got:
                break
            n, left = n + got, left - got
        return n

    def _do(self):
        if self.path.startswith("/sink"):
            n = self._sink()
            record(event="request", scheme=self.server.scheme, port=self.server.server_address[1],
                   method=self.command, path=self.path, host=self.headers.get("Host"), body_len=n,
                   peer="%s:%s" % self.client_address[:2])
            out = json.dumps({"path": self.path, "body_len": n}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        body = self._body()
        local = self.connection.getsockname()[0]
        if local.startswith("::ffff:"):
            local = local[7:]
        sni = getattr(self.connection, "sluice_sni", None)
        peer = self.client_address
        record(event="request", scheme=self.server.scheme, local=local, port=self.server.server_address[1],
               method=self.command, path=self.path, host=self.headers.get("Host"), sni=sni,
               headers=dict(self.headers), body_len=len(body), peer="%s:%s" % (peer[0], peer[1]))
        if AUTH_TOKENS:
            with open(AUTH_TOKENS) as f:
                ok = ["Bearer " + t.strip() for t in f if t.strip()]
            if self.headers.get("Authorization") not in ok:
                out = b'{"error": "unauthorized"}'
                self.send_response(401)
                self.send_header("Content-Length", str(len(out)))
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                self.wfile.write(out)
                return
        if "/echo-header" in self.path:
            # the Authorization header back in a response header too
            self.send_response(200)
            out = b"{}"
            self.send_header("X-Seen-Authorization", self.headers.get("Authorization", ""))
            self.send_header("Content-Length", str(len(out)))
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            self.wfile.write(out)
            return
        if self.path.startswith("/big"):
            n = int(self.path.split("n=")[1]) if "n=" in self.path else 1 << 20
            out = b"x" * n
        else:
            out = json.dumps({"origin": local, "path": self.path, "method": self.command,
                              "headers": dict(self.headers), "body": body.decode("latin1")}).encode()
        if self.path.startswith("/eof"):
            # HTTP/1.0 style: the body ends where the connection does
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(out)
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        if self.path.startswith("/close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)
        if self.path.startswith("/extra"):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray")

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_PATCH = _do

    def log_message(self, *a):
        pass


class Server(DualStackServer):
    request_queue_size = 2048


class TLSServer(TLSHandshake, Server):
    def on_accept(self, addr):
        # every TCP connection, handshake or not: a refused tunnel must not make one
        record(event="accept", port=self.server_address[1], peer="%s:%d" % addr[:2])

    def on_tls_error(self, request, err):
        record(event="tls_error", error=str(err), sni=getattr(request, "sluice_sni", None))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int)
    ap.add_argument("--https", type=int)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--auth-tokens")
    a = ap.parse_args()
    global AUTH_TOKENS
    AUTH_TOKENS = a.auth_tokens
    open_log(a.log)
    servers = []
    if a.http:
        s = Server(("::", a.http), Handler)
        s.scheme = "http"
        servers.append(s)
    if a.https:
        s = TLSServer(("::", a.https), Handler)
        s.scheme = "https"
        s.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        s.ctx.load_cert_chain(a.cert, a.key)
        s.ctx.sni_callback = lambda sock, name, ctx: setattr(sock, "sluice_sni", name)
        servers.append(s)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    open(a.ready, "w").close()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
