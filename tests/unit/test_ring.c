// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Bounded recordings read as sets, and merges of two hosts: counts, names, clocks, tgids. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "merge.h"
#include "ring.h"
#include "tracefile.h"
#include "scratch_dir.h"

#define PATH_LEN	256
#define CALLS		20000

static int setup(void **state)
{
	return scratch_dir_new(state, "test_ring");
}

static int teardown(void **state)
{
	return scratch_dir_free(state);
}

static struct tf_lib lib = { .path = "/usr/lib/libcuda.so.1", .dev = 1, .ino = 2 };
static struct tf_probe probe = { .symbol = "cuLaunchKernel", .offset = 0x100 };
static __u32 target = 100;

static void fill_header(struct tf_header *h, const char *host, __u64 mono, __u64 real)
{
	memset(h, 0, sizeof(*h));
	h->version = TF_VERSION;
	snprintf(h->host, sizeof(h->host), "%s", host);
	h->mono_ns = mono;
	h->realtime_ns = real;
	h->nr_targets = 1;
	h->targets = &target;
	h->nr_libs = 1;
	h->libs = &lib;
	h->nr_probes = 1;
	h->probes = &probe;
}

static struct sp_call_rec call_at(__u32 seq, __u64 ts)
{
	return (struct sp_call_rec){ .type = SP_REC_CALL, .size = sizeof(struct sp_call_rec),
				     .ts = ts, .tgid = target, .tid = target, .seq = seq };
}

static struct tf_gaps last_gaps;	/* of the last read_all */

/* Read a recording or a set: calls, the first seq, and what it says it lost. */
static int read_all(const char *path, __u64 *calls, __u32 *first_seq, __u64 *lost)
{
	struct tf_reader *r = tf_reader__open(path, NULL, 0);
	const void *rec;
	int ret;

	if (!r)
		return -errno;
	*calls = 0;
	while ((ret = tf_reader__next(r, &rec)) > 0) {
		const struct sp_call_rec *c = rec;

		if (c->type != SP_REC_CALL)
			continue;
		if (!(*calls)++)
			*first_seq = c->seq;
		assert_int_equal(c->probe, 0);
	}
	*lost = tf_header__rotated(tf_reader__header(r)) ?
		tf_reader__header(r)->segment.prior_calls : 0;
	last_gaps = *tf_reader__gaps(r);
	tf_reader__free(r);
	return ret;
}

static void write_ring(const char *base, __u64 max_bytes, __u64 mono)
{
	struct tf_header h;
	struct tf_ring *ring;
	char err[512];

	fill_header(&h, "a", mono, 5000);
	ring = tf_ring__create(base, false, 0600, &h, max_bytes, err, sizeof(err));
	assert_non_null(ring);
	for (__u32 i = 1; i <= CALLS; i++) {
		struct sp_call_rec c = call_at(i, 2000 + i);

		assert_int_equal(tf_ring__write(ring, &c, sizeof(c)), 0);
	}
	assert_int_equal(tf_ring__close(ring), 0);
	tf_ring__free(ring);
}

static void test_ring_keeps_newest_and_states_loss(void **state)
{
	char base[PATH_LEN], seg[PATH_LEN + 16];
	__u64 calls, lost;
	__u32 first;

	__u64 calls2;
	DIR *d;
	struct dirent *de;
	__u32 high = 0;
	FILE *f;

	snprintf(base, sizeof(base), "%s/run.sprb", (char *)*state);
	write_ring(base, 256 << 10, 1000);
	assert_int_equal(read_all(base, &calls, &first, &lost), 0);
	assert_int_equal(calls + lost, CALLS);
	assert_true(lost > 0);
	assert_int_equal(first, lost + 1);	/* the newest, with no gap */
	tf_segment_path(seg, sizeof(seg), base, 0);
	assert_int_equal(access(seg, F_OK), -1);	/* the oldest went */
	/* a newest file killed before its header: a cut, the rest reads */
	d = opendir(*state);
	while ((de = readdir(d))) {
		unsigned int n;

		if (sscanf(de->d_name, "run.sprb.%u", &n) == 1 && n > high)
			high = n;
	}
	closedir(d);
	tf_segment_path(seg, sizeof(seg), base, high + 1);
	f = fopen(seg, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(read_all(base, &calls2, &first, &lost), -ENODATA);
	assert_int_equal(calls2, calls);
}

static __u64 set_bytes(const char *dir)
{
	char path[PATH_LEN + 300];
	struct dirent *de;
	struct stat st;
	__u64 sum = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!strncmp(de->d_name, "run.sprb.", 9) && !stat(path, &st))
			sum += st.st_size;
	}
	closedir(d);
	return sum;
}

