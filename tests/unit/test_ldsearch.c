// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Where the loader would find a library: ld.so.cache files built here, LD_LIBRARY_PATH, users. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "launch.h"
#include "ldsearch.h"
#include "outfile.h"

#define X8664_LIBC6 0x0303

struct cache_entry {
	int32_t flags;
	const char *key;
	const char *value;
};

static char dir[] = "/tmp/specprobe-ldsearch.XXXXXX";
static char lib_path[PATH_MAX];

static void put32(FILE *f, uint32_t v)
{
	fwrite(&v, sizeof(v), 1, f);
}

/*
 * A cache in the new format (optionally after an old-format table), string
 * offsets counted from the new table's start, as ldconfig writes them.
 */
static void write_cache(const char *path, const struct cache_entry *e, int n, bool old_first)
{
	FILE *f = fopen(path, "w");
	uint32_t strings_at = 48 + 24 * n, off;
	long base = 0;

	assert_non_null(f);
	if (old_first) {
		fwrite("ld.so-1.7.0", 11, 1, f);
		put32(f, 1);
		for (int i = 0; i < 3; i++)
			put32(f, 0);	/* one old entry nobody reads */
		base = ftell(f);
		base = (base + 7) & ~7L;
		while (ftell(f) < base)
			fputc(0, f);
	}
	fwrite("glibc-ld.so.cache1.1", 20, 1, f);
	put32(f, n);
	put32(f, 0);
	for (int i = 0; i < 5; i++)
		put32(f, 0);	/* flags and padding, extension offset, unused[3] */
	off = strings_at;
	for (int i = 0; i < n; i++) {
		uint64_t hwcap = 0;

		put32(f, e[i].flags);
		put32(f, off);
		put32(f, off + strlen(e[i].key) + 1);
		put32(f, 0);
		fwrite(&hwcap, sizeof(hwcap), 1, f);
		off += strlen(e[i].key) + strlen(e[i].value) + 2;
	}
	for (int i = 0; i < n; i++) {
		fwrite(e[i].key, strlen(e[i].key) + 1, 1, f);
		fwrite(e[i].value, strlen(e[i].value) + 1, 1, f);
	}
	fclose(f);
}

