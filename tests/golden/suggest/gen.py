"""Writes the logs of the suggest golden test (tests/integration/test_audit.py,
test_suggest_golden_outputs): python3 gen.py tests/golden/suggest"""
import json, sys
D="e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
class Log:
    def __init__(s, mode, run="job-1"): s.t=0; s.lines=[]; s.mode=mode; s.run=run
    def line(s, **f):
        o={"@timestamp":"2026-11-30T06:%02d:%02d.000000Z"%(10+s.t//60, s.t%60),
           "sluice.sandbox":s.run,"sluice.policy_name":"default-deny","rule.ruleset":D,
           "sluice.policy_sha256":D,"sluice.mode":s.mode}
        o.update(f); s.t+=1; s.lines.append(json.dumps(o, separators=(",",":")))
    def v(s, deny): return "deny" if deny else ("would_deny" if s.mode=="audit" else "allow")
    def tls(s, host, port, deny=False):
        s.line(**{"sluice.component":"proxy","event.kind":"event","event.dataset":"sluice.proxy","event.action":"proxy-tls",
          "event.outcome":"unknown","event.reason":"host_not_allowed" if deny or s.mode=="audit" else "allowed",
          "sluice.verdict":s.v(deny),"sluice.form":"transparent","url.domain":host,"tls.client.server_name":host,
          "sluice.orig_dst":"203.0.113.10:%d"%port})
    def connect(s, host, port, withport=True):
        f={"sluice.component":"proxy","event.dataset":"sluice.proxy","event.action":"proxy-connect","event.outcome":"unknown",
          "event.reason":"host_not_allowed","sluice.verdict":"would_deny","sluice.form":"explicit","url.domain":host,
          "http.request.method":"CONNECT","destination.ip":"192.0.2.10","sluice.orig_dst":"127.0.0.1:40000"}
        if withport: f["destination.port"]=port
        s.line(**f)
    def http(s, method, url, host, reason="host_not_allowed", verdict="would_deny"):
        s.line(**{"sluice.component":"proxy","event.dataset":"sluice.proxy","event.action":"proxy-http","event.outcome":"unknown",
          "event.reason":reason,"sluice.verdict":verdict,"sluice.form":"explicit","url.full":url,"url.domain":host,
          "http.request.method":method})
    def kernel(s, ip, port, proto="tcp", deny=False, reason=None, **extra):
        f={"event.kind":"event","event.category":"network","event.action":"egress-denied" if deny else "egress-would-deny",
          "event.outcome":"failure" if deny else "unknown","event.reason":reason or ("tcp_port_not_allowed" if proto=="tcp" else "udp_not_allowed"),
          "sluice.reason_code":1,"sluice.verdict":"deny" if deny else "would_deny","process.pid":7,"process.name":"probe",
          "destination.ip":ip,"destination.port":port,"network.transport":proto,"sluice.hook":"connect4","sluice.seq":s.t}
        f.update(extra); s.line(**f)
    def dns(s, name, qtype, ips, verdict="would_deny", reason="name_not_allowed", **extra):
        ans=[{"name":name,"type":"AAAA" if ":" in ip else "A","class":"IN","ttl":60,"data":ip} for ip in ips]
        f={"sluice.component":"resolver","event.kind":"event","event.dataset":"sluice.resolver","event.action":"dns-query",
          "event.outcome":"unknown","event.reason":reason,"sluice.verdict":verdict,"dns.id":1,"dns.question.name":name,
          "dns.question.type":qtype,"dns.question.class":"IN","dns.answers":ans,"network.transport":"udp"}
        f.update(extra); s.line(**f)
    def life(s): s.line(**{"event.kind":"state","event.action":"sandbox-start","message":"sandbox started"})

a=Log("audit")
a.life()
for h in ["a.pkg.example.org","b.pkg.example.org","c.pkg.example.org","api.example.com","gist.github.com","x.github.io","y.github.io","z.github.io"]:
    a.tls(h, 443); a.tls(h,443)
a.tls("api.example.com", 8443)
a.connect("registry.example.net", 443); a.connect("registry.example.net", 8443)
a.connect("noport.example.net", 443, withport=False)
a.http("GET","http://deb.example.net/debian/dists/bookworm/Release","deb.example.net")
a.http("GET","http://deb.example.net/debian/pool/main/j/jq.deb","deb.example.net")
a.http("HEAD","http://deb.example.net/debian/pool/main/x.deb","deb.example.net")
a.http("POST","http://deb.example.net:8080/upload/x?y=1","deb.example.net")
a.http("GET","http://files.example.com/","files.example.com")
a.http("PROPFIND","http://dav.example.com/x","dav.example.com")
a.http("GET","http://192.0.2.7/x","192.0.2.7",reason="ip_literal")
a.dns("direct.example.com","A",["198.51.100.20"]); a.kernel("198.51.100.20",443)
a.dns("db.example.com","A",["198.51.100.30"]); a.kernel("198.51.100.30",5432)
a.dns("v6.example.com","AAAA",["2001:db8::5"]); a.kernel("2001:db8::5",443)
a.kernel("203.0.113.50",53,"udp"); a.kernel("203.0.113.50",53,"udp"); a.kernel("203.0.113.51",9000); a.kernel("203.0.113.51",9001)
a.dns("txt.example.com","TXT",[]); a.tls("txt.example.com",443)
a.dns("unused.example.com","A",["198.51.100.99"])
a.dns("refused.example.com","A",[],verdict="deny")
a.dns("tunnel.example.com","TXT",[],**{"sluice.dns_tunnel_suspect":True,"sluice.dns_tunnel_reason":"entropy"}); a.tls("tunnel.example.com",443)
a.kernel("203.0.113.1",0)
a.kernel("192.0.2.1",80,reason="raw_socket")
a.kernel("192.0.2.1",80,reason="entry_expired")
a.kernel("192.0.2.1",5432,reason="program_not_allowed",**{"process.executable":"/usr/bin/python3.11"})
a.http("GET","http://api.example.com:8081/x","api.example.com",reason="program_not_allowed",verdict="deny")
a.kernel("192.0.2.1",80, **{"sluice.canary":True})
a.line(**{"event.kind":"event","event.action":"egress-denied","event.reason":"unix_not_allowed","sluice.verdict":"deny","sluice.hook":"connect_unix","destination.address":"/run/nscd/socket"})
a.line(**{"event.action":"events_lost","sluice.events_lost":3})
open(sys.argv[1]+"/audit.jsonl","w").write("\n".join(a.lines)+"\n" + '{"bad json\n' + 'not json\n' + '[1,2]\n' + '{"foo":1}\n\n' + '{"@timestamp":"x","sluice.mode":"audit"}\n' + '{"@timestamp":"2026-11-30T06:10:00Z"')
b=Log("enforce","run-2")
b.tls("api.example.com",443); b.tls("api.example.com",8443,deny=True); b.tls("new.example.com",443,deny=True)
b.http("DELETE","http://deb.example.net/debian/x","deb.example.net",reason="method_not_allowed",verdict="deny")
b.kernel("198.51.100.10",5432,deny=True); b.kernel("198.51.100.10",5433,deny=True); b.kernel("198.51.100.11",6000,deny=True)
b.dns("mx.example.com","MX",[],verdict="allow",reason="allowed"); 
open(sys.argv[1]+"/enforce.jsonl","w").write("\n".join(b.lines)+"\n")
open(sys.argv[1]+"/against.yaml","w").write("""version: 1
name: job
# a comment
allow:
  - host: api.example.com
    ports: [443]
    why: model API
  - url: http://deb.example.net/debian/
    why: apt
  - cidr: 198.51.100.10/32
    ports: [5432]
    protocol: tcp
    why: database
  - host: mx.example.com
    ports: [25]
    why: mail
""")
