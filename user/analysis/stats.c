// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Percentile bootstrap of the change in cycle time between two recordings. Every
 * resample draws positions, not cycles: one position picks the cycle at that relative
 * place in every loop of the recording, so the lockstep ranks of one server count as
 * one sample, not as independent ones (which would make the interval too narrow).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "stats.h"

/* splitmix64: small, fast and the same on every host, so a seed gives one output. */
static __u64 next_random(__u64 *state)
{
	__u64 z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double next_unit(__u64 *state)
{
	return (next_random(state) >> 11) * 0x1.0p-53;
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

__u64 bootstrap__percentile(const __u64 *sorted, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return sorted[rank ? rank - 1 : 0];
}

/* The k-th smallest (from 0) of v[0..n), reordering v: quickselect, three-way partition. */
static __u64 select_kth(__u64 *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		__u64 a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi], pivot, t;
		size_t lt = lo, i = lo, gt = hi;

		/* median of three: sorted or reversed input stays linear */
		pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
		/* v[lo..lt) < pivot, v[lt..i) == pivot, v(gt..hi] > pivot */
		while (i <= gt) {
			if (v[i] < pivot) {
				t = v[i], v[i++] = v[lt], v[lt++] = t;
			} else if (v[i] > pivot) {
				t = v[i], v[i] = v[gt], v[gt] = t;
				if (gt-- == 0)
					break;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt - 1;
		else if (k > gt)
			lo = gt + 1;
		else
			return pivot;
	}
	return v[k];
}

static size_t total(const struct boot_sample *s)
{
	size_t n = 0;

	for (size_t g = 0; g < s->nr_groups; g++)
		n += s->nr[g];
	return n;
}

static size_t draws(const struct boot_sample *s)
{
	size_t most = 0;

	for (size_t g = 0; g < s->nr_groups; g++)
		if (s->nr[g] > most)
			most = s->nr[g];
	return most;
}

/* Median (nearest rank), mean and interquartile range of the sample as it is. */
static int describe(const struct boot_sample *s, double *median, double *mean, double *iqr)
{
	size_t n = total(s), k = 0;
	double sum = 0;
	__u64 *v;

	if (!n)
		return -EINVAL;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t g = 0; g < s->nr_groups; g++)
		for (size_t i = 0; i < s->nr[g]; i++) {
			v[k++] = s->group[g][i];
			sum += s->group[g][i];
		}
	qsort(v, n, sizeof(*v), cmp_u64);
	*median = bootstrap__percentile(v, n, 50);
	*mean = sum / n;
	*iqr = (double)bootstrap__percentile(v, n, 75) - bootstrap__percentile(v, n, 25);
	free(v);
	return 0;
}

/* One resample into buf (draws x groups values); its median and mean. */
static void resample(const struct boot_sample *s, __u64 *buf, __u64 *state, double *median,
		     double *mean)
{
	size_t n = draws(s), k = 0;
	double sum = 0;

	for (size_t d = 0; d < n; d++) {
		double at = next_unit(state);

		for (size_t g = 0; g < s->nr_groups; g++) {
			if (!s->nr[g])
				continue;
			buf[k] = s->group[g][(size_t)(at * s->nr[g])];
			sum += buf[k++];
		}
	}
	*mean = sum / k;
	*median = select_kth(buf, k, (k * 50 + 99) / 100 - 1);
}

static struct boot_interval interval(double *diffs, unsigned int n)
{
	size_t tail = (size_t)(n * (1 - BOOT_LEVEL) / 2);

	qsort(diffs, n, sizeof(*diffs), cmp_double);
	return (struct boot_interval){ diffs[tail], diffs[n - 1 - tail] };
}

int bootstrap__change(const struct boot_sample *a, const struct boot_sample *b,
		      const struct boot_opts *opts, struct boot_change *out)
{
	unsigned int n = opts && opts->resamples ? opts->resamples : BOOT_RESAMPLES;
	__u64 state = opts ? opts->seed : BOOT_SEED;
	size_t need_a = draws(a) * a->nr_groups, need_b = draws(b) * b->nr_groups;
	double *medians = NULL, *means = NULL;
	__u64 *buf = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = describe(a, &out->median_a, &out->mean_a, &out->iqr_a);
	if (!ret)
		ret = describe(b, &out->median_b, &out->mean_b, &out->iqr_b);
	if (ret)
		return ret;
	out->median_change = out->median_b - out->median_a;
	out->mean_change = out->mean_b - out->mean_a;
	medians = malloc(n * sizeof(*medians));
	means = malloc(n * sizeof(*means));
	/* one resample at a time: A's median is taken before B's draws fill it */
	buf = malloc((need_a > need_b ? need_a : need_b) * sizeof(*buf));
	ret = -ENOMEM;
	if (!medians || !means || !buf)
		goto out;
	for (unsigned int r = 0; r < n; r++) {
		double med_a, med_b, mean_a, mean_b;

		resample(a, buf, &state, &med_a, &mean_a);
		resample(b, buf, &state, &med_b, &mean_b);
		medians[r] = med_b - med_a;
		means[r] = mean_b - mean_a;
	}
	out->median_ci = interval(medians, n);
	out->mean_ci = interval(means, n);
	ret = 0;
out:
	free(medians);
	free(means);
	free(buf);
	return ret;
}

double bootstrap__run_spread(const double *p50, size_t n)
{
	double lo = n ? p50[0] : 0, hi = lo;

	for (size_t i = 1; i < n; i++) {
		lo = p50[i] < lo ? p50[i] : lo;
		hi = p50[i] > hi ? p50[i] : hi;
	}
	return hi - lo;
}

double bootstrap__noise_floor(const struct boot_change *c)
{
	double rel = NOISE_MIN_REL * c->median_a;
	double spread = NOISE_IQR_FRAC * (c->iqr_a + c->iqr_b) / 2;
	/* a change smaller than two runs of one setting differ by is not shown to be real */
	double runs = NOISE_RUNS_MULT * c->between_runs;
	double floor_ns = rel > spread ? rel : spread;

	return runs > floor_ns ? runs : floor_ns;
}

enum change_verdict bootstrap__verdict(const struct boot_change *c)
{
	if (c->median_ci.lo <= 0 && c->median_ci.hi >= 0)
		return VERDICT_NONE;
	if (fabs(c->median_change) <= bootstrap__noise_floor(c))
		return VERDICT_BELOW_NOISE;
	return VERDICT_SIGNIFICANT;
}

const char *bootstrap__verdict_name(enum change_verdict v)
{
	switch (v) {
	case VERDICT_SIGNIFICANT:
		return "significant";
	case VERDICT_BELOW_NOISE:
		return "below-noise-floor";
	default:
		return "not-significant";
	}
}
