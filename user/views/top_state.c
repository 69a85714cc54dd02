// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Window aggregates for top: per-second buckets and a ring of recent cycles per loop. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "catalog.h"
#include "grow.h"
#include "top_state.h"

#define NS 1000000000ull
#define SECONDS 64		/* buckets: windows up to a minute */
#define RING 4096		/* recent cycles per loop, for the percentiles */

/* Counts and sums per second of trace time, the last SECONDS of them. */
struct series {
	__u64 sec[SECONDS], n[SECONDS], sum[SECONDS];
	__u64 total;
};

struct ring_cycle {
	__u64 start_ns, end_ns;
	__u64 phase_ns[PHASE_NR];
	__u64 blocked_ns;
	/* --gpu, valid when gpu_known: what the GPU columns show */
	__u64 gpu_draft_ns, gpu_verify_ns, gpu_idle_ns, gpu_window_ns;
	bool gpu_known;
};

const double top_cycle_bucket_s[TOP_CYCLE_BUCKETS] = {
	0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1,
};

/* Since the start: never reset, so counters derived from it only grow. */
struct loop_life {
	__u64 cycles, bucket[TOP_CYCLE_BUCKETS];
	__u64 cycle_ns, phase_ns[PHASE_NR], blocked_ns;
	__u64 gpu_cycles, gpu_phase_ns[PHASE_NR], gpu_idle_ns;
};

struct loop_agg {
	__u32 tgid, tid;
	int rank;
	struct ring_cycle ring[RING];
	size_t head, len;
	__u64 total;
	struct loop_life life;
};

#define SITE_CALLERS 4	/* call sites counted per flagged site; a new one replaces the rarest */

struct site_agg {
	__u32 tgid;
	__u16 name;
	enum sync_pos pos;
	enum sync_kind kind;
	int rank;
	struct series count, blocked;
	__u64 life_count, life_blocked_ns;
	__u32 callers[SITE_CALLERS];	/* stacks (callstacks__stack() ids), 0: free */
	__u64 caller_count[SITE_CALLERS];
};

struct proc_agg {
	__u32 tgid;
	__u64 *calls;		/* by catalogue index, since the start */
};

struct open_call {
	__u32 tgid, tid, probe;
	__u64 ts;
};

struct top_state {
	struct loop_agg *loops[TOP_MAX_LOOPS];
	size_t nr_loops;
	struct site_agg sites[TOP_MAX_SITES];
	size_t nr_sites;
	__u64 sites_lost;		/* flagged syncs of sites past the table */
	__u64 sites_lost_life;		/* the same since the start */
	struct series *calls;		/* by catalogue index */
	struct proc_agg procs[TOP_MAX_PROCS];
	size_t nr_procs, last_proc;
	__u64 calls_lost;		/* of processes past the table */
	__u64 since_ns;			/* first call counted (after a reset) */
	__u64 prev_records, prev_ns;	/* at the last frame: for records/s */
	double records_per_s;
	bool gpu_seen;			/* a cycle with GPU figures came: a reset keeps it */
	/* top__keep_open: the calls open at the end, which finishing the pipeline closes */
	struct open_call *open_at_end;
	size_t nr_open_at_end, cap_open_at_end, open_lost;
};

static void series_add(struct series *s, __u64 ts, __u64 v)
{
	__u64 sec = ts / NS;
	size_t k = sec % SECONDS;

	if (s->sec[k] != sec) {
		s->sec[k] = sec;
		s->n[k] = s->sum[k] = 0;
	}
	s->n[k]++;
	s->sum[k] += v;
	s->total++;
}

/*
 * Whole seconds after now - window up to now's own: their count and sum, and
 * the time they span, from since (the first call counted) if that is later.
 */
static double series_window(const struct series *s, __u64 now, double window_s, __u64 since,
			    __u64 *n, __u64 *sum)
{
	__u64 last = now / NS, w = window_s < 1 ? 1 : (__u64)window_s;
	__u64 first = last >= w ? last - w + 1 : 0, from = first * NS;

	*n = *sum = 0;
	for (size_t k = 0; k < SECONDS; k++)
		if (s->sec[k] >= first && s->sec[k] <= last) {
			*n += s->n[k];
			*sum += s->sum[k];
		}
	from = since > from ? since : from;
	return now > from ? (now - from) / 1e9 : 0;
}

