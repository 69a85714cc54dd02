// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Semantics of the simulated GPU, checked through the exported entry points:
 * what blocks and what does not, capture, events, copies, the legacy stream,
 * cuGetProcAddress and the NCCL rendezvous. Lower bounds on blocking are exact
 * (a sync cannot return before its deadline); "returns at once" allows 5 ms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "specsim.h"

#define MS 1000000LL

static int failures;

#define EXPECT(cond, ...)                                   \
	do {                                                \
		if (!(cond)) {                              \
			failures++;                         \
			printf("  FAIL %s:%d: ", __func__, __LINE__); \
			printf(__VA_ARGS__);                \
			printf("\n");                       \
		}                                           \
	} while (0)

static long long now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static CUfunction kernel(CUmodule mod, const char *name, long long ns)
{
	CUfunction f = NULL;

	cuModuleGetFunction(&f, mod, name);
	specsimSetFunctionDurationNs(f, ns);
	return f;
}

static int launch(CUfunction f, CUstream s)
{
	return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

static void test_async_and_sync(CUfunction k20, CUstream s)
{
	long long t0 = now(), t1;

	EXPECT(launch(k20, s) == 0, "launch");
	t1 = now();
	EXPECT(t1 - t0 < 5 * MS, "a launch returned after %lld us", (t1 - t0) / 1000);
	EXPECT(cuStreamQuery(s) == CUDA_ERROR_NOT_READY, "query while the kernel runs");
	EXPECT(specsimStreamBusy(s) == 1 && specsimDeviceBusy() == 1 && specsimStreamBusy(NULL) == 0,
	       "busy while the kernel runs, the legacy stream not waiting for it");
	EXPECT(cuStreamSynchronize(s) == 0, "sync");
	EXPECT(specsimStreamBusy(s) == 0 && specsimDeviceBusy() == 0, "busy after sync");
	EXPECT(now() - t0 >= 20 * MS, "sync returned before the 20 ms kernel ended");
	EXPECT(cuStreamQuery(s) == 0, "query after sync");
}

static void test_events(CUfunction k10, CUstream a, CUstream b)
{
	CUevent ev;
	long long t0 = now();

	cuEventCreate(&ev, 0);
	EXPECT(cuEventQuery(ev) == 0, "a fresh event counts as done");
	launch(k10, a);
	cuEventRecord(ev, a);
	EXPECT(cuEventQuery(ev) == CUDA_ERROR_NOT_READY, "event before the kernel ended");
	/* b waits for a: b's kernel ends 20 ms after the start, not 10 */
	cuStreamWaitEvent(b, ev, 0);
	launch(k10, b);
	EXPECT(now() - t0 < 5 * MS, "wait event blocked the host");
	cuEventSynchronize(ev);
	EXPECT(now() - t0 >= 10 * MS && cuEventQuery(ev) == 0, "event sync");
	cuStreamSynchronize(b);
	EXPECT(now() - t0 >= 20 * MS, "stream b did not wait for the event");
	cuEventDestroy_v2(ev);
}

/* Capture records instead of running; the side stream joins through events. */
static void test_capture(CUfunction k5, CUstream s, CUstream side)
{
	CUevent fork, join;
	CUgraph g = NULL;
	CUgraphExec x = NULL;
	CUstreamCaptureStatus st = -1;
	long long t0;

	cuEventCreate(&fork, 0);
	cuEventCreate(&join, 0);
	EXPECT(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == 0, "begin capture");
	t0 = now();
	launch(k5, s);
	cuEventRecord(fork, s);
	cuStreamWaitEvent(side, fork, 0);
	cuStreamIsCapturing(side, &st);
	EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "side stream did not join, status %d", st);
	launch(k5, side);
	cuEventRecord(join, side);
	cuStreamWaitEvent(s, join, 0);
	launch(k5, s);
	EXPECT(cuStreamEndCapture(s, &g) == 0 && g, "end capture");
	cuStreamIsCapturing(side, &st);
	EXPECT(st == CU_STREAM_CAPTURE_STATUS_NONE, "side stream still capturing");
	EXPECT(cuStreamQuery(s) == 0 && now() - t0 < 5 * MS, "captured work ran");
	EXPECT(cuGraphInstantiateWithFlags(&x, g, 0) == 0, "instantiate");
	t0 = now();
	EXPECT(cuGraphLaunch(x, s) == 0 && now() - t0 < 5 * MS, "graph launch blocked");
	cuStreamSynchronize(s);
	EXPECT(now() - t0 >= 15 * MS, "graph of 3 x 5 ms took %lld us", (now() - t0) / 1000);
	cuGraphExecDestroy(x);
	cuGraphDestroy(g);
}

