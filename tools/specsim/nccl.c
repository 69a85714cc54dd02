// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The look-alike libnccl.so.2. As in real NCCL, pncclX is the strong symbol and
 * ncclX a weak alias at the same address, and a collective is a kernel launched
 * with cuLaunchKernelEx (a normal call through the PLT into libcuda.so.1), so
 * a launch on a capturing stream lands in the graph and replays with it. The
 * kernel's run hook makes the ranks meet (nccl_shm.c).
 */
#include <errno.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include "nccl_sim.h"

#define GROUP_MAX 256
#define NCCL_THREADS 640
#define NCCL_CHANNELS 4

struct pending_op {
	struct specsim_nccl_comm *comm;
	cudaStream_t stream;
	struct nccl_part part;
};

static __thread int group_depth;
static __thread int group_len;
static __thread struct pending_op group_ops[GROUP_MAX];

static struct nccl_launch *launch_intern(struct specsim_nccl_comm *c, const struct nccl_part *parts,
					 int n)
{
	struct nccl_launch *l;

	pthread_mutex_lock(&c->launches_lock);
	for (l = c->launches; l; l = l->next)
		if (l->nr_parts == n && !memcmp(l->parts, parts, n * sizeof(*parts)))
			break;
	if (!l && (l = calloc(1, sizeof(*l) + n * sizeof(*parts)))) {
		l->comm = c;
		l->nr_parts = n;
		memcpy(l->parts, parts, n * sizeof(*parts));
		l->next = c->launches;
		c->launches = l;
	}
	pthread_mutex_unlock(&c->launches_lock);
	return l;
}

static void note_launch(const char *parent, unsigned long long before, unsigned long long after,
			int result, const CUlaunchConfig *cfg, CUfunction fn)
{
	struct specsim_call_note n = {
		.name = "cuLaunchKernelEx",
		.parent = parent,
		.before_ns = before,
		.after_ns = after,
		.result = result,
	};

	nccl_note_arg(&n, "config", (long long)(uintptr_t)cfg);
	nccl_note_arg(&n, "func", (long long)(uintptr_t)fn);
	nccl_note_arg(&n, "gx", cfg->gridDimX);
	nccl_note_arg(&n, "gy", cfg->gridDimY);
	nccl_note_arg(&n, "gz", cfg->gridDimZ);
	nccl_note_arg(&n, "bx", cfg->blockDimX);
	nccl_note_arg(&n, "by", cfg->blockDimY);
	nccl_note_arg(&n, "bz", cfg->blockDimZ);
	nccl_note_arg(&n, "shmem", cfg->sharedMemBytes);
	nccl_note_arg(&n, "stream", (long long)(uintptr_t)cfg->hStream);
	nccl_note(&n);
}

/* One kernel for the parts of one comm on one stream. */
static ncclResult_t launch_parts(const char *parent, struct specsim_nccl_comm *c,
				 cudaStream_t stream, const struct nccl_part *parts, int n)
{
	struct nccl_launch *l = launch_intern(c, parts, n);
	CUfunction fn = nccl_kernels[n == 1 ? parts[0].kind : K_SEND];
	CUlaunchConfig cfg = {
		.gridDimX = NCCL_CHANNELS, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = NCCL_THREADS, .blockDimY = 1, .blockDimZ = 1,
		.hStream = stream,
	};
	void *param = l;
	void *params[] = { &param };
	unsigned long long before, after;
	CUresult err;

	if (!l)
		return ncclSystemError;
	before = nccl_now_ns();
	err = cuLaunchKernelEx(&cfg, fn, params, NULL);
	after = nccl_now_ns();
	note_launch(parent, before, after, err, &cfg, fn);
	return err ? ncclUnhandledCudaError : ncclSuccess;
}

static ncclResult_t enqueue(const char *api, struct specsim_nccl_comm *c, int kind, size_t bytes,
			    int peer, cudaStream_t stream)
{
	struct nccl_part part = { .kind = kind, .peer = peer, .bytes = bytes };

	if (!nccl_comm_ok(c))
		return ncclInvalidArgument;
	if (c->hang_ns) {
		struct timespec d = { c->hang_ns / 1000000000, c->hang_ns % 1000000000 };

		c->hang_ns = 0;
		while (nanosleep(&d, &d) && errno == EINTR)
			;
	}
	if ((kind == K_SEND || kind == K_RECV) && (peer < 0 || peer >= c->nranks))
		return ncclInvalidArgument;
	if (!bytes)
		return ncclSuccess;
	if (!group_depth)
		return launch_parts(api, c, stream, &part, 1);
	/* inside a group: launched at ncclGroupEnd, as NCCL does */
	if (group_len == GROUP_MAX)
		return ncclInvalidUsage;
	group_ops[group_len++] = (struct pending_op){ c, stream, part };
	return ncclSuccess;
}

static size_t type_size(ncclDataType_t t)
{
	static const unsigned char sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return t >= 0 && t < (int)sizeof(sizes) ? sizes[t] : 0;
}

static ncclResult_t coll(const char *api, int kind, size_t count, ncclDataType_t type, int peer,
			 ncclComm_t comm, cudaStream_t stream, int scale)
{
	if (!type_size(type))
		return ncclInvalidArgument;
	return enqueue(api, comm, kind, count * type_size(type) * scale, peer, stream);
}

