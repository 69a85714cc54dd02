// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe diff: summaries of both recordings, loops paired, changes and their intervals. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static size_t nr_cycles(const struct cycles *cy)
{
	size_t n = 0;

	for (size_t l = 0; l < cy->nr_loops; l++)
		n += cy->loops[l].nr_cycles;
	return n;
}

/* What one phase (PHASE_NR: the whole cycle) took in cycle c. */
static void phase_of(const struct cycle *c, int p, __u64 *span, __u64 *blocked)
{
	if (p == PHASE_NR) {
		*span = c->end_ns - c->start_ns;
		*blocked = c->blocked_ns;
	} else {
		*span = c->phase[p].span_ns;
		*blocked = c->phase[p].blocked_ns;
	}
}

/* One phase of each cycle, as the loops hand them over (from memory or their stores). */
struct phase_fill {
	int phase;
	__u64 *span, *blocked;
	size_t k;
};

static int fill_phase(void *ctx, const struct cycle *c)
{
	struct phase_fill *f = ctx;

	phase_of(c, f->phase, &f->span[f->k], &f->blocked[f->k]);
	f->k++;
	return 0;
}

/* Medians of spans and blocked time per phase; the means come from the summary. */
static int phase_medians(const struct cycles *cy, struct diff_side *s)
{
	size_t n = nr_cycles(cy);
	__u64 *span = malloc(n * sizeof(*span)), *blocked = malloc(n * sizeof(*blocked));

	if (!span || !blocked) {
		free(span);
		free(blocked);
		return -ENOMEM;
	}
	for (int p = 0; p <= PHASE_NR; p++) {
		const struct phase_mean *pm = p < PHASE_NR ? &s->sum.phase[p] : &s->sum.total;
		struct phase_fill f = { p, span, blocked, 0 };
		int ret = 0;

		for (size_t l = 0; l < cy->nr_loops && !ret; l++)
			ret = loop__each_cycle(&cy->loops[l], fill_phase, &f);
		if (ret) {
			free(span);
			free(blocked);
			return ret;
		}
		qsort(span, n, sizeof(*span), cmp_u64);
		qsort(blocked, n, sizeof(*blocked), cmp_u64);
		s->phase[p] = (struct diff_phase){
			.span_p50 = bootstrap__percentile(span, n, 50),
			.blocked_p50 = bootstrap__percentile(blocked, n, 50),
			.blocked_mean = pm->blocked_ns,
			.launches = pm->launches,
			.syncs = pm->syncs,
		};
	}
	free(span);
	free(blocked);
	return 0;
}

static void add_kernel_count(struct diff_role *r, __u32 count)
{
	int i = 0;

	while (i < r->nr_kernels && r->kernels[i] < count)
		i++;
	if (i < r->nr_kernels && r->kernels[i] == count)
		return;
	if (r->nr_kernels == DIFF_MAX_COUNTS) {
		r->more_kernels = true;
		return;
	}
	memmove(&r->kernels[i + 1], &r->kernels[i], (r->nr_kernels - i) * sizeof(r->kernels[0]));
	r->kernels[i] = count;
	r->nr_kernels++;
}

static void read_setup(const struct diff_input *in, struct diff_setup *st)
{
	struct model_view *v = model__view(in->model);

	memset(st, 0, sizeof(*st));
	st->processes = v->nr_procs;
	st->loops = in->cycles->nr_loops;
	st->ranks = -1;
	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->nranks > st->ranks)
			st->ranks = v->procs[i]->nranks;
	for (size_t i = 0; i < v->nr_execs; i++) {
		const struct model_exec *x = v->execs[i];
		struct diff_role *r = &st->role[x->role < ROLE_NR ? x->role : ROLE_UNKNOWN];
		__u32 colls = 0;

		r->execs++;
		r->launched += x->launches != 0;
		if (!x->capture) {
			r->uncaptured += x->launches != 0;
			continue;
		}
		add_kernel_count(r, x->capture->kernel_count);
		for (__u32 k = 0; k < x->capture->nr_colls; k++)
			colls += x->capture->colls[k].count;
		if (colls > r->collectives)
			r->collectives = colls;
	}
}

/*
 * Cycle times the bootstrap keeps of a side's loops, together: beyond it, every
 * stride-th cycle, evenly over the run, so memory stays bounded whatever the
 * recording's length (8 bytes a cycle; an interval from a million cycles is
 * already far inside the noise floor).
 */
#define BOOT_MAX_CYCLES (1u << 20)

struct time_fill {
	__u64 *v;
	size_t k, seen, stride;
};

static int fill_time(void *ctx, const struct cycle *c)
{
	struct time_fill *f = ctx;

	if (f->seen++ % f->stride == 0)
		f->v[f->k++] = c->end_ns - c->start_ns;
	return 0;
}

