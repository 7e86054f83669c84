"""One egress path: the proxy and resolver listen inside the sandbox's
network namespace but dial from another one (`--upstream-netns`), so a
sandbox without a network of its own (`sluice run --isolate-net`, a podman
`--network none` container) has exactly one way out: sluice's proxy.  The
test world's sandbox netns (slcNNNs, 192.0.2.2) stands in for the host's
network; the origin and the DNS server run in the world netns, as usual.
"""
import json
import os
import subprocess
import time

import world as W
import test_daemon as TD
import test_containers as TC

HERE = os.path.dirname(os.path.abspath(__file__))
HTTP_PORT = 8081

POLICY = """\
version: 1
name: one-way
allow:
  - host: api.example.com
    ports: [8081]
    why: the origin, through the proxy only
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: allowed directly, but a sandbox without a network has no route to it
"""

# a plain HTTP request the kernel redirects to the proxy (no DNS needed in the sandbox)
REQ = "printf 'GET /pub/%s HTTP/1.0\\r\\nHost: %s:8081\\r\\n\\r\\n' | nc -w 3 192.0.2.10 8081"

_servers = {}


def servers(w):
    """The origin (HTTP :8081) and a DNS server (192.0.2.53) in the world, once per world."""
    if _servers.get("w") is not w:
        log = os.path.join(w.tmp, "up-origin.jsonl")
        w.start_server([os.path.join(HERE, "origin_server.py"), "--http", str(HTTP_PORT), "--log", log],
                       name="up-origin")
        w.start_server([os.path.join(HERE, "dns_server.py"), "--listen", "192.0.2.53:53",
                        "--zone", "api.example.com=192.0.2.10", "--zone", "denied.example.org=192.0.2.20",
                        "--log", os.path.join(w.tmp, "up-dns.jsonl")], name="up-dns")
        _servers.update(w=w, log=log)
    return _servers["log"]


def requests(log):
    try:
        with open(log) as f:
            return [json.loads(l) for l in f if l.strip() and json.loads(l).get("event") == "request"]
    except FileNotFoundError:
        return []


HATCH = ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", "192.0.2.0/24"]


def test_run_isolate_net_has_one_way_out(w):
    log = servers(w)
    before = len(requests(log))
    state = set(W.leftovers())   # a dead run's, left by whoever used this machine before
    script = ("echo ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,); "
              "curl -sS -o /dev/null -w 'allowed=%%{http_code}\\n' --max-time 10 --resolve api.example.com:8081:192.0.2.10 "
              "http://api.example.com:8081/pub/run; "
              "curl -sS -o /dev/null -w 'denied=%%{http_code}\\n' --max-time 10 --resolve denied.example.org:8081:192.0.2.20 "
              "http://denied.example.org:8081/pub/no; "
              "%s tcp 192.0.2.10 5432; %s tcp 192.0.2.10 9000" % (W.PROBE, W.PROBE))
    r = w.sluice_run(["sh", "-c", script], policy=POLICY, netns=False,
                     extra=["--isolate-net", "--upstream-netns", w.sbx_path, "--upstream-dns", "192.0.2.53"] + HATCH)
    assert r.rc == 0 or r.rc == 1, r
    out = r.stdout.splitlines()
    assert "ifaces=lo," in out, r   # loopback only
    assert "allowed=200" in out, r
    assert "denied=403" in out, r
    probes = [json.loads(l) for l in out if l.startswith("{")]
    # 5432 is allowed directly, but there is no route: the proxy is the only way out
    assert probes[0]["result"] == "ENETUNREACH", probes
    assert probes[1]["result"] == "EPERM", probes
    got = requests(log)[before:]
    assert [g["path"] for g in got] == ["/pub/run"], got
    assert got[0]["peer"].rsplit(":", 1)[0] in ("192.0.2.2", "::ffff:192.0.2.2"), got   # dialled from the upstream netns
    assert set(W.leftovers()) <= state, (W.leftovers(), state)   # the upstream netns's too


def test_run_isolate_net_refuses_netns_too(w):
    r = w.sluice_run(["true"], extra=["--isolate-net"])   # sluice_run passes --netns
    assert r.rc == 2 and "not with --netns" in r.stderr, r
    r = w.sluice_run(["true"], netns=False, extra=["--upstream-netns", "/nonexistent/ns"])
    assert r.rc == 2 and "--upstream-netns" in r.stderr, r


