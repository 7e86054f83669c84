"""containerd: `sluice attach --container ID` finds a container of
containerd's (`ctr`, namespaces default, k8s.io, moby, or --namespace) and
puts it under a policy.  The container is made with `ctr run --rootfs` on
the test's own busybox root (no image, no registry) in the test world's
sandbox netns.  When no containerd answers on the default socket, the test
starts one of its own (a private socket, root and state under the test's
directory, the CRI plugin off) and stops it after.
"""
import os
import shutil
import subprocess
import time

import world as W
import test_daemon as TD

POLICY = """\
version: 1
name: ctrd-db
allow:
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    why: the database
"""

CONFIG = """\
version = 2
root = "%(dir)s/root"
state = "%(dir)s/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "%(sock)s"
"""


class Containerd:
    def __init__(self, w):
        self.proc = None
        self.env = dict(os.environ)
        # the shims' and runc's state (fifo/, runc/NS, s/): ours to remove if there was none
        self.run_dir_was = os.path.exists("/run/containerd")
        if subprocess.run(["ctr", "version"], capture_output=True, timeout=30).returncode == 0:
            return   # one runs on the default socket: use it
        d = os.path.join(w.tmp, "ctrd")
        os.makedirs(d, exist_ok=True)
        sock = os.path.join(d, "c.sock")
        cfg = os.path.join(d, "config.toml")
        with open(cfg, "w") as f:
            f.write(CONFIG % {"dir": d, "sock": sock})
        self.env["CONTAINERD_ADDRESS"] = sock
        self.log = os.path.join(d, "containerd.log")
        self.proc = subprocess.Popen(["containerd", "--config", cfg], stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "w"), start_new_session=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.ctr("version").returncode == 0:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.close()
        raise W.Skip("containerd does not start here: " + open(self.log).read()[-300:])

    def ctr(self, *args, ns=None, timeout=60):
        argv = ["ctr"] + (["-n", ns] if ns else []) + list(args)
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if not self.run_dir_was:
                shutil.rmtree("/run/containerd", ignore_errors=True)


