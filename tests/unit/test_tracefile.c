// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Recording files: round trips, the byte layout, cuts and corruption, unsafe outputs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "tracefile.h"
#include "ring.h"
#include "decode.h"
#include "pipeline.h"
#include "specprobe.h"
#include "scratch_dir.h"

#define CALL_SZ		sizeof(struct sp_call_rec)
#define PATH_LEN	128
#define ERR_LEN		512
#define MANY		1000000

union rec_buf {
	__u64 align;
	unsigned char b[TF_MAX_RECORD];
};

static int setup(void **state)
{
	return scratch_dir_new(state, "test_tracefile");
}

static int teardown(void **state)
{
	return scratch_dir_free(state);
}

static void in_dir(void **state, const char *name, char *path)
{
	snprintf(path, PATH_LEN, "%s/%s", (const char *)*state, name);
}

static void put_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static unsigned char *get_bytes(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *data;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	data = malloc(st.st_size + 1);
	assert_non_null(data);
	assert_int_equal(read(fd, data, st.st_size), st.st_size);
	close(fd);
	*len = st.st_size;
	return data;
}

static __u32 sample_targets[] = { 4242, 4343, 17 };

static struct tf_lib sample_libs[] = {
	{ .path = "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
	  .build_id = "0123456789abcdef0123456789abcdef01234567",
	  .dev = 0x803, .ino = 1234567, .kind = 1 },
	{ .path = "/opt/nccl/lib/libnccl.so.2", .build_id = "",
	  .dev = 0x10302, .ino = 99, .kind = 2 },
};

static struct tf_probe sample_probes[] = {
	{ "cuLaunchKernel", 0, 12, 0x2a1b30, 0x2a2b30 },
	{ "cuMemcpyDtoHAsync_v2", 0, 3, 0x1f0040, 0x1f1040 },
	{ "cuStreamSynchronize", 0, 7, 0x1c8800, 0x1c9800 },
	{ "ncclAllReduce", 1, 40, 0x5a000, 0x5b000 },
	{ "", 1, 41, 0, 0 },
};

static struct tf_map sample_maps[] = {
	{ 4242, 0, 0x7f1200000000, 0x7f1200c00000, 0 },
	{ 4242, 1, 0x7f1300000000, 0x7f1300400000, 0x1000 },
	{ 4343, 0, 0x7f5500000000, 0x7f5500c00000, 0 },
};

static void sample_header(struct tf_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = TF_VERSION;
	/* 64 characters: the longest host that fits */
	strcpy(h->host, "gpu-node-07.rack-12.cluster-west.example.internal.abcdefghijklmn");
	strcpy(h->kernel, "6.8.0-45-generic");
	h->mono_ns = 123456789012345ull;
	h->realtime_ns = 1733050000123456789ull;
	h->attach_start_ns = 123456700000000ull;
	h->attach_done_ns = 0xfedcba9876543210ull;
	h->nr_targets = 3;
	h->targets = sample_targets;
	h->nr_libs = 2;
	h->libs = sample_libs;
	h->nr_probes = 5;
	h->probes = sample_probes;
	h->nr_maps = 3;
	h->maps = sample_maps;
}

static void assert_header_equal(const struct tf_header *a, const struct tf_header *b)
{
	assert_int_equal(a->version, b->version);
	assert_string_equal(a->host, b->host);
	assert_string_equal(a->kernel, b->kernel);
	assert_true(a->mono_ns == b->mono_ns && a->realtime_ns == b->realtime_ns);
	assert_true(a->attach_start_ns == b->attach_start_ns);
	assert_true(a->attach_done_ns == b->attach_done_ns);
	assert_int_equal(a->nr_targets, b->nr_targets);
	assert_memory_equal(a->targets, b->targets, a->nr_targets * sizeof(*a->targets));
	assert_int_equal(a->nr_libs, b->nr_libs);
	for (__u32 i = 0; i < a->nr_libs; i++) {
		assert_string_equal(a->libs[i].path, b->libs[i].path);
		assert_string_equal(a->libs[i].build_id, b->libs[i].build_id);
		assert_true(a->libs[i].dev == b->libs[i].dev && a->libs[i].ino == b->libs[i].ino);
		assert_int_equal(a->libs[i].kind, b->libs[i].kind);
	}
	assert_int_equal(a->nr_probes, b->nr_probes);
	for (__u32 i = 0; i < a->nr_probes; i++) {
		assert_string_equal(a->probes[i].symbol, b->probes[i].symbol);
		assert_int_equal(a->probes[i].lib, b->probes[i].lib);
		assert_int_equal(a->probes[i].catalog, b->probes[i].catalog);
		assert_true(a->probes[i].offset == b->probes[i].offset);
		assert_true(a->probes[i].vaddr == b->probes[i].vaddr);
	}
	assert_int_equal(a->nr_maps, b->nr_maps);
	assert_memory_equal(a->maps, b->maps, a->nr_maps * sizeof(*a->maps));
}

static size_t make_call(union rec_buf *buf, __u32 i, size_t data_len)
{
	struct sp_call_rec *c = (void *)buf->b;

	memset(buf->b, 0, CALL_SZ + data_len);
	*c = (struct sp_call_rec){
		.type = SP_REC_CALL, .size = CALL_SZ + data_len, .probe = i % 5,
		.ts = 1000000 + 7ull * i, .tgid = 4242, .tid = 4242 + i % 5, .seq = i + 1,
		.parent_seq = i / 2, .depth = i % SP_MAX_DEPTH,
		.flags = i & 1 ? SP_CALL_HAS_RET : 0, .faults = i % 8,
	};
	for (int a = 0; a < SP_MAX_ARGS; a++)
		c->args[a] = (__u64)i << 32 | (a * 0x1111u);
	for (size_t b = 0; b < data_len; b++)
		buf->b[CALL_SZ + b] = i + b;
	return c->size;
}

static size_t make_ret(union rec_buf *buf, __u32 i)
{
	struct sp_ret_rec *r = (void *)buf->b;

	*r = (struct sp_ret_rec){
		.type = SP_REC_RET, .size = sizeof(*r), .probe = i % 5, .ts = 2000000 + 3ull * i,
		.tgid = 4242, .tid = 4242 + i % 5, .seq = i, .faults = 1 << SP_FAULT_OUT,
		.depth = i % 3, .result = i % 11, .out = 0xdead0000ull + i,
	};
	return r->size;
}

