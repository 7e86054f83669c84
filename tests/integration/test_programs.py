"""Per-program entries (docs/policy.md "Per-program entries").

An entry with `programs: [/usr/bin/curl]` applies only to connections
curl makes: the kernel reads the caller's executable (device and inode of
mm->exe_file) in the connect hook and judges cidr entries by it (reason
16 program_not_allowed), and records it in the flow map, where the proxy
reads it for host and url entries (403 program_not_allowed).  curl and
python3 ask for the same thing from inside one sandbox; a copy of curl
(another inode) is refused too.  Traffic goes to the test world only.
"""
import json
import os
import shutil
import subprocess

import world as W

CURL = shutil.which("curl") or "/usr/bin/curl"
PY = os.path.realpath(shutil.which("python3") or "/usr/bin/python3")

CIDR_POLICY = """\
version: 1
name: programs-cidr
allow:
  - cidr: 192.0.2.10/32
    ports: [5432]
    protocol: tcp
    programs: [%s]
    why: only curl reaches the database port
""" % CURL

# each client prints one JSON line: what it got
PY_TCP = r'''
import json, socket, time
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("192.0.2.10", 5432))
    r = "ok"
except PermissionError:
    r = "EPERM"
except OSError as e:
    r = "error %s" % e
print(json.dumps({"python": r}), flush=True)
time.sleep(1)   # still running when the line is written: process.executable is known
'''

SCRIPT = r'''
set -u
%(curl)s -s -o /dev/null --max-time 5 http://192.0.2.10:5432/from-curl
echo "{\"curl\": $?}"
%(copy)s -s -o /dev/null --max-time 5 http://192.0.2.10:5432/from-copy
echo "{\"copy\": $?}"
python3 %(py)s
'''


def _need_kernel(res):
    if "bpf_get_current_task_btf" in res.stderr:
        raise W.Skip("the kernel's cgroup sock_addr programs cannot read the caller's executable")


def _lines(res):
    out = {}
    for line in res.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.update(json.loads(line))
    return out


def test_cidr_entry_lets_curl_through_and_refuses_python(w):
    copy = os.path.join(w.tmp, "curl-copy")
    shutil.copy2(CURL, copy)
    py = w.write("tcp.py", PY_TCP)
    sh = w.write("clients.sh", SCRIPT % {"curl": CURL, "copy": copy, "py": py})
    mark = w.mark()
    res = w.sluice_run(["sh", sh], policy=CIDR_POLICY)
    _need_kernel(res)
    assert res.rc == 0, res
    out = _lines(res)
    # curl connected (the echo server answers no HTTP: curl's exit is not 7, "could not connect")
    assert out["curl"] != 7, (out, res)
    assert out["copy"] == 7, (out, res)
    assert out["python"] == "EPERM", (out, res)
    got = w.arrived_since(mark, port=5432)
    assert len(got) == 1, got   # only curl's connection arrived
    den = [x for x in res.denials() if x.get("destination.port") == 5432]
    assert len(den) == 2, den
    assert {x["event.reason"] for x in den} == {"program_not_allowed"}, den
    assert {x["sluice.reason_code"] for x in den} == {16}, den
    by_name = {x["process.name"]: x for x in den}
    assert set(by_name) == {"curl-copy", "python3"}, den
    # the file the kernel saw, by device and inode, whether the process still runs or not
    for name, path in (("curl-copy", copy), ("python3", PY)):
        st = os.stat(path)
        x = by_name[name]
        assert x["sluice.executable.inode"] == st.st_ino, x
        assert x["sluice.executable.device"] == "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), x
    assert by_name["python3"]["process.executable"] == PY, den
    assert by_name["curl-copy"].get("process.executable") in (None, copy), den


HOST_POLICY = """\
version: 1
name: programs-host
allow:
  - host: api.example.com
    ports: [8081]
    programs: [%s]
    why: only curl talks to the API
  - host: other.example.com
    ports: [8081]
    why: anyone talks to the other one
""" % CURL

