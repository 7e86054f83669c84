#!/usr/bin/env python3
"""A burst of DNS queries, run inside the sandbox by the resolver tests.

    dns_burst.py SPEC.json

SPEC.json: {"server": "192.0.2.53", "queries": [[name, qtype], ...],
            "dig": [name, ...], "wait": SECONDS, "events": PATH,
            "warm": [[name, qtype], ...]}
First asks each "warm" query alone (ID 1000 + its index) and waits for its
answer (so the burst finds them cached), then starts one `dig` per name of
"dig" at once, then sends every query of
"queries" back to back from one UDP socket (ID = its index) before reading
any answer, so that they queue together at the resolver, and reads answers
until every query has one or "wait" seconds pass without a new one.  With
"events" (the sandbox's events file), each answer's query line must already
be in it when the answer arrives (the resolver writes the line first): the
IDs whose line was not are listed in "late".  Prints one JSON object:
{"answers": {ID: {"rcode", "answers", "qd"}}, "dig": [{"name", "status",
"answers"}], "sent": N, "port": the UDP socket's port, "late": [ID, ...]}.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dnswire  # noqa: E402


def dig_result(name, out):
    m = re.search(r"status: (\w+)", out)
    answers = re.findall(r"^\S+\s+\d+\s+IN\s+A\s+(\S+)$", out, re.M)
    return {"name": name, "status": m.group(1) if m else None, "answers": answers, "out": out[-400:]}


class Lines:
    """The dns-query lines of one source port in an events file, read on."""

    def __init__(self, path, port):
        self.path, self.port, self.off, self.ids = path, port, 0, set()

    def read(self):
        with open(self.path, "rb") as f:
            f.seek(self.off)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.off += end
        for line in data[:end].splitlines():
            if b'"dns-query"' in line:
                e = json.loads(line)
                if e.get("source.port") == self.port:
                    self.ids.add(int(e["dns.id"]))


def main():
    spec = json.load(open(sys.argv[1]))
    server, wait = spec.get("server", "192.0.2.53"), spec.get("wait", 3.0)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.settimeout(10)
    for i, (name, qtype) in enumerate(spec.get("warm", [])):
        s.sendto(dnswire.build_query(name, qtype, qid=1000 + i), (server, 53))
        if dnswire.parse(s.recv(65535))["id"] != 1000 + i:
            raise SystemExit("warm-up query %d: wrong answer" % i)
    digs = [(n, subprocess.Popen(["dig", "@" + server, "+tries=1", "+time=10", "+noall", "+comments",
                                  "+answer", n, "A"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)) for n in spec.get("dig", [])]
    queries = spec["queries"]
    for i, (name, qtype) in enumerate(queries):
        s.sendto(dnswire.build_query(name, qtype, qid=i), (server, 53))
    got, late = {}, []
    lines = Lines(spec["events"], s.getsockname()[1]) if spec.get("events") else None
    s.settimeout(wait)
    while len(got) < len(queries):
        try:
            r = s.recv(65535)
        except socket.timeout:
            break
        p = dnswire.parse(r)
        if p["id"] in got:
            raise SystemExit("two answers to query %d" % p["id"])
        got[p["id"]] = {"rcode": p["rcode"], "answers": p["answers"], "qd": p["qd"]}
        if lines:
            lines.read()
            if p["id"] not in lines.ids:
                late.append(p["id"])
    out = [dig_result(n, p.communicate(timeout=30)[0]) for n, p in digs]
    print(json.dumps({"answers": got, "dig": out, "sent": len(queries), "port": s.getsockname()[1],
                      "late": late}))
    time.sleep(0.1)


if __name__ == "__main__":
    main()
