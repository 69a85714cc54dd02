// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --eager-loop: a speculative decoder with no CUDA graph, shaped like assisted
 * generation and servers run without graphs. Per cycle, on the main stream:
 *
 *   per draft token: the draft model's forward (its own kernels, grids for one
 *     token), the token copied to pinned memory and cuStreamSynchronize (the
 *     stopping criteria read it)
 *   the target's forward over k + 1 tokens, the result copied to the host and
 *     cuStreamSynchronize (the accept)
 *   the KV-cache trim: two small kernels and a memset (--eager-trim-joined: no
 *     memset, so the trim's kernels run on into the next draft's first forward)
 *
 * k follows the dynamic heuristic: +2 after a cycle whose tokens were all
 * accepted, -1 after a rejection, within [1, --draft-k]. --eager-same drafts
 * with the target's kernels (draft = target): only grids and the loop's
 * structure tell the two forwards apart.
 *
 * --torch: as PyTorch runs it eagerly. Everything on the legacy stream; a
 * token's item() copies to pinned memory (PyTorch's own pinned scalar), the
 * accept's tolist() to pageable memory (that copy returns when done, then the
 * sync); the trim's zero_() of cache slices is fill kernels, no memset, so it
 * runs on into the next draft. Each forward copies device to device after its
 * first kernel and the target's layers clear a workspace with a memset, as
 * on an H100: work inside a forward that ends no burst of it. The target's
 * MLP kernel changes with the tokens it runs over, as a GEMM library's
 * choice by shape does: the verify's kernels differ from one k to another.
 *
 * --verify-mode eager: the draft's steps and the extend are graphs, the
 * target's forward over k + 1 tokens is these eager kernels (a batch too large
 * for the captured graphs).
 */
#include "rank.h"

#define TRIM_KERNELS 2
#define TRIM_NS 5000
#define HEAD_GRID 64
/* --torch: forwards over this many tokens or more run the wide MLP kernel */
#define WIDE_TOKENS 5

struct eager_kernels {
	CUfunction draft_layer, draft_head, attn, mlp, mlp_wide, head, trim;
	long long draft_layer_ns, draft_head_ns, layer_ns, head_ns;
};

static struct eager_kernels ek;
static int tokens_k;	/* draft tokens this cycle */

static int get_function(struct rank_state *st, CUfunction *f, const char *name, long long ns)
{
	CU(cuModuleGetFunction, (f, st->module, name), A("func_out", f), A("module", st->module),
	   AS("name", name), A("func", *f));
	specsimSetFunctionDurationNs(*f, ns);
	return 0;
}

/* Before the start gate, as a server loads its kernels. */
int eager__setup(struct rank_state *st)
{
	long long draft = env.draft_ns / (env.draft_kernels + 1);
	long long layer = env.verify_ns / (2 * env.layers + 1);

	ek.draft_layer_ns = draft;
	ek.draft_head_ns = env.draft_ns - draft * env.draft_kernels;
	ek.layer_ns = layer;
	ek.head_ns = env.verify_ns - layer * 2 * env.layers;
	tokens_k = (env.draft_k + 1) / 2;
	return get_function(st, &ek.draft_layer, "eager_draft_layer", ek.draft_layer_ns) ||
	       get_function(st, &ek.draft_head, "eager_draft_lm_head", ek.draft_head_ns) ||
	       get_function(st, &ek.attn, "eager_target_attention", ek.layer_ns) ||
	       get_function(st, &ek.mlp, "eager_target_mlp", ek.layer_ns) ||
	       get_function(st, &ek.mlp_wide, "eager_target_mlp_wide", ek.layer_ns) ||
	       get_function(st, &ek.head, "eager_target_lm_head", ek.head_ns) ||
	       get_function(st, &ek.trim, "eager_kv_trim", TRIM_NS) ? -1 : 0;
}

/* One eager launch whose grid grows with the tokens the forward processes. */
static int launch(struct rank_state *st, CUfunction f, unsigned int gx, unsigned int bx)
{
	CU(cuLaunchKernel, (f, gx, 1, 1, bx, 1, 1, 0, st->work, NULL, NULL), A("func", f),
	   A("gx", gx), A("gy", 1), A("gz", 1), A("bx", bx), A("by", 1), A("bz", 1),
	   A("shmem", 0), A("stream", st->work));
	st->count.kernels++;
	return 0;
}

static int batch_size(const struct rank_state *st)
{
	return env.batch_sizes[st->batch_index];
}

/*
 * --torch: work on the device alone inside a forward, as PyTorch's eager ops
 * make it: a table copied device to device at the forward's start, an
 * attention's workspace cleared by a memset in each of the target's layers.
 */
static int device_copy(struct rank_state *st)
{
	CUdeviceptr dst = st->kv + (32 << 20), src = st->kv + (48 << 20);

	if (!env.torch)
		return 0;
	CU(cuMemcpyDtoDAsync_v2, (dst, src, 4096, st->work), A("dst", dst), A("src", src),
	   A("bytes", 4096), A("stream", st->work));
	return 0;
}

static int workspace_clear(struct rank_state *st)
{
	CUdeviceptr ws = st->kv + (40 << 20);

	if (!env.torch)
		return 0;
	CU(cuMemsetD8Async, (ws, 0, 8192, st->work), A("dst", ws), A("value", 0),
	   A("count", 8192), A("stream", st->work));
	return 0;
}

