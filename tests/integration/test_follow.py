"""`sluice events --follow`: the daemon streams its lines over the control
socket (loader/daemon_follow.c, docs/events.md "Following the daemon").
A follower sees a live denial of a real connect within seconds, only the
sandbox it named; --since SEQ replays that sandbox's lines from SEQ with no
gap and no duplicate before the live ones; a member of the user group may
not follow a sandbox that is not its own (nor all of them); a follower
that never reads delays neither `sluice status` nor another sandbox's
follower, and is dropped with a counted, logged reason.

Sandbox names carry this process's pid: the file may run beside others."""
import json
import os
import select
import signal
import socket
import subprocess
import time

import world as W
from test_daemon import POLICY_A, Daemon, Workload
import test_events as TE
import test_users as TU


class Follower:
    """`sluice events --follow ARGS` with its stdout read as lines come."""

    def __init__(self, d, *args):
        self.p = subprocess.Popen([W.SLUICE, "events", "--follow"] + list(args), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=d.env)
        self.buf = b""
        self.raw = []      # the lines as bytes, newline included
        self.lines = []    # parsed

    def read_until(self, pred, what, timeout=20):
        """Read lines until pred(lines) holds; the seconds it took."""
        t0 = time.monotonic()
        while not pred(self.lines):
            left = t0 + timeout - time.monotonic()
            assert left > 0, "timed out waiting for %s; got %d lines; stderr %s" % (
                what, len(self.lines), self._err())
            r, _, _ = select.select([self.p.stdout], [], [], min(left, 0.5))
            if not r:
                assert self.p.poll() is None, "follower exited %s: %s" % (self.p.returncode, self._err())
                continue
            chunk = os.read(self.p.stdout.fileno(), 65536)
            assert chunk, "follower's stdout closed: %s" % self._err()
            self.buf += chunk
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                self.raw.append(line + b"\n")
                self.lines.append(json.loads(line))
        return time.monotonic() - t0

    def _err(self):
        if self.p.poll() is None:
            return "(running)"
        return self.p.stderr.read().decode(errors="replace")

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def whole_lines_of(path, name):
    """The sandbox's lines of the file that parse (this file writes a torn one)."""
    out = []
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("sluice.sandbox") == name:
                out.append(e)
    return out


def follow_stats(d):
    r = d.ctl("status", "--json")
    assert r.returncode == 0, r
    return json.loads(r.stdout)["follow"]


def denied(port):
    return lambda ls: any(e.get("event.action") == "egress-denied" and e.get("destination.port") == port for e in ls)


def attach(d, a, name):
    pol = d.w.write(name + ".yaml", POLICY_A)
    r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", d.w.sbx_path, "--name", name)
    assert r.returncode == 0, r


def test_follow_sees_a_live_denial_of_its_sandbox_only(w):
    na, nb = "fola-%d" % os.getpid(), "folb-%d" % os.getpid()
    d = Daemon(w)
    a, b = Workload(w, "fola"), Workload(w, "folb")
    fa = fall = None
    try:
        attach(d, a, na)
        attach(d, b, nb)
        fa = Follower(d, "--sandbox", na)
        fall = Follower(d)
        TE.wait_for(lambda: follow_stats(d)["followers"] == 2, "both followers served")
        t0 = time.monotonic()
        assert b.probe("tcp", "192.0.2.10", 8082) == "EPERM"
        assert a.probe("tcp", "192.0.2.10", 8081) == "EPERM"
        took = fa.read_until(denied(8081), "the live denial of %s" % na)
        took = max(took, time.monotonic() - t0)
        assert took < 10, "the denial took %.1f s to reach the follower" % took
        # every follower line is a whole line of the file, as written, and only A's
        TE.wait_for(lambda: denied(8081)(d.events_of(na)), "the denial in the file")
        with open(d.events, "rb") as f:
            file_lines = set(f.readlines())
        for raw, e in zip(fa.raw, fa.lines):
            assert raw in file_lines, raw
            assert e.get("sluice.sandbox") == na, e
        den = [e for e in fa.lines if e.get("event.action") == "egress-denied"]
        assert den[0]["destination.ip"] == "192.0.2.10" and den[0]["event.dataset"] == "sluice.kernel", den
        # no source endpoint in a kernel record: no community ID (docs/events.md says why)
        assert "network.community_id" not in den[0] and "source.port" not in den[0], den[0]
        # the follower of every line sees both sandboxes' denials
        fall.read_until(lambda ls: denied(8081)(ls) and denied(8082)(ls), "both denials, unfiltered")
        assert {e.get("sluice.sandbox") for e in fall.lines} >= {na, nb}
        assert not any(e.get("sluice.sandbox") == nb for e in fa.lines)
        TE.check_lines(fa.lines)
        W.SEEN.extend(fa.lines)
    finally:
        for f in (fa, fall):
            if f:
                f.close()
        a.close()
        b.close()
        d.close()