def test_containerd_container_attached_by_id(w):
    if not shutil.which("containerd") or not shutil.which("ctr") or not os.path.exists("/bin/busybox"):
        raise W.Skip("containerd or busybox-static not installed (make deps)")
    c = Containerd(w)
    d = TD.Daemon(w)
    d.env.update({k: v for k, v in c.env.items() if k == "CONTAINERD_ADDRESS"})
    cid = "slcctrd%d" % os.getpid()
    ns = "slcns%d" % os.getpid()
    # the namespace's cgroups runc makes (v2, and each v1 hierarchy of a hybrid layout)
    mounts = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] in ("cgroup", "cgroup2")]
    parents = [os.path.join(m, ns) for m in mounts if not os.path.exists(os.path.join(m, ns))]
    try:
        # --rootfs is a flag: the root file system is the first argument after the options
        r = c.ctr("run", "-d", "--with-ns", "network:" + w.sbx_path, "--rootfs", TD._rootfs(w), cid,
                  "/bin/sh", "-c", "sleep 600", ns=ns)
        assert r.returncode == 0, r

        def ex(tag, cmd):
            return c.ctr("task", "exec", "--exec-id", tag, cid, "/bin/sh", "-c", cmd, ns=ns)
        mark = w.mark()
        assert ex("pre", "echo hi | nc -w 2 192.0.2.10 9000; echo rc=$?").stdout.strip().endswith("rc=0")
        pol = w.write("ctrd.yaml", POLICY)
        # not in the default namespaces: --namespace finds it; a wrong namespace is refused
        r = d.ctl("attach", "--policy", pol, "--container", cid)
        assert r.returncode == 2 and "no running podman, docker or containerd" in r.stderr, r
        r = d.ctl("attach", "--policy", pol, "--container", cid, "--namespace", "nosuch-ns")
        assert r.returncode == 2 and "containerd has no namespace 'nosuch-ns'" in r.stderr, r
        assert d.status() == {}
        r = d.ctl("attach", "--policy", pol, "--container", cid, "--namespace", ns)
        assert r.returncode == 0, r
        assert "runtime containerd" in r.stdout, r.stdout
        st = d.status()[cid]
        assert st["runtime"] == "containerd" and st["container_id"] == cid, st
        assert st["cgroup"].endswith("/%s/%s" % (ns, cid)), st
        mark = w.mark()
        r = ex("denied", "echo hi | nc -w 2 192.0.2.10 9000; echo rc=$?")
        assert "Operation not permitted" in r.stderr + r.stdout and r.stdout.strip().endswith("rc=1"), r
        r = ex("allowed", "echo hi | nc -w 2 192.0.2.10 5432; echo rc=$?")
        assert r.stdout.strip().endswith("rc=0"), r
        time.sleep(0.3)
        assert w.arrived_since(mark, port=9000) == []
        assert w.arrived_since(mark, port=5432)
        ev = [e for e in d.events_of(cid) if e.get("event.action") == "egress-denied"]
        assert ev and ev[0]["destination.port"] == 9000, ev
        assert ev[0]["container.id"] == cid and ev[0]["container.runtime"] == "containerd", ev[0]
        W.SEEN.extend(d.events_of(cid))
        assert d.ctl("detach", cid).returncode == 0
        assert ex("after", "echo hi | nc -w 2 192.0.2.10 9000; echo rc=$?").stdout.strip().endswith("rc=0")
    finally:
        c.ctr("task", "kill", "-s", "SIGKILL", cid, ns=ns)
        for _ in range(50):
            if c.ctr("task", "rm", "-f", cid, ns=ns).returncode != 0:
                break
            time.sleep(0.1)
        c.ctr("container", "rm", cid, ns=ns)
        c.ctr("namespaces", "rm", ns)
        shutil.rmtree("/run/containerd/runc/" + ns, ignore_errors=True)
        d.close()
        c.close()
        for p in parents:
            for _ in range(50):
                try:
                    os.rmdir(p)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def test_containerd_hook_in_the_runtime_spec_filters_the_first_instruction(w):
    """containerd from the first instruction: `ctr run --config SPEC` with
    the OCI hook in the spec's hooks (what docs/containers.md says to put
    in containerd's base runtime spec); its entrypoint tries a denied and an
    allowed destination at once."""
    import json
    import test_containers as TC
    if not shutil.which("containerd") or not shutil.which("ctr") or not os.path.exists("/bin/busybox"):
        raise W.Skip("containerd or busybox-static not installed (make deps)")
    c = Containerd(w)
    h = TC.Hooked(w)
    cid = "slcctrdh%d" % os.getpid()
    ns = "slcnsh%d" % os.getpid()
    mounts = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] in ("cgroup", "cgroup2")]
    parents = [os.path.join(m, ns) for m in mounts if not os.path.exists(os.path.join(m, ns))]
    try:
        spec = json.loads(c.ctr("oci", "spec").stdout)
        hook = {"path": W.SLUICE, "args": ["sluice", "oci-hook", "--control-socket", h.d.env["SLUICE_CONTROL_SOCK"]]}
        spec["hooks"] = {"createRuntime": [hook], "poststop": [hook]}
        spec["annotations"] = {"io.sluice.policy": "web", "io.sluice.name": cid}
        spec["root"] = {"path": TD._rootfs(w), "readonly": True}
        spec["process"]["terminal"] = False
        spec["process"]["args"] = ["/bin/sh", "-c", TC.FIRST]
        spec["linux"]["cgroupsPath"] = "/%s/%s" % (ns, cid)
        for n in spec["linux"]["namespaces"]:
            if n["type"] == "network":
                n["path"] = w.sbx_path
        specp = w.write("ctrd-spec-%s.json" % cid, json.dumps(spec))
        mark = w.mark()
        r = c.ctr("run", "--config", specp, cid, ns=ns, timeout=120)
        if r.returncode != 0 and "denied_rc" not in r.stdout and "hook" not in r.stderr:
            raise W.Skip("ctr run --config does not run the spec here: " + r.stderr.strip()[-300:])
        assert "denied_rc=1" in r.stdout and "allowed_rc=0" in r.stdout, r
        time.sleep(0.3)
        assert w.arrived_since(mark, port=9000) == [], "the denied destination got traffic"
        assert w.arrived_since(mark, port=5432, proto="tcp"), "the allowed destination got nothing"
        ev = [e for e in h.d.events_of(cid) if e.get("event.action") == "egress-denied"]
        assert ev and ev[0]["container.id"] == cid, ev
        assert TC.wait_gone(h.d, cid, timeout=20), h.d.status()
        W.SEEN.extend(h.d.events_of(cid))
    finally:
        c.ctr("task", "kill", "-s", "SIGKILL", cid, ns=ns)
        for _ in range(50):
            if c.ctr("task", "rm", "-f", cid, ns=ns).returncode != 0:
                break
            time.sleep(0.1)
        c.ctr("container", "rm", cid, ns=ns)
        c.ctr("namespaces", "rm", ns)
        shutil.rmtree("/run/containerd/runc/" + ns, ignore_errors=True)
        h.close()
        c.close()
        for p in parents:
            try:
                os.rmdir(os.path.join(p, cid))
            except OSError:
                pass
            try:
                os.rmdir(p)
            except OSError:
                pass
