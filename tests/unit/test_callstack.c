// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Call sites: record checks, the Python line table, stacks attached to calls and named. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "callstack.h"
#include "decode.h"
#include "collect_calls.h"

union buf {
	__u64 align;
	unsigned char b[1024];
};

/* A stack of tgid 100, thread tid: native return addresses, then Python frames. */
static struct sp_stack_rec *make_stack(union buf *u, __u32 tid, __u32 seq, const __u64 *ips,
				       int nr_native, const struct sp_py_frame *py, int nr_py)
{
	struct sp_stack_rec *rec = (void *)u->b;

	memset(u, 0, sizeof(*u));
	*rec = (struct sp_stack_rec){ .type = SP_REC_STACK, .tgid = 100, .tid = tid, .seq = seq,
				      .nr_native = nr_native, .nr_py = nr_py };
	memcpy(rec + 1, ips, 8 * nr_native);
	if (nr_py)
		memcpy((__u64 *)(rec + 1) + nr_native, py, sizeof(*py) * nr_py);
	rec->size = sizeof(*rec) + 8 * nr_native + sizeof(*py) * nr_py;
	return rec;
}

/* A code object "f.py", "step" starting at line 10, whose lines change at 0, 6 and 20. */
static struct sp_pycode_rec *make_pycode(union buf *u, __u64 code)
{
	static const struct sp_pyline lines[] = { { 0, 10 }, { 6, 12 }, { 20, -1 }, { 24, 15 } };
	struct sp_pycode_rec *rec = (void *)u->b;
	size_t at;

	memset(u, 0, sizeof(*u));
	*rec = (struct sp_pycode_rec){ .type = SP_REC_PYCODE, .tgid = 100, .code = code,
				       .firstlineno = 10, .file_len = 5, .name_len = 5,
				       .nr_lines = 4 };
	memcpy(rec + 1, "f.py\0step", 10);
	at = (sizeof(*rec) + 10 + 7) & ~7ul;
	memcpy(u->b + at, lines, sizeof(lines));
	rec->size = at + sizeof(lines);
	return rec;
}

static void test_stack_checks(void **state)
{
	__u64 ips[3] = { 0x1000, 0x2000, 0x3000 };
	struct sp_py_frame py = { 0xc0de, 6, 0 };
	union buf u;
	struct sp_stack_rec *rec = make_stack(&u, 1, 1, ips, 3, &py, 1);

	assert_true(callstack__stack_ok(rec, rec->size));
	assert_int_equal(callstack__py(rec)->code, 0xc0de);
	assert_false(callstack__stack_ok(rec, rec->size - 8));	/* size disagrees */
	rec->nr_native = 4;	/* a count the size does not hold */
	assert_false(callstack__stack_ok(rec, rec->size));
	rec->nr_native = SP_STACK_NATIVE + 1;
	assert_false(callstack__stack_ok(rec, rec->size));
	assert_false(callstack__stack_ok(rec, 8));		/* shorter than its header */
}

/*
 * A repeated site's record (SP_STACK_SAME) stands for the thread's newest
 * whole stack that starts with its frames; another thread's does not count,
 * and without one the record keeps its own frames.
 */
static void test_same_site(void **state)
{
	__u64 whole[6] = { 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000 };
	struct sp_py_frame py[2] = { { 0xc0de, 6, 0 }, { 0xbeef, 2, 0 } };
	struct callstacks *db = callstacks__new();
	union buf u;
	struct sp_stack_rec *rec;
	__u32 full, alone;

	assert_non_null(db);
	full = callstacks__intern(db, make_stack(&u, 7, 1, whole, 6, py, 2));
	assert_int_not_equal(full, 0);
	rec = make_stack(&u, 7, 2, whole, SP_STACK_KEY_NATIVE, py, 2);
	rec->flags = SP_STACK_SAME;
	assert_int_equal(callstacks__intern(db, rec), full);
	rec = make_stack(&u, 8, 1, whole, SP_STACK_KEY_NATIVE, py, 2);
	rec->flags = SP_STACK_SAME;
	alone = callstacks__intern(db, rec);	/* thread 8 has no whole stack: its own frames */
	assert_int_not_equal(alone, full);
	assert_int_equal(callstacks__stack(db, alone)->nr_native, SP_STACK_KEY_NATIVE);
	assert_int_equal(callstacks__stack(db, full)->nr_py, 2);
	whole[1] = 0x2222;	/* other innermost frames: another site, not the one asked for */
	full = callstacks__intern(db, make_stack(&u, 7, 3, whole, 6, py, 2));
	whole[1] = 0x2000;
	rec = make_stack(&u, 7, 4, whole, SP_STACK_KEY_NATIVE, py, 2);
	rec->flags = SP_STACK_SAME;
	assert_int_not_equal(callstacks__intern(db, rec), full);
	callstacks__free(db);
}

