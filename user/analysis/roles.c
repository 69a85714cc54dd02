// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Roles of one thread's execs: the verify forward (from captured kernels,
 * sync waits, eager bursts or the call sites of syncs), its pieces and the
 * other execs of its family.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "callstack.h"
#include "cycles_int.h"

/* Kernels and collectives a graph runs: what makes the target forward the biggest. */
static __u32 captured_work(const struct model_capture *cap)
{
	__u32 n = cap->kernel_count;

	for (__u32 i = 0; i < cap->nr_colls; i++)
		n += cap->colls[i].count;
	return n;
}

/*
 * Two execs of the same kernels launched back to back are steps of one
 * repeated model (cudagraph trees record a graph per draft position): a
 * verify piece is never one of them, however it was captured.
 */
bool roles__same_step(const struct model_exec *a, const struct model_exec *b)
{
	return a && b && a != b && a->tgid == b->tgid && a->capture && b->capture &&
	       model__same_kernels(a->capture, b->capture);
}

bool roles__repeated_step(const struct exec_stats *st)
{
	return st->repeats * 2 > st->launches;
}

static size_t graph_neighbour(const struct model_thread *t, size_t j, int dir);

/*
 * An exec launched right after itself (other calls between, no other graph)
 * counts both launches once: the steps of an eager draft, a sync per token.
 * Returns whether the launch of cur was counted.
 */
bool roles__count_self_next(struct exec_stats *stats, size_t last, bool last_counted, size_t cur)
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
__u32 *roles__event_sites(const struct model_view *v, const struct model_thread *t)
{
	__u32 *sites = frames__event_stacks(v, t);

	for (size_t k = 0; sites && k < t->nr_events; k++) {
		const struct cs_stack *st = sites[k] ? callstacks__stack(v->stacks, sites[k]) : NULL;

		sites[k] = st ? st->site : 0;
	}
	return sites;
}

/* Sites of the syncs after each graph launch (roles__event_sites); none without stacks or memory. */
int roles__sites_of_events(struct site_stats *ss, struct exec_stats *stats,
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
	__u32 *sites = roles__event_sites(tc->v, tc->t);

	tc->own_sites = (struct site_stats){ .last = NONE };
	tc->sites = sites ? &tc->own_sites : NULL;
	if (sites &&
	    (roles__sites_of_events(tc->sites, tc->stats, tc->t, sites, tc->t->nr_events) ||
	     site_launch(tc->sites, tc->stats, NONE)))
		tc->sites = NULL;
	free(sites);
}

void roles__collect_stats(struct thread_ctx *tc)
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
		last_counted = roles__count_self_next(tc->stats, last, last_counted, e->handle);
		last = e->handle;
		prev = graph_neighbour(t, j, -1);
		if (prev != NONE &&
		    roles__same_step(exec_of(tc, &t->events[prev]), exec_of(tc, e))) {
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
struct model_exec *roles__pick_anchor(struct thread_ctx *tc, enum role_source *from)
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

/* Every exec of the process with the anchor's kernels: its other batch sizes. */
void roles__mark_family(struct thread_ctx *tc, const struct model_exec *like,
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

/* Graphs next to verify pieces in most of their launches join verify's family; true if any did. */
bool roles__mark_pieces(struct thread_ctx *tc)
{
	bool grown = false;

	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];

		if (st->launches && st->adjacent * 2 > st->launches && !roles__repeated_step(st) &&
		    tc->v->execs[id]->role != ROLE_VERIFY) {
			roles__mark_family(tc, tc->v->execs[id], ROLE_FROM_PIECES);
			grown = true;
		}
	}
	return grown;
}

/*
 * Piecewise verify: a graph launched right before (after) a verify piece,
 * captured right before (after) it, is the neighbouring piece of one forward.
 */
static bool add_pieces(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;

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
	return roles__mark_pieces(tc);
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

void roles__mark_verify(struct thread_ctx *tc, struct model_exec *anchor, enum role_source from)
{
	const struct exec_stats *ast = &tc->stats[anchor->id];

	if (from == ROLE_FROM_FRAMES || from == ROLE_FROM_LAUNCH_FRAMES) {
		frames__mark(tc);
		return;
	}
	if (anchor->eager) {
		mark_eager_verify(tc, anchor, from);
		return;
	}
	if (from == ROLE_FROM_KERNELS) {
		roles__mark_family(tc, anchor, from);
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

/* Captured execs never launched take the role of a launched one with the same kernels. */
void roles__by_family(struct model_view *v)
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

/*
 * The verify anchor from every piece of evidence, each one's vote kept in ev:
 * the Python frames decide where a generation runs inside the loop's (they
 * see the program, not the kernels' shapes); else the kernels.
 */
struct model_exec *roles__choose(struct thread_ctx *tc, struct role_evidence *ev,
				 enum role_source *from)
{
	struct model_exec *kernels = roles__pick_anchor(tc, &ev->kernels_from);
	struct model_exec *frames;

	frames__launch_votes(tc);
	frames = frames__anchor(tc);

	ev->kernels_said = kernels != NULL;
	ev->kernels_verify = kernels ? kernels->id : 0;
	frames__count(tc, ev);
	ev->decided_by = frames ? ROLE_FROM_FRAMES : kernels ? ev->kernels_from : ROLE_FROM_NONE;
	*from = ev->decided_by;
	return frames ? frames : kernels;
}