static size_t make_stats(union rec_buf *buf, __u32 i, __u16 type)
{
	struct sp_stats_rec *s = (void *)buf->b;

	*s = (struct sp_stats_rec){ .type = type, .size = sizeof(*s), .ts = 3000000 + i };
	for (int c = 0; c < SP_CNT_NR; c++)
		s->counters[c] = (__u64)c * 1000 + i;
	return s->size;
}

static size_t make_exit(union rec_buf *buf, __u32 i)
{
	struct sp_exit_rec *e = (void *)buf->b;

	*e = (struct sp_exit_rec){ .type = SP_REC_EXIT, .size = sizeof(*e), .tgid = 4343 + i,
				   .ts = 4000000 + i };
	return e->size;
}

/* Record number i of a deterministic mix of every type; i % 8 == 3 is the largest. */
static size_t make_rec(union rec_buf *buf, __u32 i)
{
	switch (i % 8) {
	case 0:
	case 1:
		return make_call(buf, i, 0);
	case 2:
		return make_call(buf, i, SP_DATA_SMALL);
	case 3:
		return make_call(buf, i, SP_DATA_LARGE);
	case 4:
	case 5:
		return make_ret(buf, i);
	case 6:
		return make_exit(buf, i);
	default:
		return make_stats(buf, i, i % 16 == 15 ? SP_REC_END : SP_REC_STATS);
	}
}

static __u64 mix(__u64 sum, const void *rec, size_t size)
{
	for (size_t i = 0; i + 8 <= size; i += 8) {
		__u64 word;

		memcpy(&word, (const unsigned char *)rec + i, 8);
		sum = (sum ^ word) * 0x100000001b3ull;
	}
	return sum;
}

/* Header plus records 0..nr-1; returns the file size. */
static __u64 write_recording(const char *path, const struct tf_header *h, __u32 nr)
{
	char err[ERR_LEN] = "";
	struct tf_writer *w = tf_writer__create(path, false, h, err, sizeof(err));
	union rec_buf buf;
	__u64 bytes;

	assert_non_null(w);
	for (__u32 i = 0; i < nr; i++) {
		size_t size = make_rec(&buf, i);

		assert_int_equal(tf_writer__write(w, buf.b, size), 0);
	}
	assert_int_equal(tf_writer__close(w), 0);
	bytes = tf_writer__bytes(w);
	tf_writer__free(w);
	return bytes;
}

static struct tf_reader *open_ok(const char *path)
{
	char err[ERR_LEN] = "";
	struct tf_reader *r = tf_reader__open(path, err, sizeof(err));

	if (!r)
		fail_msg("%s", err);
	return r;
}

/* Records 0..nr-1 come back byte for byte, each 8-aligned. */
static void expect_records(struct tf_reader *r, __u32 nr)
{
	union rec_buf buf;
	const void *rec;

	for (__u32 i = 0; i < nr; i++) {
		size_t size = make_rec(&buf, i);

		assert_int_equal(tf_reader__next(r, &rec), 1);
		assert_int_equal((uintptr_t)rec % 8, 0);
		assert_int_equal(((const struct sp_rec_hdr *)rec)->size, size);
		assert_memory_equal(rec, buf.b, size);
	}
}

static void expect_open_fails(const char *path, const char *fmt)
{
	char err[ERR_LEN] = "", want[ERR_LEN];
	struct tf_reader *r = tf_reader__open(path, err, sizeof(err));

	assert_null(r);
	snprintf(want, sizeof(want), fmt, path);
	assert_string_equal(err, want);
}

static void expect_file_is(const char *path, const char *content)
{
	size_t len;
	unsigned char *data = get_bytes(path, &len);

	assert_int_equal(len, strlen(content));
	assert_memory_equal(data, content, len);
	free(data);
}

/* The first records of the mix read through their fields, not only their bytes. */
static void expect_fields(const char *path)
{
	struct tf_reader *r = open_ok(path);
	const struct sp_call_rec *call;
	const struct sp_ret_rec *ret;
	const struct sp_stats_rec *stats;
	const void *rec;

	assert_int_equal(tf_reader__next(r, &rec), 1);
	call = rec;
	assert_int_equal(call->type, SP_REC_CALL);
	assert_int_equal(call->size, CALL_SZ);
	assert_int_equal(call->seq, 1);
	assert_int_equal(call->tid, 4242);
	assert_true(call->args[8] == 8 * 0x1111u);
	for (int skip = 0; skip < 3; skip++)
		assert_int_equal(tf_reader__next(r, &rec), 1);
	call = rec;
	assert_int_equal(call->size, CALL_SZ + SP_DATA_LARGE);
	assert_true(call->args[0] == 3ull << 32);
	assert_int_equal(((const __u8 *)rec)[CALL_SZ + SP_DATA_LARGE - 1], (__u8)(3 + 127));
	assert_int_equal(tf_reader__next(r, &rec), 1);
	ret = rec;
	assert_int_equal(ret->type, SP_REC_RET);
	assert_int_equal(ret->seq, 4);
	assert_true(ret->out == 0xdead0004ull && ret->result == 4);
	tf_reader__next(r, &rec);
	tf_reader__next(r, &rec);
	assert_int_equal(((const struct sp_exit_rec *)rec)->tgid, 4343 + 6);
	assert_int_equal(tf_reader__next(r, &rec), 1);
	stats = rec;
	assert_int_equal(stats->type, SP_REC_STATS);
	assert_true(stats->counters[SP_CNT_NR - 1] == (SP_CNT_NR - 1) * 1000ull + 7);
	tf_reader__free(r);
}

static void test_round_trip(void **state)
{
	char path[PATH_LEN];
	struct tf_header want;
	struct tf_reader *r;
	const void *rec;
	struct stat st;
	__u64 bytes;

	in_dir(state, "round.sprb", path);
	sample_header(&want);
	bytes = write_recording(path, &want, 16);	/* two of each kind, an END last */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(bytes, st.st_size);
	r = open_ok(path);
	assert_header_equal(tf_reader__header(r), &want);
	expect_records(r, 16);
	assert_int_equal(tf_reader__next(r, &rec), 0);
	assert_int_equal(tf_reader__offset(r), st.st_size);
	tf_reader__free(r);
	expect_fields(path);
}

