// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Cycles and phases from synthetic decode loops: each builder notes the exact
 * boundary times as it makes the calls, the analysis must give the same.
 */
#include <errno.h>
#include "call_seq.h"
#include "cycles.h"
#include "results.h"
#include "syncs.h"
#include "wholerun.h"

#define MAX_CYCLES 32
#define MAX_PIECES 3
#define MAX_STEPS 6
#define DRAFT_FUNC 0xa500
#define EXTEND_FUNC 0xa600
#define ATTN_FUNC 0xa700
#define ACCEPT_FUNC 0xa800
#define FEED_FUNC 0xa900	/* an eager copy into a graph's static inputs */
#define VERIFY_FUNC 0xa100	/* + piece */
#define EVENT 0xe000		/* + cycle % 2 */

enum accept_mode { ACCEPT_SYNC, ACCEPT_EVENT, ACCEPT_DEFERRED };

struct loop_cfg {
	int cycles;
	int steps;		/* draft graph launches per cycle (per-step: distinct graphs) */
	bool one_graph;		/* one draft graph holding every step */
	int eager_draft;	/* >0: the draft is this many eager launches, no graph */
	int pieces;		/* verify graph launches per forward (piecewise), default 1 */
	int eager_verify;	/* >0: verify is an eager forward of this many layers, no graph */
	enum accept_mode accept;
	int extra_every;	/* an extra draft launch in cycles where i % extra_every == 1 */
	int plant_every;	/* a stream sync between draft and verify when i % n == n - 1 */
	bool two_batches;	/* graphs of two batch sizes, alternating per cycle */
	bool uncaptured;	/* graphs were captured before attach */
	bool skip_first_draft;	/* attach after the first draft launch */
	bool cut_last_accept;	/* the recording ends inside the last accept sync */
	int warmup;		/* verify replays, each followed by a sync, before the loop */
	bool plant_accept;	/* syncs between the accept copy and the accept sync */
	bool plant_ctx;		/* the plant_every sync is a context sync */
	bool no_extend;		/* no extend graph: the next draft follows the accept */
	bool feed;		/* a FEED_FUNC kernel before every draft and verify launch */
	bool upload;		/* the draft begins with a scalar uploaded and waited for */
	bool sync_before_loop;	/* a context sync, then the loop well after the mark */
	bool no_final_sync;	/* the recording ends with the loop's last launch or sync */
	bool no_last_deferred;	/* deferred: it ends before the last cycle's record is synced */
	__u64 late_start_ns;	/* run-queue wait from the mark to the thread's first record */
};

/* What the builder saw: the contract's boundary times per cycle. */
struct expect {
	__u64 d, v, ve, a, e, x, end;
	__u64 plant;		/* entry of the sync planted between draft and verify, 0 */
	int launches[PHASE_NR];
};

struct built {
	struct call_seq s;
	struct expect want[MAX_CYCLES];
	int n;
	struct cycles cy;
	struct sp_runq_rec runq[2];	/* the thread's wait at the mark and at its first hit */
	int nr_runq;
	struct sp_exit_rec exit;	/* the process exits after its loop: the loop's end is seen */
};

static __u64 verify_exec(int b, int p)
{
	return 0xb000 + b * 0x100 + p;
}

static __u64 draft_exec(int b, int j)
{
	return 0xd000 + b * 0x100 + j;
}

static __u64 extend_exec(int b)
{
	return 0xf000 + b * 0x100;
}

static void capture_all(struct call_seq *s, const struct loop_cfg *cfg)
{
	int pieces = cfg->pieces ? cfg->pieces : 1;

	seq_call(s, "cuCtxSynchronize", 1000, 0, NULL, 0);
	for (int b = 0; b < 2; b++)
		for (int p = 0; p < pieces; p++)
			/* a forward of 9 kernels, in pieces: fewer than one draft graph */
			capture_graph(s, 0x9000 + verify_exec(b, p), verify_exec(b, p),
				      VERIFY_FUNC + p, 9 / pieces);
	for (int b = 0; b < 2; b++) {
		if (cfg->one_graph)
			capture_graph(s, 0x9000 + draft_exec(b, 0), draft_exec(b, 0), DRAFT_FUNC,
				      4 * cfg->steps);
		for (int j = 0; !cfg->one_graph && j < cfg->steps; j++)
			capture_graph(s, 0x9000 + draft_exec(b, j), draft_exec(b, j), DRAFT_FUNC,
				      4);
	}
	for (int b = 0; b < 2; b++)
		capture_graph(s, 0x9000 + extend_exec(b), extend_exec(b), EXTEND_FUNC, 4);
	seq_call(s, "cuCtxSynchronize", 1000, 0, NULL, 0);
}

/* cudagraph trees copy inputs in eagerly before each replay: part of the draft phase */
static void feed(struct built *bt, const struct loop_cfg *cfg, int i)
{
	__u64 ts;

	if (!cfg->feed)
		return;
	ts = kernel(&bt->s, FEED_FUNC, MAIN_STREAM);
	bt->want[i].d = bt->want[i].d ? bt->want[i].d : ts;
	bt->want[i].launches[PHASE_DRAFT]++;
}

