// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Where ranks meet: a shared memory segment with a robust process-shared mutex
 * and one condition variable. Waits have a deadline so a missing rank shows up
 * as an error message instead of a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "nccl_sim.h"

long long nccl_timeout_ms(void)
{
	const char *v = getenv("SPECSIM_NCCL_TIMEOUT_MS");
	long long ms = v ? atoll(v) : 0;

	return ms > 0 ? ms : 60000;
}

int nccl_shm_fresh_name(char *name, size_t size)
{
	static unsigned int counter;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(name, size, "/specsim-nccl.%d.%u.%lx", (int)getpid(),
		 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED),
		 (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
	return 0;
}

static int init_sync(struct nccl_shm *shm)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	int err;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	/* a rank that dies holding the lock must not wedge the others */
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	err = pthread_mutex_init(&shm->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&shm->cond, &ca);
	pthread_condattr_destroy(&ca);
	return err;
}

/* Creates and initialises the segment; fails if the name exists. */
int nccl_shm_create(const char *name)
{
	struct nccl_shm *shm;
	int fd, err;

	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(*shm))) {
		err = -errno;
		close(fd);
		shm_unlink(name);
		return err;
	}
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED) {
		shm_unlink(name);
		return -ENOMEM;
	}
	err = init_sync(shm);
	/* magic last: a rank that maps early sees a ready segment or none */
	__atomic_store_n(&shm->magic, err ? 0 : NCCL_SHM_MAGIC, __ATOMIC_RELEASE);
	munmap(shm, sizeof(*shm));
	if (err)
		shm_unlink(name);
	return -err;
}

struct nccl_shm *nccl_shm_map(const char *name)
{
	struct nccl_shm *shm;
	int fd = shm_open(name, O_RDWR, 0600);

	if (fd < 0)
		return NULL;
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED)
		return NULL;
	if (__atomic_load_n(&shm->magic, __ATOMIC_ACQUIRE) != NCCL_SHM_MAGIC) {
		munmap(shm, sizeof(*shm));
		return NULL;
	}
	return shm;
}

static void shm_lock(struct nccl_shm *shm)
{
	if (pthread_mutex_lock(&shm->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&shm->lock);
}

static struct timespec deadline_in(long long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Waits on the shared condition; false once the deadline passed. */
static bool shm_wait(struct nccl_shm *shm, const struct timespec *deadline)
{
	int err = pthread_cond_timedwait(&shm->cond, &shm->lock, deadline);

	if (err == EOWNERDEAD)
		pthread_mutex_consistent(&shm->lock);
	return err != ETIMEDOUT;
}

/* Counts this rank in; with wait, returns once every rank has joined. */
int nccl_shm_join(struct specsim_nccl_comm *c, bool wait)
{
	struct nccl_shm *shm = c->shm;
	struct timespec deadline = deadline_in(nccl_timeout_ms());
	int err = 0;

	shm_lock(shm);
	if (!shm->nranks)
		shm->nranks = c->nranks;
	if (shm->nranks != c->nranks || shm->joined >= shm->nranks) {
		pthread_mutex_unlock(&shm->lock);
		return ncclInvalidUsage;
	}
	shm->joined++;
	pthread_cond_broadcast(&shm->cond);
	while (wait && shm->joined < shm->nranks && !err)
		if (!shm_wait(shm, &deadline))
			err = ncclSystemError;
	/* everyone is mapped: the name can go, nothing leaks in /dev/shm */
	if (shm->joined == shm->nranks && !shm->unlinked) {
		shm->unlinked = 1;
		shm_unlink(c->shm_name);
	}
	pthread_mutex_unlock(&shm->lock);
	if (err)
		fprintf(stderr, "specsim nccl: rank %d of %d: peers did not join within %lld ms\n",
			c->rank, c->nranks, nccl_timeout_ms());
	return err;
}

int nccl_shm_host_barrier(struct specsim_nccl_comm *c)
{
	struct nccl_shm *shm = c->shm;
	struct timespec deadline = deadline_in(nccl_timeout_ms());
	uint64_t need;
	int err = 0;

	shm_lock(shm);
	need = ++c->host_rounds * (uint64_t)c->nranks;
	shm->host_arrivals++;
	pthread_cond_broadcast(&shm->cond);
	while (shm->host_arrivals < need && !err)
		if (!shm_wait(shm, &deadline))
			err = ncclSystemError;
	pthread_mutex_unlock(&shm->lock);
	return err;
}

/* Counts one part in; returns what must be seen before it is done. */
static uint64_t *part_arrive(struct specsim_nccl_comm *c, const struct nccl_part *p,
			     uint64_t *need)
{
	struct nccl_shm *shm = c->shm;

	switch (p->kind) {
	case K_SEND:
		*need = ++shm->sends[c->rank][p->peer];
		return &shm->recvs[c->rank][p->peer];
	case K_RECV:
		*need = ++shm->recvs[p->peer][c->rank];
		return &shm->sends[p->peer][c->rank];
	default:
		shm->coll_arrivals++;
		*need = ++c->coll_rounds * (uint64_t)c->nranks;
		return &shm->coll_arrivals;
	}
}

static bool parts_done(uint64_t *const *seen, const uint64_t *need, int n)
{
	for (int i = 0; i < n; i++)
		if (*seen[i] < need[i])
			return false;
	return true;
}

/*
 * The collective kernel, run on the stream's worker: arrive for every part
 * first, then wait for all, so the sends and receives of a group cannot
 * deadlock each other. Returns the GPU time the transfer takes.
 */
long long nccl_shm_run(void *arg)
{
	struct nccl_launch *l = arg;
	struct specsim_nccl_comm *c = l->comm;
	struct nccl_shm *shm = c->shm;
	struct timespec deadline = deadline_in(nccl_timeout_ms());
	uint64_t need[l->nr_parts ? l->nr_parts : 1];
	uint64_t *seen[l->nr_parts ? l->nr_parts : 1];
	long long ns = 0;
	bool ok = true;

	shm_lock(shm);
	for (int i = 0; i < l->nr_parts; i++)
		seen[i] = part_arrive(c, &l->parts[i], &need[i]);
	pthread_cond_broadcast(&shm->cond);
	while (ok && !parts_done(seen, need, l->nr_parts))
		ok = shm_wait(shm, &deadline);
	pthread_mutex_unlock(&shm->lock);
	if (!ok)
		fprintf(stderr, "specsim nccl: rank %d of %d: peers missing %lld ms, going on\n",
			c->rank, c->nranks, nccl_timeout_ms());
	for (int i = 0; i < l->nr_parts; i++)
		ns += c->base_ns + (long long)(l->parts[i].bytes / 1024) * c->ns_per_kib;
	return ns;
}
