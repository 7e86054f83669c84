"""The attack suite: what hostile code inside a sandbox tries, one row per
attack, with the verdict sluice must give and the log line it must leave.

Read ATTACKS top to bottom as the list of attacks tried here; REFERENCES
lists the bypass classes that the other suites already try (they are run
there, not repeated here; test_references_exist keeps the list honest).
docs/threat-model.md explains what each row proves and what sluice does
not claim.

Every row runs tests/attacks/attacker.py under `sluice run` in the sandbox
netns of the test world (tests/integration/world.py) with POLICY, and
checks three things:

  want     fields of the attacker's JSON result (the verdict it got);
  log      (stream, fields): one line of the kernel events ("kernel"), the
           proxy's access log ("proxy") or the resolver's query log
           ("resolver") must carry these fields; None when sluice takes no
           part (the kernel refuses bpf() and mount() by capability) and
           so writes no line;
  nothing  servers ("resolver" = the public resolver on 203.0.113.53,
           "origin" = the tricky origin on :8082, "echo" = the world's echo
           servers) and ports that must have received nothing.

A row with xfail names a finding: the attack is known to succeed.  It is
reported as SKIP "XFAIL finding ..." with the evidence while it succeeds,
and FAILS once it is blocked, so that the row is updated with the fix.

The world: the proxy tests' origin (HTTP :8081, HTTPS :8443) and DNS server
(192.0.2.53) on the world's addresses (tests/integration/test_proxy.py Env),
plus tests/attacks/attack_servers.py: a tricky origin on [::]:8082 in the
world netns, and a "public resolver" (DoH :443, DoT :853, UDP :443, DNS
:53) on 203.0.113.53 in a third network namespace routed behind the world
(the echo servers hold [::]:443 in the world netns).  Documentation
addresses only; nothing is routed off the machine.
"""
import json
import os
import signal
import subprocess
import sys
import time

import world as W

HERE = os.path.dirname(os.path.abspath(__file__))
INTEGRATION = os.path.join(os.path.dirname(HERE), "integration")
sys.path.insert(0, INTEGRATION)
import test_proxy as TP  # noqa: E402  (the proxy tests' origin and DNS servers)

ATTACKER = os.path.join(HERE, "attacker.py")
SERVERS = os.path.join(HERE, "attack_servers.py")
PUBLIC = "203.0.113.53"

POLICY = """\
version: 1
name: attack-suite
allow:
  - host: api.example.com
    ports: [443, 8081, 8082, 8443]
    why: the one API the sandbox may use (origin, tricky origin, TLS)
  - host: "*.tunnel.example.org"
    ports: [443]
    why: a wildcard for the DNS tunnelling rows
"""

# a policy that opens DoT to the public resolver by cidr (the dns-port lint warns)
POLICY_DOT = POLICY + """\
  - cidr: 203.0.113.53/32
    ports: [853]
    protocol: tcp
    why: control row - a cidr entry is a direct path, resolvers included
"""

# the socat relay listens on a loopback port the sandbox may connect to
POLICY_RELAY = POLICY + """\
  - cidr: 127.0.0.1/32
    ports: [7001]
    protocol: tcp
    why: the relay's own port
"""

# F1 and F2 (docs/threat-model.md, "Fixed"): root in the sandbox took the uid
# of an unprivileged host process and reached the host's mount namespace
# through its /proc/PID/root (cgroup escape; detaching the pinned links).
# sluice run now gives CMD its own pid namespace and /proc: the rows below
# check that the host process is out of sight and the attack goes nowhere.

