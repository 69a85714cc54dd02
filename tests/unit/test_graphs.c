// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Graph inventory (captures, side streams, names, collectives, uncaptured execs), model state. */
#include "call_seq.h"

#define ATTN 0xa100
#define SIDE 0xa200
#define GEMM 0xa300
#define FORK_EV 0xe100
#define JOIN_EV 0xe200

static struct model_kernel *kernel_of(const struct model_capture *cap, __u64 func)
{
	for (__u32 i = 0; i < cap->nr_kernels; i++)
		if (cap->kernels[i].func == func)
			return &cap->kernels[i];
	return NULL;
}

/* main -> event -> side stream joins -> event -> back to main, as the verify graph does */
static void capture_with_side_stream(struct call_seq *s, __u64 graph, __u64 exec)
{
	begin_capture(s, MAIN_STREAM);
	event_record(s, FORK_EV, MAIN_STREAM);
	wait_event(s, SIDE_STREAM, FORK_EV);
	kernel(s, SIDE, SIDE_STREAM);
	event_record(s, JOIN_EV, SIDE_STREAM);
	kernel(s, ATTN, MAIN_STREAM);
	wait_event(s, MAIN_STREAM, JOIN_EV);
	kernel(s, GEMM, MAIN_STREAM);
	kernel(s, ATTN, MAIN_STREAM);
	end_capture(s, MAIN_STREAM, graph, exec);
}

static void test_side_stream_joins_capture(void **state)
{
	struct call_seq s;
	struct model_exec *x;
	const struct model_capture *cap;

	seq_init(&s, 0);
	name_function(&s, ATTN, "target_attention");
	name_function(&s, SIDE, "target_side_proj");
	capture_with_side_stream(&s, 0x9a00, 0xb100);
	/* after the end, the side stream runs its work again */
	kernel(&s, SIDE, SIDE_STREAM);
	x = find_exec(&s, 0xb100);
	assert_non_null(x);
	cap = x->capture;
	assert_non_null(cap);
	assert_true(x->instantiated);
	assert_int_equal(x->graph, 0x9a00);
	assert_int_equal(cap->order, 1);
	assert_int_equal(cap->tid, 100);
	assert_int_equal(cap->stream, MAIN_STREAM);
	assert_int_equal(cap->kernel_count, 4);
	assert_int_equal(cap->side_kernel_count, 1);
	assert_int_equal(cap->nr_side, 1);
	assert_int_equal(cap->side_streams[0], SIDE_STREAM);
	assert_int_equal(kernel_of(cap, ATTN)->count, 2);
	assert_int_equal(kernel_of(cap, SIDE)->side, 1);
	assert_string_equal(model__func_name(s.m, 100, ATTN), "target_attention");
	assert_null(model__func_name(s.m, 100, GEMM));
	/* the launch after the capture is eager work, in the loop events */
	assert_int_equal(model__view(s.m)->threads[0]->nr_events, 1);
	assert_int_equal(model__view(s.m)->threads[0]->events[0].kind, LOOP_KERNEL);
	seq_free(&s);
}

static void test_capture_order_and_instances(void **state)
{
	struct call_seq s;

	seq_init(&s, 0);
	capture_graph(&s, 0x9a00, 0xb100, ATTN, 3);
	capture_graph(&s, 0x9b00, 0xb200, GEMM, 2);
	/* a second instance of the first graph has its content */
	seq_call(&s, "cuGraphInstantiate", 1000, 0xb300, NULL, 2, 0x9100ull, 0x9a00ull);
	assert_int_equal(find_exec(&s, 0xb100)->capture->order, 1);
	assert_int_equal(find_exec(&s, 0xb200)->capture->order, 2);
	assert_ptr_equal(find_exec(&s, 0xb300)->capture, find_exec(&s, 0xb100)->capture);
	assert_int_equal(find_exec(&s, 0xb300)->capture->kernel_count, 3);
	/* update swaps the content */
	seq_call(&s, "cuGraphExecUpdate", 1000, 0, NULL, 3, 0xb300ull, 0x9b00ull, 0ull);
	assert_int_equal(find_exec(&s, 0xb300)->capture->kernel_count, 2);
	seq_free(&s);
}

