/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The part of CUPTI's C ABI (CUDA 13, CUPTI_API_VERSION 130001) that the
 * libcupti look-alike exports: our own names over the same layouts and values.
 * cupti_abi_check.c compares them with NVIDIA's headers where those exist.
 */
#ifndef __SPECSIM_CUPTI_ABI_H
#define __SPECSIM_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

#define CUPTI_ABI_VERSION 130001
/* activity records are 8-byte aligned; most are also packed */
#define CUPTI_REC_ALIGN 8
#define CUPTI_PACKED __attribute__((packed, aligned(CUPTI_REC_ALIGN)))

enum cupti_result {
	CUPTI_OK = 0,
	CUPTI_E_INVALID_PARAMETER = 1,
	CUPTI_E_INVALID_OPERATION = 7,
	CUPTI_E_MAX_LIMIT_REACHED = 12,
	CUPTI_E_NOT_COMPATIBLE = 14,
	CUPTI_E_NOT_INITIALIZED = 15,
	CUPTI_E_INVALID_KIND = 21,
	CUPTI_E_NOT_SUPPORTED = 27,
	CUPTI_E_MULTIPLE_SUBSCRIBERS = 39,
	CUPTI_E_UNKNOWN = 999,
};

enum cupti_kind {
	CUPTI_KIND_INVALID = 0,
	CUPTI_KIND_MEMCPY = 1,
	CUPTI_KIND_MEMSET = 2,
	CUPTI_KIND_KERNEL = 3,
	CUPTI_KIND_CONCURRENT_KERNEL = 10,
	CUPTI_KIND_OVERHEAD = 17,
	CUPTI_KIND_GRAPH_TRACE = 51,
};

enum cupti_memcpy_kind {
	CUPTI_MEMCPY_HTOD = 1,
	CUPTI_MEMCPY_DTOH = 2,
	CUPTI_MEMCPY_DTOD = 8,
	CUPTI_MEMCPY_HTOH = 9,
};

enum cupti_memory_kind {
	CUPTI_MEMORY_PAGEABLE = 1,
	CUPTI_MEMORY_PINNED = 2,
	CUPTI_MEMORY_DEVICE = 3,
};

enum cupti_overhead_kind {
	CUPTI_OVERHEAD_BUFFER_FLUSH = 1 << 16,
};

enum cupti_object_kind {
	CUPTI_OBJECT_THREAD = 2,
};

enum cupti_channel_type {
	CUPTI_CHANNEL_COMPUTE = 1,
	CUPTI_CHANNEL_ASYNC_MEMCPY = 2,
};

/* cuptiActivityFlushAll's flag */
#define CUPTI_FLUSH_FORCED 1u

struct CUPTI_PACKED cupti_record {
	enum cupti_kind kind;
};

/* CUpti_ActivityKernel10 */
struct CUPTI_PACKED cupti_kernel10 {
	enum cupti_kind kind;
	uint8_t cache_config;
	uint8_t shared_memory_config;
	uint16_t registers_per_thread;
	int32_t partitioned_cache_requested, partitioned_cache_executed;
	uint64_t start, end, completed;
	uint32_t device_id, context_id, stream_id;
	int32_t grid_x, grid_y, grid_z, block_x, block_y, block_z;
	int32_t static_shared_memory, dynamic_shared_memory;
	uint32_t local_memory_per_thread, local_memory_total;
	uint32_t correlation_id;
	int64_t grid_id;
	const char *name;
	void *reserved0;
	uint64_t queued, submitted;
	uint8_t launch_type, carveout_requested_set, carveout_requested, padding;
	uint32_t shared_memory_executed;
	uint64_t graph_node_id;
	int32_t shmem_limit_config;
	uint32_t graph_id;
	void *access_policy_window;
	uint32_t channel_id;
	int32_t channel_type;
	uint32_t cluster_x, cluster_y, cluster_z, cluster_scheduling_policy;
	uint64_t local_memory_total_v2;
	uint32_t max_potential_cluster_size, max_active_clusters;
	uint8_t is_device_launched;
	uint8_t padding3[7];
};

/* CUpti_ActivityGraphTrace2: naturally aligned, not packed */
struct cupti_graph_trace2 {
	enum cupti_kind kind;
	uint32_t correlation_id;
	uint64_t start, end;
	uint32_t device_id, graph_id, context_id, stream_id;
	void *reserved;
	uint32_t end_device_id, end_context_id;
};

/* CUpti_ActivityMemcpy6 */
struct CUPTI_PACKED cupti_memcpy6 {
	enum cupti_kind kind;
	uint8_t copy_kind, src_kind, dst_kind, flags;
	uint64_t bytes, start, end;
	uint32_t device_id, context_id, stream_id, correlation_id;
	uint32_t runtime_correlation_id;
	uint32_t pad;
	void *reserved0;
	uint64_t graph_node_id;
	uint32_t graph_id, channel_id;
	int32_t channel_type;
	uint8_t is_device_launched;
	uint8_t pad2[3];
	uint64_t copy_count;
};

/* CUpti_ActivityMemset4 */
struct CUPTI_PACKED cupti_memset4 {
	enum cupti_kind kind;
	uint32_t value;
	uint64_t bytes, start, end;
	uint32_t device_id, context_id, stream_id, correlation_id;
	uint16_t flags, memory_kind;
	uint32_t pad;
	void *reserved0;
	uint64_t graph_node_id;
	uint32_t graph_id, channel_id;
	int32_t channel_type;
	uint8_t is_device_launched;
	uint8_t pad2[3];
};

/* CUpti_ActivityObjectKindId */
union cupti_object_id {
	struct {
		uint32_t process_id, thread_id;
	} pt;
	struct {
		uint32_t device_id, context_id, stream_id;
	} dcs;
};

/* CUpti_ActivityOverhead3 */
struct CUPTI_PACKED cupti_overhead3 {
	enum cupti_kind kind;
	enum cupti_overhead_kind overhead_kind;
	enum cupti_object_kind object_kind;
	union cupti_object_id object_id;
	uint64_t start, end;
	uint32_t correlation_id, reserved0;
	void *overhead_data;
};

_Static_assert(sizeof(struct cupti_kernel10) == 216, "CUpti_ActivityKernel10 is 216 bytes");
_Static_assert(sizeof(struct cupti_graph_trace2) == 56, "CUpti_ActivityGraphTrace2 is 56 bytes");
_Static_assert(sizeof(struct cupti_memcpy6) == 96, "CUpti_ActivityMemcpy6 is 96 bytes");
_Static_assert(sizeof(struct cupti_memset4) == 88, "CUpti_ActivityMemset4 is 88 bytes");
_Static_assert(sizeof(struct cupti_overhead3) == 56, "CUpti_ActivityOverhead3 is 56 bytes");

/* the callbacks a client registers; the context is a CUcontext */
typedef void (*cupti_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*cupti_complete_fn)(void *ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
				  size_t valid_size);
typedef uint64_t (*cupti_timestamp_fn)(void);
typedef void (*cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *data);
typedef struct cupti_subscriber *cupti_subscriber_t;

#endif /* __SPECSIM_CUPTI_ABI_H */
