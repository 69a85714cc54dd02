// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Graph capture at start, as SGLang does it: every batch size's target verify
 * graph first, then the draft graphs, then draft-extend. The verify graph forks
 * a side stream through events (capture spreads there) and, with several
 * ranks, ends each layer with a captured ncclAllReduce. Piecewise, as vLLM
 * does it, the verify forward is several graphs, each a run of layers. With
 * --torch, as cudagraph trees do it, one graph per draft position and no
 * draft-extend graph, captured on a side stream and replayed on the legacy one.
 */
#include <string.h>
#include "rank.h"

int graphs__launch(struct rank_state *st, CUfunction f, CUstream s, int bs, long long ns)
{
	unsigned int gx = bs * 16;

	CU(cuLaunchKernel, (f, gx, 1, 1, 128, 1, 1, 0, s, NULL, NULL), A("func", f), A("gx", gx),
	   A("gy", 1), A("gz", 1), A("bx", 128), A("by", 1), A("bz", 1), A("shmem", 0),
	   A("stream", s));
	st->count.kernels++;
	st->count.gpu_ns += ns;
	return 0;
}

/* The GEMM goes through cuLaunchKernelEx, as cuBLAS launches do. */
static int launch_ex(struct rank_state *st, CUfunction f, CUstream s, int bs, long long ns)
{
	CUlaunchConfig cfg = {
		.gridDimX = bs * 8, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = 256, .blockDimY = 1, .blockDimZ = 1,
		.sharedMemBytes = 49152,
		.hStream = s,
	};

	CU(cuLaunchKernelEx, (&cfg, f, NULL, NULL), A("config", &cfg), A("func", f),
	   A("gx", cfg.gridDimX), A("gy", 1), A("gz", 1), A("bx", 256), A("by", 1), A("bz", 1),
	   A("shmem", 49152), A("stream", s));
	st->count.kernels++;
	st->count.gpu_ns += ns;
	return 0;
}

static int capture_begin(struct rank_state *st)
{
	memset(&st->count, 0, sizeof(st->count));
	CU(cuStreamBeginCapture_v2, (st->main, CU_STREAM_CAPTURE_MODE_GLOBAL),
	   A("stream", st->main), A("mode", CU_STREAM_CAPTURE_MODE_GLOBAL));
	return 0;
}

/* piece < 0: a whole forward, and the exec line has no "piece" */
static int capture_end(struct rank_state *st, struct graph_pair *p, const char *role, int bs,
		       int step, int piece)
{
	char piece_field[32] = "";

	CU(cuStreamEndCapture, (st->main, &p->graph), A("stream", st->main),
	   A("graph_out", &p->graph), A("graph", p->graph));
	CU(cuGraphInstantiateWithFlags, (&p->exec, p->graph, 0), A("exec_out", &p->exec),
	   A("graph", p->graph), A("flags", 0), A("exec", p->exec));
	if (piece >= 0)
		snprintf(piece_field, sizeof(piece_field), ",\"piece\":%d", piece);
	truth__line("\"exec\":%llu,\"graph\":%llu,\"role\":\"%s\",\"batch\":%d,\"step\":%d,"
		    "\"kernels\":%d,\"side_kernels\":%d,\"collectives\":%d,\"kernel_ns\":%lld,"
		    "\"collective_ns\":%lld,\"capture_stream\":%llu%s",
		    (unsigned long long)(uintptr_t)p->exec, (unsigned long long)(uintptr_t)p->graph,
		    role, bs, step, st->count.kernels, st->count.side_kernels,
		    st->count.collectives, st->count.gpu_ns,
		    st->count.collectives * env.allreduce_ns,
		    (unsigned long long)(uintptr_t)st->main, piece_field);
	return 0;
}

/* main -> event -> side stream joins the capture -> event -> back to main */
static int fork_side(struct rank_state *st, int bs)
{
	CU(cuEventRecord, (st->fork_ev, st->main), A("event", st->fork_ev), A("stream", st->main));
	CU(cuStreamWaitEvent, (st->side, st->fork_ev, 0), A("stream", st->side),
	   A("event", st->fork_ev), A("flags", 0));
	if (graphs__launch(st, st->k.side, st->side, bs, st->ns.side))
		return -1;
	st->count.side_kernels++;
	CU(cuEventRecord, (st->join_ev, st->side), A("event", st->join_ev), A("stream", st->side));
	return 0;
}

static int all_reduce(struct rank_state *st, int bs)
{
	size_t count = (size_t)bs * 1024;
	void *buf = (void *)(uintptr_t)st->hidden;

	CU(ncclAllReduce, (buf, buf, count, ncclBfloat16, ncclSum, st->comm, st->main),
	   A("send", buf), A("recv", buf), A("count", count), A("datatype", ncclBfloat16),
	   A("op", ncclSum), A("comm", st->comm), A("stream", st->main));
	st->count.collectives++;
	return 0;
}

