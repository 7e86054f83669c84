"""`sluice daemon --metrics`: the Prometheus endpoint a monitoring team
scrapes.  Its numbers must be the ones the kernel and the event stream say
(a real denial shows up under its reason), the text must parse as the
exposition format, and a bad or taken address must stop the start."""
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

import world as W
from test_daemon import POLICY_A, Daemon, Workload
import test_events as TE

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\d+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def parse(text):
    """The text exposition format 0.0.4, strictly: every sample's family
    announced (HELP and TYPE) before it; returns {(name, labels): value}."""
    types, out = {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            assert typ in ("counter", "gauge") and name not in types, line
            types[name] = typ
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        assert m.group(1) in types, "sample before its TYPE: %r" % line
        labels = tuple(sorted((k, v) for k, v, _ in LABEL.findall(m.group(3) or "")))
        assert (m.group(1), labels) not in out, "duplicate sample: %r" % line
        out[(m.group(1), labels)] = int(m.group(4))
    return out


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def scrape(port, path="/metrics", method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
        return r.read().decode()


def test_metrics_count_what_the_kernel_and_the_events_say(w):
    port = free_port()
    d = Daemon(w, ["--metrics", "127.0.0.1:%d" % port])
    a = Workload(w, "metrics")
    try:
        pol = w.write("m.yaml", POLICY_A)
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", "metrics")
        assert r.returncode == 0, r
        for _ in range(3):
            assert a.probe("tcp", "192.0.2.10", 8080) == "EPERM"
        assert a.probe("tcp", "192.0.2.10", 5432) == "ok"
        time.sleep(0.4)  # the daemon drains ring buffers every 100 ms
        m = parse(scrape(port))
        st = d.status()["metrics"]
        assert value(m, "sluice_sandboxes") == 1, m
        assert value(m, "sluice_sandbox_info", sandbox="metrics", policy_name="daemon-a",
                     policy_sha256=st["policy_sha256"], mode="enforce") == 1, m
        # the kernel's counters, as status reads them
        assert value(m, "sluice_kernel_verdicts_total", sandbox="metrics", verdict="denied") == st["denied"] >= 3, (m, st)
        assert value(m, "sluice_kernel_verdicts_total", sandbox="metrics", verdict="allowed") == st["allowed"] >= 1
        # the denials by reason: as many as the stream has lines for (the canary's apart)
        lines = [e for e in d.events_of("metrics") if e.get("event.action") == "egress-denied"
                 and e.get("event.reason") == "tcp_port_not_allowed" and e.get("destination.port") == 8080]
        got = value(m, "sluice_denial_events_total", sandbox="metrics", reason="tcp_port_not_allowed", verdict="deny")
        assert got == len(lines) >= 3, (got, len(lines))
        assert value(m, "sluice_kernel_events_lost_total", sandbox="metrics") == 0
        # every record read: nothing of the sandbox's left in the shared ring
        assert value(m, "sluice_event_ring_queued_bytes", sandbox="metrics") == 0, m
        assert value(m, "sluice_kernel_events_orphaned_total") == 0, m
        assert value(m, "sluice_child_up", sandbox="metrics", child="proxy") == 1, m
        assert value(m, "sluice_child_up", sandbox="metrics", child="resolver") == 1, m
        ver = subprocess.run([W.SLUICE, "-V"], capture_output=True, text=True).stdout.split()[1].lstrip("v")
        assert value(m, "sluice_build_info", version=ver) == 1, m

        # a refused reload: counted, and a line in the sandbox's stream
        bad = w.write("bad.yaml", "version: 1\nname: broken\nallow:\n  - cidr: 999.0.0.1/32\n")
        assert d.ctl("reload", "metrics", "--policy", bad).returncode != 0
        ok = w.write("ok.yaml", POLICY_A.replace("daemon-a", "daemon-a2"))
        assert d.ctl("reload", "metrics", "--policy", ok).returncode == 0
        m = parse(scrape(port))
        assert value(m, "sluice_reloads_total", sandbox="metrics", result="refused") == 1, m
        assert value(m, "sluice_reloads_total", sandbox="metrics", result="ok") == 1, m
        refused = [e for e in d.events_of("metrics") if e.get("message", "").startswith("sandbox metrics: reload refused")]
        assert len(refused) == 1 and "bad.yaml" in refused[0]["message"], refused

        # a proxy killed is restarted and counted
        pid = d.status()["metrics"]["proxy_pid"]
        subprocess.run(["kill", "-9", str(pid)])
        deadline = time.time() + 10
        while value(parse(scrape(port)), "sluice_child_restarts_total", sandbox="metrics", child="proxy") != 1:
            assert time.time() < deadline, scrape(port)
            time.sleep(0.1)

        # only GET/HEAD /metrics
        assert scrape(port, method="HEAD") == ""
        for path, method, code in (("/", "GET", 404), ("/metrics/x", "GET", 404), ("/metrics", "DELETE", 405)):
            try:
                scrape(port, path, method)
                raise AssertionError("%s %s answered" % (method, path))
            except urllib.error.HTTPError as e:
                assert e.code == code, (path, method, e.code)
    finally:
        a.close()
        d.close()
    # the daemon stopped: the port is closed with it
    s = socket.socket()
    try:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        s.close()


def test_metrics_bad_or_taken_address_refuses_the_start(w):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        for addr, says in (("localhost:9464", "not a numeric"), ("127.0.0.1:0", "port must be"),
                           ("127.0.0.1", "want IP:PORT"), ("[::1:9464", "want [IPv6]:PORT"),
                           ("127.0.0.1:%d" % taken.getsockname()[1], "Address already in use")):
            state = "%s/state-bad-%d" % (w.tmp, time.monotonic_ns())
            r = subprocess.run([W.SLUICE, "daemon", "--state-dir", state, "--metrics", addr],
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 2 and says in r.stderr, (addr, r)
            assert not os.path.exists(state + "/control.sock"), addr
    finally:
        taken.close()


def test_metrics_count_what_the_proxy_and_resolver_logged(w):
    """The children's counts (their shared page, docs/daemon.md): proxy
    requests by verdict, DNS queries by verdict and response code, lines
    by dataset, each equal to the lines of the sandbox in the events file,
    also across a daemon restart (the counts live with the sandbox)."""
    port = free_port()
    name = "mchild-%d" % os.getpid()
    d = Daemon(w, ["--metrics", "127.0.0.1:%d" % port])
    a = Workload(w, "mchild")
    try:
        pol = w.write("mchild.yaml", POLICY_A)
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r

        def traffic():
            # a proxied port, a Host no entry allows: the proxy's 403
            a.run("curl", "-sS", "-o", "/dev/null", "--max-time", "10", "--resolve",
                  "denied.example.org:443:192.0.2.10", "http://denied.example.org:443/")
            a.run(W.PROBE, "dns", "192.0.2.53", "nope.example.org")       # denied by the resolver
            a.run(W.PROBE, "dns", "192.0.2.53", "nope2.example.org")
            assert a.probe("tcp", "192.0.2.10", 8080) == "EPERM"

        def agree():
            lines = d.events_of(name)
            m = parse(scrape(port))
            want = {}
            for e in lines:
                ds = e["event.dataset"]
                want[("sluice_event_lines_total", ds)] = want.get(("sluice_event_lines_total", ds), 0) + 1
            for ds in ("sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"):
                if value(m, "sluice_event_lines_total", sandbox=name, dataset=ds) != \
                        want.get(("sluice_event_lines_total", ds), 0):
                    return None
            return lines, m

        for round_ in (1, 2):
            traffic()
            got = []
            TE.wait_for(lambda: got.append(agree()) or got[-1] is not None, "the metrics to match the lines")
            lines, m = got[-1]
            proxy = [e for e in lines if e["event.dataset"] == "sluice.proxy"]
            dns = [e for e in lines if e.get("event.action") == "dns-query"]
            assert sum(e["sluice.verdict"] == "deny" for e in proxy) >= round_, proxy
            for v in ("allow", "deny", "would_deny"):
                assert value(m, "sluice_proxy_requests_total", sandbox=name, verdict=v) == \
                    sum(e["sluice.verdict"] == v for e in proxy), (v, m)
            assert sum(e["sluice.verdict"] == "deny" for e in dns) >= 2 * round_, dns
            for v in ("allow", "deny", "would_deny", "refuse"):
                assert value(m, "sluice_dns_queries_total", sandbox=name, verdict=v) == \
                    sum(e["sluice.verdict"] == v for e in dns), (v, m)
            for rc in ("NOERROR", "NXDOMAIN", "REFUSED", "SERVFAIL"):
                assert value(m, "sluice_dns_responses_total", sandbox=name, rcode=rc) == \
                    sum(e.get("dns.response_code") == rc for e in dns), (rc, m)
            assert value(m, "sluice_dns_dropped_total", sandbox=name, reason="rate_limited") == 0
            assert value(m, "sluice_event_writer_lines_lost_total", sandbox=name, dataset="sluice.proxy") == 0
            if round_ == 1:
                d.kill9()
                d.start()
                TE.wait_for(lambda: any(e.get("event.action") == "sandbox-adopt" for e in d.events_of(name)),
                            "sandbox-adopt")
    finally:
        a.close()
        d.close()
