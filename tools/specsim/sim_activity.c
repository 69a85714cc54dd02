// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a profiling library sees of the simulated GPU: each executed work item
 * handed to an observer (the libcupti look-alike) when it ends, and the
 * injection of an agent named by CUDA_INJECTION64_PATH at the first cuInit.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sim.h"

/* CUPTI's CUpti_ActivityMemcpyKind values */
enum { COPY_HTOD = 1, COPY_DTOH = 2, COPY_DTOD = 8, COPY_HTOH = 9 };

static __thread int my_tid;

static int sim_tid(void)
{
	if (!my_tid)
		my_tid = (int)syscall(SYS_gettid);
	return my_tid;
}

static int copy_kind(const struct sim_node *n)
{
	bool dst_dev = sim_is_device((uintptr_t)n->dst);
	bool src_dev = !n->owns_src && sim_is_device((uintptr_t)n->src);

	if (dst_dev)
		return src_dev ? COPY_DTOD : COPY_HTOD;
	return src_dev ? COPY_DTOH : COPY_HTOH;
}

/* Before the device lock: the memory map has its own. */
void sim_activity_classify(struct sim_item *it)
{
	if (it->node.kind == NODE_COPY)
		it->copy_kind = copy_kind(&it->node);
}

/* Who queued the item and its correlation id; the work a launch makes gets one. */
void sim_activity_tag_locked(struct sim_item *it)
{
	struct specsim_ctx *ctx = sim_current_ctx();
	enum sim_node_kind k = it->node.kind;

	it->tid = sim_tid();
	it->device = ctx ? ctx->device : 0;
	if (it->exec || k == NODE_KERNEL || k == NODE_COPY || k == NODE_MEMSET)
		it->corr = ++sim_dev.next_corr;
}

static unsigned long long item_bytes(const struct sim_item *it)
{
	const struct sim_node *n = &it->node;

	if (it->exec)
		return 0;
	if (n->kind == NODE_MEMSET)
		return (unsigned long long)n->bytes * n->elem * (n->rows ? n->rows : 1);
	return n->kind == NODE_COPY ? n->bytes : 0;
}

static enum specsim_activity_kind item_kind(const struct sim_item *it)
{
	if (it->exec)
		return SPECSIM_ACT_GRAPH;
	switch (it->node.kind) {
	case NODE_KERNEL:
		return SPECSIM_ACT_KERNEL;
	case NODE_COPY:
		return SPECSIM_ACT_COPY;
	case NODE_MEMSET:
		return SPECSIM_ACT_MEMSET;
	default:
		return 0;
	}
}

void sim_activity_fill_span(struct specsim_gpu_span *span, const struct specsim_stream *s,
			    const struct sim_item *it)
{
	span->queued_ns = it->enq_ns;
	span->tid = it->tid;
	span->stream_id = sim_stream_activity_id(s);
	span->correlation_id = it->corr;
	span->graph_id = it->exec ? it->exec->graph_id : 0;
	span->copy_kind = it->node.kind == NODE_COPY && !it->exec ? it->copy_kind : 0;
	span->bytes = item_bytes(it);
}

static void emit_nodes(specsim_activity_fn fn, unsigned int kinds,
		       const struct specsim_stream *s, const struct sim_item *it);

/* On the worker, without the device lock, before the item counts as done. */
void sim_activity_emit(const struct specsim_stream *s, const struct sim_item *it)
{
	specsim_activity_fn fn = __atomic_load_n(&sim_dev.observe, __ATOMIC_ACQUIRE);
	unsigned int kinds = __atomic_load_n(&sim_dev.observe_kinds, __ATOMIC_ACQUIRE);
	enum specsim_activity_kind kind = item_kind(it);
	struct specsim_activity act;

	if (fn && kind == SPECSIM_ACT_GRAPH && !(kinds & kind)) {
		emit_nodes(fn, kinds, s, it);
		return;
	}
	if (!fn || !(kinds & kind))
		return;
	act = (struct specsim_activity){
		.kind = kind,
		.name = kind == SPECSIM_ACT_KERNEL && it->node.func ? it->node.func->name : NULL,
		.stream_id = sim_stream_activity_id(s),
		.context_id = it->device + 1,
		.device_id = it->device,
		.correlation_id = it->corr,
		.graph_id = it->exec ? it->exec->graph_id : 0,
		.copy_kind = kind == SPECSIM_ACT_COPY ? it->copy_kind : 0,
		.bytes = item_bytes(it),
		.start_ns = it->start_ns,
		.end_ns = it->end_ns,
	};
	fn(&act);
}

