/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice.h - wire types shared by the BPF programs (bpf/sluice.bpf.c) and
 * user space (loader, proxy, resolver).  Every struct here crosses the
 * kernel/user boundary through a map or the ring buffer, so its size is
 * pinned with _Static_assert and fields are never reordered or reused.
 *
 * Byte order: addresses are kept in network byte order exactly as the kernel
 * gives them (struct bpf_sock_addr user_ip4/user_ip6); ports are kept in HOST
 * byte order everywhere in these structs (the BPF side converts once).
 *
 * Rule semantics (what the programs attached to a sandbox's cgroup do)
 * --------------------------------------------------------------------
 * The sandbox is deny-by-default.  For every outbound attempt the kernel
 * asks, in this order:
 *
 *  1. Is the destination (address, protocol, port) inside a `cidr` entry of
 *     the policy?  -> SLUICE_VERDICT_ALLOW, untouched.
 *       cidr 198.51.100.0/24 tcp 5432:  connect(198.51.100.7:5432)  allowed
 *                                       connect(198.51.100.7:5433)  not by 1.
 *  2. Is it the sandbox's own proxy or resolver address?  -> ALLOW (explicit
 *     proxy use: HTTP_PROXY clients connect to the proxy directly; the
 *     connection is still recorded so the proxy knows who is talking).
 *  3. UDP or TCP to port 53 (any address)?  -> REDIRECT to the sandbox
 *     resolver; recvmsg/getpeername make the reply look as if it came from
 *     the address the client asked.
 *  4. TCP to a port that some `host`/`url` entry names?  -> REDIRECT to the
 *     sandbox proxy; the original destination is kept (socket storage, then
 *     the flow map at TCP_CONNECT time) so the proxy can recover it.
 *       host api.example.com 443:  connect(203.0.113.5:443)  redirected
 *                                  connect(203.0.113.5:22)   denied, reason 2
 *     Before any redirect, and before a direct use of the proxy's or
 *     resolver's address (2, 3, 4), the program looks up the socket that
 *     would receive the connection or datagram (bpf_sk_lookup_tcp/_udp in
 *     the caller's netns) and checks that it carries sluice's listener mark
 *     (map sluice_listener_sk, set by the loader on the sockets it made).
 *     If the proxy or resolver died and another process bound the freed
 *     port, the attempt is denied with reason 10 instead of reaching it.
 *       proxy killed, port rebound by a squatter:
 *                                  connect(203.0.113.5:443)  denied, reason 10
 *  5. Anything else -> SLUICE_VERDICT_DENY with a stable reason code and one
 *     ring-buffer event.  UDP is denied quickly (EPERM) so that QUIC clients
 *     fall back to TCP.
 *
 * IPv4-mapped IPv6 destinations (::ffff:a.b.c.d) get exactly the IPv4 verdict.
 * Sockets other than TCP/UDP over IPv4/IPv6 (raw, ICMP "ping", SCTP, MPTCP,
 * UDP-Lite) are refused at creation.  A cgroup_skb/egress backstop drops any
 * packet whose destination none of the rules above allows.
 *
 * Where the BPF LSM is active (`bpf` in /sys/kernel/security/lsm), global
 * LSM programs judge by the *calling task's* cgroup, whoever made the
 * socket: a task inside the sandbox may use only inet sockets made inside
 * it (marked at socket creation, or made in the task's own cgroup before
 * the attach), may connect or send over unix sockets only to sockets made
 * inside it, and may create sockets of the families AF_UNIX, AF_INET,
 * AF_INET6 and AF_NETLINK (NETLINK_ROUTE, NETLINK_SOCK_DIAG) only.
 *       fd of a UDP socket passed in over SCM_RIGHTS: sendto()  denied, reason 11
 *       socket(AF_VSOCK, ...)                                 denied, reason 12
 *       connect() to /run/host-daemon.sock (made outside)     denied, reason 13
 *
 * In audit mode every DENY becomes "would deny": the event is emitted with
 * SLUICE_VERDICT_WOULD_DENY and the attempt proceeds unchanged, except the
 * reasons marked ALWAYS below, which no policy could ever allow.
 */
#ifndef SLUICE_H
#define SLUICE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Verdicts.  Returned by the cgroup programs as SYS_PROCEED / SYS_REJECT. */
#define SYS_REJECT  0
#define SYS_PROCEED 1

enum sluice_verdict {
	SLUICE_VERDICT_ALLOW      = 1,
	SLUICE_VERDICT_REDIRECT   = 2,
	SLUICE_VERDICT_DENY       = 3,
	SLUICE_VERDICT_WOULD_DENY = 4, /* audit mode */
};

/*
 * Denial reasons.  Stable and never reused: detection pipelines key on the
 * number.  Add new ones at the end; retire by leaving a gap.
 * The string names (sluice_reason_name() in user space) are stable too.
 */
enum sluice_reason {
	SLUICE_REASON_NONE              = 0,
	SLUICE_REASON_TCP_PORT          = 1, /* "tcp_port_not_allowed": no cidr, no host/url entry for the port */
	SLUICE_REASON_UDP               = 2, /* "udp_not_allowed": UDP that is neither DNS nor an allowed cidr */
	SLUICE_REASON_NO_RESOLVER       = 3, /* "dns_no_resolver": DNS while the sandbox has no resolver */
	SLUICE_REASON_NO_PROXY          = 4, /* "no_proxy": proxied port while the sandbox has no proxy */
	SLUICE_REASON_SOCK_RAW          = 5, /* "raw_socket" (ALWAYS) */
	SLUICE_REASON_SOCK_ICMP         = 6, /* "icmp_socket" (ALWAYS): ping sockets */
	SLUICE_REASON_SOCK_PROTO        = 7, /* "socket_protocol" (ALWAYS): SCTP, MPTCP, UDP-Lite, ... */
	SLUICE_REASON_BACKSTOP          = 8, /* "egress_backstop": packet dropped by cgroup_skb/egress */
	SLUICE_REASON_PROTO             = 9, /* "protocol_not_allowed": connect() of an unexpected protocol */
	SLUICE_REASON_REDIRECT_TARGET   = 10, /* "redirect_target_not_ours" (ALWAYS): the socket at the proxy's or
					      * resolver's address is not the one sluice made (gone, or squatted) */
	SLUICE_REASON_FOREIGN_SOCKET    = 11, /* "foreign_socket" (ALWAYS, BPF LSM): an inet socket made outside the
					      * sandbox (passed in over SCM_RIGHTS, inherited) used from inside */
	SLUICE_REASON_SOCKET_FAMILY     = 12, /* "socket_family" (ALWAYS, BPF LSM): socket() of a family sluice does
					      * not judge (vsock, packet, netlink other than route/diag, xdp, ...) */
	SLUICE_REASON_UNIX_OUTSIDE      = 13, /* "unix_outside_sandbox" (ALWAYS, BPF LSM): a unix socket connect or
					      * send to a socket made outside the sandbox (a host daemon) */
	SLUICE_REASON_UNIX_NOT_ALLOWED  = 14, /* "unix_not_allowed": a unix connect or sendto of a path or abstract
					      * name no `unix:` entry names (cgroup/connect_unix, 6.7+) */
	SLUICE_REASON_ENTRY_EXPIRED     = 15, /* "entry_expired": only a cidr entry whose `expires:` has passed
					      * would have allowed it (CLOCK_TAI, bpf_ktime_get_tai_ns, 6.1+) */
	SLUICE_REASON_PROGRAM           = 16, /* "program_not_allowed": only a cidr entry whose `programs:` does not
					      * name the caller's executable would have allowed it */
	SLUICE_REASON__MAX,
};

/* Which program saw the attempt. Stable numbers, like the reasons. */
enum sluice_hook {
	SLUICE_HOOK_CONNECT4     = 1,
	SLUICE_HOOK_CONNECT6     = 2,
	SLUICE_HOOK_SENDMSG4     = 3,
	SLUICE_HOOK_SENDMSG6     = 4,
	SLUICE_HOOK_SOCK_CREATE  = 5,
	SLUICE_HOOK_SKB_EGRESS   = 6,
	SLUICE_HOOK_LSM_CONNECT  = 7,  /* lsm/socket_connect */
	SLUICE_HOOK_LSM_SENDMSG  = 8,  /* lsm/socket_sendmsg */
	SLUICE_HOOK_LSM_CREATE   = 9,  /* lsm/socket_create */
	SLUICE_HOOK_LSM_UNIX     = 10, /* lsm/unix_stream_connect, lsm/unix_may_send */
	SLUICE_HOOK_CONNECT_UNIX = 11, /* cgroup/connect_unix */
	SLUICE_HOOK_SENDMSG_UNIX = 12, /* cgroup/sendmsg_unix */
	SLUICE_HOOK__MAX,
};

/* Per-CPU counters (map sluice_stats, one __u64 per CPU per index). */
enum sluice_stat {
	SLUICE_STAT_ALLOWED     = 0,
	SLUICE_STAT_REDIRECTED  = 1,
	SLUICE_STAT_DENIED      = 2,
	SLUICE_STAT_WOULD_DENY  = 3,
	SLUICE_STAT_EVENTS_LOST = 4, /* ring-buffer reservation failures */
	SLUICE_STAT_BACKSTOP    = 5, /* packets dropped by the egress backstop */
	SLUICE_STAT_UNIX_QUIET  = 6, /* unix connects refused without an event (map sluice_unix_quiet) */
	SLUICE_STAT__MAX,
};

/* Protocol numbers as in <netinet/in.h>; repeated so this header needs no libc. */
#define SLUICE_IPPROTO_TCP 6
#define SLUICE_IPPROTO_UDP 17
#define SLUICE_AF_INET     2
#define SLUICE_AF_INET6    10

/*
 * Allowlist of direct (cidr) destinations.  LPM trie keys carry the policy
 * generation in front of the address so that a reload can write a whole new
 * generation beside the running one and switch with one 32-bit store:
 * prefixlen = 32 (generation) + the CIDR's prefix length.
 */
struct sluice_lpm4_key {
	__u32 prefixlen;
	__u32 gen;     /* host byte order (both sides agree); all 32 bits are in the prefix */
	__u32 addr;    /* network byte order */
};
_Static_assert(sizeof(struct sluice_lpm4_key) == 12, "sluice_lpm4_key size");

struct sluice_lpm6_key {
	__u32 prefixlen;
	__u32 gen;
	__u32 addr[4]; /* network byte order */
};
_Static_assert(sizeof(struct sluice_lpm6_key) == 24, "sluice_lpm6_key size");

/*
 * Full-length cidr entries (/32, /128) are not in the tries but in hash
 * maps by exact address (sluice_exact4/6): looked up first, in constant
 * time, they answer for a destination that has one (a full-length prefix is
 * the longest match there can be), so a policy of many single addresses
 * (a reputation list, a fleet of hosts) costs a connect what a small one
 * does; only a destination without one walks the trie of the shorter
 * prefixes.  The value is the same as the trie's (struct sluice_cidr_rules,
 * the shorter prefixes' rules flattened in).  A hash map gives a deleted
 * element's memory to its next insert at once (a trie waits for RCU
 * readers), so a reload waits for a grace period before it writes here,
 * and a kernel where it cannot wait has every entry in the tries
 * (loader/sandbox.c rcu_wait_ok).
 */
struct sluice_exact4_key {
	__u32 gen;     /* host byte order */
	__u32 addr;    /* network byte order */
};
_Static_assert(sizeof(struct sluice_exact4_key) == 8, "sluice_exact4_key size");

struct sluice_exact6_key {
	__u32 gen;
	__u32 addr[4]; /* network byte order */
};
_Static_assert(sizeof(struct sluice_exact6_key) == 20, "sluice_exact6_key size");

#define SLUICE_MAX_PORT_RULES 16

struct sluice_port_rule {
	__u16 lo;      /* host byte order, inclusive */
	__u16 hi;      /* host byte order, inclusive */
	__u8  proto;   /* SLUICE_IPPROTO_TCP or SLUICE_IPPROTO_UDP */
	__u8  flags;   /* SLUICE_RULE_*; 0 in policies without `programs:` (was padding) */
	__u16 rule;    /* index of the policy entry (for logs, and key of sluice_prog_allow), 0-based */
	__u32 expires_s; /* `expires:` of the entry as CLOCK_TAI seconds (the loader adds the TAI
			  * offset to the Unix time); from that second on the rule allows
			  * nothing; 0: never expires */
};
_Static_assert(sizeof(struct sluice_port_rule) == 12, "sluice_port_rule size");

/*
 * SLUICE_RULE_PROGRAMS: the entry has `programs:`; the rule allows only a
 * caller whose executable (device and inode of current->mm->exe_file, read
 * in the connect/sendmsg hook) is in map sluice_prog_allow under
 * (generation, rule).  The egress backstop sees packets, not tasks: for it
 * such a rule allows its destinations (the hooks judged the program).
 *   cidr 198.51.100.0/24 tcp 443 programs [/usr/bin/curl]:
 *       curl:    connect(198.51.100.7:443)  allowed
 *       python3: connect(198.51.100.7:443)  denied, reason 16
 */
#define SLUICE_RULE_PROGRAMS (1u << 0)

/* Key of map sluice_prog_allow (hash; value: __u32, unused): one per
 * program of an entry with `programs:`, per generation. */
struct sluice_prog_key {
	__u32 gen;     /* host byte order */
	__u16 rule;    /* the entry's index, as in struct sluice_port_rule */
	__u16 pad;
	__u32 dev;     /* the executable's device as the kernel encodes it (MKDEV: major << 20 | minor;
			* user space converts st_dev) */
	__u32 pad2;
	__u64 ino;     /* its inode number */
};
_Static_assert(sizeof(struct sluice_prog_key) == 24, "sluice_prog_key size");

/*
 * Value of an LPM entry: the port rules of this prefix AND of every shorter
 * prefix of the policy that contains it (user space flattens them), because
 * an LPM lookup returns only the longest match.
 */
struct sluice_cidr_rules {
	__u32 n;
	__u32 pad;
	struct sluice_port_rule rules[SLUICE_MAX_PORT_RULES];
};
_Static_assert(sizeof(struct sluice_cidr_rules) == 8 + 12 * SLUICE_MAX_PORT_RULES, "sluice_cidr_rules size");

/*
 * Ports that host/url entries name, as a bitmap: bit (port & 31) of word
 * (gen & 1) * SLUICE_PORT_WORDS + port / 32 of map sluice_proxy_ports.
 */
#define SLUICE_PORT_WORDS 2048

/* Map sluice_state, index 0: the generation every hook reads once per call. */
struct sluice_state {
	__u32 gen;
	__u32 pad;
};

/* Map sluice_genconf, index gen & 1: what a generation decides besides the rules. */
#define SLUICE_GEN_AUDIT (1u << 0)
/* Which cidr maps the generation has entries in (of either family): a hook
 * looks only in those (a host-only policy's connects and packets look up
 * none).  They only spare lookups: a key carries its generation, so a
 * stale bank can make a hook miss an entry (deny), never find another's. */
#define SLUICE_GEN_EXACT4  (1u << 1) /* sluice_exact4 */
#define SLUICE_GEN_PREFIX4 (1u << 2) /* sluice_allow4 */
#define SLUICE_GEN_EXACT6  (1u << 3) /* sluice_exact6 */
#define SLUICE_GEN_PREFIX6 (1u << 4) /* sluice_allow6 */
#define SLUICE_GEN_CIDR_MAPS (SLUICE_GEN_EXACT4 | SLUICE_GEN_PREFIX4 | SLUICE_GEN_EXACT6 | SLUICE_GEN_PREFIX6)
struct sluice_genconf {
	__u32 flags;
	__u32 pad;
	__u64 families;   /* bit AF_x: sockets of family x may be made (the policy's
			   * families:); unix, inet, inet6 and netlink route/diag always */
};

/* Read-only configuration, set by the loader before load (.rodata). */
struct sluice_bpf_config {
	__u32 proxy4_addr;     /* network byte order; 0 = no proxy */
	__u32 dns4_addr;       /* network byte order; 0 = no resolver */
	__u32 proxy6_addr[4];  /* network byte order */
	__u32 dns6_addr[4];    /* network byte order */
	__u16 proxy4_port;     /* host byte order */
	__u16 proxy6_port;
	__u16 dns4_port;
	__u16 dns6_port;
	__u8  have_proxy;
	__u8  have_dns;
	__u8  have_set_retval; /* kernel has bpf_set_retval (5.18+) */
	__u8  have_lsm;        /* the BPF LSM programs are loaded (bpf LSM active) */
	__u8  have_unix;       /* cgroup/connect_unix and sendmsg_unix are loaded (6.7+) */
	__u8  have_tai;        /* bpf_ktime_get_tai_ns (6.1+): expiring cidr rules can be judged;
				* without it a rule with expires_s allows nothing (fail closed) */
	__u8  have_exe;        /* bpf_get_current_task_btf and bpf_probe_read_kernel in cgroup sock_addr
				* programs: the caller's executable is read (rules with programs, the flow
				* map); without it a SLUICE_RULE_PROGRAMS rule allows nothing (the loader
				* refuses such a policy anyway) */
	__u8  have_loop;       /* bpf_loop (5.17+): a cidr entry's port rules are walked by a callback
				* the verifier checks once, not in 16 unrolled iterations (the larger
				* part of an attach's verification); without it, unrolled */
	__u32 ring_slot;       /* this sandbox's slot in the event ring buffer's budget (below):
				* 0 for a ring of its own (`sluice run`), one the daemon chose for a
				* ring shared by its sandboxes; always < SLUICE_RING_SLOTS */
	__u32 pad;
};
_Static_assert(sizeof(struct sluice_bpf_config) == 64, "sluice_bpf_config size");

#ifdef __bpf__
#define SLUICE_SHARED_FN static __always_inline
#else
#define SLUICE_SHARED_FN static inline
#endif

/*
 * The one check that (addr, port) is the sandbox's resolver (`dns`) or
 * proxy address in cfg: for the BPF programs (on sluice_cfg) and the
 * loader's flow cut.  addr: network byte order; port: host byte order.
 * False for a component the sandbox runs without.  A v4-mapped IPv6
 * address is the caller's to turn into IPv4.
 */
SLUICE_SHARED_FN _Bool sluice_cfg_addr4(const volatile struct sluice_bpf_config *cfg, _Bool dns, __u32 addr,
					__u16 port)
{
	if (dns)
		return cfg->have_dns && addr == cfg->dns4_addr && port == cfg->dns4_port;
	return cfg->have_proxy && addr == cfg->proxy4_addr && port == cfg->proxy4_port;
}

SLUICE_SHARED_FN _Bool sluice_cfg_addr6(const volatile struct sluice_bpf_config *cfg, _Bool dns, const __u32 a[4],
					__u16 port)
{
	const volatile __u32 *b = dns ? cfg->dns6_addr : cfg->proxy6_addr;

	if (!(dns ? cfg->have_dns : cfg->have_proxy) || port != (dns ? cfg->dns6_port : cfg->proxy6_port))
		return 0;
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/*
 * The event ring buffer's budget (map sluice_ring_budget: an array of
 * SLUICE_RING_BUDGET_ENTRIES __u64, BPF_F_MMAPABLE, so the consumer updates
 * it in place with atomic operations).  A daemon's sandboxes share one ring
 * buffer (loader/event_ring.c; one 4 MiB ring a sandbox was most of a
 * sandbox's memory, issue 19), and no sandbox may fill it and blind the
 * others.  Entries, all in bytes of ring (SLUICE_RING_RECORD_BYTES of each
 * record):
 *   [SLUICE_RING_TOTAL]          queued in the ring, every slot's (producers add, the consumer takes back)
 *   [SLUICE_RING_POOL]           what may be queued in all before a slot is held to its share
 *   [SLUICE_RING_SHARE]          what each slot may always queue
 *   [SLUICE_RING_SLOT0 + slot]   queued by that slot's sandbox
 * A record is reserved if its slot stays within its share, or the total
 * within the pool; else it is lost, counted in the sandbox's
 * SLUICE_STAT_EVENTS_LOST like a full ring, and its seq is a gap.  The
 * loader sets, for a ring of R bytes and N sandboxes, share = R / (2N) and
 * pool = R - (N - 1) * share - SLUICE_RING_SLACK.  Then the total never
 * passes R, and a sandbox within its share always finds room, whatever the
 * others do: after the last record the pool let in (total <= pool), only
 * sandboxes below their share add, at most a share each; if one sandbox
 * was above its share then, the others add at most (N - 1) shares, so
 * total <= pool + (N - 1) * share = R - slack; if none was, total <= N *
 * share = R / 2.  (The slack absorbs reservations racing on other CPUs.
 * After an attach the shares shrink: the guarantee holds again once the
 * consumer has read what was queued beyond the new pool, 100 ms at most.)
 * Worked example, a 16 MiB ring: one sandbox may fill all of it but the
 * slack; with 4, each keeps 2 MiB and one flooding gets 10 MiB - 64 KiB
 * (~87,000 records); with 1,000, each keeps 8 KiB (~69 records between
 * two reads) and the shared part is about 8 MiB.  A ring of one sandbox
 * (`sluice run`) has pool = share = the ring: the ring alone bounds it.
 * The counts are read as signed: a consumer killed between taking a
 * record back and moving past it (one record) can leave them a record
 * low, never wrapped to a huge number.
 */
#define SLUICE_RING_SLOTS          4096u
#define SLUICE_RING_TOTAL          0u
#define SLUICE_RING_POOL           1u
#define SLUICE_RING_SHARE          2u
#define SLUICE_RING_SLOT0          3u
#define SLUICE_RING_BUDGET_ENTRIES (SLUICE_RING_SLOT0 + SLUICE_RING_SLOTS)
#define SLUICE_RING_SLACK          (64u << 10)   /* reservations racing on other CPUs */
/* Ring bytes a record of `size` bytes takes: the kernel's 8-byte header,
 * rounded up to 8 (kernel/bpf/ringbuf.c, BPF_RINGBUF_HDR_SZ). */
#define SLUICE_RING_RECORD_BYTES(size) ((((__u64)(size)) + 8 + 7) & ~(__u64)7)

/*
 * Value of map sluice_listener_sk (socket storage): set by the loader, with
 * the socket's fd as the key (BPF_MAP_TYPE_SK_STORAGE update from user space,
 * 5.2+), on each listening socket it made for the proxy and the resolver.
 * A socket without it is not a redirect target.  The mark goes with the
 * socket: when the last fd of a listener closes, so does its mark.
 */
#define SLUICE_LISTENER_PROXY 1u
#define SLUICE_LISTENER_DNS   2u
struct sluice_listener_mark {
	__u32 role;         /* SLUICE_LISTENER_* */
	__u32 pad;
};
_Static_assert(sizeof(struct sluice_listener_mark) == 8, "sluice_listener_mark size");

/*
 * Unix allowlist (map sluice_unix_allow, LPM trie): `unix:` entries of the
 * policy, generation first as in the cidr tries.  A path is stored with
 * its terminating NUL (exact) or without it (an entry ending in '/': every
 * socket below that directory); an abstract name as its length byte and
 * its bytes (exact only: names may hold NUL).  The programs build the key
 * of what the client passed and look it up; no match: reason 14.
 *   unix: /run/postgresql/.s.PGSQL.5432   connect("/run/postgresql/.s.PGSQL.5432")  allowed
 *   unix: /tmp/sockets/                   connect("/tmp/sockets/a/b.sock")          allowed
 *                                         connect("/run/docker.sock")               denied, reason 14
 */
#define SLUICE_UNIX_KEY_BYTES 109      /* sun_path (108) + a terminator or length byte */
#define SLUICE_UNIX_KIND_PATH     0
#define SLUICE_UNIX_KIND_ABSTRACT 1
struct sluice_unix_key {
	__u32 prefixlen;    /* bits of what follows: 32 (gen) + 8 (kind) + 8 * bytes */
	__u32 gen;          /* host byte order */
	__u8  kind;         /* SLUICE_UNIX_KIND_* */
	__u8  b[SLUICE_UNIX_KEY_BYTES];
	__u8  pad[2];
};
_Static_assert(sizeof(struct sluice_unix_key) == 120, "sluice_unix_key size");

/* Value of map sluice_sk_owner (socket storage): the socket was made by a
 * task inside the sandbox (lsm/socket_post_create).  Cloned to accepted
 * children (BPF_F_CLONE). */
struct sluice_sk_owner {
	__u64 cgroup_id;    /* the creating task's cgroup */
};
_Static_assert(sizeof(struct sluice_sk_owner) == 8, "sluice_sk_owner size");

/* Entries of map sluice_cut: the sockets a reload's flow cut destroys in
 * one batch (loader/flowcut.c), each one's RST let out by the backstop. */
#define SLUICE_CUT_BATCH 256u

/* Flags of struct sluice_orig. */
#define SLUICE_ORIG_REDIRECTED (1u << 0) /* rewritten to the proxy */
#define SLUICE_ORIG_EXPLICIT   (1u << 1) /* connected to the proxy address itself */
#define SLUICE_ORIG_DNS        (1u << 2) /* rewritten to the resolver */
#define SLUICE_ORIG_AUDIT      (1u << 3) /* would have been denied (audit mode) */
#define SLUICE_ORIG_PASSIVE    (1u << 4) /* accepted (inbound) TCP connection: its replies pass the backstop */

/*
 * What a client socket really asked for.  Kept in socket storage at
 * connect/sendmsg time; for TCP copied into the flow map at TCP_CONNECT so
 * the proxy can look it up by the client's (netns, address, port).
 */
struct sluice_orig {
	__u64 cgroup_id;
	__u64 sock_cookie;
	__u64 ts_ns;        /* CLOCK_BOOTTIME */
	__u32 daddr[4];     /* network byte order; IPv4 in daddr[0] */
	__u16 dport;        /* host byte order */
	__u8  family;       /* SLUICE_AF_INET or SLUICE_AF_INET6 (mapped v4 -> INET) */
	__u8  flags;        /* SLUICE_ORIG_* */
	__u32 pid;          /* tgid */
	__u32 uid;
	__u32 exe_dev;      /* the caller's executable (mm->exe_file): device, kernel encoding as in
			     * struct sluice_prog_key; 0 where not read (no have_exe, a kernel thread) */
	char  comm[16];
	__u64 exe_ino;      /* and its inode number */
};
_Static_assert(sizeof(struct sluice_orig) == 80, "sluice_orig size");

/*
 * Flow map key: the client end of a redirected TCP connection as the proxy
 * (or the resolver, for DNS over TCP) sees it in accept(): netns cookie
 * (SO_NETNS_COOKIE, 5.14+), peer address and peer port.  IPv4 and v4-mapped
 * peers use family AF_INET, saddr[0].  A UDP DNS query redirected to the
 * resolver is recorded by the egress backstop under protocol
 * SLUICE_FLOW_UDP with netns cookie 0 (cgroup_skb programs have no netns
 * cookie helper): the source address and port of the query as the resolver
 * receives it.
 */
#define SLUICE_FLOW_UDP 17  /* sluice_flow_key.protocol of a UDP DNS query; 0: TCP */
struct sluice_flow_key {
	__u64 netns_cookie;
	__u32 saddr[4];     /* network byte order */
	__u16 sport;        /* host byte order */
	__u8  family;
	__u8  protocol;     /* 0: a TCP connection; SLUICE_FLOW_UDP: a UDP DNS query */
	__u8  pad[4];
};
_Static_assert(sizeof(struct sluice_flow_key) == 32, "sluice_flow_key size");

/* One ring-buffer record per denial (or would-deny in audit mode). */
struct sluice_event {
	__u64 ts_ns;        /* CLOCK_BOOTTIME, nanoseconds */
	__u64 seq;          /* per sandbox, from 0, no gaps except lost events */
	__u64 cgroup_id;
	__u64 sock_cookie;
	__u32 pid;          /* tgid; 0 where not known (skb backstop) */
	__u32 tid;
	__u32 uid;
	__u16 hook;         /* enum sluice_hook */
	__u16 reason;       /* enum sluice_reason */
	__u32 daddr[4];     /* network byte order; IPv4 in daddr[0] */
	__u16 dport;        /* host byte order */
	__u8  family;       /* SLUICE_AF_INET / SLUICE_AF_INET6 */
	__u8  protocol;     /* IPPROTO_* (the socket's, for sock_create) */
	__u8  verdict;      /* enum sluice_verdict: DENY or WOULD_DENY */
	__u8  sock_type;    /* SOCK_* for sock_create */
	__u16 pad;
	char  comm[16];
	__u32 ring_slot;    /* the sandbox's slot (sluice_bpf_config.ring_slot): whose record it is in a
			     * ring buffer its daemon's sandboxes share */
	__u32 reserved;
	__u32 exe_dev;      /* the caller's executable (socket and LSM hooks; 0 in the backstop or
			     * without have_exe): device, kernel encoding as in struct sluice_prog_key */
	__u32 pad2;
	__u64 exe_ino;      /* and its inode number */
};
_Static_assert(sizeof(struct sluice_event) == 112, "sluice_event size");

/* A unix denial (hooks SLUICE_HOOK_CONNECT_UNIX, _SENDMSG_UNIX): the event
 * and the name the client asked for.  Records of this size in the ring
 * buffer are this struct; the consumer tells them by their length. */
struct sluice_event_unix {
	struct sluice_event ev;
	__u8  kind;         /* SLUICE_UNIX_KIND_* */
	__u8  len;          /* bytes of name */
	__u8  pad[6];
	char  name[108];    /* a path, or an abstract name without its leading NUL */
	__u32 pad2;
};
_Static_assert(sizeof(struct sluice_event_unix) == 112 + 8 + 112, "sluice_event_unix size");

#endif /* SLUICE_H */
