"""The test world: network namespaces the tests make themselves.

  sandbox netns (slcNNNs)                 world netns (slcNNNw)
  lo up                                   lo up
  s0 192.0.2.2/24, 2001:db8::2/64  <-veth->  w0 192.0.2.1/24 + hosts:
     routes to 198.51.100.0/24,              192.0.2.10, 192.0.2.20, 192.0.2.53,
     203.0.113.0/24 via 192.0.2.1            198.51.100.10, 203.0.113.10,
                                             2001:db8::1/64, 2001:db8::10, ::20

Neither namespace has any link to the host's network, so nothing sent from
them can leave the machine, whatever sluice decides (the network safety
rule in DEVELOPERS.md).  Commands under test run in the sandbox netns via
`sluice run --netns`; servers run in the world netns.  Everything made here
is removed by World.close(), which runs at exit and on signals too.
"""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the binaries under test: build/, or build-san/ for `make test SANITIZE=1`
BUILD = os.environ.get("SLUICE_BUILD") or os.path.join(ROOT, "build")
SLUICE = os.path.join(BUILD, "sluice")
PROBE = os.path.join(BUILD, "tests", "tools", "probe")

WORLD_V4 = ["192.0.2.1/24", "192.0.2.10/32", "192.0.2.20/32", "192.0.2.53/32",
            "198.51.100.1/24", "198.51.100.10/32", "203.0.113.1/24", "203.0.113.10/32"]
WORLD_V6 = ["2001:db8::1/64", "2001:db8::10/128", "2001:db8::20/128"]
TCP_PORTS = [22, 80, 443, 5432, 8080, 9000]
UDP_PORTS = [5353, 9999]

_live = []


def sh(*args, check=True, **kw):
    """Run a command (argv list), return CompletedProcess; raise on failure."""
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


class Skip(Exception):
    """Raised by a test when the kernel or machine lacks what it needs."""


