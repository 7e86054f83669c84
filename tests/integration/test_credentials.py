"""Credentials (issue 20): the secret stays outside the sandbox, the proxy
sets it on requests for the one destination it belongs to, the sandbox
holds a placeholder only.

The world is test_proxy's (its DNS on 192.0.2.53, api.example.com and
other.example.com on 192.0.2.10), plus an origin of our own on AUTH_PORT
that answers only requests carrying "Authorization: Bearer <the real
secret>" (origin_server.py --auth-tokens), with TLS the proxy verifies
through --upstream-ca.  The commands run under the default (confined)
profile: an unprivileged user that cannot read the secret file.
"""
import json
import os
import re
import subprocess
import time

import world as W
import test_proxy as TP

HERE = os.path.dirname(os.path.abspath(__file__))
AUTH_PORT = 8444
SECRET = "sk-test-" + os.urandom(12).hex()

POLICY = """\
version: 1
name: cred-tests
credentials:
  - name: model-api
    file: %(secret)s
    header: "Authorization: Bearer {secret}"
    env: MODEL_API_KEY
allow:
  - url: https://api.example.com:%(port)d/v1/
    methods: [GET, POST]
    credential: model-api
    why: the model API, key added by sluice
  - url: https://other.example.com:%(port)d/
    methods: [GET, POST]
    why: another allowed host, no credential
"""


class Env:
    def __init__(self, w):
        self.w = w
        self.proxy = TP.env(w)          # the world's DNS, certificate and origin
        self.tokens = w.write("auth-tokens", SECRET + "\n")
        self.log = os.path.join(w.tmp, "auth-origin.jsonl")
        w.start_server([os.path.join(HERE, "origin_server.py"), "--https", str(AUTH_PORT),
                        "--cert", self.proxy.cert, "--key", self.proxy.key, "--log", self.log,
                        "--auth-tokens", self.tokens], name="auth-origin")
        self.secret = self.secret_file(SECRET)
        self.policy = w.write("cred-policy.yaml", POLICY % {"secret": self.secret, "port": AUTH_PORT})

    def secret_file(self, value, mode=0o600):
        path = os.path.join(self.w.tmp, "secret-%d" % time.monotonic_ns())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (value + "\n").encode())
        os.close(fd)
        os.chmod(path, mode)
        return path

    def arrived(self, mark=0):
        try:
            with open(self.log) as f:
                got = [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            got = []
        # mark: a count of requests (the log has "accept" lines too)
        return [g for g in got if g.get("event") == "request"][mark:]


def env(w):
    if not hasattr(w, "cred_env"):
        w.cred_env = Env(w)
    return w.cred_env


def run(w, script, policy=None, extra=(), timeout=120):
    e = env(w)
    args = ["--upstream-dns", "192.0.2.53", "--upstream-ca", e.proxy.cert]
    for c in TP.HATCH:
        args += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                 "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    r = w.sluice_run(["sh", "-c", script], policy=policy or e.policy, extra=args + list(extra),
                     timeout=timeout, profile=None)
    r.proxy = [x for x in r.events if x.get("event.dataset") == "sluice.proxy"]
    r.dns = [x for x in r.events if x.get("event.dataset") == "sluice.resolver"]
    return r


def curl(url, extra=""):
    return ("curl -sS --max-time 10 -o /dev/null -w 'CODE %%{http_code} %s\\n' %s '%s'; "
            % (url, extra, url))


def codes(r):
    return [l.split(" ", 2)[1] for l in r.stdout.splitlines() if l.startswith("CODE ")]


def no_secret(r, *more):
    """The real secret is in no output, no error and no log line."""
    for name, text in (("stdout", r.stdout), ("stderr", r.stderr)) + more:
        assert SECRET not in text, (name, text)
    for line in r.events:
        assert SECRET not in json.dumps(line), line


API = "https://api.example.com:%d" % AUTH_PORT
OTHER = "https://other.example.com:%d" % AUTH_PORT


def test_secret_added_for_its_destination_only(w):
    e = env(w)
    m = len(e.arrived())
    r = run(w, curl(API + "/v1/models") +
            # a sent value is replaced, never doubled
            curl(API + "/v1/chat", "-X POST -d '{}' -H 'Authorization: Bearer mine'") +
            # another allowed host: no secret goes there (the origin says 401)
            curl(OTHER + "/x") +
            'echo "PH $MODEL_API_KEY"')
    assert r.rc == 0, r
    assert codes(r) == ["200", "200", "401"], r
    got = e.arrived(m)
    assert [g["headers"].get("Authorization") for g in got] == ["Bearer " + SECRET] * 2 + [None], got
    ph = [l.split(" ", 1)[1] for l in r.stdout.splitlines() if l.startswith("PH ")][0]
    assert re.fullmatch(r"sluice-placeholder-[0-9a-f]{32}", ph), ph
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    assert len(lines) == 3, r.proxy
    assert [l.get("sluice.credential") for l in lines] == ["model-api", "model-api", None], lines
    no_secret(r)


