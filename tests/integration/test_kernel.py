"""Kernel enforcement: the table of attempts a sandboxed program can make,
each with the verdict the kernel must give and the event it must log.

Every case runs the probe (tests/tools/probe.c) under `sluice run` in the
sandbox netns of the test world, against the world's echo servers, and
checks three things: the probe's result (ok / EPERM ...), what the server
received (nothing, for a denial), and the events (exactly one per denial,
with the right fields).
"""
import json
import os
import shutil
import signal
import subprocess
import time

import world as W

POLICY = """\
version: 1
name: kernel-table
allow:
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: database (v4)
  - cidr: 2001:db8::10/128
    ports: [5432]
    protocol: tcp
    why: database (v6)
  - cidr: 198.51.100.0/24
    ports: [9999]
    protocol: udp
    why: a UDP service
  - host: api.example.com
    ports: [443]
    why: a proxied API
"""

# (name, probe args, extra sluice args, expected result, expected denial
#  (reason, hook, destination.ip, destination.port, transport) or None,
#  port the server must (ok) or must not (denied) see, proto)
CASES = [
    ("tcp v4 allowed cidr+port", ["tcp", "192.0.2.10", 5432], [], "ok", None, 5432, "tcp"),
    ("tcp v4 same host other port", ["tcp", "192.0.2.10", 8080], [], "EPERM",
     ("tcp_port_not_allowed", "connect4", "192.0.2.10", 8080, "tcp"), 8080, "tcp"),
    ("tcp v4 other host", ["tcp", "198.51.100.10", 5432], [], "EPERM",
     ("tcp_port_not_allowed", "connect4", "198.51.100.10", 5432, "tcp"), 5432, "tcp"),
    ("tcp v6 allowed cidr+port", ["tcp", "2001:db8::10", 5432], [], "ok", None, 5432, "tcp"),
    ("tcp v6 same host other port", ["tcp", "2001:db8::10", 8080], [], "EPERM",
     ("tcp_port_not_allowed", "connect6", "2001:db8::10", 8080, "tcp"), 8080, "tcp"),
    ("tcp v4-mapped allowed", ["tcp", "::ffff:192.0.2.10", 5432], [], "ok", None, 5432, "tcp"),
    ("tcp v4-mapped denied gets the v4 verdict", ["tcp", "::ffff:192.0.2.10", 8080], [], "EPERM",
     ("tcp_port_not_allowed", "connect6", "192.0.2.10", 8080, "tcp"), 8080, "tcp"),
    ("udp sendto allowed cidr", ["udp", "198.51.100.10", 9999], [], "ok", None, 9999, "udp"),
    ("udp sendto without connect denied", ["udp", "192.0.2.10", 9999], [], "EPERM",
     ("udp_not_allowed", "sendmsg4", "192.0.2.10", 9999, "udp"), 9999, "udp"),
    ("udp v6 sendto denied", ["udp", "2001:db8::10", 9999], [], "EPERM",
     ("udp_not_allowed", "sendmsg6", "2001:db8::10", 9999, "udp"), 9999, "udp"),
    ("udp connect denied", ["udp-connected", "192.0.2.10", 9999], [], "EPERM",
     ("udp_not_allowed", "connect4", "192.0.2.10", 9999, "udp"), 9999, "udp"),
    ("connected udp then sendto elsewhere", ["udp-connect-sendto", "198.51.100.10", 9999, "192.0.2.10", 9999], [],
     "EPERM", ("udp_not_allowed", "sendmsg4", "192.0.2.10", 9999, "udp"), None, None),
    ("sendmmsg denied", ["sendmmsg", "192.0.2.10", 9999, 3], [], "EPERM",
     ("udp_not_allowed", "sendmsg4", "192.0.2.10", 9999, "udp"), 9999, "udp"),
    ("sendmmsg allowed", ["sendmmsg", "198.51.100.10", 9999, 3], [], "ok", None, 9999, "udp"),
    ("quic-like udp 443 denied", ["udp", "192.0.2.10", 443], [], "EPERM",
     ("udp_not_allowed", "sendmsg4", "192.0.2.10", 443, "udp"), None, None),
    ("tcp fast open denied", ["tcp-fastopen", "192.0.2.10", 8080], [], "EPERM",
     ("tcp_port_not_allowed", "connect4", "192.0.2.10", 8080, "tcp"), 8080, "tcp"),
    ("tcp fast open allowed", ["tcp-fastopen", "192.0.2.10", 5432], [], "ok", None, 5432, "tcp"),
    # --allow-io-uring: where the BPF LSM does not load, the seccomp family filter refuses io_uring
    ("io_uring connect denied", ["io-uring-connect", "192.0.2.10", 8080], ["--allow-io-uring"], "EPERM",
     ("tcp_port_not_allowed", "connect4", "192.0.2.10", 8080, "tcp"), 8080, "tcp"),
    ("io_uring connect allowed", ["io-uring-connect", "192.0.2.10", 5432], ["--allow-io-uring"], "ok", None, 5432,
     "tcp"),
    ("ping socket refused", ["ping", "192.0.2.10"], [], "EPERM",
     ("icmp_socket", "sock_create", None, None, "icmp"), None, None),
    ("raw socket refused by the kernel hook (caps kept)", ["raw", "192.0.2.10"], ["--keep-caps"], "EPERM",
     ("raw_socket", "sock_create", None, None, "icmp"), None, None),
    ("thread denied", ["thread-tcp", "192.0.2.10", 8080], [], "EPERM",
     ("tcp_port_not_allowed", "connect4", "192.0.2.10", 8080, "tcp"), 8080, "tcp"),
    ("child process denied", ["child-tcp", "192.0.2.10", 8080], [], "EPERM",
     ("tcp_port_not_allowed", "connect4", "192.0.2.10", 8080, "tcp"), 8080, "tcp"),
    ("child process allowed", ["child-tcp", "192.0.2.10", 5432], [], "ok", None, 5432, "tcp"),
    ("dns without a resolver fails closed", ["dns", "192.0.2.53", "api.example.com"], ["--no-resolver"], "EPERM",
     ("dns_no_resolver", "sendmsg4", "192.0.2.53", 53, "udp"), None, None),
    ("proxied port without a proxy fails closed", ["tcp", "192.0.2.10", 443], ["--no-proxy"], "EPERM",
     ("no_proxy", "connect4", "192.0.2.10", 443, "tcp"), 443, "tcp"),
]


