"""docs/integrations/: the Filebeat + Elasticsearch ingest pipeline, Vector,
Fluent Bit and Splunk configurations, each checked against real lines of a
real run (kernel, proxy, resolver, lifecycle; ECS and OCSF): the files
parse, what they reference exists on the lines (or in docs/events.md),
their time formats read every line's time, their line limits hold the
longest line, and the flat ECS names expand into objects without a clash
(Elasticsearch's dot_expander and Filebeat's expand_keys refuse a key that
is both a value and an object).  The tools themselves do not run here (no
network, not installed): this is what can be checked offline.

The community ID the pipeline would compute (Elasticsearch's community_id
processor, the spec) is computed here from the spec's pseudo code, on the
line's own fields, and compared with the line's network.community_id."""
import base64
import calendar
import configparser
import datetime
import hashlib
import ipaddress
import json
import os
import re
import subprocess
import time

import yaml

import world as W
import test_events as TE

DIR = os.path.join(W.ROOT, "docs", "integrations")
LINES = {}


def sample(w):
    """Lines of one real run of each kind (cached for the file)."""
    if not LINES:
        path = os.path.join(w.tmp, "integrations-%d.jsonl" % time.monotonic_ns())
        e = TE.TP.env(w)
        cmd = ["sh", "-c",
               TE.CMD[2] + "; curl -sS -o /dev/null --max-time 10 --cacert %s https://api.example.com:%d/t"
               % (e.cert, TE.TP.TLS_PORT)]
        r = TE.run_raw(w, cmd, extra=["--label", "team=blue"], events=path)
        assert r.returncode == 0, r
        with open(path, "rb") as f:
            LINES["raw"] = f.read()
        LINES["ecs"] = W.read_events(path)
        o = subprocess.run([W.SLUICE, "events", "--format", "ocsf", "--file", path], capture_output=True, text=True)
        assert o.returncode == 0, o
        LINES["ocsf"] = [json.loads(l) for l in o.stdout.splitlines() if l.strip()]
        kinds = {l["event.dataset"] for l in LINES["ecs"]}
        assert {"sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"} <= kinds, kinds
    return LINES


def strptime_all(values, fmt):
    for v in values:
        datetime.datetime.strptime(v, fmt)


def expand(line):
    """Dotted keys into objects, as dot_expander / expand_keys do; a key
    that is both a value and a prefix of another is a clash."""
    out = {}
    for k, v in line.items():
        parts = k.split(".")
        o = out
        for p in parts[:-1]:
            assert not (p in o and not isinstance(o[p], dict)), "clash at %s in %s" % (k, line)
            o = o.setdefault(p, {})
        assert parts[-1] not in o, "clash at %s (an object there) in %s" % (k, line)
        o[parts[-1]] = v
    return out


def community_id(sip, sport, dip, dport, proto, seed=0):
    """Community ID v1 from the spec's pseudo code."""
    a, b = ipaddress.ip_address(sip).packed, ipaddress.ip_address(dip).packed
    if (a, sport) > (b, dport):
        a, b, sport, dport = b, a, dport, sport
    data = seed.to_bytes(2, "big") + a + b + bytes([proto, 0]) + sport.to_bytes(2, "big") + dport.to_bytes(2, "big")
    return "1:" + base64.b64encode(hashlib.sha1(data).digest()).decode()


def test_filebeat_and_the_ingest_pipeline(w):
    s = sample(w)
    fb = yaml.safe_load(open(os.path.join(DIR, "elastic", "filebeat.yml")))
    inp = fb["filebeat.inputs"][0]
    assert "/run/sluice/events.jsonl" in inp["paths"]
    nd = inp["parsers"][0]["ndjson"]
    assert nd["expand_keys"] is True and nd["overwrite_keys"] is True and nd["target"] == ""
    pipeline_name = fb["output.elasticsearch"]["pipeline"]
    pipe = json.load(open(os.path.join(DIR, "elastic", "sluice-pipeline.json")))
    fields = TE.documented_fields()
    # every field the pipeline reads is one the lines carry (docs/events.md)
    reads = set()
    for p in pipe["processors"]:
        (kind, conf), = p.items()
        for path in re.findall(r"ctx\.([a-z_@.?]+)", conf.get("if", "")):
            reads.add(path.replace("?", "").rstrip("."))
        for t in re.findall(r"\{\{\{([a-z_.@]+)\}\}\}", json.dumps(conf.get("value", ""))):
            if not t.startswith("_ingest"):
                reads.add(t)
        if kind == "date":
            reads.add(conf["field"])
    assert reads, pipe
    for r in reads:
        assert r in fields, "the pipeline reads %s, which no sluice line has (docs/events.md)" % r
    # the lines as the pipeline sees them
    ids = 0
    for line in s["ecs"]:
        doc = expand(line)
        datetime.datetime.fromisoformat(line["@timestamp"].replace("Z", "+00:00"))
        assert doc["event"]["dataset"].startswith("sluice.")
        if "source.ip" in line and "destination.ip" in line and "destination.port" in line:
            proto = {"tcp": 6, "udp": 17}[line["network.transport"]]
            want = community_id(line["source.ip"], line["source.port"], line["destination.ip"],
                                line["destination.port"], proto)
            assert line.get("network.community_id") == want, (want, line)
            ids += 1
    assert ids >= 2, "no line with a flow to check the community ID on"
    # the same pipeline name for every shipper
    v = yaml.safe_load(open(os.path.join(DIR, "vector.yaml")))
    fbit = yaml.safe_load(open(os.path.join(DIR, "fluent-bit.yaml")))
    es_out = [o for o in fbit["pipeline"]["outputs"] if o["name"] == "es"][0]
    assert pipeline_name == v["sinks"]["elasticsearch"]["pipeline"] == es_out["pipeline"] == "sluice-events"