static void draft_phase(struct built *bt, const struct loop_cfg *cfg, int i, int b)
{
	struct call_seq *s = &bt->s;
	struct expect *w = &bt->want[i];
	int graphs = cfg->one_graph ? 1 : cfg->steps;

	if (cfg->extra_every && i % cfg->extra_every == 1)
		graphs++;
	/* the draft's setup: its Python, then the upload, are the draft's */
	if (cfg->upload)
		w->d = upload_scalar(s);
	for (int j = 0; cfg->eager_draft && j < cfg->eager_draft; j++) {
		__u64 ts = kernel(s, DRAFT_FUNC, MAIN_STREAM);

		w->d = j ? w->d : ts;
		w->launches[PHASE_DRAFT]++;
	}
	for (int j = 0; !cfg->eager_draft && j < graphs; j++) {
		int step = j < cfg->steps ? j : cfg->steps - 1;
		__u64 ts;

		if (i == 0 && j == 0 && cfg->skip_first_draft) {
			/* made before the probes were in place: not in the recording */
			s->now += GAP_NS;
			continue;
		}
		feed(bt, cfg, i);
		ts = graph_launch(s, draft_exec(b, cfg->one_graph ? 0 : step));
		w->d = w->d ? w->d : ts;
		w->launches[PHASE_DRAFT]++;
	}
	if (cfg->plant_every && i % cfg->plant_every == cfg->plant_every - 1) {
		if (cfg->plant_ctx)
			w->plant = seq_call(s, "cuCtxSynchronize", 50000, 0, NULL, 0);
		else
			w->plant = stream_sync(s, 50000);
	}
}

static void verify_phase(struct built *bt, const struct loop_cfg *cfg, int i, int b)
{
	struct expect *w = &bt->want[i];
	int pieces = cfg->pieces ? cfg->pieces : 1;

	if (cfg->eager_verify) {
		/* per layer attention and MLP, then the LM head */
		for (int l = 0; l < cfg->eager_verify; l++) {
			__u64 ts = kernel(&bt->s, ATTN_FUNC, MAIN_STREAM);

			w->v = l ? w->v : ts;
			kernel(&bt->s, VERIFY_FUNC, MAIN_STREAM);
		}
		w->ve = kernel(&bt->s, VERIFY_FUNC + 1, MAIN_STREAM);
		w->launches[PHASE_VERIFY] = 2 * cfg->eager_verify + 1;
		return;
	}
	feed(bt, cfg, i);
	for (int p = 0; p < pieces; p++) {
		__u64 ts = graph_launch(&bt->s, verify_exec(b, p));

		w->v = p ? w->v : ts;
		w->ve = ts;
		w->launches[PHASE_VERIFY]++;
		/* piecewise: attention runs eagerly between the pieces */
		if (p + 1 < pieces) {
			kernel(&bt->s, ATTN_FUNC, MAIN_STREAM);
			w->launches[PHASE_VERIFY]++;
		}
	}
}

static void accept_phase(struct built *bt, const struct loop_cfg *cfg, int i)
{
	struct call_seq *s = &bt->s;
	struct expect *w = &bt->want[i];
	bool last = i + 1 == cfg->cycles;

	/* after an eager verify they would run on in its burst */
	for (int k = 0; k < 3 && !cfg->eager_verify; k++)
		kernel(s, ACCEPT_FUNC, MAIN_STREAM);
	w->launches[PHASE_ACCEPT] = cfg->eager_verify ? 0 : 3;
	copy_d2h(s);
	if (cfg->plant_accept) {
		/* these already wait for the copy; the loop's own sync still follows */
		stream_sync(s, 400000);
		event_record(s, 0xe900, MAIN_STREAM);
		event_sync(s, 0xe900, 1000);
		w->e = s->now - GAP_NS;
	}
	if (cfg->accept != ACCEPT_SYNC)
		event_record(s, EVENT + i % 2, MAIN_STREAM);
	if (last && cfg->cut_last_accept)
		s->cut_next = true;
	if (cfg->accept == ACCEPT_SYNC) {
		stream_sync(s, 2000000);
		w->a = w->e = s->now - GAP_NS;
	} else if (cfg->accept == ACCEPT_EVENT) {
		event_sync(s, EVENT + i % 2, 2000000);
		w->a = w->e = s->now - GAP_NS;
	} else if (i > 0) {
		/* deferred: the previous cycle's result arrives now */
		event_sync(s, EVENT + (i - 1) % 2, 1500000);
		bt->want[i - 1].a = w->e = s->now - GAP_NS;
	}
}

static void extend_phase(struct built *bt, const struct loop_cfg *cfg, int i, int b)
{
	struct expect *w = &bt->want[i];

	if (cfg->no_extend)
		return;
	w->x = graph_launch(&bt->s, extend_exec(b));
	w->e = w->e ? w->e : w->x;
	w->launches[PHASE_EXTEND] = 1;
}

/*
 * With no extend, extend spans are empty at the next draft's start. The last
 * cycle ends at its accept: the last sync that waits for the result's copy,
 * which is the final sync after the loop when there is one.
 */
static void no_extend_ends(struct built *bt, const struct loop_cfg *cfg)
{
	struct expect *last = &bt->want[cfg->cycles - 1];

	if (!cfg->no_final_sync)
		last->a = bt->s.now - GAP_NS;
	last->end = last->a;
	for (int i = 0; i < cfg->cycles; i++)
		bt->want[i].e = bt->want[i].end;
}

