// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Windowed analyses: settle the old part of the window, hand it on, forget it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "settle.h"

/* An iteration's facts are final once its deferred accept sync can no longer come. */
#define SETTLE_ITERS (CYCLES_DEFERRED_REACH + 2)
/* Settled iterations kept before the unsettled ones: roles and leads need a few. */
#define CONTEXT_ITERS 4
/* Syncs of threads with no loop settle once this much older than the newest call. */
#define OUTSIDE_LAG_NS 1000000000ull

/* What was handed on of one loop, across windows. */
struct settled_loop {
	__u32 tgid, tid;
	/* an iteration is known by its verify launch, whatever the lead's role moves */
	__u64 last_verify;	/* verify launch of the last cycle handed on */
	__u32 handed;		/* cycles handed on */
	__s64 offset;		/* window cycle index + offset = index over the run */
	__u64 horizon;		/* this window: entry of its first unsettled iteration */
	__u64 synced_to;	/* its syncs before it were handed on */
	__u64 keep_ns;		/* this window: where the events still needed start */
	bool in_window;
};

struct settle {
	struct settled_loop *loops;
	size_t nr, cap;
	__u64 other_done;	/* syncs of threads without a loop, before it, were handed on */
	__u64 last_ts;
	__u64 hold_ns;		/* --gpu: what settles waits for the agents' watermark; 0: no */
};

static bool holding(const struct settle *s)
{
	return s->hold_ns && s->hold_ns != ~0ull;
}

void settle__hold(struct settle *s, __u64 before_ns)
{
	s->hold_ns = before_ns;
}

struct settle *settle__new(void)
{
	return calloc(1, sizeof(struct settle));
}

__u64 settle__horizon(const struct settle *s)
{
	__u64 h = ~0ull;

	for (size_t i = 0; i < s->nr; i++)
		if (s->loops[i].in_window && s->loops[i].synced_to < h)
			h = s->loops[i].synced_to;
	return h == ~0ull ? s->other_done : h;
}

void settle__free(struct settle *s)
{
	if (!s)
		return;
	free(s->loops);
	free(s);
}

static struct settled_loop *settled_of(struct settle *s, __u32 tgid, __u32 tid, bool add)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->loops[i].tgid == tgid && s->loops[i].tid == tid)
			return &s->loops[i];
	if (!add)
		return NULL;
	if (s->nr == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct settled_loop *grown = realloc(s->loops, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		s->loops = grown;
		s->cap = cap;
	}
	/* what the thread did before it was a loop went out with the other threads' syncs */
	s->loops[s->nr] = (struct settled_loop){ .tgid = tgid, .tid = tid,
						 .synced_to = s->other_done };
	return &s->loops[s->nr++];
}

static struct model_thread *thread_of(const struct model_view *v, __u32 tgid, __u32 tid)
{
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i]->tid == tid && v->threads[i]->tgid == tgid)
			return v->threads[i];
	return NULL;
}

static __u64 iter_ts(const struct model_thread *t, const struct loop *lp, size_t i)
{
	size_t first = lp->iters[i].first;

	return first < t->nr_events ? t->events[first].ts : 0;
}

static __u64 verify_ts(const struct model_thread *t, const struct loop *lp, size_t i)
{
	return lp->iters[i].vs < t->nr_events ? t->events[lp->iters[i].vs].ts : 0;
}

/* Where the loop's window splits: settled iterations before, the kept ones from keep. */
static void split_loop(struct settled_loop *sl, const struct model_thread *t,
		       const struct loop *lp, size_t unsettled, __u64 last_ts)
{
	size_t keep = unsettled > CONTEXT_ITERS ? unsettled - CONTEXT_ITERS : 0;

	sl->in_window = true;
	sl->horizon = unsettled < lp->nr_iters ? iter_ts(t, lp, unsettled) : last_ts + 1;
	sl->keep_ns = lp->nr_iters ? iter_ts(t, lp, keep) : 0;
}

/* A lead told by what was seen, not by its shape alone, holds for the windows after. */
static void keep_lead(struct model_thread *t, const struct loop *lp)
{
	if (t->kept_lead_from || lp->lead_from == LEAD_NONE || lp->lead_from == LEAD_SHAPE)
		return;
	t->kept_lead_from = lp->lead_from;
	t->kept_lead_extends = lp->lead_extends;
}

