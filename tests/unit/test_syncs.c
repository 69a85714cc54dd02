// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Sync classification from synthetic decode loops: the builder plants calls of
 * each kind at chosen positions and notes their entry times; the analysis must
 * find each with its kind and position, flag it, and flag nothing else.
 */
#include <errno.h>
#include "call_seq.h"
#include "cycles.h"
#include "syncs.h"

#define DRAFT_FUNC 0xa500
#define VERIFY_FUNC 0xa100
#define EXTEND_FUNC 0xa600
#define VERIFY_EXEC 0xb000
#define DRAFT_EXEC 0xd000
#define EXTEND_EXEC 0xf000
#define PINNED_HOST 0x7000	/* copy_d2h's destination */
#define PAGEABLE_HOST 0x12340000
#define DRIVER_HOST 0x7f0000001000	/* in a shared /dev/zero mapping at attach */
#define PRIVATE_HOST 0x12350000		/* in a private mapping at attach */
#define LATER_HOST 0x50000000		/* in no mapping at attach */
#define PLANT_EVENT 0xe900
#define CLEAN_EVENT 0xe800
#define MAX_PLANTS 16
#define NOT_READY 600
#define CAPTURE_UNSUPPORTED 900

struct plant {
	int cycle;
	enum sync_pos pos;
	enum sync_kind kind;
	__u64 ts;		/* noted by the builder */
	__u64 host;		/* copies: host pointer, 0: PAGEABLE_HOST */
	__u64 dur_ns;		/* copies and stream syncs: 0: 300 us (unknown-host: 5 us) */
	bool site;		/* its entry took the call site */
};

struct loop_cfg {
	int cycles;
	bool from_start;	/* context made while traced: pinning is all seen */
	bool clean;		/* syncs on a complete event and on the idle side stream */
	bool deferred;		/* the accept sync is the next iteration's event sync */
	bool blocking_streams;	/* main and side streams created without CU_STREAM_NON_BLOCKING */
	bool maps;		/* the mappings read at attach (SP_REC_HOSTMEM) */
	bool calibrated;	/* a probe hit costs 1 us, its return probe 0.5 us, a site 0.4 us more */
	struct plant plants[MAX_PLANTS];
	int nr_plants;
};

struct built {
	struct call_seq s;
	struct cycles cy;
	struct syncs sy;
};

static __u64 query_spin(struct call_seq *s, const char *name, __u64 handle, int not_ready)
{
	__u64 first = 0;

	for (int k = 0; k <= not_ready; k++) {
		__u64 ts;

		s->next_result = k < not_ready ? NOT_READY : 0;
		ts = seq_call(s, name, 500, 0, NULL, 1, handle);
		first = k ? first : ts;
		s->now += 20000;	/* a nap between queries */
	}
	return first;
}

/* One planted call of a kind; returns the entry time of the call to classify. */
static __u64 plant_call(struct call_seq *s, const struct plant *p)
{
	__u64 ts, host = p->host ? p->host : PAGEABLE_HOST;

	s->stack_next = p->site;
	switch (p->kind) {
	case SYNC_CTX:
		return seq_call(s, "cuCtxSynchronize", 300000, 0, NULL, 0);
	case SYNC_STREAM:
		return stream_sync(s, p->dur_ns ? p->dur_ns : 300000);
	case SYNC_UNKNOWN_HOST:
		return seq_call(s, "cuMemcpyDtoHAsync", p->dur_ns ? p->dur_ns : 5000, 0, NULL, 4,
				host, 0x8000ull, 64ull, (__u64)MAIN_STREAM);
	case SYNC_EVENT:
		event_record(s, PLANT_EVENT, MAIN_STREAM);
		return event_sync(s, PLANT_EVENT, 300000);
	case SYNC_COPY:
		return seq_call(s, "cuMemcpyDtoH", 5000, 0, NULL, 3, (__u64)PINNED_HOST, 0x8000ull,
				64ull);
	case SYNC_PAGEABLE:
		return seq_call(s, "cuMemcpyDtoHAsync", p->dur_ns ? p->dur_ns : 300000, 0, NULL, 4,
				host, 0x8000ull, 64ull, (__u64)MAIN_STREAM);
	case SYNC_FREE:
		return seq_call(s, "cuMemFree", 300000, 0, NULL, 1, 0x9100ull);
	case SYNC_ALLOC:
		return seq_call(s, "cuMemAlloc", 3000, 0x9100, NULL, 2, 0x9200ull, 4096ull);
	case SYNC_LEGACY:
		return kernel(s, 0xa900, 0);
	case SYNC_POLL:
		return query_spin(s, "cuStreamQuery", MAIN_STREAM, 3);
	case SYNC_CAPTURE:
		begin_capture(s, MAIN_STREAM);
		s->next_result = CAPTURE_UNSUPPORTED;
		ts = stream_sync(s, 1000);
		s->next_result = 901;
		seq_call(s, "cuStreamEndCapture", 1000, 0, NULL, 2, (__u64)MAIN_STREAM, 0x9000ull);
		return ts;
	default:
		fail();
	}
	return 0;
}

