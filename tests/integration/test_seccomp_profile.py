"""`sluice policy seccomp POLICY`: the OCI seccomp profile of a policy's
`families:` for containers (a daemon's sandbox has no seccomp filter of
sluice's; without the BPF LSM this profile is what refuses vsock, packet
and the rest).  Real podman (runc, cgroupfs, --network none) with the
profile: an AF_PACKET and an AF_VSOCK socket are refused, an AF_INET one
is made; the control, the same container without the profile, makes them
(so a refusal is the profile's: --cap-add NET_RAW, or packet would fail on
the capability).  Standalone (allow by default, every ABI of the machine)
and merged into podman's own default profile (--base; native ABI alone,
another ABI killed).  Bad input: exit 2, nothing written.
"""
import json
import os
import shutil
import subprocess
import tempfile

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "sockabi.c")
PODMAN_DEFAULT = "/usr/share/containers/seccomp.json"
AF_UNIX, AF_INET, AF_PACKET, AF_VSOCK = 1, 2, 17, 40
SIGSYS = 31

POLICY = "version: 1\nname: seccomp-profile\nallow: []\n"
POLICY_VSOCK = POLICY + "families:\n  - family: vsock\n    why: the control - a family the policy names\n"


def _need():
    if not shutil.which("podman") or not os.path.exists("/bin/busybox"):
        raise W.Skip("podman or busybox-static not installed (make deps)")
    if not shutil.which("cc"):
        raise W.Skip("no C compiler")
    if os.uname().machine != "x86_64":
        raise W.Skip("sockabi is x86-64's")


