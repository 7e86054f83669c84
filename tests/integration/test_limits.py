"""Resource limits of `sluice run`: --timeout everywhere; --memory, --pids
and --cpu where the cgroup v2 hierarchy has the controllers, and a clear
refusal (exit 2, nothing made) where it does not (hybrid layout).
"""
import os
import time

import world as W


def _cg2():
    return [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]


def _controllers():
    with open(os.path.join(_cg2(), "cgroup.controllers")) as f:
        return set(f.read().split())


def _v1_bound(controller):
    for l in open("/proc/mounts"):
        p = l.split()
        if p[2] == "cgroup" and controller in p[3].split(","):
            return True
    return False


def test_timeout_kills_the_whole_sandbox_and_exits_124(w):
    # a grandchild in its own session ignores SIGTERM/SIGHUP: cgroup.kill still gets it
    marker = os.path.join(w.tmp, "survivor")
    script = ("trap '' TERM HUP; setsid sh -c 'trap \"\" TERM HUP; sleep 3; touch %s' & sleep 30" % marker)
    t0 = time.time()
    r = w.sluice_run(["sh", "-c", script], extra=["--timeout", "1"])
    took = time.time() - t0
    assert r.rc == 124, r
    assert took < 10, took
    time.sleep(3.5)
    assert not os.path.exists(marker), "a process of the sandbox outlived --timeout"
    actions = [e["event.action"] for e in r.events]
    assert "sandbox-timeout" in actions and actions[-1] == "sandbox-stop", actions
    stop = r.events[-1]
    assert "exit status 124" in stop["message"], stop


def test_timeout_not_reached_keeps_the_commands_status(w):
    r = w.sluice_run(["sh", "-c", "exit 5"], extra=["--timeout", "30"])
    assert r.rc == 5, r
    assert "sandbox-timeout" not in [e["event.action"] for e in r.events]


def test_bad_limit_values_are_usage_errors(w):
    for opt, val in (("--memory", "1X"), ("--memory", "10K"), ("--pids", "0"), ("--cpu", "0"),
                     ("--timeout", "-1"), ("--timeout", "5 s")):
        r = w.sluice_run(["true"], extra=[opt, val])
        assert r.rc == 2, (opt, val, r)
        assert opt in r.stderr and len(r.stderr.strip().splitlines()) == 1, (opt, val, r.stderr)
        assert r.events == [], (opt, val, r.events)


def _v1_mount(controller):
    for l in open("/proc/mounts"):
        p = l.split()
        if p[2] == "cgroup" and controller in p[3].split(","):
            return p[1]
    return None


def _enforceable(ctl):
    return ctl in _controllers() or _v1_bound(ctl)


def _where(ctl):
    return "cgroup v2" if ctl in _controllers() else "cgroup v1 (hybrid layout)"


def _no_v1_leftovers(name):
    for ctl in ("memory", "pids", "cpu"):
        m = _v1_mount(ctl)
        if m:
            assert not os.path.exists(os.path.join(m, "sluice", name)), "v1 cgroup left behind: %s/sluice/%s" % (m, name)


def test_missing_controllers_are_refused_not_ignored(w):
    """A limit that neither the v2 hierarchy nor a v1 one can enforce is
    refused (exit 2, nothing made)."""
    tried = 0
    for opt, val, ctl in (("--memory", "256M", "memory"), ("--pids", "64", "pids"), ("--cpu", "0.5", "cpu")):
        if _enforceable(ctl):
            continue
        tried += 1
        name = "lim%d-%s" % (os.getpid() % 100000, ctl)
        r = w.sluice_run(["true"], extra=["--name", name, opt, val])
        assert r.rc == 2, (opt, r)
        msg = r.stderr.strip()
        assert len(msg.splitlines()) == 1, msg
        assert "the cgroup v2 hierarchy" in msg and "no %s controller" % ctl in msg, msg
        assert "%s cannot be enforced" % opt in msg, msg
        assert r.events == [], r.events          # nothing ran, nothing was logged
        assert not [l for l in W.leftovers() if name in l], "state left behind"
    if not tried:
        raise W.Skip("every controller is in the v2 hierarchy or a v1 one: nothing to refuse here")


def test_pids_limit_contains_a_fork_bomb(w):
    if not _enforceable("pids"):
        raise W.Skip("no pids controller in any cgroup hierarchy")
    name = "limpids-%d" % os.getpid()
    r = w.sluice_run(["python3", "-c",
                      "import os, time\nn = 0\nfor i in range(200):\n"
                      "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
                      "    if pid == 0:\n        time.sleep(5); os._exit(0)\n    n += 1\nprint('forked', n)"],
                     extra=["--name", name, "--pids", "16", "--timeout", "20"])
    forked = int(r.stdout.split()[-1])
    assert forked < 16, (_where("pids"), r)
    hit = [e for e in r.events if e.get("event.action") == "limit-exceeded"]
    assert hit and hit[0]["message"].startswith("pids:"), r.events
    assert hit[0]["sluice.limit"] == "pids" and hit[0]["sluice.limit_value"] == 16 and hit[0]["sluice.limit_hits"] >= 1
    _no_v1_leftovers(name)


def test_memory_limit_kills_a_hog(w):
    if not _enforceable("memory"):
        raise W.Skip("no memory controller in any cgroup hierarchy")
    name = "limmem-%d" % os.getpid()
    r = w.sluice_run(["python3", "-c", "b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096]); print('survived')"],
                     extra=["--name", name, "--memory", "64M", "--timeout", "30"])
    assert "survived" not in r.stdout and r.rc == 128 + 9, (_where("memory"), r)   # SIGKILL by the OOM killer
    hit = [e for e in r.events if e.get("event.action") == "limit-exceeded"]
    assert hit and hit[0]["message"].startswith("memory:"), r.events
    assert hit[0]["sluice.limit"] == "memory" and hit[0]["sluice.limit_value"] == 64 << 20, hit
    assert hit[0]["sluice.limit_hits"] >= 1, hit
    _no_v1_leftovers(name)
    # the control: the same program without the limit survives
    r = w.sluice_run(["python3", "-c", "b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096]); print('survived')"],
                     extra=["--timeout", "30"])
    assert "survived" in r.stdout, r


BUSY = ("import time\nt = time.time()\nwhile time.time() - t < 3:\n    pass\n"
        "print('cpu', time.process_time())")


def test_cpu_limit_bounds_a_busy_loop(w):
    if not _enforceable("cpu"):
        raise W.Skip("no cpu controller in any cgroup hierarchy")
    name = "limcpu-%d" % os.getpid()
    r = w.sluice_run(["python3", "-c", BUSY], extra=["--name", name, "--cpu", "0.1", "--timeout", "30"])
    c = w.sluice_run(["python3", "-c", BUSY], extra=["--timeout", "30"])
    used, free = float(r.stdout.split()[-1]), float(c.stdout.split()[-1])
    # 0.1 CPU for 3 s is 0.3 s of CPU time (some slack for the period and
    # python's start); unlimited, up to 3 s, less on a busy machine
    assert used < 0.5, (_where("cpu"), used, r)
    assert free > used + 0.2, (used, free, c)
    _no_v1_leftovers(name)