static void plants_at(struct built *bt, struct loop_cfg *cfg, int cycle, enum sync_pos pos)
{
	for (int k = 0; k < cfg->nr_plants; k++)
		if (cfg->plants[k].cycle == cycle && cfg->plants[k].pos == pos)
			cfg->plants[k].ts = plant_call(&bt->s, &cfg->plants[k]);
}

/* What /proc/PID/maps showed at attach: a driver chunk and a heap. */
static void host_maps(struct call_seq *s)
{
	struct sp_hostmem_rec rec = { .type = SP_REC_HOSTMEM, .size = sizeof(rec),
				      .tgid = s->tgid };

	rec.start = PRIVATE_HOST & ~0xfffffull;
	rec.end = rec.start + (2 << 20);
	rec.kind = SP_HOSTMEM_PRIVATE;
	model__record(s->m, &rec, sizeof(rec));
	rec.start = DRIVER_HOST & ~0x1fffffull;
	rec.end = rec.start + (2 << 20);
	rec.kind = SP_HOSTMEM_DRIVER;
	model__record(s->m, &rec, sizeof(rec));
}

static void setup_calls(struct built *bt, const struct loop_cfg *cfg)
{
	struct call_seq *s = &bt->s;

	if (cfg->from_start)
		seq_call(s, "cuDevicePrimaryCtxRetain", 1000, 0xc7c7, NULL, 2, 0x9990ull, 0ull);
	seq_call(s, "cuStreamCreate", 1000, MAIN_STREAM, NULL, 2, 0x9980ull,
		 cfg->blocking_streams ? 0ull : 1ull);
	seq_call(s, "cuStreamCreate", 1000, SIDE_STREAM, NULL, 2, 0x9988ull,
		 cfg->blocking_streams ? 0ull : 1ull);
	seq_call(s, "cuMemHostAlloc", 1000, PINNED_HOST, NULL, 3, 0x9970ull, 4096ull, 0ull);
	if (cfg->maps)
		host_maps(s);
	if (cfg->calibrated) {
		struct sp_calib_rec calib = { .type = SP_REC_CALIB, .size = sizeof(calib),
					      .calls = 10000, .entry_ps = 1000000,
					      .return_ps = 500000, .stack_ps = 400000 };

		model__record(s->m, &calib, sizeof(calib));
	}
	capture_graph(s, 0x9000 + VERIFY_EXEC, VERIFY_EXEC, VERIFY_FUNC, 9);
	capture_graph(s, 0x9000 + DRAFT_EXEC, DRAFT_EXEC, DRAFT_FUNC, 4);
	capture_graph(s, 0x9000 + EXTEND_EXEC, EXTEND_EXEC, EXTEND_FUNC, 4);
	if (cfg->clean) {
		event_record(s, CLEAN_EVENT, MAIN_STREAM);
		event_sync(s, CLEAN_EVENT, 1000);
	}
	seq_call(s, "cuCtxSynchronize", 1000, 0, NULL, 0);
}

