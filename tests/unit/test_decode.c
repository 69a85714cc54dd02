// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Records to calls: pairing, nesting, unreturned marking, entry-time order. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "decode.h"
#include "collect_calls.h"

static void feed_call(struct decoder *d, __u32 tid, __u32 seq, __u64 ts, __u8 depth,
		      __u32 parent, bool has_ret)
{
	struct sp_call_rec rec = {
		.type = SP_REC_CALL, .size = sizeof(rec), .probe = 7, .ts = ts, .tgid = 100,
		.tid = tid, .seq = seq, .parent_seq = parent, .depth = depth,
		.flags = has_ret ? SP_CALL_HAS_RET : 0,
	};

	rec.args[0] = seq * 10;
	assert_int_equal(decoder__feed(d, &rec, sizeof(rec)), 0);
}

static void feed_ret(struct decoder *d, __u32 tid, __u32 seq, __u64 ts, __u8 depth, __u64 result)
{
	struct sp_ret_rec rec = {
		.type = SP_REC_RET, .size = sizeof(rec), .probe = 7, .ts = ts, .tgid = 100,
		.tid = tid, .seq = seq, .depth = depth, .result = result, .out = 0xabc,
	};

	assert_int_equal(decoder__feed(d, &rec, sizeof(rec)), 0);
}

static void test_pairs_entry_and_completion(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);

	feed_call(d, 1, 1, 1000, 0, 0, true);
	assert_int_equal(out.n, 0);	/* held until it completes */
	feed_ret(d, 1, 1, 1500, 0, 0);
	feed_call(d, 1, 2, 2000, 0, 0, false);
	assert_int_equal(decoder__finish(d), 0);
	assert_int_equal(out.n, 2);
	assert_true(out.calls[0].returned);
	assert_int_equal(out.calls[0].ts_return, 1500);
	assert_int_equal(out.calls[0].out, 0xabc);
	assert_int_equal(out.calls[0].entry.args[0], 10);
	assert_false(out.calls[1].has_ret);
	assert_false(out.calls[1].unreturned);
	assert_int_equal(decoder__stats(d)->unreturned, 0);
	decoder__free(d);
}

static void test_nested_call_keeps_parent(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);

	feed_call(d, 1, 1, 1000, 0, 0, false);	/* collective, entry only */
	feed_call(d, 1, 2, 1100, 1, 1, false);	/* its kernel launch */
	feed_call(d, 1, 3, 1200, 0, 0, true);	/* back at the outer level */
	feed_ret(d, 1, 3, 1300, 0, 0);
	decoder__finish(d);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.calls[1].entry.depth, 1);
	assert_int_equal(out.calls[1].entry.parent_seq, 1);
	assert_false(out.calls[2].unreturned);
	decoder__free(d);
}

static void test_lost_return_is_unreturned(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);

	/* a blocking call whose return never came, then a new call at the same depth */
	feed_call(d, 1, 1, 1000, 0, 0, true);
	feed_call(d, 1, 2, 2000, 0, 0, false);
	decoder__finish(d);
	assert_int_equal(out.n, 2);
	assert_true(out.calls[0].unreturned);
	assert_false(out.calls[0].returned);
	assert_int_equal(decoder__stats(d)->unreturned, 1);
	decoder__free(d);
}

static void test_open_calls_at_end_and_exit(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);
	struct sp_exit_rec ex = { .type = SP_REC_EXIT, .size = sizeof(ex), .tgid = 100, .ts = 5000 };

	feed_call(d, 1, 1, 1000, 0, 0, true);
	feed_call(d, 2, 1, 1100, 0, 0, true);
	assert_int_equal(decoder__feed(d, &ex, sizeof(ex)), 0);
	/* the exit let both go without waiting for the end */
	assert_int_equal(out.n, 2);
	assert_true(out.calls[0].unreturned && out.calls[1].unreturned);
	decoder__finish(d);
	assert_int_equal(decoder__stats(d)->unreturned, 2);
	decoder__free(d);
}

static void test_reorders_within_window(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 1000);

	/* records of two CPUs arrive slightly out of entry order */
	feed_call(d, 1, 1, 5000, 0, 0, false);
	feed_call(d, 2, 1, 4800, 0, 0, false);
	feed_call(d, 1, 2, 5100, 0, 0, false);
	assert_int_equal(out.n, 0);	/* all within the window of the newest */
	feed_call(d, 2, 2, 7000, 0, 0, false);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.calls[0].entry.ts, 4800);
	assert_int_equal(out.calls[1].entry.ts, 5000);
	assert_int_equal(out.calls[2].entry.ts, 5100);
	decoder__finish(d);
	assert_int_equal(out.n, 4);
	assert_int_equal(decoder__stats(d)->late, 0);
	decoder__free(d);
}

