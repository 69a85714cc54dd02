/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The model: processes, threads, devices, streams, events, graphs and kernel
 * names, built from decoded calls in entry order plus the fork, exit and
 * counter records. A live session and a recording feed it the same way, so
 * every analysis sees the same state whichever way the data came.
 */
#ifndef __MODEL_H
#define __MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "decode.h"
#include "hostmem.h"
#include "sample.h"
#include "tracefile.h"

/* What a thread did that shapes its decode loop, in entry order. */
enum loop_kind {
	LOOP_GRAPH,		/* cuGraphLaunch outside capture: handle = exec id */
	LOOP_KERNEL,		/* eager launch outside capture: handle = function */
	LOOP_COLLECTIVE,	/* eager NCCL collective */
	LOOP_SYNC,		/* context, stream or event sync, or a free that drains */
	LOOP_COPY,		/* copy or memset outside capture */
	LOOP_RECORD,		/* cuEventRecord outside capture: handle = event */
};

enum loop_flags {
	LOOP_BLOCKING = 1 << 0,		/* the host waited for the device: a sync */
	LOOP_D2H = 1 << 1,		/* copy into host memory */
	LOOP_UNRETURNED = 1 << 2,	/* its return never came */
	LOOP_CTX_WIDE = 1 << 3,		/* waits for every stream (context sync, drain) */
	/*
	 * LOOP_GRAPH of an eager forward: the first launch of a burst (eager
	 * launches with no sync, copy to or from the host or record between;
	 * beside graphs, see model_eager.c); handle: the burst's exec
	 * (model_exec.eager), serial: the events up to its last launch, copies
	 * on the device between included, this one too
	 */
	LOOP_EAGER = 1 << 4,
	/* a later launch of such a burst; serial: how many events back its first one is */
	LOOP_IN_BURST = 1 << 5,
	/* a copy or memset on the device alone: it runs inside a forward (a workspace cleared) */
	LOOP_ON_DEVICE = 1 << 6,
};

/* What makes a call wait for the device, or others wait for it (DESIGN.md, "Analyses"). */
enum sync_kind {
	SYNC_CTX,		/* cuCtxSynchronize */
	SYNC_STREAM,		/* cuStreamSynchronize */
	SYNC_EVENT,		/* cuEventSynchronize */
	SYNC_COPY,		/* synchronous copy or memset */
	SYNC_PAGEABLE,		/* "async" copy from or to host memory known not to be pinned */
	SYNC_UNKNOWN_HOST,	/* async copy, host memory of unknown kind (made before attach) */
	SYNC_FREE,		/* cuMemFree: drains the device */
	SYNC_ALLOC,		/* cuMemAlloc: may synchronise */
	SYNC_LEGACY,		/* work on the legacy stream: serialises with blocking streams */
	SYNC_POLL,		/* a spin of queries on one stream or event until it is ready */
	SYNC_CAPTURE,		/* a sync or query that failed because a capture was open */
	SYNC_KIND_NR,
};

enum sync_flags {
	SYNC_UNRETURNED = 1 << 0,	/* its return never came */
	SYNC_FAILED = 1 << 1,		/* returned an error */
	SYNC_LAUNCH_DURING = 1 << 2,	/* a launch of its process entered while it blocked */
	SYNC_DRAINS_DEVICE = 1 << 3,	/* after it, no work was known in flight on the device */
	SYNC_WAIT_UNKNOWN = 1 << 4,	/* what it waits for was queued before attach */
	SYNC_FLAGS_UNKNOWN = 1 << 5,	/* legacy: behind a stream whose flags were set before attach */
	SYNC_HELD_BACK = 1 << 6,	/* legacy: work of a blocking stream held back by legacy work */
	SYNC_SITE_TAKEN = 1 << 7,	/* its entry took the call site, between its two timestamps */
};

/* Work queued and not known to be done: graph launches, kernels (and collectives), copies. */
struct work_count {
	__u32 graphs, kernels, copies;
};