def _check_case(w, name, args, extra, want, denial, port, proto, policy=POLICY):
    if args[0] == "ping":
        # let the kernel allow ping sockets for root, so that only the hook refuses
        w.ns(w.sbx, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647")
    mark = w.mark()
    r = w.probe(*args, policy=policy, extra=extra)
    got = r.probe()
    if got["result"] == "ENOSYS" and args[0] == "io-uring-connect":
        raise W.Skip("io_uring not available on this kernel")
    assert got["result"] == want, "%s: want %s, got %s (%r)" % (name, want, got, r)
    time.sleep(0.05)
    arrived = w.arrived_since(mark, port=port, proto=proto) if port else []
    if want == "ok":
        if port:
            assert arrived, "%s: allowed, but the server saw nothing" % name
        assert not r.denials(), "%s: allowed, but events: %r" % (name, r.denials())
    else:
        assert not arrived, "%s: denied, but the server received %r" % (name, arrived)
    if denial:
        ev = r.denials()
        assert len(ev) == 1, "%s: want exactly one denial event, got %r" % (name, ev)
        e = ev[0]
        reason, hook, ip, dport, transport = denial
        assert e["event.reason"] == reason, (name, e)
        assert e["sluice.hook"] == hook, (name, e)
        assert e["event.outcome"] == "failure" and e["sluice.verdict"] == "deny", (name, e)
        assert e["network.transport"] == transport, (name, e)
        if ip:
            assert e["destination.ip"] == ip and e["destination.port"] == dport, (name, e)
            assert e["network.type"] == ("ipv6" if ":" in ip else "ipv4"), (name, e)
        assert e["process.pid"] > 0 and e["process.name"], (name, e)
        assert e["user.id"] == "0", (name, e)
        assert e["sluice.cgroup_id"] > 0 and e["sluice.sandbox"], (name, e)
        assert len(e["sluice.policy_sha256"]) == 64 and e["rule.version"] == e["sluice.policy_sha256"], e
        for k in ("@timestamp", "event.action", "sluice.seq", "sluice.mode"):
            assert k in e, (name, k, e)


def _make(case):
    def t(w):
        _check_case(w, *case)
    t.__name__ = "test_" + case[0].replace(" ", "_")
    return t


for _c in CASES:
    globals()["test_table_" + _c[0].replace(" ", "_").replace("-", "_").replace("+", "_")] = _make(_c)


def test_empty_policy_denies_everything(w):
    r = w.probe("tcp", "192.0.2.10", 5432)  # built-in default
    assert r.probe()["result"] == "EPERM", r
    assert [e["event.reason"] for e in r.denials()] == ["tcp_port_not_allowed"], r
    assert all(e["sluice.policy_name"] == "default-deny" for e in r.events), r.events


def test_canary_and_lifecycle_lines(w):
    r = w.sluice_run(["true"], policy=POLICY)
    assert r.rc == 0, r
    actions = [e["event.action"] for e in r.events]
    assert actions.count("canary-denied") == W.canary_count(r.events), actions
    assert "sandbox-start" in actions and actions[-1] == "sandbox-stop", actions
    assert r.denials() == [], r.events


def test_exit_status_is_the_commands(w):
    r = w.sluice_run(["sh", "-c", "exit 7"])
    assert r.rc == 7, r
    r = w.sluice_run(["sh", "-c", "kill -9 $$"])
    assert r.rc == 128 + 9, r


def test_sequence_numbers_have_no_gaps(w):
    r = w.sluice_run(["sh", "-c", "for i in 1 2 3 4 5; do %s tcp 192.0.2.10 8080; done" % W.PROBE])
    seqs = [e["sluice.seq"] for e in r.events if "sluice.seq" in e]
    assert seqs == list(range(len(seqs))) and len(seqs) == W.canary_count(r.events) + 5, seqs


def test_caps_dropped_by_default(w):
    # without --keep-caps the raw socket fails on the missing capability
    r = w.probe("raw", "192.0.2.10")
    assert r.probe()["result"] == "EPERM", r
    r = w.sluice_run(["sh", "-c", "grep CapEff /proc/self/status"])
    eff = int(r.stdout.split()[1], 16)
    for cap in (12, 13, 21, 39):  # NET_ADMIN, NET_RAW, SYS_ADMIN, BPF
        assert not eff & (1 << cap), (cap, r.stdout)


def test_cgroup_escape_is_out_of_reach(w):
    # the sandbox has its own cgroup namespace: moving itself to the root
    # cgroup of the hierarchy fails even for root
    cg2 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
    mark = w.mark()
    r = w.sluice_run(["sh", "-c", "echo $$ > %s/cgroup.procs; echo rc=$?; %s tcp 192.0.2.10 8080" % (cg2, W.PROBE)])
    assert r.probe()["result"] == "EPERM", r
    assert not w.arrived_since(mark, port=8080)


def test_bpffs_hidden_from_the_sandbox(w):
    r = w.sluice_run(["sh", "-c", "ls /sys/fs/bpf/sluice 2>&1; echo done"])
    assert "link_connect4" not in r.stdout, r


def test_sigkill_of_loader_keeps_enforcement(w):
    """kill -9 of sluice: the sandboxed program keeps running, still filtered."""
    events = os.path.join(w.tmp, "kill9.jsonl")
    out = os.path.join(w.tmp, "kill9.out")
    name = "kill9-%d" % os.getpid()
    script = "sleep 1.5; %s tcp 192.0.2.10 8080 > %s; %s tcp 192.0.2.10 5432 >> %s" % (
        W.PROBE, out, W.PROBE, out)
    # egress-only: the script writes its output to the host's /tmp
    p = subprocess.Popen([W.SLUICE, "run", "--profile", "egress-only", "--name", name, "--netns", w.sbx_path, "--policy",
                          w.write("k9.yaml", POLICY), "--events", events, "--", "sh", "-c", script],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cg = None
    try:
        W.wait_started(p, events)
        p.send_signal(signal.SIGKILL)
        p.wait()
        mark = w.mark()
        deadline = time.time() + 10
        while time.time() < deadline:
            if os.path.exists(out) and open(out).read().count("\n") >= 2:
                break
            time.sleep(0.1)
        lines = open(out).read().splitlines()
        assert '"result":"EPERM"' in lines[0], lines
        assert '"result":"ok"' in lines[1], lines
        assert not w.arrived_since(mark, port=8080)
    finally:
        for l in W.leftovers():
            if name in l:
                cg = l
        import run as R
        R.cleanup_leftovers([l for l in W.leftovers() if name in l])


def _procs_of_sandbox(name):
    """pids whose command line names sandbox NAME (the proxy and resolver:
    --sandbox NAME)"""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        if b"--sandbox" in argv and name.encode() in argv:
            out.append(int(pid))
    return out


def test_a_signal_during_the_start_stops_it_and_leaves_nothing(w):
    """SIGTERM or Ctrl-C while `sluice run` is still starting (its maps
    pinned, the proxy, the cgroup and CMD still to come): CMD never runs,
    the exit status is 128+N, and nothing the start made stays behind: no
    cgroup, no pins, no proxy or resolver (the signal's default action used
    to kill the loader there and leave them all)."""
    marker = os.path.join(w.tmp, "cmd-ran")
    for sig in (signal.SIGTERM, signal.SIGINT):
        landed = 0
        for attempt in range(5):
            name = "startsig-%d-%d-%d" % (sig, attempt, os.getpid())
            pins = "/sys/fs/bpf/sluice/" + name
            events = os.path.join(w.tmp, "%s.jsonl" % name)
            p = subprocess.Popen([W.SLUICE, "run", "--profile", "egress-only", "--name", name, "--netns", w.sbx_path,
                                  "--policy", w.write("ss.yaml", POLICY), "--events", events, "--",
                                  "touch", marker], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 20
            while not (os.path.isdir(pins) and os.listdir(pins)) and p.poll() is None and time.time() < deadline:
                time.sleep(0.001)
            p.send_signal(sig)
            err = p.communicate(timeout=60)[1]
            started = any(e.get("event.action") == "sandbox-start" for e in W.read_events(events))
            assert not [l for l in W.leftovers() if name in l], (W.leftovers(), err)
            assert not _procs_of_sandbox(name), (_procs_of_sandbox(name), err)
            if started:   # the signal came after the start: CMD's
                continue
            landed += 1
            assert p.returncode == 128 + sig, (p.returncode, err)
            assert "signal %d before CMD started; nothing was run" % sig in err, err
            assert not os.path.exists(marker), err
            break
        assert landed, "the signal never came during the start in 5 runs"


def test_flood_events_add_up(w):
    """A million denied connect()s: JSON lines + counted losses = denials, exactly."""
    n = 1000000
    r = w.sluice_run([W.PROBE, "flood-tcp", "192.0.2.10", "8080", str(n)], timeout=300)
    got = r.probe()
    assert got["result"] == "ok" and int(got["detail"]) == n, r
    ev = [e for e in r.events if e.get("event.action") == "egress-denied"]
    lost = sum(e["sluice.events_lost"] for e in r.events if e.get("event.action") == "events_lost")
    assert len(ev) + lost == n, (len(ev), lost)
    # every gap in sluice.seq is a lost event
    seqs = sorted(e["sluice.seq"] for e in r.events if "sluice.seq" in e)
    gaps = (seqs[-1] - seqs[0] + 1) - len(seqs)
    assert gaps <= lost, (gaps, lost)
    stop = [e for e in r.events if e.get("event.action") == "sandbox-stop"][0]
    assert "events lost %d" % lost in stop["message"], stop


def test_missing_policy_file(w):
    r = w.sluice_run(["true"], policy="/nonexistent/policy.yaml")
    assert r.rc == 2, r
    assert "/nonexistent/policy.yaml" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_malformed_policy(w):
    r = w.sluice_run(["true"], policy="version: 1\nname: bad\nallow:\n  - cidr: 192.0.2.1/24\n    ports: [80]\n    why: x\n")
    assert r.rc == 2, r
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and ":4:" in line, line


def test_missing_cgroup2_mount(w):
    """No cgroup2 mount here, nor in any ancestor's mount namespace (a pid
    namespace of its own hides the callers): a clear error, exit 2."""
    cg2 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
    p = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "sh", "-c",
                        "umount -l %s && %s run -- true" % (cg2, W.SLUICE)],
                       capture_output=True, text=True)
    assert p.returncode == 2, p
    assert "cgroup2" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_run_under_ip_netns_exec_finds_the_cgroup2_mount(w):
    """`ip netns exec` gives its command a mount namespace with a fresh /sys
    (no cgroup or bpffs mounts): sluice run joins the caller's mount
    namespace, says so, and filters as usual in the netns it was given
    (the world's sandbox netns: no route off the machine); its pins are in
    the host's bpffs, where gc and the daemon look."""
    events = os.path.join(w.tmp, "netns-exec.jsonl")
    ready, go = os.path.join(w.tmp, "netns-exec.ready"), os.path.join(w.tmp, "netns-exec.go")
    name = "netns-exec-%d" % os.getpid()
    script = ("%s tcp 192.0.2.10 5432; touch %s; i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.1; "
              "i=$((i+1)); done" % (W.PROBE, ready, go))
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, W.SLUICE, "run", "--name", name, "--events", events,
                          "--profile", "egress-only", "--", "sh", "-c", script],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=w.tmp)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(ready) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        pinned = os.path.isdir("/sys/fs/bpf/sluice/" + name)
        open(go, "w").close()
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    r = W.Result(p.returncode, out, err, W.read_events(events))
    assert r.rc == 0 and "joined the mount namespace of pid" in r.stderr, r
    assert pinned, "no /sys/fs/bpf/sluice/%s while it ran: %r" % (name, r)
    assert r.probe()["result"] == "EPERM", r
    denied = [e for e in r.denials() if e.get("destination.ip") == "192.0.2.10"]
    assert denied and denied[0]["destination.port"] == 5432, r.events
    assert not os.path.exists("/sys/fs/bpf/sluice/" + name)


