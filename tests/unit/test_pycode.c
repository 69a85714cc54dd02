// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Python line tables decoded from hand-built tables of both formats, their
 * truncation and malformed input; the BPF config made from every table row;
 * a process without Python refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "pycode.h"
#include "pyprocs.h"

static void expect_lines(const struct sp_pyline *got, int nr, const struct sp_pyline *want,
			 int nr_want)
{
	int i;

	assert_int_equal(nr, nr_want);
	for (i = 0; i < nr; i++) {
		assert_int_equal(got[i].instr, want[i].instr);
		assert_int_equal(got[i].line, want[i].line);
	}
}

/* 3.10: (bytes, line delta) pairs, -128 for no line, empty ranges only move the line. */
static void test_decode_310(void **state)
{
	const __u8 table[] = { 4, 0, 6, 2, 2, (__u8)-128, 0, 5, 4, 0 };
	const struct sp_pyline want[] = { { 0, 10 }, { 4, 12 }, { 10, -1 }, { 12, 17 } };
	struct sp_pyline got[8];
	bool complete;
	int nr = pycode__decode_lines(10, table, sizeof(table), 10, got, 8, &complete);

	expect_lines(got, nr, want, 4);
	assert_true(complete);
}

/* 3.11+: no-column, short, one-line, no-location and long forms; a 2-byte varint. */
static void test_decode_311(void **state)
{
	const __u8 table[] = {
		0xe9, 0x02,		/* no columns, 2 units, +1 */
		0x80, 0x05,		/* short form, 1 unit, same line */
		0xe2, 0x01, 0x02,	/* one line +2, 3 units */
		0xf8,			/* no location, 1 unit */
		0xf0, 0x07, 0, 1, 1,	/* long form, 1 unit, -3 */
		0xe8, 0x48, 0x03,	/* no columns, 1 unit, +100 */
	};
	const struct sp_pyline want[] = { { 0, 6 }, { 6, 8 }, { 12, -1 }, { 14, 5 }, { 16, 105 } };
	struct sp_pyline got[8];
	bool complete;
	int nr = pycode__decode_lines(12, table, sizeof(table), 5, got, 8, &complete);

	expect_lines(got, nr, want, 5);
	assert_true(complete);
}

/* A table longer than the room ends in "no line from here". */
static void test_decode_truncated(void **state)
{
	const __u8 table[] = { 0xe9, 0x02, 0xe2, 0x01, 0x02, 0xf8 };
	const struct sp_pyline want[] = { { 0, 6 }, { 4, -1 } };
	struct sp_pyline got[2];
	bool complete;
	int nr = pycode__decode_lines(13, table, sizeof(table), 5, got, 2, &complete);

	expect_lines(got, nr, want, 2);
	assert_false(complete);
}

/* Cut after an entry with no line: the cut merges into it. */
static void test_decode_truncated_after_none(void **state)
{
	const __u8 table[] = { 0xe8, 0x02, 0xf8, 0xe8, 0x02, 0xe8, 0x02 };
	const struct sp_pyline want[] = { { 0, 6 }, { 2, -1 } };
	struct sp_pyline got[3];
	bool complete;
	int nr = pycode__decode_lines(12, table, sizeof(table), 5, got, 3, &complete);

	expect_lines(got, nr, want, 2);
	assert_false(complete);
}

static void test_decode_malformed(void **state)
{
	const __u8 no_start[] = { 0x68, 0x02 };
	const __u8 cut_varint[] = { 0xe8, 0x48 };
	const __u8 cut_columns[] = { 0xe0, 0x01 };
	const __u8 odd[] = { 4, 0, 2 };
	struct sp_pyline got[4];
	bool complete;

	assert_int_equal(pycode__decode_lines(11, no_start, 2, 1, got, 4, &complete), -EINVAL);
	assert_int_equal(pycode__decode_lines(11, cut_varint, 2, 1, got, 4, &complete), -EINVAL);
	assert_int_equal(pycode__decode_lines(11, cut_columns, 2, 1, got, 4, &complete), -EINVAL);
	assert_int_equal(pycode__decode_lines(10, odd, 3, 1, got, 4, &complete), -EINVAL);
}

/* Every generated row makes a config the BPF reader accepts, in its version's way. */
static void test_config_rows(void **state)
{
	unsigned int minor, rows = 0;

	for (minor = 10; minor <= 13; minor++) {
		const struct py_offsets *row = py_offsets__table(minor);
		struct py_proc proc = { .tgid = 1, .version = 0x03000000 | minor << 16,
					.runtime = 0x1000 };
		struct sp_py_config cfg;

		if (!row)
			continue;
		rows++;
		proc.off = *row;
		assert_int_equal(pyprocs__config(&proc, &cfg), 0);
		assert_true(cfg.frame_read > cfg.frame_code && cfg.frame_read <= SP_PY_FRAME_READ);
		assert_int_equal(cfg.id_kind, minor == 10 ? SP_PY_ID_FSBASE : SP_PY_ID_TID);
		assert_int_equal(cfg.instr_kind, minor == 10 ? SP_PY_INSTR_LASTI : SP_PY_INSTR_PTR);
		assert_int_equal(cfg.cframe_current_frame == SP_PYOFF_NONE,
				 minor != 11 && minor != 12);
		assert_int_equal(cfg.owner_cstack, minor >= 12 ? 3 : 0xff);
		proc.off.tstate_next = 0x10000;
		assert_int_equal(pyprocs__config(&proc, &cfg), -E2BIG);
	}
	assert_true(rows > 0);
	assert_null(py_offsets__table(9));
	assert_null(py_offsets__table(14));
}

static void test_not_python(void **state)
{
	struct py_proc proc;
	char err[256], buf[256];

	assert_int_equal(pyprocs__probe(getpid(), &proc, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no CPython"));
	assert_int_equal(pyprocs__add(-1, getpid()), -ENOENT);
	assert_null(pyprocs__find(getpid()));
	assert_int_equal(pycode__record(getpid(), 0x1000, buf, sizeof(buf)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_310),
		cmocka_unit_test(test_decode_311),
		cmocka_unit_test(test_decode_truncated),
		cmocka_unit_test(test_decode_truncated_after_none),
		cmocka_unit_test(test_decode_malformed),
		cmocka_unit_test(test_config_rows),
		cmocka_unit_test(test_not_python),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
