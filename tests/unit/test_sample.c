// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --sample windows from their records: slots alternate window and gap, a
 * span counts as inside only within one window, and records out of order or
 * unpaired are not taken as windows.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "sample.h"
#include "specprobe.h"

static void note(struct sample_windows *s, bool open, __u64 ts, __u64 cost)
{
	struct sp_sample_rec r = { .type = SP_REC_SAMPLE, .size = sizeof(r),
				   .flags = open ? SP_SAMPLE_OPEN : 0, .ts = ts, .cost_ns = cost,
				   .on_ms = 100, .every_ms = 400, .probes = 6 };

	sample__note(s, &r, sizeof(r));
}

static void test_slots_and_spans(void **state)
{
	struct sample_windows s = { 0 };

	(void)state;
	assert_false(sample__on(&s));
	assert_true(sample__inside(&s, 1, 1000));	/* not sampled: everything is whole */
	note(&s, true, 100, 5);
	note(&s, false, 200, 20);
	note(&s, true, 500, 7);
	note(&s, false, 600, 30);
	note(&s, true, 900, 6);		/* still open */
	assert_true(sample__on(&s));
	assert_int_equal(s.nr, 3);
	assert_int_equal(sample__slot(&s, 50), 0);
	assert_int_equal(sample__slot(&s, 100), 1);	/* edges belong to the window */
	assert_int_equal(sample__slot(&s, 200), 1);
	assert_int_equal(sample__slot(&s, 201), 2);
	assert_int_equal(sample__slot(&s, 550), 3);
	assert_int_equal(sample__slot(&s, 5000), 5);
	assert_true(sample__inside(&s, 120, 180));
	assert_false(sample__inside(&s, 150, 550));	/* two windows, a gap between */
	assert_false(sample__inside(&s, 300, 400));	/* a gap */
	assert_int_equal(sample__covered_ns(&s, 0, 1000), 100 + 100 + 100);
	assert_int_equal(s.attach_ns, 18);
	assert_int_equal(s.attach_max_ns, 7);
	assert_int_equal(s.detach_max_ns, 30);
	sample__free(&s);
}

static void test_unpaired_records(void **state)
{
	struct sample_windows s = { 0 };

	(void)state;
	note(&s, false, 50, 0);		/* the first: a segment begun inside a window */
	assert_int_equal(s.nr, 1);
	assert_int_equal(s.w[0].open_ns, 0);
	assert_int_equal(s.w[0].close_ns, 50);
	note(&s, false, 60, 0);		/* a close with nothing open */
	assert_int_equal(s.nr, 1);
	note(&s, true, 100, 0);
	note(&s, true, 150, 0);		/* opened twice: the first holds */
	note(&s, false, 90, 0);		/* closes before it opened */
	note(&s, false, 200, 0);
	note(&s, true, 180, 0);		/* opens before the last close: not trusted */
	assert_int_equal(s.nr, 2);
	assert_int_equal(s.w[1].open_ns, 100);
	assert_int_equal(s.w[1].close_ns, 200);
	sample__note(&s, "x", 1);	/* too short */
	assert_int_equal(s.nr, 2);
	sample__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_and_spans),
		cmocka_unit_test(test_unpaired_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