# --- the table -----------------------------------------------------------------------------
# (name, attack, command (sh -c, run inside the sandbox; {attacker} is attacker.py), policy,
#  want (fields of the attacker's result), log (stream, fields) or None,
#  nothing ((server, port): must have received nothing), xfail (a finding) or None)
A = "python3 {attacker} "
# CMD as an unprivileged user without capabilities (defence in depth for F1, F2)
NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all "
DENIED = ("kernel", {"event.reason": "tcp_port_not_allowed", "destination.ip": "192.0.2.10", "destination.port": 8080})
ATTACKS = [
    # relays and namespaces
    ("socat relay to the proxy",
     "socat inside the sandbox relays a local client to the proxy and asks it to CONNECT a denied host",
     "socat TCP-LISTEN:7001,bind=127.0.0.1,reuseaddr TCP:${{SLUICE_PROXY#http://}} & sleep 0.5; "
     "printf 'CONNECT denied.example.org:8443 HTTP/1.1\r\nHost: denied.example.org:8443\r\n\r\n' "
     "| socat -t3 - TCP:127.0.0.1:7001; echo; echo '{{\"op\":\"relay\",\"result\":\"done\"}}'",
     POLICY_RELAY, {"result": "done", "stdout_has": "403"},
     ("proxy", {"event.action": "proxy-connect", "event.reason": "host_not_allowed", "process.name": "socat"}),
     [("origin8443", None)], None),
    ("socat relay to a denied host",
     "socat dials a denied host on a proxied port: the kernel sends it to the proxy, which refuses by Host",
     "printf 'GET / HTTP/1.1\r\nHost: denied.example.org:8081\r\n\r\n' | socat -t3 - TCP:192.0.2.20:8081; "
     "echo; echo '{{\"op\":\"relay\",\"result\":\"done\"}}'",
     POLICY, {"result": "done", "stdout_has": "403"},
     ("proxy", {"event.reason": "host_not_allowed", "sluice.form": "transparent", "process.name": "socat"}),
     [("origin8081", None)], None),
    ("unshare -Urn: the world",
     "a new user+net namespace inside the sandbox (every capability in it, lo up) connects to the world",
     "unshare -Urn sh -c 'ip link set lo up; " + A + "comm 70726f6265 192.0.2.10 8080'",
     POLICY, {"result": "EPERM"}, DENIED, [("echo", 8080)], None),
    ("unshare -Urn: the proxy port",
     "the same namespace tries the proxy's port: no listener of sluice's there, so the kernel refuses it",
     "unshare -Urn sh -c 'ip link set lo up; " + A + "comm 70726f6265 127.0.0.1 '${{SLUICE_PROXY##*:}}",
     POLICY, {"result": "EPERM"}, ("kernel", {"event.reason": "redirect_target_not_ours"}), [], None),
    ("unshare -Urn: DNS",
     "the same namespace sends DNS to the world's server: no resolver of sluice's there, the kernel refuses it",
     "unshare -Urn sh -c 'ip link set lo up; " + A + "dns 192.0.2.53 api.example.com'",
     POLICY, {"result": "EPERM"}, ("kernel", {"event.reason": "redirect_target_not_ours", "destination.port": 53}),
     [("resolver", 53)], None),
    # cgroups
    ("cgroup: the visible root",
     "write its pid into cgroup.procs of the only cgroup2 root it sees (the root of its cgroup namespace)",
     A + "cgroup-move {cg2} 192.0.2.10 8080", POLICY, {"result": "EPERM", "moved": "ok"}, DENIED, [("echo", 8080)], None),
    ("cgroup: a new child cgroup",
     "create a child cgroup and move into it: the filter is inherited",
     "mkdir {cg2}/escape && " + A + "cgroup-move {cg2}/escape 192.0.2.10 8080",
     POLICY, {"result": "EPERM", "moved": "ok", "cgroup": "0::/escape"}, DENIED, [("echo", 8080)], None),
    ("cgroup: a v1 hierarchy root",
     "hybrid layout: move into the root of a cgroup v1 hierarchy (the filter is on cgroup v2)",
     A + "cgroup-move {v1} 192.0.2.10 8080", POLICY, {"result": "EPERM"}, DENIED, [("echo", 8080)], None),
    ("cgroup: through /proc/1/root",
     "reach the host's cgroup2 mount through /proc/1/root (init holds every capability)",
     A + "cgroup-move /proc/1/root{cg2} 192.0.2.10 8080", POLICY, {"result": "EPERM", "moved": "EACCES"},
     DENIED, [("echo", 8080)], None),
    ("cgroup: setuid to an unprivileged host process",
     "take the uid of an unprivileged host process keeping capabilities, reach the host's cgroup2 through "
     "its /proc/PID/root, move into the root cgroup, connect",
     A + "setuid-escape {victim} {cg2} 192.0.2.10 8080", POLICY, {"result": "EPERM", "victim": "ENOENT"}, DENIED,
     [("echo", 8080)], None),
    ("cgroup: the same, CMD run as an unprivileged user",
     "as an unprivileged user too (sluice run -- setpriv --reuid=65534 ... CMD): the host process is out of sight",
     NOBODY + A + "setuid-escape {victim} {cg2} 192.0.2.10 8080", POLICY, {"result": "EPERM", "victim": "ENOENT"},
     DENIED, [("echo", 8080)], None),
    # bpf
    ("bpf(): load, create, get by id",
     "bpf(2) from inside: BPF_PROG_LOAD, BPF_MAP_CREATE, BPF_{{LINK,PROG,MAP}}_GET_FD_BY_ID",
     A + "bpf", POLICY, {"result": "refused", "prog_load": "EPERM", "link_get_fd_by_id": ["EPERM"]}, None, [], None),
    ("bpffs: pins and mount",
     "look for the pinned links in /sys/fs/bpf; mount a bpffs of its own",
     A + "bpffs", POLICY, {"result": "refused", "ls": [], "mount /sys/fs/bpf": "EPERM"}, None, [], None),
    ("bpffs: through /proc/1/root",
     "read the host's bpffs through /proc/1/root",
     A + "proc-root 1", POLICY, {"result": "EACCES"}, None, [], None),
    ("bpffs: setuid to an unprivileged host process, detach",
     "take the uid of an unprivileged host process keeping capabilities, BPF_OBJ_GET the sandbox's pinned "
     "links through its /proc/PID/root, BPF_LINK_DETACH them, connect",
     A + "setuid-detach {victim} {name} 192.0.2.10 8080", POLICY, {"result": "EPERM", "detached": [], "victim": "ENOENT"},
     DENIED, [("echo", 8080)], None),
    ("bpffs: the same, CMD run as an unprivileged user",
     "as an unprivileged user too: the host process and the pins are out of reach",
     NOBODY + A + "setuid-detach {victim} {name} 192.0.2.10 8080", POLICY,
     {"result": "EPERM", "detached": [], "victim": "ENOENT"}, DENIED, [("echo", 8080)], None),
    # DNS
    ("DNS tunnelling under an allowed wildcard",
     "20 queries for random 50-character labels under *.tunnel.example.org",
     A + "tunnel 20 tunnel.example.org", POLICY, {"result": "ok", "rcodes_tail": "REFUSED"},
     ("resolver", {"event.reason": "dns_tunnel_rate", "sluice.dns_tunnel_suspect": True,
                   "dns.response_code": "REFUSED"}), [], None),
    ("DNS straight to a public resolver",
     "plain DNS to 203.0.113.53:53 for a denied name: the kernel sends it to sluice's resolver",
     A + "dns " + PUBLIC + " exfil.data.example", POLICY, {"result": "ok", "rcode": "NXDOMAIN", "answers": []},
     ("resolver", {"event.reason": "name_not_allowed", "dns.question.name": "exfil.data.example"}),
     [("resolver", 53)], None),
    ("DoT to a public resolver",
     "DNS over TLS to 203.0.113.53:853",
     A + "dot " + PUBLIC, POLICY, {"result": "EPERM"},
     ("kernel", {"event.reason": "tcp_port_not_allowed", "destination.ip": PUBLIC, "destination.port": 853}),
     [("resolver", 853)], None),
    ("DoT opened by a cidr entry (control)",
     "the same with a cidr entry for 203.0.113.53:853: answered - a cidr entry is a direct path "
     "(sluice policy check warns: dns-port)",
     A + "dot " + PUBLIC, POLICY_DOT, {"result": "ok", "answers": ["203.0.113.99"]}, None, [], None),
    ("DoH to a public resolver",
     "DNS over HTTPS to 203.0.113.53:443, SNI dns.resolver.example: 443 is proxied, the name is not allowed",
     A + "doh " + PUBLIC + " dns.resolver.example", POLICY, {"result": ("tls_error", "ECONNRESET")},
     ("proxy", {"event.action": "proxy-tls", "event.reason": "host_not_allowed",
                "tls.client.server_name": "dns.resolver.example", "sluice.orig_dst.ip": PUBLIC, "sluice.orig_dst.port": 443}),
     [("resolver", 443)], None),
    ("DoH fronted by an allowed SNI",
     "DoH to 203.0.113.53:443 with SNI api.example.com: the proxy dials api.example.com's own address",
     A + "doh " + PUBLIC + " api.example.com", POLICY, {"result": ("tls_error", "ECONNRESET", "refused")},
     ("proxy", {"event.action": "proxy-tls", "tls.client.server_name": "api.example.com",
                "sluice.orig_dst.ip": PUBLIC, "sluice.orig_dst.port": 443, "sluice.orig_dst_mismatch": True,
                "destination.ip": ("192.0.2.10", "2001:db8::10")}),
     [("resolver", 443)], None),
    ("DoH through CONNECT",
     "CONNECT dns.resolver.example:443 through the proxy",
     A + "doh-connect dns.resolver.example", POLICY, {"result": "refused", "status": 403, "denied": "host_not_allowed"},
     ("proxy", {"event.action": "proxy-connect", "event.reason": "host_not_allowed"}), [("resolver", 443)], None),
    # HTTP/3, websockets, redirects
    ("HTTP/3 to a public server",
     "a QUIC Initial to 203.0.113.53:443/udp",
     A + "quic " + PUBLIC + " 443", POLICY, {"result": "EPERM"},
     ("kernel", {"event.reason": "udp_not_allowed", "sluice.hook": "sendmsg4", "destination.ip": PUBLIC,
                 "destination.port": 443}), [("resolver", 443)], None),
    ("HTTP/3 to the allowed API",
     "a QUIC Initial to api.example.com's address 192.0.2.10:443/udp (its TCP 443 is allowed)",
     A + "quic 192.0.2.10 443", POLICY, {"result": "EPERM"},
     ("kernel", {"event.reason": "udp_not_allowed", "destination.ip": "192.0.2.10", "destination.port": 443}),
     [("echo", 443)], None),
    ("websocket upgrade through the proxy",
     "GET /ws with Upgrade: websocket to the allowed host: no url entry says websocket: true, so 403 "
     "upgrade_not_supported before anything is dialed",
     A + "ws 192.0.2.10 8082 /ws", POLICY, {"result": "refused", "status": 403, "denied": "upgrade_not_supported"},
     ("proxy", {"event.action": "proxy-http", "event.reason": "upgrade_not_supported",
                "url.full": "http://api.example.com:8082/ws", "sluice.websocket": True}),
     [("origin_upgrade", None)], None),
    ("websocket: a hostile origin answers 101 anyway",
     "a plain GET (no Upgrade): the origin switches protocols although nobody asked: the proxy refuses the 101",
     "curl -sS --max-time 10 -o /dev/null -w '{{\"op\":\"http\",\"result\":\"%{{http_code}}\"}}\n' "
     "--resolve api.example.com:8082:192.0.2.10 http://api.example.com:8082/ws-force",
     POLICY, {"result": "502"},
     ("proxy", {"event.reason": "bad_upstream_response"}), [("origin_wsdata", None)], None),
    ("redirect from an allowed origin to a denied host",
     "curl -L through the proxy: api.example.com answers 302 to http://denied.example.org:8081/x",
     "curl -sS -L --max-time 10 -o /dev/null -w '{{\"op\":\"redirect\",\"result\":\"%{{http_code}}\"}}\n' "
     "--proxy \"$SLUICE_PROXY\" 'http://api.example.com:8082/redirect?to=http://denied.example.org:8081/x'",
     POLICY, {"result": "403"},
     ("proxy", {"event.reason": "host_not_allowed", "url.domain": "denied.example.org"}), [("origin8081", None)], None),
    ("redirect to an IP literal",
     "the allowed origin answers 302 to http://192.0.2.20:8081/x (an address, not a name)",
     "curl -sS -L --max-time 10 -o /dev/null -w '{{\"op\":\"redirect\",\"result\":\"%{{http_code}}\"}}\n' "
     "--proxy \"$SLUICE_PROXY\" 'http://api.example.com:8082/redirect?to=http://192.0.2.20:8081/x'",
     POLICY, {"result": "403"}, ("proxy", {"event.reason": "ip_literal"}), [("origin8081", None)], None),
    # the logs themselves
    ("log injection: process name in a kernel event",
     "rename itself (PR_SET_NAME) to a quote, a newline, bytes that are not UTF-8, braces and a backslash; "
     "connect to a denied port: the line is still one strict UTF-8 JSON object",
     A + "comm 220aff7b7dfe5c 192.0.2.10 8080", POLICY, {"result": "EPERM"},
     ("kernel", {"event.reason": "tcp_port_not_allowed", "process.name": "\"\n\ufffd{}\ufffd\\"}),
     [("echo", 8080)], None),
    ("log injection: process name in the proxy log",
     "the same name on a proxied connection (the proxy logs the process from the flow map)",
     A + "comm 220aff7b7dfe5c 192.0.2.20 8081", POLICY, {"result": ("closed", "ECONNRESET")},
     ("proxy", {"event.reason": "unrecognised_protocol", "process.name": "\"\n\ufffd{}\ufffd\\"}),
     [("origin8081", None)], None),
    ("log injection: SNI",
     "a ClientHello whose server name is a quote, a newline and bytes that are not UTF-8",
     A + "sni-raw 192.0.2.10 8443 220aff0a6576696c", POLICY, {"result": "closed"},
     ("proxy", {"event.action": "proxy-tls", "event.outcome": "failure"}), [("origin8443", None)], None),
]

