// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Look-alike libnccl.so.2: a collective that launches its kernel through libcuda, like NCCL. */
#include "lookalike.h"

int ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, void *comm,
		  void *stream)
{
	CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 640,
			       .blockDimY = 1, .blockDimZ = 1, .hStream = stream };

	return cuLaunchKernelEx(&cfg, (void *)0xacc, NULL, NULL);
}

/* NCCL exports the profiling alias at the same address. */
int pncclAllReduce(const void *, void *, size_t, int, int, void *, void *)
	__attribute__((alias("ncclAllReduce")));
