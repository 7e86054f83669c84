"""Just enough DNS wire format (RFC 1035) for the resolver tests.

Test-side only: builds queries (including deliberately broken ones), parses
responses, and builds the answers of the fake upstream (dns_server.py).
The product parses DNS with ldns; this file never runs in production.
"""
import ipaddress
import socket
import struct

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16,
         "AAAA": 28, "SRV": 33, "OPT": 41, "DNAME": 39, "HTTPS": 65,
         "IXFR": 251, "AXFR": 252, "ANY": 255}
TYPE_NAMES = {v: k for k, v in TYPES.items()}
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def qtype_num(t):
    return TYPES[t] if isinstance(t, str) else int(t)


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if not label:
            continue
        b = label.encode() if isinstance(label, str) else label
        out += bytes([len(b)]) + b
    return out + b"\0"


def decode_name(msg, off, depth=0):
    """Returns (name, offset after the name in place)."""
    labels, end = [], None
    while True:
        if off >= len(msg) or depth > 20:
            raise ValueError("bad name")
        n = msg[off]
        if n & 0xC0 == 0xC0:
            ptr = ((n & 0x3F) << 8) | msg[off + 1]
            if end is None:
                end = off + 2
            off, depth = ptr, depth + 1
            continue
        if n == 0:
            off += 1
            break
        labels.append(msg[off + 1:off + 1 + n].decode("latin-1"))
        off += 1 + n
    return ".".join(labels), (end if end is not None else off)


def build_query(name, qtype="A", qid=0x1234, rd=True, qclass=1, opcode=0, qr=False,
                qdcount=None, edns=None, raw_name=None, extra_an=0):
    flags = (0x8000 if qr else 0) | ((opcode & 0xF) << 11) | (0x0100 if rd else 0)
    q = (raw_name if raw_name is not None else encode_name(name)) + \
        struct.pack("!HH", qtype_num(qtype), qclass)
    ar = b""
    if edns is not None:  # (udp_size, version)
        size, version = edns
        ar = b"\0" + struct.pack("!HHBBHH", 41, size, 0, version, 0, 0)
    hdr = struct.pack("!HHHHHH", qid, flags, 1 if qdcount is None else qdcount,
                      extra_an, 0, 1 if ar else 0)
    return hdr + q + ar


def parse(msg):
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    off, questions, answers = 12, [], []
    for _ in range(qd):
        name, off = decode_name(msg, off)
        t, c = struct.unpack("!HH", msg[off:off + 4])
        off += 4
        questions.append((name, TYPE_NAMES.get(t, t), c))
    for _ in range(an):
        name, off = decode_name(msg, off)
        t, c, ttl, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        rdata = msg[off:off + rdlen]
        if t == 1:
            data = str(ipaddress.IPv4Address(rdata))
        elif t == 28:
            data = str(ipaddress.IPv6Address(rdata))
        elif t == 5:
            data = decode_name(msg, off)[0]
        else:
            data = rdata.hex()
        off += rdlen
        answers.append({"name": name, "type": TYPE_NAMES.get(t, t), "ttl": ttl, "data": data})
    return {"id": qid, "qr": bool(flags & 0x8000), "opcode": (flags >> 11) & 0xF,
            "tc": bool(flags & 0x0200), "rd": bool(flags & 0x0100), "ra": bool(flags & 0x80),
            "rcode": RCODES.get(flags & 0xF, flags & 0xF), "qd": questions,
            "answers": answers, "ancount": an, "nscount": ns, "arcount": ar}


def rr(name, rtype, data, ttl=60):
    t = qtype_num(rtype)
    if t == 1:
        rdata = ipaddress.IPv4Address(data).packed
    elif t == 28:
        rdata = ipaddress.IPv6Address(data).packed
    elif t == 5:
        rdata = encode_name(data)
    elif t == 16:
        b = data.encode()
        rdata = bytes([len(b)]) + b
    else:
        rdata = bytes.fromhex(data)
    return encode_name(name) + struct.pack("!HHIH", t, 1, ttl, len(rdata)) + rdata


def build_response(query, rcode=0, answers=(), tc=False):
    """A response to the raw `query` with pre-encoded answer RRs."""
    qid, flags = struct.unpack("!HH", query[:4])
    _, off = decode_name(query, 12)
    question = query[12:off + 4]
    rflags = 0x8000 | (flags & 0x7900) | 0x0080 | (0x0200 if tc else 0) | (rcode & 0xF)
    hdr = struct.pack("!HHHHHH", qid, rflags, 1, len(answers), 0, 0)
    return hdr + question + b"".join(answers)


def udp_ask(addr, port, msg, timeout=3.0):
    """Send one datagram, return the reply bytes or None on timeout."""
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(msg, (addr, port))
        try:
            return s.recv(65535)
        except socket.timeout:
            return None


def tcp_ask(addr, port, msg, timeout=5.0):
    """One length-prefixed exchange over TCP; None if the connection gives nothing."""
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect((addr, port))
        s.sendall(struct.pack("!H", len(msg)) + msg)
        hdr = b""
        while len(hdr) < 2:
            c = s.recv(2 - len(hdr))
            if not c:
                return None
            hdr += c
        n = struct.unpack("!H", hdr)[0]
        body = b""
        while len(body) < n:
            c = s.recv(n - len(body))
            if not c:
                return None
            body += c
        return body
