// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Cycles from one thread's loop events. The verify launches anchor every
 * iteration; around them, in entry order:
 *
 *   ... [draft launches] [verify launches] [accept: eager work, the D2H copy,
 *   the sync that brings the result] [extend launches] [next draft ...]
 *
 * Roles first (verify from captured kernels or sync waits, draft and extend
 * from where they are launched), then the boundaries of each iteration.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "callstack.h"
#include "cycles.h"
#include "gputime.h"
#include "grow.h"
#include "hmap.h"
#include "spill.h"

#define NONE ((size_t)-1)

struct exec_stats {
	__u32 launches;		/* on this thread */
	/* of those, launches followed, before the next graph launch, by: */
	__u32 followed;		/* a sync */
	__u32 handed;		/* a copy to the host */
	__u64 wait_ns;		/* time blocked in those syncs */
	__u32 adjacent;		/* launches next to a verify piece (capture order +-1) */
	__u32 repeats;		/* launches next to another exec of the same kernels: a step */
	__u32 extend_votes, draft_votes;
	__u32 lead;		/* launches as the lead of a cycle (first graph after accept) */
	__u32 follow;		/* launches as the graph right after a lead */
	/* a whole run in windows: the votes of either lead reading, until one is decided */
	__u32 voted, voted_lead;	/* launches between an accept and the next verify; leads */
	__u32 self_next;	/* launches next to one of its own (graphs between: none) */
	__u32 after_run;	/* launches right after a run of another exec's launches */
	/* the call site that most of its launches are followed by a sync from (recorded stacks) */
	__u32 site, site_launches;
};

/* Up to this many call sites of syncs between two graph launches are read. */
#define GAP_SITES 4

/* Call sites of the syncs after each graph launch, up to the next one. */
struct site_stats {
	struct hmap counts;	/* (exec + 1, site): launches followed by it; (0, site): repeats */
	size_t last;		/* exec of the last graph launch, NONE before the first */
	__u32 cur[GAP_SITES], prev[GAP_SITES];	/* sites since it, and before it */
	__u8 nr_cur, nr_prev;
};

/* One verify launch group and what surrounds it. */
struct iter {
	size_t vs, ve;		/* first and last verify launch */
	size_t region_end;	/* next group's vs, or the number of events */
	size_t after;		/* end of accept's calls: first graph launch after verify */
	size_t draft;		/* first draft launch, NONE: nothing launched before verify */
	bool draft_seen;	/* the draft started inside the recording */
	bool draft_cut;		/* its first step may be in an unsplit burst before it */
	size_t x1, xl;		/* first and last extend launch, NONE if none */
	size_t accept;		/* the accept sync, NONE if none found */
	size_t copy;		/* the result's copy to the host, NONE if none */
	bool accept_deferred;
	bool accept_cut;	/* its accept sync is a deferred one past the recording's end */
};

struct thread_ctx {
	struct model *m;
	struct model_view *v;
	struct model_thread *t;
	struct exec_stats *stats;	/* by exec id */
	struct iter *iters;
	size_t nr_iters;
	size_t *accept_of;		/* by event: iteration whose accept sync it is, or NONE */
	bool copies_d2h;		/* the thread copies results to the host */
	bool has_extend;		/* some exec launched here is an extend graph */
	bool graph_drafts;		/* some exec launched here is a draft graph */
	bool eager;			/* its forwards are eager bursts (LOOP_EAGER) */
	bool plain_graphs;		/* it launches CUDA graphs too */
	struct site_stats *sites;	/* call sites of syncs; NULL: none recorded */
	struct site_stats own_sites;	/* the whole run's, where the thread is read at once */
	enum lead_from lead_from;
	bool lead_extends;
};

static bool is_launch(const struct loop_event *e)
{
	return e->kind == LOOP_GRAPH || e->kind == LOOP_KERNEL || e->kind == LOOP_COLLECTIVE;
}

static bool is_blocking(const struct loop_event *e)
{
	return e->flags & LOOP_BLOCKING;
}

static struct model_exec *exec_of(const struct thread_ctx *tc, const struct loop_event *e)
{
	return e->kind == LOOP_GRAPH ? tc->v->execs[e->handle] : NULL;
}

/* A later launch of an eager burst: the burst's first launch, if the thread still holds it. */
static const struct loop_event *burst_head(const struct thread_ctx *tc, const struct loop_event *e)
{
	const struct model_thread *t = tc->t;

	if (!(e->flags & LOOP_IN_BURST) || e < t->events || e >= t->events + t->nr_events ||
	    (size_t)(e - t->events) < e->serial)
		return NULL;
	e -= e->serial;
	return e->flags & LOOP_EAGER ? e : NULL;
}

/* An eager burst's launches all have the role of its forward. */
static enum graph_role role_of(const struct thread_ctx *tc, const struct loop_event *e)
{
	const struct loop_event *head = burst_head(tc, e);
	struct model_exec *x = exec_of(tc, head ? head : e);

	return x ? x->role : ROLE_UNKNOWN;
}

static __u64 blocked_ns(const struct loop_event *e)
{
	if (!is_blocking(e) || (e->flags & LOOP_UNRETURNED) || e->ts_return < e->ts)
		return 0;
	return e->ts_return - e->ts;
}

/* Kernels and collectives a graph runs: what makes the target forward the biggest. */
static __u32 captured_work(const struct model_capture *cap)
{
	__u32 n = cap->kernel_count;

	for (__u32 i = 0; i < cap->nr_colls; i++)
		n += cap->colls[i].count;
	return n;
}

static bool is_d2h(const struct loop_event *e)
{
	return e->kind == LOOP_COPY && (e->flags & LOOP_D2H);
}

/*
 * Two execs of the same kernels launched back to back are steps of one
 * repeated model (cudagraph trees record a graph per draft position): a
 * verify piece is never one of them, however it was captured.
 */
static bool same_step(const struct model_exec *a, const struct model_exec *b)
{
	return a && b && a != b && a->tgid == b->tgid && a->capture && b->capture &&
	       model__same_kernels(a->capture, b->capture);
}

static bool repeated_step(const struct exec_stats *st)
{
	return st->repeats * 2 > st->launches;
}

static size_t graph_neighbour(const struct model_thread *t, size_t j, int dir);

/*
 * An exec launched right after itself (other calls between, no other graph)
 * counts both launches once: the steps of an eager draft, a sync per token.
 * Returns whether the launch of cur was counted.
 */
static bool count_self_next(struct exec_stats *stats, size_t last, bool last_counted, size_t cur)
{
	if (last != cur)
		return false;
	if (!last_counted)
		stats[last].self_next++;
	stats[cur].self_next++;
	return true;
}

static bool repeats_itself(const struct exec_stats *st)
{
	return st->self_next * 2 > st->launches;
}

static bool has_site(const __u32 *sites, __u8 n, __u32 site)
{
	for (__u8 i = 0; i < n; i++)
		if (sites[i] == site)
			return true;
	return false;
}

/* A sync from site between two graph launches. */
static void site_sync(struct site_stats *ss, __u32 site)
{
	if (site && ss->nr_cur < GAP_SITES && !has_site(ss->cur, ss->nr_cur, site))
		ss->cur[ss->nr_cur++] = site;
}

static int count_up(struct hmap *counts, __u64 a, __u64 b, __u32 *now)
{
	*now = (__u32)(size_t)hmap__get(counts, a, b) + 1;
	return hmap__set(counts, a, b, (void *)(size_t)*now);
}

/*
 * A graph launch (exec next; NONE: the end) ends the last one's gap: each
 * site of a sync in it counts once for that exec, and repeats where a sync
 * from it followed the launch before too (a draft reads each step's token
 * from one place; the verify's sync never follows two launches in a row).
 */
static int site_launch(struct site_stats *ss, struct exec_stats *stats, size_t next)
{
	struct exec_stats *st = ss->last == NONE ? NULL : &stats[ss->last];
	__u32 n;

	for (__u8 i = 0; st && i < ss->nr_cur; i++) {
		__u32 site = ss->cur[i];

		if (count_up(&ss->counts, ss->last + 1, site, &n))
			return -ENOMEM;
		if (n > st->site_launches) {
			st->site = site;
			st->site_launches = n;
		}
		if (has_site(ss->prev, ss->nr_prev, site) && count_up(&ss->counts, 0, site, &n))
			return -ENOMEM;
	}
	memcpy(ss->prev, ss->cur, sizeof(ss->prev));
	ss->nr_prev = ss->nr_cur;
	ss->nr_cur = 0;
	ss->last = next;
	return 0;
}

/* Call site of each sync among t's events, by event; NULL: no stacks (or no memory). */
static __u32 *event_sites(const struct model_view *v, const struct model_thread *t)
{
	__u32 *sites;

	if (!v->stacks || !t->nr_events || !(sites = calloc(t->nr_events, sizeof(*sites))))
		return NULL;
	for (size_t i = 0; i < v->nr_syncs; i++) {
		const struct model_sync *sy = &v->syncs[i];
		const struct cs_stack *st;
		size_t k = sy->event_index;

		if (sy->tid != t->tid || sy->tgid != t->tgid || !sy->stack || k >= t->nr_events ||
		    t->events[k].ts != sy->ts || !is_blocking(&t->events[k]))
			continue;
		st = callstacks__stack(v->stacks, sy->stack);
		sites[k] = st ? st->site : 0;
	}
	return sites;
}

/* Sites of the syncs after each graph launch (event_sites); none without stacks or memory. */
static int sites_of_events(struct site_stats *ss, struct exec_stats *stats,
			   const struct model_thread *t, const __u32 *sites, size_t upto)
{
	for (size_t j = 0; j < upto; j++) {
		if (t->events[j].kind == LOOP_GRAPH && site_launch(ss, stats, t->events[j].handle))
			return -ENOMEM;
		if (sites[j])
			site_sync(ss, sites[j]);
	}
	return 0;
}