# --- what the other suites try (run there, not here) -------------------------------------------
REFERENCES = [
    ("UDP sendto without connect, connected UDP then sendto elsewhere, sendmmsg",
     ["tests/integration/test_kernel.py::test_table_udp_sendto_without_connect_denied",
      "tests/integration/test_kernel.py::test_table_connected_udp_then_sendto_elsewhere",
      "tests/integration/test_kernel.py::test_table_sendmmsg_denied"]),
    ("IPv4-mapped IPv6 destinations", ["tests/integration/test_kernel.py::test_table_tcp_v4_mapped_denied_gets_the_v4_verdict"]),
    ("TCP Fast Open, io_uring connect", ["tests/integration/test_kernel.py::test_table_tcp_fast_open_denied",
                                         "tests/integration/test_kernel.py::test_table_io_uring_connect_denied"]),
    ("raw, ICMP ping and other-protocol sockets",
     ["tests/integration/test_kernel.py::test_table_ping_socket_refused",
      "tests/integration/test_kernel.py::test_table_raw_socket_refused_by_the_kernel_hook_(caps_kept)",
      "tests/integration/test_kernel.py::test_caps_dropped_by_default"]),
    ("socket families through socketpair, the i386 and x32 ABIs, socketcall and io_uring (the seccomp path)",
     ["tests/integration/test_seccomp_abi.py::test_compat_abis_refused_under_egress_only",
      "tests/integration/test_seccomp_abi.py::test_compat_abis_refused_under_the_sandbox_profile"]),
    ("socket families of a container the daemon filters (sluice policy seccomp's profile)",
     ["tests/integration/test_seccomp_profile.py::test_standalone_profile_refuses_packet_and_vsock_in_podman",
      "tests/integration/test_seccomp_profile.py::test_profile_merged_into_podmans_default"]),
    ("threads and child processes", ["tests/integration/test_kernel.py::test_table_thread_denied",
                                     "tests/integration/test_kernel.py::test_table_child_process_denied"]),
    ("packets that skip the socket hooks (egress backstop)",
     ["tests/integration/test_kernel.py::test_egress_backstop_drops_what_no_rule_allows"]),
    ("killing the loader, the proxy, the resolver, the daemon (fail closed)",
     ["tests/integration/test_kernel.py::test_sigkill_of_loader_keeps_enforcement",
      "tests/integration/test_kernel.py::test_table_dns_without_a_resolver_fails_closed",
      "tests/integration/test_kernel.py::test_table_proxied_port_without_a_proxy_fails_closed",
      "tests/integration/test_proxy.py::test_no_flow_entry_and_a_killed_proxy_restarts_on_its_socket",
      "tests/integration/test_resolver.py::test_killed_resolver_restarts_on_its_socket_and_the_port_stays_taken",
      "tests/integration/test_daemon.py::test_daemon_kill9_fails_closed_and_restart_readopts"]),
    ("flooding the event channel (losses counted, never a verdict change)",
     ["tests/integration/test_kernel.py::test_flood_events_add_up"]),
    ("cgroup escape and bpffs (the host's view)", ["tests/integration/test_kernel.py::test_cgroup_escape_is_out_of_reach",
                                                   "tests/integration/test_kernel.py::test_bpffs_hidden_from_the_sandbox"]),
    ("SNI mismatch, no SNI, ECH; CONNECT to a denied host",
     ["tests/integration/test_proxy.py::test_connect_denied_and_sni_checks",
      "tests/integration/test_proxy.py::test_transparent_denials"]),
    ("IP-literal spellings, suffix and boundary tricks", ["tests/integration/test_proxy.py::test_names_ip_literals_and_boundaries"]),
    ("request smuggling framings", ["tests/integration/test_proxy.py::test_smuggling_framings_get_400"]),
    ("path traversal, encoded slash, userinfo, methods", ["tests/integration/test_proxy.py::test_url_entry_path_and_method"]),
    ("forged forwarding and hop-by-hop headers", ["tests/integration/test_proxy.py::test_hop_by_hop_and_proxy_headers_dropped"]),
    ("DNS rebinding, private and metadata answers",
     ["tests/integration/test_proxy.py::test_rebinding_and_private_answers",
      "tests/integration/test_resolver.py::test_private_answers_filtered"]),
    ("exhausting the proxy (slow headers, connection cap, 1000 clients, oversized requests)",
     ["tests/integration/test_proxy.py::test_slow_header_client", "tests/integration/test_proxy.py::test_connection_cap_503",
      "tests/integration/test_proxy.py::test_thousand_concurrent_clients", "tests/integration/test_proxy.py::test_limits_414_431"]),
    ("denied names, qtypes (TXT, ANY, AXFR, CHAOS), malformed DNS",
     ["tests/integration/test_resolver.py::test_denied_name_never_reaches_upstream",
      "tests/integration/test_resolver.py::test_qtype_refusals", "tests/integration/test_resolver.py::test_malformed_packets"]),
    ("tunnel-looking names flagged", ["tests/integration/test_resolver.py::test_tunnel_suspect_flagged"]),
    ("policy reload under load; two sandboxes in one netns",
     ["tests/integration/test_daemon.py::test_reload_under_flood_never_judges_by_neither",
      "tests/integration/test_daemon.py::test_two_sandboxes_same_netns_are_isolated"]),
    ("exhausting the host: runaway commands (timeout), limits that cannot be enforced",
     ["tests/integration/test_limits.py::test_timeout_kills_the_whole_sandbox_and_exits_124",
      "tests/integration/test_limits.py::test_missing_controllers_are_refused_not_ignored"]),
]


class XFail(W.Skip):
    """A known finding: reported as skipped, with the evidence."""


# --- the world for these rows ---------------------------------------------------------------

