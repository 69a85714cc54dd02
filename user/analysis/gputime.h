/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The GPU timeline (--gpu, docs/gpu-timeline.md): the activity agent's
 * executions, each matched to the call that launched it by process, stream
 * and order, and what the agents said of themselves.
 */
#ifndef __GPUTIME_H
#define __GPUTIME_H
#include <stdbool.h>
#include <linux/types.h>
#include "specprobe.h"

/* One execution on the GPU, as the pipeline hands it on. */
struct gpu_exec {
	__u64 start_ns, end_ns;		/* CLOCK_MONOTONIC, the uprobes' clock */
	__u32 tgid;
	__u8 kind;			/* enum sp_gpu_kind */
	__u8 copy_kind;			/* CUPTI's memcpy kind, for copies */
	__u64 bytes;			/* copies and memsets */
	__u64 stream_id;		/* CUPTI's stream id */
	__u32 device;
	__u32 graph;			/* CUPTI graph id, for graph executions */
	const char *name;		/* kernel name, NULL when none came */
	/* the launching call; call_ts 0: unmatched */
	__u64 call_ts;			/* its entry time */
	__u32 call_tid;
	__u64 stream;			/* the CUstream handle it was launched on */
	__u64 exec;			/* graph executions: the CUgraphExec handle */
};

/* One agent (one traced process), as its latest SP_REC_GPU_STATE said. */
struct gpu_agent {
	__u32 tgid;
	__u32 status;			/* enum sp_gpu_status */
	__u32 cupti_version;
	char detail[SP_GPU_DETAIL];
	__u64 flushed_ns;
	__u64 records, cupti_dropped, ring_dropped, overhead_ns;
};

/* What the matching did, over the whole input. */
struct gpu_stats {
	__u64 records;			/* SP_REC_GPU seen */
	__u64 matched;
	__u64 unmatched_records;	/* executions no call could be placed for */
	__u64 unmatched_calls;		/* launching calls left without an execution */
	__u64 cycles_unmatched;		/* cycles whose GPU figures are left out */
	__u32 nr_agents;
	const struct gpu_agent *agents;
};
#endif /* __GPUTIME_H */
