/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sandbox_gen.c - a policy written into a sandbox's maps as a new
 * generation, and the switch to it (sandbox_apply_policy, sandbox.h):
 * single addresses to the exact maps and prefixes to the tries, the
 * generation before deleted once no hook can still read it, and one
 * 32-bit store as the switch.
 */
#include "sandbox.h"
#include "sandbox_maps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/membarrier.h>

#include <bpf/bpf.h>

/*
 * Can a reload wait until no hook still reads an entry it deleted?
 * membarrier(MEMBARRIER_CMD_GLOBAL) returns after an RCU grace period
 * (synchronize_rcu), and the hooks read the maps under rcu_read_lock; a
 * nohz_full kernel refuses that command.  The exact maps need the wait: a
 * hash map hands a deleted element's memory to its next insert at once,
 * so a hook preempted across two reloads could read another entry's
 * rules through the pointer it looked up; a trie frees a deleted node
 * only after a grace period.  On one CPU the command returns at once,
 * without a grace period (a preempted reader would not be waited for).
 * Without it every cidr entry goes to the tries.  SLUICE_NO_RCU_WAIT
 * (non-empty) takes that path here too: what the tests check such a
 * kernel by.  Asked once a process.
 */
static bool rcu_wait_ok(void)
{
	static int ok = -1;

	if (ok < 0) {
		const char *no = getenv("SLUICE_NO_RCU_WAIT");
		long mask = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

		ok = mask > 0 && (mask & MEMBARRIER_CMD_GLOBAL) && sysconf(_SC_NPROCESSORS_ONLN) > 1 && !(no && *no);
	}
	return ok;
}

/* Wait for an RCU grace period (rcu_wait_ok); 0 or -errno. */
static int rcu_wait(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) < 0 ? -errno : 0;
}

static int write_plan(struct sluice_sandbox *sb, const struct sluice_plan *plan)
{
	int fd4 = sb->map_fd[SLUICE_MAP_ALLOW4], fd6 = sb->map_fd[SLUICE_MAP_ALLOW6];
	int fd4x = sb->map_fd[SLUICE_MAP_EXACT4], fd6x = sb->map_fd[SLUICE_MAP_EXACT6];
	int fdp = sb->map_fd[SLUICE_MAP_PORTS], fdg = sb->map_fd[SLUICE_MAP_GENCONF];
	uint32_t bank = plan->gen & 1;
	struct sluice_genconf gc = { .flags = plan->genflags, .families = plan->families };
	bool exact_ok = rcu_wait_ok();

	/* a full-length prefix goes to the exact map (bpf/sluice.h), the
	 * others to the trie, every one to the trie where a reload could not
	 * wait for the exact maps' readers (rcu_wait_ok); the generation's
	 * flags name the maps written, the only ones the hooks look in */
	gc.flags &= ~(uint32_t)SLUICE_GEN_CIDR_MAPS;
	for (size_t i = 0; i < plan->n_v4; i++) {
		const struct sluice_lpm4_key *k = &plan->v4[i].key;
		struct sluice_exact4_key ek = { .gen = k->gen, .addr = k->addr };
		bool exact = exact_ok && sluice_plan_v4_exact(&plan->v4[i]);

		if (exact ? bpf_map_update_elem(fd4x, &ek, &plan->v4[i].val, BPF_ANY) :
			    bpf_map_update_elem(fd4, k, &plan->v4[i].val, BPF_ANY))
			return -errno;
		gc.flags |= exact ? SLUICE_GEN_EXACT4 : SLUICE_GEN_PREFIX4;
	}
	for (size_t i = 0; i < plan->n_v6; i++) {
		const struct sluice_lpm6_key *k = &plan->v6[i].key;
		struct sluice_exact6_key ek = { .gen = k->gen };
		bool exact = exact_ok && sluice_plan_v6_exact(&plan->v6[i]);

		memcpy(ek.addr, k->addr, sizeof(ek.addr));
		if (exact ? bpf_map_update_elem(fd6x, &ek, &plan->v6[i].val, BPF_ANY) :
			    bpf_map_update_elem(fd6, k, &plan->v6[i].val, BPF_ANY))
			return -errno;
		gc.flags |= exact ? SLUICE_GEN_EXACT6 : SLUICE_GEN_PREFIX6;
	}
	for (size_t i = 0; i < plan->n_ux; i++)
		if (bpf_map_update_elem(sb->map_fd[SLUICE_MAP_UNIX], &plan->ux[i], &plan->ux_rule[i], BPF_ANY))
			return -errno;
	for (size_t i = 0; i < plan->n_pk; i++) {
		uint32_t one = 1;

		if (bpf_map_update_elem(sb->map_fd[SLUICE_MAP_PROGS], &plan->pk[i], &one, BPF_ANY))
			return -errno;
	}
	/* the bank's 2,048 words in one call (BPF_MAP_UPDATE_BATCH, kernel
	 * 5.6+), else one by one: 2,048 system calls, a few ms of an attach */
	uint32_t keys[SLUICE_PORT_WORDS], count = SLUICE_PORT_WORDS;

	for (uint32_t w = 0; w < SLUICE_PORT_WORDS; w++)
		keys[w] = bank * SLUICE_PORT_WORDS + w;
	if (bpf_map_update_batch(fdp, keys, plan->ports, &count, NULL) || count != SLUICE_PORT_WORDS)
		for (uint32_t w = 0; w < SLUICE_PORT_WORDS; w++)
			if (bpf_map_update_elem(fdp, &keys[w], &plan->ports[w], BPF_ANY))
				return -errno;
	if (bpf_map_update_elem(fdg, &bank, &gc, BPF_ANY))
		return -errno;
	return 0;
}