/* A blocking or implicitly synchronising call, with the device state at its entry. */
struct model_sync {
	__u64 ts;		/* entry; poll: entry of the first query */
	__u64 ts_return;	/* return; poll: return of the query that found it ready */
	__u64 handle;		/* stream or event waited on, 0 */
	__u64 next_launch_ns;	/* entry of its process's next launch after the return, 0 */
	__u32 tgid, tid;
	__u32 event_index;	/* in its thread's loop events: it is, or lies before, this one */
	__u32 queries;		/* poll: calls in the spin */
	struct work_count waited;	/* in flight on what it waits for */
	struct work_count other;	/* in flight on the other streams of its process */
	__u64 waited_on;	/* stream holding most of the waited work (legacy: the other one), 0 */
	__u32 waited_streams;	/* streams with waited work */
	__u32 waited_most;	/* work in flight on waited_on */
	__s32 result;
	__u16 name;		/* catalogue index (poll: the query) */
	__u8 kind;		/* enum sync_kind */
	__u8 flags;		/* enum sync_flags */
	__u8 host, host_from;	/* copies: enum host_kind, enum host_from of the host pointer */
	__u32 stack;		/* its call's stack in view.stacks, 0: none (poll: first query) */
	__u64 seq;		/* 0, 1, ... in the order the model took syncs, over the run */
};

/* CPU time a process used, from its first and last sample. */
struct cpu_span {
	__u64 first_ts, first_ns, last_ts, last_ns;
	__u32 samples;
};

struct loop_event {
	__u64 ts;		/* entry */
	__u64 ts_return;	/* return; entry-only kinds return at once: == ts */
	__u64 handle;		/* exec id, function, event or stream waited on */
	__u64 stream;		/* stream the work went to, 0 if none */
	__u32 serial;		/* record: its serial; event sync: the record it waits on, 0 */
	__u16 name;		/* catalogue index */
	__u8 kind;		/* enum loop_kind */
	__u8 flags;		/* enum loop_flags */
};

enum graph_role {
	ROLE_UNKNOWN,
	ROLE_DRAFT,
	ROLE_VERIFY,
	ROLE_EXTEND,
	ROLE_NR,
};

/* How an exec's role was decided. */
enum role_source {
	ROLE_FROM_NONE,
	ROLE_FROM_KERNELS,	/* verify: the launched graph with the most captured kernels */
	ROLE_FROM_WAIT,		/* verify, uncaptured: its following sync waits longest */
	ROLE_FROM_PIECES,	/* verify: a piece launched next to it in capture order */
	ROLE_FROM_POSITION,	/* draft or extend: where it is launched in the cycle */
	ROLE_FROM_FAMILY,	/* not launched: same kernels as a graph whose role is known */
	ROLE_FROM_EAGER,	/* eager verify: the forward of most launches, never a repeated step */
	ROLE_FROM_EAGER_STEPS,	/* eager verify: as many launches as the draft's, which repeats */
	ROLE_FROM_EAGER_GRAPHS,	/* eager verify beside graphs: larger than all, hands the result */
	ROLE_FROM_EAGER_SITES,	/* eager verify: its syncs' call site, not the draft steps' */
	ROLE_FROM_FRAMES,	/* eager: the Python frames of the syncs around its bursts */
	ROLE_FROM_LAUNCH_FRAMES,	/* eager: the Python frames of its first launches */
	ROLE_FROM_NR,
};

struct model_kernel {
	__u64 func;		/* function (or kernel) handle launched */
	__u32 count;
	__u32 side;		/* of count, launched on a side stream */
};

struct model_collective {
	__u16 name;		/* catalogue index */
	__u32 count;
	__u64 bytes;
};

/* The work one stream capture recorded: the content of a CUgraph. */
struct model_capture {
	__u32 tgid;
	__u32 order;		/* 1, 2, ... in capture order within the process */
	__u32 tid;		/* capturing thread */
	__u64 stream;		/* origin stream */
	__u64 graph;		/* CUgraph, 0 until the capture ends */
	__u64 begin_ns, end_ns;
	bool ended;
	bool failed;		/* end returned an error: no graph */
	struct model_kernel *kernels;
	__u32 nr_kernels, cap_kernels;
	struct model_collective *colls;
	__u32 nr_colls, cap_colls;
	__u64 *side_streams;	/* streams pulled into the capture through events */
	__u32 nr_side, cap_side;
	__u32 kernel_count, side_kernel_count;
	__u32 copies, host_funcs, child_graphs;
};

/* Distinct launch stacks an exec keeps */
#define EXEC_STACKS 4