static void build(struct built *bt, const struct loop_cfg *cfg)
{
	struct call_seq *s = &bt->s;

	memset(bt, 0, sizeof(*bt));
	/*
	 * Attached after capture: every call from the mark on is recorded. With
	 * skip_first_draft the mark falls between the first two draft launches.
	 */
	seq_init(s, !cfg->uncaptured ? 0 : cfg->skip_first_draft ? 1030500 : 1000000);
	bt->n = cfg->cycles;
	if (cfg->late_start_ns) {
		for (int i = 0; i < 2; i++) {
			bt->runq[i] = (struct sp_runq_rec){
				.type = SP_REC_RUNQ, .size = sizeof(bt->runq[i]), .tgid = s->tgid,
				.tid = s->tid, .when = i ? SP_RUNQ_FIRST_HIT : SP_RUNQ_MARK,
				.ts = s->hdr.attach_done_ns, .run_delay_ns = 7000 + i * cfg->late_start_ns };
			model__record(s->m, &bt->runq[i], sizeof(bt->runq[i]));
		}
		bt->nr_runq = 2;
	}
	if (!cfg->uncaptured)
		capture_all(s, cfg);
	if (cfg->sync_before_loop) {
		/* torch.cuda.synchronize(), then the loop, later than any cycle lasts */
		seq_call(s, "cuCtxSynchronize", 1000, 0, NULL, 0);
		s->now += 10000000;
	}
	for (int w = 0; w < cfg->warmup; w++) {
		graph_launch(s, verify_exec(w % 2, 0));
		stream_sync(s, 3000000);
	}
	for (int i = 0; i < cfg->cycles; i++) {
		int b = cfg->two_batches ? i % 2 : 0;

		s->now += 30000;	/* host preparation */
		draft_phase(bt, cfg, i, b);
		verify_phase(bt, cfg, i, b);
		accept_phase(bt, cfg, i);
		extend_phase(bt, cfg, i, b);
	}
	for (int i = 0; i + 1 < cfg->cycles; i++)
		bt->want[i].end = bt->want[i + 1].d;
	bt->want[cfg->cycles - 1].end = bt->want[cfg->cycles - 1].x;
	if (cfg->accept == ACCEPT_DEFERRED && !cfg->no_last_deferred) {
		event_sync(s, EVENT + (cfg->cycles - 1) % 2, 1000000);
		bt->want[cfg->cycles - 1].a = s->now - GAP_NS;
	}
	if (!cfg->no_final_sync)
		stream_sync(s, 10000);
	if (cfg->no_extend)
		no_extend_ends(bt, cfg);
	bt->exit = (struct sp_exit_rec){ .type = SP_REC_EXIT, .size = sizeof(bt->exit),
					 .tgid = s->tgid, .ts = s->now };
	model__record(s->m, &bt->exit, sizeof(bt->exit));
}

static void expect_cycle_equal(const struct cycle *a, const struct cycle *b)
{
	assert_int_equal(a->index, b->index);
	assert_int_equal(a->start_ns, b->start_ns);
	assert_int_equal(a->end_ns, b->end_ns);
	assert_memory_equal(a->phase, b->phase, sizeof(a->phase));
	assert_int_equal(a->blocked_ns, b->blocked_ns);
	assert_int_equal(a->launches, b->launches);
	assert_int_equal(a->syncs, b->syncs);
	assert_int_equal(a->accept_wait_ns, b->accept_wait_ns);
	assert_int_equal(a->has_accept_sync, b->has_accept_sync);
	assert_int_equal(a->has_accept_sync ? a->accept_call : 0,
			 b->has_accept_sync ? b->accept_call : 0);
	assert_int_equal(a->accept_deferred, b->accept_deferred);
	assert_int_equal(a->draft_joined, b->draft_joined);
	assert_int_equal(a->followed, b->followed);
	assert_int_equal(a->extend_joined, b->extend_joined);
	assert_int_equal(a->verify_pieces, b->verify_pieces);
}

/* A windowed run's cycles and verdicts, one at a time, against the whole run's. */
struct agree {
	const struct loop *whole;
	const struct syncs *syncs;
	size_t n;
};

static int agree_cycle(void *ctx, const struct cycle *c)
{
	struct agree *a = ctx;

	assert_true(a->n < a->whole->nr_cycles);
	expect_cycle_equal(c, &a->whole->cycles[a->n++]);
	return 0;
}

static int agree_sync(void *ctx, const struct sync_verdict *sv)
{
	struct agree *a = ctx;
	const struct sync_verdict *w;

	/* a whole run's store keeps syncs, not the calls that could have been */
	while (a->n < a->syncs->nr && !a->syncs->verdicts[a->n].is_sync)
		a->n++;
	assert_true(a->n < a->syncs->nr);
	w = &a->syncs->verdicts[a->n++];
	assert_true(sv->is_sync);
	assert_int_equal(sv->sync->ts, w->sync->ts);
	assert_int_equal(sv->pos, w->pos);
	assert_int_equal(sv->cycle, w->cycle);
	assert_int_equal(sv->verdict, w->verdict);
	assert_int_equal(sv->own, w->own);
	assert_int_equal(sv->blocked_ns, w->blocked_ns);
	assert_int_equal(sv->has_bound, w->has_bound);
	assert_int_equal(sv->bound_ns, w->bound_ns);
	assert_int_equal(sv->has_flow, w->has_flow);
	if (sv->has_flow)
		assert_int_equal(sv->flow_ts, w->flow_ts);
	return 0;
}

