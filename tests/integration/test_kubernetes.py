"""deploy/kubernetes/: the manifests are decoded by kubectl into the API's
own types (`kubectl create --dry-run=client --validate=false`, nothing sent
anywhere: kubectl's discovery is answered by a stub on loopback that knows
the three kinds), and what they say is checked against sluice itself: the
daemon's flags exist, the policies in the ConfigMap pass `sluice policy
check` and are valid policy names, the DaemonSet is not privileged and adds
exactly the capabilities the daemon uses (the systemd unit's set).
"""
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

import world as W

DEPLOY = os.path.join(W.ROOT, "deploy", "kubernetes")
UNIT = os.path.join(W.ROOT, "packaging", "sluice.service")

DISCOVERY = {
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "configmaps", "singularName": "", "namespaced": True, "kind": "ConfigMap",
         "verbs": ["create", "get", "list"]},
        {"name": "namespaces", "singularName": "", "namespaced": False, "kind": "Namespace",
         "verbs": ["create", "get", "list"]}]},
    "/apis/apps/v1": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [
        {"name": "daemonsets", "singularName": "", "namespaced": True, "kind": "DaemonSet",
         "verbs": ["create", "get", "list"]}]},
}


class Discovery(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = DISCOVERY.get(self.path.split("?")[0])
        data = json.dumps(body).encode() if body else b'{"kind":"Status","code":404}'
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


def kubectl_objects():
    kubectl = shutil.which("kubectl")
    if not kubectl:
        raise W.Skip("kubectl not installed (make deps: Debian's kubernetes-client)")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Discovery)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    home = tempfile.mkdtemp(prefix="sluice-kube-")
    try:
        cfg = os.path.join(home, "config")
        with open(cfg, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: stub\n  cluster:\n    server: http://127.0.0.1:%d\n"
                    "contexts:\n- name: stub\n  context:\n    cluster: stub\ncurrent-context: stub\n"
                    % srv.server_address[1])
        r = subprocess.run([kubectl, "--kubeconfig", cfg, "--cache-dir", os.path.join(home, "cache"), "create",
                            "--dry-run=client", "--validate=false", "-o", "json", "-f", DEPLOY],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ, HOME=home))
        assert r.returncode == 0, r.stderr
        # one JSON object per manifest (newer kubectl), or one List (older)
        objs, text, dec = [], r.stdout.strip(), json.JSONDecoder()
        while text:
            o, end = dec.raw_decode(text)
            objs += o["items"] if o.get("kind") == "List" else [o]
            text = text[end:].strip()
        return objs
    finally:
        srv.shutdown()
        shutil.rmtree(home, ignore_errors=True)


def test_manifests_decode_and_say_what_sluice_does(w):
    objs = kubectl_objects()
    kinds = {o["kind"]: o for o in objs}
    assert set(kinds) == {"Namespace", "ConfigMap", "DaemonSet"}, list(kinds)
    ds, cm = kinds["DaemonSet"], kinds["ConfigMap"]
    assert ds["metadata"]["namespace"] == cm["metadata"]["namespace"] == kinds["Namespace"]["metadata"]["name"]
    spec = ds["spec"]["template"]["spec"]
    assert spec["hostPID"] is True and not spec.get("hostNetwork"), spec
    c = [c for c in spec["containers"] if c["name"] == "sluice"][0]
    sc = c["securityContext"]
    assert sc["privileged"] is False and sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"], sc
    # exactly the systemd unit's bounding set, less what only the commands of
    # users who are not root need (run as them: no such users in a pod)
    unit = open(UNIT).read()
    bound = set(re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split())
    bound -= {"CAP_SETUID", "CAP_SETGID", "CAP_SYS_CHROOT"}
    assert sorted("CAP_" + x for x in sc["capabilities"]["add"]) == sorted(bound), (sc, bound)
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols[mounts["/sys/fs/bpf"]["name"]]["hostPath"]["path"] == "/sys/fs/bpf"
    assert mounts["/sys/fs/bpf"]["mountPropagation"] == "HostToContainer"
    assert mounts["/sys/fs/cgroup"].get("readOnly") is True
    assert vols[mounts["/run/sluice"]["name"]]["hostPath"]["path"] == "/run/sluice"
    assert vols[mounts["/etc/sluice/policies"]["name"]]["configMap"]["name"] == cm["metadata"]["name"]
    assert c["livenessProbe"]["exec"]["command"] == ["sluice", "status"]
    # the daemon knows every flag the manifest gives it
    assert c["command"] == ["sluice", "daemon"], c["command"]
    helptext = subprocess.run([W.SLUICE, "daemon", "--help"], capture_output=True, text=True).stdout
    for a in c["args"]:
        assert a.split("=")[0] in helptext, a
    assert "--events=/dev/stdout" in c["args"] and "--policy-dir=/etc/sluice/policies" in c["args"]
    # the init container's command is one sluice has
    init = spec["initContainers"][0]
    assert "sluice oci-hook --print-config" in " ".join(init["args"])
    assert subprocess.run([W.SLUICE, "oci-hook", "--print-config"], capture_output=True).returncode == 0
    # every policy of the ConfigMap: a valid name, and `sluice policy check` passes it
    assert cm["data"], cm
    for key, text in cm["data"].items():
        assert re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,59}\.yaml", key), key
        path = w.write("k8s-" + key, text)
        r = subprocess.run([W.SLUICE, "policy", "check", path], capture_output=True, text=True)
        assert r.returncode == 0, (key, r.stdout, r.stderr)
