/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sluice_cidr.bpf.h - what the cidr entries of a generation say of a
 * destination (sluice.bpf.c includes this file once, after the maps and
 * the generation helpers): the calling task's executable for the rules
 * with `programs:`, a cidr entry's port rules (sluice_rules_match), and the
 * verdict of the exact maps and the tries (cidr_verdict4/6).
 */
#ifndef SLUICE_CIDR_BPF_H
#define SLUICE_CIDR_BPF_H


/*
 * The calling task's executable: inode (sluice_exe_ino) and device (kernel
 * encoding, s_dev: sluice_exe_dev) of current->mm->exe_file, the file
 * execve() ran (after #! and symlinks; a process started as `ld.so PROG`
 * is ld.so).  0 without have_exe or for a task without mm.  Kernel:
 * bpf_get_current_task_btf and bpf_probe_read_kernel in cgroup socket
 * programs, probed by the loader (sluice_cfg.have_exe).  Global functions:
 * verified once, not at each of the many places they are inlined into.
 */
__noinline __u64 sluice_exe_ino(void)
{
	struct task_struct *t;

	if (!sluice_cfg.have_exe)
		return 0;
	t = bpf_get_current_task_btf();
	return BPF_CORE_READ(t, mm, exe_file, f_inode, i_ino);
}

__noinline __u32 sluice_exe_dev(void)
{
	struct task_struct *t;

	if (!sluice_cfg.have_exe)
		return 0;
	t = bpf_get_current_task_btf();
	return BPF_CORE_READ(t, mm, exe_file, f_inode, i_sb, s_dev);
}

static __always_inline void current_exe(__u32 *dev, __u64 *ino)
{
	*ino = sluice_exe_ino();
	*dev = *ino ? sluice_exe_dev() : 0;
}

/* What the cidr rules say of (proto, port): CIDR_NO (no rule), CIDR_YES (a
 * live rule allows it), CIDR_EXPIRED (only rules whose `expires:` passed),
 * CIDR_PROGRAM (only live rules whose `programs:` do not name the caller). */
enum { CIDR_NO = 0, CIDR_YES = 1, CIDR_EXPIRED = 2, CIDR_PROGRAM = 3 };

/*
 * Does the caller's executable belong to the programs of entry `rule` under
 * generation `gen` (map sluice_prog_allow)?  Returns 1 or 0.  A global
 * function: the verifier checks it once, on its own, instead of inside
 * every unrolled iteration of sluice_rules_match()'s loop (which made the
 * load take seconds).
 */
__noinline int sluice_prog_ok(__u32 gen, __u32 rule)
{
	struct sluice_prog_key k = {};

	if (!sluice_cfg.have_exe)
		return 0;   /* fail closed: the loader refuses such a policy anyway */
	current_exe(&k.dev, &k.ino);
	k.gen = gen;
	k.rule = (__u16)rule;
	return bpf_map_lookup_elem(&sluice_prog_allow, &k) != NULL;
}

/* One port rule of sluice_rules_match()'s walk: what it says of (proto,
 * port) given the verdict so far (*res) and the TAI time read so far
 * (*now_s, 0 until an expiring rule needs it).  Returns 1 when the rule
 * allows (the walk stops: CIDR_YES), else 0 with *res updated. */
static __always_inline int rule_step(const struct sluice_port_rule *pr, __u32 gen, __u32 proto, __u32 port,
				     __u32 task, __u64 *now_s, int *res)
{
	__u32 exp;

	if (pr->proto != proto || port < pr->lo || port > pr->hi)
		return 0;
	exp = pr->expires_s;
	if (exp) {
		/* an expiring rule: CLOCK_TAI follows the wall clock (steps
		 * included) without the leap-second ambiguity; no TAI clock,
		 * no allowing (the loader refuses such a policy anyway) */
		if (sluice_cfg.have_tai && !*now_s)
			*now_s = bpf_ktime_get_tai_ns() / 1000000000ULL;
		if (!sluice_cfg.have_tai || *now_s >= exp) {
			if (*res != CIDR_PROGRAM)
				*res = CIDR_EXPIRED;
			return 0;
		}
	}
	if (!(pr->flags & SLUICE_RULE_PROGRAMS) || !task || sluice_prog_ok(gen, pr->rule))
		return 1;
	*res = CIDR_PROGRAM;
	return 0;
}

/* The walk's state, on sluice_rules_match()'s stack, for the bpf_loop
 * callback. */
struct rules_walk {
	const struct sluice_cidr_rules *r;
	__u64 now_s;
	__u32 gen, proto, port, task;
	int res;
};