/* The last pass's results against the whole run's loops, roles and verdicts. */
static void expect_same_results(struct built *bt, const struct results *res)
{
	const struct model_view *v = model__view(res->model), *wv = model__view(bt->s.m);
	struct syncs sy;

	assert_int_equal(res->cycles.nr_loops, bt->cy.nr_loops);
	for (size_t l = 0; l < bt->cy.nr_loops; l++) {
		const struct loop *a = &res->cycles.loops[l], *b = &bt->cy.loops[l];
		struct agree ag = { .whole = b };

		assert_int_equal(a->tid, b->tid);
		assert_int_equal(a->verify_exec, b->verify_exec);
		assert_int_equal(a->verify_from, b->verify_from);
		assert_int_equal(a->lead_from, b->lead_from);
		assert_int_equal(a->lead_extends, b->lead_extends);
		assert_int_equal(a->iterations, b->iterations);
		assert_int_equal(a->skipped_start, b->skipped_start);
		assert_int_equal(a->skipped_end, b->skipped_end);
		assert_int_equal(a->skipped_no_draft, b->skipped_no_draft);
		assert_int_equal(a->nr_cycles, b->nr_cycles);
		assert_int_equal(loop__each_cycle(a, agree_cycle, &ag), 0);
	}
	assert_int_equal(v->nr_execs, wv->nr_execs);
	for (size_t id = 0; id < v->nr_execs; id++) {
		assert_int_equal(v->execs[id]->role, wv->execs[id]->role);
		assert_int_equal(v->execs[id]->role_from, wv->execs[id]->role_from);
	}
	assert_int_equal(syncs__analyse(bt->s.m, &bt->cy, &sy), 0);
	assert_int_equal(res->syncs.nr, sy.nr);
	assert_int_equal(res->syncs.flagged, sy.flagged);
	assert_int_equal(syncs__each(&res->syncs, v, agree_sync, &(struct agree){ .syncs = &sy }),
			 0);
	syncs__free(&sy);
}

/*
 * The same calls read as a whole run in windows (wholerun.h), a window step
 * after every `every` calls: the same loops, cycles, roles and verdicts.
 */
static void expect_windows_agree(struct built *bt, size_t every)
{
	const struct settle_sink none = { 0 };
	struct wholerun *w = wholerun__new();
	int passes = 0;

	assert_non_null(w);
	for (;;) {
		struct model *m = model__new(&bt->s.hdr);
		bool last = wholerun__last_pass(w);
		struct results res = { 0 };
		int ret = 0;

		assert_non_null(m);
		assert_true(++passes <= 6);
		wholerun__begin(w);
		for (int i = 0; i < bt->nr_runq; i++)
			model__record(m, &bt->runq[i], sizeof(bt->runq[i]));
		for (size_t i = 0; i < bt->s.nr_calls && !ret; i++) {
			ret = model__call(m, &bt->s.calls[i]);
			if (!ret && (i + 1) % every == 0)
				ret = wholerun__step(w, m, bt->s.calls[i].entry.ts, false, &res, &none);
		}
		if (!ret) {
			model__record(m, &bt->exit, sizeof(bt->exit));
			ret = wholerun__step(w, m, bt->s.now, true, &res, &none);
		}
		if (ret != -EAGAIN)
			assert_int_equal(ret, 0);
		if (!ret && last)
			expect_same_results(bt, &res);
		results__free(&res);
		model__free(m);
		if (!ret && last)
			break;
	}
	wholerun__free(w);
}

static void run(struct built *bt, const struct loop_cfg *cfg)
{
	build(bt, cfg);
	assert_int_equal(cycles__analyse(bt->s.m, &bt->cy), 0);
	expect_windows_agree(bt, 3);
	expect_windows_agree(bt, 17);
	expect_windows_agree(bt, 1000000);
}

static void done(struct built *bt)
{
	cycles__free(&bt->cy);
	seq_free(&bt->s);
}

static void expect_cycle(const struct cycle *c, const struct expect *w)
{
	assert_int_equal(c->start_ns, w->d);
	assert_int_equal(c->end_ns, w->end);
	assert_int_equal(c->phase[PHASE_DRAFT].start_ns, w->d);
	assert_int_equal(c->phase[PHASE_DRAFT].end_ns, w->v);
	assert_int_equal(c->phase[PHASE_VERIFY].start_ns, w->v);
	assert_int_equal(c->phase[PHASE_VERIFY].end_ns, w->ve);
	assert_int_equal(c->phase[PHASE_ACCEPT].start_ns, w->ve);
	assert_int_equal(c->phase[PHASE_ACCEPT].end_ns, w->a);
	assert_int_equal(c->phase[PHASE_EXTEND].start_ns, w->e);
	assert_int_equal(c->phase[PHASE_EXTEND].end_ns, w->end);
	for (int p = 0; p < PHASE_OTHER; p++)
		assert_int_equal(c->phase[p].launches, w->launches[p]);
}

/* Every cycle from first on equals the builder's notes; count exactly n - first. */
static void expect_cycles(struct built *bt, int first, int missing_at_end)
{
	const struct loop *lp;

	assert_int_equal(bt->cy.nr_loops, 1);
	lp = &bt->cy.loops[0];
	assert_int_equal(lp->nr_cycles, bt->n - first - missing_at_end);
	assert_int_equal(lp->skipped_start, first);
	assert_int_equal(lp->skipped_end, missing_at_end);
	for (size_t i = 0; i < lp->nr_cycles; i++)
		expect_cycle(&lp->cycles[i], &bt->want[first + i]);
}

static enum graph_role role(struct built *bt, __u64 exec)
{
	struct model_exec *x = find_exec(&bt->s, exec);

	assert_non_null(x);
	return x->role;
}

