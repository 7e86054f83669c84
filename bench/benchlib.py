"""Shared machinery of `make bench`: everything the bench creates (network
namespaces, cgroups, sluice sandboxes, processes, /etc/netns files) is
registered here and removed by Bench.close(), which runs on normal exit,
on exceptions and on SIGINT/SIGTERM.  A second line of defence: every
resource is also appended to build/bench/cleanup.state, which bench/run.sh
sweeps in its EXIT trap if this process died without cleaning up.

Network safety: the bench only makes traffic on loopback and inside the
network namespaces it creates here; the addresses it puts in them are
documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24,
2001:db8::/32).  No namespace gets a link to the host's network.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
OUT = os.path.join(BUILD, "bench")
SLUICE = os.path.join(BUILD, "sluice")
PROXY = os.path.join(BUILD, "sluice-proxy")
RESOLVER = os.path.join(BUILD, "sluice-resolver")
CONNECT_BENCH = os.path.join(OUT, "connect_bench")
NETBENCH = os.path.join(OUT, "netbench")
STATE_FILE = os.path.join(OUT, "cleanup.state")
PIN_ROOT = "/sys/fs/bpf/sluice"


def log(msg):
    print("[bench %6.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


T0 = time.monotonic()


def sh(*argv, check=True, timeout=60, **kw):
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, timeout=timeout, **kw)


def cgroup2_mount():
    """The cgroup v2 mount point, from /proc/mounts (unified or hybrid layout)."""
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return parts[1]
    raise RuntimeError("no cgroup2 mount in /proc/mounts")


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Skip(Exception):
    """A scenario (or one variant of it) cannot run on this machine/tree."""


class Sandbox:
    """One `sluice run --name NAME ... -- sleep` kept alive as a sandbox the
    bench moves its clients into (the command itself only holds it open)."""

    def __init__(self, bench, name, policy, netns, events, extra=(), timeout=30):
        self.bench, self.name, self.events, self.policy_path = bench, name, events, policy
        self.cg = os.path.join(bench.cg2, "sluice", name)
        self.pin_dir = os.path.join(PIN_ROOT, name)
        # egress-only: the bench measures the network filter as it was
        argv = [SLUICE, "run", "--profile", "egress-only", "--name", name, "--policy", policy, "--events", events]
        if netns:
            argv += ["--netns", netns]
        argv += list(extra) + ["--", "sleep", "3600"]
        bench.note("sandbox", name)
        t0 = time.monotonic()
        self.err = os.path.join(bench.tmp, "sluice-run-%s.err" % name)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(self.err, "w"),
                                     start_new_session=True)
        bench.sandboxes.append(self)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise Skip("sluice run exited with %s: %s" % (self.proc.returncode, self.stderr_tail()))
            if os.path.isdir(self.cg) and self._started():
                break
            if time.monotonic() > deadline:
                raise Skip("sluice run did not start within %ds: %s" % (timeout, self.stderr_tail()))
            time.sleep(0.02)
        self.startup_s = time.monotonic() - t0
        self.pid = self.proc.pid

    def stderr_tail(self):
        try:
            with open(self.err) as f:
                return " ".join(f.read().split())[-400:]
        except OSError:
            return ""

    def _started(self):
        try:
            with open(self.events) as f:
                return any('"sandbox-start"' in l for l in f)
        except FileNotFoundError:
            return False

    def prog_ids(self):
        """{program name: prog id} from the pinned links."""
        out = {}
        for f in sorted(os.listdir(self.pin_dir)):
            if f.startswith("link_"):
                r = sh("bpftool", "-j", "link", "show", "pinned", os.path.join(self.pin_dir, f), check=False)
                if r.returncode == 0:
                    out[f[5:]] = json.loads(r.stdout)["prog_id"]
        return out

    def prog_stats(self):
        """{program: (run_time_ns, run_cnt)}."""
        out = {}
        for name, pid in self.prog_ids().items():
            r = sh("bpftool", "-j", "prog", "show", "id", str(pid), check=False)
            if r.returncode == 0:
                d = json.loads(r.stdout)
                out[name] = (d.get("run_time_ns", 0), d.get("run_cnt", 0))
        return out

    def cpu_seconds(self):
        """utime+stime of the loader (the event consumer) so far."""
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout=20):
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self in self.bench.sandboxes:
            self.bench.sandboxes.remove(self)
        self.bench.remove_sandbox_leftovers(self.name)


class Bench:
    def __init__(self):
        os.makedirs(OUT, exist_ok=True)
        self.cg2 = cgroup2_mount()
        self.tag = "slb%d" % (os.getpid() % 100000)
        self.tmp = tempfile.mkdtemp(prefix="sluice-bench-")
        self.netns = []
        self.cgroups = []
        self.procs = []
        self.sandboxes = []
        self.etc_netns = []
        self.sysctl_restore = {}
        self.closed = False
        self.cg_root = os.path.join(self.cg2, self.tag)
        with open(STATE_FILE, "w") as f:
            f.write("tmp %s\n" % self.tmp)
        self.mkcg(self.cg_root)
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, self._on_signal)

    def _on_signal(self, sig, _frame):
        raise SystemExit(128 + sig)

    def note(self, kind, what):
        with open(STATE_FILE, "a") as f:
            f.write("%s %s\n" % (kind, what))

    # --- resources --------------------------------------------------------
    def mkcg(self, path):
        os.makedirs(path, exist_ok=True)
        self.cgroups.append(path)
        self.note("cgroup", path)
        return path

    def cg(self, name):
        return self.mkcg(os.path.join(self.cg_root, name))

    def nft_cgroup_path(self, path):
        """The path nftables 1.0.6 wants for `socket cgroupv2`: relative to
        /sys/fs/cgroup (so `unified/...` on a hybrid layout), and the level."""
        rel_root = os.path.relpath(self.cg2, "/sys/fs/cgroup")
        if rel_root.startswith(".."):
            raise Skip("cgroup2 is mounted at %s, outside /sys/fs/cgroup: nftables cannot name the cgroup" % self.cg2)
        rel = os.path.relpath(path, self.cg2)
        nftpath = rel if rel_root == "." else os.path.join(rel_root, rel)
        return nftpath, len(rel.split("/"))

    def mknetns(self, suffix):
        name = self.tag + suffix
        self.note("netns", name)
        sh("ip", "netns", "add", name)
        self.netns.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")
        return name

    def etc_netns_file(self, ns, fname, text):
        """/etc/netns/NS/FNAME: `ip netns exec NS` bind-mounts it over /etc/FNAME."""
        d = os.path.join("/etc/netns", ns)
        if d not in self.etc_netns:
            self.note("etcnetns", d)
            os.makedirs(d, exist_ok=True)
            self.etc_netns.append(d)
        with open(os.path.join(d, fname), "w") as f:
            f.write(text)

    def spawn(self, argv, cg=None, netns=None, name="proc", stdout=None, env=None, etc=False):
        """Start argv in cgroup `cg` (moved before it enters the namespace:
        `ip netns exec` would remount /sys) and network namespace `netns`
        (nsenter: no /sys remount; etc=True: `ip netns exec`, for the
        /etc/netns/NS files)."""
        if netns:
            if etc:
                argv = ["ip", "netns", "exec", netns] + list(argv)
            else:
                argv = ["nsenter", "--net=/run/netns/" + netns] + list(argv)
        procs = os.path.join(cg, "cgroup.procs") if cg else None

        def pre():
            if procs:
                with open(procs, "w") as f:
                    f.write(str(os.getpid()))

        err = open(os.path.join(self.tmp, "%s.err" % name), "w")
        p = subprocess.Popen(argv, stdout=stdout if stdout is not None else subprocess.DEVNULL, stderr=err,
                             preexec_fn=pre, start_new_session=True, env=env)
        p.bench_name = name
        p.err_path = err.name
        self.procs.append(p)
        self.note("pid", p.pid)
        return p

    def wait_file(self, path, proc=None, timeout=15):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if proc is not None and proc.poll() is not None:
                raise RuntimeError("%s exited (%s): %s" % (getattr(proc, "bench_name", "process"),
                                                          proc.returncode, self.err_of(proc)))
            if time.monotonic() > deadline:
                raise RuntimeError("timeout waiting for %s" % path)
            time.sleep(0.02)

    def err_of(self, proc):
        try:
            with open(proc.err_path) as f:
                return " ".join(f.read().split())[-500:]
        except (OSError, AttributeError):
            return ""

    def kill(self, p, sig=signal.SIGTERM, timeout=10):
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=10)
        if p in self.procs:
            self.procs.remove(p)

    def sandbox(self, name, policy, netns=None, events=None, extra=()):
        name = "%s-%s" % (self.tag, name)
        events = events or os.path.join(self.tmp, "events-%s.jsonl" % name)
        return Sandbox(self, name, policy, "/run/netns/" + netns if netns else None, events, extra)

    def sysctl(self, key, value):
        path = "/proc/sys/" + key.replace(".", "/")
        with open(path) as f:
            old = f.read().strip()
        if key not in self.sysctl_restore:
            self.sysctl_restore[key] = old
            self.note("sysctl", "%s=%s" % (key, old))
        with open(path, "w") as f:
            f.write(str(value))

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def remove_sandbox_leftovers(self, name):
        """What `sluice run` removes itself; here in case it was killed."""
        cg = os.path.join(self.cg2, "sluice", name)
        if os.path.isdir(cg):
            kill_cgroup(cg)
        pins = os.path.join(PIN_ROOT, name)
        if os.path.isdir(pins):
            shutil.rmtree(pins, ignore_errors=True)
        try:
            os.rmdir(PIN_ROOT)  # only if empty (no other sandbox)
        except OSError:
            pass

    def close(self):
        if self.closed:
            return
        self.closed = True
        for s in list(self.sandboxes):
            try:
                s.stop()
            except Exception as e:  # keep cleaning
                log("cleanup: sandbox %s: %s" % (s.name, e))
        for p in list(self.procs):
            try:
                self.kill(p)
            except Exception as e:
                log("cleanup: pid %d: %s" % (p.pid, e))
        for cg in reversed(self.cgroups):
            if os.path.isdir(cg):
                kill_cgroup(cg)
        for ns in self.netns:
            sh("ip", "netns", "del", ns, check=False)
        for d in self.etc_netns:
            shutil.rmtree(d, ignore_errors=True)
        for key, old in self.sysctl_restore.items():
            try:
                with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
                    f.write(old)
            except OSError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)
        try:
            os.unlink(STATE_FILE)
        except OSError:
            pass


def kill_cgroup(cg):
    """Kill everything in cgroup `cg` (and below) and remove it."""
    for sub in sorted((os.path.join(d, x) for d, xs, _ in os.walk(cg) for x in xs), key=len, reverse=True) + [cg]:
        try:
            with open(os.path.join(sub, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            pass
    for _ in range(100):
        subs = sorted((os.path.join(d, x) for d, xs, _ in os.walk(cg) for x in xs), key=len, reverse=True)
        try:
            for s in subs:
                os.rmdir(s)
            os.rmdir(cg)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.05)
    return False
