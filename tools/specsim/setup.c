// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A rank's setup and teardown, in the order a serving framework does them:
 * driver and context, streams, kernels by name, buffers, then NCCL. Every
 * driver and NCCL call goes through CALL so the ground truth has it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "rank.h"

static const char module_image[] = "specsim target and draft kernels";
static const char library_image[] = "specsim draft lm head";

static int load_module(struct rank_state *st, CUfunction *f, const char *name)
{
	CU(cuModuleGetFunction, (f, st->module, name), A("func_out", f), A("module", st->module),
	   AS("name", name), A("func", *f));
	return 0;
}

/* Splits total GPU time over n kernels; the last one takes the remainder. */
static void split_ns(CUfunction each, CUfunction last, long long total, int n, long long *each_ns,
		     long long *last_ns)
{
	*each_ns = total / n;
	*last_ns = total - *each_ns * (n - 1);
	specsimSetFunctionDurationNs(each, *each_ns);
	specsimSetFunctionDurationNs(last, *last_ns);
}

static int load_kernels(struct rank_state *st)
{
	struct kernels *k = &st->k;
	static const char *const names[] = {
		"draft_decoder_layer", "target_attention", "target_mlp_gemm", "target_side_proj",
		"extend_decoder_layer", "extend_lm_head", "accept_eager", "rate_nop",
	};
	CUfunction *slots[] = { &k->draft_layer, &k->attn, &k->mlp, &k->side,
				&k->extend_layer, &k->extend_head, &k->eager, &k->nop };

	CU(cuModuleLoadData, (&st->module, module_image), A("module_out", &st->module),
	   A("image", module_image), A("module", st->module));
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		if (load_module(st, slots[i], names[i]))
			return -1;
	CU(cuLibraryLoadData, (&st->library, library_image, NULL, NULL, 0, NULL, NULL, 0),
	   A("library_out", &st->library), A("code", library_image), A("library", st->library));
	CU(cuLibraryGetKernel, (&st->head_kernel, st->library, "draft_lm_head"),
	   A("kernel_out", &st->head_kernel), A("library", st->library),
	   AS("name", "draft_lm_head"), A("kernel", st->head_kernel));
	CU(cuKernelGetFunction, (&k->draft_head, st->head_kernel), A("func_out", &k->draft_head),
	   A("kernel", st->head_kernel), A("func", k->draft_head));

	split_ns(k->draft_layer, k->draft_head, env.draft_ns, env.draft_kernels,
		 &st->ns.draft_layer, &st->ns.draft_head);
	split_ns(k->extend_layer, k->extend_head, env.extend_ns, env.draft_kernels,
		 &st->ns.extend_layer, &st->ns.extend_head);
	/* verify: attention + MLP per layer, and one side-stream kernel */
	split_ns(k->attn, k->side, env.verify_ns, 2 * env.layers + 1, &st->ns.attn, &st->ns.side);
	st->ns.mlp = st->ns.attn;
	specsimSetFunctionDurationNs(k->mlp, st->ns.mlp);
	st->ns.eager = env.eager ? env.accept_ns / env.eager : 0;
	specsimSetFunctionDurationNs(k->eager, st->ns.eager);
	specsimSetFunctionDurationNs(k->nop, 0);
	return 0;
}