def _podman_none(w, name, cmd):
    return subprocess.run(["podman", "run", "-d", "--name", name, "--runtime", "runc", "--cgroup-manager=cgroupfs",
                           "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                           "--rootfs", TD._rootfs(w), "/bin/sh", "-c", cmd],
                          capture_output=True, text=True, timeout=120)


def test_attach_network_none_container_reaches_the_origin_only_through_the_proxy(w):
    TC.need_podman()
    log = servers(w)
    d = TD.Daemon(w)
    name = "slcnone%d" % os.getpid()
    try:
        r = _podman_none(w, name, "sleep 600")
        if r.returncode != 0:
            raise W.Skip("podman cannot run containers here: " + r.stderr.strip()[-300:])

        def ex(cmd):
            return subprocess.run(["podman", "exec", name, "sh", "-c", cmd], capture_output=True, text=True, timeout=60)
        pol = w.write("none.yaml", POLICY)
        r = d.ctl("attach", "--policy", pol, "--container", name, "--upstream-netns", w.sbx_path)
        assert r.returncode == 0, r
        assert "upstream    " + w.sbx_path in r.stdout or "upstream" in r.stdout, r.stdout
        st = d.status()[name]
        assert st["upstream_netns"], st
        before = len(requests(log))
        r = ex(REQ % ("ok", "api.example.com"))
        assert "200" in r.stdout.splitlines()[0], r
        r = ex(REQ % ("no", "denied.example.org"))
        assert "403" in r.stdout, r
        r = ex("echo hi | nc -w 2 192.0.2.10 9000")
        assert "Operation not permitted" in r.stderr, r
        got = requests(log)[before:]
        assert [g["path"] for g in got] == ["/pub/ok"], got
        assert got[0]["peer"].rsplit(":", 1)[0] in ("192.0.2.2", "::ffff:192.0.2.2"), got
        # a restarted daemon re-adopts it with the same upstream
        d.kill9()
        d.start()
        assert d.status()[name]["upstream_netns"] == st["upstream_netns"]
        r = ex(REQ % ("again", "api.example.com"))
        assert "200" in r.stdout.splitlines()[0], r
        got = requests(log)[before:]
        assert got[-1]["path"] == "/pub/again" and got[-1]["peer"].rsplit(":", 1)[0].endswith("192.0.2.2"), got
        W.SEEN.extend(d.events_of(name))
        assert d.ctl("detach", name).returncode == 0
        # without sluice the container has no way out at all
        r = ex(REQ % ("after", "api.example.com"))
        assert "200" not in r.stdout, r
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name], capture_output=True, timeout=120)
        d.close()


def test_hook_upstream_netns_for_a_network_none_container(w):
    """The admin's hook configuration (--upstream-netns in hooks.d) gives a
    `--network none` container its one way out from its first instruction."""
    TC.need_podman()
    log = servers(w)
    h = TC.Hooked(w, extra=["--upstream-netns", w.sbx_path])
    try:
        with open(os.path.join(h.poldir, "oneway.yaml"), "w") as f:
            f.write(POLICY)
        before = len(requests(log))
        r, cid = h.run("up", {"io.sluice.policy": "oneway"}, network="none",
                       cmd=(REQ % ("hook", "api.example.com")) + "; echo hi | nc -w 2 192.0.2.10 9000; echo rc=$?")
        assert r.returncode == 0, r
        assert "200" in r.stdout.splitlines()[0] and "rc=1" in r.stdout, r
        got = requests(log)[before:]
        assert [g["path"] for g in got] == ["/pub/hook"], got
        assert TC.wait_gone(h.d, cid[:12])
    finally:
        h.close()


def test_detach_force_releases_the_upstream_netns_too(w):
    d = TD.Daemon(w)
    name = "updetach%d" % os.getpid()
    a = TD.Workload(w, name)
    try:
        r = d.ctl("attach", "--policy", w.write("upf.yaml", POLICY), "--cgroup", a.cg, "--netns", w.sbx_path,
                  "--name", name, "--upstream-netns", w.sbx_path)
        assert r.returncode == 0, r
        kept = os.path.join(d.state, "netns", name + ".upstream")
        assert subprocess.run(["mountpoint", "-q", kept]).returncode == 0
        d.kill9()
        r = d.ctl("detach", "--force", "--state-dir", d.state, name)
        assert r.returncode == 0, r
        assert kept in r.stdout and not os.path.exists(kept), r.stdout
        assert not os.path.exists("/sys/fs/bpf/sluice/" + name)
    finally:
        a.close()
        d.close()


def test_hook_container_fields_on_proxy_and_resolver_lines(w):
    """The proxy's and the resolver's lines of a hooked container carry its
    container.id, .name and .runtime, as the daemon's own lines do."""
    TC.need_podman()
    servers(w)
    h = TC.Hooked(w)
    name = "ctrf-%d" % os.getpid()
    try:
        with open(os.path.join(h.poldir, "oneway.yaml"), "w") as f:
            f.write(POLICY)
        r, cid = h.run("fields", {"io.sluice.policy": "oneway", "io.sluice.name": name},
                       cmd=(REQ % ("fields", "api.example.com")) + "; busybox nslookup api.example.com 192.0.2.53")
        assert r.returncode == 0, r
        assert "200" in r.stdout.splitlines()[0], r
        assert cid and len(cid) == 64, cid
        ev = h.d.events_of(name)
        want = {"container.id": cid, "container.name": name, "container.runtime": "podman"}
        for ds in ("sluice.proxy", "sluice.resolver"):
            lines = [e for e in ev if e.get("event.dataset") == ds]
            assert lines, (ds, ev)
            for e in lines:
                assert {k: e.get(k) for k in want} == want, (ds, e)
        assert [e for e in ev if e.get("event.action") == "proxy-http"
                and e.get("url.full", "").endswith("/pub/fields")], ev
        assert [e for e in ev if e.get("event.action") == "dns-query"
                and e.get("dns.question.name") == "api.example.com"], ev
        W.SEEN.extend(ev)
    finally:
        h.close()