static void put_hostmem(struct tf_ring *ring, __u32 tgid, __u64 start)
{
	struct sp_hostmem_rec h = { .type = SP_REC_HOSTMEM, .size = sizeof(h), .tgid = tgid,
				    .start = start, .end = start + 4096, .kind = SP_HOSTMEM_PRIVATE };

	assert_int_equal(tf_ring__write(ring, &h, sizeof(h)), 0);
}

/*
 * Processes that come and go: an exited one's mappings and state are in no
 * later header, the set still reads, and the files never pass the budget.
 */
static void test_ring_forgets_exited(void **state)
{
	char base[PATH_LEN], seg[PATH_LEN + 16], err[512];
	const __u64 budget = 256 << 10;
	struct tf_header h;
	struct tf_ring *ring;
	struct tf_reader *r;
	__u64 calls, lost;
	__u32 first, high;

	snprintf(base, sizeof(base), "%s/run.sprb", (char *)*state);
	fill_header(&h, "a", 1000, 5000);
	ring = tf_ring__create(base, false, 0600, &h, budget, err, sizeof(err));
	assert_non_null(ring);
	for (__u32 i = 1; i <= CALLS; i++) {
		__u32 tgid = 1000 + i / 10;	/* a new process every 10 calls */
		struct sp_call_rec c = call_at(i, 2000 + i);
		struct sp_map_rec m = { .type = SP_REC_MAP, .size = sizeof(m), .tgid = tgid,
					.start = 0x1000, .end = 0x2000 };
		struct sp_exit_rec e = { .type = SP_REC_EXIT, .size = sizeof(e), .tgid = tgid };

		if (i % 10 == 0) {
			assert_int_equal(tf_ring__write(ring, &m, sizeof(m)), 0);
			for (int k = 0; k < 20; k++)
				put_hostmem(ring, tgid, 0x10000 * k);
		}
		assert_int_equal(tf_ring__write(ring, &c, sizeof(c)), 0);
		if (i % 10 == 9)
			assert_int_equal(tf_ring__write(ring, &e, sizeof(e)), 0);
		assert_true(set_bytes(*state) <= budget);
	}
	assert_int_equal(tf_ring__close(ring), 0);
	assert_int_equal(tf_ring__left_out(ring), 0);
	high = tf_ring__rotated(ring, NULL) + TF_RING_SEGMENTS - 1;
	tf_ring__free(ring);
	assert_true(high > 20);
	assert_int_equal(read_all(base, &calls, &first, &lost), 0);
	assert_int_equal(calls + lost, CALLS);
	/* the newest file alone: one live process's mapping, not two thousand */
	tf_segment_path(seg, sizeof(seg), base, high);
	r = tf_reader__open(seg, err, sizeof(err));
	assert_non_null(r);
	assert_true(tf_reader__header(r)->nr_maps <= 1);
	tf_reader__free(r);
}

static void put_objmap(struct tf_ring *ring, const char *path)
{
	union {
		struct sp_objmap_rec rec;
		unsigned char b[256];
	} u = { .rec = { .type = SP_REC_OBJMAP, .tgid = target, .start = 0x1000,
			 .end = 0x2000 } };

	u.rec.size = (sizeof(u.rec) + strlen(path) + 1 + 7) & ~7ul;
	strcpy((char *)(&u.rec + 1), path);
	assert_int_equal(tf_ring__write(ring, &u, u.rec.size), 0);
}