struct top_state *top__new(void)
{
	struct top_state *t = calloc(1, sizeof(*t));

	if (t && !(t->calls = calloc(catalog_len, sizeof(*t->calls)))) {
		free(t);
		return NULL;
	}
	return t;
}

void top__free(struct top_state *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_loops; i++)
		free(t->loops[i]);
	for (size_t i = 0; i < t->nr_procs; i++)
		free(t->procs[i].calls);
	free(t->calls);
	free(t->open_at_end);
	free(t);
}

void top__reset(struct top_state *t)
{
	for (size_t i = 0; i < t->nr_loops; i++) {
		t->loops[i]->len = t->loops[i]->head = 0;
		t->loops[i]->total = 0;
	}
	for (size_t i = 0; i < t->nr_sites; i++) {
		memset(&t->sites[i].count, 0, sizeof(t->sites[i].count));
		memset(&t->sites[i].blocked, 0, sizeof(t->sites[i].blocked));
	}
	memset(t->calls, 0, catalog_len * sizeof(*t->calls));
	t->sites_lost = 0;
	t->since_ns = 0;
}

static struct loop_agg *loop_of(struct top_state *t, const struct loop *lp)
{
	struct loop_agg *a;

	for (size_t i = 0; i < t->nr_loops; i++)
		if (t->loops[i]->tgid == lp->tgid && t->loops[i]->tid == lp->tid)
			return t->loops[i];
	if (t->nr_loops == TOP_MAX_LOOPS || !(a = calloc(1, sizeof(*a))))
		return NULL;
	a->tgid = lp->tgid;
	a->tid = lp->tid;
	a->rank = lp->rank;
	t->loops[t->nr_loops++] = a;
	return a;
}

static void life_add(struct loop_life *l, const struct cycle *c)
{
	__u64 ns = c->end_ns - c->start_ns;

	l->cycles++;
	for (int b = 0; b < TOP_CYCLE_BUCKETS; b++)
		if (ns <= top_cycle_bucket_s[b] * NS)
			l->bucket[b]++;
	l->cycle_ns += ns;
	for (int p = 0; p < PHASE_NR; p++)
		l->phase_ns[p] += c->phase[p].span_ns;
	l->blocked_ns += c->blocked_ns;
	if (!c->gpu_known)
		return;
	l->gpu_cycles++;
	for (int p = 0; p < PHASE_NR; p++)
		l->gpu_phase_ns[p] += c->phase[p].gpu_busy_ns;
	l->gpu_idle_ns += c->gpu_idle_ns;
}

static int on_cycle(void *ctx, const struct loop *lp, const struct cycle *c)
{
	struct top_state *t = ctx;
	struct loop_agg *a = loop_of(t, lp);
	struct ring_cycle *rc;

	if (!a)
		return 0;	/* past the table: the other loops still count */
	a->rank = lp->rank;
	rc = &a->ring[a->head];
	a->head = (a->head + 1) % RING;
	if (a->len < RING)
		a->len++;
	rc->start_ns = c->start_ns;
	rc->end_ns = c->end_ns;
	for (int p = 0; p < PHASE_NR; p++)
		rc->phase_ns[p] = c->phase[p].span_ns;
	rc->blocked_ns = c->blocked_ns;
	rc->gpu_known = c->gpu_known;
	rc->gpu_draft_ns = c->phase[PHASE_DRAFT].gpu_busy_ns;
	rc->gpu_verify_ns = c->phase[PHASE_VERIFY].gpu_busy_ns;
	rc->gpu_idle_ns = c->gpu_idle_ns;
	rc->gpu_window_ns = c->gpu_end_ns > c->gpu_start_ns ? c->gpu_end_ns - c->gpu_start_ns : 0;
	t->gpu_seen |= c->gpu_known;
	a->total++;
	life_add(&a->life, c);
	return 0;
}

static struct site_agg *site_of(struct top_state *t, const struct sync_verdict *sv)
{
	const struct model_sync *sy = sv->sync;
	struct site_agg *s;

