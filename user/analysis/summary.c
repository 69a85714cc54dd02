// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* What the outputs show of a set of cycles: rates, percentiles, phase means. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "stats.h"
#include "summary.h"

/* Sift a[i] down the max-heap a[0..n). */
static void sift_down(__u64 *a, size_t i, size_t n)
{
	for (;;) {
		size_t l = 2 * i + 1, big = i;
		__u64 t;

		if (l < n && a[l] > a[big])
			big = l;
		if (l + 1 < n && a[l + 1] > a[big])
			big = l + 1;
		if (big == i)
			return;
		t = a[i];
		a[i] = a[big];
		a[big] = t;
		i = big;
	}
}

/* Ascending, in place: qsort may take a second array as large (8 bytes a cycle more). */
static void sort_u64(__u64 *a, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(a, i, n);
	for (size_t end = n; end-- > 1;) {
		__u64 t = a[0];

		a[0] = a[end];
		a[end] = t;
		sift_down(a, 0, end);
	}
}

static void add_phase(struct phase_mean *pm, const struct cycle_phase *ph)
{
	pm->span_ns += ph->span_ns;
	pm->blocked_ns += ph->blocked_ns;
	pm->launches += ph->launches;
	pm->syncs += ph->syncs;
}

static void divide(struct phase_mean *pm, size_t n)
{
	pm->span_ns /= n;
	pm->blocked_ns /= n;
	pm->launches /= n;
	pm->syncs /= n;
}

static void count_accept(struct cycle_summary *s, const struct cycle *c)
{
	int k;

	if (!c->has_accept_sync) {
		s->no_accept_sync++;
		return;
	}
	for (k = 0; k < s->nr_accept_kinds; k++)
		if (s->accept_call[k] == c->accept_call)
			break;
	if (k == s->nr_accept_kinds) {
		if (k == SUMMARY_MAX_ACCEPT_KINDS)
			return;
		s->accept_call[s->nr_accept_kinds++] = c->accept_call;
	}
	s->accept_count[k]++;
}

/* GPU figures of the cycles whose every launch was matched; the others counted apart. */
static void add_gpu(struct cycle_summary *s, const struct cycle *c)
{
	if (!c->gpu_known) {
		s->gpu_cycles_unmatched += c->gpu_tried;
		return;
	}
	s->gpu_cycles++;
	s->gpu_window_ns += c->gpu_end_ns - c->gpu_start_ns;
	s->gpu_idle_ns += c->gpu_idle_ns;
	s->gpu_idle_flagged_ns += c->gpu_idle_flagged_ns;
	s->gpu_flagged_syncs += c->gpu_flagged_syncs;
	for (int p = 0; p < PHASE_NR; p++) {
		s->phase[p].gpu_busy_ns += c->phase[p].gpu_busy_ns;
		s->phase[p].gpu_span_ns += c->phase[p].gpu_end_ns - c->phase[p].gpu_start_ns;
	}
}

static void divide_gpu(struct cycle_summary *s)
{
	double n = s->gpu_cycles;

	if (!s->gpu_cycles)
		return;
	s->gpu_window_ns /= n;
	s->gpu_idle_ns /= n;
	s->gpu_idle_flagged_ns /= n;
	s->gpu_flagged_syncs /= n;
	for (int p = 0; p < PHASE_NR; p++) {
		s->phase[p].gpu_busy_ns /= n;
		s->phase[p].gpu_span_ns /= n;
	}
}

static void add_cycle(struct cycle_summary *s, const struct cycle *c)
{
	for (int p = 0; p < PHASE_NR; p++)
		add_phase(&s->phase[p], &c->phase[p]);
	s->total.span_ns += c->end_ns - c->start_ns;
	s->total.blocked_ns += c->blocked_ns;
	s->total.launches += c->launches;
	s->total.syncs += c->syncs;
	s->draft_joined += c->draft_joined;
	s->extend_joined += c->extend_joined;
	s->extend_joinable += c->followed;
	s->deferred += c->accept_deferred;
	s->verify_pieces += c->verify_pieces;
	s->accept_wait_ns += c->accept_wait_ns;
	count_accept(s, c);
	add_gpu(s, c);
}

/* --gpu: the figures whose medians the outputs give, one array each (GPU_WINDOW, GPU_IDLE) */
enum { GPU_WINDOW = PHASE_NR, GPU_IDLE, GPU_NR };

