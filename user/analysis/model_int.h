/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the model: its state and the functions its files share. Only the
 * model_*.c files include this; everyone else reads model.h.
 */
#ifndef __MODEL_INT_H
#define __MODEL_INT_H

#include <stdbool.h>
#include <linux/types.h>
#include "catalog.h"
#include "hmap.h"
#include "model.h"

enum op {
	OP_NONE,
	OP_LAUNCH,		/* func, stream in the arguments */
	OP_LAUNCH_EX,		/* func in the arguments, stream in CUlaunchConfig */
	OP_HOST_FUNC,
	OP_GRAPH_LAUNCH,
	OP_BEGIN_CAPTURE,
	OP_END_CAPTURE,
	OP_INSTANTIATE,
	OP_EXEC_UPDATE,
	OP_EXEC_DESTROY,
	OP_CTX_SYNC,
	OP_STREAM_SYNC,
	OP_EVENT_SYNC,
	OP_COPY,
	OP_HOST_ALLOC,		/* pinned: pointer out, bytes */
	OP_HOST_REGISTER,	/* pinned: pointer, bytes */
	OP_HOST_RELEASE,
	OP_MEM_FREE,		/* drains the device */
	OP_MEM_ALLOC,		/* may synchronise */
	OP_STREAM_QUERY,
	OP_EVENT_QUERY,
	OP_EVENT_RECORD,
	OP_WAIT_EVENT,
	OP_EVENT_CREATE,
	OP_NAMED,		/* name string in, handle out */
	OP_KERNEL_FUNC,		/* kernel in, function out: same name */
	OP_STREAM_CREATE,
	OP_CTX_RETAIN,
	OP_COLLECTIVE,
	OP_COMM_INIT,
};

#define NO_ARG (-1)

/* How to read one probe's calls, worked out once from the catalogue. */
struct probe_info {
	enum op op;
	__u16 catalog;
	bool blocking;		/* catalogue: the call waits (synchronous copies, syncs) */
	bool known;
	signed char stream, func, exec, graph, event, count, datatype, bytes, host, ptr, device,
		rank, nranks, flags;
	bool d2h;		/* the host pointer is the destination */
};

/* cuStreamCreate flag: the stream does not serialise with the legacy stream */
#define STREAM_NON_BLOCKING 0x1
/* CUresult values the classification reads */
#define CU_NOT_READY 600
#define CU_CAPTURE_UNSUPPORTED 900

struct model_stream {
	struct model_capture *capture;	/* capture it is part of, NULL if none */
	__u32 tgid;
	__u64 key;		/* stream_key() */
	bool non_blocking;
	bool flags_known;	/* created while traced, or a default stream */
	/* totals since attach: queued, and known to be done; the difference is in flight */
	struct work_count queued, drained;
	/* of its queued work, what later legacy-stream work is already ordered behind */
	struct work_count before_legacy;
	/* of the legacy stream's queued work, what its next work is already ordered behind */
	struct work_count legacy_before;
};

struct model_event {
	struct model_capture *captured_in;	/* recorded on a capturing stream */
	__u32 serial;				/* of its last record outside capture */
	struct model_stream *stream;		/* where it was last recorded, NULL: not seen */
	struct work_count at;			/* that stream's queued work at the record */
};

struct model {
	struct model_view view;
	struct probe_info *probes;
	__u32 nr_probes;
	struct hmap procs, threads, streams, events, names, graphs, execs, cpus;
	struct hmap runq;	/* tid: struct runq_pair, from SP_REC_RUNQ */
	struct hmap marks;	/* tgid: its input's attach mark in a merge (__u64), SP_REC_ATTACH */
	struct hmap hostmaps;	/* mappings of processes that made no call yet */
	struct hmap ranks;	/* SP_REC_RANK of processes that made no call yet */
	struct model_stream **all_streams;	/* for the device-wide views of in-flight work */
	size_t nr_all_streams;
	char **strings;		/* interned names, freed at the end */
	size_t nr_strings, cap_strings;
	__u32 record_serial;
	__u64 syncs_taken;	/* syncs the model took over the run, forgotten ones too */
};

