// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Each model sync against the iterations of its thread's loop. Positions use
 * half steps over the thread's loop events: 2k + 1 is event k itself, 2k lies
 * just before it (a call that made no loop event, such as a query or an alloc).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "callstack.h"
#include "grow.h"
#include "spill.h"
#include "gputime.h"
#include "syncs.h"

/* how many iterations later a deferred accept sync may come (as cycles.c) */
#define DEFERRED_REACH 4

static const struct loop *loop_of(const struct cycles *cy, __u32 tgid, __u32 tid)
{
	for (size_t i = 0; i < cy->nr_loops; i++)
		if (cy->loops[i].tgid == tgid && cy->loops[i].tid == tid)
			return &cy->loops[i];
	return NULL;
}

static int rank_of(const struct model_view *v, __u32 tgid)
{
	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->tgid == tgid)
			return v->procs[i]->rank;
	return -1;
}

static const struct model_thread *thread_of_proc(const struct model_view *v, __u32 tgid,
						 __u32 tid)
{
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i]->tid == tid && v->threads[i]->tgid == tgid)
			return v->threads[i];
	return NULL;
}

/* The half step of a sync: is it loop event k, or does it lie before it? */
static size_t half_step(const struct model_thread *t, const struct model_sync *sy)
{
	size_t k = sy->event_index;

	if (t && k < t->nr_events && t->events[k].ts == sy->ts && t->events[k].name == sy->name)
		return 2 * k + 1;
	return 2 * k;
}

