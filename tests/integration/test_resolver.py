"""The sandbox resolver (sluice-resolver) under `sluice run`, end to end.

A fake upstream DNS server (dns_server.py) runs in the world netns on
192.0.2.53:53 and logs every query it receives; the sandboxed client
(dns_client.py) asks "any server" on port 53, which the kernel sends to the
resolver.  Each test checks the client's answer, what reached the upstream
(a denied name: nothing), and the resolver's JSON line in the events file.
"""
import json
import os
import signal
import subprocess
import threading
import time

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM = "192.0.2.53"

POLICY = """\
version: 1
name: resolver-test
allow:
  - host: api.example.com
    ports: [443]
    why: exact name
  - host: "*.pkg.example.org"
    ports: [443]
    why: wildcard
  - host: private.example.com
    ports: [443]
    why: answers in private ranges
  - host: mixed.example.com
    ports: [443]
    why: one public and one private answer
  - host: tc.example.com
    ports: [443]
    why: truncated over UDP
  - host: short.example.com
    ports: [443]
    why: answers with a TTL of 1 s
  - cidr: 10.9.0.0/16
    ports: [443]
    why: an internal range the policy names (its answers pass the filter)
"""

ZONE = {
    "api.example.com": {"A": ["192.0.2.10"], "AAAA": ["2001:db8::10"], "TXT": ["hello"]},
    "denied.example.net": {"A": ["192.0.2.20"]},
    "private.example.com": {"A": ["10.1.2.3", "127.0.0.1", "169.254.169.254"]},
    "mixed.example.com": {"A": ["10.1.2.3", "93.184.216.34"]},
    "tc.example.com": {"A": ["192.0.2.10"]},
    "short.example.com": {"A": ["192.0.2.40"]},
    "b.pkg.example.org": {"A": ["192.0.2.30"]},
    "internal.pkg.example.org": {"A": ["10.9.1.1"]},
    "a.pkg.example.org": {"CNAME": "cdn.example.net"},
    "cdn.example.net": {"A": ["192.0.2.20"]},
}

# the world lives on documentation addresses: let those through as answers
ALLOW_DOC = ["--resolver-arg", "--allow-private-answers", "--resolver-arg", "192.0.2.0/24",
             "--resolver-arg", "--allow-private-answers", "--resolver-arg", "2001:db8::/32"]


def _upstream(w):
    """Start the world's DNS server once per World; returns its log path."""
    log = os.path.join(w.tmp, "dns-upstream.jsonl")
    if not getattr(w, "_dns_upstream", None):
        zone = w.write("zone.json", json.dumps(ZONE))
        w.start_server([os.path.join(HERE, "dns_server.py"), "--listen", UPSTREAM + ":53",
                        "--zone-file", zone, "--ttl", "short.example.com=1", "--log", log],
                       name="dns-upstream")
        w._dns_upstream = log
    return log


def _received(log, since=0):
    try:
        with open(log) as f:
            return [json.loads(l) for l in f if l.strip()][since:]
    except FileNotFoundError:
        return []


def _ask(w, steps, policy=POLICY, extra=(), allow_doc=True):
    """Run the DNS client with `steps` in the sandbox.  Returns (client
    results, resolver query lines, upstream records received meanwhile)."""
    log = _upstream(w)
    mark = len(_received(log))
    path = w.write("steps-%d.json" % time.monotonic_ns(), json.dumps(steps))
    r = w.sluice_run(["python3", os.path.join(HERE, "dns_client.py"), path], policy=policy,
                     extra=["--upstream-dns", UPSTREAM] + (ALLOW_DOC if allow_doc else []) + list(extra))
    assert r.rc == 0, r
    results = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    lines = [e for e in r.events if e.get("event.action") == "dns-query"]
    starts = [e for e in r.events if e.get("event.action") == "resolver-start"]
    assert len(starts) == 1, r
    time.sleep(0.05)
    return results, lines, _received(log, mark), r


def _line(lines, name, qtype="A"):
    found = [l for l in lines if l.get("dns.question.name") == name and l.get("dns.question.type") == qtype]
    assert len(found) == 1, "want one log line for %s %s, got %r" % (name, qtype, lines)
    return found[0]