static void test_order_waits_for_open_call(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);

	feed_call(d, 1, 1, 1000, 0, 0, true);	/* a sync that blocks */
	feed_call(d, 2, 1, 1100, 0, 0, false);
	feed_call(d, 2, 2, 1200, 0, 0, false);
	assert_int_equal(out.n, 0);
	feed_ret(d, 1, 1, 1300, 0, 0);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.calls[0].entry.tid, 1);
	decoder__free(d);
}

static void test_orphan_return_counted(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);

	feed_ret(d, 1, 0, 1000, 0, 0);
	feed_ret(d, 1, 9, 1000, 0, 0);
	decoder__finish(d);
	assert_int_equal(out.n, 0);
	assert_int_equal(decoder__stats(d)->orphan_returns, 2);
	decoder__free(d);
}

static void test_stats_and_end(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);
	struct sp_stats_rec st = { .type = SP_REC_END, .size = sizeof(st) };
	struct sp_rec_hdr bad = { .type = 99, .size = sizeof(bad) };

	st.counters[SP_CNT_DROP_CALL] = 3;
	assert_int_equal(decoder__feed(d, &st, sizeof(st)), 0);
	assert_true(decoder__stats(d)->ended);
	assert_int_equal(decoder__stats(d)->counters[SP_CNT_DROP_CALL], 3);
	assert_int_equal(decoder__feed(d, &bad, sizeof(bad)), -EBADMSG);
	assert_int_equal(decoder__feed(d, &st, 10), -EBADMSG);
	decoder__free(d);
}

/* The same records again (a write repeated): read once, counted, no phantom unreturned call. */
static void test_duplicates_read_once(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);

	feed_call(d, 1, 1, 1000, 0, 0, true);
	feed_call(d, 1, 1, 1000, 0, 0, true);
	feed_ret(d, 1, 1, 1500, 0, 0);
	feed_ret(d, 1, 1, 1500, 0, 0);
	feed_call(d, 2, 1, 1600, 0, 0, true);
	feed_call(d, 1, 2, 2000, 0, 0, true);
	feed_ret(d, 1, 2, 2500, 0, 0);
	/* a block of thread 1 replayed: older in number and time than what was read */
	feed_call(d, 1, 1, 1000, 0, 0, true);
	feed_ret(d, 1, 1, 1500, 0, 0);
	feed_ret(d, 2, 1, 1700, 0, 0);
	/* a new thread of the same tid numbers from 1 again, later: not a duplicate */
	feed_call(d, 1, 1, 3000, 0, 0, false);
	assert_int_equal(decoder__finish(d), 0);
	assert_int_equal(out.n, 4);
	assert_int_equal(decoder__stats(d)->duplicate_records, 4);
	assert_int_equal(decoder__stats(d)->unreturned, 0);
	assert_int_equal(decoder__stats(d)->calls, 4);
	assert_int_equal(decoder__stats(d)->out_of_order, 0);
	decoder__free(d);
}

/* A thread's record stamped before its previous one: kept, counted once. */
static void test_out_of_order_counted(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);

	feed_call(d, 1, 1, 1000, 0, 0, false);
	feed_call(d, 1, 2, 900, 0, 0, false);	/* a stamp gone back */
	feed_call(d, 1, 3, 1100, 0, 0, false);
	feed_call(d, 2, 1, 500, 0, 0, false);	/* another thread: its own order */
	assert_int_equal(decoder__finish(d), 0);
	assert_int_equal(out.n, 4);
	assert_int_equal(decoder__stats(d)->out_of_order, 1);
	assert_int_equal(decoder__stats(d)->duplicate_records, 0);
	decoder__free(d);
}

/* A cookie past the described probes is kept and counted; the calibration probe is known. */
static void test_unknown_cookie_counted(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);
	struct sp_call_rec rec = { .type = SP_REC_CALL, .size = sizeof(rec), .ts = 2000,
				   .tgid = 100, .tid = 1, .seq = 2, .probe = 8 };

	decoder__set_probes(d, 8);
	feed_call(d, 1, 1, 1000, 0, 0, false);	/* probe 7 */
	assert_int_equal(decoder__feed(d, &rec, sizeof(rec)), 0);
	rec.seq = 3, rec.ts = 3000, rec.probe = SP_CALIB_PROBE;
	assert_int_equal(decoder__feed(d, &rec, sizeof(rec)), 0);
	decoder__set_probes(d, 9);	/* a late probe describes cookie 8 */
	rec.seq = 4, rec.ts = 4000, rec.probe = 8;
	assert_int_equal(decoder__feed(d, &rec, sizeof(rec)), 0);
	assert_int_equal(decoder__finish(d), 0);
	assert_int_equal(out.n, 4);
	assert_int_equal(out.calls[1].entry.probe, 8);
	assert_int_equal(decoder__stats(d)->unknown_cookie_calls, 1);
	decoder__free(d);
}