/*
 * --torch: a GEMM library picks its kernel by the matrix's shape, so the
 * target's forward over more tokens runs another MLP kernel.
 */
static CUfunction mlp_of(int tokens)
{
	return env.torch && tokens >= WIDE_TOKENS ? ek.mlp_wide : ek.mlp;
}

/* The target's forward over tokens per sequence; note: bounds of each launch. */
static int target_forward(struct rank_state *st, int tokens, int cycle,
			  void (*note)(struct rank_state *st, int cycle))
{
	unsigned int rows = batch_size(st) * tokens;

	for (int l = 0; l < env.layers; l++) {
		if (launch(st, ek.attn, rows * 8, 128))
			return -1;
		note(st, cycle);
		if ((l == 0 && device_copy(st)) || workspace_clear(st))
			return -1;
		if (launch(st, mlp_of(tokens), rows * 32, 256))
			return -1;
		note(st, cycle);
	}
	if (launch(st, ek.head, HEAD_GRID * rows, 256))
		return -1;
	note(st, cycle);
	return 0;
}

static int draft_forward(struct rank_state *st, int cycle)
{
	unsigned int rows = batch_size(st);

	if (env.eager_same)
		return target_forward(st, 1, cycle, bounds__draft_launch);
	for (int i = 0; i < env.draft_kernels; i++) {
		if (launch(st, ek.draft_layer, rows * 4, 64))
			return -1;
		bounds__draft_launch(st, cycle);
		if (i == 0 && device_copy(st))
			return -1;
	}
	if (launch(st, ek.draft_head, rows * 16, 128))
		return -1;
	bounds__draft_launch(st, cycle);
	return 0;
}

/*
 * The host reads a draft token: a copy to pinned memory, then the stream's
 * sync. Its own function, as the stopping criteria are code apart from the
 * accept: the two syncs have different call sites.
 */
static __attribute__((noinline)) int read_back(struct rank_state *st, int cycle, void *dst, size_t bytes)
{
	CU(cuMemcpyDtoHAsync_v2, (dst, st->accept_dev, bytes, st->work), A("dst_host", dst),
	   A("src", st->accept_dev), A("bytes", bytes), A("stream", st->work));
	CU(cuStreamSynchronize, (st->work), A("stream", st->work));
	bounds__blocking(st, cycle);
	(void)*(volatile int *)dst;
	return 0;
}

int eager__draft(struct rank_state *st, int cycle)
{
	loop__host_prepare();
	for (int j = 0; j < tokens_k; j++) {
		/* the stopping criteria's read of each token */
		truth__set_tag("draft-token");
		if (draft_forward(st, cycle) || read_back(st, cycle, st->ids_host, 4))
			return -1;
		truth__set_tag(NULL);
	}
	if (loop__plant_sync(st, cycle))
		return -1;
	return plants__at(st, POS_DRAFT_VERIFY, cycle);
}

/* --verify-mode eager: the target's forward alone, between draft and extend graphs. */
int eager__target_verify(struct rank_state *st, int cycle)
{
	return target_forward(st, env.draft_k + 1, cycle, bounds__verify_launch);
}

int eager__verify(struct rank_state *st, int cycle)
{
	loop__host_prepare();
	if (target_forward(st, tokens_k + 1, cycle, bounds__verify_launch))
		return -1;
	return plants__at(st, POS_AFTER_VERIFY, cycle);
}

/* Accepted tokens: all of them every third cycle, else fewer (a fixed pattern). */
static int accepted(int cycle, int k)
{
	return cycle % 3 == 0 ? k : (cycle * 7) % k;
}

int eager__accept(struct rank_state *st, int cycle)
{
	size_t bytes = (size_t)batch_size(st) * (tokens_k + 1) * 4;
	/* --torch: tolist() reads into pageable memory */
	char *dst = env.torch ? st->pageable_buf : st->accept_host;

	CU(cuMemcpyDtoHAsync_v2, (dst, st->accept_dev, bytes, st->work), A("dst_host", dst),
	   A("src", st->accept_dev), A("bytes", bytes), A("stream", st->work));
	if (plants__at(st, POS_ACCEPT, cycle))
		return -1;
	CU(cuStreamSynchronize, (st->work), A("stream", st->work));
	bounds__blocking(st, cycle);
	bounds__accepted(st, cycle);
	(void)*(volatile int *)dst;
	return 0;
}

/* The KV cache cut back to the accepted length; then the next k is chosen. */
int eager__extend(struct rank_state *st, int cycle)
{
	int k = tokens_k, n = accepted(cycle, k);
	size_t drop = (size_t)(k - n + 1) * 256;

	for (int i = 0; i < TRIM_KERNELS; i++) {
		if (launch(st, ek.trim, batch_size(st) * 2, 128))
			return -1;
		bounds__extend_launch(st, cycle);
	}
	/* joined (and PyTorch's zero_ of slices): the trim runs straight into the next draft */
	if (!env.eager_trim_joined && !env.torch)
		CU(cuMemsetD32Async, (st->kv, 0, drop, st->work), A("dst", st->kv),
		   A("value", 0), A("count", drop), A("stream", st->work));
	tokens_k = n == k ? k + 2 : k - 1;
	tokens_k = tokens_k < 1 ? 1 : tokens_k > env.draft_k ? env.draft_k : tokens_k;
	return plants__at(st, POS_EXTEND, cycle) || plants__at(st, POS_OUTSIDE, cycle) ? -1 : 0;
}
