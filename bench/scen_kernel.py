"""Scenarios 1-3: what the kernel side of sluice costs.

1. connect() cost: N socket()+connect()+close() to a loopback server from
   inside a cgroup, with no filter, with an nftables `socket cgroupv2` rule
   set holding the same allowlist, and inside a sluice sandbox.
2. Policy size: the same with 10 / 1,000 / 4,096 / 100,000 cidr entries and
   host entries (sluice) and set elements (nftables).
3. Denials and events: a flood of denied connects with the event consumer
   running and stopped; events written, events lost, loader CPU.

One client process (bench/connect_bench.c) does every variant, moving
itself between the variants' cgroups (and network namespaces) block by
block, so the variants are interleaved under the same machine state; the
driver repeats that process and takes medians.

Every nftables variant has a network namespace (and a server) of its own:
nftables hooks see every packet of a namespace, so one rule set would
otherwise tax the other variants' packets too.  The unfiltered and the
sluice variants share one namespace (cgroup BPF programs only run for
sockets of their own cgroup).
"""
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import time

from benchlib import CONNECT_BENCH, Skip, log, median, sh

PORT_OK, PORT_DENIED = 7001, 7002
SERVER = "127.0.0.1"
SIZES = [10, 1000, 4096, 100000]
TEST_RUNS = 15      # egress_test_run(): a VM's stolen time inflates some; the least is the cost


# --- policies -----------------------------------------------------------------
def filler_addrs(n, seed):
    """n distinct /32s in 127.0.0.0/8 outside 127.0.0.0/24: loopback, so no
    entry could ever send traffic off the machine, and dense around the
    target 127.0.0.1 so the LPM lookup walks a deep trie."""
    r = random.Random(seed)
    seen = set()
    while len(seen) < n:
        a = (127 << 24) | r.randrange(1 << 24)
        if (a >> 8) != (127 << 16):
            seen.add(a)
    return ["%d.%d.%d.%d" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255) for a in sorted(seen)]


def cidr_policy(n):
    lines = ["version: 1", "name: bench-cidr-%d" % n, "allow:",
             "  - {cidr: %s/32, ports: [%d], protocol: tcp, why: bench server}" % (SERVER, PORT_OK)]
    lines += ["  - {cidr: %s/32, ports: [443], why: filler}" % a for a in filler_addrs(n - 1, n)]
    return "\n".join(lines) + "\n"


def host_policy(n):
    lines = ["version: 1", "name: bench-host-%d" % n, "allow:",
             "  - {cidr: %s/32, ports: [%d], protocol: tcp, why: bench server}" % (SERVER, PORT_OK)]
    lines += ["  - {host: h%d.svc%d.example.com, ports: [443], why: filler}" % (i, i % 101) for i in range(n - 1)]
    return "\n".join(lines) + "\n"


def nft_ruleset(table, n, cgpath, level):
    """The same allowlist as cidr_policy(n) for one cgroup: every packet of
    a socket of that cgroup must match (address . port), else reject."""
    els = ["%s . %d" % (SERVER, PORT_OK)] + ["%s . 443" % a for a in filler_addrs(n - 1, n)]
    return """table inet %s {
  set allow4 {
    type ipv4_addr . inet_service
    flags interval
    elements = { %s }
  }
  counter denied { }
  chain out {
    type filter hook output priority 0; policy accept;
    socket cgroupv2 level %d "%s" jump sandbox
  }
  chain sandbox {
    ip daddr . tcp dport @allow4 accept
    counter name denied reject
  }
}
""" % (table, ",\n      ".join(els), level, cgpath)


# --- helpers --------------------------------------------------------------------
def start_server(b, ns, name):
    ready = os.path.join(b.tmp, name + ".ready")
    p = b.spawn([CONNECT_BENCH, "serve", "--listen", "%s:%d" % (SERVER, PORT_OK),
                 "--listen", "%s:%d" % (SERVER, PORT_DENIED), "--ready", ready],
                cg=b.cg("srv-" + name), netns=ns, name=name)
    b.wait_file(ready, p)
    return p


def run_client(variants, n, blocks, warmup=200, settle_ms=0, timeout=300):
    argv = [CONNECT_BENCH, "run", "--target", "%s:%d" % (SERVER, PORT_OK), "--n", str(n), "--blocks", str(blocks),
            "--warmup", str(warmup), "--settle-ms", str(settle_ms)]
    for v in variants:
        argv += ["--variant", v]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode == 2 or not r.stdout.strip():
        raise RuntimeError("connect_bench failed (%d): %s" % (r.returncode, r.stderr.strip()[-600:]))
    d = json.loads(r.stdout)
    d["stderr"] = r.stderr.strip()
    return d


