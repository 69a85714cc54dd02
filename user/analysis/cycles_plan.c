// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A whole run in windows. Each window step hands a stage the iterations (or,
 * before there are any, the events) that later calls can no longer change,
 * and keeps a few settled iterations before them as context: the same
 * functions as the whole run's analysis then see each of those iterations
 * as the whole run does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cycles_int.h"
#include "grow.h"
#include "spill.h"

/* Settled iterations a window keeps before the others: a deferred accept's reach. */
#define CONTEXT_ITERS CYCLES_DEFERRED_REACH
/* The newest iterations wait: their accept, extend and end may come later. */
#define MARGIN_ITERS (CYCLES_DEFERRED_REACH + 2)
/* accept_of: the accept of an iteration an earlier window settled */
#define CLAIMED ((size_t)-2)

/* Launches of exec a, then of exec b, with no sync and no other graph launch between. */
struct exec_pair {
	__u32 a, b;
	__u32 count;
};

/* What the whole run tells of one thread, over the windows and passes. */
struct plan_thread {
	bool graphs;			/* it launched a graph */
	struct exec_stats *stats;	/* by exec id */
	size_t nr_stats;
	bool copies_d2h;
	size_t last_graph;		/* exec of its last graph launch (stats), else NONE */
	bool last_synced, last_handed;
	bool last_counted;		/* the last graph launch counted in self_next */
	bool eager;			/* eager bursts read as forwards */
	bool plain_graphs;		/* CUDA graphs launched too */
	struct site_stats sites;	/* call sites of syncs, counted window by window */
	bool sites_seen;		/* some sync had one */
	struct frame_walk frames;	/* the Python frames' votes so far */
	struct role_evidence evidence;
	size_t neighbour;		/* exec of its last graph launch since a sync */
	struct exec_pair *pairs;	/* graph launches one after the other, no sync between */
	size_t nr_pairs, cap_pairs;
	struct hmap pair_at;		/* (a, b): index in pairs + 1 */
	bool anchored;
	__u32 anchor;
	enum role_source verify_from;
	/* iteration passes: what was counted so far */
	__u64 done_vs;
	size_t nr_iters;
	size_t run_iters;		/* iterations of the whole run */
	long structure_votes, site_votes, shape_votes;
	int loop_end;
	__u64 longest_period;
	__u64 gap;			/* its longest draft gap (longest_draft_gap) */
	bool first_nothing, start_found;
	__u64 first_nothing_ts, start_open_ts;
	enum opening start_how;
	size_t start_open_exec;
	enum lead_from lead_from;
	bool lead_extends;
	bool has_extend, graph_drafts;
	/* the last pass: counts over the run, and the settled iterations windows still hold */
	struct loop run;
	struct plan_iter *owned;
	size_t nr_owned, cap_owned;
};

struct plan_role {
	__u8 role, from;
};

struct cycles_plan {
	enum plan_stage stage;
	struct plan_thread *threads;	/* by model thread index */
	size_t nr_threads;
	struct plan_role *roles;	/* by exec id */
	size_t nr_roles;
	struct sp_calib_rec calib;
	bool gap_known;			/* every thread's gap is */
	__u64 hold_ns;		/* --gpu: iterations whose next one ends after it wait; 0: none */
};

struct cycles_plan *cycles_plan__new(void)
{
	return calloc(1, sizeof(struct cycles_plan));
}

void cycles_plan__free(struct cycles_plan *pl)
{
	if (!pl)
		return;
	for (size_t i = 0; i < pl->nr_threads; i++) {
		free(pl->threads[i].stats);
		free(pl->threads[i].pairs);
		hmap__free(&pl->threads[i].pair_at);
		hmap__free(&pl->threads[i].sites.counts);
		frames__walk_free(&pl->threads[i].frames);
		free(pl->threads[i].owned);
		if (pl->threads[i].run.store)
			fclose(pl->threads[i].run.store);
		if (pl->threads[i].run.launches)
			fclose(pl->threads[i].run.launches);
	}
	free(pl->threads);
	free(pl->roles);
	free(pl);
}

enum plan_stage cycles_plan__stage(const struct cycles_plan *pl)
{
	return pl->stage;
}