static void test_names_through_library_kernels(void **state)
{
	struct call_seq s;

	seq_init(&s, 0);
	seq_call(&s, "cuLibraryGetKernel", 1000, 0xc100, "draft_lm_head", 3, 0x1ull, 0x2ull,
		 0x3ull);
	seq_call(&s, "cuKernelGetFunction", 1000, 0xc200, NULL, 2, 0x4ull, 0xc100ull);
	assert_string_equal(model__func_name(s.m, 100, 0xc100), "draft_lm_head");
	assert_string_equal(model__func_name(s.m, 100, 0xc200), "draft_lm_head");
	/* handles belong to their process */
	assert_null(model__func_name(s.m, 101, 0xc200));
	seq_free(&s);
}

static void test_collective_in_capture(void **state)
{
	struct call_seq s;
	const struct model_capture *cap;

	seq_init(&s, 0);
	begin_capture(&s, MAIN_STREAM);
	kernel(&s, ATTN, MAIN_STREAM);
	/* ncclAllReduce of 1024 bf16 (datatype 9), and the kernel NCCL launches inside it */
	seq_call(&s, "ncclAllReduce", 0, 0, NULL, 7, 0x1ull, 0x1ull, 1024ull, 9ull, 0ull, 0x77ull,
		 (__u64)MAIN_STREAM);
	s.depth = 1;
	kernel(&s, 0xdead, MAIN_STREAM);
	s.depth = 0;
	end_capture(&s, MAIN_STREAM, 0x9a00, 0xb100);
	cap = find_exec(&s, 0xb100)->capture;
	assert_int_equal(cap->kernel_count, 1);
	assert_int_equal(cap->nr_colls, 1);
	assert_string_equal(model__call_name(cap->colls[0].name), "ncclAllReduce");
	assert_int_equal(cap->colls[0].count, 1);
	assert_int_equal(cap->colls[0].bytes, 2048);
	seq_free(&s);
}

static void test_uncaptured_exec_and_reuse(void **state)
{
	struct call_seq s;
	struct model_exec *x;

	seq_init(&s, 0);
	graph_launch(&s, 0xb900);
	graph_launch(&s, 0xb900);
	x = find_exec(&s, 0xb900);
	assert_non_null(x);
	assert_null(x->capture);
	assert_false(x->instantiated);
	assert_int_equal(x->launches, 2);
	/* destroyed, then the handle comes back from a new instantiate */
	seq_call(&s, "cuGraphExecDestroy", 0, 0, NULL, 1, 0xb900ull);
	capture_graph(&s, 0x9a00, 0xb900, ATTN, 2);
	assert_int_equal(model__view(s.m)->nr_execs, 2);
	assert_non_null(find_exec(&s, 0xb900)->capture);
	assert_int_equal(find_exec(&s, 0xb900)->launches, 0);
	seq_free(&s);
}

static void test_failed_capture_makes_no_graph(void **state)
{
	struct call_seq s;
	const struct catalog_entry *end = catalog__find("cuStreamEndCapture");
	struct sp_call c = { 0 };

	seq_init(&s, 0);
	begin_capture(&s, MAIN_STREAM);
	kernel(&s, ATTN, MAIN_STREAM);
	c.entry.probe = end - catalog;
	c.entry.tgid = c.entry.tid = 100;
	c.entry.ts = s.now;
	c.entry.args[0] = MAIN_STREAM;
	c.has_ret = c.returned = true;
	c.ts_return = s.now + 10;
	c.result = 901;	/* capture invalidated */
	assert_int_equal(model__call(s.m, &c), 0);
	assert_int_equal(model__view(s.m)->nr_captures, 1);
	assert_true(model__view(s.m)->captures[0]->failed);
	/* the stream left capture: its next launch is eager */
	kernel(&s, ATTN, MAIN_STREAM);
	assert_int_equal(model__view(s.m)->threads[0]->nr_events, 1);
	seq_free(&s);
}

