#!/usr/bin/env python3
"""`make demo`: sluice's main job, shown against a local test world.

Builds the test world of tests/integration/world.py (two network namespaces
with servers on documentation addresses and no way off the machine), then
runs real programs under `sluice run` with policies/demo.yaml and prints
what they got and the JSON lines sluice wrote.  Cleans up after itself.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import world as W  # noqa: E402

POLICY = os.path.join(ROOT, "policies", "demo.yaml")
BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")


def show(title, r):
    p = r.probe()
    verdict = "ALLOWED" if p["result"] == "ok" else "REFUSED (%s)" % p["result"]
    print("  -> %s%s%s" % (BOLD, verdict, RESET))
    for e in r.denials():
        print("  event: " + json.dumps(e, separators=(",", ":")))


def main():
    if os.geteuid() != 0:
        print("make demo needs root (BPF programs, cgroups, network namespaces)")
        return 2
    w = W.World()
    try:
        print("%ssluice demo%s: a sandbox in network namespace %s; hosts 192.0.2.10 and 198.51.100.10 "
              "in %s run echo servers." % (BOLD, RESET, w.sbx, w.wld))
        print("policy %s:" % os.path.relpath(POLICY, ROOT))
        for line in open(POLICY):
            if not line.startswith("#"):
                print("    " + line.rstrip())
        steps = [
            ("a connection the policy allows (cidr 192.0.2.10/32, tcp 5432)", ["tcp", "192.0.2.10", "5432"]),
            ("the same host on another port", ["tcp", "192.0.2.10", "8080"]),
            ("UDP to another host (also: QUIC, DNS tunnels)", ["udp", "198.51.100.10", "9999"]),
            ("a raw ICMP socket", ["raw", "198.51.100.10"]),
        ]
        for title, args in steps:
            print("\n%s%s%s" % (BOLD, title, RESET))
            print("%s$ sluice run --netns %s --policy %s -- sluice-probe %s%s" % (
                DIM, w.sbx_path, os.path.relpath(POLICY, ROOT), " ".join(args), RESET))
            show(title, w.probe(*args, policy=POLICY, extra=["--keep-caps"] if args[0] == "raw" else []))
        print("\n%sdefault policy (no --policy): everything is refused%s" % (BOLD, RESET))
        print("%s$ sluice run --netns %s -- sluice-probe tcp 192.0.2.10 5432%s" % (DIM, w.sbx_path, RESET))
        show("default", w.probe("tcp", "192.0.2.10", "5432"))
    finally:
        w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