static void test_spoiled_capture(CUfunction k5, CUstream s)
{
	CUgraph g = (CUgraph)1;

	cuStreamBeginCapture(s);
	launch(k5, s);
	EXPECT(cuStreamSynchronize(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "sync in capture");
	EXPECT(cuStreamEndCapture(s, &g) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && !g,
	       "a spoiled capture gives no graph");
}

/*
 * An "async" copy to pageable memory returns only when the copy is done; one
 * from pageable memory returns once its source is staged.
 */
static void test_pageable(CUfunction k10, CUstream s)
{
	CUdeviceptr d;
	char *pageable = malloc(4096);
	void *pinned;
	long long t0;

	cuMemAlloc_v2(&d, 4096);
	cuMemHostAlloc(&pinned, 4096, 0);
	t0 = now();
	launch(k10, s);
	cuMemcpyDtoHAsync_v2(pinned, d, 4096, s);
	EXPECT(now() - t0 < 5 * MS, "a pinned D2H copy blocked");
	cuStreamSynchronize(s);
	t0 = now();
	launch(k10, s);
	cuMemcpyDtoHAsync_v2(pageable, d, 4096, s);
	EXPECT(now() - t0 >= 10 * MS, "a pageable D2H copy returned early");
	/* from pageable memory: staged at once, the stream's work not waited for */
	t0 = now();
	launch(k10, s);
	memset(pageable, 0x5a, 4096);
	cuMemcpyHtoDAsync_v2(d, pageable, 4096, s);
	memset(pageable, 0, 4096);
	EXPECT(now() - t0 < 5 * MS, "a pageable H2D copy waited for the stream");
	cuMemcpyDtoHAsync_v2(pageable, d, 4096, s);
	EXPECT(now() - t0 >= 10 * MS && pageable[4095] == 0x5a,
	       "a pageable D2H copy after it returned early or lost the staged bytes");
	/* a staged H2D's DMA takes 50 us by default */
	t0 = now();
	cuMemcpyHtoDAsync_v2(d, pageable, 8, s);
	EXPECT(specsimStreamBusy(s) == 1, "idle right after a pageable H2D");
	cuStreamSynchronize(s);
	EXPECT(now() - t0 >= 50000, "a pageable H2D took %lld ns", now() - t0);
	cuMemHostRegister_v2(pageable, 4096, 0);
	t0 = now();
	launch(k10, s);
	cuMemcpyDtoHAsync_v2(pageable, d, 4096, s);
	EXPECT(now() - t0 < 5 * MS, "a registered D2H copy blocked");
	cuStreamSynchronize(s);
	cuMemHostUnregister(pageable);
	cuMemFreeHost(pinned);
	cuMemFree_v2(d);
	free(pageable);
}

/* The maps line holding p: its permissions and path, "" when none. */
static void maps_of(const void *p, char *perms, char *path, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	perms[0] = path[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int at = 0;

		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &lo, &hi, perms, &at) < 3)
			continue;
		if ((unsigned long)p < lo || (unsigned long)p >= hi) {
			perms[0] = '\0';
			continue;
		}
		snprintf(path, size, "%s", line + at);
		path[strcspn(path, "\n")] = '\0';
		break;
	}
	if (f)
		fclose(f);
}

