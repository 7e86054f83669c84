"""Scenario 8: inspected HTTPS.  sluice's proxy terminating TLS for a name
the policy inspects (every request inside decided and logged), against the
same HTTPS traffic sent directly, and through the TLS-intercepting proxies
the field uses: squid with ssl_bump (squid-openssl), sslsplit and
mitmproxy (mitmdump), each configured to intercept exactly the one name.

It runs in the world of scenarios 4-7 (bench/scen_proxy.py: two network
namespaces joined by a veth pair, no other link) and adds:

  world side W                               sandbox side S
  tlsbench origin 192.0.2.10:443             tlsbench get (the client), the proxies
  (certificate for *.bench.example.com       on 127.0.0.1; a second `sluice run`
  from the bench's own world CA)             sandbox whose policy inspects the names

Every proxy verifies the origin against the world CA (sslsplit cannot:
it says so in its row); clients verify nothing (each proxy mints with its
own CA; the client's verify cost would be the same everywhere).  Two
loads: keep-alive (CONNS connections, every request on an open
connection: the cost of inspecting each request) and new connections
(every request a new TCP connection, CONNECT and full TLS handshakes on
both sides: the cost of the interception itself; no session resumption).
"""
import json
import os
import shutil
import subprocess

from benchlib import Skip, log, median, sh
from scen_proxy import ORIGIN, World, children, cpu_of, listen_port, rotate, wait_port

TLSBENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bench", "tlsbench")
TLS_PORT = 443
SQUID_BUMP_PORT, SSLSPLIT_PORT, MITM_PORT = 18443, 18444, 18445
HS_ZONE = "hs.bench.example.com"   # names for the handshake and idle-connection rows
# one name per variant: each proxy's upstream connections have their own
# SNI, and the policy inspects exactly the sluice ones
N = {"direct": "tls.bench.example.com", "sluice inspect": "tls-sx.bench.example.com",
     "sluice inspect transparent": "tls-st.bench.example.com",
     "sluice passthrough": "tls-sp.bench.example.com", "squid ssl_bump": "tls-squid.bench.example.com",
     "sslsplit": "tls-split.bench.example.com", "mitmproxy": "tls-mitm.bench.example.com"}

POLICY = """version: 1
name: bench-tls
allow:
  - url: https://%s/
    why: bench origin, inspected, explicit CONNECT
  - url: https://%s/
    why: bench origin, inspected, transparent
  - host: %s
    ports: [443]
    why: bench origin, passthrough CONNECT (not inspected)
  - host: "%s"
    ports: [443]
    inspect: true
    why: handshakes and idle connections, a name of its own for each (a leaf minted per name)
""" % (N["sluice inspect"], N["sluice inspect transparent"], N["sluice passthrough"], "*." + HS_ZONE)


def openssl(*args):
    r = sh("openssl", *args, check=False)
    if r.returncode != 0:
        raise Skip("openssl %s: %s" % (args[0], r.stderr.strip()[-200:]))


