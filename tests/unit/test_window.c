// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The windowed analyses (top, --metrics) against the whole run (report) over
 * the same records: a synthetic decode loop with a planted sync between draft
 * and verify, its pace from much faster than a window step to much slower,
 * with a stall, its windows stepped at several cadences. The windowed cycles
 * and flagged syncs must be the whole run's, whatever the pace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "catalog.h"
#include "pipeline.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define MAIN_STREAM 0x5000ull
#define SIDE_STREAM 0x5100ull
#define PINNED_HOST 0x7000ull
#define VERIFY_EXEC 0xb000ull
#define DRAFT_EXEC 0xd000ull
#define EXTEND_EXEC 0xf000ull
#define CYCLES 200
#define PLANT_EVERY 3
#define MAX_SEEN 256
#define WINDOW_STEP_NS (250 * MS)

/* Records of one thread as the ring would give them: entry, then its completion. */
struct recs {
	struct tf_header hdr;
	unsigned char *buf;
	size_t len, cap;
	__u64 now, pace;	/* pace: host and GPU times are multiplied by it */
	__u32 seq;
	__u64 planted[CYCLES];	/* entry times of the planted syncs */
	int nr_planted;
};

static void put(struct recs *r, const void *rec, size_t size)
{
	if (r->len + size > r->cap) {
		r->cap = r->cap ? r->cap * 2 : 65536;
		r->buf = realloc(r->buf, r->cap);
		assert_non_null(r->buf);
	}
	memcpy(r->buf + r->len, rec, size);
	r->len += size;
}

/* One call of dur_ns (scaled by the pace), out read at its return; its entry time. */
static __u64 call(struct recs *r, const char *name, __u64 dur_ns, __u64 out, int nargs, ...)
{
	const struct catalog_entry *e = catalog__find(name);
	struct sp_call_rec c = { .type = SP_REC_CALL, .size = sizeof(c), .tgid = 100,
				 .tid = 100 };
	struct sp_ret_rec ret = { .type = SP_REC_RET, .size = sizeof(ret), .tgid = 100,
				  .tid = 100 };
	__u64 entry = r->now;
	va_list ap;

	assert_non_null(e);
	c.probe = e - catalog;
	c.ts = entry;
	c.seq = ++r->seq;
	c.flags = e->completion ? SP_CALL_HAS_RET : 0;
	va_start(ap, nargs);
	for (int i = 0; i < nargs; i++)
		c.args[i] = va_arg(ap, __u64);
	va_end(ap);
	put(r, &c, sizeof(c));
	r->now += dur_ns * r->pace;
	if (e->completion) {
		ret.probe = c.probe;
		ret.ts = r->now;
		ret.seq = c.seq;
		ret.out = out;
		put(r, &ret, sizeof(ret));
	}
	r->now += 1000 * r->pace;	/* the host's own time between calls */
	return entry;
}

static void capture(struct recs *r, __u64 exec, __u64 func, int kernels)
{
	call(r, "cuStreamBeginCapture", 0, 0, 2, MAIN_STREAM, 0ull);
	for (int i = 0; i < kernels; i++)
		call(r, "cuLaunchKernel", 0, 0, 9, func, 1ull, 1ull, 1ull, 128ull, 1ull, 1ull, 0ull,
		     MAIN_STREAM);
	call(r, "cuStreamEndCapture", 1000, exec + 0x100, 2, MAIN_STREAM, 0x9000ull);
	call(r, "cuGraphInstantiateWithFlags", 1000, exec, 3, 0x9100ull, exec + 0x100, 0ull);
}

static void graph(struct recs *r, __u64 exec)
{
	call(r, "cuGraphLaunch", 0, 0, 2, exec, MAIN_STREAM);
}

/*
 * The loop: two draft steps, every PLANT_EVERY-th cycle a stream sync before
 * verify, the accept copy and sync, the extend; a stall of stall_ns before
 * cycle stall_at.
 */
static void build(struct recs *r, __u64 pace, int stall_at, __u64 stall_ns)
{
	memset(r, 0, sizeof(*r));
	r->hdr.version = 1;
	r->hdr.nr_probes = catalog_len;
	r->hdr.probes = calloc(catalog_len, sizeof(*r->hdr.probes));
	assert_non_null(r->hdr.probes);
	for (int i = 0; i < catalog_len; i++)
		r->hdr.probes[i].catalog = i;
	r->now = 10 * SEC;
	r->pace = pace;
	call(r, "cuDevicePrimaryCtxRetain", 1000, 0xc7c7, 2, 0x9990ull, 0ull);
	call(r, "cuStreamCreate", 1000, MAIN_STREAM, 2, 0x9980ull, 1ull);
	call(r, "cuStreamCreate", 1000, SIDE_STREAM, 2, 0x9988ull, 1ull);
	call(r, "cuMemHostAlloc", 1000, PINNED_HOST, 3, 0x9970ull, 4096ull, 0ull);
	capture(r, VERIFY_EXEC, 0xa100, 9);
	capture(r, DRAFT_EXEC, 0xa500, 4);
	capture(r, EXTEND_EXEC, 0xa600, 4);
	call(r, "cuCtxSynchronize", 1000, 0, 0);
	for (int i = 0; i < CYCLES; i++) {
		if (i == stall_at)
			r->now += stall_ns;
		r->now += 30000 * pace;
		graph(r, DRAFT_EXEC);
		graph(r, DRAFT_EXEC);
		if (i % PLANT_EVERY == 1)
			r->planted[r->nr_planted++] =
				call(r, "cuStreamSynchronize", 300000, 0, 1, MAIN_STREAM);
		graph(r, VERIFY_EXEC);
		call(r, "cuMemcpyDtoHAsync", 2000, 0, 4, PINNED_HOST, 0x8000ull, 64ull, MAIN_STREAM);
		call(r, "cuStreamSynchronize", 2000000, 0, 1, MAIN_STREAM);
		graph(r, EXTEND_EXEC);
	}
	call(r, "cuStreamSynchronize", 10000, 0, 1, MAIN_STREAM);
	/* the process exits after its loop: the last cycle's end is seen */
	put(r, &(struct sp_exit_rec){ .type = SP_REC_EXIT, .size = sizeof(struct sp_exit_rec),
				      .tgid = 100, .ts = r->now },
	    sizeof(struct sp_exit_rec));
}

