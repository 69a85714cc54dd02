// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --exercise: before the loop, every catalogued entry point the loop does not
 * use is called at least once, with real arguments, so a tracer test can check
 * each probe against the ground truth. Calls expected to fail are tagged.
 */
#include <stdlib.h>
#include <string.h>
#include "rank.h"

static volatile int host_fn_runs;

static void host_fn(void *arg)
{
	__atomic_add_fetch((int *)arg, 1, __ATOMIC_RELAXED);
}

static int exercise_ctx_and_launches(struct rank_state *st)
{
	CUevent ev = st->fork_ev;

	CU(cuCtxPushCurrent_v2, (st->ctx), A("ctx", st->ctx));
	CU(cuLaunchCooperativeKernel, (st->k.eager, 2, 1, 1, 64, 1, 1, 0, st->side, NULL),
	   A("func", st->k.eager), A("gx", 2), A("gy", 1), A("gz", 1), A("bx", 64), A("by", 1),
	   A("bz", 1), A("shmem", 0), A("stream", st->side));
	CU(cuLaunchHostFunc, (st->side, host_fn, (void *)&host_fn_runs), A("stream", st->side),
	   A("fn", host_fn), A("user_data", &host_fn_runs));
	CU(cuEventRecordWithFlags, (ev, st->side, 0), A("event", ev), A("stream", st->side),
	   A("flags", 0));
	/* either result is right here: the side stream may or may not be done */
	CALL(cuEventQuery, (ev), A("event", ev));
	CALL(cuStreamQuery, (st->side), A("stream", st->side));
	CU(cuEventSynchronize, (ev), A("event", ev));
	CU(cuEventQuery, (ev), A("event", ev));
	CU(cuCtxSynchronize, ());
	CALL(cuCtxPopCurrent_v2, (NULL), A("ctx_out", 0));
	return 0;
}

static int exercise_copies(struct rank_state *st, CUdeviceptr a, CUdeviceptr b, char *h)
{
	CU(cuMemsetD8_v2, (a, 1, 4096), A("dst", a), A("value", 1), A("count", 4096));
	CU(cuMemsetD32_v2, (a, 7, 1024), A("dst", a), A("value", 7), A("count", 1024));
	CU(cuMemsetD8Async, (b, 2, 4096, st->ex), A("dst", b), A("value", 2), A("count", 4096),
	   A("stream", st->ex));
	CU(cuMemcpyHtoD_v2, (a, h, 4096), A("dst", a), A("src_host", h), A("bytes", 4096));
	CU(cuMemcpyDtoH_v2, (h, a, 4096), A("dst_host", h), A("src", a), A("bytes", 4096));
	CU(cuMemcpyDtoD_v2, (b, a, 4096), A("dst", b), A("src", a), A("bytes", 4096));
	CU(cuMemcpyDtoDAsync_v2, (b, a, 4096, st->ex), A("dst", b), A("src", a),
	   A("bytes", 4096), A("stream", st->ex));
	CU(cuMemcpy, (b, a, 4096), A("dst", b), A("src", a), A("bytes", 4096));
	CU(cuMemcpyAsync, (b, a, 4096, st->ex), A("dst", b), A("src", a), A("bytes", 4096),
	   A("stream", st->ex));
	CU(cuMemHostRegister_v2, (h, 4096, 0), A("ptr", h), A("bytes", 4096), A("flags", 0));
	CU(cuMemcpyDtoHAsync_v2, (h, b, 4096, st->ex), A("dst_host", h), A("src", b),
	   A("bytes", 4096), A("stream", st->ex));
	CU(cuStreamSynchronize, (st->ex), A("stream", st->ex));
	CU(cuMemHostUnregister, (h), A("ptr", h));
	return 0;
}

