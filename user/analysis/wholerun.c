// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A whole recording in windows: the plan's passes, then the last pass that
 * hands on each cycle and sync once, when no later call can change it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "spill.h"
#include "wholerun.h"

/* Syncs of threads without a loop settle once this much older than the newest call. */
#define OUTSIDE_LAG_NS 1000000000ull
/* Settled iterations a window keeps before the unsettled ones (as cycles_plan.c). */
#define CONTEXT_ITERS CYCLES_DEFERRED_REACH

/* A handed sync waiting for the ones the model took before it. */
struct held_sync {
	struct model_sync sync;
	struct sync_verdict sv;
};

struct wholerun {
	struct cycles_plan *plan;
	/* the last pass */
	__u64 *synced_to;	/* by thread index: its syncs before it were handed on */
	size_t nr_synced;
	struct syncs syncs;	/* sums, sites, and the store in entry order */
	struct held_sync *held;	/* a min-heap by seq */
	size_t nr_held, cap_held;
	__u64 next_seq;		/* the next sync the store takes */
	__u64 hold_ns;		/* --gpu: what settles waits for the agents' watermark; 0: no */
};

struct wholerun *wholerun__new(void)
{
	struct wholerun *w = calloc(1, sizeof(*w));

	if (w && !(w->plan = cycles_plan__new())) {
		free(w);
		return NULL;
	}
	return w;
}

void wholerun__begin(struct wholerun *w)
{
	cycles_plan__begin(w->plan);
	free(w->synced_to);
	w->synced_to = NULL;
	w->nr_synced = 0;
	syncs__free(&w->syncs);
	w->nr_held = 0;
	w->next_seq = 0;
}

void wholerun__free(struct wholerun *w)
{
	if (!w)
		return;
	wholerun__begin(w);
	free(w->held);
	cycles_plan__free(w->plan);
	free(w);
}

void wholerun__hold(struct wholerun *w, __u64 before_ns)
{
	w->hold_ns = before_ns;
	cycles_plan__hold(w->plan, before_ns);
}

bool wholerun__last_pass(const struct wholerun *w)
{
	return cycles_plan__stage(w->plan) == PLAN_FINAL;
}

static __u64 keep_at(void *ctx, const struct model_thread *t)
{
	return ((const __u64 *)ctx)[t->index];
}

static int plan_step(struct wholerun *w, struct model *m, bool final)
{
	struct model_view *v = model__view(m);
	__u64 *keep_ns = calloc(v->nr_threads ? v->nr_threads : 1, sizeof(*keep_ns));
	int ret = -ENOMEM;

	if (!keep_ns)
		return -ENOMEM;
	cycles_plan__apply(w->plan, m);
	ret = cycles_plan__step(w->plan, m, final, keep_ns);
	if (!ret && final)
		ret = cycles_plan__end_pass(w->plan, m);
	else if (!ret)
		ret = model__forget(m, keep_at, keep_ns);
	free(keep_ns);
	return ret;
}

static void held_swap(struct held_sync *a, struct held_sync *b)
{
	struct held_sync t = *a;

	*a = *b;
	*b = t;
}

static int held_push(struct wholerun *w, const struct sync_verdict *sv)
{
	size_t i = w->nr_held;

	if (w->nr_held == w->cap_held) {
		size_t cap = w->cap_held ? w->cap_held * 2 : 64;
		struct held_sync *grown = realloc(w->held, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		w->held = grown;
		w->cap_held = cap;
	}
	w->held[w->nr_held++] = (struct held_sync){ .sync = *sv->sync, .sv = *sv };
	for (; i && w->held[(i - 1) / 2].sync.seq > w->held[i].sync.seq; i = (i - 1) / 2)
		held_swap(&w->held[(i - 1) / 2], &w->held[i]);
	return 0;
}

static void held_pop(struct wholerun *w)
{
	size_t i = 0;

	w->held[0] = w->held[--w->nr_held];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;

		if (l < w->nr_held && w->held[l].sync.seq < w->held[min].sync.seq)
			min = l;
		if (r < w->nr_held && w->held[r].sync.seq < w->held[min].sync.seq)
			min = r;
		if (min == i)
			return;
		held_swap(&w->held[i], &w->held[min]);
		i = min;
	}
}

