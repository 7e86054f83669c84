"""Users who are not root: members of the daemon's user group `sluice run`
through its control socket with a policy of the admin's, by name; the daemon
runs the command as them (SO_PEERCRED), never as root, without the group and
with no_new_privs, filtered from its first instruction.  A non-member is
refused.  The daemon runs in the test world's sandbox netns (nsenter --net:
its mounts stay the host's); the users' clients run there too, and the
command runs in its caller's network and mount namespaces, so its traffic
stays in the world.

Each test makes its own group and users (slcg/slcu/slcn + pid) and removes
them, also on failure.
"""
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time

import world as W
import test_daemon as TD

POLICY = """\
version: 1
name: user-web
allow:
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: the database
"""

# a denied port, then an allowed one, at once; then who the command is
FIRST = ("echo hi | /bin/busybox nc -w 2 192.0.2.10 9000; echo denied_rc=$?; "
         "echo hi | /bin/busybox nc -w 2 192.0.2.10 5432; echo allowed_rc=$?; "
         "echo uid=$(id -u) groups=$(id -G | tr ' ' ,); grep NoNewPrivs /proc/self/status; "
         "echo cgroup=$(grep '^0::' /proc/self/cgroup); test -e /mnt/slc-marker && echo mounts=callers; "
         "pwd; exit 7")

# the caller's own mount namespace, with a file only it sees
PRIVATE_MNT = ["unshare", "-m", "sh", "-c", "mount -t tmpfs slc /mnt && touch /mnt/slc-marker && exec \"$0\" \"$@\""]


class Users:
    """A group, a member and a non-member, made for one test and removed."""

    def __init__(self):
        for tool in ("groupadd", "useradd", "userdel", "groupdel", "setpriv", "nsenter"):
            if not shutil.which(tool):
                raise W.Skip(tool + " not installed")
        if not os.path.exists("/bin/busybox"):
            raise W.Skip("busybox-static not installed (make deps)")
        n = os.getpid()
        self.group, self.member, self.other = "slcg%d" % n, "slcu%d" % n, "slcn%d" % n
        self.made = []
        self._run(["groupadd", self.group])
        self.made.append(("group", self.group))
        for u, extra in ((self.member, ["-G", self.group]), (self.other, [])):
            self._run(["useradd", "-M", "-N", "-g", "users", "-d", "/nonexistent", "-s", "/bin/sh"] + extra + [u])
            self.made.append(("user", u))
        self.gid = grp.getgrnam(self.group).gr_gid

    @staticmethod
    def _run(argv):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r

    def uid(self, user):
        return pwd.getpwnam(user).pw_uid

    def as_user(self, user, argv, env, timeout=120, prefix=(), **kw):
        return subprocess.run(list(prefix) + ["setpriv", "--reuid", user, "--regid", "users", "--init-groups", "--"]
                              + argv, capture_output=True, text=True, env=env, cwd="/", timeout=timeout, **kw)

    def close(self):
        for kind, name in reversed(self.made):
            if kind == "user":
                # whatever of the user still runs (a test that failed midway), by pid
                uid = self.uid(name)
                for p in os.listdir("/proc"):
                    try:
                        if p.isdigit() and os.stat("/proc/" + p).st_uid == uid:
                            os.kill(int(p), signal.SIGKILL)
                    except OSError:
                        pass
                subprocess.run(["userdel", name], capture_output=True)
            else:
                subprocess.run(["groupdel", name], capture_output=True)


