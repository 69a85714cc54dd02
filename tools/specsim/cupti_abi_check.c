// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Built only where NVIDIA's CUPTI headers are installed: cupti_abi.h must give
 * the same sizes, offsets and values, so the look-alike's records read the same.
 */
#include <cupti.h>
#include "cupti_abi.h"

#define SAME_SIZE(real, ours) _Static_assert(sizeof(real) == sizeof(ours), #real " size")
#define SAME_AT(real, rf, ours, of)                                                 \
	_Static_assert(offsetof(real, rf) == offsetof(ours, of), #real "." #rf " offset")
#define SAME_VALUE(real, ours) _Static_assert((long long)(real) == (long long)(ours), #real)

SAME_VALUE(CUPTI_API_VERSION, CUPTI_ABI_VERSION);
SAME_VALUE(ACTIVITY_RECORD_ALIGNMENT, CUPTI_REC_ALIGN);
SAME_VALUE(CUPTI_SUCCESS, CUPTI_OK);
SAME_VALUE(CUPTI_ERROR_INVALID_PARAMETER, CUPTI_E_INVALID_PARAMETER);
SAME_VALUE(CUPTI_ERROR_INVALID_OPERATION, CUPTI_E_INVALID_OPERATION);
SAME_VALUE(CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_E_MAX_LIMIT_REACHED);
SAME_VALUE(CUPTI_ERROR_NOT_COMPATIBLE, CUPTI_E_NOT_COMPATIBLE);
SAME_VALUE(CUPTI_ERROR_NOT_INITIALIZED, CUPTI_E_NOT_INITIALIZED);
SAME_VALUE(CUPTI_ERROR_INVALID_KIND, CUPTI_E_INVALID_KIND);
SAME_VALUE(CUPTI_ERROR_NOT_SUPPORTED, CUPTI_E_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_E_MULTIPLE_SUBSCRIBERS);
SAME_VALUE(CUPTI_ERROR_UNKNOWN, CUPTI_E_UNKNOWN);
SAME_VALUE(CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_KIND_MEMCPY);
SAME_VALUE(CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_KIND_MEMSET);
SAME_VALUE(CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_KIND_KERNEL);
SAME_VALUE(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_KIND_CONCURRENT_KERNEL);
SAME_VALUE(CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_KIND_OVERHEAD);
SAME_VALUE(CUPTI_ACTIVITY_KIND_GRAPH_TRACE, CUPTI_KIND_GRAPH_TRACE);
SAME_VALUE(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_MEMCPY_HTOD);
SAME_VALUE(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_MEMCPY_DTOH);
SAME_VALUE(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_MEMCPY_DTOD);
SAME_VALUE(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_MEMCPY_HTOH);
SAME_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_MEMORY_PAGEABLE);
SAME_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_MEMORY_PINNED);
SAME_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_MEMORY_DEVICE);
SAME_VALUE(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, CUPTI_OVERHEAD_BUFFER_FLUSH);
SAME_VALUE(CUPTI_ACTIVITY_OBJECT_THREAD, CUPTI_OBJECT_THREAD);
SAME_VALUE(CUPTI_CHANNEL_TYPE_COMPUTE, CUPTI_CHANNEL_COMPUTE);
SAME_VALUE(CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY, CUPTI_CHANNEL_ASYNC_MEMCPY);
SAME_VALUE(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_FLUSH_FORCED);
SAME_VALUE(sizeof(CUpti_ActivityKind), sizeof(enum cupti_kind));

SAME_SIZE(CUpti_Activity, struct cupti_record);

#define K CUpti_ActivityKernel10
#define O struct cupti_kernel10
SAME_SIZE(K, O);
SAME_AT(K, kind, O, kind);
SAME_AT(K, cacheConfig, O, cache_config);
SAME_AT(K, registersPerThread, O, registers_per_thread);
SAME_AT(K, partitionedGlobalCacheExecuted, O, partitioned_cache_executed);
SAME_AT(K, start, O, start);
SAME_AT(K, end, O, end);
SAME_AT(K, completed, O, completed);
SAME_AT(K, deviceId, O, device_id);
SAME_AT(K, contextId, O, context_id);
SAME_AT(K, streamId, O, stream_id);
SAME_AT(K, gridX, O, grid_x);
SAME_AT(K, blockZ, O, block_z);
SAME_AT(K, localMemoryTotal, O, local_memory_total);
SAME_AT(K, correlationId, O, correlation_id);
SAME_AT(K, gridId, O, grid_id);
SAME_AT(K, name, O, name);
SAME_AT(K, queued, O, queued);
SAME_AT(K, submitted, O, submitted);
SAME_AT(K, launchType, O, launch_type);
SAME_AT(K, sharedMemoryExecuted, O, shared_memory_executed);
SAME_AT(K, graphNodeId, O, graph_node_id);
SAME_AT(K, shmemLimitConfig, O, shmem_limit_config);
SAME_AT(K, graphId, O, graph_id);
SAME_AT(K, pAccessPolicyWindow, O, access_policy_window);
SAME_AT(K, channelID, O, channel_id);
SAME_AT(K, channelType, O, channel_type);
SAME_AT(K, clusterX, O, cluster_x);
SAME_AT(K, clusterSchedulingPolicy, O, cluster_scheduling_policy);
SAME_AT(K, localMemoryTotal_v2, O, local_memory_total_v2);
SAME_AT(K, maxActiveClusters, O, max_active_clusters);
SAME_AT(K, isDeviceLaunched, O, is_device_launched);
#undef K
#undef O