	for (size_t i = 0; i < t->nr_sites; i++) {
		s = &t->sites[i];
		if (s->name == sy->name && s->pos == sv->pos && s->kind == sy->kind &&
		    s->rank == sv->rank && s->tgid == sy->tgid)
			return s;
	}
	if (t->nr_sites == TOP_MAX_SITES)
		return NULL;
	s = &t->sites[t->nr_sites++];
	memset(s, 0, sizeof(*s));
	s->tgid = sy->tgid;
	s->name = sy->name;
	s->pos = sv->pos;
	s->kind = sy->kind;
	s->rank = sv->rank;
	return s;
}

/* Count the stack of one flagged sync (windows need no more than the commonest site). */
static void count_caller(struct site_agg *s, __u32 stack)
{
	int rarest = 0;

	if (!stack)
		return;
	for (int i = 0; i < SITE_CALLERS; i++) {
		if (s->callers[i] == stack || !s->callers[i]) {
			s->callers[i] = stack;
			s->caller_count[i]++;
			return;
		}
		if (s->caller_count[i] < s->caller_count[rarest])
			rarest = i;
	}
	s->callers[rarest] = stack;
	s->caller_count[rarest] = 1;
}

static int on_sync(void *ctx, const struct sync_verdict *sv)
{
	struct top_state *t = ctx;
	struct site_agg *s;

	if (sv->verdict != VERDICT_FLAGGED)
		return 0;
	s = site_of(t, sv);
	if (!s) {
		t->sites_lost++;
		t->sites_lost_life++;
		return 0;
	}
	series_add(&s->count, sv->sync->ts, 1);
	series_add(&s->blocked, sv->sync->ts, sv->blocked_ns);
	s->life_count++;
	s->life_blocked_ns += sv->blocked_ns;
	count_caller(s, sv->sync->stack);
	return 0;
}

/* The process's call counts; NULL past the table or without memory. */
static __u64 *proc_calls(struct top_state *t, __u32 tgid)
{
	struct proc_agg *a = &t->procs[t->last_proc];

	if (t->nr_procs && a->tgid == tgid)
		return a->calls;
	for (size_t i = 0; i < t->nr_procs; i++)
		if (t->procs[i].tgid == tgid) {
			t->last_proc = i;
			return t->procs[i].calls;
		}
	if (t->nr_procs == TOP_MAX_PROCS)
		return NULL;
	a = &t->procs[t->nr_procs];
	a->calls = calloc(catalog_len, sizeof(*a->calls));
	if (!a->calls)
		return NULL;
	a->tgid = tgid;
	t->last_proc = t->nr_procs++;
	return a->calls;
}

static int on_call(void *ctx, const struct tf_header *hdr, const struct sp_call *call)
{
	struct top_state *t = ctx;
	__u32 cookie = call->entry.probe, index;
	__u64 *counts;

	if (!t->since_ns)
		t->since_ns = call->entry.ts;
	if (cookie >= hdr->nr_probes || hdr->probes[cookie].catalog >= (__u32)catalog_len ||
	    call->undescribed)
		return 0;
	index = hdr->probes[cookie].catalog;
	series_add(&t->calls[index], call->entry.ts, 0);
	counts = proc_calls(t, call->entry.tgid);
	if (counts)
		counts[index]++;
	else
		t->calls_lost++;
	return 0;
}

