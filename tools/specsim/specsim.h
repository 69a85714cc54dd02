/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The simulated GPU's interface: driver and NCCL types written to match the
 * real x86-64 ABI (our own definitions, the subset used), the entry points the
 * look-alike libraries export, and the specsim* extras (side channels that
 * never change a real signature).
 */
#ifndef __SPECSIM_H
#define __SPECSIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- driver types ---- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef struct specsim_ctx *CUcontext;
typedef struct specsim_stream *CUstream;
typedef struct specsim_event *CUevent;
typedef struct specsim_graph *CUgraph;
typedef struct specsim_exec *CUgraphExec;
typedef struct specsim_graph_node *CUgraphNode;
typedef struct specsim_func *CUfunction;
typedef struct specsim_module *CUmodule;
typedef struct specsim_library *CUlibrary;
typedef struct specsim_kernel *CUkernel;
typedef struct specsim_mempool *CUmemoryPool;
typedef struct specsim_edge_data CUgraphEdgeData;
typedef struct specsim_launch_attr CUlaunchAttribute;
typedef int CUstreamCaptureStatus;
typedef int CUstreamCaptureMode;
typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUgraphExecUpdateResult;
typedef int CUdriverProcAddressQueryResult;
typedef void (*CUhostFn)(void *user_data);

/* 7 x u32, 4 bytes of padding, hStream at 32, attrs at 40, numAttrs at 48 */
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

typedef struct {
	CUgraphExecUpdateResult result;
	CUgraphNode errorNode;
	CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;

typedef struct {
	cuuint64_t flags;
	CUstream hUploadStream;
	CUgraphNode hErrNode_out;
	int result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
#define CU_STREAM_CAPTURE_STATUS_NONE 0
#define CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define CU_STREAM_CAPTURE_STATUS_INVALIDATED 2
#define CU_GRAPH_EXEC_UPDATE_SUCCESS 0
#define CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED 2

/* the CUresult values the simulator returns */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_ILLEGAL_STATE 401
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_STREAM_CAPTURE_MERGE 902
#define CUDA_ERROR_STREAM_CAPTURE_UNMATCHED 903
#define CUDA_ERROR_CAPTURED_EVENT 907
#define CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE 910

/* ---- driver entry points (libcuda.so.1) ---- */
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize_v2(CUcontext ctx);

CUresult cuStreamCreate(CUstream *phStream, unsigned int flags);
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamQuery(CUstream hStream);
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags);

CUresult cuEventCreate(CUevent *phEvent, unsigned int flags);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult cuEventQuery(CUevent hEvent);
CUresult cuEventSynchronize(CUevent hEvent);

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			void **kernelParams, void **extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			  void **extra);
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				   unsigned int gridDimZ, unsigned int blockDimX,
				   unsigned int blockDimY, unsigned int blockDimZ,
				   unsigned int sharedMemBytes, CUstream hStream,
				   void **kernelParams);
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);

CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
				     const CUgraphNode *dependencies,
				     const CUgraphEdgeData *dependencyData, size_t numDependencies,
				     CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				cuuint64_t *id_out);
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				   cuuint64_t *id_out, CUgraph *graph_out,
				   const CUgraphNode **dependencies_out,
				   size_t *numDependencies_out);
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				   cuuint64_t *id_out, CUgraph *graph_out,
				   const CUgraphNode **dependencies_out,
				   const CUgraphEdgeData **edgeData_out,
				   size_t *numDependencies_out);
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags);
CUresult cuGraphDestroy(CUgraph hGraph);
CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			    char *logBuffer, size_t bufferSize);
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
			       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
				     unsigned long long flags);
CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
				      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec);
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
			   CUgraphExecUpdateResult *updateResult_out);
CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
			      CUgraphExecUpdateResultInfo *resultInfo);
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
			      CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
			      CUstream hStream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
			      CUstream hStream);
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
		      CUcontext srcContext, size_t ByteCount);
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
			   CUcontext srcContext, size_t ByteCount, CUstream hStream);
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
			 size_t Height);
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
			  size_t Height);
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
			  size_t Height);
CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
			   size_t Height, CUstream hStream);
CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
			    size_t Width, size_t Height, CUstream hStream);
CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
			    size_t Height, CUstream hStream);

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemFreeHost(void *p);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				 CUstream hStream);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes);

CUresult cuModuleLoad(CUmodule *module, const char *fname);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
			    CUjit_option *options, void **optionValues);
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
			   void **jitOptionsValues, unsigned int numJitOptions,
			   CUlibraryOption *libraryOptions, void **libraryOptionValues,
			   unsigned int numLibraryOptions);
CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
			       void **jitOptionsValues, unsigned int numJitOptions,
			       CUlibraryOption *libraryOptions, void **libraryOptionValues,
			       unsigned int numLibraryOptions);
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus);

/* ---- libcuda extras (never probed: no cu prefix) ---- */