/* Small helpers every part uses. */
/* Argument i of a call, false when it could not be read. */
static inline bool arg(const struct sp_call *c, int i, __u64 *val)
{
	if (i == NO_ARG || i >= SP_MAX_ARGS)
		return false;
	if (i >= SP_REG_ARGS && (c->entry.faults & (1 << SP_FAULT_STACK)))
		return false;
	*val = c->entry.args[i];
	return true;
}

static inline __u64 arg_or0(const struct sp_call *c, int i)
{
	__u64 v = 0;

	arg(c, i, &v);
	return v;
}

/* The value a call handed back through its output pointer, if it succeeded. */
static inline bool out_value(const struct sp_call *c, __u64 *val)
{
	if (!c->returned || (int)c->result != 0 || (c->ret_faults & (1 << SP_FAULT_OUT)))
		return false;
	*val = c->out;
	return true;
}

static inline bool succeeded(const struct sp_call *c)
{
	return c->returned && (int)c->result == 0;
}

/* CU_STREAM_PER_THREAD (0x2) names a different stream on every thread. */
static inline __u64 stream_key(const struct sp_call *c, __u64 stream)
{
	/* the NULL stream is the legacy stream (0x1), PyTorch's default: never "no stream" */
	if (stream == 0)
		return 1;
	return stream == 2 ? 2 | (__u64)c->entry.tid << 32 : stream;
}

/* 0 and CU_STREAM_LEGACY (0x1) name the one legacy stream. */
static inline bool is_legacy(__u64 stream)
{
	return stream == 0 || stream == 1;
}

enum work_what { WORK_GRAPH, WORK_KERNEL, WORK_COPY };

static inline __u32 sub_or0(__u32 a, __u32 b)
{
	return a > b ? a - b : 0;
}

/* Work of a that is not in b. */
static inline struct work_count work_sub(const struct work_count *a, const struct work_count *b)
{
	return (struct work_count){ sub_or0(a->graphs, b->graphs), sub_or0(a->kernels, b->kernels),
				    sub_or0(a->copies, b->copies) };
}

static inline void work_add(struct work_count *sum, const struct work_count *w)
{
	sum->graphs += w->graphs;
	sum->kernels += w->kernels;
	sum->copies += w->copies;
}

static inline bool work_any(const struct work_count *w)
{
	return w->graphs || w->kernels || w->copies;
}

static inline __u32 work_total(const struct work_count *w)
{
	return w->graphs + w->kernels + w->copies;
}

static inline struct work_count work_max(const struct work_count *a, const struct work_count *b)
{
	return (struct work_count){ a->graphs > b->graphs ? a->graphs : b->graphs,
				    a->kernels > b->kernels ? a->kernels : b->kernels,
				    a->copies > b->copies ? a->copies : b->copies };
}

/* Which streams of the process a call waits for. */
enum wait_scope {
	WAIT_NONE,	/* none by itself (an event's record is added apart) */
	WAIT_ONE,	/* one stream */
	WAIT_BLOCKING,	/* the legacy stream and every stream not created non-blocking */
	WAIT_DEVICE,	/* every stream */
};

/* model.c: a thread's run-queue wait from the attach mark to its first record (0: unknown) */
__u64 model__late_start(struct model *m, __u32 tid);
/* The attach mark of tgid's recording: its input's in a merge, else the header's. */
__u64 model__attach_mark(struct model *m, __u32 tgid);

/* model_store.c */
bool store__grow_array(void **array, __u32 *cap, __u32 need, size_t elem);
bool store__push_ptr(void ***array, size_t *len, void *p);
struct model_proc *store__proc_get(struct model *m, __u32 tgid);
struct model_thread *store__thread_get(struct model *m, struct model_proc *p, __u32 tid);
struct model_stream *store__stream_get(struct model *m, const struct sp_call *c, __u64 handle);
struct model_event *store__event_get(struct model *m, __u32 tgid, __u64 handle);
int store__named(struct model *m, const struct sp_call *c);
int store__kernel_func(struct model *m, const struct sp_call *c);
int store__stream_create(struct model *m, struct model_proc *p, const struct sp_call *c,
			 const struct probe_info *pi);

/* model_inflight.c */
struct model_stream *inflight__work_stream(struct model *m, const struct sp_call *c, __u64 stream);
void inflight__queue_work(struct model_stream *s, enum work_what what);
struct work_count inflight__in_flight_since(const struct model_stream *s,
					    const struct work_count *mark);