/* The plan of thread t, with room for every exec seen so far; NULL: no memory. */
static struct plan_thread *plan_thread(struct cycles_plan *pl, const struct model_view *v,
				       const struct model_thread *t)
{
	struct plan_thread *pt;
	size_t had = pl->nr_threads;

	if (grow__zeroed((void **)&pl->threads, &pl->nr_threads, t->index + 1, sizeof(*pl->threads)))
		return NULL;
	for (size_t i = had; i < pl->nr_threads; i++) {
		pl->threads[i].last_graph = pl->threads[i].neighbour = NONE;
		pl->threads[i].run.rank = -1;
	}
	pt = &pl->threads[t->index];
	pt->run.tgid = t->tgid;
	pt->run.tid = t->tid;
	if (grow__zeroed((void **)&pt->stats, &pt->nr_stats, v->nr_execs, sizeof(*pt->stats)))
		return NULL;
	return pt;
}

void cycles_plan__apply(const struct cycles_plan *pl, struct model *m)
{
	struct model_view *v = model__view(m);

	for (size_t id = 0; id < v->nr_execs; id++) {
		struct plan_role r = id < pl->nr_roles ? pl->roles[id] : (struct plan_role){ 0 };

		v->execs[id]->role = r.role;
		v->execs[id]->role_from = r.from;
	}
	/* a calibration recorded late holds for the whole run */
	if (pl->calib.calls)
		v->calib = pl->calib;
}

static int save_roles(struct cycles_plan *pl, const struct model_view *v)
{
	if (grow__zeroed((void **)&pl->roles, &pl->nr_roles, v->nr_execs, sizeof(*pl->roles)))
		return -ENOMEM;
	for (size_t id = 0; id < v->nr_execs; id++)
		pl->roles[id] = (struct plan_role){ v->execs[id]->role, v->execs[id]->role_from };
	return 0;
}

static struct thread_ctx plan_ctx(struct model *m, struct model_thread *t, struct plan_thread *pt)
{
	return (struct thread_ctx){
		.m = m, .v = model__view(m), .t = t, .stats = pt->stats,
		.copies_d2h = pt->copies_d2h, .has_extend = pt->has_extend,
		.graph_drafts = pt->graph_drafts, .eager = pt->eager,
		.plain_graphs = pt->plain_graphs, .sites = pt->sites_seen ? &pt->sites : NULL,
		.lead_from = pt->lead_from,
		.frames = pt->frames.loop,
		.frames_loop = pt->anchored && pt->verify_from == ROLE_FROM_FRAMES,
		.lead_extends = pt->lead_extends,
	};
}