def _common(line, mode="enforce"):
    for k in ("@timestamp", "event.outcome", "event.reason", "source.ip", "source.port",
              "network.transport", "dns.id"):
        assert k in line, (k, line)
    assert line["event.action"] == "dns-query", line
    assert line["sluice.sandbox"], line
    assert len(line["sluice.policy_sha256"]) == 64 and line["rule.version"] == line["sluice.policy_sha256"], line
    assert line["sluice.mode"] == mode, line
    assert line["source.ip"] in ("127.0.0.1", "::1"), line


def test_allowed_names_answered(w):
    res, lines, up, _ = _ask(w, [
        {"name": "api.example.com"},
        {"name": "API.Example.COM.", "type": "AAAA"},
        {"name": "a.pkg.example.org"},
        {"name": "b.pkg.example.org", "transport": "tcp"},
        {"name": "api.example.com", "server": "2001:db8::1"},
    ])
    assert res[0]["rcode"] == "NOERROR" and [a["data"] for a in res[0]["answers"]] == ["192.0.2.10"], res
    assert res[1]["rcode"] == "NOERROR" and [a["data"] for a in res[1]["answers"]] == ["2001:db8::10"], res
    assert res[1]["qd"][0][0] == "API.Example.COM", res   # the client's own spelling comes back
    assert [a["type"] for a in res[2]["answers"]] == ["CNAME", "A"], res
    assert res[3]["rcode"] == "NOERROR" and res[3]["answers"], res
    assert res[4]["rcode"] == "NOERROR" and res[4]["answers"], res
    names = [(u["name"], u["type"], u["transport"]) for u in up]
    assert ("api.example.com", "A", "udp") in names and ("api.example.com", "AAAA", "udp") in names, up
    assert ("b.pkg.example.org", "A", "tcp") in names, up   # TCP queries go upstream over TCP
    assert all(u["src"] == "192.0.2.2" for u in up), up   # from the sandbox's network
    assert len({u["sport"] for u in up}) == len(up), up   # a fresh source port per query
    l = _line(lines, "api.example.com", "AAAA")
    _common(l)
    assert l["event.outcome"] == "success" and l["event.reason"] == "allowed", l
    assert l["sluice.verdict"] == "allow" and l["rule.name"].endswith("host:api.example.com"), l
    assert l["dns.response_code"] == "NOERROR", l
    assert l["dns.answers"] == [{"name": "api.example.com", "type": "AAAA", "class": "IN", "ttl": 60,
                                 "data": "2001:db8::10"}], l
    assert l["sluice.upstream.ip"] == "192.0.2.53" and l["sluice.upstream.port"] == 53, l
    l = _line(lines, "a.pkg.example.org")
    assert l["rule.name"].endswith("host:*.pkg.example.org"), l
    assert [a["type"] for a in l["dns.answers"]] == ["CNAME", "A"], l
    tcp = [x for x in lines if x["network.transport"] == "tcp"]
    assert len(tcp) == 1 and tcp[0]["sluice.upstream_transport"] == "tcp", lines


def test_cached_answer_served_and_filtered_again(w):
    """A second query for a name and qtype within the TTL is answered from
    the cache: nothing goes upstream, the TTL is aged, the line says so; UDP
    and TCP share the cache; another qtype is a miss."""
    res, lines, up, _ = _ask(w, [
        {"name": "api.example.com"},
        {"sleep": 1.1},
        {"name": "api.example.com"},
        {"name": "Api.Example.Com", "transport": "tcp"},
        {"name": "api.example.com", "type": "AAAA"},
        {"name": "a.pkg.example.org"},
        {"name": "a.pkg.example.org"},
    ])
    for x in res:
        assert x["rcode"] == "NOERROR" and x["answers"], res
    # (a sleep prints no line: res[1] is the query after it)
    assert len(res) == 6 and [a["data"] for a in res[1]["answers"]] == ["192.0.2.10"], res
    assert res[0]["answers"][0]["ttl"] == 60 and 0 < res[1]["answers"][0]["ttl"] < 60, res
    assert res[2]["qd"][0][0] == "Api.Example.Com", res   # the client's spelling, from the cache too
    assert [a["type"] for a in res[5]["answers"]] == ["CNAME", "A"], res
    asked = sorted((u["name"], u["type"]) for u in up)
    assert asked == [("a.pkg.example.org", "A"), ("api.example.com", "A"), ("api.example.com", "AAAA")], up
    api = [l for l in lines if l["dns.question.name"] == "api.example.com" and l["dns.question.type"] == "A"]
    assert len(api) == 3, lines
    assert "sluice.dns_cached" not in api[0] and api[0]["sluice.upstream.ip"] == UPSTREAM, api
    for l in api[1:]:
        _common(l)
        assert l["sluice.dns_cached"] is True and "sluice.upstream.ip" not in l, l
        assert l["event.outcome"] == "success" and l["event.reason"] == "allowed", l
        assert l["dns.answers"][0]["data"] == "192.0.2.10" and l["dns.answers"][0]["ttl"] < 60, l
    assert [l["network.transport"] for l in api] == ["udp", "udp", "tcp"], api