/* Iteration whose region (2 first, upper] holds h; the last one ends before its end. */
static long iter_at(const struct loop *lp, size_t h)
{
	size_t lo = 0, hi = lp->nr_iters;

	/* the last iteration with 2 first < h */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (2 * lp->iters[mid].first < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	lo--;
	if (lo + 1 == lp->nr_iters && h >= 2 * lp->iters[lo].end)
		return -1;	/* past the loop's last launch */
	return lo;
}

static enum sync_pos pos_in(const struct loop_iter *it, size_t h)
{
	/* accept starts at the result's copy, or at the accept sync when there is none */
	size_t accept_from = it->copy != LOOP_NONE ? 2 * it->copy + 1
				 : it->accept != LOOP_NONE ? 2 * it->accept + 1 : (size_t)-1;

	if (h <= 2 * it->vs)
		return SPOS_DRAFT_VERIFY;
	if (h <= 2 * it->ve + 1)
		return SPOS_VERIFY;
	if (h >= 2 * it->after + 1)
		return SPOS_EXTEND;
	return h < accept_from ? SPOS_AFTER_VERIFY : SPOS_ACCEPT;
}

/* A deferred accept sync lies in a later iteration than the cycle it belongs to. */
static long accept_owner(const struct loop *lp, long i, size_t h)
{
	for (long j = i; j >= 0 && j >= i - DEFERRED_REACH; j--)
		if (lp->iters[j].accept != LOOP_NONE && 2 * lp->iters[j].accept + 1 == h)
			return j;
	return -1;
}

/*
 * An eager draft reads each step's token: its first sync after the step's
 * launches, copies alone between. Event k is the sync, or lies after it.
 */
static bool step_read(const struct model_view *v, const struct model_thread *t, size_t h)
{
	size_t j = h / 2;

	while (j-- > 0) {
		const struct loop_event *e = &t->events[j];
		const struct loop_event *head = e;

		if (e->kind == LOOP_COPY && !(e->flags & LOOP_BLOCKING))
			continue;
		if (e->flags & LOOP_IN_BURST && e->serial <= j)
			head = e - e->serial;
		return head->flags & LOOP_EAGER && head->handle < v->nr_execs &&
		       v->execs[head->handle]->role == ROLE_DRAFT;
	}
	return false;
}

static const struct cs_stack *draft_stack(const struct model_view *v, const struct model_sync *sy)
{
	return v->stacks && sy->stack ? callstacks__stack(v->stacks, sy->stack) : NULL;
}

/* The iteration of sv's cycle; -1: none. */
static long place(const struct loop *lp, const struct model_view *v, const struct model_thread *t,
		  struct sync_verdict *sv)
{
	size_t h = half_step(t, sv->sync);
	long i = lp ? iter_at(lp, h) : -1, owner;
	const struct loop_iter *it;

	sv->pos = SPOS_OUTSIDE;
	sv->cycle = -1;
	sv->step = false;
	if (i < 0)
		return -1;
	owner = accept_owner(lp, i, h);
	if (owner >= 0) {
		sv->own = true;
		sv->pos = SPOS_ACCEPT;
		sv->cycle = lp->iters[owner].cycle;
		return owner;
	}
	it = &lp->iters[i];
	if (it->no_draft)
		return -1;
	sv->cycle = it->cycle;
	sv->pos = pos_in(it, h);
	sv->own = it->copy != LOOP_NONE && h == 2 * it->copy + 1;
	/* legacy-stream work in a step is the step's launches and copies, not its read */
	sv->step = sv->pos == SPOS_DRAFT_VERIFY && sv->sync->kind != SYNC_LEGACY && t &&
		   h / 2 <= t->nr_events && step_read(v, t, h);
	/* where the frames told the loop, the draft's own syncs are those its frames place in it */
	if (sv->pos == SPOS_DRAFT_VERIFY && !sv->step && lp->evidence.decided_by == ROLE_FROM_FRAMES)
		sv->step = frames__in_draft(&lp->evidence.frames, draft_stack(v, sv->sync));
	/* ... and the verify's, the model code's the draft's forwards made too (the mask's check) */
	if (sv->pos == SPOS_VERIFY && lp->evidence.decided_by == ROLE_FROM_FRAMES)
		sv->step = frames__in_forward(&lp->evidence.frames, draft_stack(v, sv->sync));
	return i;
}

/*
 * Where a flagged sync's wait came from: for one in accept, its cycle's last
 * verify launch; else the last graph or kernel launch before it on what it
 * waited for, within SYNCS_FLOW_SCAN loop events.
 */
static void find_flow(const struct loop *lp, const struct model_thread *t, long owner,
		      struct sync_verdict *sv)
{
	const struct model_sync *s = sv->sync;
	size_t i, n;

	sv->has_flow = false;
	if (!t)
		return;
	if (sv->pos == SPOS_ACCEPT && sv->cycle >= 0 && owner >= 0 &&
	    lp->iters[owner].ve != LOOP_NONE && lp->iters[owner].ve < t->nr_events) {
		sv->has_flow = true;
		sv->flow_ts = t->events[lp->iters[owner].ve].ts;
		return;
	}
	i = s->event_index < t->nr_events ? s->event_index : t->nr_events;
	for (n = 0; i > 0 && n < SYNCS_FLOW_SCAN; n++) {
		const struct loop_event *ev = &t->events[--i];

		if (ev->kind != LOOP_GRAPH && ev->kind != LOOP_KERNEL)
			continue;
		if (s->waited_on && ev->stream != s->waited_on && ev->stream != s->handle)
			continue;
		sv->has_flow = true;
		sv->flow_ts = ev->ts;
		return;
	}
}

static bool work_any(const struct work_count *w)
{
	return w->graphs || w->kernels || w->copies;
}

/* Kinds that only wait: with nothing in flight to wait for they cost nothing. */
static bool only_waits(enum sync_kind kind)
{
	return kind == SYNC_CTX || kind == SYNC_STREAM || kind == SYNC_EVENT || kind == SYNC_POLL ||
	       kind == SYNC_PAGEABLE || kind == SYNC_LEGACY;
}

/*
 * A call that returned faster than the probes' work between its two timestamps
 * (the return probe, and the call site where its entry took one) did not wait for
 * anything: what the model took as in flight, or could not know, was done.
 * Launches (legacy work) return at once by nature and are not judged by it.
 */
static bool no_wait_seen(const struct sync_verdict *sv, const struct syncs *out)
{
	const struct model_sync *sy = sv->sync;
	__u64 probes_ns = out->trap_ns;

	/* an alloc's cost is the serialising on the GPU, not the host's time */
	if (sy->kind == SYNC_LEGACY || sy->kind == SYNC_ALLOC || sy->flags & SYNC_UNRETURNED ||
	    !probes_ns)
		return false;
	if (sy->flags & SYNC_SITE_TAKEN)
		probes_ns += out->site_ns;
	return sv->blocked_ns < probes_ns;
}

static enum verdict verdict_of(const struct sync_verdict *sv, const struct syncs *out)
{
	const struct model_sync *sy = sv->sync;

	if (sy->kind == SYNC_CAPTURE)
		return VERDICT_FLAGGED;	/* it fails, and spoils the capture */
	if (sv->own)
		return VERDICT_ACCEPT;
	if (sv->step)
		return VERDICT_STEP;
	if (sv->pos == SPOS_OUTSIDE)
		return VERDICT_OUTSIDE;
	if (sy->kind == SYNC_UNKNOWN_HOST)
		/* returned: its blocked time showed it did not wait; else nothing tells */
		return sy->flags & SYNC_UNRETURNED ? VERDICT_UNKNOWN : VERDICT_NO_WAIT;
	/* back faster than the probes' own work: what seemed in flight, or was unknown, was done */
	if (no_wait_seen(sv, out))
		return VERDICT_NO_WAIT;
	if (sy->flags & (SYNC_FLAGS_UNKNOWN | SYNC_WAIT_UNKNOWN))
		return VERDICT_UNKNOWN;
	if (only_waits(sy->kind) && !work_any(&sy->waited))
		return VERDICT_NO_WAIT;
	return VERDICT_FLAGGED;	/* waited on work in flight, or blocks by itself */
}

/*
 * Is it a sync? Blocking calls are. Legacy work is when it waited on another stream's
 * work (held back work always did), or cannot be told; an async copy of unknown host
 * memory when it never returned or its wait cannot be told.
 */
static bool is_sync(const struct sync_verdict *sv)
{
	const struct model_sync *sy = sv->sync;

	if (sy->kind == SYNC_LEGACY)
		return work_any(&sy->waited) || sy->flags & (SYNC_FLAGS_UNKNOWN | SYNC_WAIT_UNKNOWN |
							     SYNC_HELD_BACK);
	if (sy->kind == SYNC_UNKNOWN_HOST)
		return sv->verdict == VERDICT_UNKNOWN || sy->flags & SYNC_UNRETURNED;
	return true;
}

/* Sync calls, and the calls that could synchronise, counted apart. */
static void count_sync(struct syncs *out, const struct sync_verdict *sv)
{
	const struct model_sync *sy = sv->sync;
	bool legacy_work = sy->kind == SYNC_LEGACY && !(sy->flags & SYNC_HELD_BACK);

	out->legacy_work += legacy_work;
	if (!sv->is_sync) {
		out->host_unknown_quiet += sy->kind == SYNC_UNKNOWN_HOST;
		return;
	}
	if (legacy_work && sy->flags & (SYNC_FLAGS_UNKNOWN | SYNC_WAIT_UNKNOWN))
		out->legacy_unknown++;
	else
		out->legacy_synced += legacy_work;
	out->sync_calls++;
	out->verdicts_of[sv->verdict]++;
	out->by_site += sv->by_site;
	out->flagged_by_site += sv->by_site && sv->flagged;
	out->accept_in_cycles += sv->verdict == VERDICT_ACCEPT && sv->cycle >= 0;
	out->accept_by_site += sv->by_site ? sv->accept_share : 0;
}

/*
 * --sample: cycles the run made. Accept syncs are seen all the time: those
 * judged by their site, at the rate counted cycles had them, are cycles no
 * window held whole. Without such syncs, the loops' spans scale them.
 */
static size_t run_cycles(const struct syncs *out, size_t counted, size_t by_span)
{
	if (!out->by_site)
		return counted;
	if (!out->accept_in_cycles)
		return by_span;
	return counted + (size_t)(out->accept_by_site * counted / out->accept_in_cycles + 0.5);
}

static void judge(struct sync_verdict *sv, const struct syncs *out)
{
	const struct model_sync *sy = sv->sync;

	sv->blocked_ns = sy->flags & SYNC_UNRETURNED || sy->ts_return < sy->ts
				 ? 0 : sy->ts_return - sy->ts;
	sv->has_bound = (sy->flags & SYNC_DRAINS_DEVICE) && !(sy->flags & SYNC_LAUNCH_DURING) &&
			sy->next_launch_ns >= sy->ts_return && sy->next_launch_ns;
	sv->bound_ns = sv->has_bound ? sy->next_launch_ns - sy->ts_return : 0;
	sv->verdict = verdict_of(sv, out);
	sv->flagged = sv->verdict == VERDICT_FLAGGED;
	sv->is_sync = is_sync(sv);
	sv->breaks_overlap = sv->flagged && sy->waited.graphs && sv->has_bound && sv->bound_ns;
}

/* The stream a site is named by: what the call waited on, else the stream it names. */
static __u64 site_stream(const struct model_sync *sy)
{
	return sy->waited_on ? sy->waited_on : sy->kind == SYNC_EVENT ? 0 : sy->handle;
}

static int add_site(struct site_table *tab, struct sync_verdict *sv)
{
	const struct model_sync *sy = sv->sync;
	__u64 stream = site_stream(sy);
	struct sync_site *site = NULL;
	size_t i;

	for (i = 0; i < tab->nr && !site; i++)
		if (tab->sites[i].kind == sy->kind && tab->sites[i].pos == sv->pos &&
		    tab->sites[i].name == sy->name && tab->sites[i].stream == stream)
			site = &tab->sites[i];
	if (!site) {
		if (tab->nr == tab->cap) {
			size_t n = tab->cap ? tab->cap * 2 : 16;
			struct sync_site *grown = realloc(tab->sites, n * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			tab->sites = grown;
			tab->cap = n;
		}
		site = &tab->sites[tab->nr++];
		*site = (struct sync_site){ .kind = sy->kind, .pos = sv->pos, .name = sy->name,
					    .stream = stream };
	}
	sv->site = site - tab->sites;
	site->count++;
	site->blocked_ns += sv->blocked_ns;
	site->bounded += sv->has_bound;
	site->bound_ns += sv->bound_ns;
	site->breaks += sv->breaks_overlap;
	site->gpu_known += sv->has_gpu_idle;
	site->gpu_idle_ns += sv->gpu_idle_ns;
	site->waited_graphs += sy->waited.graphs;
	site->waited_kernels += sy->waited.kernels;
	site->waited_copies += sy->waited.copies;
	return 0;
}

/*
 * Costliest first: the most time blocked (per counted cycle, one divisor for all
 * sites), then the most frequent, then by call name, position, kind and stream.
 */
static int site_cmp(const void *a, const void *b)
{
	const struct sync_site *x = a, *y = b;
	int by_name;

	if (x->blocked_ns != y->blocked_ns)
		return (x->blocked_ns < y->blocked_ns) - (x->blocked_ns > y->blocked_ns);
	if (x->count != y->count)
		return (x->count < y->count) - (x->count > y->count);
	by_name = strcmp(model__call_name(x->name), model__call_name(y->name));
	if (by_name)
		return by_name;
	if (x->pos != y->pos)
		return (x->pos > y->pos) - (x->pos < y->pos);
	if (x->kind != y->kind)
		return (x->kind > y->kind) - (x->kind < y->kind);
	return (x->stream > y->stream) - (x->stream < y->stream);
}

/* Cycles with at least one call of each site: within one thread cycles only grow. */
static int count_cycles_with(struct syncs *out, enum verdict v, struct site_table *tab,
			     const struct cycles *cy)
{
	long *last = malloc((tab->nr ? tab->nr : 1) * sizeof(*last));

	if (!last)
		return -ENOMEM;
	for (size_t l = 0; l < cy->nr_loops; l++) {
		for (size_t i = 0; i < tab->nr; i++)
			last[i] = -1;
		for (size_t i = 0; i < out->nr; i++) {
			const struct sync_verdict *sv = &out->verdicts[i];

			if (sv->verdict != v || sv->cycle < 0 || sv->sync->tid != cy->loops[l].tid ||
			    sv->sync->tgid != cy->loops[l].tgid || last[sv->site] == sv->cycle)
				continue;
			last[sv->site] = sv->cycle;
			tab->sites[sv->site].cycles_with++;
		}
	}
	free(last);
	return 0;
}

/* Sites by cost (site_cmp); the verdicts' site indices follow the sort. */
static int sort_sites(struct syncs *out, enum verdict v, struct site_table *tab)
{
	size_t *rank = malloc((tab->nr ? tab->nr : 1) * sizeof(*rank));

	if (!rank)
		return -ENOMEM;
	/* each site remembers where it was added, so the verdicts can follow it */
	for (size_t i = 0; i < tab->nr; i++)
		tab->sites[i].added = i;
	if (tab->nr)
		qsort(tab->sites, tab->nr, sizeof(*tab->sites), site_cmp);
	for (size_t i = 0; i < tab->nr; i++)
		rank[tab->sites[i].added] = i;
	for (size_t i = 0; i < out->nr && out->verdicts; i++)
		if (out->verdicts[i].verdict == v)
			out->verdicts[i].site = rank[out->verdicts[i].site];
	free(rank);
	return 0;
}

static int finish_sites(struct syncs *out, enum verdict v, struct site_table *tab,
			const struct cycles *cy)
{
	int ret = sort_sites(out, v, tab);

	return ret ? ret : count_cycles_with(out, v, tab, cy);
}

/* A call that could synchronise and did not: one more of its group. */
static int add_quiet(struct quiet_table *tab, const struct sync_verdict *sv,
		     const struct callstacks *stacks)
{
	const struct model_sync *sy = sv->sync;
	const struct cs_stack *st = callstacks__stack(stacks, sy->stack);
	__u32 site = st && st->site <= callstacks__nr_sites(stacks) ? st->site : 0;
	__u64 key = (__u64)sy->name | (__u64)sy->kind << 16 | (__u64)sv->pos << 24 |
		    (__u64)sv->verdict << 32;
	uintptr_t at = (uintptr_t)hmap__get(&tab->index, key, site);

	if (!at) {
		if (tab->nr == tab->cap &&
		    grow__zeroed((void **)&tab->sites, &tab->cap, tab->cap ? 2 * tab->cap : 16,
				 sizeof(*tab->sites)))
			return -ENOMEM;
		tab->sites[tab->nr] = (struct quiet_site){ .name = sy->name, .kind = sy->kind,
							   .pos = sv->pos, .verdict = sv->verdict,
							   .site = site };
		at = ++tab->nr;
		if (hmap__set(&tab->index, key, site, (void *)at))
			return -ENOMEM;
	}
	tab->sites[at - 1].count++;
	return 0;
}

/* Most calls first, then by call name, kind, position, verdict and call site. */
static int quiet_cmp(const void *a, const void *b)
{
	const struct quiet_site *x = a, *y = b;
	int by_name;

	if (x->count != y->count)
		return (x->count < y->count) - (x->count > y->count);
	by_name = strcmp(model__call_name(x->name), model__call_name(y->name));
	if (by_name)
		return by_name;
	if (x->kind != y->kind)
		return (x->kind > y->kind) - (x->kind < y->kind);
	if (x->pos != y->pos)
		return (x->pos > y->pos) - (x->pos < y->pos);
	if (x->verdict != y->verdict)
		return (x->verdict > y->verdict) - (x->verdict < y->verdict);
	return (x->site > y->site) - (x->site < y->site);
}

/* No call comes after: the groups in their order, the index no longer needed. */
static void finish_quiet(struct quiet_table *tab)
{
	hmap__free(&tab->index);
	if (tab->nr)
		qsort(tab->sites, tab->nr, sizeof(*tab->sites), quiet_cmp);
}

/*
 * --sample: the keys a sync is judged by outside the windows: its whole
 * stack, and its call site (a stack differing only deeper, or not yet seen).
 */
#define BY_STACK (1ull << 32)

static bool sample_keys(const struct model_view *v, const struct model_sync *sy, __u64 a[2],
			__u64 b[2])
{
	const struct cs_stack *st = draft_stack(v, sy);

	if (!st || !st->site)
		return false;
	a[0] = sy->stack;
	b[0] = sy->name | BY_STACK;
	a[1] = st->site;
	b[1] = sy->name;
	return true;
}

/*
 * --sample: a sync outside the windows, or in an iteration no window held
 * whole, was placed among launches partly unseen: its site's verdict holds.
 */
static bool judged_by_site(const struct model_view *v, const struct loop *lp, long placed,
			   const struct model_sync *sy)
{
	if (!sample__on(&v->sample))
		return false;
	if (!(sample__slot(&v->sample, sy->ts) % 2))
		return true;
	return placed >= 0 && lp && lp->iters[placed].cycle < 0;
}

int syncs__learn_site(struct model_view *v, const struct sync_verdict *sv)
{
	struct hmap *sites = &v->sample.sites;
	__u64 a[2], b[2];

	if (!sample__on(&v->sample) || !sv->is_sync || sv->cycle < 0 || sv->by_site ||
	    !sample_keys(v, sv->sync, a, b))
		return 0;
	for (int i = 0; i < 2; i++) {
		struct sample_site *ss = hmap__get(sites, a[i], b[i]);

		if (!ss) {
			ss = calloc(1, sizeof(*ss));
			if (!ss || hmap__set(sites, a[i], b[i], ss)) {
				free(ss);
				return -ENOMEM;
			}
		}
		_Static_assert(VERDICT_NR <= sizeof(ss->of) / sizeof(ss->of[0]), "sample_site.of");
		ss->of[sv->verdict]++;
		ss->pos = sv->pos;
		ss->pageable = sv->sync->kind == SYNC_PAGEABLE;
	}
	return 0;
}

/* Its stack's (else its site's) most common verdict inside whole cycles, or unseen. */
void syncs__judge_by_site(const struct model_view *v, struct sync_verdict *sv)
{
	const struct hmap *sites = &v->sample.sites;
	const struct sample_site *ss = NULL;
	enum verdict best = VERDICT_UNSEEN;
	__u64 a[2], b[2];
	__u32 all = 0;

	if (!sv->by_site)
		return;
	if (sample_keys(v, sv->sync, a, b) && !(ss = hmap__get(sites, a[0], b[0])))
		ss = hmap__get(sites, a[1], b[1]);
	for (int k = 0; ss && k < VERDICT_NR; k++) {
		all += ss->of[k];
		if (ss->of[k] && (best == VERDICT_UNSEEN || ss->of[k] > ss->of[best]))
			best = k;
	}
	sv->accept_share = all ? (float)ss->of[VERDICT_ACCEPT] / all : 0;
	sv->pos = ss ? ss->pos : SPOS_OUTSIDE;
	/* a site of more than one verdict: where it was placed tells, if that is one of them */
	if (ss && ss->of[best] < all && sv->placed < VERDICT_NR && ss->of[sv->placed]) {
		best = sv->placed;
		sv->pos = sv->placed_pos;
	}
	sv->cycle = -1;
	sv->own = best == VERDICT_ACCEPT;
	sv->step = best == VERDICT_STEP;
	sv->verdict = best;
	sv->flagged = best == VERDICT_FLAGGED;
	/* a copy whose wait no launch seen showed: as pageable as its site's were */
	sv->is_sync = is_sync(sv) || (ss && ss->pageable && sv->sync->kind == SYNC_UNKNOWN_HOST);
	sv->breaks_overlap = false;
}

/* Counts, quiet calls and site tables for one judged sync; 0 or -ENOMEM. */
static int file_verdict(struct syncs *out, const struct model_view *v, struct sync_verdict *sv)
{
	count_sync(out, sv);
	if (!sv->is_sync && add_quiet(&out->quiet, sv, v->stacks))
		return -ENOMEM;
	if (sv->verdict == VERDICT_FLAGGED && add_site(&out->flagged_sites, sv))
		return -ENOMEM;
	if (sv->verdict == VERDICT_UNKNOWN && add_site(&out->unknown_sites, sv))
		return -ENOMEM;
	return 0;
}

static int classify_all(struct syncs *out, struct model_view *v, const struct cycles *cy)
{
	for (size_t i = 0; i < v->nr_syncs; i++) {
		struct sync_verdict *sv = &out->verdicts[i];
		const struct model_sync *sy = &v->syncs[i];

		const struct loop *lp = loop_of(cy, sy->tgid, sy->tid);
		long owner;

		sv->sync = sy;
		sv->rank = rank_of(v, sy->tgid);
		owner = place(lp, v, thread_of_proc(v, sy->tgid, sy->tid), sv);
		judge(sv, out);
		if (v->gpu && !(sy->flags & SYNC_UNRETURNED))
			sv->has_gpu_idle = gputime__gap_at(v->gpu, sy->tgid, sy->ts_return,
							   &sv->gpu_idle_ns);
		if (judged_by_site(v, lp, owner, sy)) {
			sv->by_site = true;	/* judged once every whole cycle taught its site */
			sv->placed = sv->verdict;
			sv->placed_pos = sv->pos;
			continue;
		}
		if (sv->flagged)
			find_flow(lp, thread_of_proc(v, sy->tgid, sy->tid), owner, sv);
		if (file_verdict(out, v, sv))
			return -ENOMEM;
		if (!v->sample.learn_settled && syncs__learn_site(v, sv))
			return -ENOMEM;
	}
	for (size_t i = 0; sample__on(&v->sample) && i < v->nr_syncs; i++) {
		struct sync_verdict *sv = &out->verdicts[i];

		if (!sv->by_site)
			continue;
		syncs__judge_by_site(v, sv);
		if (file_verdict(out, v, sv))
			return -ENOMEM;
	}
	out->flagged = out->verdicts_of[VERDICT_FLAGGED];
	out->unknown = out->verdicts_of[VERDICT_UNKNOWN];
	finish_quiet(&out->quiet);
	if (finish_sites(out, VERDICT_FLAGGED, &out->flagged_sites, cy) ||
	    finish_sites(out, VERDICT_UNKNOWN, &out->unknown_sites, cy))
		return -ENOMEM;
	return 0;
}

static int callsite_cmp(const void *a, const void *b)
{
	const struct callsite_stat *x = a, *y = b;

	if (x->flagged != y->flagged)
		return (x->flagged < y->flagged) - (x->flagged > y->flagged);
	if (x->count != y->count)
		return (x->count < y->count) - (x->count > y->count);
	return (x->site > y->site) - (x->site < y->site);
}

/* One more sync of a call site, flagged or not. */
static void count_at_site(struct callsite_stat *cs, const struct sync_verdict *sv)
{
	cs->count++;
	cs->blocked_ns += sv->blocked_ns;
	cs->own += !sv->flagged && sv->own;
	if (!sv->flagged)
		return;
	if (!cs->flagged++) {
		cs->flagged_name = sv->sync->name;
		cs->flagged_pos = sv->pos;
	}
	cs->flagged_ns += sv->blocked_ns;
	if (sv->has_gpu_idle) {
		cs->flagged_gpu_known++;
		cs->flagged_gpu_idle_ns += sv->gpu_idle_ns;
	}
}

static int count_callsites(struct syncs *out, const struct model_view *v)
{
	__u32 nr_sites = callstacks__nr_sites(v->stacks);
	size_t *slot_of;

	if (!nr_sites)
		return 0;
	slot_of = calloc(nr_sites + 1, sizeof(*slot_of));
	out->by_callsite = calloc(nr_sites, sizeof(*out->by_callsite));
	if (!slot_of || !out->by_callsite) {
		free(slot_of);
		return -ENOMEM;
	}
	for (size_t i = 0; i < out->nr; i++) {
		const struct sync_verdict *sv = &out->verdicts[i];
		const struct cs_stack *st = callstacks__stack(v->stacks, sv->sync->stack);
		struct callsite_stat *cs;

		if (!sv->is_sync || !st || !st->site || st->site > nr_sites)
			continue;
		if (!slot_of[st->site]) {
			out->by_callsite[out->nr_by_callsite].site = st->site;
			slot_of[st->site] = ++out->nr_by_callsite;
		}
		cs = &out->by_callsite[slot_of[st->site] - 1];
		count_at_site(cs, sv);
		out->with_stack++;
	}
	free(slot_of);
	qsort(out->by_callsite, out->nr_by_callsite, sizeof(*out->by_callsite), callsite_cmp);
	return 0;
}

int syncs__analyse(struct model *m, const struct cycles *cy, struct syncs *out)
{
	struct model_view *v = model__view(m);

	memset(out, 0, sizeof(*out));
	out->verdicts = calloc(v->nr_syncs ? v->nr_syncs : 1, sizeof(*out->verdicts));
	if (!out->verdicts)
		return -ENOMEM;
	out->nr = v->nr_syncs;
	/* what of the probes lies between a call's two timestamps: the return probe, a site */
	out->trap_ns = v->calib.calls ? v->calib.return_ps / 1000 : 0;
	out->site_ns = v->calib.calls ? v->calib.stack_ps / 1000 : 0;
	for (size_t i = 0; i < cy->nr_loops; i++)
		out->cycles += cy->loops[i].nr_cycles;
	if (classify_all(out, v, cy) || count_callsites(out, v)) {
		syncs__free(out);
		return -ENOMEM;
	}
	out->cycles = run_cycles(out, out->cycles, cycles__run_estimate(cy, &v->sample));
	return 0;
}

/* Loops whose cycles a site was seen in, with the last such cycle (count_cycles_with). */
struct site_seen {
	__u32 tgid, tid;
	long cycle;
};

struct site_loops {
	struct site_seen *seen;
	size_t nr;
};

struct sync_stream {
	struct site_loops *loops[2];	/* flagged, unknown: by site index before the sort */
	size_t nr_loops[2];
	struct callsite_stat *by_site;	/* by call site id */
	size_t nr_by_site;
};

static void stream_free(struct sync_stream *st)
{
	if (!st)
		return;
	for (int w = 0; w < 2; w++) {
		for (size_t i = 0; i < st->nr_loops[w]; i++)
			free(st->loops[w][i].seen);
		free(st->loops[w]);
	}
	free(st->by_site);
	free(st);
}

/* A cycle of a loop the site was seen in: counted once per cycle (syncs of a thread in order). */
static int see_cycle(struct sync_stream *st, int which, struct site_table *tab,
		     const struct sync_verdict *sv)
{
	struct site_loops *sl;
	struct site_seen *grown;

	if (grow__zeroed((void **)&st->loops[which], &st->nr_loops[which], tab->nr,
			sizeof(*st->loops[which])))
		return -ENOMEM;
	sl = &st->loops[which][sv->site];
	for (size_t i = 0; i < sl->nr; i++) {
		struct site_seen *s = &sl->seen[i];

		if (s->tgid != sv->sync->tgid || s->tid != sv->sync->tid)
			continue;
		if (s->cycle != sv->cycle)
			tab->sites[sv->site].cycles_with++;
		s->cycle = sv->cycle;
		return 0;
	}
	grown = realloc(sl->seen, (sl->nr + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	sl->seen = grown;
	sl->seen[sl->nr++] = (struct site_seen){ sv->sync->tgid, sv->sync->tid, sv->cycle };
	tab->sites[sv->site].cycles_with++;
	return 0;
}

static int add_callsite(struct syncs *out, const struct sync_verdict *sv,
			const struct callstacks *stacks)
{
	const struct cs_stack *st = callstacks__stack(stacks, sv->sync->stack);
	__u32 nr_sites = callstacks__nr_sites(stacks);
	struct callsite_stat *cs;

	if (!sv->is_sync || !st || !st->site || st->site > nr_sites)
		return 0;
	if (grow__zeroed((void **)&out->stream->by_site, &out->stream->nr_by_site, nr_sites + 1,
			sizeof(*out->stream->by_site)))
		return -ENOMEM;
	cs = &out->stream->by_site[st->site];
	cs->site = st->site;
	count_at_site(cs, sv);
	out->with_stack++;
	return 0;
}

int syncs__add(struct syncs *out, const struct sync_verdict *sv, const struct callstacks *stacks)
{
	struct sync_verdict v = *sv;
	int which = sv->verdict == VERDICT_FLAGGED ? 0 : 1;
	struct site_table *tab = which ? &out->unknown_sites : &out->flagged_sites;

	if (!out->stream && !(out->stream = calloc(1, sizeof(*out->stream))))
		return -ENOMEM;
	out->nr++;
	count_sync(out, sv);
	if (!sv->is_sync && add_quiet(&out->quiet, sv, stacks))
		return -ENOMEM;
	if (sv->verdict == VERDICT_FLAGGED || sv->verdict == VERDICT_UNKNOWN) {
		if (add_site(tab, &v) || (v.cycle >= 0 && see_cycle(out->stream, which, tab, &v)))
			return -ENOMEM;
	}
	return add_callsite(out, sv, stacks);
}

/* What goes to the store: the call as the model had it, and its verdict. */
struct stored_sync {
	struct model_sync sync;
	struct sync_verdict sv;
};

/*
 * A launch or copy that could synchronise and did not is counted in its group
 * (quiet) and not stored: the store grows with syncs, not with calls.
 */
int syncs__store(struct syncs *out, const struct sync_verdict *sv)
{
	struct stored_sync rec = { .sync = *sv->sync, .sv = *sv };
	int ret;

	if (!sv->is_sync)
		return 0;
	rec.sv.sync = NULL;
	ret = spill__write(&out->store, &rec, sizeof(rec));
	out->nr_stored += !ret;
	return ret;
}

int syncs__end(struct syncs *out, size_t cycles, size_t by_span)
{
	struct sync_stream *st = out->stream;

	out->cycles = run_cycles(out, cycles, by_span);
	out->flagged = out->verdicts_of[VERDICT_FLAGGED];
	out->unknown = out->verdicts_of[VERDICT_UNKNOWN];
	finish_quiet(&out->quiet);
	if (sort_sites(out, VERDICT_FLAGGED, &out->flagged_sites) ||
	    sort_sites(out, VERDICT_UNKNOWN, &out->unknown_sites))
		return -ENOMEM;
	if (!st || !st->nr_by_site)
		return 0;
	out->by_callsite = calloc(st->nr_by_site, sizeof(*out->by_callsite));
	if (!out->by_callsite)
		return -ENOMEM;
	for (size_t i = 0; i < st->nr_by_site; i++)
		if (st->by_site[i].count)
			out->by_callsite[out->nr_by_callsite++] = st->by_site[i];
	qsort(out->by_callsite, out->nr_by_callsite, sizeof(*out->by_callsite), callsite_cmp);
	return 0;
}

int syncs__each(const struct syncs *sy, const struct model_view *v,
		int (*fn)(void *ctx, const struct sync_verdict *sv), void *ctx)
{
	struct stored_sync rec;
	int ret = 0;

	if (!sy->store) {
		for (size_t i = 0; i < sy->nr && sy->verdicts && !ret; i++)
			ret = fn(ctx, &sy->verdicts[i]);
		return ret;
	}
	if (fflush(sy->store) || fseek(sy->store, 0, SEEK_SET))
		return -EIO;
	for (size_t i = 0; i < sy->nr_stored && !ret; i++) {
		if (fread(&rec, sizeof(rec), 1, sy->store) != 1)
			return -EIO;
		rec.sv.sync = &rec.sync;
		rec.sv.rank = rank_of(v, rec.sync.tgid);
		ret = fn(ctx, &rec.sv);
	}
	return ret;
}

void syncs__free(struct syncs *s)
{
	if (!s)
		return;
	if (s->store)
		fclose(s->store);
	stream_free(s->stream);
	free(s->verdicts);
	free(s->flagged_sites.sites);
	free(s->unknown_sites.sites);
	free(s->quiet.sites);
	hmap__free(&s->quiet.index);
	free(s->by_callsite);
	memset(s, 0, sizeof(*s));
}

static const char *const pos_names[SPOS_NR] = {
	[SPOS_DRAFT_VERIFY] = "draft-verify", [SPOS_VERIFY] = "verify",
	[SPOS_AFTER_VERIFY] = "after-verify", [SPOS_ACCEPT] = "accept",
	[SPOS_EXTEND] = "extend",	      [SPOS_OUTSIDE] = "outside",
};

const char *syncs__pos_name(enum sync_pos pos)
{
	return pos < SPOS_NR ? pos_names[pos] : "?";
}

static const char *const verdict_names[VERDICT_NR] = {
	[VERDICT_FLAGGED] = "flagged", [VERDICT_ACCEPT] = "accept",   [VERDICT_NO_WAIT] = "no-wait",
	[VERDICT_STEP] = "step",
	[VERDICT_UNKNOWN] = "unknown", [VERDICT_OUTSIDE] = "outside",
	[VERDICT_UNSEEN] = "unseen",
};

const char *syncs__verdict_name(enum verdict v)
{
	return v < VERDICT_NR ? verdict_names[v] : "?";
}

int syncs__overhead(const struct model_view *v, const struct model_proc *p, struct overhead *o)
{
	const struct cpu_span *cpu = &p->cpu;
	double cpu_s;

	memset(o, 0, sizeof(*o));
	o->tgid = p->tgid;
	o->hits_entry = p->hits_entry;
	o->hits_return = p->hits_return;
	o->hits_stack = p->hits_stack;
	if (!v->calib.calls)
		return -ENODATA;
	o->added_ns = (p->hits_entry * (double)v->calib.entry_ps +
		       p->hits_return * (double)(v->calib.entry_ps + v->calib.return_ps) +
		       p->hits_stack * (double)v->calib.stack_ps) / 1000;
	/*
	 * over the time it was traced, not between its first and last call: a
	 * burst of calls in a millisecond is no rate of hundreds of thousands
	 */
	if (p->calls)
		o->span_s = ((p->exit_ns ? p->exit_ns : v->last_ns) -
			     (v->first_ns < p->first_ns ? v->first_ns : p->first_ns)) / 1e9;
	if (o->span_s > 0) {
		o->entry_per_s = p->hits_entry / o->span_s;
		o->return_per_s = p->hits_return / o->span_s;
		o->ms_per_s = o->added_ns / 1e6 / o->span_s;
	}
	cpu_s = cpu->samples > 1 ? (cpu->last_ts - cpu->first_ts) / 1e9 : 0;
	if (cpu_s > 0 && cpu->last_ns > cpu->first_ns) {
		o->has_cpu = true;
		o->cpu_ms_per_s = (cpu->last_ns - cpu->first_ns) / 1e6 / cpu_s;
		o->percent = o->cpu_ms_per_s > 0 ? 100 * o->ms_per_s / o->cpu_ms_per_s : 0;
	}
	return 0;
}