/* Into the sums at once; into the store in the order the model took them. */
static int hand_sync(struct wholerun *w, const struct model_view *v,
		     const struct sync_verdict *sv, const struct settle_sink *sink)
{
	int ret = syncs__add(&w->syncs, sv, v->stacks);

	/* its cycle went to the store when it settled, before its syncs did */
	if (!ret && sv->flagged && sv->has_gpu_idle && sv->cycle >= 0) {
		struct loop *lp = cycles_plan__loop_of(w->plan, sv->sync->tgid, sv->sync->tid);

		ret = lp ? loop__add_flagged_gpu(lp, sv->cycle, sv->gpu_idle_ns) : 0;
	}

	if (!ret)
		ret = held_push(w, sv);
	while (!ret && w->nr_held && w->held[0].sync.seq == w->next_seq) {
		w->held[0].sv.sync = &w->held[0].sync;
		ret = syncs__store(&w->syncs, &w->held[0].sv);
		held_pop(w);
		w->next_seq++;
	}
	if (!ret && sink->sync)
		ret = sink->sync(sink->ctx, sv);
	return ret;
}

static const struct loop *loop_of(const struct cycles *cy, const struct model_thread *t)
{
	for (size_t l = 0; l < cy->nr_loops; l++)
		if (cy->loops[l].tgid == t->tgid && cy->loops[l].tid == t->tid)
			return &cy->loops[l];
	return NULL;
}

static size_t thread_index(const struct model_view *v, const struct model_sync *sy)
{
	for (size_t k = 0; k < v->nr_threads; k++)
		if (v->threads[k]->tid == sy->tid && v->threads[k]->tgid == sy->tgid)
			return k;
	return v->nr_threads;
}

static __u64 iter_first_ts(const struct model_thread *t, const struct loop *lp, size_t i)
{
	return t->events[lp->iters[i].first].ts;
}

