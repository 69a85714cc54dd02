// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Inputs the fuzz harnesses (tests/fuzz) found to crash or hang a reader,
 * each rebuilt here in its smallest form, with what the reader must do.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "ldsearch.h"
#include "perfetto_view.h"
#include "pipeline.h"

#define SEC 1000000000ull

static char dir[] = "/tmp/specprobe-fuzzfound.XXXXXX";

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static void write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, size, f), size);
	assert_int_equal(fclose(f), 0);
}

/* An ELF program whose SHT_DYNAMIC section claims entries of size 0 (a division by zero). */
static void test_dynamic_section_entsize_zero(void **state)
{
	struct {
		Elf64_Ehdr ehdr;
		Elf64_Shdr shdr[2];
		Elf64_Dyn dyn[2];
	} elf = { 0 };
	char path[PATH_MAX], out[PATH_MAX];

	memcpy(elf.ehdr.e_ident, ELFMAG, SELFMAG);
	elf.ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	elf.ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	elf.ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	elf.ehdr.e_type = ET_EXEC;
	elf.ehdr.e_machine = EM_X86_64;
	elf.ehdr.e_version = EV_CURRENT;
	elf.ehdr.e_ehsize = sizeof(Elf64_Ehdr);
	elf.ehdr.e_shoff = offsetof(typeof(elf), shdr);
	elf.ehdr.e_shentsize = sizeof(Elf64_Shdr);
	elf.ehdr.e_shnum = 2;
	elf.shdr[1].sh_type = SHT_DYNAMIC;
	elf.shdr[1].sh_offset = offsetof(typeof(elf), dyn);
	elf.shdr[1].sh_size = sizeof(elf.dyn);
	elf.shdr[1].sh_entsize = 0;
	elf.dyn[0].d_tag = DT_RUNPATH;
	snprintf(path, sizeof(path), "%s/entsize0", dir);
	write_file(path, &elf, sizeof(elf));
	unsetenv("LD_LIBRARY_PATH");
	/* no table to read: the search goes on to the cache and default directories */
	assert_int_equal(ldsearch__library(path, "libspecprobe-none.so.9", out, sizeof(out)),
			 -ENOENT);
}

/* A line "#!  /usr/bin/env" that fills fgets' buffer: the word after env is past its end. */
static void test_env_line_fills_buffer(void **state)
{
	static char line[PATH_MAX + 2];
	const char env[] = "/usr/bin/env";
	char path[PATH_MAX], out[PATH_MAX];
	size_t spaces = sizeof(line) - 2 - (sizeof(env) - 1);

	line[0] = '#';
	line[1] = '!';
	memset(line + 2, ' ', spaces);
	memcpy(line + 2 + spaces, env, sizeof(env) - 1);
	snprintf(path, sizeof(path), "%s/env-alone", dir);
	write_file(path, line, sizeof(line));
	unsetenv("LD_LIBRARY_PATH");
	assert_int_equal(ldsearch__library(path, "libspecprobe-none.so.9", out, sizeof(out)),
			 -ENOENT);
}

struct ticks {
	__u64 at[16];
	int n;
};

static int on_tick(void *ctx, __u64 ts_ns)
{
	struct ticks *t = ctx;

	assert_true(t->n < 16);
	t->at[t->n++] = ts_ns;
	return 0;
}

/* ticks a pipeline gives for calls at these entry times (ns), in this order */
static void ticks_for(const __u64 *ts, int n, struct ticks *out)
{
	const struct pipeline_opts opts = { .tick_ns = SEC };
	struct pipeline_consumer c = { .tick = on_tick, .ctx = out };
	struct tf_header hdr = { .version = 1 };
	struct pipeline *p = pipeline__new(&hdr, &opts);

	assert_non_null(p);
	assert_int_equal(pipeline__add(p, &c), 0);
	for (int i = 0; i < n; i++) {
		struct sp_call_rec rec = { .type = SP_REC_CALL, .size = sizeof(rec), .ts = ts[i],
					   .tgid = 10, .tid = 10, .seq = i + 1 };

		assert_int_equal(pipeline__feed(p, &rec, sizeof(rec)), 0);
	}
	assert_int_equal(pipeline__finish(p), 0);
	pipeline__free(p);
}

/* A call stamped centuries ahead once made export tick every second up to it. */
static void test_tick_far_ahead(void **state)
{
	const __u64 ts[] = { 1 * SEC, 1 * SEC + (1ull << 62), UINT64_MAX };
	struct ticks t = { 0 };

	ticks_for(ts, 3, &t);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.at[0], 2 * SEC);
	/* the start of the window the far call is in */
	assert_int_equal(t.at[1], 1 * SEC + (1ull << 62) / SEC * SEC);
	/* the clock's end: the window after, the last one before it, and no loop */
	assert_int_equal(t.at[2], t.at[1] + SEC);
	assert_true(t.at[3] <= UINT64_MAX && t.at[3] > UINT64_MAX - SEC);
	assert_int_equal((t.at[3] - t.at[1]) % SEC, 0);
}

/* Windows without calls between two calls: the first and the last tick only. */
static void test_tick_gaps(void **state)
{
	const __u64 one_gap[] = { 1 * SEC, 3 * SEC + SEC / 2 };
	const __u64 long_gap[] = { 1 * SEC, 1 * SEC + SEC / 2, 5 * SEC + SEC / 5 };
	struct ticks t = { 0 };

	ticks_for(one_gap, 2, &t);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.at[0], 2 * SEC);
	assert_int_equal(t.at[1], 3 * SEC);
	t.n = 0;
	ticks_for(long_gap, 3, &t);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.at[0], 2 * SEC);
	assert_int_equal(t.at[1], 5 * SEC);
}

/* export counted cycles per second in an array as long as the trace: a cycle far ahead. */
static void test_export_cycle_far_ahead(void **state)
{
	const struct pipeline_opts opts = { .analyse = false };
	struct tf_header hdr = { .version = 1 };
	struct pipeline *p = pipeline__new(&hdr, &opts);
	int fd = open("/dev/null", O_WRONLY);
	struct loop lp = { .tgid = 10, .tid = 10, .rank = -1 };
	struct cycle near = { .start_ns = 5 * SEC, .end_ns = 6 * SEC };
	struct cycle far = { .index = 1, .start_ns = 1ull << 62, .end_ns = (1ull << 62) + SEC };
	struct pipeline_consumer c;
	struct perfetto_out *o;

	assert_non_null(p);
	assert_true(fd >= 0);
	o = perfetto__new(fd, p);
	assert_non_null(o);
	perfetto__consumer(o, &c);
	assert_int_equal(c.cycle(c.ctx, &lp, &near), 0);
	/* a clear error, not gigabytes of windows */
	assert_int_equal(c.cycle(c.ctx, &lp, &far), -ERANGE);
	perfetto__free(o);
	pipeline__free(p);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dynamic_section_entsize_zero),
		cmocka_unit_test(test_env_line_fills_buffer),
		cmocka_unit_test(test_tick_far_ahead),
		cmocka_unit_test(test_tick_gaps),
		cmocka_unit_test(test_export_cycle_far_ahead),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
