"""The events destination and its writer (docs/events.md): CMD's stdout stays
CMD's, `--events -` is stdout, a full disk loses lines countably and never
tears one, and every line of real runs (kernel, proxy, resolver, lifecycle)
carries only documented fields, the required ones always.

The runs use the proxy tests' world (tests/integration/test_proxy.py: origin
servers on documentation addresses in the world netns, its DNS server) and
real clients (curl, python, tests/tools/probe).
"""
import json
import os
import re
import subprocess
import time

import world as W
import test_proxy as TP

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(W.ROOT, "docs", "events.md")

# every line of every run of this file, for the schema check at the end
SEEN = []


def run_raw(w, argv, extra=(), events=None, cwd=None, timeout=120):
    """sluice run in the sandbox netns with the proxy world's policy, stdout
    and stderr apart.  events: None (the default destination) or a value.
    --profile egress-only: these clients read and write the test's files
    (the world's sluice_run does the same)."""
    e = TP.env(w)
    cmd = [W.SLUICE, "run", "--profile", "egress-only", "--netns", w.sbx_path, "--policy", e.policy,
           "--upstream-dns", "192.0.2.53"]
    for c in TP.HATCH:
        cmd += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    if events is not None:
        cmd += ["--events", events]
    cmd += list(extra) + ["--"] + list(argv)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def json_lines(text):
    out = []
    for line in text.splitlines():
        if line.startswith("{") and '"@timestamp"' in line:
            out.append(json.loads(line))
    return out


# CMD: a line of its own, an allowed name through the resolver and the proxy,
# a denied one, and a kernel denial (a port nothing allows)
CMD = ["sh", "-c",
       "echo CMD-OUT; "
       "curl -sS -o /dev/null --max-time 10 http://api.example.com:%d/ok; "
       "curl -sS -o /dev/null --max-time 10 http://denied.example.org:%d/ || true; "
       "%s tcp 192.0.2.10 9000 >/dev/null || true" % (TP.HTTP_PORT, TP.HTTP_PORT, W.PROBE)]


def datasets(lines):
    return {l.get("event.dataset") for l in lines}


def test_stdout_belongs_to_cmd(w):
    """Without --events nothing of sluice's reaches CMD's stdout: kernel,
    proxy, resolver and lifecycle lines all go to stderr; no banner."""
    r = run_raw(w, CMD)
    assert r.returncode == 0, r
    assert r.stdout == "CMD-OUT\n", "sluice wrote to CMD's stdout: %r" % r.stdout
    lines = json_lines(r.stderr)
    SEEN.extend(lines)
    assert {"sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"} <= datasets(lines), \
        (datasets(lines), r.stderr[-3000:])
    assert "serving" not in r.stderr, r.stderr
    # the exit summary: one line, the denials, where the events are
    m = re.search(r"sluice: sandbox \S+: (\d+) connection attempts? denied by the kernel \(events: stderr\)",
                  r.stderr)
    denials = [l for l in lines if l.get("event.action") == "egress-denied"]
    assert m and int(m.group(1)) == len(denials) >= 1, (r.stderr, denials)


def test_events_dash_is_stdout(w):
    """--events - writes the lines to stdout (no file named '-')."""
    d = os.path.join(w.tmp, "cwd-dash")
    os.makedirs(d, exist_ok=True)
    r = run_raw(w, CMD, events="-", cwd=d)
    assert r.returncode == 0, r
    assert not os.path.exists(os.path.join(d, "-")), "created a file named '-'"
    assert "CMD-OUT" in r.stdout.splitlines(), r.stdout
    lines = json_lines(r.stdout)
    SEEN.extend(lines)
    assert {"sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"} <= datasets(lines), r.stdout
    assert not json_lines(r.stderr), r.stderr


def test_banner_only_with_verbose(w):
    r = run_raw(w, ["true"], extra=["-v"])
    assert r.returncode == 0, r
    assert "serving" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout


def test_events_file_shared_by_all_writers(w):
    """A file destination: one O_APPEND file for the loader, the proxy and
    the resolver (the children get the loader's fd, not the path)."""
    path = os.path.join(w.tmp, "shared-%d.jsonl" % time.monotonic_ns())
    r = run_raw(w, CMD, events=path)
    assert r.returncode == 0 and r.stdout == "CMD-OUT\n", r
    lines = W.read_events(path)
    SEEN.extend(lines)
    assert {"sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"} <= datasets(lines), (datasets(lines), r.stderr)
    ids = [l["event.id"] for l in lines]
    assert len(ids) == len(set(ids)), "event.id not unique"


