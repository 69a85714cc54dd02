// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Eager forwards. A thread that launches no graph runs its models as bursts
 * of eager launches between syncs, copies to or from the host and event
 * records; copies and memsets on the device alone run inside a forward (a
 * workspace cleared, a table copied) and do not end one. Each burst's
 * first launch becomes a LOOP_GRAPH event of an eager exec, one per sequence
 * of functions and sizes (forward_handle), so the cycle analysis reads draft
 * steps, verify and the trim as it reads graphs. The burst's other launches
 * stay kernel events, and so does a burst of one launch. A burst that ends
 * with the functions of a forward seen before, after other launches (a cache
 * trim run straight into the next draft step), is two: those launches, then
 * the forward.
 *
 * A thread that launches graphs runs its small eager work (accept, input
 * copies, eager draft steps) between them: there a burst is a forward only
 * when it hands a result to the host (a copy to the host ends it) and has
 * more launches than any graph the thread launched captured kernels: a
 * verify too large for the captured graphs, run eagerly between graph draft
 * steps. Where a graph's capture was not seen its size is not known: then a
 * burst handing a result is a forward when it is layered, most of its
 * launches a block of two or more functions run again and again, as a
 * model's layers run; accept work (sampling, compares, copies) is not.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "model_int.h"

#define EAGER_HANDLE_BIT (1ull << 63)
/* launches of the shortest forward: a model runs more than one kernel */
#define MIN_FORWARD 2
/* launches of the longest burst split after the fact */
#define MAX_LONE 1024
/* launches of the longest layer looked for */
#define MAX_LAYER 256
/* the base of the functions' polynomial hash: a suffix's hash follows from two prefixes */
#define FUNCS_BASE 0x100000001b3ull

