// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The ring's packed entries, widened to the call records that recordings hold. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "session.h"

struct pkt_buf {
	struct sp_call_pkt pkt;
	__u64 words[SP_MAX_ARGS];
	__u8 data[SP_DATA_LARGE];
};

struct wide_buf {
	struct sp_call_rec rec;
	__u8 data[SP_DATA_LARGE];
};

static void head(struct pkt_buf *b, __u16 size, __u8 flags)
{
	memset(b, 0, sizeof(*b));
	b->pkt = (struct sp_call_pkt){
		.type = SP_REC_CALL_PACKED, .size = size, .probe = 4095, .depth = 2,
		.flags = flags, .ts = 123456789, .tgid = 77, .tid = 78, .seq = 9, .parent_seq = 8,
	};
}

static void test_launch_dims_widen_to_nine_arguments(void **state)
{
	struct pkt_buf b;
	struct wide_buf w;
	__u32 *dims = (__u32 *)&b.words[1];

	head(&b, sizeof(b.pkt) + 6 * 8, SP_PKT_DIMS | 1 << (SP_PKT_FAULT_SHIFT + SP_FAULT_STACK));
	b.words[0] = 0xf00d;
	for (int i = 0; i < 7; i++)
		dims[i] = 10 + i;
	b.words[5] = 0x1;	/* CU_STREAM_LEGACY */
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), 0);
	assert_int_equal(w.rec.type, SP_REC_CALL);
	assert_int_equal(w.rec.size, sizeof(w.rec));
	assert_int_equal(w.rec.probe, 4095);
	assert_int_equal(w.rec.ts, 123456789);
	assert_int_equal(w.rec.tgid, 77);
	assert_int_equal(w.rec.tid, 78);
	assert_int_equal(w.rec.seq, 9);
	assert_int_equal(w.rec.parent_seq, 8);
	assert_int_equal(w.rec.depth, 2);
	assert_int_equal(w.rec.flags, 0);
	assert_int_equal(w.rec.faults, 1 << SP_FAULT_STACK);
	assert_int_equal(w.rec.args[0], 0xf00d);
	for (int i = 0; i < 7; i++)
		assert_int_equal(w.rec.args[1 + i], 10 + i);
	assert_int_equal(w.rec.args[8], 0x1);
}

static void test_short_records_leave_the_rest_zero(void **state)
{
	struct pkt_buf b;
	struct wide_buf w;

	head(&b, sizeof(b.pkt) + 2 * 8, SP_PKT_HAS_RET);
	b.words[0] = 0xe1;
	b.words[1] = 0xe2;
	memset(&w, 0xaa, sizeof(w));
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), 0);
	assert_int_equal(w.rec.flags, SP_CALL_HAS_RET);
	assert_int_equal(w.rec.args[0], 0xe1);
	assert_int_equal(w.rec.args[1], 0xe2);
	for (int i = 2; i < SP_MAX_ARGS; i++)
		assert_int_equal(w.rec.args[i], 0);
	assert_int_equal(w.rec.pad, 0);
}

static void test_data_follows_the_words(void **state)
{
	struct pkt_buf b;
	struct wide_buf w;
	__u8 *data = (__u8 *)&b.words[2];

	head(&b, sizeof(b.pkt) + 2 * 8 + SP_DATA_SMALL, SP_PKT_DATA_SMALL);
	for (int i = 0; i < SP_DATA_SMALL; i++)
		data[i] = i;
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), 0);
	assert_int_equal(w.rec.size, sizeof(w.rec) + SP_DATA_SMALL);
	for (int i = 0; i < SP_DATA_SMALL; i++)
		assert_int_equal(w.data[i], i);
	/* a name: nine words, then 128 bytes */
	head(&b, sizeof(b.pkt) + SP_MAX_ARGS * 8 + SP_DATA_LARGE, SP_PKT_DATA_LARGE);
	strcpy((char *)&b.words[SP_MAX_ARGS], "verify_kernel");
	b.words[2] = 0xabc;
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), 0);
	assert_int_equal(w.rec.size, sizeof(w.rec) + SP_DATA_LARGE);
	assert_int_equal(w.rec.args[2], 0xabc);
	assert_string_equal((char *)w.data, "verify_kernel");
}

static void test_malformed_packets_are_refused(void **state)
{
	struct pkt_buf b;
	struct wide_buf w;

	head(&b, sizeof(b.pkt) + 12, 0);	/* not whole words */
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), -EINVAL);
	head(&b, sizeof(b.pkt) + 10 * 8, 0);	/* more words than arguments */
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), -EINVAL);
	head(&b, sizeof(b.pkt) + 4 * 8, SP_PKT_DIMS);	/* dimensions need six words */
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), -EINVAL);
	head(&b, sizeof(b.pkt) + 8, SP_PKT_DATA_SMALL);	/* shorter than its data */
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w)), -EINVAL);
	head(&b, sizeof(b.pkt) + 16, 0);	/* size field and ring size disagree */
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size + 8, &w.rec, sizeof(w)), -EINVAL);
	head(&b, sizeof(b.pkt) + 2 * 8 + SP_DATA_SMALL, SP_PKT_DATA_SMALL);	/* no room */
	assert_int_equal(session__widen_call(&b.pkt, b.pkt.size, &w.rec, sizeof(w.rec)), -EINVAL);
	assert_int_equal(session__widen_call(&b.pkt, 4, &w.rec, sizeof(w)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launch_dims_widen_to_nine_arguments),
		cmocka_unit_test(test_short_records_leave_the_rest_zero),
		cmocka_unit_test(test_data_follows_the_words),
		cmocka_unit_test(test_malformed_packets_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
