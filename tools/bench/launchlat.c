// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a thread launching in a tight loop sees while probes go in and out:
 * each cuLaunchKernel of the look-alike library timed alone.
 *   launchlat SECONDS SLICE_FILE GO_FILE  loop: waits for GO_FILE, launches for
 *                                         SECONDS, writes one line per millisecond
 *                                         (its start ns, calls begun in it, the
 *                                         longest's ns) to SLICE_FILE, prints one
 *                                         JSON line
 *   launchlat 0 - GO_FILE                 only maps the library, until killed
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "lookalike.h"

#define SLICE_NS 1000000ull
#define MAX_SLICES 600000	/* ten minutes */
#define BUCKETS 4096	/* call times in 10 ns steps, the last one everything longer */

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static unsigned long long slice_calls[MAX_SLICES], slice_worst[MAX_SLICES];
static unsigned long long hist[BUCKETS];

/* The call time at quantile q, to 10 ns. */
static unsigned long long quantile(unsigned long long calls, double q)
{
	unsigned long long want = (unsigned long long)(calls * q), seen = 0;

	for (int b = 0; b < BUCKETS; b++) {
		seen += hist[b];
		if (seen > want)
			return b * 10ull;
	}
	return BUCKETS * 10ull;
}

int main(int argc, char **argv)
{
	double seconds = argc > 3 ? atof(argv[1]) : -1;
	unsigned long long calls = 0, worst = 0, start, end, nr_slices;
	FILE *out;

	if (seconds < 0 || seconds > MAX_SLICES / 1000) {
		fprintf(stderr, "usage: launchlat SECONDS SLOW_FILE GO_FILE\n");
		return 2;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (access(argv[3], F_OK))
		usleep(2000);
	if (seconds == 0) {
		for (;;)
			pause();
	}
	start = now_ns();
	end = start + (unsigned long long)(seconds * 1e9);
	nr_slices = (end - start) / SLICE_NS + 1;
	for (unsigned long long t0 = start; t0 < end; calls++) {
		unsigned long long t1, ns, slice = (t0 - start) / SLICE_NS;

		cuLaunchKernel((void *)1, 1, 1, 1, 1, 1, 1, 0, (void *)2, NULL, NULL);
		t1 = now_ns();
		ns = t1 - t0;
		hist[ns / 10 < BUCKETS ? ns / 10 : BUCKETS - 1]++;
		worst = ns > worst ? ns : worst;
		slice_calls[slice]++;
		if (ns > slice_worst[slice])
			slice_worst[slice] = ns;
		t0 = t1;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	for (unsigned long long i = 0; i < nr_slices; i++)
		fprintf(out, "%llu %llu %llu\n", start + i * SLICE_NS, slice_calls[i], slice_worst[i]);
	fclose(out);
	printf("{\"calls\":%llu,\"median_ns\":%llu,\"p99_ns\":%llu,\"p9999_ns\":%llu,"
	       "\"worst_ns\":%llu}\n", calls, quantile(calls, 0.5), quantile(calls, 0.99),
	       quantile(calls, 0.9999), worst);
	return 0;
}