/* After an execve a later file carries the new program's mappings only, its other state too. */
static void test_ring_exec_drops_old_sites(void **state)
{
	char base[PATH_LEN], seg[PATH_LEN + 16], err[512];
	struct sp_exec_rec ex = { .type = SP_REC_EXEC, .size = sizeof(ex), .tgid = target };
	int objmaps = 0, hostmems = 0, ret;
	struct tf_header h;
	struct tf_ring *ring;
	struct tf_reader *r;
	const void *rec;
	__u32 high;

	snprintf(base, sizeof(base), "%s/run.sprb", (char *)*state);
	fill_header(&h, "a", 1000, 5000);
	h.version = TF_VERSION_STACKS;
	ring = tf_ring__create(base, false, 0600, &h, 256 << 10, err, sizeof(err));
	assert_non_null(ring);
	put_hostmem(ring, target, 0x10000);
	put_objmap(ring, "/old/prog");
	assert_int_equal(tf_ring__write(ring, &ex, sizeof(ex)), 0);
	put_objmap(ring, "/new/prog");
	for (__u32 i = 1; i <= CALLS; i++) {
		struct sp_call_rec c = call_at(i, 2000 + i);

		assert_int_equal(tf_ring__write(ring, &c, sizeof(c)), 0);
	}
	assert_int_equal(tf_ring__close(ring), 0);
	high = tf_ring__rotated(ring, NULL) + TF_RING_SEGMENTS - 1;
	tf_ring__free(ring);
	assert_true(high > TF_RING_SEGMENTS);
	tf_segment_path(seg, sizeof(seg), base, high);
	r = tf_reader__open(seg, err, sizeof(err));
	assert_non_null(r);
	while ((ret = tf_reader__next(r, &rec)) > 0) {
		const struct sp_objmap_rec *m = rec;

		hostmems += m->type == SP_REC_HOSTMEM;
		if (m->type != SP_REC_OBJMAP)
			continue;
		objmaps++;
		assert_string_equal((const char *)(m + 1), "/new/prog");
	}
	assert_int_equal(ret, 0);
	assert_int_equal(objmaps, 1);
	assert_int_equal(hostmems, 1);
	tf_reader__free(r);
}

static void put_gpu_name(struct tf_ring *ring, __u32 number, const char *name)
{
	union {
		struct sp_gpu_name_rec rec;
		unsigned char b[128];
	} u = { .rec = { .type = SP_REC_GPU_NAME, .tgid = target, .number = number } };

	u.rec.size = (sizeof(u.rec) + strlen(name) + 1 + 7) & ~7ul;
	strcpy((char *)(&u.rec + 1), name);
	assert_int_equal(tf_ring__write(ring, &u, u.rec.size), 0);
}

static void put_gpu_state(struct tf_ring *ring, __u64 records)
{
	struct sp_gpu_state_rec st = { .type = SP_REC_GPU_STATE, .size = sizeof(st),
				       .tgid = target, .ts = 1500 + records, .records = records,
				       .status = SP_GPU_ON };

	assert_int_equal(tf_ring__write(ring, &st, sizeof(st)), 0);
}

/*
 * Kernel names and the agent's latest state come again in every file, so a set
 * whose first files were rotated out still names its kernels; an execve's
 * program brings its own.
 */
static void test_ring_repeats_gpu_names(void **state)
{
	char base[PATH_LEN], seg[PATH_LEN + 16], err[512];
	struct sp_exec_rec ex = { .type = SP_REC_EXEC, .size = sizeof(ex), .tgid = target };
	const char *want[] = { "draft_step", "verify_forward" };
	int names = 0, states = 0, ret;
	struct tf_header h;
	struct tf_ring *ring;
	struct tf_reader *r;
	const void *rec;
	__u32 high;

	snprintf(base, sizeof(base), "%s/run.sprb", (char *)*state);
	fill_header(&h, "a", 1000, 5000);
	ring = tf_ring__create(base, false, 0600, &h, 256 << 10, err, sizeof(err));
	assert_non_null(ring);
	put_gpu_name(ring, 1, "old_program_kernel");
	put_gpu_state(ring, 1);
	assert_int_equal(tf_ring__write(ring, &ex, sizeof(ex)), 0);
	put_gpu_name(ring, 1, want[0]);
	put_gpu_name(ring, 2, want[1]);
	put_gpu_state(ring, 2);
	put_gpu_state(ring, 3);
	for (__u32 i = 1; i <= CALLS; i++) {
		struct sp_call_rec c = call_at(i, 2000 + i);

		assert_int_equal(tf_ring__write(ring, &c, sizeof(c)), 0);
	}
	assert_int_equal(tf_ring__close(ring), 0);
	high = tf_ring__rotated(ring, NULL) + TF_RING_SEGMENTS - 1;
	tf_ring__free(ring);
	assert_true(high > TF_RING_SEGMENTS);
	/* the set, read from its oldest kept file, which the names never were written in */
	r = tf_reader__open(base, err, sizeof(err));
	assert_non_null(r);
	while ((ret = tf_reader__next(r, &rec)) > 0) {
		const struct sp_gpu_name_rec *n = rec;

		if (n->type == SP_REC_GPU_STATE) {
			states++;
			assert_int_equal(((const struct sp_gpu_state_rec *)rec)->records, 3);
		}
		if (n->type != SP_REC_GPU_NAME)
			continue;
		assert_true(n->number >= 1 && n->number <= 2);
		assert_string_equal((const char *)(n + 1), want[n->number - 1]);
		names++;
	}
	assert_int_equal(ret, 0);
	assert_int_equal(names, 2);
	assert_int_equal(states, 1);
	assert_true(tf_header__rotated(tf_reader__header(r)));
	tf_reader__free(r);
	/* the newest file alone too */
	tf_segment_path(seg, sizeof(seg), base, high);
	r = tf_reader__open(seg, err, sizeof(err));
	assert_non_null(r);
	names = 0;
	while ((ret = tf_reader__next(r, &rec)) > 0)
		names += ((const struct sp_rec_hdr *)rec)->type == SP_REC_GPU_NAME;
	assert_int_equal(ret, 0);
	assert_int_equal(names, 2);
	tf_reader__free(r);
}