static int exercise_rare_memory(struct rank_state *st, CUdeviceptr a, CUdeviceptr b)
{
	CUdeviceptr m = 0, p = 0, pool_mem = 0;
	size_t pitch = 0;
	/* pools are not modelled; any non-NULL handle stands for one */
	CUmemoryPool pool = (CUmemoryPool)st->ctx;

	CU(cuMemcpyPeer, (b, st->ctx, a, st->ctx, 1024), A("dst", b), A("dst_ctx", st->ctx),
	   A("src", a), A("src_ctx", st->ctx), A("bytes", 1024));
	CU(cuMemcpyPeerAsync, (b, st->ctx, a, st->ctx, 1024, st->ex), A("dst", b),
	   A("dst_ctx", st->ctx), A("src", a), A("src_ctx", st->ctx), A("bytes", 1024),
	   A("stream", st->ex));
	CU(cuMemsetD16_v2, (a, 3, 2048), A("dst", a), A("value", 3), A("count", 2048));
	CU(cuMemsetD16Async, (a, 4, 2048, st->ex), A("dst", a), A("value", 4), A("count", 2048),
	   A("stream", st->ex));
	CU(cuMemAllocPitch_v2, (&p, &pitch, 100, 4, 4), A("dptr_out", &p), A("pitch_out", &pitch),
	   A("width", 100), A("height", 4), A("element_bytes", 4), A("dptr", p), A("pitch", pitch));
	CU(cuMemsetD2D8_v2, (p, pitch, 1, 100, 4), A("dst", p), A("pitch", pitch), A("value", 1),
	   A("width", 100), A("height", 4));
	CU(cuMemsetD2D16_v2, (p, pitch, 2, 50, 4), A("dst", p), A("pitch", pitch), A("value", 2),
	   A("width", 50), A("height", 4));
	CU(cuMemsetD2D32_v2, (p, pitch, 3, 25, 4), A("dst", p), A("pitch", pitch), A("value", 3),
	   A("width", 25), A("height", 4));
	CU(cuMemsetD2D8Async, (p, pitch, 4, 100, 4, st->ex), A("dst", p), A("pitch", pitch),
	   A("value", 4), A("width", 100), A("height", 4), A("stream", st->ex));
	CU(cuMemsetD2D16Async, (p, pitch, 5, 50, 4, st->ex), A("dst", p), A("pitch", pitch),
	   A("value", 5), A("width", 50), A("height", 4), A("stream", st->ex));
	CU(cuMemsetD2D32Async, (p, pitch, 6, 25, 4, st->ex), A("dst", p), A("pitch", pitch),
	   A("value", 6), A("width", 25), A("height", 4), A("stream", st->ex));
	CU(cuMemAllocManaged, (&m, 4096, 1), A("dptr_out", &m), A("bytes", 4096), A("flags", 1),
	   A("dptr", m));
	CU(cuMemAllocFromPoolAsync, (&pool_mem, 4096, pool, st->ex), A("dptr_out", &pool_mem),
	   A("bytes", 4096), A("pool", pool), A("stream", st->ex), A("dptr", pool_mem));
	CU(cuStreamSynchronize, (st->ex), A("stream", st->ex));
	CU(cuMemFree_v2, (p), A("dptr", p));
	CU(cuMemFree_v2, (m), A("dptr", m));
	CU(cuMemFree_v2, (pool_mem), A("dptr", pool_mem));
	return 0;
}

static int exercise_rare_modules(void)
{
	static const char image[] = "specsim extra image";
	CUmodule mod = NULL;
	CUlibrary lib = NULL;

	CU(cuModuleLoadDataEx, (&mod, image, 0, NULL, NULL), A("module_out", &mod),
	   A("image", image), A("num_options", 0), A("module", mod));
	CU(cuModuleLoadFatBinary, (&mod, image), A("module_out", &mod), A("fatbin", image),
	   A("module", mod));
	CU(cuLibraryLoadFromFile, (&lib, "specsim_extra.lib", NULL, NULL, 0, NULL, NULL, 0),
	   A("library_out", &lib), AS("path", "specsim_extra.lib"), A("library", lib));
	return 0;
}

