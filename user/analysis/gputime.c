// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * GPU executions to the calls that launched them, by process, stream and
 * order (docs/gpu-timeline.md), and each process's GPU timeline.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "catalog.h"
#include "gputime.h"
#include "model.h"
#include "hmap.h"

/* A call whose execution has not come this long after the watermark never will. */
#define GIVEUP_NS 5000000000ull
/* calls kept per stream of a process no agent has spoken for: far more than 100 ms of launches */
#define NO_AGENT_KEEP 8192

struct call_queue {
	__u64 handle;		/* stream key */
	bool bound;		/* some CUPTI stream id is bound to it */
	struct gpu_call *calls;	/* entry order, from head */
	size_t head, nr, cap;
};

struct binding {
	__u64 cupti;		/* CUPTI context << 32 | stream id */
	struct call_queue *q;
};

struct seg {
	__u64 start, end;
};

struct match {
	__u64 key_a, call_ts;	/* tgid << 32 | tid, the call's entry */
	__u64 start, end;
};

struct gpu_proc {
	__u32 tgid;
	bool has_agent;
	__u64 on_ns;		/* its agent's first ON state: calls before had no records made */
	struct gpu_agent agent;
	struct call_queue **queues;
	size_t nr_queues;
	struct binding *bindings;
	size_t nr_bindings;
	struct sp_gpu_rec *held;	/* executions waiting for the watermark */
	size_t nr_held, cap_held;
	struct seg *segs;		/* the timeline: disjoint, in time order */
	size_t nr_segs, cap_segs;
	char **names;
	size_t nr_names;
};

struct gputime {
	struct gpu_proc **procs;
	size_t nr_procs;
	struct hmap matched;		/* (tgid << 32 | tid, call entry) -> struct match */
	struct match **matches;		/* for forgetting */
	size_t nr_matches, cap_matches;
	struct gpu_stats stats;
	struct gpu_agent *agents;	/* stats.agents: refreshed when a state comes */
};

static int grow(void **arr, size_t *cap, size_t want, size_t size)
{
	size_t cap2;
	void *p;

	if (want <= *cap)
		return 0;
	cap2 = *cap ? *cap * 2 : 16;
	while (cap2 < want)
		cap2 *= 2;
	p = realloc(*arr, cap2 * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = cap2;
	return 0;
}

struct gputime *gputime__new(void)
{
	return calloc(1, sizeof(struct gputime));
}

static void proc_free(struct gpu_proc *p)
{
	for (size_t i = 0; i < p->nr_queues; i++) {
		free(p->queues[i]->calls);
		free(p->queues[i]);
	}
	for (size_t i = 0; i < p->nr_names; i++)
		free(p->names[i]);
	free(p->queues);
	free(p->bindings);
	free(p->held);
	free(p->segs);
	free(p->names);
	free(p);
}

void gputime__free(struct gputime *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nr_procs; i++)
		proc_free(g->procs[i]);
	for (size_t i = 0; i < g->nr_matches; i++)
		free(g->matches[i]);
	free(g->procs);
	free(g->matches);
	free(g->agents);
	hmap__free(&g->matched);
	free(g);
}

static struct gpu_proc *proc_find(const struct gputime *g, __u32 tgid)
{
	for (size_t i = 0; i < g->nr_procs; i++)
		if (g->procs[i]->tgid == tgid)
			return g->procs[i];
	return NULL;
}

static struct gpu_proc *proc_get(struct gputime *g, __u32 tgid)
{
	struct gpu_proc *p = proc_find(g, tgid), **grown;

