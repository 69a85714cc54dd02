// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --torch: the calls of a torch.compile(mode="reduce-overhead") speculative
 * decoder, as measured on an H200. Everything runs on the legacy stream
 * (PyTorch's default stream, handle 0); cudagraph trees record one graph per
 * draft position and copy a replay's inputs in just before it. One cycle, from
 * its first draft graph launch to the next cycle's:
 *
 *   per draft step: [pos kernel, 2 input copies,] a replay of its own exec
 *   cat kernel, 2 input copies, a replay of the verify exec
 *   != and nonzero kernels, D2H of the count, cuStreamSynchronize (the accept sync)
 *   2 kernels, D2H of .item()'s value, cuStreamSynchronize
 *   clone (D2D), memset, async D2H into pinned memory
 *   the next position: H2D from pageable memory, cuStreamSynchronize, then the
 *   first draft step's pos kernel and input copies
 *
 * A replay is cuStreamIsCapturing (CUDAGraph.replay asks first), then cuGraphLaunch.
 * The first step's inputs come before its graph launch, so they are made at
 * the end of the previous iteration (for cycle 0, before the loop): each
 * iteration then holds exactly the calls of one cycle.
 */
#include <stdlib.h>
#include "rank.h"

#define SMALL_NS 2000		/* pos, cat, != and nonzero kernels */
#define SIDE_NS 50000		/* the side-stream plants' kernel */
#define INPUT_COPIES 2

/* offsets in the device buffer */
enum {
	DEV_POS = 0,		/* the scalar */
	DEV_COUNT = 64,		/* nonzero's count */
	DEV_ITEM = 128,		/* .item()'s value */
	DEV_CLONE = 256,
	DEV_MASK = 512,
	DEV_INPUTS = 4096,	/* the graphs' static inputs */
	DEV_BYTES = 65536,
};

/* offsets in the pinned buffer, where the D2H copies land */
enum {
	HOST_COUNT = 0,
	HOST_ITEM = 64,
	HOST_OUT = 128,
	HOST_BYTES = 4096,
};

static void note(const char *tag, enum plant_pos pos)
{
	truth__set_tag(tag);
	truth__set_position(tag ? plant_pos_name(pos) : NULL);
}

/* stream_busy for the next call: did the legacy stream have work queued? */
static void note_busy(bool on)
{
	truth__set_stream_busy(on ? specsimStreamBusy(NULL) : -1);
}

static int batch_size(const struct rank_state *st)
{
	return env.batch_sizes[st->batch_index];
}

/* An eager kernel; the first legacy call after side-stream work is that plant's call. */
static int legacy_kernel(struct rank_state *st, CUfunction f, enum plant_pos pos)
{
	struct torch_state *t = &st->torch;
	int err;

	if (t->pending) {
		note(t->pending_tag, pos);
		truth__set_serialises((uintptr_t)t->pending);
		t->pending = NULL;
		t->tainted = true;
	} else {
		note(t->tainted ? "clean:legacy" : NULL, pos);
	}
	err = graphs__launch(st, f, NULL, batch_size(st), 0);
	truth__set_serialises(0);
	note(NULL, 0);
	return err;
}

static int d2d(CUdeviceptr dst, CUdeviceptr src, size_t bytes, enum plant_pos pos)
{
	note("clean:legacy", pos);
	note_busy(true);
	CU(cuMemcpyDtoDAsync_v2, (dst, src, bytes, NULL), A("dst", dst), A("src", src),
	   A("bytes", bytes), A("stream", NULL));
	note_busy(false);
	note(NULL, 0);
	return 0;
}

/* cudagraph trees copy a replay's inputs into the graph's static buffers first */
static int input_copies(struct rank_state *st, enum plant_pos pos)
{
	static const size_t bytes[INPUT_COPIES] = { 256, 4096 };
	CUdeviceptr dst = st->torch.dev + DEV_INPUTS, src = st->kv;

	for (int i = 0; i < INPUT_COPIES; i++) {
		if (d2d(dst, src, bytes[i], pos))
			return -1;
		dst += bytes[i];
		src += bytes[i];
	}
	return 0;
}

/* Into pinned memory made before the start gate: plain work for the host. */
static int d2h(char *dst, CUdeviceptr src, size_t bytes)
{
	CU(cuMemcpyDtoHAsync_v2, (dst, src, bytes, NULL), A("dst_host", dst), A("src", src),
	   A("bytes", bytes), A("stream", NULL));
	return 0;
}

static int legacy_sync(void)
{
	CU(cuStreamSynchronize, (NULL), A("stream", NULL));
	return 0;
}

/* CUDAGraph.replay: asks whether the stream is capturing, then launches. */
static int replay(CUgraphExec x)
{
	CUstreamCaptureStatus status;

	CU(cuStreamIsCapturing, (NULL, &status), A("stream", NULL), A("status_out", &status),
	   A("status", status));
	CU(cuGraphLaunch, (x, NULL), A("exec", x), A("stream", NULL));
	return 0;
}

/* The sync PyTorch makes after a copy: a round trip of its own, tagged as a finding. */
static int extra_sync(struct rank_state *st, enum plant_pos pos, int cycle)
{
	note("planted:stream", pos);
	note_busy(true);
	if (legacy_sync())
		return -1;
	bounds__blocking(st, cycle);
	note_busy(false);
	note(NULL, 0);
	return 0;
}

/*
 * torch.tensor([pos], device="cuda") for the next cycle: the copy is staged,
 * and, made with non_blocking=False, followed by a sync; then the first draft
 * step's pos kernel and input copies. cycle: the iteration making it, -1 before
 * the loop.
 */
int torch__prologue(struct rank_state *st, int cycle)
{
	struct torch_state *t = &st->torch;
	enum plant_pos pos = cycle < 0 ? POS_OUTSIDE : POS_ACCEPT;
	CUdeviceptr dst = t->dev + DEV_POS;

	loop__host_prepare();
	*(volatile long long *)t->pos_host = cycle + 1;
	note("clean:staged-h2d", pos);
	note_busy(true);
	CU(cuMemcpyHtoDAsync_v2, (dst, t->pos_host, 8, NULL), A("dst", dst),
	   A("src_host", t->pos_host), A("bytes", 8), A("stream", NULL));
	bounds__draft_setup(st, cycle + 1);
	if (extra_sync(st, pos, cycle))
		return -1;
	return legacy_kernel(st, t->pos_add, pos) || input_copies(st, pos) ? -1 : 0;
}

/* One exec per draft position, each launched once. */
int torch__draft(struct rank_state *st, int cycle)
{
	struct torch_state *t = &st->torch;

	t->tainted = false;
	for (int j = 0; j < st->nr_draft_graphs; j++) {
		CUgraphExec x = st->draft[st->batch_index][j].exec;

		if (j && (legacy_kernel(st, t->pos_add, POS_DRAFT_VERIFY) ||
			  input_copies(st, POS_DRAFT_VERIFY)))
			return -1;
		if (replay(x))
			return -1;
		bounds__draft_launch(st, cycle);
	}
	if (loop__plant_sync(st, cycle))
		return -1;
	return plants__at(st, POS_DRAFT_VERIFY, cycle);
}

int torch__verify(struct rank_state *st, int cycle)
{
	CUgraphExec x = st->verify[st->batch_index][0].exec;

	loop__host_prepare();
	if (legacy_kernel(st, st->torch.cat, POS_DRAFT_VERIFY) ||
	    input_copies(st, POS_DRAFT_VERIFY))
		return -1;
	if (replay(x))
		return -1;
	bounds__verify_launch(st, cycle);
	return plants__at(st, POS_AFTER_VERIFY, cycle);
}

/* (tokens != draft).nonzero(): the count comes to the host, the sync waits for verify. */
static int accept_count(struct rank_state *st, int cycle)
{
	struct torch_state *t = &st->torch;

	if (legacy_kernel(st, t->ne, POS_AFTER_VERIFY) ||
	    legacy_kernel(st, t->nonzero, POS_AFTER_VERIFY) ||
	    d2h(t->pinned + HOST_COUNT, t->dev + DEV_COUNT, 4) || plants__at(st, POS_ACCEPT, cycle) ||
	    legacy_sync())
		return -1;
	bounds__blocking(st, cycle);
	bounds__accepted(st, cycle);
	(void)*(volatile int *)(t->pinned + HOST_COUNT);
	return 0;
}

/* .item() on the accepted length: one more D2H and one more sync, which the loop need not make */
static int accept_item(struct rank_state *st, int cycle)
{
	struct torch_state *t = &st->torch;

	if (legacy_kernel(st, t->acc_index, POS_ACCEPT) ||
	    legacy_kernel(st, t->acc_sum, POS_ACCEPT))
		return -1;
	note("clean:pinned-copy", POS_ACCEPT);
	note_busy(true);
	if (d2h(t->pinned + HOST_ITEM, t->dev + DEV_ITEM, 8))
		return -1;
	return extra_sync(st, POS_ACCEPT, cycle);
}

/* The accepted tokens cloned, a mask cleared, a result copied to pinned memory: no waits. */
static int accept_tail(struct rank_state *st)
{
	struct torch_state *t = &st->torch;
	CUdeviceptr mask = t->dev + DEV_MASK;

	if (d2d(t->dev + DEV_CLONE, t->dev + DEV_INPUTS, 64, POS_ACCEPT))
		return -1;
	note("clean:legacy", POS_ACCEPT);
	note_busy(true);
	CU(cuMemsetD8Async, (mask, 0, 64, NULL), A("dst", mask), A("value", 0), A("count", 64),
	   A("stream", NULL));
	note("clean:pinned-copy", POS_ACCEPT);
	note_busy(true);
	if (d2h(t->pinned + HOST_OUT, t->dev + DEV_CLONE, 8))
		return -1;
	note_busy(false);
	note(NULL, 0);
	return 0;
}

int torch__accept(struct rank_state *st, int cycle)
{
	if (accept_count(st, cycle) || accept_item(st, cycle) || accept_tail(st))
		return -1;
	if (cycle + 1 < env.cycles && !stop_requested && torch__prologue(st, cycle))
		return -1;
	bounds__cycle_tail(st, cycle);
	return 0;
}

static int load_kernels(struct rank_state *st)
{
	struct torch_state *t = &st->torch;
	static const char *const names[] = {
		"torch_pos_add", "torch_cat", "torch_ne", "torch_nonzero",
		"torch_accept_index", "torch_accept_sum", "torch_side_work",
	};
	CUfunction *slots[] = { &t->pos_add, &t->cat, &t->ne, &t->nonzero,
				&t->acc_index, &t->acc_sum, &t->side_work };
	const long long ns[] = { SMALL_NS, SMALL_NS, SMALL_NS, SMALL_NS, env.accept_ns / 2,
				 env.accept_ns - env.accept_ns / 2, SIDE_NS };

	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		CU(cuModuleGetFunction, (slots[i], st->module, names[i]), A("func_out", slots[i]),
		   A("module", st->module), AS("name", names[i]), A("func", *slots[i]));
		specsimSetFunctionDurationNs(*slots[i], ns[i]);
	}
	return 0;
}

