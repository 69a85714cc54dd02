// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The protobuf encoder: varints, tags, fixed64, strings, backpatched sub-message lengths. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "pbwriter.h"

static void test_varints(void **state)
{
	static const struct {
		__u64 v;
		int len;
		__u8 bytes[10];
	} cases[] = {
		{ 0, 1, { 0x00 } },
		{ 1, 1, { 0x01 } },
		{ 127, 1, { 0x7f } },
		{ 128, 2, { 0x80, 0x01 } },
		{ 300, 2, { 0xac, 0x02 } },
		{ 1000000, 3, { 0xc0, 0x84, 0x3d } },
		{ (1ull << 32) - 1, 5, { 0xff, 0xff, 0xff, 0xff, 0x0f } },
		/* a negative int64 takes ten bytes: two's complement, no zigzag */
		{ (__u64)-1, 10, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u8 out[10];

		assert_int_equal(pb__varint_len(cases[i].v), cases[i].len);
		assert_int_equal(pb__put_varint(out, cases[i].v), cases[i].len);
		assert_memory_equal(out, cases[i].bytes, cases[i].len);
	}
}

static void test_tags(void **state)
{
	static const __u8 want[] = {
		0x40, 0xe8, 0x07,		/* field 8 varint 1000 */
		0xd0, 0x03, 0x03,		/* field 58 varint 3: a two-byte tag */
		0xf9, 0x02, 1, 2, 3, 4, 5, 6, 7, 8,	/* field 47 fixed64, little endian */
		0xba, 0x01, 0x05, 'h', 'e', 'l', 'l', 'o',	/* field 23 string */
	};
	struct pbw w;

	assert_int_equal(pbw__init(&w, -1), 0);
	pbw__varint(&w, 8, 1000);
	pbw__varint(&w, 58, 3);
	pbw__fixed64(&w, 47, 0x0807060504030201ull);
	pbw__string(&w, 23, "hello");
	assert_int_equal(w.err, 0);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.buf, want, sizeof(want));
	pbw__free(&w);
}

/* PERFETTO.md's worked example, with 2-byte lengths in place of the minimal ones. */
static void test_backpatched_lengths(void **state)
{
	static const __u8 want[] = {
		0x0a, 0x9a, 0x00,		/* packet, 26 bytes */
		0x40, 0xe8, 0x07, 0x50, 0x01,
		0xe2, 0x03, 0x91, 0x00,		/* track_descriptor, 17 bytes */
		0x08, 0x02,
		0x22, 0x8c, 0x00,		/* thread, 12 bytes */
		0x08, 0x64, 0x10, 0x65, 0x2a, 0x06, 'w', 'o', 'r', 'k', 'e', 'r',
	};
	struct pbw w;

	assert_int_equal(pbw__init(&w, -1), 0);
	pbw__begin(&w, 1);
	pbw__varint(&w, 8, 1000);
	pbw__varint(&w, 10, 1);
	pbw__begin(&w, 60);
	pbw__varint(&w, 1, 2);
	pbw__begin(&w, 4);
	pbw__varint(&w, 1, 100);
	pbw__varint(&w, 2, 101);
	pbw__string(&w, 5, "worker");
	pbw__end(&w);
	pbw__end(&w);
	pbw__end(&w);
	assert_int_equal(w.depth, 0);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.buf, want, sizeof(want));
	pbw__free(&w);
}

/* A two-varint sub-message gets a minimal one-byte length: the bytes protoc writes. */
static void test_pair(void **state)
{
	static const __u8 want[] = {
		0x22, 0x04, 0x08, 0x07, 0x20, 0x2a,	/* {name_iid 7, int_value 42} */
		0x22, 0x0e, 0x08, 0x81, 0x01,		/* {name_iid 129, pointer_value ~0} */
		0x38, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
	};
	struct pbw w;

	assert_int_equal(pbw__init(&w, -1), 0);
	pbw__pair(&w, 4, 1, 7, 4, 42);
	pbw__pair(&w, 4, 1, 129, 7, ~0ull);
	assert_int_equal(w.err, 0);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.buf, want, sizeof(want));
	pbw__free(&w);
}