static void collect_sites(struct thread_ctx *tc)
{
	__u32 *sites = event_sites(tc->v, tc->t);

	tc->own_sites = (struct site_stats){ .last = NONE };
	tc->sites = sites ? &tc->own_sites : NULL;
	if (sites && (sites_of_events(tc->sites, tc->stats, tc->t, sites, tc->t->nr_events) ||
		      site_launch(tc->sites, tc->stats, NONE)))
		tc->sites = NULL;
	free(sites);
}

static void collect_stats(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	size_t last = NONE;
	bool last_counted = false;

	collect_sites(tc);
	for (size_t j = 0; j < t->nr_events; j++) {
		const struct loop_event *e = &t->events[j];
		struct exec_stats *st;
		bool synced = false, handed = false;
		size_t prev;

		tc->copies_d2h |= is_d2h(e);
		if (e->kind != LOOP_GRAPH)
			continue;
		tc->eager |= e->flags & LOOP_EAGER;
		tc->plain_graphs |= !(e->flags & LOOP_EAGER);
		st = &tc->stats[e->handle];
		st->launches++;
		st->after_run += last != NONE && last != e->handle && last_counted;
		last_counted = count_self_next(tc->stats, last, last_counted, e->handle);
		last = e->handle;
		prev = graph_neighbour(t, j, -1);
		if (prev != NONE && same_step(exec_of(tc, &t->events[prev]), exec_of(tc, e))) {
			tc->stats[t->events[prev].handle].repeats++;
			st->repeats++;
		}
		/* up to the next graph launch: a copy to the host, and the first sync */
		for (size_t k = j + 1; k < t->nr_events && t->events[k].kind != LOOP_GRAPH; k++) {
			if (!handed && is_d2h(&t->events[k])) {
				handed = true;
				st->handed++;
			}
			if (!synced && is_blocking(&t->events[k])) {
				synced = true;
				st->followed++;
				st->wait_ns += blocked_ns(&t->events[k]);
			}
		}
	}
}

static double mean_wait(const struct exec_stats *st)
{
	return st->launches ? (double)st->wait_ns / st->launches : 0;
}

/*
 * Verify hands its result to the host: a D2H copy (or, where the thread makes
 * none, a sync) follows most of its launches before the next graph launch.
 */
static bool hands_result(const struct thread_ctx *tc, const struct exec_stats *st)
{
	__u32 n = tc->copies_d2h ? st->handed : st->followed;

	return st->launches >= 2 && n * 2 > st->launches;
}

/*
 * The verify anchor, among the graphs that hand a result to the host (all
 * graphs if none does): the most captured kernels, else the longest wait in
 * the sync that follows it.
 */
static bool after_steps(const struct exec_stats *st)
{
	return st->after_run * 2 > st->launches;
}

/*
 * An eager loop's verify: of the forwards that hand a result to the host, the
 * one of most launches that does not repeat itself (the draft repeats, a sync
 * per token between), and, where one comes right after the draft's steps,
 * one that does (what opens a draft, the cache trim with it, comes after the
 * accept); with as many launches as a repeating one (the draft is the
 * target), only that structure told them apart. Ties: the longest wait.
 */
/* Graph launches followed by a sync from site, as was the launch before. */
static __u32 site_repeats(const struct thread_ctx *tc, __u32 site)
{
	return tc->sites ? (__u32)(size_t)hmap__get(&tc->sites->counts, 0, site) : 0;
}

static bool eager_candidate(const struct thread_ctx *tc, size_t id, bool any_hands)
{
	const struct exec_stats *st = &tc->stats[id];

	return tc->v->execs[id]->eager && st->launches >= 2 && (!any_hands || hands_result(tc, st));
}

/*
 * By call sites (where stacks were recorded): the forwards that hand a result
 * are followed by syncs from two places, the draft's read of each token and
 * the verify's; the draft's follow one another when it drafts two tokens or
 * more, the verify's never do. Verify: the forward of most launches whose
 * syncs come from the one site that never repeats while another does. NULL:
 * the sites do not tell.
 */
static struct model_exec *pick_by_sites(const struct thread_ctx *tc, bool any_hands)
{
	struct model_exec *best = NULL;
	__u32 quiet = 0;
	bool stepping = false;

	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		__u32 site = tc->stats[id].site;

		if (!eager_candidate(tc, id, any_hands) || !tc->stats[id].site_launches)
			continue;
		if (site_repeats(tc, site))
			stepping = true;
		else if (quiet && quiet != site)
			return NULL;
		else
			quiet = site;
	}
	if (!stepping || !quiet)
		return NULL;
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		struct model_exec *x = tc->v->execs[id];

		if (!eager_candidate(tc, id, any_hands) || !tc->stats[id].site_launches ||
		    tc->stats[id].site != quiet)
			continue;
		if (!best || x->eager_kernels > best->eager_kernels ||
		    (x->eager_kernels == best->eager_kernels &&
		     mean_wait(&tc->stats[id]) > mean_wait(&tc->stats[best->id])))
			best = x;
	}
	return best;
}

static struct model_exec *pick_eager_anchor(struct thread_ctx *tc, bool any_hands,
					    enum role_source *from)
{
	struct model_exec *best = NULL, *by_sites;
	__u32 repeating = 0;
	bool steps_seen = false;

	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];
		const struct model_exec *x = tc->v->execs[id];

		if (x->eager && st->launches >= 2 && (!any_hands || hands_result(tc, st)) &&
		    !repeats_itself(st))
			steps_seen |= after_steps(st);
	}
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];
		struct model_exec *x = tc->v->execs[id];

		if (!x->eager || st->launches < 2 || (any_hands && !hands_result(tc, st)))
			continue;
		if (repeats_itself(st)) {
			repeating = x->eager_kernels > repeating ? x->eager_kernels : repeating;
			continue;
		}
		if (steps_seen && !after_steps(st))
			continue;
		if (!best || x->eager_kernels > best->eager_kernels ||
		    (x->eager_kernels == best->eager_kernels &&
		     mean_wait(st) > mean_wait(&tc->stats[best->id])))
			best = x;
	}
	if (best && tc->plain_graphs) {
		*from = ROLE_FROM_EAGER_GRAPHS;
		return best;
	}
	/* sizes decide where the draft repeats and is smaller; else the call sites, if they tell */
	by_sites = pick_by_sites(tc, any_hands);
	if (by_sites && (!best || by_sites != best || !repeating ||
			 best->eager_kernels <= repeating)) {
		*from = ROLE_FROM_EAGER_SITES;
		return by_sites;
	}
	if (best)
		*from = best->eager_kernels > repeating ? ROLE_FROM_EAGER : ROLE_FROM_EAGER_STEPS;
	return best;
}

/*
 * Beside graphs, an eager forward (model_eager.c: larger than all of them,
 * handing a result) is verify unless a graph hands the result too: then an
 * eager forward is work outside the loop, such as an eager prefill.
 */
static struct model_exec *pick_anchor(struct thread_ctx *tc, enum role_source *from)
{
	bool any_hands = false, graph_hands = false;

	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		bool hands = hands_result(tc, &tc->stats[id]);

		any_hands |= hands;
		graph_hands |= hands && !tc->v->execs[id]->eager;
	}
	if (tc->eager && !graph_hands)
		return pick_eager_anchor(tc, any_hands, from);
	for (int pass = 0; pass < 2; pass++) {
		struct model_exec *best = NULL;
		__u32 best_kernels = 0;
		double best_wait = -1;

		for (size_t id = 0; id < tc->v->nr_execs; id++) {
			const struct exec_stats *st = &tc->stats[id];
			struct model_exec *x = tc->v->execs[id];

			if (x->eager || st->launches < 2 || (any_hands && !hands_result(tc, st)))
				continue;
			if (pass == 0 && x->capture && captured_work(x->capture) > best_kernels) {
				best = x;
				best_kernels = captured_work(x->capture);
			} else if (pass == 1 && st->followed && mean_wait(st) > best_wait) {
				best = x;
				best_wait = mean_wait(st);
			}
		}
		if (best) {
			*from = pass == 0 ? ROLE_FROM_KERNELS : ROLE_FROM_WAIT;
			return best;
		}
	}
	return NULL;
}

static void set_role(struct model_exec *x, enum graph_role role, enum role_source from)
{
	x->role = role;
	x->role_from = from;
}

/* Every exec of the process with the anchor's kernels: its other batch sizes. */
static void mark_family(struct thread_ctx *tc, const struct model_exec *like,
			enum role_source from)
{
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		struct model_exec *x = tc->v->execs[id];

		if (x->tgid != like->tgid || x->role == ROLE_VERIFY)
			continue;
		if (x == like || model__same_kernels(x->capture, like->capture))
			set_role(x, ROLE_VERIFY, x == like ? from : ROLE_FROM_FAMILY);
	}
}

/* Graph launch next to event j in direction dir (+1/-1) with no sync between, or NONE. */
static size_t graph_neighbour(const struct model_thread *t, size_t j, int dir)
{
	for (size_t k = j + dir; k < t->nr_events; k += dir) {
		if (is_blocking(&t->events[k]))
			return NONE;
		if (t->events[k].kind == LOOP_GRAPH)
			return k;
	}
	return NONE;
}

/*
 * Piecewise verify: a graph launched right before (after) a verify piece,
 * captured right before (after) it, is the neighbouring piece of one forward.
 */