struct model_exec {
	__u32 id;		/* index in model_view.execs */
	__u32 tgid;
	__u64 handle;		/* CUgraphExec */
	__u64 graph;		/* CUgraph it was instantiated from, 0 if unknown */
	const struct model_capture *capture;	/* NULL: captured before attach or elsewhere */
	bool instantiated;	/* its instantiate call was seen */
	bool destroyed;
	__u64 created_ns;	/* instantiate return, or first launch when uncaptured */
	__u64 launches;
	__u32 launch_tid;	/* first thread that launched it */
	enum graph_role role;
	enum role_source role_from;
	/*
	 * An eager forward: no CUDA graph, the bursts of eager launches with this
	 * sequence of functions and the grid/block sizes of the first and last
	 * (handle: their hash, top bit set)
	 */
	bool eager;
	__u32 eager_kernels;	/* launches in one burst */
	__u64 eager_funcs;	/* hash of the functions alone: one model at other sizes */
	__u64 eager_first;	/* function of its first launch */
	bool eager_layered;	/* a block of functions repeats, as a model's layers do */
	/*
	 * Stacks some of its launches were taken at (the default stacks take a
	 * graph's once a second, an eager forward's first launch now and then),
	 * most launches first; launches whose stack found no slot
	 */
	struct exec_stack {
		__u32 stack, launches;
	} launch_stacks[EXEC_STACKS];
	__u32 launch_stacks_lost;
};

/* How a process's rank was learned, most trusted first (NCCL init seen wins). */
enum rank_from {
	RANK_FROM_NONE,
	RANK_FROM_NCCL_INIT,	/* its ncclCommInitRank* call, traced */
	RANK_FROM_NCCL_COMM,	/* SP_REC_RANK, from here on: what the process showed at attach */
	RANK_FROM_ENVIRON,
	RANK_FROM_TITLE,
	RANK_FROM_DEVICE,
};

/* "nccl-init", "nccl-comm", "environ", "title", "device"; NULL for none. */
const char *rank_from__name(enum rank_from from);

struct model_proc {
	__u32 tgid;
	__u32 parent;		/* from a fork record, 0 if traced from the start */
	int rank, nranks;	/* -1 unknown */
	enum rank_from rank_from;	/* how rank was learned */
	char rank_what[SP_RANK_WHAT];	/* what the process showed: "" for NCCL init */
	int device;		/* from cuDevicePrimaryCtxRetain, -1 unknown */
	__u64 first_ns, last_ns;
	__u64 exit_ns;		/* 0: did not exit while traced */
	__u32 exit_status;	/* as wait() gives it, where exit_status_known */
	bool exit_status_known;
	__u64 calls;
	__u32 nr_threads, nr_streams, nr_events, nr_captures, nr_execs;
	__u64 work_calls;	/* calls other than setup, names and driver lookups */
	bool pinned_known;	/* every pinned allocation was seen: unknown memory is pageable */
	struct host_ranges host;
	/* probe hits, nested calls included: entry-only kinds, entry + completion kinds */
	__u64 hits_entry, hits_return;
	__u64 hits_stack;	/* of those, calls whose call site was taken */
	struct cpu_span cpu;	/* from SP_REC_CPU */
	__u32 *pending;		/* syncs waiting for the process's next launch (view.syncs index) */
	__u32 nr_pending, cap_pending;
};

/* Bursts a thread keeps that may be a forward run on from other launches (model_eager.c). */
#define LONE_BURSTS 4

struct model_thread {
	__u32 tid, tgid;
	__u32 index;		/* in model_view.threads */
	__u64 calls, first_ns, last_ns;
	/* run-queue wait from the attach mark to its first record: that much later than it ran */
	__u64 late_start_ns;
	__u64 attach_done_ns;	/* its process's attach mark (in a merge, its input's) */
	struct loop_event *events;
	size_t nr_events, cap_events;
	struct model_sync poll;	/* the spin of queries going on, if polling */
	bool polling;
	/*
	 * Windowed analyses: how an earlier window told the lead's role (enum
	 * lead_from; 0: none did), for windows that no longer see what told it.
	 */
	__u8 kept_lead_from;
	bool kept_lead_extends;
	/* eager bursts (LOOP_EAGER); beside graphs only those larger than all of them */
	bool graphs_seen;
	bool burst_seen;	/* a burst of it has ended */
	/* 1 + the forward its first burst made, which the attach may have cut; 0: none */
	__u32 cut_forward;
	/* heads (entry times) of its latest bursts that made a new forward, unsplit */
	__u64 lone_ts[LONE_BURSTS];
	__u32 graph_work_max;	/* most kernels a graph it launched runs; UINT32_MAX: unknown */
	/* beside graphs, a forward's head + 1 that must hand a result before the next launch */
	size_t pending_forward;
	__u64 flat_funcs;	/* functions of the last burst found not layered */
	__u64 burst_start_ts;	/* entry of the open burst's first launch */
	__u64 burst_stream;	/* the stream of its kernels */
	struct burst_launch *burst;	/* the open burst's launches */
	__u32 nr_burst, cap_burst;
	__u32 burst_events;	/* its events: launches, and copies on the device between */
	__u32 *eager_ids;	/* the eager execs it launched */
	__u32 nr_eager_ids, cap_eager_ids;
	size_t sample_slot;	/* --sample: the window (or gap) of its last loop event */
	bool burst_cut;		/* --sample: the open burst began before its window opened */
};

