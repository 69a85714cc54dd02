// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A CUPTI activity client over the look-alike, built twice. With
 * CUPTI_CLIENT_AGENT it is an injection agent (InitializeInjection, loaded by
 * libcuda through CUDA_INJECTION64_PATH) that takes libcupti's entry points by
 * name, registers buffers and a CLOCK_MONOTONIC timestamp callback, and flushes
 * from its own thread. Without, it is the program: kernels, copies, a memset,
 * a host function and graph launches on two streams and the legacy stream, then
 * every record must equal the simulator's own span of the item, exactly.
 *
 * Environment: SPECSIM_CUPTI (busy, nograph, drop: what the agent must then see),
 * CLIENT_NO_TIMESTAMP=1 (the agent registers no timestamp callback).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "cupti_abi.h"
#include "specsim.h"

#define MAX_RECORDS 4096

/* What the agent collected: the program reads it through client_state(). */
struct client_state {
	int subscribe_result, graph_enable_result, version;
	size_t nr_records, dropped, overheads, buffers;
	int bad_thread;			/* buffers completed on a thread not libcupti's */
	union {
		struct cupti_kernel10 k;
		struct cupti_graph_trace2 g;
		struct cupti_memcpy6 m;
		struct cupti_memset4 s;
	} rec[MAX_RECORDS];
	char names[MAX_RECORDS][64];
};

#ifdef CUPTI_CLIENT_AGENT

static struct client_state st;
static int (*get_next)(uint8_t *, size_t, struct cupti_record **);
static int (*flush_all)(uint32_t);
static int (*get_dropped)(void *, uint32_t, size_t *);
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cond = PTHREAD_COND_INITIALIZER;
static int flush_asked, flush_done;
static bool flusher_up;

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*size = 8 * 1024;	/* small, so buffers fill up and are handed over full too */
	*buffer = aligned_alloc(CUPTI_REC_ALIGN, *size);
	*max_records = 0;
}

static void keep(const struct cupti_record *r)
{
	size_t len = 0, i = st.nr_records;

	switch (r->kind) {
	case CUPTI_KIND_CONCURRENT_KERNEL:
		len = sizeof(struct cupti_kernel10);
		break;
	case CUPTI_KIND_GRAPH_TRACE:
		len = sizeof(struct cupti_graph_trace2);
		break;
	case CUPTI_KIND_MEMCPY:
		len = sizeof(struct cupti_memcpy6);
		break;
	case CUPTI_KIND_MEMSET:
		len = sizeof(struct cupti_memset4);
		break;
	case CUPTI_KIND_OVERHEAD:
		st.overheads++;
		return;
	default:
		return;
	}
	if (i == MAX_RECORDS)
		return;
	memcpy(&st.rec[i], r, len);
	/* the name lives in libcupti's world; keep a copy */
	if (r->kind == CUPTI_KIND_CONCURRENT_KERNEL && st.rec[i].k.name)
		snprintf(st.names[i], sizeof(st.names[i]), "%s", st.rec[i].k.name);
	st.nr_records++;
}

static void completed(void *ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
		      size_t valid)
{
	struct cupti_record *r = NULL;
	char name[16] = "";

	prctl(PR_GET_NAME, name);
	if (strcmp(name, "specsim-cupti"))
		st.bad_thread++;
	st.buffers++;
	while (get_next(buffer, valid, &r) == CUPTI_OK)
		keep(r);
	free(buffer);
}

static void *flusher(void *arg)
{
	prctl(PR_SET_NAME, "client-flush");
	pthread_mutex_lock(&flush_lock);
	for (;;) {
		while (flush_asked == flush_done)
			pthread_cond_wait(&flush_cond, &flush_lock);
		pthread_mutex_unlock(&flush_lock);
		flush_all(0);
		pthread_mutex_lock(&flush_lock);
		flush_done++;
		pthread_cond_broadcast(&flush_cond);
	}
	return NULL;
}

/* The program's flush: done on the agent's own thread. */
__attribute__((visibility("default"))) struct client_state *client_flush(void)
{
	size_t dropped = 0;
	int want;

	if (!flusher_up)
		return &st;
	pthread_mutex_lock(&flush_lock);
	want = ++flush_asked;
	pthread_cond_broadcast(&flush_cond);
	while (flush_done < want)
		pthread_cond_wait(&flush_cond, &flush_lock);
	pthread_mutex_unlock(&flush_lock);
	if (get_dropped && get_dropped(NULL, 0, &dropped) == CUPTI_OK)
		st.dropped += dropped;
	return &st;
}

