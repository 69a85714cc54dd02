/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The GPU timeline (--gpu, docs/gpu-timeline.md): the activity agent's
 * executions, each matched to the call that launched it by process, stream
 * and order, and what the agents said of themselves.
 */
#ifndef __GPUTIME_H
#define __GPUTIME_H
#include <stdbool.h>
#include <stddef.h>
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
	/*
	 * The matching's side: launching calls given up since the last one
	 * matched, while the agent had been on. Many mean CUPTI's records stopped
	 * coming: another client (torch.profiler, Nsight) took its activity
	 * buffers after the agent started (gpu_agent__stopped).
	 */
	bool was_on;
	__u64 unmatched_after;
};

/* Calls given up in a row, the agent on, that tell records stopped rather than a few lost. */
#define GPU_STOPPED_CALLS 64

static inline bool gpu_agent__stopped(const struct gpu_agent *a)
{
	/* drops explain missing records by themselves */
	return a->was_on && a->unmatched_after >= GPU_STOPPED_CALLS && !a->cupti_dropped &&
	       !a->ring_dropped;
}

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

/*
 * The matcher: executions (SP_REC_GPU) held until their process's agent said
 * they were all handed over, then placed on the calls that launched them
 * (docs/gpu-timeline.md, "Matching executions to calls"); the timeline each
 * process's executions make, for the analyses.
 */
struct gputime;

/* What a launching call asks of an execution: its kind and key. */
struct gpu_call {
	__u64 ts;			/* entry */
	__u32 tgid, tid;
	__u64 stream;			/* stream key: legacy 0 and 0x1 are one (1) */
	__u64 exec;			/* graph launches: the CUgraphExec handle */
	__u64 bytes;			/* copies, memsets: 0 when unknown (any size) */
	__u8 kind;			/* enum sp_gpu_kind */
	__u8 copy_kind;			/* copies: CUPTI's memcpy kind, 0 when unknown */
};

typedef int (*gpu_exec_fn)(void *ctx, const struct gpu_exec *e);

struct gputime *gputime__new(void);
void gputime__free(struct gputime *g);
/* SP_REC_GPU, _NAME, _STATE: 1 when rec was one (taken), 0 for other records, -ENOMEM. */
int gputime__record(struct gputime *g, const void *rec, size_t size);
/* A call that puts work on the GPU, made outside capture, in entry order; 0 or -ENOMEM. */
int gputime__call(struct gputime *g, const struct gpu_call *c);
/* The model's loop event ev of call c (in tgid): a gputime__call when it makes GPU work. */
struct loop_event;
struct sp_call;
int gputime__model_call(struct gputime *g, __u32 tgid, const struct loop_event *ev,
			const struct sp_call *c);
/*
 * Match what can be matched now: the calls handed on reach last_ts; final:
 * no more records come. Each execution settled goes to fn. 0 or fn's error.
 */
int gputime__advance(struct gputime *g, __u64 last_ts, bool final, gpu_exec_fn fn, void *ctx);
/*
 * Before it, every execution that can come has come: the lowest watermark of
 * the agents still on, at most last_ts; ~0 when no GPU record came.
 */
__u64 gputime__horizon(const struct gputime *g, __u64 last_ts);
/* Windowed: forget executions and timeline older than before_ns. */
void gputime__forget(struct gputime *g, __u64 before_ns);
/* The execution matched to the call of tid entered at ts; false when none. */
bool gputime__exec_of(const struct gputime *g, __u32 tgid, __u32 tid, __u64 ts,
		      __u64 *start_ns, __u64 *end_ns);
/* Of [from, to), the time some execution of tgid ran. */
__u64 gputime__busy(const struct gputime *g, __u32 tgid, __u64 from, __u64 to);
/* The idle gap of tgid's timeline that holds ts (0: busy then); false when not known. */
bool gputime__gap_at(const struct gputime *g, __u32 tgid, __u64 ts, __u64 *gap_ns);
/* The union of n intervals (start, end pairs, sorted here in place). */
__u64 gputime__union(__u64 (*iv)[2], size_t n);
const struct gpu_stats *gputime__stats(const struct gputime *g);
#endif /* __GPUTIME_H */
