#!/usr/bin/env python3
"""Fake upstream DNS server for the resolver tests: answers from a small
JSON zone over UDP and TCP, and logs every query it receives as a JSON line
(flushed at once), so that a test can prove a denied name never arrived.

Zone file: {"name": {"A": ["192.0.2.1"], "AAAA": [...], "CNAME": "target",
"TXT": ["..."]}, ...}.  Unknown names get NXDOMAIN.  Behaviours by name:
  "tc.*"    : over UDP a reply with TC set and no answers, full over TCP
  "slow.*"  : never answered (timeouts)
  "liar.*"  : a reply with a wrong ID first, then the right one
Runs inside the world network namespace (or on loopback); exits on SIGTERM.
"""
import argparse
import json
import selectors
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import dnswire  # noqa: E402


def answer(zone, query, transport):
    name, off = dnswire.decode_name(query, 12)
    qtype = struct.unpack("!H", query[off:off + 2])[0]
    lname = name.lower()
    if lname.startswith("slow."):
        return []
    if lname.startswith("tc.") and transport == "udp":
        return [dnswire.build_response(query, tc=True)]
    entry = zone.get(lname)
    if entry is None:
        return [dnswire.build_response(query, rcode=3)]
    rrs, owner = [], lname
    for _ in range(8):  # follow CNAMEs inside the zone
        e = zone.get(owner, {})
        if "CNAME" in e and qtype != 5:
            rrs.append(dnswire.rr(owner, "CNAME", e["CNAME"]))
            owner = e["CNAME"]
            continue
        break
    e = zone.get(owner, {})
    tname = dnswire.TYPE_NAMES.get(qtype)
    for data in e.get(tname, []) if tname else []:
        rrs.append(dnswire.rr(owner, tname, data))
    resp = dnswire.build_response(query, answers=rrs)
    if lname.startswith("liar."):
        bad = bytearray(resp)
        bad[0] ^= 0xFF
        return [bytes(bad), resp]
    return [resp]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True, help="ADDR:PORT (UDP and TCP)")
    ap.add_argument("--zone", required=True, help="JSON zone file")
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", required=True, help="file created once listening")
    a = ap.parse_args()
    zone = {k.lower().rstrip("."): v for k, v in json.load(open(a.zone)).items()}
    addr, port = a.listen.rsplit(":", 1)
    addr = addr.strip("[]")
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    log = open(a.log, "a", buffering=1)

    def record(query, transport, src):
        try:
            name, off = dnswire.decode_name(query, 12)
            qtype = struct.unpack("!H", query[off:off + 2])[0]
            qtype = dnswire.TYPE_NAMES.get(qtype, qtype)
        except (ValueError, struct.error, IndexError):
            name, qtype = None, None
        log.write(json.dumps({"t": time.time(), "transport": transport, "src": src[0],
                              "sport": src[1], "id": struct.unpack("!H", query[:2])[0],
                              "name": name, "type": qtype}) + "\n")

    sel = selectors.DefaultSelector()
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.bind((addr, int(port)))
    t = socket.socket(fam, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, int(port)))
    t.listen(64)
    sel.register(u, selectors.EVENT_READ, "udp")
    sel.register(t, selectors.EVENT_READ, "accept")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    open(a.ready, "w").close()
    while True:
        for key, _ in sel.select():
            if key.data == "udp":
                q, src = u.recvfrom(65535)
                record(q, "udp", src)
                for r in answer(zone, q, "udp"):
                    u.sendto(r, src)
            elif key.data == "accept":
                c, src = t.accept()
                c.settimeout(2)
                try:
                    hdr = c.recv(2, socket.MSG_WAITALL)
                    n = struct.unpack("!H", hdr)[0]
                    q = c.recv(n, socket.MSG_WAITALL)
                    record(q, "tcp", src)
                    for r in answer(zone, q, "tcp"):
                        c.sendall(struct.pack("!H", len(r)) + r)
                except (OSError, struct.error):
                    pass
                finally:
                    c.close()


if __name__ == "__main__":
    main()