static void accept_calls(struct built *bt, struct loop_cfg *cfg, int i)
{
	struct call_seq *s = &bt->s;

	copy_d2h(s);
	plants_at(bt, cfg, i, SPOS_ACCEPT);
	if (!cfg->deferred) {
		stream_sync(s, 2000000);
		return;
	}
	event_record(s, 0xe000 + i % 2, MAIN_STREAM);
	if (i > 0)
		event_sync(s, 0xe000 + (i - 1) % 2, 1500000);
}

static void build(struct built *bt, struct loop_cfg *cfg)
{
	struct call_seq *s = &bt->s;

	memset(bt, 0, sizeof(*bt));
	seq_init(s, 0);
	setup_calls(bt, cfg);
	plants_at(bt, cfg, -1, SPOS_OUTSIDE);
	for (int i = 0; i < cfg->cycles; i++) {
		s->now += 30000;
		graph_launch(s, DRAFT_EXEC);
		graph_launch(s, DRAFT_EXEC);
		plants_at(bt, cfg, i, SPOS_DRAFT_VERIFY);
		if (cfg->clean)
			event_sync(s, CLEAN_EVENT, 1000);
		graph_launch(s, VERIFY_EXEC);
		plants_at(bt, cfg, i, SPOS_AFTER_VERIFY);
		if (cfg->clean)
			seq_call(s, "cuStreamSynchronize", 1000, 0, NULL, 1, (__u64)SIDE_STREAM);
		accept_calls(bt, cfg, i);
		graph_launch(s, EXTEND_EXEC);
		plants_at(bt, cfg, i, SPOS_EXTEND);
	}
	if (cfg->deferred)
		event_sync(s, 0xe000 + (cfg->cycles - 1) % 2, 1000000);
	stream_sync(s, 10000);
	assert_int_equal(cycles__analyse(s->m, &bt->cy), 0);
	assert_int_equal(syncs__analyse(s->m, &bt->cy, &bt->sy), 0);
}

static void done(struct built *bt)
{
	syncs__free(&bt->sy);
	cycles__free(&bt->cy);
	seq_free(&bt->s);
}

static const struct sync_verdict *verdict_at(const struct built *bt, __u64 ts)
{
	const struct sync_verdict *found = NULL;

	for (size_t i = 0; i < bt->sy.nr; i++)
		if (bt->sy.verdicts[i].sync->ts == ts) {
			assert_null(found);
			found = &bt->sy.verdicts[i];
		}
	assert_non_null(found);
	return found;
}

/*
 * Every plant found with its kind and position and flagged; nothing else
 * flagged. Legacy-stream work next to non-blocking streams serialises with
 * nothing: found, not flagged.
 */
static void expect_plants(const struct built *bt, const struct loop_cfg *cfg)
{
	size_t flagged = 0;

	for (int k = 0; k < cfg->nr_plants; k++) {
		const struct sync_verdict *sv = verdict_at(bt, cfg->plants[k].ts);
		bool harmless_legacy = cfg->plants[k].kind == SYNC_LEGACY && !cfg->blocking_streams;

		assert_string_equal(model__sync_kind_name(sv->sync->kind),
				    model__sync_kind_name(cfg->plants[k].kind));
		assert_string_equal(syncs__pos_name(sv->pos), syncs__pos_name(cfg->plants[k].pos));
		if (harmless_legacy) {
			assert_false(sv->flagged);
		} else if (cfg->plants[k].pos != SPOS_OUTSIDE ||
			   cfg->plants[k].kind == SYNC_CAPTURE) {
			assert_true(sv->flagged);
			flagged++;
		}
	}
	assert_int_equal(bt->sy.flagged, flagged);
}

/* Legacy-stream work while blocking streams have graphs in flight serialises with them. */
static void test_legacy_serialises_with_blocking_streams(void **state)
{
	struct loop_cfg cfg = {
		.cycles = 4, .from_start = true, .blocking_streams = true, .nr_plants = 1,
		.plants = { { 2, SPOS_DRAFT_VERIFY, SYNC_LEGACY } },
	};
	struct built bt;

	build(&bt, &cfg);
	expect_plants(&bt, &cfg);
	/* the two draft graphs just launched on the main stream */
	assert_true(verdict_at(&bt, cfg.plants[0].ts)->sync->waited.graphs >= 2);
	done(&bt);
}