def test_placeholder_misdirected_is_refused(w):
    e = env(w)
    m = len(e.arrived())
    r = run(w, curl(OTHER + "/x", "-H \"X-Leak: $MODEL_API_KEY\"") +
            "curl -sS --max-time 10 -o /dev/null -w 'CODE %{http_code} url\\n' \"" + OTHER +
            "/x?k=$MODEL_API_KEY\"; " +
            # its own destination may see it (the header it carries is replaced)
            curl(API + "/v1/x", "-H \"Authorization: Bearer $MODEL_API_KEY\"") +
            # a DNS label
            "getent hosts \"$MODEL_API_KEY.api.example.com\" && echo RESOLVED; "
            "curl -sS --max-time 10 \"" + OTHER + "/x\" -H \"X-Leak: $MODEL_API_KEY\"; echo")
    assert codes(r) == ["403", "403", "200"], r
    assert "RESOLVED" not in r.stdout, r
    got = e.arrived(m)
    assert [g["path"] for g in got] == ["/v1/x"], got
    assert got[0]["headers"]["Authorization"] == "Bearer " + SECRET, got
    mis = [l for l in r.proxy if l.get("event.reason") == "credential_misdirected"]
    assert len(mis) == 3, r.proxy
    for l in mis:
        assert l["sluice.credential"] == "model-api" and l["event.severity"] == 73, l
        assert l["url.domain"] == "other.example.com" and l["http.response.status_code"] == 403, l
    dns = [l for l in r.dns if l.get("event.reason") == "credential_misdirected"]
    assert dns and all(l["sluice.credential"] == "model-api" and l["event.severity"] == 73 for l in dns), r.dns
    # the proxy's error page names the reason, never the secret
    assert "credential_misdirected" in r.stdout, r.stdout
    no_secret(r)


def test_secret_not_inside_the_sandbox(w):
    e = env(w)
    # a secret file the sandbox can see (the host is visible read-only;
    # the world's /tmp is not) but not read: root's, mode 0600
    d = "/var/lib/sluice-cred-test-%d" % os.getpid()
    os.makedirs(d, 0o755, exist_ok=True)
    try:
        path = os.path.join(d, "model-api")
        with open(path, "w") as f:
            f.write(SECRET + "\n")
        os.chmod(path, 0o600)
        r = run(w, "cat /proc/self/environ | tr '\\0' '\\n'; cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; "
                "cat %s && echo READ_SECRET_FILE; "
                "grep -rs -l '%s' $HOME /tmp /run /etc/ssl %s 2>/dev/null; echo END" % (path, SECRET[:12], d),
                extra=["--secret", "model-api=" + path])
    finally:
        subprocess.run(["rm", "-rf", d])
    assert r.rc == 0, r
    # (the script's own text is in the cmdline output: whole lines only)
    assert "READ_SECRET_FILE" not in r.stdout.splitlines() and "Permission denied" in r.stderr, r
    assert "MODEL_API_KEY=sluice-placeholder-" in r.stdout, r
    assert r.stdout.rstrip().endswith("END"), r
    no_secret(r)


def test_echoed_secret_is_redacted(w):
    e = env(w)
    r = run(w, "curl -sS --max-time 10 " + API + "/v1/echo; echo; "
            "curl -sS --max-time 10 -D - -o /dev/null " + API + "/v1/echo-header; echo")
    assert r.rc == 0, r
    # the origin's JSON echoes the request's headers: the secret, overwritten
    body = json.loads(r.stdout.splitlines()[0])
    assert body["headers"]["Authorization"].startswith("Bearer sluice-placeholder-"), body
    assert re.search(r"(?im)^x-seen-authorization: Bearer sluice-placeholder-", r.stdout), r.stdout
    echoed = [l for l in r.proxy if l.get("sluice.credential_event") == "credential_echoed"]
    assert len(echoed) == 2 and all(l["sluice.credential"] == "model-api" for l in echoed), r.proxy
    no_secret(r)


