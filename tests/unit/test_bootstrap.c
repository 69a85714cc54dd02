// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Bootstrap intervals and verdicts of specprobe diff on cycle times with a known change. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "stats.h"

#define N 400
#define BASE_NS 5000000ull	/* 5 ms cycles */
#define SPREAD_NS 400000ull	/* uniform over 0.4 ms: IQR about 0.2 ms */
#define SHIFT_NS 300000ull

/* Cycle times that look measured: a fixed pseudo-random spread above BASE_NS. */
static void fill(__u64 *v, size_t n, __u64 seed, __u64 add)
{
	__u64 x = seed;

	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = BASE_NS + (x >> 33) % SPREAD_NS + add;
	}
}

struct one {
	const __u64 *group[1];
	size_t nr[1];
	struct boot_sample s;
};

static void one_group(struct one *o, const __u64 *v, size_t n)
{
	o->group[0] = v;
	o->nr[0] = n;
	o->s = (struct boot_sample){ o->group, o->nr, 1 };
}

static void test_identical_not_significant(void **state)
{
	static __u64 v[N];
	struct boot_change c;
	struct one a, b;

	fill(v, N, 1, 0);
	one_group(&a, v, N);
	one_group(&b, v, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), 0);
	assert_true(c.median_change == 0 && c.mean_change == 0);
	assert_true(c.median_ci.lo <= 0 && c.median_ci.hi >= 0);
	assert_true(c.mean_ci.lo <= 0 && c.mean_ci.hi >= 0);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_NONE);
}

/* Two runs of one setting: other draws of the same distribution. */
static void test_same_distribution_not_significant(void **state)
{
	static __u64 x[N], y[N];
	struct boot_change c;
	struct one a, b;

	fill(x, N, 2, 0);
	fill(y, N, 3, 0);
	one_group(&a, x, N);
	one_group(&b, y, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), 0);
	assert_true(c.median_ci.lo <= 0 && c.median_ci.hi >= 0);
	assert_int_not_equal(bootstrap__verdict(&c), VERDICT_SIGNIFICANT);
}

static void test_shift_inside_interval(void **state)
{
	static __u64 x[N], y[N];
	struct boot_change c;
	struct one a, b;

	fill(x, N, 4, 0);
	fill(y, N, 5, SHIFT_NS);
	one_group(&a, x, N);
	one_group(&b, y, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), 0);
	assert_true(c.median_ci.lo > 0);
	assert_true(c.median_ci.lo <= SHIFT_NS && SHIFT_NS <= c.median_ci.hi);
	assert_true(c.mean_ci.lo <= SHIFT_NS && SHIFT_NS <= c.mean_ci.hi);
	assert_true(c.median_ci.lo <= c.median_change && c.median_change <= c.median_ci.hi);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_SIGNIFICANT);

	/* and the other way round: faster, a negative change */
	assert_int_equal(bootstrap__change(&b.s, &a.s, NULL, &c), 0);
	assert_true(c.median_ci.hi < 0);
	assert_true(c.median_ci.lo <= -(double)SHIFT_NS && -(double)SHIFT_NS <= c.median_ci.hi);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_SIGNIFICANT);
}

/* No spread at all: every resample has the same median, the interval is the shift. */
static void test_constant_samples(void **state)
{
	static __u64 x[N], y[N];
	struct boot_change c;
	struct one a, b;

	for (size_t i = 0; i < N; i++) {
		x[i] = BASE_NS;
		y[i] = BASE_NS + SHIFT_NS;
	}
	one_group(&a, x, N);
	one_group(&b, y, N / 2);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), 0);
	assert_true(c.median_ci.lo == SHIFT_NS && c.median_ci.hi == SHIFT_NS);
	assert_true(c.iqr_a == 0 && c.iqr_b == 0);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_SIGNIFICANT);
}

/* Clear to the bootstrap (no spread) but 0.5%: smaller than run-to-run noise. */
static void test_tiny_change_below_noise(void **state)
{
	static __u64 x[N], y[N];
	struct boot_change c;
	struct one a, b;

	for (size_t i = 0; i < N; i++) {
		x[i] = BASE_NS + i % 3;
		y[i] = BASE_NS + BASE_NS / 200 + i % 3;
	}
	one_group(&a, x, N);
	one_group(&b, y, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), 0);
	assert_true(c.median_ci.lo > 0);
	assert_true(bootstrap__noise_floor(&c) == NOISE_MIN_REL * c.median_a);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_BELOW_NOISE);
}