class Setup:
    """The users, a policy directory of the admin's, and a daemon that opens
    its socket to the group, in the world's sandbox netns."""

    def __init__(self, w):
        self.w = w
        self.mode = os.stat(w.tmp).st_mode & 0o7777
        self.u = Users()
        self.d = None
        try:
            os.chmod(w.tmp, 0o711)   # the users reach the daemon's state dir (0710 root:GROUP) in it
            self.poldir = os.path.join(w.tmp, "upolicies-%d" % time.monotonic_ns())
            os.makedirs(self.poldir)
            with open(os.path.join(self.poldir, "web.yaml"), "w") as f:
                f.write(POLICY)
            self.d = TD.Daemon(w, extra=["--user-group", self.u.group, "--policy-dir", self.poldir])
        except BaseException:
            self.close()
            raise
        self.env = {"PATH": "/usr/bin:/bin", "SLUICE_CONTROL_SOCK": self.d.env["SLUICE_CONTROL_SOCK"], "LANG": "C"}

    def run(self, user, args, prefix=(), **kw):
        """`sluice run ARGS` as user, from the world's sandbox netns."""
        return self.u.as_user(user, [W.SLUICE, "run"] + args, self.env,
                              prefix=list(prefix) + ["nsenter", "--net=" + self.w.sbx_path], **kw)

    def close(self):
        try:
            if self.d:
                self.d.close()
            cg = os.path.join(TD.cg2(), "sluice")
            for f in os.listdir(cg) if os.path.isdir(cg) else []:
                if f.startswith("u%d-" % self.u.uid(self.u.member)):
                    subprocess.run(["sh", "-c", "echo 1 > %s/cgroup.kill" % os.path.join(cg, f)], capture_output=True)
                    for _ in range(100):
                        try:
                            os.rmdir(os.path.join(cg, f))
                            break
                        except OSError:
                            time.sleep(0.05)
                    shutil.rmtree("/sys/fs/bpf/sluice/" + f, ignore_errors=True)
            # a run still going when the daemon stopped keeps its owner
            # record (kept for the next daemon to adopt it): not after a test
            owners = "/run/sluice/owners"
            for f in os.listdir(owners) if os.path.isdir(owners) else []:
                if f.startswith("u%d-" % self.u.uid(self.u.member)):
                    os.unlink(os.path.join(owners, f))
        finally:
            self.u.close()
            os.chmod(self.w.tmp, self.mode)


def user_lines(d, uid, action):
    return [e for e in W.read_events(d.events) if e.get("event.action") == action
            and "(uid %d)" % uid in e.get("message", "")]


def test_member_runs_a_command_as_itself_filtered_from_the_first_instruction(w):
    s = Setup(w)
    try:
        st = os.stat(s.d.env["SLUICE_CONTROL_SOCK"])
        assert st.st_mode & 0o777 == 0o660 and st.st_gid == s.u.gid, oct(st.st_mode)
        st = os.stat(s.d.state)
        assert st.st_mode & 0o777 == 0o710 and st.st_gid == s.u.gid, oct(st.st_mode)
        mark = w.mark()
        r = s.run(s.u.member, ["--policy", "web", "--", "sh", "-c", FIRST], prefix=PRIVATE_MNT)
        assert r.returncode == 7, r   # the command's own exit status
        out = r.stdout.splitlines()
        uid = s.u.uid(s.u.member)
        assert "denied_rc=1" in out and "allowed_rc=0" in out, r
        assert "Operation not permitted" in r.stderr, r
        who = [l for l in out if l.startswith("uid=")][0]
        assert who.split()[0] == "uid=%d" % uid, who
        # without the user group: nothing in the sandbox reaches the socket
        assert str(s.u.gid) not in who.split()[1].split("=")[1].split(","), who
        assert "NoNewPrivs:\t1" in out, out
        cg = [l for l in out if l.startswith("cgroup=")][0]
        assert "/sluice/u%d-" % uid in cg, cg
        assert "mounts=callers" in out and out[-1] == "/", out
        time.sleep(0.3)
        assert w.arrived_since(mark, port=9000) == [], "the denied destination got traffic"
        assert w.arrived_since(mark, port=5432, proto="tcp"), "the allowed destination got nothing"
        started = user_lines(s.d, uid, "user-run")
        assert len(started) == 1, (started, open(os.path.join(w.tmp, "daemon.err")).read())
        name = started[0]["sluice.sandbox"]
        ev = s.d.events_of(name)
        den = [e for e in ev if e.get("event.action") == "egress-denied" and e.get("destination.port") == 9000]
        assert den, ev
        ended = [e for e in ev if e.get("event.action") == "user-run-exit"]
        assert ended and "exit 7" in ended[0]["message"], ev
        # the run's sandbox is gone: detached, its cgroup and pins removed
        deadline = time.time() + 20
        assert s.d.proc.poll() is None, open(os.path.join(w.tmp, "daemon.err")).read()
        while name in s.d.status() and time.time() < deadline:
            time.sleep(0.1)
        assert name not in s.d.status()
        assert not os.path.exists(os.path.join(TD.cg2(), "sluice", name))
        assert not os.path.exists("/sys/fs/bpf/sluice/" + name)
        W.SEEN.extend(ev)
    finally:
        s.close()