/* Pieces rounds read these counts (add_pieces): which graph came next to which. */
static int note_pair(struct plan_thread *pt, __u32 a, __u32 b)
{
	size_t at = (size_t)hmap__get(&pt->pair_at, a, b);

	if (at) {
		pt->pairs[at - 1].count++;
		return 0;
	}
	if (pt->nr_pairs == pt->cap_pairs) {
		size_t cap = pt->cap_pairs ? pt->cap_pairs * 2 : 16;
		struct exec_pair *grown = realloc(pt->pairs, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		pt->pairs = grown;
		pt->cap_pairs = cap;
	}
	pt->pairs[pt->nr_pairs++] = (struct exec_pair){ a, b, 1 };
	return hmap__set(&pt->pair_at, a, b, (void *)pt->nr_pairs);
}

/* As collect_sites, a window at a time: its first upto events. */
static int plan_sites(struct plan_thread *pt, const struct model_view *v,
		      const struct model_thread *t, size_t upto)
{
	__u32 *sites = roles__event_sites(v, t);
	int ret;

	if (!sites)
		return 0;
	if (!pt->sites_seen)
		pt->sites.last = NONE;
	pt->sites_seen = true;
	ret = roles__sites_of_events(&pt->sites, pt->stats, t, sites, upto);
	free(sites);
	return ret;
}

/* The Python frames' votes of the settled part of a window (frames.c). */
static int plan_frames(struct plan_thread *pt, const struct model_view *v,
		       const struct model_thread *t, size_t upto)
{
	__u32 *stacks = frames__event_stacks(v, t);
	int ret;

	if (!stacks)
		return 0;
	ret = frames__walk(&pt->frames, pt->stats, v, t, stacks, upto);
	free(stacks);
	return ret;
}

/* As roles__collect_stats, a call at a time: what follows a launch up to the next one. */
static int stats_event(struct plan_thread *pt, const struct loop_event *e)
{
	struct exec_stats *st;
	int ret = 0;

	pt->copies_d2h |= is_d2h(e);
	if (is_blocking(e))
		pt->neighbour = NONE;
	if (e->kind == LOOP_GRAPH) {
		if (pt->neighbour != NONE)
			ret = note_pair(pt, pt->neighbour, e->handle);
		pt->neighbour = e->handle;
		pt->graphs = true;
		pt->eager |= e->flags & LOOP_EAGER;
		pt->plain_graphs |= !(e->flags & LOOP_EAGER);
		pt->stats[e->handle].after_run += pt->last_graph != NONE &&
						  pt->last_graph != e->handle && pt->last_counted;
		pt->last_counted = roles__count_self_next(pt->stats, pt->last_graph,
							  pt->last_counted, e->handle);
		pt->last_graph = e->handle;
		pt->last_synced = pt->last_handed = false;
		pt->stats[e->handle].launches++;
		return ret;
	}
	if (pt->last_graph == NONE)
		return 0;
	st = &pt->stats[pt->last_graph];
	if (!pt->last_handed && is_d2h(e)) {
		pt->last_handed = true;
		st->handed++;
	}
	if (!pt->last_synced && is_blocking(e)) {
		pt->last_synced = true;
		st->followed++;
		st->wait_ns += blocked_ns(e);
	}
	return 0;
}

/* A verify piece at one end of a pair of graph launches with no sync between. */
static void piece_pair(struct exec_stats *stats, const struct model_exec *x,
		       const struct model_exec *n, int dir, __u32 count)
{
	if (x->role != ROLE_VERIFY || !x->capture)
		return;
	if (n->role != ROLE_VERIFY && n->capture && n->tgid == x->tgid &&
	    n->capture->order == x->capture->order + dir)
		stats[n->id].adjacent += count;
}

/* add_pieces' count, from the pairs: each launch next to a verify piece, either side. */
static void count_adjacent(struct thread_ctx *tc, const struct plan_thread *pt)
{
	for (size_t i = 0; i < pt->nr_pairs; i++) {
		const struct exec_pair *pr = &pt->pairs[i];
		struct model_exec *a = tc->v->execs[pr->a], *b = tc->v->execs[pr->b];

		piece_pair(tc->stats, b, a, -1, pr->count);
		piece_pair(tc->stats, a, b, 1, pr->count);
		if (roles__same_step(a, b)) {
			tc->stats[a->id].repeats += pr->count;
			tc->stats[b->id].repeats += pr->count;
		}
	}
}

/* vote_roles for settled iteration i, for either reading of the lead; the run's last has none. */
static void votes_iter(struct thread_ctx *tc, size_t i, size_t lead)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];

	for (size_t j = it->after; j < it->region_end; j++) {
		struct model_exec *x = exec_of(tc, &t->events[j]);

		if (!x || x->role == ROLE_VERIFY)
			continue;
		tc->stats[x->id].voted++;
		tc->stats[x->id].voted_lead += j == lead;
	}
}

/* What count_leads, the lead rules, longest_period and the votes take from settled iteration i. */
static void leads_iter(struct thread_ctx *tc, struct plan_thread *pt, size_t i, bool run_last)
{
	const struct model_thread *t = tc->t;
	size_t lead = leads__lead_of(tc, i), end = tc->iters[i].region_end, open = NONE, next;
	enum opening how;

	if (!run_last)
		votes_iter(tc, i, lead);

	if (lead != NONE) {
		tc->stats[t->events[lead].handle].lead++;
		next = leads__next_graph(tc, lead, end);
		if (next != NONE)
			tc->stats[t->events[next].handle].follow++;
		pt->structure_votes += leads__structure(tc, i, lead);
		pt->site_votes += leads__site(tc, i, lead);
		pt->shape_votes +=
			next != NONE && leads__next_graph(tc, next, end) != NONE ? -1 : 1;
	}
	if (i + 1 < tc->nr_iters) {
		__u64 period = t->events[tc->iters[i + 1].vs].ts - t->events[tc->iters[i].vs].ts;

		if (period > pt->longest_period)
			pt->longest_period = period;
	}
	if (pt->start_found)
		return;
	/* lead_at_loop_start stops at the first opening that is not "nothing" */
	how = leads__draft_opening(tc, i, &open);
	if (how == OPEN_NOTHING) {
		if (!pt->nr_iters) {
			pt->first_nothing = true;
			pt->first_nothing_ts = t->events[tc->iters[i].vs].ts;
		}
		return;
	}
	pt->start_found = true;
	pt->start_how = how;
	if (how == OPEN_GRAPH) {
		pt->start_open_ts = t->events[open].ts;
		pt->start_open_exec = t->events[open].handle;
	}
}