/* The header in the test's own encoding of the documented layout. */
struct raw {
	unsigned char b[8192];
	size_t len;
};

struct raw_at {
	size_t host_len, nr_targets, nr_libs, lib_path_len, probe_lib, map_lib;
};

static void raw_bytes(struct raw *r, const void *data, size_t n)
{
	assert_true(r->len + n <= sizeof(r->b));
	memcpy(r->b + r->len, data, n);
	r->len += n;
}

static void raw_u32(struct raw *r, __u32 v)
{
	unsigned char b[4] = { v, v >> 8, v >> 16, v >> 24 };

	raw_bytes(r, b, sizeof(b));
}

static void raw_u64(struct raw *r, __u64 v)
{
	raw_u32(r, (__u32)v);
	raw_u32(r, (__u32)(v >> 32));
}

static void raw_str(struct raw *r, const char *s)
{
	raw_u32(r, strlen(s));
	raw_bytes(r, s, strlen(s));
}

static void raw_patch_u32(struct raw *r, size_t at, __u32 v)
{
	struct raw four = { .len = 0 };

	raw_u32(&four, v);
	memcpy(r->b + at, four.b, 4);
}

static void raw_body(struct raw *r, const struct tf_header *h, struct raw_at *at)
{
	at->host_len = r->len;
	raw_str(r, h->host);
	raw_str(r, h->kernel);
	raw_u64(r, h->mono_ns);
	raw_u64(r, h->realtime_ns);
	raw_u64(r, h->attach_start_ns);
	raw_u64(r, h->attach_done_ns);
	at->nr_targets = r->len;
	raw_u32(r, h->nr_targets);
	for (__u32 i = 0; i < h->nr_targets; i++)
		raw_u32(r, h->targets[i]);
	at->nr_libs = r->len;
	raw_u32(r, h->nr_libs);
	for (__u32 i = 0; i < h->nr_libs; i++) {
		if (!i)
			at->lib_path_len = r->len;
		raw_str(r, h->libs[i].path);
		raw_str(r, h->libs[i].build_id);
		raw_u64(r, h->libs[i].dev);
		raw_u64(r, h->libs[i].ino);
		raw_u32(r, h->libs[i].kind);
	}
	raw_u32(r, h->nr_probes);
	for (__u32 i = 0; i < h->nr_probes; i++) {
		raw_str(r, h->probes[i].symbol);
		if (!i)
			at->probe_lib = r->len;
		raw_u32(r, h->probes[i].lib);
		raw_u32(r, h->probes[i].catalog);
		raw_u64(r, h->probes[i].offset);
		raw_u64(r, h->probes[i].vaddr);
	}
	raw_u32(r, h->nr_maps);
	for (__u32 i = 0; i < h->nr_maps; i++) {
		if (!i)
			at->map_lib = r->len + 4;
		raw_u32(r, h->maps[i].tgid);
		raw_u32(r, h->maps[i].lib);
		raw_u64(r, h->maps[i].start);
		raw_u64(r, h->maps[i].end);
		raw_u64(r, h->maps[i].pgoff);
	}
}

static void raw_file(struct raw *file, __u32 version, const struct raw *body, __u32 body_len)
{
	file->len = 0;
	raw_bytes(file, TF_MAGIC, 8);
	raw_u32(file, version);
	raw_u32(file, body_len);
	raw_bytes(file, body->b, body->len);
}

static void test_layout_is_documented_one(void **state)
{
	static const unsigned char zeros[8];
	struct raw body = { .len = 0 }, file;
	char path[PATH_LEN];
	struct tf_header h;
	struct raw_at at;
	unsigned char *data;
	union rec_buf buf;
	size_t len, size;

	in_dir(state, "layout.sprb", path);
	sample_header(&h);
	write_recording(path, &h, 4);
	raw_body(&body, &h, &at);
	raw_bytes(&body, zeros, (8 - body.len % 8) % 8);	/* records start 8-aligned */
	raw_file(&file, TF_VERSION, &body, body.len);
	for (__u32 i = 0; i < 4; i++) {
		size = make_rec(&buf, i);
		raw_bytes(&file, buf.b, size);
	}
	data = get_bytes(path, &len);
	assert_int_equal(len, file.len);
	assert_memory_equal(data, file.b, len);
	free(data);
}

static void test_million_records(void **state)
{
	char path[PATH_LEN], err[ERR_LEN] = "";
	struct tf_header h;
	struct tf_writer *w;
	struct tf_reader *r;
	struct timespec t0, t1;
	__u64 sum_out = 14695981039346656037ull, sum_in = sum_out, seen = 0;
	double best = 1e9;
	union rec_buf buf;
	const void *rec;
	int ret;

	in_dir(state, "many.sprb", path);
	sample_header(&h);
	w = tf_writer__create(path, false, &h, err, sizeof(err));
	assert_non_null(w);
	for (__u32 i = 0; i < MANY; i++) {
		size_t size = make_rec(&buf, i);

		sum_out = mix(sum_out, buf.b, size);
		assert_int_equal(tf_writer__write(w, buf.b, size), 0);
	}
	assert_int_equal(tf_writer__close(w), 0);
	tf_writer__free(w);

	r = open_ok(path);
	while ((ret = tf_reader__next(r, &rec)) > 0) {
		sum_in = mix(sum_in, rec, ((const struct sp_rec_hdr *)rec)->size);
		seen++;
	}
	assert_int_equal(ret, 0);
	assert_int_equal(seen, MANY);
	assert_true(sum_in == sum_out);
	tf_reader__free(r);

	/* the reader alone, best of three: it must keep up with a busy recording */
	for (int run = 0; run < 3; run++) {
		__u64 types = 0;
		double s;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = open_ok(path);
		while (tf_reader__next(r, &rec) > 0)
			types += ((const struct sp_rec_hdr *)rec)->type;
		tf_reader__free(r);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (s < best)
			best = s;
		assert_true(types > 0);
	}
	print_message("read %d records in %.1f ms: %.1f M records/s\n", MANY, best * 1e3,
		      MANY / best / 1e6);
}

