// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The agent's ring (gpushm.h): whole records in order, drops counted, wraparound, bad sizes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "gpushm.h"

#define DATA 256	/* a small ring: fills and wraps quickly */

struct ring {
	struct gpushm_header h;
	unsigned char data[DATA];
};

/* A record of size bytes whose payload bytes all say seq. */
static void make_rec(unsigned char *rec, __u16 size, unsigned char seq)
{
	memset(rec, seq, size);
	((__u16 *)rec)[0] = 65;
	((__u16 *)rec)[1] = size;
}

static void check_rec(const unsigned char *rec, int got, __u16 size, unsigned char seq)
{
	assert_int_equal(got, size);
	assert_int_equal(((const __u16 *)rec)[1], size);
	for (int i = 4; i < size; i++)
		assert_int_equal(rec[i], seq);
}

static void test_in_order(void **state)
{
	struct ring r = { 0 };
	unsigned char rec[64], out[64];

	(void)state;
	assert_int_equal(gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 0);
	for (int i = 0; i < 3; i++) {
		make_rec(rec, 16 + 8 * i, i + 1);
		assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 16 + 8 * i), 0);
	}
	assert_int_equal(r.h.produced, 16 + 24 + 32);
	for (int i = 0; i < 3; i++)
		check_rec(out, gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 16 + 8 * i, i + 1);
	assert_int_equal(gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 0);
	assert_int_equal(r.h.consumed, r.h.produced);
	assert_int_equal(r.h.ring_dropped, 0);
}

/* A full ring drops and counts; what is in it stays whole; room made is used again. */
static void test_full_drops(void **state)
{
	struct ring r = { 0 };
	unsigned char rec[48], out[48];

	(void)state;
	make_rec(rec, 48, 7);
	for (int i = 0; i < 5; i++)	/* 5 * 48 = 240 of 256 */
		assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 48), 0);
	assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 48), -ENOSPC);
	assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 24), -ENOSPC);
	assert_int_equal(r.h.ring_dropped, 2);
	make_rec(rec, 16, 8);
	assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 16), 0);	/* exactly full */
	assert_int_equal(r.h.produced - r.h.consumed, DATA);
	assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 8), -ENOSPC);
	assert_int_equal(r.h.ring_dropped, 3);
	check_rec(out, gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 48, 7);
	make_rec(rec, 48, 9);
	assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 48), 0);
	for (int i = 0; i < 4; i++)
		check_rec(out, gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 48, 7);
	check_rec(out, gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 16, 8);
	check_rec(out, gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 48, 9);
	assert_int_equal(gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 0);
	assert_int_equal(r.h.ring_dropped, 3);
}

/* Sizes that do not divide the ring: records split across its end come out whole. */
static void test_wraparound(void **state)
{
	struct ring r = { 0 };
	unsigned char rec[72], out[72];
	int split = 0;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		__u16 size = 24 + 8 * (i % 7);
		__u64 at = r.h.produced % DATA;

		split += at + size > DATA;
		make_rec(rec, size, i & 0xff);
		assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, size), 0);
		if (i % 3 == 2)	/* the reader lags: the ring holds several at once */
			continue;
		while (r.h.consumed < r.h.produced) {
			int got = gpushm__get(&r.h, r.data, DATA, out, sizeof(out));

			assert_true(got > 0);
		}
	}
	assert_true(split > 10);
	assert_true(r.h.produced > 100 * DATA);
	/* one more, checked byte for byte after all that wrapping */
	make_rec(rec, 72, 0xab);
	assert_int_equal(gpushm__put(&r.h, r.data, DATA, rec, 72), 0);
	while (r.h.produced - r.h.consumed > 72)
		assert_true(gpushm__get(&r.h, r.data, DATA, out, sizeof(out)) > 0);
	check_rec(out, gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), 72, 0xab);
	assert_int_equal(r.h.ring_dropped, 0);
}

/* A writer that lies (a size that is 0, odd, too long, or past what was written) is refused. */
static void test_bad_sizes(void **state)
{
	static const __u16 bad[] = { 0, 2, 12, 128, 40 };
	unsigned char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ring r = { 0 };
		__u16 hdr[2] = { 65, bad[i] };

		memcpy(r.data, hdr, sizeof(hdr));
		r.h.produced = 32;	/* 40 is past it */
		assert_int_equal(gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), -EBADMSG);
		assert_int_equal(r.h.consumed, 0);
	}
	{
		struct ring r = { 0 };

		r.h.produced = DATA + 8;	/* more than the ring holds */
		assert_int_equal(gpushm__get(&r.h, r.data, DATA, out, sizeof(out)), -EBADMSG);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_full_drops),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_bad_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