class TlsWorld:
    inst = None

    @classmethod
    def get(cls, b, cfg):
        if cls.inst is None:
            cls.inst = TlsWorld(b, cfg)
        if cls.inst.error:
            raise Skip(cls.inst.error)
        return cls.inst

    def __init__(self, b, cfg):
        self.b, self.error, self.proxy = b, None, {}
        try:
            self._up(cfg)
        except Skip as e:
            self.error = str(e)
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)

    def _up(self, cfg):
        b = self.b
        if not os.path.exists(TLSBENCH):
            raise Skip("%s not built" % TLSBENCH)
        self.w = w = World.get(b, cfg)
        d = self.dir = os.path.join(b.tmp, "tls")
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
        # the world's CA and the origin's certificate (EC P-256, like sluice's own)
        self.ca, cakey = os.path.join(d, "world-ca.pem"), os.path.join(d, "world-ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=sluice bench world CA", "-keyout", cakey, "-out", self.ca,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        key, csr, crt = (os.path.join(d, "origin." + x) for x in ("key", "csr", "pem"))
        ext = b.write("tls/origin.ext", "subjectAltName=DNS:*.bench.example.com,DNS:*.%s\n"
                                        "extendedKeyUsage=serverAuth\n" % HS_ZONE)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
                "/CN=*.bench.example.com", "-keyout", key, "-out", csr)
        openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", cakey, "-CAcreateserial", "-days", "2",
                "-extfile", ext, "-out", crt)
        # the proxies' own interception CA (squid, sslsplit; mitmproxy makes its own in its confdir)
        self.mitm_ca, self.mitm_key = os.path.join(d, "mitm-ca.pem"), os.path.join(d, "mitm-ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=bench interception CA", "-keyout", self.mitm_key, "-out", self.mitm_ca,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        for f in os.listdir(d):
            os.chmod(os.path.join(d, f), 0o644)  # squid's and sslsplit's unprivileged users read them
        ready = os.path.join(d, "origin.ready")
        p = b.spawn([TLSBENCH, "origin", "--listen", "0.0.0.0:%d" % TLS_PORT, "--cert", crt, "--key", key,
                     "--ready", ready], cg=w.srv, netns=w.W, name="tls-origin")
        b.wait_file(ready, p)
        pol = b.write("tls-policy.yaml", POLICY)
        self.sb = b.sandbox("tl", pol, netns=w.S, events=os.path.join(b.tmp, "tls-events.jsonl"),
                            extra=w.sluice_extra + ["--proxy-arg", "--upstream-ca", "--proxy-arg", self.ca])
        self.proxy_pid = children(self.sb.pid).get("sluice-proxy")
        self.proxy_port = listen_port(w.S, self.proxy_pid, "tcp") if self.proxy_pid else None
        if not self.proxy_port:
            raise Skip("sluice-proxy did not start under sluice run: %s" % self.sb.stderr_tail())

    # --- baselines -------------------------------------------------------------------
    def squid_bump(self):
        if "squid" in self.proxy:
            return self.proxy["squid"]
        if not shutil.which("squid"):
            raise Skip("squid not installed")
        if "--with-openssl" not in sh("squid", "-v", check=False).stdout:
            raise Skip("squid built without OpenSSL (ssl_bump needs the squid-openssl package)")
        certgen = "/usr/lib/squid/security_file_certgen"
        d = os.path.join(self.dir, "squid")
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o777)
        db = os.path.join(d, "ssl_db")
        r = sh(certgen, "-c", "-s", db, "-M", "16MB", check=False)
        if r.returncode != 0:
            raise Skip("%s -c: %s" % (certgen, r.stderr.strip()[-200:]))
        sh("chmod", "-R", "a+rwX", db)
        conf = os.path.join(d, "squid.conf")
        with open(conf, "w") as f:
            f.write("""http_port 127.0.0.1:%d ssl-bump tls-cert=%s tls-key=%s generate-host-certificates=on dynamic_cert_mem_cache_size=16MB
sslcrtd_program %s -s %s -M 16MB
sslcrtd_children 4 startup=2 idle=1
tls_outgoing_options cafile=%s
acl allowed dstdomain %s
acl tls_port port %d
acl CONNECT method CONNECT
acl step1 at_step SslBump1
http_access deny CONNECT !tls_port
http_access allow allowed
http_access deny all
ssl_bump peek step1
ssl_bump bump all
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
""" % (SQUID_BUMP_PORT, self.mitm_ca, self.mitm_key, certgen, db, self.ca, N["squid ssl_bump"], TLS_PORT,
                   "192.0.2.53", d, d, d, d))
        p = self.b.spawn(["squid", "-N", "-f", conf], cg=self.w.pxcg, netns=self.w.S, etc=True, name="squid-bump")
        wait_port(self.b, self.w.S, "127.0.0.1", SQUID_BUMP_PORT, p, timeout=30)
        self.proxy["squid"] = (p, SQUID_BUMP_PORT)
        return self.proxy["squid"]

    def sslsplit(self):
        if "sslsplit" in self.proxy:
            return self.proxy["sslsplit"]
        if not shutil.which("sslsplit"):
            raise Skip("sslsplit not installed")
        d = os.path.join(self.dir, "sslsplit")
        os.makedirs(d, exist_ok=True)
        # a static target (no CONNECT, no NAT): the client speaks TLS to it
        # and it intercepts every connection to the one origin; -l: a
        # connection log, the least logging it has
        os.chmod(d, 0o777)
        p = self.b.spawn(["sslsplit", "-k", self.mitm_key, "-c", self.mitm_ca, "-l",
                          os.path.join(d, "connect.log"), "ssl", "127.0.0.1", str(SSLSPLIT_PORT), ORIGIN, str(TLS_PORT)],
                         cg=self.w.pxcg, netns=self.w.S, name="sslsplit")
        wait_port(self.b, self.w.S, "127.0.0.1", SSLSPLIT_PORT, p, timeout=30)
        self.proxy["sslsplit"] = (p, SSLSPLIT_PORT)
        return self.proxy["sslsplit"]

    def mitmproxy(self):
        if "mitm" in self.proxy:
            return self.proxy["mitm"]
        if not shutil.which("mitmdump"):
            raise Skip("mitmproxy (mitmdump) not installed")
        d = os.path.join(self.dir, "mitmproxy")
        os.makedirs(d, exist_ok=True)
        p = self.b.spawn(["mitmdump", "--mode", "regular", "--listen-host", "127.0.0.1", "--listen-port",
                          str(MITM_PORT), "--set", "confdir=" + d, "--set", "ssl_verify_upstream_trusted_ca=" + self.ca,
                          "--set", "allow_hosts=" + N["mitmproxy"].replace(".", r"\."),
                          "--set", "connection_strategy=lazy", "--set", "flow_detail=1"],
                         cg=self.w.pxcg, netns=self.w.S, etc=True, name="mitmproxy",
                         stdout=open(os.path.join(d, "flows.log"), "w"))  # one line per request, like the others' logs
        wait_port(self.b, self.w.S, "127.0.0.1", MITM_PORT, p, timeout=60)
        self.proxy["mitm"] = (p, MITM_PORT)
        return self.proxy["mitm"]


