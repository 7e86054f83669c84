"""The systemd side of the daemon, without needing systemd as PID 1:
Type=notify (READY=1 on the $NOTIFY_SOCKET the test binds, RELOADING=1 and
READY=1 around a SIGHUP, STOPPING=1 on SIGTERM); SIGHUP reopens the events
file and has the sandbox's proxy and resolver reopen theirs (log rotation),
the daemon and the sandbox keep running; stderr lines carry syslog
priorities when stderr is the journal ($JOURNAL_STREAM); and the shipped
unit passes `systemd-analyze verify` and scores <= 4.0 in
`systemd-analyze security --offline=yes`.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import world as W
from test_daemon import Daemon, Workload

UNIT = os.path.join(W.ROOT, "packaging", "sluice.service")
POLICY = """version: 1
name: unit-test
allow:
  - host: api.example.com
    ports: [8443]
    why: a proxied name, so that the proxy and the resolver run
"""


def _notify_socket(w):
    path = os.path.join(w.tmp, "notify-%d.sock" % time.monotonic_ns())
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(15)
    return s, path


def _wait_for(sock, want):
    got = []
    deadline = time.time() + 15
    while time.time() < deadline:
        msg = sock.recv(4096).decode()
        got.append(msg)
        if want in msg.split("\n"):
            return got
    raise AssertionError("no %s in %r" % (want, got))


def _fd_targets(pid):
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return out


class NotifyDaemon(Daemon):
    """test_daemon's Daemon, started with $NOTIFY_SOCKET and $JOURNAL_STREAM."""

    def __init__(self, w, notify_path, stderr_path):
        self.notify_path, self.stderr_path = notify_path, stderr_path
        Daemon.__init__(self, w)

    def start(self):
        err = open(self.stderr_path, "a")
        st = os.fstat(err.fileno())
        env = dict(self.env, NOTIFY_SOCKET=self.notify_path, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
        self.proc = subprocess.Popen([W.SLUICE, "daemon", "--state-dir", self.state, "--upstream-dns", "192.0.2.53"],
                                     stdout=subprocess.DEVNULL, stderr=err, env=env)
        deadline = time.time() + 10
        while self.ctl("status").returncode != 0:
            assert self.proc.poll() is None and time.time() < deadline, open(self.stderr_path).read()
            time.sleep(0.05)


def test_notify_ready_and_sighup_reopens_the_logs(w):
    sock, npath = _notify_socket(w)
    name = "unit%d" % os.getpid()
    d = NotifyDaemon(w, npath, os.path.join(w.tmp, "daemon-notify.err"))
    a = Workload(w, name)
    try:
        got = _wait_for(sock, "READY=1")
        assert any("STATUS=serving" in m for m in got), got
        pol = w.write("unit.yaml", POLICY)
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r
        s = d.status()[name]
        helpers = [int(s["proxy_pid"]), int(s["resolver_pid"])]
        assert all(p > 0 for p in helpers), s
        rotated = d.events + ".1"
        os.rename(d.events, rotated)
        for p in helpers:
            assert rotated in _fd_targets(p), (p, _fd_targets(p))
        d.proc.send_signal(signal.SIGHUP)
        _wait_for(sock, "RELOADING=1")
        _wait_for(sock, "READY=1")
        # it did not die, and reopened: a new file with the reopen line
        assert d.proc.poll() is None
        # the proxy and resolver were started again on their sockets: the new
        # ones write to the reopened file, the old ones are gone
        deadline = time.time() + 10
        while True:
            s2 = d.status()[name]
            now = [int(s2["proxy_pid"]), int(s2["resolver_pid"])]
            if all(p > 0 and p not in helpers for p in now) and \
                    all(d.events in _fd_targets(p) and rotated not in _fd_targets(p) for p in now):
                break
            assert time.time() < deadline, [(p, _fd_targets(p)) for p in now]
            time.sleep(0.05)
        # the old ones drain (SIGQUIT) and are reaped by the daemon's tick
        deadline = time.time() + 15
        while [p for p in helpers if os.path.exists("/proc/%d" % p)]:
            assert time.time() < deadline, helpers
            time.sleep(0.05)
        assert rotated not in _fd_targets(d.proc.pid) and d.events in _fd_targets(d.proc.pid)
        actions = [e.get("event.action") for e in W.read_events(d.events)]
        assert "daemon-reopen" in actions, actions
        assert "daemon-reopen" not in [e.get("event.action") for e in W.read_events(rotated)]
        # the sandbox still works, and still filters
        assert a.probe("tcp", "192.0.2.10", 9000) == "EPERM"
        assert d.ctl("detach", name).returncode == 0
    finally:
        a.close()
        d.close()
    # SIGTERM (in close) said STOPPING=1 before it went
    _wait_for(sock, "STOPPING=1")
    sock.close()


def test_stderr_lines_carry_syslog_priorities_for_the_journal(w):
    err = os.path.join(w.tmp, "journal.err")
    with open(err, "w") as f:
        st = os.fstat(f.fileno())
        env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
        r = subprocess.run([W.SLUICE, "gc", "x" * 61], stderr=f, env=env)
    assert r.returncode == 2
    text = open(err).read()
    assert text.startswith("<4>sluice: gc: "), text
    # not the journal: no prefix
    r = subprocess.run([W.SLUICE, "gc", "x" * 61], capture_output=True, text=True)
    assert r.stderr.startswith("sluice: gc: "), r.stderr


def _analyze():
    exe = shutil.which("systemd-analyze")
    if not exe:
        raise W.Skip("systemd-analyze is not installed")
    return exe


def test_unit_passes_systemd_analyze_verify(w):
    exe = _analyze()
    # the unit as installed: ExecStart at a binary that exists, its man pages findable
    unit = os.path.join(w.tmp, "sluice.service")
    text = open(UNIT).read().replace("/usr/local/bin/sluice", W.SLUICE)
    with open(unit, "w") as f:
        f.write(text)
    man = os.path.join(w.tmp, "man")
    for page in os.listdir(os.path.join(W.BUILD, "man")):
        os.makedirs(os.path.join(man, "man" + page[-1]), exist_ok=True)
        shutil.copy(os.path.join(W.BUILD, "man", page), os.path.join(man, "man" + page[-1]))
    r = subprocess.run([exe, "verify", unit], capture_output=True, text=True, env=dict(os.environ, MANPATH=man))
    assert r.returncode == 0 and r.stderr.strip() == "", (r.stdout, r.stderr)
    assert "Type=notify" in text and "ExecReload=" in text


def test_unit_security_exposure_at_most_4(w):
    exe = _analyze()
    h = subprocess.run([exe, "security", "--help"], capture_output=True, text=True).stdout
    if "--offline" not in h:
        raise W.Skip("this systemd-analyze has no security --offline (systemd < 250)")
    r = subprocess.run([exe, "security", "--offline=yes", "--no-pager", UNIT], capture_output=True, text=True)
    m = re.search(r"Overall exposure level for sluice\.service: (\d+\.\d+)", r.stdout + r.stderr)
    assert m, (r.returncode, r.stdout[-2000:], r.stderr)
    assert float(m.group(1)) <= 4.0, (m.group(1), r.stdout)
    # and the unit says what the issue asks of it
    text = open(UNIT).read()
    for key in ("CapabilityBoundingSet=", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
                "NoNewPrivileges=yes", "RestrictAddressFamilies=", "SystemCallFilter=",
                "ReadWritePaths=/sys/fs/bpf /sys/fs/cgroup"):
        assert key in text, key


class NsDaemon(Daemon):
    """The daemon in a mount namespace of its own, as the hardened unit runs
    it (unshare -m --propagation slave: its mounts never reach ours), with
    $NOTIFY_SOCKET; `stored` = an fd systemd's fd store would hand back."""

    def __init__(self, w, notify_path, state=None, stored=None, expect_fail=False):
        self.notify_path, self.stored, self.expect_fail = notify_path, stored, expect_fail
        self.err = os.path.join(w.tmp, "daemon-ns-%d.err" % time.monotonic_ns())
        Daemon.__init__(self, w) if state is None else self._init_state(w, state)

    def _init_state(self, w, state):
        self.w, self.state = w, state
        self.env = dict(os.environ, SLUICE_CONTROL_SOCK=os.path.join(state, "control.sock"))
        self.events = os.path.join(state, "events.jsonl")
        self.proc = None
        self.start()

    def start(self):
        env = dict(self.env, NOTIFY_SOCKET=self.notify_path)
        argv = ["unshare", "-m", "--propagation", "slave", W.SLUICE, "daemon", "--state-dir", self.state,
                "--upstream-dns", "192.0.2.53"]
        pass_fds = ()
        if self.stored is not None:
            fd, name = self.stored
            # systemd's protocol: the fds from 3 on, LISTEN_PID = the daemon's pid
            wrap = 'exec 3<&%d %d<&-; export LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=%s; exec "$@"' % (fd, fd, name)
            argv = ["bash", "-c", wrap, "bash"] + argv
            pass_fds = (fd,)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(self.err, "a"), env=env,
                                     pass_fds=pass_fds)
        deadline = time.time() + 10
        while self.ctl("status").returncode != 0:
            if self.proc.poll() is not None:
                if self.expect_fail:
                    return
                raise AssertionError("daemon exited: " + open(self.err).read())
            assert time.time() < deadline, open(self.err).read()
            time.sleep(0.05)