/*
 * Delete every entry of generation `gen` in map `fd` (keys of `keysz`
 * bytes, the generation at offset `goff`: 4 in the LPM tries, 0 in the
 * exact maps and sluice_prog_allow).  The keys are collected in one walk
 * first, then deleted: deleting while walking an LPM trie would restart
 * the walk each time (quadratic on a large policy).
 */
static void delete_gen_map(int fd, size_t keysz, size_t goff, uint32_t gen)
{
	size_t n = 0, cap = 1024;
	unsigned char *keys = malloc(cap * keysz), cur[128], next[128];
	void *prev = NULL;

	if (!keys || keysz > sizeof(cur)) {
		free(keys);
		return;
	}
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		uint32_t g;

		memcpy(&g, next + goff, 4);
		if (g == gen) {
			if (n == cap) {
				unsigned char *nk = realloc(keys, 2 * cap * keysz);

				if (!nk)
					break;
				keys = nk;
				cap *= 2;
			}
			memcpy(keys + n * keysz, next, keysz);
			n++;
		}
		memcpy(cur, next, keysz);
		prev = cur;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, keys + i * keysz);
	free(keys);
}

/* Delete every allowlist entry of generation `gen` (cidr, unix, programs). */
static void delete_gen(struct sluice_sandbox *sb, uint32_t gen)
{
	delete_gen_map(sb->map_fd[SLUICE_MAP_ALLOW4], sizeof(struct sluice_lpm4_key), 4, gen);
	delete_gen_map(sb->map_fd[SLUICE_MAP_ALLOW6], sizeof(struct sluice_lpm6_key), 4, gen);
	delete_gen_map(sb->map_fd[SLUICE_MAP_EXACT4], sizeof(struct sluice_exact4_key), 0, gen);
	delete_gen_map(sb->map_fd[SLUICE_MAP_EXACT6], sizeof(struct sluice_exact6_key), 0, gen);
	delete_gen_map(sb->map_fd[SLUICE_MAP_UNIX], sizeof(struct sluice_unix_key), 4, gen);
	delete_gen_map(sb->map_fd[SLUICE_MAP_PROGS], sizeof(struct sluice_prog_key), 0, gen);
}

int sandbox_apply_policy(struct sluice_sandbox *sb, const struct sluice_policy *policy, char *msg,
			 size_t msglen)
{
	struct sluice_plan plan;
	uint32_t next = sb->gen + 1, zero = 0;
	struct sluice_state st = { .gen = next };
	int err, opened;

	for (size_t i = 0; i < policy->n_entries; i++)
		if (policy->entries[i].kind == SLUICE_ENTRY_CIDR && policy->entries[i].expires && !sb->cfg.have_tai) {
			snprintf(msg, msglen, "line %u: 'expires' on a cidr entry needs a kernel with bpf_ktime_get_tai_ns "
				 "(Linux 6.1+) to be enforced", policy->entries[i].line);
			return -1;
		}
	/* never a silent widening: without the caller's executable neither
	 * the kernel (cidr) nor the proxy (host, url: the flow map) can tell */
	for (size_t i = 0; i < policy->n_entries; i++)
		if (policy->entries[i].n_programs && !sb->cfg.have_exe) {
			snprintf(msg, msglen, "line %u: 'programs' needs a kernel whose cgroup sock_addr programs may call "
				 "bpf_get_current_task_btf (this one refuses it): the entry could not be enforced",
				 policy->entries[i].line);
			return -1;
		}
	/* the maps sandbox_keep_pins() closed, for as long as this takes */
	opened = sb->pinned && !sb->skel ? sandbox_pins_open(sb->pin_dir, MAPS_RELOAD, sb->map_fd, sb->map_id, msg, msglen) : 0;
	if (opened < 0)
		return -1;
	if (sluice_plan_build(policy, next, &plan, msg, msglen) < 0)
		goto fail;
	/* the generation before the one in force goes now, one reload after
	 * the switch away from it, not at that switch: a hook reads the
	 * number once and then looks its entries up, so one that read it
	 * just before the switch (and was preempted) still finds them */
	if (sb->gen > 1)
		delete_gen(sb, sb->gen - 1);
	/* an exact map hands the elements deleted (here, or by a reload
	 * before) to the inserts below at once: first no hook may still hold
	 * one (rcu_wait_ok) */
	if (sb->gen > 0 && rcu_wait_ok() && (plan.genflags & (SLUICE_GEN_EXACT4 | SLUICE_GEN_EXACT6)) &&
	    (err = rcu_wait()) != 0) {
		snprintf(msg, msglen, "cannot wait until no BPF program reads the entries a reload deleted (membarrier: %s)",
			 strerror(-err));
		sluice_plan_free(&plan);
		goto fail;
	}
	/* once, at the first load (an adopted sandbox has them already) */
	if (sb->skel && !sb->gen && (err = sandbox_write_unix_quiet(sb)) != 0) {
		snprintf(msg, msglen, "cannot write the quiet unix names: %s", strerror(-err));
		sluice_plan_free(&plan);
		goto fail;
	}
	err = write_plan(sb, &plan);
	sluice_plan_free(&plan);
	if (err) {
		snprintf(msg, msglen, "cannot write policy maps: %s", strerror(-err));
		delete_gen(sb, next);
		goto fail;
	}
	/* the switch: one 32-bit store read once per decision by every hook */
	if (bpf_map_update_elem(sb->map_fd[SLUICE_MAP_STATE], &zero, &st, BPF_ANY)) {
		snprintf(msg, msglen, "cannot switch policy generation: %s", strerror(errno));
		delete_gen(sb, next);
		goto fail;
	}
	sb->gen = next;
	sandbox_pins_close(sb->map_fd, (unsigned)opened);
	return 0;
fail:
	sandbox_pins_close(sb->map_fd, (unsigned)opened);
	return -1;
}