/* The iteration of lp that ts lies in: the last one begun by then, 0 before the first. */
static size_t iter_of_ts(const struct model_thread *t, const struct loop *lp, __u64 ts)
{
	size_t lo = 0, hi = lp->nr_iters;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (iter_first_ts(t, lp, mid) <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/*
 * Per thread, where its syncs settle this step: a loop's first unsettled
 * iteration, else a while after the newest call. A sync whose process has not
 * launched since it returned may still learn its idle bound, and a spin of
 * queries still going on becomes a sync later: neither settles yet.
 */
struct horizons {
	__u64 *ts;		/* by thread: syncs before it settle */
	size_t *iter;		/* loop threads: their first unsettled window iteration */
	const struct loop **lp;
};

static void cap_at(struct horizons *h, const struct model_thread *t, __u64 ts)
{
	size_t k = t->index;

	if (h->lp[k]) {
		size_t i = iter_of_ts(t, h->lp[k], ts);

		if (i < h->iter[k]) {
			h->iter[k] = i;
			h->ts[k] = iter_first_ts(t, h->lp[k], i);
		}
	} else if (ts < h->ts[k]) {
		h->ts[k] = ts;
	}
}

static int cap_unsettled(struct wholerun *w, const struct model_view *v, struct horizons *h)
{
	bool *pending = calloc(v->nr_syncs ? v->nr_syncs : 1, sizeof(*pending));

	if (!pending)
		return -ENOMEM;
	for (size_t i = 0; i < v->nr_procs; i++)
		for (__u32 j = 0; j < v->procs[i]->nr_pending; j++)
			pending[v->procs[i]->pending[j]] = true;
	for (size_t i = 0; i < v->nr_syncs; i++) {
		size_t k = thread_index(v, &v->syncs[i]);

		if (pending[i] && k < v->nr_threads && v->syncs[i].ts >= w->synced_to[k])
			cap_at(h, v->threads[k], v->syncs[i].ts);
	}
	for (size_t k = 0; k < v->nr_threads; k++)
		if (v->threads[k]->polling)
			cap_at(h, v->threads[k], v->threads[k]->poll.ts);
	free(pending);
	return 0;
}

static int find_horizons(struct wholerun *w, const struct model_view *v, const struct cycles *cy,
			 const struct plan_loop_window *win, __u64 last_ts, bool final,
			 struct horizons *h)
{
	__u64 others = last_ts > OUTSIDE_LAG_NS ? last_ts - OUTSIDE_LAG_NS : 0;

	/* --gpu: a sync's GPU idle needs the executions around its return */
	if (w->hold_ns && w->hold_ns != ~0ull && others + OUTSIDE_LAG_NS > w->hold_ns)
		others = w->hold_ns > OUTSIDE_LAG_NS ? w->hold_ns - OUTSIDE_LAG_NS : 0;
	for (size_t k = 0; k < v->nr_threads; k++) {
		const struct model_thread *t = v->threads[k];
		const struct loop *lp = loop_of(cy, t);

		h->lp[k] = lp;
		if (final) {
			h->ts[k] = ~0ull;
			continue;
		}
		if (lp) {
			h->iter[k] = win[lp - cy->loops].owned_to;
			h->ts[k] = h->iter[k] < lp->nr_iters ? iter_first_ts(t, lp, h->iter[k])
							     : ~0ull;
		} else {
			/* a loop not begun yet places its syncs once its first iteration is seen */
			h->ts[k] = cycles_plan__loop_thread(w->plan, k) ? 0 : others;
		}
	}
	return final ? 0 : cap_unsettled(w, v, h);
}

/* Where each thread's window must start: context before its first unsettled iteration. */
static void find_keep(struct wholerun *w, const struct model_view *v, const struct cycles *cy,
		      const struct plan_loop_window *win, const struct horizons *h,
		      __u64 *keep_ns)
{
	for (size_t k = 0; k < v->nr_threads; k++) {
		const struct loop *lp = h->lp[k];
		size_t keep;

		if (!lp || win[lp - cy->loops].keep_all) {
			keep_ns[k] = cycles_plan__loop_thread(w->plan, k) ? 0 : w->synced_to[k];
			continue;
		}
		keep = win[lp - cy->loops].keep;
		if (h->iter[k] < keep + CONTEXT_ITERS)
			keep = h->iter[k] > CONTEXT_ITERS ? h->iter[k] - CONTEXT_ITERS : 0;
		keep_ns[k] = iter_first_ts(v->threads[k], lp, keep);
	}
	/* a flagged sync's flow looks back that many events for the launch it waited on */
	for (size_t k = 0; k < v->nr_threads; k++) {
		const struct model_thread *t = v->threads[k];
		size_t j = 0;

		while (j < t->nr_events && t->events[j].ts < w->synced_to[k])
			j++;
		j = j > SYNCS_FLOW_SCAN ? j - SYNCS_FLOW_SCAN : 0;
		if (j < t->nr_events && t->events[j].ts < keep_ns[k])
			keep_ns[k] = t->events[j].ts;
	}
}

static int hand_cycles(const struct cycles *cy, const struct settle_sink *sink)
{
	int ret = 0;

	for (size_t l = 0; l < cy->nr_loops && !ret; l++)
		for (size_t i = 0; i < cy->loops[l].nr_cycles && !ret; i++)
			ret = sink->cycle ? sink->cycle(sink->ctx, &cy->loops[l],
							&cy->loops[l].cycles[i])
					  : 0;
	return ret;
}

static int hand_syncs(struct wholerun *w, struct model_view *v, const struct syncs *sy,
		      const struct horizons *h, const struct settle_sink *sink)
{
	int ret = 0;

	for (size_t i = 0; i < sy->nr && !ret; i++) {
		struct sync_verdict sv = sy->verdicts[i];
		size_t k = thread_index(v, sv.sync);

		if (k >= v->nr_threads || sv.sync->ts < w->synced_to[k] || sv.sync->ts >= h->ts[k])
			continue;
		/* in entry order: its site learned from every sync before it */
		syncs__judge_by_site(v, &sv);
		ret = syncs__learn_site(v, &sv);
		if (!ret)
			ret = hand_sync(w, v, &sv, sink);
	}
	for (size_t k = 0; k < v->nr_threads; k++)
		if (h->ts[k] > w->synced_to[k])
			w->synced_to[k] = h->ts[k];
	return ret;
}

/* A full disk shows here, when what is buffered is written, not when the report reads it. */
static int flush_stores(const struct cycles *run, const struct syncs *sy)
{
	int ret = spill__flush(sy->store);

	for (size_t l = 0; l < run->nr_loops && !ret; l++) {
		ret = spill__flush(run->loops[l].store);
		if (!ret)
			ret = spill__flush(run->loops[l].launches);
	}
	return ret;
}

/* The end of the last pass: every sync handed and stored, the results. */
static int final_results(struct wholerun *w, struct model *m, struct results *res)
{
	const struct model_view *v = model__view(m);
	struct cycles run;
	size_t cycles = 0;
	int ret;

	if (w->nr_held || w->next_seq != w->syncs.nr)
		return -EPROTO;	/* a sync was not handed on exactly once */
	ret = cycles_plan__loops(w->plan, m, &run);
	if (ret)
		return ret;
	ret = flush_stores(&run, &w->syncs);
	if (ret) {
		cycles__free(&run);
		return ret;
	}
	for (size_t l = 0; l < run.nr_loops; l++)
		cycles += run.loops[l].nr_cycles;
	/* as syncs__analyse: what of the probes lies between a call's two timestamps */
	w->syncs.trap_ns = v->calib.calls ? v->calib.return_ps / 1000 : 0;
	w->syncs.site_ns = v->calib.calls ? v->calib.stack_ps / 1000 : 0;
	ret = syncs__end(&w->syncs, cycles, cycles__run_estimate(&run, &v->sample));
	if (!ret)
		ret = results__adopt(res, m, &run, &w->syncs);
	cycles__free(&run);
	return ret;
}

static int last_step(struct wholerun *w, struct model *m, __u64 last_ts, bool final,
		     struct results *res, const struct settle_sink *sink)
{
	struct model_view *v = model__view(m);
	size_t nr = v->nr_threads ? v->nr_threads : 1;
	struct horizons h = { calloc(nr, sizeof(*h.ts)), calloc(nr, sizeof(*h.iter)),
			      calloc(nr, sizeof(*h.lp)) };
	__u64 *keep_ns = calloc(nr, sizeof(*keep_ns));
	struct plan_loop_window *win = NULL;
	struct cycles cy = { 0 };
	struct syncs sy = { 0 };
	size_t had = w->nr_synced;
	int ret = -ENOMEM;

	if (!h.ts || !h.iter || !h.lp || !keep_ns)
		goto out;
	if (v->nr_threads > w->nr_synced) {
		__u64 *grown = realloc(w->synced_to, v->nr_threads * sizeof(*grown));

		if (!grown)
			goto out;
		w->synced_to = grown;
		w->nr_synced = v->nr_threads;
		memset(grown + had, 0, (w->nr_synced - had) * sizeof(*grown));
	}
	cycles_plan__apply(w->plan, m);
	ret = cycles_plan__window(w->plan, m, final, &cy, &win);
	if (!ret)
		ret = hand_cycles(&cy, sink);
	v->sample.learn_settled = true;
	if (!ret)
		ret = syncs__analyse(m, &cy, &sy);
	if (!ret)
		ret = find_horizons(w, v, &cy, win, last_ts, final, &h);
	if (!ret)
		ret = hand_syncs(w, v, &sy, &h, sink);
	if (!ret && final) {
		for (size_t k = 0; k < v->nr_threads; k++)
			keep_ns[k] = ~0ull;
		ret = cycles_plan__launches(w->plan, m, keep_ns);
		if (!ret)
			ret = final_results(w, m, res);
		goto out;
	}
	if (!ret) {
		find_keep(w, v, &cy, win, &h, keep_ns);
		cycles_plan__kept(w->plan, m, keep_ns);
		ret = cycles_plan__launches(w->plan, m, keep_ns);
	}
	if (!ret)
		ret = model__forget(m, keep_at, keep_ns);
out:
	syncs__free(&sy);
	cycles__free(&cy);
	free(win);
	free(h.ts);
	free(h.iter);
	free(h.lp);
	free(keep_ns);
	return ret;
}

int wholerun__step(struct wholerun *w, struct model *m, __u64 last_ts, bool final,
		   struct results *res, const struct settle_sink *sink)
{
	if (cycles_plan__stage(w->plan) != PLAN_FINAL)
		return plan_step(w, m, final);
	return last_step(w, m, last_ts, final, res, sink);
}
