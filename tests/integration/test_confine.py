"""`sluice run`'s default confinement (--profile sandbox, issue 13): the
identity CMD runs as, a read-only host with one writable workdir, fresh
tmpfs state, host sockets out of sight, Landlock and the seccomp baseline;
--profile egress-only as before; bad input refused with nothing made.
Real runs under `sluice run`; every check has a control that would fail
without the confinement.
"""
import contextlib
import ctypes
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import world as W

NOBODY = 65534


def _env(**extra):
    """The environment without the sudo/pkexec variables a test runner may carry."""
    env = {k: v for k, v in os.environ.items() if k not in ("SUDO_UID", "SUDO_GID", "SUDO_USER", "PKEXEC_UID")}
    env.update(extra)
    return env


@contextlib.contextmanager
def _workdir(uid=NOBODY, gid=NOBODY):
    """A workdir outside /tmp (the sandbox's /tmp is a fresh tmpfs) owned by uid:gid."""
    d = tempfile.mkdtemp(prefix="confine-wd-", dir=W.BUILD)
    os.chown(d, uid, gid)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _run(w, argv, workdir=None, extra=(), env=None, profile=None, netns=True, policy=None):
    ex = list(extra)
    if workdir:
        ex = ["--workdir", workdir] + ex
    return w.sluice_run(argv, policy=policy, extra=ex, env=env if env is not None else _env(), profile=profile,
                        netns=netns)


def _unix_policy(name):
    """A policy whose `unix:` entry lets the sandbox reach `name` (the
    kernel's unix hooks refuse every other unix socket), so that what these
    tests see is the file-system or Landlock layer, not the policy."""
    return ("version: 1\nname: confine-unix\nallow:\n  - unix: %s\n    why: the test's listener\n"
            % json.dumps(name))


def _py(code):
    return ["python3", "-c", code]


def _start(r):
    s = [e for e in r.events if e.get("event.action") == "sandbox-start"]
    assert len(s) == 1, r
    return s[0]


def _landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint(1))  # landlock_create_ruleset VERSION
    return r if r > 0 else 0


