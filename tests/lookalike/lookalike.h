/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Types and entry points of the look-alike libcuda/libnccl, for them and their callers. */
#ifndef __LOOKALIKE_H
#define __LOOKALIKE_H

#include <stddef.h>

typedef int CUresult;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

/* The real layout: seven u32, then hStream at offset 32. */
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, void *f, void **params, void **extra);
CUresult cuGraphLaunch(void *exec, CUstream stream);
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuStreamEndCapture(CUstream stream, void **graph);
CUresult cuCtxSynchronize(void);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
			     int *status);
CUresult cuEventQuery(void *event);
CUresult cuCtxGetDevice(int *device);
int ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, void *comm,
		  void *stream);

#endif /* __LOOKALIKE_H */