#define SYM(lib, name) dlsym(lib, name)

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	static const int kinds[] = { CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_KIND_MEMCPY,
				     CUPTI_KIND_MEMSET, CUPTI_KIND_OVERHEAD };
	void *lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	int (*version)(uint32_t *), (*subscribe)(cupti_subscriber_t *, cupti_callback_fn, void *);
	int (*enable)(int), (*callbacks)(cupti_request_fn, cupti_complete_fn);
	int (*timestamp)(cupti_timestamp_fn);
	cupti_subscriber_t sub;
	uint32_t v = 0;
	pthread_t t;

	if (!lib)
		return 0;
	*(void **)&version = SYM(lib, "cuptiGetVersion");
	*(void **)&subscribe = SYM(lib, "cuptiSubscribe");
	*(void **)&enable = SYM(lib, "cuptiActivityEnable");
	*(void **)&callbacks = SYM(lib, "cuptiActivityRegisterCallbacks");
	*(void **)&timestamp = SYM(lib, "cuptiActivityRegisterTimestampCallback");
	*(void **)&get_next = SYM(lib, "cuptiActivityGetNextRecord");
	*(void **)&flush_all = SYM(lib, "cuptiActivityFlushAll");
	*(void **)&get_dropped = SYM(lib, "cuptiActivityGetNumDroppedRecords");
	if (!version || !subscribe || !enable || !callbacks || !timestamp || !get_next ||
	    !flush_all || !get_dropped)
		return 0;
	version(&v);
	st.version = (int)v;
	st.subscribe_result = subscribe(&sub, NULL, NULL);
	if (st.subscribe_result != CUPTI_OK)
		return 1;	/* another client: step back */
	callbacks(requested, completed);
	if (!getenv("CLIENT_NO_TIMESTAMP"))
		timestamp(mono);
	st.graph_enable_result = enable(CUPTI_KIND_GRAPH_TRACE);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		enable(kinds[i]);
	if (pthread_create(&t, NULL, flusher, NULL) == 0) {
		pthread_detach(t);
		flusher_up = true;
	}
	return 1;
}

#else /* the program */

