// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Communicators of the look-alike NCCL: unique ids name a shared memory
 * segment, init blocks until every rank joined, split is collective over the
 * parent. Calls this library makes into libcuda are handed to the note hook so
 * the simulated server's ground truth can list them under their parent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "nccl_sim.h"

CUfunction nccl_kernels[K_NR];

static const char *const kernel_names[K_NR] = {
	[K_ALLREDUCE] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
	[K_ALLGATHER] = "ncclDevKernel_AllGather_RING_LL",
	[K_REDUCESCATTER] = "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
	[K_BROADCAST] = "ncclDevKernel_Broadcast_RING_LL",
	[K_REDUCE] = "ncclDevKernel_Reduce_Sum_f32_RING_LL",
	[K_ALLTOALL] = "ncclDevKernel_SendRecv",
	[K_GATHER] = "ncclDevKernel_SendRecv",
	[K_SCATTER] = "ncclDevKernel_SendRecv",
	[K_SEND] = "ncclDevKernel_SendRecv",
	[K_RECV] = "ncclDevKernel_SendRecv",
};

static const char kernel_image[] = "specsim nccl device code";
static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static bool kernels_ready;
static specsim_note_fn note_fn;

unsigned long long nccl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void nccl_note(struct specsim_call_note *n)
{
	specsim_note_fn fn = __atomic_load_n(&note_fn, __ATOMIC_ACQUIRE);

	if (fn)
		fn(n);
}

void nccl_note_arg(struct specsim_call_note *n, const char *key, long long val)
{
	if (n->nargs < SPECSIM_NOTE_ARGS) {
		n->keys[n->nargs] = key;
		n->vals[n->nargs++] = val;
	}
}

SIM_EXPORT void specsimNcclSetCallHook(specsim_note_fn fn)
{
	__atomic_store_n(&note_fn, fn, __ATOMIC_RELEASE);
}

bool nccl_comm_ok(const struct specsim_nccl_comm *c)
{
	return c && c->magic == NCCL_COMM_MAGIC;
}

SIM_EXPORT int specsimNcclSetCollectiveNs(ncclComm_t comm, long long base_ns, long long ns_per_kib)
{
	if (!nccl_comm_ok(comm) || base_ns < 0 || ns_per_kib < 0)
		return ncclInvalidArgument;
	comm->base_ns = base_ns;
	comm->ns_per_kib = ns_per_kib;
	return ncclSuccess;
}

SIM_EXPORT int specsimNcclHangNext(ncclComm_t comm, long long ns)
{
	if (!nccl_comm_ok(comm) || ns < 0)
		return ncclInvalidArgument;
	comm->hang_ns = ns;
	return ncclSuccess;
}

static int get_function(const char *parent, CUmodule mod, int k)
{
	struct specsim_call_note n = { .name = "cuModuleGetFunction", .parent = parent };
	int err;

	n.before_ns = nccl_now_ns();
	err = cuModuleGetFunction(&nccl_kernels[k], mod, kernel_names[k]);
	n.after_ns = nccl_now_ns();
	n.result = err;
	nccl_note_arg(&n, "func_out", (long long)(uintptr_t)&nccl_kernels[k]);
	nccl_note_arg(&n, "module", (long long)(uintptr_t)mod);
	nccl_note_arg(&n, "func", (long long)(uintptr_t)nccl_kernels[k]);
	nccl_note(&n);
	if (!err)
		err = specsimSetFunctionHook(nccl_kernels[k], nccl_shm_run);
	if (!err)
		err = specsimSetFunctionDurationNs(nccl_kernels[k], 0);
	return err;
}

/* Like real NCCL, load the device code once and look the kernels up by name. */
static int load_kernels(const char *parent)
{
	struct specsim_call_note n = { .name = "cuModuleLoadData", .parent = parent };
	CUmodule mod = NULL;
	int err = 0;

	pthread_mutex_lock(&kernels_lock);
	if (!kernels_ready) {
		n.before_ns = nccl_now_ns();
		err = cuModuleLoadData(&mod, kernel_image);
		n.after_ns = nccl_now_ns();
		n.result = err;
		nccl_note_arg(&n, "module_out", (long long)(uintptr_t)&mod);
		nccl_note_arg(&n, "image", (long long)(uintptr_t)kernel_image);
		nccl_note_arg(&n, "module", (long long)(uintptr_t)mod);
		nccl_note(&n);
		for (int k = 0; k < K_NR && !err; k++)
			err = get_function(parent, mod, k);
		kernels_ready = !err;
	}
	pthread_mutex_unlock(&kernels_lock);
	return err;
}