static void test_cut_inside_last_record(void **state)
{
	char path[PATH_LEN], cut_path[PATH_LEN], want[ERR_LEN];
	const __u32 nr = 12;	/* the last one, number 11, is the largest kind */
	struct tf_header h;
	unsigned char *data;
	union rec_buf buf;
	const void *rec;
	size_t len, last_off;

	in_dir(state, "full.sprb", path);
	in_dir(state, "cut.sprb", cut_path);
	sample_header(&h);
	write_recording(path, &h, nr);
	data = get_bytes(path, &len);
	last_off = len - make_rec(&buf, nr - 1);
	snprintf(want, sizeof(want), "%s: truncated at byte %zu, inside a record", cut_path,
		 last_off);
	for (size_t cut = last_off; cut < len; cut++) {
		struct tf_reader *r;

		put_bytes(cut_path, data, cut);
		r = open_ok(cut_path);
		expect_records(r, nr - 1);
		if (cut == last_off) {
			assert_int_equal(tf_reader__next(r, &rec), 0);	/* a clean end */
		} else {
			assert_int_equal(tf_reader__next(r, &rec), -ENODATA);
			assert_int_equal(tf_reader__offset(r), last_off);
			assert_string_equal(tf_reader__error(r), want);
			assert_int_equal(tf_reader__next(r, &rec), -ENODATA);
		}
		tf_reader__free(r);
	}
	free(data);
}

/* Calls a pipeline reads of path, 0 from read_all, and where it says the file was cut. */
static __u64 pipeline_calls(const char *path, __u64 *cut_at)
{
	static const struct pipeline_opts opts = { .analyse = false };
	struct pipeline *p = pipeline__open(path, &opts, NULL, 0);
	__u64 calls;

	assert_non_null(p);
	assert_int_equal(pipeline__read_all(p), 0);
	assert_int_equal(pipeline__finish(p), 0);
	calls = pipeline__stats(p)->calls;
	*cut_at = pipeline__stats(p)->cut ? pipeline__stats(p)->cut_at : 0;
	pipeline__free(p);
	return calls;
}

/* Every reader's rule: a cut anywhere in a record reads as the file up to it, and says where. */
static void test_pipeline_reads_to_cut(void **state)
{
	char path[PATH_LEN], cut_path[PATH_LEN];
	const __u32 nr = 12;	/* the last one, number 11, is a call */
	struct tf_header h;
	unsigned char *data;
	union rec_buf buf;
	size_t len, last_off;
	__u64 whole, cut_at;

	in_dir(state, "full.sprb", path);
	in_dir(state, "cut.sprb", cut_path);
	sample_header(&h);
	write_recording(path, &h, nr);
	data = get_bytes(path, &len);
	last_off = len - make_rec(&buf, nr - 1);
	whole = pipeline_calls(path, &cut_at);
	assert_int_equal(cut_at, 0);
	for (size_t cut = last_off; cut < len; cut++) {
		put_bytes(cut_path, data, cut);
		assert_int_equal(pipeline_calls(cut_path, &cut_at), whole - 1);
		assert_int_equal(cut_at, cut == last_off ? 0 : last_off);
	}
	free(data);
}

static void test_cut_inside_header(void **state)
{
	char path[PATH_LEN], cut_path[PATH_LEN];
	struct tf_header h;
	unsigned char *data;
	struct tf_reader *r;
	size_t len;

	in_dir(state, "header.sprb", path);
	in_dir(state, "cut.sprb", cut_path);
	sample_header(&h);
	write_recording(path, &h, 0);
	data = get_bytes(path, &len);
	for (size_t cut = 1; cut < len; cut++) {
		put_bytes(cut_path, data, cut);
		expect_open_fails(cut_path, "%s: header is truncated or corrupt");
	}
	put_bytes(cut_path, data, len);
	r = open_ok(cut_path);
	tf_reader__free(r);
	free(data);
}

static void test_not_a_recording(void **state)
{
	char path[PATH_LEN];
	struct tf_header h;
	unsigned char *data;
	size_t len;

	in_dir(state, "empty.sprb", path);
	put_bytes(path, "", 0);
	expect_open_fails(path, "%s is empty: not a specprobe recording");
	in_dir(state, "notes.txt", path);
	put_bytes(path, "hello\n", 6);
	expect_open_fails(path, "%s is not a specprobe recording");
	expect_open_fails("/bin/sh", "%s is not a specprobe recording");
	in_dir(state, "missing.sprb", path);
	expect_open_fails(path, "%s: No such file or directory");

	in_dir(state, "v2.sprb", path);
	sample_header(&h);
	write_recording(path, &h, 3);
	data = get_bytes(path, &len);
	data[8] = 3;	/* version, little-endian */
	put_bytes(path, data, len);
	expect_open_fails(path, "%s is recording version 3; this specprobe reads versions 1 and 2");
	free(data);
}

/* Records read from path: how many, and how reading ended. */
static int count_records(const char *path, int *n)
{
	char err[ERR_LEN] = "";
	struct tf_reader *r = tf_reader__open(path, err, sizeof(err));
	const void *rec;
	int ret;

	assert_non_null(r);
	*n = 0;
	while ((ret = tf_reader__next(r, &rec)) > 0)
		(*n)++;
	tf_reader__free(r);
	return ret;
}

/* From version 2 on, a kind in the optional range is passed over; in version 1 it is corrupt. */
static void test_optional_kinds(void **state)
{
	const unsigned char optional[16] = { TF_OPTIONAL_FIRST, 0, 16, 0 };
	char path[PATH_LEN];
	struct tf_header h;
	unsigned char *data, *grown;
	size_t len;
	int n;

	in_dir(state, "opt.sprb", path);
	sample_header(&h);
	h.version = TF_VERSION_STACKS;
	write_recording(path, &h, 3);
	data = get_bytes(path, &len);
	assert_int_equal(data[8], TF_VERSION_STACKS);
	grown = realloc(data, len + 2 * sizeof(optional));
	assert_non_null(grown);
	memcpy(grown + len, optional, sizeof(optional));
	memcpy(grown + len + sizeof(optional), optional, sizeof(optional));
	put_bytes(path, grown, len + 2 * sizeof(optional));
	assert_int_equal(count_records(path, &n), 0);
	assert_int_equal(n, 3);
	grown[8] = TF_VERSION;
	put_bytes(path, grown, len + 2 * sizeof(optional));
	assert_int_equal(count_records(path, &n), -EBADMSG);
	assert_int_equal(n, 3);
	free(grown);
}