static void test_every_kind_at_its_position(void **state)
{
	struct loop_cfg cfg = {
		.cycles = 10, .from_start = true, .nr_plants = 11,
		.plants = {
			{ 0, SPOS_DRAFT_VERIFY, SYNC_CTX },
			{ 1, SPOS_AFTER_VERIFY, SYNC_EVENT },
			{ 2, SPOS_ACCEPT, SYNC_STREAM },
			{ 3, SPOS_EXTEND, SYNC_FREE },
			{ 4, SPOS_ACCEPT, SYNC_ALLOC },
			{ 5, SPOS_DRAFT_VERIFY, SYNC_LEGACY },
			{ 6, SPOS_EXTEND, SYNC_PAGEABLE },
			{ 7, SPOS_AFTER_VERIFY, SYNC_COPY },
			{ 8, SPOS_DRAFT_VERIFY, SYNC_POLL },
			{ -1, SPOS_OUTSIDE, SYNC_CTX },
			{ -1, SPOS_OUTSIDE, SYNC_CAPTURE },
		},
	};
	struct built bt;

	build(&bt, &cfg);
	expect_plants(&bt, &cfg);
	/* the poll spin is one sync of four queries */
	assert_int_equal(verdict_at(&bt, cfg.plants[8].ts)->sync->queries, 4);
	/* the context sync waited for the two draft graphs */
	assert_int_equal(verdict_at(&bt, cfg.plants[0].ts)->sync->waited.graphs, 2);
	done(&bt);
}

static void test_accept_and_clean_syncs_not_flagged(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .from_start = true, .clean = true };
	struct built bt;
	size_t own = 0, clean = 0;

	build(&bt, &cfg);
	assert_int_equal(bt.sy.flagged, 0);
	for (size_t i = 0; i < bt.sy.nr; i++) {
		const struct sync_verdict *sv = &bt.sy.verdicts[i];

		if (sv->own && sv->sync->kind == SYNC_STREAM) {
			assert_int_equal(sv->pos, SPOS_ACCEPT);
			own++;
		}
		if (sv->pos != SPOS_OUTSIDE && !sv->own) {
			assert_false(sv->flagged);
			assert_false(sv->sync->waited.graphs || sv->sync->waited.kernels);
			clean++;
		}
	}
	assert_int_equal(own, 6);
	assert_int_equal(clean, 12);
	done(&bt);
}

static void test_deferred_accept_is_the_cycles_own(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .from_start = true, .deferred = true, .nr_plants = 1,
				.plants = { { 2, SPOS_ACCEPT, SYNC_EVENT } } };
	struct built bt;

	build(&bt, &cfg);
	expect_plants(&bt, &cfg);
	for (size_t i = 0; i < bt.sy.nr; i++) {
		const struct sync_verdict *sv = &bt.sy.verdicts[i];

		if (sv->sync->kind == SYNC_EVENT && sv->sync->ts != cfg.plants[0].ts &&
		    sv->pos != SPOS_OUTSIDE)
			assert_true(sv->own);
	}
	done(&bt);
}

/* Attached after the context was made: host memory not seen pinned is unknown. */
/* Memory of unknown kind: the copy's blocked time decides whether it waited. */
static void test_host_memory_by_measurement(void **state)
{
	struct loop_cfg cfg = { .cycles = 5, .nr_plants = 2,
				.plants = { { 1, SPOS_DRAFT_VERIFY, SYNC_PAGEABLE },
					    { 3, SPOS_DRAFT_VERIFY, SYNC_UNKNOWN_HOST } } };
	const struct sync_verdict *waited, *quick;
	struct built bt;

	build(&bt, &cfg);
	waited = verdict_at(&bt, cfg.plants[0].ts);
	quick = verdict_at(&bt, cfg.plants[1].ts);
	/* 300 us behind the draft graphs: it waited, so the memory is pageable */
	assert_int_equal(waited->sync->kind, SYNC_PAGEABLE);
	assert_int_equal(waited->sync->host_from, HOST_FROM_MEASURED);
	assert_true(waited->flagged);
	/* back in 5 us with the same work in flight: no wait seen, whatever the memory */
	assert_int_equal(quick->sync->kind, SYNC_UNKNOWN_HOST);
	assert_int_equal(quick->verdict, VERDICT_NO_WAIT);
	assert_int_equal(bt.sy.flagged, 1);
	done(&bt);
}