def _rootfs(w):
    """busybox and a static sockabi (made once per world)."""
    root = os.path.join(w.tmp, "seccomp-rootfs")
    if os.path.exists(os.path.join(root, "bin", "sockabi")):
        return root
    for sub in ("bin", "proc", "sys", "dev", "etc", "tmp"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    os.symlink("busybox", os.path.join(root, "bin", "sh"))
    r = subprocess.run(["cc", "-static", "-O2", "-o", os.path.join(root, "bin", "sockabi"), SRC],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise W.Skip("cannot link sockabi statically: " + r.stderr[-300:])
    return root


def _profile(w, policy, base=None):
    pol = w.write("seccomp-policy-%d.yaml" % len(os.listdir(w.tmp)), policy)
    out = os.path.join(w.tmp, "seccomp-%d.json" % len(os.listdir(w.tmp)))
    argv = [W.SLUICE, "policy", "seccomp", "-o", out] + (["--base", base] if base else []) + [pol]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "", r
    with open(out) as f:
        return out, json.load(f), r.stderr


def _podman(w, profile, family, paths=()):
    """sockabi FAMILY 0 PATHS... in a container; returns (returncode, the JSON line or None)."""
    argv = ["podman", "run", "--rm", "--runtime", "runc", "--cgroup-manager=cgroupfs", "--network", "none",
            "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--cap-add", "NET_RAW"]
    if profile:
        argv += ["--security-opt", "seccomp=" + profile]
    argv += ["--rootfs", _rootfs(w), "/bin/sockabi", str(family), "0"] + list(paths)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    if r.returncode == 125:
        raise W.Skip("podman cannot run containers here: " + r.stderr.strip()[-300:])
    line = [l for l in r.stdout.splitlines() if l.startswith("{")]
    return r.returncode, (json.loads(line[-1]) if line else None)


def _i386(w):
    """Does the i386 ABI (`int $0x80`) reach the kernel on this machine?
    Where it faults (sockabi: "NOABI"; this project's CI machines) the i386
    paths do not exist, in a container either: they then say so."""
    if "i386" not in _I386:
        r = subprocess.run([os.path.join(_rootfs(w), "bin", "sockabi"), str(AF_INET), "0", "i386"],
                           capture_output=True, text=True, timeout=30)
        _I386["i386"] = json.loads(r.stdout.strip().splitlines()[-1])["i386"] != "NOABI"
    return _I386["i386"]


_I386 = {}


def _compat(w, verdict):
    """What the i386 paths answer where the ABI exists: `verdict`."""
    return verdict if _i386(w) else "NOABI"


def _controls(w):
    """The families the container makes without the profile (podman's own
    filter): a refusal with the profile can then only be the profile's."""
    got = {}
    for fam in (AF_PACKET, AF_VSOCK):
        rc, res = _podman(w, None, fam, ("native",))
        assert rc == 0 and res, (fam, rc, res)
        if res["native"] == "created":
            got[fam] = res
    if AF_PACKET not in got:
        raise W.Skip("podman refuses AF_PACKET even with NET_RAW here: nothing to compare with")
    return got


def test_standalone_profile_refuses_packet_and_vsock_in_podman(w):
    """Allow by default, the families rule on x86-64, i386 and x32:
    packet and vsock refused natively and through `int $0x80`; inet made."""
    _need()
    made = _controls(w)
    path, prof, err = _profile(w, POLICY)
    assert prof["defaultAction"] == "SCMP_ACT_ALLOW", prof
    assert prof["architectures"] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"], prof
    assert "replaces the runtime's default" in err, err
    for fam in made:
        rc, res = _podman(w, path, fam, ("native", "socketpair", "i386", "socketcall", "io_uring"))
        assert rc == 0 and res == {"native": "EPERM", "socketpair": "EPERM", "i386": _compat(w, "EPERM"),
                                   "socketcall": _compat(w, "EPERM"), "io_uring": "EPERM"}, (fam, rc, res)
    rc, res = _podman(w, path, AF_INET, ("native", "i386"))
    assert rc == 0 and res == {"native": "created", "i386": _compat(w, "created")}, (rc, res)
    rc, res = _podman(w, path, AF_UNIX, ("native", "socketpair"))
    assert rc == 0 and res == {"native": "created", "socketpair": "created"}, (rc, res)


def test_a_named_family_is_made_with_its_profile(w):
    """families: [vsock] -> the profile lets vsock through, packet stays refused."""
    _need()
    made = _controls(w)
    if AF_VSOCK not in made:
        raise W.Skip("no AF_VSOCK in this kernel or podman refuses it already")
    path, prof, err = _profile(w, POLICY_VSOCK)
    assert "families beyond unix, inet, inet6 and netlink route/sock_diag: vsock" in err, err
    rc, res = _podman(w, path, AF_VSOCK, ("native", "i386"))
    assert rc == 0 and res == {"native": "created", "i386": _compat(w, "created")}, (rc, res)
    rc, res = _podman(w, path, AF_PACKET, ("native",))
    assert rc == 0 and res == {"native": "EPERM"}, (rc, res)


def test_profile_merged_into_podmans_default(w):
    """--base podman's default profile: its rules are kept (default action,
    the rest of its list), its socket rules replaced by ours; its default
    refuses, so the profile is the native ABI's alone and a process calling
    through `int $0x80` is killed (SIGSYS)."""
    _need()
    if not os.path.exists(PODMAN_DEFAULT):
        raise W.Skip("no %s" % PODMAN_DEFAULT)
    with open(PODMAN_DEFAULT) as f:
        base = json.load(f)
    made = _controls(w)
    path, prof, err = _profile(w, POLICY, base=PODMAN_DEFAULT)
    assert prof["defaultAction"] == base["defaultAction"] != "SCMP_ACT_ALLOW", prof["defaultAction"]
    assert prof["architectures"] == ["SCMP_ARCH_X86_64"] and "archMap" not in prof, prof.get("architectures")
    assert "covers the native ABI alone" in err, err
    names = lambda p: {n for e in p["syscalls"] for n in e.get("names", [])}   # noqa: E731
    assert names(base) - {"socket", "socketpair", "socketcall"} <= names(prof), \
        names(base) - names(prof)
    assert "socketcall" not in names(prof)
    for fam in made:
        rc, res = _podman(w, path, fam, ("native", "socketpair", "io_uring"))
        assert rc == 0 and res == {"native": "EPERM", "socketpair": "EPERM", "io_uring": "EPERM"}, (fam, rc, res)
    rc, res = _podman(w, path, AF_INET, ("native",))
    assert rc == 0 and res == {"native": "created"}, (rc, res)
    rc, res = _podman(w, path, AF_INET, ("i386",))
    if _i386(w):
        assert rc in (128 + SIGSYS, -SIGSYS) and res is None, (rc, res)
    else:
        assert rc == 0 and res == {"i386": "NOABI"}, (rc, res)


def test_bad_input(w):
    """A bad policy (file:line), a base that is no profile, an unwritable -o:
    exit 2, the reason on stderr, nothing on stdout, no file written."""
    d = tempfile.mkdtemp(prefix="seccomp-bad-", dir=w.tmp)
    try:
        bad = os.path.join(d, "bad.yaml")
        with open(bad, "w") as f:
            f.write("version: 1\nname: bad\nfamilies:\n  - family: nosuch\n    why: x\n")
        good = os.path.join(d, "good.yaml")
        with open(good, "w") as f:
            f.write(POLICY)
        notjson = os.path.join(d, "base.json")
        with open(notjson, "w") as f:
            f.write("[1, 2]")
        out = os.path.join(d, "out.json")
        cases = [
            ([bad], "bad.yaml:4"),
            (["--base", notjson, good], "not a seccomp profile"),
            (["--base", os.path.join(d, "missing.json"), good], "not a seccomp profile"),
            (["-o", os.path.join(d, "no", "such", "dir.json"), good], "No such file"),
            ([], "usage"),
            ([good, good], "one policy file"),
        ]
        for args, want in cases:
            r = subprocess.run([W.SLUICE, "policy", "seccomp"] + (["-o", out] if "-o" not in args and args else [])
                               + args, capture_output=True, text=True, timeout=30)
            assert r.returncode == 2 and want in r.stderr and r.stdout == "", (args, r)
            assert not os.path.exists(out), (args, "a profile was written")
        r = subprocess.run([W.SLUICE, "-j", "policy", "seccomp", good], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_attach_line_and_status_say_families_are_not_judged(w):
    """A daemon's sandbox has no seccomp filter of sluice's: where the BPF
    LSM does not load (or --no-lsm), its attach line and `sluice status` say
    that socket families are not judged unless the container runs with the
    profile of `sluice policy seccomp`; with the LSM, status names it."""
    import test_daemon as TD
    d = TD.Daemon(w)
    name = "slcsecc%d" % os.getpid()
    cg = os.path.join(TD.cg2(), name)
    os.mkdir(cg)
    try:
        pol = w.write("seccomp-attach.yaml", POLICY)
        r = d.ctl("attach", "--policy", pol, "--cgroup", cg, "--netns", w.sbx_path, "--name", name)
        assert r.returncode == 0, r
        st = d.status()[name]
        att = [e for e in d.events_of(name) if e.get("event.action") == "sandbox-attach"]
        assert att, d.events_of(name)
        text = d.ctl("status")
        assert text.returncode == 0, text
        if st["bpf_lsm"]:
            assert st["families_enforced_by"] == "bpf_lsm", st
            assert "families    judged by the BPF LSM" in text.stdout, text.stdout
            assert "not judged" not in att[0]["message"], att
        else:
            assert st["families_enforced_by"] == "none", st
            assert "socket families are not judged (no BPF LSM)" in att[0]["message"], att
            assert "sluice policy seccomp" in att[0]["message"], att
            assert "families    NOT judged (no BPF LSM)" in text.stdout and "sluice policy seccomp" in text.stdout, \
                text.stdout
        assert d.ctl("detach", name).returncode == 0
    finally:
        d.close()
        try:
            os.rmdir(cg)
        except OSError:
            pass