def test_a_line_torn_by_a_killed_writer_is_removed_before_the_next_one(w):
    """A writer killed by SIGKILL in the middle of a line (a write that
    spans a page stops short on a fatal signal; CI's kill -9 restarts did
    it) leaves a fragment at the end of the file.  The next writer to open
    the file takes it back to the last newline and says so: no line of the
    file is one a JSON reader cannot parse."""
    path = os.path.join(w.tmp, "torn-%d.jsonl" % time.monotonic_ns())
    whole = '{"event.kind":"event","sluice.before":"whole"}\n'
    with open(path, "w") as f:
        f.write(whole + '{"event.kind":"event","sluice.sandbox":"killed-in-the-mid')
    r = run_raw(w, CMD, events=path)
    assert r.returncode == 0 and r.stdout == "CMD-OUT\n", r
    assert "ended in a torn line (57 bytes" in r.stderr, r.stderr
    text = open(path).read()
    assert text.startswith(whole) and "killed-in-the-mid" not in text, text[:300]
    lines = [json.loads(l) for l in text.splitlines()]   # every line whole
    assert len(lines) > 1 and lines[0]["sluice.before"] == "whole"
    # what is not a JSON line is never taken for one of ours: it stays,
    # and the writers start on a new line after it (heal_torn_tail)
    other = os.path.join(w.tmp, "torn-other-%d.txt" % time.monotonic_ns())
    with open(other, "w") as f:
        f.write("notes of the operator, no newline")
    r = run_raw(w, CMD, events=other)
    assert r.returncode == 0 and "removed" not in r.stderr and "it stays as it was" in r.stderr, r.stderr
    assert open(other).read().startswith("notes of the operator, no newline\n{")


FLOOD = 6000


def test_full_disk_counts_loss_never_tears(w):
    """--events on a 64 KiB tmpfs: a denial flood fills it.  Lines are lost,
    counted and reported (stderr when it starts failing, a line and stderr
    when it recovers, the stop line, the exit summary), never torn; the
    sandbox goes on enforcing; and denials = lines + counted losses."""
    mnt = os.path.join(w.tmp, "small")
    os.makedirs(mnt, exist_ok=True)
    W.sh("mount", "-t", "tmpfs", "-o", "size=64k", "sluice-test", mnt)
    try:
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb") as f:
            f.write(b"x" * 36 * 1024)
        path = os.path.join(mnt, "events.jsonl")
        # the flood fills the disk; once the loader has drained it (2.5 s:
        # failing writes are fast), CMD frees room (the destination
        # recovers) and makes a few more denials
        cmd = ["sh", "-c", "%s flood-udp 192.0.2.10 9999 %d; sleep 2.5; rm -f %s; sleep 0.3; %s flood-udp 192.0.2.10 9999 5"
               % (W.PROBE, FLOOD, filler, W.PROBE)]
        r = run_raw(w, cmd, events=path)
        probes = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        assert len(probes) == 2 and probes[0]["detail"].startswith(str(FLOOD)), r
        with open(path, "rb") as f:
            data = f.read()
    finally:
        subprocess.run(["umount", "-l", mnt])
    assert data.endswith(b"\n"), "torn last line: %r" % data[-200:]
    lines = []
    for raw in data.split(b"\n")[:-1]:
        lines.append(json.loads(raw.decode("utf-8")))   # a torn line fails here
    SEEN.extend(lines)
    stop = [l for l in lines if l.get("event.action") == "sandbox-stop"]
    assert len(stop) == 1, "the stop line was lost although the disk recovered"
    stop = stop[0]
    kernel = [l for l in lines if l.get("event.action") in ("egress-denied", "canary-denied")]
    recovered = [l for l in lines if l.get("event.action") == "events_lost" and l.get("event.reason") == "write_failed"]
    assert recovered and all(l["error.code"] == "ENOSPC" for l in recovered), recovered
    lost_k = sum(l["sluice.events_lost"] for l in recovered if l["event.dataset"] == "sluice.kernel")
    assert lost_k > 0 and stop["sluice.kernel_lines_lost"] >= lost_k, (lost_k, stop)
    # exact: every denial is a line, a counted write loss or a counted ring-buffer loss
    denied = stop["sluice.denied"] + stop["sluice.would_deny"]
    assert denied >= FLOOD + 5 + 3, stop
    assert len(kernel) + stop["sluice.kernel_lines_lost"] + stop["sluice.events_lost_total"] == denied, \
        (len(kernel), stop)
    # said on stderr: when it started failing, when it recovered, at exit
    assert "cannot write to %s: ENOSPC" % path in r.stderr, r.stderr
    assert "writable again" in r.stderr, r.stderr
    assert re.search(r"sluice: \d+ event lines lost \(kernel \d+.*\): ENOSPC", r.stderr), r.stderr
    # enforcement went on: every sendto of the flood was refused
    assert probes[0]["detail"].startswith("%d" % FLOOD) and probes[1]["detail"].startswith("5"), probes


