// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Paths resolved through no link another user could plant: the same answers by
 * openat2 and by the component walk that stands in for it where it is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "safepath.h"

static char top[] = "/tmp/specprobe-safepath.XXXXXX";
static char err[PATH_MAX + 256];

static void at(char *buf, size_t sz, const char *rel)
{
	snprintf(buf, sz, "%s/%s", top, rel);
}

/* dirfd is the folder rel names (by inode), and name is as given. */
static void expect_folder(const struct safepath *sp, const char *rel, const char *name)
{
	char path[PATH_MAX];
	struct stat want, got;

	at(path, sizeof(path), rel);
	assert_int_equal(stat(path, &want), 0);
	assert_int_equal(fstat(sp->dirfd, &got), 0);
	assert_true(want.st_ino == got.st_ino && want.st_dev == got.st_dev);
	assert_string_equal(sp->name, name);
}

/* Resolve rel (under top) for writing, expecting success in folder, or -ret with why in err. */
static int resolve(const char *rel, bool follow, struct safepath *sp)
{
	char path[PATH_MAX];

	at(path, sizeof(path), rel);
	err[0] = '\0';
	return safepath__resolve(path, follow, sp, err, sizeof(err));
}

static int setup(void **state)
{
	char path[PATH_MAX];

	assert_non_null(mkdtemp(top));
	assert_int_equal(chmod(top, 0755), 0);
	at(path, sizeof(path), "a");
	assert_int_equal(mkdir(path, 0755), 0);
	at(path, sizeof(path), "a/b");
	assert_int_equal(mkdir(path, 0755), 0);
	at(path, sizeof(path), "a/file");
	close(open(path, O_WRONLY | O_CREAT, 0644));
	at(path, sizeof(path), "own");
	assert_int_equal(symlink("a", path), 0);
	at(path, sizeof(path), "loop1");
	assert_int_equal(symlink("loop2", path), 0);
	at(path, sizeof(path), "loop2");
	assert_int_equal(symlink("loop1", path), 0);
	at(path, sizeof(path), "a/fifo");
	assert_int_equal(mkfifo(path, 0644), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd) ? -1 : 0;
}

static void each_way(void (*test)(void))
{
	safepath__force_walk(false);
	test();
	safepath__force_walk(true);
	test();
	safepath__force_walk(false);
}

/* ".." by the text, "." and empty components dropped: a plain path resolves the same. */
static void plain(void)
{
	struct safepath sp;

	assert_int_equal(resolve("a/b/../b//./x.sprb", false, &sp), 0);
	expect_folder(&sp, "a/b", "x.sprb");
	safepath__release(&sp);
	assert_int_equal(resolve("a/b/../../a/x", false, &sp), 0);
	expect_folder(&sp, "a", "x");
	safepath__release(&sp);
	assert_int_equal(resolve("nope/x", false, &sp), -ENOENT);
	assert_non_null(strstr(err, "/nope: No such file or directory"));
	assert_int_equal(resolve("a/file/x", false, &sp), -ENOTDIR);
	assert_non_null(strstr(err, "a/file: a regular file, not a folder"));
	assert_int_equal(sp.dirfd, -1);
}

static void test_plain(void **state)
{
	each_way(plain);
}

/* Leading ".." of a relative path stay: from a/b, ../../own/x is top's own link's x. */
static void relative(void)
{
	char cwd[PATH_MAX], path[PATH_MAX];
	struct safepath sp;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	at(path, sizeof(path), "a/b");
	assert_int_equal(chdir(path), 0);
	assert_int_equal(safepath__resolve("../../own/x", false, &sp, err, sizeof(err)), 0);
	expect_folder(&sp, "a", "x");
	safepath__release(&sp);
	assert_int_equal(safepath__resolve("x", false, &sp, err, sizeof(err)), 0);
	expect_folder(&sp, "a/b", "x");
	safepath__release(&sp);
	assert_int_equal(chdir(cwd), 0);
}

static void test_relative(void **state)
{
	each_way(relative);
}

/* This user's link in this user's folder is followed; in a folder others can write, not. */
static void links(void)
{
	struct safepath sp;

	assert_int_equal(chmod(top, 0755), 0);
	assert_int_equal(resolve("own/b/x", false, &sp), 0);
	expect_folder(&sp, "a/b", "x");
	safepath__release(&sp);
	assert_int_equal(chmod(top, 0777), 0);
	assert_int_equal(resolve("own/b/x", false, &sp), -ELOOP);
	assert_non_null(strstr(err, "/own: a symbolic link in the path, in a folder others can "
				    "write: refusing to follow it"));
	/* sticky, as /tmp: no one else can rename or remove the link */
	assert_int_equal(chmod(top, 01777), 0);
	assert_int_equal(resolve("own/b/x", false, &sp), 0);
	expect_folder(&sp, "a/b", "x");
	safepath__release(&sp);
	assert_int_equal(chmod(top, 0755), 0);
	assert_int_equal(resolve("loop1/x", false, &sp), -ELOOP);
	assert_non_null(strstr(err, "too many symbolic links"));
}

static void test_links(void **state)
{
	each_way(links);
}

/* A link of another user's is refused wherever it is (root only: chown). */
static void foreign(void)
{
	char path[PATH_MAX];
	struct safepath sp;

	at(path, sizeof(path), "theirs");
	unlink(path);
	assert_int_equal(symlink("a", path), 0);
	assert_int_equal(lchown(path, 65534, 65534), 0);
	assert_int_equal(resolve("theirs/x", false, &sp), -ELOOP);
	assert_non_null(strstr(err, "/theirs: a symbolic link in the path, owned by uid 65534"));
	/* the last component: a reader refuses it, a writer leaves it to outfile (replaced) */
	assert_int_equal(resolve("theirs", true, &sp), -ELOOP);
	assert_int_equal(resolve("theirs", false, &sp), 0);
	expect_folder(&sp, ".", "theirs");
	safepath__release(&sp);
	unlink(path);
}

static void test_foreign(void **state)
{
	if (geteuid()) {
		skip();
		return;
	}
	each_way(foreign);
}

/* Readers: a trusted last link is followed to a regular file; a FIFO is named, never opened. */
static void reading(void)
{
	char path[PATH_MAX];
	int fd;

	at(path, sizeof(path), "own/file");
	fd = safepath__open_file(path, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	at(path, sizeof(path), "own/fifo");
	assert_int_equal(safepath__open_file(path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "own/fifo is a FIFO, not a regular file: refusing to read it"));
	at(path, sizeof(path), "own/b");
	fd = safepath__open_dir(path, false, 0, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	at(path, sizeof(path), "a/new");
	fd = safepath__open_dir(path, true, 0700, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rmdir(path), 0);
}

static void test_reading(void **state)
{
	each_way(reading);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain),   cmocka_unit_test(test_relative),
	    cmocka_unit_test(test_links),   cmocka_unit_test(test_foreign),
	    cmocka_unit_test(test_reading),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
