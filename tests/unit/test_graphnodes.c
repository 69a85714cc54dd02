// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The agent's folding of graph nodes into launches (graphnodes.h): built into
 * the agent, not into specprobe, so its source comes in here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "../../user/gpuagent/graphnodes.c"

struct sink {
	struct sp_gpu_rec got[64];
	int n;
};

static void keep(void *ctx, const struct sp_gpu_rec *exec)
{
	struct sink *s = ctx;

	assert_true(s->n < 64);
	s->got[s->n++] = *exec;
}

static struct sp_gpu_rec node(__u32 kind, __u32 graph, __u32 corr, __u32 stream, __u64 start,
			      __u64 end)
{
	return (struct sp_gpu_rec){ .type = SP_REC_GPU, .size = sizeof(struct sp_gpu_rec),
				    .kind = kind, .graph = graph, .correlation = corr,
				    .stream = stream, .start = start, .end = end, .name = 7 };
}

/* Two launches of one graph back to back: the second's first node ends the first. */
static void test_launches_in_a_row(void **state)
{
	struct graph_nodes g = { 0 };
	struct sink s = { 0 };
	struct sp_gpu_rec n;

	(void)state;
	for (int i = 0; i < 3; i++) {
		n = node(SP_GPU_KERNEL, 5, 100, 7, 1000 + 10 * i, 1005 + 10 * i);
		assert_true(graph_nodes__add(&g, &n, keep, &s));
	}
	n = node(SP_GPU_MEMSET, 5, 100, 7, 1030, 1032);
	assert_true(graph_nodes__add(&g, &n, keep, &s));
	assert_int_equal(s.n, 0);
	n = node(SP_GPU_KERNEL, 5, 101, 7, 2000, 2005);
	assert_true(graph_nodes__add(&g, &n, keep, &s));
	assert_int_equal(s.n, 1);
	assert_int_equal(s.got[0].kind, SP_GPU_GRAPH);
	assert_int_equal(s.got[0].graph, 5);
	assert_int_equal(s.got[0].correlation, 100);
	assert_int_equal(s.got[0].start, 1000);
	assert_int_equal(s.got[0].end, 1032);
	assert_int_equal(s.got[0].name, 0);
	/* the second is whole after GRAPH_NODES_AGE quiet flushes, and holds the flush back */
	assert_int_equal(graph_nodes__tick(&g, keep, &s), 2000);
	assert_int_equal(s.n, 1);
	assert_int_equal(graph_nodes__tick(&g, keep, &s), ~0ull);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.got[1].correlation, 101);
	assert_int_equal(s.got[1].end, 2005);
}

/* Eager work is not folded, yet ends a launch before it on its stream, not on another. */
static void test_eager_ends_its_stream(void **state)
{
	struct graph_nodes g = { 0 };
	struct sink s = { 0 };
	struct sp_gpu_rec a = node(SP_GPU_KERNEL, 3, 10, 1, 100, 200);
	struct sp_gpu_rec b = node(SP_GPU_KERNEL, 4, 11, 2, 150, 300);
	struct sp_gpu_rec eager = node(SP_GPU_KERNEL, 0, 12, 1, 210, 220);

	(void)state;
	assert_true(graph_nodes__add(&g, &a, keep, &s));
	assert_true(graph_nodes__add(&g, &b, keep, &s));
	assert_false(graph_nodes__add(&g, &eager, keep, &s));
	assert_int_equal(s.n, 1);
	assert_int_equal(s.got[0].graph, 3);
	graph_nodes__drain(&g, keep, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.got[1].graph, 4);
	assert_int_equal(graph_nodes__tick(&g, keep, &s), ~0ull);
}

/* More launches open than slots: the oldest goes out whole as it stands, none lost. */
static void test_full_table(void **state)
{
	struct graph_nodes g = { 0 };
	struct sink s = { 0 };

	(void)state;
	for (__u32 i = 0; i < GRAPH_NODES_OPEN + 2; i++) {
		struct sp_gpu_rec n = node(SP_GPU_KERNEL, 9, 500 + i, 100 + i, 10 * i, 10 * i + 5);

		assert_true(graph_nodes__add(&g, &n, keep, &s));
	}
	assert_int_equal(s.n, 2);
	assert_int_equal(s.got[0].correlation, 500);
	assert_int_equal(s.got[1].correlation, 501);
	graph_nodes__drain(&g, keep, &s);
	assert_int_equal(s.n, GRAPH_NODES_OPEN + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launches_in_a_row),
		cmocka_unit_test(test_eager_ends_its_stream),
		cmocka_unit_test(test_full_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
