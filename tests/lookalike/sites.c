// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Syncs from known call sites, for the call-site tests:
 *   sites ALPHA BETA GO_FILE
 * waits for GO_FILE, then calls cuStreamSynchronize ALPHA times from
 * site_alpha and BETA times from site_beta (through site_beta_outer), with a
 * launch before each sync (launches record no stack by default). Built with
 * frame pointers so the kernel can walk its stack.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "lookalike.h"

static volatile int sink;

static void __attribute__((noinline)) launch(void)
{
	cuLaunchKernel((void *)0x1000, 1, 1, 1, 32, 1, 1, 0, (CUstream)0x50, NULL, NULL);
}

void __attribute__((noinline)) site_alpha(int n)
{
	for (int i = 0; i < n; i++) {
		launch();
		sink += cuStreamSynchronize((CUstream)0x50);
	}
}

void __attribute__((noinline)) site_beta(int n)
{
	for (int i = 0; i < n; i++) {
		launch();
		sink += cuStreamSynchronize((CUstream)0x51);
	}
}

void __attribute__((noinline)) site_beta_outer(int n)
{
	site_beta(n);
	sink++;
}

int main(int argc, char **argv)
{
	int alpha, beta;

	if (argc != 4) {
		fprintf(stderr, "usage: sites ALPHA BETA GO_FILE\n");
		return 2;
	}
	alpha = atoi(argv[1]);
	beta = atoi(argv[2]);
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < 3000 && access(argv[3], F_OK); i++)
		usleep(10000);
	site_alpha(alpha);
	site_beta_outer(beta);
	return 0;
}