#define CK(call)                                                                  \
	do {                                                                      \
		int r_ = (call);                                                  \
		if (r_) {                                                         \
			fprintf(stderr, "cupti-client: %s failed: %d\n", #call, r_); \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

struct span {
	struct specsim_gpu_span s;
	char kind[8], name[64];
	bool seen;
};

static struct span spans[MAX_RECORDS];
static size_t nr_spans;
static int failures;

static void on_span(const struct specsim_gpu_span *s, void *ctx)
{
	struct span *out;

	if (nr_spans == MAX_RECORDS)
		return;
	out = &spans[nr_spans++];
	out->s = *s;
	snprintf(out->kind, sizeof(out->kind), "%s", s->kind);
	snprintf(out->name, sizeof(out->name), "%s", s->name ? s->name : "");
}

static void host_fn(void *arg)
{
}

static void fail(const char *what, unsigned int corr)
{
	if (failures++ < 20)
		fprintf(stderr, "cupti-client: correlation %u: %s\n", corr, what);
}

static struct span *span_of(unsigned int corr, const char *kind)
{
	for (size_t i = 0; i < nr_spans; i++)
		if (spans[i].s.correlation_id == corr && !strcmp(spans[i].kind, kind))
			return &spans[i];
	return NULL;
}

/* Fields every record kind has, against the span, times in the agent's domain. */
static void check_common(struct span *sp, unsigned int corr, uint64_t start, uint64_t end,
			 uint32_t stream_id, uint32_t device, uint64_t offset)
{
	if (!sp) {
		fail("no span for the record", corr);
		return;
	}
	if (sp->seen)
		fail("two records for one span", corr);
	sp->seen = true;
	if (start != sp->s.start_ns + offset || end != sp->s.end_ns + offset)
		fail("times differ", corr);
	if (stream_id != sp->s.stream_id)
		fail("stream id differs", corr);
	if (device != 0)
		fail("device is not 0", corr);
}

/*
 * Without graph-level records a graph's launch comes node by node: each with
 * the launch's correlation and the graph's id, inside the launch's span.
 */
static void check_node(const struct cupti_kernel10 *k, uint64_t offset)
{
	struct span *sp = span_of(k->correlation_id, "graph");

	if (!sp) {
		fail("no graph launch for a node's record", k->correlation_id);
		return;
	}
	sp->seen = true;
	if (k->graph_id != sp->s.graph_id)
		fail("a node's graph id differs", k->correlation_id);
	if (k->start < sp->s.start_ns + offset || k->end > sp->s.end_ns + offset ||
	    k->start > k->end)
		fail("a node runs outside its launch", k->correlation_id);
}

/* Records that are a graph's nodes (kernel-level records without graph-level ones). */
static size_t node_records(const struct client_state *cs)
{
	size_t n = 0;

	for (size_t i = 0; i < cs->nr_records; i++)
		n += (int)cs->rec[i].k.kind == CUPTI_KIND_CONCURRENT_KERNEL && cs->rec[i].k.graph_id;
	return n;
}

static void check_record(struct client_state *cs, size_t i, uint64_t offset)
{
	struct span *sp;

	switch ((int)cs->rec[i].k.kind) {
	case CUPTI_KIND_CONCURRENT_KERNEL: {
		const struct cupti_kernel10 *k = &cs->rec[i].k;

		if (k->graph_id) {
			check_node(k, offset);
			break;
		}
		sp = span_of(k->correlation_id, "kernel");
		check_common(sp, k->correlation_id, k->start, k->end, k->stream_id, k->device_id,
			     offset);
		if (sp && strcmp(cs->names[i], sp->name))
			fail("kernel name differs", k->correlation_id);
		break;
	}
	case CUPTI_KIND_GRAPH_TRACE: {
		const struct cupti_graph_trace2 *g = &cs->rec[i].g;

		sp = span_of(g->correlation_id, "graph");
		check_common(sp, g->correlation_id, g->start, g->end, g->stream_id, g->device_id,
			     offset);
		if (sp && g->graph_id != sp->s.graph_id)
			fail("graph id differs", g->correlation_id);
		break;
	}
	case CUPTI_KIND_MEMCPY: {
		const struct cupti_memcpy6 *m = &cs->rec[i].m;

		sp = span_of(m->correlation_id, "copy");
		check_common(sp, m->correlation_id, m->start, m->end, m->stream_id, m->device_id,
			     offset);
		if (sp && (m->copy_kind != sp->s.copy_kind || m->bytes != sp->s.bytes))
			fail("copy kind or bytes differ", m->correlation_id);
		break;
	}
	case CUPTI_KIND_MEMSET: {
		const struct cupti_memset4 *s = &cs->rec[i].s;

		sp = span_of(s->correlation_id, "memset");
		check_common(sp, s->correlation_id, s->start, s->end, s->stream_id, s->device_id,
			     offset);
		if (sp && s->bytes != sp->s.bytes)
			fail("memset bytes differ", s->correlation_id);
		break;
	}
	}
}

/* Eager kernels, copies each way, a memset, a host function and graphs on two streams. */
static void run_work(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUstream a, b;
	CUmodule mod;
	CUfunction k1, k2;
	CUgraph g;
	CUgraphExec x;
	CUdeviceptr d1, d2;
	void *pinned;
	char pageable[256] = { 0 };

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&b, 0));
	CK(cuModuleLoadData(&mod, "image"));
	CK(cuModuleGetFunction(&k1, mod, "client_gemm"));
	CK(cuModuleGetFunction(&k2, mod, "client_attn"));
	specsimSetFunctionDurationNs(k1, 30000);
	specsimSetFunctionDurationNs(k2, 20000);
	CK(cuMemAlloc_v2(&d1, 4096));
	CK(cuMemAlloc_v2(&d2, 4096));
	CK(cuMemHostAlloc(&pinned, 4096, 0));
	CK(cuStreamBeginCapture_v2(a, 0));
	CK(cuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, 0, a, NULL, NULL));
	CK(cuLaunchKernel(k2, 1, 1, 1, 1, 1, 1, 0, a, NULL, NULL));
	CK(cuStreamEndCapture(a, &g));
	CK(cuGraphInstantiateWithFlags(&x, g, 0));
	for (int i = 0; i < 3; i++) {
		CK(cuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, 0, a, NULL, NULL));
		CK(cuMemcpyHtoDAsync_v2(d1, pinned, 1024, a));
		CK(cuGraphLaunch(x, b));
		CK(cuLaunchKernel(k2, 1, 1, 1, 1, 1, 1, 0, b, NULL, NULL));
		CK(cuMemsetD8Async(d2, 7, 512, b));
		CK(cuMemcpyDtoDAsync_v2(d2, d1, 2048, a));
		CK(cuLaunchHostFunc(a, host_fn, NULL));
		CK(cuGraphLaunch(x, a));
		CK(cuMemcpyDtoHAsync_v2(pinned, d2, 256, b));
		CK(cuMemcpyHtoDAsync_v2(d1, pageable, sizeof(pageable), a));
		CK(cuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
	}
	CK(cuCtxSynchronize());
}

