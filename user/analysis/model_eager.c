// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Eager forwards. A thread that launches no graph runs its models as bursts
 * of eager launches between syncs, copies and event records. Each burst's
 * first launch becomes a LOOP_GRAPH event of an eager exec, one per sequence
 * of functions and sizes (burst_handle), so the cycle analysis reads draft steps,
 * verify and the trim as it reads graphs. The burst's other launches stay
 * kernel events. A thread that launches a graph gets its bursts back as plain
 * kernels: its loop is read from its graphs.
 */
#include <errno.h>
#include <string.h>
#include "model_int.h"

#define EAGER_HANDLE_BIT (1ull << 63)

static __u64 mix(__u64 h, __u64 v)
{
	/* splitmix64's finaliser over the running hash and the value */
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

/* Grid and block of a launch: CUlaunchConfig's first six words, or arguments 1..6. */
static __u64 launch_dims(const struct sp_call *c, const struct probe_info *pi)
{
	__u32 dims[6] = { 0 };
	__u64 h = 0;

	if (pi->op == OP_LAUNCH_EX) {
		if (c->data_len >= sizeof(dims) && !(c->entry.faults & (1 << SP_FAULT_DATA)))
			memcpy(dims, c->data, sizeof(dims));
	} else if (pi->op == OP_LAUNCH && pi->func == 0) {
		for (int i = 0; i < 6; i++)
			dims[i] = (__u32)c->entry.args[i + 1];
	}
	for (int i = 0; i < 6; i++)
		h = mix(h, dims[i]);
	return h;
}

void eager__launch(struct model_thread *t, const struct sp_call *c, const struct probe_info *pi,
		   __u64 func)
{
	if (t->graphs_seen)
		return;
	if (!t->in_burst) {
		t->in_burst = true;
		t->burst_kernels = 0;
		t->burst_start_ts = c->entry.ts;
		t->burst_funcs = 0;
		t->burst_first = func;
	}
	t->burst_kernels++;
	t->burst_funcs = mix(t->burst_funcs, func);
	t->burst_last_dims = launch_dims(c, pi);
	if (t->burst_kernels == 1)
		t->burst_first_dims = t->burst_last_dims;
}

/*
 * A forward's exec: its functions, and the grid and block of its first and
 * last launch, which grow with the tokens it runs over (embedding, LM head).
 * Launches between may grow with a KV cache that grows every step: not read.
 */
static __u64 burst_handle(const struct model_thread *t)
{
	return mix(mix(t->burst_funcs, t->burst_first_dims), t->burst_last_dims) |
	       EAGER_HANDLE_BIT;
}

static struct model_exec *eager_exec(struct model *m, const struct model_thread *t)
{
	__u64 handle = burst_handle(t);
	struct model_exec *x = hmap__get(&m->execs, t->tgid, handle);
	struct model_proc *p;

	if (x)
		return x->eager ? x : NULL;
	p = store__proc_get(m, t->tgid);
	x = p ? graphs__exec_new(m, p, handle) : NULL;
	if (!x)
		return NULL;
	/* a process's count is of its graphs */
	p->nr_execs--;
	x->eager = true;
	x->created_ns = t->burst_start_ts;
	x->eager_kernels = t->burst_kernels;
	x->eager_funcs = t->burst_funcs;
	x->eager_first = t->burst_first;
	x->launch_tid = t->tid;
	return x;
}

/* The open burst ends: its first launch becomes its exec's launch. 0 or -ENOMEM. */
int eager__close(struct model *m, struct model_thread *t)
{
	struct model_exec *x;
	size_t head;

	if (!t->in_burst)
		return 0;
	t->in_burst = false;
	head = t->nr_events;
	while (head > 0 && (t->events[head - 1].kind == LOOP_KERNEL ||
			    t->events[head - 1].kind == LOOP_COLLECTIVE) &&
	       t->events[head - 1].ts >= t->burst_start_ts)
		head--;
	/* the burst's start left with a forgotten window, or is not where it was: as it is */
	if (head == t->nr_events || t->events[head].ts != t->burst_start_ts ||
	    t->nr_events - head != t->burst_kernels)
		return 0;
	x = eager_exec(m, t);
	if (!x)
		return store__proc_get(m, t->tgid) ? -ENOMEM : 0;
	x->launches++;
	t->events[head].kind = LOOP_GRAPH;
	t->events[head].flags |= LOOP_EAGER;
	t->events[head].handle = x->id;
	t->events[head].serial = t->burst_kernels;
	for (size_t j = head + 1; j < t->nr_events; j++) {
		t->events[j].flags |= LOOP_IN_BURST;
		t->events[j].serial = j - head;
	}
	return 0;
}

/* The thread launched a graph: its bursts are plain kernels again. */
void eager__graph_seen(struct model *m, struct model_thread *t)
{
	if (t->graphs_seen)
		return;
	t->graphs_seen = true;
	t->in_burst = false;
	for (size_t j = 0; j < t->nr_events; j++) {
		struct loop_event *e = &t->events[j];
		struct model_exec *x;

		if (e->flags & LOOP_IN_BURST) {
			e->flags &= ~LOOP_IN_BURST;
			e->serial = 0;
		}
		if (!(e->flags & LOOP_EAGER))
			continue;
		x = m->view.execs[e->handle];
		x->launches--;
		e->kind = LOOP_KERNEL;
		e->flags &= ~LOOP_EAGER;
		e->handle = x->eager_first;
		e->serial = 0;
	}
}
