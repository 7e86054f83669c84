"""The Debian package installed on a fresh Debian 12 (make check-deb):
tests/fresh/check-deb.sh debootstraps a minbase bookworm root, apt-get
installs the .deb there (its dependencies from the mirror), checks the
layout (dpkg -L), the binaries' versions, the unit, the examples, a
`sluice run` of the default policy from the installed paths, and that a
purge leaves the root as it was.  Skipped, with the reason, when the Debian
mirror cannot be reached.  Not in `make test`: debootstrap alone takes a
minute or two.  $SLUICE_DEB names the package to try; without it the test
builds one (make deb) first.
"""
import glob
import os
import shutil
import subprocess
import tempfile

import world as W

SCRIPT = os.path.join(W.ROOT, "tests", "fresh", "check-deb.sh")


def _build_deb(out):
    r = subprocess.run(["make", "--no-print-directory", "-C", W.ROOT, "OUTPUT=" + out, "deb"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    debs = glob.glob(os.path.join(out, "deb", "sluice_*.deb"))
    assert len(debs) == 1, os.listdir(os.path.join(out, "deb"))
    return debs[0]


def test_deb_installs_runs_and_purges_on_a_fresh_debian(w):
    if not shutil.which("debootstrap"):
        raise W.Skip("debootstrap is missing (apt-get install debootstrap; make deps installs it)")
    out = None
    deb = os.environ.get("SLUICE_DEB")
    try:
        if not deb:
            out = tempfile.mkdtemp(prefix="sluice-deb-root-")
            deb = _build_deb(out)
        r = subprocess.run(["bash", SCRIPT, deb], capture_output=True, text=True, timeout=1800)
        print(r.stdout, end="")
        if r.returncode == 77:
            raise W.Skip(r.stderr.strip().splitlines()[-1])
        assert r.returncode == 0, (r.returncode, r.stdout[-4000:], r.stderr[-4000:])
        assert "check-deb: passed" in r.stdout, r.stdout[-2000:]
    finally:
        if out:
            shutil.rmtree(out, ignore_errors=True)