static void test_per_step(void **state)
{
	struct loop_cfg cfg = { .cycles = 8, .steps = 3 };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	assert_int_equal(role(&bt, verify_exec(0, 0)), ROLE_VERIFY);
	assert_int_equal(role(&bt, verify_exec(1, 0)), ROLE_VERIFY);
	assert_int_equal(find_exec(&bt.s, verify_exec(1, 0))->role_from, ROLE_FROM_FAMILY);
	for (int j = 0; j < 3; j++)
		assert_int_equal(role(&bt, draft_exec(0, j)), ROLE_DRAFT);
	assert_int_equal(role(&bt, draft_exec(1, 2)), ROLE_DRAFT);
	assert_int_equal(role(&bt, extend_exec(0)), ROLE_EXTEND);
	assert_int_equal(role(&bt, extend_exec(1)), ROLE_EXTEND);
	assert_true(bt.cy.loops[0].cycles[0].draft_joined);
	assert_true(bt.cy.loops[0].cycles[0].extend_joined);
	assert_false(bt.cy.loops[0].cycles[7].followed);
	assert_false(bt.cy.loops[0].cycles[7].extend_joined);
	assert_int_equal(bt.cy.loops[0].cycles[3].phase[PHASE_ACCEPT].syncs, 1);
	assert_int_equal(bt.cy.loops[0].cycles[3].phase[PHASE_ACCEPT].blocked_ns, 2000000);
	done(&bt);
}

/* One draft graph of 12 kernels: more than verify's 9, yet verify hands the result over. */
static void test_one_graph_event(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .steps = 3, .one_graph = true,
				.accept = ACCEPT_EVENT };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	assert_int_equal(role(&bt, verify_exec(0, 0)), ROLE_VERIFY);
	assert_int_equal(role(&bt, draft_exec(0, 0)), ROLE_DRAFT);
	assert_int_equal(role(&bt, draft_exec(1, 0)), ROLE_DRAFT);
	assert_int_equal(role(&bt, extend_exec(0)), ROLE_EXTEND);
	done(&bt);
}

static void test_eager_draft(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .steps = 3, .eager_draft = 8 };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	assert_int_equal(role(&bt, extend_exec(0)), ROLE_EXTEND);
	done(&bt);
}

static void test_deferred(void **state)
{
	struct loop_cfg cfg = { .cycles = 7, .steps = 3, .accept = ACCEPT_DEFERRED };
	struct built bt;
	const struct loop *lp;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	lp = &bt.cy.loops[0];
	/* the first cycle has no sync of its own before extend: extend starts at its launch */
	assert_int_equal(lp->cycles[0].phase[PHASE_EXTEND].start_ns, bt.want[0].x);
	for (size_t i = 0; i < lp->nr_cycles; i++) {
		assert_true(lp->cycles[i].accept_deferred);
		assert_true(lp->cycles[i].phase[PHASE_ACCEPT].end_ns > lp->cycles[i].end_ns);
		/* the sync it made is the previous cycle's; its own counts once, in accept */
		assert_int_equal(lp->cycles[i].phase[PHASE_ACCEPT].syncs, 1);
	}
	done(&bt);
}

/*
 * The recording ends after the last cycle's extend: that cycle's own sync would
 * come later. The sync in its accept is the cycle before's, so its accept is
 * cut off and it is not counted; the one before keeps that sync.
 */
static void test_deferred_cut_before_last_sync(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .steps = 3, .accept = ACCEPT_DEFERRED,
				.no_final_sync = true, .no_last_deferred = true };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 1);
	assert_true(bt.cy.loops[0].cycles[4].accept_deferred);
	done(&bt);
}

static void test_piecewise_verify(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .steps = 3, .pieces = 3 };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	for (int p = 0; p < 3; p++)
		assert_int_equal(role(&bt, verify_exec(0, p)), ROLE_VERIFY);
	assert_int_equal(role(&bt, draft_exec(0, 2)), ROLE_DRAFT);
	assert_true(bt.cy.loops[0].cycles[2].verify_pieces);
	done(&bt);
}

static void test_extra_draft_launch(void **state)
{
	struct loop_cfg cfg = { .cycles = 8, .steps = 3, .extra_every = 2 };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	assert_int_equal(bt.cy.loops[0].cycles[1].phase[PHASE_DRAFT].launches, 4);
	assert_int_equal(bt.cy.loops[0].cycles[2].phase[PHASE_DRAFT].launches, 3);
	done(&bt);
}

static void test_batch_sizes_alternate(void **state)
{
	struct loop_cfg cfg = { .cycles = 8, .steps = 2, .two_batches = true };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	assert_int_equal(find_exec(&bt.s, verify_exec(1, 0))->role_from, ROLE_FROM_FAMILY);
	assert_int_equal(role(&bt, draft_exec(1, 1)), ROLE_DRAFT);
	assert_int_equal(role(&bt, extend_exec(1)), ROLE_EXTEND);
	done(&bt);
}

static void test_planted_sync(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .steps = 3, .plant_every = 3 };
	struct built bt;
	const struct loop *lp;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	lp = &bt.cy.loops[0];
	assert_false(lp->cycles[2].draft_joined);
	assert_int_equal(lp->cycles[2].phase[PHASE_DRAFT].syncs, 1);
	assert_true(lp->cycles[3].draft_joined);
	done(&bt);
}