static int alloc_buffers(struct rank_state *st)
{
	int max_bs = 0;

	for (int i = 0; i < env.nr_batch_sizes; i++)
		if (env.batch_sizes[i] > max_bs)
			max_bs = env.batch_sizes[i];
	st->accept_bytes = (size_t)max_bs * (env.draft_k + 1) * 4;
	st->hidden_count = (size_t)max_bs * 1024;
	CU(cuMemAlloc_v2, (&st->kv, 64 << 20), A("dptr_out", &st->kv), A("bytes", 64 << 20),
	   A("dptr", st->kv));
	CU(cuMemAlloc_v2, (&st->accept_dev, st->accept_bytes), A("dptr_out", &st->accept_dev),
	   A("bytes", st->accept_bytes), A("dptr", st->accept_dev));
	CU(cuMemAlloc_v2, (&st->hidden, st->hidden_count * 2), A("dptr_out", &st->hidden),
	   A("bytes", st->hidden_count * 2), A("dptr", st->hidden));
	/* two halves: deferred accept reads one cycle's result while the next lands */
	CU(cuMemHostAlloc, (&st->accept_host, 2 * st->accept_bytes, 0),
	   A("ptr_out", &st->accept_host), A("bytes", 2 * st->accept_bytes), A("flags", 0),
	   A("ptr", st->accept_host));
	CU(cuMemAllocHost_v2, (&st->ids_host, 4096), A("ptr_out", &st->ids_host), A("bytes", 4096),
	   A("ptr", st->ids_host));
	if (env.pageable || (env.eager_loop && env.torch)) {
		st->pageable_buf = calloc(2, st->accept_bytes);
		if (!st->pageable_buf)
			return -1;
	}
	CU(cuMemsetD32Async, (st->accept_dev, 0, st->accept_bytes / 4, st->main),
	   A("dst", st->accept_dev), A("value", 0), A("count", st->accept_bytes / 4),
	   A("stream", st->main));
	CU(cuMemcpyHtoDAsync_v2, (st->kv, st->ids_host, 4096, st->main), A("dst", st->kv),
	   A("src_host", st->ids_host), A("bytes", 4096), A("stream", st->main));
	CU(cuStreamSynchronize, (st->main), A("stream", st->main));
	return 0;
}

static int make_events(struct rank_state *st)
{
	CUevent *evs[] = { &st->fork_ev, &st->join_ev, &st->accept_ev[0], &st->accept_ev[1] };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		CU(cuEventCreate, (evs[i], 0), A("event_out", evs[i]), A("flags", 0),
		   A("event", *evs[i]));
	return 0;
}

int setup__init(struct rank_state *st)
{
	int ordinal = st->rank % 8;

	specsimNcclSetCallHook(truth__nested);
	if (env.gpu_log)
		specsimGpuLogEnable(1);
	CU(cuInit, (0), A("flags", 0));
	CU(cuDeviceGet, (&st->dev, ordinal), A("device_out", &st->dev), A("ordinal", ordinal),
	   A("device", st->dev));
	CU(cuDevicePrimaryCtxRetain, (&st->ctx, st->dev), A("ctx_out", &st->ctx),
	   A("device", st->dev), A("ctx", st->ctx));
	CU(cuCtxSetCurrent, (st->ctx), A("ctx", st->ctx));
	CU(cuStreamCreate, (&st->main, CU_STREAM_NON_BLOCKING), A("stream_out", &st->main),
	   A("flags", CU_STREAM_NON_BLOCKING), A("stream", st->main));
	CU(cuStreamCreateWithPriority, (&st->side, CU_STREAM_NON_BLOCKING, -1),
	   A("stream_out", &st->side), A("flags", CU_STREAM_NON_BLOCKING), A("priority", -1),
	   A("stream", st->side));
	/* PyTorch replays on its default stream, the legacy one */
	st->work = env.torch ? NULL : st->main;
	if (make_events(st) || load_kernels(st) || alloc_buffers(st) || torch__setup(st) ||
	    plants__setup(st))
		return -1;
	return 0;
}

static void to_hex(const unsigned char *in, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", in[i]);
}

static int from_hex(const char *in, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned int byte;

		if (sscanf(in + 2 * i, "%2x", &byte) != 1)
			return -1;
		out[i] = byte;
	}
	return 0;
}

/* Rank 0 publishes the id: written aside, then renamed into place. */
int publish_uid(const char *path, const ncclUniqueId *id)
{
	char hex[2 * NCCL_UNIQUE_ID_BYTES + 2], tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	to_hex((const unsigned char *)id->internal, NCCL_UNIQUE_ID_BYTES, hex);
	f = truth__create(tmp);
	if (!f || fprintf(f, "%s\n", hex) < 0 || fclose(f) || rename(tmp, path)) {
		perror(path);
		return -1;
	}
	return 0;
}

