#!/usr/bin/env python3
"""`make bench`: sluice side by side with the alternatives, in one run.

Started by bench/run.sh (which installs the tools and builds the clients).
Runs the scenarios of issue 6, each with its baselines interleaved in the
same run, repeats them, prints a table of medians and ratios and writes
build/bench/results.json.  A scenario that cannot run prints
"skipped: <why>"; no number is ever made up.

  python3 bench/bench.py [--only 1,2,3] [--quick] [--out FILE]

Environment: BENCH_DEADLINE (epoch seconds; scenarios that would not fit
before it are skipped), set by bench/run.sh to start + 14 minutes.
"""
import argparse
import json
import os
import platform
import resource
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402
import scen_kernel  # noqa: E402

CFG = {
    "repeats": 3,
    "connect_n": 1000, "connect_blocks": 25, "profile_n": 5000, "test_run_repeat": 200000,
    "flood_block": 4000, "flood_blocks": 8, "flood_n": 200000,
    "http_seconds": 5, "http_conns": 32,
    "bulk_bytes": 1 << 30,
    "idle_conns": 10000,
    "dns_seconds": 4,
    "tls_seconds": 3, "tls_conns": 16, "tls_new_conns": 8,
    "tls_handshakes": 200, "tls_idle_conns": 1000,
    "many_sandboxes": 1000,
}
QUICK = {"repeats": 1, "connect_blocks": 5, "profile_n": 1000, "test_run_repeat": 100000, "flood_blocks": 2, "flood_n": 20000,
         "http_seconds": 2, "bulk_bytes": 1 << 28, "idle_conns": 1000, "dns_seconds": 1,
         "tls_seconds": 2, "tls_handshakes": 50, "tls_idle_conns": 200,
         "many_sandboxes": 20}

# rough seconds each scenario needs here (for the deadline check)
ESTIMATE = {"1+2": 90, "3": 40, "4": 100, "5": 60, "6": 160, "7": 60, "8": 200, "9": 150}


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with open("/proc/meminfo") as f:
        mem = f.readline().split(":")[1].strip()
    return {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu_model": cpu, "mem_total": mem,
            "cgroup2": L.cgroup2_mount(), "python": platform.python_version(),
            "perf_hw_counters": hw_counters()}


def hw_counters():
    r = L.sh("perf", "stat", "-x,", "-e", "cycles", "true", check=False)
    if r.returncode != 0:
        return "perf unavailable"
    return "no" if "<not supported>" in r.stderr or "<not counted>" in r.stderr else "yes"


def fmt(x, unit=""):
    if x is None:
        return "-"
    if isinstance(x, float):
        if abs(x) >= 1000:
            return "%.0f%s" % (x, unit)
        return "%.3g%s" % (x, unit)
    return "%s%s" % (x, unit)


