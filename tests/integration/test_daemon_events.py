"""The daemon's lines of one sandbox (docs/events.md "Sequence", labels):
`sluice attach --label` puts labels.KEY on every line of the sandbox from
the daemon, its proxy and its resolver; event.sequence numbers them from
one counter that the sandbox's writers share and that outlives the daemon
(a daemon killed and started again, which re-adopts the sandbox, goes on
from it: no number twice, no gap); a bad label is refused with exit 2.

Sandbox names carry this process's pid: the file may run beside others
(test_daemon.py's fixed names need the suite lock, these do not)."""
import os
import time

import world as W
from test_daemon import POLICY_A, Daemon, Workload
import test_events as TE


def dns_denied(a, name):
    """A query the resolver answers itself (a name no entry allows): one
    dns-query line, no upstream needed."""
    a.run(W.PROBE, "dns", "192.0.2.53", name)


def test_daemon_labels_and_sequence_across_a_daemon_restart(w):
    name = "evseq-%d" % os.getpid()
    d = Daemon(w)
    a = Workload(w, "evseq")
    try:
        pol = w.write("evseq.yaml", POLICY_A)
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name,
                  "--label", "team=blue", "--label", "env=ci")
        assert r.returncode == 0, r
        assert d.status()[name]["labels"] == {"team": "blue", "env": "ci"}, d.status()[name]
        assert a.probe("tcp", "192.0.2.10", 8080) == "EPERM"
        dns_denied(a, "nope.example.org")
        TE.wait_for(lambda: any(e.get("event.action") == "dns-query" for e in d.events_of(name))
                    and any(e.get("event.action") == "egress-denied" for e in d.events_of(name)),
                    "the first daemon's kernel and resolver lines")
        # the daemon dies (its children with it) and a new one adopts the sandbox
        d.kill9()
        d.start()
        TE.wait_for(lambda: any(e.get("event.action") == "sandbox-adopt" for e in d.events_of(name)),
                    "sandbox-adopt")
        assert d.status()[name]["labels"] == {"team": "blue", "env": "ci"}
        assert a.probe("tcp", "192.0.2.10", 8081) == "EPERM"
        dns_denied(a, "nope2.example.org")
        TE.wait_for(lambda: sum(e.get("event.action") == "dns-query" for e in d.events_of(name)) >= 2
                    and sum(e.get("event.action") == "egress-denied" for e in d.events_of(name)) >= 2,
                    "the second daemon's lines")
        assert d.ctl("detach", name).returncode == 0
        lines = d.events_of(name)
        datasets = {e["event.dataset"] for e in lines}
        assert {"sluice.kernel", "sluice.resolver", "sluice.lifecycle"} <= datasets, datasets
        for e in lines:
            assert e.get("labels.team") == "blue" and e.get("labels.env") == "ci", e
        writers = TE.check_sequence(lines)
        assert len(writers) >= 4, writers     # two daemons, two resolvers at least
        # the counter file went with the sandbox
        assert not os.path.exists(os.path.join(d.state, "sandboxes", name + ".seq"))
        TE.check_lines(lines)
    finally:
        a.close()
        d.close()


def test_daemon_attach_bad_label_is_refused(w):
    name = "evbad-%d" % os.getpid()
    d = Daemon(w)
    a = Workload(w, "evbad")
    try:
        pol = w.write("evbad.yaml", POLICY_A)
        for bad, why in (("Team=x", "not valid"), ("k", "KEY=VALUE"), ("k=\x01", "not UTF-8 text")):
            r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name,
                      "--label", bad)
            assert r.returncode == 2 and "--label" in r.stderr and why in r.stderr, (bad, r)
        assert name not in d.status()
        # the daemon checks a request of its own too (not only the CLI)
        import json, socket
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.path.join(d.state, "control.sock"))
        s.sendall((json.dumps({"cmd": "attach", "name": name, "cgroup": a.cg, "policy": pol,
                               "labels": {"a.b": "x"}}) + "\n").encode())
        s.settimeout(20)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
        s.close()
        rep = json.loads(reply)
        assert rep.get("ok") is False and "not valid" in rep.get("error", ""), rep
        assert name not in d.status()
    finally:
        a.close()
        d.close()