static const struct sync_verdict *verdict_or_null(const struct built *bt, __u64 ts)
{
	for (size_t i = 0; i < bt->sy.nr; i++)
		if (bt->sy.verdicts[i].sync->ts == ts)
			return &bt->sy.verdicts[i];
	return NULL;
}

/* The maps read at attach: the driver's shared memory is pinned, later memory pageable. */
static void test_host_memory_from_maps(void **state)
{
	struct loop_cfg cfg = { .cycles = 5, .maps = true, .nr_plants = 3,
				.plants = { { 1, SPOS_DRAFT_VERIFY, SYNC_UNKNOWN_HOST, 0, DRIVER_HOST },
					    { 2, SPOS_DRAFT_VERIFY, SYNC_UNKNOWN_HOST, 0,
					      PRIVATE_HOST },
					    { 3, SPOS_DRAFT_VERIFY, SYNC_UNKNOWN_HOST, 0,
					      LATER_HOST } } };
	const struct sync_verdict *sv;
	struct built bt;

	build(&bt, &cfg);
	/* pinned: only work, no sync at all */
	assert_null(verdict_or_null(&bt, cfg.plants[0].ts));
	/* a private mapping at attach may have been registered: unknown, no wait seen */
	sv = verdict_at(&bt, cfg.plants[1].ts);
	assert_int_equal(sv->sync->kind, SYNC_UNKNOWN_HOST);
	assert_int_equal(sv->sync->host_from, HOST_FROM_MAPS);
	assert_false(sv->flagged);
	/* mapped after attach, never registered: pageable, and a D2H into it waits */
	sv = verdict_at(&bt, cfg.plants[2].ts);
	assert_int_equal(sv->sync->kind, SYNC_PAGEABLE);
	assert_int_equal(sv->sync->host_from, HOST_FROM_AFTER_ATTACH);
	assert_true(sv->flagged);
	assert_int_equal(bt.sy.flagged, 1);
	done(&bt);
}

static __u64 legacy_graph(struct call_seq *s, __u64 exec)
{
	return seq_call(s, "cuGraphLaunch", 0, 0, NULL, 2, exec, 0ull);
}

static __u64 legacy_d2d(struct call_seq *s)
{
	return seq_call(s, "cuMemcpyDtoDAsync", 3000, 0, NULL, 4, 0x8100ull, 0x8200ull, 8ull,
			0ull);
}

static __u64 legacy_d2h_sync(struct call_seq *s, __u64 wait_ns)
{
	seq_call(s, "cuMemcpyDtoHAsync", 5000, 0, NULL, 4, (__u64)PINNED_HOST, 0x8000ull, 8ull,
		 0ull);
	return seq_call(s, "cuStreamSynchronize", wait_ns, 0, NULL, 1, 0ull);
}

/*
 * The calls that could synchronise and did not are counted in groups, each key
 * once, most calls first; with the sync calls they make up every model sync.
 */
static void assert_quiet_groups(const struct syncs *sy, size_t want_calls)
{
	const struct quiet_table *q = &sy->quiet;
	size_t sum = 0;

	for (size_t i = 0; i < q->nr; i++) {
		sum += q->sites[i].count;
		assert_true(q->sites[i].count > 0);
		if (i)
			assert_true(q->sites[i - 1].count >= q->sites[i].count);
		for (size_t j = 0; j < i; j++)
			assert_false(q->sites[j].name == q->sites[i].name &&
				     q->sites[j].kind == q->sites[i].kind &&
				     q->sites[j].pos == q->sites[i].pos &&
				     q->sites[j].verdict == q->sites[i].verdict &&
				     q->sites[j].site == q->sites[i].site);
	}
	assert_int_equal(sum, want_calls);
	assert_int_equal(sum, sy->legacy_work - sy->legacy_synced - sy->legacy_unknown +
				      sy->host_unknown_quiet);
	assert_int_equal(sum + sy->sync_calls, sy->nr);
}