static struct specsim_nccl_comm *comm_new(const char *name, int rank, int nranks)
{
	struct specsim_nccl_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->shm = nccl_shm_map(name);
	if (!c->shm) {
		free(c);
		return NULL;
	}
	c->magic = NCCL_COMM_MAGIC;
	c->rank = rank;
	c->nranks = nranks;
	c->base_ns = 5000;
	c->ns_per_kib = 10;
	snprintf(c->shm_name, sizeof(c->shm_name), "%s", name);
	pthread_mutex_init(&c->launches_lock, NULL);
	return c;
}

/* A communicator that joined its segment, waiting for the other ranks. */
static ncclResult_t comm_open(const char *name, int rank, int nranks, ncclComm_t *out)
{
	struct specsim_nccl_comm *c = comm_new(name, rank, nranks);
	ncclResult_t err;

	if (!c)
		return ncclSystemError;
	err = nccl_shm_join(c, true);
	if (err) {
		munmap(c->shm, sizeof(*c->shm));
		free(c);
		return err;
	}
	*out = c;
	return ncclSuccess;
}

/*
 * Forgets the communicator but keeps its memory: a graph captured with it may
 * still be queued, and its kernels point here.
 */
static ncclResult_t comm_retire(ncclComm_t comm)
{
	if (!nccl_comm_ok(comm))
		return ncclInvalidArgument;
	comm->magic = 0;
	return ncclSuccess;
}

static int new_id_segment(char *name, size_t size)
{
	for (int tries = 0; tries < 8; tries++) {
		nccl_shm_fresh_name(name, size);
		if (!nccl_shm_create(name))
			return 0;
	}
	return -1;
}

SIM_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
	char name[NCCL_UNIQUE_ID_BYTES - NCCL_ID_NAME_AT];

	SIM_FRAME();
	if (!uniqueId)
		return ncclInvalidArgument;
	if (new_id_segment(name, sizeof(name)))
		return ncclSystemError;
	memset(uniqueId, 0, sizeof(*uniqueId));
	memcpy(uniqueId->internal, NCCL_ID_MAGIC, strlen(NCCL_ID_MAGIC));
	memcpy(uniqueId->internal + NCCL_ID_NAME_AT, name, strlen(name) + 1);
	return ncclSuccess;
}
NCCL_ALIAS(ncclGetUniqueId);

static const char *id_name(const ncclUniqueId *id)
{
	const char *name = id->internal + NCCL_ID_NAME_AT;

	if (memcmp(id->internal, NCCL_ID_MAGIC, strlen(NCCL_ID_MAGIC)) ||
	    !memchr(name, '\0', NCCL_UNIQUE_ID_BYTES - NCCL_ID_NAME_AT))
		return NULL;
	return name;
}

static ncclResult_t init_rank(const char *api, ncclComm_t *out, int nranks,
			      const ncclUniqueId *id, int rank)
{
	const char *name = id_name(id);

	if (!out || !name || nranks < 1 || nranks > NCCL_MAX_RANKS || rank < 0 ||
	    rank >= nranks)
		return ncclInvalidArgument;
	if (load_kernels(api))
		return ncclUnhandledCudaError;
	return comm_open(name, rank, nranks, out);
}

SIM_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId,
					  int rank)
{
	SIM_FRAME();
	return init_rank("ncclCommInitRank", comm, nranks, &commId, rank);
}
NCCL_ALIAS(ncclCommInitRank);

SIM_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks,
						ncclUniqueId commId, int rank,
						ncclConfig_t *config)
{
	SIM_FRAME();
	return init_rank("ncclCommInitRankConfig", comm, nranks, &commId, rank);
}
NCCL_ALIAS(ncclCommInitRankConfig);

