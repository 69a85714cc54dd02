// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Durations and sizes as every command takes them: a bare number in the caller's unit. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "parse.h"

#define S PARSE_NS_PER_S
#define MS PARSE_NS_PER_MS

static void expect_ns(const char *arg, unsigned long long bare, unsigned long long want)
{
	unsigned long long ns = 12345;

	assert_int_equal(parse__duration_ns(arg, bare, &ns), 0);
	assert_true(ns == want);
}

static void test_duration_units(void **state)
{
	(void)state;
	expect_ns("30", S, 30 * S);
	expect_ns("30s", S, 30 * S);
	expect_ns("1s", S, S);
	expect_ns("1.5s", S, 1500 * MS);
	expect_ns(".5s", S, 500 * MS);
	expect_ns("500ms", S, 500 * MS);
	expect_ns("2m", S, 120 * S);
	expect_ns("0.25m", S, 15 * S);
	expect_ns("0", S, 0);
	expect_ns("1e3ms", S, S);
	/* a bare number takes the caller's unit: --hung-ms counts milliseconds */
	expect_ns("250", MS, 250 * MS);
	expect_ns("2s", MS, 2 * S);
	expect_ns("365m", S, 365 * 60 * S);
}

static void test_duration_refused(void **state)
{
	static const char *const bad[] = {
		"", "s", "ms", "-1", "-1s", "+1s", " 1s", "1 s", "1S", "1h", "1sec", "1mss",
		"1x", "0x10", "inf", "nan", "1e400", "366d", "1e10m", ".", "1..2s", "1s ",
	};
	unsigned long long ns = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!parse__duration_ns(bad[i], S, &ns))
			fail_msg("'%s' taken as %llu ns", bad[i], ns);
	}
	/* past a year: refused before it could overflow */
	assert_int_equal(parse__duration_ns("31536001", S, &ns), -EINVAL);
	assert_int_equal(parse__duration_ns("31536000", S, &ns), 0);
	assert_true(ns == 31536000 * S);
}

static void test_seconds_ns_bounds(void **state)
{
	unsigned long long ns;

	(void)state;
	assert_int_equal(parse__seconds_ns("5", &ns), 0);
	assert_true(ns == 5 * S);
	assert_int_equal(parse__seconds_ns("500ms", &ns), 0);
	assert_true(ns == 500 * MS);
	assert_int_equal(parse__seconds_ns("0", &ns), -EINVAL);
	assert_int_equal(parse__seconds_ns("0ms", &ns), -EINVAL);
	assert_int_equal(parse__seconds_ns("1441m", &ns), -EINVAL);
	assert_int_equal(parse__seconds_ns("1440m", &ns), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_units),
		cmocka_unit_test(test_duration_refused),
		cmocka_unit_test(test_seconds_ns_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