/* A code object of file in tgid 100 whose every instruction is on line 7. */
static const struct sp_pycode_rec *make_code_in(union buf *u, __u64 code, const char *file)
{
	static const struct sp_pyline line = { 0, 7 };
	struct sp_pycode_rec *rec = (void *)u->b;
	size_t len = strlen(file) + 1, at;

	memset(u, 0, sizeof(*u));
	*rec = (struct sp_pycode_rec){ .type = SP_REC_PYCODE, .tgid = 100, .code = code,
				       .firstlineno = 7, .file_len = len, .name_len = 2,
				       .nr_lines = 1 };
	memcpy(rec + 1, file, len);
	memcpy((char *)(rec + 1) + len, "f", 2);
	at = (sizeof(*rec) + len + 2 + 7) & ~7ul;
	memcpy(u->b + at, &line, sizeof(line));
	rec->size = at + sizeof(line);
	return rec;
}

/* A sync inside PyTorch's own Python is named by the line that called it. */
static void test_site_skips_torch(void **state)
{
	static const char torch[] = "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py";
	struct sp_py_frame py[2] = { { 0xa0, 0, 0 }, { 0xb0, 0, 0 } };
	struct callstacks *db = callstacks__new();
	const struct sp_pycode_rec *code;
	__u64 ip = 0x1000;
	union buf u;
	__u32 id;

	assert_non_null(db);
	code = make_code_in(&u, 0xa0, torch);
	assert_int_equal(callstacks__feed(db, code, code->size), 0);
	code = make_code_in(&u, 0xb0, "/srv/serve.py");
	assert_int_equal(callstacks__feed(db, code, code->size), 0);
	id = callstacks__intern(db, make_stack(&u, 7, 1, &ip, 1, py, 2));
	assert_string_equal(callstacks__site(db, callstacks__stack(db, id)->site)->py->file,
			    "/srv/serve.py");
	py[1].code = 0xa0;	/* nothing but torch's own frames: the innermost, then */
	id = callstacks__intern(db, make_stack(&u, 7, 2, &ip, 1, py, 2));
	assert_string_equal(callstacks__site(db, callstacks__stack(db, id)->site)->py->file, torch);
	callstacks__free(db);
}

static void test_pycode_checks_and_lines(void **state)
{
	union buf u;
	struct sp_pycode_rec *rec = make_pycode(&u, 0xc0de);

	assert_true(callstack__pycode_ok(rec, rec->size));
	assert_string_equal(callstack__pycode_file(rec), "f.py");
	assert_string_equal(callstack__pycode_name(rec), "step");
	assert_int_equal(callstack__pycode_line(rec, 0), 10);
	assert_int_equal(callstack__pycode_line(rec, 4), 10);
	assert_int_equal(callstack__pycode_line(rec, 6), 12);
	assert_int_equal(callstack__pycode_line(rec, 19), 12);
	assert_int_equal(callstack__pycode_line(rec, 22), -1);	/* a range with no line */
	assert_int_equal(callstack__pycode_line(rec, 500), 15);
	rec->nr_lines = 5;	/* more lines than the size holds */
	assert_false(callstack__pycode_ok(rec, rec->size));
	rec->nr_lines = 4;
	u.b[sizeof(*rec) + 4] = 'x';	/* the file name loses its NUL */
	assert_false(callstack__pycode_ok(rec, rec->size));
}