static __u64 mix(__u64 h, __u64 v)
{
	/* splitmix64's finaliser over the running hash and the value */
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static __u64 power(__u64 base, size_t n)
{
	__u64 p = 1;

	while (n--)
		p *= base;
	return p;
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

/*
 * A launch of the open burst; a kernel on another stream ends it and opens
 * the next (collectives, stream 0 here, join any). 0 or -ENOMEM.
 */
int eager__launch(struct model *m, struct model_thread *t, const struct sp_call *c,
		  const struct probe_info *pi, __u64 func, __u64 stream)
{
	struct burst_launch *b;
	__u64 prefix;

	if (t->nr_burst && stream && t->burst_stream && stream != t->burst_stream &&
	    eager__close(m, t))
		return -ENOMEM;
	if (!t->nr_burst) {
		t->burst_start_ts = c->entry.ts;
		t->burst_stream = 0;
		t->burst_events = 0;
	}
	if (stream && !t->burst_stream)
		t->burst_stream = stream;
	if (!store__grow_array((void **)&t->burst, &t->cap_burst, t->nr_burst + 1,
			       sizeof(*t->burst)))
		return -ENOMEM;
	prefix = t->nr_burst ? t->burst[t->nr_burst - 1].prefix : 0;
	b = &t->burst[t->nr_burst++];
	b->func = func;
	b->dims = launch_dims(c, pi);
	b->prefix = prefix * FUNCS_BASE + mix(0, func);
	b->at = t->burst_events++;
	b->stack = c->stack;
	return 0;
}

/*
 * A copy or memset on the device alone, a workspace cleared or a table copied:
 * a forward runs such work between its kernels, and the open burst goes on.
 */
void eager__device_copy(struct model_thread *t)
{
	if (t->nr_burst)
		t->burst_events++;
}

/* Functions hash of launches [from, to) of the open burst. */
static __u64 funcs_of(const struct model_thread *t, size_t from, size_t to)
{
	__u64 before = from ? t->burst[from - 1].prefix : 0;

	return t->burst[to - 1].prefix - before * power(FUNCS_BASE, to - from);
}

/*
 * A forward's exec: its functions, and the grid and block of its first and
 * last launch, which grow with the tokens it runs over (embedding, LM head).
 * Launches between may grow with a KV cache that grows every step: not read.
 */
static __u64 forward_handle(const struct model_thread *t, size_t from, size_t to)
{
	return mix(mix(funcs_of(t, from, to), t->burst[from].dims), t->burst[to - 1].dims) |
	       EAGER_HANDLE_BIT;
}

/*
 * Launches [from, to) run one block of two or more functions at least twice
 * back to back, and the repeats cover more than half of them.
 */
static bool layered(const struct model_thread *t, size_t from, size_t to)
{
	const struct burst_launch *b = t->burst + from;
	size_t n = to - from;

	for (size_t p = 2; p <= n / 2 && p <= MAX_LAYER; p++) {
		size_t run = 0;

		for (size_t i = 0; i + p < n; i++) {
			run = b[i].func == b[i + p].func ? run + 1 : 0;
			if (run < p || 2 * (run + p) <= n)
				continue;
			/* one function over and over is no layer: a kernel run per item */
			for (size_t j = i + 1 - run; j < i + 1 - run + p; j++)
				if (b[j].func != b[i + 1 - run].func)
					return true;
		}
	}
	return false;
}

static struct model_exec *eager_exec(struct model *m, struct model_thread *t, size_t from,
				     size_t to)
{
	__u64 handle = forward_handle(t, from, to);
	struct model_exec *x = hmap__get(&m->execs, t->tgid, handle);
	struct model_proc *p;

	if (x)
		return x->eager ? x : NULL;
	p = store__proc_get(m, t->tgid);
	x = p ? graphs__exec_new(m, p, handle) : NULL;
	if (!x || !store__grow_array((void **)&t->eager_ids, &t->cap_eager_ids,
				     t->nr_eager_ids + 1, sizeof(*t->eager_ids)))
		return NULL;
	/* a process's count is of its graphs */
	p->nr_execs--;
	t->eager_ids[t->nr_eager_ids++] = x->id;
	x->eager = true;
	x->eager_kernels = to - from;
	x->eager_funcs = funcs_of(t, from, to);
	x->eager_first = t->burst[from].func;
	x->eager_layered = layered(t, from, to);
	x->launch_tid = t->tid;
	return x;
}

/*
 * Events [first, last] of the thread, launches and copies on the device
 * between them, as one launch of forward x: the copies stay copies.
 */
static void mark_launch(struct model_thread *t, size_t first, size_t last,
			struct model_exec *x)
{
	struct loop_event *head = &t->events[first];

	if (!x->launches++)
		x->created_ns = head->ts;
	head->kind = LOOP_GRAPH;
	head->flags |= LOOP_EAGER;
	head->handle = x->id;
	head->serial = last - first + 1;
	for (size_t j = first + 1; j <= last; j++) {
		struct loop_event *e = &t->events[j];

		if (e->kind == LOOP_KERNEL || e->kind == LOOP_COLLECTIVE) {
			e->flags |= LOOP_IN_BURST;
			e->serial = j - first;
		}
	}
}

/* Launches [from, to) of the open burst, whose events start at head, as one forward. */
static int mark_forward(struct model *m, struct model_thread *t, size_t head, size_t from,
			size_t to)
{
	struct model_exec *x = eager_exec(m, t, from, to);

	if (!x)
		return -ENOMEM;
	mark_launch(t, head + t->burst[from].at, head + t->burst[to - 1].at, x);
	graphs__launch_stack(x, t->burst[from].stack);
	return 0;
}

/*
 * Where the burst's longest forward seen before starts, after other launches;
 * 0: none. A forward seen only as the thread's first burst may be a draft step
 * with the cache trim's last launches before it, cut by the attach: taken, it
 * would split every later trim there.
 */
static size_t known_tail(const struct model_thread *t, const struct model_view *v)
{
	size_t n = t->nr_burst, tail = 0;

	for (size_t i = 0; i < t->nr_eager_ids; i++) {
		const struct model_exec *x = v->execs[t->eager_ids[i]];
		size_t m = x->eager_kernels;

		if (x->id + 1 == t->cut_forward && x->launches == 1)
			continue;
		if (m < n && m > tail && funcs_of(t, n - m, n) == x->eager_funcs)
			tail = m;
	}
	return tail ? n - tail : 0;
}

/* The whole open burst is layered; the last burst found not is remembered. */
static bool layered_burst(struct model_thread *t)
{
	__u64 funcs = funcs_of(t, 0, t->nr_burst);

	if (t->nr_burst < MIN_FORWARD || funcs == t->flat_funcs)
		return false;
	if (layered(t, 0, t->nr_burst))
		return true;
	t->flat_funcs = funcs;
	return false;
}

static void unmark_forward(struct model *m, struct model_thread *t, size_t head);

/* Function hash of launch events idx[from, to), as funcs_of() hashes a burst's. */
static __u64 event_funcs(const struct model_thread *t, const struct model_exec *y,
			 const size_t *idx, size_t from, size_t to)
{
	__u64 h = 0;

	for (size_t i = from; i < to; i++) {
		const struct loop_event *e = &t->events[idx[i]];

		h = h * FUNCS_BASE + mix(0, i ? e->handle : y->eager_first);
	}
	return h;
}

/*
 * Forward x is new: a burst that made a new forward earlier, once, and ends
 * with x's functions was x run on from work before it (a trim's launches
 * cut by the attach, before x was known). Its tail becomes x's launch, the
 * launches before it the burst's own forward, of no role.
 */
static void split_lone(struct model *m, struct model_thread *t, const struct model_exec *x)
{
	size_t idx[MAX_LONE], n, tail = x->eager_kernels;

	for (int k = 0; k < LONE_BURSTS; k++) {
		size_t h = t->nr_events;
		struct model_exec *y;

		if (!t->lone_ts[k])
			continue;
		while (h > 0 && t->events[h - 1].ts >= t->lone_ts[k])
			h--;
		if (h == t->nr_events || t->events[h].ts != t->lone_ts[k] ||
		    !(t->events[h].flags & LOOP_EAGER))
			goto drop;
		y = m->view.execs[t->events[h].handle];
		if (y == x || y->launches != 1 || y->eager_kernels <= tail ||
		    y->eager_kernels > MAX_LONE)
			goto drop;
		n = 0;
		for (size_t j = h; j < t->nr_events && j - h < t->events[h].serial; j++)
			if (j == h || (t->events[j].flags & LOOP_IN_BURST))
				idx[n++] = j;
		if (n != y->eager_kernels || event_funcs(t, y, idx, n - tail, n) != x->eager_funcs)
			continue;
		unmark_forward(m, t, h);
		mark_launch(t, idx[n - tail], idx[n - 1], m->view.execs[x->id]);
		/* the launches before: the burst's own forward, one of no role */
		y->eager_kernels = n - tail;
		y->eager_funcs = event_funcs(t, y, idx, 0, n - tail);
		y->eager_layered = false;
		mark_launch(t, idx[0], idx[n - tail - 1], y);
drop:
		t->lone_ts[k] = 0;
	}
}

/* The open burst ends: its first launch becomes its exec's launch. 0 or -ENOMEM. */
int eager__close(struct model *m, struct model_thread *t)
{
	size_t n = t->nr_burst, head = t->nr_events, split;

	if (t->burst_cut) {
		t->burst_cut = false;
		t->nr_burst = 0;
		return 0;
	}
	if (!n)
		return 0;
	/*
	 * beside graphs: only a forward larger than all of them, or layered where
	 * their sizes are unknown (it must hand a result too)
	 */
	if (t->graphs_seen && (t->graph_work_max == UINT32_MAX ? !layered_burst(t)
				: n < MIN_FORWARD || n <= t->graph_work_max)) {
		t->nr_burst = 0;
		return 0;
	}
	t->nr_burst = 0;
	/* the burst's start left with a forgotten window, or is not where it was: as it is */
	if (t->burst_events > head)
		return 0;
	head -= t->burst_events;
	if (t->events[head].ts != t->burst_start_ts || !store__proc_get(m, t->tgid))
		return 0;
	t->nr_burst = n;
	split = t->graphs_seen ? 0 : known_tail(t, &m->view);
	/* one launch alone is no forward: a stray kernel stays one */
	if ((split >= MIN_FORWARD && mark_forward(m, t, head, 0, split)) ||
	    (n - split >= MIN_FORWARD && mark_forward(m, t, head, split, n))) {
		t->nr_burst = 0;
		return -ENOMEM;
	}
	t->nr_burst = 0;
	if (!t->burst_seen && n >= MIN_FORWARD)
		t->cut_forward = t->events[head].handle + 1;
	t->burst_seen = true;
	if (t->graphs_seen) {
		t->pending_forward = head + 1;
	} else if (!split && n >= MIN_FORWARD &&
		   m->view.execs[t->events[head].handle]->launches == 1) {
		/* a new forward: earlier lone bursts may be it run on; it may be such */
		split_lone(m, t, m->view.execs[t->events[head].handle]);
		memmove(t->lone_ts + 1, t->lone_ts, sizeof(t->lone_ts) - sizeof(t->lone_ts[0]));
		t->lone_ts[0] = t->events[head].ts;
	}
	return 0;
}

/* Events from head on of an eager forward back to plain kernels. */
static void unmark_forward(struct model *m, struct model_thread *t, size_t head)
{
	struct loop_event *e = &t->events[head];
	struct model_exec *x = m->view.execs[e->handle];

	for (size_t j = head + 1; j < t->nr_events && j - head < e->serial; j++) {
		if (!(t->events[j].flags & LOOP_IN_BURST))
			continue;	/* a copy on the device between */
		t->events[j].flags &= ~LOOP_IN_BURST;
		t->events[j].serial = 0;
	}
	x->launches--;
	e->kind = LOOP_KERNEL;
	e->flags &= ~LOOP_EAGER;
	e->handle = x->eager_first;
	e->serial = 0;
}

/* Kernels and collectives a graph runs; UINT32_MAX where its capture was not seen. */
static __u32 graph_work(const struct model_exec *x)
{
	__u32 n;

	if (!x || !x->capture)
		return UINT32_MAX;
	n = x->capture->kernel_count;
	for (__u32 i = 0; i < x->capture->nr_colls; i++)
		n += x->capture->colls[i].count;
	return n;
}

static bool is_launch(const struct loop_event *e)
{
	return e->kind == LOOP_GRAPH || e->kind == LOOP_KERNEL || e->kind == LOOP_COLLECTIVE;
}

/* After a forward's burst, from head on, a copy to the host comes before the next launch. */
static bool hands_result(const struct model_thread *t, size_t head)
{
	for (size_t j = head + t->events[head].serial; j < t->nr_events; j++) {
		const struct loop_event *e = &t->events[j];

		if (e->kind == LOOP_COPY && (e->flags & LOOP_D2H))
			return true;
		if (is_launch(e))
			return false;
	}
	return false;
}

/*
 * --sample: an event at ts in another window, or between windows, than the
 * thread's last. A burst begun in an earlier window was cut by its close
 * (launches after it went unseen): no forward. A window's first burst, if
 * the window opened on it, may be cut by the open: no forward either; the
 * first burst after that is read as the first after an attach.
 */
void eager__window(struct model_thread *t, const struct sample_windows *s, __u64 ts,
		   enum loop_kind kind, __u8 flags)
{
	size_t slot;

	if (!sample__on(s))
		return;
	slot = sample__slot(s, ts);
	if (t->nr_burst && sample__slot(s, t->burst_start_ts) != slot)
		t->nr_burst = 0;
	if (slot == t->sample_slot)
		return;
	t->sample_slot = slot;
	if (!(slot % 2))
		return;
	/*
	 * a window that opens inside a burst (on a launch, or a copy on the device
	 * between launches) may have cut its start: no forward of it
	 */
	t->burst_cut = kind == LOOP_KERNEL || kind == LOOP_COLLECTIVE ||
		       (kind == LOOP_COPY && (flags & LOOP_ON_DEVICE) && !(flags & LOOP_BLOCKING));
	t->burst_seen = false;
	t->cut_forward = 0;
	t->flat_funcs = 0;
	memset(t->lone_ts, 0, sizeof(t->lone_ts));
}

/*
 * Beside graphs, the call after a forward's burst: a copy to the host keeps
 * it, a launch before one makes it plain kernels again.
 */
void eager__after_forward(struct model *m, struct model_thread *t, enum loop_kind kind,
			  __u8 flags)
{
	size_t head = t->pending_forward - 1;

	if (!t->pending_forward)
		return;
	if (kind == LOOP_COPY && (flags & LOOP_D2H)) {
		t->pending_forward = 0;
	} else if (kind == LOOP_GRAPH || kind == LOOP_KERNEL || kind == LOOP_COLLECTIVE) {
		t->pending_forward = 0;
		if (head < t->nr_events && (t->events[head].flags & LOOP_EAGER))
			unmark_forward(m, t, head);
	}
}

/*
 * The thread launched graph exec_id: the open burst stays kernels, and
 * forwards no larger than its graphs, or not handing a result, are plain
 * kernels again.
 */
void eager__graph_seen(struct model *m, struct model_thread *t, __u64 exec_id)
{
	const struct model_exec *g = exec_id < m->view.nr_execs ? m->view.execs[exec_id] : NULL;
	__u32 work = graph_work(g);

	t->nr_burst = 0;
	if (t->graphs_seen && work <= t->graph_work_max)
		return;
	t->graphs_seen = true;
	t->graph_work_max = work > t->graph_work_max ? work : t->graph_work_max;
	for (size_t j = 0; j < t->nr_events; j++) {
		const struct loop_event *e = &t->events[j];
		const struct model_exec *x;

		if (!(e->flags & LOOP_EAGER))
			continue;
		x = m->view.execs[e->handle];
		/* sizes unknown: a layered forward stays one */
		if ((t->graph_work_max == UINT32_MAX ? !x->eager_layered
						     : x->eager_kernels <= t->graph_work_max) ||
		    !hands_result(t, j))
			unmark_forward(m, t, j);
	}
}