PY_HTTP = r'''
import json, socket
def get(host):
    s = socket.create_connection(("192.0.2.10", 8081), timeout=10)
    try:
        s.sendall(b"GET /py HTTP/1.1\r\nHost: " + host.encode() + b":8081\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
    finally:
        s.close()
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    denied = [l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("x-sluice-denied:")]
    return [int(head.split(" ", 2)[1]), denied[0] if denied else None]
print(json.dumps({"python": get("api.example.com"), "python_other": get("other.example.com")}))
'''

HTTP_SCRIPT = r'''
set -u
c=$(%(curl)s -s -o /dev/null -w '%%{http_code}' --max-time 10 --resolve api.example.com:8081:192.0.2.10 http://api.example.com:8081/curl)
echo "{\"curl\": \"$c\"}"
python3 %(py)s
'''


def test_host_entry_in_the_proxy_lets_curl_through_and_refuses_python(w):
    from test_proxy import env as proxy_env, HATCH
    proxy_env(w)   # the origin (HTTP :8081) and the DNS server on 192.0.2.53
    py = w.write("http.py", PY_HTTP)
    sh = w.write("http.sh", HTTP_SCRIPT % {"curl": CURL, "py": py})
    extra = ["--upstream-dns", "192.0.2.53"]
    for c in HATCH:
        extra += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c]
    res = w.sluice_run(["sh", sh], policy=HOST_POLICY, extra=extra)
    _need_kernel(res)
    assert res.rc == 0, res
    out = _lines(res)
    assert out["curl"] == "200", (out, res)
    assert out["python"] == [403, "program_not_allowed"], (out, res)
    assert out["python_other"][0] == 200, (out, res)   # an entry without programs: anyone
    px = [x for x in res.events if x.get("event.dataset") == "sluice.proxy"]
    ok = [x for x in px if x.get("url.domain") == "api.example.com" and x.get("event.outcome") == "success"]
    assert len(ok) == 1 and ok[0]["process.executable"] == CURL, px
    assert ok[0]["rule.name"] == "allow[0] host:api.example.com", ok
    bad = [x for x in px if x.get("event.reason") == "program_not_allowed"]
    assert len(bad) == 1 and bad[0]["process.executable"] == PY and bad[0]["url.domain"] == "api.example.com", px


def _check(w, text):
    path = w.write("bad-%d.yaml" % abs(hash(text)), text)
    r = subprocess.run([W.SLUICE, "policy", "check", path], capture_output=True, text=True, timeout=30)
    return path, r


BAD = [
    ("/nonexistent/bin/tool", "no such file"),
    ("/usr/bin", "is not a regular file"),
    ("bin/curl", "must be an absolute path"),
    ("/usr/bin/../bin/curl", "'..' segment"),
]


def test_bad_program_paths_are_file_line_errors_and_change_nothing(w):
    for prog, want in BAD:
        text = "version: 1\nname: bad\nallow:\n  - cidr: 192.0.2.10/32\n    ports: [5432]\n" \
               "    programs:\n      - %s\n    why: x\n" % prog
        path, r = _check(w, text)
        assert r.returncode == 2, (prog, r)
        assert (path + ":7:") in r.stdout + r.stderr and want in r.stdout + r.stderr, (prog, r)
        # sluice run refuses it before anything is made
        mark = w.mark()
        res = w.probe("tcp", "192.0.2.10", 5432, policy=path)
        assert res.rc == 2 and (path + ":7:") in res.stderr, res
        assert not w.arrived_since(mark), res
    for text, want in [
        ("  - unix: /run/x.sock\n    programs: [%s]\n    why: x\n" % CURL, "not allowed in a unix entry"),
        ("  - host: api.example.com\n    ports: [443]\n    programs: []\n    why: x\n", "at least one"),
        ("  - host: api.example.com\n    ports: [443]\n    programs: %s\n    why: x\n" % CURL, "must be a list"),
        ("  - host: api.example.com\n    ports: [443]\n    programs: [%s, %s]\n    why: x\n" % (CURL, CURL),
         "listed twice"),
    ]:
        path, r = _check(w, "version: 1\nname: bad\nallow:\n" + text)
        assert r.returncode == 2 and path + ":" in r.stdout + r.stderr and want in r.stdout + r.stderr, (text, r)