/* Attached while the loop ran, after the first draft launch: graphs by behaviour. */
static void test_mid_run_attach(void **state)
{
	struct loop_cfg cfg = { .cycles = 8, .steps = 3, .uncaptured = true,
				.skip_first_draft = true };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 1, 0);
	assert_int_equal(role(&bt, verify_exec(0, 0)), ROLE_VERIFY);
	assert_int_equal(find_exec(&bt.s, verify_exec(0, 0))->role_from, ROLE_FROM_WAIT);
	assert_null(find_exec(&bt.s, verify_exec(0, 0))->capture);
	assert_int_equal(role(&bt, draft_exec(0, 0)), ROLE_DRAFT);
	assert_int_equal(role(&bt, extend_exec(0)), ROLE_EXTEND);
	done(&bt);
}

/*
 * Graph draft steps, an eager verify: captured, it is larger than every graph;
 * attached after capture, its layers tell it from the accept's kernels.
 */
static void test_eager_verify_beside_graphs(void **state)
{
	for (int uncaptured = 0; uncaptured < 2; uncaptured++) {
		struct loop_cfg cfg = { .cycles = 8, .steps = 3, .eager_verify = 4,
					.uncaptured = uncaptured };
		struct built bt;

		run(&bt, &cfg);
		expect_cycles(&bt, 0, 0);
		assert_int_equal(bt.cy.loops[0].verify_from, ROLE_FROM_EAGER_GRAPHS);
		assert_int_equal(role(&bt, draft_exec(0, 2)), ROLE_DRAFT);
		assert_int_equal(role(&bt, extend_exec(0)), ROLE_EXTEND);
		done(&bt);
	}
}

static void test_mid_run_deferred_two_batches(void **state)
{
	struct loop_cfg cfg = { .cycles = 10, .steps = 2, .uncaptured = true,
				.accept = ACCEPT_DEFERRED, .two_batches = true };
	struct built bt;

	run(&bt, &cfg);
	/* the first call seen is a draft launch long after the mark: its cycle is whole */
	expect_cycles(&bt, 0, 0);
	assert_int_equal(role(&bt, verify_exec(1, 0)), ROLE_VERIFY);
	done(&bt);
}

/*
 * The same, but the thread waited for a CPU from the mark to that launch: it
 * may have been in the middle of its draft all along, so the cycle is not counted.
 */
static void test_mid_run_late_start(void **state)
{
	struct loop_cfg cfg = { .cycles = 10, .steps = 2, .uncaptured = true,
				.accept = ACCEPT_DEFERRED, .two_batches = true,
				.late_start_ns = 30000 };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 1, 0);
	assert_int_equal(model__view(bt.s.m)->threads[0]->late_start_ns, 30000);
	done(&bt);
}

static void test_cut_inside_last_accept(void **state)
{
	struct loop_cfg cfg = { .cycles = 5, .steps = 3, .cut_last_accept = true };
	struct built bt;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 1);
	/* the last one counted still has an iteration after it */
	assert_true(bt.cy.loops[0].cycles[3].followed);
	assert_true(bt.cy.loops[0].cycles[3].extend_joined);
	done(&bt);
}

static void test_syncs_before_the_accept_sync(void **state)
{
	struct loop_cfg sync = { .cycles = 5, .steps = 3, .plant_accept = true };
	struct loop_cfg deferred = { .cycles = 5, .steps = 3, .plant_accept = true,
				     .accept = ACCEPT_DEFERRED };
	struct built bt;

	run(&bt, &sync);
	expect_cycles(&bt, 0, 0);
	assert_int_equal(bt.cy.loops[0].cycles[1].phase[PHASE_ACCEPT].syncs, 3);
	done(&bt);
	run(&bt, &deferred);
	expect_cycles(&bt, 0, 0);
	assert_true(bt.cy.loops[0].cycles[1].accept_deferred);
	done(&bt);
}

static void test_warmup_replays_are_not_cycles(void **state)
{
	struct loop_cfg cfg = { .cycles = 6, .steps = 3, .warmup = 2 };
	struct built bt;
	const struct loop *lp;

	run(&bt, &cfg);
	lp = &bt.cy.loops[0];
	assert_int_equal(lp->nr_cycles, cfg.cycles);
	for (size_t i = 0; i < lp->nr_cycles; i++)
		expect_cycle(&lp->cycles[i], &bt.want[i]);
	/* the first replay could have had a draft before the recording began */
	assert_int_equal(lp->skipped_start, 1);
	assert_int_equal(lp->skipped_no_draft, 1);
	assert_int_equal(role(&bt, draft_exec(0, 0)), ROLE_DRAFT);
	done(&bt);
}

/* cudagraph trees: every draft step its own graph, inputs copied in before each replay */
static const struct loop_cfg trees = {
	.cycles = 8, .steps = 5, .uncaptured = true, .no_extend = true, .feed = true,
	.sync_before_loop = true,
};

static void expect_no_extend(struct built *bt, enum lead_from from)
{
	const struct loop *lp = &bt->cy.loops[0];

	for (int j = 0; j < 5; j++) {
		assert_int_equal(role(bt, draft_exec(0, j)), ROLE_DRAFT);
		assert_int_equal(find_exec(&bt->s, draft_exec(0, j))->role_from,
				 ROLE_FROM_POSITION);
	}
	assert_int_equal(role(bt, verify_exec(0, 0)), ROLE_VERIFY);
	assert_int_equal(lp->lead_from, from);
	assert_false(lp->lead_extends);
	for (size_t i = 0; i < lp->nr_cycles; i++)
		assert_int_equal(lp->cycles[i].phase[PHASE_EXTEND].span_ns, 0);
}