/* A rank record is a known kind in either version; one of another size is corrupt. */
static void test_rank_records(void **state)
{
	struct sp_rank_rec rank = { .type = SP_REC_RANK, .size = sizeof(rank), .tgid = 7, .ts = 9,
				    .rank = 1, .nranks = -1, .from = SP_RANK_TITLE,
				    .what = "sglang::scheduler_TP1" };
	char path[PATH_LEN];
	struct tf_header h;
	unsigned char *data, *grown;
	size_t len;
	__u64 ts;
	int n;

	in_dir(state, "rank.sprb", path);
	sample_header(&h);
	write_recording(path, &h, 3);
	data = get_bytes(path, &len);
	assert_int_equal(data[8], TF_VERSION);
	grown = realloc(data, len + sizeof(rank));
	assert_non_null(grown);
	memcpy(grown + len, &rank, sizeof(rank));
	put_bytes(path, grown, len + sizeof(rank));
	assert_int_equal(count_records(path, &n), 0);
	assert_int_equal(n, 4);
	assert_true(tf_record_ts(&rank, sizeof(rank), &ts));
	assert_int_equal(ts, 9);
	rank.size -= 8;
	memcpy(grown + len, &rank, sizeof(rank));
	put_bytes(path, grown, len + sizeof(rank) - 8);
	assert_int_equal(count_records(path, &n), -EBADMSG);
	assert_int_equal(n, 3);
	free(grown);
}

/* A server-metrics sample is a known kind in either version; one of another size is corrupt. */
static void test_srvmetric_records(void **state)
{
	struct sp_srvmetric_rec m = { .type = SP_REC_SRVMETRIC, .size = sizeof(m), .tgid = 7,
				      .ts = 11, .value = 123.5, .scrape = 1, .rank = -1,
				      .family = SP_SRV_ACCEPTED, .server = SP_SRV_VLLM,
				      .series = 2 };
	char path[PATH_LEN];
	struct tf_header h;
	unsigned char *data, *grown;
	size_t len;
	__u64 ts;
	int n;

	in_dir(state, "srvmetric.sprb", path);
	sample_header(&h);
	write_recording(path, &h, 3);
	data = get_bytes(path, &len);
	grown = realloc(data, len + sizeof(m));
	assert_non_null(grown);
	memcpy(grown + len, &m, sizeof(m));
	put_bytes(path, grown, len + sizeof(m));
	assert_int_equal(count_records(path, &n), 0);
	assert_int_equal(n, 4);
	assert_true(tf_record_ts(&m, sizeof(m), &ts));
	assert_int_equal(ts, 11);
	m.size -= 8;
	memcpy(grown + len, &m, sizeof(m));
	put_bytes(path, grown, len + sizeof(m) - 8);
	assert_int_equal(count_records(path, &n), -EBADMSG);
	assert_int_equal(n, 3);
	free(grown);
}

static void expect_header_rejected(void **state, const struct raw *file)
{
	char path[PATH_LEN];

	in_dir(state, "bad.sprb", path);
	put_bytes(path, file->b, file->len);
	expect_open_fails(path, "%s: header is truncated or corrupt");
}

static void test_corrupt_header(void **state)
{
	struct raw good = { .len = 0 }, body, file;
	char path[PATH_LEN];
	struct tf_header h;
	struct raw_at at;
	struct tf_reader *r;
	struct {
		size_t *at;
		__u32 value;
	} patches[] = {
		{ &at.probe_lib, 2 },		/* only two libs */
		{ &at.map_lib, 7 },
		{ &at.nr_targets, 0xffffffff },	/* more than the bytes could hold */
		{ &at.nr_libs, 0xffffffff },	/* and not worth trying to allocate */
		{ &at.host_len, 65 },		/* longer than host[] */
		{ &at.lib_path_len, 0x7fffffff },
	};

	sample_header(&h);
	raw_body(&good, &h, &at);
	raw_file(&file, TF_VERSION, &good, good.len);
	in_dir(state, "good.sprb", path);
	put_bytes(path, file.b, file.len);
	r = open_ok(path);	/* without the padding is fine too */
	assert_header_equal(tf_reader__header(r), &h);
	tf_reader__free(r);

	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++) {
		body = good;
		raw_patch_u32(&body, *patches[i].at, patches[i].value);
		raw_file(&file, TF_VERSION, &body, body.len);
		expect_header_rejected(state, &file);
	}
	raw_file(&file, TF_VERSION, &good, good.len + 1);	/* body runs past the end */
	expect_header_rejected(state, &file);
	body = good;
	raw_bytes(&body, "\0\0\0\0\0\0\0\0", 8);	/* more than padding */
	raw_file(&file, TF_VERSION, &body, body.len);
	expect_header_rejected(state, &file);
	body = good;
	raw_bytes(&body, "x", 1);
	raw_file(&file, TF_VERSION, &body, body.len);
	expect_header_rejected(state, &file);
}

/* A header from another writer may leave records unaligned: they are copied out. */
static void test_unaligned_records(void **state)
{
	struct raw body = { .len = 0 }, file;
	char path[PATH_LEN];
	struct tf_header h = { .version = TF_VERSION, .host = "h", .kernel = "k" };
	struct raw_at at;
	struct tf_reader *r;
	union rec_buf buf;
	const void *rec;

	raw_body(&body, &h, &at);
	raw_file(&file, TF_VERSION, &body, body.len);
	assert_int_not_equal(file.len % 8, 0);
	for (__u32 i = 0; i < 16; i++)
		raw_bytes(&file, buf.b, make_rec(&buf, i));
	in_dir(state, "odd.sprb", path);
	put_bytes(path, file.b, file.len);
	r = open_ok(path);
	assert_string_equal(tf_reader__header(r)->host, "h");
	expect_records(r, 16);
	assert_int_equal(tf_reader__next(r, &rec), 0);
	tf_reader__free(r);
}

