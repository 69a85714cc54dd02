// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The GPU matcher: executions placed on their calls by process, stream and order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "gputime.h"

#define PID 100

static void call(struct gputime *g, __u64 ts, __u64 stream, __u8 kind)
{
	struct gpu_call c = { .ts = ts, .tgid = PID, .tid = PID, .stream = stream, .kind = kind };

	assert_int_equal(gputime__call(g, &c), 0);
}

static void exec(struct gputime *g, __u32 cupti_stream, __u8 kind, __u64 start, __u64 end)
{
	struct sp_gpu_rec r = { .type = SP_REC_GPU, .size = sizeof(r), .tgid = PID,
				.start = start, .end = end, .stream = cupti_stream, .kind = kind };

	assert_int_equal(gputime__record(g, &r, sizeof(r)), 1);
}

static void state(struct gputime *g, __u32 status, __u64 flushed)
{
	struct sp_gpu_state_rec r = { .type = SP_REC_GPU_STATE, .size = sizeof(r), .tgid = PID,
				      .flushed_ns = flushed, .status = status };

	assert_int_equal(gputime__record(g, &r, sizeof(r)), 1);
}

static void assert_exec(struct gputime *g, __u64 ts, __u64 start, __u64 end)
{
	__u64 s = 0, e = 0;

	assert_true(gputime__exec_of(g, PID, PID, ts, &s, &e));
	assert_int_equal(s, start);
	assert_int_equal(e, end);
}

/* Two streams: each CUPTI stream binds to its handle, then each runs FIFO. */
static void test_two_streams_fifo(void **state_)
{
	struct gputime *g = gputime__new();

	call(g, 100, 0xa, SP_GPU_GRAPH);
	call(g, 110, 0xb, SP_GPU_KERNEL);
	call(g, 120, 0xa, SP_GPU_GRAPH);
	call(g, 130, 0xb, SP_GPU_KERNEL);
	/* arrive late and out of order */
	exec(g, 7, SP_GPU_KERNEL, 300, 350);
	exec(g, 3, SP_GPU_GRAPH, 400, 500);
	exec(g, 3, SP_GPU_GRAPH, 200, 290);
	exec(g, 7, SP_GPU_KERNEL, 140, 160);
	assert_int_equal(gputime__advance(g, 1000, true, NULL, NULL), 0);
	assert_exec(g, 100, 200, 290);
	assert_exec(g, 120, 400, 500);
	assert_exec(g, 110, 140, 160);
	assert_exec(g, 130, 300, 350);
	assert_int_equal(gputime__stats(g)->matched, 4);
	assert_int_equal(gputime__stats(g)->unmatched_records, 0);
	assert_int_equal(gputime__stats(g)->unmatched_calls, 0);
	gputime__free(g);
}

/*
 * A process known from its calls alone (no execution held, no busy time yet):
 * advanced, forgotten and unioned with empty arrays, which are NULL
 * (sanitize-test holds qsort and memmove to their nonnull arguments).
 */
static void test_calls_only(void **state_)
{
	struct gputime *g = gputime__new();

	call(g, 100, 1, SP_GPU_GRAPH);
	assert_int_equal(gputime__advance(g, 1000, false, NULL, NULL), 0);
	gputime__forget(g, 50);
	assert_int_equal(gputime__advance(g, 1000, true, NULL, NULL), 0);
	assert_int_equal(gputime__stats(g)->matched, 0);
	assert_int_equal(gputime__union(NULL, 0), 0);
	gputime__free(g);
}

/* An execution that starts before any call fitting it entered is unmatched; a call left too. */
static void test_unmatched(void **state_)
{
	struct gputime *g = gputime__new();

	call(g, 100, 1, SP_GPU_GRAPH);
	call(g, 200, 1, SP_GPU_GRAPH);
	exec(g, 1, SP_GPU_GRAPH, 50, 60);	/* before its call: launched before attach */
	exec(g, 1, SP_GPU_GRAPH, 250, 260);	/* the oldest call's: FIFO on the stream */
	assert_int_equal(gputime__advance(g, 1000, true, NULL, NULL), 0);
	assert_exec(g, 100, 250, 260);
	assert_int_equal(gputime__stats(g)->unmatched_records, 1);
	assert_int_equal(gputime__stats(g)->unmatched_calls, 1);
	gputime__free(g);
}

/* Executions wait for the agent's watermark: one ending after it is not matched yet. */
static void test_watermark(void **state_)
{
	struct gputime *g = gputime__new();

	state(g, SP_GPU_ON, 0);
	call(g, 100, 1, SP_GPU_KERNEL);
	exec(g, 1, SP_GPU_KERNEL, 150, 400);
	state(g, SP_GPU_ON, 300);
	/* the call still waits for its execution: its cycle is held at it */
	assert_int_equal(gputime__horizon(g, 1000), 100);
	assert_int_equal(gputime__advance(g, 1000, false, NULL, NULL), 0);
	assert_int_equal(gputime__stats(g)->matched, 0);
	state(g, SP_GPU_ON, 500);
	assert_int_equal(gputime__advance(g, 1000, false, NULL, NULL), 0);
	assert_exec(g, 100, 150, 400);
	assert_int_equal(gputime__horizon(g, 1000), 500);
	/* an agent that went off holds nothing back */
	state(g, SP_GPU_OFF, 500);
	assert_int_equal(gputime__horizon(g, 1000), 1000);
	assert_int_equal(gputime__stats(g)->nr_agents, 1);
	gputime__free(g);
}

/* The timeline: busy time, the gap holding a moment, and unions. */
static void test_timeline(void **state_)
{
	struct gputime *g = gputime__new();
	__u64 gap = 99, iv[3][2] = { { 30, 40 }, { 10, 20 }, { 15, 25 } };

	exec(g, 1, SP_GPU_KERNEL, 100, 200);
	exec(g, 1, SP_GPU_KERNEL, 150, 250);
	exec(g, 2, SP_GPU_KERNEL, 400, 500);
	assert_int_equal(gputime__advance(g, 1000, true, NULL, NULL), 0);
	assert_int_equal(gputime__busy(g, PID, 0, 1000), 250);
	assert_int_equal(gputime__busy(g, PID, 200, 450), 100);
	assert_true(gputime__gap_at(g, PID, 300, &gap));
	assert_int_equal(gap, 150);
	assert_true(gputime__gap_at(g, PID, 180, &gap));
	assert_int_equal(gap, 0);
	assert_false(gputime__gap_at(g, PID, 600, &gap));
	assert_int_equal(gputime__union(iv, 3), 25);
	gputime__free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_streams_fifo),
		cmocka_unit_test(test_unmatched),
		cmocka_unit_test(test_calls_only),
		cmocka_unit_test(test_watermark),
		cmocka_unit_test(test_timeline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
