/* SPDX-License-Identifier: BSD-2-Clause */
/* dns_stats.c - the resolver's shared dropped-query counts (dns_stats.h). */
#include "dns_stats.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const sluice_dns_drop_names[SLUICE_DNS_DROP_N] = {
	"rate_limited", "socket_overflow", "shutdown",
};

struct sluice_dns_stats *sluice_dns_stats_map(int fd)
{
	struct sluice_dns_stats *st;
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return NULL;
	if (!S_ISREG(sb.st_mode)) {
		errno = EINVAL;
		return NULL;
	}
	if (sb.st_size == 0 && ftruncate(fd, sizeof(*st)) < 0)
		return NULL;
	else if (sb.st_size != 0 && sb.st_size != (off_t)sizeof(*st)) {
		errno = EINVAL;
		return NULL;
	}
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (st == MAP_FAILED)
		return NULL;
	/* a new file is all zeros: the first to map it says what it is (two
	 * at once write the same values) */
	if (__atomic_load_n(&st->magic, __ATOMIC_ACQUIRE) == 0) {
		st->version = 1;
		__atomic_store_n(&st->magic, SLUICE_DNS_STATS_MAGIC, __ATOMIC_RELEASE);
	}
	if (st->magic != SLUICE_DNS_STATS_MAGIC || st->version != 1) {
		munmap(st, sizeof(*st));
		errno = EINVAL;
		return NULL;
	}
	return st;
}

void sluice_dns_stats_unmap(struct sluice_dns_stats *st)
{
	if (st)
		munmap(st, sizeof(*st));
}

void sluice_dns_stats_add(struct sluice_dns_stats *st, unsigned why, uint64_t n)
{
	if (st && why < SLUICE_DNS_DROP_N && n)
		__atomic_fetch_add(&st->dropped[why], n, __ATOMIC_RELAXED);
}

uint64_t sluice_dns_stats_get(const struct sluice_dns_stats *st, unsigned why)
{
	return st && why < SLUICE_DNS_DROP_N ? __atomic_load_n(&st->dropped[why], __ATOMIC_RELAXED) : 0;
}
