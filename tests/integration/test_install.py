"""`make install` / `make uninstall`: the FHS layout, the installed binary
finding its helpers in libexec/sluice/ and its relay list in share/sluice/,
a missing helper refused (exit 2, naming the paths tried), a missing or
read-only DESTDIR refused before anything is copied.

The installed tree is tried for real: in a private mount namespace
(unshare -m) DESTDIR's usr/local is bound over /usr/local, so the installed
/usr/local/bin/sluice runs with the paths compiled into it (the default
PREFIX); nothing outside that namespace sees it.
"""
import os
import shutil
import subprocess
import tempfile

import world as W

PREFIX = "/usr/local"


def _make(*args, check=True):
    # the binaries of SLUICE_BUILD, not a rebuild (OUTPUT is the build dir)
    cmd = ["make", "--no-print-directory", "-C", W.ROOT, "OUTPUT=" + W.BUILD]
    if W.BUILD.rstrip("/").endswith("-san"):
        cmd.append("SANITIZE=1")
    p = subprocess.run(cmd + list(args), capture_output=True, text=True)
    if check:
        assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
    return p


def _installed(dest):
    return sorted(os.path.relpath(os.path.join(d, f), dest)
                  for d, _, fs in os.walk(dest) for f in fs)


def _in_root(dest, argv, timeout=60):
    """argv with DESTDIR's usr/local bound over /usr/local (private mounts)."""
    script = 'mount --bind "$0/usr/local" /usr/local && exec "$@"'
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, dest] + argv,
                          capture_output=True, text=True, timeout=timeout)


def _with_dest(fn):
    dest = tempfile.mkdtemp(prefix="sluice-install-")
    try:
        fn(dest)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def test_install_layout_and_uninstall(w):
    def body(dest):
        _make("install", "DESTDIR=" + dest)
        files = _installed(dest)
        for f in ("usr/local/bin/sluice", "usr/local/libexec/sluice/sluice-proxy",
                  "usr/local/libexec/sluice/sluice-resolver", "usr/local/share/sluice/relays.txt",
                  "usr/local/share/sluice/policies/llm-api.yaml",
                  "usr/local/lib/systemd/system/sluice.service",
                  "usr/local/share/bash-completion/completions/sluice",
                  "usr/local/share/man/man8/sluice.8", "usr/local/share/man/man5/sluice-policy.5",
                  "usr/local/share/man/man7/sluice-events.7"):
            assert f in files, (f, files)
        for f in ("usr/local/bin/sluice", "usr/local/libexec/sluice/sluice-proxy"):
            assert os.access(os.path.join(dest, f), os.X_OK), f
        # the helpers are not in bin: only the loader is a user command
        assert sorted(os.listdir(os.path.join(dest, "usr/local/bin"))) == ["sluice"]
        assert os.path.isdir(os.path.join(dest, "etc/sluice/policies"))
        unit = open(os.path.join(dest, "usr/local/lib/systemd/system/sluice.service")).read()
        assert "ExecStart=/usr/local/bin/sluice daemon" in unit, unit
        # uninstall removes every file install copied
        _make("uninstall", "DESTDIR=" + dest)
        assert _installed(dest) == [], _installed(dest)
    _with_dest(body)


def test_install_prefix_usr_puts_the_unit_path_right(w):
    def body(dest):
        # PREFIX changes the compiled-in helper dir: build into a scratch OUTPUT
        out, root = os.path.join(dest, "build"), os.path.join(dest, "root")
        os.makedirs(root)
        p = subprocess.run(["make", "--no-print-directory", "-C", W.ROOT, "-j2", "OUTPUT=" + out,
                            "PREFIX=/usr", "DESTDIR=" + root, "install"], capture_output=True, text=True)
        assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
        root = os.path.join(dest, "root")
        assert os.path.exists(os.path.join(root, "usr/libexec/sluice/sluice-proxy"))
        with open(os.path.join(root, "usr/bin/sluice"), "rb") as f:
            assert b"/usr/libexec/sluice" in f.read()
        unit = open(os.path.join(root, "usr/lib/systemd/system/sluice.service")).read()
        assert "ExecStart=/usr/bin/sluice daemon" in unit
    _with_dest(body)


def test_installed_binary_runs_with_installed_helpers(w):
    def body(dest):
        _make("install", "DESTDIR=" + dest)
        events = os.path.join(w.tmp, "inst-events.jsonl")
        r = _in_root(dest, [PREFIX + "/bin/sluice", "run", "--netns", w.sbx_path, "--events", events,
                            "--", "sh", "-c", "exit 7"])
        assert r.returncode == 7, (r.returncode, r.stderr)
        # the proxy and resolver that ran are the installed ones
        starts = [e for e in W.read_events(events) if e.get("event.action") == "sandbox-start"]
        assert starts, W.read_events(events)
        # the relay list is found in share/sluice/ (the relay lint fires)
        pol = w.write("relay.yaml", "version: 1\nname: r\nallow:\n  - host: pastebin.com\n    ports: [443]\n    why: test\n")
        r = _in_root(dest, [PREFIX + "/bin/sluice", "policy", "check", pol])
        assert "relay" in r.stdout + r.stderr and r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    _with_dest(body)


