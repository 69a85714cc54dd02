// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Launches, stream capture, graphs and their execs, and the loop events of a thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

/* The capture a stream is part of right now, NULL if none. */
struct model_capture *graphs__capturing(struct model *m, const struct sp_call *c, __u64 stream)
{
	struct model_stream *s = hmap__get(&m->streams, c->entry.tgid, stream_key(c, stream));

	if (!s || !s->capture || s->capture->ended)
		return NULL;
	return s->capture;
}

static int add_loop_event(struct model_thread *t, const struct loop_event *ev)
{
	if (t->nr_events == t->cap_events) {
		size_t cap = t->cap_events ? t->cap_events * 2 : 1024;
		struct loop_event *grown = realloc(t->events, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->events = grown;
		t->cap_events = cap;
	}
	t->events[t->nr_events++] = *ev;
	return 0;
}

int graphs__loop_event(struct model *m, struct model_thread *t, const struct sp_call *c,
		       const struct probe_info *pi, enum loop_kind kind, __u64 handle,
		       __u64 stream, __u8 flags)
{
	struct loop_event ev = {
		.ts = c->entry.ts, .handle = handle, .stream = stream,
		.name = pi->catalog, .kind = kind, .flags = flags,
	};

	if (!c->has_ret)
		ev.ts_return = c->entry.ts;
	else if (c->returned)
		ev.ts_return = c->ts_return;
	else
		ev.flags |= LOOP_UNRETURNED;
	eager__window(t, &m->view.sample, ev.ts, kind, flags);
	/* a call after a burst ends it first, then tells whether it handed its result */
	if (kind == LOOP_KERNEL || kind == LOOP_COLLECTIVE) {
		eager__after_forward(m, t, kind, flags);
		if (eager__launch(m, t, c, pi, handle, kind == LOOP_KERNEL ? stream : 0))
			return -ENOMEM;
	} else if (kind == LOOP_GRAPH) {
		eager__after_forward(m, t, kind, flags);
		eager__graph_seen(m, t, handle);
	} else if (kind == LOOP_COPY && (flags & LOOP_ON_DEVICE) && !(flags & LOOP_BLOCKING)) {
		eager__device_copy(t);
	} else if (eager__close(m, t)) {
		return -ENOMEM;
	} else {
		eager__after_forward(m, t, kind, flags);
	}
	return add_loop_event(t, &ev);
}

static int capture_add_kernel(struct model_capture *cap, __u64 func, bool side)
{
	struct model_kernel *k = NULL;

	for (__u32 i = 0; i < cap->nr_kernels; i++)
		if (cap->kernels[i].func == func)
			k = &cap->kernels[i];
	if (!k) {
		if (!store__grow_array((void **)&cap->kernels, &cap->cap_kernels,
				       cap->nr_kernels + 1, sizeof(*cap->kernels)))
			return -ENOMEM;
		k = &cap->kernels[cap->nr_kernels++];
		memset(k, 0, sizeof(*k));
		k->func = func;
	}
	k->count++;
	cap->kernel_count++;
	if (side) {
		k->side++;
		cap->side_kernel_count++;
	}
	return 0;
}

int graphs__launch(struct model *m, struct model_proc *p, struct model_thread *t,
		   const struct sp_call *c, const struct probe_info *pi)
{
	__u64 func = arg_or0(c, pi->func), stream = 0;
	struct model_capture *cap;

	if (pi->op == OP_LAUNCH_EX) {
		/* CUlaunchConfig.hStream sits at offset 32 */
		if (c->data_len < 40 || (c->entry.faults & (1 << SP_FAULT_DATA)))
			return 0;
		memcpy(&stream, c->data + 32, sizeof(stream));
	} else if (!arg(c, pi->stream, &stream)) {
		return 0;
	}
	/* a launch inside a collective belongs to it, not counted again */
	if (c->entry.depth)
		return 0;
	cap = graphs__capturing(m, c, stream);
	if (cap)
		return capture_add_kernel(cap, func, stream_key(c, stream) != cap->stream);
	inflight__launched(m, p, c, stream, WORK_KERNEL);
	if (legacy__stream_order(m, p, t, c, pi, stream))
		return -ENOMEM;
	return graphs__loop_event(m, t, c, pi, LOOP_KERNEL, func, stream_key(c, stream), 0);
}

int graphs__host_func(struct model *m, struct model_proc *p, struct model_thread *t,
		      const struct sp_call *c, const struct probe_info *pi)
{
	__u64 stream = arg_or0(c, pi->stream);
	struct model_capture *cap = graphs__capturing(m, c, stream);

	if (cap) {
		cap->host_funcs++;
		return 0;
	}
	inflight__launched(m, p, c, stream, WORK_KERNEL);
	if (legacy__stream_order(m, p, t, c, pi, stream))
		return -ENOMEM;
	return graphs__loop_event(m, t, c, pi, LOOP_KERNEL, arg_or0(c, 1), stream_key(c, stream), 0);
}

int graphs__begin_capture(struct model *m, struct model_proc *p, const struct sp_call *c,
			  const struct probe_info *pi)
{
	__u64 stream = arg_or0(c, pi->stream);
	struct model_stream *s = store__stream_get(m, c, stream);
	struct model_capture *cap = calloc(1, sizeof(*cap));

	if (!s || !cap ||
	    !store__push_ptr((void ***)&m->view.captures, &m->view.nr_captures, cap)) {
		free(cap);
		return -ENOMEM;
	}
	cap->tgid = p->tgid;
	cap->order = ++p->nr_captures;
	cap->tid = c->entry.tid;
	cap->stream = stream_key(c, stream);
	cap->begin_ns = c->entry.ts;
	/* cuStreamBeginCaptureToGraph names its graph up front */
	cap->graph = arg_or0(c, pi->graph);
	s->capture = cap;
	return 0;
}

int graphs__end_capture(struct model *m, const struct sp_call *c, const struct probe_info *pi)
{
	struct model_capture *cap = graphs__capturing(m, c, arg_or0(c, pi->stream));
	__u64 graph;

	if (!cap)
		return 0;
	cap->ended = true;
	cap->end_ns = c->returned ? c->ts_return : c->entry.ts;
	if (!out_value(c, &graph)) {
		cap->failed = true;
		return 0;
	}
	cap->graph = graph;
	return hmap__set(&m->graphs, c->entry.tgid, graph, cap);
}

struct model_exec *graphs__exec_new(struct model *m, struct model_proc *p, __u64 handle)
{
	struct model_exec *x = calloc(1, sizeof(*x));

	if (!x || hmap__set(&m->execs, p->tgid, handle, x) ||
	    !store__push_ptr((void ***)&m->view.execs, &m->view.nr_execs, x)) {
		free(x);
		return NULL;
	}
	x->id = m->view.nr_execs - 1;
	x->tgid = p->tgid;
	x->handle = handle;
	p->nr_execs++;
	return x;
}

int graphs__instantiate(struct model *m, struct model_proc *p, const struct sp_call *c,
			const struct probe_info *pi)
{
	__u64 handle, graph = arg_or0(c, pi->graph);
	struct model_exec *x;

	if (!out_value(c, &handle))
		return 0;
	x = graphs__exec_new(m, p, handle);
	if (!x)
		return -ENOMEM;
	x->graph = graph;
	x->capture = hmap__get(&m->graphs, p->tgid, graph);
	x->instantiated = true;
	x->created_ns = c->ts_return;
	return 0;
}

int graphs__exec_update(struct model *m, const struct sp_call *c, const struct probe_info *pi)
{
	struct model_exec *x = hmap__get(&m->execs, c->entry.tgid, arg_or0(c, pi->exec));
	__u64 graph = arg_or0(c, pi->graph);

	if (!x || x->destroyed || !succeeded(c))
		return 0;
	x->graph = graph;
	x->capture = hmap__get(&m->graphs, c->entry.tgid, graph);
	return 0;
}

void graphs__launch_stack(struct model_exec *x, __u32 stack)
{
	struct exec_stack *slot = NULL, held;

	if (!stack)
		return;
	for (int i = 0; i < EXEC_STACKS && !slot; i++)
		if (x->launch_stacks[i].stack == stack || !x->launch_stacks[i].stack)
			slot = &x->launch_stacks[i];
	if (!slot) {
		x->launch_stacks_lost++;
		return;
	}
	slot->stack = stack;
	slot->launches++;
	/* most launches first */
	for (; slot > x->launch_stacks && slot[-1].launches < slot->launches; slot--) {
		held = slot[-1];
		slot[-1] = *slot;
		*slot = held;
	}
}

int graphs__graph_launch(struct model *m, struct model_proc *p, struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi)
{
	__u64 handle = arg_or0(c, pi->exec), stream = arg_or0(c, pi->stream);
	struct model_exec *x = hmap__get(&m->execs, p->tgid, handle);
	struct model_capture *cap = graphs__capturing(m, c, stream);

	if (!x || x->destroyed) {
		/* captured before attach: its role comes from behaviour */
		x = graphs__exec_new(m, p, handle);
		if (!x)
			return -ENOMEM;
		x->created_ns = c->entry.ts;
	}
	if (cap) {
		cap->child_graphs++;
		return 0;
	}
	if (!x->launches++)
		x->launch_tid = t->tid;
	graphs__launch_stack(x, c->stack);
	inflight__launched(m, p, c, stream, WORK_GRAPH);
	if (legacy__stream_order(m, p, t, c, pi, stream))
		return -ENOMEM;
	return graphs__loop_event(m, t, c, pi, LOOP_GRAPH, x->id, stream_key(c, stream), 0);
}