/*
 * As libcupti 13 does (an H100, driver 580): graph-level records turned on after
 * a graph was instantiated crash the process at that graph's next launch, a read
 * of address 0x20 on the launching thread (tools/gpu/cupti_bisect.py found it).
 */
void sim_activity_check_exec(const struct specsim_exec *x)
{
	unsigned int kinds = __atomic_load_n(&sim_dev.observe_kinds, __ATOMIC_ACQUIRE);

	if (!(kinds & SPECSIM_ACT_GRAPH) || x->graph_traced)
		return;
	fprintf(stderr, "specsim: graph %u launched with graph-level activity turned on after "
			"its instantiation: crashing as libcupti does\n", x->graph_id);
	raise(SIGSEGV);
}

/*
 * Kernel-level activity without graph-level: a graph's launch is seen node by
 * node (as CUPTI does, for graphs made before the kinds came on too), each with
 * the graph's id and the launch's correlation id, the launch's time shared out.
 */
static void emit_nodes(specsim_activity_fn fn, unsigned int kinds,
		       const struct specsim_stream *s, const struct sim_item *it)
{
	const struct specsim_exec *x = it->exec;
	size_t n = x->nr_nodes ? x->nr_nodes : 1;
	unsigned long long step = (it->end_ns - it->start_ns) / n;

	for (size_t i = 0; i < x->nr_nodes; i++) {
		const struct sim_node *node = &x->nodes[i];
		enum specsim_activity_kind kind = node->kind == NODE_KERNEL ? SPECSIM_ACT_KERNEL
						  : node->kind == NODE_MEMSET ? SPECSIM_ACT_MEMSET
									      : 0;
		struct specsim_activity act;

		if (!(kinds & kind))
			continue;
		act = (struct specsim_activity){
			.kind = kind,
			.name = kind == SPECSIM_ACT_KERNEL && node->func ? node->func->name : NULL,
			.stream_id = sim_stream_activity_id(s),
			.context_id = it->device + 1,
			.device_id = it->device,
			.correlation_id = it->corr,
			.graph_id = x->graph_id,
			.bytes = kind == SPECSIM_ACT_MEMSET ? (unsigned long long)node->bytes *
								      node->elem : 0,
			.start_ns = it->start_ns + i * step,
			.end_ns = i + 1 == x->nr_nodes ? it->end_ns : it->start_ns + (i + 1) * step,
		};
		fn(&act);
	}
}

/* kinds 0 or fn NULL stops it; an item already running may still be handed over */
SIM_EXPORT void specsimActivityObserve(specsim_activity_fn fn, unsigned int kinds)
{
	__atomic_store_n(&sim_dev.observe_kinds, fn ? kinds : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&sim_dev.observe, fn, __ATOMIC_RELEASE);
}

/*
 * As the driver does: the library named by CUDA_INJECTION64_PATH is loaded once
 * and its InitializeInjection called; any failure is passed over silently. A flag
 * rather than pthread_once, so an agent that calls cuInit again does not hang.
 */
void sim_inject(void)
{
	static int done;
	const char *path = getenv("CUDA_INJECTION64_PATH");
	int (*init)(void);
	void *lib;

	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL) || !path || !*path)
		return;
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return;
	*(void **)&init = dlsym(lib, "InitializeInjection");
	if (init)
		init();
}