/*
 * PyTorch's default stream under cudagraph trees: input copies before each
 * replay, all on the legacy stream. Plain stream order: only the second sync
 * in accept (an .item()) is flagged, once a cycle. Its launches and copies are
 * legacy work that waited on nothing: counted by group, none a sync.
 */
static void test_legacy_own_stream_not_flagged(void **state)
{
	struct loop_cfg cfg = { .cycles = 0, .from_start = true };
	struct built bt;
	__u64 items[4], copies[4], launches_before, copies_before;

	build(&bt, &cfg);
	syncs__free(&bt.sy);
	cycles__free(&bt.cy);
	/* the captures before: their launches are calls too */
	launches_before = model__view(bt.s.m)->launches;
	copies_before = model__view(bt.s.m)->copies;
	for (int i = 0; i < 4; i++) {
		bt.s.now += 30000;
		copies[i] = legacy_d2d(&bt.s);
		legacy_graph(&bt.s, DRAFT_EXEC);
		legacy_d2d(&bt.s);
		legacy_graph(&bt.s, DRAFT_EXEC);
		legacy_d2d(&bt.s);
		legacy_graph(&bt.s, VERIFY_EXEC);
		seq_call(&bt.s, "cuMemsetD8Async", 0, 0, NULL, 4, 0x8300ull, 0ull, 8ull, 0ull);
		legacy_d2h_sync(&bt.s, 900000);
		kernel(&bt.s, 0xa700, 0);
		items[i] = legacy_d2h_sync(&bt.s, 20000);
		legacy_graph(&bt.s, EXTEND_EXEC);
	}
	legacy_d2h_sync(&bt.s, 10000);
	assert_int_equal(cycles__analyse(bt.s.m, &bt.cy), 0);
	assert_int_equal(syncs__analyse(bt.s.m, &bt.cy, &bt.sy), 0);
	for (int i = 1; i < 3; i++) {
		assert_true(verdict_at(&bt, items[i])->flagged);
		assert_int_equal(verdict_at(&bt, copies[i])->verdict, VERDICT_NO_WAIT);
	}
	for (size_t i = 0; i < bt.sy.nr; i++)
		if (bt.sy.verdicts[i].sync->kind == SYNC_LEGACY)
			assert_false(bt.sy.verdicts[i].flagged);
	assert_int_equal(bt.sy.flagged_sites.nr, 1);
	assert_int_equal(bt.sy.flagged_sites.sites[0].kind, SYNC_STREAM);
	/* a cycle: 4 graphs and a kernel, 3 copies on the device, a memset, 2 to the host */
	assert_int_equal(model__view(bt.s.m)->launches - launches_before, 4 * 5);
	assert_int_equal(model__view(bt.s.m)->copies - copies_before, 4 * 6 + 1);
	assert_int_equal(bt.sy.legacy_work, 4 * 11 + 1);
	assert_quiet_groups(&bt.sy, 4 * 11 + 1);
	done(&bt);
}

/*
 * Legacy work behind a side stream's kernel: flagged once, naming the side
 * stream when its flags are known; "unknown" when it was made before attach.
 */
static void side_batch(bool side_created, enum verdict want)
{
	struct loop_cfg cfg = { .cycles = 0, .from_start = true };
	const struct sync_verdict *first;
	__u64 behind[3], again[3];
	struct built bt;

	build(&bt, &cfg);
	syncs__free(&bt.sy);
	cycles__free(&bt.cy);
	if (side_created)
		seq_call(&bt.s, "cuStreamCreate", 1000, 0x5200, NULL, 2, 0x9978ull, 0ull);
	for (int i = 0; i < 3; i++) {
		bt.s.now += 30000;
		legacy_graph(&bt.s, DRAFT_EXEC);
		legacy_graph(&bt.s, DRAFT_EXEC);
		kernel(&bt.s, 0xa800, 0x5200);
		behind[i] = legacy_graph(&bt.s, VERIFY_EXEC);
		again[i] = kernel(&bt.s, 0xa700, 0);
		legacy_d2h_sync(&bt.s, 900000);
		legacy_graph(&bt.s, EXTEND_EXEC);
	}
	legacy_d2h_sync(&bt.s, 10000);
	assert_int_equal(cycles__analyse(bt.s.m, &bt.cy), 0);
	assert_int_equal(syncs__analyse(bt.s.m, &bt.cy, &bt.sy), 0);
	first = verdict_at(&bt, behind[1]);
	assert_int_equal(first->verdict, want);
	assert_int_equal(first->sync->waited_on, 0x5200);
	assert_int_equal(first->sync->waited.kernels, 1);
	assert_int_equal(verdict_at(&bt, again[1])->verdict, VERDICT_NO_WAIT);
	done(&bt);
}