def test_follow_since_replays_without_a_gap_then_goes_live(w):
    name = "folsince-%d" % os.getpid()
    d = Daemon(w)
    a = Workload(w, "folsince")
    f = None
    try:
        attach(d, a, name)
        for port in (8081, 8082, 8083, 8084):
            assert a.probe("tcp", "192.0.2.10", port) == "EPERM"
        a.run(W.PROBE, "dns", "192.0.2.53", "nope.example.org")
        TE.wait_for(lambda: denied(8084)(d.events_of(name))
                    and any(e.get("event.action") == "dns-query" for e in d.events_of(name)), "the lines in the file")
        seqs = sorted(e["event.sequence"] for e in d.events_of(name))
        assert seqs == list(range(len(seqs))), seqs
        # the resolver does not know which server the client asked: no community ID
        for e in d.events_of(name):
            if e.get("event.action") == "dns-query":
                assert "network.community_id" not in e, e
        since = seqs[len(seqs) // 2]
        top = seqs[-1]
        # a line a killed writer left torn (the next writer ends it with a newline): never sent
        with open(d.events, "a") as ev:
            ev.write('{"sluice.sandbox":"%s","event.sequence":%d,"dns.answers":[{"name":"x"}\n' % (name, since + 1))
        f = Follower(d, "--sandbox", name, "--since", str(since))
        f.read_until(lambda ls: {e["event.sequence"] for e in ls} >= set(range(since, top + 1)), "the replay")
        got = [e["event.sequence"] for e in f.lines]
        assert sorted(got) == list(range(since, since + len(got))), "a gap or a duplicate: %s" % got
        assert min(got) == since, got
        # then live: a new denial, numbered after the replayed ones
        assert a.probe("tcp", "192.0.2.10", 8085) == "EPERM"
        f.read_until(denied(8085), "the live denial after the replay")
        got = [e["event.sequence"] for e in f.lines]
        assert sorted(got) == list(range(since, since + len(got))), "a gap or a duplicate: %s" % got
        assert follow_stats(d)["torn_lines_skipped"] >= 1
        file_seqs = {e["event.sequence"] for e in whole_lines_of(d.events, name)}
        assert set(got) <= file_seqs
        # --since needs --sandbox; a bad number is refused
        r = d.ctl("events", "--follow", "--since", "3")
        assert r.returncode == 2 and "--sandbox" in r.stderr, r
        r = d.ctl("events", "--follow", "--sandbox", name, "--since", "x3")
        assert r.returncode == 2 and "--since" in r.stderr, r
        # -j: a refusal is the usual error document
        r = d.ctl("-j", "events", "--follow", "--sandbox", "no/such")
        doc = json.loads(r.stdout)
        assert r.returncode == 2 and doc["ok"] is False and doc["command"] == "events", r
        W.SEEN.extend(f.lines)
    finally:
        if f:
            f.close()
        a.close()
        d.close()


def test_follow_by_a_member_only_its_own_sandbox(w):
    s = TU.Setup(w)
    a = Workload(w, "folusr")
    p = None
    try:
        root_sb = "folroot-%d" % os.getpid()
        attach(s.d, a, root_sb)
        uid = s.u.uid(s.u.member)

        def follow_as(user, *args):
            return s.u.as_user(user, [W.SLUICE, "events", "--follow"] + list(args), s.env, timeout=30)

        r = follow_as(s.u.member, "--sandbox", root_sb)
        assert r.returncode == 2 and "no sandbox of yours" in r.stderr, r
        r = follow_as(s.u.member)
        assert r.returncode == 2 and "root's" in r.stderr, r
        r = follow_as(s.u.other)   # not in the group: refused at the socket
        assert r.returncode == 2 and "ermission denied" in r.stderr, r
        # the member's own run: it may follow that one, from its first line
        p = subprocess.Popen(["nsenter", "--net=" + w.sbx_path, "setpriv", "--reuid", s.u.member, "--regid", "users",
                              "--init-groups", "--", W.SLUICE, "run", "--policy", "web", "--", "sh", "-c",
                              "sleep 3; echo hi | /bin/busybox nc -w 2 192.0.2.10 9000; sleep 300"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=s.env, cwd="/")
        TE.wait_for(lambda: TU.user_lines(s.d, uid, "user-run"), "the member's run")
        name = TU.user_lines(s.d, uid, "user-run")[0]["sluice.sandbox"]
        fo = subprocess.Popen(["setpriv", "--reuid", s.u.member, "--regid", "users", "--init-groups", "--",
                               W.SLUICE, "events", "--follow", "--sandbox", name, "--since", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=s.env, cwd="/")
        own = Follower.__new__(Follower)
        own.p, own.buf, own.raw, own.lines = fo, b"", [], []
        try:
            own.read_until(denied(9000), "the member's own denial")
            assert all(e.get("sluice.sandbox") == name for e in own.lines)
        finally:
            own.close()
        # a member holds at most 4 followers at once
        TE.wait_for(lambda: follow_stats(s.d)["followers"] == 0, "the member's follower gone")
        script = ("import json, socket, sys\n"
                  "held = []\n"
                  "for i in range(5):\n"
                  "    c = socket.socket(socket.AF_UNIX)\n"
                  "    c.connect(sys.argv[1])\n"
                  "    c.sendall((json.dumps({'cmd': 'follow', 'sandbox': sys.argv[2]}) + '\\n').encode())\n"
                  "    c.settimeout(20)\n"
                  "    got = b''\n"
                  "    while b'\\n' not in got:\n"
                  "        got += c.recv(4096)\n"
                  "    print(got.split(b'\\n')[0].decode(), flush=True)\n"
                  "    held.append(c)\n")
        r = s.u.as_user(s.u.member, ["python3", "-c", script, s.env["SLUICE_CONTROL_SOCK"], name], s.env, timeout=60)
        answers = [json.loads(l) for l in r.stdout.splitlines()]
        assert [x["ok"] for x in answers] == [True] * 4 + [False], r
        assert "at most 4" in answers[4]["error"], answers[4]
        refused = follow_stats(s.d)["refused"]
        assert refused >= 2, refused
    finally:
        if p:
            p.kill()
            p.wait()
        a.close()
        s.close()


def test_a_follower_that_never_reads_delays_nothing_and_is_dropped(w):
    na, nb = "folslow-%d" % os.getpid(), "folfast-%d" % os.getpid()
    d = Daemon(w)
    a, b = Workload(w, "folslow"), Workload(w, "folfast")
    stuck = None
    fb = None
    try:
        attach(d, a, na)
        attach(d, b, nb)
        # a raw client that asks to follow A and never reads a byte
        stuck = socket.socket(socket.AF_UNIX)
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(d.env["SLUICE_CONTROL_SOCK"])
        stuck.sendall((json.dumps({"cmd": "follow", "sandbox": na}) + "\n").encode())
        fb = Follower(d, "--sandbox", nb)
        TE.wait_for(lambda: follow_stats(d)["followers"] == 2, "both followers served")
        # a flood of denials in A: far more lines than the stuck follower's buffers hold
        flood = ("import socket\n"
                 "for i in range(30000):\n"
                 "    s = socket.socket()\n"
                 "    try: s.connect(('192.0.2.10', 7000 + i % 500))\n"
                 "    except OSError: pass\n"
                 "    s.close()\n")
        with open(os.path.join(a.dir, "flood.py"), "w") as f:
            f.write(flood)
        a.flood("tcp", "192.0.2.10", 8089)   # the agent's own loop, beside the burst below
        burst = subprocess.Popen(["sh", "-c", "echo $$ > %s/cgroup.procs && exec ip netns exec %s python3 %s"
                                  % (a.cg, w.sbx, os.path.join(a.dir, "flood.py"))])
        time.sleep(1)
        # meanwhile: status answers, and B's follower sees B's denial
        t0 = time.monotonic()
        st = follow_stats(d)
        assert time.monotonic() - t0 < 10, "status took %.1f s" % (time.monotonic() - t0)
        assert st["followers"] == 2, st
        assert b.probe("tcp", "192.0.2.10", 8086) == "EPERM"
        took = fb.read_until(denied(8086), "B's denial during A's flood")
        assert took < 15, took
        burst.wait(timeout=120)
        a.stop_flood()
        # the stuck one is dropped, counted and said; B's follower is still served
        TE.wait_for(lambda: follow_stats(d)["dropped_stalled"] + follow_stats(d)["dropped_behind"] >= 1,
                    "the stuck follower dropped", timeout=40)
        st = follow_stats(d)
        assert st["followers"] == 1, st
        TE.wait_for(lambda: any(e.get("event.action") == "follow-client-dropped" for e in W.read_events(d.events)),
                    "the drop's lifecycle line")
        line = [e for e in W.read_events(d.events) if e.get("event.action") == "follow-client-dropped"][0]
        assert "sandbox " + na in line["message"] and "dropped" in line["message"], line
        assert b.probe("tcp", "192.0.2.10", 8087) == "EPERM"
        fb.read_until(denied(8087), "B's next denial")
        t0 = time.monotonic()
        assert d.ctl("status").returncode == 0
        assert time.monotonic() - t0 < 10
    finally:
        if stuck:
            stuck.close()
        if fb:
            fb.close()
        a.close()
        b.close()
        d.close()


def test_follow_carries_on_across_a_sighup_rotation(w):
    """logrotate's way: the file is renamed, SIGHUP makes the daemon open a
    new one; a follower reads the old one to its end, then the new one."""
    name = "folhup-%d" % os.getpid()
    d = Daemon(w)
    a = Workload(w, "folhup")
    f = None
    try:
        attach(d, a, name)
        f = Follower(d, "--sandbox", name)
        TE.wait_for(lambda: follow_stats(d)["followers"] == 1, "the follower served")
        assert a.probe("tcp", "192.0.2.10", 8081) == "EPERM"
        f.read_until(denied(8081), "the denial before the rotation")
        os.rename(d.events, d.events + ".1")
        d.proc.send_signal(signal.SIGHUP)
        TE.wait_for(lambda: os.path.exists(d.events), "the reopened events file")
        assert a.probe("tcp", "192.0.2.10", 8082) == "EPERM"
        f.read_until(denied(8082), "the denial after the rotation")
        assert denied(8082)(whole_lines_of(d.events, name)) and not denied(8081)(whole_lines_of(d.events, name))
        got = [e["event.sequence"] for e in f.lines]
        assert len(got) == len(set(got)), got
    finally:
        if f:
            f.close()
        a.close()
        d.close()
