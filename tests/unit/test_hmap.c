// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The two-word map: entries removed in any order leave every other one found. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "hmap.h"

#define KEYS 5000

static void *val(__u64 k)
{
	return (void *)(uintptr_t)(k + 1);
}

static void test_remove_keeps_chains(void **state)
{
	struct hmap m = { 0 };

	(void)state;
	for (__u64 k = 0; k < KEYS; k++)
		assert_int_equal(hmap__set(&m, k, k * 7, val(k)), 0);
	/* every third key goes: chains cross the holes it leaves */
	for (__u64 k = 0; k < KEYS; k += 3)
		assert_ptr_equal(hmap__remove(&m, k, k * 7), val(k));
	assert_null(hmap__remove(&m, 0, 0));
	assert_int_equal(m.len, KEYS - (KEYS + 2) / 3);
	for (__u64 k = 0; k < KEYS; k++)
		assert_ptr_equal(hmap__get(&m, k, k * 7), k % 3 ? val(k) : NULL);
	/* the rest, then the map is empty and takes keys again */
	for (__u64 k = 0; k < KEYS; k++)
		if (k % 3)
			assert_ptr_equal(hmap__remove(&m, k, k * 7), val(k));
	assert_int_equal(m.len, 0);
	for (size_t i = 0; i < m.cap; i++)
		assert_null(m.slots[i].value);
	assert_int_equal(hmap__set(&m, 1, 2, val(1)), 0);
	assert_ptr_equal(hmap__get(&m, 1, 2), val(1));
	hmap__free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remove_keeps_chains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