static const struct sync_verdict *verdict_at(const struct syncs *sy, __u64 ts)
{
	for (size_t i = 0; i < sy->nr; i++)
		if (sy->verdicts[i].sync->ts == ts)
			return &sy->verdicts[i];
	fail_msg("no sync entered at %llu", (unsigned long long)ts);
	return NULL;
}

/* Seen from before the loop to after it: its last cycle ends at the accept. */
static void test_per_step_graphs_no_extend(void **state)
{
	struct loop_cfg cfg = trees;
	struct built bt;
	struct syncs sy;

	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	expect_no_extend(&bt, LEAD_LOOP_END);
	assert_false(bt.cy.loops[0].cycles[7].followed);
	assert_int_equal(syncs__analyse(bt.s.m, &bt.cy, &sy), 0);
	for (size_t i = 0; i < sy.nr; i++)
		assert_int_not_equal(sy.verdicts[i].pos, SPOS_EXTEND);
	syncs__free(&sy);
	done(&bt);
}

/* A draft that begins with its position uploaded: the setup is the draft's, extend ends before */
static void test_draft_setup_upload(void **state)
{
	struct loop_cfg cfg = trees;
	struct built bt;

	cfg.upload = true;
	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	done(&bt);
	cfg = (struct loop_cfg){ .cycles = 6, .steps = 3, .upload = true, .feed = true };
	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	done(&bt);
}

/* torch.cuda.synchronize() between the last draft step and verify: before verify's feed */
static void test_ctx_sync_before_verify(void **state)
{
	struct loop_cfg cfg = trees;
	struct built bt;
	struct syncs sy;

	cfg.plant_every = 1;
	cfg.plant_ctx = true;
	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	expect_no_extend(&bt, LEAD_LOOP_END);
	assert_int_equal(syncs__analyse(bt.s.m, &bt.cy, &sy), 0);
	for (int i = 0; i < cfg.cycles; i++) {
		const struct sync_verdict *sv = verdict_at(&sy, bt.want[i].plant);
		const struct cycle *c = &bt.cy.loops[0].cycles[i];

		assert_int_equal(sv->sync->kind, SYNC_CTX);
		assert_int_equal(sv->pos, SPOS_DRAFT_VERIFY);
		assert_int_equal(sv->cycle, i);
		assert_true(sv->flagged);
		assert_false(c->draft_joined);
		assert_int_equal(c->phase[PHASE_DRAFT].syncs, 1);
		assert_int_equal(c->phase[PHASE_DRAFT].blocked_ns, 50000);
	}
	syncs__free(&sy);
	done(&bt);
}

/* Cut right after the last accept: the loop's first draft opens with the lead. */
static void test_loop_start_tells_no_extend(void **state)
{
	struct loop_cfg cfg = trees;
	struct built bt;

	cfg.no_final_sync = true;
	run(&bt, &cfg);
	expect_cycles(&bt, 0, 0);
	expect_no_extend(&bt, LEAD_LOOP_START);
	done(&bt);
}

/* Seen neither at its start nor at its end: read from the shape, and noted. */
static void test_nothing_tells(void **state)
{
	struct loop_cfg per_step = trees;
	struct loop_cfg one_graph = { .cycles = 6, .steps = 3, .one_graph = true,
				      .uncaptured = true, .no_final_sync = true };
	struct built bt;

	per_step.sync_before_loop = false;
	per_step.no_final_sync = true;
	run(&bt, &per_step);
	expect_cycles(&bt, 0, 0);
	expect_no_extend(&bt, LEAD_SHAPE);
	done(&bt);
	/* one graph after the lead: an extend and a draft graph holding every step */
	run(&bt, &one_graph);
	expect_cycles(&bt, 0, 0);
	assert_int_equal(role(&bt, extend_exec(0)), ROLE_EXTEND);
	assert_int_equal(role(&bt, draft_exec(0, 0)), ROLE_DRAFT);
	assert_int_equal(bt.cy.loops[0].lead_from, LEAD_SHAPE);
	assert_true(bt.cy.loops[0].lead_extends);
	done(&bt);
}

/*
 * One eager forward: n launches of func; with device_work, a copy device to
 * device after its first launch and a memset after every second one, as
 * PyTorch's eager ops make them.
 */
static __u64 eager_forward(struct call_seq *s, __u64 func, int n, __u64 *last, bool device_work)
{
	__u64 first = kernel(s, func, MAIN_STREAM);

	*last = first;
	if (device_work)
		copy_d2d(s);
	for (int j = 1; j < n; j++) {
		*last = kernel(s, func, MAIN_STREAM);
		if (device_work && j % 2 && j + 1 < n)
			memset_d8(s);
	}
	return first;
}

/*
 * No graph: per draft token 4 draft launches, its copy and a sync; 8 verify
 * launches, the accept copy and sync; a trim of 2 launches run straight into
 * the next draft. k moves as assisted generation's: 3, 5, 4, 3, 5, 4...
 */
enum eager_cut { CUT_NONE, CUT_IN_TRIM, CUT_IN_VERIFY };

