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


# the fields worth a glance in each kind of line; the full lines are in --events
BRIEF = ["sluice.component", "event.action", "event.outcome", "event.reason", "dns.question.name",
         "dns.response_code", "url.full", "tls.client.server_name", "http.request.method",
         "http.response.status_code", "sluice.inspected", "destination.ip", "destination.port", "rule.name"]


def brief(e):
    src = e.get("sluice.component") or ("kernel" if "sluice.hook" in e else "")
    parts = ["%s=%s" % (k.split(".", 1)[-1] if k != "sluice.component" else "from", e[k]) for k in BRIEF if k in e]
    if "sluice.hook" in e and "sluice.component" not in e:
        parts.insert(0, "from=kernel")
    return " ".join(parts)


def curl_step(w, title, shell, policy, extra):
    print("\n%s%s%s" % (BOLD, title, RESET))
    print("%s$ sluice run --policy policies/demo.yaml ... -- sh -c '%s'%s" % (DIM, shell, RESET))
    # the confined default (docs/filesystem.md), as a user would type it
    r = w.sluice_run(["sh", "-c", shell + " ; echo \"(exit $?)\""], policy=policy, extra=extra, profile=None)
    lines = r.stdout.strip().splitlines() or [""]
    head = [l for l in lines if l.startswith("HTTP/") or l.lower().startswith("x-sluice")]
    for line in (head + lines[-2:] if head else lines[-3:]):
        print("  | " + line[:160])
    for e in r.events:
        if e.get("event.action") in ("sandbox-start", "sandbox-stop", "canary-denied", "resolver-start",
                                     "proxy-start") or e.get("event.kind") == "state":
            continue
        print("  log: " + brief(e))


def proxy_demo(w):
    """curl through the proxy and the resolver: names, URLs, methods."""
    here = os.path.join(ROOT, "tests", "integration")
    # the sandbox's /tmp is a fresh tmpfs and its user is nobody: the CA
    # certificate goes into a readable directory bound in read-only (--ro)
    pub = os.path.join(w.tmp, "pub")
    os.makedirs(pub)
    os.chmod(w.tmp, 0o711)
    os.chmod(pub, 0o755)
    cert, key = os.path.join(pub, "cert.pem"), os.path.join(w.tmp, "key.pem")
    W.sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
         "-subj", "/CN=api.example.com", "-addext", "subjectAltName=DNS:api.example.com,DNS:files.example.com")
    w.start_server([os.path.join(here, "origin_server.py"), "--http", "8081", "--https", "8443", "--cert", cert,
                    "--key", key, "--log", os.path.join(w.tmp, "origin.jsonl")], name="origin")
    w.start_server([os.path.join(here, "dns_server.py"), "--listen", "192.0.2.53:53",
                    "--zone", "api.example.com=192.0.2.10", "--zone", "files.example.com=198.51.100.10",
                    "--zone", "denied.example.org=192.0.2.20", "--default-ttl", "0"], name="dns")
    # The world lives on documentation addresses, which the proxy and the
    # resolver refuse by default (reserved, never public): the demo opens
    # them with their test-only flags.
    # --upstream-ca: the proxy trusts the origin's self-signed certificate
    # for inspected names (the sandbox itself trusts only its own CA there)
    extra = ["--upstream-dns", "192.0.2.53", "--ro", pub, "--upstream-ca", cert]
    for c in ("192.0.2.0/24", "198.51.100.0/24"):
        extra += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                  "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    print("\n%s== the proxy and the resolver ==%s  origin servers on 192.0.2.10 and 198.51.100.10 "
          "(HTTP 8081, HTTPS 8443), DNS on 192.0.2.53" % (BOLD, RESET))
    c = "curl -sS --max-time 10 --cacert %s " % cert
    steps = [
        ("HTTPS to an allowed host, transparently (the kernel redirects the connection; SNI decides)",
         c + "https://api.example.com:8443/hello"),
        ("the same through HTTPS_PROXY (explicit CONNECT)",
         "HTTPS_PROXY=$SLUICE_PROXY " + c + "https://api.example.com:8443/via-proxy"),
        ("curl --noproxy '*' is still proxied", c + "--noproxy '*' https://api.example.com:8443/noproxy"),
        ("an allowed URL prefix over plain HTTP", c + "http://files.example.com:8081/pub/readme.txt"),
        ("a host the policy does not name: the resolver answers NXDOMAIN, nothing leaves",
         c + "http://denied.example.org:8081/"),
        ("the same host through the explicit proxy: 403 from sluice", c + "-x $SLUICE_PROXY -i http://denied.example.org:8081/"),
        ("an allowed host, a path outside the prefix", c + "-i http://files.example.com:8081/private/key"),
        ("an allowed URL, a method the policy does not allow", c + "-i -X POST -d x http://files.example.com:8081/pub/upload"),
        ("an https:// URL rule: TLS inspected, the request decided inside (no --cacert: the sandbox trusts its CA)",
         "curl -sS --max-time 10 https://files.example.com:8443/pub/x"),
        ("the same name over HTTPS, a path outside the prefix: 403 inside TLS",
         "curl -sS --max-time 10 -i https://files.example.com:8443/private"),
        ("the same name over HTTPS, a POST on a GET-only entry: 403 inside TLS",
         "curl -sS --max-time 10 -i -X POST -d x https://files.example.com:8443/pub/upload"),
    ]
    for title, shell in steps:
        curl_step(w, title, shell, POLICY, extra)


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
            # the raw socket needs CAP_NET_RAW to reach the kernel hook at all: root, capabilities kept
            show(title, w.probe(*args, policy=POLICY, profile=None,
                                extra=["--user", "root", "--keep-caps"] if args[0] == "raw" else []))
        print("\n%sdefault policy (no --policy): everything is refused%s" % (BOLD, RESET))
        print("%s$ sluice run --netns %s -- sluice-probe tcp 192.0.2.10 5432%s" % (DIM, w.sbx_path, RESET))
        show("default", w.probe("tcp", "192.0.2.10", "5432", profile=None))
        proxy_demo(w)
    finally:
        w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