/* Several ids only speed up real NCCL's bootstrap; the first one names the segment. */
SIM_EXPORT ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
						  int nId, ncclUniqueId *commIds,
						  ncclConfig_t *config)
{
	SIM_FRAME();
	if (nId < 1 || !commIds)
		return ncclInvalidArgument;
	return init_rank("ncclCommInitRankScalable", newcomm, nranks, commIds, myrank);
}
NCCL_ALIAS(ncclCommInitRankScalable);

/* One process, ndev ranks: join them all without waiting on each other. */
SIM_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	char name[NCCL_UNIQUE_ID_BYTES];
	ncclResult_t err = ncclSuccess;

	SIM_FRAME();
	if (!comms || ndev < 1 || ndev > NCCL_MAX_RANKS)
		return ncclInvalidArgument;
	if (load_kernels("ncclCommInitAll"))
		return ncclUnhandledCudaError;
	if (new_id_segment(name, sizeof(name)))
		return ncclSystemError;
	for (int i = 0; i < ndev && !err; i++) {
		comms[i] = comm_new(name, i, ndev);
		err = comms[i] ? nccl_shm_join(comms[i], false) : ncclSystemError;
	}
	return err;
}
NCCL_ALIAS(ncclCommInitAll);

/* This rank's place among the ranks that chose its color, ordered by (key, rank). */
static void split_place(const struct nccl_shm *shm, int nranks, int me, int *new_rank,
			int *new_n, bool *leader)
{
	int color = shm->split_color[me], key = shm->split_key[me];

	*new_rank = *new_n = 0;
	for (int r = 0; r < nranks; r++) {
		if (shm->split_color[r] != color)
			continue;
		(*new_n)++;
		if (shm->split_key[r] < key || (shm->split_key[r] == key && r < me))
			(*new_rank)++;
	}
	*leader = *new_rank == 0;
}

SIM_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				       ncclConfig_t *config)
{
	char name[NCCL_NAME_MAX + 1];
	int new_rank, new_n, n;
	bool leader;
	ncclResult_t err;

	SIM_FRAME();
	if (!nccl_comm_ok(comm) || !newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
		return ncclInvalidArgument;
	comm->shm->split_color[comm->rank] = color;
	comm->shm->split_key[comm->rank] = key;
	err = nccl_shm_host_barrier(comm);
	if (err)
		return err;
	split_place(comm->shm, comm->nranks, comm->rank, &new_rank, &new_n, &leader);
	n = snprintf(name, sizeof(name), "%s.s%d.c%d", comm->shm_name, comm->splits++, color);
	if (n >= (int)sizeof(name))
		return ncclInternalError;
	if (leader && color != NCCL_SPLIT_NOCOLOR && nccl_shm_create(name))
		err = ncclSystemError;
	/* everyone has read the colors and the new segments exist */
	if (nccl_shm_host_barrier(comm) || err)
		return err ? err : ncclSystemError;
	*newcomm = NULL;
	if (color == NCCL_SPLIT_NOCOLOR)
		return ncclSuccess;
	err = comm_open(name, new_rank, new_n, newcomm);
	if (err)
		return err;
	/* a split keeps its parent's collective timing */
	(*newcomm)->base_ns = comm->base_ns;
	(*newcomm)->ns_per_kib = comm->ns_per_kib;
	return ncclSuccess;
}
NCCL_ALIAS(ncclCommSplit);

/* Work is tracked by the streams, not here: nothing is left to flush. */
SIM_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
	SIM_FRAME();
	return nccl_comm_ok(comm) ? ncclSuccess : ncclInvalidArgument;
}
NCCL_ALIAS(ncclCommFinalize);

SIM_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
	SIM_FRAME();
	return comm_retire(comm);
}
NCCL_ALIAS(ncclCommDestroy);

SIM_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm)
{
	SIM_FRAME();
	return comm_retire(comm);
}
NCCL_ALIAS(ncclCommAbort);

static ncclResult_t comm_get(const struct specsim_nccl_comm *c, bool rank, int *out)
{
	if (!nccl_comm_ok(c) || !out)
		return ncclInvalidArgument;
	*out = rank ? c->rank : c->nranks;
	return ncclSuccess;
}

SIM_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
	SIM_FRAME();
	return comm_get(comm, false, count);
}
NCCL_ALIAS(ncclCommCount);

SIM_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
	SIM_FRAME();
	return comm_get(comm, true, rank);
}
NCCL_ALIAS(ncclCommUserRank);