/* Pinned memory is shared anonymous, as the real driver maps it; malloc's is private. */
static void test_pinned_maps(void)
{
	char perms[8], path[256];
	char *heap = malloc(64);
	void *a = NULL, *b = NULL;

	EXPECT(cuMemHostAlloc(&a, 100, 0) == 0 && cuMemAllocHost_v2(&b, 8192) == 0, "alloc");
	maps_of(a, perms, path, sizeof(path));
	EXPECT(!strcmp(perms, "rw-s") && !strcmp(path, "/dev/zero (deleted)"),
	       "cuMemHostAlloc memory maps as '%s %s'", perms, path);
	maps_of((char *)b + 8191, perms, path, sizeof(path));
	EXPECT(!strcmp(perms, "rw-s") && !strcmp(path, "/dev/zero (deleted)"),
	       "cuMemAllocHost memory maps as '%s %s'", perms, path);
	maps_of(heap, perms, path, sizeof(path));
	EXPECT(perms[3] == 'p', "malloc'd memory maps as '%s %s'", perms, path);
	EXPECT(cuMemFreeHost(a) == 0 && cuMemFreeHost(b) == 0, "free");
	maps_of(a, perms, path, sizeof(path));
	EXPECT(strcmp(path, "/dev/zero (deleted)"), "freed pinned memory still mapped");
	EXPECT(cuMemFreeHost(heap) == CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost of malloc'd memory");
	free(heap);
}

static void test_data(CUstream s)
{
	unsigned int in[256], out[256];
	CUdeviceptr a, b;

	for (int i = 0; i < 256; i++)
		in[i] = i * 7;
	cuMemAlloc_v2(&a, sizeof(in));
	cuMemAlloc_v2(&b, sizeof(in));
	cuMemcpyHtoD_v2(a, in, sizeof(in));
	/* from pageable memory it returns once staged, before the DMA is done */
	cuCtxSynchronize();
	cuMemcpyDtoDAsync_v2(b, a, sizeof(in), s);
	cuMemcpyDtoHAsync_v2(out, b, sizeof(in), s);
	EXPECT(!memcmp(in, out, sizeof(in)), "copies lost data");
	cuMemsetD32Async(b, 0xabcd, 256, s);
	/* s is non-blocking: the legacy stream's copy would not wait for it */
	cuStreamSynchronize(s);
	cuMemcpyDtoH_v2(out, b, sizeof(out));
	EXPECT(out[0] == 0xabcd && out[255] == 0xabcd, "memset D32 wrote %#x", out[0]);
	cuMemFree_v2(a);
	cuMemFree_v2(b);
}

static void test_memset_shapes(CUstream s)
{
	unsigned short half[8];
	unsigned char rows[512 * 3];
	CUdeviceptr d, p;
	size_t pitch = 0;

	cuMemAlloc_v2(&d, sizeof(half));
	cuMemsetD16Async(d, 0xbeef, 8, s);
	cuMemcpyDtoHAsync_v2(half, d, sizeof(half), s);
	EXPECT(half[0] == 0xbeef && half[7] == 0xbeef, "memset D16 wrote %#x", half[0]);
	cuMemAllocPitch_v2(&p, &pitch, 100, 3, 4);
	EXPECT(pitch == 512, "pitch %zu", pitch);
	cuMemsetD2D8Async(p, pitch, 0, pitch, 3, s);
	cuMemsetD2D8Async(p, pitch, 7, 100, 3, s);
	cuMemcpyDtoHAsync_v2(rows, p, sizeof(rows), s);
	EXPECT(rows[0] == 7 && rows[99] == 7 && rows[100] == 0 && rows[512 * 2 + 99] == 7 &&
	       rows[512 * 2 + 100] == 0, "2D memset touched the wrong bytes");
	cuMemFree_v2(d);
	cuMemFree_v2(p);
}

/* Synchronous copies run on the legacy stream, which waits for blocking streams. */
static void test_legacy(CUfunction k10, CUstream nonblocking)
{
	CUstream blocking;
	CUdeviceptr d;
	char host[64];
	long long t0;

	cuStreamCreate(&blocking, 0);
	cuMemAlloc_v2(&d, 64);
	t0 = now();
	launch(k10, nonblocking);
	cuMemcpyDtoH_v2(host, d, 64);
	EXPECT(now() - t0 < 5 * MS, "legacy copy waited for a non-blocking stream");
	cuStreamSynchronize(nonblocking);
	t0 = now();
	launch(k10, blocking);
	cuMemcpyDtoH_v2(host, d, 64);
	EXPECT(now() - t0 >= 10 * MS, "legacy copy did not wait for a blocking stream");
	t0 = now();
	launch(k10, nonblocking);
	EXPECT(cuMemFree_v2(d) == 0 && now() - t0 >= 10 * MS, "cuMemFree did not drain");
	cuStreamDestroy_v2(blocking);
}

static void test_proc_address(void)
{
	void *pfn = NULL;
	int status = -1;

	EXPECT(cuGetProcAddress_v2("cuMemcpyDtoHAsync", &pfn, 12000, 0, &status) == 0 &&
	       pfn == (void *)cuMemcpyDtoHAsync_v2 && status == 0, "cuMemcpyDtoHAsync @ 12000");
	EXPECT(cuGetProcAddress_v2("cuStreamBeginCapture", &pfn, 10000, 0, &status) == 0 &&
	       pfn == (void *)cuStreamBeginCapture, "cuStreamBeginCapture @ 10000");
	EXPECT(cuGetProcAddress_v2("cuGraphInstantiate", &pfn, 12040, 0, &status) == 0 &&
	       pfn == (void *)cuGraphInstantiateWithFlags, "cuGraphInstantiate @ 12040");
	EXPECT(cuGetProcAddress_v2("cuLaunchKernelEx", &pfn, 11000, 0, &status) ==
		       CUDA_ERROR_NOT_FOUND && status == 2 && !pfn, "version not sufficient");
	EXPECT(cuGetProcAddress_v2("cuNoSuchThing", &pfn, 12000, 0, &status) ==
		       CUDA_ERROR_NOT_FOUND && status == 1, "unknown symbol");
}

static int host_runs;

static void host_fn(void *arg)
{
	host_runs++;
}

static void test_host_fn_and_kernel_handle(CUstream s)
{
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	long long t0 = now();

	cuLibraryLoadData(&lib, "x", NULL, NULL, 0, NULL, NULL, 0);
	cuLibraryGetKernel(&k, lib, "k");
	cuKernelGetFunction(&f, k);
	specsimSetFunctionDurationNs(f, 5 * MS);
	/* CUDA 12: a CUkernel may be launched as a CUfunction */
	EXPECT(launch((CUfunction)k, s) == 0, "launch of a CUkernel");
	cuLaunchHostFunc(s, host_fn, NULL);
	cuStreamSynchronize(s);
	EXPECT(host_runs == 1 && now() - t0 >= 5 * MS, "host fn ran %d times", host_runs);
}

static void test_queue(CUmodule mod, CUstream s)
{
	CUfunction zero = kernel(mod, "zero", 0);
	int bad = 0;

	for (int i = 0; i < 20000; i++)
		bad += launch(zero, s) != 0;
	EXPECT(!bad && cuStreamSynchronize(s) == 0, "20000 launches past the queue limit");
}

/* Two comms of one process: a group over both completes; one alone waits. */
static void test_nccl(CUstream a, CUstream b)
{
	ncclComm_t comms[2];
	CUdeviceptr buf;
	long long t0;

	cuMemAlloc_v2(&buf, 1 << 16);
	EXPECT(ncclCommInitAll(comms, 2, NULL) == 0, "init all");
	specsimNcclSetCollectiveNs(comms[0], 3 * MS, 0);
	specsimNcclSetCollectiveNs(comms[1], 3 * MS, 0);
	t0 = now();
	ncclGroupStart();
	ncclAllReduce((void *)buf, (void *)buf, 1024, ncclFloat32, ncclSum, comms[0], a);
	ncclAllReduce((void *)buf, (void *)buf, 1024, ncclFloat32, ncclSum, comms[1], b);
	EXPECT(ncclGroupEnd() == 0 && now() - t0 < 5 * MS, "group end blocked");
	cuStreamSynchronize(a);
	cuStreamSynchronize(b);
	EXPECT(now() - t0 >= 3 * MS, "all-reduce shorter than its 3 ms");
	/* rank 0 alone cannot finish: it waits out the rendezvous timeout */
	printf("  (one 'peers missing' warning is expected next)\n");
	fflush(stdout);
	t0 = now();
	ncclAllReduce((void *)buf, (void *)buf, 1024, ncclFloat32, ncclSum, comms[0], a);
	EXPECT(cuStreamQuery(a) == CUDA_ERROR_NOT_READY, "a lone rank's all-reduce completed");
	cuStreamSynchronize(a);
	EXPECT(now() - t0 >= 200 * MS, "lone all-reduce ended before the timeout");
	ncclCommDestroy(comms[0]);
	ncclCommDestroy(comms[1]);
	cuMemFree_v2(buf);
}

int main(void)
{
	CUcontext ctx;
	CUstream s, side;
	CUmodule mod;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("SPECSIM_NCCL_TIMEOUT_MS", "200", 1);
	EXPECT(cuStreamCreate(&s, 0) == CUDA_ERROR_NOT_INITIALIZED, "calls before cuInit");
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) ||
	    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
	    cuStreamCreate(&side, CU_STREAM_NON_BLOCKING) || cuModuleLoadData(&mod, "m")) {
		printf("  FAIL setup\n");
		return 1;
	}
	test_async_and_sync(kernel(mod, "k20", 20 * MS), s);
	test_events(kernel(mod, "k10", 10 * MS), s, side);
	test_capture(kernel(mod, "k5", 5 * MS), s, side);
	test_spoiled_capture(kernel(mod, "k5", 5 * MS), s);
	test_pageable(kernel(mod, "k10", 10 * MS), s);
	test_pinned_maps();
	test_data(s);
	test_memset_shapes(s);
	test_legacy(kernel(mod, "k10", 10 * MS), s);
	test_proc_address();
	test_host_fn_and_kernel_handle(s);
	test_queue(mod, s);
	test_nccl(s, side);
	cuCtxSynchronize();
	printf("simtest: %s\n", failures ? "FAILED" : "all passed");
	return failures != 0;
}