/* State of live processes past half a segment: the oldest left out and counted, the budget held. */
static void test_ring_trims_state(void **state)
{
	char base[PATH_LEN], err[512];
	const __u64 budget = 256 << 10;
	struct tf_header h;
	struct tf_ring *ring;
	__u64 calls, lost;
	__u32 first;

	snprintf(base, sizeof(base), "%s/run.sprb", (char *)*state);
	fill_header(&h, "a", 1000, 5000);
	ring = tf_ring__create(base, false, 0600, &h, budget, err, sizeof(err));
	assert_non_null(ring);
	/* 1000 mappings of 40 bytes of a live process: more than half of 64K */
	for (int k = 0; k < 1000; k++)
		put_hostmem(ring, target, 0x10000ull * k);
	for (__u32 i = 1; i <= CALLS; i++) {
		struct sp_call_rec c = call_at(i, 2000 + i);

		assert_int_equal(tf_ring__write(ring, &c, sizeof(c)), 0);
		assert_true(set_bytes(*state) <= budget);
	}
	assert_int_equal(tf_ring__close(ring), 0);
	assert_true(tf_ring__left_out(ring) > 0);
	tf_ring__free(ring);
	assert_int_equal(read_all(base, &calls, &first, &lost), 0);
	assert_int_equal(calls + lost, CALLS);
}

static void test_ring_gap_and_strangers(void **state)
{
	char base[PATH_LEN], other[PATH_LEN], from[PATH_LEN + 16], to[PATH_LEN + 16];
	__u64 calls, lost, total;
	__u32 first, low = UINT32_MAX, high = 0;
	struct dirent *de;
	DIR *d;

	snprintf(base, sizeof(base), "%s/run.sprb", (char *)*state);
	snprintf(other, sizeof(other), "%s/other.sprb", (char *)*state);
	write_ring(base, 256 << 10, 1000);
	write_ring(other, 256 << 10, 2000);
	d = opendir(*state);
	while ((de = readdir(d))) {
		unsigned int n;

		if (sscanf(de->d_name, "run.sprb.%u", &n) == 1) {
			low = n < low ? n : low;
			high = n > high ? n : high;
		}
	}
	closedir(d);
	assert_true(high > low + 2);
	assert_int_equal(read_all(base, &calls, &first, &lost), 0);
	assert_int_equal(last_gaps.missing, 0);
	total = calls;
	/* a gap: read across, the segments before and after it, and what it held counted */
	tf_segment_path(from, sizeof(from), base, low + 1);
	unlink(from);
	assert_int_equal(read_all(base, &calls, &first, &lost), 0);
	assert_int_equal(first, lost + 1);	/* from the oldest there, before the gap */
	assert_int_equal(last_gaps.missing, 1);
	assert_int_equal(last_gaps.first_missing, low + 1);
	assert_true(last_gaps.lost_calls > 0);
	assert_int_equal(calls + last_gaps.lost_calls, total);
	assert_int_equal(calls + lost + last_gaps.lost_calls, CALLS);
	/* a file of another recording (other clock) in the set is refused */
	tf_segment_path(from, sizeof(from), other, high);
	tf_segment_path(to, sizeof(to), base, high);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(read_all(base, &calls, &first, &lost), -EBADMSG);
}