static bool add_pieces(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	bool grown = false;

	for (size_t id = 0; id < tc->v->nr_execs; id++)
		tc->stats[id].adjacent = 0;
	for (size_t j = 0; j < t->nr_events; j++) {
		const struct model_exec *x = exec_of(tc, &t->events[j]);

		if (!x || x->role != ROLE_VERIFY || !x->capture)
			continue;
		for (int dir = -1; dir <= 1; dir += 2) {
			size_t k = graph_neighbour(t, j, dir);
			const struct model_exec *n = k == NONE ? NULL : exec_of(tc, &t->events[k]);

			if (n && n->role != ROLE_VERIFY && n->capture && n->tgid == x->tgid &&
			    n->capture->order == x->capture->order + dir)
				tc->stats[n->id].adjacent++;
		}
	}
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];

		if (st->launches && st->adjacent * 2 > st->launches && !repeated_step(st) &&
		    tc->v->execs[id]->role != ROLE_VERIFY) {
			mark_family(tc, tc->v->execs[id], ROLE_FROM_PIECES);
			grown = true;
		}
	}
	return grown;
}

static bool same_site(const struct thread_ctx *tc, size_t a, size_t b)
{
	return tc->stats[a].site_launches && tc->stats[b].site_launches &&
	       tc->stats[a].site == tc->stats[b].site;
}

/*
 * The verify at a size whose kernels differ (a GEMM library picks its kernel
 * by the matrix's shape): launched again, not repeating itself, handing a
 * result, and told as the anchor was: right after runs of draft steps as it
 * is, or its sync from the anchor's call site (where no step repeats, nothing
 * else tells it from a draft step).
 */
static bool verify_variant(const struct thread_ctx *tc, const struct model_exec *anchor,
			   size_t id)
{
	const struct exec_stats *st = &tc->stats[id], *ast = &tc->stats[anchor->id];

	return st->launches >= 2 && !repeats_itself(st) && hands_result(tc, st) &&
	       ((after_steps(ast) && after_steps(st)) || same_site(tc, id, anchor->id));
}

/*
 * The verify forward at its other sizes: the same functions, as many launches,
 * no repeats; or other functions where it is told as a verify all the same.
 */
static void mark_eager_verify(struct thread_ctx *tc, struct model_exec *anchor,
			      enum role_source from)
{
	set_role(anchor, ROLE_VERIFY, from);
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		struct model_exec *x = tc->v->execs[id];
		bool same_kernels;

		if (x == anchor || !x->eager || x->tgid != anchor->tgid || x->role != ROLE_UNKNOWN)
			continue;
		same_kernels = x->eager_funcs == anchor->eager_funcs &&
			       x->eager_kernels == anchor->eager_kernels;
		/* told by call sites: the draft may be the same model, its syncs are not */
		if (!same_kernels ? !verify_variant(tc, anchor, id) :
		    from == ROLE_FROM_EAGER_SITES ? !same_site(tc, id, anchor->id) :
						    repeats_itself(&tc->stats[id]))
			continue;
		set_role(x, ROLE_VERIFY, ROLE_FROM_FAMILY);
	}
}

static void mark_verify(struct thread_ctx *tc, struct model_exec *anchor, enum role_source from)
{
	const struct exec_stats *ast = &tc->stats[anchor->id];

	if (anchor->eager) {
		mark_eager_verify(tc, anchor, from);
		return;
	}
	if (from == ROLE_FROM_KERNELS) {
		mark_family(tc, anchor, from);
		while (add_pieces(tc))
			;
		return;
	}
	set_role(anchor, ROLE_VERIFY, from);
	/* other batch sizes captured before attach wait as long after their launch */
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];
		struct model_exec *x = tc->v->execs[id];

		if (x == anchor || x->role != ROLE_UNKNOWN || x->capture || !hands_result(tc, st))
			continue;
		if (st->followed * 2 > st->launches && mean_wait(st) * 2 >= mean_wait(ast))
			set_role(x, ROLE_VERIFY, ROLE_FROM_WAIT);
	}
}

static int push_iter(struct thread_ctx *tc, size_t *cap, size_t vs, size_t ve)
{
	if (tc->nr_iters == *cap) {
		size_t n = *cap ? *cap * 2 : 256;
		struct iter *grown = realloc(tc->iters, n * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		tc->iters = grown;
		*cap = n;
	}
	tc->iters[tc->nr_iters++] = (struct iter){ .vs = vs, .ve = ve };
	return 0;
}

/* Verify groups: verify launches with no sync and no other graph launch between. */
static int find_groups(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	size_t cap = 0, vs = NONE, ve = NONE;

	for (size_t j = 0; j <= t->nr_events; j++) {
		const struct loop_event *e = j < t->nr_events ? &t->events[j] : NULL;
		bool verify = e && role_of(tc, e) == ROLE_VERIFY;

		if (verify) {
			if (vs == NONE)
				vs = j;
			ve = j;
			continue;
		}
		if (vs != NONE && (!e || is_blocking(e) || e->kind == LOOP_GRAPH)) {
			if (push_iter(tc, &cap, vs, ve))
				return -ENOMEM;
			vs = NONE;
		}
	}
	return 0;
}

/* Eager work that may be a draft step: on the stream the verify graph goes to. */
static bool on_stream_of(const struct loop_event *e, const struct loop_event *verify)
{
	return e->kind == LOOP_GRAPH || (is_launch(e) && e->stream == verify->stream);
}

/* A draft graph, or an eager launch on the verify stream (an eager draft step). */
static bool is_draft_launch(const struct thread_ctx *tc, const struct loop_event *e,
			    const struct loop_event *verify)
{
	if (e->kind == LOOP_GRAPH || burst_head(tc, e))
		return role_of(tc, e) == ROLE_DRAFT;
	return is_launch(e) && on_stream_of(e, verify);
}

/* Does event j wait for work on stream, queued at or before index since? */
static bool covers(const struct model_thread *t, size_t j, __u64 stream, size_t since)
{
	const struct loop_event *e = &t->events[j];

	if (e->kind != LOOP_SYNC)
		return false;
	if (e->flags & LOOP_CTX_WIDE)
		return true;
	if (e->serial) {
		for (size_t k = since + 1; k < j; k++)
			if (t->events[k].kind == LOOP_RECORD && t->events[k].serial == e->serial &&
			    t->events[k].stream == stream)
				return true;
		return false;
	}
	return e->handle == stream && e->handle;
}

/*
 * Accept's calls end at the first graph launched after verify (extend, or the
 * next draft); with no graph before the next verify, at the first launch on
 * the verify stream after the result's copy.
 */
static void find_accept_ends(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		struct iter *it = &tc->iters[i];
		const struct loop_event *verify = &t->events[it->ve];
		size_t first_eager = NONE;
		bool copied = false;

		it->region_end = i + 1 < tc->nr_iters ? tc->iters[i + 1].vs : t->nr_events;
		it->after = it->region_end;
		for (size_t j = it->ve + 1; j < it->region_end; j++) {
			const struct loop_event *e = &t->events[j];

			if (e->kind == LOOP_GRAPH) {
				it->after = j;
				break;
			}
			copied |= is_d2h(e);
			if (copied && first_eager == NONE && is_launch(e) &&
			    on_stream_of(e, verify))
				first_eager = j;
		}
		if (it->after == it->region_end && first_eager != NONE)
			it->after = first_eager;
	}
}

/*
 * The lead of iteration i: the first graph launched after its accept, when
 * more launches follow before the next verify. It extends the draft over the
 * accepted tokens, or it is the first draft step: decide_lead says which.
 */
static size_t lead_of(const struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	const struct loop_event *verify = &t->events[it->ve];
	size_t launches = 0;

	if (i + 1 >= tc->nr_iters || it->after >= it->region_end ||
	    t->events[it->after].kind != LOOP_GRAPH ||
	    role_of(tc, &t->events[it->after]) == ROLE_VERIFY)
		return NONE;
	for (size_t j = it->after; j < it->region_end && launches < 2; j++)
		launches += on_stream_of(&t->events[j], verify);
	return launches >= 2 ? it->after : NONE;
}

/* The next graph launch after from, before end, that is not verify; NONE if none. */
static size_t next_graph(const struct thread_ctx *tc, size_t from, size_t end)
{
	for (size_t j = from + 1; j < end; j++)
		if (tc->t->events[j].kind == LOOP_GRAPH &&
		    role_of(tc, &tc->t->events[j]) != ROLE_VERIFY)
			return j;
	return NONE;
}

static bool launched_again(const struct thread_ctx *tc, size_t from, size_t end)
{
	for (size_t j = next_graph(tc, from, end); j != NONE; j = next_graph(tc, j, end))
		if (tc->t->events[j].handle == tc->t->events[from].handle)
			return true;
	return false;
}

/* Most launches of the exec are leads (followers: right after a lead). */
static bool is_lead(const struct exec_stats *st)
{
	return st->lead * 2 > st->launches;
}

static bool is_follower(const struct exec_stats *st)
{
	return st->follow * 2 > st->launches;
}

static void count_leads(struct thread_ctx *tc)
{
	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t lead = lead_of(tc, i), next;

		if (lead == NONE)
			continue;
		tc->stats[tc->t->events[lead].handle].lead++;
		next = next_graph(tc, lead, tc->iters[i].region_end);
		if (next != NONE)
			tc->stats[tc->t->events[next].handle].follow++;
	}
}

/*
 * What a cycle's own graphs say of its lead. A draft graph replayed in the
 * cycle while the lead is not: the draft steps are that graph, the lead is
 * something else, an extend (+1). The lead replayed itself: a step (-1).
 * Captured, the lead has the kernels of the graph after it (a step, -1) or
 * others (+1). Else nothing (0).
 */
static int lead_structure(const struct thread_ctx *tc, size_t i, size_t lead)
{
	const struct model_thread *t = tc->t;
	size_t end = tc->iters[i].region_end, next = next_graph(tc, lead, end);
	const struct model_exec *x = exec_of(tc, &t->events[lead]), *n;

	if (launched_again(tc, lead, end))
		return -1;
	for (size_t j = next; j != NONE; j = next_graph(tc, j, end))
		if (launched_again(tc, j, end))
			return 1;
	if (next == NONE)
		return 0;
	n = exec_of(tc, &t->events[next]);
	if (!x->capture || !n->capture)
		return 0;
	return model__same_kernels(x->capture, n->capture) ? -1 : 1;
}