	if (p)
		return p;
	grown = realloc(g->procs, (g->nr_procs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	g->procs = grown;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tgid = tgid;
	g->procs[g->nr_procs++] = p;
	return p;
}

/* Records of the agents */

static int take_name(struct gpu_proc *p, const struct sp_gpu_name_rec *r, size_t size)
{
	size_t len = size - sizeof(*r), had = p->nr_names;
	const char *name = (const char *)(r + 1);

	if (!r->number || r->number > 1u << 20)
		return 0;	/* a corrupt number: not worth a million slots */
	if (r->number > p->nr_names) {
		char **grown = realloc(p->names, r->number * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->names = grown;
		p->nr_names = r->number;
		memset(grown + had, 0, (r->number - had) * sizeof(*grown));
	}
	free(p->names[r->number - 1]);
	p->names[r->number - 1] = strndup(name, len);
	return p->names[r->number - 1] ? 0 : -ENOMEM;
}

static int refresh_agents(struct gputime *g)
{
	struct gpu_agent *a = calloc(g->nr_procs ? g->nr_procs : 1, sizeof(*a));
	__u32 n = 0;

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < g->nr_procs; i++)
		if (g->procs[i]->has_agent)
			a[n++] = g->procs[i]->agent;
	free(g->agents);
	g->agents = a;
	g->stats.agents = a;
	g->stats.nr_agents = n;
	return 0;
}

static int take_state(struct gputime *g, struct gpu_proc *p, const struct sp_gpu_state_rec *r)
{
	struct gpu_agent *a = &p->agent;
	__u64 had = p->agent.flushed_ns, unmatched_after = a->unmatched_after;
	bool was_on = a->was_on || r->status == SP_GPU_ON;

	p->has_agent = true;
	if (r->status == SP_GPU_ON && !p->on_ns)
		p->on_ns = r->ts;
	*a = (struct gpu_agent){ .tgid = r->tgid, .status = r->status,
				 .cupti_version = r->cupti_version, .records = r->records,
				 .cupti_dropped = r->cupti_dropped, .ring_dropped = r->ring_dropped,
				 .overhead_ns = r->overhead_ns, .was_on = was_on,
				 .unmatched_after = unmatched_after };
	/* a watermark never goes back */
	a->flushed_ns = r->flushed_ns > had ? r->flushed_ns : had;
	memcpy(a->detail, r->detail, sizeof(a->detail));
	a->detail[sizeof(a->detail) - 1] = 0;
	return refresh_agents(g);
}

int gputime__record(struct gputime *g, const void *rec, size_t size)
{
	const struct sp_rec_hdr *h = rec;
	struct gpu_proc *p;

	if (size < sizeof(*h) || (h->type != SP_REC_GPU && h->type != SP_REC_GPU_NAME &&
				  h->type != SP_REC_GPU_STATE))
		return 0;
	if ((h->type == SP_REC_GPU && size < sizeof(struct sp_gpu_rec)) ||
	    (h->type == SP_REC_GPU_NAME && size < sizeof(struct sp_gpu_name_rec)) ||
	    (h->type == SP_REC_GPU_STATE && size < sizeof(struct sp_gpu_state_rec)))
		return 1;	/* too short to read: skipped like any damaged optional record */
	p = proc_get(g, ((const struct sp_gpu_rec *)rec)->tgid);
	if (!p)
		return -ENOMEM;
	if (h->type == SP_REC_GPU_NAME)
		return take_name(p, rec, size) ?: 1;
	if (h->type == SP_REC_GPU_STATE)
		return take_state(g, p, rec) ?: 1;
	if (grow((void **)&p->held, &p->cap_held, p->nr_held + 1, sizeof(*p->held)))
		return -ENOMEM;
	memcpy(&p->held[p->nr_held++], rec, sizeof(struct sp_gpu_rec));
	g->stats.records++;
	return 1;
}

/* Calls */

static struct call_queue *queue_get(struct gpu_proc *p, __u64 handle)
{
	struct call_queue **grown, *q;

	for (size_t i = 0; i < p->nr_queues; i++)
		if (p->queues[i]->handle == handle)
			return p->queues[i];
	grown = realloc(p->queues, (p->nr_queues + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	p->queues = grown;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->handle = handle;
	p->queues[p->nr_queues++] = q;
	return q;
}

int gputime__call(struct gputime *g, const struct gpu_call *c)
{
	struct gpu_proc *p = proc_get(g, c->tgid);
	struct call_queue *q = p ? queue_get(p, c->stream) : NULL;

	if (!q)
		return -ENOMEM;
	/*
	 * No agent has spoken for the process yet. Its agent starts at cuInit and
	 * speaks within a flush period, so only the latest calls can still be asked
	 * for; a host-only run must not keep every launch.
	 */
	if (!p->has_agent && !p->nr_segs && !p->nr_held && q->nr - q->head >= NO_AGENT_KEEP)
		q->head = q->nr - NO_AGENT_KEEP + 1;
	if (q->head && q->head * 2 >= q->nr) {
		memmove(q->calls, q->calls + q->head, (q->nr - q->head) * sizeof(*q->calls));
		q->nr -= q->head;
		q->head = 0;
	}
	if (grow((void **)&q->calls, &q->cap, q->nr + 1, sizeof(*q->calls)))
		return -ENOMEM;
	q->calls[q->nr++] = *c;
	return 0;
}

/* Argument i of c, false when it could not be read. */
static bool call_arg(const struct sp_call *c, int i, __u64 *val)
{
	if (i < 0 || i >= SP_MAX_ARGS)
		return false;
	if (i >= SP_REG_ARGS && (c->entry.faults & (1 << SP_FAULT_STACK)))
		return false;
	*val = c->entry.args[i];
	return true;
}

static __u64 named_arg(const struct catalog_entry *e, const struct sp_call *c, const char *name)
{
	const char *const names[] = { name, NULL };
	__u64 v = 0;

	return call_arg(c, catalog__arg_index(e, names), &v) ? v : 0;
}

/* A copy's direction as CUPTI names it, from the entry point's name; 0: not told. */
static __u8 copy_kind_of(const char *name)
{
	if (strstr(name, "HtoD") || strstr(name, "HtoA"))
		return 1;
	if (strstr(name, "DtoH") || strstr(name, "AtoH"))
		return 2;
	if (strstr(name, "DtoD"))
		return 8;
	if (strstr(name, "Peer") && !strstr(name, "3D"))
		return 10;
	return 0;
}

static __u64 memset_bytes(const struct catalog_entry *e, const struct sp_call *c)
{
	__u64 elem = strstr(e->name, "D32") ? 4 : strstr(e->name, "D16") ? 2 : 1;

	if (strstr(e->name, "D2D"))
		return named_arg(e, c, "width") * named_arg(e, c, "height") * elem;
	return named_arg(e, c, "count") * elem;
}

int gputime__model_call(struct gputime *g, __u32 tgid, const struct loop_event *ev,
			const struct sp_call *c)
{
	const struct catalog_entry *e = ev->name < catalog_len ? &catalog[ev->name] : NULL;
	struct gpu_call gc = { .ts = c->entry.ts, .tgid = tgid, .tid = c->entry.tid,
			       .stream = ev->stream };

	if (!e)
		return 0;
	if (ev->kind == LOOP_GRAPH) {
		gc.kind = SP_GPU_GRAPH;
		gc.exec = named_arg(e, c, "exec");
	} else if (ev->kind == LOOP_KERNEL || ev->kind == LOOP_COLLECTIVE) {
		/* a host function runs on the host: no execution on the GPU */
		if (!strcmp(e->name, "cuLaunchHostFunc"))
			return 0;
		gc.kind = SP_GPU_KERNEL;
	} else if (ev->kind == LOOP_COPY && !strncmp(e->name, "cuMemset", 8)) {
		gc.kind = SP_GPU_MEMSET;
		gc.bytes = memset_bytes(e, c);
	} else if (ev->kind == LOOP_COPY) {
		gc.kind = SP_GPU_MEMCPY;
		gc.copy_kind = copy_kind_of(e->name);
		gc.bytes = named_arg(e, c, "bytes");
	} else {
		return 0;
	}
	return gputime__call(g, &gc);
}

/* Matching */

static bool fits(const struct gpu_call *c, const struct sp_gpu_rec *r)
{
	if (c->kind != r->kind || c->ts > r->start)
		return false;
	if (r->kind == SP_GPU_MEMCPY && c->copy_kind && c->copy_kind != r->copy_kind)
		return false;
	if ((r->kind == SP_GPU_MEMCPY || r->kind == SP_GPU_MEMSET) && c->bytes &&
	    c->bytes != r->bytes)
		return false;
	return true;
}

/* The oldest call of q r fits, as an index from q's head; -1: none. */
static long first_fit(const struct call_queue *q, const struct sp_gpu_rec *r)
{
	for (size_t i = q->head; i < q->nr; i++) {
		if (q->calls[i].ts > r->start)
			return -1;
		if (fits(&q->calls[i], r))
			return (long)i;
	}
	return -1;
}

static struct call_queue *bound_queue(const struct gpu_proc *p, __u64 cupti)
{
	for (size_t i = 0; i < p->nr_bindings; i++)
		if (p->bindings[i].cupti == cupti)
			return p->bindings[i].q;
	return NULL;
}

/* The queue a new CUPTI stream binds to: the one of the oldest unbound call that fits. */
static struct call_queue *bind_queue(struct gpu_proc *p, __u64 cupti, const struct sp_gpu_rec *r)
{
	struct call_queue *best = NULL;
	struct binding *grown;
	__u64 best_ts = 0;

	for (size_t i = 0; i < p->nr_queues; i++) {
		struct call_queue *q = p->queues[i];
		long k = q->bound ? -1 : first_fit(q, r);

		if (k >= 0 && (!best || q->calls[k].ts < best_ts)) {
			best = q;
			best_ts = q->calls[k].ts;
		}
	}
	if (!best)
		return NULL;
	grown = realloc(p->bindings, (p->nr_bindings + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	p->bindings = grown;
	p->bindings[p->nr_bindings++] = (struct binding){ cupti, best };
	best->bound = true;
	return best;
}

static int add_seg(struct gpu_proc *p, __u64 start, __u64 end)
{
	size_t lo = 0, hi = p->nr_segs, i, j;

	if (end < start)
		return 0;
	/* the first segment ending at or after start */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->segs[mid].end < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (j = lo; j < p->nr_segs && p->segs[j].start <= end; j++) {
		start = p->segs[j].start < start ? p->segs[j].start : start;
		end = p->segs[j].end > end ? p->segs[j].end : end;
	}
	i = lo;
	if (j == i) {
		if (grow((void **)&p->segs, &p->cap_segs, p->nr_segs + 1, sizeof(*p->segs)))
			return -ENOMEM;
		memmove(p->segs + i + 1, p->segs + i, (p->nr_segs - i) * sizeof(*p->segs));
		p->nr_segs++;
		j = i + 1;
	}
	p->segs[i] = (struct seg){ start, end };
	memmove(p->segs + i + 1, p->segs + j, (p->nr_segs - j) * sizeof(*p->segs));
	p->nr_segs -= j - i - 1;
	return 0;
}

static int remember(struct gputime *g, const struct gpu_call *c, const struct sp_gpu_rec *r)
{
	struct match *m = malloc(sizeof(*m));

	if (!m || grow((void **)&g->matches, &g->cap_matches, g->nr_matches + 1,
		       sizeof(*g->matches))) {
		free(m);
		return -ENOMEM;
	}
	*m = (struct match){ (__u64)c->tgid << 32 | c->tid, c->ts, r->start, r->end };
	if (hmap__set(&g->matched, m->key_a, m->call_ts, m)) {
		free(m);
		return -ENOMEM;
	}
	g->matches[g->nr_matches++] = m;
	return 0;
}

static void give_up(struct gputime *g, struct gpu_proc *p, struct call_queue *q, size_t upto)
{
	g->stats.unmatched_calls += upto - q->head;
	p->agent.unmatched_after += upto - q->head;
	q->head = upto;
}

/* One execution, in start order within its process: matched, or given up. */
static int settle_exec(struct gputime *g, struct gpu_proc *p, const struct sp_gpu_rec *r,
		       gpu_exec_fn fn, void *ctx)
{
	__u64 cupti = (__u64)r->context << 32 | r->stream;
	struct call_queue *q = bound_queue(p, cupti);
	struct gpu_exec e = { .start_ns = r->start, .end_ns = r->end, .tgid = r->tgid,
			      .kind = r->kind, .copy_kind = r->copy_kind, .bytes = r->bytes,
			      .stream_id = r->stream, .device = r->device, .graph = r->graph };
	long k;

	if (!q)
		q = bind_queue(p, cupti, r);
	/*
	 * An agent brought in while the process runs (-p): CUPTI records only
	 * what was launched after its kinds were on, so no earlier call ran here.
	 */
	if (q && p->on_ns) {
		size_t upto = q->head;

		while (upto < q->nr && q->calls[upto].ts < p->on_ns)
			upto++;
		give_up(g, p, q, upto);
	}
	k = q ? first_fit(q, r) : -1;
	if (r->name && r->name <= p->nr_names)
		e.name = p->names[r->name - 1];
	if (add_seg(p, r->start, r->end))
		return -ENOMEM;
	if (k < 0) {
		g->stats.unmatched_records++;
	} else {
		const struct gpu_call *c = &q->calls[k];

		if (remember(g, c, r))
			return -ENOMEM;
		g->stats.matched++;
		e.call_ts = c->ts;
		e.call_tid = c->tid;
		e.stream = c->stream;
		e.exec = c->exec;
		/* the stream runs in launch order: what was launched before on it never ran */
		give_up(g, p, q, k);
		q->head++;
		p->agent.unmatched_after = 0;
	}
	return fn ? fn(ctx, &e) : 0;
}

static int start_cmp(const void *a, const void *b)
{
	const struct sp_gpu_rec *x = a, *y = b;

	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->end > y->end) - (x->end < y->end);
}

static __u64 proc_hold(const struct gpu_proc *p)
{
	return p->has_agent && p->agent.status == SP_GPU_ON ? p->agent.flushed_ns : ~0ull;
}

static int advance_proc(struct gputime *g, struct gpu_proc *p, __u64 last_ts, bool final,
			gpu_exec_fn fn, void *ctx)
{
	__u64 hold = proc_hold(p), old = hold != ~0ull ? hold : last_ts;
	size_t n = 0;
	int ret = 0;

	/* ready: every call before it was handed on, every execution ending before it came */
	for (size_t i = 0; i < p->nr_held; i++) {
		if (final || (p->held[i].start <= last_ts && p->held[i].end <= hold)) {
			struct sp_gpu_rec t = p->held[n];

			p->held[n++] = p->held[i];
			p->held[i] = t;
		}
	}
	/* held is NULL until something is held: qsort and memmove take no NULL, even for 0 */
	if (n)
		qsort(p->held, n, sizeof(*p->held), start_cmp);
	for (size_t i = 0; i < n && !ret; i++)
		ret = settle_exec(g, p, &p->held[i], fn, ctx);
	if (n && p->nr_held > n)
		memmove(p->held, p->held + n, (p->nr_held - n) * sizeof(*p->held));
	p->nr_held -= n;
	for (size_t i = 0; i < p->nr_queues; i++) {
		struct call_queue *q = p->queues[i];
		size_t upto = q->head;

		while (upto < q->nr && (final || q->calls[upto].ts + GIVEUP_NS < old))
			upto++;
		give_up(g, p, q, upto);
	}
	return ret;
}

int gputime__advance(struct gputime *g, __u64 last_ts, bool final, gpu_exec_fn fn, void *ctx)
{
	__u64 before = g->stats.unmatched_calls;
	bool agents_moved = false;
	int ret = 0;

	for (size_t i = 0; i < g->nr_procs && !ret; i++) {
		struct gpu_proc *p = g->procs[i];
		bool gpu = (p->has_agent && p->agent.records) || p->nr_segs || p->nr_held;
		__u64 after = p->agent.unmatched_after;

		ret = advance_proc(g, p, last_ts, final, fn, ctx);
		/* calls of a process no agent reported for are no unmatched calls */
		if (!gpu)
			g->stats.unmatched_calls = before;
		before = g->stats.unmatched_calls;
		agents_moved |= p->has_agent && p->agent.unmatched_after != after;
	}
	/* the agents' copies carry the matching's side too */
	return ret ?: agents_moved ? refresh_agents(g) : 0;
}

__u64 gputime__horizon(const struct gputime *g, __u64 last_ts)
{
	__u64 h = last_ts;
	bool any = false;

	for (size_t i = 0; i < g->nr_procs; i++) {
		const struct gpu_proc *p = g->procs[i];

		any |= p->has_agent || p->nr_segs || p->nr_held;
		if (proc_hold(p) < h)
			h = proc_hold(p);
		/*
		 * CUPTI hands over a buffer only once every record in it is complete,
		 * so an execution can come after a watermark past its end: a call
		 * still waiting for its execution holds its cycle until it is matched
		 * or given up.
		 */
		if (proc_hold(p) == ~0ull)
			continue;
		for (size_t j = 0; j < p->nr_queues; j++) {
			const struct call_queue *q = p->queues[j];

			if (q->head < q->nr && q->calls[q->head].ts < h)
				h = q->calls[q->head].ts;
		}
	}
	return any ? h : ~0ull;
}

void gputime__forget(struct gputime *g, __u64 before_ns)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nr_matches; i++) {
		struct match *m = g->matches[i];

		if (m->end < before_ns && m->call_ts < before_ns) {
			hmap__remove(&g->matched, m->key_a, m->call_ts);
			free(m);
		} else {
			g->matches[n++] = m;
		}
	}
	g->nr_matches = n;
	for (size_t i = 0; i < g->nr_procs; i++) {
		struct gpu_proc *p = g->procs[i];
		size_t k = 0;

		/* the last segment stays: a later gap starts at its end */
		while (k + 1 < p->nr_segs && p->segs[k + 1].end < before_ns)
			k++;
		if (k) {
			memmove(p->segs, p->segs + k, (p->nr_segs - k) * sizeof(*p->segs));
			p->nr_segs -= k;
		}
	}
}

bool gputime__exec_of(const struct gputime *g, __u32 tgid, __u32 tid, __u64 ts,
		      __u64 *start_ns, __u64 *end_ns)
{
	const struct match *m = hmap__get(&g->matched, (__u64)tgid << 32 | tid, ts);

	if (!m)
		return false;
	*start_ns = m->start;
	*end_ns = m->end;
	return true;
}

/* The first segment of p ending after ts. */
static size_t seg_after(const struct gpu_proc *p, __u64 ts)
{
	size_t lo = 0, hi = p->nr_segs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->segs[mid].end <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

__u64 gputime__busy(const struct gputime *g, __u32 tgid, __u64 from, __u64 to)
{
	const struct gpu_proc *p = proc_find(g, tgid);
	__u64 busy = 0;

	if (!p)
		return 0;
	for (size_t i = seg_after(p, from); i < p->nr_segs && p->segs[i].start < to; i++) {
		__u64 lo = p->segs[i].start > from ? p->segs[i].start : from;
		__u64 hi = p->segs[i].end < to ? p->segs[i].end : to;

		busy += hi > lo ? hi - lo : 0;
	}
	return busy;
}

bool gputime__gap_at(const struct gputime *g, __u32 tgid, __u64 ts, __u64 *gap_ns)
{
	const struct gpu_proc *p = proc_find(g, tgid);
	size_t i;

	if (!p)
		return false;
	i = seg_after(p, ts);
	if (i < p->nr_segs && p->segs[i].start <= ts) {
		*gap_ns = 0;
		return true;
	}
	/* idle at ts: known when work ran before it and some came after */
	if (!i || i == p->nr_segs)
		return false;
	*gap_ns = p->segs[i].start - p->segs[i - 1].end;
	return true;
}

static int iv_cmp(const void *a, const void *b)
{
	const __u64 *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

__u64 gputime__union(__u64 (*iv)[2], size_t n)
{
	__u64 total = 0, lo = 0, hi = 0;

	if (n > 1)
		qsort(iv, n, sizeof(*iv), iv_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && iv[i][0] <= hi) {
			hi = iv[i][1] > hi ? iv[i][1] : hi;
			continue;
		}
		total += hi - lo;
		lo = iv[i][0];
		hi = iv[i][1] > lo ? iv[i][1] : lo;
	}
	return total + (hi - lo);
}

const struct gpu_stats *gputime__stats(const struct gputime *g)
{
	return &g->stats;
}