/* One launch of an open eager burst. */
struct burst_launch {
	__u64 func;
	__u64 dims;	/* hash of its grid and block */
	__u64 prefix;	/* the burst's function hash up to and with this launch */
	__u32 at;	/* its event, counted from the burst's first launch's */
	__u32 stack;	/* its call's stack, 0: none taken */
};

/* Everything the analyses read, in creation order. */
struct model_view {
	struct model_proc **procs;
	size_t nr_procs;
	struct model_thread **threads;
	size_t nr_threads;
	struct model_exec **execs;
	size_t nr_execs;
	struct model_capture **captures;
	size_t nr_captures;
	struct model_sync *syncs;	/* in entry order */
	size_t nr_syncs, cap_syncs;
	struct sp_calib_rec calib;	/* .calls 0: the recording has no calibration */
	/* from the header */
	char host[65], kernel[65];
	__u64 attach_start_ns, attach_done_ns;
	/* totals */
	__u64 calls, unreturned, dropped, failed_reads, first_ns, last_ns;
	/* calls not nested in another: launches (kernels, graphs, host functions,
	 * collectives), and copies and memsets */
	__u64 launches, copies;
	bool ended_cleanly;
	bool out_of_memory;	/* some state could not be kept: the report is partial */
	/* what the file holds of its recording (SP_REC_SEGMENT, _WINDOW, _CLOCK) */
	struct sp_segment_rec rotated;	/* the first segment read: .type 0 none */
	struct sp_window_rec window;	/* the last dump trigger: .type 0 none */
	__u32 merged_sources;		/* clock records of a merge */
	__u64 merged_gap_ns;		/* bound on any source's offset from the first's, measured */
	__u64 merged_ref_gap_ns;	/* the first source's clock-read gap */
	bool merged_gap_unknown;	/* some source's gap was not measured */
	__u32 merged_marks;		/* processes with their own input's attach mark */
	__u64 merged_attach_ns;		/* the longest of those inputs' attaches */
	const struct callstacks *stacks;	/* the decoder's, naming syncs' .stack; NULL */
	const struct gputime *gpu;	/* --gpu: the executions matched to calls; NULL: none came */
	struct sample_windows sample;	/* --sample: when launches were seen */
};

struct model;
struct gputime;

/* Keeps what it needs of hdr (the probe table), not hdr itself. NULL on no memory. */
struct model *model__new(const struct tf_header *hdr);
/* One call, in entry order; 0 or -ENOMEM. */
int model__call(struct model *m, const struct sp_call *call);
/* Fork, exit, counter and end records; other types are ignored. */
void model__record(struct model *m, const void *rec, size_t size);
/* End of input: the decoder's count of calls whose return never came. */
void model__finish(struct model *m, const struct decode_stats *st);
struct model_view *model__view(struct model *m);
/* Where a thread's kept events start (entry time); older ones may be forgotten. */
typedef __u64 (*model_keep_fn)(void *ctx, const struct model_thread *t);
/*
 * Windowed analyses: forget each thread's loop events older than keep_from
 * says, with the syncs among them; 0 or -ENOMEM (then nothing is forgotten).
 */
int model__forget(struct model *m, model_keep_fn keep_from, void *ctx);
/* Roles are decided again by the next cycles__analyse, from the events kept. */
void model__reset_roles(struct model *m);
/* The loop event call c (just given to model__call) added for work it queued, or NULL. */
const struct loop_event *model__work_event(const struct model *m, const struct sp_call *c);
/* Name of a function or kernel handle, NULL when its lookup was not seen. */
const char *model__func_name(const struct model *m, __u32 tgid, __u64 func);
/* Same kernels (function and count) and collectives: one model, another batch size. */
bool model__same_kernels(const struct model_capture *a, const struct model_capture *b);
/* Catalogue name of a loop event's call. */
const char *model__call_name(__u16 catalog_index);
/* "ctx", "stream", ...: the names of specsim's --plant kinds */
const char *model__sync_kind_name(enum sync_kind kind);
void model__free(struct model *m);

const char *model__role_name(enum graph_role role);
const char *model__role_source_name(enum role_source from);

#endif /* __MODEL_H */
