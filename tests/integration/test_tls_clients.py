"""TLS inspection (issue 12) with more real clients, none given a CA flag of
its own (`sluice run` sets PIP_CERT, GIT_SSL_CAINFO, REQUESTS_CA_BUNDLE,
NODE_EXTRA_CA_CERTS): pip from a PEP 503 simple index, git clone and push
over smart HTTP, python requests, node through the explicit proxy.

The world is test_tls's (its origin on :8443, DNS, the origin's self-signed
certificate given to the proxy with --upstream-ca), plus forge_origin.py on
api.example.com:9443 with the same certificate: a simple index under
/simple/ with wheels under /files/ (and one under /private/, which no entry
covers), and `git http-backend` under /git/.  curl --http2 (transparent and
through HTTPS_PROXY, each stream decided) is test_tls_h2.py's; curl, wget,
node fetch and git ls-remote transparently are test_tls.py's.
"""
import base64
import hashlib
import json
import os
import subprocess
import zipfile

import world as W
import test_tls as T

FORGE = 9443
BASE = "https://api.example.com:%d" % FORGE
POLICY = """\
version: 1
name: tls-clients
allow:
  - url: %(b)s/simple/
    why: the package index
  - url: %(b)s/files/
    why: the index's wheels (not /private/)
  - url: %(b)s/git/
    why: clone and fetch; GET and HEAD only, so no push
  - url: %(b)s/git/repo.git/git-upload-pack
    methods: [POST]
    why: a fetch's negotiation is a POST
""" % {"b": BASE}
PIP = ("/usr/bin/python3 -m pip install --disable-pip-version-check --no-cache-dir --no-input "
       "--index-url %s/simple/ --no-deps --target %%s %%s" % BASE)
GIT = "GIT_TERMINAL_PROMPT=0 git -c user.name=t -c user.email=t@example.com"