/* As longest_draft_gap, for settled iteration i: the thread's own, as in memory. */
static void gap_iter(struct thread_ctx *tc, size_t i, struct plan_thread *pt)
{
	__u64 gap = boundaries__draft_gap(tc, i);

	if (gap > pt->gap)
		pt->gap = gap;
}

/* The first window iteration not counted yet, and the first one this step leaves. */
static void owned_range(const struct thread_ctx *tc, const struct plan_thread *pt, bool final,
			size_t *lo, size_t *hi)
{
	const struct model_thread *t = tc->t;

	for (*lo = 0; *lo < tc->nr_iters && pt->done_vs &&
		      t->events[tc->iters[*lo].vs].ts <= pt->done_vs;
	     (*lo)++)
		;
	*hi = final || tc->nr_iters < MARGIN_ITERS ? tc->nr_iters : tc->nr_iters - MARGIN_ITERS;
	if (!final && tc->nr_iters < MARGIN_ITERS)
		*hi = 0;
	if (*hi < *lo)
		*hi = *lo;
}

/*
 * --gpu: an iteration's GPU figures need its executions and the next
 * iteration's first one, all handed over: it waits until the iteration after
 * the next has reached its verify before the agents' watermark. (Its verify:
 * the draft parts are not found yet when this is asked.)
 */
static size_t held_back(const struct thread_ctx *tc, size_t lo, size_t hi, __u64 hold_ns)
{
	size_t i = lo;

	while (i < hi && i + 2 < tc->nr_iters && tc->t->events[tc->iters[i + 2].vs].ts < hold_ns)
		i++;
	return i;
}

/* Where a thread's window must start for the iterations from hi on: context before them. */
static __u64 keep_before(const struct thread_ctx *tc, size_t hi)
{
	size_t keep = hi > CONTEXT_ITERS ? hi - CONTEXT_ITERS : 0;

	if (!tc->nr_iters || (!keep && !hi))
		return 0;
	return tc->t->events[tc->iters[keep].vs].ts;
}

/* An iteration stage's window step for one anchored thread. */
static int iters_step(struct cycles_plan *pl, struct thread_ctx *tc, struct plan_thread *pt,
		      bool final, __u64 *keep_ns)
{
	size_t lo, hi;

	if (boundaries__groups(tc))
		return -ENOMEM;
	boundaries__accept_ends(tc);
	if (pl->stage == PLAN_GAP)
		for (size_t i = 0; i < tc->nr_iters; i++)
			boundaries__find_draft(tc, i);
	owned_range(tc, pt, final, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		if (pl->stage == PLAN_LEADS)
			leads_iter(tc, pt, i, final && i + 1 == tc->nr_iters);
		else
			gap_iter(tc, i, pt);
		pt->nr_iters++;
	}
	if (hi > lo)
		pt->done_vs = tc->t->events[tc->iters[hi - 1].vs].ts;
	if (final && pl->stage == PLAN_LEADS && tc->nr_iters)
		pt->loop_end = leads__at_loop_end(tc);
	*keep_ns = keep_before(tc, hi);
	return 0;
}

int cycles_plan__step(struct cycles_plan *pl, struct model *m, bool final, __u64 *keep_ns)
{
	struct model_view *v = model__view(m);
	int ret = 0;

	for (size_t k = 0; k < v->nr_threads && !ret; k++) {
		struct model_thread *t = v->threads[k];
		struct plan_thread *pt = plan_thread(pl, v, t);
		struct thread_ctx tc;
		size_t upto;

		if (!pt)
			return -ENOMEM;
		/* events counted one at a time need none kept, but an open eager burst's */
		keep_ns[k] = ~0ull;
		upto = t->nr_events;
		if (t->nr_burst && t->burst_events <= t->nr_events) {
			keep_ns[k] = t->burst_start_ts;
			upto -= t->burst_events;
		}
		/* and a forward beside graphs that may still turn back into kernels */
		if (t->pending_forward && t->pending_forward <= upto) {
			upto = t->pending_forward - 1;
			keep_ns[k] = t->events[upto].ts;
		}
		for (size_t j = 0; j < upto && pl->stage == PLAN_STATS && !ret; j++)
			ret = stats_event(pt, &t->events[j]);
		if (pl->stage == PLAN_STATS && !ret)
			ret = plan_sites(pt, v, t, upto);
		if (pl->stage == PLAN_STATS && !ret)
			ret = plan_frames(pt, v, t, upto);
		if (pl->stage == PLAN_STATS || !pt->anchored)
			continue;
		tc = plan_ctx(m, t, pt);
		ret = iters_step(pl, &tc, pt, final, &keep_ns[k]);
		free(tc.iters);
		free(tc.event_stacks);
	}
	return ret;
}