def cpu_tree(pid):
    """CPU seconds of pid and its live children (sslsplit works in a
    child it forks), or None."""
    own = cpu_of(pid)
    if own is None:
        return None
    return own + sum(cpu_of(k) or 0 for k in children(pid).values())


def _get(nm, port):
    """tlsbench get arguments for variant nm (proxy port where it has one)."""
    name = N[nm]
    if nm == "direct":
        return ["--to", "%s:%d" % (ORIGIN, TLS_PORT), "--sni", name]
    if nm == "sluice inspect transparent":
        return ["--to", "%s:%d" % (ORIGIN, TLS_PORT), "--sni", name]  # redirected by the kernel
    if nm == "sslsplit":
        return ["--to", "127.0.0.1:%d" % port, "--sni", name]
    return ["--to", "127.0.0.1:%d" % port, "--connect", "%s:%d" % (name, TLS_PORT), "--sni", name]


def tls_scenario(b, cfg, res):
    t = TlsWorld.get(b, cfg)
    w = t.w
    variants, skipped = [("direct", w.plain, None, None)], {}
    for nm in ("sluice inspect", "sluice inspect transparent", "sluice passthrough"):
        variants.append((nm, t.sb.cg, t.proxy_port, t.proxy_pid))
    for nm, fn in (("squid ssl_bump", t.squid_bump), ("sslsplit", t.sslsplit), ("mitmproxy", t.mitmproxy)):
        try:
            p, port = fn()
            variants.append((nm, w.plain, port, p.pid))
        except Skip as e:
            skipped[nm] = str(e)
    loads = (("keep-alive", cfg["tls_conns"], []), ("new connection", cfg["tls_new_conns"], ["--new-conn"]))
    got = {(v[0], ld[0]): [] for v in variants for ld in loads}
    errors = {}
    for rep in range(cfg["repeats"]):
        for load, conns, flag in loads:
            for nm, cg, port, ppid in rotate(variants, rep):
                c0 = cpu_tree(ppid) if ppid else None
                r = w.run_in([TLSBENCH, "get", "--conns", str(conns), "--seconds", str(cfg["tls_seconds"])] + flag +
                             _get(nm, port), cg, timeout=cfg["tls_seconds"] + 60)
                c1 = cpu_tree(ppid) if ppid else None
                try:
                    m = json.loads(r.stdout)
                except ValueError:
                    errors[(nm, load)] = (r.stderr or r.stdout).strip()[-300:] or "exit %d" % r.returncode
                    continue
                if r.returncode != 0:
                    errors[(nm, load)] = "%d requests, %d errors: %s" % (m["requests"], m["errors"],
                                                                          r.stderr.strip()[-200:])
                    continue
                m["proxy_cpu_ms_per_1k"] = ((c1 - c0) * 1e6 / m["requests"]
                                           if c0 is not None and c1 is not None and m["requests"] else None)
                got[(nm, load)].append(m)
        log("tls repeat %d/%d" % (rep + 1, cfg["repeats"]))
    rows = []
    for load, conns, _ in loads:
        base = got[("direct", load)]
        base_rps = median([m["rps"] for m in base]) if base else None
        base_p99 = median([m["p99_us"] for m in base]) if base else None
        for nm, _, _, _ in variants:
            ms = got[(nm, load)]
            label = "%s HTTPS %s req/s" % (nm, load)
            if not ms:
                rows.append({"variant": label, "skipped": "failed: %s" % errors.get((nm, load), "no result")})
                continue
            rps = median([m["rps"] for m in ms])
            p99 = median([m["p99_us"] for m in ms])
            cpu = [m["proxy_cpu_ms_per_1k"] for m in ms if m["proxy_cpu_ms_per_1k"] is not None]
            note = "p99 %.0f us (%.2fx direct)" % (p99, p99 / base_p99) if base_p99 else ""
            if cpu:
                note += "; proxy CPU %.0f ms/1k req" % median(cpu)
            if nm == "sslsplit":
                note += "; does not verify the origin"
            if nm == "sluice passthrough":
                note += "; not inspected (reference)"
            note += "; repeats %s" % "/".join("%.0f" % m["rps"] for m in ms)
            if (nm, load) in errors:
                note += "; some repeats failed: %s" % errors[(nm, load)][:80]
            rows.append({"variant": label, "value": round(rps), "unit": "/s",
                         "ratio": round(rps / base_rps, 3) if base_rps else None, "p99_us": p99,
                         "p99_ratio": round(p99 / base_p99, 2) if base_p99 else None,
                         "proxy_cpu_ms_per_1k": median(cpu) if cpu else None,
                         "repeats": [round(m["rps"]) for m in ms], "note": note})
    for nm, why in skipped.items():
        rows.append({"variant": nm, "skipped": why})
    rows += handshake_rows(t, cfg) + idle_rows(t, cfg)
    res.update({"status": "ok", "rows": rows,
                "load": "tlsbench get: keep-alive %d connections, new connection %d threads, %ds each, 64-byte body, "
                        "TLS 1.3 (EC P-256 certificates), no session resumption" % (
                            cfg["tls_conns"], cfg["tls_new_conns"], cfg["tls_seconds"])})