def test_bad_secrets_refuse_to_start(w):
    e = env(w)
    # world-readable: check and run refuse it, naming file:line and the path
    public = e.secret_file("x", mode=0o644)
    pol = w.write("cred-public.yaml", POLICY % {"secret": public, "port": AUTH_PORT})
    c = subprocess.run([W.SLUICE, "policy", "check", pol], capture_output=True, text=True)
    assert c.returncode == 2 and "%s:5:11:" % pol in c.stderr and public in c.stderr, c
    r = w.sluice_run(["true"], policy=pol, profile=None)
    assert r.rc == 2 and public in r.stderr and "readable or writable by others" in r.stderr, r
    # missing
    pol = w.write("cred-missing.yaml", POLICY % {"secret": e.secret + ".missing", "port": AUTH_PORT})
    r = w.sluice_run(["true"], policy=pol, profile=None)
    assert r.rc == 2 and e.secret + ".missing" in r.stderr, r
    # empty, or with an inner newline (header injection)
    for value in ("", "a\nInjected: 1"):
        bad = e.secret_file(value)
        r = w.sluice_run(["true"], policy=e.policy, extra=["--secret", "model-api=" + bad], profile=None)
        assert r.rc == 2 and bad in r.stderr, r
        assert "Injected" not in r.stderr, r
    # --secret NAME=FILE for a name the policy lacks
    r = w.sluice_run(["true"], policy=e.policy, extra=["--secret", "nope=" + e.secret], profile=None)
    assert r.rc == 2 and "--secret nope" in r.stderr, r
    c = subprocess.run([W.SLUICE, "policy", "check", e.policy], capture_output=True, text=True)
    assert c.returncode == 0 and "model-api: sets Authorization" in c.stdout, c
    assert SECRET not in c.stdout + c.stderr, c


def test_secret_from_flag_and_credentials_directory(w):
    e = env(w)
    m = len(e.arrived())
    other = "sk-other-" + os.urandom(8).hex()
    with open(e.tokens, "a") as f:
        f.write(other + "\n")
    flag = e.secret_file(other)
    r = run(w, curl(API + "/v1/a"), extra=["--secret", "model-api=" + flag])
    assert codes(r) == ["200"], r
    d = os.path.join(w.tmp, "creds-%d" % time.monotonic_ns())
    os.mkdir(d, 0o700)
    fd = os.open(os.path.join(d, "model-api"), os.O_WRONLY | os.O_CREAT, 0o400)
    os.write(fd, SECRET.encode())
    os.close(fd)
    envv = dict(os.environ, CREDENTIALS_DIRECTORY=d)
    args = ["--upstream-dns", "192.0.2.53", "--upstream-ca", e.proxy.cert]
    for c in TP.HATCH:
        args += ["--proxy-arg", "--allow-private-upstream", "--proxy-arg", c,
                 "--resolver-arg", "--allow-private-answers", "--resolver-arg", c]
    r2 = w.sluice_run(["sh", "-c", curl(API + "/v1/b")], policy=e.policy, extra=args, profile=None, env=envv)
    assert codes(r2) == ["200"], r2
    got = e.arrived(m)
    assert [g["headers"]["Authorization"] for g in got] == ["Bearer " + other, "Bearer " + SECRET], got
    no_secret(r)
    assert other not in r.stdout + r.stderr + json.dumps(r.events), r


