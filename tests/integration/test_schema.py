"""Every sluice line the integration tests of this run read (world.SEEN:
every `sluice run --events` file of test_audit, test_daemon, test_events,
test_kernel, test_limits, test_proxy, test_resolver, ...), checked against
docs/events.md: each field documented with its ECS type, the required
fields present (test_events.check_lines).  Runs after the others (file
order); alone it has nothing to check and says so (skipped)."""
import json
import subprocess

import world as W
import test_events as TE

# OCSF (ocsf.h): each class's attributes a consumer may rely on
OCSF_BASE = {"class_uid", "category_uid", "activity_id", "type_uid", "severity_id", "time", "metadata"}
# the ECS fields ocsf.c maps to OCSF attributes; every other one must be under `unmapped`
# (labels.KEY, any KEY: metadata.labels, checked apart)
OCSF_MAPPED = {"@timestamp", "event.dataset", "event.outcome", "sluice.verdict", "network.type", "message",
               "event.id", "event.action", "event.sequence", "host.name", "host.id", "rule.ruleset", "rule.version",
               "rule.name", "event.reason", "process.pid", "process.name", "process.executable", "process.thread.id", "user.id",
               "user.name", "container.id", "container.name", "container.runtime", "event.duration",
               "source.ip", "source.port", "destination.ip", "destination.port", "destination.address",
               "url.domain", "network.transport", "tls.client.server_name", "tls.version", "tls.cipher",
               "source.bytes", "destination.bytes", "url.full", "http.request.method", "url.path", "url.port",
               "url.scheme", "http.request.bytes", "http.response.bytes", "http.response.status_code", "http.version",
               "dns.question.name", "dns.question.type", "dns.question.class", "dns.response_code", "dns.id",
               "dns.answers"}
OCSF_CLASS = {
    4001: ("dst_endpoint", "src_endpoint"),   # at least one
    4002: ("http_request",),
    4003: ("query",),
    6002: ("app",),
}


def test_every_line_of_the_run_matches_the_documented_schema(w):
    if len(W.SEEN) < 50:
        raise W.Skip("only %d lines read so far: run it after the other integration tests" % len(W.SEEN))
    kinds = TE.check_lines(W.SEEN)
    assert {"sluice.kernel", "sluice.lifecycle"} <= kinds, kinds


def test_every_line_of_the_run_converts_to_ocsf(w):
    """`sluice events --format ocsf` on every line the run read: one OCSF
    event each, of the class its dataset says, with the base event's
    required attributes, the class's own, and no ECS field lost (each is
    mapped or kept under `unmapped`)."""
    if len(W.SEEN) < 50:
        raise W.Skip("only %d lines read so far: run it after the other integration tests" % len(W.SEEN))
    # every line of the small datasets; of a flood's kernel lines, an even sample
    lines = [e for e in W.SEEN if e.get("event.dataset") != "sluice.kernel"][:20000]
    kernel = [e for e in W.SEEN if e.get("event.dataset") == "sluice.kernel"]
    lines += kernel[::max(1, len(kernel) // 20000)]
    src = w.write("seen.jsonl", "".join(json.dumps(e) + "\n" for e in lines))
    r = subprocess.run([W.SLUICE, "events", "--file", src, "--format", "ocsf"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and not r.stderr, r.stderr[-2000:]
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert len(out) == len(lines), (len(out), len(lines))
    want = {"sluice.kernel": {4001}, "sluice.proxy": {4001, 4002}, "sluice.resolver": {4003},
            "sluice.lifecycle": {6002}}
    classes = set()
    for ecs, o in zip(lines, out):
        assert OCSF_BASE <= set(o), (ecs, o)
        cls = o["class_uid"]
        classes.add(cls)
        assert cls in want[ecs["event.dataset"]], (ecs, o)
        assert o["category_uid"] == cls // 1000 and o["type_uid"] == cls * 100 + o["activity_id"], o
        assert o["metadata"]["version"] and o["metadata"]["product"]["name"] == "sluice", o
        assert any(k in o for k in OCSF_CLASS[cls]), (cls, o)
        assert o["time"] > 1.7e12, o   # ms since the epoch, from @timestamp
        if cls == 4003:
            assert "hostname" in o["query"], o
        if ecs.get("sluice.verdict") == "deny":
            assert o["action_id"] == 2 and o["disposition_id"] == 2, o
        # nothing of the ECS line is lost: what is not mapped is unmapped, as is
        for k, v in ecs.items():
            if k.startswith("labels."):   # labels.KEY -> metadata.labels ["KEY:VALUE"]
                assert "%s:%s" % (k[len("labels."):], v) in o["metadata"].get("labels", []), (k, o)
                assert k not in o["unmapped"], (k, o)
            elif k in o["unmapped"]:
                assert o["unmapped"][k] == v, (k, o)
            else:
                assert k in OCSF_MAPPED or o["unmapped"].get("sluice.truncated"), (k, ecs, o)
        assert len(json.dumps(o)) < 8192
    assert {4001, 6002} <= classes, classes
