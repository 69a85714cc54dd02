// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One verdict of a diff from every row that compares speed: the p50 and the mean of
 * the cycle time by their bootstrap intervals, cycles/s by the mean's, the server's
 * tokens/s by its size against the noise floor; and the flagged syncs of A and B
 * side by side by call site (docs/diff-json.md).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"

static const char *const row_names[DIFF_ROW_NR] = { "p50", "mean", "cycles/s", "tokens/s" };

const char *diff__row_name(enum diff_row row)
{
	return row < DIFF_ROW_NR ? row_names[row] : "?";
}

static int sign(double x)
{
	return (x > 0) - (x < 0);
}

/* A row told by an interval of the time's change: 0 inside it, then the floor. */
static void by_interval(struct diff_row_verdict *r, const struct boot_interval *ci,
			double change_ns, double floor_ns)
{
	r->interval = true;
	if (ci->lo <= 0 && ci->hi >= 0)
		r->verdict = VERDICT_NONE;
	else if (fabs(change_ns) <= floor_ns)
		r->verdict = VERDICT_BELOW_NOISE;
	else
		r->verdict = VERDICT_SIGNIFICANT;
}

/* A rate (more is better) by the mean's interval, where it points the same way. */
static void rate_row(struct diff_row_verdict *r, double a, double b, const struct diff_verdict *v,
		     bool interval)
{
	const struct diff_row_verdict *mean = &v->row[DIFF_ROW_MEAN];

	r->known = a > 0;
	if (!r->known)
		return;
	r->change_rel = (b - a) / a;
	r->better = sign(r->change_rel);
	r->interval = interval;
	if (interval && (mean->verdict == VERDICT_NONE || mean->better != r->better))
		r->verdict = VERDICT_NONE;
	else if (fabs(r->change_rel) <= v->floor_rel)
		r->verdict = VERDICT_BELOW_NOISE;
	else
		r->verdict = VERDICT_SIGNIFICANT;
}

/* One verdict of them all: tokens/s, the user's number, tells where it is beyond the floor. */
static void combine(struct diff_verdict *v)
{
	static const enum diff_row order[] = { DIFF_ROW_TOKENS, DIFF_ROW_P50, DIFF_ROW_MEAN,
					       DIFF_ROW_CYCLES };
	bool below = false, first = true;

	v->verdict = VERDICT_NONE;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct diff_row_verdict *r = &v->row[order[i]];

		if (!r->known)
			continue;
		below |= r->verdict == VERDICT_BELOW_NOISE;
		if (r->verdict != VERDICT_SIGNIFICANT)
			continue;
		if (first) {
			v->verdict = VERDICT_SIGNIFICANT;
			v->better = r->better;
			v->by = order[i];
			first = false;
		} else if (r->better != v->better) {
			v->mixed = true;
		}
	}
	if (v->mixed)
		v->better = 0;
	if (v->verdict == VERDICT_NONE && below)
		v->verdict = VERDICT_BELOW_NOISE;
}

void diff__verdict(struct diff *d)
{
	const struct diff_times *t = &d->overall;
	const struct boot_change *c = &t->change;
	struct diff_verdict *v = &d->verdict;
	double floor_ns = bootstrap__noise_floor(c);
	struct diff_row_verdict *r;

	memset(v, 0, sizeof(*v));
	v->floor_rel = c->median_a > 0 ? floor_ns / c->median_a : 0;
	r = &v->row[DIFF_ROW_P50];
	*r = (struct diff_row_verdict){ .known = c->median_a > 0, .better = -sign(c->median_change),
					.change_rel = c->median_a > 0 ? c->median_change / c->median_a : 0 };
	by_interval(r, &c->median_ci, c->median_change, floor_ns);
	r = &v->row[DIFF_ROW_MEAN];
	*r = (struct diff_row_verdict){ .known = c->mean_a > 0, .better = -sign(c->mean_change),
					.change_rel = c->mean_a > 0 ? c->mean_change / c->mean_a : 0 };
	by_interval(r, &c->mean_ci, c->mean_change, floor_ns);
	rate_row(&v->row[DIFF_ROW_CYCLES], t->a.cycles_per_s, t->b.cycles_per_s, v, true);
	if (diff__server(d) && d->side[0].server->has[SP_SRV_GENERATED] &&
	    d->side[1].server->has[SP_SRV_GENERATED])
		rate_row(&v->row[DIFF_ROW_TOKENS], d->side[0].server->tokens_per_s,
			 d->side[1].server->tokens_per_s, v, false);
	combine(v);
}

/* The site of label in the table, added when new; NULL: out of memory. */
static struct diff_site *site_of(struct diff *d, const char *label, size_t *cap)
{
	struct diff_site *grown;

	for (size_t i = 0; i < d->nr_sites; i++)
		if (!strcmp(d->sites[i].label, label))
			return &d->sites[i];
	if (d->nr_sites == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		grown = realloc(d->sites, *cap * sizeof(*grown));
		if (!grown)
			return NULL;
		d->sites = grown;
	}
	d->sites[d->nr_sites] = (struct diff_site){ .label = label,
						    .gpu_idle_ns = { -1, -1 } };
	return &d->sites[d->nr_sites++];
}

static double larger(double x, double y)
{
	return x > y ? x : y;
}

static double cost(const struct diff_site *s)
{
	return larger(s->blocked_ns[0], s->blocked_ns[1]);
}

static int by_cost(const void *a, const void *b)
{
	const struct diff_site *x = a, *y = b;

	if (cost(x) != cost(y))
		return cost(x) < cost(y) ? 1 : -1;
	return strcmp(x->label, y->label);
}

/* Side s's flagged syncs into the table by their call site's label. */
static int add_side(struct diff *d, int s, size_t *cap)
{
	const struct syncs *sy = d->in[s]->syncs;
	const struct callstacks *stacks = model__view(d->in[s]->model)->stacks;
	double cycles = sy->cycles ? sy->cycles : 1;

	for (size_t i = 0; i < sy->nr_by_callsite; i++) {
		const struct callsite_stat *cs = &sy->by_callsite[i];
		const struct cs_site *at = callstacks__site(stacks, cs->site);
		struct diff_site *ds;

		if (!cs->flagged || !at)
			continue;
		ds = site_of(d, at->label, cap);
		if (!ds)
			return -ENOMEM;
		ds->count[s] += cs->flagged;
		ds->blocked_ns[s] += cs->flagged_ns / cycles;
		if (cs->flagged_gpu_known)
			ds->gpu_idle_ns[s] = larger(ds->gpu_idle_ns[s], 0) +
					     cs->flagged_gpu_idle_ns / cycles;
	}
	return 0;
}

int diff__sites(struct diff *d)
{
	size_t cap = 0;

	d->sites_known = d->in[0]->syncs && d->in[1]->syncs;
	for (int s = 0; d->sites_known && s < 2; s++)
		if (add_side(d, s, &cap))
			return -ENOMEM;
	if (d->nr_sites)
		qsort(d->sites, d->nr_sites, sizeof(*d->sites), by_cost);
	return 0;
}
