#!/usr/bin/env python3
"""A tiny authoritative DNS server for the proxy tests (UDP only).

  dns_server.py --listen 192.0.2.53:53 --zone api.example.com=192.0.2.10,2001:db8::10
                [--zone NAME=ADDR[,ADDR...]]... [--rebind NAME=ADDR1/ADDR2/...]
                [--ttl NAME=SECONDS]... [--log FILE] --ready PATH

--zone: fixed answers (A and AAAA taken from the address list).
--rebind: the n-th A query for NAME gets the n-th address (the last one
  repeats): "first a vetted address, then a loopback one".
Unknown names get NXDOMAIN, a known name without that type NOERROR/no data.
--ttl: the TTL of NAME's answers (default 0: every answer is fresh).
Every query is appended to --log as {"name":..., "type":...} so tests can
check what reached the upstream.
"""
import argparse
import json
import socket
import struct


def parse_name(pkt, off):
    labels = []
    while True:
        n = pkt[off]
        off += 1
        if n == 0:
            break
        if n & 0xc0:
            raise ValueError("compressed question")
        labels.append(pkt[off:off + n].decode("ascii", "replace"))
        off += n
    return ".".join(labels), off


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--zone", action="append", default=[])
    ap.add_argument("--rebind", action="append", default=[])
    ap.add_argument("--ttl", action="append", default=[])
    ap.add_argument("--log")
    ap.add_argument("--ready")
    a = ap.parse_args()

    zone = {}
    for z in a.zone:
        name, addrs = z.split("=", 1)
        zone[name.lower().rstrip(".")] = [x for x in addrs.split(",") if x]
    rebind = {}
    for z in a.rebind:
        name, addrs = z.split("=", 1)
        rebind[name.lower().rstrip(".")] = addrs.split("/")
    ttls = {}
    for z in a.ttl:
        name, secs = z.split("=", 1)
        ttls[name.lower().rstrip(".")] = int(secs)
    counts = {}

    host, port = a.listen.rsplit(":", 1)
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    if a.ready:
        open(a.ready, "w").close()
    log = open(a.log, "a") if a.log else None

    while True:
        pkt, peer = s.recvfrom(4096)
        try:
            qid, flags, qd = struct.unpack("!HHH", pkt[:6])
            name, off = parse_name(pkt, 12)
            qtype, qclass = struct.unpack("!HH", pkt[off:off + 4])
        except Exception:
            continue
        question = pkt[12:off + 4]
        key = name.lower().rstrip(".")
        if log:
            log.write(json.dumps({"name": name, "type": qtype}) + "\n")
            log.flush()
        if key in rebind:
            n = counts.get((key, qtype), 0)
            counts[(key, qtype)] = n + 1
            seq = rebind[key]
            addrs = [seq[min(n, len(seq) - 1)]] if qtype == 1 else []
            rcode = 0
        elif key in zone:
            addrs = zone[key]
            rcode = 0
        else:
            addrs = []
            rcode = 3
        answers = b""
        count = 0
        for ad in addrs:
            if qtype == 1 and ":" not in ad:
                rdata = socket.inet_pton(socket.AF_INET, ad)
            elif qtype == 28 and ":" in ad:
                rdata = socket.inet_pton(socket.AF_INET6, ad)
            else:
                continue
            answers += struct.pack("!HHHIH", 0xc00c, qtype, 1, ttls.get(key, 0), len(rdata)) + rdata
            count += 1
        hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode | (flags & 0x0100), 1, count, 0, 0)
        s.sendto(hdr + question + answers, peer)


if __name__ == "__main__":
    main()
