#!/usr/bin/env python3
"""Runner for the kernel integration tests (real BPF, cgroups, sockets).

Runs every tests/integration/test_*.py (or the files named on the command
line).  A test is a function test_<name>(world) in such a file; each file
gets one fresh World (network namespaces + servers) torn down after it.
Helpers: world.Skip (the kernel or machine lacks a feature: reported as
skipped, never as passed), plain assert for checks.  A filter -k SUBSTR
runs only matching tests (repeated: the tests matching any of them).  Ends with the line "N passed, N failed, N skipped".
Needs root.
"""
import glob
import importlib.util
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import world as W  # noqa: E402


def main():
    args = sys.argv[1:]
    only = []
    while "-k" in args:
        i = args.index("-k")
        only.append(args[i + 1])
        del args[i:i + 2]
    files = args or sorted(glob.glob(os.path.join(HERE, "test_*.py")))
    if os.geteuid() != 0:
        print("integration tests need root (BPF, cgroups, namespaces)")
        print("0 passed, 1 failed, 0 skipped")
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if not os.path.exists(W.SLUICE):
        print("build first: make")
        return 1
    passed = failed = skipped = 0
    for path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        tests = [(n, getattr(mod, n)) for n in dir(mod) if n.startswith("test_") and callable(getattr(mod, n))]
        tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
        if only:
            tests = [t for t in tests if any(o in t[0] or o in name for o in only)]
        if not tests:
            continue
        print("== %s" % name, flush=True)
        world = None
        try:
            world = W.World()
            for tname, fn in tests:
                before = set(W.leftovers())
                t0 = time.time()
                try:
                    fn(world)
                    passed += 1
                    print("PASS %s.%s (%.1fs)" % (name, tname, time.time() - t0), flush=True)
                except W.Skip as e:
                    skipped += 1
                    print("SKIP %s.%s: %s" % (name, tname, e), flush=True)
                except Exception:
                    failed += 1
                    print("FAIL %s.%s (%.1fs)" % (name, tname, time.time() - t0), flush=True)
                    traceback.print_exc(file=sys.stdout)
                left = [l for l in W.leftovers() if l not in before]
                if left:
                    failed += 1
                    print("FAIL %s.%s left state behind: %s" % (name, tname, left), flush=True)
                    cleanup_leftovers(left)
        except Exception:
            failed += 1
            print("FAIL %s (world setup)" % name)
            traceback.print_exc(file=sys.stdout)
        finally:
            if world:
                world.close()
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


def cleanup_leftovers(paths):
    """Remove what a failing test left (so the next test starts clean)."""
    import subprocess
    for p in paths:
        if p.startswith("/sys/fs/bpf"):
            subprocess.run(["rm", "-rf", p])
            # and the owner record sluice run wrote beside the pins (loader/owner.h)
            try:
                os.unlink(os.path.join("/run/sluice/owners", os.path.basename(p)))
            except OSError:
                pass
        else:
            try:
                with open(os.path.join(p, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                pass
            for _ in range(100):
                try:
                    os.rmdir(p)
                    break
                except OSError:
                    time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