def pooled(runs, name, base):
    """Median ns of `name` over every block of every repeat, and the median
    of the paired (same round) ratios name/base."""
    ns, ratios, per_repeat = [], [], []
    for d in runs:
        a = d["variants"][name]["ns"]
        ns += a
        per_repeat.append(median(a))
        if base:
            b = d["variants"][base]["ns"]
            ratios += [x / y for x, y in zip(a, b)]
    return {"ns": median(ns), "ratio": median(ratios) if base else None,
            "repeat_medians": [round(x, 1) for x in per_repeat],
            "unexpected": sum(d["variants"][name]["unexpected"] for d in runs)}


def bpf_delta(before, after, connects):
    """Per program: calls per connect, ns per call; and total ns per connect."""
    progs, total = {}, 0
    for k, (t1, c1) in after.items():
        t0, c0 = before.get(k, (0, 0))
        dt, dc = t1 - t0, c1 - c0
        if dc > 0:
            progs[k] = {"calls_per_connect": round(dc / connects, 2), "ns_per_call": round(dt / dc, 1),
                        "ns_per_connect": round(dt / connects, 1)}
            total += dt
    return {"programs": progs, "ns_per_connect": round(total / connects, 1)}


def packet_to_server():
    """An Ethernet frame (BPF_PROG_TEST_RUN takes one, and hands a cgroup
    skb program what follows the header) with an IPv4 TCP ACK to the bench
    server's allowed port."""
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 1, 0, 64, socket.IPPROTO_TCP, 0,
                     socket.inet_aton("127.0.0.2"), socket.inet_aton(SERVER))
    tcp = struct.pack("!HHIIBBHHH", 40000, PORT_OK, 1, 1, 0x50, 0x10, 65535, 0, 0)
    return b"\0" * 12 + b"\x08\x00" + ip + tcp


def egress_test_run(b, sb, repeat):
    """The sandbox's egress backstop run by the kernel on one packet to the
    server, `repeat` times in a row (BPF_PROG_TEST_RUN through bpftool):
    the packet has no socket of the sandbox, so no memo, and the program
    looks the destination up in the policy's maps every time.  The kernel
    times the runs alone, so the figure has none of a connect's noise.
    Returns the least ns per run of TEST_RUNS such runs (the machine's
    noise only adds); raises if the program did not allow the packet (then
    it timed another path)."""
    pid = sb.prog_ids().get("skb_egress")
    if not pid:
        raise RuntimeError("no skb_egress link in %s" % sb.pin_dir)
    pkt = os.path.join(b.tmp, "egress-packet.bin")
    with open(pkt, "wb") as f:
        f.write(packet_to_server())
    runs = []
    cpus = sorted(os.sched_getaffinity(0))
    for i in range(TEST_RUNS):
        # each CPU in turn: the runs stay on the CPU they start on, and a
        # VM's CPUs are not equally fast (a busy neighbour on one's core)
        out = sh("taskset", "-c", str(cpus[i % len(cpus)]), "bpftool", "prog", "run", "id", str(pid), "data_in",
                 pkt, "repeat", str(repeat)).stdout
        m = re.search(r"Return value: (\d+), duration \(average\): (\d+)ns", out)
        if not m or m.group(1) != "1":
            raise RuntimeError("bpftool prog run: %r (want return value 1: allowed)" % out.strip())
        runs.append(int(m.group(2)))
    return min(runs)