/* add_pieces' end, for a round counted; 1: the family grew, another round. */
static bool pieces_round(struct thread_ctx *tc)
{
	bool grown = roles__mark_pieces(tc);

	for (size_t id = 0; id < tc->v->nr_execs; id++)
		tc->stats[id].adjacent = tc->stats[id].repeats = 0;
	return grown;
}

/* As the anchor part of analyse_threads, thread by thread, pieces rounds from the pairs. */
static void mark_all(struct cycles_plan *pl, struct model *m)
{
	struct model_view *v = model__view(m);

	for (size_t k = 0; k < pl->nr_threads && k < v->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];
		struct thread_ctx tc = plan_ctx(m, v->threads[k], pt);
		struct model_exec *anchor;

		if (!pt->anchored || v->execs[pt->anchor]->role != ROLE_UNKNOWN)
			continue;
		anchor = v->execs[pt->anchor];
		if (pt->verify_from != ROLE_FROM_KERNELS) {
			roles__mark_verify(&tc, anchor, pt->verify_from);
			continue;
		}
		roles__mark_family(&tc, anchor, pt->verify_from);
		do
			count_adjacent(&tc, pt);
		while (pieces_round(&tc));
	}
}

static void end_stats(struct cycles_plan *pl, struct model *m)
{
	struct model_view *v = model__view(m);

	pl->calib = v->calib;
	for (size_t k = 0; k < pl->nr_threads && k < v->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];
		struct thread_ctx tc = plan_ctx(m, v->threads[k], pt);
		struct model_exec *anchor;

		if (!pt->graphs)
			continue;
		anchor = roles__choose(&tc, &pt->evidence, &pt->verify_from);
		pt->anchored = anchor != NULL;
		pt->anchor = anchor ? anchor->id : 0;
	}
}

static int loop_start_of(const struct model_thread *t, const struct plan_thread *pt)
{
	__u64 bound = thread_mark(t) + pt->longest_period;
	const struct exec_stats *st;

	if (pt->first_nothing && pt->first_nothing_ts <= bound)
		return 0;
	if (!pt->start_found || pt->start_how != OPEN_GRAPH || pt->start_open_ts <= bound)
		return 0;
	st = &pt->stats[pt->start_open_exec];
	return leads__is_lead(st) ? -1 : leads__is_follower(st) ? 1 : 0;
}

/* As decide_lead, from what the pass counted. */
static void end_leads(struct cycles_plan *pl, const struct model_view *v)
{
	for (size_t k = 0; k < pl->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];
		int says[LEAD_FROM_NR - LEAD_STRUCTURE];
		bool any = false;

		pt->run_iters = pt->nr_iters;
		pt->lead_from = LEAD_NONE;
		pt->lead_extends = false;
		for (size_t id = 0; id < pt->nr_stats && !any; id++)
			any = pt->stats[id].lead;
		if (!pt->anchored || !any)
			continue;
		says[LEAD_STRUCTURE - 1] = sign(pt->structure_votes);
		says[LEAD_SITE - 1] = sign(pt->site_votes);
		says[LEAD_LOOP_END - 1] = pt->loop_end;
		says[LEAD_LOOP_START - 1] = loop_start_of(v->threads[k], pt);
		says[LEAD_SHAPE - 1] = pt->shape_votes > 0 ? 1 : -1;
		for (int r = 0; r < LEAD_FROM_NR - LEAD_STRUCTURE; r++)
			if (says[r]) {
				pt->lead_from = LEAD_STRUCTURE + r;
				pt->lead_extends = says[r] > 0;
				break;
			}
	}
	/* vote_roles: the lead extends, if decided so; the rest draft */
	for (size_t k = 0; k < pl->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];

		for (size_t id = 0; id < pt->nr_stats; id++) {
			struct exec_stats *st = &pt->stats[id];

			st->extend_votes = pt->lead_extends ? st->voted_lead : 0;
			st->draft_votes = st->voted - st->extend_votes;
		}
	}
}

/* apply_votes thread by thread, then the family rule; and which roles each thread launches. */
static void end_votes(struct cycles_plan *pl, struct model *m)
{
	struct model_view *v = model__view(m);

	for (size_t k = 0; k < pl->nr_threads && k < v->nr_threads; k++) {
		struct thread_ctx tc = plan_ctx(m, v->threads[k], &pl->threads[k]);

		if (pl->threads[k].anchored)
			leads__apply_votes(&tc);
	}
	roles__by_family(v);
	for (size_t k = 0; k < pl->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];

		for (size_t id = 0; id < pt->nr_stats && id < v->nr_execs; id++) {
			if (!pt->stats[id].launches)
				continue;
			pt->has_extend |= v->execs[id]->role == ROLE_EXTEND;
			pt->graph_drafts |= v->execs[id]->role == ROLE_DRAFT;
		}
	}
}