def table(results):
    """The human table: one line per measured row, ratios against each
    scenario's baseline, the issue's target and where sluice stands."""
    out = []
    w = out.append
    w("%-4s %-42s %16s %10s  %s" % ("#", "variant", "median", "ratio", "target / note"))
    w("-" * 110)
    s = results["scenarios"]

    def skipped(key, label):
        r = s.get(key, {})
        if r.get("status") != "ok":
            w("%-4s %-42s skipped: %s" % (key.split("_")[0], label, r.get("skipped", r.get("error", "not run"))))
            return True
        return False

    if not skipped("1_connect", "connect() cost"):
        for row in s["1_connect"]["rows"]:
            if "skipped" in row:
                w("1    %-42s skipped: %s" % (row["variant"], row["skipped"]))
                continue
            note = ""
            if row["key"] == "sluice-cidr-10":
                note = "target <= 1.05x and below nftables"
            w("1    %-42s %13s ns %9sx  %s" % (row["variant"] + " (ns/connect)", fmt(row["ns_per_connect"]),
                                              fmt(row["ratio_vs_none"]), note))
        bpf = s["1_connect"].get("bpf")
        if bpf:
            w("1    %-42s %13s ns %10s  %s" % ("sluice BPF run time per connect", fmt(bpf["ns_per_connect"]), "",
                                               ", ".join("%s %sx%sns" % (k, v["calls_per_connect"], v["ns_per_call"])
                                                         for k, v in sorted(bpf["programs"].items()))))
    if not skipped("2_policy_size", "policy size"):
        for row in s["2_policy_size"]["rows"]:
            if "skipped" in row:
                w("2    %-42s skipped: %s" % (row["variant"], row["skipped"][:120]))
                continue
            note = "vs size 10: %sx" % fmt(row.get("ratio_vs_size_10"))
            if "bpf_ns_per_connect" in row:
                note += "; BPF %s ns/connect (%sx size 10)" % (fmt(row["bpf_ns_per_connect"]),
                                                                fmt(row.get("bpf_ratio_vs_size_10")))
            if row["variant"].startswith("sluice"):
                note += "; target <= 1.03x"
            w("2    %-42s %13s ns %9sx  %s" % (row["variant"] + " (ns/connect)", fmt(row["ns_per_connect"]),
                                              fmt(row["ratio_vs_none"]), note))
        for row in s["2_policy_size"]["rows"]:
            if "egress_test_run_ns" in row:
                w("2    %-42s %13s ns %9sx  %s" % (row["variant"] + " lookup (ns/packet)", fmt(row["egress_test_run_ns"]),
                                                  fmt(row.get("egress_test_run_ratio_vs_size_10")),
                                                  "the backstop on one packet, BPF_PROG_TEST_RUN; target <= 1.10x size 10"))
        err = s["2_policy_size"].get("egress_test_run", {}).get("error")
        if err:
            w("2    %-42s skipped: %s" % ("lookup (ns/packet)", err[:120]))
    if not skipped("3_denials", "denials and events"):
        r = s["3_denials"]
        a = r["accounting"]
        w("3    %-42s %13s ns %10s" % ("denied connect, consumer stopped", fmt(r["denied_connect_ns_consumer_off"]), ""))
        w("3    %-42s %13s ns %9sx  %s" % ("denied connect, consumer running", fmt(r["denied_connect_ns_consumer_on"]),
                                           fmt(r["ratio_on_vs_off"]), "target <= 1.3x"))
        w("3    %-42s %13s /s" % ("denials/s (one client, flood)", fmt(r["denials_per_s"])))
        w("3    %-42s %13s /s %10s  %s" % ("events/s written as JSON lines", fmt(r["events_per_s_written"]), "",
                                           "%d of %d flood denials written" % (r["flood_event_lines"], r["flood_denials"])))
        w("3    %-42s %13s s" % ("loader CPU per 100k events", fmt(r["loader_cpu_s_per_100k_events"])))
        w("3    %-42s %13s %13s  %s" % ("events lost (counted)", fmt(a["events_lost_lines_sum"]), "",
                                        "denied %s = lines %s + lost %s: %s" % (
                                            a["kernel_denied"], a["json_lines"], a["events_lost_lines_sum"],
                                            "exact" if a["denials_equal_lines_plus_lost"] else "MISMATCH")))
    for key, label in (("4_proxy_http", "proxy HTTP"), ("5_proxy_tunnel", "proxy CONNECT bulk"),
                       ("6_proxy_memory", "proxy idle RSS"), ("7_resolver", "resolver"),
                       ("8_inspected_https", "inspected HTTPS"), ("9_many_sandboxes", "many sandboxes")):
        if skipped(key, label):
            continue
        for row in s[key]["rows"]:
            num = key.split("_")[0]
            if "skipped" in row:
                w("%-4s %-42s skipped: %s" % (num, row["variant"], row["skipped"][:140]))
                continue
            w("%-4s %-42s %13s %-2s %9sx  %s" % (num, row["variant"], fmt(row["value"]), row.get("unit", ""),
                                                fmt(row.get("ratio")), row.get("note", "")))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="1,2,3,4,5,6,7,8,9")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for trying the bench out")
    ap.add_argument("--out", default=os.path.join(L.OUT, "results.json"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("make bench needs root (BPF, cgroups, network namespaces)")
        return 2
    try:
        # 10,000 idle connections: a client, a proxy and an origin each hold
        # that many sockets (children inherit the limit)
        resource.setrlimit(resource.RLIMIT_NOFILE, (262144, 262144))
    except (ValueError, OSError) as e:
        L.log("cannot raise RLIMIT_NOFILE: %s" % e)
    cfg = dict(CFG)
    if args.quick:
        cfg.update(QUICK)
    only = set(args.only.split(","))
    deadline = float(os.environ.get("BENCH_DEADLINE", time.time() + 14 * 60))
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
               "config": cfg, "scenarios": {}}
    s = results["scenarios"]
    b = L.Bench()
    rc = 0

    def attempt(key, est, fn, *res_keys):
        nonlocal rc
        for k in res_keys:
            s[k] = {}
        left = deadline - time.time()
        if left < est:
            for k in res_keys:
                s[k] = {"status": "skipped", "skipped": "time budget: %.0fs left, needs ~%ds" % (left, est)}
            return
        L.log("scenario %s" % key)
        try:
            fn(b, cfg, *[s[k] for k in res_keys])
        except L.Skip as e:
            for k in res_keys:
                if s[k].get("status") != "ok":
                    s[k] = {"status": "skipped", "skipped": str(e)}
        except Exception as e:
            traceback.print_exc()
            rc = 1
            for k in res_keys:
                if s[k].get("status") != "ok":
                    s[k] = {"status": "error", "error": "%s: %s" % (type(e).__name__, e)}

    try:
        if only & {"1", "2"}:
            attempt("1+2", ESTIMATE["1+2"], scen_kernel.connect_scenarios, "1_connect", "2_policy_size")
        if "3" in only:
            attempt("3", ESTIMATE["3"], scen_kernel.flood_scenario, "3_denials")
        try:
            import scen_proxy
        except ImportError as e:
            scen_proxy = None
            for k in ("4_proxy_http", "5_proxy_tunnel", "6_proxy_memory", "7_resolver"):
                s[k] = {"status": "skipped", "skipped": "bench/scen_proxy.py: %s" % e}
        if scen_proxy:
            for num, key, fn in (("4", "4_proxy_http", scen_proxy.http_scenario),
                                 ("5", "5_proxy_tunnel", scen_proxy.tunnel_scenario),
                                 ("6", "6_proxy_memory", scen_proxy.memory_scenario),
                                 ("7", "7_resolver", scen_proxy.resolver_scenario)):
                if num in only:
                    attempt(num, ESTIMATE[num], fn, key)
        if "8" in only:
            try:
                import scen_tls
                attempt("8", ESTIMATE["8"], scen_tls.tls_scenario, "8_inspected_https")
            except ImportError as e:
                s["8_inspected_https"] = {"status": "skipped", "skipped": "bench/scen_tls.py: %s" % e}
        if "9" in only:
            import scen_many
            attempt("9", ESTIMATE["9"] if not args.quick else 60, scen_many.many_scenario, "9_many_sandboxes")
    finally:
        b.close()
        results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        results["wall_s"] = round(time.monotonic() - L.T0, 1)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    m = results["machine"]
    print()
    print("sluice bench: %s, %d CPUs, kernel %s, %.0fs" % (m["cpu_model"], m["nproc"], m["kernel"], results["wall_s"]))
    print(table(results))
    print("\nresults: %s" % args.out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