#define G CUpti_ActivityGraphTrace2
#define O struct cupti_graph_trace2
SAME_SIZE(G, O);
SAME_AT(G, kind, O, kind);
SAME_AT(G, correlationId, O, correlation_id);
SAME_AT(G, start, O, start);
SAME_AT(G, end, O, end);
SAME_AT(G, deviceId, O, device_id);
SAME_AT(G, graphId, O, graph_id);
SAME_AT(G, contextId, O, context_id);
SAME_AT(G, streamId, O, stream_id);
SAME_AT(G, reserved, O, reserved);
SAME_AT(G, endDeviceId, O, end_device_id);
SAME_AT(G, endContextId, O, end_context_id);
#undef G
#undef O

#define M CUpti_ActivityMemcpy6
#define O struct cupti_memcpy6
SAME_SIZE(M, O);
SAME_AT(M, copyKind, O, copy_kind);
SAME_AT(M, srcKind, O, src_kind);
SAME_AT(M, dstKind, O, dst_kind);
SAME_AT(M, bytes, O, bytes);
SAME_AT(M, start, O, start);
SAME_AT(M, end, O, end);
SAME_AT(M, deviceId, O, device_id);
SAME_AT(M, contextId, O, context_id);
SAME_AT(M, streamId, O, stream_id);
SAME_AT(M, correlationId, O, correlation_id);
SAME_AT(M, runtimeCorrelationId, O, runtime_correlation_id);
SAME_AT(M, reserved0, O, reserved0);
SAME_AT(M, graphNodeId, O, graph_node_id);
SAME_AT(M, graphId, O, graph_id);
SAME_AT(M, channelID, O, channel_id);
SAME_AT(M, channelType, O, channel_type);
SAME_AT(M, isDeviceLaunched, O, is_device_launched);
SAME_AT(M, copyCount, O, copy_count);
#undef M
#undef O

#define S CUpti_ActivityMemset4
#define O struct cupti_memset4
SAME_SIZE(S, O);
SAME_AT(S, value, O, value);
SAME_AT(S, bytes, O, bytes);
SAME_AT(S, start, O, start);
SAME_AT(S, end, O, end);
SAME_AT(S, deviceId, O, device_id);
SAME_AT(S, contextId, O, context_id);
SAME_AT(S, streamId, O, stream_id);
SAME_AT(S, correlationId, O, correlation_id);
SAME_AT(S, flags, O, flags);
SAME_AT(S, memoryKind, O, memory_kind);
SAME_AT(S, reserved0, O, reserved0);
SAME_AT(S, graphNodeId, O, graph_node_id);
SAME_AT(S, graphId, O, graph_id);
SAME_AT(S, channelType, O, channel_type);
SAME_AT(S, isDeviceLaunched, O, is_device_launched);
#undef S
#undef O

#define V CUpti_ActivityOverhead3
#define O struct cupti_overhead3
SAME_SIZE(V, O);
SAME_AT(V, overheadKind, O, overhead_kind);
SAME_AT(V, objectKind, O, object_kind);
SAME_AT(V, objectId, O, object_id);
SAME_AT(V, objectId.pt.threadId, O, object_id.pt.thread_id);
SAME_AT(V, start, O, start);
SAME_AT(V, end, O, end);
SAME_AT(V, correlationId, O, correlation_id);
SAME_AT(V, overheadData, O, overhead_data);
#undef V
#undef O

/* the callbacks' and entry points' types, as the header declares them */
static CUpti_BuffersCallbackRequestFunc request_type __attribute__((unused)) =
	(cupti_request_fn)0;
static CUpti_TimestampCallbackFunc timestamp_type __attribute__((unused)) = (cupti_timestamp_fn)0;