static void recs_free(struct recs *r)
{
	free(r->buf);
	free(r->hdr.probes);
}

/* What a consumer was handed: cycles (start times) and flagged syncs (entry times). */
struct seen {
	__u64 cycle_start[MAX_SEEN];
	int cycles;
	__u64 flagged_ts[MAX_SEEN];
	int flagged;
	int draft_verify;	/* flagged between draft and verify */
	int by_tick;		/* cycles handed on by the last tick */
};

static int on_cycle(void *ctx, const struct loop *lp, const struct cycle *c)
{
	struct seen *s = ctx;

	assert_true(s->cycles < MAX_SEEN);
	/* indices count over the whole run, windowed or not */
	assert_int_equal(c->index, s->cycles);
	s->cycle_start[s->cycles++] = c->start_ns;
	return 0;
}

static int on_sync(void *ctx, const struct sync_verdict *sv)
{
	struct seen *s = ctx;

	if (!sv->flagged)
		return 0;
	assert_true(s->flagged < MAX_SEEN);
	s->flagged_ts[s->flagged++] = sv->sync->ts;
	s->draft_verify += sv->pos == SPOS_DRAFT_VERIFY;
	return 0;
}

static int on_tick(void *ctx, __u64 ts_ns)
{
	struct seen *s = ctx;

	s->by_tick = s->cycles;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* The records fed one by one to a pipeline, as top's reader and report's do. */
static void run(const struct recs *r, const struct pipeline_opts *opts, struct seen *out)
{
	struct pipeline_consumer c = { .cycle = on_cycle, .sync = on_sync, .tick = on_tick,
				       .ctx = out };
	struct pipeline *p = pipeline__new(&r->hdr, opts);

	memset(out, 0, sizeof(*out));
	assert_non_null(p);
	assert_int_equal(pipeline__add(p, &c), 0);
	for (size_t off = 0; off < r->len;) {
		const struct sp_rec_hdr *h = (const void *)(r->buf + off);

		assert_int_equal(pipeline__feed(p, h, h->size), 0);
		off += h->size;
	}
	assert_int_equal(pipeline__finish(p), 0);
	pipeline__free(p);
	/* syncs settle per thread in entry order, cycles too; sort to compare as sets */
	qsort(out->flagged_ts, out->flagged, sizeof(__u64), cmp_u64);
}

/* Windowed at each step cadence: the whole run's cycles and flagged syncs, the planted. */
static void expect_window_is_whole(__u64 pace, int stall_at, __u64 stall_ns)
{
	static const __u64 steps[] = { 0, 1 * MS, 50 * MS, 3 * SEC };
	const struct pipeline_opts whole_opts = { .analyse = true };
	struct seen whole, win;
	struct recs r;

	build(&r, pace, stall_at, stall_ns);
	run(&r, &whole_opts, &whole);
	assert_int_equal(whole.cycles, CYCLES);
	assert_int_equal(whole.flagged, r.nr_planted);
	assert_int_equal(whole.draft_verify, r.nr_planted);
	assert_memory_equal(whole.flagged_ts, r.planted, r.nr_planted * sizeof(__u64));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		/* 0: the window's own step (250 ms of trace time), as top and --metrics run */
		const struct pipeline_opts opts = { .analyse = true, .window = true,
						    .tick_ns = steps[i] };

		__u64 step = steps[i] ? steps[i] : WINDOW_STEP_NS;

		run(&r, &opts, &win);
		/* where steps fit in the run, windows settled cycles before the end */
		if (r.now - 10 * SEC > 2 * step)
			assert_true(win.by_tick > 0);
		assert_int_equal(win.cycles, whole.cycles);
		assert_memory_equal(win.cycle_start, whole.cycle_start,
				    whole.cycles * sizeof(__u64));
		assert_int_equal(win.flagged, whole.flagged);
		assert_int_equal(win.draft_verify, whole.draft_verify);
		assert_memory_equal(win.flagged_ts, whole.flagged_ts,
				    whole.flagged * sizeof(__u64));
	}
	recs_free(&r);
}

/* A cycle of about 2 ms: many cycles in each window step. */
static void test_fast_loop(void **state)
{
	expect_window_is_whole(1, -1, 0);
}

/* About 0.2 s a cycle, a server slowed by load: a cycle or so per window step. */
static void test_slowed_loop(void **state)
{
	expect_window_is_whole(100, -1, 0);
}

/* About 2 s a cycle: steps pass with no call, and the accept sync outlasts a step. */
static void test_crawling_loop(void **state)
{
	expect_window_is_whole(1000, -1, 0);
}

/* The host stalls 20 s mid-loop (descheduled, swapping): many empty steps, then the rest. */
static void test_loop_with_stall(void **state)
{
	expect_window_is_whole(1, CYCLES / 2, 20 * SEC);
	expect_window_is_whole(100, CYCLES / 3, 20 * SEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast_loop),
		cmocka_unit_test(test_slowed_loop),
		cmocka_unit_test(test_crawling_loop),
		cmocka_unit_test(test_loop_with_stall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