/*
 * Two recordings of one setting 4.8% apart (seen on an H200): a 4.8% change is within twice
 * that spread, while a 30% change still counts.
 */
static void test_floor_with_replicates(void **state)
{
	static __u64 x[N], y[N], z[N];
	const double p50[] = { BASE_NS, BASE_NS * 1.048, BASE_NS * 1.01 };
	struct boot_change c;
	struct one a, b;

	assert_true(bootstrap__run_spread(p50, 1) == 0);
	assert_true(bootstrap__run_spread(p50, 3) == p50[1] - p50[0]);
	for (size_t i = 0; i < N; i++) {
		x[i] = BASE_NS + i % 3;
		y[i] = BASE_NS * 1.048 + i % 3;
		z[i] = BASE_NS * 1.3 + i % 3;
	}
	one_group(&a, x, N);
	one_group(&b, y, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), 0);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_SIGNIFICANT);
	c.between_runs = bootstrap__run_spread(p50, 2);
	assert_true(bootstrap__noise_floor(&c) == NOISE_RUNS_MULT * c.between_runs);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_BELOW_NOISE);

	one_group(&b, z, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), 0);
	c.between_runs = bootstrap__run_spread(p50, 2);
	assert_int_equal(bootstrap__verdict(&c), VERDICT_SIGNIFICANT);
}

static void test_fixed_seed_same_output(void **state)
{
	static __u64 x[N], y[N];
	struct boot_opts other = { BOOT_RESAMPLES, BOOT_SEED + 1 };
	struct boot_change c1, c2, c3;
	struct one a, b;

	fill(x, N, 6, 0);
	fill(y, N, 7, SHIFT_NS / 10);
	one_group(&a, x, N);
	one_group(&b, y, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c1), 0);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c2), 0);
	assert_memory_equal(&c1, &c2, sizeof(c1));
	/* the seed, not the clock or the heap, decides: another seed moves the bounds */
	assert_int_equal(bootstrap__change(&a.s, &b.s, &other, &c3), 0);
	assert_true(c1.median_change == c3.median_change);
	assert_true(c1.mean_ci.lo != c3.mean_ci.lo || c1.mean_ci.hi != c3.mean_ci.hi);
}

/* Two ranks in lockstep (the same cycles twice) are one sample: the interval is unchanged. */
static void test_lockstep_loops_one_sample(void **state)
{
	static __u64 x[N], y[N];
	const __u64 *twice_x[2] = { x, x }, *twice_y[2] = { y, y };
	size_t nr[2] = { N, N };
	struct boot_sample a2 = { twice_x, nr, 2 }, b2 = { twice_y, nr, 2 };
	struct boot_change one_c, two_c;
	struct one a, b;

	fill(x, N, 8, 0);
	fill(y, N, 9, SHIFT_NS / 4);
	one_group(&a, x, N);
	one_group(&b, y, N);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &one_c), 0);
	assert_int_equal(bootstrap__change(&a2, &b2, NULL, &two_c), 0);
	assert_true(one_c.median_ci.lo == two_c.median_ci.lo);
	assert_true(one_c.median_ci.hi == two_c.median_ci.hi);
	assert_true(one_c.mean_ci.lo == two_c.mean_ci.lo && one_c.mean_ci.hi == two_c.mean_ci.hi);
}

static void test_empty_sample(void **state)
{
	static __u64 x[N];
	struct boot_change c;
	struct one a, b;

	fill(x, N, 10, 0);
	one_group(&a, x, N);
	one_group(&b, x, 0);
	assert_int_equal(bootstrap__change(&a.s, &b.s, NULL, &c), -EINVAL);
}

static void test_percentile_nearest_rank(void **state)
{
	const __u64 v[] = { 10, 20, 30, 40 };

	assert_int_equal(bootstrap__percentile(v, 4, 50), 20);
	assert_int_equal(bootstrap__percentile(v, 4, 75), 30);
	assert_int_equal(bootstrap__percentile(v, 4, 99), 40);
	assert_int_equal(bootstrap__percentile(v, 1, 50), 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical_not_significant),
		cmocka_unit_test(test_same_distribution_not_significant),
		cmocka_unit_test(test_shift_inside_interval),
		cmocka_unit_test(test_constant_samples),
		cmocka_unit_test(test_tiny_change_below_noise),
		cmocka_unit_test(test_floor_with_replicates),
		cmocka_unit_test(test_fixed_seed_same_output),
		cmocka_unit_test(test_lockstep_loops_one_sample),
		cmocka_unit_test(test_empty_sample),
		cmocka_unit_test(test_percentile_nearest_rank),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
