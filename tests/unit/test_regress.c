// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The damaged recordings that crashed a reader (tests/fuzz/regress, found by
 * the field fuzzing and sweeps of tests/fuzz): every reader runs on each
 * (make sanitize-test runs this under ASan and UBSan), and what reading them
 * counts is checked against the damage done, named in the file's name:
 *   pid-*       one call's pid set to one never traced: 1 unknown_process_calls, none
 *               missing
 *   any other   a crash input with no count to check
 */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "../fuzz/fuzz_readers.h"

#define REGRESS_DIR "tests/fuzz/regress"

static const struct decode_stats *read_stats(const char *path, struct pipeline **pp)
{
	static const struct pipeline_opts calls_only = { .analyse = false };
	char err[512];

	*pp = pipeline__open(path, &calls_only, err, sizeof(err));
	assert_non_null(*pp);
	pipeline__read_all(*pp);
	pipeline__finish(*pp);
	return pipeline__stats(*pp);
}

static void check_counts(const char *name, const char *path)
{
	const struct decode_stats *st;
	struct pipeline *p;

	st = read_stats(path, &p);
	if (!strncmp(name, "pid-", 4)) {
		print_message("  %s: %llu calls of undescribed processes, %llu missing\n", name,
			      (unsigned long long)st->unknown_process_calls,
			      (unsigned long long)st->missing_calls);
		assert_int_equal(st->unknown_process_calls, 1);
		assert_int_equal(st->missing_calls, 0);
	}
	pipeline__free(p);
}

static void test_every_reader_on_each(void **state)
{
	DIR *dir = opendir(REGRESS_DIR);
	struct dirent *e;
	int files = 0;

	assert_non_null(dir);
	while ((e = readdir(dir))) {
		char path[PATH_MAX];

		if (!strstr(e->d_name, ".sprb"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", REGRESS_DIR, e->d_name);
		fuzz_read_all(path);
		check_counts(e->d_name, path);
		files++;
	}
	closedir(dir);
	print_message("  %d damaged recordings read by every reader\n", files);
	assert_true(files > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_reader_on_each),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