/* bpf_loop's callback (5.17+): rule `i` of w->r; 1 stops the walk. */
static long rules_walk_step(__u64 i, void *arg)
{
	struct rules_walk *w = arg;
	const struct sluice_cidr_rules *r = w->r;

	if (!r || i >= SLUICE_MAX_PORT_RULES || i >= r->n)
		return 1;
	if (rule_step(&r->rules[i], w->gen, w->proto, w->port, w->task, &w->now_s, &w->res)) {
		w->res = CIDR_YES;
		return 1;
	}
	return 0;
}

/* `task`: called in the task's context (the socket hooks), so rules with
 * programs are judged; 0 in the egress backstop (a packet, no task: such
 * rules allow their destinations, see SLUICE_RULE_PROGRAMS).  A global
 * function, like sluice_prog_ok(): its walk is verified once, not in each
 * of the hooks' paths (cidr_verdict4/6 are inlined into many); with
 * bpf_loop (have_loop) the walk's step is verified once, not in each of
 * SLUICE_MAX_PORT_RULES unrolled iterations (about 7,000 of the 9,000
 * instructions the verifier walked for connect4). */
__noinline int sluice_rules_match(const struct sluice_cidr_rules *r, __u32 gen, __u32 proto, __u32 port, __u32 task)
{
	__u32 n;
	__u64 now_s = 0;
	int res = CIDR_NO;

	if (!r)
		return CIDR_NO;
	if (sluice_cfg.have_loop) {
		struct rules_walk w = { .r = r, .gen = gen, .proto = proto, .port = port, .task = task, .res = CIDR_NO };

		bpf_loop(SLUICE_MAX_PORT_RULES, rules_walk_step, &w, 0);
		return w.res;
	}
	n = r->n;
	for (int i = 0; i < SLUICE_MAX_PORT_RULES; i++) {
		if (i >= n)
			break;
		if (rule_step(&r->rules[i], gen, proto, port, task, &now_s, &res))
			return CIDR_YES;
	}
	return res;
}

/* What the cidr entries say of a destination (CIDR_*): by its full-length
 * entry's rules (sluice_exact4/6, constant time) if it has one, else by
 * the longest shorter prefix's (the trie); CIDR_NO when none covers it.
 * *trie (when not NULL) is set to 1 when the trie was walked. */
static __always_inline int cidr_verdict4(__u32 gen, __u32 addr, __u8 proto, __u16 port, bool task, __u8 *trie)
{
	struct sluice_exact4_key ek = { .gen = gen, .addr = addr };
	struct sluice_lpm4_key key = { .prefixlen = 64, .gen = gen, .addr = addr };
	struct sluice_cidr_rules *r = NULL;
	__u32 maps = gen_flags(gen);

	if (maps & SLUICE_GEN_EXACT4)
		r = bpf_map_lookup_elem(&sluice_exact4, &ek);
	if (!r && (maps & SLUICE_GEN_PREFIX4)) {
		r = bpf_map_lookup_elem(&sluice_allow4, &key);
		if (trie)
			*trie = 1;
	}

	return r ? sluice_rules_match(r, gen, proto, port, task) : CIDR_NO;
}

/* The backstop's question (no task): is the destination allowed? */
static __always_inline bool cidr_allowed4(__u32 gen, __u32 addr, __u8 proto, __u16 port)
{
	return cidr_verdict4(gen, addr, proto, port, false, NULL) == CIDR_YES;
}

static __always_inline int cidr_verdict6(__u32 gen, const __u32 addr[4], __u8 proto, __u16 port, bool task,
					 __u8 *trie)
{
	struct sluice_exact6_key ek = { .gen = gen };
	struct sluice_lpm6_key key = { .prefixlen = 160, .gen = gen };
	struct sluice_cidr_rules *r = NULL;
	__u32 maps = gen_flags(gen);

	if (maps & SLUICE_GEN_EXACT6) {
		addr6_copy(ek.addr, addr);
		r = bpf_map_lookup_elem(&sluice_exact6, &ek);
	}
	if (!r && (maps & SLUICE_GEN_PREFIX6)) {
		addr6_copy(key.addr, addr);
		r = bpf_map_lookup_elem(&sluice_allow6, &key);
		if (trie)
			*trie = 1;
	}
	return r ? sluice_rules_match(r, gen, proto, port, task) : CIDR_NO;
}

static __always_inline bool cidr_allowed6(__u32 gen, const __u32 addr[4], __u8 proto, __u16 port)
{
	return cidr_verdict6(gen, addr, proto, port, false, NULL) == CIDR_YES;
}

#endif
