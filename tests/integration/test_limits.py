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


def test_missing_controllers_are_refused_not_ignored(w):
    have = _controllers()
    tried = 0
    for opt, val, ctl in (("--memory", "256M", "memory"), ("--pids", "64", "pids"), ("--cpu", "0.5", "cpu")):
        if ctl in have:
            continue
        tried += 1
        name = "lim%d-%s" % (os.getpid() % 100000, ctl)
        r = w.sluice_run(["true"], extra=["--name", name, opt, val])
        assert r.rc == 2, (opt, r)
        msg = r.stderr.strip()
        assert len(msg.splitlines()) == 1, msg
        assert "the cgroup v2 hierarchy" in msg and "no %s controller" % ctl in msg, msg
        assert "%s cannot be enforced" % opt in msg, msg
        if _v1_bound(ctl):
            assert "hybrid layout" in msg, msg
        assert r.events == [], r.events          # nothing ran, nothing was logged
        assert not [l for l in W.leftovers() if name in l], "state left behind"
    if not tried:
        raise W.Skip("the cgroup v2 hierarchy has every controller: nothing to refuse here")


def test_pids_limit_contains_a_fork_bomb(w):
    if "pids" not in _controllers():
        raise W.Skip("no pids controller in the cgroup v2 hierarchy (hybrid layout)")
    r = w.sluice_run(["python3", "-c",
                      "import os, time\nn = 0\nfor i in range(200):\n"
                      "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
                      "    if pid == 0:\n        time.sleep(5); os._exit(0)\n    n += 1\nprint('forked', n)"],
                     extra=["--pids", "20", "--timeout", "20"])
    forked = int(r.stdout.split()[-1])
    assert forked < 20, r


def test_memory_limit_kills_a_hog(w):
    if "memory" not in _controllers():
        raise W.Skip("no memory controller in the cgroup v2 hierarchy (hybrid layout)")
    r = w.sluice_run(["python3", "-c", "b = bytearray(512 << 20); b[::4096] = b'x' * len(b[::4096]); print('survived')"],
                     extra=["--memory", "64M", "--timeout", "30"])
    assert "survived" not in r.stdout and r.rc != 0, r


def test_cpu_limit_is_written(w):
    if "cpu" not in _controllers():
        raise W.Skip("no cpu controller in the cgroup v2 hierarchy (hybrid layout)")
    r = w.sluice_run(["sh", "-c", "cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat %s/cpu.max" % _cg2()],
                     extra=["--cpu", "0.5"])
    assert "50000 100000" in r.stdout, r
