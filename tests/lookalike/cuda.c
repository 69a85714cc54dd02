// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A small look-alike libcuda.so.1 for the capture tests: real names and
 * argument order, trivial bodies. Built so each entry starts with push %rbp.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "lookalike.h"


static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cond = PTHREAD_COND_INITIALIZER;

static void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra)
{
	return 0;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, void *f, void **params, void **extra)
{
	return config ? 0 : 1;
}

CUresult cuGraphLaunch(void *exec, CUstream stream)
{
	return 0;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
	memset(dst, 0x5a, bytes < 8 ? bytes : 8);
	return 0;
}

CUresult cuStreamSynchronize(CUstream stream)
{
	pause_us(20);
	return 0;
}

CUresult cuStreamEndCapture(CUstream stream, void **graph)
{
	*graph = (char *)stream + 0x8000;
	return 0;
}

/* Blocks until the process exits: the call that never returns. */
CUresult cuCtxSynchronize(void)
{
	pthread_mutex_lock(&never_lock);
	for (;;)
		pthread_cond_wait(&never_cond, &never_lock);
	return 0;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
			     int *status)
{
	*pfn = NULL;
	if (!strcmp(symbol, "cuLaunchKernel"))
		*pfn = (void *)cuLaunchKernel;
	else if (!strcmp(symbol, "cuStreamSynchronize"))
		*pfn = (void *)cuStreamSynchronize;
	return *pfn ? 0 : 500;
}

/* A completion kind with a trivial body: what a return probe costs. */
CUresult cuEventQuery(void *event)
{
	return 0;
}

/* Not catalogued: the cost of a plain call, for comparison. */
CUresult cuCtxGetDevice(int *device)
{
	*device = 0;
	return 0;
}