def test_vector(w):
    s = sample(w)
    v = yaml.safe_load(open(os.path.join(DIR, "vector.yaml")))
    names = set(v["sources"]) | set(v["transforms"])
    for part in ("transforms", "sinks"):
        for name, conf in v[part].items():
            for i in conf["inputs"]:
                assert i in names, "%s %s reads %s, which is not defined" % (part, name, i)
    assert "/run/sluice/events.jsonl" in v["sources"]["sluice_events"]["include"]
    assert v["sources"]["sluice_events"]["max_line_bytes"] >= max(len(l) for l in s["raw"].split(b"\n"))
    vrl = v["transforms"]["sluice_parse"]["source"]
    fmt = re.search(r'format: "([^"]+)"', vrl).group(1)
    strptime_all([l["@timestamp"] for l in s["ecs"]], fmt.replace("%.6f", ".%f"))
    assert '."@timestamp"' in vrl, "VRL needs the quoted path for @timestamp"


def test_fluent_bit(w):
    s = sample(w)
    f = yaml.safe_load(open(os.path.join(DIR, "fluent-bit.yaml")))
    parsers = {p["name"]: p for p in f["parsers"]}
    tail = f["pipeline"]["inputs"][0]
    assert tail["name"] == "tail" and tail["parser"] in parsers
    assert "/run/sluice/events.jsonl" in tail["path"].split(",")
    p = parsers[tail["parser"]]
    assert p["format"] == "json" and p["time_key"] == "@timestamp"
    strptime_all([l[p["time_key"]] for l in s["ecs"]], p["time_format"].replace("%L", "%f"))
    size = int(tail["buffer_max_size"].rstrip("k")) * 1024
    assert size >= max(len(l) for l in s["raw"].split(b"\n"))
    for o in f["pipeline"]["outputs"]:
        assert re.fullmatch(o["match"].replace(".", r"\.").replace("*", ".*"), tail["tag"]), o


def test_splunk(w):
    s = sample(w)
    c = configparser.ConfigParser(interpolation=None, strict=True)
    c.optionxform = str
    c.read(os.path.join(DIR, "splunk", "props.conf"))
    ecs, ocsf = c["sluice:ecs"], c["sluice:ocsf"]
    raw = s["raw"]
    for st in (ecs, ocsf):
        assert st["SHOULD_LINEMERGE"] == "false" and st["INDEXED_EXTRACTIONS"] == "json"
        assert int(st["TRUNCATE"]) >= max(len(l) for l in raw.split(b"\n"))
    # LINE_BREAKER: one event per line, as written
    events = [e for e in re.split(ecs["LINE_BREAKER"].encode(), raw) if e and not re.fullmatch(rb"[\r\n]+", e)]
    assert len(events) == len(s["ecs"]), (len(events), len(s["ecs"]))
    # the time: ECS @timestamp, OCSF time (epoch ms)
    key = ecs["TIMESTAMP_FIELDS"]
    strptime_all([l[key] for l in s["ecs"]], ecs["TIME_FORMAT"].replace("%6N", "%f"))
    assert ocsf["TIMESTAMP_FIELDS"] == "time" and ocsf["TIME_FORMAT"] == "%s%3N"
    for e, o in zip(s["ecs"], s["ocsf"]):
        # integers only: ms = seconds * 1000 + the first three digits of the fraction
        whole, frac = e["@timestamp"].rstrip("Z").split(".")
        secs = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
        assert isinstance(o["time"], int) and o["time"] == secs * 1000 + int(frac[:3]), (e, o)
    inputs = configparser.ConfigParser(interpolation=None)
    inputs.optionxform = str
    inputs.read(os.path.join(DIR, "splunk", "inputs.conf"))
    assert "monitor:///run/sluice/events.jsonl" in inputs.sections()
    for sec in inputs.sections():
        assert inputs[sec]["sourcetype"] in c.sections(), sec