/*
 * On a blocking stream: the synchronous copies and memsets run on the legacy
 * stream, which orders them with it, so the exercise has no GPU-side races.
 */
static int exercise_memory(struct rank_state *st)
{
	CUdeviceptr a = 0, b = 0;
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	char *h = aligned_alloc(4096, 4096);

	if (!h)
		return -1;
	CU(cuStreamCreate, (&st->ex, 0), A("stream_out", &st->ex), A("flags", 0),
	   A("stream", st->ex));
	CU(cuMemAllocAsync, (&a, 4096, st->ex), A("dptr_out", &a), A("bytes", 4096),
	   A("stream", st->ex), A("dptr", a));
	CU(cuMemAllocAsync, (&b, 4096, st->ex), A("dptr_out", &b), A("bytes", 4096),
	   A("stream", st->ex), A("dptr", b));
	if (exercise_copies(st, a, b, h) || exercise_rare_memory(st, a, b) ||
	    exercise_rare_modules()) {
		free(h);
		return -1;
	}
	free(h);
	CU(cuMemFreeAsync, (a, st->ex), A("dptr", a), A("stream", st->ex));
	CU(cuMemFreeAsync, (b, st->ex), A("dptr", b), A("stream", st->ex));
	CU(cuStreamSynchronize, (st->ex), A("stream", st->ex));
	CU(cuStreamDestroy_v2, (st->ex), A("stream", st->ex));
	CU(cuModuleLoad, (&mod, "specsim_extra.cubin"), A("module_out", &mod),
	   AS("path", "specsim_extra.cubin"), A("module", mod));
	CU(cuModuleGetFunction, (&fn, mod, "extra_kernel"), A("func_out", &fn), A("module", mod),
	   AS("name", "extra_kernel"), A("func", fn));
	return 0;
}

/* A sync inside a capture fails and spoils it, as on a real GPU. */
static int exercise_spoiled_capture(struct rank_state *st)
{
	CUgraph g = NULL;

	CU(cuStreamBeginCapture_v2, (st->side, CU_STREAM_CAPTURE_MODE_GLOBAL),
	   A("stream", st->side), A("mode", CU_STREAM_CAPTURE_MODE_GLOBAL));
	truth__set_tag("expected-error");
	CALL(cuStreamSynchronize, (st->side), A("stream", st->side));
	CALL(cuStreamEndCapture, (st->side, &g), A("stream", st->side), A("graph_out", &g),
	     A("graph", g));
	truth__set_tag(NULL);
	return 0;
}

static int capture_info(struct rank_state *st)
{
	CUstreamCaptureStatus status = 0;
	cuuint64_t id = 0;
	CUgraph g = NULL;
	const CUgraphNode *deps = NULL;
	const CUgraphEdgeData *edges = NULL;
	size_t nr_deps = 0;

	CU(cuStreamIsCapturing, (st->side, &status), A("stream", st->side),
	   A("status_out", &status), A("status", status));
	CU(cuStreamGetCaptureInfo, (st->side, &status, &id), A("stream", st->side),
	   A("status", status), A("id", id));
	CU(cuStreamGetCaptureInfo_v2, (st->side, &status, &id, &g, &deps, &nr_deps),
	   A("stream", st->side), A("status", status), A("id", id), A("graph", g));
	CU(cuStreamGetCaptureInfo_v3, (st->side, &status, &id, &g, &deps, &edges, &nr_deps),
	   A("stream", st->side), A("status", status), A("id", id), A("graph", g));
	return 0;
}

