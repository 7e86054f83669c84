"""Scenarios 4-7: the proxy and the resolver, against direct traffic,
tinyproxy, squid and dnsmasq configured with the same allowlist.

The world (two network namespaces the bench creates, joined by a veth
pair, no other link):

  sandbox side S                          world side W
  clients (wrk, netbench), sluice's       origin  192.0.2.10:80   (netbench origin, 64-byte body)
  proxy and resolver, tinyproxy,  <-veth-> source  192.0.2.10:9000 (netbench source, bulk bytes)
  squid, dnsmasq (all on 127.0.0.1)       DNS     192.0.2.53:53   (dnsmasq: *.bench.example.com -> 192.0.2.10)
  s0 192.0.2.2/24                         w0 192.0.2.1/24

Every name is answered with a TTL of ORIGIN_TTL seconds, like a real
name's (the proxies' origin names by --host-record, the resolver scenario's
names by --local-ttl), so every proxy and resolver may cache them; the
resolver scenario also runs sluice-resolver and dnsmasq without a cache,
which forward every query.

Every proxy allows exactly origin.bench.example.com (HTTP on port 80,
CONNECT to port 9000); the resolvers answer names under
dns.bench.example.com and refuse the rest.  Clients are moved into a cgroup
before they enter S: the sluice sandbox's cgroup for the sluice variants,
a plain one for the others.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import time

from benchlib import NETBENCH, PROXY, RESOLVER, Skip, log, median, sh

ORIGIN, SOURCE_PORT, DNS_UP = "192.0.2.10", 9000, "192.0.2.53"
# One origin name and address per proxy variant: every variant's upstream
# connections (and their TIME_WAIT entries) have their own 4-tuples, so one
# variant's leftovers never slow another's connect()s.
NAMES = {"sluice explicit": ("origin-sx.bench.example.com", "192.0.2.11"),
         "sluice transparent": ("origin-st.bench.example.com", "192.0.2.12"),
         "tinyproxy": ("origin-tiny.bench.example.com", "192.0.2.13"),
         "squid": ("origin-squid.bench.example.com", "192.0.2.14")}
ORIGIN_TTL = 300
TINY_PORT, SQUID_PORT = 18080, 18081
DNSMASQ_ADDR, DNSMASQ_NC_ADDR, DNSMASQ_BIG_ADDR = "127.0.0.2", "127.0.0.3", "127.0.0.4"

POLICY = """version: 1
name: bench-proxy
allow:
  - host: %s
    ports: [80, %d]
    why: bench origin (HTTP, CONNECT idle tunnels) and bulk source (CONNECT), explicit use
  - host: %s
    ports: [80]
    why: bench origin, transparent use