/* Layer 0 forks and joins the side stream, so the fork stays in piece 0. */
static int verify_layer(struct rank_state *st, int bs, int l)
{
	if (l == 0 && fork_side(st, bs))
		return -1;
	if (graphs__launch(st, st->k.attn, st->main, bs, st->ns.attn))
		return -1;
	if (l == 0)
		CU(cuStreamWaitEvent, (st->main, st->join_ev, 0), A("stream", st->main),
		   A("event", st->join_ev), A("flags", 0));
	if (launch_ex(st, st->k.mlp, st->main, bs, st->ns.mlp))
		return -1;
	if (env.ranks > 1 && all_reduce(st, bs))
		return -1;
	return 0;
}

/* Piece j holds layers [j * L / P, (j + 1) * L / P), each with its all-reduce. */
static int capture_verify(struct rank_state *st, int b)
{
	int bs = env.batch_sizes[b], pieces = env.verify_pieces;

	for (int j = 0; j < pieces; j++) {
		if (capture_begin(st))
			return -1;
		for (int l = j * env.layers / pieces; l < (j + 1) * env.layers / pieces; l++)
			if (verify_layer(st, bs, l))
				return -1;
		if (capture_end(st, &st->verify[b][j], "verify", bs, -1, pieces > 1 ? j : -1))
			return -1;
	}
	return 0;
}

static int draft_step(struct rank_state *st, int bs)
{
	for (int i = 0; i < env.draft_kernels - 1; i++)
		if (graphs__launch(st, st->k.draft_layer, st->main, bs, st->ns.draft_layer))
			return -1;
	return graphs__launch(st, st->k.draft_head, st->main, bs, st->ns.draft_head);
}

static int capture_draft(struct rank_state *st, int b)
{
	int bs = env.batch_sizes[b];

	if (env.draft_mode == DRAFT_ONE_GRAPH) {
		if (capture_begin(st))
			return -1;
		for (int j = 0; j < env.draft_k; j++)
			if (draft_step(st, bs))
				return -1;
		return capture_end(st, &st->draft[b][0], "draft", bs, -1, -1);
	}
	for (int j = 0; j < env.draft_k; j++)
		if (capture_begin(st) || draft_step(st, bs) ||
		    capture_end(st, &st->draft[b][j], "draft", bs, j, -1))
			return -1;
	return 0;
}

static int capture_extend(struct rank_state *st, int b)
{
	int bs = env.batch_sizes[b];

	if (capture_begin(st))
		return -1;
	for (int i = 0; i < env.draft_kernels - 1; i++)
		if (graphs__launch(st, st->k.extend_layer, st->main, bs, st->ns.extend_layer))
			return -1;
	if (graphs__launch(st, st->k.extend_head, st->main, bs, st->ns.extend_head))
		return -1;
	return capture_end(st, &st->extend[b], "extend", bs, -1, -1);
}

static int draft_graphs_per_batch(void)
{
	switch (env.draft_mode) {
	case DRAFT_PER_STEP:
		return env.draft_k;
	case DRAFT_ONE_GRAPH:
		return 1;
	case DRAFT_EAGER:
		break;
	}
	return 0;
}

int graphs__capture_all(struct rank_state *st)
{
	st->nr_draft_graphs = draft_graphs_per_batch();
	/* torch.cuda.synchronize() around capture, as frameworks do */
	CU(cuCtxSynchronize_v2, (st->ctx), A("ctx", st->ctx));
	/* an eager loop captures nothing but what a plant captures */
	if (env.eager_loop) {
		st->nr_draft_graphs = 0;
		if (eager__setup(st) || plants__capture(st))
			return -1;
		CU(cuCtxSynchronize_v2, (st->ctx), A("ctx", st->ctx));
		return 0;
	}
	for (int b = 0; b < env.nr_batch_sizes; b++) {
		bool run_order = env.capture_order == CAPTURE_RUN;

		/* eager drafts launch their kernels each step: nothing to capture */
		if (run_order && env.draft_mode != DRAFT_EAGER && capture_draft(st, b))
			return -1;
		/* an eager verify launches its kernels each cycle: nothing to capture */
		if (env.verify_mode == VERIFY_GRAPH && capture_verify(st, b))
			return -1;
	}
	if (env.verify_mode == VERIFY_EAGER && eager__setup(st))
		return -1;
	for (int b = 0; b < env.nr_batch_sizes && env.draft_mode != DRAFT_EAGER &&
			env.capture_order == CAPTURE_VERIFY_FIRST; b++)
		if (capture_draft(st, b))
			return -1;
	/* PyTorch's loop has no draft-extend graph */
	for (int b = 0; b < env.nr_batch_sizes && !env.torch; b++)
		if (capture_extend(st, b))
			return -1;
	if (plants__capture(st))
		return -1;
	CU(cuCtxSynchronize_v2, (st->ctx), A("ctx", st->ctx));
	return 0;
}