static void expect_corrupt_at(const char *path, size_t off, __u32 good_before)
{
	char want[ERR_LEN];
	struct tf_reader *r = open_ok(path);
	const void *rec;

	expect_records(r, good_before);
	assert_int_equal(tf_reader__next(r, &rec), -EBADMSG);
	assert_int_equal(tf_reader__offset(r), off);
	snprintf(want, sizeof(want), "%s: corrupt record at byte %zu", path, off);
	assert_string_equal(tf_reader__error(r), want);
	tf_reader__free(r);
}

static void test_corrupt_record(void **state)
{
	static const __u16 bad_sizes[] = { 0, 3, 4, TF_MAX_RECORD + 1, 0xffff, CALL_SZ + 8,
					   CALL_SZ - 8, CALL_SZ + SP_DATA_LARGE + 8 };
	char path[PATH_LEN], bad_path[PATH_LEN];
	struct tf_header h;
	unsigned char *data;
	union rec_buf buf;
	size_t len, off;

	in_dir(state, "good.sprb", path);
	in_dir(state, "bad.sprb", bad_path);
	sample_header(&h);
	write_recording(path, &h, 5);
	data = get_bytes(path, &len);
	off = len - make_rec(&buf, 4) - make_rec(&buf, 3) - make_rec(&buf, 2);
	/* record 2 is a call with data: size field at off + 2 */
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		memcpy(data + off + 2, &bad_sizes[i], 2);
		put_bytes(bad_path, data, len);
		expect_corrupt_at(bad_path, off, 2);
	}
	make_rec(&buf, 2);
	memcpy(data + off, buf.b, 4);
	data[off] = 99;	/* no such type */
	put_bytes(bad_path, data, len);
	expect_corrupt_at(bad_path, off, 2);
	data[off] = SP_REC_RET;	/* a call's size on a return */
	put_bytes(bad_path, data, len);
	expect_corrupt_at(bad_path, off, 2);
	free(data);
}

static void test_refuses_existing_file(void **state)
{
	char path[PATH_LEN], err[ERR_LEN] = "", want[ERR_LEN];
	struct tf_header h;
	struct tf_writer *w;
	struct tf_reader *r;

	in_dir(state, "out.sprb", path);
	put_bytes(path, "keep\n", 5);
	sample_header(&h);
	errno = 0;
	w = tf_writer__create(path, false, &h, err, sizeof(err));
	assert_null(w);
	assert_int_equal(errno, EEXIST);
	snprintf(want, sizeof(want), "%s exists: use --force to overwrite", path);
	assert_string_equal(err, want);
	expect_file_is(path, "keep\n");

	w = tf_writer__create(path, true, &h, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(tf_writer__close(w), 0);
	tf_writer__free(w);
	r = open_ok(path);
	assert_header_equal(tf_reader__header(r), &h);
	tf_reader__free(r);
}

static void expect_symlink_refused(const char *link, const struct tf_header *h, bool force)
{
	char err[ERR_LEN] = "", want[ERR_LEN];
	struct tf_writer *w = tf_writer__create(link, force, h, err, sizeof(err));

	assert_null(w);
	snprintf(want, sizeof(want), "%s is a symbolic link: refusing to write through it", link);
	assert_string_equal(err, want);
}

static void test_refuses_symlink(void **state)
{
	char target[PATH_LEN], link[PATH_LEN], missing[PATH_LEN], dangling[PATH_LEN];
	struct tf_header h;

	in_dir(state, "target", target);
	in_dir(state, "link.sprb", link);
	in_dir(state, "missing", missing);
	in_dir(state, "dangling.sprb", dangling);
	put_bytes(target, "keep\n", 5);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(symlink(missing, dangling), 0);
	sample_header(&h);
	for (int force = 0; force <= 1; force++) {
		expect_symlink_refused(link, &h, force);
		expect_file_is(target, "keep\n");
		expect_symlink_refused(dangling, &h, force);
		assert_int_equal(access(missing, F_OK), -1);
	}
}

/* Names in the scratch folder: a temporary file left behind would show here. */
static int entries(void **state)
{
	DIR *d = opendir((const char *)*state);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* Writes fail past a small file size limit, as on a full disk; the limit is lifted after. */
static void limit_file_size(struct rlimit *old, rlim_t bytes)
{
	struct rlimit small;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, old), 0);
	small = (struct rlimit){ bytes, old->rlim_max };
	signal(SIGXFSZ, SIG_IGN);	/* the write fails with EFBIG instead */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
}

static void test_write_fails(void **state)
{
	char path[PATH_LEN], err[ERR_LEN] = "", want[ERR_LEN];
	struct rlimit old;
	struct tf_header h;
	struct tf_writer *w;
	union rec_buf buf;
	int ret = 0;

	in_dir(state, "out.sprb", path);
	snprintf(want, sizeof(want), "writing %s: %s", path, strerror(EFBIG));
	sample_header(&h);
	limit_file_size(&old, 16);
	/* the header waits in the buffer: the close finds the failure */
	w = tf_writer__create(path, false, &h, err, sizeof(err));
	assert_non_null(w);
	for (__u32 i = 0; i < 3; i++)
		assert_int_equal(tf_writer__write(w, buf.b, make_rec(&buf, i)), 0);
	assert_int_equal(tf_writer__close(w), -EFBIG);
	assert_string_equal(tf_writer__error(w), want);
	tf_writer__free(w);

	/* enough records to fill the buffer: a write itself reports it, and keeps on */
	w = tf_writer__create(path, true, &h, err, sizeof(err));
	assert_non_null(w);
	for (__u32 i = 0; i < (2u << 20) / 48 && !ret; i++)
		ret = tf_writer__write(w, buf.b, make_rec(&buf, i));
	assert_int_equal(ret, -EFBIG);
	assert_string_equal(tf_writer__error(w), want);
	assert_int_equal(tf_writer__write(w, buf.b, make_rec(&buf, 0)), -EFBIG);
	assert_int_equal(tf_writer__close(w), -EFBIG);
	assert_string_equal(tf_writer__error(w), want);
	tf_writer__free(w);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
}