static void build_eager(struct built *bt, int cycles, bool device_work, enum eager_cut cut)
{
	struct call_seq *s = &bt->s;
	__u64 last;

	memset(bt, 0, sizeof(*bt));
	seq_init(s, 0);
	bt->n = cycles;
	/* cut: attached during the trim before the first cycle, its last launch recorded */
	if (!cut) {
		stream_sync(s, 1000);
		s->now += 10000000;
	}
	for (int i = 0; i < cycles; i++) {
		struct expect *w = &bt->want[i];
		int k = 3 + (i % 3 == 1) * 2 + (i % 3 == 2);

		if (cut == CUT_IN_TRIM && !i)
			kernel(s, EXTEND_FUNC, MAIN_STREAM);
		if (cut == CUT_IN_VERIFY && !i) {
			/* a verify's last launches and its accept, then the whole trim */
			kernel(s, VERIFY_FUNC, MAIN_STREAM);
			kernel(s, VERIFY_FUNC, MAIN_STREAM);
			copy_d2h(s);
			stream_sync(s, 2000000);
			kernel(s, EXTEND_FUNC, MAIN_STREAM);
			kernel(s, EXTEND_FUNC, MAIN_STREAM);
		}
		for (int j = 0; j < k; j++) {
			__u64 d = eager_forward(s, DRAFT_FUNC, 4, &last, device_work);

			w->d = j ? w->d : d;
			copy_d2h(s);
			stream_sync(s, 20000);
		}
		w->launches[PHASE_DRAFT] = 4 * k;
		w->v = eager_forward(s, VERIFY_FUNC, 8, &w->ve, device_work);
		w->launches[PHASE_VERIFY] = 8;
		copy_d2h(s);
		stream_sync(s, 2000000);
		w->a = w->e = s->now - GAP_NS;
		eager_forward(s, EXTEND_FUNC, 2, &w->x, false);
		w->launches[PHASE_EXTEND] = 2;
	}
	for (int i = 0; i + 1 < cycles; i++)
		bt->want[i].end = bt->want[i + 1].d;
	bt->want[cycles - 1].end = bt->want[cycles - 1].x;
	stream_sync(s, 10000);
	bt->exit = (struct sp_exit_rec){ .type = SP_REC_EXIT, .size = sizeof(bt->exit),
					 .tgid = s->tgid, .ts = s->now };
	model__record(s->m, &bt->exit, sizeof(bt->exit));
}

static void test_eager_loop(void **state)
{
	for (int device_work = 0; device_work < 2; device_work++) {
		struct built bt;
		const struct loop *lp;

		build_eager(&bt, 12, device_work, CUT_NONE);
		assert_int_equal(cycles__analyse(bt.s.m, &bt.cy), 0);
		expect_windows_agree(&bt, 3);
		expect_windows_agree(&bt, 17);
		expect_cycles(&bt, 0, 0);
		lp = &bt.cy.loops[0];
		assert_int_equal(lp->verify_from, ROLE_FROM_EAGER);
		assert_true(lp->lead_extends);
		done(&bt);
	}
}

/*
 * Attached during the cache trim: the first burst is its last launch run on
 * into a draft step, before the draft's forward is known. Once it is, the
 * burst is split after the fact and splits no later trim: every later cycle
 * is read whole; the first, whose draft may have begun before, is not.
 */
static void test_eager_loop_cut_at_attach(void **state)
{
	for (int cut = CUT_IN_TRIM; cut <= CUT_IN_VERIFY; cut++) {
		struct model_view *v;
		struct built bt;
		__u64 steps = 0;

		build_eager(&bt, 12, false, cut);
		assert_int_equal(cycles__analyse(bt.s.m, &bt.cy), 0);
		expect_cycles(&bt, 1, 0);
		assert_int_equal(bt.cy.loops[0].verify_from, ROLE_FROM_EAGER);
		/* the step run on from the trim is a draft step's launch too */
		v = model__view(bt.s.m);
		for (size_t i = 0; i < v->nr_execs; i++)
			if (v->execs[i]->eager && v->execs[i]->role == ROLE_DRAFT)
				steps += v->execs[i]->launches;
		assert_int_equal(steps, 12 / 3 * (3 + 5 + 4));
		done(&bt);
	}
}

static void test_no_loop(void **state)
{
	struct call_seq s;
	struct cycles cy;

	seq_init(&s, 0);
	kernel(&s, ATTN_FUNC, MAIN_STREAM);
	stream_sync(&s, 1000);
	graph_launch(&s, 0xb000);
	assert_int_equal(cycles__analyse(s.m, &cy), 0);
	assert_int_equal(cy.nr_loops, 0);
	cycles__free(&cy);
	seq_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_step),
		cmocka_unit_test(test_one_graph_event),
		cmocka_unit_test(test_eager_draft),
		cmocka_unit_test(test_eager_loop),
		cmocka_unit_test(test_eager_loop_cut_at_attach),
		cmocka_unit_test(test_deferred),
		cmocka_unit_test(test_deferred_cut_before_last_sync),
		cmocka_unit_test(test_piecewise_verify),
		cmocka_unit_test(test_extra_draft_launch),
		cmocka_unit_test(test_batch_sizes_alternate),
		cmocka_unit_test(test_planted_sync),
		cmocka_unit_test(test_mid_run_attach),
		cmocka_unit_test(test_eager_verify_beside_graphs),
		cmocka_unit_test(test_mid_run_deferred_two_batches),
		cmocka_unit_test(test_mid_run_late_start),
		cmocka_unit_test(test_cut_inside_last_accept),
		cmocka_unit_test(test_syncs_before_the_accept_sync),
		cmocka_unit_test(test_warmup_replays_are_not_cycles),
		cmocka_unit_test(test_per_step_graphs_no_extend),
		cmocka_unit_test(test_draft_setup_upload),
		cmocka_unit_test(test_ctx_sync_before_verify),
		cmocka_unit_test(test_loop_start_tells_no_extend),
		cmocka_unit_test(test_nothing_tells),
		cmocka_unit_test(test_no_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
