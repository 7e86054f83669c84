#!/usr/bin/env python3
"""The fake DNS server of the tests (the proxy's and the resolver's
upstream), over UDP and TCP, in the world network namespace or on loopback.

  dns_server.py --listen ADDR:PORT [--zone-file ZONE.json]
                [--zone NAME=ADDR[,ADDR...]]... [--rebind NAME=ADDR1/ADDR2/...]...
                [--ttl NAME=SECONDS]... [--default-ttl SECONDS] [--log FILE] --ready PATH

--zone-file: {"name": {"A": ["192.0.2.1"], "AAAA": [...], "CNAME": "target",
  "TXT": ["..."]}, ...}; CNAMEs are followed inside the zone.
--zone: fixed answers, A and AAAA taken from the address list.
--rebind: the n-th A query for NAME gets the n-th address (the last one
  repeats): "first a vetted address, then a loopback one"; AAAA: no data.
--ttl: the TTL of NAME's answers; --default-ttl the others' (default 60).
Unknown names get NXDOMAIN, a known name without that type NOERROR/no data.
Behaviours by name:
  "tc.*"    : over UDP a reply with TC set and no answers, full over TCP
  "slow.*"  : never answered (timeouts)
  "liar.*"  : a reply with a wrong ID first, then the right one
  "delay.*" : over UDP the reply comes 0.5 s late (queries in flight); over
              TCP at once
Every query is appended to --log as a JSON line (flushed at once) with
"name", "type" (mnemonic, or the number when unknown), "qtype" (number),
"transport", "src", "sport", "id" and "t", so that a test can check what
reached the upstream (and prove a denied name never did).  Exits on SIGTERM.
"""
import argparse
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dnswire  # noqa: E402


def load_zone(a):
    """The zone as {name: {"A": [...], "AAAA": [...], "CNAME": ..., "TXT": [...]}},
    the rebind sequences and the per-name TTLs, from the options."""
    zone = {}
    if a.zone_file:
        with open(a.zone_file) as f:
            zone = {k.lower().rstrip("."): v for k, v in json.load(f).items()}
    for z in a.zone:
        name, addrs = z.split("=", 1)
        addrs = [x for x in addrs.split(",") if x]
        zone[name.lower().rstrip(".")] = {"A": [x for x in addrs if ":" not in x],
                                          "AAAA": [x for x in addrs if ":" in x]}
    rebind = {}
    for z in a.rebind:
        name, addrs = z.split("=", 1)
        rebind[name.lower().rstrip(".")] = addrs.split("/")
    ttls = {}
    for z in a.ttl:
        name, secs = z.split("=", 1)
        ttls[name.lower().rstrip(".")] = int(secs)
    return zone, rebind, ttls