/* Before the start gate, so a tracer attached there has not seen them made. */
int torch__setup(struct rank_state *st)
{
	struct torch_state *t = &st->torch;
	void *pinned = NULL;

	if (!env.torch || env.eager_loop)
		return 0;
	if (load_kernels(st))
		return -1;
	CU(cuMemAlloc_v2, (&t->dev, DEV_BYTES), A("dptr_out", &t->dev), A("bytes", DEV_BYTES),
	   A("dptr", t->dev));
	CU(cuMemHostAlloc, (&pinned, HOST_BYTES, 0), A("ptr_out", &pinned),
	   A("bytes", HOST_BYTES), A("flags", 0), A("ptr", pinned));
	t->pinned = pinned;
	/* a CPU tensor's storage: malloc'd, on the heap */
	t->pos_host = malloc(8);
	return t->pos_host ? 0 : -1;
}

void torch__teardown(struct rank_state *st)
{
	struct torch_state *t = &st->torch;

	if (t->side)
		CALL(cuStreamDestroy_v2, (t->side), A("stream", t->side));
	if (t->side_pre)
		CALL(cuStreamDestroy_v2, (t->side_pre), A("stream", t->side_pre));
	if (t->pinned)
		CALL(cuMemFreeHost, (t->pinned), A("ptr", t->pinned));
	if (t->dev)
		CALL(cuMemFree_v2, (t->dev), A("dptr", t->dev));
	free(t->pos_host);
}