def handshake_rows(t, cfg):
    """TLS handshake time as the client sees it (connect(2) to the end of the
    handshake, one at a time): direct to the origin; through sluice's
    passthrough tunnel (CONNECT, then the origin's handshake); and inspected,
    where sluice's proxy completes the handshake with a leaf of its own:
    a cached leaf (the name asked for before) and an uncached one (every
    handshake a new name, so a leaf is signed for each)."""
    w, n, rows = t.w, cfg["tls_handshakes"], []
    px = "127.0.0.1:%d" % t.proxy_port
    cases = [("direct", w.plain, ["--to", "%s:%d" % (ORIGIN, TLS_PORT), "--sni", N["direct"]]),
             ("sluice passthrough", t.sb.cg, ["--to", px, "--connect", "%s:%d" % (N["sluice passthrough"], TLS_PORT),
                                              "--sni", N["sluice passthrough"]]),
             ("sluice inspect, cached leaf", t.sb.cg, ["--to", px, "--connect", "cached.%s:%d" % (HS_ZONE, TLS_PORT),
                                                       "--sni", "cached." + HS_ZONE]),
             ("sluice inspect, uncached leaf", t.sb.cg, None)]
    got = {c[0]: [] for c in cases}
    errs = {}
    # the cached case's leaf is minted once before any timing
    w.run_in([TLSBENCH, "handshake", "--count", "1"] + cases[2][2], t.sb.cg, timeout=60)
    for rep in range(cfg["repeats"]):
        for nm, cg, args in rotate(cases, rep):
            if args is None:   # names never asked for before: r<repeat>n<i>.hs...
                name = "r%dn%%d.%s" % (rep, HS_ZONE)
                args = ["--to", px, "--connect", "%s:%d" % (name, TLS_PORT), "--sni", name]
            r = w.run_in([TLSBENCH, "handshake", "--count", str(n)] + args, cg, timeout=n + 60)
            try:
                m = json.loads(r.stdout)
            except ValueError:
                m = None
            if r.returncode != 0 or not m:
                errs[nm] = (r.stderr or r.stdout).strip()[-200:] or "exit %d" % r.returncode
                continue
            got[nm].append(m)
    base = median([m["p50_us"] for m in got["direct"]]) if got["direct"] else None
    for nm, _, _ in cases:
        label = "TLS handshake, %s" % nm
        if not got[nm]:
            rows.append({"variant": label, "skipped": "failed: %s" % errs.get(nm, "no result")})
            continue
        p50 = median([m["p50_us"] for m in got[nm]])
        p99 = median([m["p99_us"] for m in got[nm]])
        rows.append({"variant": label, "value": round(p50), "unit": "us p50", "p99_us": p99,
                     "ratio": round(p50 / base, 2) if base else None,
                     "note": "p99 %.0f us; %d handshakes one at a time, repeats %s" % (
                         p99, n, "/".join("%.0f" % m["p50_us"] for m in got[nm]))})
    return rows


