// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Exported driver entry points: kernel launches, capture and graphs. */
#include <stdlib.h>
#include "sim.h"

static bool graph_ok(CUgraph g)
{
	return g && g->magic == SIM_MAGIC_GRAPH;
}

static bool exec_ok(CUgraphExec x)
{
	return x && x->magic == SIM_MAGIC_EXEC;
}

static CUresult launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
		       CUstream hStream, void **params)
{
	struct specsim_func *fn = sim_func_resolve(f);
	struct specsim_stream *s = sim_stream_resolve(hStream);
	struct sim_node node = { .kind = NODE_KERNEL };

	if (!fn || !s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!gx || !gy || !gz)
		return CUDA_ERROR_INVALID_VALUE;
	node.func = fn;
	node.dur_ns = __atomic_load_n(&fn->dur_ns, __ATOMIC_RELAXED);
	if (fn->run) {
		/* like the driver, take the parameter's value at launch time */
		if (!params || !params[0])
			return CUDA_ERROR_INVALID_VALUE;
		node.arg = *(void **)params[0];
	}
	return sim_stream_submit(s, &node, NULL);
}

SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				   unsigned int gridDimZ, unsigned int blockDimX,
				   unsigned int blockDimY, unsigned int blockDimZ,
				   unsigned int sharedMemBytes, CUstream hStream,
				   void **kernelParams, void **extra)
{
	CHECK_INIT();
	return launch(f, gridDimX, gridDimY, gridDimZ, hStream, kernelParams);
}

SIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
				     void **kernelParams, void **extra)
{
	CHECK_INIT();
	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->hStream,
		      kernelParams);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
					      unsigned int gridDimY, unsigned int gridDimZ,
					      unsigned int blockDimX, unsigned int blockDimY,
					      unsigned int blockDimZ, unsigned int sharedMemBytes,
					      CUstream hStream, void **kernelParams)
{
	CHECK_INIT();
	return launch(f, gridDimX, gridDimY, gridDimZ, hStream, kernelParams);
}

/* The host function runs on the stream's worker thread, in stream order. */
SIM_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	struct specsim_stream *s;
	struct sim_node node = { .kind = NODE_HOST, .host_fn = fn, .arg = userData };

	CHECK_INIT();
	s = sim_stream_resolve(hStream);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_stream_submit(s, &node, NULL);
}

static CUresult begin_capture(CUstream hStream, CUgraph into, int mode)
{
	struct specsim_stream *s = sim_stream_resolve(hStream);

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_capture_begin(s, into, mode);
}

SIM_EXPORT CUresult cuStreamBeginCapture(CUstream hStream)
{
	CHECK_INIT();
	return begin_capture(hStream, NULL, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	CHECK_INIT();
	return begin_capture(hStream, NULL, mode);
}

SIM_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
						const CUgraphNode *dependencies,
						const CUgraphEdgeData *dependencyData,
						size_t numDependencies, CUstreamCaptureMode mode)
{
	CHECK_INIT();
	if (!graph_ok(hGraph))
		return CUDA_ERROR_INVALID_HANDLE;
	return begin_capture(hStream, hGraph, mode);
}

SIM_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	struct specsim_stream *s;

	CHECK_INIT();
	s = sim_stream_resolve(hStream);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!phGraph)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_capture_end(s, phGraph);
}

static CUresult capture_info(CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id,
			     CUgraph *graph)
{
	struct specsim_stream *s = sim_stream_resolve(hStream);
	struct sim_capture *cap;

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_dev.lock);
	cap = s->cap;
	*status = !cap ? CU_STREAM_CAPTURE_STATUS_NONE
		       : cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
				      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	if (id && cap)
		*id = cap->id;
	if (graph)
		*graph = cap ? cap->graph : NULL;
	pthread_mutex_unlock(&sim_dev.lock);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	CHECK_INIT();
	return capture_info(hStream, captureStatus, NULL, NULL);
}

SIM_EXPORT CUresult cuStreamGetCaptureInfo(CUstream hStream,
					   CUstreamCaptureStatus *captureStatus_out,
					   cuuint64_t *id_out)
{
	CHECK_INIT();
	return capture_info(hStream, captureStatus_out, id_out, NULL);
}

