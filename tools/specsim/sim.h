/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the simulated driver: one device lock, a worker thread per stream that
 * runs queued work items for their durations, capture into graphs.
 */
#ifndef __SPECSIM_SIM_H
#define __SPECSIM_SIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "entry.h"
#include "specsim.h"

#define SIM_MAGIC_CTX 0x53435458u
#define SIM_MAGIC_STREAM 0x53535452u
#define SIM_MAGIC_EVENT 0x53455654u
#define SIM_MAGIC_GRAPH 0x53475248u
#define SIM_MAGIC_EXEC 0x53455843u
#define SIM_MAGIC_FUNC 0x5346554eu
#define SIM_MAGIC_KERNEL 0x534b524eu
#define SIM_MAGIC_MODULE 0x534d4f44u
#define SIM_MAGIC_LIBRARY 0x534c4942u

/* a real driver also stalls the host once this much work is queued */
#define SIM_QUEUE_MAX 1024
#define SIM_MAX_DEVICES 16

/* every exported driver entry point starts with this */
#define CHECK_INIT()                                      \
	do {                                              \
		SIM_FRAME();                              \
		if (!sim_dev.inited)                      \
			return CUDA_ERROR_NOT_INITIALIZED; \
	} while (0)

typedef unsigned long long u64;

struct specsim_ctx {
	uint32_t magic;
	int device;
};

struct specsim_func {
	uint32_t magic;
	char *name;
	long long dur_ns;
	specsim_run_fn run;
};

struct specsim_kernel {
	uint32_t magic;
	struct specsim_func func;	/* cuKernelGetFunction hands out &func */
	struct specsim_kernel *next;	/* in its image */
};

/* a module's functions are kernels too, so both kinds of image share the code */
struct sim_image {
	uint32_t magic;
	char *name;
	struct specsim_kernel *kernels;
};

struct specsim_module {
	struct sim_image img;
};

struct specsim_library {
	struct sim_image img;
};

enum sim_node_kind {
	NODE_KERNEL,
	NODE_HOST,
	NODE_COPY,
	NODE_MEMSET,
	NODE_FREE,
	NODE_WAIT,
};

/* One piece of GPU work, queued eagerly or kept in a graph. */
struct sim_node {
	enum sim_node_kind kind;
	long long dur_ns;
	struct specsim_func *func;
	void *arg;		/* hook argument / host fn data / freed pointer */
	CUhostFn host_fn;
	void *dst;
	const void *src;
	size_t bytes;
	unsigned int value;
	int elem;		/* memset element size */
	size_t pitch, rows;	/* 2D memset: rows of bytes elements, pitch apart */
	bool owns_src;		/* staged pageable source, freed after the copy */
};

struct sim_capture {
	u64 id;
	struct specsim_graph *graph;
	struct specsim_stream *origin;
	int mode;
	bool invalid, ended;
};

struct specsim_graph {
	uint32_t magic;
	struct sim_node *nodes;
	size_t nr_nodes, cap_nodes;
};

struct specsim_exec {
	uint32_t magic;
	struct sim_node *nodes;
	size_t nr_nodes;
	unsigned int refs;	/* the handle plus queued launches */
	unsigned int graph_id;	/* activity id, from instantiate */
	bool destroyed;
	bool graph_traced;	/* graph-level activity was on when it was instantiated */
};

struct sim_dep {
	struct specsim_stream *stream;
	u64 seq;
};

struct sim_item {
	struct sim_item *next;
	u64 seq;
	u64 enq_ns;
	u64 start_ns, end_ns;		/* set by the worker */
	unsigned int corr;		/* activity correlation id, 0 for none */
	int tid, device;		/* who queued it, on which device */
	int copy_kind;			/* CUPTI's memcpy kind of a copy */
	struct sim_node node;
	struct specsim_exec *exec;	/* a graph launch runs these nodes */
	struct sim_node *exec_nodes;	/* snapshot: an update never races a replay */
	size_t nr_exec_nodes;
	struct sim_dep *deps;
	int nr_deps;
};

struct sim_span_log {
	struct specsim_gpu_span *spans;
	size_t len, cap;
};

struct specsim_stream {
	uint32_t magic;
	unsigned int flags;
	int priority;
	int index;
	bool legacy, destroyed, quit, idle;
	struct specsim_ctx *ctx;
	pthread_t thread;
	pthread_cond_t wake;		/* work arrived for the worker */
	pthread_cond_t done;		/* done_seq reached wake_at */
	int done_waiters;
	u64 wake_at;			/* smallest seq a waiter waits for */
	struct sim_item *head, *tail;
	unsigned int pending;
	u64 enq_seq, done_seq;		/* under dev.lock */
	u64 last_end_ns;		/* worker only */
	struct sim_capture *cap;
	struct sim_span_log log;
	struct specsim_stream *next;
};

