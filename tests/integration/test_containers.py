"""Containers filtered from their first instruction: `sluice oci-hook` run by
the runtime itself (podman with --hooks-dir, runc) at createRuntime, before
the container's entrypoint runs.  The containers join the test world's
sandbox netns (`--network ns:PATH`), so everything they send stays in the
world's namespaces; their entrypoints try the world's servers at once, with
no sleep: whatever arrives was let through from the first instruction on.
"""
import json
import os
import shutil
import subprocess
import time

import world as W
import test_daemon as TD

POLICY = """\
version: 1
name: ctr-web
allow:
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: the database
"""

# the entrypoint: a denied port, then an allowed one, at once
FIRST = ("echo hi | nc -w 2 192.0.2.10 9000; echo denied_rc=$?; "
         "echo hi | nc -w 2 192.0.2.10 5432; echo allowed_rc=$?")


def need_podman():
    if not shutil.which("podman") or not os.path.exists("/bin/busybox"):
        raise W.Skip("podman or busybox-static not installed (make deps)")


class Hooked:
    """A daemon with a policy directory of the admin's (--policy-dir) and a
    hooks.d directory made with `sluice oci-hook --print-config` (what
    docs/containers.md says to install in /usr/share/containers/oci/hooks.d/)."""

    def __init__(self, w, extra=(), wrap=()):
        self.w = w
        self.poldir = os.path.join(w.tmp, "policies-%d" % time.monotonic_ns())
        os.makedirs(self.poldir)
        self.d = TD.Daemon(w, extra=["--policy-dir", self.poldir], wrap=wrap)
        self.hooks = os.path.join(self.d.state, "hooks.d")
        os.makedirs(self.hooks)
        with open(os.path.join(self.poldir, "web.yaml"), "w") as f:
            f.write(POLICY)
        r = subprocess.run([W.SLUICE, "oci-hook", "--print-config", "--control-socket", self.d.env["SLUICE_CONTROL_SOCK"]] + list(extra),
                           capture_output=True, text=True)
        assert r.returncode == 0, r
        cfg = json.loads(r.stdout)
        assert cfg["stages"] == ["createRuntime", "poststop"], cfg
        with open(os.path.join(self.hooks, "sluice.json"), "w") as f:
            f.write(r.stdout)
        self.names = []

    def run(self, tag, annotations, cmd=FIRST, network=None, timeout=120):
        """`podman run` (foreground, --rm) with the hook; returns (CompletedProcess, container id)."""
        name = "slcctr%s%d" % (tag, os.getpid())
        cid = os.path.join(self.w.tmp, name + ".cid")
        self.names.append(name)
        argv = ["podman", "--hooks-dir", self.hooks, "run", "--rm", "--name", name, "--cidfile", cid,
                "--runtime", "runc", "--cgroup-manager=cgroupfs",
                "--network", network or ("ns:" + self.w.sbx_path),
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
        for k, v in annotations.items():
            argv += ["--annotation", "%s=%s" % (k, v)]
        # --rootfs is a flag: the next argument is the root file system, then the command
        r = subprocess.run(argv + ["--rootfs", TD._rootfs(self.w), "/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=timeout)
        if r.returncode == 125 and "hook" not in r.stderr and "sluice" not in r.stderr:
            raise W.Skip("podman cannot run containers here: " + r.stderr.strip()[-300:])
        ident = open(cid).read().strip() if os.path.exists(cid) else None
        return r, ident

    def close(self):
        for n in self.names:
            subprocess.run(["podman", "rm", "-f", "-t", "0", n], capture_output=True, timeout=120)
        self.d.close()


def wait_gone(d, name, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline and name in d.status():
        time.sleep(0.1)
    return name not in d.status()


def test_hook_filters_the_entrypoint_from_its_first_instruction(w):
    need_podman()
    h = Hooked(w)
    try:
        mark = w.mark()
        r, cid = h.run("first", {"io.sluice.policy": "web", "io.sluice.name": "web1-%d" % os.getpid()})
        assert r.returncode == 0, r
        assert "denied_rc=1" in r.stdout and "Operation not permitted" in r.stderr, r
        assert "allowed_rc=0" in r.stdout, r
        time.sleep(0.3)
        assert w.arrived_since(mark, port=9000) == [], "the denied destination got traffic"
        assert w.arrived_since(mark, port=5432, proto="tcp"), "the allowed destination got nothing"
        name = "web1-%d" % os.getpid()
        ev = h.d.events_of(name)
        den = [e for e in ev if e.get("event.action") == "egress-denied" and e.get("destination.port") == 9000]
        assert den, ev
        assert den[0]["container.id"] == cid and den[0]["container.name"] == name, den[0]
        assert den[0]["container.runtime"] == "podman", den[0]
        att = [e for e in ev if e.get("event.action") == "sandbox-attach"]
        assert att and att[0]["container.id"] == cid, ev
        # poststop (or the daemon seeing the cgroup go) removed the sandbox and its pins
        assert wait_gone(h.d, name), h.d.status()
        assert not os.path.exists("/sys/fs/bpf/sluice/" + name)
        W.SEEN.extend(ev)
    finally:
        h.close()


def test_hook_default_name_audit_mode_and_status(w):
    """io.sluice.mode=audit lets the denied destination through, logged as
    would-deny; without io.sluice.name the sandbox is the id's first 12
    characters; status shows the runtime while the container runs."""
    need_podman()
    h = Hooked(w)
    try:
        mark = w.mark()
        cmd = FIRST + "; " + "i=0; while [ $i -lt 100 ] && [ ! -e /tmp/stop ]; do i=$((i+1)); sleep 0.1; done"
        cid = None
        # in the background, to look at status while it lives
        name = "slcctraudit%d" % os.getpid()
        h.names.append(name)
        cidf = os.path.join(w.tmp, name + ".cid")
        p = subprocess.Popen(["podman", "--hooks-dir", h.hooks, "run", "--rm", "--name", name, "--cidfile", cidf,
                              "--runtime", "runc", "--cgroup-manager=cgroupfs", "--network", "ns:" + w.sbx_path,
                              "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                              "--annotation", "io.sluice.policy=web.yaml", "--annotation", "io.sluice.mode=audit",
                              "--rootfs", TD._rootfs(w), "/bin/sh", "-c", cmd],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        st = {}
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(cidf) and open(cidf).read().strip():
                cid = open(cidf).read().strip()
                st = h.d.status()
                if cid[:12] in st:
                    break
            time.sleep(0.1)
        assert cid and cid[:12] in st, (st, p.poll())
        s = st[cid[:12]]
        assert s["runtime"] == "podman" and s["container_id"] == cid and s["mode"] == "audit", s
        out = h.d.ctl("status")
        assert "runtime podman" in out.stdout, out.stdout
        subprocess.run(["podman", "exec", name, "sh", "-c", ": > /tmp/stop"], capture_output=True, timeout=60)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, (out, err)
        assert "denied_rc=0" in out and "allowed_rc=0" in out, (out, err)
        time.sleep(0.3)
        assert w.arrived_since(mark, port=9000), "audit mode blocked"
        ev = h.d.events_of(cid[:12])
        wd = [e for e in ev if e.get("event.action") == "egress-would-deny" and e.get("destination.port") == 9000]
        assert wd and wd[0]["container.id"] == cid, ev
        assert wait_gone(h.d, cid[:12])
        W.SEEN.extend(ev)
    finally:
        h.close()


def _refused(h, w, tag, annotations, why):
    mark = w.mark()
    r, _ = h.run(tag, annotations, cmd="echo started; " + FIRST)
    assert r.returncode != 0, r
    assert "started" not in r.stdout, r
    assert why in r.stderr, r.stderr
    time.sleep(0.3)
    assert w.arrived_since(mark) == [], "a refused container sent traffic"
    assert h.d.status() == {}, h.d.status()
    lines = [e for e in W.read_events(h.d.events) if e.get("event.action") in ("oci-hook-refused",
                                                                              "sandbox-attach-refused")]
    assert lines and why in lines[-1]["message"], lines
    return lines[-1]


def test_hook_missing_policy_stops_the_container(w):
    need_podman()
    h = Hooked(w)
    try:
        line = _refused(h, w, "missing", {"io.sluice.policy": "nosuch"}, "policy 'nosuch'")
        assert line["event.action"] == "sandbox-attach-refused" and "(container " in line["message"], line
    finally:
        h.close()


def test_hook_refuses_a_path_and_a_bad_mode(w):
    need_podman()
    h = Hooked(w)
    try:
        pol = w.write("outside.yaml", POLICY)
        line = _refused(h, w, "path", {"io.sluice.policy": pol}, "is a path")
        assert line["event.action"] == "oci-hook-refused" and line["container.runtime"] == "podman", line
        assert len(line["container.id"]) == 64, line
        _refused(h, w, "dots", {"io.sluice.policy": "../policies/web"}, "is a path")
        _refused(h, w, "dot", {"io.sluice.policy": ".hidden"}, "may only hold")
        _refused(h, w, "mode", {"io.sluice.policy": "web", "io.sluice.mode": "off"}, "audit or enforce")
    finally:
        h.close()


def test_hook_invalid_policy_file_is_refused_by_the_daemon(w):
    need_podman()
    h = Hooked(w)
    try:
        with open(os.path.join(h.poldir, "broken.yaml"), "w") as f:
            f.write("version: 1\nname: broken\nallow:\n  - cidr: 300.1.2.3/32\n    why: x\n")
        line = _refused(h, w, "broken", {"io.sluice.policy": "broken"}, "broken.yaml:")
        assert line["event.action"] == "sandbox-attach-refused", line
    finally:
        h.close()


def test_hook_without_a_daemon_stops_the_container(w):
    need_podman()
    h = Hooked(w)
    try:
        h.d.proc.terminate()
        h.d.proc.wait(timeout=10)
        mark = w.mark()
        r, _ = h.run("nodaemon", {"io.sluice.policy": "web"}, cmd="echo started; " + FIRST)
        assert r.returncode != 0 and "started" not in r.stdout, r
        assert "cannot reach the sluice daemon" in r.stderr, r.stderr
        time.sleep(0.3)
        assert w.arrived_since(mark) == []
    finally:
        h.close()


def test_hook_leaves_unannotated_containers_alone(w):
    need_podman()
    h = Hooked(w)
    try:
        r, _ = h.run("plain", {}, cmd="echo started")
        assert r.returncode == 0 and "started" in r.stdout, r
        assert not [e for e in W.read_events(h.d.events) if "container.id" in e]
    finally:
        h.close()


def test_hook_default_policy_applies_to_unannotated_containers(w):
    need_podman()
    h = Hooked(w, extra=["--default-policy", "web"])
    try:
        cfg = json.load(open(os.path.join(h.hooks, "sluice.json")))
        assert cfg["when"] == {"always": True}, cfg
        mark = w.mark()
        r, cid = h.run("dflt", {})
        assert r.returncode == 0 and "denied_rc=1" in r.stdout and "allowed_rc=0" in r.stdout, r
        time.sleep(0.3)
        assert w.arrived_since(mark, port=9000) == []
        assert any(e.get("container.id") == cid for e in h.d.events_of(cid[:12]))
    finally:
        h.close()


def test_daemon_in_its_own_mount_namespace_readopts_a_hooked_container(w):
    """A daemon whose mount namespace dies with it (a container's: the
    Kubernetes DaemonSet) loses its netns bind mounts; restarted, it finds
    each sandbox's netns again through a process of its cgroup, and the
    proxy listens in the container's netns again."""
    need_podman()
    h = Hooked(w, wrap=["unshare", "-m", "--propagation", "private"])
    name = "slcctrreadopt%d" % os.getpid()
    try:
        with open(os.path.join(h.poldir, "proxied.yaml"), "w") as f:
            f.write(POLICY + "  - host: api.example.com\n    ports: [443]\n    why: through the proxy\n")
        h.names.append(name)
        r = subprocess.run(["podman", "--hooks-dir", h.hooks, "run", "-d", "--name", name, "--runtime", "runc",
                            "--cgroup-manager=cgroupfs", "--network", "ns:" + w.sbx_path,
                            "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                            "--annotation", "io.sluice.policy=proxied", "--annotation", "io.sluice.name=" + name,
                            "--rootfs", TD._rootfs(w), "/bin/sh", "-c", "sleep 600"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r

        def ex(cmd):
            return subprocess.run(["podman", "exec", name, "sh", "-c", cmd], capture_output=True, text=True,
                                  timeout=60)
        assert "403" in ex("wget -S -O- http://127.0.0.1:443/ 2>&1").stdout
        h.d.kill9()
        # its bind mount went with its mount namespace: an empty file is left
        kept = os.path.join(h.d.state, "netns", name)
        assert os.path.exists(kept) and os.stat(kept).st_dev == os.stat(h.d.state).st_dev
        h.d.start()
        st = h.d.status()[name]
        assert st["proxy_pid"] > 0 and st["runtime"] == "podman", st
        assert "403" in ex("wget -S -O- http://127.0.0.1:443/ 2>&1").stdout
        assert "Operation not permitted" in ex("echo hi | nc -w 2 192.0.2.10 9000").stderr
        err = open(os.path.join(w.tmp, "daemon.err")).read()
        assert "found again through pid" in err, err[-2000:]
    finally:
        h.close()


def test_runc_directly_with_the_hook_in_config_json(w):
    """An OCI runtime without an engine: the hooks in the bundle's
    config.json, as docs/containers.md shows them for runc and crun."""
    if not shutil.which("runc") or not os.path.exists("/bin/busybox"):
        raise W.Skip("runc or busybox-static not installed (make deps)")
    h = Hooked(w)
    name = "slcrunc%d" % os.getpid()
    bundle, root = os.path.join(w.tmp, "bundle-" + name), os.path.join(w.tmp, "runc-root")
    mounts = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] in ("cgroup", "cgroup2")]
    try:
        os.makedirs(bundle)
        W.sh("runc", "spec", "--bundle", bundle)
        cfgp = os.path.join(bundle, "config.json")
        cfg = json.load(open(cfgp))
        hook = {"path": W.SLUICE, "args": ["sluice", "oci-hook", "--control-socket", h.d.env["SLUICE_CONTROL_SOCK"]]}
        cfg["hooks"] = {"createRuntime": [hook], "poststop": [hook]}
        cfg["annotations"] = {"io.sluice.policy": "web", "io.sluice.name": name}
        cfg["root"] = {"path": TD._rootfs(w), "readonly": True}
        cfg["process"]["terminal"] = False
        cfg["process"]["args"] = ["/bin/sh", "-c", FIRST]
        cfg["linux"]["cgroupsPath"] = "/" + name
        for ns in cfg["linux"]["namespaces"]:
            if ns["type"] == "network":
                ns["path"] = w.sbx_path
        json.dump(cfg, open(cfgp, "w"))
        mark = w.mark()
        r = subprocess.run(["runc", "--root", root, "run", "--bundle", bundle, name], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r
        assert "denied_rc=1" in r.stdout and "allowed_rc=0" in r.stdout, r
        time.sleep(0.3)
        assert w.arrived_since(mark, port=9000) == [] and w.arrived_since(mark, port=5432)
        ev = [e for e in h.d.events_of(name) if e.get("event.action") == "egress-denied"]
        assert ev and ev[0]["container.id"] == name and ev[0]["container.runtime"] == "oci", ev
        assert wait_gone(h.d, name)
        # a missing policy: runc refuses to start it
        cfg["annotations"]["io.sluice.policy"] = "nosuch"
        json.dump(cfg, open(cfgp, "w"))
        r = subprocess.run(["runc", "--root", root, "run", "--bundle", bundle, name], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        assert r.returncode != 0 and "denied_rc" not in r.stdout and "policy 'nosuch'" in r.stderr, r
    finally:
        subprocess.run(["runc", "--root", root, "delete", "-f", name], capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)
        for m in mounts:
            try:
                os.rmdir(os.path.join(m, name))
            except OSError:
                pass
        h.close()