static void test_objmap_checks(void **state)
{
	union buf u;
	struct sp_objmap_rec *rec = (void *)u.b;

	memset(&u, 0, sizeof(u));
	*rec = (struct sp_objmap_rec){ .type = SP_REC_OBJMAP, .size = sizeof(*rec) + 16,
				       .tgid = 100, .start = 0x1000, .end = 0x5000 };
	memcpy(rec + 1, "/no/such/lib.so", 16);
	assert_true(callstack__objmap_ok(rec, rec->size));
	rec->end = rec->start;
	assert_false(callstack__objmap_ok(rec, rec->size));
	rec->end = 0x5000;
	memset(rec + 1, 'a', 16);	/* no NUL in the path */
	assert_false(callstack__objmap_ok(rec, rec->size));
}

static void feed_sync(struct decoder *d, __u32 seq, __u64 ts)
{
	struct sp_call_rec call = { .type = SP_REC_CALL, .size = sizeof(call), .ts = ts,
				    .tgid = 100, .tid = 7, .seq = seq,
				    .flags = SP_CALL_HAS_RET | SP_CALL_HAS_STACK };
	struct sp_ret_rec ret = { .type = SP_REC_RET, .size = sizeof(ret), .ts = ts + 10,
				  .tgid = 100, .tid = 7, .seq = seq };
	__u64 ips[2] = { 0x1234, 0x9999999 };
	struct sp_py_frame py = { 0xc0de, 8, 0 };
	union buf u;
	struct sp_stack_rec *st = make_stack(&u, 7, seq, ips, 2, &py, 1);

	assert_int_equal(decoder__feed(d, &call, sizeof(call)), 0);
	assert_int_equal(decoder__feed(d, st, st->size), 0);
	assert_int_equal(decoder__feed(d, &ret, sizeof(ret)), 0);
}

/* A stack reaches its call; the same frames twice are one stack; frames are named. */
static void test_decoder_attaches_stacks(void **state)
{
	struct collected out = { .n = 0 };
	struct decoder *d = decoder__new(collect, &out, 0);
	union buf u, m;
	struct sp_objmap_rec *map = (void *)m.b;
	const struct cs_stack *st;
	const struct cs_site *site;
	struct sp_pycode_rec *code;

	memset(&m, 0, sizeof(m));
	*map = (struct sp_objmap_rec){ .type = SP_REC_OBJMAP, .size = sizeof(*map) + 16,
				       .tgid = 100, .start = 0x1000, .end = 0x5000,
				       .pgoff = 0x2000 };
	memcpy(map + 1, "/no/such/lib.so", 16);
	assert_int_equal(decoder__feed(d, map, map->size), 0);
	code = make_pycode(&u, 0xc0de);
	assert_int_equal(decoder__feed(d, code, code->size), 0);
	feed_sync(d, 1, 1000);
	feed_sync(d, 2, 2000);
	assert_int_equal(decoder__finish(d), 0);
	assert_int_equal(out.n, 2);
	assert_int_not_equal(out.calls[0].stack, 0);
	assert_int_equal(out.calls[0].stack, out.calls[1].stack);
	assert_int_equal(decoder__stats(d)->stacks, 2);
	st = callstacks__stack(decoder__callstacks(d), out.calls[0].stack);
	assert_non_null(st);
	assert_int_equal(st->nr_native, 2);
	/* no such file here: the frame is the object and the offset into its file */
	assert_string_equal(st->native[0].object, "/no/such/lib.so");
	assert_null(st->native[0].symbol);
	assert_int_equal(st->native[0].offset, 0x1234 - 0x1000 + 0x2000);
	assert_null(st->native[1].object);	/* no mapping named it */
	assert_string_equal(st->py[0].file, "f.py");
	assert_int_equal(st->py[0].line, 12);
	site = callstacks__site(decoder__callstacks(d), st->site);
	assert_non_null(site);
	assert_string_equal(site->label, "f.py:12 (step) · lib.so+0x2234");
	decoder__free(d);
}