def test_member_stops_its_command_and_sees_only_its_own(w):
    s = Setup(w)
    p = None
    try:
        uid = s.u.uid(s.u.member)
        p = subprocess.Popen(["nsenter", "--net=" + w.sbx_path, "setpriv", "--reuid", s.u.member, "--regid", "users", "--init-groups", "--",
                              W.SLUICE, "run", "--policy", "web", "--", "sh", "-c", "sleep 300 & sleep 300"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=s.env, cwd="/")
        deadline = time.time() + 20
        while not user_lines(s.d, uid, "user-run"):
            assert p.poll() is None and time.time() < deadline, p.communicate()
            time.sleep(0.1)
        name = user_lines(s.d, uid, "user-run")[0]["sluice.sandbox"]
        # the member's status: its own sandbox, nothing else
        r = s.u.as_user(s.u.member, [W.SLUICE, "status", "--json"], s.env)
        assert r.returncode == 0, r
        assert [x["name"] for x in json.loads(r.stdout)["sandboxes"]] == [name], r.stdout
        # a non-member's stop is refused (the socket's mode already)
        r = s.u.as_user(s.u.other, [W.SLUICE, "detach", name], s.env)
        assert r.returncode != 0 and name in s.d.status(), r
        # root's attach-type requests are root's
        r = s.u.as_user(s.u.member, [W.SLUICE, "reload", name, "--policy", os.path.join(s.poldir, "web.yaml")],
                        s.env)
        assert r.returncode != 0 and "root's" in (r.stdout + r.stderr), r
        # Ctrl-C on the client stops the command and what it started
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 128 + signal.SIGKILL, (p.returncode, out, err)
        deadline = time.time() + 20
        while name in s.d.status() and time.time() < deadline:
            time.sleep(0.1)
        assert name not in s.d.status()
        assert not os.path.exists(os.path.join(TD.cg2(), "sluice", name))
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        s.close()


def test_refusals_change_nothing(w):
    s = Setup(w)
    try:
        before = set(s.d.status())
        # a non-member: the socket's mode (0660 root:GROUP) refuses it
        r = s.run(s.u.other, ["--policy", "web", "--", "true"])
        assert r.returncode == 2 and "user group" in r.stderr, r
        # ... and so does the daemon (SO_PEERCRED), were the mode wider
        sock = s.d.env["SLUICE_CONTROL_SOCK"]
        os.chmod(sock, 0o666)
        os.chmod(s.d.state, 0o711)
        r = s.run(s.u.other, ["--policy", "web", "--", "true"])
        os.chmod(s.d.state, 0o710)
        os.chmod(sock, 0o660)
        assert r.returncode == 2 and "permission denied" in r.stderr, r
        deadline = time.time() + 10
        while not [e for e in W.read_events(s.d.events) if e.get("event.action") == "control-client-not-permitted"]:
            assert time.time() < deadline, "no line for the refused client"
            time.sleep(0.1)
        # a member: a policy that does not exist, a path instead of a name
        r = s.run(s.u.member, ["--policy", "nosuch", "--", "true"])
        assert r.returncode == 2 and "nosuch" in r.stderr, r
        assert [e for e in W.read_events(s.d.events) if e.get("event.action") == "sandbox-attach-refused"]
        r = s.run(s.u.member, ["--policy", os.path.join(s.poldir, "web.yaml"), "--", "true"])
        assert r.returncode == 2 and "not a path" in r.stderr, r
        # a root option, and a command that does not exist
        r = s.run(s.u.member, ["--policy", "web", "--netns", w.sbx_path, "--", "true"])
        assert r.returncode == 2 and "root's" in r.stderr, r
        r = s.run(s.u.member, ["--policy", "web", "--", "/nonexistent/cmd"])
        assert r.returncode == 127 and "No such file" in r.stderr, r
        assert set(s.d.status()) == before, s.d.status()
        # root's requests that are a user's: root does not run as root through the daemon
        req = json.dumps({"cmd": "run", "policy_name": "web", "argv": ["true"], "cwd": "/", "env": []})
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(20)
        c.connect(sock)
        c.sendall(req.encode() + b"\n")
        ans = json.loads(c.makefile().readline())
        c.close()
        assert not ans["ok"] and "not root" in ans["error"], ans
    finally:
        s.close()
