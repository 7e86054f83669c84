"""The Debian package: `make deb` (dpkg-buildpackage -b -us -uc on a copy of
the tracked files) builds sluice_*.deb with the FHS layout, lintian reports
no errors, and the packaged sluice runs a command under the default policy
with the packaged helpers (found in /usr/libexec/sluice: in a private mount
namespace the package's usr/libexec is bound over /usr/libexec; nothing is
installed on this machine).  Slow (a full build, about a minute).
"""
import glob
import os
import shutil
import subprocess
import tempfile

import world as W


def test_deb_builds_lints_clean_and_runs(w):
    for tool, pkg in (("dpkg-buildpackage", "dpkg-dev"), ("dh", "debhelper"), ("lintian", "lintian")):
        if not shutil.which(tool):
            raise W.Skip("%s is missing (apt-get install %s): the package cannot be built or checked here"
                         % (tool, pkg))
    out = tempfile.mkdtemp(prefix="sluice-deb-")
    try:
        r = subprocess.run(["make", "--no-print-directory", "-C", W.ROOT, "OUTPUT=" + out, "deb"],
                           capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
        debs = glob.glob(os.path.join(out, "deb", "sluice_*.deb"))
        assert len(debs) == 1, os.listdir(os.path.join(out, "deb"))
        files = subprocess.run(["dpkg-deb", "-c", debs[0]], capture_output=True, text=True, check=True).stdout
        for f in ("./usr/bin/sluice", "./usr/libexec/sluice/sluice-proxy", "./usr/libexec/sluice/sluice-resolver",
                  "./usr/share/sluice/relays.txt", "./lib/systemd/system/sluice.service",
                  "./usr/share/man/man8/sluice.8.gz", "./usr/share/man/man5/sluice-policy.5.gz",
                  "./usr/share/man/man7/sluice-events.7.gz", "./etc/sluice/policies/"):
            assert f in files, (f, files)
        # the postinst makes the system group `sluice` (docs/daemon.md); nothing here runs it
        post = subprocess.run(["dpkg-deb", "-I", debs[0], "postinst"], capture_output=True, text=True, check=True).stdout
        assert "addgroup --system --quiet sluice" in post, post
        # lintian ran in make deb with --fail-on error; its report is kept
        lint = open(os.path.join(out, "deb", "lintian.log")).read()
        assert not [l for l in lint.splitlines() if l.startswith("E:")], lint

        root = os.path.join(out, "root")
        subprocess.run(["dpkg-deb", "-x", debs[0], root], check=True)
        unit = open(os.path.join(root, "lib/systemd/system/sluice.service")).read()
        assert "ExecStart=/usr/bin/sluice daemon" in unit
        sluice = os.path.join(root, "usr/bin/sluice")
        r = subprocess.run([sluice, "-V"], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.startswith("sluice v"), r
        script = 'mount --bind "$0/usr/libexec" /usr/libexec && exec "$@"'
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, root,
                            sluice, "run", "--netns", w.sbx_path, "--", "sh", "-c", "exit 5"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 5, (r.returncode, r.stderr)
        assert "egress" not in r.stdout
    finally:
        shutil.rmtree(out, ignore_errors=True)