def rss_kib(pid):
    """Resident memory of pid in KiB (smaps_rollup, else VmRSS), or None."""
    for path, key in (("/proc/%d/smaps_rollup" % pid, "Rss:"), ("/proc/%d/status" % pid, "VmRSS:")):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return int(line.split()[1])
        except OSError:
            continue
    return None


def idle_rows(t, cfg):
    """What an idle connection costs sluice's proxy: tlsbench hold opens
    COUNT connections, answers one GET on each, and leaves them open; the
    row is the growth of the proxy's RSS divided by COUNT.  Inspected (two
    TLS sessions' state per connection: the sandbox's and, while pooled, the
    origin's) and the passthrough tunnel for reference."""
    w, n, rows = t.w, cfg["tls_idle_conns"], []
    px = "127.0.0.1:%d" % t.proxy_port
    cases = [("passthrough tunnel", N["sluice passthrough"]), ("inspected HTTPS", "idle." + HS_ZONE)]
    for nm, name in cases:
        label = "RSS per idle %s connection" % nm
        args = ["--to", px, "--connect", "%s:%d" % (name, TLS_PORT), "--sni", name]
        # warm: the leaf, the origin's pool and the proxy's buffers exist before the first reading
        w.run_in([TLSBENCH, "handshake", "--count", "3"] + args, t.sb.cg, timeout=60)
        before = rss_kib(t.proxy_pid)
        ready = os.path.join(t.dir, "hold-%s.ready" % name)
        if os.path.exists(ready):
            os.unlink(ready)
        p = t.b.spawn(["prlimit", "--nofile=%d" % (n + 64), TLSBENCH, "hold", "--count", str(n), "--ready", ready] +
                      args, cg=t.sb.cg, netns=w.S, name="tls-hold")
        try:
            t.b.wait_file(ready, p, timeout=n / 5 + 60)
            with open(ready) as f:
                held = int(f.read().split()[0])
            after = rss_kib(t.proxy_pid)
        except (RuntimeError, OSError, ValueError) as e:
            rows.append({"variant": label, "skipped": "failed: %s" % e})
            continue
        finally:
            p.kill()
            p.wait()
        if before is None or after is None or held < n * 0.99:
            rows.append({"variant": label, "skipped": "failed: %d of %d connections held, RSS %s -> %s" % (
                held, n, before, after)})
            continue
        rows.append({"variant": label, "value": round((after - before) / held, 2), "unit": "KiB",
                     "note": "%d connections held, proxy RSS %d -> %d KiB" % (held, before, after)})
    return rows