def test_cache_honours_ttl_and_max_ttl(w):
    """A reply is kept no longer than its TTL (short.example.com: 1 s) nor
    than --cache-max-ttl (1 s here, api.example.com has 60 s): asked again
    after that, the name goes upstream again."""
    res, lines, up, _ = _ask(w, [
        {"name": "short.example.com"},
        {"name": "api.example.com"},
        {"name": "short.example.com"},
        {"name": "api.example.com"},
        {"sleep": 1.3},
        {"name": "short.example.com"},
        {"name": "api.example.com"},
    ], extra=["--resolver-arg", "--cache-max-ttl", "--resolver-arg", "1"])
    assert all(x["rcode"] == "NOERROR" and x["answers"] for x in res), res
    asked = [u["name"] for u in up]
    assert asked.count("short.example.com") == 2 and asked.count("api.example.com") == 2, up
    cached = [l.get("sluice.dns_cached", False) for l in lines]
    assert cached == [False, False, True, True, False, False], lines
    # no cache at all: every query goes upstream
    res, lines, up, _ = _ask(w, [{"name": "api.example.com"}] * 3,
                             extra=["--resolver-arg", "--cache-size", "--resolver-arg", "0"])
    assert len(up) == 3 and not any(l.get("sluice.dns_cached") for l in lines), (up, lines)


def test_cached_reply_never_bypasses_the_policy(w):
    """The cache holds the upstream's bytes, not a verdict: each use is
    decided and filtered under the policy in force.  The tunnelling limit
    still counts, a cached answer in a range only a cidr entry allows is
    filtered again, and a policy change (a new resolver: `sluice run` again)
    starts from an empty cache, so the name now denied is denied."""
    res, lines, up, _ = _ask(w, [
        {"name": "internal.pkg.example.org"},
        {"name": "internal.pkg.example.org"},
    ], allow_doc=False)
    assert [a["data"] for a in res[1]["answers"]] == ["10.9.1.1"], res
    assert len(up) == 1 and lines[1].get("sluice.dns_cached") is True, (up, lines)
    # same upstream, the cidr entry gone: the answer is filtered, cached or not
    nocidr = POLICY.replace("  - cidr: 10.9.0.0/16\n    ports: [443]\n", "  - cidr: 198.51.100.0/24\n    ports: [443]\n")
    assert nocidr != POLICY
    res, lines, up, _ = _ask(w, [{"name": "internal.pkg.example.org"}] * 2, policy=nocidr, allow_doc=False)
    assert [x["rcode"] for x in res] == ["NXDOMAIN"] * 2 and not any(x["answers"] for x in res), res
    assert [l["event.reason"] for l in lines] == ["private_answer"] * 2, lines
    assert lines[1].get("sluice.dns_cached") is True, lines
    assert lines[1]["sluice.dns_filtered_answers"][0]["sluice_filter"] == "private", lines
    # the name out of the policy: denied, nothing upstream, nothing from a cache
    denied = POLICY.replace("  - host: api.example.com\n    ports: [443]\n    why: exact name\n", "")
    assert denied != POLICY
    res, lines, up, _ = _ask(w, [{"name": "api.example.com"}] * 2, policy=denied)
    assert [x["rcode"] for x in res] == ["NXDOMAIN"] * 2 and up == [], (res, up)
    assert [l["event.reason"] for l in lines] == ["name_not_allowed"] * 2, lines
    assert not any(l.get("sluice.dns_cached") for l in lines), lines