static void feed_objmap(struct callstacks *db, __u32 tgid, __u64 start, __u64 end,
			const char *path)
{
	union buf u;
	struct sp_objmap_rec *map = (void *)u.b;
	size_t len = strlen(path) + 1;

	memset(&u, 0, sizeof(u));
	*map = (struct sp_objmap_rec){ .type = SP_REC_OBJMAP,
				       .size = (sizeof(*map) + len + 7) & ~7ul,
				       .tgid = tgid, .start = start, .end = end };
	memcpy(map + 1, path, len);
	assert_int_equal(callstacks__feed(db, map, map->size), 0);
}

/*
 * After an execve the same addresses are another program's: the old mappings
 * and code objects name none of them, a repeated site does not reach back to
 * the old stack, and what the new program's records say names them. Stacks
 * named before keep their names; another process keeps its code objects.
 */
static void test_exec_forgets_old_image(void **state)
{
	__u64 ips[2] = { 0x2000, 0x2100 };
	struct sp_py_frame py = { 0xa0, 0, 0 };
	struct callstacks *db = callstacks__new();
	const struct sp_pycode_rec *code;
	const struct cs_stack *st;
	struct sp_stack_rec *rec;
	__u32 before, after, other;
	union buf u;

	assert_non_null(db);
	feed_objmap(db, 100, 0x1000, 0x9000, "/old/prog");
	code = make_code_in(&u, 0xa0, "/srv/old.py");
	assert_int_equal(callstacks__feed(db, code, code->size), 0);
	((struct sp_pycode_rec *)u.b)->tgid = 101;
	assert_int_equal(callstacks__feed(db, code, code->size), 0);
	before = callstacks__intern(db, make_stack(&u, 100, 1, ips, 2, &py, 1));
	assert_int_equal(callstacks__exec(db, 100), 0);

	rec = make_stack(&u, 100, 2, ips, 2, &py, 1);
	rec->flags = SP_STACK_SAME;
	after = callstacks__intern(db, rec);
	assert_int_not_equal(after, before);
	st = callstacks__stack(db, after);
	assert_null(st->native[0].object);
	assert_null(st->py[0].file);
	assert_int_equal(st->image, 1);

	feed_objmap(db, 100, 0x1000, 0x3000, "/new/prog");
	ips[0] = 0x2010;	/* frames seen before are named as they were: other frames */
	after = callstacks__intern(db, make_stack(&u, 100, 3, ips, 2, NULL, 0));
	st = callstacks__stack(db, after);
	assert_string_equal(st->native[0].object, "/new/prog");
	assert_string_equal(callstacks__site(db, st->site)->label, "prog+0x1010");
	st = callstacks__stack(db, before);
	assert_string_equal(st->native[0].object, "/old/prog");
	assert_string_equal(st->py[0].file, "/srv/old.py");
	rec = make_stack(&u, 101, 1, ips, 2, &py, 1);
	rec->tgid = 101;
	other = callstacks__intern(db, rec);
	assert_string_equal(callstacks__stack(db, other)->py[0].file, "/srv/old.py");
	callstacks__free(db);
}

/* A stack whose call is not waiting for one is counted, not attached elsewhere. */
static void test_orphan_stack(void **state)
{
	struct collected out = { .n = 0 };
	struct decoder *d = decoder__new(collect, &out, 0);
	__u64 ip = 0x1234;
	union buf u;
	struct sp_stack_rec *st = make_stack(&u, 7, 5, &ip, 1, NULL, 0);

	assert_int_equal(decoder__feed(d, st, st->size), 0);
	assert_int_equal(decoder__stats(d)->orphan_stacks, 1);
	st->nr_native = 2;
	assert_int_equal(decoder__feed(d, st, st->size), -EBADMSG);
	decoder__free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_checks),
		cmocka_unit_test(test_same_site),
		cmocka_unit_test(test_site_skips_torch),
		cmocka_unit_test(test_pycode_checks_and_lines),
		cmocka_unit_test(test_objmap_checks),
		cmocka_unit_test(test_decoder_attaches_stacks),
		cmocka_unit_test(test_orphan_stack),
		cmocka_unit_test(test_exec_forgets_old_image),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