/* the scale of collectives whose count is one rank's share */
static int per_rank(ncclComm_t comm)
{
	return nccl_comm_ok(comm) ? comm->nranks : 1;
}

static ncclResult_t rooted(const char *api, int kind, size_t count, ncclDataType_t type, int root,
			   ncclComm_t comm, cudaStream_t stream)
{
	if (nccl_comm_ok(comm) && (root < 0 || root >= comm->nranks))
		return ncclInvalidArgument;
	return coll(api, kind, count, type, -1, comm, stream, 1);
}

SIM_EXPORT ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
				       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				       cudaStream_t stream)
{
	SIM_FRAME();
	return coll("ncclAllReduce", K_ALLREDUCE, count, datatype, -1, comm, stream, 1);
}
NCCL_ALIAS(ncclAllReduce);

SIM_EXPORT ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
				       ncclDataType_t datatype, ncclComm_t comm,
				       cudaStream_t stream)
{
	SIM_FRAME();
	return coll("ncclAllGather", K_ALLGATHER, sendcount, datatype, -1, comm, stream,
		    per_rank(comm));
}
NCCL_ALIAS(ncclAllGather);

SIM_EXPORT ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff,
					   size_t recvcount, ncclDataType_t datatype,
					   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	SIM_FRAME();
	return coll("ncclReduceScatter", K_REDUCESCATTER, recvcount, datatype, -1, comm, stream,
		    per_rank(comm));
}
NCCL_ALIAS(ncclReduceScatter);

SIM_EXPORT ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
				       ncclDataType_t datatype, int root, ncclComm_t comm,
				       cudaStream_t stream)
{
	SIM_FRAME();
	return rooted("ncclBroadcast", K_BROADCAST, count, datatype, root, comm, stream);
}
NCCL_ALIAS(ncclBroadcast);

SIM_EXPORT ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
				    ncclDataType_t datatype, ncclRedOp_t op, int root,
				    ncclComm_t comm, cudaStream_t stream)
{
	SIM_FRAME();
	return rooted("ncclReduce", K_REDUCE, count, datatype, root, comm, stream);
}
NCCL_ALIAS(ncclReduce);

SIM_EXPORT ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
				      ncclDataType_t datatype, ncclComm_t comm,
				      cudaStream_t stream)
{
	SIM_FRAME();
	return coll("ncclAlltoAll", K_ALLTOALL, count, datatype, -1, comm, stream,
		    per_rank(comm));
}
NCCL_ALIAS(ncclAlltoAll);

SIM_EXPORT ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
				    ncclDataType_t datatype, int root, ncclComm_t comm,
				    cudaStream_t stream)
{
	SIM_FRAME();
	return rooted("ncclGather", K_GATHER, count, datatype, root, comm, stream);
}
NCCL_ALIAS(ncclGather);

SIM_EXPORT ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
				     ncclDataType_t datatype, int root, ncclComm_t comm,
				     cudaStream_t stream)
{
	SIM_FRAME();
	return rooted("ncclScatter", K_SCATTER, count, datatype, root, comm, stream);
}
NCCL_ALIAS(ncclScatter);

SIM_EXPORT ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
				  int peer, ncclComm_t comm, cudaStream_t stream)
{
	SIM_FRAME();
	return coll("ncclSend", K_SEND, count, datatype, peer, comm, stream, 1);
}
NCCL_ALIAS(ncclSend);

SIM_EXPORT ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
				  int peer, ncclComm_t comm, cudaStream_t stream)
{
	SIM_FRAME();
	return coll("ncclRecv", K_RECV, count, datatype, peer, comm, stream, 1);
}
NCCL_ALIAS(ncclRecv);

SIM_EXPORT ncclResult_t pncclGroupStart(void)
{
	SIM_FRAME();
	group_depth++;
	return ncclSuccess;
}
NCCL_ALIAS(ncclGroupStart);

/* One launch per (comm, stream), in the order each pair first appeared. */
static ncclResult_t flush_group(void)
{
	struct nccl_part parts[GROUP_MAX];
	bool done[GROUP_MAX] = { false };
	ncclResult_t ret = ncclSuccess, err;

	for (int i = 0; i < group_len; i++) {
		int n = 0;

		if (done[i])
			continue;
		for (int j = i; j < group_len; j++) {
			if (done[j] || group_ops[j].comm != group_ops[i].comm ||
			    group_ops[j].stream != group_ops[i].stream)
				continue;
			parts[n++] = group_ops[j].part;
			done[j] = true;
		}
		err = launch_parts("ncclGroupEnd", group_ops[i].comm, group_ops[i].stream, parts,
				   n);
		if (err && !ret)
			ret = err;
	}
	group_len = 0;
	return ret;
}

SIM_EXPORT ncclResult_t pncclGroupEnd(void)
{
	SIM_FRAME();
	if (!group_depth)
		return ncclInvalidUsage;
	if (--group_depth)
		return ncclSuccess;
	return flush_group();
}
NCCL_ALIAS(ncclGroupEnd);