def test_denied_name_never_reaches_upstream(w):
    res, lines, up, _ = _ask(w, [
        {"name": "denied.example.net"},
        {"name": "denied.example.net", "transport": "tcp"},
        {"name": "pkg.example.org"},                       # the wildcard's apex
        {"name": "api.example.com.denied.example.net"},
        {"name": "xapi.example.com"},
    ])
    assert [x["rcode"] for x in res] == ["NXDOMAIN"] * 5, res
    assert all(not x["answers"] for x in res), res
    assert up == [], "denied names reached the upstream: %r" % up
    for name in ("pkg.example.org", "xapi.example.com"):
        l = _line(lines, name)
        _common(l)
        assert l["event.outcome"] == "failure" and l["event.reason"] == "name_not_allowed", l
        assert l["sluice.verdict"] == "deny" and l["dns.response_code"] == "NXDOMAIN", l
        assert "sluice.upstream.ip" not in l and "rule.name" not in l, l
    assert len([x for x in lines if x["dns.question.name"] == "denied.example.net"]) == 2, lines


def test_a_burst_is_answered_and_logged_query_by_query(w):
    """200 UDP queries sent back to back from one socket (python, before it
    reads any answer) and six `dig`s at the same time reach the resolver
    together, so it reads, decides and answers them a batch at a time
    (udp_batch.c: recvmmsg, one write of the batch's lines, sendmmsg).
    Allowed names (forwarded, then from the cache), denied names and denied
    names over the client's --denied-rate are mixed (api.example.com asked
    once before the burst, so its queries in it are cache hits; the others
    go upstream, several at once, then hit): every answer is the
    right one for its query, each answered query has exactly one line, a
    rate-limited one none and is counted in dns-queries-dropped, and the
    sandbox's lines are numbered 0..N-1 with no gap, the resolver's in
    increasing order in the file."""
    allowed = [("api.example.com", "A", "192.0.2.10"), ("api.example.com", "AAAA", "2001:db8::10"),
               ("short.example.com", "A", "192.0.2.40"), ("b.pkg.example.org", "A", "192.0.2.30")]
    queries, want = [], {}
    for i in range(200):
        if i % 5 < 3:
            name, qtype, data = allowed[i % len(allowed)]
        else:
            name, qtype, data = "q%d.denied.example.net" % i, "A", None
        queries.append([name, qtype])
        want[i] = (name, qtype, data)
    digs = ["api.example.com", "b.pkg.example.org", "short.example.com"] * 2
    assert _upstream(w)
    events = os.path.join(w.tmp, "burst-events-%d.jsonl" % time.monotonic_ns())
    spec = w.write("burst-%d.json" % time.monotonic_ns(),
                   json.dumps({"queries": queries, "dig": digs, "wait": 4.0, "events": events,
                               "warm": [["api.example.com", "A"], ["api.example.com", "AAAA"]]}))
    argv = [W.SLUICE, "run", "--events", events, "--profile", "egress-only", "--netns", w.sbx_path,
            "--policy", w.write("burst-policy.yaml", POLICY), "--upstream-dns", UPSTREAM] + ALLOW_DOC + \
        ["--resolver-arg", "--denied-rate", "--resolver-arg", "5", "--",
         "python3", os.path.join(HERE, "dns_burst.py"), spec]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = W.Result(p.returncode, p.stdout, p.stderr, W.read_events(events))
    out = json.loads([x for x in r.stdout.splitlines() if x.startswith("{")][-1])
    assert out["late"] == [], "answers that came before their query's line: %r" % out["late"]
    got = {int(k): v for k, v in out["answers"].items()}
    for i, (name, qtype, data) in want.items():
        if data is not None:
            a = got.get(i)
            assert a and a["rcode"] == "NOERROR", (i, name, a)
            assert a["qd"][0][0] == name and [x["data"] for x in a["answers"]] == [data], (i, name, a)
        elif i in got:
            assert got[i]["rcode"] == "NXDOMAIN" and not got[i]["answers"], (i, name, got[i])
    denied = [i for i, v in want.items() if v[2] is None]
    answered_denied = [i for i in denied if i in got]
    dropped = [i for i in denied if i not in got]
    assert answered_denied and dropped, "the burst (10) and the rate (5/s) must answer some, drop some: %d of %d" % (
        len(answered_denied), len(denied))
    print("burst: %d allowed answered, %d denied answered, %d rate-limited; %d digs" % (
        len(want) - len(denied), len(answered_denied), len(dropped), len(out["dig"])))
    for d in out["dig"]:
        assert d["status"] == "NOERROR" and d["answers"], d
    ours = [e for e in r.events if e.get("event.action") == "dns-query" and e.get("source.port") == out["port"]]
    warm = [e for e in ours if int(e["dns.id"]) >= 1000]
    assert [e["dns.id"] for e in warm] == ["1000", "1001"], warm
    mine = [e for e in ours if int(e["dns.id"]) < 1000]
    by_id = {}
    for e in mine:
        assert e["dns.id"] not in by_id, "two lines for query %s: %r" % (e["dns.id"], e)
        by_id[e["dns.id"]] = e
    assert sorted(int(k) for k in by_id) == sorted(got), "one line per answered query, none for a dropped one"
    for i in got:
        e = by_id[str(i)]
        name, qtype, data = want[i]
        assert e["dns.question.name"] == name and e["dns.question.type"] == qtype, (i, e)
        assert e["network.transport"] == "udp", e
        if data is None:
            assert e["event.reason"] == "name_not_allowed" and e["dns.response_code"] == "NXDOMAIN", e
        else:
            assert e["event.reason"] == "allowed" and e["dns.response_code"] == "NOERROR", e
            assert [x["data"] for x in e["dns.answers"]] == [data], e
    # api.example.com was asked before the burst (TTL 60 s): every one of its queries is a cache hit
    assert all(e.get("sluice.dns_cached") for e in mine if e["dns.question.name"] == "api.example.com"), mine
    others = [e for e in r.events if e.get("event.action") == "dns-query" and e.get("source.port") != out["port"]]
    assert sorted(e["dns.question.name"] for e in others) == sorted(digs), others
    drops = [e for e in r.events if e.get("event.action") == "dns-queries-dropped"]
    assert sum(e["sluice.dns_dropped_rate_limited"] for e in drops) == len(dropped), (drops, len(dropped))
    assert sum(e["sluice.dns_dropped_socket_overflow"] for e in drops) == 0, drops
    seqs = sorted(e["event.sequence"] for e in r.events)
    assert seqs == list(range(len(seqs))), "event.sequence has a gap or a duplicate"
    rs = [e["event.sequence"] for e in r.events if e.get("event.dataset") == "sluice.resolver"]
    assert rs == sorted(rs), "the resolver's lines are out of order in the file"