static __u8 last_copy_flags(struct call_seq *s, __u64 host)
{
	struct model_thread *t;

	seq_call(s, "cuMemcpyDtoHAsync", 1000, 0, NULL, 4, host, 0x8000ull, 64ull,
		 (__u64)MAIN_STREAM);
	t = model__view(s->m)->threads[0];
	return t->events[t->nr_events - 1].flags;
}

/* An "async" copy blocks when its host memory is pageable, known only if every pin was seen. */
static void test_pageable_copy_blocks(void **state)
{
	struct call_seq s;

	seq_init(&s, 0);
	seq_call(&s, "cuDevicePrimaryCtxRetain", 1000, 0xc7, NULL, 2, 0x10ull, 3ull);
	seq_call(&s, "cuMemHostAlloc", 1000, 0x70000, NULL, 3, 0x20ull, 4096ull, 0ull);
	assert_int_equal(model__view(s.m)->procs[0]->device, 3);
	assert_true(model__view(s.m)->procs[0]->pinned_known);
	assert_int_equal(last_copy_flags(&s, 0x70100), LOOP_D2H);
	assert_int_equal(last_copy_flags(&s, 0x90000), LOOP_D2H | LOOP_BLOCKING);
	seq_call(&s, "cuMemFreeHost", 0, 0, NULL, 1, 0x70000ull);
	assert_int_equal(last_copy_flags(&s, 0x70100), LOOP_D2H | LOOP_BLOCKING);
	seq_free(&s);

	/* attached after the context was made: the kind of host memory is unknown */
	seq_init(&s, 0);
	kernel(&s, ATTN, MAIN_STREAM);
	seq_call(&s, "cuDevicePrimaryCtxRetain", 1000, 0xc7, NULL, 2, 0x10ull, 0ull);
	assert_false(model__view(s.m)->procs[0]->pinned_known);
	assert_int_equal(last_copy_flags(&s, 0x90000), LOOP_D2H);
	seq_free(&s);
}

static void test_rank_and_fork(void **state)
{
	struct call_seq s;
	struct sp_fork_rec fork = { .type = SP_REC_FORK, .size = sizeof(fork), .tgid = 200,
				    .ts = 5, .parent = 100 };
	struct sp_exit_rec exit_rec = { .type = SP_REC_EXIT, .size = sizeof(exit_rec), .tgid = 200,
					.ts = 99 };
	struct model_view *v;

	seq_init(&s, 0);
	model__record(s.m, &fork, sizeof(fork));
	s.tgid = s.tid = 200;
	seq_call(&s, "ncclCommInitRank", 1000, 0x300, NULL, 3, 0x40ull, 4ull, 2ull);
	model__record(s.m, &exit_rec, sizeof(exit_rec));
	v = model__view(s.m);
	assert_int_equal(v->nr_procs, 1);
	assert_int_equal(v->procs[0]->parent, 100);
	assert_int_equal(v->procs[0]->rank, 2);
	assert_int_equal(v->procs[0]->nranks, 4);
	assert_int_equal(v->procs[0]->exit_ns, 99);
	assert_true(v->procs[0]->pinned_known);
	seq_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_side_stream_joins_capture),
		cmocka_unit_test(test_capture_order_and_instances),
		cmocka_unit_test(test_names_through_library_kernels),
		cmocka_unit_test(test_collective_in_capture),
		cmocka_unit_test(test_uncaptured_exec_and_reuse),
		cmocka_unit_test(test_failed_capture_makes_no_graph),
		cmocka_unit_test(test_pageable_copy_blocks),
		cmocka_unit_test(test_rank_and_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