""" % (NAMES["sluice explicit"][0], SOURCE_PORT, NAMES["sluice transparent"][0])
# The resolver scenario's names, each its own entry: under one wildcard the
# tunnelling limit (30 new names a burst, docs/events.md) would refuse most
# of the 200 names and the resolver would be timed answering REFUSED.
DNS_NAMES = ["n%d.dns.bench.example.com" % i for i in range(200)]
POLICY += "".join("  - host: %s\n    ports: [443]\n    why: resolver benchmark\n" % n for n in DNS_NAMES)


class World:
    """Built once, on first use, shared by scenarios 4-7."""
    inst = None

    @classmethod
    def get(cls, b, cfg):
        if cls.inst is None:
            cls.inst = World(b, cfg)
        if cls.inst.error:
            raise Skip(cls.inst.error)
        return cls.inst

    def __init__(self, b, cfg):
        self.b, self.cfg, self.error = b, cfg, None
        self.sb = None
        self.proxy = {}
        try:
            self._up()
        except Skip as e:
            self.error = str(e)
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)

    def _up(self):
        b = self.b
        for tool in (PROXY, NETBENCH):
            if not os.path.exists(tool):
                raise Skip("%s not built" % tool)
        r = sh(PROXY, "--help", check=False)
        if r.returncode != 0:
            raise Skip("sluice-proxy --help failed (%d): %s" % (r.returncode, r.stderr.strip()[-200:]))
        self.S, self.W = b.mknetns("s"), b.mknetns("w")
        s0, w0 = b.tag + "s0", b.tag + "w0"
        sh("ip", "link", "add", s0, "netns", self.S, "type", "veth", "peer", "name", w0, "netns", self.W)
        sh("ip", "-n", self.W, "addr", "add", "192.0.2.1/24", "dev", w0)
        for a in [ORIGIN, DNS_UP] + [a for _, a in NAMES.values()]:
            sh("ip", "-n", self.W, "addr", "add", a + "/32", "dev", w0)
        sh("ip", "-n", self.W, "link", "set", w0, "up")
        sh("ip", "-n", self.S, "addr", "add", "192.0.2.2/24", "dev", s0)
        sh("ip", "-n", self.S, "link", "set", s0, "up")
        os.chmod(b.tmp, 0o755)  # squid and tinyproxy drop to unprivileged users and log under it
        self.srv = b.cg("w-srv")
        self.plain = b.cg("w-plain")
        self.pxcg = b.cg("w-proxies")
        tmp = b.tmp
        # origin, bulk source, upstream DNS
        ready = os.path.join(tmp, "origin.ready")
        p = b.spawn([NETBENCH, "origin", "--listen", "0.0.0.0:80", "--ready", ready], cg=self.srv,
                    netns=self.W, name="origin")
        b.wait_file(ready, p)
        ready = os.path.join(tmp, "source.ready")
        p = b.spawn([NETBENCH, "source", "--listen", "0.0.0.0:%d" % SOURCE_PORT, "--bytes",
                     str(self.cfg["bulk_bytes"]), "--ready", ready], cg=self.srv, netns=self.W, name="source")
        b.wait_file(ready, p)
        if not shutil.which("dnsmasq"):
            raise Skip("dnsmasq not installed (the world's upstream DNS)")
        # authoritative for bench.example.com (--local: AAAA gets NODATA, not REFUSED)
        self.dns_up = b.spawn(["dnsmasq", "-k", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
                               "--user=root", "--listen-address=" + DNS_UP, "--bind-interfaces",
                               "--local=/bench.example.com/", "--address=/bench.example.com/" + ORIGIN,
                               "--local-ttl=%d" % ORIGIN_TTL,
                               "--pid-file=" + os.path.join(tmp, "dnsup.pid")] +
                              ["--host-record=%s,%s,%d" % (n, a, ORIGIN_TTL) for n, a in NAMES.values()],
                              cg=self.srv, netns=self.W, name="dns-upstream")
        wait_port(self.b, self.W, DNS_UP, 53, self.dns_up, udp=True)
        # the sandbox: sluice run with proxy and resolver, dialing in S
        pol = b.write("proxy-policy.yaml", POLICY)
        self.events = os.path.join(tmp, "proxy-events.jsonl")
        self.policy = pol
        self.sluice_extra = ["--upstream-dns", DNS_UP,
                             "--proxy-arg", "--allow-private-upstream", "--proxy-arg", "192.0.2.0/24",
                             "--resolver-arg", "--allow-private-answers", "--resolver-arg", "192.0.2.0/24"]
        self.sb = b.sandbox("px", pol, netns=self.S, events=self.events, extra=self.sluice_extra)
        kids = children(self.sb.pid)
        self.proxy_pid = kids.get("sluice-proxy")
        self.resolver_pid = kids.get("sluice-resolver")
        self.proxy_port = listen_port(self.S, self.proxy_pid, "tcp") if self.proxy_pid else None
        self.resolver_port = listen_port(self.S, self.resolver_pid, "udp") if self.resolver_pid else None
        log("world: sluice-proxy pid %s port %s, sluice-resolver pid %s port %s" % (
            self.proxy_pid, self.proxy_port, self.resolver_pid, self.resolver_port))
        # resolv.conf for tinyproxy and squid (ip netns exec bind-mounts it)
        b.etc_netns_file(self.S, "resolv.conf", "nameserver %s\n" % DNS_UP)

    # --- baselines ---------------------------------------------------------------
    def tinyproxy(self, inst="", port=TINY_PORT):
        """The shared instance, or (inst != "") a fresh one on `port`."""
        if "tinyproxy" + inst in self.proxy:
            return self.proxy["tinyproxy" + inst]
        if not shutil.which("tinyproxy"):
            raise Skip("tinyproxy not installed")
        d = os.path.join(self.b.tmp, "tinyproxy" + inst)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o777)
        with open(os.path.join(d, "filter"), "w") as f:
            f.write("^%s$\n" % re.escape(NAMES["tinyproxy"][0]))
        conf = os.path.join(d, "tinyproxy.conf")
        with open(conf, "w") as f:
            f.write("""User nobody