/* Hand on the settled cycles of one loop that earlier windows did not. */
static int settle_loop(struct settle *s, const struct model_view *v, const struct loop *lp,
		       bool final, const struct settle_sink *sink)
{
	struct settled_loop *sl = settled_of(s, lp->tgid, lp->tid, true);
	struct model_thread *t = thread_of(v, lp->tgid, lp->tid);
	size_t unsettled = lp->nr_iters > SETTLE_ITERS ? lp->nr_iters - SETTLE_ITERS : 0;
	size_t seen = 0;
	int ret = 0;

	if (!sl || !t)
		return -ENOMEM;
	keep_lead(t, lp);
	if (final)
		unsettled = lp->nr_iters;
	/* --gpu: a cycle's figures need its next one's first execution handed over */
	else if (holding(s))
		for (size_t i = 0; i < unsettled; i++)
			if (i + 2 >= lp->nr_iters || iter_ts(t, lp, i + 2) >= s->hold_ns) {
				unsettled = i;
				break;
			}
	split_loop(sl, t, lp, unsettled, s->last_ts);
	for (size_t i = 0; i < lp->nr_iters; i++)
		seen += lp->iters[i].cycle >= 0 && verify_ts(t, lp, i) <= sl->last_verify;
	sl->offset = (__s64)sl->handed - (__s64)seen;
	for (size_t i = 0; i < unsettled && !ret; i++) {
		struct cycle c;

		if (lp->iters[i].cycle < 0 || verify_ts(t, lp, i) <= sl->last_verify)
			continue;
		c = lp->cycles[lp->iters[i].cycle];
		c.index = sl->handed++;
		sl->last_verify = verify_ts(t, lp, i);
		ret = sink->cycle ? sink->cycle(sink->ctx, lp, &c) : 0;
	}
	return ret;
}

/* Syncs of threads with no loop in the window settle some time after they entered. */
static __u64 other_horizon(const struct settle *s, bool final)
{
	__u64 h = s->last_ts > OUTSIDE_LAG_NS ? s->last_ts - OUTSIDE_LAG_NS : 0;

	if (final)
		return ~0ull;
	if (holding(s) && h + OUTSIDE_LAG_NS > s->hold_ns)
		h = s->hold_ns > OUTSIDE_LAG_NS ? s->hold_ns - OUTSIDE_LAG_NS : 0;
	return h > s->other_done ? h : s->other_done;
}

static __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

/* A loop's syncs settle with its iterations; the others after the lag. */
static bool sync_settles(const struct settle *s, const struct settled_loop *sl, __u64 ts,
			 __u64 others)
{
	if (sl && sl->in_window)
		return ts >= sl->synced_to && ts < sl->horizon;
	return ts >= max_u64(s->other_done, sl ? sl->synced_to : 0) && ts < others;
}

static int settle_syncs(struct settle *s, struct model_view *v, const struct syncs *sy,
			bool final, const struct settle_sink *sink)
{
	__u64 others = other_horizon(s, final);
	int ret = 0;

	for (size_t i = 0; i < sy->nr && !ret; i++) {
		struct sync_verdict sv = sy->verdicts[i];
		const struct settled_loop *sl = settled_of(s, sv.sync->tgid, sv.sync->tid, false);

		if (!sync_settles(s, sl, sv.sync->ts, others))
			continue;
		syncs__judge_by_site(v, &sv);
		ret = syncs__learn_site(v, &sv);
		if (sv.cycle >= 0 && sl)
			sv.cycle += sl->offset;
		if (!ret)
			ret = sink->sync ? sink->sync(sink->ctx, &sv) : 0;
	}
	for (size_t i = 0; i < s->nr; i++)
		s->loops[i].synced_to = max_u64(s->loops[i].synced_to, s->loops[i].in_window && !final
									? s->loops[i].horizon
									: others);
	s->other_done = others;
	return ret;
}

/* Nothing handed on is needed again, but a loop keeps its context. */
static __u64 keep_from(void *ctx, const struct model_thread *t)
{
	struct settle *s = ctx;
	const struct settled_loop *sl = settled_of(s, t->tgid, t->tid, false);

	if (sl && sl->in_window)
		return sl->keep_ns < sl->synced_to ? sl->keep_ns : sl->synced_to;
	return s->other_done;
}

int settle__step(struct settle *s, struct model *m, __u64 last_ts, bool final,
		 struct results *res, const struct settle_sink *sink)
{
	const struct cycles *cy;
	int ret;

	s->last_ts = last_ts;
	for (size_t i = 0; i < s->nr; i++)
		s->loops[i].in_window = false;
	model__reset_roles(m);
	model__view(m)->sample.learn_settled = true;
	ret = results__compute(res, m);
	if (ret)
		return ret;
	cy = &res->cycles;
	for (size_t l = 0; l < cy->nr_loops && !ret; l++)
		ret = settle_loop(s, model__view(m), &cy->loops[l], final, sink);
	if (!ret && !res->syncs_err)
		ret = settle_syncs(s, model__view(m), &res->syncs, final, sink);
	if (ret || final)
		return ret;
	results__free(res);
	return model__forget(m, keep_from, s);
}