int fetch_uid(const char *path, ncclUniqueId *id)
{
	char hex[2 * NCCL_UNIQUE_ID_BYTES + 2];
	struct timespec ms = { 0, 1000000 };
	FILE *f = NULL;

	for (int i = 0; i < 60000 && !stop_requested; i++) {
		f = fopen(path, "r");
		if (f)
			break;
		nanosleep(&ms, NULL);
	}
	if (!f) {
		fprintf(stderr, "specsim-server: rank %d: no NCCL id at %s\n", env.rank, path);
		return -1;
	}
	if (!fgets(hex, sizeof(hex), f) || strlen(hex) < 2 * NCCL_UNIQUE_ID_BYTES ||
	    from_hex(hex, (unsigned char *)id->internal, NCCL_UNIQUE_ID_BYTES)) {
		fclose(f);
		fprintf(stderr, "specsim-server: rank %d: bad NCCL id in %s\n", env.rank, path);
		return -1;
	}
	fclose(f);
	return 0;
}

int setup__nccl(struct rank_state *st)
{
	ncclUniqueId id;

	if (st->rank == 0) {
		CU(ncclGetUniqueId, (&id), A("id_out", &id));
		if (env.uid_file && publish_uid(env.uid_file, &id))
			return -1;
	} else if (fetch_uid(env.uid_file, &id)) {
		return -1;
	}
	CU(ncclCommInitRank, (&st->comm, env.ranks, id, st->rank), A("comm_out", &st->comm),
	   A("nranks", env.ranks), A("rank", st->rank), A("comm", st->comm));
	specsimNcclSetCollectiveNs(st->comm, env.allreduce_ns, 0);
	return 0;
}

static void destroy_pair(struct graph_pair *p)
{
	if (p->exec)
		CALL(cuGraphExecDestroy, (p->exec), A("exec", p->exec));
	if (p->graph)
		CALL(cuGraphDestroy, (p->graph), A("graph", p->graph));
	p->exec = NULL;
	p->graph = NULL;
}

static void free_buffers(struct rank_state *st)
{
	CUevent evs[] = { st->fork_ev, st->join_ev, st->accept_ev[0], st->accept_ev[1] };
	CUdeviceptr dev[] = { st->kv, st->accept_dev, st->hidden };
	void *host[] = { st->accept_host, st->ids_host };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			CALL(cuEventDestroy_v2, (evs[i]), A("event", evs[i]));
	for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
		if (host[i])
			CALL(cuMemFreeHost, (host[i]), A("ptr", host[i]));
	for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
		if (dev[i])
			CALL(cuMemFree_v2, (dev[i]), A("dptr", dev[i]));
	free(st->pageable_buf);
}

/* Drains the GPU, then releases everything; failures are noted, not fatal. */
void setup__teardown(struct rank_state *st)
{
	truth__set_phase(PH_TEARDOWN, -1);
	if (st->main)
		CALL(cuStreamSynchronize, (st->main), A("stream", st->main));
	for (int b = 0; b < env.nr_batch_sizes; b++) {
		for (int j = 0; j < MAX_VERIFY_PIECES; j++)
			destroy_pair(&st->verify[b][j]);
		destroy_pair(&st->extend[b]);
		for (int j = 0; j < MAX_DRAFT_K; j++)
			destroy_pair(&st->draft[b][j]);
	}
	if (st->comm) {
		CALL(ncclCommFinalize, (st->comm), A("comm", st->comm));
		CALL(ncclCommDestroy, (st->comm), A("comm", st->comm));
	}
	plants__teardown(st);
	torch__teardown(st);
	free_buffers(st);
	if (st->side)
		CALL(cuStreamDestroy_v2, (st->side), A("stream", st->side));
	if (st->main)
		CALL(cuStreamDestroy_v2, (st->main), A("stream", st->main));
}