/* A pass starts afresh, a last pass begun before too: nothing counted, nothing settled. */
void cycles_plan__begin(struct cycles_plan *pl)
{
	for (size_t k = 0; k < pl->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];

		if (pt->run.store)
			fclose(pt->run.store);
		if (pt->run.launches)
			fclose(pt->run.launches);
		pt->run = (struct loop){ .tgid = pt->run.tgid, .tid = pt->run.tid, .rank = -1 };
		pt->nr_owned = 0;
		pt->done_vs = 0;
		pt->nr_iters = 0;
	}
}

int cycles_plan__end_pass(struct cycles_plan *pl, struct model *m)
{
	struct model_view *v = model__view(m);

	for (size_t k = 0; k < v->nr_threads; k++)
		if (!plan_thread(pl, v, v->threads[k]))
			return -ENOMEM;
	switch (pl->stage) {
	case PLAN_STATS:
		end_stats(pl, m);
		mark_all(pl, m);
		pl->stage = PLAN_LEADS;
		break;
	case PLAN_LEADS:
		end_leads(pl, v);
		end_votes(pl, m);
		pl->stage = PLAN_FINAL;
		break;
	case PLAN_GAP:
		pl->gap_known = true;
		pl->stage = PLAN_FINAL;
		break;
	default:
		return 0;
	}
	return save_roles(pl, v);
}