static int sign(long n)
{
	return (n > 0) - (n < 0);
}

static int lead_by_structure(const struct thread_ctx *tc)
{
	long votes = 0;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t lead = lead_of(tc, i);

		if (lead != NONE)
			votes += lead_structure(tc, i, lead);
	}
	return sign(votes);
}

/*
 * The loop's last cycle. After its verify one lead graph, then calls and no
 * more launches: the cycle ends with it, an extend (+1). No graph, and the
 * host waits again after the sync that brought the result: the cycle ends at
 * its accept, the lead is a draft step (-1). Cut inside the cycle: nothing.
 */
static int lead_at_loop_end(const struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	const struct loop_event *verify = &t->events[tc->iters[tc->nr_iters - 1].ve];
	size_t j = tc->iters[tc->nr_iters - 1].ve, graph = NONE, copy = NONE, result = NONE;
	bool went_on = false, waited_again = false;

	while (++j < t->nr_events) {
		const struct loop_event *e = &t->events[j];

		if (graph != NONE && on_stream_of(e, verify))
			return 0;	/* a second graph, or a draft going on */
		if (e->kind == LOOP_GRAPH)
			graph = j;
		else if (graph != NONE)
			went_on = true;
		else if (copy == NONE)
			copy = is_d2h(e) && e->stream == verify->stream ? j : NONE;
		else if (result == NONE)
			result = covers(t, j, verify->stream, copy) ? j : NONE;
		else
			waited_again |= is_blocking(e);
	}
	if (graph != NONE)
		return went_on && is_lead(&tc->stats[t->events[graph].handle]);
	return waited_again ? -1 : 0;
}

enum opening { OPEN_UNSEEN, OPEN_NOTHING, OPEN_EAGER, OPEN_GRAPH };

/*
 * How the draft before verify i opens, roles aside: back past syncs and other
 * work to the last graph launch, then over graphs and eager launches on the
 * verify stream to a sync or another launch, which shows where it began.
 * *open: the earliest graph launch of that run.
 */
static enum opening draft_opening(const struct thread_ctx *tc, size_t i, size_t *open)
{
	const struct model_thread *t = tc->t;
	const struct loop_event *verify = &t->events[tc->iters[i].vs];
	size_t floor = i ? tc->iters[i - 1].ve + 1 : 0, j = tc->iters[i].vs;
	bool synced = false, eager = false;

	for (; j > floor && t->events[j - 1].kind != LOOP_GRAPH; j--) {
		synced |= is_blocking(&t->events[j - 1]);
		eager |= is_launch(&t->events[j - 1]) && on_stream_of(&t->events[j - 1], verify);
	}
	if (j == floor)
		return eager ? OPEN_EAGER : synced || floor ? OPEN_NOTHING : OPEN_UNSEEN;
	for (*open = --j; j > floor; j--) {
		const struct loop_event *e = &t->events[j - 1];

		if (is_blocking(e) || (is_launch(e) && !on_stream_of(e, verify)))
			return OPEN_GRAPH;
		if (e->kind == LOOP_GRAPH)
			*open = j - 1;
	}
	return floor ? OPEN_GRAPH : OPEN_UNSEEN;
}

/* Longest time from one verify launch group to the next: the longest a cycle lasted. */
static __u64 longest_period(const struct thread_ctx *tc)
{
	__u64 longest = 0;

	for (size_t i = 0; i + 1 < tc->nr_iters; i++) {
		__u64 period = tc->t->events[tc->iters[i + 1].vs].ts -
			       tc->t->events[tc->iters[i].vs].ts;

		longest = period > longest ? period : longest;
	}
	return longest;
}

/*
 * The attach mark as a thread's records can show it: a thread that waited for
 * a CPU after the mark made its first recorded call that much later than it
 * would have, so a call begun before the mark may come later than the mark
 * by the time calls follow one another plus that wait.
 */
static __u64 thread_mark(const struct model_view *v, const struct model_thread *t)
{
	return v->attach_done_ns + t->late_start_ns;
}

/*
 * The loop's first draft, past warm-up replays with nothing launched before
 * them, where the recording shows its start. Opened by a lead graph: the lead
 * is a draft step (-1). Opened by the graph that follows the lead in other
 * cycles: the lead is no part of a draft, an extend (+1). It counts only if
 * the loop began later after the attach mark than a cycle ever lasts: the
 * rest of a cycle begun before the mark could not pass for it.
 */
static int lead_at_loop_start(const struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	__u64 bound = thread_mark(tc->v, t) + longest_period(tc);

	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t open = NONE;
		enum opening how = draft_opening(tc, i, &open);
		const struct exec_stats *st;

		if (how == OPEN_NOTHING && t->events[tc->iters[i].vs].ts > bound)
			continue;
		if (how != OPEN_GRAPH || t->events[open].ts <= bound)
			return 0;
		st = &tc->stats[t->events[open].handle];
		return is_lead(st) ? -1 : is_follower(st) ? 1 : 0;
	}
	return 0;
}

/*
 * Nothing seen tells. Two or more graphs after the lead, each its own, read
 * as per-step draft graphs the lead is the first of (as cudagraph trees make
 * them): no extend phase is invented. One graph or eager launches after it
 * read as an extend and its draft (a draft graph holding every step).
 */
static int lead_by_shape(const struct thread_ctx *tc)
{
	long votes = 0;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t lead = lead_of(tc, i), end = tc->iters[i].region_end, next;

		if (lead == NONE)
			continue;
		next = next_graph(tc, lead, end);
		votes += next != NONE && next_graph(tc, next, end) != NONE ? -1 : 1;
	}
	return votes > 0 ? 1 : -1;
}

/* Whether the leads extend, from the first rule that tells (enum lead_from order). */
static void decide_lead(struct thread_ctx *tc)
{
	int (*const rules[])(const struct thread_ctx *) = {
		lead_by_structure, lead_at_loop_end, lead_at_loop_start, lead_by_shape,
	};
	bool any = false;

	count_leads(tc);
	for (size_t id = 0; id < tc->v->nr_execs && !any; id++)
		any = tc->stats[id].lead;
	tc->lead_from = LEAD_NONE;
	tc->lead_extends = false;
	for (int r = 0; any && r < 4; r++) {
		int says = rules[r](tc);

		/* what an earlier window saw (the loop's start) outranks what this one guesses */
		if (!says && r == 0 && tc->t->kept_lead_from) {
			tc->lead_from = tc->t->kept_lead_from;
			tc->lead_extends = tc->t->kept_lead_extends;
			return;
		}
		if (says) {
			tc->lead_from = LEAD_STRUCTURE + r;
			tc->lead_extends = says > 0;
			return;
		}
	}
}

/* Between one accept and the next verify: the lead extends, if decided so; the rest draft. */
static void vote_roles(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;

	decide_lead(tc);
	for (size_t i = 0; i + 1 < tc->nr_iters; i++) {
		const struct iter *it = &tc->iters[i];
		size_t lead = lead_of(tc, i);

		for (size_t j = it->after; j < it->region_end; j++) {
			struct model_exec *x = exec_of(tc, &t->events[j]);

			if (!x || x->role == ROLE_VERIFY)
				continue;
			if (j == lead && tc->lead_extends)
				tc->stats[x->id].extend_votes++;
			else
				tc->stats[x->id].draft_votes++;
		}
	}
}

static void apply_votes(struct thread_ctx *tc)
{
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];
		struct model_exec *x = tc->v->execs[id];

		if (x->role != ROLE_UNKNOWN || (!st->extend_votes && !st->draft_votes))
			continue;
		set_role(x, st->extend_votes > st->draft_votes ? ROLE_EXTEND : ROLE_DRAFT,
			 ROLE_FROM_POSITION);
	}
}

/* The last draft graph launched in [from, vs), past any other call; NONE if none. */
static size_t last_draft_graph(const struct thread_ctx *tc, size_t from, size_t vs)
{
	for (size_t j = vs; j-- > from;) {
		const struct loop_event *e = &tc->t->events[j];

		if (e->kind == LOOP_GRAPH)
			return role_of(tc, e) == ROLE_DRAFT ? j : NONE;
	}
	return NONE;
}

/* Its drafts are eager forwards, a sync per token: no graph launched beside them. */
static bool eager_drafts(const struct thread_ctx *tc)
{
	return tc->eager && !tc->plain_graphs;
}

/*
 * Walking back from verify: past calls that are not draft launches (a sync
 * between draft and verify, work on other streams), then over draft launches
 * (draft graphs, eager launches on the verify stream), up to a sync or a
 * launch that is not a draft. Where the thread drafts with graphs, the walk
 * starts at the last draft graph: eager launches after it and a sync between
 * feed verify, they do not end the draft.
 */
static void find_draft(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	const struct loop_event *verify = &t->events[it->vs];
	size_t floor = i ? tc->iters[i - 1].ve + 1 : 0, j = it->vs;
	size_t graph = tc->graph_drafts ? last_draft_graph(tc, floor, it->vs) : NONE;

	it->draft = NONE;
	it->draft_seen = i > 0;
	it->draft_cut = false;
	if (graph != NONE)
		j = graph + 1;
	while (j-- > floor) {
		const struct loop_event *e = &t->events[j];

		if (is_draft_launch(tc, e, verify)) {
			it->draft = j;
			continue;
		}
		/*
		 * an eager forward of no role, at the recording's start, may be the
		 * draft's first step run on from work before it (a cache trim) and
		 * not split, its forward not known yet: where the draft began is not
		 * known
		 */
		if (!i && it->draft != NONE && eager_drafts(tc) && (e->flags & LOOP_EAGER ||
		    burst_head(tc, e)) && role_of(tc, e) == ROLE_UNKNOWN) {
			it->draft_cut = true;
			return;
		}
		/*
		 * before the first draft launch is found, only a graph launch ends the
		 * walk; an eager draft syncs after each step, so only a launch ends it
		 */
		if (e->kind == LOOP_GRAPH ||
		    (it->draft != NONE && (is_launch(e) || (is_blocking(e) && !eager_drafts(tc))))) {
			it->draft_seen = true;
			return;
		}
	}
	/* ran into the start of the recording: launches before it may be unseen */
}