def test_digest_and_diff_cover_programs(w):
    base = "version: 1\nname: p\nallow:\n  - cidr: 192.0.2.10/32\n    ports: [5432]\n%s    why: db\n"
    a = w.write("a.yaml", base % "")
    b = w.write("b.yaml", base % ("    programs: [%s]\n" % CURL))
    c = w.write("c.yaml", base % ("    programs: [%s, %s]\n" % (CURL, PY)))
    d = w.write("d.yaml", base % ("    programs: [%s, %s]\n" % (PY, CURL)))   # order does not matter

    def digest(p):
        r = subprocess.run([W.SLUICE, "policy", "check", "--json", p], capture_output=True, text=True, timeout=30)
        assert r.returncode in (0, 1), r
        return json.loads(r.stdout)["files"][0]["sha256"] if "files" in json.loads(r.stdout) else \
            json.loads(r.stdout)["sha256"]
    assert len({digest(a), digest(b), digest(c)}) == 3
    assert digest(c) == digest(d)
    r = subprocess.run([W.SLUICE, "policy", "diff", a, b], capture_output=True, text=True, timeout=30)
    assert "programs" in r.stdout and CURL in r.stdout, r
    assert "narrows" in r.stdout, r
    r = subprocess.run([W.SLUICE, "policy", "diff", c, b], capture_output=True, text=True, timeout=30)
    assert "programs" in r.stdout and PY in r.stdout, r


def test_daemon_resolves_programs_again_at_reload(w):
    """The daemon (its own state dir and sandbox name) resolves `programs:`
    at attach and again at every reload: a binary replaced in between (a
    new inode, as a package upgrade makes) is refused until the reload, and
    a reload naming a path that does not exist changes nothing."""
    from test_change import SignedDaemon
    from test_daemon import Workload
    tool = os.path.join(w.tmp, "tool")

    def install():
        # a new file each time (copy, then rename over): a new inode
        shutil.copy2(W.PROBE, tool + ".new")
        os.rename(tool + ".new", tool)
    install()
    pol = w.write("daemon-programs.yaml", CIDR_POLICY.replace(CURL, tool))
    name = "prg%d" % os.getpid()
    d = SignedDaemon(w, None, args=[])
    a = Workload(w, name)

    def run(exe):
        out = a.run(exe, "tcp", "192.0.2.10", 5432)
        return json.loads(out.strip().splitlines()[-1])["result"]
    try:
        r = d.ctl("attach", "--policy", pol, "--cgroup", a.cg, "--netns", w.sbx_path, "--name", name)
        if r.returncode != 0 and "bpf_get_current_task_btf" in r.stderr + r.stdout:
            raise W.Skip("the kernel's cgroup sock_addr programs cannot read the caller's executable")
        assert r.returncode == 0, r
        assert run(tool) == "ok", "the program the entry names"
        assert run(W.PROBE) == "EPERM", "another file (the same bytes, another inode)"
        install()
        assert run(tool) == "EPERM", "replaced: a new inode, refused until the reload"
        bad = w.write("daemon-programs-bad.yaml", CIDR_POLICY.replace(CURL, tool + "-gone"))
        r = d.ctl("reload", "--policy", bad, name)
        assert r.returncode != 0 and bad + ":" in r.stderr + r.stdout and "no such file" in r.stderr + r.stdout, r
        assert "nothing changed" in r.stderr + r.stdout, r
        r = d.ctl("reload", "--policy", pol, name)
        assert r.returncode == 0, r
        assert run(tool) == "ok", "re-resolved at the reload"
        assert d.ctl("detach", name).returncode == 0
    finally:
        a.close()
        d.close()