static long settled_search(const struct model_thread *t, __u64 ts)
{
	size_t lo = 0, hi = t->nr_events;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->events[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nr_events && t->events[lo].ts == ts ? (long)lo : -1;
}

/* Accept syncs that iterations settled in earlier windows took are no one else's. */
static void claim_settled(struct thread_ctx *tc, const struct plan_thread *pt)
{
	for (size_t k = 0; k < pt->nr_owned; k++) {
		__u64 ts = pt->owned[k].accept_ts;
		long j = ts ? settled_search(tc->t, ts) : -1;

		if (j >= 0)
			tc->accept_of[j] = CLAIMED;
	}
}

static const struct plan_iter *owned_iter(const struct plan_thread *pt, __u64 vs_ts)
{
	for (size_t k = pt->nr_owned; k-- > 0;)
		if (pt->owned[k].vs_ts == vs_ts)
			return &pt->owned[k];
	return NULL;
}

static int settle_iter(struct plan_thread *pt, const struct plan_iter *pi)
{
	if (pt->nr_owned == pt->cap_owned) {
		size_t cap = pt->cap_owned ? pt->cap_owned * 2 : 32;
		struct plan_iter *grown = realloc(pt->owned, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		pt->owned = grown;
		pt->cap_owned = cap;
	}
	pt->owned[pt->nr_owned++] = *pi;
	return 0;
}

/*
 * The run's first iteration, cut at the recording's start, is trusted by the
 * thread's longest draft gap over the whole run (trust_first_drafts): -EAGAIN
 * until a pass has found it. Another thread's gap is no guide (a merge's other
 * window of the process, another rank).
 */
static int trust_first(struct cycles_plan *pl, const struct plan_thread *pt,
		       struct thread_ctx *tc)
{
	struct iter *it = &tc->iters[0];

	if (it->draft_seen || it->draft_cut || it->draft == NONE)
		return 0;
	if (!pl->gap_known) {
		pl->stage = PLAN_GAP;
		return -EAGAIN;
	}
	if (tc->t->events[it->draft].ts > thread_mark(tc->t) + pt->gap)
		it->draft_seen = true;
	return 0;
}

/* Iteration i settles now: counted over the run, its cycle stored and in the window's loop. */
static int settle_cycle(struct thread_ctx *tc, struct plan_thread *pt, size_t i,
			struct loop *lp, size_t *cap)
{
	const struct iter *it = &tc->iters[i];
	struct plan_iter pi = { .vs_ts = tc->t->events[it->vs].ts, .cycle = -1,
				.no_draft = lp->iters[i].no_draft };
	struct cycle c;
	int ret;

	pt->run.iterations++;
	if (it->accept != NONE)
		pi.accept_ts = tc->t->events[it->accept].ts;
	if (boundaries__count_iter(tc, i, &pt->run, &c)) {
		c.index = pt->run.nr_cycles;
		ret = loop__store_cycle(&pt->run, &c);
		if (ret)
			return ret;
		if (loop__push_cycle(lp, cap, &c))
			return -ENOMEM;
		lp->cycles[lp->nr_cycles - 1].index = c.index;
		pi.cycle = c.index;
	}
	lp->iters[i].cycle = pi.cycle;
	return settle_iter(pt, &pi);
}

/* One loop thread's window in the last pass; 1: it has no iteration in the window. */
static int window_loop(struct cycles_plan *pl, struct thread_ctx *tc, struct plan_thread *pt,
		       bool final, struct loop *lp, struct plan_loop_window *w)
{
	const struct model_thread *t = tc->t;
	size_t lo, hi, cap = 0;
	int ret = 0;

	if (boundaries__groups(tc))
		return -ENOMEM;
	if (!tc->nr_iters)
		return 1;
	boundaries__accept_ends(tc);
	tc->accept_of = malloc(t->nr_events * sizeof(*tc->accept_of));
	lp->iters = calloc(tc->nr_iters, sizeof(*lp->iters));
	if (!tc->accept_of || !lp->iters)
		return -ENOMEM;
	for (size_t j = 0; j < t->nr_events; j++)
		tc->accept_of[j] = NONE;
	claim_settled(tc, pt);
	owned_range(tc, pt, final, &lo, &hi);
	if (!final && pl->hold_ns && pl->hold_ns != ~0ull)
		hi = held_back(tc, lo, hi, pl->hold_ns);
	boundaries__find_parts(tc, false);
	if (!pt->run.iterations && !lo && hi)
		ret = trust_first(pl, pt, tc);
	*lp = (struct loop){ .tgid = t->tgid, .tid = t->tid, .rank = pt->run.rank,
			     .verify_exec = pt->anchor, .verify_from = pt->verify_from,
			     .evidence = pt->evidence,
			     .lead_from = pt->lead_from, .lead_extends = pt->lead_extends,
			     .iters = lp->iters, .nr_iters = tc->nr_iters };
	for (size_t i = 0; i < tc->nr_iters; i++) {
		const struct plan_iter *pi = i < lo ? owned_iter(pt, t->events[tc->iters[i].vs].ts)
						    : NULL;

		boundaries__export_iter(tc, i, &lp->iters[i]);
		if (pi) {
			lp->iters[i].cycle = pi->cycle;
			lp->iters[i].no_draft = pi->no_draft;
		}
	}
	for (size_t i = lo; i < hi && !ret; i++)
		ret = settle_cycle(tc, pt, i, lp, &cap);
	if (hi > lo)
		pt->done_vs = t->events[tc->iters[hi - 1].vs].ts;
	*w = (struct plan_loop_window){ .owned_from = lo, .owned_to = hi,
					.keep = hi > CONTEXT_ITERS ? hi - CONTEXT_ITERS : 0,
					.keep_all = !pt->run.iterations };
	return ret;
}

int cycles_plan__window(struct cycles_plan *pl, struct model *m, bool final, struct cycles *out,
			struct plan_loop_window **win)
{
	struct model_view *v = model__view(m);
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->loops = calloc(v->nr_threads ? v->nr_threads : 1, sizeof(*out->loops));
	*win = calloc(v->nr_threads ? v->nr_threads : 1, sizeof(**win));
	if (!out->loops || !*win)
		return -ENOMEM;
	for (size_t k = 0; k < v->nr_threads && !ret; k++) {
		struct plan_thread *pt = plan_thread(pl, v, v->threads[k]);
		struct thread_ctx tc;

		if (!pt)
			return -ENOMEM;
		if (!pt->anchored || !pt->run_iters)
			continue;
		pt->run.rank = loop__rank_of(v, pt->run.tgid);
		tc = plan_ctx(m, v->threads[k], pt);
		ret = window_loop(pl, &tc, pt, final, &out->loops[out->nr_loops],
				  &(*win)[out->nr_loops]);
		if (ret == 1)
			ret = 0;
		else
			out->nr_loops++;
		free(tc.iters);
		free(tc.event_stacks);
		free(tc.accept_of);
	}
	return ret;
}

void cycles_plan__kept(struct cycles_plan *pl, const struct model *m, const __u64 *keep_ns)
{
	const struct model_view *v = model__view((struct model *)m);

	for (size_t k = 0; k < pl->nr_threads && k < v->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];
		size_t kept = 0;

		for (size_t i = 0; i < pt->nr_owned; i++) {
			const struct plan_iter *pi = &pt->owned[i];

			if (pi->vs_ts >= keep_ns[k] || pi->accept_ts >= keep_ns[k])
				pt->owned[kept++] = *pi;
		}
		pt->nr_owned = kept;
	}
}

int cycles_plan__loops(struct cycles_plan *pl, struct model *m, struct cycles *out)
{
	struct model_view *v = model__view(m);

	memset(out, 0, sizeof(*out));
	out->loops = calloc(pl->nr_threads ? pl->nr_threads : 1, sizeof(*out->loops));
	if (!out->loops)
		return -ENOMEM;
	for (size_t k = 0; k < pl->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];
		struct loop *lp = &out->loops[out->nr_loops];

		if (!pt->anchored || !pt->run_iters)
			continue;
		*lp = pt->run;
		lp->rank = loop__rank_of(v, lp->tgid);
		lp->verify_exec = pt->anchor;
		lp->verify_from = pt->verify_from;
		lp->evidence = pt->evidence;
		lp->lead_from = pt->lead_from;
		lp->lead_extends = pt->lead_extends;
		pt->run.store = NULL;
		pt->run.launches = NULL;
		out->nr_loops++;
	}
	qsort(out->loops, out->nr_loops, sizeof(*out->loops), loop__cmp);
	return 0;
}