/* Longest time between two draft launches of one iteration seen whole. */
static __u64 longest_draft_gap(const struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	__u64 longest = 0;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		const struct iter *it = &tc->iters[i];
		size_t prev = it->draft;

		if (prev == NONE || !it->draft_seen)
			continue;
		for (size_t j = prev + 1; j < it->vs; j++) {
			if (!is_draft_launch(tc, &t->events[j], &t->events[it->vs]))
				continue;
			if (t->events[j].ts - t->events[prev].ts > longest)
				longest = t->events[j].ts - t->events[prev].ts;
			prev = j;
		}
	}
	return longest;
}

/*
 * A draft that runs into the start of the recording began there if its first
 * launch came later after the attach mark than draft launches ever follow one
 * another: one made before the mark would have been that close, so after it.
 */
static void trust_first_drafts(struct thread_ctx *tc)
{
	__u64 gap = longest_draft_gap(tc), mark = thread_mark(tc->v, tc->t);

	for (size_t i = 0; i < tc->nr_iters; i++) {
		struct iter *it = &tc->iters[i];

		if (!it->draft_seen && !it->draft_cut && it->draft != NONE &&
		    tc->t->events[it->draft].ts > mark + gap)
			it->draft_seen = true;
	}
}

static size_t draft_or_verify(const struct iter *it)
{
	return it->draft != NONE ? it->draft : it->vs;
}

static void find_extend(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	size_t end, j = it->after;
	enum graph_role role;

	it->x1 = it->xl = NONE;
	if (j >= it->region_end || t->events[j].kind != LOOP_GRAPH)
		return;
	if (i + 1 < tc->nr_iters) {
		/* everything launched between accept and the next draft extends */
		end = draft_or_verify(&tc->iters[i + 1]);
		for (it->x1 = j; j < end; j++)
			if (is_launch(&t->events[j]))
				it->xl = j;
		if (it->x1 >= end)
			it->x1 = it->xl = NONE;
		return;
	}
	/* the last one ends with its extend launches; what follows is not the loop */
	role = role_of(tc, &t->events[j]);
	if (role != ROLE_EXTEND && (tc->has_extend || role != ROLE_UNKNOWN))
		return;
	it->x1 = it->xl = j;
	for (j++; j < t->nr_events; j++) {
		const struct loop_event *e = &t->events[j];

		if (role_of(tc, e) == ROLE_EXTEND)
			it->xl = j;
		else if (is_launch(e) || is_blocking(e))
			break;
	}
}

/*
 * The sync of cycle i's event record made in a later iteration (deferred accept).
 * *past_end: not found, but it may come after the last recorded call.
 */
static size_t deferred_sync(struct thread_ctx *tc, size_t i, size_t record, bool *past_end)
{
	const struct model_thread *t = tc->t;
	size_t limit = i + CYCLES_DEFERRED_REACH < tc->nr_iters ? tc->iters[i + CYCLES_DEFERRED_REACH].vs
							 : t->nr_events;
	__u32 serial = t->events[record].serial;

	for (size_t j = record + 1; j < limit; j++) {
		const struct loop_event *e = &t->events[j];

		if (e->kind == LOOP_SYNC && e->serial == serial)
			return j;
		/* recorded again: the record we want is overwritten */
		if (e->kind == LOOP_RECORD && e->handle == t->events[record].handle)
			return NONE;
	}
	*past_end = limit == t->nr_events;
	return NONE;
}

/*
 * The sync that brings the accept result to the host, among accept's calls.
 * An event recorded after the result's copy and synced only in a later
 * iteration: that sync (deferred accept). Else the last sync that waits for
 * the copy, the one after which the loop goes on (a sync made before it
 * returns with the result not yet read), up to the next copy to the host after
 * work launched once one was found: that copy starts another read (PyTorch's
 * .item() after .nonzero()), whose sync is a round trip of its own; else the
 * last copy that blocked. A sync that is an earlier cycle's deferred accept is
 * not this one's: where that is the only one and this cycle's own record may
 * be synced after the recording's end, its accept is cut off.
 */
static void find_accept(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	/* the result comes from the verify stream; a copy on another one blocks by itself */
	__u64 stream = t->events[it->ve].stream;
	size_t since = it->ve, last = NONE, blocking_copy = NONE;
	bool launched_after = false, past_end = false;

	for (size_t j = it->ve + 1; j < it->after; j++) {
		if (!is_d2h(&t->events[j]))
			continue;
		if (is_blocking(&t->events[j]))
			blocking_copy = j;
		if (since == it->ve && t->events[j].stream == stream)
			since = j;
	}
	it->accept = NONE;
	it->copy = since != it->ve ? since : NONE;
	it->accept_deferred = false;
	it->accept_cut = false;
	for (size_t j = since + 1; j < it->after; j++) {
		const struct loop_event *e = &t->events[j];

		if (last != NONE && is_launch(e))
			launched_after = true;
		if (launched_after && is_d2h(e) && e->stream == stream)
			break;
		if (covers(t, j, stream, since) && tc->accept_of[j] == NONE)
			last = j;
		if (e->kind == LOOP_RECORD && e->stream == stream) {
			size_t later = deferred_sync(tc, i, j, &past_end);

			if (later != NONE && later >= it->after) {
				it->accept = later;
				it->accept_deferred = true;
				return;
			}
		}
	}
	it->accept_cut = last == NONE && past_end;
	if (!it->accept_cut)
		it->accept = last != NONE ? last : blocking_copy;
}

/* Extend start: return of the last sync after verify and before extend. */
static __u64 extend_start(const struct thread_ctx *tc, size_t i, __u64 next_start)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	size_t end = it->x1;

	if (end == NONE)
		return next_start;	/* nothing extends: the extend span is empty */
	for (size_t j = end; j-- > it->ve + 1;)
		if (is_blocking(&t->events[j]))
			return t->events[j].ts_return ? t->events[j].ts_return : t->events[j].ts;
	return t->events[it->x1].ts;
}

static __u64 overlap(__u64 a0, __u64 a1, __u64 b0, __u64 b1)
{
	__u64 lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/* Time of [start, end) covered by none of the four phases. */
static __u64 uncovered(const struct cycle *c)
{
	__u64 edges[8], covered = 0;
	int n = 0;

	for (int p = 0; p < PHASE_OTHER; p++) {
		edges[n++] = c->phase[p].start_ns;
		edges[n++] = c->phase[p].end_ns;
	}
	/* sweep the elementary intervals between phase edges */
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			if (edges[b] < edges[a]) {
				__u64 tmp = edges[a];

				edges[a] = edges[b];
				edges[b] = tmp;
			}
	for (int k = 0; k + 1 < n; k++) {
		__u64 lo = edges[k], hi = edges[k + 1];
		bool in_phase = false;

		if (hi <= lo)
			continue;
		for (int p = 0; p < PHASE_OTHER && !in_phase; p++)
			in_phase = c->phase[p].start_ns <= lo && hi <= c->phase[p].end_ns;
		if (in_phase)
			covered += overlap(lo, hi, c->start_ns, c->end_ns);
	}
	return c->end_ns - c->start_ns > covered ? c->end_ns - c->start_ns - covered : 0;
}

static void count_event(struct cycle *c, enum phase p, const struct loop_event *e)
{
	if (is_launch(e)) {
		c->phase[p].launches++;
		c->launches++;
	}
	if (is_blocking(e)) {
		c->phase[p].syncs++;
		c->phase[p].blocked_ns += blocked_ns(e);
		c->syncs++;
		c->blocked_ns += blocked_ns(e);
	}
}

static void set_span(struct cycle_phase *ph, __u64 start, __u64 end)
{
	ph->start_ns = start;
	ph->end_ns = end > start ? end : start;
	ph->span_ns = ph->end_ns - ph->start_ns;
}

static size_t iter_end(const struct thread_ctx *tc, size_t i);

/* --gpu: the executions of a cycle's calls, by phase (docs/gpu-timeline.md). */
struct gpu_acc {
	__u64 (*iv[PHASE_NR])[2];
	size_t nr[PHASE_NR], cap[PHASE_NR];
	size_t first[PHASE_NR];	/* 1 + the event index of its first execution's call; 0: none */
	bool missing;		/* a launch without its execution */
	bool failed;		/* no memory: the cycle's GPU figures are not given */
};

static bool makes_work(const struct loop_event *e)
{
	return is_launch(e) || e->kind == LOOP_COPY;
}

/* A launch that runs on the host (a host function) has no execution to wait for. */
static bool runs_on_gpu(const struct loop_event *e)
{
	return strcmp(model__call_name(e->name), "cuLaunchHostFunc") != 0;
}

static void gpu_note(const struct thread_ctx *tc, struct gpu_acc *acc, enum phase p,
		     const struct loop_event *e)
{
	__u64 start, end;

	if (!acc || !makes_work(e))
		return;
	if (!gputime__exec_of(tc->v->gpu, tc->t->tgid, tc->t->tid, e->ts, &start, &end)) {
		acc->missing |= is_launch(e) && runs_on_gpu(e);
		return;
	}
	if (acc->nr[p] == acc->cap[p]) {
		size_t cap = acc->cap[p] ? acc->cap[p] * 2 : 8;
		void *grown = realloc(acc->iv[p], cap * sizeof(*acc->iv[p]));

		if (!grown) {
			acc->failed = true;
			return;
		}
		acc->iv[p] = grown;
		acc->cap[p] = cap;
	}
	acc->iv[p][acc->nr[p]][0] = start;
	acc->iv[p][acc->nr[p]++][1] = end;
	if (!acc->first[p] || (size_t)(e - tc->t->events) + 1 < acc->first[p])
		acc->first[p] = (size_t)(e - tc->t->events) + 1;
}

/* Calls of iteration i, each in the phase it was made in. */
static void attribute(struct thread_ctx *tc, size_t i, size_t first, size_t end, struct cycle *c,
		      struct gpu_acc *acc)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	size_t accept_end = it->x1 != NONE ? it->x1 : it->after;

	for (size_t j = first; j < end; j++) {
		const struct loop_event *e = &t->events[j];
		enum phase p;

		if (tc->accept_of[j] != NONE && tc->accept_of[j] != i)
			continue;	/* another cycle's deferred accept sync */
		if (j < it->vs)
			p = PHASE_DRAFT;
		else if (j <= it->ve)
			p = PHASE_VERIFY;
		else if (j == it->accept ||
			 (j < accept_end && e->ts < c->phase[PHASE_ACCEPT].end_ns))
			p = PHASE_ACCEPT;
		else if (j < accept_end && (it->x1 == NONE ||
					    e->ts < c->phase[PHASE_EXTEND].start_ns))
			p = PHASE_OTHER;
		else
			p = PHASE_EXTEND;
		count_event(c, p, e);
		gpu_note(tc, acc, p, e);
	}
	if (it->accept != NONE && it->accept >= end) {
		count_event(c, PHASE_ACCEPT, &t->events[it->accept]);
		gpu_note(tc, acc, PHASE_ACCEPT, &t->events[it->accept]);
	}
}