static void test_legacy_behind_side_stream(void **state)
{
	side_batch(true, VERDICT_FLAGGED);
	side_batch(false, VERDICT_UNKNOWN);
}

/*
 * A sync back faster than the probes' work between its timestamps (its return probe,
 * and its call site where the entry took one) did not wait for what seemed in flight.
 */
static void test_no_wait_faster_than_a_probe_hit(void **state)
{
	struct loop_cfg cfg = { .cycles = 5, .from_start = true, .calibrated = true,
				.nr_plants = 4,
				.plants = { { 1, SPOS_DRAFT_VERIFY, SYNC_STREAM, 0, 0, 300 },
					    { 2, SPOS_DRAFT_VERIFY, SYNC_STREAM, 0, 0, 800, true },
					    { 3, SPOS_DRAFT_VERIFY, SYNC_STREAM, 0, 0, 800 },
					    { 4, SPOS_DRAFT_VERIFY, SYNC_STREAM } } };
	struct built bt;

	build(&bt, &cfg);
	assert_int_equal(bt.sy.trap_ns, 500);
	assert_int_equal(bt.sy.site_ns, 400);
	assert_int_equal(verdict_at(&bt, cfg.plants[0].ts)->verdict, VERDICT_NO_WAIT);
	assert_int_equal(verdict_at(&bt, cfg.plants[1].ts)->verdict, VERDICT_NO_WAIT);
	assert_true(verdict_at(&bt, cfg.plants[2].ts)->flagged);
	assert_true(verdict_at(&bt, cfg.plants[3].ts)->flagged);
	assert_int_equal(bt.sy.flagged, 2);
	done(&bt);
}

static void test_starvation_bounds(void **state)
{
	struct call_seq *s;
	struct built bt;
	struct loop_cfg cfg = { .cycles = 0, .from_start = true };
	__u64 ctx, lone, busy, next;
	const struct sync_verdict *sv;

	build(&bt, &cfg);
	syncs__free(&bt.sy);
	cycles__free(&bt.cy);
	s = &bt.s;
	graph_launch(s, VERIFY_EXEC);
	ctx = seq_call(s, "cuCtxSynchronize", 50000, 0, NULL, 0);
	s->now += 70000;
	graph_launch(s, VERIFY_EXEC);
	lone = stream_sync(s, 50000);
	next = kernel(s, 0xaa00, SIDE_STREAM);
	busy = stream_sync(s, 50000);
	graph_launch(s, VERIFY_EXEC);
	assert_int_equal(cycles__analyse(s->m, &bt.cy), 0);
	assert_int_equal(syncs__analyse(s->m, &bt.cy, &bt.sy), 0);
	sv = verdict_at(&bt, ctx);
	assert_true(sv->has_bound);
	assert_int_equal(sv->bound_ns, 70000 + GAP_NS);
	sv = verdict_at(&bt, lone);
	assert_true(sv->has_bound);
	assert_int_equal(sv->bound_ns, next - (lone + 50000));
	/* the side stream's kernel is still in flight after the main stream's sync */
	sv = verdict_at(&bt, busy);
	assert_false(sv->has_bound);
	assert_int_equal(sv->sync->other.kernels, 1);
	done(&bt);
}

