#!/usr/bin/env python3
"""A stand-in for a workload already running in a cgroup before sluice is
attached (as a container runtime would leave it).  Polls DIR for N.cmd
files (a JSON argv list), runs each, and writes its stdout to N.out.
A file DIR/flood.cmd makes it run that argv in a loop, appending each
result line to DIR/flood.out, until DIR/stop exists."""
import json
import os
import subprocess
import sys
import time

d = sys.argv[1]
done = set()
open(os.path.join(d, "ready"), "w").close()
while not os.path.exists(os.path.join(d, "stop")):
    for f in sorted(os.listdir(d)):
        if f.endswith(".cmd") and f not in done:
            done.add(f)
            argv = json.load(open(os.path.join(d, f)))
            if f == "flood.cmd":
                with open(os.path.join(d, "flood.out"), "a", buffering=1) as out:
                    while not os.path.exists(os.path.join(d, "stop-flood")):
                        r = subprocess.run(argv, capture_output=True, text=True)
                        out.write(r.stdout.strip().splitlines()[-1] + "\n" if r.stdout.strip() else "{}\n")
                continue
            r = subprocess.run(argv, capture_output=True, text=True)
            tmp = os.path.join(d, f[:-4] + ".tmp")
            with open(tmp, "w") as out:
                out.write(r.stdout)
            os.rename(tmp, os.path.join(d, f[:-4] + ".out"))
    time.sleep(0.02)