/* A ring whose segment late_seg (once it starts) gains a library and a probe, cookie 1. */
static __u32 write_ring_late(const char *base, long long late_seg)
{
	struct {
		struct sp_lib_rec l;
		char path[24];
	} lr = { { .type = SP_REC_LIB, .size = sizeof(lr), .index = 1, .dev = 1, .ino = 3 },
		 "/usr/lib/libnccl.so.2" };
	struct {
		struct sp_probe_rec p;
		char sym[16];
	} pr = { { .type = SP_REC_PROBE, .size = sizeof(pr), .cookie = 1, .lib = 1 },
		 "ncclAllReduce" };
	char seg[PATH_LEN + 16];
	struct tf_header h;
	struct tf_ring *ring;
	__u32 next = 1, probe = 0;

	fill_header(&h, "a", 1000, 5000);
	ring = tf_ring__create(base, false, 0600, &h, 256 << 10, NULL, 0);
	assert_non_null(ring);
	for (__u32 i = 1; i <= CALLS; i++) {
		struct sp_call_rec c = call_at(i, 2000 + i);

		c.probe = probe;
		assert_int_equal(tf_ring__write(ring, &c, sizeof(c)), 0);
		tf_segment_path(seg, sizeof(seg), base, next);
		if (access(seg, F_OK))
			continue;
		if (next++ == late_seg) {
			lr.l.ts = pr.p.offset = 2000 + i;
			assert_int_equal(tf_ring__write(ring, &lr, sizeof(lr)), 0);
			assert_int_equal(tf_ring__write(ring, &pr, sizeof(pr)), 0);
			probe = 1;
		}
	}
	assert_int_equal(tf_ring__close(ring), 0);
	tf_ring__free(ring);
	return next - 1;	/* the newest segment */
}

/* The tables a missing segment added come as late records: the calls after it name them. */
static void test_ring_gap_keeps_late_tables(void **state)
{
	char base[PATH_LEN], seg[PATH_LEN + 16];
	struct tf_reader *r;
	const void *rec;
	__u32 high, probe1 = 0, libs_seen = 0, probes_seen = 0;
	int ret;

	snprintf(base, sizeof(base), "%s/learn.sprb", (char *)*state);
	high = write_ring_late(base, -1);
	assert_true(high >= 3);
	snprintf(base, sizeof(base), "%s/run.sprb", (char *)*state);
	assert_int_equal(write_ring_late(base, high - 2), high);
	tf_segment_path(seg, sizeof(seg), base, high - 2);
	assert_int_equal(unlink(seg), 0);
	r = tf_reader__open(base, NULL, 0);
	assert_non_null(r);
	assert_int_equal(tf_reader__header(r)->nr_probes, 1);
	while ((ret = tf_reader__next(r, &rec)) > 0) {
		const struct sp_call_rec *c = rec;

		libs_seen += c->type == SP_REC_LIB;
		probes_seen += c->type == SP_REC_PROBE;
		if (c->type == SP_REC_CALL && c->probe == 1) {
			assert_true(c->probe < tf_reader__header(r)->nr_probes);
			probe1++;
		}
	}
	assert_int_equal(ret, 0);
	assert_int_equal(libs_seen, 1);
	assert_int_equal(probes_seen, 1);
	assert_true(probe1 > 0);
	assert_int_equal(tf_reader__header(r)->nr_probes, 2);
	assert_string_equal(tf_reader__header(r)->probes[1].symbol, "ncclAllReduce");
	assert_string_equal(tf_reader__header(r)->libs[1].path, "/usr/lib/libnccl.so.2");
	assert_int_equal(tf_reader__gaps(r)->missing, 1);
	assert_int_equal(tf_reader__gaps(r)->first_missing, high - 2);
	tf_reader__free(r);
}