static size_t expected_records(const char *mode)
{
	size_t n = 0;

	for (size_t i = 0; i < nr_spans; i++) {
		const char *k = spans[i].kind;

		if (!strcmp(k, "graph") && !strcmp(mode, "nograph"))
			continue;
		n += !strcmp(k, "kernel") || !strcmp(k, "graph") || !strcmp(k, "copy") ||
		     !strcmp(k, "memset");
	}
	return n;
}

int main(void)
{
	const char *agent = getenv("CUDA_INJECTION64_PATH");
	const char *mode = getenv("SPECSIM_CUPTI") ? getenv("SPECSIM_CUPTI") : "";
	uint64_t offset = getenv("CLIENT_NO_TIMESTAMP") ? 1ull << 60 : 0;
	struct client_state *(*flush)(void);
	struct client_state *cs;
	void *lib;
	size_t want;

	specsimGpuLogEnable(1);
	run_work();
	lib = agent ? dlopen(agent, RTLD_NOW | RTLD_NOLOAD) : NULL;
	*(void **)&flush = lib ? dlsym(lib, "client_flush") : NULL;
	if (!flush) {
		fprintf(stderr, "cupti-client: the agent was not injected\n");
		return 1;
	}
	/* the second flush hands over the first one's overhead record */
	flush();
	cs = flush();
	specsimGpuLogDrain(on_span, NULL);
	want = expected_records(mode) + node_records(cs);
	if (cs->version != CUPTI_ABI_VERSION)
		fail("cuptiGetVersion is not 130001", 0);
	if (!strcmp(mode, "busy")) {
		if (cs->subscribe_result != CUPTI_E_MULTIPLE_SUBSCRIBERS || cs->nr_records)
			fail("busy: subscribe did not fail with 39, or records came", 0);
		want = 0;
	} else if (cs->graph_enable_result != (!strcmp(mode, "nograph") ? CUPTI_E_INVALID_KIND : 0)) {
		fail("enabling GRAPH_TRACE gave the wrong result", 0);
	}
	if (!strcmp(mode, "drop")) {
		/* the first flush's overhead record finds no room either */
		if (cs->nr_records + cs->overheads != 4 || cs->nr_records + cs->dropped != want + 1)
			fail("drop: records + dropped differ from the spans", 0);
		want = cs->nr_records;
	} else if (cs->nr_records != want || cs->dropped) {
		fprintf(stderr, "cupti-client: %zu records, %zu dropped, %zu spans\n",
			cs->nr_records, cs->dropped, want);
		failures++;
	}
	for (size_t i = 0; i < cs->nr_records; i++)
		check_record(cs, i, offset);
	for (size_t i = 0; i < nr_spans && !strcmp(mode, "nograph"); i++)
		if (!strcmp(spans[i].kind, "graph") && !spans[i].seen)
			fail("a graph launch without its nodes' records", spans[i].s.correlation_id);
	if (cs->bad_thread)
		fail("a buffer was completed on another thread than libcupti's", 0);
	if (want && strcmp(mode, "drop") && !cs->overheads)
		fail("no overhead records", 0);
	printf("cupti-client%s%s: %zu records (%zu spans), %zu dropped, %zu overhead, "
	       "%zu buffers: %s\n", *mode ? " " : "", mode, cs->nr_records, want, cs->dropped,
	       cs->overheads, cs->buffers, failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}

#endif