/* One loop's cycles into the summary, their durations and GPU figures into the arrays. */
struct summing {
	struct cycle_summary *s;
	__u64 *durations;
	size_t k;
	__u64 loop_ns;
	__u64 *gpu[GPU_NR];	/* [phase]: busy; of the cycles with gpu_known */
	size_t nr_gpu;
};

static void keep_gpu(struct summing *sm, const struct cycle *c)
{
	if (!c->gpu_known)
		return;
	for (int p = 0; p < PHASE_NR; p++)
		sm->gpu[p][sm->nr_gpu] = c->phase[p].gpu_busy_ns;
	sm->gpu[GPU_WINDOW][sm->nr_gpu] = c->gpu_end_ns - c->gpu_start_ns;
	sm->gpu[GPU_IDLE][sm->nr_gpu] = c->gpu_idle_ns;
	sm->nr_gpu++;
	sm->s->gpu_cycles_flagged += c->gpu_flagged_syncs > 0;
}

static int sum_cycle(void *ctx, const struct cycle *c)
{
	struct summing *sm = ctx;

	sm->durations[sm->k++] = c->end_ns - c->start_ns;
	sm->loop_ns += c->end_ns - c->start_ns;
	add_cycle(sm->s, c);
	keep_gpu(sm, c);
	return 0;
}

static __u64 median_of(__u64 *a, size_t n)
{
	sort_u64(a, n);
	return bootstrap__percentile(a, n, 50);
}

/* The GPU medians once every cycle is in; the arrays freed. */
static void gpu_medians(struct summing *sm)
{
	struct cycle_summary *s = sm->s;

	if (sm->nr_gpu) {
		for (int p = 0; p < PHASE_NR; p++)
			s->phase[p].gpu_busy_p50_ns = median_of(sm->gpu[p], sm->nr_gpu);
		s->gpu_window_p50_ns = median_of(sm->gpu[GPU_WINDOW], sm->nr_gpu);
		s->gpu_idle_p50_ns = median_of(sm->gpu[GPU_IDLE], sm->nr_gpu);
	}
	for (int i = 0; i < GPU_NR; i++)
		free(sm->gpu[i]);
}

int cycle_summary__compute(const struct loop *loops, size_t nr, struct cycle_summary *s)
{
	struct summing sm = { .s = s };
	size_t n = 0;
	double rate_sum = 0;
	int rates = 0, ret;
	bool short_of;

	memset(s, 0, sizeof(*s));
	for (size_t l = 0; l < nr; l++) {
		n += loops[l].nr_cycles;
		if (loops[l].lead_from == LEAD_SHAPE && loops[l].lead_extends)
			s->lead_shape_extend++;
		else if (loops[l].lead_from == LEAD_SHAPE)
			s->lead_shape_draft++;
	}
	if (!n)
		return 0;
	sm.durations = malloc(n * sizeof(*sm.durations));
	short_of = !sm.durations;
	for (int i = 0; i < GPU_NR; i++) {
		sm.gpu[i] = malloc(n * sizeof(*sm.gpu[i]));
		short_of |= !sm.gpu[i];
	}
	if (short_of) {
		free(sm.durations);
		gpu_medians(&sm);
		return -ENOMEM;
	}
	for (size_t l = 0; l < nr; l++) {
		sm.loop_ns = 0;
		ret = loop__each_cycle(&loops[l], sum_cycle, &sm);
		if (ret) {
			free(sm.durations);
			sm.nr_gpu = 0;
			gpu_medians(&sm);
			return ret;
		}
		if (sm.loop_ns) {
			rate_sum += loops[l].nr_cycles * 1e9 / sm.loop_ns;
			rates++;
		}
	}
	s->cycles = n;
	/* ranks run the loop in lockstep: the rate of one loop, averaged, not summed */
	s->cycles_per_s = rates ? rate_sum / rates : 0;
	s->mean_ns = s->total.span_ns / n;
	for (int p = 0; p < PHASE_NR; p++)
		divide(&s->phase[p], n);
	divide(&s->total, n);
	s->accept_wait_ns /= n;
	divide_gpu(s);
	gpu_medians(&sm);
	sort_u64(sm.durations, n);
	s->min_ns = sm.durations[0];
	s->max_ns = sm.durations[n - 1];
	s->p50_ns = bootstrap__percentile(sm.durations, n, 50);
	s->p90_ns = bootstrap__percentile(sm.durations, n, 90);
	s->p99_ns = bootstrap__percentile(sm.durations, n, 99);
	free(sm.durations);
	return 0;
}