def test_full_disk_at_exit_is_in_the_summary(w):
    """A destination that never recovers: the stop line is lost too, and
    the exit summary on stderr is where the loss is said."""
    mnt = os.path.join(w.tmp, "small2")
    os.makedirs(mnt, exist_ok=True)
    W.sh("mount", "-t", "tmpfs", "-o", "size=16k", "sluice-test2", mnt)
    try:
        path = os.path.join(mnt, "events.jsonl")
        r = run_raw(w, [W.PROBE, "flood-tcp", "192.0.2.10", "9000", "2000"], events=path)
        with open(path, "rb") as f:
            data = f.read()
    finally:
        subprocess.run(["umount", "-l", mnt])
    assert r.returncode == 0, r   # the probe: every connect refused (EPERM), as it should
    assert data == b"" or data.endswith(b"\n"), data[-200:]
    for raw in data.split(b"\n")[:-1]:
        SEEN.append(json.loads(raw.decode("utf-8")))
    m = re.search(r"sluice: (\d+) event lines lost \(([^)]*)\): ENOSPC \(No space left on device\) writing to (\S+); "
                  r"the kernel denied (\d+)", r.stderr)
    assert m and m.group(3) == path, r.stderr
    assert "lifecycle" in m.group(2), r.stderr   # the stop line itself
    kernel_lines = sum(1 for raw in data.split(b"\n")[:-1] if b'"egress-denied"' in raw or b'"canary-denied"' in raw)
    assert int(m.group(4)) >= 2000 + 3 and kernel_lines < int(m.group(4)), (kernel_lines, m.groups())


# --- accuracy: what the lines say is what happened ----------------------------

def test_denied_connect_records_the_requested_port(w):
    """curl through the proxy to an allowed name on a port no entry allows:
    the line says which port was asked for (an attempt at :22 is not one at
    :443)."""
    path = os.path.join(w.tmp, "connect-port-%d.jsonl" % time.monotonic_ns())
    r = run_raw(w, ["sh", "-c", "curl -sS --max-time 10 -x $SLUICE_PROXY https://api.example.com:22/ "
                    "-o /dev/null; curl -sS --max-time 10 -x $SLUICE_PROXY https://denied.example.org:2222/ "
                    "-o /dev/null; true"], events=path)
    assert r.returncode == 0, r
    lines = W.read_events(path)
    SEEN.extend(lines)
    conns = [l for l in lines if l.get("event.action") == "proxy-connect"]
    got = sorted((l["url.domain"], l["destination.port"], l["event.reason"], l["http.response.status_code"])
                 for l in conns)
    assert got == [("api.example.com", 22, "host_not_allowed", 403),
                   ("denied.example.org", 2222, "host_not_allowed", 403)], conns
    assert all("destination.ip" not in l for l in conns), conns   # nothing was dialed