def _recv_fdstore(sock, want):
    deadline = time.time() + 15
    while time.time() < deadline:
        msg, fds, _, _ = socket.recv_fds(sock, 4096, 4)
        text = msg.decode()
        if want in text.split("\n"):
            return text, fds
        for f in fds:
            os.close(f)
    raise AssertionError("no %s" % want)


def test_attached_netns_survives_a_restart_through_the_fd_store(w):
    import fcntl
    sock, npath = _notify_socket(w)
    name = "unitns%d" % os.getpid()
    a = Workload(w, name)
    d = NsDaemon(w, npath)
    stored = None
    try:
        pol = w.write("unitns.yaml", POLICY)
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r
        text, fds = _recv_fdstore(sock, "FDNAME=netns-" + name)
        assert "FDSTORE=1" in text.split("\n") and len(fds) == 1, (text, fds)
        stored = fcntl.fcntl(fds[0], fcntl.F_DUPFD, 20)
        os.close(fds[0])
        assert os.fstat(stored).st_ino == os.stat(w.sbx_path).st_ino, "not the sandbox's netns"
        kept = os.path.join(d.state, "netns", name)
        # the daemon's bind mount is in its namespace only
        assert subprocess.run(["mountpoint", "-q", kept]).returncode != 0
        d.kill9()
        assert a.probe("tcp", "192.0.2.10", 9000) == "EPERM"   # fail closed meanwhile

        # without the fd store the bind mount is lost with the namespace: the
        # restarted daemon finds the netns again through the cgroup's process
        mid = NsDaemon(w, npath, state=d.state)
        st = mid.status()[name]
        assert int(st["proxy_pid"]) > 0, st
        assert "found again through pid" in open(mid.err).read(), open(mid.err).read()
        mid.kill9()
        assert a.probe("tcp", "192.0.2.10", 9000) == "EPERM"

        # with it, the sandbox is re-adopted in the same netns
        d = NsDaemon(w, npath, state=d.state, stored=(stored, "netns-" + name))
        st = d.status()[name]
        assert int(st["proxy_pid"]) > 0 and int(st["resolver_pid"]) > 0, st
        assert a.probe("tcp", "192.0.2.10", 9000) == "EPERM"
        assert "sandbox-adopt" in [e.get("event.action") for e in d.events_of(name)]
        assert d.ctl("detach", name).returncode == 0
        _recv_fdstore(sock, "FDSTOREREMOVE=1")
    finally:
        if stored is not None:
            os.close(stored)
        a.close()
        d.close()
        sock.close()
