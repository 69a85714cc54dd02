// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * cuGetProcAddress: a base name and a CUDA version give the ABI variant that
 * version expects (cuMemcpyDtoHAsync @ 12000 -> cuMemcpyDtoHAsync_v2). The
 * pointers are the exported functions themselves, so a call through one hits
 * the same code a tracer probes.
 */
#include <string.h>
#include "sim.h"

struct proc_entry {
	const char *name;
	int version;	/* first CUDA version that gets this variant */
	void *fn;
	const char *symbol;
};

#define P(base, ver, fn) { base, ver, (void *)fn, #fn }

/* newest variant first within a name */
static const struct proc_entry proc_table[] = {
	P("cuInit", 2000, cuInit),
	P("cuDeviceGet", 2000, cuDeviceGet),
	P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
	P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
	P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
	P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
	P("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
	P("cuCtxSynchronize", 2000, cuCtxSynchronize),
	P("cuStreamCreate", 2000, cuStreamCreate),
	P("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
	P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
	P("cuStreamSynchronize", 2000, cuStreamSynchronize),
	P("cuStreamQuery", 2000, cuStreamQuery),
	P("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
	P("cuEventCreate", 2000, cuEventCreate),
	P("cuEventDestroy", 4000, cuEventDestroy_v2),
	P("cuEventRecord", 2000, cuEventRecord),
	P("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags),
	P("cuEventQuery", 2000, cuEventQuery),
	P("cuEventSynchronize", 2000, cuEventSynchronize),
	P("cuLaunchKernel", 4000, cuLaunchKernel),
	P("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
	P("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel),
	P("cuLaunchHostFunc", 10000, cuLaunchHostFunc),
	P("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
	P("cuStreamBeginCapture", 10000, cuStreamBeginCapture),
	P("cuStreamBeginCaptureToGraph", 12030, cuStreamBeginCaptureToGraph),
	P("cuStreamEndCapture", 10000, cuStreamEndCapture),
	P("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
	P("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3),
	P("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2),
	P("cuStreamGetCaptureInfo", 10010, cuStreamGetCaptureInfo),
	P("cuGraphCreate", 10000, cuGraphCreate),
	P("cuGraphDestroy", 10000, cuGraphDestroy),
	P("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
	P("cuGraphInstantiate", 11000, cuGraphInstantiate_v2),
	P("cuGraphInstantiate", 10000, cuGraphInstantiate),
	P("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
	P("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams),
	P("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
	P("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2),
	P("cuGraphExecUpdate", 10020, cuGraphExecUpdate),
	P("cuGraphLaunch", 10000, cuGraphLaunch),
	P("cuMemcpy", 4000, cuMemcpy),
	P("cuMemcpyAsync", 4000, cuMemcpyAsync),
	P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
	P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
	P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
	P("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
	P("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
	P("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
	P("cuMemsetD8", 3020, cuMemsetD8_v2),
	P("cuMemsetD32", 3020, cuMemsetD32_v2),
	P("cuMemsetD8Async", 3020, cuMemsetD8Async),
	P("cuMemsetD16", 3020, cuMemsetD16_v2),
	P("cuMemsetD16Async", 3020, cuMemsetD16Async),
	P("cuMemsetD2D8", 3020, cuMemsetD2D8_v2),
	P("cuMemsetD2D16", 3020, cuMemsetD2D16_v2),
	P("cuMemsetD2D32", 3020, cuMemsetD2D32_v2),
	P("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async),
	P("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async),
	P("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async),
	P("cuMemcpyPeer", 4000, cuMemcpyPeer),
	P("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
	P("cuMemsetD32Async", 3020, cuMemsetD32Async),
	P("cuMemHostAlloc", 2020, cuMemHostAlloc),
	P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
	P("cuMemHostRegister", 6050, cuMemHostRegister_v2),
	P("cuMemHostUnregister", 4000, cuMemHostUnregister),
	P("cuMemFreeHost", 2000, cuMemFreeHost),
	P("cuMemAlloc", 3020, cuMemAlloc_v2),
	P("cuMemFree", 3020, cuMemFree_v2),
	P("cuMemAllocAsync", 11020, cuMemAllocAsync),
	P("cuMemFreeAsync", 11020, cuMemFreeAsync),
	P("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
	P("cuMemAllocManaged", 6000, cuMemAllocManaged),
	P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
	P("cuModuleLoad", 2000, cuModuleLoad),
	P("cuModuleLoadData", 2000, cuModuleLoadData),
	P("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
	P("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary),
	P("cuLibraryLoadFromFile", 12000, cuLibraryLoadFromFile),
	P("cuModuleGetFunction", 2000, cuModuleGetFunction),
	P("cuLibraryLoadData", 12000, cuLibraryLoadData),
	P("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
	P("cuKernelGetFunction", 12000, cuKernelGetFunction),
	P("cuGetProcAddress", 12000, cuGetProcAddress_v2),
	P("cuGetProcAddress", 11030, cuGetProcAddress),
};

#define PROC_FOUND 0
#define PROC_SYMBOL_NOT_FOUND 1
#define PROC_VERSION_NOT_SUFFICIENT 2

static int lookup(const char *symbol, int version, void **pfn)
{
	size_t n = sizeof(proc_table) / sizeof(proc_table[0]);
	bool known = false;

	for (size_t i = 0; i < n; i++) {
		const struct proc_entry *e = &proc_table[i];

		if (strcmp(e->name, symbol))
			continue;
		known = true;
		if (version >= e->version) {
			*pfn = e->fn;
			return PROC_FOUND;
		}
	}
	if (known)
		return PROC_VERSION_NOT_SUFFICIENT;
	/* not a base name: an exact exported variant (cuMemFree_v2) is taken as asked */
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(proc_table[i].symbol, symbol)) {
			*pfn = proc_table[i].fn;
			return PROC_FOUND;
		}
	}
	return PROC_SYMBOL_NOT_FOUND;
}

static CUresult get_proc(const char *symbol, void **pfn, int version, int *status)
{
	int found;

	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	found = lookup(symbol, version, pfn);
	if (status)
		*status = found;
	return found == PROC_FOUND ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
				     cuuint64_t flags)
{
	SIM_FRAME();
	return get_proc(symbol, pfn, cudaVersion, NULL);
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
					cuuint64_t flags,
					CUdriverProcAddressQueryResult *symbolStatus)
{
	SIM_FRAME();
	return get_proc(symbol, pfn, cudaVersion, symbolStatus);
}