# --- scenarios 1 and 2 -----------------------------------------------------------------
def connect_scenarios(b, cfg, res1, res2):
    base_ns = b.mknetns("b")
    start_server(b, base_ns, "srv-base")
    plain = b.cg("plain")
    probe = "%s:%d" % (SERVER, PORT_DENIED)
    variants = ["none,cg=%s,netns=/run/netns/%s,probe=%s=ok" % (plain, base_ns, probe)]
    sluice_names, setup, skipped = [], {}, {}

    # nftables, one namespace per size
    have_nft = True
    try:
        sh("nft", "--version")
    except Exception:
        have_nft = False
    for n in SIZES:
        name = "nft-%d" % n
        if not have_nft:
            skipped[name] = "nft not installed"
            continue
        try:
            ns = b.mknetns("n%d" % n)
            start_server(b, ns, "srv-" + name)
            cg = b.cg(name)
            nftpath, level = b.nft_cgroup_path(cg)
            rules = b.write(name + ".nft", nft_ruleset("slbench", n, nftpath, level))
            t0 = time.monotonic()
            r = sh("nsenter", "--net=/run/netns/" + ns, "nft", "-f", rules, check=False, timeout=120)
            if r.returncode:
                raise Skip("nft -f: %s" % r.stderr.strip()[-300:])
            setup[name] = {"load_s": round(time.monotonic() - t0, 3)}
            variants.append("%s,cg=%s,netns=/run/netns/%s,probe=%s=ECONNREFUSED" % (name, cg, ns, probe))
        except Skip as e:
            skipped[name] = str(e)

    # sluice sandboxes: cidr and host policies of every size
    sandboxes = {}
    for kind, gen in (("cidr", cidr_policy), ("host", host_policy)):
        for n in SIZES:
            name = "sluice-%s-%d" % (kind, n)
            pol = b.write(name + ".yaml", gen(n))
            try:
                sb = b.sandbox("%s%d" % (kind[0], n), pol, netns=base_ns, extra=["--no-proxy", "--no-resolver"])
            except Skip as e:
                skipped[name] = "sluice run refused the policy (%d bytes of YAML): %s" % (
                    os.path.getsize(pol), str(e).replace("sluice run exited with 2: ", ""))
                log("%s skipped: %s" % (name, skipped[name]))
                continue
            sandboxes[name] = sb
            sluice_names.append(name)
            setup[name] = {"sluice_run_startup_s": round(sb.startup_s, 3), "policy_bytes": os.path.getsize(pol)}
            variants.append("%s,cg=%s,netns=/run/netns/%s,probe=%s=EPERM" % (name, sb.cg, base_ns, probe))
    log("connect: %d variants: %s" % (len(variants), ", ".join(v.split(",")[0] for v in variants)))

    policies = {nm: (sb, sb.policy_path, kind) for nm, sb, kind in
                ((nm, sandboxes[nm], nm.split("-")[1][0] + nm.split("-")[2]) for nm in sluice_names)}

    def revive():
        """Another process on this machine may remove sluice sandboxes it did
        not make (tests/integration/run.py's leftover cleanup does): restart
        any that died, under a new name, and point the variants at it."""
        for nm, (sb, pol, short) in list(policies.items()):
            if sb.proc.poll() is None and os.path.isdir(sb.cg):
                continue
            log("sandbox %s (%s) was removed from outside; restarting it" % (sb.name, nm))
            sb.stop()
            revive.count += 1
            nsb = b.sandbox("%s-r%d" % (short, revive.count), pol, netns=base_ns, extra=["--no-proxy", "--no-resolver"])
            sandboxes[nm] = nsb
            policies[nm] = (nsb, pol, short)
            for i, v in enumerate(variants):
                if v.split(",")[0] == nm:
                    variants[i] = "%s,cg=%s,netns=/run/netns/%s,probe=%s=EPERM" % (nm, nsb.cg, base_ns, probe)
    revive.count = 0

    runs = []
    for rep in range(cfg["repeats"]):
        for attempt in range(3):
            revive()
            try:
                d = run_client(variants, cfg["connect_n"], cfg["connect_blocks"])
                break
            except RuntimeError as e:
                if attempt == 2:
                    raise
                log("connect repeat %d failed (%s); retrying" % (rep + 1, str(e)[-160:]))
        runs.append(d)
        log("connect repeat %d/%d done" % (rep + 1, cfg["repeats"]))
    revive()
    names = [v.split(",")[0] for v in variants]
    stats = {nm: pooled(runs, nm, "none" if nm != "none" else None) for nm in names}

    # BPF programs' own run time per call (stats on: they add two clock
    # reads per program run, so this pass is separate from the timing above)
    prof = {}
    if sluice_names:
        b.sysctl("kernel.bpf_stats_enabled", 1)
        before = {nm: sandboxes[nm].prog_stats() for nm in sluice_names}
        pv = [v for v in variants if v.split(",")[0] in sluice_names]
        n_prof, blocks_prof = cfg["profile_n"], 2
        run_client(pv, n_prof, blocks_prof, warmup=0)
        for nm in sluice_names:
            prof[nm] = bpf_delta(before[nm], sandboxes[nm].prog_stats(), n_prof * blocks_prof)
        b.sysctl("kernel.bpf_stats_enabled", b.sysctl_restore["kernel.bpf_stats_enabled"])
    # the cidr lookup alone, per policy size: the backstop on one packet
    lookup, lookup_err = {}, None
    for nm in (n for n in sluice_names if n.startswith("sluice-cidr-")):
        try:
            lookup[nm] = egress_test_run(b, sandboxes[nm], cfg["test_run_repeat"])
        except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
            lookup_err = str(e)[-200:]
            log("egress test run of %s: %s" % (nm, lookup_err))
    for sb in sandboxes.values():
        sb.stop()

    # scenario 1: size 10
    rows1 = []
    for nm, label in (("none", "no filter"), ("nft-10", "nftables socket cgroupv2"),
                      ("sluice-cidr-10", "sluice")):
        if nm in stats:
            rows1.append({"variant": label, "key": nm, "ns_per_connect": round(stats[nm]["ns"], 1),
                          "ratio_vs_none": round(stats[nm]["ratio"], 4) if stats[nm]["ratio"] else 1.0,
                          "repeat_medians_ns": stats[nm]["repeat_medians"], "unexpected": stats[nm]["unexpected"]})
        else:
            rows1.append({"variant": label, "key": nm, "skipped": skipped.get(nm, "not run")})
    res1.update({"status": "ok", "rows": rows1, "bpf": prof.get("sluice-cidr-10"),
                 "n": cfg["connect_n"], "blocks": cfg["connect_blocks"], "repeats": cfg["repeats"],
                 "method": "socket+connect+close (SO_LINGER 0) to 127.0.0.1 in a bench netns; "
                           "variants interleaved block by block in one client process"})

    # scenario 2: sizes
    rows2 = []
    for fam in ("sluice-cidr", "sluice-host", "nft"):
        ref = stats.get("%s-10" % fam)
        for n in SIZES:
            nm = "%s-%d" % (fam, n)
            if nm in stats:
                row = {"variant": nm, "entries": n, "ns_per_connect": round(stats[nm]["ns"], 1),
                       "ratio_vs_none": round(stats[nm]["ratio"], 4),
                       "ratio_vs_size_10": round(stats[nm]["ratio"] / ref["ratio"], 4) if ref else None,
                       "unexpected": stats[nm]["unexpected"]}
                if nm in prof:
                    row["bpf_ns_per_connect"] = prof[nm]["ns_per_connect"]
                    ref_p = prof.get("%s-10" % fam)
                    if ref_p:
                        row["bpf_ratio_vs_size_10"] = round(prof[nm]["ns_per_connect"] / ref_p["ns_per_connect"], 3)
                if nm in lookup:
                    row["egress_test_run_ns"] = lookup[nm]
                    ref_l = lookup.get("%s-10" % fam)
                    if ref_l:
                        row["egress_test_run_ratio_vs_size_10"] = round(lookup[nm] / ref_l, 3)
                row.update(setup.get(nm, {}))
                rows2.append(row)
            else:
                rows2.append({"variant": nm, "entries": n, "skipped": skipped.get(nm, "not run")})
    res2.update({"status": "ok", "rows": rows2, "bpf": {k: v for k, v in prof.items()},
                 "egress_test_run": {"repeat": cfg["test_run_repeat"], "runs": TEST_RUNS, "error": lookup_err,
                                     "method": "bpftool prog run of the sandbox's skb_egress on one IPv4 TCP "
                                               "packet to the server (no socket: the full lookup); the least "
                                               "of the runs' average ns"}})