struct specsim_event {
	uint32_t magic;
	unsigned int flags;
	struct specsim_stream *stream;	/* where it was last recorded */
	u64 seq;
	struct sim_capture *cap;	/* recorded into a capture */
};

struct sim_copy_model {
	long long latency_ns, staged_latency_ns;
	long long pinned_gbps, pageable_gbps, device_gbps;
};

struct sim_dev {
	pthread_mutex_t lock;
	bool inited;
	bool log_on;
	int nr_devices;
	int nr_streams;
	long long default_kernel_ns;
	u64 next_capture_id;
	unsigned int next_corr, next_graph_id;
	specsim_activity_fn observe;	/* read by workers without the lock */
	unsigned int observe_kinds;
	struct specsim_stream *streams;
	struct specsim_stream *legacy;
	struct sim_copy_model copy;
};

extern struct sim_dev sim_dev;

/* sim_stream.c */
u64 sim_now_ns(void);
void sim_sleep_until(u64 deadline_ns);
int sim_init(void);
struct specsim_ctx *sim_current_ctx(void);
void sim_set_current_ctx(struct specsim_ctx *ctx);
struct specsim_stream *sim_stream_new(unsigned int flags, int priority, bool legacy);
struct specsim_stream *sim_stream_resolve(CUstream handle);
int sim_stream_submit(struct specsim_stream *s, const struct sim_node *node, u64 *seq);
int sim_stream_submit_exec(struct specsim_stream *s, struct specsim_exec *exec);
u64 sim_stream_mark_locked(struct specsim_stream *s);
int sim_stream_wait_dep_locked(struct specsim_stream *s, struct specsim_stream *on, u64 seq);
void sim_wait_locked(struct specsim_stream *s, u64 seq);
void sim_wait_seq(struct specsim_stream *s, u64 seq);
void sim_wait_stream(struct specsim_stream *s);
void sim_wait_ctx(struct specsim_ctx *ctx);
bool sim_stream_busy_locked(const struct specsim_stream *s);

/* *Async entry points run on hStream, the others on the legacy stream; NULL: bad handle */
static inline struct specsim_stream *sim_stream_for(CUstream hStream, bool async)
{
	return async ? sim_stream_resolve(hStream) : sim_dev.legacy;
}

/* sim_exec.c */
void sim_run_item(struct specsim_stream *s, struct sim_item *it, bool waited);
void sim_exec_put(struct specsim_exec *exec);
void sim_log_span_locked(struct specsim_stream *s, const struct sim_item *it);
long long sim_copy_ns(size_t bytes, long long gbps);

/* sim_activity.c */
static inline unsigned int sim_stream_activity_id(const struct specsim_stream *s)
{
	return s->legacy ? 7 : 12 + s->index;
}
void sim_activity_classify(struct sim_item *it);
void sim_activity_tag_locked(struct sim_item *it);
void sim_activity_fill_span(struct specsim_gpu_span *span, const struct specsim_stream *s,
			    const struct sim_item *it);
void sim_activity_emit(const struct specsim_stream *s, const struct sim_item *it);
/* At a graph's launch: crash where libcupti would (sim_activity.c). */
void sim_activity_check_exec(const struct specsim_exec *x);
void sim_inject(void);

/* sim_graph.c */
int sim_graph_append(struct specsim_graph *g, const struct sim_node *nodes, size_t n);
struct specsim_graph *sim_graph_new(void);
int sim_capture_begin(struct specsim_stream *s, struct specsim_graph *into, int mode);
int sim_capture_end(struct specsim_stream *s, struct specsim_graph **out);
void sim_capture_invalidate_locked(struct sim_capture *cap);
bool sim_any_capture_locked(struct specsim_ctx *ctx);
int sim_instantiate(CUgraphExec *out, struct specsim_graph *g);
int sim_exec_update(struct specsim_exec *x, struct specsim_graph *g);

/* sim_mem.c */
enum sim_host_kind { HOST_PAGEABLE, HOST_PINNED_ALLOC, HOST_REGISTERED };
enum sim_host_kind sim_host_kind(const void *p, size_t bytes);
bool sim_is_device(uintptr_t p);
bool sim_dev_ok(uintptr_t p, size_t bytes);
int sim_dev_alloc(CUdeviceptr *dptr, size_t bytes);
int sim_dev_forget(CUdeviceptr dptr);
int sim_host_add(void *p, size_t bytes, enum sim_host_kind kind);
int sim_host_remove(void *p, enum sim_host_kind kind, size_t *len);

/* cuda_mem.c */
CUresult sim_memset(CUstream hStream, bool async, CUdeviceptr dst, unsigned int value, int elem,
		    size_t count, size_t pitch, size_t rows);
CUresult sim_copy_d2d(struct specsim_stream *s, CUdeviceptr dst, CUdeviceptr src, size_t bytes);

/* sim_names.c */
struct specsim_func *sim_func_resolve(CUfunction f);

#endif /* __SPECSIM_SIM_H */