def test_on_deny_refused(w):
    policy = POLICY.replace("allow:\n", "dns:\n  on_deny: refused\nallow:\n", 1)
    res, lines, up, _ = _ask(w, [{"name": "denied.example.net"}], policy=policy)
    assert res[0]["rcode"] == "REFUSED", res
    assert up == [], up
    assert _line(lines, "denied.example.net")["dns.response_code"] == "REFUSED", lines


def test_qtype_refusals(w):
    res, lines, up, _ = _ask(w, [
        {"name": "api.example.com", "type": "TXT"},
        {"name": "api.example.com", "type": "ANY"},
        {"name": "api.example.com", "type": "AXFR", "transport": "tcp"},
        {"name": "version.bind", "type": "TXT", "qclass": 3},
        {"name": "api.example.com", "qclass": 255},
    ])
    assert [x["rcode"] for x in res] == ["REFUSED"] * 5, res
    assert up == [], up
    want = [("api.example.com", "TXT", "qtype_not_allowed", "deny"),
            ("api.example.com", "ANY", "qtype_any", "refuse"),
            ("api.example.com", "AXFR", "zone_transfer", "refuse"),
            ("version.bind", "TXT", "class_chaos", "refuse")]
    for name, qtype, reason, verdict in want:
        l = [x for x in lines if x.get("dns.question.name") == name and x["dns.question.type"] == qtype
             and x["event.reason"] == reason]
        assert len(l) == 1, (name, qtype, reason, lines)
        _common(l[0])
        assert l[0]["sluice.verdict"] == verdict and l[0]["dns.response_code"] == "REFUSED", l
    assert any(x["event.reason"] == "class_not_in" for x in lines), lines