/* Cycle times of some loops as bootstrap groups; free_sample frees them. */
static int to_sample(const struct loop *const *loops, size_t nr, struct boot_sample *s)
{
	const __u64 **group = calloc(nr ? nr : 1, sizeof(*group));
	size_t *len = calloc(nr ? nr : 1, sizeof(*len));
	int ret = -ENOMEM;

	size_t total = 0, stride;

	if (!group || !len)
		goto fail;
	for (size_t l = 0; l < nr; l++)
		total += loops[l]->nr_cycles;
	stride = total > BOOT_MAX_CYCLES ? (total + BOOT_MAX_CYCLES - 1) / BOOT_MAX_CYCLES : 1;
	for (size_t l = 0; l < nr; l++) {
		size_t keep = (loops[l]->nr_cycles + stride - 1) / stride;
		struct time_fill f = { malloc((keep + 1) * sizeof(*f.v)), 0, 0, stride };

		group[l] = f.v;
		if (!f.v) {
			ret = -ENOMEM;
			goto fail;
		}
		ret = loop__each_cycle(loops[l], fill_time, &f);
		if (ret)
			goto fail;
		len[l] = f.k;
	}
	*s = (struct boot_sample){ group, len, nr };
	return 0;
fail:
	for (size_t l = 0; group && l < nr; l++)
		free((void *)group[l]);
	free(group);
	free(len);
	return ret;
}

static void free_sample(struct boot_sample *s)
{
	for (size_t l = 0; l < s->nr_groups; l++)
		free((void *)s->group[l]);
	free((void *)s->group);
	free((void *)s->nr);
}

/* Summaries of both sets of loops; the interval when both have cycles. */
static int compare(const struct loop *const *a, size_t na, const struct loop *const *b,
		   size_t nb, double between_runs, struct diff_times *t)
{
	struct boot_sample sa = { 0 }, sb = { 0 };
	int ret = 0;

	memset(t, 0, sizeof(*t));
	if (na == 1)
		ret = cycle_summary__compute(a[0], 1, &t->a);
	if (!ret && nb == 1)
		ret = cycle_summary__compute(b[0], 1, &t->b);
	if (!ret)
		ret = to_sample(a, na, &sa);
	if (!ret)
		ret = to_sample(b, nb, &sb);
	if (!ret && na && nb) {
		struct boot_opts opts = { BOOT_RESAMPLES, BOOT_SEED };

		ret = bootstrap__change(&sa, &sb, &opts, &t->change);
		t->compared = !ret;
		if (ret == -EINVAL)
			ret = 0;	/* one side has no cycle: nothing to compare */
		t->change.between_runs = between_runs;
		if (t->compared)
			t->verdict = bootstrap__verdict(&t->change);
	}
	free_sample(&sa);
	free_sample(&sb);
	return ret;
}

static const struct loop *find_rank(const struct cycles *cy, int rank)
{
	for (size_t l = 0; l < cy->nr_loops; l++)
		if (cy->loops[l].rank == rank)
			return &cy->loops[l];
	return NULL;
}

/* Each rank appears once in both: pair by rank; else by position (rank, pid, tid order). */
static bool ranks_pair(const struct cycles *a, const struct cycles *b)
{
	const struct cycles *both[2] = { a, b };

	for (int s = 0; s < 2; s++)
		for (size_t l = 0; l < both[s]->nr_loops; l++) {
			int rank = both[s]->loops[l].rank;

			if (rank < 0 || find_rank(both[s], rank) != &both[s]->loops[l])
				return false;
		}
	return true;
}

static int pair_loops(struct diff *d, const struct cycles *a, const struct cycles *b)
{
	size_t most = a->nr_loops + b->nr_loops, n = 0;

	d->pairs = calloc(most ? most : 1, sizeof(*d->pairs));
	if (!d->pairs)
		return -ENOMEM;
	d->by_rank = ranks_pair(a, b);
	for (size_t l = 0; l < a->nr_loops; l++) {
		const struct loop *other = NULL;

		if (d->by_rank)
			other = find_rank(b, a->loops[l].rank);
		else if (l < b->nr_loops)
			other = &b->loops[l];
		d->pairs[n++] = (struct diff_pair){ &a->loops[l], other };
	}
	for (size_t l = 0; l < b->nr_loops; l++) {
		bool paired = d->by_rank ? find_rank(a, b->loops[l].rank) != NULL
					 : l < a->nr_loops;

		if (!paired)
			d->pairs[n++] = (struct diff_pair){ NULL, &b->loops[l] };
	}
	d->nr_pairs = n;
	for (size_t i = 0; i < n; i++) {
		struct diff_pair *p = &d->pairs[i];
		int ret = compare(&p->a, p->a != NULL, &p->b, p->b != NULL, d->between_runs,
				  &p->times);

		if (ret)
			return ret;
	}
	return 0;
}

