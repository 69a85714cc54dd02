// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Records to a report: the decoder, the model, the analyses, summaries for the outputs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"
#include "report.h"

/* Cross-CPU arrival order in the ring differs from entry order by less than this (as dump). */
#define REORDER_NS 50000000ull

struct reporter {
	struct decoder *dec;
	struct model *model;
	struct cycles cycles;
	bool finished;
};

static int on_call(void *ctx, const struct sp_call *call)
{
	return model__call(ctx, call);
}

struct reporter *reporter__new(const struct tf_header *hdr)
{
	struct reporter *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->model = model__new(hdr);
	r->dec = r->model ? decoder__new(on_call, r->model, REORDER_NS) : NULL;
	if (!r->dec) {
		reporter__free(r);
		return NULL;
	}
	return r;
}

int reporter__feed(struct reporter *r, const void *rec, size_t size)
{
	/* the model hears of forks and exits as they come; calls wait for the decoder */
	model__record(r->model, rec, size);
	return decoder__feed(r->dec, rec, size);
}

int reporter__finish(struct reporter *r)
{
	int ret = decoder__finish(r->dec);

	model__finish(r->model, decoder__stats(r->dec));
	if (!ret)
		ret = cycles__analyse(r->model, &r->cycles);
	r->finished = !ret;
	return ret;
}

int reporter__print(struct reporter *r, FILE *out, const struct report_opts *opts)
{
	if (!r->finished)
		return -EINVAL;
	if (opts->json)
		report__json(out, r->model, &r->cycles);
	else
		report__text(out, r->model, &r->cycles, opts);
	return fflush(out) || ferror(out) ? -EIO : 0;
}

void reporter__free(struct reporter *r)
{
	if (!r)
		return;
	cycles__free(&r->cycles);
	decoder__free(r->dec);
	model__free(r->model);
	free(r);
}

struct model *reporter__model(struct reporter *r)
{
	return r->finished ? r->model : NULL;
}

const struct cycles *reporter__cycles(const struct reporter *r)
{
	return r->finished ? &r->cycles : NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least pct percent of values at or below it. */
static __u64 percentile(const __u64 *sorted, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return sorted[rank ? rank - 1 : 0];
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
		if (k == REPORT_MAX_ACCEPT_KINDS)
			return;
		s->accept_call[s->nr_accept_kinds++] = c->accept_call;
	}
	s->accept_count[k]++;
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
}

int report__summarise(const struct loop *loops, size_t nr, struct cycle_summary *s)
{
	size_t n = 0, k = 0;
	double rate_sum = 0;
	int rates = 0;
	__u64 *durations;

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
	durations = malloc(n * sizeof(*durations));
	if (!durations)
		return -ENOMEM;
	for (size_t l = 0; l < nr; l++) {
		__u64 loop_ns = 0;

		for (size_t i = 0; i < loops[l].nr_cycles; i++) {
			const struct cycle *c = &loops[l].cycles[i];

			durations[k++] = c->end_ns - c->start_ns;
			loop_ns += c->end_ns - c->start_ns;
			add_cycle(s, c);
		}
		if (loop_ns) {
			rate_sum += loops[l].nr_cycles * 1e9 / loop_ns;
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
	qsort(durations, n, sizeof(*durations), cmp_u64);
	s->min_ns = durations[0];
	s->max_ns = durations[n - 1];
	s->p50_ns = percentile(durations, n, 50);
	s->p90_ns = percentile(durations, n, 90);
	s->p99_ns = percentile(durations, n, 99);
	free(durations);
	return 0;
}
