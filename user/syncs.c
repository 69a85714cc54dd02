// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Each model sync against the iterations of its thread's loop. Positions use
 * half steps over the thread's loop events: 2k + 1 is event k itself, 2k lies
 * just before it (a call that made no loop event, such as a query or an alloc).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

static const struct model_thread *thread_of(const struct model_view *v, __u32 tid)
{
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i]->tid == tid)
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

static void place(const struct loop *lp, const struct model_thread *t, struct sync_verdict *sv)
{
	size_t h = half_step(t, sv->sync);
	long i = lp ? iter_at(lp, h) : -1, owner;
	const struct loop_iter *it;

	sv->pos = SPOS_OUTSIDE;
	sv->cycle = -1;
	if (i < 0)
		return;
	owner = accept_owner(lp, i, h);
	if (owner >= 0) {
		sv->own = true;
		sv->pos = SPOS_ACCEPT;
		sv->cycle = lp->iters[owner].cycle;
		return;
	}
	it = &lp->iters[i];
	if (it->no_draft)
		return;
	sv->cycle = it->cycle;
	sv->pos = pos_in(it, h);
	sv->own = it->copy != LOOP_NONE && h == 2 * it->copy + 1;
}

static bool work_any(const struct work_count *w)
{
	return w->graphs || w->kernels || w->copies;
}

/* Kinds that only wait: with nothing in flight to wait for they cost nothing. */
static bool only_waits(enum sync_kind kind)
{
	return kind == SYNC_CTX || kind == SYNC_STREAM || kind == SYNC_EVENT || kind == SYNC_POLL;
}

static void judge(struct sync_verdict *sv)
{
	const struct model_sync *sy = sv->sync;

	sv->blocked_ns = sy->flags & SYNC_UNRETURNED || sy->ts_return < sy->ts
				 ? 0 : sy->ts_return - sy->ts;
	sv->has_bound = (sy->flags & SYNC_DRAINS_DEVICE) && !(sy->flags & SYNC_LAUNCH_DURING) &&
			sy->next_launch_ns >= sy->ts_return && sy->next_launch_ns;
	sv->bound_ns = sv->has_bound ? sy->next_launch_ns - sy->ts_return : 0;
	if (sy->kind == SYNC_CAPTURE) {
		sv->flagged = true;	/* it fails, and spoils the capture */
		return;
	}
	if (sv->own || sv->pos == SPOS_OUTSIDE)
		return;
	/*
	 * Legacy-stream work serialises only with blocking streams that have work
	 * in flight: a loop that runs on the default stream alone is not flagged.
	 */
	if (only_waits(sy->kind) || sy->kind == SYNC_LEGACY)
		sv->flagged = work_any(&sy->waited) && !(sy->flags & SYNC_WAIT_UNKNOWN);
	else
		sv->flagged = true;	/* it blocks by itself */
	sv->breaks_overlap = sv->flagged && sy->waited.graphs && sv->has_bound && sv->bound_ns;
}

static int add_site(struct syncs *s, size_t *cap, const struct sync_verdict *sv)
{
	struct sync_site *site = NULL;

	for (size_t i = 0; i < s->nr_sites && !site; i++)
		if (s->sites[i].kind == sv->sync->kind && s->sites[i].pos == sv->pos &&
		    s->sites[i].name == sv->sync->name)
			site = &s->sites[i];
	if (!site) {
		if (s->nr_sites == *cap) {
			size_t n = *cap ? *cap * 2 : 16;
			struct sync_site *grown = realloc(s->sites, n * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			s->sites = grown;
			*cap = n;
		}
		site = &s->sites[s->nr_sites++];
		*site = (struct sync_site){ .kind = sv->sync->kind, .pos = sv->pos,
					    .name = sv->sync->name };
	}
	site->count++;
	site->blocked_ns += sv->blocked_ns;
	site->bounded += sv->has_bound;
	site->bound_ns += sv->bound_ns;
	site->breaks += sv->breaks_overlap;
	return 0;
}

/* Most frequent first, then by position in the cycle, kind and call. */
static int site_cmp(const void *a, const void *b)
{
	const struct sync_site *x = a, *y = b;

	if (x->count != y->count)
		return (x->count < y->count) - (x->count > y->count);
	if (x->pos != y->pos)
		return (x->pos > y->pos) - (x->pos < y->pos);
	if (x->kind != y->kind)
		return (x->kind > y->kind) - (x->kind < y->kind);
	return (x->name > y->name) - (x->name < y->name);
}

int syncs__analyse(struct model *m, const struct cycles *cy, struct syncs *out)
{
	const struct model_view *v = model__view(m);
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	out->verdicts = calloc(v->nr_syncs ? v->nr_syncs : 1, sizeof(*out->verdicts));
	if (!out->verdicts)
		return -ENOMEM;
	out->nr = v->nr_syncs;
	for (size_t i = 0; i < v->nr_syncs; i++) {
		struct sync_verdict *sv = &out->verdicts[i];
		const struct model_sync *sy = &v->syncs[i];

		sv->sync = sy;
		sv->rank = rank_of(v, sy->tgid);
		place(loop_of(cy, sy->tgid, sy->tid), thread_of(v, sy->tid), sv);
		judge(sv);
		if (!sv->flagged)
			continue;
		out->flagged++;
		if (add_site(out, &cap, sv)) {
			syncs__free(out);
			return -ENOMEM;
		}
	}
	if (out->nr_sites)
		qsort(out->sites, out->nr_sites, sizeof(*out->sites), site_cmp);
	return 0;
}

void syncs__free(struct syncs *s)
{
	if (!s)
		return;
	free(s->verdicts);
	free(s->sites);
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

int syncs__overhead(const struct model_view *v, const struct model_proc *p, struct overhead *o)
{
	const struct cpu_span *cpu = &p->cpu;
	double cpu_s;

	memset(o, 0, sizeof(*o));
	o->tgid = p->tgid;
	o->hits_entry = p->hits_entry;
	o->hits_return = p->hits_return;
	if (!v->calib.calls)
		return -ENODATA;
	o->added_ns = (p->hits_entry * (double)v->calib.entry_ps +
		       p->hits_return * (double)(v->calib.entry_ps + v->calib.return_ps)) / 1000;
	o->span_s = p->calls > 1 ? (p->last_ns - p->first_ns) / 1e9 : 0;
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
