"""The command line: -V/--version on the three binaries (with the libbpf
they run with and, for sluice, the kernel features it found), `sluice help
COMMAND` and a distinct --help per command, and --name past the limit
refused (exit 2) by every command that takes one, before anything is made.
"""
import os
import re
import subprocess

import world as W

COMMANDS = ["run", "policy", "daemon", "attach", "detach", "status", "reload", "events", "gc", "version"]


def _sluice(*args, **kw):
    return subprocess.run([W.SLUICE] + list(args), capture_output=True, text=True, timeout=60, **kw)


def _version_h():
    text = open(os.path.join(W.ROOT, "userspace", "lib", "version.h")).read()
    return re.search(r'#define SLUICE_VERSION "([^"]+)"', text).group(1)


def test_version_on_all_three_binaries(w):
    v = _version_h()
    for binary in ("sluice", "sluice-proxy", "sluice-resolver"):
        for flag in ("-V", "--version"):
            r = subprocess.run([os.path.join(W.BUILD, binary), flag], capture_output=True, text=True)
            assert r.returncode == 0, (binary, flag, r)
            lines = r.stdout.splitlines()
            assert lines[0] == "%s v%s" % (binary, v), (binary, lines)
            assert re.match(r"using libbpf v\d+\.\d+", lines[1]), lines
    r = _sluice("version")
    out = r.stdout
    assert r.returncode == 0 and out == _sluice("-V").stdout
    # as root every probe answers: no "unknown" but the LSM line's (securityfs may be unmounted)
    for feature in ("BPF LSM active", "bpf_set_retval", "ring buffer", "cgroup2 mount", "BPF filesystem"):
        line = [l for l in out.splitlines() if l.strip().startswith(feature)]
        assert len(line) == 1, (feature, out)
        if feature in ("bpf_set_retval", "ring buffer"):
            assert re.search(r"\s(yes|no)\b", line[0]), line
    cg2 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
    assert "cgroup2 mount        %s" % cg2 in out, out
    lsm = open("/sys/kernel/security/lsm").read().strip() if os.path.exists("/sys/kernel/security/lsm") else None
    if lsm is not None:
        want = "yes" if "bpf" in lsm.split(",") else "no"
        assert "BPF LSM active       %s" % want in out, (lsm, out)
    # the debian package carries the same version
    changelog = open(os.path.join(W.ROOT, "debian", "changelog")).readline()
    assert "(%s-" % v in changelog or "(%s)" % v in changelog, changelog


def test_help_per_command_is_distinct(w):
    texts = {}
    for c in COMMANDS:
        r = _sluice("help", c)
        assert r.returncode == 0 and r.stdout.startswith("usage: sluice " + c), (c, r)
        h = _sluice(c, "--help")
        assert h.returncode == 0 and h.stdout == r.stdout, (c, h)
        texts[c] = r.stdout
    assert len(set(texts.values())) == len(COMMANDS), "two commands share a help text"
    r = _sluice("help", "policy", "suggest")
    assert r.returncode == 0 and r.stdout.startswith("usage: sluice policy suggest"), r
    r = _sluice("help")
    assert r.returncode == 0 and all((" %s" % c) in r.stdout for c in COMMANDS), r.stdout
    r = _sluice("help", "nosuch")
    assert r.returncode == 2 and "unknown command 'nosuch'" in r.stderr, r


def test_name_past_the_limit_is_refused_everywhere(w):
    long_name = "n" * 61
    ok_name = "n" * 60
    pol = os.path.join(W.ROOT, "policies", "default-deny.yaml")
    cases = [
        ["run", "--name", long_name, "--", "true"],
        ["attach", "--policy", pol, "--cgroup", "/sys/fs/cgroup", "--name", long_name],
        ["reload", "--policy", pol, long_name],
        ["detach", long_name],
        ["detach", "--force", long_name],
        ["gc", long_name],
    ]
    for argv in cases:
        r = _sluice(*argv)
        assert r.returncode == 2, (argv, r)
        assert "61 bytes long: at most 60" in r.stderr, (argv, r.stderr)
    # exactly the limit is a name: run makes the sandbox under it
    r = w.sluice_run(["sh", "-c", "exit 6"], extra=["--name", ok_name])
    assert r.rc == 6, r
    assert any(e.get("sluice.sandbox") == ok_name for e in r.events), r.events[:2]