class Ctx:
    """Servers of the attack world, started once per World."""

    def __init__(self, w):
        self.w = w
        self.tp = TP.env(w)                          # origin :8081/:8443, DNS 192.0.2.53
        d = w.tmp
        self.origin_log = os.path.join(d, "attack-origin.jsonl")
        w.start_server([SERVERS, "origin", "--port", "8082", "--log", self.origin_log], name="attack-origin")
        self.resolver_log = os.path.join(d, "public-resolver.jsonl")
        self.rns = w.wld[:-1] + "r"
        self._resolver_netns()
        self.cg2 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"][0]
        v1 = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup"]
        self.v1 = v1[0] if v1 else None

    def _resolver_netns(self):
        """203.0.113.53 in its own netns behind the world (route, forwarding)."""
        w, ns = self.w, self.rns
        orig_close = w.close

        def close():
            orig_close()
            W.sh("ip", "netns", "del", ns, check=False)
        w.close = close
        W.sh("ip", "netns", "add", ns)
        W.sh("ip", "link", "add", "r0", "netns", ns, "type", "veth", "peer", "name", "wr0", "netns", w.wld)
        w.ns(w.wld, "ip", "addr", "add", "203.0.113.254/32", "dev", "wr0")
        w.ns(w.wld, "ip", "link", "set", "wr0", "up")
        w.ns(w.wld, "ip", "route", "add", PUBLIC + "/32", "dev", "wr0")
        w.ns(w.wld, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        w.ns(ns, "ip", "link", "set", "lo", "up")
        w.ns(ns, "ip", "addr", "add", PUBLIC + "/32", "dev", "r0")
        w.ns(ns, "ip", "link", "set", "r0", "up")
        w.ns(ns, "ip", "route", "add", "203.0.113.254/32", "dev", "r0")
        w.ns(ns, "ip", "route", "add", "default", "via", "203.0.113.254")
        cert, key = os.path.join(w.tmp, "resolver-cert.pem"), os.path.join(w.tmp, "resolver-key.pem")
        W.sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
             "-subj", "/CN=dns.resolver.example", "-addext", "subjectAltName=DNS:dns.resolver.example")
        ready = os.path.join(w.tmp, "public-resolver.ready")
        p = subprocess.Popen(["ip", "netns", "exec", ns, "python3", SERVERS, "resolver", "--addr", PUBLIC,
                              "--cert", cert, "--key", key, "--log", self.resolver_log, "--ready", ready],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(w.tmp, "public-resolver.err"), "w"),
                             start_new_session=True)
        w.procs.append(p)
        deadline = time.time() + 10
        while not os.path.exists(ready):
            if p.poll() is not None or time.time() > deadline:
                raise RuntimeError("public resolver did not start: " +
                                   open(os.path.join(w.tmp, "public-resolver.err")).read())
            time.sleep(0.02)

    @staticmethod
    def _read(path):
        try:
            with open(path) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def marks(self):
        return {"resolver": len(self._read(self.resolver_log)), "origin": len(self._read(self.origin_log)),
                "tp": self.tp.mark(), "echo": self.w.mark()}

    def arrived(self, marks, server, port):
        """What `server` received since `marks` (on `port`, if given)."""
        if server == "resolver":
            recs = self._read(self.resolver_log)[marks["resolver"]:]
            return [r for r in recs if port is None or r.get("port") == port]
        if server == "echo":
            return self.w.arrived_since(marks["echo"], port=port)
        if server in ("origin8081", "origin8443"):
            want = 8081 if server == "origin8081" else 8443
            return [r for r in self.tp.origin()[marks["tp"]:] if r.get("port") == want]
        if server == "origin_upgrade":   # requests that still carried an Upgrade header
            return [r for r in self._read(self.origin_log)[marks["origin"]:] if r.get("upgrade")]
        if server == "origin_wsdata":    # websocket payload that reached the origin
            return [r for r in self._read(self.origin_log)[marks["origin"]:]
                    if r.get("event") == "ws_data" and r.get("len")]
        raise AssertionError("unknown server %s" % server)


def ctx(w):
    if not hasattr(w, "attack_ctx"):
        w.attack_ctx = Ctx(w)
    return w.attack_ctx


def read_strict(path):
    """Every line of `path` as JSON, decoded as strict UTF-8 (what a strict
    log pipeline does); raises on the first line that is not."""
    out = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if raw.strip():
                try:
                    out.append(json.loads(raw.decode("utf-8")))
                except (UnicodeDecodeError, ValueError) as e:
                    raise AssertionError("%s:%d is not a strict UTF-8 JSON line (%s): %r" % (path, n, e, raw[:300]))
    return out


def matches(got, want):
    """Do the attacker's result fields match `want`?  A tuple is a choice;
    stdout_has / rcodes_tail are special."""
    for k, v in want.items():
        if k == "stdout_has":
            if v not in got.get("_stdout", ""):
                return False
            continue
        if k == "rcodes_tail":
            rc = got.get("rcodes") or []
            if not rc or rc[-1] != v:
                return False
            continue
        if isinstance(v, tuple):
            if got.get(k) not in v:
                return False
        elif got.get(k) != v:
            return False
    return True


def run_row(w, row):
    name, attack, cmd, policy, want, log, nothing, xfail = row
    c = ctx(w)
    victim = None
    if "{v1}" in cmd and not c.v1:
        raise W.Skip("no cgroup v1 hierarchy on this machine")
    if "{victim}" in cmd:
        # any unprivileged process of the host will do (a daemon, a user's shell)
        victim = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "120"])
    sbx = "atk%d-%d" % (os.getpid() % 100000, time.monotonic_ns() % 100000)
    events = os.path.join(w.tmp, sbx + ".jsonl")
    cmd = cmd.format(attacker=ATTACKER, cg2=c.cg2, v1=c.v1, victim=victim.pid if victim else 0, name=sbx)
    hatch = sum((["--proxy-arg", "--allow-private-upstream", "--proxy-arg", h] for h in TP.HATCH), [])
    marks = c.marks()
    try:
        # --events again: the later one wins, so that the lines can be read strictly (bytes)
        r = w.sluice_run(["sh", "-c", cmd], policy=policy, timeout=90, extra=[
            "--name", sbx, "--events", events, "--upstream-dns", "192.0.2.53",
            "--resolver-arg", "--allow-private-answers", "--resolver-arg", "192.0.2.0/24"] + hatch)
    finally:
        if victim:
            victim.kill()
            victim.wait()
    time.sleep(0.1)
    lines = read_strict(events)
    got = None
    for l in reversed(r.stdout.splitlines()):
        if l.startswith("{"):
            got = json.loads(l)
            break
    assert got is not None, "%s: the attacker printed no result: %r" % (name, r)
    got["_stdout"] = r.stdout
    blocked = matches(got, want)
    arrived = {(s, p): c.arrived(marks, s, p) for s, p in nothing}
    leaked = {k: v for k, v in arrived.items() if v}
    evidence = "attacker: %s; arrived: %s" % (json.dumps({k: v for k, v in got.items() if k != "_stdout"}),
                                             json.dumps({"%s:%s" % k: v for k, v in leaked.items()})[:600])
    if xfail:
        if not blocked or leaked:
            raise XFail("XFAIL %s -- evidence: %s" % (xfail, evidence))
        raise AssertionError("%s: marked xfail but now blocked (%s): update the row and the threat model" % (name, evidence))
    assert blocked, "%s: want %r, %s; stderr %s" % (name, want, evidence, r.stderr[-800:])
    assert not leaked, "%s: a server received it: %s" % (name, evidence)
    if log:
        stream, fields = log
        pick = {"kernel": lambda e: e.get("event.action", "").startswith("egress-"),
                "proxy": lambda e: e.get("event.dataset") == "sluice.proxy",
                "resolver": lambda e: e.get("event.action") == "dns-query"}[stream]
        cand = [e for e in lines if pick(e)]
        hit = [e for e in cand if all(e.get(k) in v if isinstance(v, tuple) else e.get(k) == v
                                      for k, v in fields.items())]
        assert hit, "%s: no %s line with %r among %s" % (name, stream, fields, json.dumps(cand, indent=1)[:3000])
        for e in hit:
            assert e.get("sluice.sandbox") == sbx and len(e.get("rule.version", "")) == 64, e
    return got, lines


