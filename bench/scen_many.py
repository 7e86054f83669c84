"""Scenario 9: many sandboxes on one daemon.

One `sluice daemon` (a state directory of its own, its own control socket)
attaches COUNT plain cgroups, each holding one process (`sleep`), each with
a small policy of its own (one cidr entry: the bench server's allowed port
on loopback), in one network namespace the bench made (every sandbox's
proxy and resolver listen there: `attach --netns`).  Measured:

  * attach time (wall clock of `sluice attach`, as an operator sees it),
    p50 and p99, and detach time likewise;
  * the total RSS of the daemon and every process it started (a proxy and a
    resolver per sandbox), and the daemon's open file descriptors;
  * the BPF programs and maps the kernel holds for them (bpftool, before and
    after);
  * the allowed-connect cost inside the first and the last sandbox against
    an unfiltered cgroup in the same namespace (bench/connect_bench.c, the
    variants interleaved as in scenario 1), each sandbox's denied port
    proven EPERM;
  * attribution: the denied probes' kernel lines name the sandbox they came
    from, and no other.

Traffic: loopback inside the bench's namespace only (127.0.0.1:7001 allowed,
:7002 denied, both served by connect_bench serve).
"""
import json
import os
import signal
import subprocess
import time

from benchlib import SLUICE, Skip, log, median, sh
from scen_kernel import PORT_DENIED, PORT_OK, SERVER, pooled, run_client, start_server

POLICY = """version: 1
name: many-%d
allow:
  - cidr: %s/32
    ports: [%d]
    protocol: tcp
    why: the bench server, sandbox %d
"""


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else None


def tree_pids(root):
    """root and every descendant (through /proc/PID/task/*/children)."""
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            continue
    return out


def mem_total_kib(root):
    """(PSS, RSS) summed over root and its descendants, in KiB.  PSS counts
    a shared page (the libraries every proxy and resolver maps) once in
    all, split between its users: the memory the sandboxes really take.
    The RSS sum counts it in every process."""
    pss = rss = 0
    for p in tree_pids(root):
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            continue
    return pss, rss


def bpf_counts():
    """(programs, maps, KiB of kernel memory the maps are charged) the
    kernel holds, or (None, None, None) without bpftool.  The memory is
    bpftool's bytes_memlock: the ring buffers' pages (which the daemon's
    PSS counts as well, as it maps them), the tries' and the rest."""
    try:
        progs = json.loads(sh("bpftool", "-j", "prog", "show", timeout=120).stdout or "[]")
        maps = json.loads(sh("bpftool", "-j", "map", "show", timeout=120).stdout or "[]")
    except Exception:
        return None, None, None
    return len(progs), len(maps), sum(int(m.get("bytes_memlock", 0)) for m in maps) // 1024


class ManyDaemon:
    def __init__(self, b, ns):
        self.b, self.ns = b, ns
        self.state = os.path.join(b.tmp, "many-state")
        os.makedirs(self.state, exist_ok=True)
        self.env = dict(os.environ, SLUICE_CONTROL_SOCK=os.path.join(self.state, "control.sock"))
        self.events = os.path.join(self.state, "events.jsonl")
        self.proc = b.spawn([SLUICE, "daemon", "--state-dir", self.state, "--upstream-dns", "127.0.0.53"],
                            env=self.env, name="many-daemon")
        self.names = []
        deadline = time.monotonic() + 30
        while self.ctl("status").returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise Skip("sluice daemon did not answer: %s" % open(self.proc.err_path).read()[-300:])
            time.sleep(0.1)

    def ctl(self, *args, timeout=120):
        return subprocess.run([SLUICE] + list(args), capture_output=True, text=True, env=self.env, timeout=timeout)

    def close(self):
        for n in list(self.names):
            try:
                self.ctl("detach", n, timeout=60)
            except Exception as e:
                log("cleanup: detach %s: %s" % (n, e))
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for n in self.names:   # what a killed daemon left pinned
            sh("rm", "-rf", "/sys/fs/bpf/sluice/" + n, check=False)


# what the scenario needs after the last attach: the connect runs, the
# attribution check, the detaches (about 30 ms each) and the teardown
AFTER_ATTACH_S = 40
DETACH_S = 0.05


