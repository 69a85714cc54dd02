// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The Python frames' evidence (frames.c) on stacks shaped as Hugging Face's
 * assisted generation makes them: what the loop's frames learn from each sync
 * and which syncs are the draft's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "callstack.h"
#include "cycles_int.h"

enum code {
	MODULE = 1, MAIN, DECORATE, GENERATE, PREPARE, ASSISTED, GET_CANDIDATES, GENERATE_CANDIDATES,
	SAMPLE, STOPPING, CROP, FORWARD, CALL_IMPL, LAYER, MODELS, APPLY, CONVERT, MASK,
};

/* Line of the loop's statements in ASSISTED */
#define AT_CANDIDATES 3851
#define AT_COMPARE 3938
#define AT_CROP 3964
#define AT_FORWARD 3900

struct frame { __u64 code; int line; };

/* A stack of the frames given outermost first (cs_stack holds them innermost first). */
static struct cs_stack *stack(struct cs_python *py, const struct frame *f, __u32 n)
{
	static struct cs_stack st;

	for (__u32 i = 0; i < n; i++)
		py[n - 1 - i] = (struct cs_python){ .code = f[i].code, .line = f[i].line };
	st = (struct cs_stack){ .nr_py = n, .py = py };
	return &st;
}

#define STACK(...) stack(py, (const struct frame[]){ __VA_ARGS__ }, \
			 sizeof((const struct frame[]){ __VA_ARGS__ }) / sizeof(struct frame))
#define OUTER { MODULE, 34 }, { MAIN, 24 }, { DECORATE, 124 }

static void test_assisted_generation(void **state)
{
	struct cs_python py[16];
	struct frame_loop fl = { 0 };
	__u64 stmt;

	(void)state;
	/* the target's set-up before its loop: nothing nests yet */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2658 }, { PREPARE, 2194 }),
				       &stmt), FRAME_LOOP);
	/* a read in the assistant's sampling loop: its generate() inside the target's */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 },
						  { ASSISTED, AT_CANDIDATES }, { GET_CANDIDATES, 221 },
						  { GENERATE_CANDIDATES, 324 }, { DECORATE, 124 },
						  { GENERATE, 2802 }, { SAMPLE, 3082 }, { STOPPING, 612 }),
				       &stmt), FRAME_NESTED);
	assert_true(fl.nested);
	assert_int_equal(fl.loop_code, ASSISTED);
	/* the candidate generator's own read, outside the nested generate(): under the same statement */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 },
						  { ASSISTED, AT_CANDIDATES }, { GET_CANDIDATES, 221 },
						  { GENERATE_CANDIDATES, 335 }), &stmt), FRAME_NESTED);
	/* the loop's compare and its cache trim: its own */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_COMPARE }),
				       &stmt), FRAME_LOOP);
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_CROP },
						  { CROP, 172 }), &stmt), FRAME_LOOP);
	/* the target's forward calling its modules through one wrapper: a repeat, not a nesting */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_FORWARD },
						  { CALL_IMPL, 1775 }, { FORWARD, 391 },
						  { CALL_IMPL, 1775 }, { LAYER, 308 }), &stmt), FRAME_LOOP);
	/* a walk that lost the frames between the assistant's generate() and the program's */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2658 }, { PREPARE, 2234 }), &stmt),
			 FRAME_NONE);
	/* one cut short tells nothing of the frames every sync shares */
	assert_int_equal(frames__learn(&fl, STACK({ MODULE, 34 }, { MAIN, 24 }), &stmt), FRAME_NONE);
	assert_int_equal(fl.prefix.nr, 4);
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_COMPARE }),
				       &stmt), FRAME_LOOP);
}

/*
 * Recorded from the program's start: the models' load (a recursive apply) and
 * the target's set-up share only the program's frames with the loop; the
 * first nesting stack sets the loop, down to the frames it runs again.
 */
static void test_from_start(void **state)
{
	struct cs_python py[24];
	struct frame_loop fl = { 0 };
	__u64 stmt;

	(void)state;
	frames__learn(&fl, STACK({ MODULE, 34 }, { MAIN, 20 }, { MODELS, 27 }, { APPLY, 934 },
				 { APPLY, 934 }, { APPLY, 965 }, { CONVERT, 1370 }), &stmt);
	frames__learn(&fl, STACK(OUTER, { GENERATE, 2658 }, { PREPARE, 2194 }, { PREPARE, 2192 },
				 { STOPPING, 1 }, { STOPPING, 2 }, { STOPPING, 3 }), &stmt);
	assert_false(fl.nested);
	assert_int_equal(fl.prefix.nr, 2);
	/* the assistant's prefill: decorate_context and generate again, past main */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 },
						  { ASSISTED, AT_CANDIDATES }, { GET_CANDIDATES, 221 },
						  { GENERATE_CANDIDATES, 324 }, { DECORATE, 124 },
						  { GENERATE, 2802 }, { SAMPLE, 3002 }, { CALL_IMPL, 1779 },
						  { FORWARD, 391 }, { MASK, 269 }), &stmt), FRAME_NESTED);
	assert_true(fl.nested);
	assert_int_equal(fl.prefix.nr, 4);
	assert_int_equal(fl.loop_code, ASSISTED);
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_CROP },
						  { CROP, 172 }), &stmt), FRAME_LOOP);
	/* the target's forward checking its mask where the assistant's did: the forward's */
	assert_int_equal(frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_FORWARD },
						  { CALL_IMPL, 1779 }, { FORWARD, 391 }, { MASK, 269 }),
				       &stmt), FRAME_NONE);
	assert_true(frames__in_forward(&fl, STACK(OUTER, { GENERATE, 2802 },
						  { ASSISTED, AT_FORWARD }, { CALL_IMPL, 1779 },
						  { FORWARD, 391 }, { MASK, 269 })));
	assert_false(frames__in_forward(&fl, STACK(OUTER, { GENERATE, 2802 },
						   { ASSISTED, AT_CROP }, { CROP, 172 })));
}

static void test_in_draft(void **state)
{
	struct cs_python py[16];
	struct frame_loop fl = { 0 };
	__u64 stmt;

	(void)state;
	/* nothing nested: the frames say nothing of any sync */
	assert_false(frames__in_draft(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_COMPARE })));
	frames__learn(&fl, STACK(OUTER, { GENERATE, 2658 }, { PREPARE, 2194 }), &stmt);
	frames__learn(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_CANDIDATES },
				 { GET_CANDIDATES, 221 }, { GENERATE_CANDIDATES, 324 },
				 { DECORATE, 124 }, { GENERATE, 2802 }, { SAMPLE, 3082 }),
		      &stmt);
	assert_true(frames__in_draft(&fl, STACK(OUTER, { GENERATE, 2802 },
						{ ASSISTED, AT_CANDIDATES }, { GET_CANDIDATES, 221 },
						{ GENERATE_CANDIDATES, 335 })));
	assert_true(frames__in_draft(&fl, STACK(OUTER, { GENERATE, 2658 }, { PREPARE, 2234 })));
	assert_false(frames__in_draft(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_CROP },
						 { CROP, 185 })));
	assert_false(frames__in_draft(&fl, STACK(OUTER, { GENERATE, 2802 }, { ASSISTED, AT_COMPARE })));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_assisted_generation),
		cmocka_unit_test(test_from_start),
		cmocka_unit_test(test_in_draft),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