SIM_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
					      CUstreamCaptureStatus *captureStatus_out,
					      cuuint64_t *id_out, CUgraph *graph_out,
					      const CUgraphNode **dependencies_out,
					      size_t *numDependencies_out)
{
	CHECK_INIT();
	/* nodes have no handles here: report no dependency set */
	if (dependencies_out)
		*dependencies_out = NULL;
	if (numDependencies_out)
		*numDependencies_out = 0;
	return capture_info(hStream, captureStatus_out, id_out, graph_out);
}

SIM_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
					      CUstreamCaptureStatus *captureStatus_out,
					      cuuint64_t *id_out, CUgraph *graph_out,
					      const CUgraphNode **dependencies_out,
					      const CUgraphEdgeData **edgeData_out,
					      size_t *numDependencies_out)
{
	CHECK_INIT();
	if (dependencies_out)
		*dependencies_out = NULL;
	if (edgeData_out)
		*edgeData_out = NULL;
	if (numDependencies_out)
		*numDependencies_out = 0;
	return capture_info(hStream, captureStatus_out, id_out, graph_out);
}

SIM_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	CHECK_INIT();
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	*phGraph = sim_graph_new();
	return *phGraph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
	CHECK_INIT();
	if (!graph_ok(hGraph))
		return CUDA_ERROR_INVALID_HANDLE;
	hGraph->magic = 0;
	free(hGraph->nodes);
	free(hGraph);
	return CUDA_SUCCESS;
}

static CUresult instantiate_logged(CUgraphExec *px, CUgraph g, CUgraphNode *err_node, char *log,
				   size_t log_size)
{
	if (err_node)
		*err_node = NULL;
	if (log && log_size)
		log[0] = '\0';
	return sim_instantiate(px, g);
}

SIM_EXPORT CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
				       CUgraphNode *phErrorNode, char *logBuffer,
				       size_t bufferSize)
{
	CHECK_INIT();
	return instantiate_logged(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

SIM_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
					  CUgraphNode *phErrorNode, char *logBuffer,
					  size_t bufferSize)
{
	CHECK_INIT();
	return instantiate_logged(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
						unsigned long long flags)
{
	CHECK_INIT();
	return sim_instantiate(phGraphExec, hGraph);
}

SIM_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
						 CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	CUresult err;

	CHECK_INIT();
	if (!instantiateParams)
		return CUDA_ERROR_INVALID_VALUE;
	err = sim_instantiate(phGraphExec, hGraph);
	instantiateParams->hErrNode_out = NULL;
	instantiateParams->result_out = err ? 1 : 0;
	return err;
}

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	CHECK_INIT();
	if (!exec_ok(hGraphExec))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_dev.lock);
	hGraphExec->magic = 0;
	hGraphExec->destroyed = true;
	/* queued replays keep their reference; the last one frees it */
	sim_exec_put(hGraphExec);
	pthread_mutex_unlock(&sim_dev.lock);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
				      CUgraphNode *hErrorNode_out,
				      CUgraphExecUpdateResult *updateResult_out)
{
	int result;

	CHECK_INIT();
	if (!exec_ok(hGraphExec) || !graph_ok(hGraph))
		return CUDA_ERROR_INVALID_HANDLE;
	result = sim_exec_update(hGraphExec, hGraph);
	if (hErrorNode_out)
		*hErrorNode_out = NULL;
	if (updateResult_out)
		*updateResult_out = result;
	return result ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE : CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
					 CUgraphExecUpdateResultInfo *resultInfo)
{
	int result;

	CHECK_INIT();
	if (!exec_ok(hGraphExec) || !graph_ok(hGraph))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!resultInfo)
		return CUDA_ERROR_INVALID_VALUE;
	result = sim_exec_update(hGraphExec, hGraph);
	resultInfo->result = result;
	resultInfo->errorNode = NULL;
	resultInfo->errorFromNode = NULL;
	return result ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE : CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	struct specsim_stream *s;

	CHECK_INIT();
	s = sim_stream_resolve(hStream);
	if (!exec_ok(hGraphExec) || !s)
		return CUDA_ERROR_INVALID_HANDLE;
	sim_activity_check_exec(hGraphExec);
	return sim_stream_submit_exec(s, hGraphExec);
}