def many_scenario(b, cfg, res):
    n = cfg["many_sandboxes"]
    # the run's 15 minutes (BENCH_DEADLINE, bench/run.sh): a machine slower
    # than the estimate attaches fewer and says how many, never overruns
    deadline = float(os.environ.get("BENCH_DEADLINE", time.time() + 14 * 60))
    ns = b.mknetns("many")
    start_server(b, ns, "srv-many")
    progs0, maps0, kmem0 = bpf_counts()
    d = ManyDaemon(b, ns)
    rows = []
    try:
        pss0, rss0 = mem_total_kib(d.proc.pid)
        fds0 = len(os.listdir("/proc/%d/fd" % d.proc.pid))
        attach_s, cgs = [], []
        for i in range(n):
            if i >= 2 and time.time() + AFTER_ATTACH_S + DETACH_S * i > deadline:
                log("many: the time budget stops the attaches at %d of %d" % (i, n))
                break
            cg = b.cg("many-%d" % i)
            b.spawn(["sleep", "86400"], cg=cg, name="many-sleep-%d" % i)
            pol = b.write("many-%d.yaml" % i, POLICY % (i, SERVER, PORT_OK, i))
            name = "%s-m%d" % (b.tag, i)
            t0 = time.monotonic()
            r = d.ctl("attach", "--policy", pol, "--cgroup", cg, "--name", name, "--netns", "/run/netns/" + ns)
            dt = time.monotonic() - t0
            if r.returncode != 0:
                raise RuntimeError("attach %d of %d failed (%d): %s" % (i + 1, n, r.returncode,
                                                                        (r.stderr or r.stdout).strip()[-300:]))
            d.names.append(name)
            cgs.append(cg)
            attach_s.append(dt)
            if (i + 1) % 100 == 0:
                log("many: %d attached, last %.0f ms" % (i + 1, dt * 1e3))
        n = len(cgs)
        time.sleep(1)   # the children settle (resolver caches, proxy pools: nothing in flight)
        pss1, rss1 = mem_total_kib(d.proc.pid)
        nproc = len(tree_pids(d.proc.pid))
        fds1 = len(os.listdir("/proc/%d/fd" % d.proc.pid))
        progs1, maps1, kmem1 = bpf_counts()
        rows.append({"variant": "attach time p50", "value": round(median(attach_s) * 1e3, 1), "unit": "ms",
                     "note": "p99 %.1f ms, max %.1f ms; %d sandboxes attached one after another%s; target p99 <= 100 ms"
                             % (pct(attach_s, 0.99) * 1e3, max(attach_s) * 1e3, n,
                                "" if n == cfg["many_sandboxes"] else " (of %d: the run's time budget stopped the rest)"
                                % cfg["many_sandboxes"])})
        rows.append({"variant": "daemon and children memory (PSS)", "value": round(pss1 / 1024, 1), "unit": "MiB",
                     "note": "%d processes; %.0f KiB per sandbox; daemon alone before %d KiB; RSS summed over "
                             "the processes %.0f MiB (shared libraries counted in each); target <= 1 GiB"
                             % (nproc, (pss1 - pss0) / n, pss0, rss1 / 1024)})
        rows.append({"variant": "daemon file descriptors", "value": fds1, "unit": "",
                     "note": "%.1f per sandbox, %d before the first; its RLIMIT_NOFILE bounds the sandboxes"
                             % ((fds1 - fds0) / n, fds0)})
        if progs0 is not None and progs1 is not None:
            rows.append({"variant": "BPF programs loaded", "value": progs1 - progs0, "unit": "",
                         "note": "%.1f per sandbox; maps %d (%.1f per sandbox)"
                                 % ((progs1 - progs0) / n, maps1 - maps0, (maps1 - maps0) / n)})
            rows.append({"variant": "BPF map memory (kernel)", "value": round((kmem1 - kmem0) / 1024, 1),
                         "unit": "MiB", "note": "%.0f KiB per sandbox (bytes_memlock); the event ring buffers' "
                                                "share is in the daemon's PSS too, which maps them"
                                                % ((kmem1 - kmem0) / n)})
        # allowed connect in the first and the last sandbox against no filter
        probe = "%s:%d" % (SERVER, PORT_DENIED)
        plain = b.cg("many-plain")
        variants = ["none,cg=%s,netns=/run/netns/%s,probe=%s=ok" % (plain, ns, probe),
                    "first,cg=%s,netns=/run/netns/%s,probe=%s=EPERM" % (cgs[0], ns, probe),
                    "last,cg=%s,netns=/run/netns/%s,probe=%s=EPERM" % (cgs[-1], ns, probe)]
        runs = [run_client(variants, cfg["connect_n"], cfg["connect_blocks"]) for _ in range(cfg["repeats"])]
        base = pooled(runs, "none", None)
        for v in ("first", "last"):
            p = pooled(runs, v, "none")
            rows.append({"variant": "allowed connect, %s sandbox (ns/connect)" % v, "value": round(p["ns"]),
                         "unit": "ns", "ratio": round(p["ratio"], 3),
                         "note": "no filter %.0f ns; target: unchanged from scenario 1" % base["ns"]})
        # attribution: each probe's denial line names its own sandbox
        deadline = time.monotonic() + 20
        want = {d.names[0], d.names[-1]}
        seen = {}
        while time.monotonic() < deadline:
            seen = {}
            try:
                with open(d.events) as f:
                    for line in f:
                        if not line.endswith("\n"):
                            break
                        e = json.loads(line)
                        if e.get("event.dataset") == "sluice.kernel" and e.get("sluice.verdict") == "deny":
                            seen.setdefault(e.get("sluice.sandbox"), 0)
                            seen[e.get("sluice.sandbox")] += 1
            except (OSError, ValueError):
                pass
            if want <= set(seen):
                break
            time.sleep(0.5)
        wrong = set(seen) - want
        rows.append({"variant": "denials attributed", "value": sum(seen.get(x, 0) for x in want), "unit": "lines",
                     "note": ("each probe's line names its own sandbox" if want <= set(seen) and not wrong else
                              "WRONG: denial lines by sandbox %s, expected %s" % (seen, sorted(want)))})
        detach_s = []
        for name in list(d.names):
            t0 = time.monotonic()
            r = d.ctl("detach", name)
            detach_s.append(time.monotonic() - t0)
            if r.returncode == 0:
                d.names.remove(name)
        rows.append({"variant": "detach time p50", "value": round(median(detach_s) * 1e3, 1), "unit": "ms",
                     "note": "p99 %.1f ms; %d detached" % (pct(detach_s, 0.99) * 1e3, n - len(d.names))})
    finally:
        d.close()
    res.update({"status": "ok", "rows": rows,
                "load": "%d cgroups with one process each, attached one after another to one daemon, "
                        "one cidr entry each" % n})