/*
 * All recordings of a side, pooled: the change is that of the pooled p50s. Each loop stays
 * a bootstrap group, so every recording is resampled within itself; a median of the
 * recordings' p50s would weigh a short recording as much as a long one and, with two per
 * side, be no more robust than their mean.
 */
static int overall(struct diff *d)
{
	const struct loop **loops[2] = { NULL, NULL };
	int ret = -ENOMEM;

	for (int s = 0; s < 2; s++) {
		loops[s] = calloc(d->runs[s].nr_pooled + 1, sizeof(*loops[s]));
		if (!loops[s])
			goto out;
		for (size_t l = 0; l < d->runs[s].nr_pooled; l++)
			loops[s][l] = &d->runs[s].pooled[l];
	}
	ret = compare(loops[0], d->runs[0].nr_pooled, loops[1], d->runs[1].nr_pooled,
		      d->between_runs, &d->overall);
	for (int s = 0; !ret && s < 2; s++)
		ret = cycle_summary__compute(d->runs[s].pooled, d->runs[s].nr_pooled,
					s ? &d->overall.b : &d->overall.a);
out:
	free(loops[0]);
	free(loops[1]);
	return ret;
}

/* Each recording's p50, and the loops of all in one array (the cycles are not copied). */
static int read_runs(struct diff_runs *r)
{
	size_t k = 0;

	r->nr_pooled = 0;
	for (size_t i = 0; i < r->nr; i++)
		r->nr_pooled += r->in[i].cycles->nr_loops;
	r->pooled = calloc(r->nr_pooled + 1, sizeof(*r->pooled));
	if (!r->pooled)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr; i++) {
		const struct cycles *cy = r->in[i].cycles;
		struct cycle_summary sum;
		int ret = cycle_summary__compute(cy->loops, cy->nr_loops, &sum);

		if (ret)
			return ret;
		r->p50[i] = sum.p50_ns;
		r->cycles[i] = sum.cycles;
		memcpy(&r->pooled[k], cy->loops, cy->nr_loops * sizeof(*cy->loops));
		k += cy->nr_loops;
	}
	return 0;
}

int diff__compute_runs(struct diff *d, const struct diff_input *const in[2], const size_t nr[2])
{
	int ret;

	memset(d, 0, sizeof(*d));
	for (int s = 0; s < 2; s++) {
		if (!nr[s] || nr[s] > DIFF_MAX_RUNS)
			return -EINVAL;
		d->in[s] = &in[s][0];
		d->runs[s] = (struct diff_runs){ .in = in[s], .nr = nr[s] };
		for (size_t i = 0; i < nr[s]; i++)
			if (!nr_cycles(in[s][i].cycles))
				return -ENODATA;
	}
	for (int s = 0; s < 2; s++) {
		struct diff_side *side = &d->side[s];
		double spread;

		ret = read_runs(&d->runs[s]);
		if (!ret)
			ret = cycle_summary__compute(in[s]->cycles->loops, in[s]->cycles->nr_loops,
						&side->sum);
		if (!ret)
			ret = phase_medians(in[s]->cycles, side);
		if (ret)
			return ret;
		read_setup(in[s], &side->setup);
		side->server = in[s]->server && in[s]->server->have ? in[s]->server : NULL;
		spread = bootstrap__run_spread(d->runs[s].p50, d->runs[s].nr);
		if (spread > d->between_runs)
			d->between_runs = spread;
	}
	ret = overall(d);
	if (!ret)
		ret = pair_loops(d, in[0]->cycles, in[1]->cycles);
	if (ret)
		return ret;
	diff__verdict(d);
	return diff__sites(d);
}

int diff__compute(struct diff *d, const struct diff_input *a, const struct diff_input *b)
{
	const struct diff_input *in[2] = { a, b };
	const size_t nr[2] = { 1, 1 };

	return diff__compute_runs(d, in, nr);
}

bool diff__server(const struct diff *d)
{
	return d->side[0].server && d->side[1].server;
}

bool diff__gpu(const struct diff *d)
{
	return d->side[0].sum.gpu_cycles && d->side[1].sum.gpu_cycles;
}

void diff__free(struct diff *d)
{
	if (!d)
		return;
	free(d->pairs);
	d->pairs = NULL;
	d->nr_pairs = 0;
	free(d->sites);
	d->sites = NULL;
	d->nr_sites = 0;
	for (int s = 0; s < 2; s++) {
		free(d->runs[s].pooled);
		d->runs[s].pooled = NULL;
	}
}
