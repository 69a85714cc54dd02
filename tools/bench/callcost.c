// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Host time per call of a look-alike entry point: one entry-only kind
 * (cuLaunchKernel), one entry + completion kind (cuEventQuery) and one
 * that is never probed (cuCtxGetDevice).
 *   callcost CALLS [GO_FILE]   waits for GO_FILE first, prints one JSON line
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "lookalike.h"


static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 100000;
	double t0, t_launch, t_query, t_plain;
	int dev;

	if (argc > 2) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		for (int i = 0; i < 24000 && access(argv[2], F_OK); i++)
			usleep(5000);
	}
	t0 = now_s();
	for (long i = 0; i < calls; i++)
		cuLaunchKernel((void *)1, 1, 1, 1, 1, 1, 1, 0, (void *)2, NULL, NULL);
	t_launch = now_s() - t0;
	t0 = now_s();
	for (long i = 0; i < calls; i++)
		cuEventQuery((void *)3);
	t_query = now_s() - t0;
	t0 = now_s();
	for (long i = 0; i < calls; i++)
		cuCtxGetDevice(&dev);
	t_plain = now_s() - t0;
	printf("{\"calls\":%ld,\"entry_only_ns\":%.1f,\"completion_ns\":%.1f,\"plain_ns\":%.1f}\n",
	       calls, t_launch / calls * 1e9, t_query / calls * 1e9, t_plain / calls * 1e9);
	return 0;
}