def test_malformed_packets(w):
    hdr = "12340100"  # ID, RD
    q = "03617069076578616d706c6503636f6d0000010001"  # api.example.com A IN
    res, lines, up, _ = _ask(w, [
        {"raw_hex": hdr + "0000" + "000000000000", "timeout": 2},          # QDCOUNT 0
        {"raw_hex": hdr + "0002" + "000000000000" + q + q, "timeout": 2},  # QDCOUNT 2
        {"raw_hex": hdr + "0001" + "000000000000" + q[:20], "timeout": 2},  # cut in the name
        {"raw_hex": "12342800" + "0001" + "000000000000" + q, "timeout": 2},  # opcode UPDATE
        {"raw_hex": "12348100" + "0001" + "000000000000" + q, "timeout": 1},  # QR=1: no answer
        {"raw_hex": "1234", "timeout": 1},                                   # no header: no answer
        {"raw_hex": hdr + "0000" + "000000000000", "transport": "tcp"},     # QDCOUNT 0 over TCP
    ])
    got = [x.get("rcode", x.get("error")) for x in res]
    assert got == ["FORMERR", "FORMERR", "FORMERR", "NOTIMP", "timeout", "timeout", "FORMERR"], res
    assert all(x.get("id") == 0x1234 for x in res if "rcode" in x), res
    assert up == [], up
    reasons = [x["event.reason"] for x in lines]
    for r in ("qdcount", "malformed", "opcode_not_query", "response_received", "malformed_header"):
        assert r in reasons, (r, lines)
    for x in lines:
        _common(x)
        assert x["event.outcome"] == "failure" and x["sluice.verdict"] == "refuse", x
    dropped = [x for x in lines if x["event.reason"] in ("response_received", "malformed_header")]
    assert dropped and all("dns.response_code" not in x for x in dropped), dropped


def test_malformed_queries_say_what_was_wrong(w):
    """reason `malformed` alone does not tell a fuzzer from a broken client:
    error.message names the cause (ldns's status, or the resolver's check)."""
    hdr = "12340100"
    q = "03617069076578616d706c6503636f6d0000010001"  # api.example.com A IN
    rr = "c00c" + "0001" + "0001" + "00000000" + "0004" + "c0000201"  # api.example.com A 192.0.2.1
    res, lines, up, _ = _ask(w, [
        {"raw_hex": hdr + "0001" + "000000000000" + q[:20], "timeout": 2},        # cut in the name
        {"raw_hex": hdr + "0001" + "0001" + "00000000" + q + rr, "timeout": 2},   # an answer in a query
        {"raw_hex": hdr + "0001" + "0000" + "0001" + "0000" + q + rr, "timeout": 2},  # authority record
    ])
    assert [x.get("rcode") for x in res] == ["FORMERR"] * 3, res
    assert up == [], up
    bad = [x for x in lines if x["event.reason"] == "malformed"]
    assert len(bad) == 3, lines
    msgs = sorted(x.get("error.message") for x in bad)
    for x in bad:
        _common(x)
        assert x["dns.response_code"] == "FORMERR" and x["sluice.verdict"] == "refuse", x
    assert "answer records in a query" in msgs and "authority records in a query" in msgs, msgs
    # ldns's own words (ldns_get_errorstr_by_id) for a name that runs past the end of the message
    assert "Label length overflow" in msgs, msgs
    # the other refusals carry none: their reason is the whole story
    assert all("error.message" not in x for x in lines if x["event.reason"] != "malformed"), lines