static int setup(void **state)
{
	FILE *f;

	if (!mkdtemp(dir))
		return -1;
	snprintf(lib_path, sizeof(lib_path), "%s/libfoo.so.1", dir);
	f = fopen(lib_path, "w");
	if (!f)
		return -1;
	fputs("not really a library", f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static void test_cache_new_format(void **state)
{
	const struct cache_entry entries[] = {
		{ 0x0003, "libfoo.so.1", "/nonexistent/i386/libfoo.so.1" },	/* other arch */
		{ X8664_LIBC6, "libbar.so.2", "/nonexistent/libbar.so.2" },
		{ X8664_LIBC6, "libfoo.so.1", lib_path },
	};
	char cache[PATH_MAX], out[PATH_MAX];

	snprintf(cache, sizeof(cache), "%s/new.cache", dir);
	write_cache(cache, entries, 3, false);
	assert_int_equal(ldsearch__cache(cache, "libfoo.so.1", out, sizeof(out)), 0);
	assert_string_equal(out, lib_path);
	/* listed, but the file is not there */
	assert_int_equal(ldsearch__cache(cache, "libbar.so.2", out, sizeof(out)), -ENOENT);
	assert_int_equal(ldsearch__cache(cache, "libnone.so", out, sizeof(out)), -ENOENT);
}

static void test_cache_after_old_format(void **state)
{
	const struct cache_entry entries[] = { { X8664_LIBC6, "libfoo.so.1", lib_path } };
	char cache[PATH_MAX], out[PATH_MAX];

	snprintf(cache, sizeof(cache), "%s/old-new.cache", dir);
	write_cache(cache, entries, 1, true);
	assert_int_equal(ldsearch__cache(cache, "libfoo.so.1", out, sizeof(out)), 0);
	assert_string_equal(out, lib_path);
}

static void test_cache_truncated_or_foreign(void **state)
{
	const struct cache_entry entries[] = { { X8664_LIBC6, "libfoo.so.1", lib_path } };
	char cache[PATH_MAX], out[PATH_MAX];

	snprintf(cache, sizeof(cache), "%s/cut.cache", dir);
	write_cache(cache, entries, 1, false);
	assert_int_equal(truncate(cache, 60), 0);	/* header whole, entry cut */
	assert_int_equal(ldsearch__cache(cache, "libfoo.so.1", out, sizeof(out)), -ENOENT);
	assert_int_equal(truncate(cache, 10), 0);
	assert_int_equal(ldsearch__cache(cache, "libfoo.so.1", out, sizeof(out)), -ENOENT);
	assert_int_equal(ldsearch__cache(lib_path, "libfoo.so.1", out, sizeof(out)), -ENOENT);
	assert_true(ldsearch__cache("/nonexistent/ld.so.cache", "libfoo.so.1", out, sizeof(out)) < 0);
}

static void test_ld_library_path(void **state)
{
	char out[PATH_MAX], program[PATH_MAX], list[PATH_MAX + 32];

	assert_int_equal(ldsearch__program("sh", program, sizeof(program)), 0);
	assert_true(program[0] == '/');
	assert_int_equal(ldsearch__program("no-such-program-here", program, sizeof(program)),
			 -ENOENT);
	assert_int_equal(ldsearch__program("sh", program, sizeof(program)), 0);
	snprintf(list, sizeof(list), "/nonexistent:%s", dir);
	setenv("LD_LIBRARY_PATH", list, 1);
	assert_int_equal(ldsearch__library(program, "libfoo.so.1", out, sizeof(out)), 0);
	assert_string_equal(out, lib_path);
	unsetenv("LD_LIBRARY_PATH");
	assert_int_equal(ldsearch__library(program, "libfoo.so.1", out, sizeof(out)), -ENOENT);
}

/* A FIFO named as the command is refused at once, and reading it as a program never waits. */
static void test_fifo_program(void **state)
{
	char fifo[PATH_MAX], out[PATH_MAX];

	snprintf(fifo, sizeof(fifo), "%s/cmd", dir);
	assert_int_equal(mkfifo(fifo, 0700), 0);
	alarm(10);	/* a blocking open would hang the test: fail it instead */
	assert_int_equal(ldsearch__program(fifo, out, sizeof(out)), -ENOTREG);
	assert_int_equal(ldsearch__library(fifo, "libfoo.so.1", out, sizeof(out)), -ENOENT);
	alarm(0);
	assert_int_equal(unlink(fifo), 0);
}

static void test_lookup_user(void **state)
{
	char name[64], home[PATH_MAX];
	uid_t uid;
	gid_t gid;

	assert_int_equal(launch__lookup_user("root", &uid, &gid, name, sizeof(name), home,
					     sizeof(home)), 0);
	assert_int_equal(uid, 0);
	assert_string_equal(name, "root");
	assert_int_equal(launch__lookup_user("0", &uid, &gid, name, sizeof(name), home,
					     sizeof(home)), 0);
	assert_string_equal(name, "root");
	/* a uid with no passwd entry still names a user */
	assert_int_equal(launch__lookup_user("4000123", &uid, &gid, name, sizeof(name), home,
					     sizeof(home)), 0);
	assert_int_equal(uid, 4000123);
	assert_int_equal(launch__lookup_user("no-such-user-xyz", &uid, &gid, name, sizeof(name),
					     home, sizeof(home)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_new_format),
		cmocka_unit_test(test_cache_after_old_format),
		cmocka_unit_test(test_cache_truncated_or_foreign),
		cmocka_unit_test(test_ld_library_path),
		cmocka_unit_test(test_fifo_program),
		cmocka_unit_test(test_lookup_user),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
