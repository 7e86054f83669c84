"""What the tests' HTTP(S) servers share (origin_server.py, forge_origin.py,
tests/attacks/attack_servers.py): the JSON-lines log of what arrived, a
request body reader (Content-Length or chunked), a dual-stack threading
server, and the TLS handshake run in the request's own thread.  They serve
only on loopback or in the test world's namespaces (world.py).
"""
import http.server
import json
import socket
import socketserver
import ssl
import threading
import time

_LOCK = threading.Lock()
_LOG = None


def open_log(path):
    """Append every record() from here on to the file at path."""
    global _LOG
    _LOG = open(path, "a")


def record(**kw):
    """One JSON line, stamped with the time, written and flushed at once
    (a test reads the log while the server runs)."""
    kw["t"] = time.time()
    with _LOCK:
        _LOG.write(json.dumps(kw) + "\n")
        _LOG.flush()


def read_body(handler):
    """The request body of a BaseHTTPRequestHandler: Content-Length bytes,
    or a chunked body (git's large POSTs) with its trailers skipped."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = b""
        while True:
            size = int(handler.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return out
            out += handler.rfile.read(size)
            handler.rfile.readline()
    n = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(n) if n else b""


class DualStackServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """A threading HTTP server on an IPv6 socket that takes IPv4 too."""
    daemon_threads = True
    address_family = socket.AF_INET6
    allow_reuse_address = True

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class TLSHandshake:
    """Mixin before a socketserver class: every accepted socket is wrapped
    with self.ctx (set by the caller), its handshake run in the request's
    thread within handshake_timeout s; a failed one is on_tls_error()'s and
    never reaches the handler.  request_timeout: the socket's timeout after
    the handshake (None: none)."""
    handshake_timeout = 10
    request_timeout = None

    def on_accept(self, addr):
        pass

    def on_tls_error(self, request, err):
        record(event="tls_error", error=str(err))

    def get_request(self):
        sock, addr = self.socket.accept()
        self.on_accept(addr)
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        request.settimeout(self.handshake_timeout)
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError) as e:
            self.on_tls_error(request, e)
            return
        request.settimeout(self.request_timeout)
        super().finish_request(request, client_address)