def test_missing_helper_is_an_error_naming_the_paths(w):
    def body(dest):
        _make("install", "DESTDIR=" + dest)
        os.unlink(os.path.join(dest, "usr/local/libexec/sluice/sluice-resolver"))
        events = os.path.join(w.tmp, "miss-events.jsonl")
        r = _in_root(dest, [PREFIX + "/bin/sluice", "run", "--netns", w.sbx_path, "--events", events,
                            "--", "true"])
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert "sluice-resolver not found" in r.stderr, r.stderr
        assert PREFIX + "/libexec/sluice/sluice-resolver" in r.stderr, r.stderr
        assert PREFIX + "/bin/sluice-resolver" in r.stderr, r.stderr
        assert "--no-resolver" in r.stderr
        # --no-resolver skips it: the command runs (DNS fails closed)
        r = _in_root(dest, [PREFIX + "/bin/sluice", "run", "--netns", w.sbx_path, "--events", events,
                            "--no-resolver", "--", "sh", "-c", "exit 4"])
        assert r.returncode == 4, (r.returncode, r.stderr)
        os.unlink(os.path.join(dest, "usr/local/libexec/sluice/sluice-proxy"))
        r = _in_root(dest, [PREFIX + "/bin/sluice", "run", "--netns", w.sbx_path, "--events", events,
                            "--no-resolver", "--", "true"])
        assert r.returncode == 2 and "sluice-proxy not found" in r.stderr, (r.returncode, r.stderr)
        r = _in_root(dest, [PREFIX + "/bin/sluice", "run", "--netns", w.sbx_path, "--events", events,
                            "--no-resolver", "--no-proxy", "--", "sh", "-c", "exit 3"])
        assert r.returncode == 3, (r.returncode, r.stderr)
    _with_dest(body)


def test_install_into_missing_or_readonly_destdir_is_refused(w):
    missing = "/tmp/sluice-install-missing-%d" % os.getpid()
    p = _make("install", "DESTDIR=" + missing, check=False)
    assert p.returncode != 0 and "does not exist" in p.stderr, (p.returncode, p.stderr)
    assert not os.path.exists(missing)

    def body(dest):
        # a read-only bind of an empty directory
        subprocess.run(["mount", "--bind", "-o", "ro", dest, dest], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", dest, dest], check=True)
            p = _make("install", "DESTDIR=" + dest, check=False)
            assert p.returncode != 0 and "not writable" in p.stderr, (p.returncode, p.stderr)
            assert os.listdir(dest) == []
        finally:
            subprocess.run(["umount", dest], check=False)
    _with_dest(body)


MAN_PAGES = ("sluice.8", "sluice-policy.5", "sluice-events.7")


def test_man_pages_render_without_warnings(w):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    for page in MAN_PAGES:
        path = os.path.join(W.BUILD, "man", page)
        assert os.path.exists(path), "make builds %s from man/%s.scd" % (path, page)
        r = subprocess.run(["man", "--warnings", "-l", path], capture_output=True, text=True, env=env)
        assert r.returncode == 0 and r.stderr == "", (page, r.stderr)
        assert "NAME" in r.stdout and "SEE ALSO" in r.stdout, (page, r.stdout[:500])
    # sluice(8) documents every command `sluice help` lists
    text = subprocess.run(["man", "-l", os.path.join(W.BUILD, "man", "sluice.8")], capture_output=True,
                          text=True, env=env).stdout
    for c in ("run", "policy check", "policy diff", "policy suggest", "daemon", "attach", "detach",
              "status", "reload", "events", "gc", "version", "help"):
        assert ("\n   %s" % c) in text, (c, "missing from sluice(8)")


def test_bash_completion_parses_and_completes(w):
    comp = os.path.join(W.ROOT, "packaging", "sluice.bash-completion")
    if not os.path.exists("/usr/share/bash-completion/bash_completion"):
        raise W.Skip("bash-completion is not installed")
    script = (". /usr/share/bash-completion/bash_completion; . %s; "
              "c() { COMP_LINE=\"$1\"; COMP_POINT=${#1}; read -ra COMP_WORDS <<< \"$1\"; "
              "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _sluice; echo \"${COMPREPLY[*]}\"; }; "
              "c 'sluice g'; c 'sluice gc --d'" % comp)
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == ["gc", "--dry-run"], r.stdout
