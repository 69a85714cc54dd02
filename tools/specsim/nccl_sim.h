/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the look-alike NCCL: ranks are processes that meet in a POSIX shared
 * memory segment named by the ncclUniqueId. Counters only grow, so a rank's
 * k-th collective completes once nranks * k arrivals were counted.
 */
#ifndef __SPECSIM_NCCL_SIM_H
#define __SPECSIM_NCCL_SIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "entry.h"
#include "specsim.h"

#define NCCL_MAX_RANKS 64
#define NCCL_SHM_MAGIC 0x4e53484du
#define NCCL_COMM_MAGIC 0x4e434f4du
#define NCCL_NAME_MAX 200
#define NCCL_ID_MAGIC "SPECSIM-NCCL"
#define NCCL_ID_NAME_AT 16

/* real NCCL: pncclX is the strong symbol, ncclX a weak alias at its address */
#define NCCL_ALIAS(name) \
	extern __typeof__(name) name __attribute__((weak, alias("p" #name), visibility("default")))

struct nccl_shm {
	uint32_t magic;
	int nranks;		/* 0 until the first rank joins */
	int joined;
	int unlinked;
	pthread_mutex_t lock;	/* process-shared, robust */
	pthread_cond_t cond;	/* process-shared, CLOCK_MONOTONIC */
	uint64_t coll_arrivals;
	uint64_t host_arrivals;
	int split_color[NCCL_MAX_RANKS];
	int split_key[NCCL_MAX_RANKS];
	uint64_t sends[NCCL_MAX_RANKS][NCCL_MAX_RANKS];	/* [from][to] */
	uint64_t recvs[NCCL_MAX_RANKS][NCCL_MAX_RANKS];	/* [from][to] */
};

enum nccl_kind {
	K_ALLREDUCE,
	K_ALLGATHER,
	K_REDUCESCATTER,
	K_BROADCAST,
	K_REDUCE,
	K_ALLTOALL,
	K_GATHER,
	K_SCATTER,
	K_SEND,
	K_RECV,
	K_NR,
};

struct nccl_part {
	int kind;
	int peer;
	size_t bytes;
};

struct specsim_nccl_comm;

/* What one kernel launch does; interned so a captured graph can keep it. */
struct nccl_launch {
	struct specsim_nccl_comm *comm;
	struct nccl_launch *next;
	int nr_parts;
	struct nccl_part parts[];
};

struct specsim_nccl_comm {
	uint32_t magic;
	int rank, nranks;
	char shm_name[NCCL_NAME_MAX + 1];
	struct nccl_shm *shm;
	uint64_t coll_rounds, host_rounds;	/* under shm->lock */
	int splits;
	long long base_ns, ns_per_kib;
	long long hang_ns;	/* the next collective blocks its caller this long */
	pthread_mutex_t launches_lock;
	struct nccl_launch *launches;
};

/* nccl_comm.c */
extern CUfunction nccl_kernels[K_NR];
unsigned long long nccl_now_ns(void);
void nccl_note(struct specsim_call_note *n);
void nccl_note_arg(struct specsim_call_note *n, const char *key, long long val);
bool nccl_comm_ok(const struct specsim_nccl_comm *c);

/* nccl_shm.c */
int nccl_shm_create(const char *name);
int nccl_shm_fresh_name(char *name, size_t size);
struct nccl_shm *nccl_shm_map(const char *name);
int nccl_shm_join(struct specsim_nccl_comm *c, bool wait);
int nccl_shm_host_barrier(struct specsim_nccl_comm *c);
long long nccl_shm_run(void *arg);
long long nccl_timeout_ms(void);

#endif /* __SPECSIM_NCCL_SIM_H */