def _make(i, row):
    def t(w):
        run_row(w, row)
    t.__name__ = "test_" + "_".join("".join(ch if ch.isalnum() else " " for ch in row[0].lower()).split())
    # the runner orders tests by line: keep the table's order
    t.__code__ = t.__code__.replace(co_firstlineno=i + 1)
    return t


for _i, _row in enumerate(ATTACKS):
    _t = _make(_i, _row)
    assert _t.__name__ not in globals(), "two rows named %s" % _row[0]
    globals()[_t.__name__] = _t


def test_tunnelling_rate_limited_and_flagged_in_detail(w):
    """The tunnelling row in detail: the first names pass (flagged), then the
    wildcard's bucket is empty; nothing past the limit reaches the upstream."""
    row = [r for r in ATTACKS if r[0] == "DNS tunnelling under an allowed wildcard"][0]
    c = ctx(w)
    before = len(Ctx._read(c.tp.dns_log))
    got, lines = run_row(w, row)
    q = [e for e in lines if e.get("event.action") == "dns-query" and e["dns.question.name"].endswith("tunnel.example.org")]
    assert len(q) == 20, q
    assert all(e.get("sluice.dns_tunnel_suspect") is True for e in q), q
    passed = [e for e in q if e["event.reason"] != "dns_tunnel_rate"]
    limited = [e for e in q if e["event.reason"] == "dns_tunnel_rate"]
    assert 1 <= len(passed) <= 8 and len(limited) >= 12, [e["event.reason"] for e in q]
    upstream = [x for x in Ctx._read(c.tp.dns_log)[before:] if x.get("name", "").endswith("tunnel.example.org")]
    assert len(upstream) == len(passed), (len(upstream), len(passed))


def test_cgroups_nested_past_the_cleanups_reach_are_refused(w):
    """Nest child cgroups inside the sandbox as deep as the kernel lets it:
    the sandbox's cgroup.max.depth stops it at 64 levels, which the cleanup
    walks all the way, so nothing is left behind (before, 70 levels were
    made and the sandbox's cgroup outlived it: rmdir saw EBUSY)."""
    c = ctx(w)
    sbx = "atkdeep%d" % (os.getpid() % 100000)
    script = ("d={cg2}; i=0; while [ $i -lt 70 ]; do d=$d/n; mkdir $d 2>/dev/null || break; i=$((i+1)); done; "
              "echo levels $i").format(cg2=c.cg2)
    r = w.sluice_run(["sh", "-c", script], policy=POLICY, extra=["--name", sbx])
    assert r.rc == 0, r
    assert "levels 64" in r.stdout, r.stdout
    assert not [l for l in W.leftovers() if sbx in l], W.leftovers()


def test_child_cgroup_does_not_outlive_the_sandbox(w):
    """Move into a child cgroup of the sandbox, leave a process there, let
    CMD exit: the whole subtree is killed and removed with the sandbox (before
    the fix, cleanup looked at the sandbox cgroup's own cgroup.procs only; the
    process survived `sluice run`, whose links were then gone: unfiltered)."""
    c = ctx(w)
    late = os.path.join(w.tmp, "late-%d.out" % time.monotonic_ns())
    sbx = "atklate%d" % (os.getpid() % 100000)
    mark = w.mark()
    script = ("mkdir {cg2}/esc && echo $$ > {cg2}/esc/cgroup.procs && "
              "(sleep 3; {probe} tcp 192.0.2.10 8080 > {late}) & sleep 0.3; exit 0").format(
                  cg2=c.cg2, probe=W.PROBE, late=late)
    r = w.sluice_run(["sh", "-c", script], policy=POLICY, extra=["--name", sbx])
    assert r.rc == 0, r
    assert not [l for l in W.leftovers() if sbx in l], W.leftovers()
    time.sleep(4)
    assert not os.path.exists(late), "a process outlived the sandbox: %s" % open(late).read()
    assert not w.arrived_since(mark, port=8080)


# --- squatting on sluice's ports (a dead proxy or resolver) -----------------------------------

