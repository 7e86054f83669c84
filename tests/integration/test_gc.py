"""`sluice gc` and `sluice detach --force`: a `sluice run` killed with
SIGKILL leaves its pins and its cgroup (with CMD still running in it,
filtered, its proxy and resolver gone: fail closed); gc --dry-run lists it
and changes nothing, gc kills what is left in the cgroup, removes it and
unpins the filter; a sandbox whose owner is alive is never removed.

Removals name the test's own sandboxes (gc NAME...): other runs on this
machine keep theirs.  Only --dry-run looks at every sandbox.
"""
import os
import signal
import subprocess
import time

import world as W

PINS = "/sys/fs/bpf/sluice"
OWNERS = "/run/sluice/owners"


def _cg2():
    return [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]


def _cgroup(name):
    return os.path.join(_cg2(), "sluice", name)


def _procs(name):
    try:
        with open(os.path.join(_cgroup(name), "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def _start(w, name):
    """sluice run -- sleep 300 in the sandbox netns; returns once CMD runs."""
    p = subprocess.Popen([W.SLUICE, "run", "--name", name, "--netns", w.sbx_path,
                          "--events", os.path.join(w.tmp, name + ".jsonl"), "--", "sleep", "300"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while not any(open("/proc/%d/comm" % q).read().strip() == "sleep" for q in _procs(name)
                  if os.path.exists("/proc/%d/comm" % q)):
        assert p.poll() is None, p.stderr.read()
        assert time.time() < deadline, "sandbox %s did not start" % name
        time.sleep(0.05)
    return p


def _gc(*args):
    return subprocess.run([W.SLUICE, "gc"] + list(args), capture_output=True, text=True, timeout=60)


def _line(out, name):
    lines = [l for l in out.splitlines() if (" %s:" % name) in l]
    assert len(lines) == 1, (name, out)
    return lines[0]


def _cleanup(names, procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if names:
        _gc(*names)


def _gone(pid):
    """pid has exited: no /proc entry, or a zombie (X: being reaped)."""
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(") ", 1)[1][0] in "ZX"
    except (OSError, IndexError):
        return True


def test_gc_removes_a_killed_run_and_keeps_a_live_one(w):
    dead, live = "gc%da" % os.getpid(), "gc%db" % os.getpid()
    procs = []
    try:
        pd = _start(w, dead)
        procs.append(pd)
        pl = _start(w, live)
        procs.append(pl)
        sleeper = _procs(dead)
        owner = open(os.path.join(OWNERS, dead)).read().split()
        assert owner[0] == "run" and int(owner[1]) == pd.pid, owner
        pd.kill()
        pd.wait()
        time.sleep(0.3)
        # the SIGKILL left the pins and the cgroup, CMD still in it
        assert os.path.isdir(os.path.join(PINS, dead)) and _procs(dead), (os.listdir(PINS), _procs(dead))

        r = _gc("--dry-run")
        assert r.returncode == 0, r
        l = _line(r.stdout, dead)
        assert l.startswith("would remove %s:" % dead) and "pid %d, is gone" % pd.pid in l, l
        assert "kill %d processes" % len(sleeper) in l, (l, sleeper)   # sluice-init and CMD
        l = _line(r.stdout, live)
        assert l.startswith("kept %s:" % live) and "is running" in l, l
        # a dry run changes nothing
        assert os.path.isdir(os.path.join(PINS, dead)) and _procs(dead) == sleeper

        r = _gc(dead, live)
        assert r.returncode == 0, r
        assert _line(r.stdout, dead).startswith("removed %s:" % dead), r.stdout
        assert _line(r.stdout, live).startswith("kept %s:" % live), r.stdout
        assert not os.path.exists(os.path.join(PINS, dead))
        assert not os.path.exists(_cgroup(dead))
        assert not os.path.exists(os.path.join(OWNERS, dead))
        # SIGKILL is delivered at once but a process takes its time to exit
        # on a loaded machine: gone or a zombie within seconds, not at once
        for q in sleeper:
            deadline = time.time() + 10
            while not _gone(q):
                assert time.time() < deadline, (q, open("/proc/%d/stat" % q).read())
                time.sleep(0.05)
        # the live one is untouched and still filters: its command still runs
        assert pl.poll() is None and os.path.isdir(os.path.join(PINS, live)) and _procs(live)
        r = _gc(live)
        assert _line(r.stdout, live).startswith("kept"), r.stdout
        pl.send_signal(signal.SIGTERM)
        pl.wait(timeout=15)
        assert not os.path.exists(os.path.join(PINS, live))
        assert not os.path.exists(os.path.join(OWNERS, live))
    finally:
        _cleanup([dead, live], procs)


def test_gc_keeps_an_ownerless_sandbox_with_processes(w):
    name = "gc%dc" % os.getpid()
    procs = []
    try:
        p = _start(w, name)
        procs.append(p)
        p.kill()
        p.wait()
        os.unlink(os.path.join(OWNERS, name))   # as an older sluice left it
        r = _gc("--dry-run", name)
        l = _line(r.stdout, name)
        assert l.startswith("kept") and "no owner record" in l and "processes run in" in l, l
        r = _gc(name)
        assert _line(r.stdout, name).startswith("kept") and os.path.isdir(os.path.join(PINS, name))
        # detach --force removes it all the same (its cgroup's processes first)
        r = subprocess.run([W.SLUICE, "detach", "--force", name], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r
        assert "without the daemon" in r.stdout and "killed 2 processes" in r.stdout, r.stdout
        assert not os.path.exists(os.path.join(PINS, name)) and not os.path.exists(_cgroup(name))
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
                q.wait()
        if os.path.isdir(os.path.join(PINS, name)):
            subprocess.run([W.SLUICE, "detach", "--force", name], capture_output=True)


def test_detach_force_refuses_a_live_owner(w):
    name = "gc%dd" % os.getpid()
    procs = []
    try:
        p = _start(w, name)
        procs.append(p)
        r = subprocess.run([W.SLUICE, "detach", "--force", name], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "which is running" in r.stderr, r
        assert os.path.isdir(os.path.join(PINS, name)) and _procs(name)
        r = subprocess.run([W.SLUICE, "detach", "--force", "nosuch%d" % os.getpid()],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "no sandbox named" in r.stderr, r
    finally:
        _cleanup([name], procs)


def test_gc_usage_errors(w):
    r = _gc("--bogus")
    assert r.returncode == 2
    r = _gc("x" * 61)
    assert r.returncode == 2 and "at most 60" in r.stderr, r
    r = _gc("--dry-run", "nosuch%d" % os.getpid())
    assert r.returncode == 0 and "no such sandbox" in r.stdout, r


def test_gc_removes_a_stale_owner_record(w):
    name = "gc%de" % os.getpid()
    os.makedirs(OWNERS, exist_ok=True)
    # a record whose sandbox was removed by hand, its owner long gone
    with open(os.path.join(OWNERS, name), "w") as f:
        f.write("run 999999999 12345\n")
    try:
        r = _gc("--dry-run", name)
        assert "would remove %s: a stale owner record" % name in r.stdout, r.stdout
        assert os.path.exists(os.path.join(OWNERS, name))
        r = _gc(name)
        assert "removed %s: a stale owner record" % name in r.stdout, r.stdout
        assert not os.path.exists(os.path.join(OWNERS, name))
        # a live owner's record is kept even without pins (it may be starting)
        with open(os.path.join(OWNERS, name), "w") as f:
            f.write("run %d %s\n" % (os.getpid(), open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]))
        r = _gc(name)
        assert os.path.exists(os.path.join(OWNERS, name)), r.stdout
    finally:
        try:
            os.unlink(os.path.join(OWNERS, name))
        except FileNotFoundError:
            pass


INSPECT = """\
version: 1
name: gc-inspect
allow:
  - host: api.example.com
    ports: [443]
    inspect: true
    why: a policy that inspects, so the daemon publishes a sandbox CA
"""


def test_detach_force_removes_every_file_the_daemon_kept(w):
    """A daemon killed with SIGKILL leaves its sandbox's record, policy and
    published CA certificate (NAME.ca.pem) in its state dir; detach --force
    removes them all, not only the record and the policy."""
    import test_daemon as TD
    d = TD.Daemon(w)
    name = "gc%df" % os.getpid()
    a = None
    try:
        a = TD.Workload(w, "gcf")
        r = d.ctl("attach", "--policy", w.write("gc-inspect.yaml", INSPECT), "--cgroup", a.cg,
                  "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r
        sbx = os.path.join(d.state, "sandboxes")
        ca = d.status()[name]["ca_cert"]
        assert ca == os.path.join(sbx, name + ".ca.pem") and os.path.exists(ca), d.status()
        d.kill9()
        left = sorted(f for f in os.listdir(sbx) if f.startswith(name + "."))
        # the record, the policy, the published CA and the event sequence
        # page (daemon_events.c; the resolvers' drop counts are on it too)
        assert left == [name + ext for ext in (".ca.pem", ".json", ".seq", ".yaml")], left
        r = subprocess.run([W.SLUICE, "detach", "--force", "--state-dir", d.state, name],
                           capture_output=True, text=True, timeout=60, env=d.env)
        assert r.returncode == 0 and "ca.pem" in r.stdout, r
        assert [f for f in os.listdir(sbx) if f.startswith(name + ".")] == [], os.listdir(sbx)
        assert not os.path.exists(os.path.join(PINS, name))
    finally:
        d.close()
        subprocess.run([W.SLUICE, "detach", "--force", "--state-dir", d.state, name], capture_output=True, timeout=60,
                       env=d.env)
        if a:
            a.close()