static void feed_call_of(struct decoder *d, __u32 tgid, __u32 tid, __u32 seq, __u64 ts)
{
	struct sp_call_rec rec = { .type = SP_REC_CALL, .size = sizeof(rec), .probe = 7, .ts = ts,
				   .tgid = tgid, .tid = tid, .seq = seq };

	assert_int_equal(decoder__feed(d, &rec, sizeof(rec)), 0);
}

/* Numbers a thread skipped are calls missing; one damaged number, or a new thread, is not. */
static void test_missing_calls_by_numbers(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);
	__u64 ts = 1000;

	for (__u32 seq = 1; seq <= 3; seq++)
		feed_call_of(d, 100, 1, seq, ts += 10);
	feed_call_of(d, 100, 1, 7, ts += 10);	/* 4, 5, 6 removed */
	feed_call_of(d, 100, 1, 8, ts += 10);
	feed_call_of(d, 100, 1, 70008, ts += 10);	/* a damaged number: the next goes on from 9 */
	feed_call_of(d, 100, 1, 9, ts += 10);
	feed_call_of(d, 100, 1, 5, ts += 10);	/* one gone back */
	feed_call_of(d, 100, 1, 10, ts += 10);
	/* another thread starts where the input does; the tid numbered again from 1 */
	feed_call_of(d, 100, 2, 40, ts += 10);
	feed_call_of(d, 100, 2, 41, ts += 10);
	feed_call_of(d, 100, 2, 1, ts += 10);
	feed_call_of(d, 100, 2, 2, ts += 10);
	/* the same tid in another process numbers on its own */
	feed_call_of(d, 200, 1, 1, ts += 10);
	feed_call_of(d, 100, 1, 11, ts += 10);
	/* a ring's missing segment counts its calls itself: not again by the numbers */
	decoder__renumber(d);
	feed_call_of(d, 100, 1, 50, ts += 10);
	feed_call_of(d, 100, 1, 51, ts += 10);
	assert_int_equal(decoder__finish(d), 0);
	assert_int_equal(out.n, 17);
	assert_int_equal(decoder__stats(d)->missing_calls, 3);
	assert_int_equal(decoder__stats(d)->misnumbered_calls, 2);
	decoder__free(d);
}

/* A call of a process the recording never described: kept, marked, counted, no call missing. */
static void test_undescribed_process_counted(void **state)
{
	struct collected out = { 0 };
	struct decoder *d = decoder__new(collect, &out, 0);
	struct sp_fork_rec fork = { .type = SP_REC_FORK, .size = sizeof(fork), .tgid = 300,
				    .ts = 1500, .parent = 100 };

	decoder__describe_process(d, 100);
	feed_call_of(d, 100, 1, 1, 1000);
	feed_call_of(d, 100 | 1 << 24, 1, 2, 1100);	/* its pid damaged */
	feed_call_of(d, 100, 1, 3, 1200);
	assert_int_equal(decoder__feed(d, &fork, sizeof(fork)), 0);
	feed_call_of(d, 300, 300, 1, 1600);	/* a traced child */
	assert_int_equal(decoder__finish(d), 0);
	assert_int_equal(out.n, 4);
	assert_false(out.calls[0].undescribed);
	assert_true(out.calls[1].undescribed);
	assert_false(out.calls[2].undescribed);
	assert_false(out.calls[3].undescribed);
	assert_int_equal(decoder__stats(d)->unknown_process_calls, 1);
	assert_int_equal(decoder__stats(d)->missing_calls, 0);
	decoder__free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pairs_entry_and_completion),
		cmocka_unit_test(test_nested_call_keeps_parent),
		cmocka_unit_test(test_lost_return_is_unreturned),
		cmocka_unit_test(test_open_calls_at_end_and_exit),
		cmocka_unit_test(test_reorders_within_window),
		cmocka_unit_test(test_order_waits_for_open_call),
		cmocka_unit_test(test_orphan_return_counted),
		cmocka_unit_test(test_stats_and_end),
		cmocka_unit_test(test_duplicates_read_once),
		cmocka_unit_test(test_out_of_order_counted),
		cmocka_unit_test(test_unknown_cookie_counted),
		cmocka_unit_test(test_missing_calls_by_numbers),
		cmocka_unit_test(test_undescribed_process_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