/* A length past 2^21 uses all four bytes; the buffer grows past its first size. */
static void test_large_message(void **state)
{
	size_t n = (1u << 21) + 5;
	char *big = malloc(n);
	struct pbw w;
	__u64 len = 0;

	assert_non_null(big);
	memset(big, 'x', n);
	assert_int_equal(pbw__init(&w, -1), 0);
	pbw__begin(&w, 1);
	pbw__bytes(&w, 2, big, n);
	pbw__end(&w);
	assert_int_equal(w.err, 0);
	for (int i = 0; i < 4; i++)
		len |= (__u64)(w.buf[1 + i] & 0x7f) << (7 * i);
	assert_int_equal(len, w.len - 5);
	assert_int_equal(w.buf[4] & 0x80, 0);
	free(big);
	pbw__free(&w);
}

static size_t get_len4(const __u8 *p)
{
	size_t len = 0;

	for (int i = 0; i < 4; i++)
		len |= (size_t)(p[i] & 0x7f) << (7 * i);
	return len;
}

/* A message of 16 KiB or more inside another: both move to 4-byte lengths, fields intact. */
static void test_long_nested(void **state)
{
	size_t n = 20000;
	char *big = malloc(n);
	struct pbw w;
	__u8 *p;

	assert_non_null(big);
	memset(big, 'y', n);
	assert_int_equal(pbw__init(&w, -1), 0);
	pbw__begin(&w, 1);
	pbw__varint(&w, 5, 1);
	pbw__begin(&w, 2);
	pbw__bytes(&w, 3, big, n);
	pbw__end(&w);
	pbw__varint(&w, 4, 7);
	pbw__end(&w);
	assert_int_equal(w.err, 0);
	p = w.buf;
	assert_int_equal(p[0], 0x0a);
	assert_int_equal(get_len4(p + 1), w.len - 5);
	assert_int_equal(p[5], 0x28);
	assert_int_equal(p[6], 1);
	assert_int_equal(p[7], 0x12);
	assert_int_equal(get_len4(p + 8), 1 + 3 + n);	/* tag, varint 20000, the bytes */
	assert_int_equal(p[12], 0x1a);
	assert_int_equal(p[16 + n - 1], 'y');
	assert_int_equal(p[16 + n], 0x20);
	assert_int_equal(p[16 + n + 1], 7);
	assert_int_equal(w.len, 16 + n + 2);
	free(big);
	pbw__free(&w);
}

/* Flushing writes only whole top-level messages, and all of them at close. */
static void test_flush_to_file(void **state)
{
	char path[] = "/tmp/test_pbwriter.XXXXXX";
	int fd = mkstemp(path);
	struct pbw w;
	__u8 got[64];

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(pbw__init(&w, fd), 0);
	pbw__begin(&w, 1);
	pbw__varint(&w, 8, 1);
	assert_int_equal(pbw__flush(&w, 0), 0);
	assert_int_equal(w.written, 0);	/* a message is open */
	pbw__end(&w);
	assert_int_equal(pbw__flush(&w, 0), 0);
	assert_int_equal(w.written, 5);
	pbw__begin(&w, 1);
	pbw__end(&w);
	assert_int_equal(pbw__close(&w), 0);
	assert_int_equal(w.written, 8);
	assert_int_equal(pread(fd, got, sizeof(got), 0), 8);
	assert_int_equal(got[0], 0x0a);
	assert_int_equal(got[1], 0x82);
	assert_int_equal(got[2], 0x00);
	assert_int_equal(got[3], 0x40);
	assert_int_equal(got[5], 0x0a);
	pbw__free(&w);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varints),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_backpatched_lengths),
		cmocka_unit_test(test_pair),
		cmocka_unit_test(test_large_message),
		cmocka_unit_test(test_long_nested),
		cmocka_unit_test(test_flush_to_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