Group nogroup
Port %d
Listen 127.0.0.1
Timeout 600
MaxClients 20000
Allow 127.0.0.1
ConnectPort %d
ConnectPort 80
Filter "%s/filter"
FilterDefaultDeny Yes
FilterExtended Yes
LogFile "%s/tinyproxy.log"
LogLevel Connect
DisableViaHeader Yes
""" % (port, SOURCE_PORT, d, d))
        p = self.b.spawn(["tinyproxy", "-d", "-c", conf], cg=self.pxcg, netns=self.S, etc=True, name="tinyproxy" + inst)
        wait_port(self.b, self.S, "127.0.0.1", port, p)
        self.proxy["tinyproxy" + inst] = (p, port)
        return self.proxy["tinyproxy" + inst]

    def squid(self, inst="", port=SQUID_PORT):
        if "squid" + inst in self.proxy:
            return self.proxy["squid" + inst]
        if not shutil.which("squid"):
            raise Skip("squid not installed")
        d = os.path.join(self.b.tmp, "squid" + inst)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o777)
        conf = os.path.join(d, "squid.conf")
        with open(conf, "w") as f:
            f.write("""http_port 127.0.0.1:%d
acl allowed dstdomain %s
acl CONNECT method CONNECT
acl bulk_port port %d 80
acl web_port port 80
http_access deny CONNECT !bulk_port
http_access deny !CONNECT !web_port
http_access allow allowed
http_access deny all
cache deny all
cache_mem 8 MB
dns_nameservers %s
max_filedescriptors 65536
access_log stdio:%s/access.log
cache_log %s/cache.log
cache_store_log none
pid_filename %s/squid.pid
coredump_dir %s
shutdown_lifetime 1 seconds
via off
forwarded_for delete
""" % (port, NAMES["squid"][0], SOURCE_PORT, DNS_UP, d, d, d, d))
        p = self.b.spawn(["squid", "-N", "-f", conf], cg=self.pxcg, netns=self.S, etc=True, name="squid" + inst)
        wait_port(self.b, self.S, "127.0.0.1", port, p, timeout=30)
        self.proxy["squid" + inst] = (p, port)
        return self.proxy["squid" + inst]

    def fresh_sluice(self, tag, extra=()):
        """A second sandbox with its own, fresh sluice-proxy: (sandbox, proxy pid, port)."""
        sb = self.b.sandbox(tag, self.policy, netns=self.S, events=os.path.join(self.b.tmp, "events-%s.jsonl" % tag),
                            extra=self.sluice_extra + list(extra))
        pid = children(sb.pid).get("sluice-proxy")
        if not pid:
            raise Skip("sluice-proxy did not start under sluice run: %s" % sb.stderr_tail())
        return sb, pid, listen_port(self.S, pid, "tcp")

    def run_in(self, argv, cg, timeout=120):
        """Run argv in cgroup cg inside S; returns CompletedProcess."""
        procs = os.path.join(cg, "cgroup.procs")

        def pre():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        try:
            return subprocess.run(["nsenter", "--net=/run/netns/" + self.S] + list(argv), capture_output=True,
                                  text=True, timeout=timeout, preexec_fn=pre)
        except (subprocess.SubprocessError, OSError) as e:
            alive = self.sb.proc.poll() is None if self.sb else False
            return subprocess.CompletedProcess(argv, 2, "", "%s: %s (sluice run %s)" % (
                type(e).__name__, e, "alive" if alive else "exited: " + self.sb.stderr_tail()))


def children(ppid):
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        if int(fields[1]) == ppid:
            out[comm] = int(pid)
    return out


def listen_port(ns, pid, proto):
    r = sh("nsenter", "--net=/run/netns/" + ns, "ss", "-Hln" + ("t" if proto == "tcp" else "u") + "p", check=False)
    for line in r.stdout.splitlines():
        if "pid=%d," % pid in line:
            m = re.search(r"127\.0\.0\.1:(\d+)", line)
            if m:
                return int(m.group(1))
    return None


def wait_port(b, ns, addr, port, proc, udp=False, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Skip("%s exited (%s): %s" % (proc.bench_name, proc.returncode, b.err_of(proc)))
        r = sh("nsenter", "--net=/run/netns/" + ns, "ss", "-Hln" + ("u" if udp else "t"), check=False)
        if re.search(r"%s:%d\b" % (re.escape(addr), port), r.stdout):
            return
        time.sleep(0.1)
    raise Skip("%s did not listen on %s:%d within %ds: %s" % (proc.bench_name, addr, port, timeout, b.err_of(proc)))


def cpu_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def system_busy_s():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def rotate(xs, k):
    k %= len(xs)
    return xs[k:] + xs[:k]


# --- 4: HTTP -------------------------------------------------------------------------
WRK_EXPLICIT = """wrk.path = "http://%s/"
wrk.headers["Host"] = "%s"
"""


def parse_wrk(out):
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\b", out, re.M)
    errs = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors:.*", out)
    if not rps or not p99:
        return None
    scale = {"us": 1, "ms": 1000, "s": 1000000}[p99.group(2)]
    return {"rps": float(rps.group(1)), "p99_us": float(p99.group(1)) * scale,
            "non2xx": int(errs.group(1)) if errs else 0, "socket_errors": sock.group(0) if sock else ""}


def http_scenario(b, cfg, res):
    w = World.get(b, cfg)
    if not shutil.which("wrk"):
        raise Skip("wrk not installed")

    def explicit(nm):
        name = NAMES[nm][0]
        return ["-s", b.write("explicit-%s.lua" % nm.replace(" ", "-"), WRK_EXPLICIT % (name, name))]
    variants, skipped = [], {}
    variants.append(("direct", w.plain, ["http://%s:80/" % ORIGIN, "-H", "Host: origin.bench.example.com"]))
    if w.proxy_port:
        variants.append(("sluice explicit", w.sb.cg, explicit("sluice explicit") + ["http://127.0.0.1:%d/" % w.proxy_port]))
        name, addr = NAMES["sluice transparent"]
        variants.append(("sluice transparent", w.sb.cg, ["http://%s:80/" % addr, "-H", "Host: %s" % name]))
    else:
        skipped["sluice explicit"] = skipped["sluice transparent"] = "sluice-proxy did not start under sluice run"
    for nm, fn in (("tinyproxy", w.tinyproxy), ("squid", w.squid)):
        try:
            _, port = fn()
            variants.append((nm, w.plain, explicit(nm) + ["http://127.0.0.1:%d/" % port]))
        except Skip as e:
            skipped[nm] = str(e)
    got = {v[0]: [] for v in variants}
    errors = {}
    for rep in range(cfg["repeats"]):
        for nm, cg, args in rotate(variants, rep):
            r = w.run_in(["wrk", "-t1", "-c%d" % cfg["http_conns"], "-d%ds" % cfg["http_seconds"], "--latency",
                          "--timeout", "5s"] + args, cg, timeout=cfg["http_seconds"] + 30)
            m = parse_wrk(r.stdout)
            if not m or m["non2xx"] or m["rps"] == 0:
                errors[nm] = ("non-2xx responses: %d (%s)" % (m["non2xx"], m["socket_errors"]) if m and m["non2xx"]
                              else "wrk: %s %s" % (r.stdout[-300:], r.stderr[-300:]))
                continue
            got[nm].append(m)
        log("http repeat %d/%d" % (rep + 1, cfg["repeats"]))
    rows = []
    base_rps = median([m["rps"] for m in got["direct"]]) if got["direct"] else None
    base_p99 = median([m["p99_us"] for m in got["direct"]]) if got["direct"] else None
    for nm, _, _ in variants:
        if not got[nm]:
            rows.append({"variant": nm, "skipped": "failed: %s" % errors.get(nm, "no result")})
            continue
        rps = median([m["rps"] for m in got[nm]])
        p99 = median([m["p99_us"] for m in got[nm]])
        note = "p99 %.0f us (%.2fx direct)" % (p99, p99 / base_p99) if base_p99 else ""
        if nm.startswith("sluice"):
            note += "; target >= 0.4x rps, p99 <= 4x"
        note += "; repeats %s" % "/".join("%.0f" % m["rps"] for m in got[nm])
        if nm in errors:
            note += "; some repeats failed: %s" % errors[nm][:80]
        rows.append({"variant": nm + " GET req/s", "value": round(rps), "unit": "/s",
                     "ratio": round(rps / base_rps, 3) if base_rps else None, "p99_us": p99,
                     "p99_ratio": round(p99 / base_p99, 2) if base_p99 else None,
                     "repeats": [round(m["rps"]) for m in got[nm]], "socket_errors": [m["socket_errors"] for m in got[nm]],
                     "note": note})
    for nm, why in skipped.items():
        rows.append({"variant": nm, "skipped": why})
    res.update({"status": "ok", "rows": rows, "wrk": "-t1 -c%d -d%ds, 64-byte body, keep-alive" % (
        cfg["http_conns"], cfg["http_seconds"])})


# --- 5: CONNECT bulk ----------------------------------------------------------------------
def tunnel_scenario(b, cfg, res):
    w = World.get(b, cfg)
    n = cfg["bulk_bytes"]
    variants, skipped = [("direct", w.plain, ["--to", "%s:%d" % (ORIGIN, SOURCE_PORT)], None)], {}
    if w.proxy_port:
        variants.append(("sluice CONNECT", w.sb.cg, ["--to", "127.0.0.1:%d" % w.proxy_port, "--connect",
                                                     "%s:%d" % (NAMES["sluice explicit"][0], SOURCE_PORT)], w.proxy_pid))
    else:
        skipped["sluice CONNECT"] = "sluice-proxy did not start under sluice run"
    # the same, relayed in the kernel (sockhash; off by default: docs/performance.md)
    try:
        ksb, kpid, kport = w.fresh_sluice("pxk", ["--proxy-arg", "--kernel-tunnels"])
        variants.append(("sluice CONNECT kernel", ksb.cg, ["--to", "127.0.0.1:%d" % kport, "--connect",
                                                          "%s:%d" % (NAMES["sluice explicit"][0], SOURCE_PORT)], kpid))
    except Skip as e:
        skipped["sluice CONNECT kernel"] = str(e)
    for nm, fn in (("tinyproxy", w.tinyproxy), ("squid", w.squid)):
        try:
            p, port = fn()
            variants.append((nm + " CONNECT", w.plain, ["--to", "127.0.0.1:%d" % port, "--connect",
                                                        "%s:%d" % (NAMES[nm][0], SOURCE_PORT)], p.pid))
        except Skip as e:
            skipped[nm + " CONNECT"] = str(e)
    got = {v[0]: [] for v in variants}
    errors = {}
    for rep in range(cfg["repeats"]):
        for nm, cg, args, ppid in rotate(variants, rep):
            c0, s0 = cpu_of(ppid) if ppid else None, system_busy_s()
            r = w.run_in([NETBENCH, "bulk", "--bytes", str(n)] + args, cg, timeout=120)
            c1, s1 = cpu_of(ppid) if ppid else None, system_busy_s()
            try:
                d = json.loads(r.stdout)
            except ValueError:
                errors[nm] = (r.stderr or r.stdout).strip()[-300:]
                continue
            if r.returncode != 0:
                errors[nm] = "got %d of %d bytes: %s" % (d["bytes"], n, r.stderr.strip()[-200:])
                continue
            gib = d["bytes"] / float(1 << 30)
            d["proxy_cpu_s_per_gib"] = (c1 - c0) / gib if c0 is not None and c1 is not None else None
            d["system_cpu_s_per_gib"] = (s1 - s0) / gib
            got[nm].append(d)
        log("tunnel repeat %d/%d" % (rep + 1, cfg["repeats"]))
    rows = []
    base = median([d["mb_per_s"] for d in got["direct"]]) if got["direct"] else None
    for nm, _, _, _ in variants:
        if not got[nm]:
            rows.append({"variant": nm, "skipped": "failed: %s" % errors.get(nm, "no result")})
            continue
        mbs = median([d["mb_per_s"] for d in got[nm]])
        pcpu = median([d["proxy_cpu_s_per_gib"] for d in got[nm]])
        scpu = median([d["system_cpu_s_per_gib"] for d in got[nm]])
        note = "CPU s/GiB: all %.2f%s" % (scpu, ", proxy %.2f" % pcpu if pcpu is not None else "")
        if nm.startswith("sluice"):
            note += "; target >= 0.6x"
        rows.append({"variant": nm + " MB/s", "value": round(mbs, 1), "unit": "MB/s",
                     "ratio": round(mbs / base, 3) if base else None, "proxy_cpu_s_per_gib": pcpu,
                     "system_cpu_s_per_gib": scpu, "repeats": [d["mb_per_s"] for d in got[nm]], "note": note})
    for nm, why in skipped.items():
        rows.append({"variant": nm, "skipped": why})
    res.update({"status": "ok", "rows": rows, "bytes": n})


# --- 6: idle keep-alive memory -------------------------------------------------------------------
def memory_scenario(b, cfg, res):
    """RSS per idle connection: (a) a keep-alive client connection after one
    GET, (b) an idle CONNECT tunnel.  The connection count is bounded by the
    open-files limit: the proxy holds two descriptors per connection."""
    import resource
    w = World.get(b, cfg)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = min(cfg["idle_conns"], (hard - 500) // 2)
    rows = []
    # a fresh instance of every proxy for each kind: memory freed by one
    # measurement would otherwise be reused by the next and hide its cost
    for ki, kind in enumerate(("CONNECT tunnel", "keep-alive")):
        variants = []
        try:
            sb, ppid, pport = w.fresh_sluice("mem%d" % ki)
            variants.append(("sluice-proxy", "sluice explicit", sb.cg, pport, ppid, sb))
        except Skip as e:
            rows.append({"variant": "sluice-proxy RSS per idle %s" % kind, "skipped": str(e)})
        for nm, fn, port in (("tinyproxy", w.tinyproxy, TINY_PORT + 10 + ki), ("squid", w.squid, SQUID_PORT + 10 + ki)):
            try:
                p, port = fn("-mem%d" % ki, port)
                variants.append((nm, nm, w.plain, port, p.pid, p))
            except Skip as e:
                rows.append({"variant": "%s RSS per idle %s" % (nm, kind), "skipped": str(e)})
        for nm, key, cg, port, pid, owner in variants:
            name = NAMES[key][0]
            if kind == "keep-alive":
                req = "GET http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (name, name)
            else:
                req = "CONNECT %s:80 HTTP/1.1\\r\\nHost: %s:80\\r\\n\\r\\n" % (name, name)
            label = "%s RSS per idle %s" % (nm, kind)
            # warm up: one request/tunnel first, so start-up allocations are in the baseline
            warm = os.path.join(b.tmp, "warm-%s-%d.ready" % (nm, ki))
            wp = b.spawn([NETBENCH, "idle", "--to", "127.0.0.1:%d" % port, "--n", "16", "--request", req,
                          "--ready", warm], cg=cg, netns=w.S, name="warm-" + nm)
            try:
                b.wait_file(warm, wp, timeout=60)
            except Exception as e:
                rows.append({"variant": label, "skipped": "warm-up failed: %s" % e})
                b.kill(wp)
                continue
            b.kill(wp)
            time.sleep(1.0)
            try:
                before = rss_kib(pid)
            except OSError:
                rows.append({"variant": label, "skipped": "%s exited during the warm-up" % nm})
                continue
            ready = os.path.join(b.tmp, "idle-%s-%d.ready" % (nm, ki))
            p = b.spawn([NETBENCH, "idle", "--to", "127.0.0.1:%d" % port, "--n", str(n), "--request", req,
                         "--ready", ready], cg=cg, netns=w.S, name="idle-" + nm)
            try:
                b.wait_file(ready, p, timeout=150)
                time.sleep(0.2)
                with open(ready) as f:
                    ok, still = (int(x) for x in f.read().split())
                after = rss_kib(pid)
                threads = len(os.listdir("/proc/%d/task" % pid))
            except Exception as e:
                rows.append({"variant": label, "skipped": "failed: %s" % e})
                continue
            finally:
                b.kill(p)
            log("memory: %s: %d ok, %d open, RSS %s -> %s KiB" % (label, ok, still, before, after))
            if still == 0:
                rows.append({"variant": label, "skipped": "%d of %d got 200, none stayed open: the proxy closes "
                                                          "client connections after a response" % (ok, n)})
                continue
            per = (after - before) / float(still)
            note = "%d of %d open; RSS %d -> %d KiB; %d threads" % (still, n, before, after, threads)
            if nm == "sluice-proxy":
                note += "; target <= %s KiB" % ("1" if kind == "CONNECT tunnel" else "2")
            rows.append({"variant": label, "value": round(per, 2), "unit": "KiB", "kind": kind,
                         "rss_before_kib": before, "rss_after_kib": after, "ok": ok, "open": still, "note": note})
        for nm, key, cg, port, pid, owner in variants:
            if nm == "sluice-proxy":
                owner.stop()
            else:
                b.kill(owner)
    for kind in ("keep-alive", "CONNECT tunnel"):
        sq = [r for r in rows if r.get("kind") == kind and r["variant"].startswith("squid")]
        for r in rows:
            if r.get("kind") == kind and sq and sq[0]["value"]:
                r["ratio"] = round(r["value"] / sq[0]["value"], 2)
    res.update({"status": "ok", "rows": rows, "connections": n, "ratio_baseline": "squid",
                "open_files_limit": hard})


# --- 7: resolver ---------------------------------------------------------------------------------
def resolver_scenario(b, cfg, res):
    w = World.get(b, cfg)
    names = b.write("dns-names.txt", "".join(n + "\n" for n in DNS_NAMES))
    rows, variants = [], [("direct upstream", w.plain, "%s:53" % DNS_UP)]
    if w.resolver_port:
        variants.append(("sluice-resolver", w.sb.cg, "%s:53" % DNS_UP))  # redirected by the kernel
        try:
            # the same sandbox set-up, the resolver's cache off: every query forwarded
            nc = b.sandbox("rnc", w.policy, netns=w.S, events=os.path.join(b.tmp, "rnc-events.jsonl"),
                           extra=w.sluice_extra + ["--no-proxy", "--resolver-arg", "--cache-size",
                                                   "--resolver-arg", "0"])
            variants.append(("sluice-resolver no cache", nc.cg, "%s:53" % DNS_UP))
        except Skip as e:
            rows.append({"variant": "sluice-resolver no cache", "skipped": str(e)})
    else:
        rows.append({"variant": "sluice-resolver", "skipped": "sluice-resolver did not start under sluice run"})
    # dnsmasq's default cache holds 150 names, fewer than the 200 asked in
    # turn (each is gone before it is asked again); "cache 4096" is the
    # size sluice-resolver keeps by default
    for nm, addr, extra in (("dnsmasq", DNSMASQ_ADDR, []), ("dnsmasq cache 4096", DNSMASQ_BIG_ADDR, ["--cache-size=4096"]),
                            ("dnsmasq no cache", DNSMASQ_NC_ADDR, ["--cache-size=0"])):
        p = b.spawn(["dnsmasq", "-k", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--user=root",
                     "--listen-address=" + addr, "--bind-interfaces", "--server=/dns.bench.example.com/" + DNS_UP,
                     "--pid-file=" + os.path.join(b.tmp, nm.replace(" ", "") + ".pid")] + extra,
                    cg=w.pxcg, netns=w.S, name=nm.replace(" ", "-"))
        try:
            wait_port(b, w.S, addr, 53, p, udp=True)
            variants.append((nm, w.plain, "%s:53" % addr))
        except Skip as e:
            rows.append({"variant": nm, "skipped": str(e)})
    got = {v[0]: [] for v in variants}
    errors = {}
    for rep in range(cfg["repeats"]):
        for nm, cg, server in rotate(variants, rep):
            r = w.run_in([NETBENCH, "dns", "--server", server, "--names", names, "--seconds", str(cfg["dns_seconds"]),
                          "--window", "32"], cg, timeout=cfg["dns_seconds"] + 30)
            try:
                d = json.loads(r.stdout)
            except ValueError:
                errors[nm] = (r.stderr or r.stdout).strip()[-300:]
                continue
            got[nm].append(d)
        log("dns repeat %d/%d" % (rep + 1, cfg["repeats"]))
    med = {nm: {k: median([d.get(k, 0) for d in got[nm]]) for k in ("qps", "p50_us", "p99_us", "lost", "not_noerror")}
           for nm in got if got[nm]}
    dm = med.get("dnsmasq")
    direct = med.get("direct upstream")
    for nm, _, _ in variants:
        if nm not in med:
            rows.append({"variant": nm, "skipped": "failed: %s" % errors.get(nm, "no result")})
            continue
        m = med[nm]
        note = "p50 %.0f us, p99 %.0f us" % (m["p50_us"], m["p99_us"])
        if direct and nm != "direct upstream":
            note += "; adds %.0f us at p50 over direct" % (m["p50_us"] - direct["p50_us"])
        if m["lost"]:
            note += "; %d lost" % m["lost"]
        if m["not_noerror"]:
            note += "; %d answers not NOERROR" % m["not_noerror"]
        if nm == "sluice-resolver":
            note += "; target >= 1.5x dnsmasq, p99 <= dnsmasq's"
            if dm:
                note += " (%.0f us)" % dm["p99_us"]
            big = med.get("dnsmasq cache 4096")
            if big:
                note += "; %.2fx dnsmasq cache 4096" % (m["qps"] / big["qps"])
        rows.append({"variant": nm + " queries/s", "value": round(m["qps"]), "unit": "/s",
                     "ratio": round(m["qps"] / dm["qps"], 3) if dm else None, "p50_us": m["p50_us"],
                     "p99_us": m["p99_us"], "lost": m["lost"], "repeats": [round(d["qps"]) for d in got[nm]],
                     "note": note})
    res.update({"status": "ok", "rows": rows, "ratio_baseline": "dnsmasq (default cache)",
                "load": "UDP A queries for 200 allowed names in turn, 32 outstanding; upstream TTL %d s" % ORIGIN_TTL})