/* A whole file replaces the old one only once closed cleanly; a failure leaves it, no temp. */
static void test_whole_file(void **state)
{
	char path[PATH_LEN], err[ERR_LEN] = "";
	struct stat before, after;
	struct rlimit old;
	struct tf_header h;
	struct tf_writer *w;
	struct tf_reader *r;
	union rec_buf buf;

	in_dir(state, "out.sprb", path);
	put_bytes(path, "keep\n", 5);
	assert_int_equal(stat(path, &before), 0);
	sample_header(&h);
	w = tf_writer__create_whole(path, true, 0600, &h, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(tf_writer__write(w, buf.b, make_rec(&buf, 0)), 0);
	assert_int_equal(tf_writer__flush(w), 0);
	expect_file_is(path, "keep\n");		/* not yet its name */
	assert_int_equal(entries(state), 2);
	tf_writer__free(w);			/* given up: the temporary file goes */
	expect_file_is(path, "keep\n");
	assert_int_equal(entries(state), 1);

	limit_file_size(&old, 16);
	w = tf_writer__create_whole(path, true, 0600, &h, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(tf_writer__close(w), -EFBIG);
	tf_writer__free(w);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	expect_file_is(path, "keep\n");
	assert_int_equal(entries(state), 1);

	w = tf_writer__create_whole(path, true, 0600, &h, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(tf_writer__write(w, buf.b, make_rec(&buf, 0)), 0);
	assert_int_equal(tf_writer__close(w), 0);
	tf_writer__free(w);
	assert_int_equal(entries(state), 1);
	assert_int_equal(stat(path, &after), 0);
	assert_int_not_equal(after.st_ino, before.st_ino);
	assert_int_equal(after.st_mode & 07777, 0600);
	r = open_ok(path);
	expect_records(r, 1);
	tf_reader__free(r);
}

/* --force replaces the name: the file that was there keeps its inode and its bytes. */
static void test_force_replaces_by_rename(void **state)
{
	char path[PATH_LEN], keep[PATH_LEN], err[ERR_LEN] = "";
	struct stat old, now, kept;
	struct tf_header h;
	struct tf_writer *w;

	in_dir(state, "out.sprb", path);
	in_dir(state, "other-name", keep);
	put_bytes(path, "theirs\n", 7);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(link(path, keep), 0);
	assert_int_equal(stat(path, &old), 0);
	sample_header(&h);
	w = tf_writer__create_mode(path, true, 0600, &h, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(tf_writer__close(w), 0);
	tf_writer__free(w);
	assert_int_equal(stat(path, &now), 0);
	assert_int_equal(stat(keep, &kept), 0);
	assert_int_not_equal(now.st_ino, old.st_ino);
	assert_int_equal(now.st_mode & 07777, 0600);
	assert_int_equal(now.st_uid, geteuid());
	assert_int_equal(kept.st_ino, old.st_ino);
	assert_int_equal(kept.st_nlink, 1);
	expect_file_is(keep, "theirs\n");
	assert_int_equal(entries(state), 2);
}

/* A FIFO, or a folder, at the output: refused at once with or without force, never opened. */
static void test_refuses_non_regular(void **state)
{
	char fifo[PATH_LEN], dir[PATH_LEN], err[ERR_LEN] = "", want[ERR_LEN];
	const char *paths[] = { fifo, dir };
	struct tf_header h;
	struct tf_writer *w;

	in_dir(state, "fifo.sprb", fifo);
	in_dir(state, "dir.sprb", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	sample_header(&h);
	alarm(10);	/* a blocking open would hang the test: fail it instead */
	for (int i = 0; i < 2; i++)
		for (int force = 0; force <= 1; force++) {
			w = tf_writer__create_whole(paths[i], force, 0600, &h, err, sizeof(err));
			assert_null(w);
			snprintf(want, sizeof(want),
				 "%s is not a regular file: refusing to replace it", paths[i]);
			assert_string_equal(err, want);
		}
	alarm(0);
	assert_int_equal(entries(state), 2);
}

/* The alias test merge and export use: a hard link or a ring segment is the input too. */
static void test_ring_names(void **state)
{
	char base[PATH_LEN], seg[PATH_LEN], link1[PATH_LEN], link2[PATH_LEN], other[PATH_LEN];

	in_dir(state, "run.sprb", base);
	in_dir(state, "run.sprb.3", seg);
	in_dir(state, "hard", link1);
	in_dir(state, "segment-link", link2);
	in_dir(state, "other", other);
	put_bytes(seg, "segment\n", 8);
	put_bytes(other, "other\n", 6);
	assert_int_equal(link(seg, link2), 0);
	assert_true(tf_ring__names(base, seg));	/* the set read as base */
	assert_true(tf_ring__names(base, link2));
	assert_false(tf_ring__names(base, other));
	assert_false(tf_ring__names(base, link1));	/* not there: nothing to alias */
	put_bytes(base, "plain\n", 6);
	assert_int_equal(link(base, link1), 0);
	assert_true(tf_ring__names(base, link1));
	assert_false(tf_ring__names(other, base));
}

/* Names a reader of base would take, there or not: base itself and BASE.N, in its folder. */
static void test_ring_claims(void **state)
{
	char base[PATH_LEN], name[PATH_LEN + 32];

	in_dir(state, "run.sprb", base);
	assert_true(tf_ring__claims(base, base));
	snprintf(name, sizeof(name), "%s.1", base);
	assert_true(tf_ring__claims(base, name));	/* not there yet */
	snprintf(name, sizeof(name), "%s/../%s/run.sprb.42", (char *)*state,
		 strrchr((char *)*state, '/') + 1);
	assert_true(tf_ring__claims(base, name));	/* the same folder by another path */
	snprintf(name, sizeof(name), "%s.01", base);
	assert_false(tf_ring__claims(base, name));	/* no reader takes a leading zero */
	snprintf(name, sizeof(name), "%s.1x", base);
	assert_false(tf_ring__claims(base, name));
	snprintf(name, sizeof(name), "%s.sprb", base);
	assert_false(tf_ring__claims(base, name));
	assert_false(tf_ring__claims(base, "/tmp/run.sprb.1"));	/* another folder */
}

static void test_rejects_malformed_write(void **state)
{
	char path[PATH_LEN], err[ERR_LEN] = "";
	struct tf_header h;
	struct tf_writer *w;
	struct tf_reader *r;
	union rec_buf buf;
	size_t size;

	in_dir(state, "out.sprb", path);
	sample_header(&h);
	w = tf_writer__create(path, false, &h, err, sizeof(err));
	assert_non_null(w);
	size = make_rec(&buf, 0);
	assert_int_equal(tf_writer__write(w, buf.b, 3), -EINVAL);
	assert_int_equal(tf_writer__write(w, buf.b, size + 8), -EINVAL);
	assert_true(strlen(tf_writer__error(w)) > 0);
	assert_int_equal(tf_writer__write(w, buf.b, size), 0);	/* not a lasting error */
	assert_int_equal(tf_writer__close(w), 0);
	assert_int_equal(tf_writer__write(w, buf.b, size), -EBADF);
	tf_writer__free(w);
	r = open_ok(path);
	expect_records(r, 1);
	tf_reader__free(r);
}

/* A calibration record of either size reads back (an older one has no site cost); no other. */
static void test_calibration_sizes(void **state)
{
	struct sp_calib_rec calib = { .type = SP_REC_CALIB, .size = sizeof(calib), .calls = 7,
				      .entry_ps = 1000, .return_ps = 500, .stack_ps = 300 };
	static const __u16 sizes[] = { sizeof(struct sp_calib_rec), SP_CALIB_REC_V1 };
	char path[PATH_LEN], err[ERR_LEN] = "";
	struct sp_calib_rec got;
	struct tf_header h;
	struct tf_writer *w;
	struct tf_reader *r;
	const void *rec;

	in_dir(state, "calib.sprb", path);
	sample_header(&h);
	w = tf_writer__create(path, false, &h, err, sizeof(err));
	assert_non_null(w);
	for (int i = 0; i < 2; i++) {
		calib.size = sizes[i];
		assert_int_equal(tf_writer__write(w, &calib, sizes[i]), 0);
	}
	calib.size = SP_CALIB_REC_V1 + 4;	/* neither size: the reader refuses it */
	assert_int_equal(tf_writer__write(w, &calib, calib.size), 0);
	assert_int_equal(tf_writer__close(w), 0);
	tf_writer__free(w);
	r = open_ok(path);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tf_reader__next(r, &rec), 1);
		assert_int_equal(((const struct sp_rec_hdr *)rec)->size, sizes[i]);
		assert_int_equal(decoder__read_calib(rec, sizes[i], &got), 0);
		assert_int_equal(got.entry_ps, 1000);
		assert_int_equal(got.stack_ps, i ? 0 : 300);
	}
	assert_int_equal(tf_reader__next(r, &rec), -EBADMSG);
	tf_reader__free(r);
	assert_int_equal(decoder__read_calib(&calib, SP_CALIB_REC_V1 - 8, &got), -EBADMSG);
}

/* Each kind's own time; call sites and tables hold other fields where calls keep theirs. */
static void test_record_times(void **state)
{
	struct sp_call_rec call = { .type = SP_REC_CALL, .size = sizeof(call), .ts = 42 };
	struct sp_stats_rec end = { .type = SP_REC_END, .size = sizeof(end), .ts = 43 };
	struct sp_clock_rec clock = { .type = SP_REC_CLOCK, .size = sizeof(clock), .ts = 44 };
	struct sp_stack_rec stack = { .type = SP_REC_STACK, .size = sizeof(stack), .tid = 7,
				      .seq = 20000 };
	struct sp_objmap_rec objmap = { .type = SP_REC_OBJMAP, .size = sizeof(objmap),
					.start = 0x7f0000000000ull };
	struct sp_map_rec map = { .type = SP_REC_MAP, .size = sizeof(map), .lib = 3 };
	struct sp_rec_hdr optional = { .type = TF_OPTIONAL_FIRST, .size = 16 };
	__u64 ts = 1;

	assert_true(tf_record_ts(&call, sizeof(call), &ts));
	assert_int_equal(ts, 42);
	assert_true(tf_record_ts(&end, sizeof(end), &ts));
	assert_int_equal(ts, 43);
	assert_true(tf_record_ts(&clock, sizeof(clock), &ts));
	assert_int_equal(ts, 44);
	assert_false(tf_record_ts(&stack, sizeof(stack), &ts));
	assert_int_equal(ts, 0);
	assert_false(tf_record_ts(&objmap, sizeof(objmap), &ts));
	assert_false(tf_record_ts(&map, sizeof(map), &ts));
	assert_false(tf_record_ts(&optional, sizeof(optional), &ts));
	/* too short to hold it */
	assert_false(tf_record_ts(&call, 12, &ts));
	assert_false(tf_record_ts(&call, 2, &ts));
	assert_int_equal(ts, 0);
}

static void test_free_accepts_null(void **state)
{
	tf_writer__free(NULL);
	tf_reader__free(NULL);
	tf_header__free(NULL);
}

#define TMP_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TMP_TEST(test_round_trip),
		TMP_TEST(test_layout_is_documented_one),
		TMP_TEST(test_million_records),
		TMP_TEST(test_cut_inside_last_record),
		TMP_TEST(test_pipeline_reads_to_cut),
		TMP_TEST(test_cut_inside_header),
		TMP_TEST(test_not_a_recording),
		TMP_TEST(test_corrupt_header),
		TMP_TEST(test_unaligned_records),
		TMP_TEST(test_corrupt_record),
		TMP_TEST(test_optional_kinds),
		TMP_TEST(test_refuses_existing_file),
		TMP_TEST(test_refuses_symlink),
		TMP_TEST(test_write_fails),
		TMP_TEST(test_whole_file),
		TMP_TEST(test_force_replaces_by_rename),
		TMP_TEST(test_refuses_non_regular),
		TMP_TEST(test_ring_names),
		TMP_TEST(test_ring_claims),
		TMP_TEST(test_rejects_malformed_write),
		TMP_TEST(test_calibration_sizes),
		cmocka_unit_test(test_record_times),
		TMP_TEST(test_rank_records),
		TMP_TEST(test_srvmetric_records),
		cmocka_unit_test(test_free_accepts_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