def test_events_format_ocsf_from_every_writer(w):
    """`sluice run --events-format ocsf`: the loader, the proxy and the
    resolver all write OCSF events (one JSON object a line), each of the
    class its source says, with the base event's required attributes."""
    path = os.path.join(w.tmp, "ocsf-%d.jsonl" % time.monotonic_ns())
    r = run_raw(w, ["sh", "-c", "%s tcp 192.0.2.10 8080; curl -sS --max-time 10 -x $SLUICE_PROXY "
                    "http://api.example.com:%d/ocsf -o /dev/null; "
                    "python3 -c 'import socket\ntry: socket.getaddrinfo(\"denied.example.org\", 80)\n"
                    "except OSError: pass'; true" % (W.PROBE, TP.HTTP_PORT)],
                events=path, extra=["--events-format", "ocsf"])
    assert r.returncode == 0, r
    events = [json.loads(l) for l in open(path) if l.strip()]
    assert events and all("@timestamp" not in e for e in events), events[:2]   # no ECS line slipped through
    by_class = {}
    for e in events:
        for k in ("class_uid", "category_uid", "activity_id", "type_uid", "severity_id", "time", "metadata"):
            assert k in e, (k, e)
        assert e["type_uid"] == e["class_uid"] * 100 + e["activity_id"], e
        by_class.setdefault(e["class_uid"], []).append(e)
    # the loader's: the kernel denial and the lifecycle lines
    deny = [e for e in by_class.get(4001, []) if e.get("dst_endpoint", {}).get("port") == 8080]
    assert deny and deny[0]["activity_id"] == 5 and deny[0]["action_id"] == 2, by_class.get(4001)
    assert {"sandbox-start", "sandbox-stop"} <= {e["metadata"].get("event_code") for e in by_class.get(6002, [])}
    # the proxy's request and the resolver's refusal
    http = [e for e in by_class.get(4002, []) if e["http_request"].get("url", {}).get("url_string", "").endswith("/ocsf")]
    assert http and http[0]["http_response"]["code"] == 200 and http[0]["activity_id"] == 3, by_class.get(4002)
    dns = [e for e in by_class.get(4003, []) if e["query"]["hostname"] == "denied.example.org"]
    assert dns and dns[0]["action_id"] == 2 and dns[0]["rcode"] in ("NXDOMAIN", "REFUSED"), by_class.get(4003)
    # a bad value is refused before anything runs
    bad = run_raw(w, ["true"], extra=["--events-format", "cef"])
    assert bad.returncode == 2 and "--events-format must be ecs or ocsf" in bad.stderr, bad


def test_403_reason_phrase_names_the_policy_and_reason(w):
    """What apt, pip, wget and git print is the status line: it says that
    sluice's policy refused, and why."""
    r = run_raw(w, ["sh", "-c", "curl -sS -i --max-time 10 -x $SLUICE_PROXY http://denied.example.org:%d/x"
                    % TP.HTTP_PORT])
    first = r.stdout.splitlines()[0] if r.stdout else ""
    assert first.strip() == "HTTP/1.1 403 Forbidden by sluice policy: host_not_allowed", r


def client_hello_two_snis(name):
    """A ClientHello with two server_name extensions (malformed: RFC 8446
    4.2), the first naming `name`."""
    import struct
    n = name.encode()
    entry = b"\x00" + struct.pack("!H", len(n)) + n
    lst = struct.pack("!H", len(entry)) + entry
    ext = struct.pack("!HH", 0, len(lst)) + lst
    body = b"\x03\x03" + b"\x11" * 32 + b"\x00" + struct.pack("!H", 2) + b"\x13\x01" + b"\x01\x00"
    exts = ext + ext
    body += struct.pack("!H", len(exts)) + exts
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def test_400_and_bad_client_hello_carry_the_attempted_name(w):
    """A smuggling-shaped request (400 cl_te_conflict) says which host it was
    for; a malformed ClientHello that named a server says which."""
    e = TP.env(w)
    hello = client_hello_two_snis("api.example.com").decode("latin-1")
    plan = [
        {"op": "http", "via": "proxy", "send": TP.explicit("http://api.example.com:%d/x" % TP.HTTP_PORT,
                                                          headers="Content-Length: 1\r\nTransfer-Encoding: chunked\r\n",
                                                          method="POST", body="0\r\n\r\n")},
        {"op": "http", "via": "direct", "addr": "192.0.2.10", "port": TP.TLS_PORT, "send": hello},
    ]
    path = w.write("plan-%d.json" % time.monotonic_ns(), json.dumps(plan))
    events = os.path.join(w.tmp, "attempted-%d.jsonl" % time.monotonic_ns())
    r = run_raw(w, ["python3", TP.CLIENT, path], events=events)
    assert r.returncode == 0, r
    lines = [l for l in W.read_events(events) if l.get("event.dataset") == "sluice.proxy"]
    SEEN.extend(W.read_events(events))
    bad = [l for l in lines if l["event.reason"] == "cl_te_conflict"]
    assert len(bad) == 1 and bad[0]["url.domain"] == "api.example.com" and \
        bad[0]["http.response.status_code"] == 400, lines
    hello_lines = [l for l in lines if l["event.reason"] == "bad_client_hello"]
    assert len(hello_lines) == 1 and hello_lines[0]["tls.client.server_name"] == "api.example.com", lines
    assert hello_lines[0]["destination.port"] == TP.TLS_PORT, hello_lines