@contextlib.contextmanager
def _throwaway_user():
    """A user made for the test (useradd), with a home holding ~/.ssh/id_test; removed after."""
    name = "sluicet%d" % (os.getpid() % 100000)
    home = "/home/" + name
    subprocess.run(["userdel", "-r", name], capture_output=True)
    W.sh("useradd", "-M", "-d", home, "-s", "/usr/sbin/nologin", "-U", name)
    try:
        pw = pwd.getpwnam(name)
        os.makedirs(os.path.join(home, ".ssh"), mode=0o700)
        with open(os.path.join(home, ".ssh", "id_test"), "w") as f:
            f.write("SECRET-KEY\n")
        os.makedirs(os.path.join(home, "proj"))
        for d, _, files in os.walk(home):
            os.chown(d, pw.pw_uid, pw.pw_gid)
            for fn in files:
                os.chown(os.path.join(d, fn), pw.pw_uid, pw.pw_gid)
        yield pw
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        subprocess.run(["groupdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


# --- identity -------------------------------------------------------------

def test_default_user_is_unprivileged_and_cannot_become_root(w):
    with _workdir() as wd:
        r = _run(w, ["sh", "-c", "id -u; id -g; id -G; grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; "
                     "python3 -c 'import os\ntry:\n os.setuid(0); print(\"SETUID-OK\")\nexcept OSError as e: print(\"setuid\", e.errno)'"],
                 workdir=wd)
    assert r.rc == 0, r
    out = r.stdout.split("\n")
    assert out[0] == str(NOBODY) and out[1] == str(NOBODY) and out[2] == str(NOBODY), r.stdout  # no other groups
    for cap in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        assert "%s:\t0000000000000000" % cap in r.stdout, r.stdout
    assert "NoNewPrivs:\t1" in r.stdout, r.stdout
    assert "setuid 1" in r.stdout and "SETUID-OK" not in r.stdout, r.stdout   # EPERM
    s = _start(r)
    assert s["sluice.profile"] == "sandbox" and s["user.id"] == str(NOBODY), s
    assert "user %s (65534:65534, default)" % pwd.getpwuid(NOBODY).pw_name in s["message"], s


def test_sudo_user_is_the_default_and_its_home_is_hidden(w):
    with _throwaway_user() as pw:
        proj = os.path.join(pw.pw_dir, "proj")
        r = _run(w, ["sh", "-c", "id -u; id -g; echo HOME=$HOME; pwd; ls -A %s; cat %s/.ssh/id_test; "
                     "echo note > %s/dropped; echo work > out.txt" % (pw.pw_dir, pw.pw_dir, pw.pw_dir)],
                 workdir=proj, env=_env(SUDO_UID=str(pw.pw_uid), SUDO_GID=str(pw.pw_gid), SUDO_USER=pw.pw_name))
        assert r.rc == 0, r
        out = r.stdout.split("\n")
        assert out[0] == str(pw.pw_uid) and out[1] == str(pw.pw_gid), r.stdout
        assert "HOME=%s" % pw.pw_dir in r.stdout and proj in out, r.stdout
        # the home is an empty tmpfs but for the workdir bound into it
        assert "SECRET-KEY" not in r.stdout and ".ssh" not in r.stdout, r.stdout
        assert "No such file" in r.stderr, r.stderr
        # what CMD wrote in its home is gone, what it wrote in the workdir is there
        assert not os.path.exists(os.path.join(pw.pw_dir, "dropped"))
        with open(os.path.join(proj, "out.txt")) as f:
            assert f.read() == "work\n"
        s = _start(r)
        assert s["user.id"] == str(pw.pw_uid) and s["user.name"] == pw.pw_name and "SUDO_UID" in s["message"], s


def test_user_root_keeps_root_and_says_so(w):
    with _workdir(0, 0) as wd:
        r = _run(w, ["sh", "-c", "id -u; touch /etc/sluice-x 2>&1; echo rc=$?"], workdir=wd, extra=["--user", "root"])
    assert r.rc == 0, r
    assert r.stdout.startswith("0\n") and "Read-only file system" in r.stdout, r.stdout
    assert not os.path.exists("/etc/sluice-x")
    s = _start(r)
    assert s["user.id"] == "0" and s["user.name"] == "root" and s["sluice.profile"] == "sandbox", s


# --- file system ------------------------------------------------------------

def test_host_read_only_workdir_writable_and_kept(w):
    marker = "sluice-confine-%d" % os.getpid()
    with _workdir() as wd:
        script = ("for p in /etc/%s /usr/%s /var/%s; do (echo x > $p) 2>/dev/null && echo WROTE $p || echo refused $p; done; "
                  "echo kept > result.txt; echo cwd=$(pwd)" % (marker, marker, marker))
        r = _run(w, ["sh", "-c", script], workdir=wd)
        assert r.rc == 0, r
        for p in ("/etc/", "/usr/", "/var/"):
            assert "refused %s%s" % (p, marker) in r.stdout, r.stdout
            assert not os.path.exists(p + marker)
        assert "cwd=%s" % wd in r.stdout, r.stdout
        with open(os.path.join(wd, "result.txt")) as f:
            assert f.read() == "kept\n"


def test_tmp_is_fresh_and_forgotten(w):
    marker = "sluice-confine-tmp-%d" % os.getpid()
    with open(os.path.join("/tmp", marker + "-host"), "w") as f:
        f.write("host\n")
    try:
        with _workdir() as wd:
            r = _run(w, ["sh", "-c", "ls -A /tmp /var/tmp /dev/shm | grep -c . ; for d in /tmp /var/tmp /dev/shm; do "
                         "echo x > $d/%s || exit 9; done; ls /tmp" % marker], workdir=wd)
        assert r.rc == 0, r
        # ls -A of three empty directories prints only their three headers
        assert r.stdout.split("\n")[0] == "3", r.stdout
        assert marker + "-host" not in r.stdout, r.stdout
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            assert not os.path.exists(os.path.join(d, marker)), d
    finally:
        os.unlink(os.path.join("/tmp", marker + "-host"))


def test_ro_rw_and_hide(w):
    with _workdir() as wd, _workdir() as extra:
        os.makedirs(os.path.join(wd, "ro"))
        os.makedirs(os.path.join(wd, "secret"))
        with open(os.path.join(wd, "secret", "token"), "w") as f:
            f.write("TOKEN\n")
        os.chown(os.path.join(wd, "ro"), NOBODY, NOBODY)
        r = _run(w, ["sh", "-c", "(echo x > ro/f) 2>&1; ls -A secret | grep -c . ; echo y > %s/f && echo RW-OK" % extra],
                 workdir=wd, extra=["--ro", os.path.join(wd, "ro"), "--hide", os.path.join(wd, "secret"),
                                    "--rw", extra])
        assert r.rc == 0, r
        assert "Read-only file system" in r.stdout and "RW-OK" in r.stdout, r.stdout
        assert r.stdout.split("\n")[1] == "0", r.stdout   # secret/ is empty inside
        assert not os.path.exists(os.path.join(wd, "ro", "f"))
        assert os.path.exists(os.path.join(extra, "f"))
        with open(os.path.join(wd, "secret", "token")) as f:
            assert f.read() == "TOKEN\n"


FS_POLICY = """\
version: 1
name: confine-fs
filesystem:
  workdir: %(wd)s
  read_only: [%(ro)s]
  read_write: [%(rw)s]
  hide: [%(secret)s]
allow: []
"""


def test_policy_filesystem_section(w):
    """The policy's `filesystem:` section does what --workdir, --ro, --rw
    and --hide do; the command line adds to it and --workdir replaces its
    workdir; a path it names wrongly is refused with its file:line."""
    with _workdir() as wd, _workdir() as rw, _workdir() as other:
        ro, secret = os.path.join(wd, "ro"), os.path.join(wd, "secret")
        os.makedirs(ro)
        os.makedirs(secret)
        os.chown(ro, NOBODY, NOBODY)
        with open(os.path.join(secret, "token"), "w") as f:
            f.write("TOKEN\n")
        pol = w.write("fs-policy.yaml", FS_POLICY % {"wd": wd, "ro": ro, "rw": rw, "secret": secret})
        script = "pwd; (echo x > ro/f) 2>&1; ls -A secret | grep -c . ; echo y > %s/f && echo RW-OK; echo z > w && echo WD-OK" % rw
        r = _run(w, ["sh", "-c", script], policy=pol)
        assert r.rc == 0, r
        out = r.stdout.split("\n")
        assert out[0] == wd, r.stdout                       # CMD starts in the policy's workdir
        assert "Read-only file system" in out[1], r.stdout
        assert out[2] == "0", r.stdout                      # secret/ is empty inside
        assert "RW-OK" in r.stdout and "WD-OK" in r.stdout, r.stdout
        assert os.path.exists(os.path.join(rw, "f")) and os.path.exists(os.path.join(wd, "w"))
        assert not os.path.exists(os.path.join(ro, "f"))
        # --workdir replaces the policy's; the policy's paths stay in force
        r = _run(w, ["sh", "-c", "pwd; ls -A %s | grep -c . ; true" % secret], workdir=other, policy=pol)
        assert r.rc == 0 and r.stdout.split() == [other, "0"], r
        # the sandbox-start line says the profile; egress-only would drop the section: refused
        events = os.path.join(w.tmp, "fs-egress.jsonl")
        p = subprocess.run([W.SLUICE, "run", "--events", events, "--profile", "egress-only", "--policy", pol, "--",
                            "true"], capture_output=True, text=True, env=_env(), timeout=30)
        assert p.returncode == 2 and "%s:3: the policy's filesystem section needs --profile sandbox" % pol in p.stderr, p
        assert not os.path.exists(events)
        # a path that does not exist, named by its line
        bad = w.write("fs-bad.yaml", FS_POLICY % {"wd": wd, "ro": "/nonexistent-sluice-ro", "rw": rw,
                                                  "secret": secret})
        p = subprocess.run([W.SLUICE, "run", "--events", events, "--policy", bad, "--", "true"], capture_output=True,
                           text=True, env=_env(), timeout=30)
        assert p.returncode == 2 and "%s:5: filesystem.read_only /nonexistent-sluice-ro: No such file" % bad \
            in p.stderr, p
        # a system directory made writable by the policy needs --force-rw on the command line
        sysrw = w.write("fs-sys.yaml", FS_POLICY % {"wd": wd, "ro": ro, "rw": "/usr/local", "secret": secret})
        p = subprocess.run([W.SLUICE, "run", "--events", events, "--policy", sysrw, "--", "true"],
                           capture_output=True, text=True, env=_env(), timeout=30)
        assert p.returncode == 2 and "%s:6: filesystem.read_write /usr/local" % sysrw in p.stderr \
            and "--force-rw" in p.stderr, p
        assert not os.path.exists(events)


def test_status_lists_the_run_and_its_landlock_abi(w):
    """`sluice status` shows the `sluice run` sandboxes of the host (from
    their owner records) with the confinement in force: profile, user,
    Landlock ABI; also with no daemon (exit 2 then, as before)."""
    name = "confstatus-%d" % os.getpid()
    with _workdir() as wd:
        mark = os.path.join(wd, "go")
        env = _env(SLUICE_CONTROL_SOCK=os.path.join(w.tmp, "no-daemon.sock"))
        p = subprocess.Popen([W.SLUICE, "run", "--name", name, "--workdir", wd, "--events",
                              os.path.join(w.tmp, "confstatus.jsonl"), "--", "sh", "-c",
                              "touch ready; while [ ! -e go ]; do sleep 0.05; done"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 20
            while not os.path.exists(os.path.join(wd, "ready")):
                assert time.time() < deadline and p.poll() is None, p.stderr.read() if p.poll() is not None else "slow"
                time.sleep(0.05)
            r = subprocess.run([W.SLUICE, "status"], capture_output=True, text=True, env=env, timeout=30)
            assert r.returncode == 2, r   # no daemon answers
            line = [l for l in r.stdout.splitlines() if l.strip().startswith(name + " ")]
            assert len(line) == 1, r.stdout
            abi = ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)   # landlock_create_ruleset(VERSION)
            assert "profile sandbox" in line[0] and "user nobody" in line[0], line
            assert ("landlock ABI %d" % abi) in line[0] if abi > 0 else "landlock" in line[0], line
            assert "policy default-deny" in line[0] and "mode enforce" in line[0], line
        finally:
            open(mark, "w").close()
            p.wait(timeout=30)
        r = subprocess.run([W.SLUICE, "status"], capture_output=True, text=True, env=env, timeout=30)
        assert name not in r.stdout, r.stdout


def _unix_listener(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    if path[0] != "\0":
        os.chmod(path, 0o777)   # DAC is not what keeps the sandbox out
    s.listen(4)
    return s


CONNECT = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
           "try:\n s.connect(sys.argv[1].replace('@','\\0')); print('CONNECTED')\nexcept OSError as e: print('refused', e.errno)")


def test_host_socket_under_run_is_out_of_reach(w):
    path = "/run/sluice-confine-%d.sock" % os.getpid()
    lst = _unix_listener(path)
    try:
        with _workdir() as wd:
            r = _run(w, ["python3", "-c", CONNECT, path], workdir=wd, policy=_unix_policy(path))
            c = _run(w, ["python3", "-c", CONNECT, path], profile="egress-only", policy=_unix_policy(path))
        assert r.rc == 0 and "refused 2" in r.stdout, r     # ENOENT: /run is a fresh tmpfs
        assert "CONNECTED" in c.stdout, c                    # the control reaches it
    finally:
        lst.close()
        os.unlink(path)


def test_landlock_scopes_abstract_unix_sockets(w):
    abi = _landlock_abi()
    if abi < 6:
        raise W.Skip("Landlock ABI %d: abstract unix socket scoping needs ABI 6 (Linux 6.12)" % abi)
    name = "@sluice-confine-%d" % os.getpid()
    lst = _unix_listener(name.replace("@", "\0"))
    try:
        with _workdir() as wd:
            # without --netns: the abstract namespace is the host netns's, as it is by default
            r = _run(w, ["python3", "-c", CONNECT, name], workdir=wd, netns=False, policy=_unix_policy(name))
            c = _run(w, ["python3", "-c", CONNECT, name], netns=False, profile="egress-only", policy=_unix_policy(name))
        assert r.rc == 0 and "refused 1" in r.stdout, r      # EPERM from Landlock
        assert "CONNECTED" in c.stdout, c
        assert _start(r)["sluice.landlock_abi"] == abi, _start(r)
    finally:
        lst.close()


# --- seccomp ----------------------------------------------------------------

SYSCALLS = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    return 0 if r >= 0 else ctypes.get_errno()
# x86-64 numbers; NULL attributes: EFAULT/EINVAL from the kernel, EPERM from seccomp
print("bpf", call(321, 5, 0, 0))
print("perf_event_open", call(298, 0, 0, -1, -1, 0))
print("keyctl", call(250, 0, 0, 0, 0, 0))
print("userfaultfd", call(323, 0))
print("mount", call(165, 0, 0, 0, 0, 0))
"""


def test_seccomp_baseline_refuses_bpf_and_perf(w):
    if os.uname().machine != "x86_64":
        raise W.Skip("the syscall numbers of this test are x86-64's")
    with _workdir(0, 0) as wd:
        # as root with every capability kept: only seccomp can say EPERM
        r = _run(w, ["python3", "-c", SYSCALLS], workdir=wd, extra=["--user", "root", "--keep-caps"])
        c = _run(w, ["python3", "-c", SYSCALLS], profile="egress-only", extra=["--keep-caps"])
    with _workdir() as wd:
        u = _run(w, ["sh", "-c", "python3 -c '%s'; grep ^Seccomp: /proc/self/status; unshare -U true 2>&1; echo unshare=$?"
                     % SYSCALLS.replace("'", "\"")], workdir=wd)
    got = dict(l.split() for l in r.stdout.splitlines() if l)
    ctl = dict(l.split() for l in c.stdout.splitlines() if l)
    for name in ("bpf", "perf_event_open", "keyctl", "userfaultfd", "mount"):
        assert got[name] == "1", (name, r.stdout)            # EPERM
        assert ctl[name] != "1", (name, c.stdout)             # the kernel's own answer
    assert "Seccomp:\t2" in u.stdout and "unshare=1" in u.stdout, u.stdout
    assert "bpf 1" in u.stdout and "perf_event_open 1" in u.stdout, u.stdout
    # each refusal is counted, the first few logged with the system call's name
    for res in (r, u):
        denied = [e for e in res.events if e.get("event.action") == "syscall-denied"]
        assert [e["sluice.syscall"] for e in denied][:4] == ["bpf", "perf_event_open", "keyctl", "userfaultfd"], denied
        assert len(denied) == 5 and denied[-1]["sluice.syscalls_denied"] == 5, denied
        stop = res.events[-1]
        assert stop["event.action"] == "sandbox-stop", stop
    assert "syscalls refused 5" in r.events[-1]["message"], r.events[-1]
    # u: the five calls, unshare -U (CLONE_NEWUSER), and whatever sh and python add
    assert int(u.events[-1]["message"].rsplit(" ", 1)[1]) >= 6, u.events[-1]
    assert not [e for e in c.events if e.get("event.action") == "syscall-denied"], c.events


# --- egress-only --------------------------------------------------------------

def test_egress_only_is_the_old_behaviour(w):
    marker = os.path.join(w.tmp, "egress-only-wrote")
    r = _run(w, ["sh", "-c", "id -u; echo $HOME; echo x > %s; ls -d /run/* | grep -c ." % marker], profile="egress-only",
             env=_env(HOME="/root"))
    assert r.rc == 0, r
    out = r.stdout.split("\n")
    assert out[0] == "0" and out[1] == "/root" and int(out[2]) > 0, r.stdout
    assert os.path.exists(marker)
    s = _start(r)
    assert s["sluice.profile"] == "egress-only" and s["user.id"] == "0" and s["sluice.landlock_abi"] == 0, s


# --- bad input ------------------------------------------------------------------

def test_bad_input_exits_2_with_nothing_made(w):
    with _workdir() as wd:
        cases = [
            (["--workdir", "/nonexistent-sluice"], "No such file"),
            (["--workdir", "/"], "root"),
            (["--workdir", wd, "--rw", "/"], "root"),
            (["--workdir", wd, "--rw", "/etc"], "system directory"),
            (["--workdir", wd, "--rw", "/usr/lib"], "system directory"),
            (["--workdir", "/usr"], "system directory"),
            (["--workdir", wd, "--user", "no-such-user-sluice"], "no user"),
            (["--workdir", wd, "--user", "nobody:no-such-group-sluice"], "no group"),
            (["--workdir", wd, "--ro", wd + "/../x"], ".."),
            (["--workdir", wd + "/a/.."], ".."),
            (["--workdir", wd, "--hide", "/nonexistent-sluice"], "No such file"),
            (["--profile", "bogus"], "--profile"),
            (["--workdir", wd, "--keep-caps"], "--user root"),
            (["--profile", "egress-only", "--user", "nobody"], "belong to --profile sandbox"),
        ]
        for extra, what in cases:
            events = os.path.join(w.tmp, "bad-%d.jsonl" % len(extra))
            p = subprocess.run([W.SLUICE, "run", "--events", events] + extra + ["--", "true"], capture_output=True,
                               text=True, env=_env(), timeout=30)
            assert p.returncode == 2, (extra, p)
            lines = [l for l in p.stderr.strip().splitlines() if l]
            assert len(lines) == 1 and what in lines[0], (extra, p.stderr)
            assert not os.path.exists(events), extra     # nothing was started
        # the same with --force-rw is accepted
        r = _run(w, ["true"], workdir=wd, extra=["--rw", "/usr/local", "--force-rw"])
        assert r.rc == 0, r


def test_cgroup_v1_hierarchies_are_read_only(w):
    """L10: on a hybrid layout the v1 hierarchies are visible; under the
    default profile they are read-only, even for --user root
    (attacks::test_cgroup_a_v1_hierarchy_root is the egress-only control)."""
    # the machine's hierarchies (other copies, under a test's /var/tmp, are out of the sandbox's sight)
    v1 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup" and l.split()[1].startswith("/sys/")]
    if not v1:
        raise W.Skip("no cgroup v1 hierarchy on this machine")
    script = "; ".join("(echo $$ > %s/cgroup.procs) 2>&1 | grep -q 'Read-only file system' && echo ro %s" % (m, m)
                       for m in v1)
    with _workdir(0, 0) as wd:
        r = _run(w, ["sh", "-c", script], workdir=wd, extra=["--user", "root"])
    for m in v1:
        assert "ro %s" % m in r.stdout, (m, r)


def test_stdout_file_can_be_reopened(w):
    """`sluice run ... > out.log`: the command may reopen its stdout file
    (`> /dev/stdout`) although it lies outside the writable paths; Landlock
    allows that one file, no other beside it."""
    out = os.path.join(w.tmp, "stdout-%d.log" % os.getpid())
    sibling = os.path.join(w.tmp, "sibling-%d.log" % os.getpid())
    with open(out, "a") as f:
        os.chmod(out, 0o666)
        with open(sibling, "w") as g:
            g.write("")
        os.chmod(sibling, 0o666)
        with _workdir() as wd:
            p = subprocess.run([W.SLUICE, "run", "--events", os.path.join(w.tmp, "reopen.jsonl"), "--workdir", wd,
                                "--", "sh", "-c", "echo direct; echo reopened >> /dev/stdout; "
                                "(echo x > /proc/self/fd/1/../%s) 2>/dev/null; "
                                "python3 -c 'import os; os.open(\"/proc/%%d/fd/1\" %% os.getpid(), os.O_WRONLY|os.O_APPEND)' "
                                "&& echo py-reopened" % os.path.basename(sibling)],
                               stdout=f, stderr=subprocess.PIPE, text=True, env=_env(), timeout=60)
    with open(out) as f:
        text = f.read()
    assert p.returncode == 0, (p, text)
    assert text == "direct\nreopened\npy-reopened\n", text
    with open(sibling) as g:
        assert g.read() == ""