def _wait_probe(path, n=1, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and open(path).read().count("\n") >= n:
            return [json.loads(l) for l in open(path).read().splitlines()]
        time.sleep(0.05)
    raise AssertionError("the sandbox's probe wrote nothing to %s" % path)


def _squat_target(w, name, tail=""):
    """`sluice run` (egress-only) of a command that waits for NAME.go, then
    connects to a proxied port of the world (probe tcp 192.0.2.10:8081,
    result in NAME.out).  Returns (process, go, out, events, proxy port,
    proxy pid) once the proxy listens and CMD runs."""
    go, out = os.path.join(w.tmp, name + ".go"), os.path.join(w.tmp, name + ".out")
    events = os.path.join(w.tmp, name + ".jsonl")
    script = "while [ ! -e %s ]; do sleep 0.05; done; %s tcp 192.0.2.10 8081 > %s%s" % (go, W.PROBE, out, tail)
    p = subprocess.Popen([W.SLUICE, "run", "--profile", "egress-only", "--name", name, "--netns", w.sbx_path,
                          "--policy", w.write(name + ".yaml", POLICY), "--events", events, "--", "sh", "-c", script],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port, pid = None, None
    deadline = time.time() + 30
    # the proxy listens before CMD starts: wait for both (the sandbox-start
    # line), so that the loader is in its main loop, where it notices a death
    while time.time() < deadline:
        port, pid = W.proxy_listener(w)
        if port and [e for e in W.read_events(events) if e.get("event.action") == "sandbox-start"]:
            break
        time.sleep(0.05)
    if not port:
        import run as R
        p.kill()
        p.wait()
        R.cleanup_leftovers([l for l in W.leftovers() if name in l])
        raise AssertionError("no proxy listener")
    return p, go, out, events, port, pid


def _squat_cleanup(squatter, p, name):
    """Stop the squatter and the run (if still there), and remove what a
    killed run left (its cgroup, pins and owner record)."""
    import run as R
    if squatter:
        squatter.kill()
        squatter.wait()
    if p.poll() is None:
        p.kill()
        p.wait()
    R.cleanup_leftovers([l for l in W.leftovers() if name in l])


def _assert_refused_not_squatted(got, slog):
    assert got["result"] == "EPERM", got
    assert not os.path.exists(slog), "the squatter received the sandbox's connection: %s" % open(slog).read()


def test_squatting_a_proxy_that_gave_up_is_refused_by_the_kernel(w):
    """The proxy of a `sluice run` sandbox dies again and again: sluice run
    restarts it on the same socket (SLUICE_RESTART_MAX times), then gives up
    and closes that socket.  A process outside the sandbox binds the freed
    port: the sandbox's next redirected connection is refused by the kernel
    (the socket there lacks sluice's listener mark), logged as
    redirect_target_not_ours, and the squatter receives nothing."""
    name = "atksq%d" % (os.getpid() % 100000)
    p, go, out, events, port, pid = _squat_target(w, name, tail="; sleep 1")
    squatter = None
    try:
        for i in range(6):   # SLUICE_RESTART_MAX restarts, then the 6th death is final
            os.kill(pid, signal.SIGKILL)
            if i == 5:
                break
            # back on the same port, and ready (its proxy-restarted line is written then)
            deadline, new = time.time() + 15, None
            while time.time() < deadline:
                p2, new = W.proxy_listener(w, owner_pid=pid)
                ready = [e for e in W.read_events(events) if e.get("event.action") == "proxy-restarted"]
                if new and len(ready) == i + 1:
                    break
                time.sleep(0.05)
            assert new and p2 == port and len(ready) == i + 1, \
                "restart %d: the proxy did not come back on port %d: %s" % (
                    i + 1, port, [(e.get("event.action"), e.get("message")) for e in W.read_events(events)][-4:])
            pid = new
        squatter, slog = W.squat(w, port, name)
        open(go, "w").close()
        got = _wait_probe(out)[0]
        assert p.wait(timeout=30) == 0
    finally:
        _squat_cleanup(squatter, p, name)
    _assert_refused_not_squatted(got, slog)
    lines = read_strict(events)
    acts = [e.get("event.action") for e in lines]
    assert acts.count("proxy-restarted") == 5 and acts.count("proxy-gave-up") == 1, acts
    hit = [e for e in lines if e.get("event.reason") == "redirect_target_not_ours"]
    assert hit and hit[0]["destination.ip"] == "192.0.2.10" and hit[0]["destination.port"] == 8081, lines


def test_squatting_after_the_loader_is_killed_is_refused_by_the_kernel(w):
    """kill -9 of `sluice run` itself: its proxy dies with it (fail closed)
    and the filter stays (pinned links).  Another process binds the freed
    proxy port: the sandbox, still running, is refused by the kernel rather
    than handed to it."""
    name = "atksqk%d" % (os.getpid() % 100000)
    p, go, out, events, port, _ = _squat_target(w, name)
    squatter = None
    try:
        p.send_signal(signal.SIGKILL)
        p.wait()
        squatter, slog = W.squat(w, port, name)
        open(go, "w").close()
        try:
            got = _wait_probe(out)[0]
        except AssertionError:
            procs = [l for l in W.leftovers() if name in l and "cgroup" in l]
            raise AssertionError("no probe result; the sandbox's processes: %s" % [
                open("/proc/%s/cmdline" % x.strip()).read() for c in procs
                for x in open(os.path.join(c, "cgroup.procs")) if x.strip()])
    finally:
        _squat_cleanup(squatter, p, name)
    _assert_refused_not_squatted(got, slog)


# --- the side doors: L1-L3 (docs/threat-model.md) ------------------------------------------------
# Stopped on every kernel: sockets of other families (the BPF LSM or the
# seccomp filter), sockets other than unix as stdio (refused on use with
# the BPF LSM, refused at start without it), unix connects to names no
# entry names (6.7+).  Stopped only where the kernel loads sluice's BPF
# LSM programs: sockets passed in over SCM_RIGHTS; elsewhere those rows
# show the limit as it is today (if one starts to fail, sluice gained a
# protection: update the threat model too).  Each row reads the
# sandbox-start line to know which path is in force and checks that one.

def lsm_in_force(lines):
    """Did the sandbox of these lines run with the BPF LSM programs?"""
    start = [e for e in lines if e.get("event.action") == "sandbox-start"]
    assert start, "no sandbox-start line"
    msg = start[-1]["message"]
    assert "bpf lsm: " in msg, msg
    if "bpf lsm: active" in msg:
        return True
    assert "are not judged" in msg, msg
    return False


def lsm_refusal(lines, reason):
    hit = [e for e in lines if e.get("event.reason") == reason and not e.get("sluice.canary")]
    assert hit, "no %s event: %s" % (reason, json.dumps(lines)[:2000])
    return hit[0]

def _side_door_run(w, cmd, name, policy=POLICY):
    c = ctx(w)
    events = os.path.join(w.tmp, name + ".jsonl")
    r = w.sluice_run(["sh", "-c", cmd.format(attacker=ATTACKER)], policy=policy,
                     extra=["--name", name, "--events", events])
    got = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    assert got, r
    return got[-1], read_strict(events), c


def test_L1_a_socket_passed_in(w):
    """A TCP socket created outside the sandbox (here: by a helper in the
    sandbox's netns, outside its cgroup) and passed in over SCM_RIGHTS keeps
    its creator's cgroup: the cgroup hooks do not see its use.  With the BPF
    LSM programs the send is refused (foreign_socket); without, the sandbox
    sends on it unfiltered (the limit)."""
    path = os.path.join(w.tmp, "fdpass.sock")
    helper = ("import socket, os\n"
              "l = socket.socket(socket.AF_UNIX); l.bind(%r); os.chmod(%r, 0o777); l.listen(1)\n"
              "c, _ = l.accept(); t = socket.create_connection(('192.0.2.10', 8080), timeout=5)\n"
              "socket.send_fds(c, [b'x'], [t.fileno()]); c.close()\n" % (path, path))
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, "python3", "-c", helper])
    try:
        for _ in range(100):
            if os.path.exists(path):
                break
            time.sleep(0.02)
        mark = w.mark()
        # the unix socket it comes over is allowed: what is judged is the socket passed in
        got, lines, _ = _side_door_run(w, "python3 {attacker} recv-fd " + path, "atkl1%d" % (os.getpid() % 100000),
                                   policy=POLICY + unix_entry(path))
    finally:
        p.kill()
        p.wait()
    if lsm_in_force(lines):
        assert got["result"] == "EPERM", got
        assert not w.arrived_since(mark, port=8080), "the passed-in socket reached a denied port"
        assert lsm_refusal(lines, "foreign_socket")["sluice.hook"] == "lsm_sendmsg"
        return
    assert got["result"] == "ok" and "passed in" in got["echoed"], got
    assert w.arrived_since(mark, port=8080), "expected the limit: the passed-in socket reaches a denied port"
    assert not [e for e in lines if e.get("event.action", "").startswith("egress-")], lines


