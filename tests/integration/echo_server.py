#!/usr/bin/env python3
"""Echo servers for the test world: TCP and UDP, dual-stack, on several ports.

Every accepted connection and every datagram is logged as a JSON line to
--log (flushed at once), with the local address the client reached, so that
a test can prove a denied attempt never arrived.  Runs inside the world
network namespace; exits on SIGTERM.
"""
import argparse
import json
import selectors
import signal
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tcp", default="", help="comma-separated TCP ports")
    ap.add_argument("--udp", default="", help="comma-separated UDP ports")
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", required=True, help="file created once listening")
    a = ap.parse_args()
    log = open(a.log, "a", buffering=1)
    sel = selectors.DefaultSelector()

    def record(**kw):
        kw["t"] = time.time()
        log.write(json.dumps(kw) + "\n")

    for p in filter(None, a.tcp.split(",")):
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::", int(p)))
        s.listen(1024)
        s.setblocking(False)
        # TCP Fast Open, so that MSG_FASTOPEN clients get a real server
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16)
        except OSError:
            pass
        sel.register(s, selectors.EVENT_READ, ("accept", int(p)))
    for p in filter(None, a.udp.split(",")):
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind(("::", int(p)))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, ("udp", int(p)))
    open(a.ready, "w").close()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    while True:
        for key, _ in sel.select():
            kind, port = key.data
            s = key.fileobj
            try:
                if kind == "accept":
                    c, peer = s.accept()
                    c.setblocking(False)
                    local = c.getsockname()
                    record(proto="tcp", event="accept", local=local[0], port=port, peer=peer[0])
                    sel.register(c, selectors.EVENT_READ, ("conn", port))
                elif kind == "conn":
                    data = s.recv(65536)
                    if not data:
                        sel.unregister(s)
                        s.close()
                    else:
                        s.sendall(data)
                else:
                    data, peer = s.recvfrom(65536)
                    record(proto="udp", event="datagram", port=port, peer=peer[0], size=len(data))
                    s.sendto(data, peer)
            except OSError:
                try:
                    sel.unregister(s)
                    s.close()
                except Exception:
                    pass


if __name__ == "__main__":
    main()
