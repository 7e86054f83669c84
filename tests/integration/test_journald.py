"""`--events journald`: every writer's lines (the kernel's denials, the
resolver's queries, the lifecycle) reach the journal, one entry per line,
each MESSAGE one whole JSON object, numbered without a gap; CMD's stdout
and stderr carry none of them; with no journal running the run refuses to
start and says why.

Each case runs in a mount namespace of its own with a systemd-journald of
its own (tmpfs over /run/systemd, /run/log and /var/log/journal there), so
the host's journal, if it has one, is neither read nor written.  Traffic
goes to the test world's servers on documentation addresses only.
"""
import json
import os
import subprocess
import time

import world as W
import test_resolver as TR

JOURNALD = "/lib/systemd/systemd-journald"

# $1: output prefix; the rest: the command, run once journald serves
PRIVATE_JOURNAL = r"""
out=$1; shift
mount -t tmpfs tmpfs /run/systemd || exit 90
mkdir -p /run/log && mount -t tmpfs tmpfs /run/log || exit 90
if [ -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log/journal || exit 90; fi
if [ "$SLUICE_TEST_NO_JOURNALD" != 1 ]; then
    %(journald)s </dev/null >"$out.journald" 2>&1 &
    jp=$!
    trap 'kill $jp 2>/dev/null; wait $jp 2>/dev/null' EXIT
    i=0
    while [ ! -S /run/systemd/journal/stdout ]; do
        i=$((i+1)); [ $i -gt 200 ] && exit 91
        sleep 0.05
    done
fi
"$@" >"$out.stdout" 2>"$out.stderr"
echo $? >"$out.rc"
[ "$SLUICE_TEST_NO_JOURNALD" = 1 ] && exit 0
# the journal has read every stream once the count stops moving
prev=-1
for i in $(seq 40); do
    journalctl --no-pager -D /run/log/journal -o json >"$out.journal" 2>/dev/null
    n=$(wc -l <"$out.journal")
    [ "$n" = "$prev" ] && break
    prev=$n
    sleep 0.25
done
"""


def _private_journal(w, argv, no_journald=False, timeout=90):
    if not os.access(JOURNALD, os.X_OK):
        raise W.Skip("%s is not installed (package systemd)" % JOURNALD)
    out = os.path.join(w.tmp, "journal-%d" % time.monotonic_ns())
    script = w.write("private-journal-%d.sh" % time.monotonic_ns(), PRIVATE_JOURNAL % {"journald": JOURNALD})
    env = dict(os.environ, SLUICE_TEST_NO_JOURNALD="1" if no_journald else "0")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", script, out] + list(argv),
                       capture_output=True, text=True, timeout=timeout, env=env)
    assert p.returncode == 0, ("the private journal did not come up", p.returncode, p.stderr,
                               open(out + ".journald").read() if os.path.exists(out + ".journald") else "")
    read = lambda ext: open(out + ext).read() if os.path.exists(out + ext) else ""
    entries = [json.loads(l) for l in read(".journal").splitlines() if l.strip()]
    return int(read(".rc")), read(".stdout"), read(".stderr"), entries


def _run_argv(w, policy, extra, argv):
    pol = w.write("journald-%d.yaml" % time.monotonic_ns(), policy)
    return [W.SLUICE, "run", "--events", "journald", "--profile", "egress-only", "--netns", w.sbx_path,
            "--policy", pol] + list(extra) + ["--"] + list(argv)


def test_every_writers_lines_reach_the_journal_whole_and_numbered(w):
    TR._upstream(w)
    mark = w.mark()
    script = ("%s tcp 192.0.2.10 8080; dig +short +tries=1 +time=5 @198.51.100.53 api.example.com A"
              % W.PROBE)
    rc, out, err, entries = _private_journal(w, _run_argv(
        w, TR.POLICY, ["--upstream-dns", TR.UPSTREAM] + TR.ALLOW_DOC, ["sh", "-c", script]))
    assert rc == 0, (rc, out, err)
    # CMD's output is CMD's: the probe's verdict and dig's answer, no line of sluice's
    assert "192.0.2.10" in out.split() and "EPERM" in out, out
    assert '"event.dataset"' not in out and '"event.dataset"' not in err, (out, err)
    ours = [e for e in entries if e.get("SYSLOG_IDENTIFIER") == "sluice"]
    assert ours, ("no entry from sluice in the journal", entries[-5:])
    lines = [json.loads(e["MESSAGE"]) for e in ours]   # each entry one whole JSON object
    by = {}
    for l in lines:
        by.setdefault(l.get("event.dataset"), []).append(l)
    denied = [l for l in by.get("sluice.kernel", []) if l.get("event.action") == "egress-denied"
              and l.get("destination.ip") == "192.0.2.10" and l.get("destination.port") == 8080]
    assert denied, by.get("sluice.kernel")
    asked = [l for l in by.get("sluice.resolver", []) if l.get("event.action") == "dns-query"
             and l.get("sluice.orig_dst.ip") == "198.51.100.53"]
    assert asked and asked[0]["dns.question.name"] == "api.example.com", by.get("sluice.resolver")
    actions = {l.get("event.action") for l in by.get("sluice.lifecycle", [])}
    assert {"sandbox-start", "sandbox-stop"} <= actions, actions
    # the loader, the resolver and the kernel's lines: one counter, no gap
    seqs = sorted(l["event.sequence"] for l in lines)
    assert seqs == list(range(len(seqs))), seqs
    # every entry at priority info, from the loader's stream
    assert all(e.get("PRIORITY") == "6" for e in ours), {e.get("PRIORITY") for e in ours}
    assert not w.arrived_since(mark, port=8080), "a denied connection got through"


def test_no_journal_running_refuses_to_start(w):
    marker = os.path.join(w.tmp, "ran-%d" % time.monotonic_ns())
    rc, out, err, _ = _private_journal(w, _run_argv(w, TR.POLICY, [], ["touch", marker]), no_journald=True)
    assert rc == 2, (rc, out, err)
    assert "the journal" in err and "systemd-journald running" in err, err
    assert not os.path.exists(marker), "CMD ran without its events destination"


def test_daemon_refuses_a_size_cap_on_the_journal(w):
    state = os.path.join(w.tmp, "jd-state-%d" % time.monotonic_ns())
    r = subprocess.run([W.SLUICE, "daemon", "--state-dir", state, "--events", "journald",
                        "--events-max-size", "1M"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "SystemMaxUse" in r.stderr, (r.returncode, r.stderr)
    assert not os.path.exists(os.path.join(state, "control.sock"))