/* The first start of the executions of events [from, to) of the thread; 0: none matched. */
static __u64 first_gpu_start(const struct thread_ctx *tc, size_t from, size_t to)
{
	__u64 first = 0, start, end;

	for (size_t j = from; j < to && j < tc->t->nr_events; j++) {
		const struct loop_event *e = &tc->t->events[j];

		if (makes_work(e) &&
		    gputime__exec_of(tc->v->gpu, tc->t->tgid, tc->t->tid, e->ts, &start, &end) &&
		    (!first || start < first))
			first = start;
	}
	return first;
}

/* How far back a phase's start looks for the work queued before it on its stream. */
#define READY_LOOKBACK 512

/*
 * When the GPU could start phase work whose first call is event f: the later
 * of the return of the thread's call before it and the end of the work queued
 * before it on its stream; what a CUDA event recorded between the two calls
 * reads. Not after first_start, the phase's first execution's start. 0 when
 * that work ran unseen (launched before an agent came in).
 */
static __u64 phase_ready(const struct thread_ctx *tc, size_t f, __u64 first_start)
{
	const struct loop_event *ev = tc->t->events;
	__u64 ready = ev[f].ts, start, end;

	if (f)
		ready = ev[f - 1].ts_return ? ev[f - 1].ts_return : ev[f - 1].ts;
	for (size_t j = f; j-- > 0 && f - j <= READY_LOOKBACK;) {
		if (!makes_work(&ev[j]) || ev[j].stream != ev[f].stream || !runs_on_gpu(&ev[j]))
			continue;
		if (!gputime__exec_of(tc->v->gpu, tc->t->tgid, tc->t->tid, ev[j].ts, &start, &end))
			return 0;
		if (end > ready)
			ready = end;
		break;
	}
	return ready < first_start ? ready : first_start;
}

/* A cycle's GPU figures from its phases' executions; not given unless every launch matched. */
static void gpu_cycle(const struct thread_ctx *tc, size_t i, struct cycle *c, struct gpu_acc *acc)
{
	__u64 first = 0, last = 0;

	c->gpu_tried = true;
	for (int p = 0; p < PHASE_NR; p++) {
		struct cycle_phase *ph = &c->phase[p];

		for (size_t k = 0; k < acc->nr[p]; k++) {
			if (!ph->gpu_start_ns || acc->iv[p][k][0] < ph->gpu_start_ns)
				ph->gpu_start_ns = acc->iv[p][k][0];
			if (acc->iv[p][k][1] > ph->gpu_end_ns)
				ph->gpu_end_ns = acc->iv[p][k][1];
		}
		ph->gpu_busy_ns = gputime__union(acc->iv[p], acc->nr[p]);
		if (ph->gpu_start_ns && (!first || ph->gpu_start_ns < first))
			first = ph->gpu_start_ns;
		if (acc->first[p]) {
			ph->gpu_start_ns = phase_ready(tc, acc->first[p] - 1, ph->gpu_start_ns);
			acc->missing |= !ph->gpu_start_ns;
		}
		if (ph->gpu_end_ns > last)
			last = ph->gpu_end_ns;
	}
	c->gpu_start_ns = first;
	/* to the next cycle's first execution; the last cycle: to its own last end */
	c->gpu_end_ns = i + 1 < tc->nr_iters
				? first_gpu_start(tc, draft_or_verify(&tc->iters[i + 1]),
						  iter_end(tc, i + 1))
				: last;
	c->gpu_known = !acc->missing && !acc->failed && first && c->gpu_end_ns >= first;
	if (!c->gpu_known) {
		for (int p = 0; p < PHASE_NR; p++)
			c->phase[p].gpu_start_ns = c->phase[p].gpu_end_ns = c->phase[p].gpu_busy_ns = 0;
		c->gpu_start_ns = c->gpu_end_ns = 0;
		return;
	}
	c->gpu_idle_ns = c->gpu_end_ns - c->gpu_start_ns -
			 gputime__busy(tc->v->gpu, tc->t->tgid, c->gpu_start_ns, c->gpu_end_ns);
}

static bool no_sync_between(const struct model_thread *t, size_t from, size_t to)
{
	for (size_t j = from + 1; j < to; j++)
		if (is_blocking(&t->events[j]))
			return false;
	return true;
}

/* The draft's end, for the joined check: its last draft graph, else the last launch. */
static size_t draft_end(const struct thread_ctx *tc, size_t from, size_t vs)
{
	size_t graph = tc->graph_drafts ? last_draft_graph(tc, from, vs) : NONE, last = NONE;

	for (size_t j = from; j < vs; j++)
		if (is_launch(&tc->t->events[j]))
			last = j;
	return graph != NONE ? graph : last;
}

/* 0: cycle i is complete and filled in; 1: it is cut by the start or the end. */
static int build_cycle(struct thread_ctx *tc, size_t i, struct cycle *c)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	bool last = i + 1 == tc->nr_iters;
	size_t first = draft_or_verify(it), end_idx, last_draft;
	const struct loop_event *acc = it->accept != NONE ? &t->events[it->accept] : NULL;
	__u64 next_start = 0, accept_end;

	memset(c, 0, sizeof(*c));
	c->start_ns = t->events[first].ts;
	if (!last) {
		end_idx = draft_or_verify(&tc->iters[i + 1]);
		next_start = c->end_ns = t->events[end_idx].ts;
	} else if (it->xl != NONE) {
		end_idx = it->xl + 1;
		c->end_ns = t->events[it->xl].ts_return;
	} else if (!tc->has_extend && acc && !(acc->flags & LOOP_UNRETURNED)) {
		end_idx = it->accept + 1;
		c->end_ns = acc->ts_return;
	} else {
		return 1;
	}
	if ((acc && (acc->flags & LOOP_UNRETURNED)) || it->accept_cut)
		return 1;
	set_span(&c->phase[PHASE_DRAFT], c->start_ns, t->events[it->vs].ts);
	set_span(&c->phase[PHASE_VERIFY], t->events[it->vs].ts, t->events[it->ve].ts_return);
	c->phase[PHASE_EXTEND].start_ns = extend_start(tc, i, last ? c->end_ns : next_start);
	accept_end = acc ? acc->ts_return : c->phase[PHASE_EXTEND].start_ns;
	set_span(&c->phase[PHASE_ACCEPT], t->events[it->ve].ts_return, accept_end);
	set_span(&c->phase[PHASE_EXTEND], c->phase[PHASE_EXTEND].start_ns, c->end_ns);
	c->phase[PHASE_OTHER].start_ns = c->start_ns;
	c->phase[PHASE_OTHER].end_ns = c->end_ns;
	c->phase[PHASE_OTHER].span_ns = uncovered(c);
	if (tc->v->gpu) {
		struct gpu_acc acc = { 0 };

		attribute(tc, i, first, end_idx, c, &acc);
		gpu_cycle(tc, i, c, &acc);
		for (int p = 0; p < PHASE_NR; p++)
			free(acc.iv[p]);
	} else {
		attribute(tc, i, first, end_idx, c, NULL);
	}
	c->has_accept_sync = acc != NULL;
	c->accept_call = acc ? acc->name : 0;
	c->accept_wait_ns = acc ? blocked_ns(acc) : 0;
	c->accept_deferred = it->accept_deferred;
	last_draft = draft_end(tc, first, it->vs);
	c->draft_joined = last_draft != NONE && no_sync_between(t, last_draft, it->vs);
	c->followed = !last;
	c->extend_joined = !last && it->xl != NONE && no_sync_between(t, it->xl, end_idx);
	for (size_t j = it->vs + 1; j <= it->ve && !c->verify_pieces; j++)
		c->verify_pieces = t->events[j].kind == LOOP_GRAPH;
	return 0;
}

/* Captured execs never launched take the role of a launched one with the same kernels. */
static void roles_by_family(struct model_view *v)
{
	for (size_t a = 0; a < v->nr_execs; a++) {
		struct model_exec *x = v->execs[a];

		if (x->role != ROLE_UNKNOWN || !x->capture)
			continue;
		for (size_t b = 0; b < v->nr_execs; b++) {
			const struct model_exec *y = v->execs[b];

			if (y->tgid == x->tgid && y->launches && y->role != ROLE_UNKNOWN &&
			    model__same_kernels(x->capture, y->capture)) {
				set_role(x, y->role, ROLE_FROM_FAMILY);
				break;
			}
		}
	}
}