/* Simulated GPU time of one launch of f. */
int specsimSetFunctionDurationNs(CUfunction f, long long ns);
/*
 * Run on the stream's worker when a launch of f executes, with the value of the
 * launch's first kernel parameter; returns extra GPU nanoseconds. NCCL's
 * rendezvous rides on this.
 */
typedef long long (*specsim_run_fn)(void *arg);
int specsimSetFunctionHook(CUfunction f, specsim_run_fn run);
/* Copy timing: latency plus bytes / (GB/s); 0 keeps a value. */
void specsimSetCopyModel(long long latency_ns, long long pinned_gbps, long long pageable_gbps,
			 long long device_gbps);

/*
 * 1 when a sync of hStream would find work to wait for (on the legacy stream,
 * the blocking streams' work counts too), 0 when idle, -1 for a bad handle.
 */
int specsimStreamBusy(CUstream hStream);
/* 1 when any stream has work queued: what a context sync or a free would wait for. */
int specsimDeviceBusy(void);

/* What the simulated GPU executed, one span per work item. */
struct specsim_gpu_span {
	CUstream stream;
	const char *kind;	/* kernel, graph, copy, memset, host, free, wait */
	const char *name;	/* kernel name, or NULL */
	CUgraphExec exec;	/* for kind "graph" */
	unsigned long long start_ns, end_ns;
	unsigned long long queued_ns;	/* when the launching call queued it */
	int tid;			/* the launching thread */
	unsigned int stream_id;		/* the stream's activity id (specsimActivityObserve) */
	unsigned int correlation_id;	/* per launching call; 0 for host, free, wait */
	unsigned int graph_id;		/* the exec's, for kind "graph" */
	int copy_kind;			/* CUPTI's memcpy kind, for kind "copy" */
	unsigned long long bytes;	/* for kinds "copy" and "memset" */
};
void specsimGpuLogEnable(int on);
typedef void (*specsim_span_fn)(const struct specsim_gpu_span *span, void *ctx);
size_t specsimGpuLogDrain(specsim_span_fn fn, void *ctx);

/*
 * Activity records for a CUPTI look-alike: fn gets every executed work item of
 * the kinds in the mask when it ends, on the stream's worker, before the item
 * counts as done (so a sync that returns has seen its items handed over).
 * Stream ids are 7 for the legacy stream, then 13, 14, ... in creation order.
 */
enum specsim_activity_kind {
	SPECSIM_ACT_KERNEL = 1 << 0,	/* eager kernels, NCCL's included */
	SPECSIM_ACT_GRAPH = 1 << 1,	/* one per graph launch */
	SPECSIM_ACT_COPY = 1 << 2,
	SPECSIM_ACT_MEMSET = 1 << 3,
};
struct specsim_activity {
	enum specsim_activity_kind kind;
	const char *name;		/* kernels only */
	unsigned int stream_id, context_id, device_id, correlation_id, graph_id;
	int copy_kind;
	unsigned long long bytes;
	unsigned long long start_ns, end_ns;	/* CLOCK_MONOTONIC */
};
typedef void (*specsim_activity_fn)(const struct specsim_activity *act);
void specsimActivityObserve(specsim_activity_fn fn, unsigned int kinds);

/* ---- NCCL types ---- */
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct specsim_nccl_comm *ncclComm_t;
typedef struct specsim_nccl_config ncclConfig_t;
typedef CUstream cudaStream_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

#define ncclSuccess 0
#define ncclUnhandledCudaError 1
#define ncclSystemError 2
#define ncclInternalError 3
#define ncclInvalidArgument 4
#define ncclInvalidUsage 5
#define NCCL_SPLIT_NOCOLOR (-1)
#define ncclInt32 2
#define ncclFloat32 7
#define ncclBfloat16 9
#define ncclSum 0

/* ---- NCCL entry points (libnccl.so.2; each also exported as pncclX) ---- */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				      ncclUniqueId *commIds, ncclConfig_t *config);
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
			ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

/* ---- libnccl extras ---- */

/* A call one look-alike library made to another (NCCL -> cuLaunchKernelEx). */
#define SPECSIM_NOTE_ARGS 12
struct specsim_call_note {
	const char *name;	/* exact symbol called */
	const char *parent;	/* the NCCL entry point it was made from */
	unsigned long long before_ns, after_ns;
	int result;
	int nargs;
	const char *keys[SPECSIM_NOTE_ARGS];
	long long vals[SPECSIM_NOTE_ARGS];
};
typedef void (*specsim_note_fn)(const struct specsim_call_note *note);
void specsimNcclSetCallHook(specsim_note_fn fn);
/* GPU time of one collective on comm: base plus per KiB moved. */
int specsimNcclSetCollectiveNs(ncclComm_t comm, long long base_ns, long long ns_per_kib);
/* The next collective on comm blocks its caller for ns, as NCCL does when a peer never joins. */
int specsimNcclHangNext(ncclComm_t comm, long long ns);

#ifdef __cplusplus
}
#endif

#endif /* __SPECSIM_H */