/* Queries given up before one is ready are no spin; a ready one with nothing queued is clean. */
static void test_poll_runs(void **state)
{
	struct loop_cfg cfg = { .cycles = 0, .from_start = true };
	struct built bt;
	struct call_seq *s;
	__u64 spin;

	build(&bt, &cfg);
	syncs__free(&bt.sy);
	cycles__free(&bt.cy);
	s = &bt.s;
	graph_launch(s, VERIFY_EXEC);
	s->next_result = NOT_READY;
	seq_call(s, "cuEventQuery", 500, 0, NULL, 1, 0xe123ull);
	graph_launch(s, VERIFY_EXEC);
	spin = query_spin(s, "cuStreamQuery", MAIN_STREAM, 2);
	assert_int_equal(syncs__analyse(s->m, &bt.cy, &bt.sy), 0);
	assert_int_equal(verdict_at(&bt, spin)->sync->kind, SYNC_POLL);
	assert_int_equal(verdict_at(&bt, spin)->sync->queries, 3);
	assert_int_equal(verdict_at(&bt, spin)->sync->waited.graphs, 2);
	for (size_t i = 0; i < bt.sy.nr; i++)
		assert_int_not_equal(bt.sy.verdicts[i].sync->name, catalog__find("cuEventQuery") -
									  catalog);
	done(&bt);
}

static void test_self_overhead(void **state)
{
	struct sp_calib_rec calib = { .type = SP_REC_CALIB, .size = sizeof(calib), .calls = 1000,
				      .entry_ps = 1500000, .return_ps = 2500000,
				      .stack_ps = 700000 };
	struct sp_cpu_rec cpu = { .type = SP_REC_CPU, .size = sizeof(cpu), .tgid = 100 };
	struct loop_cfg cfg = { .cycles = 3, .from_start = true };
	const struct model_proc *p;
	struct overhead o;
	struct built bt;

	build(&bt, &cfg);
	p = model__view(bt.s.m)->procs[0];
	assert_int_equal(syncs__overhead(model__view(bt.s.m), p, &o), -ENODATA);
	/* an older recording's record has no stack_ps */
	model__record(bt.s.m, &calib, SP_CALIB_REC_V1);
	assert_int_equal(model__view(bt.s.m)->calib.entry_ps, 1500000);
	assert_int_equal(model__view(bt.s.m)->calib.stack_ps, 0);
	model__record(bt.s.m, &calib, sizeof(calib));
	for (int i = 0; i < 3; i++) {
		bt.s.stack_next = true;
		seq_call(&bt.s, i ? "cuStreamSynchronize" : "cuLaunchKernel", 1000, 0, NULL, 0);
	}
	cpu.ts = 1000000000;
	cpu.cpu_ns = 5000000;
	model__record(bt.s.m, &cpu, sizeof(cpu));
	cpu.ts = 2000000000;
	cpu.cpu_ns = 105000000;
	model__record(bt.s.m, &cpu, sizeof(cpu));
	model__finish(bt.s.m, &(struct decode_stats){ 0 });
	assert_int_equal(syncs__overhead(model__view(bt.s.m), p, &o), 0);
	assert_int_equal(o.hits_entry + o.hits_return, p->calls);
	assert_true(o.hits_entry && o.hits_return);
	assert_int_equal(o.hits_stack, 3);
	assert_true(o.added_ns == (o.hits_entry * 1500.0 + o.hits_return * 4000.0 + 3 * 700.0));
	assert_true(o.has_cpu);
	assert_true(o.cpu_ms_per_s > 99.99 && o.cpu_ms_per_s < 100.01);
	assert_true(o.percent > 0 && o.percent == 100 * o.ms_per_s / o.cpu_ms_per_s);
	done(&bt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_at_its_position),
		cmocka_unit_test(test_legacy_serialises_with_blocking_streams),
		cmocka_unit_test(test_accept_and_clean_syncs_not_flagged),
		cmocka_unit_test(test_deferred_accept_is_the_cycles_own),
		cmocka_unit_test(test_host_memory_by_measurement),
		cmocka_unit_test(test_host_memory_from_maps),
		cmocka_unit_test(test_legacy_own_stream_not_flagged),
		cmocka_unit_test(test_legacy_behind_side_stream),
		cmocka_unit_test(test_no_wait_faster_than_a_probe_hit),
		cmocka_unit_test(test_starvation_bounds),
		cmocka_unit_test(test_poll_runs),
		cmocka_unit_test(test_self_overhead),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