static int push_cycle(struct loop *lp, size_t *cap, const struct cycle *c)
{
	if (lp->nr_cycles == *cap) {
		size_t n = *cap ? *cap * 2 : 256;
		struct cycle *grown = realloc(lp->cycles, n * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		lp->cycles = grown;
		*cap = n;
	}
	lp->cycles[lp->nr_cycles] = *c;
	lp->cycles[lp->nr_cycles].index = lp->nr_cycles;
	lp->nr_cycles++;
	return 0;
}

/* Each iteration's draft, extend and accept; has_extend and graph_drafts already told. */
static void find_parts(struct thread_ctx *tc, bool trust)
{
	for (size_t i = 0; i < tc->nr_iters; i++)
		find_draft(tc, i);
	if (trust)
		trust_first_drafts(tc);
	for (size_t i = 0; i < tc->nr_iters; i++) {
		find_extend(tc, i);
		find_accept(tc, i);
		if (tc->iters[i].accept != NONE)
			tc->accept_of[tc->iters[i].accept] = i;
	}
}

static void find_boundaries(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;

	for (size_t j = 0; j < t->nr_events; j++) {
		tc->has_extend |= role_of(tc, &t->events[j]) == ROLE_EXTEND;
		tc->graph_drafts |= role_of(tc, &t->events[j]) == ROLE_DRAFT;
	}
	find_parts(tc, true);
}

/* Where iteration i ends: the next one's first launch, or past its own last call. */
static size_t iter_end(const struct thread_ctx *tc, size_t i)
{
	const struct iter *it = &tc->iters[i];

	if (i + 1 < tc->nr_iters)
		return draft_or_verify(&tc->iters[i + 1]);
	if (it->xl != NONE)
		return it->xl + 1;
	if (it->accept != NONE && it->accept > it->ve)
		return it->accept + 1;
	return it->ve + 1;
}

static void export_iter(const struct thread_ctx *tc, size_t i, struct loop_iter *out)
{
	const struct iter *it = &tc->iters[i];

	*out = (struct loop_iter){
		.first = draft_or_verify(it), .vs = it->vs, .ve = it->ve, .copy = it->copy,
		.accept = it->accept, .after = it->after, .end = iter_end(tc, i), .cycle = -1,
		.no_draft = it->draft == NONE && it->draft_seen,
	};
}

/* Iteration i in lp's counts: 1 with its cycle in c when it is one, else 0. */
static int count_iter(struct thread_ctx *tc, size_t i, struct loop *lp, struct cycle *c)
{
	const struct iter *it = &tc->iters[i];
	bool before_attach = tc->t->events[draft_or_verify(it)].ts < tc->v->attach_done_ns;

	/* a verify with no draft before it (warm-up, a plain decode step) is no cycle */
	if (it->draft == NONE && it->draft_seen) {
		lp->skipped_no_draft++;
		return 0;
	}
	/* counted from the first cycle whose every draft launch was seen */
	if (!it->draft_seen || before_attach || build_cycle(tc, i, c)) {
		if (lp->nr_cycles)
			lp->skipped_end++;
		else
			lp->skipped_start++;
		return 0;
	}
	return 1;
}

static int build_loop(struct thread_ctx *tc, struct loop *lp)
{
	const struct model_thread *t = tc->t;
	size_t cap = 0;
	struct cycle c;

	for (size_t j = 0; j < t->nr_events; j++)
		tc->accept_of[j] = NONE;
	find_boundaries(tc);
	lp->iterations = tc->nr_iters;
	lp->iters = calloc(tc->nr_iters ? tc->nr_iters : 1, sizeof(*lp->iters));
	if (!lp->iters)
		return -ENOMEM;
	lp->nr_iters = tc->nr_iters;
	for (size_t i = 0; i < tc->nr_iters; i++)
		export_iter(tc, i, &lp->iters[i]);
	for (size_t i = 0; i < tc->nr_iters; i++) {
		if (!count_iter(tc, i, lp, &c))
			continue;
		lp->iters[i].cycle = lp->nr_cycles;
		if (push_cycle(lp, &cap, &c))
			return -ENOMEM;
	}
	return 0;
}

static void thread_ctx_free(struct thread_ctx *tc)
{
	hmap__free(&tc->own_sites.counts);
	free(tc->stats);
	free(tc->iters);
	free(tc->accept_of);
}

static bool launches_graphs(const struct model_thread *t)
{
	for (size_t j = 0; j < t->nr_events; j++)
		if (t->events[j].kind == LOOP_GRAPH)
			return true;
	return false;
}

static int rank_of(const struct model_view *v, __u32 tgid)
{
	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->tgid == tgid)
			return v->procs[i]->rank;
	return -1;
}

/* Roles need every thread's verify first, then the positions, then the family rule. */
static int analyse_threads(struct model *m, struct thread_ctx *tcs, size_t nr, struct cycles *out)
{
	struct model_view *v = model__view(m);
	struct model_exec **anchors = calloc(nr ? nr : 1, sizeof(*anchors));
	enum role_source *froms = calloc(nr ? nr : 1, sizeof(*froms));
	int ret = -ENOMEM;

	if (!anchors || !froms)
		goto out;
	for (size_t k = 0; k < nr; k++) {
		collect_stats(&tcs[k]);
		anchors[k] = pick_anchor(&tcs[k], &froms[k]);
		if (anchors[k] && anchors[k]->role == ROLE_UNKNOWN)
			mark_verify(&tcs[k], anchors[k], froms[k]);
	}
	for (size_t k = 0; k < nr; k++) {
		if (!anchors[k] || find_groups(&tcs[k]))
			continue;
		find_accept_ends(&tcs[k]);
		vote_roles(&tcs[k]);
		apply_votes(&tcs[k]);
	}
	roles_by_family(v);
	out->loops = calloc(nr ? nr : 1, sizeof(*out->loops));
	if (!out->loops)
		goto out;
	for (size_t k = 0; k < nr; k++) {
		struct loop *lp = &out->loops[out->nr_loops];

		if (!anchors[k] || !tcs[k].nr_iters)
			continue;
		tcs[k].accept_of = malloc(tcs[k].t->nr_events * sizeof(*tcs[k].accept_of));
		if (!tcs[k].accept_of)
			goto out;
		lp->tgid = tcs[k].t->tgid;
		lp->tid = tcs[k].t->tid;
		lp->rank = rank_of(v, lp->tgid);
		lp->verify_exec = anchors[k]->id;
		lp->verify_from = froms[k];
		lp->lead_from = tcs[k].lead_from;
		lp->lead_extends = tcs[k].lead_extends;
		out->nr_loops++;
		if (build_loop(&tcs[k], lp))
			goto out;
	}
	ret = 0;
out:
	free(anchors);
	free(froms);
	return ret;
}

/* Loops by rank (unknown last), then process and thread. */
static int loop_cmp(const void *a, const void *b)
{
	const struct loop *x = a, *y = b;
	unsigned int rx = x->rank, ry = y->rank;	/* -1 sorts last */

	if (rx != ry)
		return (rx > ry) - (rx < ry);
	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int cycles__analyse(struct model *m, struct cycles *out)
{
	struct model_view *v = model__view(m);
	struct thread_ctx *tcs = calloc(v->nr_threads ? v->nr_threads : 1, sizeof(*tcs));
	size_t nr = 0;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!tcs)
		return -ENOMEM;
	for (size_t i = 0; i < v->nr_threads; i++) {
		if (!launches_graphs(v->threads[i]))
			continue;
		tcs[nr] = (struct thread_ctx){ .m = m, .v = v, .t = v->threads[i] };
		tcs[nr].stats = calloc(v->nr_execs ? v->nr_execs : 1, sizeof(*tcs[nr].stats));
		if (!tcs[nr++].stats)
			goto out;
	}
	ret = analyse_threads(m, tcs, nr, out);
	if (!ret)
		qsort(out->loops, out->nr_loops, sizeof(*out->loops), loop_cmp);
out:
	for (size_t k = 0; k < nr; k++)
		thread_ctx_free(&tcs[k]);
	free(tcs);
	if (ret)
		cycles__free(out);
	return ret;
}

void cycles__free(struct cycles *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_loops; i++) {
		free(c->loops[i].cycles);
		free(c->loops[i].iters);
		if (c->loops[i].store)
			fclose(c->loops[i].store);
		if (c->loops[i].launches)
			fclose(c->loops[i].launches);
	}
	free(c->loops);
	c->loops = NULL;
	c->nr_loops = 0;
}

static const char *const phase_names[PHASE_NR] = {
	[PHASE_DRAFT] = "draft",   [PHASE_VERIFY] = "verify", [PHASE_ACCEPT] = "accept",
	[PHASE_EXTEND] = "extend", [PHASE_OTHER] = "other",
};

const char *cycles__phase_name(enum phase p)
{
	return p < PHASE_NR ? phase_names[p] : "?";
}

static const char *const lead_from_names[LEAD_FROM_NR] = {
	[LEAD_NONE] = "none",		[LEAD_STRUCTURE] = "structure",
	[LEAD_LOOP_END] = "loop-end",	[LEAD_LOOP_START] = "loop-start",
	[LEAD_SHAPE] = "shape",
};

const char *cycles__lead_from_name(enum lead_from from)
{
	return from < LEAD_FROM_NR ? lead_from_names[from] : "?";
}

int loop__store_cycle(struct loop *lp, const struct cycle *c)
{
	int ret = spill__write(&lp->store, c, sizeof(*c));

	if (!ret)
		lp->nr_cycles++;
	return ret;
}

