#!/usr/bin/env python3
"""DNS client run inside the sandbox by the resolver tests.

    dns_client.py STEPS.json

STEPS.json is a list; each step is either a query
    {"server": "192.0.2.53", "name": "api.example.com", "type": "A",
     "transport": "udp"|"tcp", "qclass": 1, "opcode": 0, "qdcount": 1,
     "qr": false, "edns": [1232, 0], "raw_hex": "...", "timeout": 3}
(raw_hex sends those bytes instead of a built query), or a rendezvous
    {"touch": PATH} / {"wait": PATH, "timeout": 20}, or a pause {"sleep": SECONDS}
Prints one JSON line per query: {"step": i, "rcode", "tc", "answers"} or
{"step": i, "error": "timeout"|"ECONNREFUSED"|...}.  The server address
is any address on port 53: the kernel sends it to the sandbox's resolver.
"""
import errno
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dnswire  # noqa: E402


def run(i, s):
    if "raw_hex" in s:
        msg = bytes.fromhex(s["raw_hex"])
    else:
        msg = dnswire.build_query(s["name"], s.get("type", "A"), qid=0x1000 + i,
                                  qclass=s.get("qclass", 1), opcode=s.get("opcode", 0),
                                  qr=s.get("qr", False), qdcount=s.get("qdcount"),
                                  edns=tuple(s["edns"]) if s.get("edns") else None)
    server, timeout = s.get("server", "192.0.2.53"), s.get("timeout", 3)
    try:
        if s.get("transport", "udp") == "tcp":
            r = dnswire.tcp_ask(server, 53, msg, timeout=timeout)
        else:
            r = dnswire.udp_ask(server, 53, msg, timeout=timeout)
    except OSError as e:
        return {"step": i, "error": errno.errorcode.get(e.errno, str(e))}
    if r is None:
        return {"step": i, "error": "timeout"}
    p = dnswire.parse(r)
    return {"step": i, "rcode": p["rcode"], "tc": p["tc"], "answers": p["answers"],
            "id": p["id"], "qd": p["qd"]}


def main():
    steps = json.load(open(sys.argv[1]))
    for i, s in enumerate(steps):
        if "touch" in s:
            open(s["touch"], "w").close()
        elif "sleep" in s:
            time.sleep(s["sleep"])
        elif "wait" in s:
            deadline = time.time() + s.get("timeout", 20)
            while not os.path.exists(s["wait"]) and time.time() < deadline:
                time.sleep(0.05)
        else:
            print(json.dumps(run(i, s)), flush=True)


if __name__ == "__main__":
    main()