void top__consumer(struct top_state *t, struct pipeline_consumer *c)
{
	*c = (struct pipeline_consumer){ .call = on_call, .cycle = on_cycle, .sync = on_sync,
					 .ctx = t };
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Cycles that ended in the window: their rate over their own span, percentiles, shares. */
/* A window's time, or with --sample (sw not NULL) the part of it inside sw's windows. */
static __u64 seen_ns(const struct sample_windows *sw, __u64 from, __u64 to)
{
	if (to <= from)
		return 0;
	return sw ? sample__covered_ns(sw, from, to) : to - from;
}

/* --sample: the windows, for rates over their time only; NULL when not sampled. */
static const struct sample_windows *sampled(const struct model_view *v)
{
	return v && sample__on(&v->sample) ? &v->sample : NULL;
}

static void loop_row(const struct loop_agg *a, __u64 now, double window_s,
		     const struct sample_windows *sw, __u64 *scratch, struct top_loop_row *row)
{
	__u64 from = now > window_s * NS ? now - (__u64)(window_s * NS) : 0;
	__u64 first_start = ~0ull, last_end = 0, total_ns = 0, parts[PHASE_NR + 1] = { 0 };
	__u64 gpu_draft = 0, gpu_verify = 0, gpu_idle = 0, gpu_window = 0, span;
	size_t n = 0;

	*row = (struct top_loop_row){ .tgid = a->tgid, .tid = a->tid, .rank = a->rank,
				      .total = a->total };
	for (size_t i = 0; i < a->len; i++) {
		const struct ring_cycle *c = &a->ring[(a->head + RING - 1 - i) % RING];

		if (c->end_ns <= from || c->end_ns > now)
			continue;
		scratch[n++] = c->end_ns - c->start_ns;
		first_start = c->start_ns < first_start ? c->start_ns : first_start;
		last_end = c->end_ns > last_end ? c->end_ns : last_end;
		total_ns += c->end_ns - c->start_ns;
		for (int p = 0; p < PHASE_NR; p++)
			parts[p] += c->phase_ns[p];
		parts[PHASE_NR] += c->blocked_ns;
		if (!c->gpu_known)
			continue;
		row->gpu_cycles++;
		gpu_draft += c->gpu_draft_ns;
		gpu_verify += c->gpu_verify_ns;
		gpu_idle += c->gpu_idle_ns;
		gpu_window += c->gpu_window_ns;
	}
	row->cycles = n;
	row->idle = !n;
	if (!n)
		return;
	if (row->gpu_cycles) {
		row->gpu_draft_ns = (double)gpu_draft / row->gpu_cycles;
		row->gpu_verify_ns = (double)gpu_verify / row->gpu_cycles;
		row->gpu_idle_share = gpu_window ? (double)gpu_idle / gpu_window : 0;
	}
	span = seen_ns(sw, first_start, last_end);
	row->cycles_per_s = span ? n * 1e9 / span : 0;
	row->mean_ns = (double)total_ns / n;
	qsort(scratch, n, sizeof(*scratch), cmp_u64);
	row->p50_ns = scratch[(n - 1) / 2];
	row->p99_ns = scratch[(n - 1) * 99 / 100];
	for (int p = 0; p <= PHASE_NR; p++)
		row->share[p] = total_ns ? (double)parts[p] / total_ns : 0;
}

static int loop_row_cmp(const void *pa, const void *pb, void *psort)
{
	const struct top_loop_row *a = pa, *b = pb;
	enum top_sort sort = *(const enum top_sort *)psort;
	unsigned int ra = a->rank, rb = b->rank;	/* unknown ranks last */

	if (sort == TOP_SORT_RATE && a->cycles_per_s != b->cycles_per_s)
		return a->cycles_per_s < b->cycles_per_s ? 1 : -1;
	if (sort == TOP_SORT_P99 && a->p99_ns != b->p99_ns)
		return a->p99_ns < b->p99_ns ? 1 : -1;
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static void frame_loops(struct top_state *t, __u64 now, const struct top_opts *o,
			const struct sample_windows *sw, struct top_frame *f)
{
	static __u64 scratch[RING];
	enum top_sort sort = o->sort;

	f->nr_loops = 0;
	for (size_t i = 0; i < t->nr_loops; i++) {
		if (o->focus_rank >= 0 && t->loops[i]->rank != o->focus_rank)
			continue;
		loop_row(t->loops[i], now, o->window_s, sw, scratch, &f->loops[f->nr_loops++]);
	}
	qsort_r(f->loops, f->nr_loops, sizeof(*f->loops), loop_row_cmp, &sort);
}

/* Cycles of one rank in the window: a site's blocked time is per cycle of its rank. */
static __u64 rank_cycles(const struct top_frame *f, int rank)
{
	__u64 n = 0;

	for (size_t i = 0; i < f->nr_loops; i++)
		if (f->loops[i].rank == rank)
			n += f->loops[i].cycles;
	return n;
}

/* Mean cycle time of the loops of a rank in the window, 0: none. */
static double rank_mean_ns(const struct top_frame *f, int rank)
{
	double sum = 0;
	__u64 n = 0;

	for (size_t i = 0; i < f->nr_loops; i++)
		if (f->loops[i].rank == rank && f->loops[i].cycles) {
			sum += f->loops[i].mean_ns * f->loops[i].cycles;
			n += f->loops[i].cycles;
		}
	return n ? sum / n : 0;
}

void top__answer(const struct top_frame *f, struct top_answer *a)
{
	double whole = 0, phase[PHASE_NR] = { 0 }, gpu = 0, p50[TOP_MAX_LOOPS];

	*a = (struct top_answer){ .gpu_idle_share = -1 };
	for (size_t i = 0; i < f->nr_loops; i++) {
		const struct top_loop_row *r = &f->loops[i];
		double ns = r->mean_ns * r->cycles;

		if (!r->cycles)
			continue;
		p50[a->loops++] = r->p50_ns;
		a->cycles_per_s += r->cycles_per_s;
		whole += ns;
		for (int p = 0; p < PHASE_NR; p++)
			phase[p] += r->share[p] * ns;
		if (r->gpu_cycles) {
			a->gpu_idle_share = a->gpu_idle_share < 0 ? 0 : a->gpu_idle_share;
			a->gpu_idle_share += r->gpu_idle_share * r->gpu_cycles;
			gpu += r->gpu_cycles;
		}
	}
	if (!a->loops)
		return;
	a->cycles_per_s /= a->loops;
	qsort(p50, a->loops, sizeof(p50[0]), cmp_double);
	a->p50_ns = p50[(a->loops - 1) / 2];
	for (int p = 0; p < PHASE_NR; p++)
		a->share[p] = whole > 0 ? phase[p] / whole : 0;
	if (gpu > 0)
		a->gpu_idle_share /= gpu;
	/* sites come costliest first; one with no call in the window costs nothing now */
	if (f->nr_sites && f->sites[0].count) {
		double mean = rank_mean_ns(f, f->sites[0].rank);

		a->site = &f->sites[0];
		a->site_share = mean > 0 ? f->sites[0].blocked_ms_per_cycle * 1e6 / mean : 0;
	}
}

/* As report orders its sites: blocked time per cycle first, then count, then the call's name. */
static int site_row_cmp(const void *pa, const void *pb)
{
	const struct top_site_row *a = pa, *b = pb;

	if (a->blocked_ms_per_cycle != b->blocked_ms_per_cycle)
		return a->blocked_ms_per_cycle < b->blocked_ms_per_cycle ? 1 : -1;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	if (a->name != b->name)
		return strcmp(model__call_name(a->name), model__call_name(b->name));
	return (a->tgid > b->tgid) - (a->tgid < b->tgid);
}

/* The call site most of a flagged site's counted stacks share. */
static const char *top_caller(const struct site_agg *s, const struct callstacks *stacks)
{
	__u32 site[SITE_CALLERS] = { 0 };
	__u64 best_n = 0;
	int best = -1;

	for (int i = 0; i < SITE_CALLERS; i++) {
		const struct cs_stack *st = callstacks__stack(stacks, s->callers[i]);

		site[i] = st ? st->site : 0;
	}
	for (int i = 0; i < SITE_CALLERS; i++) {
		__u64 n = 0;

		for (int k = 0; k < SITE_CALLERS && site[i]; k++)
			n += site[k] == site[i] ? s->caller_count[k] : 0;
		if (n > best_n) {
			best_n = n;
			best = i;
		}
	}
	return best >= 0 && callstacks__site(stacks, site[best])
		       ? callstacks__site(stacks, site[best])->label
		       : NULL;
}

static void frame_sites(struct top_state *t, const struct callstacks *stacks, __u64 now,
			const struct top_opts *o, struct top_frame *f)
{
	f->nr_sites = 0;
	for (size_t i = 0; i < t->nr_sites; i++) {
		const struct site_agg *s = &t->sites[i];
		struct top_site_row *row = &f->sites[f->nr_sites];
		__u64 n, sum, blocked, cycles;
		double span;

		if (o->focus_rank >= 0 && s->rank != o->focus_rank)
			continue;
		span = series_window(&s->count, now, o->window_s, t->since_ns, &n, &sum);
		series_window(&s->blocked, now, o->window_s, t->since_ns, &sum, &blocked);
		cycles = rank_cycles(f, s->rank);
		*row = (struct top_site_row){ .name = s->name, .pos = s->pos, .kind = s->kind,
					      .rank = s->rank, .tgid = s->tgid, .count = n,
					      .total = s->count.total,
					      .per_s = span > 0 ? n / span : 0,
					      .blocked_ms_per_cycle = cycles ? blocked / 1e6 / cycles
									     : 0,
					      .where = top_caller(s, stacks) };
		f->nr_sites++;
	}
	qsort(f->sites, f->nr_sites, sizeof(*f->sites), site_row_cmp);
}

static int rank_of(const struct model_view *v, __u32 tgid)
{
	for (size_t i = 0; v && i < v->nr_procs; i++)
		if (v->procs[i]->tgid == tgid)
			return v->procs[i]->rank;
	return -1;
}

struct hung_scan {
	const struct tf_header *hdr;
	const struct model_view *view;
	const struct top_opts *opts;
	__u64 now;
	struct top_frame *f;
};

/* Keep the oldest TOP_MAX_HUNG of the calls open longer than the threshold. */
static void hung_add(struct hung_scan *h, const struct open_call *call)
{
	struct top_frame *f = h->f;
	struct top_hung_row row;
	size_t at;

	if (h->now < call->ts || h->now - call->ts < h->opts->hung_ns)
		return;
	row = (struct top_hung_row){ .tgid = call->tgid, .tid = call->tid,
				     .rank = rank_of(h->view, call->tgid),
				     .age_ns = h->now - call->ts };
	row.name = call->probe < h->hdr->nr_probes ? h->hdr->probes[call->probe].catalog : 0;
	if (h->opts->focus_rank >= 0 && row.rank != h->opts->focus_rank)
		return;
	for (at = f->nr_hung; at > 0 && f->hung[at - 1].age_ns < row.age_ns; at--)
		;
	if (at == TOP_MAX_HUNG)
		return;
	if (f->nr_hung < TOP_MAX_HUNG)
		f->nr_hung++;
	memmove(&f->hung[at + 1], &f->hung[at], (f->nr_hung - 1 - at) * sizeof(f->hung[0]));
	f->hung[at] = row;
}

static struct open_call open_call_of(const struct sp_call *call)
{
	return (struct open_call){ call->entry.tgid, call->entry.tid, call->entry.probe,
				   call->entry.ts };
}

static void hung_call(void *ctx, const struct sp_call *call)
{
	struct open_call open = open_call_of(call);

	hung_add(ctx, &open);
}

static void keep_open(void *ctx, const struct sp_call *call)
{
	struct top_state *t = ctx;

	if (t->nr_open_at_end == t->cap_open_at_end &&
	    grow__zeroed((void **)&t->open_at_end, &t->cap_open_at_end,
			 t->cap_open_at_end ? 2 * t->cap_open_at_end : 64, sizeof(*t->open_at_end))) {
		t->open_lost++;
		return;
	}
	t->open_at_end[t->nr_open_at_end++] = open_call_of(call);
}

int top__keep_open(struct top_state *t, const struct pipeline *p)
{
	t->nr_open_at_end = t->open_lost = 0;
	pipeline__open_calls(p, keep_open, t);
	return t->open_lost ? -ENOMEM : 0;
}

static void frame_calls(struct top_state *t, __u64 now, const struct top_opts *o,
			const struct sample_windows *sw, struct top_frame *f)
{
	f->nr_calls = 0;
	for (int i = 0; i < catalog_len; i++) {
		__u64 n, sum;
		double span = series_window(&t->calls[i], now, o->window_s, t->since_ns, &n, &sum);
		double rate = span > 0 ? n / span : 0;
		size_t at;

		if (!n)
			continue;
		/* launches were seen inside the windows only: their rate is over that time */
		if (sw && catalog[i].cls == SP_CLASS_LAUNCH) {
			__u64 in = seen_ns(sw, now - (__u64)(span * 1e9), now);

			rate = in ? n * 1e9 / in : 0;
		}
		for (at = f->nr_calls; at > 0 && f->calls_top[at - 1].per_s < rate; at--)
			;
		if (at == TOP_MAX_CALLS)
			continue;
		if (f->nr_calls < TOP_MAX_CALLS)
			f->nr_calls++;
		memmove(&f->calls_top[at + 1], &f->calls_top[at],
			(f->nr_calls - 1 - at) * sizeof(f->calls_top[0]));
		f->calls_top[at] = (struct top_call_row){ .name = i, .per_s = rate };
	}
}

/* The probes' calibrated cost over the CPU the traced processes used. */
static double overhead_pct(const struct model_view *v)
{
	double added = 0, cpu = 0;

	for (size_t i = 0; v && i < v->nr_procs; i++) {
		struct overhead o;

		if (!syncs__overhead(v, v->procs[i], &o) && o.has_cpu) {
			added += o.ms_per_s;
			cpu += o.cpu_ms_per_s;
		}
	}
	return cpu > 0 ? 100 * added / cpu : -1;
}

static void frame_header(struct top_state *t, const struct pipeline *p,
			 const struct pipeline_snapshot *snap, __u64 now, struct top_frame *f)
{
	const struct decode_stats *st = snap->stats;

	f->records = st->records;
	f->calls = st->calls;
	f->drops = st->counters[SP_CNT_DROP_CALL] + st->counters[SP_CNT_DROP_RET];
	f->probes = pipeline__header(p)->nr_probes;
	f->overhead_pct = overhead_pct(snap->model);
	f->elapsed_s = snap->model && snap->model->first_ns && now > snap->model->first_ns
			       ? (now - snap->model->first_ns) / 1e9
			       : 0;
	if (t->prev_ns && now > t->prev_ns)
		t->records_per_s = (f->records - t->prev_records) * 1e9 / (now - t->prev_ns);
	if (now != t->prev_ns) {
		t->prev_ns = now;
		t->prev_records = f->records;
	}
	f->records_per_s = t->records_per_s;
}

/* --sample: the windows so far, and the cycles counted whole inside them since the start. */
static void frame_sample(const struct top_state *t, const struct model_view *v,
			 struct sample_figures *out)
{
	*out = (struct sample_figures){ 0 };
	if (!v)
		return;
	sample__figures(&v->sample, v->first_ns, v->last_ns, out);
	for (size_t i = 0; out->on && i < t->nr_loops; i++)
		out->cycles_whole += t->loops[i]->life.cycles;
}

void top__frame(struct top_state *t, const struct pipeline *p, __u64 now_ns,
		const struct top_opts *opts, struct top_frame *out)
{
	struct pipeline_snapshot snap;
	struct hung_scan hung = { pipeline__header(p), NULL, opts, now_ns, out };
	__u64 settled;

	pipeline__snapshot(p, &snap);
	/* cycles and syncs are known up to the settled point; calls up to the last one */
	settled = snap.settled_ns && snap.settled_ns < snap.last_ts ? snap.settled_ns
								    : snap.last_ts;
	out->now_ns = now_ns;
	out->window_s = opts->window_s;
	out->gpu = t->gpu_seen;
	out->server = pipeline__server_recent(p, &out->server_tok_s, &out->server_accept);
	frame_header(t, p, &snap, now_ns, out);
	frame_sample(t, snap.model, &out->sample);
	frame_loops(t, settled, opts, sampled(snap.model), out);
	frame_sites(t, pipeline__callstacks(p), settled, opts, out);
	out->sites_lost = t->sites_lost;
	frame_calls(t, snap.last_ts, opts, sampled(snap.model), out);
	hung.view = snap.model;
	out->nr_hung = 0;
	/* once finished the pipeline holds none open: those kept at its end stand for them */
	pipeline__open_calls(p, hung_call, &hung);
	for (size_t i = 0; i < t->nr_open_at_end; i++)
		hung_add(&hung, &t->open_at_end[i]);
}

static void totals_loops(struct top_state *t, __u64 settled, double window_s,
			 const struct sample_windows *sw, struct top_totals *out)
{
	static __u64 scratch[RING];
	struct top_loop_row row;

	out->nr_loops = t->nr_loops;
	for (size_t i = 0; i < t->nr_loops; i++) {
		const struct loop_agg *a = t->loops[i];
		struct top_loop_total *lt = &out->loops[i];

		loop_row(a, settled, window_s, sw, scratch, &row);
		lt->tgid = a->tgid;
		lt->tid = a->tid;
		lt->rank = a->rank;
		lt->cycles = a->life.cycles;
		memcpy(lt->bucket, a->life.bucket, sizeof(lt->bucket));
		lt->cycle_ns = a->life.cycle_ns;
		memcpy(lt->phase_ns, a->life.phase_ns, sizeof(lt->phase_ns));
		lt->blocked_ns = a->life.blocked_ns;
		lt->cycles_per_s = row.cycles_per_s;
		lt->gpu_cycles = a->life.gpu_cycles;
		memcpy(lt->gpu_phase_ns, a->life.gpu_phase_ns, sizeof(lt->gpu_phase_ns));
		lt->gpu_idle_ns = a->life.gpu_idle_ns;
	}
}

static double proc_overhead(const struct model_view *v, __u32 tgid)
{
	for (size_t i = 0; v && i < v->nr_procs; i++) {
		struct overhead o;

		if (v->procs[i]->tgid == tgid && !syncs__overhead(v, v->procs[i], &o) &&
		    o.has_cpu && o.cpu_ms_per_s > 0)
			return o.ms_per_s / o.cpu_ms_per_s;
	}
	return -1;
}

static void totals_server(const struct pipeline *p, const struct model_view *v,
			  struct top_server_total *out)
{
	const struct srvstats *s = pipeline__server_samples(p);
	struct srv_figures f;

	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	srvstats__whole(s, &f);
	out->any = true;
	out->tgid = f.tgid;
	out->rank = f.tgid ? rank_of(v, f.tgid) : -1;
	out->server = f.server;
	out->scrapes = f.scrapes;
	out->failed = f.failed;
	for (int k = SP_SRV_DRAFTS; k <= SP_SRV_GENERATED && f.have; k++) {
		out->has[k] = f.has[k];
		out->total[k] = f.delta[k];
	}
	out->recent = srvstats__recent(s, &out->tokens_per_s, &out->accept_length);
}

void top__totals(struct top_state *t, const struct pipeline *p, double window_s,
		 struct top_totals *out)
{
	struct pipeline_snapshot snap;
	__u64 settled;

	pipeline__snapshot(p, &snap);
	settled = snap.settled_ns && snap.settled_ns < snap.last_ts ? snap.settled_ns
								    : snap.last_ts;
	totals_loops(t, settled, window_s, sampled(snap.model), out);
	out->nr_sites = t->nr_sites;
	for (size_t i = 0; i < t->nr_sites; i++) {
		const struct site_agg *s = &t->sites[i];

		out->sites[i] = (struct top_site_total){
			.tgid = s->tgid, .name = s->name, .pos = s->pos, .kind = s->kind,
			.rank = s->rank, .count = s->life_count, .blocked_ns = s->life_blocked_ns };
	}
	out->sites_lost = t->sites_lost_life;
	out->nr_procs = t->nr_procs;
	for (size_t i = 0; i < t->nr_procs; i++)
		out->procs[i] = (struct top_proc_total){
			.tgid = t->procs[i].tgid, .rank = rank_of(snap.model, t->procs[i].tgid),
			.calls = t->procs[i].calls,
			.overhead_ratio = proc_overhead(snap.model, t->procs[i].tgid) };
	out->calls_lost = t->calls_lost;
	out->records = snap.stats->records;
	out->drops_call = snap.stats->counters[SP_CNT_DROP_CALL];
	out->drops_return = snap.stats->counters[SP_CNT_DROP_RET];
	out->probes = pipeline__header(p)->nr_probes;
	totals_server(p, snap.model, &out->server);
	frame_sample(t, snap.model, &out->sample);
}