def test_the_server_the_client_asked_and_who_asked_are_on_the_line(w):
    """`dig @198.51.100.53` is redirected to the resolver: its line names the
    server dig asked (sluice.orig_dst.*, from the kernel's flow map: the
    egress backstop records a UDP query, sockops a TCP one) and the process
    that asked (process.*, user.id, sluice.cgroup_id), for UDP and TCP, IPv4
    and IPv6, connected (dig) and unconnected (sendto) sockets.  The asked
    servers exist nowhere: every query ends at the sandbox's resolver."""
    log = _upstream(w)
    mark = len(_received(log))
    steps = w.write("asked-%d.json" % time.monotonic_ns(), json.dumps([
        {"name": "api.example.com", "server": "203.0.113.9"},
        {"name": "api.example.com", "server": "2001:db8::99", "type": "AAAA"},
    ]))
    script = ("dig +short +tries=1 +time=5 @198.51.100.53 api.example.com A; "
              "dig +short +tcp +tries=1 +time=5 @198.51.100.54 b.pkg.example.org A; "
              "python3 %s %s" % (os.path.join(HERE, "dns_client.py"), steps))
    r = w.sluice_run(["sh", "-c", script], policy=POLICY, extra=["--upstream-dns", UPSTREAM] + ALLOW_DOC)
    assert r.rc == 0, r
    assert r.stdout.split()[:2] == ["192.0.2.10", "192.0.2.30"], r.stdout
    lines = [e for e in r.events if e.get("event.action") == "dns-query"]
    want = [("api.example.com", "A", "udp", "198.51.100.53", "dig"),
            ("b.pkg.example.org", "A", "tcp", "198.51.100.54", "dig"),
            ("api.example.com", "A", "udp", "203.0.113.9", "python3"),
            ("api.example.com", "AAAA", "udp", "2001:db8::99", "python3")]
    for name, qtype, transport, asked, comm in want:
        got = [e for e in lines if e.get("dns.question.name") == name and e.get("dns.question.type") == qtype
               and e.get("network.transport") == transport and e.get("sluice.orig_dst.ip") == asked]
        assert len(got) == 1, ("no line naming %s as the server asked" % asked, lines)
        e = got[0]
        _common(e)
        assert e["sluice.orig_dst.port"] == 53 and e["event.outcome"] == "success", e
        assert e["process.pid"] > 0 and e["user.id"] == "0" and e["sluice.cgroup_id"] > 0, e
        # dig's queries leave from its network threads (comm isc-net-0000 on BIND 9.18)
        assert e["process.name"] == comm or (comm == "dig" and e["process.name"].startswith("isc-")), e
    # and the sandbox's resolver answered them, through the upstream it was
    # given (the second A query for api.example.com from its cache)
    got = {(u["name"], u["type"], u["transport"]) for u in _received(log, mark)}
    assert got == {("api.example.com", "A", "udp"), ("b.pkg.example.org", "A", "tcp"),
                   ("api.example.com", "AAAA", "udp")}, got


def test_private_answers_filtered(w):
    # without the documentation-range exception: only the one public answer stays
    res, lines, up, _ = _ask(w, [
        {"name": "private.example.com"},
        {"name": "mixed.example.com"},
        {"name": "api.example.com"},
    ], allow_doc=False)
    assert res[0]["rcode"] == "NXDOMAIN" and res[0]["answers"] == [], res
    assert res[1]["rcode"] == "NOERROR" and [a["data"] for a in res[1]["answers"]] == ["93.184.216.34"], res
    assert res[2]["rcode"] == "NXDOMAIN", res   # 192.0.2.10 is a documentation address
    assert len(up) == 3, up                     # the names were allowed: they were asked
    l = _line(lines, "private.example.com")
    _common(l)
    assert l["event.reason"] == "private_answer" and l["sluice.verdict"] == "deny", l
    assert l["event.outcome"] == "failure" and l["dns.answers"] == [], l
    filt = {a["data"]: a["sluice_filter"] for a in l["sluice.dns_filtered_answers"]}
    assert filt == {"10.1.2.3": "private", "127.0.0.1": "loopback", "169.254.169.254": "metadata"}, l
    l = _line(lines, "mixed.example.com")
    assert l["event.reason"] == "allowed" and [a["data"] for a in l["dns.answers"]] == ["93.184.216.34"], l
    assert [a["data"] for a in l["sluice.dns_filtered_answers"]] == ["10.1.2.3"], l
    l = _line(lines, "api.example.com")
    assert l["sluice.dns_filtered_answers"][0]["sluice_filter"] == "documentation", l


def test_truncated_upstream_retried_over_tcp(w):
    res, lines, up, _ = _ask(w, [{"name": "tc.example.com"}])
    assert res[0]["rcode"] == "NOERROR" and res[0]["answers"], res
    assert [(u["name"], u["transport"]) for u in up] == [("tc.example.com", "udp"), ("tc.example.com", "tcp")], up
    l = _line(lines, "tc.example.com")
    assert l["sluice.upstream_transport"] == "tcp" and l["sluice.upstream_tries"] == 2, l