def wheel(path, name, value):
    """A minimal pure-python wheel (PEP 427): a module and its dist-info."""
    dist = "%s-1.0.dist-info" % name
    files = {
        "%s/__init__.py" % name: "VALUE = %r\n" % value,
        dist + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name,
        dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: test_tls_clients\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for f, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (f, digest, len(text))
    files[dist + "/RECORD"] = record + dist + "/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for f, text in files.items():
            z.writestr(f, text)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def forge(w):
    """The index and git host, started once per world; returns test_tls's env."""
    e = T.env(w)
    if hasattr(w, "forge"):
        return e
    root = os.path.join(w.tmp, "forge")
    for d in ("simple/sluicedemo", "simple/sluicehidden", "files", "private", "git"):
        os.makedirs(os.path.join(root, d))
    for name, where in (("sluicedemo", "files"), ("sluicehidden", "private")):
        whl = "%s-1.0-py3-none-any.whl" % name
        sha = wheel(os.path.join(root, where, whl), name, "from the test index")
        with open(os.path.join(root, "simple", name, "index.html"), "w") as f:
            f.write('<!DOCTYPE html><html><body><a href="../../%s/%s#sha256=%s">%s</a></body></html>\n'
                    % (where, whl, sha, whl))
    with open(os.path.join(root, "simple", "index.html"), "w") as f:
        f.write('<!DOCTYPE html><html><body><a href="sluicedemo/">sluicedemo</a>'
                '<a href="sluicehidden/">sluicehidden</a></body></html>\n')
    src = os.path.join(w.tmp, "repo-src")
    W.sh("git", "init", "-q", "-b", "main", src)
    with open(os.path.join(src, "README"), "w") as f:
        f.write("cloned through sluice\n")
    W.sh("git", "-C", src, "add", "README")
    W.sh("git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first")
    bare = os.path.join(root, "git", "repo.git")
    W.sh("git", "clone", "-q", "--bare", src, bare)
    # pushes would be accepted by the origin: only the policy stops them
    W.sh("git", "-C", bare, "config", "http.receivepack", "true")
    w.forge_log = os.path.join(w.tmp, "forge.jsonl")
    w.start_server([os.path.join(os.path.dirname(os.path.abspath(__file__)), "forge_origin.py"),
                    "--port", str(FORGE), "--cert", e.cert, "--key", e.key, "--root", root,
                    "--log", w.forge_log], name="forge")
    w.forge = root
    w.forge_policy = w.write("tls-clients-policy.yaml", POLICY)
    return e


def forge_seen(w, mark=0):
    """(method, path) of the requests that reached forge_origin, from the
    mark-th on (forge_mark: how many so far)."""
    try:
        with open(w.forge_log) as f:
            recs = [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        recs = []
    return [(r["method"], r["path"]) for r in recs if r.get("event") == "request"][mark:]


def forge_mark(w):
    return len(forge_seen(w))


def test_pip_installs_from_an_https_simple_index(w):
    forge(w)
    m = forge_mark(w)
    d = os.path.join(w.tmp, "pip")
    script = ""
    for how, env in (("transparent", "unset HTTPS_PROXY https_proxy; "),
                     ("proxy", 'export HTTPS_PROXY="$SLUICE_PROXY"; ')):
        t = "%s/%s" % (d, how)
        script += ("(%s%s > %s.log 2>&1; echo PIP_RC=$? %s; "
                   "/usr/bin/python3 -c 'import sys; sys.path.insert(0, \"%s\"); import sluicedemo; "
                   "print(\"VALUE\", sluicedemo.VALUE, \"%s\")'); "
                   % (env, PIP % (t, "sluicedemo"), t, how, t, how))
    script += 'echo "PIPENV $PIP_CERT"; '
    # a wheel the index links to under /private/, which no entry covers
    script += "%s > %s/hidden.log 2>&1; echo HIDDEN_RC=$?; cat %s/hidden.log" % (
        PIP % (d + "/hidden", "sluicehidden"), d, d)
    os.makedirs(d)
    r = T.run(w, script, policy=w.forge_policy, timeout=240)
    assert "PIP_RC=0 transparent" in r.stdout and "PIP_RC=0 proxy" in r.stdout, (r, open(d + "/transparent.log").read())
    assert "VALUE from the test index transparent" in r.stdout, r
    assert "VALUE from the test index proxy" in r.stdout, r
    assert "PIPENV /" in r.stdout, r   # sluice gave pip its bundle; the commands above never named it
    assert "HIDDEN_RC=0" not in r.stdout and "HIDDEN_RC=" in r.stdout, r
    assert "403" in r.stdout, r
    seen = forge_seen(w, m)
    paths = [p for _, p in seen]
    assert paths.count("/files/sluicedemo-1.0-py3-none-any.whl") == 2, seen
    assert "/simple/sluicehidden/" in paths, seen
    assert not [p for p in paths if p.startswith("/private")], seen
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    den = [l for l in lines if l["url.full"] == BASE + "/private/sluicehidden-1.0-py3-none-any.whl"]
    assert den and all(l["event.reason"] == "path_not_allowed" and l["http.response.status_code"] == 403
                       for l in den), lines
    forms = {l["sluice.form"] for l in lines if l["url.full"].endswith("/files/sluicedemo-1.0-py3-none-any.whl")}
    assert forms == {"transparent", "explicit"}, lines


def test_git_clone_over_https_and_push_refused(w):
    forge(w)
    m = forge_mark(w)
    d = os.path.join(w.tmp, "git")
    os.makedirs(d)
    url = BASE + "/git/repo.git"
    r = T.run(w, "%s clone -q %s %s/t 2>&1; echo CLONE_RC=$? transparent; cat %s/t/README; "
              'HTTPS_PROXY="$SLUICE_PROXY" %s clone -q %s %s/p 2>&1; echo CLONE_RC=$? proxy; cat %s/p/README; '
              "cd %s/t && echo more >> README && %s commit -qam second && GIT_CURL_VERBOSE=1 %s push origin main > %s/push.log 2>&1; "
              "echo PUSH_RC=$?" % (GIT, url, d, d, GIT, url, d, d, d, GIT, GIT, d), policy=w.forge_policy)
    assert "CLONE_RC=0 transparent" in r.stdout and "CLONE_RC=0 proxy" in r.stdout, r
    assert r.stdout.count("cloned through sluice") == 2, r
    assert "PUSH_RC=0" not in r.stdout and "PUSH_RC=" in r.stdout, r
    push = open(d + "/push.log").read()
    # git says HTTP 403 (git 2.39 prints no reason phrase for a refused RPC
    # POST, and its curl speaks HTTP/2 to the proxy, which has none); its
    # curl trace shows sluice's answer and why
    assert "error: RPC failed; HTTP 403" in push, push
    assert "recv header: x-sluice-denied: method_not_allowed" in push.lower(), push
    seen = forge_seen(w, m)
    # protocol v2: ls-refs and fetch, two POSTs a clone
    assert seen.count(("POST", "/git/repo.git/git-upload-pack")) == 4, seen
    assert ("GET", "/git/repo.git/info/refs?service=git-receive-pack") in seen, seen
    assert not [s for s in seen if "git-receive-pack" in s[1] and s[0] == "POST"], seen
    # the origin's repository is unchanged
    log = W.sh("git", "-C", os.path.join(w.forge, "git", "repo.git"), "log", "--oneline", "main").stdout
    assert len(log.splitlines()) == 1, log
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    den = [l for l in lines if l["url.full"] == url + "/git-receive-pack"]
    assert len(den) == 1 and den[0]["event.reason"] == "method_not_allowed", lines
    assert den[0]["http.request.method"] == "POST" and den[0]["http.response.status_code"] == 403, den
    forms = {l["sluice.form"] for l in lines if l["url.full"] == url + "/git-upload-pack"}
    assert forms == {"transparent", "explicit"}, lines


REQUESTS = """\
import sys
import requests
for u in sys.argv[2:]:
    r = requests.get(u, timeout=10)
    print("CODE", r.status_code, sys.argv[1], r.headers.get("X-Sluice-Denied"))
"""


def test_python_requests_transparent_and_through_the_proxy(w):
    # Debian's python3-requests (DEBIAN_PACKAGES): missing is a failure, not a skip
    p = subprocess.run(["/usr/bin/python3", "-c", "import requests"], capture_output=True, text=True)
    assert p.returncode == 0, "python3-requests is not installed (make deps): %s" % p.stderr
    e = T.env(w)
    m = e.mark()
    base = "https://api.example.com:%d" % T.TLS
    script = w.write("rq_get.py", REQUESTS)
    r = T.run(w, "unset HTTPS_PROXY https_proxy; /usr/bin/python3 %s transparent %s/pub/rq-t %s/private/rq-t; "
              'HTTPS_PROXY="$SLUICE_PROXY" /usr/bin/python3 %s proxy %s/pub/rq-p %s/private/rq-p'
              % (script, base, base, script, base, base))
    assert r.rc == 0, r
    assert T.curl_codes(r) == [["200", "transparent None"], ["403", "transparent path_not_allowed"],
                               ["200", "proxy None"], ["403", "proxy path_not_allowed"]], r
    assert [g["path"] for g in e.arrived(m)] == ["/pub/rq-t", "/pub/rq-p"]
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    assert sorted((l["url.full"].rsplit("/", 2)[1:], l["sluice.form"]) for l in lines) == [
        (["private", "rq-p"], "explicit"), (["private", "rq-t"], "transparent"),
        (["pub", "rq-p"], "explicit"), (["pub", "rq-t"], "transparent")], lines


# node 18's fetch ignores HTTPS_PROXY: an explicit CONNECT, then TLS over the
# tunnel, trusting the sandbox CA through NODE_EXTRA_CA_CERTS only
NODE_CONNECT = """\
const http = require('http'), tls = require('tls');
const proxy = new URL(process.env.SLUICE_PROXY), port = %d;
function get(path) {
  return new Promise(done => {
    const say = (...a) => { console.log('CODE', ...a); done(); };
    const q = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT',
                            path: 'api.example.com:' + port});
    q.on('connect', (res, sock) => {
      if (res.statusCode !== 200) return say(res.statusCode, 'connect');
      const t = tls.connect({socket: sock, servername: 'api.example.com'}, () =>
        t.write('GET ' + path + ' HTTP/1.1\\r\\nHost: api.example.com:' + port + '\\r\\nConnection: close\\r\\n\\r\\n'));
      let got = '';
      t.on('data', c => { got += c; if (got.includes('\\r\\n')) { t.destroy(); say(got.split(' ')[1], path); } });
      t.on('error', x => say('error', String(x)));
    });
    q.on('error', x => say('error', String(x)));
    q.end();
  });
}
get('/pub/node-connect').then(() => get('/private/node-connect'));
"""


def test_node_through_the_proxy_with_connect(w):
    e = T.env(w)
    m = e.mark()
    script = w.write("connect.js", NODE_CONNECT % T.TLS)
    r = T.run(w, "node %s" % script)
    assert r.rc == 0, r
    assert T.curl_codes(r) == [["200", "/pub/node-connect"], ["403", "/private/node-connect"]], r
    assert [g["path"] for g in e.arrived(m)] == ["/pub/node-connect"]
    lines = [l for l in r.proxy if l.get("sluice.inspected")]
    assert sorted((l["url.full"], l["event.reason"], l["sluice.form"]) for l in lines) == [
        ("https://api.example.com:%d/private/node-connect" % T.TLS, "path_not_allowed", "explicit"),
        ("https://api.example.com:%d/pub/node-connect" % T.TLS, "allowed", "explicit")], lines