def _wait_arrival(w, mark, port, proto, timeout=15):
    """The world's echo server records for port/proto since mark, waited
    for (a loaded machine delivers late); [] after timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = w.arrived_since(mark, port=port, proto=proto)
        if got:
            return got
        time.sleep(0.1)
    return []


def test_L1_a_udp_socket_passed_in(w):
    """A UDP socket made outside the sandbox (by a helper in its netns,
    outside its cgroup) and passed in over SCM_RIGHTS: the cgroup hooks
    belong to the socket's creator, so its sendto meets none of them.  With
    the BPF LSM programs it is refused (foreign_socket, lsm_sendmsg) and the
    world's UDP echo server counts nothing; without, the datagram arrives,
    judged by nobody (the limit: docs/threat-model.md L1)."""
    path = os.path.join(w.tmp, "fdpass-udp-%d.sock" % time.monotonic_ns())
    helper = ("import socket, os\n"
              "l = socket.socket(socket.AF_UNIX); l.bind(%r); os.chmod(%r, 0o777); l.listen(1)\n"
              "c, _ = l.accept(); u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
              "socket.send_fds(c, [b'x'], [u.fileno()]); c.close()\n" % (path, path))
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, "python3", "-c", helper])
    try:
        deadline = time.time() + 20
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.02)
        mark = w.mark()
        got, lines, _ = _side_door_run(w, "python3 {attacker} recv-fd-udp %s 192.0.2.10 9999" % path,
                                   "atkl1u%d" % (os.getpid() % 100000), policy=POLICY + unix_entry(path))
    finally:
        p.kill()
        p.wait()
    if lsm_in_force(lines):
        assert got["result"] == "EPERM", got
        assert lsm_refusal(lines, "foreign_socket")["sluice.hook"] == "lsm_sendmsg"
        time.sleep(1)   # a datagram that got out would be recorded by now
        assert not w.arrived_since(mark, port=9999, proto="udp"), "the passed-in UDP socket reached a denied port"
        return
    assert got["result"] == "ok", got
    assert _wait_arrival(w, mark, 9999, "udp"), "expected the limit: the passed-in UDP socket reaches a denied port"
    assert not [e for e in lines if e.get("event.action", "").startswith("egress-")], lines


def _connected_in_sandbox_netns(w, port, udp=False):
    """A TCP (or UDP) socket connected to 192.0.2.10:port from the sandbox's
    netns but created outside the sandbox (as a launcher would): the fd of a
    helper that passes it over a socketpair."""
    import socket as S
    a, b = S.socketpair(S.AF_UNIX, S.SOCK_STREAM)
    mk = ("t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); t.connect(('192.0.2.10', %d))" % port if udp else
          "t = socket.create_connection(('192.0.2.10', %d), timeout=5)" % port)
    helper = ("import socket\n"
              "u = socket.socket(fileno=%d)\n"
              "%s\n"
              "socket.send_fds(u, [b'x'], [t.fileno()])\n" % (b.fileno(), mk))
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, "python3", "-c", helper], pass_fds=[b.fileno()])
    b.close()
    msg, fds, _, _ = S.recv_fds(a, 16, 1)
    p.wait()
    a.close()
    return S.socket(fileno=fds[0])


def test_inherited_descriptors_are_closed(w):
    """sluice run closes every descriptor above 2 before CMD starts: a socket
    the launcher leaked (fd 7 here, connected to a denied port) is not there
    inside."""
    import socket as S
    t = _connected_in_sandbox_netns(w, 8080)
    os.dup2(t.fileno(), 7)
    try:
        p = subprocess.run([W.SLUICE, "run", "--netns", w.sbx_path, "--", "python3", "-c",
                            "import os\ntry:\n    os.write(7, b'inherited\\n'); print('WROTE')\n"
                            "except OSError as e:\n    print('errno', e.errno)"],
                           capture_output=True, text=True, timeout=60, pass_fds=[7])
    finally:
        os.close(7)
    assert "errno 9" in p.stdout, p   # EBADF
    t.settimeout(0.5)
    try:
        echoed = t.recv(100)
    except S.timeout:
        echoed = b""
    t.close()
    assert echoed == b"", "the sandbox wrote on the inherited socket: %r" % echoed


def test_L1_stdout_socket(w):
    """Descriptors 0-2 are passed as they are, and a TCP socket the
    launcher gives CMD as stdout is the launcher's (made outside).  With the
    BPF LSM programs CMD's write to it is refused (foreign_socket); without,
    sluice run refuses to start (exit 2): its use could not be judged.
    Either way the echo server gets nothing."""
    t = _connected_in_sandbox_netns(w, 8080)
    ev = os.path.join(w.tmp, "l1b-%d.jsonl" % time.monotonic_ns())
    p = subprocess.run([W.SLUICE, "run", "--netns", w.sbx_path, "--events", ev, "--",
                        "sh", "-c", "echo through-stdout"],
                       stdout=t.fileno(), stderr=subprocess.PIPE, text=True, timeout=60)
    t.settimeout(3)
    try:
        echoed = t.recv(100)
    except OSError:
        echoed = b""
    t.close()
    assert b"through-stdout" not in echoed, "CMD wrote to the launcher's socket: %r" % echoed
    if os.path.exists(ev) and [e for e in read_strict(ev) if e.get("event.action") == "sandbox-start"]:
        assert lsm_in_force(read_strict(ev)), "started without the BPF LSM with a socket as stdout: %s" % p.stderr
        lsm_refusal(read_strict(ev), "foreign_socket")
        return
    assert p.returncode == 2 and "stdout (fd 1) is an inet stream socket made outside the sandbox" in p.stderr, p


def test_L1_a_udp_socket_as_stdin(w):
    """A UDP socket connected to a denied port (192.0.2.10:9999), made
    outside the sandbox, given to CMD as stdin; CMD writes to fd 0.  With
    the BPF LSM programs the write is refused (foreign_socket); without,
    sluice run refuses to start (exit 2, the reason on stderr).  The world's
    UDP echo server counts nothing either way."""
    u = _connected_in_sandbox_netns(w, 9999, udp=True)
    ev = os.path.join(w.tmp, "l1u-%d.jsonl" % time.monotonic_ns())
    mark = w.mark()
    try:
        p = subprocess.run([W.SLUICE, "run", "--profile", "egress-only", "--netns", w.sbx_path, "--events", ev, "--",
                            "python3", "-c", "import os\ntry:\n    os.write(0, b'stdin-udp'); print('WROTE')\n"
                            "except OSError as e:\n    print('errno', e.errno)"],
                           stdin=u.fileno(), capture_output=True, text=True, timeout=60)
    finally:
        u.close()
    time.sleep(1)   # a datagram that got out would be recorded by now
    assert not w.arrived_since(mark, port=9999, proto="udp"), "CMD's write on the launcher's UDP socket arrived"
    if os.path.exists(ev) and [e for e in read_strict(ev) if e.get("event.action") == "sandbox-start"]:
        assert lsm_in_force(read_strict(ev)), "started without the BPF LSM with a UDP socket as stdin: %s" % p.stderr
        assert "errno 1" in p.stdout, p
        lsm_refusal(read_strict(ev), "foreign_socket")
        return
    assert p.returncode == 2 and "stdin (fd 0) is an inet datagram socket made outside the sandbox" in p.stderr, p
    assert "WROTE" not in p.stdout, p


def test_unix_socket_as_stdio_is_usable_and_named(w):
    """A unix stream socket as stdout (journald, a CI runner's stdio) stays
    usable, and the start line says it is there (sluice.stdio_sockets)."""
    import socket as S
    a, b = S.socketpair(S.AF_UNIX, S.SOCK_STREAM)
    ev = os.path.join(w.tmp, "l1x-%d.jsonl" % time.monotonic_ns())
    try:
        p = subprocess.run([W.SLUICE, "run", "--profile", "egress-only", "--netns", w.sbx_path, "--events", ev, "--",
                            "sh", "-c", "echo via-unix-stdout"], stdout=b.fileno(), stderr=subprocess.PIPE, text=True,
                           timeout=60)
        b.close()
        a.settimeout(10)
        echoed = a.recv(100)
    finally:
        a.close()
    assert p.returncode == 0 and echoed == b"via-unix-stdout\n", (p, echoed)
    start = [e for e in read_strict(ev) if e.get("event.action") == "sandbox-start"]
    assert start and start[0]["sluice.stdio_sockets"] == "1:unix", start
    assert "sockets as stdio (made outside, unix ones usable): 1:unix" in start[0]["message"], start


def unix_entry(path):
    return "  - unix: %s\n    why: the test's unix socket\n" % json.dumps(path)


def test_L3_a_unix_socket_to_a_host_daemon(w):
    """A unix socket of a process outside the sandbox (a host daemon): the
    connect is refused (cgroup/connect_unix, unix_not_allowed, with the
    path) unless a `unix:` entry names it; then it is reached.  The daemon
    gets nothing from the refused one."""
    path = os.path.join(w.tmp, "hostd-%d.sock" % time.monotonic_ns())
    got_log = path + ".log"
    helper = ("import socket, os\n"
              "l = socket.socket(socket.AF_UNIX); l.bind(%r); os.chmod(%r, 0o777); l.listen(4)\n"
              "while True:\n"
              "    c, _ = l.accept(); d = c.recv(100); open(%r, 'ab').write(d); c.sendall(b'host daemon got: ' + d); c.close()\n"
              % (path, path, got_log))
    p = subprocess.Popen(["python3", "-c", helper])
    try:
        for _ in range(100):
            if os.path.exists(path):
                break
            time.sleep(0.02)
        got, lines, _ = _side_door_run(w, "python3 {attacker} unix " + path, "atkl3%d" % (os.getpid() % 100000))
        assert got["result"] == "EPERM", got
        assert not os.path.exists(got_log), "the host daemon received the refused connection"
        hit = [e for e in lines if e.get("event.reason") == "unix_not_allowed" and not e.get("sluice.canary")]
        assert hit and hit[0]["destination.address"] == path and hit[0]["sluice.hook"] == "connect_unix", lines
        assert hit[0]["network.transport"] == "unix", hit[0]
        got, lines, _ = _side_door_run(w, "python3 {attacker} unix " + path, "atkl3b%d" % (os.getpid() % 100000),
                                   policy=POLICY + unix_entry(path))
        assert got["result"] == "ok" and "host daemon got: hello from the sandbox" in got["reply"], got
    finally:
        p.kill()
        p.wait()


UNIX_CLIENT = """\
import json, socket, sys
kind, name = sys.argv[1], sys.argv[2]
addr = "\\0" + name[1:] if name.startswith("@") else name
try:
    if kind == "stream":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect(addr)
        s.sendall(b"hi"); r = s.recv(100).decode()
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"hi", addr); r = "sent"
    print(json.dumps({"result": "ok", "reply": r}))
