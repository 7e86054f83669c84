/* SPDX-License-Identifier: BSD-2-Clause */
#include "evseq.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EVSEQ_SIZE 4096   /* one page */

_Static_assert(sizeof(struct sluice_evseq) <= EVSEQ_SIZE, "the counters fit in the page");

/* Give a fresh (all-zero or foreign) file the layout: magic, next = 0. */
static int evseq_format(int fd)
{
	struct sluice_evseq q;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size >= EVSEQ_SIZE && pread(fd, &q, sizeof(q), 0) == (ssize_t)sizeof(q) &&
	    memcmp(q.magic, SLUICE_EVSEQ_MAGIC, sizeof(q.magic)) == 0)
		return 0;    /* a counter already: carry on from it */
	memset(&q, 0, sizeof(q));
	memcpy(q.magic, SLUICE_EVSEQ_MAGIC, sizeof(q.magic));
	if (ftruncate(fd, EVSEQ_SIZE) < 0 || pwrite(fd, &q, sizeof(q), 0) != (ssize_t)sizeof(q))
		return -errno ? -errno : -EIO;
	return 0;
}

int sluice_evseq_memfd(void)
{
	int fd = memfd_create("sluice-evseq", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	err = evseq_format(fd);
	if (err == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		err = -errno;
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}

int sluice_evseq_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600), err;

	if (fd < 0)
		return -errno;
	err = evseq_format(fd);
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}

struct sluice_evseq *sluice_evseq_map(int fd)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return NULL;
	if (st.st_size < EVSEQ_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, EVSEQ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (memcmp(((struct sluice_evseq *)p)->magic, SLUICE_EVSEQ_MAGIC, 8) != 0) {
		munmap(p, EVSEQ_SIZE);
		errno = EINVAL;
		return NULL;
	}
	return p;
}

void sluice_evseq_unmap(struct sluice_evseq *q)
{
	if (q)
		munmap(q, EVSEQ_SIZE);
}

uint64_t sluice_evseq_take(struct sluice_evseq *q)
{
	return __atomic_fetch_add(&q->next, 1, __ATOMIC_RELAXED);
}

void sluice_evseq_add(uint64_t *ctr, uint64_t n)
{
	__atomic_fetch_add(ctr, n, __ATOMIC_RELAXED);
}

uint64_t sluice_evseq_read(const uint64_t *ctr)
{
	return __atomic_load_n(ctr, __ATOMIC_RELAXED);
}

int sluice_evc_verdict(const char *verdict)
{
	static const char *const names[SLUICE_EVC__VERDICTS] = {
		[SLUICE_EVC_ALLOW] = "allow", [SLUICE_EVC_DENY] = "deny",
		[SLUICE_EVC_WOULD_DENY] = "would_deny", [SLUICE_EVC_REFUSE] = "refuse",
	};

	for (int i = 0; verdict && i < SLUICE_EVC__VERDICTS; i++)
		if (strcmp(verdict, names[i]) == 0)
			return i;
	return -1;
}
