/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Bootstrap intervals for the change between two sets of cycle times, and the
 * verdict of specprobe diff (docs/diff-json.md, "Significance").
 */
#ifndef __STATS_H
#define __STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define BOOT_RESAMPLES 2000
#define BOOT_SEED 0x5eed5eed2024ull
#define BOOT_LEVEL 0.95

/* Cycle times of one recording, one group per loop (ranks run their loops in lockstep). */
struct boot_sample {
	const __u64 *const *group;
	const size_t *nr;
	size_t nr_groups;
};

struct boot_interval {
	double lo, hi;
};

struct boot_opts {
	unsigned int resamples;
	__u64 seed;
};

/* B - A: the change of the medians and of the means, with their 95% intervals. */
struct boot_change {
	double median_a, median_b, mean_a, mean_b;
	double iqr_a, iqr_b;
	double median_change, mean_change;
	struct boot_interval median_ci, mean_ci;
	double between_runs;	/* the caller's bootstrap__run_spread, 0: not measured */
};

/* Both samples need at least one value; 0, -EINVAL or -ENOMEM. */
int bootstrap__change(const struct boot_sample *a, const struct boot_sample *b,
		      const struct boot_opts *opts, struct boot_change *out);

enum change_verdict {
	VERDICT_NONE,		/* the interval holds zero */
	VERDICT_BELOW_NOISE,	/* the interval excludes zero, the change is under the floor */
	VERDICT_SIGNIFICANT,
};

/* Changes smaller than this are run-to-run noise, whatever the interval says. */
#define NOISE_MIN_REL 0.03	/* of A's median */
#define NOISE_IQR_FRAC 0.25	/* of the mean of the two interquartile ranges */
#define NOISE_RUNS_MULT 2	/* times the between-run spread, where replicates measure it */

/* Largest difference between the p50s of recordings of one setting; 0 for fewer than two. */
double bootstrap__run_spread(const double *p50, size_t n);

double bootstrap__noise_floor(const struct boot_change *c);
enum change_verdict bootstrap__verdict(const struct boot_change *c);
const char *bootstrap__verdict_name(enum change_verdict v);

/* Nearest rank, as the report's percentiles; sorted[0..n), n > 0. */
__u64 bootstrap__percentile(const __u64 *sorted, size_t n, unsigned int pct);

#endif /* __STATS_H */