def test_not_root(w):
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", W.SLUICE, "run", "--", "true"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "root" in p.stderr, p


def _eth(proto):
    import struct
    return b"\x02" * 6 + b"\x04" * 6 + struct.pack("!H", proto)


def _ipv4(dst, proto, dport):
    import socket
    import struct
    l4 = struct.pack("!HHIIBBHHH", 40000, dport, 0, 0, 0x50, 0x02, 1024, 0, 0) if proto == 6 else \
        struct.pack("!HHHH", 40000, dport, 8, 0) if proto == 17 else b"\x08\x00\x00\x00\x00\x00\x00\x00"
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0, 64, proto, 0,
                      socket.inet_aton("192.0.2.2"), socket.inet_aton(dst))
    return _eth(0x0800) + hdr + l4


def _ipv6(dst, proto, dport):
    import socket
    import struct
    l4 = struct.pack("!HHIIBBHHH", 40000, dport, 0, 0, 0x50, 0x02, 1024, 0, 0) if proto == 6 else \
        struct.pack("!HHHH", 40000, dport, 8, 0)
    hdr = struct.pack("!IHBB16s16s", 0x60000000, len(l4), proto, 64,
                      socket.inet_pton(socket.AF_INET6, "2001:db8::2"), socket.inet_pton(socket.AF_INET6, dst))
    return _eth(0x86DD) + hdr + l4