static void write_plain(const char *path, const char *host, __u64 mono, __u64 real,
			__u64 first_ts)
{
	struct tf_header h;
	struct tf_writer *w;
	struct sp_stats_rec end = { .type = SP_REC_END, .size = sizeof(end) };
	struct sp_gpu_rec gpu = { .type = SP_REC_GPU, .size = sizeof(gpu), .tgid = target,
				  .kind = SP_GPU_KERNEL };
	char err[512];

	fill_header(&h, host, mono, real);
	h.attach_start_ns = first_ts - 500;
	h.attach_done_ns = first_ts;
	w = tf_writer__create(path, false, &h, err, sizeof(err));
	assert_non_null(w);
	for (__u32 i = 1; i <= 10; i++) {
		struct sp_call_rec c = call_at(i, first_ts + i * 1000);

		assert_int_equal(tf_writer__write(w, &c, sizeof(c)), 0);
	}
	/* a GPU execution of the last call (--gpu), placed by its end */
	gpu.start = first_ts + 10100;
	gpu.end = first_ts + 10600;
	assert_int_equal(tf_writer__write(w, &gpu, sizeof(gpu)), 0);
	end.ts = first_ts + 20000;
	assert_int_equal(tf_writer__write(w, &end, sizeof(end)), 0);
	assert_int_equal(tf_writer__close(w), 0);
	tf_writer__free(w);
}

static void test_merge_two_hosts(void **state)
{
	char a[PATH_LEN], b[PATH_LEN], m[PATH_LEN];
	const char *inputs[2] = { a, b };
	struct merge_request req = { inputs, 2, m, false };
	struct tf_reader *r;
	const void *rec;
	int from_b = 0, calls = 0, marks = 0, gpus = 0;
	__u64 last_ts = 0;

	snprintf(a, sizeof(a), "%s/a.sprb", (char *)*state);
	snprintf(b, sizeof(b), "%s/b.sprb", (char *)*state);
	snprintf(m, sizeof(m), "%s/m.sprb", (char *)*state);
	/* host b's monotonic clock is 1000000 behind a's against the same realtime */
	write_plain(a, "hosta", 10000000, 50000000, 10000000);
	write_plain(b, "hostb", 9000000, 50000000, 9000500);
	assert_int_equal(merge__run(&req), 0);
	r = tf_reader__open(m, NULL, 0);
	assert_non_null(r);
	while (tf_reader__next(r, &rec) > 0) {
		const struct sp_call_rec *c = rec;
		const struct sp_attach_rec *at = rec;

		if (at->type == SP_REC_ATTACH) {
			/* each process's own input's marks, on a's clock, before its calls */
			assert_int_equal(calls, 0);
			assert_int_equal(at->tgid, target + (at->source << MERGE_HOST_SHIFT));
			/* b's mark 9000500 moved by its shift, 1000000: later than a's */
			assert_int_equal(at->done_ns, at->source ? 10000500 : 10000000);
			assert_int_equal(at->ts, at->done_ns - 500);
			marks++;
		}
		if (c->type == SP_REC_GPU) {
			const struct sp_gpu_rec *g = rec;

			/* each on its host's process, on a's clock: b's 9011100 + 1000000 */
			gpus++;
			assert_true(g->tgid == target || g->tgid == target + (1u << MERGE_HOST_SHIFT));
			assert_int_equal(g->end, g->tgid == target ? 10010600 : 10011100);
			assert_int_equal(g->start, g->end - 500);
		}
		if (c->type != SP_REC_CALL)
			continue;
		calls++;
		assert_true(c->ts >= last_ts);	/* interleaved by time */
		last_ts = c->ts;
		if (c->tgid == target + (1u << MERGE_HOST_SHIFT)) {
			from_b++;
			assert_int_equal(c->probe, 1);	/* its own library, not host a's */
			assert_int_equal(c->tid, c->tgid);	/* threads of two hosts kept apart */
		} else {
			assert_int_equal(c->tgid, target);
			assert_int_equal(c->probe, 0);
		}
	}
	assert_int_equal(calls, 20);
	assert_int_equal(from_b, 10);
	assert_int_equal(marks, 2);
	assert_int_equal(gpus, 2);
	assert_int_equal(tf_reader__header(r)->nr_libs, 2);
	assert_int_equal(tf_reader__header(r)->nr_clocks, 2);
	assert_int_equal(tf_reader__header(r)->clocks[1].shift_ns, 1000000);
	assert_int_equal(tf_reader__header(r)->clocks[1].gap_ns, 0);	/* not measured */
	assert_string_equal(tf_reader__header(r)->host, "hosta+hostb");
	tf_reader__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ring_keeps_newest_and_states_loss, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ring_forgets_exited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_exec_drops_old_sites, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_repeats_gpu_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_trims_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_gap_and_strangers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_gap_keeps_late_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_two_hosts, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