def test_events_reader_gone_leaves_the_run_whole(w):
    """`sluice run -- CMD 2>&1 | head -1`: the events' reader (stderr, the
    default destination) goes away while CMD runs.  The loader's writes
    fail (EPIPE, lost lines), it is not killed by SIGPIPE: CMD finishes,
    its exit status is the run's, and nothing is left pinned.  CMD gets
    SIGPIPE's default disposition, as a shell would give it."""
    out = os.path.join(w.tmp, "pipe-gone-%d.txt" % time.monotonic_ns())
    before = set(W.leftovers())
    p = subprocess.Popen([W.SLUICE, "run", "--profile", "egress-only", "--netns", w.sbx_path, "--",
                          "sh", "-c", "grep SigIgn /proc/self/status > %s; sleep 1; echo done >> %s; exit 7"
                          % (out, out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    p.stderr.close()        # the reader is gone before the first line
    assert p.wait(timeout=60) == 7, p.returncode
    text = open(out).read()
    assert text.endswith("done\n"), text
    ignored = int(text.split()[1], 16)
    assert not ignored & (1 << (13 - 1)), "CMD runs with SIGPIPE ignored: %s" % text   # 13: SIGPIPE
    left = [l for l in W.leftovers() if l not in before]
    assert not left, left


def test_unexecutable_cmd_canary_is_not_a_denial(w):
    """CMD that cannot be executed: exit 127, and the canary's own attempts
    are marked as the canary's, not reported as the sandbox's denials."""
    path = os.path.join(w.tmp, "noexec-%d.jsonl" % time.monotonic_ns())
    r = run_raw(w, ["/nonexistent/cmd"], events=path)
    assert r.returncode == 127 and "cannot execute /nonexistent/cmd" in r.stderr, r
    lines = W.read_events(path)
    SEEN.extend(lines)
    kernel = [l for l in lines if l.get("event.dataset") == "sluice.kernel" and l.get("event.kind") == "event"]
    # the canary's three inet refusals, and two unix ones where the kernel has the unix hooks (6.7+)
    assert len(kernel) in (3, 5), kernel
    assert all(l["event.action"] == "canary-denied" and l.get("sluice.canary") is True for l in kernel), kernel
    # and `policy suggest` proposes nothing for them
    s = subprocess.run([W.SLUICE, "policy", "suggest", path], capture_output=True, text=True)
    assert "127.0.0.1" not in s.stdout, s.stdout


# --- event.sequence, labels ----------------------------------------------------

def child_pid(parent, comm, timeout=20):
    """The pid of parent's child process named comm (polled: it may be
    restarting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            name = st[st.index("(") + 1:st.rindex(")")]
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            if ppid == parent and name == comm:
                return int(d)
        time.sleep(0.1)
    raise AssertionError("no %s child of %d" % (comm, parent))


def wait_for(pred, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def check_sequence(lines):
    """Per sandbox: event.sequence unique and without a gap from 0; per
    writer (event.id's prefix), increasing in the order its lines were
    written."""
    by_sandbox, by_writer = {}, {}
    for l in lines:
        assert isinstance(l.get("event.sequence"), int), l
        by_sandbox.setdefault(l.get("sluice.sandbox"), []).append(l["event.sequence"])
        by_writer.setdefault(l["event.id"].split("-")[0], []).append(l["event.sequence"])
    for sb, seqs in by_sandbox.items():
        assert sorted(seqs) == list(range(len(seqs))), \
            "sandbox %s: gaps or duplicates in event.sequence: %s" % (sb, sorted(seqs))
    for wr, seqs in by_writer.items():
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "writer %s out of order: %s" % (wr, seqs)
    return by_writer


def test_event_sequence_is_gap_free_across_writers(w):
    """One sandbox, its four kinds of lines from three processes, and its
    proxy killed and restarted mid-run: every line has event.sequence, the
    numbers of the run are 0..N-1 with no gap and no duplicate, each
    writer's lines come in increasing order, and the restarted proxy goes
    on from the shared counter (its numbers are above the dead one's)."""
    path = os.path.join(w.tmp, "seq-%d.jsonl" % time.monotonic_ns())
    go = os.path.join(w.tmp, "seq-go-%d" % time.monotonic_ns())
    url = "http://api.example.com:%d/ok" % TP.HTTP_PORT
    cmd = ["sh", "-c",
           "curl -sS -o /dev/null --max-time 10 %s; "
           "i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
           "curl -sS -o /dev/null --max-time 10 %s; "
           "curl -sS -o /dev/null --max-time 10 http://denied.example.org:%d/ || true; "
           "%s tcp 192.0.2.10 9000 >/dev/null || true" % (url, go, url, TP.HTTP_PORT, W.PROBE)]
    e = TP.env(w)
    argv = [W.SLUICE, "run", "--profile", "egress-only", "--netns", w.sbx_path, "--policy", e.policy,
            "--upstream-dns", "192.0.2.53", "--events", path]
    for c in TP.HATCH:
        argv += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                 "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    p = subprocess.Popen(argv + ["--"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def proxy_lines():
            try:
                with open(path) as f:
                    return [json.loads(x) for x in f if '"sluice.proxy"' in x and '"proxy-http"' in x]
            except FileNotFoundError:
                return []
        wait_for(lambda: len(proxy_lines()) >= 1, "the first proxy line")
        os.kill(child_pid(p.pid, "sluice-proxy"), 9)
        wait_for(lambda: any('"proxy-restarted"' in x for x in open(path)), "proxy-restarted")
        open(go, "w").close()
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    lines = W.read_events(path)
    SEEN.extend(lines)
    assert {"sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"} <= datasets(lines), \
        (datasets(lines), err)
    writers = check_sequence(lines)
    proxies = [l for l in lines if l.get("event.action") == "proxy-http"]
    first, second = proxies[0]["event.id"].split("-")[0], proxies[-1]["event.id"].split("-")[0]
    assert first != second, "the proxy was not restarted: %s" % proxies
    assert min(writers[second]) > max(writers[first]), (writers[first], writers[second])


def test_labels_on_every_line_of_every_writer(w):
    """--label KEY=VALUE (twice): labels.KEY on every line, kernel, proxy,
    resolver and lifecycle alike, a UTF-8 value as given."""
    path = os.path.join(w.tmp, "labels-%d.jsonl" % time.monotonic_ns())
    r = run_raw(w, CMD, extra=["--label", "team=blue", "--label", "ticket_ref=SEC-1 \u00e9"], events=path)
    assert r.returncode == 0, r
    lines = W.read_events(path)
    SEEN.extend(lines)
    assert {"sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"} <= datasets(lines)
    for l in lines:
        assert l.get("labels.team") == "blue" and l.get("labels.ticket_ref") == "SEC-1 \u00e9", l


def test_bad_label_is_refused_before_anything_starts(w):
    """A bad --label: a clear error naming it, exit 2, no line, no sandbox."""
    path = os.path.join(w.tmp, "badlabel-%d.jsonl" % time.monotonic_ns())
    for bad, why in (("Team=x", "not valid"), ("a.b=x", "not valid"), ("noequals", "KEY=VALUE"),
                     ("=x", "not valid"), ("k=" + "v" * 129, "at most 128"), ("k=a\tb", "not UTF-8 text"),
                     ("x" * 40 + "=v", "too long")):
        r = run_raw(w, ["sh", "-c", "echo RAN"], extra=["--label", bad], events=path)
        assert r.returncode == 2, (bad, r)
        assert "--label" in r.stderr and why in r.stderr, (bad, r.stderr)
        assert "RAN" not in r.stdout, r.stdout
    r = run_raw(w, ["sh", "-c", "echo RAN"], extra=["--label", "k=1", "--label", "k=2"], events=path)
    assert r.returncode == 2 and "given twice" in r.stderr, r
    assert not os.path.exists(path) or os.path.getsize(path) == 0, "a refused run wrote lines"


# --- the schema: every field documented, the required ones present -----------

def documented_fields():
    """Field -> ECS type, from the tables of docs/events.md whose header is
    | field | type | ...; a cell may hold several `names`."""
    fields = {}
    with open(DOCS) as f:
        in_table = False
        for line in f:
            if line.startswith("| field | type |"):
                in_table = True
                continue
            if not line.startswith("|"):
                in_table = False
                continue
            if in_table and not line.startswith("|---"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                for name in re.findall(r"`([^`]+)`", cells[0]):
                    fields[name] = cells[1]
    return fields


REQUIRED = ["@timestamp", "ecs.version", "host.name", "observer.vendor", "observer.product", "observer.version",
            "observer.type", "event.module", "event.dataset", "event.id", "event.sequence", "event.kind", "event.action",
            "sluice.sandbox", "rule.ruleset", "rule.version", "sluice.mode"]
REQUIRED_NETWORK = ["network.direction", "event.category", "event.outcome", "event.reason", "sluice.verdict"]

TYPE_CHECK = {
    "keyword": lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "text": lambda v: isinstance(v, str),
    "date": lambda v: isinstance(v, str) and v.endswith("Z"),
    "ip": lambda v: isinstance(v, str),
    "long": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, (list, dict)),
}


def test_tls_and_audit_runs_for_the_schema(w):
    """More kinds of lines for the schema check: a TLS tunnel, a CONNECT, a
    DNS query with answers, audit mode."""
    e = TP.env(w)
    cmd = ["sh", "-c",
           "curl -sS -o /dev/null --max-time 10 --cacert %s https://api.example.com:%d/t; "
           "curl -sS -o /dev/null --max-time 10 --cacert %s -x $SLUICE_PROXY https://api.example.com:%d/c; "
           "%s udp 192.0.2.10 9999 >/dev/null || true" % (e.cert, TP.TLS_PORT, e.cert, TP.TLS_PORT, W.PROBE)]
    for extra in ([], ["--mode", "audit"]):
        path = os.path.join(w.tmp, "schema-%d.jsonl" % time.monotonic_ns())
        r = run_raw(w, cmd, extra=extra, events=path)
        assert r.returncode == 0, r
        lines = W.read_events(path)
        actions = {l.get("event.action") for l in lines}
        assert {"proxy-tls", "proxy-connect", "dns-query"} <= actions, (actions, r.stderr)
        SEEN.extend(lines)


def check_lines(lines):
    """Every field of every line documented in docs/events.md, with a value
    of its type; the required fields present.  Returns the datasets seen."""
    fields = documented_fields()
    assert len(fields) > 60, "docs/events.md: no | field | type | tables found"
    for name, typ in fields.items():
        assert typ in TYPE_CHECK, "docs/events.md: %s has unknown type %r" % (name, typ)
    kinds = set()
    for line in lines:
        kinds.add(line.get("event.dataset"))
        for k, v in line.items():
            # labels.KEY: one documented pattern (labels.*), any checked key
            name = "labels.*" if re.fullmatch(r"labels\.[a-z][a-z0-9_]{0,31}", k) else k
            assert name in fields, "field %s not in docs/events.md: %s" % (k, line)
            assert TYPE_CHECK[fields[name]](v), "field %s=%r is not %s" % (k, v, fields[name])
        # daemon-wide lines have no sandbox and no policy
        required = REQUIRED if "sluice.sandbox" in line or line.get("event.dataset") != "sluice.lifecycle" else \
            [k for k in REQUIRED if k not in ("sluice.sandbox", "rule.ruleset", "rule.version", "sluice.mode")]
        for k in required:
            assert k in line, "required %s missing: %s" % (k, line)
        if line["event.dataset"] != "sluice.lifecycle" and line["event.kind"] == "event":
            for k in REQUIRED_NETWORK:
                assert k in line, "required %s missing: %s" % (k, line)
    return kinds


def test_every_line_matches_the_documented_schema(w):
    assert SEEN, "no lines collected (run the whole file)"
    kinds = check_lines(SEEN)
    assert {"sluice.kernel", "sluice.proxy", "sluice.resolver", "sluice.lifecycle"} <= kinds, kinds

