"""The seccomp socket family filter of `sluice run` holds on every way a
64-bit process has into the kernel's socket creation, not only socket(2):
the i386 ABI through `int $0x80` (socket 359, and socketcall 102 whose
arguments seccomp cannot read), the x32 ABI (__X32_SYSCALL_BIT) and
io_uring's IORING_OP_SOCKET (issue 21; loader/seccomp_families.c).

tests/integration/sockabi.c, compiled here with cc, asks for one socket of
a family through each path.  Each path is first shown to create the
socket outside the sandbox (so a refusal inside is the filter's, and the
test can fail); inside, with the seccomp path forced (--no-lsm, as the
fallback tests do), under both profiles, every path is refused with EPERM
and logged with the ABI it came through.  Controls: inet keeps working
through the i386 socket call, and a family the policy names is created
through it too (the rule follows the policy, it is no blanket refusal).
Where `int $0x80` itself faults (sockabi says "NOABI": a kernel booted
with ia32_emulation=false, or a VM that does not deliver it, like this
project's CI machines) the i386 paths do not exist, inside or outside;
the tests then hold the other paths and check the i386 ones say so.
"""
import atexit
import json
import os
import platform
import shutil
import subprocess
import tempfile

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "sockabi.c")
AF_INET, AF_PACKET, AF_VSOCK = 2, 17, 40
PATHS = ("native", "socketpair", "i386", "socketcall", "x32", "io_uring")

POLICY = "version: 1\nname: seccomp-abi\nallow: []\n"
POLICY_VSOCK = POLICY + "families:\n  - family: vsock\n    why: the control - a family the policy names\n"

_BIN = {}


def _binary():
    """sockabi, built once per process into a directory every user can read
    (the sandbox profile runs CMD as nobody, with a fresh /tmp)."""
    if "path" not in _BIN:
        if platform.machine() != "x86_64":
            raise W.Skip("the i386 and x32 paths are x86-64's")
        if not shutil.which("cc"):
            raise W.Skip("no C compiler")
        d = tempfile.mkdtemp(prefix="sockabi-", dir=W.BUILD)
        atexit.register(shutil.rmtree, d, True)
        os.chmod(d, 0o755)
        out = os.path.join(d, "sockabi")
        subprocess.run(["cc", "-O2", "-Wall", "-o", out, SRC], check=True, capture_output=True, timeout=120)
        _BIN["path"], _BIN["dir"] = out, d
    return _BIN["path"]


def _outside(family):
    """The paths' results outside any sandbox (root, all capabilities)."""
    p = subprocess.run([_binary(), str(family)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p
    return json.loads(p.stdout)


def _i386():
    """Does the i386 ABI (`int $0x80`) reach the kernel on this machine?"""
    if "i386" not in _BIN:
        _BIN["i386"] = _outside(AF_INET)["i386"] != "NOABI"
    return _BIN["i386"]


def _compat(verdict):
    """What the i386 paths answer where the ABI exists: `verdict`."""
    return verdict if _i386() else "NOABI"


def _inside(w, family, paths=(), policy=POLICY, profile="egress-only", extra=()):
    extra = ["--no-lsm"] + list(extra)
    if profile == "sandbox":
        extra += ["--workdir", _BIN["dir"]]
    r = w.sluice_run([_binary(), str(family), "0"] + list(paths), policy=policy, extra=extra, profile=profile)
    assert r.rc == 0, r
    start = [e for e in r.events if e.get("event.action") == "sandbox-start"]
    assert start and start[0]["sluice.families_enforced_by"] in ("seccomp", "bpf_lsm+seccomp"), r.events
    got = json.loads(r.stdout.strip().splitlines()[-1])
    denied = [e for e in r.events if e.get("event.action") == "syscall-denied"]
    return got, denied, start[0]


def test_every_path_creates_the_socket_outside(w):
    """The control of the other tests: outside the sandbox each path makes a
    vsock and a packet socket (x32 only where the kernel has
    CONFIG_X86_X32_ABI; without it ENOSYS)."""
    for fam in (AF_VSOCK, AF_PACKET):
        got = _outside(fam)
        if got["native"] == "EAFNOSUPPORT":
            raise W.Skip("no AF_%d in this kernel" % fam)
        for p in ("native", "i386", "socketcall", "io_uring"):
            if p == "io_uring" and got[p] in ("EPERM", "ENOSYS"):
                continue  # io_uring disabled on this host (kernel.io_uring_disabled)
            assert got[p] == (_compat("created") if p in ("i386", "socketcall") else "created"), (fam, p, got)
        assert got["x32"] in ("created", "ENOSYS"), got


def _check_refused(w, profile):
    for fam in (AF_VSOCK, AF_PACKET):
        out = _outside(fam)
        if out["native"] == "EAFNOSUPPORT":
            continue
        # at most five refusals are logged per run: the compat paths first, alone
        got, denied, _ = _inside(w, fam, ("i386", "socketcall", "x32", "io_uring"), profile=profile)
        assert got == {"i386": _compat("EPERM"), "socketcall": _compat("EPERM"), "x32": "EPERM",
                       "io_uring": "EPERM"}, (fam, got)
        seen = {(e["sluice.syscall"], e.get("sluice.syscall_abi"), e.get("sluice.socket_family")) for e in denied}
        # x32 is refused by the filter even where the kernel has no x32 (ENOSYS outside)
        want = {("socket", "x32", fam)}
        if _i386():
            want |= {("socket", "i386", fam), ("socketcall", "i386", None)}
        assert want <= seen, (fam, seen)
        if out["io_uring"] == "created":
            assert ("io_uring_setup", None, None) in seen, (fam, seen)
        got, _, _ = _inside(w, fam, ("native", "socketpair"), profile=profile)
        assert got == {"native": "EPERM", "socketpair": "EPERM"}, (fam, got)


def test_compat_abis_refused_under_egress_only(w):
    """--profile egress-only, no BPF LSM: the filter's socket family rows
    alone, for every ABI of the filter."""
    _binary()
    _check_refused(w, "egress-only")


def test_compat_abis_refused_under_the_sandbox_profile(w):
    """The default profile's baseline holds the same rows."""
    _binary()
    _check_refused(w, "sandbox")


def test_inet_through_i386_and_a_named_family_still_work(w):
    """The filter is the policy's rule on each ABI, not a refusal of the
    compat ABI: inet through the i386 socket call is created, and so is
    vsock once the policy names it.  socketcall(SYS_SOCKET) stays refused
    for every family (its arguments are in memory) and io_uring too."""
    got, _, start = _inside(w, AF_INET)
    assert got["native"] == "created" and got["i386"] == _compat("created"), got
    assert got["socketcall"] == _compat("EPERM") and got["io_uring"] == "EPERM", got
    assert "io_uring allowed" not in start["message"], start
    # --allow-io-uring (the kernel hook tests): io_uring left alone, and the start line says so
    got, _, start = _inside(w, AF_INET, ("io_uring",), extra=["--allow-io-uring"])
    assert "io_uring allowed" in start["message"], start
    if _outside(AF_INET)["io_uring"] == "created":
        assert got["io_uring"] == "created", got
    if _outside(AF_VSOCK)["native"] == "EAFNOSUPPORT":
        raise W.Skip("no AF_VSOCK in this kernel")
    got, _, _ = _inside(w, AF_VSOCK, ("native", "i386", "x32"), policy=POLICY_VSOCK)
    assert got["native"] == "created" and got["i386"] == _compat("created"), got
    assert got["x32"] in ("created", "ENOSYS"), got   # named: the kernel's own answer