def test_daemon_reload_rotates_the_secret(w):
    """attach --secret, requests, rotate the file and reload: before the
    old secret, after the new, none fail; a reload with an empty secret
    file is refused and the secret in force stays.  Its own daemon (state
    dir and sandbox name of this test only)."""
    import test_daemon as TD

    e = env(w)

    class Daemon(TD.Daemon):
        def start(self):
            self.proc = subprocess.Popen(
                [W.SLUICE, "daemon", "--state-dir", self.state, "--upstream-dns", "192.0.2.53",
                 "--proxy-arg", "--allow-private-upstream", "--proxy-arg", "192.0.2.0/24",
                 "--proxy-arg", "--upstream-ca", "--proxy-arg", e.proxy.cert],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.w.tmp, "daemon.err"), "a"))
            deadline = time.time() + 10
            while self.ctl("status").returncode != 0:
                assert self.proc.poll() is None and time.time() < deadline, open(
                    os.path.join(self.w.tmp, "daemon.err")).read()
                time.sleep(0.05)

    new = "sk-rotated-" + os.urandom(8).hex()
    with open(e.tokens, "a") as f:
        f.write(new + "\n")
    path = e.secret_file(SECRET)
    name = "cred%d" % os.getpid()
    d = Daemon(w)
    wl = None
    try:
        wl = TD.Workload(w, name)
        r = d.ctl("attach", "--policy", e.policy, "--cgroup", wl.cg, "--name", name, "--netns", w.sbx_path,
                  "--secret", "model-api=" + path)
        assert r.returncode == 0, r

        def get(tag):
            ca = d.status()[name]["ca_cert"]
            return wl.run("curl", "-sS", "--max-time", "10", "--cacert", ca, "-o", "/dev/null", "-w", "%{http_code}",
                          "--resolve", "api.example.com:%d:192.0.2.10" % AUTH_PORT, API + "/v1/" + tag).strip()

        m = len(e.arrived())
        assert [get("before1"), get("before2")] == ["200", "200"]
        with open(path, "w") as f:           # rotated in place
            f.write(new + "\n")
        r = d.ctl("reload", "--policy", e.policy, name)
        assert r.returncode == 0, r
        assert get("after") == "200"
        with open(path, "w") as f:           # emptied: the reload is refused
            pass
        r = d.ctl("reload", "--policy", e.policy, name)
        assert r.returncode != 0 and path in r.stdout + r.stderr and "nothing changed" in r.stdout + r.stderr, r
        assert get("still") == "200"
        got = [(g["path"], g["headers"].get("Authorization")) for g in e.arrived(m)]
        assert got == [("/v1/before1", "Bearer " + SECRET), ("/v1/before2", "Bearer " + SECRET),
                       ("/v1/after", "Bearer " + new), ("/v1/still", "Bearer " + new)], got
        st = d.ctl("status", "--json")
        assert st.returncode == 0 and SECRET not in st.stdout and new not in st.stdout, st
        evs = W.read_events(d.events)
        text = json.dumps(evs) + open(os.path.join(w.tmp, "daemon.err")).read()
        assert SECRET not in text and new not in text
        assert [x.get("sluice.credential") for x in evs if x.get("event.dataset") == "sluice.proxy"
                and x.get("sluice.inspected")] == ["model-api"] * 4, evs
    finally:
        if wl:
            wl.close()
        d.close()


def test_clean_environment(w):
    """CMD gets a minimal environment, plus --env; --inherit-env keeps all."""
    host = dict(os.environ, HOST_SECRET_TOKEN="tok-" + os.urandom(6).hex(), PLAIN_VAR="plain", LC_TIME="C",
                TZ="UTC", GITHUB_TOKEN="ghp-" + os.urandom(6).hex())
    r = w.sluice_run(["sh", "-c", "env | sort"], env=host, profile=None, netns=True,
                     extra=["--env", "PLAIN_VAR", "--env", "ADDED=1", "--env", "GITHUB_TOKEN"])
    assert r.rc == 0, r
    got = dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l)
    assert host["HOST_SECRET_TOKEN"] not in r.stdout and "HOST_SECRET_TOKEN" not in got, got
    assert got["PLAIN_VAR"] == "plain" and got["ADDED"] == "1" and got["GITHUB_TOKEN"] == host["GITHUB_TOKEN"], got
    assert got["LC_TIME"] == "C" and got["TZ"] == "UTC" and "PATH" in got and "HOME" in got, got
    assert "SLUICE_PROXY" in got, got
    # every name is one sluice allows or sets
    allowed = {"PATH", "HOME", "USER", "LOGNAME", "PWD", "LANG", "TERM", "TZ", "SLUICE_PROXY", "PLAIN_VAR",
               "ADDED", "GITHUB_TOKEN", "SHLVL", "_", "OLDPWD"}
    assert all(k in allowed or k.startswith("LC_") for k in got), sorted(got)
    # the warning names the mechanism; the start line lists names, never values
    assert "--env GITHUB_TOKEN looks like a secret" in r.stderr and "credential" in r.stderr, r.stderr
    assert "--env PLAIN_VAR" not in r.stderr, r.stderr
    start = [x for x in r.events if x.get("event.action") == "sandbox-start"][0]
    assert start["sluice.env_passed"] == ["PLAIN_VAR", "ADDED", "GITHUB_TOKEN"] and start["sluice.inherit_env"] is False
    assert host["GITHUB_TOKEN"] not in json.dumps(r.events)
    # --inherit-env: everything, and said so
    r = w.sluice_run(["sh", "-c", "env"], env=host, profile=None, extra=["--inherit-env"])
    assert r.rc == 0 and "HOST_SECRET_TOKEN=" + host["HOST_SECRET_TOKEN"] in r.stdout, r
    start = [x for x in r.events if x.get("event.action") == "sandbox-start"][0]
    assert start["sluice.inherit_env"] is True and start["sluice.env_passed"] == [], start
    # a bad name is a usage error
    r = w.sluice_run(["true"], profile=None, extra=["--env", "A-B=1"])
    assert r.rc == 2 and "not a variable name" in r.stderr, r