int loop__add_flagged_gpu(struct loop *lp, size_t index, __u64 idle_ns)
{
	struct cycle c;
	long at = (long)(index * sizeof(c));

	if (index >= lp->nr_cycles)
		return 0;
	if (!lp->store) {
		lp->cycles[index].gpu_idle_flagged_ns += lp->cycles[index].gpu_known ? idle_ns : 0;
		lp->cycles[index].gpu_flagged_syncs += lp->cycles[index].gpu_known;
		return 0;
	}
	if (fflush(lp->store) || fseek(lp->store, at, SEEK_SET) ||
	    fread(&c, sizeof(c), 1, lp->store) != 1)
		return -EIO;
	if (c.gpu_known) {
		c.gpu_idle_flagged_ns += idle_ns;
		c.gpu_flagged_syncs++;
		if (fseek(lp->store, at, SEEK_SET) || fwrite(&c, sizeof(c), 1, lp->store) != 1)
			return -EIO;
	}
	/* appends go on at the end */
	return fseek(lp->store, 0, SEEK_END) ? -EIO : 0;
}

int loop__each_cycle(const struct loop *lp, int (*fn)(void *ctx, const struct cycle *c),
		     void *ctx)
{
	struct cycle c;
	int ret = 0;

	if (!lp->store) {
		for (size_t i = 0; i < lp->nr_cycles && !ret; i++)
			ret = fn(ctx, &lp->cycles[i]);
		return ret;
	}
	if (fflush(lp->store) || fseek(lp->store, 0, SEEK_SET))
		return -EIO;
	for (size_t i = 0; i < lp->nr_cycles && !ret; i++) {
		if (fread(&c, sizeof(c), 1, lp->store) != 1)
			return -EIO;
		ret = fn(ctx, &c);
	}
	/* appends go on at the end */
	if (fseek(lp->store, 0, SEEK_END))
		return -EIO;
	return ret;
}

/*
 * A whole run in windows. Each window step hands a stage the iterations (or,
 * before there are any, the events) that later calls can no longer change,
 * and keeps a few settled iterations before them as context: the same
 * functions as above then see each of those iterations as the whole run does.
 */

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
	long structure_votes, shape_votes;
	int loop_end;
	__u64 longest_period;
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
	bool gap_known;
	__u64 gap;
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
	__u32 *sites = event_sites(v, t);
	int ret;

	if (!sites)
		return 0;
	if (!pt->sites_seen)
		pt->sites.last = NONE;
	pt->sites_seen = true;
	ret = sites_of_events(&pt->sites, pt->stats, t, sites, upto);
	free(sites);
	return ret;
}

/* As collect_stats, a call at a time: what follows a launch up to the next one. */
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
		pt->last_counted = count_self_next(pt->stats, pt->last_graph, pt->last_counted,
						   e->handle);
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
		if (same_step(a, b)) {
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
	size_t lead = lead_of(tc, i), end = tc->iters[i].region_end, open = NONE, next;
	enum opening how;

	if (!run_last)
		votes_iter(tc, i, lead);

	if (lead != NONE) {
		tc->stats[t->events[lead].handle].lead++;
		next = next_graph(tc, lead, end);
		if (next != NONE)
			tc->stats[t->events[next].handle].follow++;
		pt->structure_votes += lead_structure(tc, i, lead);
		pt->shape_votes += next != NONE && next_graph(tc, next, end) != NONE ? -1 : 1;
	}
	if (i + 1 < tc->nr_iters) {
		__u64 period = t->events[tc->iters[i + 1].vs].ts - t->events[tc->iters[i].vs].ts;

		if (period > pt->longest_period)
			pt->longest_period = period;
	}
	if (pt->start_found)
		return;
	/* lead_at_loop_start stops at the first opening that is not "nothing" */
	how = draft_opening(tc, i, &open);
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

/* As longest_draft_gap, for settled iteration i. */
static void gap_iter(struct thread_ctx *tc, size_t i, struct cycles_plan *pl)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	size_t prev = it->draft;

	if (prev == NONE || !it->draft_seen)
		return;
	for (size_t j = prev + 1; j < it->vs; j++) {
		if (!is_draft_launch(tc, &t->events[j], &t->events[it->vs]))
			continue;
		if (t->events[j].ts - t->events[prev].ts > pl->gap)
			pl->gap = t->events[j].ts - t->events[prev].ts;
		prev = j;
	}
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

	if (find_groups(tc))
		return -ENOMEM;
	find_accept_ends(tc);
	if (pl->stage == PLAN_GAP)
		for (size_t i = 0; i < tc->nr_iters; i++)
			find_draft(tc, i);
	owned_range(tc, pt, final, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		if (pl->stage == PLAN_LEADS)
			leads_iter(tc, pt, i, final && i + 1 == tc->nr_iters);
		else
			gap_iter(tc, i, pl);
		pt->nr_iters++;
	}
	if (hi > lo)
		pt->done_vs = tc->t->events[tc->iters[hi - 1].vs].ts;
	if (final && pl->stage == PLAN_LEADS && tc->nr_iters)
		pt->loop_end = lead_at_loop_end(tc);
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
		if (pl->stage == PLAN_STATS || !pt->anchored)
			continue;
		tc = plan_ctx(m, t, pt);
		ret = iters_step(pl, &tc, pt, final, &keep_ns[k]);
		free(tc.iters);
	}
	return ret;
}

/* add_pieces' end, for a round counted; 1: the family grew, another round. */
static bool pieces_round(struct thread_ctx *tc)
{
	bool grown = false;

	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];

		if (st->launches && st->adjacent * 2 > st->launches && !repeated_step(st) &&
		    tc->v->execs[id]->role != ROLE_VERIFY) {
			mark_family(tc, tc->v->execs[id], ROLE_FROM_PIECES);
			grown = true;
		}
	}
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
			mark_verify(&tc, anchor, pt->verify_from);
			continue;
		}
		mark_family(&tc, anchor, pt->verify_from);
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
		anchor = pick_anchor(&tc, &pt->verify_from);
		pt->anchored = anchor != NULL;
		pt->anchor = anchor ? anchor->id : 0;
	}
}

static int loop_start_of(const struct model_view *v, const struct model_thread *t,
			 const struct plan_thread *pt)
{
	__u64 bound = thread_mark(v, t) + pt->longest_period;
	const struct exec_stats *st;

	if (pt->first_nothing && pt->first_nothing_ts <= bound)
		return 0;
	if (!pt->start_found || pt->start_how != OPEN_GRAPH || pt->start_open_ts <= bound)
		return 0;
	st = &pt->stats[pt->start_open_exec];
	return is_lead(st) ? -1 : is_follower(st) ? 1 : 0;
}

/* As decide_lead, from what the pass counted. */
static void end_leads(struct cycles_plan *pl, const struct model_view *v)
{
	for (size_t k = 0; k < pl->nr_threads; k++) {
		struct plan_thread *pt = &pl->threads[k];
		int says[4];
		bool any = false;

		pt->run_iters = pt->nr_iters;
		pt->lead_from = LEAD_NONE;
		pt->lead_extends = false;
		for (size_t id = 0; id < pt->nr_stats && !any; id++)
			any = pt->stats[id].lead;
		if (!pt->anchored || !any)
			continue;
		says[0] = sign(pt->structure_votes);
		says[1] = pt->loop_end;
		says[2] = loop_start_of(v, v->threads[k], pt);
		says[3] = pt->shape_votes > 0 ? 1 : -1;
		for (int r = 0; r < 4; r++)
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
			apply_votes(&tc);
	}
	roles_by_family(v);
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
 * longest draft gap of the whole run (trust_first_drafts): -EAGAIN until a
 * pass has found it.
 */
static int trust_first(struct cycles_plan *pl, struct thread_ctx *tc)
{
	struct iter *it = &tc->iters[0];

	if (it->draft_seen || it->draft_cut || it->draft == NONE)
		return 0;
	if (!pl->gap_known) {
		pl->stage = PLAN_GAP;
		return -EAGAIN;
	}
	if (tc->t->events[it->draft].ts > thread_mark(tc->v, tc->t) + pl->gap)
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
	if (count_iter(tc, i, &pt->run, &c)) {
		c.index = pt->run.nr_cycles;
		ret = loop__store_cycle(&pt->run, &c);
		if (ret)
			return ret;
		if (push_cycle(lp, cap, &c))
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

	if (find_groups(tc))
		return -ENOMEM;
	if (!tc->nr_iters)
		return 1;
	find_accept_ends(tc);
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
	find_parts(tc, false);
	if (!pt->run.iterations && !lo && hi)
		ret = trust_first(pl, tc);
	*lp = (struct loop){ .tgid = t->tgid, .tid = t->tid, .rank = pt->run.rank,
			     .verify_exec = pt->anchor, .verify_from = pt->verify_from,
			     .lead_from = pt->lead_from, .lead_extends = pt->lead_extends,
			     .iters = lp->iters, .nr_iters = tc->nr_iters };
	for (size_t i = 0; i < tc->nr_iters; i++) {
		const struct plan_iter *pi = i < lo ? owned_iter(pt, t->events[tc->iters[i].vs].ts)
						    : NULL;

		export_iter(tc, i, &lp->iters[i]);
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
		pt->run.rank = rank_of(v, pt->run.tgid);
		tc = plan_ctx(m, v->threads[k], pt);
		ret = window_loop(pl, &tc, pt, final, &out->loops[out->nr_loops],
				  &(*win)[out->nr_loops]);
		if (ret == 1)
			ret = 0;
		else
			out->nr_loops++;
		free(tc.iters);
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
		lp->rank = rank_of(v, lp->tgid);
		lp->verify_exec = pt->anchor;
		lp->verify_from = pt->verify_from;
		lp->lead_from = pt->lead_from;
		lp->lead_extends = pt->lead_extends;
		pt->run.store = NULL;
		pt->run.launches = NULL;
		out->nr_loops++;
	}
	qsort(out->loops, out->nr_loops, sizeof(*out->loops), loop_cmp);
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