def test_audit_mode_forwards_and_logs_would_deny(w):
    # the resolver's own --mode: the kernel side stays in enforce mode here
    res, lines, up, _ = _ask(w, [{"name": "denied.example.net"}, {"name": "api.example.com", "type": "ANY"}],
                             extra=["--resolver-arg", "--mode", "--resolver-arg", "audit"])
    assert res[0]["rcode"] == "NOERROR" and res[0]["answers"], res
    assert res[1]["rcode"] == "REFUSED", res   # no policy could allow ANY: refused in audit too
    assert [u["name"] for u in up] == ["denied.example.net"], up
    l = _line(lines, "denied.example.net")
    _common(l, mode="audit")
    assert l["event.outcome"] == "unknown" and l["sluice.verdict"] == "would_deny", l
    assert l["event.reason"] == "name_not_allowed", l


def test_tunnel_suspect_flagged(w):
    label = "6e8f01a3c9b27d45e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3"
    res, lines, up, _ = _ask(w, [{"name": label + ".pkg.example.org"}, {"name": "a.pkg.example.org"}])
    l = _line(lines, label + ".pkg.example.org")
    assert l.get("sluice.dns_tunnel_suspect") is True and l["sluice.dns_tunnel_reason"] == "long_label", l
    assert "sluice.dns_tunnel_suspect" not in _line(lines, "a.pkg.example.org"), lines


def _resolver_pids(sandbox):
    """PIDs of sluice-resolver processes started for `sandbox` (by cmdline)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"sluice-resolver") and b"--sandbox" in argv:
            i = argv.index(b"--sandbox")
            if i + 1 < len(argv) and argv[i + 1] == sandbox.encode():
                pids.append(int(d))
    return pids


def test_killed_resolver_restarts_on_its_socket_and_the_port_stays_taken(w):
    """kill -9 the resolver of a `sluice run` sandbox: sluice run holds its
    sockets, so no other process can bind the port meanwhile (a squatter
    would get the sandbox's queries), and restarts it on them."""
    log = _upstream(w)
    name = "rsvkill%d" % (os.getpid() % 10000)
    phase1, go = os.path.join(w.tmp, name + ".p1"), os.path.join(w.tmp, name + ".go")
    steps = w.write(name + ".json", json.dumps([
        {"name": "api.example.com"},
        {"touch": phase1},
        {"wait": go, "timeout": 30},
        {"name": "api.example.com", "timeout": 2},
        {"name": "api.example.com", "transport": "tcp", "timeout": 2},
        {"name": "api.example.com", "server": "198.51.100.10", "timeout": 2},
    ]))
    out = {}

    def run():
        out["r"] = w.sluice_run(["python3", os.path.join(HERE, "dns_client.py"), steps], policy=POLICY,
                                extra=["--name", name, "--upstream-dns", UPSTREAM] + ALLOW_DOC, timeout=90)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 30
    while not os.path.exists(phase1) and time.time() < deadline:
        time.sleep(0.05)
    assert os.path.exists(phase1), "the client never got past its first query"
    pids = _resolver_pids(name)
    assert len(pids) == 1, pids
    ss = w.ns(w.sbx, "ss", "-Hulnp").stdout
    mine = [l for l in ss.splitlines() if "pid=%d," % pids[0] in l and "127.0.0.1:" in l]
    assert mine and '"sluice",' in mine[0], "sluice run does not hold the resolver's socket: %r" % ss
    port = int(mine[0].split()[3].rsplit(":", 1)[1])
    os.kill(pids[0], signal.SIGKILL)
    squat = ("import socket, errno\n"
             "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
             "try:\n    s.bind(('127.0.0.1', %d)); print('BOUND')\n"
             "except OSError as e:\n    print(errno.errorcode[e.errno])\n" % port)
    for _ in range(10):
        o = w.ns(w.sbx, "python3", "-c", squat, check=False)
        assert "BOUND" not in o.stdout, "the dead resolver's port was free for another process"
        time.sleep(0.05)
    assert "EADDRINUSE" in o.stdout, o
    open(go, "w").close()
    t.join(100)
    r = out["r"]
    res = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    assert len(res) == 4, r
    for x in res:
        assert x.get("rcode") == "NOERROR" and x["answers"], "not answered after the restart: %r" % res
    restarted = [e for e in r.events if e.get("event.action") == "resolver-restarted"]
    assert len(restarted) == 1, r.events
    assert len(_resolver_pids(name)) == 0