except OSError as e:
    import errno
    print(json.dumps({"result": errno.errorcode.get(e.errno, str(e.errno))}))
"""


def test_unix_abstract_and_datagram_sockets_need_an_entry(w):
    """An abstract stream socket of a process outside the sandbox (in the
    sandbox's netns, where abstract names live) and a datagram socket
    (syslog style, sendto a path): refused without a `unix:` entry
    (connect_unix, sendmsg_unix), reached with one."""
    name = "@sluice-test-%d" % os.getpid()
    dgram = os.path.join(w.tmp, "dgram-%d.sock" % time.monotonic_ns())
    seen = dgram + ".log"
    helper = ("import socket, os, threading\n"
              "a = socket.socket(socket.AF_UNIX); a.bind(%r); a.listen(4)\n"
              "d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind(%r); os.chmod(%r, 0o777)\n"
              "def dg():\n"
              "    while True:\n"
              "        m = d.recv(100); open(%r, 'ab').write(m)\n"
              "threading.Thread(target=dg, daemon=True).start()\n"
              "while True:\n"
              "    c, _ = a.accept(); c.sendall(b'abstract got: ' + c.recv(100)); c.close()\n"
              % ("\0" + name[1:], dgram, dgram, seen))
    p = subprocess.Popen(["ip", "netns", "exec", w.sbx, "python3", "-c", helper])
    client = w.write("unix_client.py", UNIX_CLIENT)
    try:
        for _ in range(100):
            if os.path.exists(dgram):
                break
            time.sleep(0.02)
        cmd = "python3 %s stream %s; python3 %s dgram %s" % (client, name, client, dgram)
        r = w.sluice_run(["sh", "-c", cmd], policy=POLICY)
        res = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        assert [x["result"] for x in res] == ["EPERM", "EPERM"], (res, r.stderr[-500:])
        hits = [e for e in r.events if e.get("event.reason") == "unix_not_allowed" and not e.get("sluice.canary")]
        assert [(e["sluice.hook"], e["destination.address"]) for e in hits] == \
            [("connect_unix", name), ("sendmsg_unix", dgram)], hits
        time.sleep(0.2)
        assert not os.path.exists(seen), "the datagram reached the socket outside"
        r = w.sluice_run(["sh", "-c", cmd], policy=POLICY + unix_entry(name) + unix_entry(dgram))
        res = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        assert res[0] == {"result": "ok", "reply": "abstract got: hi"} and res[1]["result"] == "ok", res
        deadline = time.time() + 3
        while not os.path.exists(seen) and time.time() < deadline:
            time.sleep(0.05)
        assert open(seen, "rb").read() == b"hi"
    finally:
        p.kill()
        p.wait()


def test_unix_sockets_made_inside_work_among_themselves(w):
    """A unix server and its client both inside the sandbox, on a path a
    `unix:` directory entry names: the sandbox's own sockets work."""
    d = os.path.join(w.tmp, "inside-%d" % time.monotonic_ns())
    os.mkdir(d)
    script = ("import socket, os, threading\n"
              "p = %r\n"
              "l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1)\n"
              "def srv():\n"
              "    c, _ = l.accept(); c.sendall(c.recv(10) + b'!'); c.close()\n"
              "threading.Thread(target=srv).start()\n"
              "s = socket.socket(socket.AF_UNIX); s.connect(p); s.sendall(b'ping'); print(s.recv(10).decode())\n"
              % os.path.join(d, "srv.sock"))
    r = w.sluice_run(["python3", "-c", script], policy=POLICY + unix_entry(d + "/"))
    assert r.rc == 0 and r.stdout.strip() == "ping!", r


FAMILIES_NAMED = """\
families:
  - family: vsock
    why: the attack suite's control - a VM host's agent
  - family: netlink
    why: the attack suite's control - every netlink protocol
"""


def _families(r):
    """The families op's result and the families whose socket() was
    refused and logged (the BPF LSM's socket_family lines or the seccomp
    filter's syscall-denied ones: both carry sluice.socket_family)."""
    res = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    assert res, r
    logged = sorted(e["sluice.socket_family"] for e in r.events
                    if e.get("event.reason") == "socket_family" and not e.get("sluice.canary"))
    start = [e for e in r.events if e.get("event.action") == "sandbox-start"]
    assert start, r.events
    return res[-1]["result"], logged, start[-1]


def test_socket_families_refused_unless_the_policy_names_them(w):
    """socket() of a family no inet hook sees is refused and logged unless
    the policy's `families:` names it: AF_VSOCK (a VM guest's path to its
    host), AF_PACKET, AF_NETLINK other than route/sock_diag; netlink route
    always works (ip(8), getaddrinfo).  The BPF LSM's socket_create judges
    where it loads, else sluice run's seccomp filter: run as the kernel
    allows and with the fallback forced (--no-lsm); the start line names
    the path in force.  packet would also fail without CAP_NET_RAW: the
    logged refusal shows that the filter, not the capability, refused it."""
    for extra in ([], ["--no-lsm"]):
        r = w.sluice_run(["python3", ATTACKER, "families"], policy=POLICY, extra=extra)
        got, logged, start = _families(r)
        by = start["sluice.families_enforced_by"]
        assert by in (("seccomp",) if extra else ("bpf_lsm", "seccomp")), start
        assert start["sluice.families_allowed"] == "" and "socket families: %s" % by in start["message"], start
        assert got == {"vsock": "EPERM", "packet": "EPERM", "netlink-generic": "EPERM", "netlink-route": "created"}, \
            (extra, got)
        assert logged == [16, 17, 40], (extra, logged, r.events)   # netlink, packet, vsock
        r = w.sluice_run(["python3", ATTACKER, "families"], policy=POLICY + FAMILIES_NAMED, extra=extra)
        got, logged, start = _families(r)
        assert start["sluice.families_allowed"] == "netlink,vsock", start
        # named: not refused (a kernel without vsock says so itself)
        assert got["vsock"] in ("created", "EAFNOSUPPORT") and got["netlink-generic"] == "created", (extra, got)
        assert got["packet"] == "EPERM" and got["netlink-route"] == "created", (extra, got)
        assert logged == [17], (extra, logged)


def test_socket_families_under_the_sandbox_profile(w):
    """The default profile's seccomp baseline holds the same socket() rule:
    vsock refused (syscall-denied, socket_family) without a families entry,
    created with one."""
    import tempfile
    import shutil
    wd = tempfile.mkdtemp(prefix="atk-wd-", dir=W.BUILD)
    os.chmod(wd, 0o777)
    try:
        r0 = w.sluice_run(["python3", ATTACKER, "families"], policy=POLICY, profile="sandbox", extra=["--workdir", wd])
        r1 = w.sluice_run(["python3", ATTACKER, "families"], policy=POLICY + FAMILIES_NAMED, profile="sandbox",
                          extra=["--workdir", wd])
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    got, logged, start = _families(r0)
    assert got["vsock"] == "EPERM" and 40 in logged, (got, logged)
    assert start["sluice.families_enforced_by"] in ("seccomp", "bpf_lsm+seccomp"), start
    assert [e for e in r0.events if e.get("event.action") == "syscall-denied" and e.get("sluice.syscall") == "socket"
            and e.get("sluice.socket_family") == 40] or start["sluice.families_enforced_by"] != "seccomp", r0.events
    got, logged, _ = _families(r1)
    assert got["vsock"] in ("created", "EAFNOSUPPORT") and 40 not in logged, (got, logged)


def test_references_exist(w):
    """Every test the REFERENCES rows point at exists (renames break this, not the list)."""
    import importlib.util
    root = W.ROOT
    cache = {}
    for what, refs in REFERENCES:
        for ref in refs:
            path, test = ref.split("::")
            if path not in cache:
                spec = importlib.util.spec_from_file_location("ref_" + os.path.basename(path)[:-3],
                                                              os.path.join(root, path))
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                cache[path] = mod
            assert callable(getattr(cache[path], test, None)), "%s: %s does not exist" % (what, ref)