# --- scenario 3 ---------------------------------------------------------------------
def count_events(path):
    """(denial lines incl. canary, sum of events_lost lines, stop-line counters, seq gaps)"""
    lines = lost = 0
    stop = None
    seqs = []
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            a = e.get("event.action", "")
            if a in ("egress-denied", "canary-denied", "egress-would-deny"):
                lines += 1
                seqs.append(e.get("sluice.seq"))
            elif a == "events_lost":
                lost += e.get("sluice.events_lost", 0)
            elif a == "sandbox-stop":
                m = re.search(r"denied (\d+), events lost (\d+)", e.get("message", ""))
                if m:
                    stop = {"denied": int(m.group(1)), "events_lost": int(m.group(2))}
    seqs = sorted(s for s in seqs if s is not None)
    gaps = (seqs[-1] + 1 - len(seqs)) if seqs else 0
    return lines, lost, stop, gaps


def wc_lines(path):
    n = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            n += chunk.count(b"\n")
    return n


def flood_scenario(b, cfg, res):
    ns = b.mknetns("f")
    start_server(b, ns, "srv-flood")
    pol = b.write("flood.yaml", cidr_policy(10))
    events = os.path.join(b.tmp, "flood-events.jsonl")
    sb = b.sandbox("flood", pol, netns=ns, events=events, extra=["--no-proxy", "--no-resolver"])
    client_denials = 3  # the canary's: UDP, TCP, raw socket
    target = "target=%s:%d" % (SERVER, PORT_DENIED)
    common = "cg=%s,netns=/run/netns/%s,%s,expect=eperm" % (sb.cg, ns, target)

    # (a) cost of a denied connect, consumer running vs stopped (SIGSTOP),
    # interleaved; blocks small enough that the stopped consumer's ring
    # buffer (1 MiB, ~10,000 events) never fills, so neither side loses events
    runs = []
    n_blk = cfg["flood_block"]
    for rep in range(cfg["repeats"]):
        d = run_client(["consumer-on," + common, "consumer-off,%s,stop=%d" % (common, sb.pid)],
                       n_blk, cfg["flood_blocks"], warmup=50, settle_ms=250)
        client_denials += (n_blk + 50) * cfg["flood_blocks"] * 2
        runs.append(d)
    on = pooled(runs, "consumer-on", "consumer-off")
    off = pooled(runs, "consumer-off", None)

    # (b) throughput: one long flood, consumer running; then wait for the
    # lines to land and measure the loader's CPU time
    time.sleep(0.5)
    lines0 = wc_lines(events)
    cpu0 = sb.cpu_seconds()
    n_flood = cfg["flood_n"]
    t0 = time.monotonic()
    d = run_client(["flood," + common], n_flood, 1, warmup=0)
    t_flood = time.monotonic() - t0
    client_denials += n_flood
    flood_ns = d["variants"]["flood"]["ns"][0]
    # the consumer polls every 100 ms: wait until the file stops growing
    last, t_last, stable = lines0, time.monotonic(), 0
    while stable < 5 and time.monotonic() - t0 < 60:
        time.sleep(0.1)
        cur = wc_lines(events)
        if cur != last:
            last, t_last, stable = cur, time.monotonic(), 0
        else:
            stable += 1
    cpu1 = sb.cpu_seconds()
    lines_flood = last - lines0
    t_written = t_last - t0

    # (c) perf profile of the loader under a flood, when perf works here
    profile = perf_profile(b, sb, ["flood," + common], cfg)
    if profile.get("denials"):
        client_denials += profile["denials"]

    sb.stop()
    lines, lost, stop, gaps = count_events(events)
    exact = stop is not None and stop["denied"] == lines + lost and stop["events_lost"] == lost
    res.update({
        "status": "ok",
        "denied_connect_ns_consumer_on": round(on["ns"], 1),
        "denied_connect_ns_consumer_off": round(off["ns"], 1),
        "ratio_on_vs_off": round(on["ratio"], 4),
        "repeat_medians_on": on["repeat_medians"], "repeat_medians_off": off["repeat_medians"],
        "flood_denials": n_flood,
        "denials_per_s": round(1e9 / flood_ns),
        "flood_event_lines": lines_flood,
        "events_per_s_written": round(lines_flood / t_written) if t_written > 0 else None,
        "flood_s": round(t_flood, 3), "flood_lines_written_after_s": round(t_written, 3),
        "loader_cpu_s_per_100k_events": round((cpu1 - cpu0) * 100000 / lines_flood, 3) if lines_flood else None,
        "accounting": {"client_eperm": client_denials, "kernel_denied": stop and stop["denied"],
                       "json_lines": lines, "events_lost_lines_sum": lost,
                       "stop_line_events_lost": stop and stop["events_lost"], "seq_gaps": gaps,
                       "denials_equal_lines_plus_lost": exact,
                       "client_matches_kernel": stop is not None and stop["denied"] == client_denials},
        "unexpected": on["unexpected"] + off["unexpected"] + d["variants"]["flood"]["unexpected"],
        "perf": profile,
    })


def perf_profile(b, sb, variants, cfg):
    """cpu-clock samples of the loader while a flood runs (software event:
    works without hardware counters)."""
    out = os.path.join(b.tmp, "loader.perf")
    try:
        p = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-p", str(sb.pid),
                              "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except FileNotFoundError:
        return {"skipped": "perf not installed"}
    time.sleep(0.3)
    n = cfg["flood_n"]
    try:
        run_client(variants, n, 1, warmup=0)
        time.sleep(1.0)
    finally:
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            return {"skipped": "perf record hung", "denials": n}
    if p.returncode not in (0, -2, 130) or not os.path.exists(out):
        return {"skipped": "perf record failed: %s" % err.decode(errors="replace")[-300:], "denials": n}
    r = subprocess.run(["perf", "report", "-i", out, "--stdio", "--no-children", "--sort", "dso,symbol",
                        "--percent-limit", "1.5", "-g", "none"], capture_output=True, text=True, timeout=120)
    top = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*)", line)
        if m:
            top.append({"pct": float(m.group(1)), "dso": m.group(2), "symbol": m.group(3).strip()})
    return {"top": top[:25], "denials": n}