def test_egress_backstop_drops_what_no_rule_allows(w):
    """Packets that skip the socket hooks meet cgroup_skb/egress: run the
    attached program on crafted packets (BPF_PROG_TEST_RUN)."""
    import json as _json
    name = "backstop-%d" % os.getpid()
    events = os.path.join(w.tmp, "backstop.jsonl")
    p = subprocess.Popen([W.SLUICE, "run", "--profile", "egress-only", "--name", name, "--netns", w.sbx_path, "--policy",
                          w.write("bs.yaml", POLICY), "--events", events, "--", "sleep", "30"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cg2 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
        cg = os.path.join(cg2, "sluice", name)
        W.wait_started(p, events)
        progs = _json.loads(W.sh("bpftool", "cgroup", "show", cg, "-j").stdout)
        eg = [x["id"] for x in progs if x.get("name", "").startswith("sluice_skb_egre")]  # 15 characters kept
        # no kernel tunnels asked for (--proxy-arg --kernel-tunnels): none loaded
        pins = os.listdir("/sys/fs/bpf/sluice/%s" % name)
        assert not [f for f in pins if f.startswith("sluice_tunnel")], pins
        assert len(eg) == 1, progs
        cases = [
            (_ipv4("192.0.2.10", 6, 5432), 1),
            (_ipv4("192.0.2.10", 6, 8080), 0),
            (_ipv4("198.51.100.10", 17, 9999), 1),
            (_ipv4("198.51.100.10", 17, 9998), 0),
            (_ipv4("192.0.2.10", 1, 0), 0),
            (_ipv6("2001:db8::10", 6, 5432), 1),
            (_ipv6("2001:db8::10", 6, 8080), 0),
            (_ipv6("2001:db8::20", 17, 9999), 0),
        ]
        for i, (pkt, want) in enumerate(cases):
            path = w.write("pkt%d" % i, "")
            open(path, "wb").write(pkt)
            out = W.sh("bpftool", "prog", "run", "id", str(eg[0]), "data_in", path).stdout
            got = int(out.split("Return value:")[1].split(",")[0])
            assert got == want, (i, want, out)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
    ev = [e for e in W.read_events(events) if e.get("sluice.hook") == "skb_egress"]
    assert sorted((e["destination.ip"], e["destination.port"]) for e in ev) == sorted([
        ("192.0.2.10", 8080), ("198.51.100.10", 9998), ("192.0.2.10", 0), ("2001:db8::10", 8080),
        ("2001:db8::20", 9999)]), ev
    assert all(e["event.reason"] == "egress_backstop" for e in ev), ev


LOCAL_SERVER = """
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 7000)); s.listen()
def srv():
    c, _ = s.accept(); c.sendall(c.recv(100)); c.close()
threading.Thread(target=srv, daemon=True).start()
try:
    t = socket.create_connection(('127.0.0.1', 7000), timeout=3); t.sendall(b'hi'); print('echo', t.recv(10))
except OSError as e:
    print('error', e.errno)
"""


RULES_POLICY = """\
version: 1
name: port-rules
allow:
  - cidr: 192.0.2.10/32
    ports: [22, 80, 5432]
    protocol: tcp
    why: ssh, http and the database
  - cidr: 192.0.2.11/32
    ports: [9000]
    protocol: tcp
    why: an entry whose time is up
    expires: 2020-01-01T00:00:00Z
  - cidr: 192.0.2.12/32
    ports: [8080]
    protocol: tcp
    programs: [/usr/bin/curl]
    why: curl only
"""


def test_port_rules_judged_alike_with_and_without_bpf_loop(w):
    """A cidr entry's port rules are walked by a bpf_loop callback (5.17+;
    the verifier checks it once) or, without bpf_loop, by the unrolled
    loop (SLUICE_BPF_NO_LOOP=1 takes that path here): the same verdicts
    and reasons either way, and the loaded connect4 is the one asked for."""
    import json as _json
    if not shutil.which("bpftool"):
        raise W.Skip("bpftool not installed (make deps)")
    cases = [("192.0.2.10", 5432), ("192.0.2.11", 9000), ("192.0.2.12", 8080), ("192.0.2.10", 22),
             ("192.0.2.10", 80), ("192.0.2.10", 443)]
    want = [("ok", None), ("EPERM", "entry_expired"), ("EPERM", "program_not_allowed"), ("ok", None),
            ("ok", None), ("EPERM", "tcp_port_not_allowed")]
    script = "; ".join("%s tcp %s %d" % (W.PROBE, ip, port) for ip, port in cases)
    pol = w.write("rules.yaml", RULES_POLICY)
    for no_loop in (False, True):
        env = dict(os.environ)
        if no_loop:
            env["SLUICE_BPF_NO_LOOP"] = "1"
        r = w.sluice_run(["sh", "-c", script], policy=pol, env=env)
        got = []
        den = {(e["destination.ip"], e["destination.port"]): e["event.reason"] for e in r.denials()}
        for line in r.stdout.splitlines():
            if line.startswith("{"):
                res = _json.loads(line)["result"]
                got.append(res)
        got = [(res, den.get(case)) for res, case in zip(got, cases)]
        assert got == want, (no_loop, got, r.stderr)
        # which walk the kernel holds: bpf_loop is called in one, not the other
        name = "rules-%d-%d" % (no_loop, os.getpid())
        events = os.path.join(w.tmp, name + ".jsonl")
        p = subprocess.Popen([W.SLUICE, "run", "--profile", "egress-only", "--name", name, "--netns", w.sbx_path,
                              "--policy", pol, "--events", events, "--", "sleep", "30"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            W.wait_started(p, events)
            cg2 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
            progs = _json.loads(W.sh("bpftool", "cgroup", "show", os.path.join(cg2, "sluice", name), "-j").stdout)
            c4 = [x["id"] for x in progs if x.get("name", "") == "sluice_connect4"]
            assert len(c4) == 1, progs
            xlated = W.sh("bpftool", "prog", "dump", "xlated", "id", str(c4[0])).stdout
            assert ("bpf_loop" in xlated) != no_loop, (no_loop, [l for l in xlated.splitlines() if "call" in l])
        finally:
            p.terminate()
            p.wait(timeout=20)


NESTED_POLICY = """\
version: 1
name: nested
allow:
  - cidr: 192.0.2.0/24
    ports: [9000]
    protocol: tcp
    why: a subnet's service
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: one host's database
  - cidr: 2001:db8::/64
    ports: [9000]
    protocol: tcp
    why: a subnet's service (v6)
  - cidr: 2001:db8::10/128
    ports: [5432]
    protocol: tcp
    why: one host's database (v6)
  - cidr: 198.51.100.10/32
    ports: [9999]
    protocol: udp
    why: one host's UDP service
"""


def test_a_single_address_entry_keeps_the_rules_of_the_prefixes_around_it(w):
    """A /32 or /128 entry is looked up by exact address (a hash map), the
    shorter prefixes in the trie: an address with an entry of its own is
    still allowed what a prefix around it allows, an address without one
    gets the prefix's rules only, in both families, v4-mapped included, and
    for UDP (judged at every send and by the egress backstop).  The same
    where a reload could not wait for the kernel's readers of the exact
    maps (SLUICE_NO_RCU_WAIT: a nohz_full kernel), and every entry goes to
    the tries."""
    cases = [("tcp", "192.0.2.10", 5432, "ok"), ("tcp", "192.0.2.10", 9000, "ok"),
             ("tcp", "192.0.2.20", 9000, "ok"), ("tcp", "192.0.2.20", 5432, "EPERM"),
             ("tcp", "192.0.2.10", 8080, "EPERM"), ("tcp", "::ffff:192.0.2.10", 9000, "ok"),
             ("tcp", "2001:db8::10", 5432, "ok"), ("tcp", "2001:db8::10", 9000, "ok"),
             ("tcp", "2001:db8::20", 9000, "ok"), ("tcp", "2001:db8::20", 5432, "EPERM"),
             ("udp", "198.51.100.10", 9999, "ok"), ("tcp", "198.51.100.10", 9000, "EPERM")]
    script = "; ".join("%s %s %s %d" % (W.PROBE, proto, ip, port) for proto, ip, port, _ in cases)
    for env in (None, dict(os.environ, SLUICE_NO_RCU_WAIT="1")):
        mark = w.mark()
        r = w.sluice_run(["sh", "-c", script], policy=w.write("nested.yaml", NESTED_POLICY), env=env)
        got = [json.loads(line)["result"] for line in r.stdout.splitlines() if line.startswith("{")]
        assert got == [want for *_, want in cases], (env is None, got, r.stderr)
        time.sleep(0.05)
        assert w.arrived_since(mark, port=9999, proto="udp"), "the allowed datagram did not arrive"
        assert not w.arrived_since(mark, port=8080, proto="tcp")
        den = sorted((e["destination.ip"], e["destination.port"]) for e in r.denials())
        assert den == sorted((ip, port) for _, ip, port, want in cases if want != "ok"), den


def test_local_server_inside_the_sandbox(w):
    """A server inside the sandbox answers its own clients when the policy
    allows the loopback port: replies on accepted connections pass the backstop."""
    allow = "version: 1\nname: loop\nallow:\n  - cidr: 127.0.0.1/32\n    ports: [7000]\n    protocol: tcp\n    why: local\n"
    r = w.sluice_run(["python3", "-c", LOCAL_SERVER], policy=allow)
    assert "echo b'hi'" in r.stdout, r
    assert r.denials() == [], r.denials()
    r = w.sluice_run(["python3", "-c", LOCAL_SERVER])
    assert "error 1" in r.stdout, r  # EPERM: loopback is not open by default


def test_audit_mode_lets_through_and_logs_would_deny(w):
    mark = w.mark()
    r = w.probe("tcp", "192.0.2.10", 8080, policy=POLICY, extra=["--mode", "audit"])
    assert r.probe()["result"] == "ok", r
    assert w.arrived_since(mark, port=8080), "audit mode must let it through"
    ev = r.denials()
    assert len(ev) == 1 and ev[0]["sluice.verdict"] == "would_deny" and ev[0]["event.outcome"] == "unknown", ev
    assert ev[0]["event.action"] == "egress-would-deny" and ev[0]["sluice.mode"] == "audit", ev
    start = [e for e in r.events if e.get("event.action") == "sandbox-start"][0]
    assert "mode audit" in start["message"] and start["sluice.mode"] == "audit", start
    # what no policy could allow stays refused in audit mode
    r = w.probe("raw", "192.0.2.10", policy=POLICY, extra=["--mode", "audit", "--keep-caps"])
    assert r.probe()["result"] == "EPERM", r
    assert [e["sluice.verdict"] for e in r.denials()] == ["deny"], r.denials()


def test_no_bpf_permission(w):
    """Without CAP_BPF/CAP_SYS_ADMIN the kernel refuses BPF: one line, exit 2, nothing left."""
    p = subprocess.run(["setpriv", "--inh-caps=-bpf,-sys_admin,-perfmon", "--bounding-set=-bpf,-sys_admin,-perfmon",
                        W.SLUICE, "run", "--", "true"], capture_output=True, text=True)
    assert p.returncode == 2, p
    assert "cannot load BPF programs" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_event_lines_never_interleave(w):
    """The loader, the proxy and the resolver append to one --events file at
    once: every line must still be one whole JSON object."""
    if not os.path.exists(os.path.join(W.BUILD, "sluice-resolver")):
        raise W.Skip("sluice-resolver not built")
    script = ("%s flood-udp 192.0.2.10 9999 50000 > /dev/null & "
              "for i in $(seq 1 150); do %s dns 192.0.2.53 name$i.example.com > /dev/null; done; wait") % (
                  W.PROBE, W.PROBE)
    r = w.sluice_run(["sh", "-c", script], policy=POLICY, extra=["--upstream-dns", "192.0.2.53"], timeout=120)
    # read_events() already parsed every line as JSON; count both sources
    kernel = [e for e in r.events if e.get("event.action") == "egress-denied"]
    lost = sum(e["sluice.events_lost"] for e in r.events if e.get("event.action") == "events_lost")
    dns = [e for e in r.events if e.get("event.action") == "dns-query"]
    assert len(kernel) + lost == 50000, (len(kernel), lost)
    assert len(dns) == 150, len(dns)


def test_require_lsm_and_the_start_line_say_which_is_in_force(w):
    """The sandbox-start line says whether the BPF LSM programs are in force
    (they judge sockets made outside, unix sockets and socket families);
    --require-lsm refuses to start without them (exit 2, nothing left);
    --no-lsm forces the fallback and says so."""
    r = w.sluice_run(["true"])
    start = [e for e in r.events if e.get("event.action") == "sandbox-start"]
    assert r.rc == 0 and start, r
    active = "bpf lsm: active" in start[0]["message"]
    r2 = w.sluice_run(["true"], extra=["--require-lsm"])
    if active:
        assert r2.rc == 0, r2
    else:
        assert r2.rc == 2 and "--require-lsm" in r2.stderr and "LSM" in r2.stderr, r2
        assert not [e for e in r2.events if e.get("event.action") == "sandbox-start"], r2.events
    r3 = w.sluice_run(["true"], extra=["--no-lsm"])
    start = [e for e in r3.events if e.get("event.action") == "sandbox-start"]
    assert r3.rc == 0 and "bpf lsm: not loaded (--no-lsm)" in start[0]["message"], r3
    assert "are not judged" in start[0]["message"], start


def _flow_entries(pins):
    """The sandbox's flow map as (protocol, source port) pairs: protocol 17
    for a UDP DNS query's entry, 0 for a TCP connection's (struct
    sluice_flow_key: the protocol is byte 27, the port bytes 24-25 in host
    byte order)."""
    r = subprocess.run(["bpftool", "-j", "map", "dump", "pinned", os.path.join(pins, "sluice_flows")],
                       capture_output=True, text=True, check=True)
    out = []
    for e in json.loads(r.stdout) or []:
        k = [int(b, 16) for b in e["key"]]
        out.append((k[27], k[24] | k[25] << 8))
    return out


def test_flow_entries_leave_with_their_sockets(w):
    """The flow map allocates on demand and evicts nothing, so an entry no
    one will take must go with its socket: forty UDP sockets of the sandbox
    each ask the resolver (redirected from 198.51.100.53, an address
    nowhere) and stay open; their forty entries are in the map while they
    are, and none is once they are closed.  A TCP connection through the
    proxy leaves none either (the proxy took it)."""
    if not shutil.which("bpftool"):
        raise W.Skip("bpftool not installed (make deps)")
    name = "flows-%d" % os.getpid()
    events = os.path.join(w.tmp, "flows.jsonl")
    step = os.path.join(w.tmp, "flows-step")
    script = w.write("flows.py", """\
import os, socket, struct, sys, time
step = sys.argv[1]
def wait(word):
    while True:
        said = open(step).read() if os.path.exists(step) else ""
        if said == "end":
            sys.exit(0)
        if said == word:
            return
        time.sleep(0.05)
q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01"
socks = []
for i in range(40):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(q, ("198.51.100.53", 53))
    s.recv(512)
    socks.append(s)
t = socket.create_connection(("192.0.2.10", 80), timeout=5)
t.sendall(b"GET / HTTP/1.1\\r\\nHost: 192.0.2.10\\r\\n\\r\\n")
t.recv(4096)
open(step + ".open", "w").close()
wait("close")
for s in socks + [t]:
    s.close()
open(step + ".closed", "w").close()
wait("end")
""")
    # a host entry on port 80: every connect to port 80 goes to the proxy
    # (which refuses 192.0.2.10 with a 403, after taking the entry)
    policy = w.write("flows.yaml", "version: 1\nname: flows\nallow:\n  - host: api.example.com\n"
                     "    ports: [80]\n    why: port 80 through the proxy\n")
    p = subprocess.Popen([W.SLUICE, "run", "--profile", "egress-only", "--name", name, "--netns", w.sbx_path,
                          "--policy", policy, "--events", events, "--", "python3", script, step],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pins = "/sys/fs/bpf/sluice/" + name
    try:
        W.wait_started(p, events)

        def reach(path):
            deadline = time.time() + 30
            while not os.path.exists(path):
                assert p.poll() is None, p.stderr.read()
                assert time.time() < deadline, "the sandbox's script did not get to %s" % path
                time.sleep(0.05)

        reach(step + ".open")
        held = _flow_entries(pins)
        assert sorted(pr for pr, _ in held) == [17] * 40, held
        with open(step, "w") as f:
            f.write("close")
        reach(step + ".closed")
        assert _flow_entries(pins) == []
        with open(step, "w") as f:
            f.write("end")
        assert p.wait(timeout=30) == 0, p.stderr.read()
    finally:
        with open(step, "w") as f:
            f.write("end")   # the script ends, and sluice run with it
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            import run as R
            R.cleanup_leftovers([l for l in W.leftovers() if name in l])