void inflight__drain_to(struct model_stream *s, const struct work_count *at);
void inflight__note_waited(struct model_sync *sy, const struct model_stream *s,
			   const struct work_count *w);
void inflight__split_in_flight(struct model *m, const struct model_stream *one,
			       enum wait_scope scope, struct model_sync *sy);
void inflight__drain_scope(struct model *m, __u32 tgid, const struct model_stream *one,
			   enum wait_scope scope);
void inflight__split_event(struct model *m, const struct model_event *e, struct model_sync *sy);
void inflight__sync_init(struct model_sync *sy, const struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi, enum sync_kind kind,
			 __u64 handle);
int inflight__sync_push(struct model *m, struct model_proc *p, struct model_sync *sy);
void inflight__launched(struct model *m, struct model_proc *p, const struct sp_call *c,
			__u64 stream, enum work_what what);

/* model_legacy.c */
int legacy__stream_order(struct model *m, struct model_proc *p, struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi, __u64 stream);

/* model_graphs.c */
struct model_capture *graphs__capturing(struct model *m, const struct sp_call *c, __u64 stream);
int graphs__loop_event(struct model *m, struct model_thread *t, const struct sp_call *c,
		       const struct probe_info *pi, enum loop_kind kind, __u64 handle,
		       __u64 stream, __u8 flags);
struct model_exec *graphs__exec_new(struct model *m, struct model_proc *p, __u64 handle);
/* One more launch of x taken at stack (0: none). */
void graphs__launch_stack(struct model_exec *x, __u32 stack);
/* model_eager.c: bursts of eager launches read as forwards (LOOP_EAGER) */
int eager__launch(struct model *m, struct model_thread *t, const struct sp_call *c,
		  const struct probe_info *pi, __u64 func, __u64 stream);
int eager__close(struct model *m, struct model_thread *t);
void eager__device_copy(struct model_thread *t);
void eager__after_forward(struct model *m, struct model_thread *t, enum loop_kind kind,
			  __u8 flags);
void eager__graph_seen(struct model *m, struct model_thread *t, __u64 exec_id);
void eager__window(struct model_thread *t, const struct sample_windows *s, __u64 ts,
		   enum loop_kind kind, __u8 flags);
int graphs__launch(struct model *m, struct model_proc *p, struct model_thread *t,
		   const struct sp_call *c, const struct probe_info *pi);
int graphs__host_func(struct model *m, struct model_proc *p, struct model_thread *t,
		      const struct sp_call *c, const struct probe_info *pi);
int graphs__begin_capture(struct model *m, struct model_proc *p, const struct sp_call *c,
			  const struct probe_info *pi);
int graphs__end_capture(struct model *m, const struct sp_call *c, const struct probe_info *pi);
int graphs__instantiate(struct model *m, struct model_proc *p, const struct sp_call *c,
			const struct probe_info *pi);
int graphs__exec_update(struct model *m, const struct sp_call *c, const struct probe_info *pi);
int graphs__graph_launch(struct model *m, struct model_proc *p, struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi);

/* model_waits.c */
int waits__copy(struct model *m, struct model_proc *p, struct model_thread *t,
		const struct sp_call *c, const struct probe_info *pi);
int waits__classify_wait(struct model *m, struct model_proc *p, struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi);
int waits__sync_call(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi);
int waits__event_record(struct model *m, struct model_thread *t, const struct sp_call *c,
			const struct probe_info *pi);
int waits__wait_event(struct model *m, const struct sp_call *c, const struct probe_info *pi);
int waits__host_memory(struct model_proc *p, const struct sp_call *c, const struct probe_info *pi);
bool waits__does_work(const struct probe_info *pi);
int waits__query(struct model *m, struct model_proc *p, struct model_thread *t,
		 const struct sp_call *c, const struct probe_info *pi);

/* model_nccl.c */
int nccl__collective(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi);
void nccl__comm_init(struct model_proc *p, const struct sp_call *c, const struct probe_info *pi);
/* A rank the process showed at attach (SP_REC_RANK); kept apart until its first call. */
void nccl__rank_record(struct model *m, const void *rec, size_t size);
/* A new process takes the rank its SP_REC_RANK gave, if any. */
void nccl__rank_adopt(struct model *m, struct model_proc *p);

#endif /* __MODEL_INT_H */