class Server:
    def __init__(self, zone, rebind, ttls, default_ttl):
        self.zone, self.rebind, self.ttls, self.default_ttl = zone, rebind, ttls, default_ttl
        self.counts = {}

    def records(self, owner, tname, qtype):
        if owner in self.rebind:
            if qtype != 1:
                return []
            n = self.counts.get(owner, 0)
            self.counts[owner] = n + 1
            seq = self.rebind[owner]
            return [seq[min(n, len(seq) - 1)]]
        return self.zone.get(owner, {}).get(tname, []) if tname else []

    def answer(self, query, transport):
        """The replies (0, 1 or 2) to the raw `query`."""
        name, off = dnswire.decode_name(query, 12)
        qtype = struct.unpack("!H", query[off:off + 2])[0]
        lname = name.lower().rstrip(".")
        if lname.startswith("slow."):
            return []
        if lname.startswith("tc.") and transport == "udp":
            return [dnswire.build_response(query, tc=True)]
        if lname not in self.zone and lname not in self.rebind:
            return [dnswire.build_response(query, rcode=3)]
        rrs, owner = [], lname
        for _ in range(8):  # follow CNAMEs inside the zone
            e = self.zone.get(owner, {})
            if "CNAME" in e and qtype != 5:
                rrs.append(dnswire.rr(owner, "CNAME", e["CNAME"], self.ttls.get(owner, self.default_ttl)))
                owner = e["CNAME"]
                continue
            break
        tname = dnswire.TYPE_NAMES.get(qtype)
        for data in self.records(owner, tname, qtype):
            rrs.append(dnswire.rr(owner, tname, data, self.ttls.get(owner, self.default_ttl)))
        resp = dnswire.build_response(query, answers=rrs)
        if lname.startswith("liar."):
            bad = bytearray(resp)
            bad[0] ^= 0xFF
            return [bytes(bad), resp]
        return [resp]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True, help="ADDR:PORT (UDP and TCP)")
    ap.add_argument("--zone-file", help="JSON zone file")
    ap.add_argument("--zone", action="append", default=[], help="NAME=ADDR[,ADDR...]")
    ap.add_argument("--rebind", action="append", default=[], help="NAME=ADDR1/ADDR2/...")
    ap.add_argument("--ttl", action="append", default=[], help="NAME=SECONDS")
    ap.add_argument("--default-ttl", type=int, default=60)
    ap.add_argument("--log")
    ap.add_argument("--ready", required=True, help="file created once listening")
    a = ap.parse_args()
    srv = Server(*load_zone(a), a.default_ttl)
    addr, port = a.listen.rsplit(":", 1)
    addr = addr.strip("[]")
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    log = open(a.log, "a", buffering=1) if a.log else None

    def record(query, transport, src):
        if not log:
            return
        try:
            name, off = dnswire.decode_name(query, 12)
            qtype = struct.unpack("!H", query[off:off + 2])[0]
        except (ValueError, struct.error, IndexError):
            name, qtype = None, None
        log.write(json.dumps({"t": time.time(), "transport": transport, "src": src[0],
                              "sport": src[1], "id": struct.unpack("!H", query[:2])[0] if len(query) >= 2 else None,
                              "name": name, "type": dnswire.TYPE_NAMES.get(qtype, qtype),
                              "qtype": qtype}) + "\n")

    def delayed(query):
        try:
            return dnswire.decode_name(query, 12)[0].lower().startswith("delay.")
        except (ValueError, struct.error, IndexError):
            return False

    def replies(query, transport):
        try:
            return srv.answer(query, transport)
        except (ValueError, struct.error, IndexError):
            return []   # not a question we can read: no answer

    sel = selectors.DefaultSelector()
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    u.bind((addr, int(port)))
    t = socket.socket(fam, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, int(port)))
    t.listen(64)
    sel.register(u, selectors.EVENT_READ, "udp")
    sel.register(t, selectors.EVENT_READ, "accept")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    open(a.ready, "w").close()
    late = []   # (when, reply, src) of the delay.* names, in order
    while True:
        now = time.monotonic()
        while late and late[0][0] <= now:
            _, r, dst = late.pop(0)
            u.sendto(r, dst)
        for key, _ in sel.select(late[0][0] - now if late else None):
            if key.data == "udp":
                q, src = u.recvfrom(65535)
                record(q, "udp", src)
                delay = delayed(q)
                for r in replies(q, "udp"):
                    if delay:
                        late.append((time.monotonic() + 0.5, r, src))
                    else:
                        u.sendto(r, src)
            elif key.data == "accept":
                c, src = t.accept()
                c.settimeout(2)
                try:
                    hdr = c.recv(2, socket.MSG_WAITALL)
                    n = struct.unpack("!H", hdr)[0]
                    q = c.recv(n, socket.MSG_WAITALL)
                    record(q, "tcp", src)
                    for r in replies(q, "tcp"):
                        c.sendall(struct.pack("!H", len(r)) + r)
                except (OSError, struct.error):
                    pass
                finally:
                    c.close()


if __name__ == "__main__":
    main()