class Result:
    def __init__(self, rc, stdout, stderr, events):
        self.rc, self.stdout, self.stderr, self.events = rc, stdout, stderr, events

    def probe(self):
        """The probe's JSON result line (the last JSON line of stdout)."""
        for line in reversed(self.stdout.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError("no probe output; rc=%s stdout=%r stderr=%r" % (self.rc, self.stdout, self.stderr))

    def denials(self, include_canary=False):
        """Kernel denial events (would-deny too), without the canary's."""
        return [e for e in self.events
                if e.get("event.action", "").startswith("egress-")
                or (include_canary and e.get("event.action") == "canary-denied")]

    def __repr__(self):
        return "Result(rc=%r, stdout=%r, stderr=%r, events=%d)" % (
            self.rc, self.stdout[-500:], self.stderr[-1500:], len(self.events))


class World:
    def __init__(self):
        tag = "%d" % (os.getpid() % 100000)
        self.sbx = "slc%ss" % tag
        self.wld = "slc%sw" % tag
        self.sbx_path = "/run/netns/" + self.sbx
        self.tmp = tempfile.mkdtemp(prefix="sluice-test-")
        self.server_log = os.path.join(self.tmp, "servers.jsonl")
        self.procs = []
        self.closed = False
        _live.append(self)
        self._up()

    # --- setup / teardown -------------------------------------------------
    def _up(self):
        try:
            sh("ip", "netns", "add", self.sbx)
            sh("ip", "netns", "add", self.wld)
            sh("ip", "link", "add", "s0", "netns", self.sbx, "type", "veth", "peer", "name", "w0",
               "netns", self.wld)
            for ns in (self.sbx, self.wld):
                self.ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0")
                self.ns(ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
                self.ns(ns, "ip", "link", "set", "lo", "up")
            for a in WORLD_V4:
                self.ns(self.wld, "ip", "addr", "add", a, "dev", "w0")
            for a in WORLD_V6:
                self.ns(self.wld, "ip", "-6", "addr", "add", a, "dev", "w0", "nodad")
            self.ns(self.wld, "ip", "link", "set", "w0", "up")
            self.ns(self.sbx, "ip", "addr", "add", "192.0.2.2/24", "dev", "s0")
            self.ns(self.sbx, "ip", "-6", "addr", "add", "2001:db8::2/64", "dev", "s0", "nodad")
            self.ns(self.sbx, "ip", "link", "set", "s0", "up")
            self.ns(self.sbx, "ip", "route", "add", "198.51.100.0/24", "via", "192.0.2.1")
            self.ns(self.sbx, "ip", "route", "add", "203.0.113.0/24", "via", "192.0.2.1")
            self.start_server([os.path.join(ROOT, "tests", "integration", "echo_server.py"),
                               "--tcp", ",".join(map(str, TCP_PORTS)),
                               "--udp", ",".join(map(str, UDP_PORTS)),
                               "--log", self.server_log], name="echo")
        except Exception:
            self.close()
            raise

    def ns(self, netns, *argv, check=True):
        return sh("ip", "netns", "exec", netns, *argv, check=check)

    def start_server(self, argv, name, ready_timeout=10.0):
        """Start argv (a python script path + args, or any argv) in the world
        netns; it must create the file given as --ready PATH when serving."""
        ready = os.path.join(self.tmp, name + ".ready")
        if argv[0].endswith(".py"):
            argv = ["python3"] + argv
        p = subprocess.Popen(["ip", "netns", "exec", self.wld] + argv + ["--ready", ready],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp, name + ".err"), "w"),
                             start_new_session=True)
        self.procs.append(p)
        deadline = time.time() + ready_timeout
        while not os.path.exists(ready):
            if p.poll() is not None or time.time() > deadline:
                raise RuntimeError("server %s did not start: %s" % (
                    name, open(os.path.join(self.tmp, name + ".err")).read()))
            time.sleep(0.02)
        return p

    def close(self):
        if self.closed:
            return
        self.closed = True
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                p.wait(timeout=5)
            except Exception:
                pass
        for ns in (self.sbx, self.wld):
            sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- observations ------------------------------------------------------
    def server_records(self):
        """Everything the world's echo servers received so far."""
        try:
            with open(self.server_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def mark(self):
        """A position in the server log; pass to arrived_since()."""
        return len(self.server_records())

    def arrived_since(self, mark, port=None, proto=None):
        recs = self.server_records()[mark:]
        return [r for r in recs if (port is None or r.get("port") == port)
                and (proto is None or r.get("proto") == proto)]

    # --- running things in the sandbox ------------------------------------
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def sluice_run(self, argv, policy=None, extra=(), timeout=60, netns=True, env=None, profile="egress-only"):
        """Run argv under `sluice run` in the sandbox netns.  policy: YAML
        text, a path, or None (built-in default).  profile: the network
        tests run their clients as root with the host's /tmp (files of
        self.tmp), so "egress-only" unless a test asks for the confined
        default (None: no --profile at all).  Returns a Result with the
        JSON event lines parsed."""
        events = os.path.join(self.tmp, "events-%d.jsonl" % time.monotonic_ns())
        cmd = [SLUICE, "run", "--events", events]
        if profile:
            cmd += ["--profile", profile]
        if netns:
            cmd += ["--netns", self.sbx_path]
        if policy is not None:
            if "\n" in policy:
                policy = self.write("policy-%d.yaml" % time.monotonic_ns(), policy)
            cmd += ["--policy", policy]
        cmd += list(extra) + ["--"] + list(argv)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return Result(p.returncode, p.stdout, p.stderr, read_events(events))

    def probe(self, *args, policy=None, extra=(), timeout=60, profile="egress-only"):
        return self.sluice_run([PROBE] + [str(a) for a in args], policy=policy, extra=extra, timeout=timeout,
                               profile=profile)


# every sluice line any test of this process read (test_schema.py checks
# them all against docs/events.md)
SEEN = []


def canary_count(events):
    """How many refusals the start-up canary makes: three inet ones, a
    unix connect and sendto where the kernel has the unix hooks, and where
    the BPF LSM programs loaded a send and a connect on a foreign UDP
    socket, a send on a foreign unix socket and an AF_VSOCK socket (the
    sandbox-start line says which)."""
    start = [e for e in events if e.get("event.action") == "sandbox-start"]
    assert start, "no sandbox-start line"
    msg = start[0].get("message", "")
    return 3 + (2 if "unix hooks: active" in msg else 0) + (4 if "bpf lsm: active" in msg else 0)


def read_events(path):
    """The complete lines of an events file: a last line without its
    newline is being written right now (a line is one write(2), which a
    reader can see half done) and is left for the next read."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                if not line.endswith("\n"):
                    break
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    SEEN.extend(out)
    return out


def wait_started(p, events, timeout=20):
    """Wait until the `sluice run` P has written its sandbox-start line to
    EVENTS (its --events file): by then every pin and hook is in place and
    CMD runs.  AssertionError when P exits first or TIMEOUT seconds pass."""
    deadline = time.time() + timeout
    while not any(e.get("event.action") == "sandbox-start" for e in read_events(events)):
        assert p.poll() is None, "sluice run exited (%s) before its sandbox-start line" % p.returncode
        assert time.time() < deadline, "no sandbox-start line in %s after %ds" % (events, timeout)
        time.sleep(0.05)


def _ours(name):
    """Is sandbox `name` one this test process made and no longer runs?
    `run-<pid>` (sluice run's default) whose sluice is gone, or a name the
    tests made with this process's pid in it.  Sandboxes of other runs on
    the same machine (a concurrent bench or test run) are left alone."""
    if name.startswith("run-") and name[4:].isdigit():
        return not os.path.exists("/proc/" + name[4:])
    return str(os.getpid()) in name


def leftovers():
    """Sandboxes' cgroups and pins that a test left behind (should be none)."""
    return [p for p in _all_sandbox_state() if _ours(os.path.basename(p))]


def _all_sandbox_state():
    found = []
    for base in ("/sys/fs/bpf/sluice",):
        if os.path.isdir(base):
            found += [os.path.join(base, d) for d in os.listdir(base)]
    v2_done = False
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            # the v2 hierarchy, and the v1 ones of a hybrid layout (sluice run's
            # limits live there: run_limits_v1.c)
            if (parts[2] == "cgroup2" and not v2_done) or (parts[2] == "cgroup" and parts[1].startswith("/sys/")):
                v2_done = v2_done or parts[2] == "cgroup2"
                d = os.path.join(parts[1], "sluice")
                if os.path.isdir(d):
                    found += [os.path.join(d, x) for x in os.listdir(d)
                              if os.path.isdir(os.path.join(d, x))]
    return found


def _close_all(*_):
    for w in list(_live):
        w.close()


atexit.register(_close_all)


# --- squatting: another process on a port of sluice's ---------------------------------------

SQUATTER = """\
import socket, sys, json, time
port, log, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
deadline = time.time() + 10
while True:
    try:
        s.bind(("127.0.0.1", port)); break
    except OSError:
        if time.time() > deadline: raise
        time.sleep(0.05)
s.listen(16); open(ready, "w").close()
while True:
    c, peer = s.accept(); c.settimeout(2)
    try: data = c.recv(4096)
    except OSError: data = b""
    with open(log, "a") as f: f.write(json.dumps({"peer": peer[0], "data": data.decode("latin-1")}) + "\\n")
    c.close()
"""


def proxy_listener(w, owner_pid=None):
    """(port, pid) of the sluice-proxy listening on 127.0.0.1 in the sandbox netns."""
    for l in w.ns(w.sbx, "ss", "-Htlnp").stdout.splitlines():
        m = re.search(r'"sluice-proxy",pid=(\d+)', l)
        if m and "127.0.0.1:" in l and (owner_pid is None or int(m.group(1)) != owner_pid):
            return int(l.split()[3].rsplit(":", 1)[1]), int(m.group(1))
    return None, None


def squat(w, port, name):
    """A listener of another process on `port` in the sandbox netns (outside
    the sandbox, as any local user could start); returns (proc, log path)."""
    log, ready = os.path.join(w.tmp, name + ".squat"), os.path.join(w.tmp, name + ".squat-ready")
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, "python3", "-c", SQUATTER, str(port), log, ready],
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 12
    while not os.path.exists(ready):
        assert p.poll() is None and time.time() < deadline, "squatter could not bind: %s" % p.communicate()[1]
        time.sleep(0.05)
    return p, log