static int exercise_graph_api(struct rank_state *st)
{
	CUgraph g = NULL, again = NULL;
	CUgraphExec x1 = NULL, x2 = NULL, x3 = NULL;
	CUgraphNode err_node = NULL;
	CUgraphExecUpdateResult res = 0;
	CUgraphExecUpdateResultInfo info = { 0 };
	CUDA_GRAPH_INSTANTIATE_PARAMS params = { 0 };
	char log[64];

	CU(cuStreamBeginCapture, (st->side), A("stream", st->side));
	if (capture_info(st) || graphs__launch(st, st->k.eager, st->side, 1, 0))
		return -1;
	CU(cuLaunchHostFunc, (st->side, host_fn, (void *)&host_fn_runs), A("stream", st->side),
	   A("fn", host_fn), A("user_data", &host_fn_runs));
	CU(cuStreamEndCapture, (st->side, &g), A("stream", st->side), A("graph_out", &g),
	   A("graph", g));
	CU(cuGraphInstantiate, (&x1, g, NULL, NULL, 0), A("exec_out", &x1), A("graph", g),
	   A("exec", x1));
	CU(cuGraphInstantiate_v2, (&x2, g, &err_node, log, sizeof(log)), A("exec_out", &x2),
	   A("graph", g), A("exec", x2));
	CU(cuStreamBeginCaptureToGraph, (st->side, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL),
	   A("stream", st->side), A("graph", g), A("mode", CU_STREAM_CAPTURE_MODE_GLOBAL));
	if (graphs__launch(st, st->k.eager, st->side, 1, 0))
		return -1;
	CU(cuStreamEndCapture, (st->side, &again), A("stream", st->side), A("graph_out", &again),
	   A("graph", again));
	CU(cuGraphInstantiateWithParams, (&x3, g, &params), A("exec_out", &x3), A("graph", g),
	   A("params", &params), A("exec", x3));
	/* x1 has one node fewer than the graph now: the update must fail */
	truth__set_tag("expected-error");
	CALL(cuGraphExecUpdate, (x1, g, &err_node, &res), A("exec", x1), A("graph", g),
	     A("update_result", res));
	truth__set_tag(NULL);
	CU(cuGraphExecUpdate_v2, (x3, g, &info), A("exec", x3), A("graph", g),
	   A("result_info", &info), A("update_result", info.result));
	CU(cuGraphLaunch, (x1, st->side), A("exec", x1), A("stream", st->side));
	CU(cuGraphLaunch, (x3, st->side), A("exec", x3), A("stream", st->side));
	CU(cuStreamSynchronize, (st->side), A("stream", st->side));
	CU(cuGraphExecDestroy, (x1), A("exec", x1));
	CU(cuGraphExecDestroy, (x2), A("exec", x2));
	CU(cuGraphExecDestroy, (x3), A("exec", x3));
	CU(cuGraphDestroy, (g), A("graph", g));
	return exercise_spoiled_capture(st);
}

/* Resolve a pointer and call through it: the probe on the code still fires. */
static int exercise_proc_address(struct rank_state *st)
{
	CUresult (*query)(CUstream) = NULL;
	void *pfn = NULL;
	int status = -1;
	unsigned long long before, after;
	int r;

	CU(cuGetProcAddress_v2, ("cuStreamQuery", &pfn, 12000, 0, &status),
	   AS("symbol", "cuStreamQuery"), A("pfn_out", &pfn), A("cuda_version", 12000),
	   A("flags", 0), A("pfn", pfn), A("status", status));
	query = (CUresult(*)(CUstream))pfn;
	truth__set_tag("via-proc-address");
	before = gt_now();
	r = query(st->side);
	after = gt_now();
	truth__call("cuStreamQuery", before, after, r, GT_ARGV(A("stream", st->side)) + 1, 1);
	truth__set_tag(NULL);
	CU(cuGetProcAddress, ("cuGraphLaunch", &pfn, 12000, 0), AS("symbol", "cuGraphLaunch"),
	   A("pfn_out", &pfn), A("cuda_version", 12000), A("flags", 0), A("pfn", pfn));
	return 0;
}

int exercise__run(struct rank_state *st)
{
	int ret = exercise_ctx_and_launches(st);

	if (!ret)
		ret = exercise_memory(st);
	if (!ret)
		ret = exercise_graph_api(st);
	if (!ret)
		ret = exercise_proc_address(st);
	if (!ret && st->comm)
		ret = exercise__nccl(st);
	return ret;
}
