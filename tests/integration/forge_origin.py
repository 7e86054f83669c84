#!/usr/bin/env python3
"""An HTTPS origin for the real-client TLS tests (test_tls_clients.py): a
package index and a git host, the two things a sandbox most often fetches.

  forge_origin.py --port 9443 --cert C --key K --root DIR --log FILE --ready PATH

Serves, over TLS with C/K, dual-stack on --port:
  /git/...  git's smart HTTP, by running `git http-backend` as a CGI
            (GIT_PROJECT_ROOT = DIR/git, every repository exported)
  anything else: the file under DIR (a directory: its index.html), so
            DIR/simple/ is a PEP 503 simple index and DIR/files/ its wheels
Every request that arrives is logged as a JSON line (method, path), so a
test can prove a refused request never reached the origin.  Connections are
kept alive (HTTP/1.1); chunked request bodies (git's large POSTs) are read.
Runs in the world netns; exits on SIGTERM.
"""
import argparse
import http.server
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

from httpsrv import DualStackServer, TLSHandshake, open_log, read_body, record

A = None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _body(self):
        return read_body(self)

    def _send(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _git(self, body):
        path, _, query = self.path.partition("?")
        env = dict(os.environ, GIT_PROJECT_ROOT=os.path.join(A.root, "git"), GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO=urllib.parse.unquote(path[len("/git"):]), QUERY_STRING=query,
                   REQUEST_METHOD=self.command, CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(body)), REMOTE_ADDR=self.client_address[0],
                   HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                   GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
        p = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
        head, _, out = p.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = p.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin1").splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self._send(status, out, headers)

    def _do(self):
        body = self._body()
        record(event="request", method=self.command, path=self.path, body_len=len(body))
        if self.path.startswith("/git/"):
            return self._git(body)
        rel = urllib.parse.unquote(self.path.split("?")[0]).lstrip("/")
        f = os.path.normpath(os.path.join(A.root, rel))
        if os.path.isdir(f):
            f = os.path.join(f, "index.html")
        if not f.startswith(A.root + "/") or not os.path.isfile(f):
            return self._send(404, b"not found\n")
        ctype = "text/html" if f.endswith(".html") else "application/octet-stream"
        with open(f, "rb") as fh:
            self._send(200, fh.read(), [("Content-Type", ctype)])

    do_GET = do_POST = do_HEAD = do_PUT = _do

    def log_message(self, *a):
        pass


class Server(TLSHandshake, DualStackServer):
    handshake_timeout = 20


def main():
    global A
    ap = argparse.ArgumentParser()
    for o in ("--cert", "--key", "--root", "--log", "--ready"):
        ap.add_argument(o, required=True)
    ap.add_argument("--port", type=int, required=True)
    A = ap.parse_args()
    A.root = os.path.abspath(A.root)
    open_log(A.log)
    s = Server(("::", A.port), Handler)
    s.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    s.ctx.load_cert_chain(A.cert, A.key)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    open(A.ready, "w").close()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