struct loop *cycles_plan__run_loop(struct cycles *run, __u32 tgid, __u32 tid)
{
	for (size_t i = 0; i < run->nr_loops; i++)
		if (run->loops[i].tgid == tgid && run->loops[i].tid == tid)
			return &run->loops[i];
	return NULL;
}

struct loop *cycles_plan__loop_of(struct cycles_plan *pl, __u32 tgid, __u32 tid)
{
	for (size_t i = 0; i < pl->nr_threads; i++)
		if (pl->threads[i].run.tgid == tgid && pl->threads[i].run.tid == tid)
			return &pl->threads[i].run;
	return NULL;
}

void cycles_plan__hold(struct cycles_plan *pl, __u64 before_ns)
{
	pl->hold_ns = before_ns;
}

bool cycles_plan__loop_thread(const struct cycles_plan *pl, size_t k)
{
	return k < pl->nr_threads && pl->threads[k].anchored && pl->threads[k].run_iters;
}

/* What of a graph launch its role's trace needs. */
struct stored_launch {
	__u64 ts, handle, stream;
};

int loop__each_launch(const struct loop *lp, const struct model_view *v,
		      int (*fn)(void *ctx, const struct loop_event *ev), void *ctx)
{
	struct stored_launch rec;
	int ret = 0;

	if (!lp->launches) {
		const struct model_thread *t = NULL;

		for (size_t i = 0; i < v->nr_threads && !t; i++)
			if (v->threads[i]->tgid == lp->tgid && v->threads[i]->tid == lp->tid)
				t = v->threads[i];
		for (size_t i = 0; t && i < t->nr_events && !ret; i++)
			if (t->events[i].kind == LOOP_GRAPH)
				ret = fn(ctx, &t->events[i]);
		return ret;
	}
	if (fflush(lp->launches) || fseek(lp->launches, 0, SEEK_SET))
		return -EIO;
	while (!ret && fread(&rec, sizeof(rec), 1, lp->launches) == 1) {
		struct loop_event ev = { .ts = rec.ts, .handle = rec.handle, .stream = rec.stream,
					 .kind = LOOP_GRAPH };

		ret = fn(ctx, &ev);
	}
	return ret ? ret : ferror(lp->launches) ? -EIO : 0;
}

int cycles_plan__launches(struct cycles_plan *pl, const struct model *m, const __u64 *keep_ns)
{
	const struct model_view *v = model__view((struct model *)m);

	for (size_t k = 0; k < v->nr_threads; k++) {
		const struct model_thread *t = v->threads[k];
		struct loop *run;

		if (!cycles_plan__loop_thread(pl, k))
			continue;
		run = &pl->threads[k].run;
		for (size_t j = 0; j < t->nr_events && t->events[j].ts < keep_ns[k]; j++) {
			const struct loop_event *e = &t->events[j];
			struct stored_launch rec = { e->ts, e->handle, e->stream };
			int ret;

			if (e->kind != LOOP_GRAPH)
				continue;
			ret = spill__write(&run->launches, &rec, sizeof(rec));
			if (ret)
				return ret;
		}
	}
	return 0;
}
