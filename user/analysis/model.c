// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Calls to state. Per process: threads, streams (and the capture each is in),
 * events (where they were last recorded), kernel names, graphs and execs,
 * pinned host ranges. Per thread: the loop events the cycle analysis reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static const struct {
	const char *name;
	enum op op;
} op_names[] = {
	{ "cuLaunchKernel", OP_LAUNCH },
	{ "cuLaunchCooperativeKernel", OP_LAUNCH },
	{ "cuLaunchKernelEx", OP_LAUNCH_EX },
	{ "cuLaunchHostFunc", OP_HOST_FUNC },
	{ "cuGraphLaunch", OP_GRAPH_LAUNCH },
	{ "cuStreamBeginCapture", OP_BEGIN_CAPTURE },
	{ "cuStreamBeginCaptureToGraph", OP_BEGIN_CAPTURE },
	{ "cuStreamEndCapture", OP_END_CAPTURE },
	{ "cuGraphInstantiate", OP_INSTANTIATE },
	{ "cuGraphInstantiateWithFlags", OP_INSTANTIATE },
	{ "cuGraphInstantiateWithParams", OP_INSTANTIATE },
	{ "cuGraphExecUpdate", OP_EXEC_UPDATE },
	{ "cuGraphExecDestroy", OP_EXEC_DESTROY },
	{ "cuCtxSynchronize", OP_CTX_SYNC },
	{ "cuStreamSynchronize", OP_STREAM_SYNC },
	{ "cuEventSynchronize", OP_EVENT_SYNC },
	{ "cuMemHostAlloc", OP_HOST_ALLOC },
	{ "cuMemAllocHost", OP_HOST_ALLOC },
	{ "cuMemHostRegister", OP_HOST_REGISTER },
	{ "cuMemHostUnregister", OP_HOST_RELEASE },
	{ "cuMemFreeHost", OP_HOST_RELEASE },
	{ "cuMemFree", OP_MEM_FREE },
	{ "cuMemAlloc", OP_MEM_ALLOC },
	{ "cuStreamQuery", OP_STREAM_QUERY },
	{ "cuEventQuery", OP_EVENT_QUERY },
	{ "cuEventRecord", OP_EVENT_RECORD },
	{ "cuEventRecordWithFlags", OP_EVENT_RECORD },
	{ "cuStreamWaitEvent", OP_WAIT_EVENT },
	{ "cuEventCreate", OP_EVENT_CREATE },
	{ "cuModuleGetFunction", OP_NAMED },
	{ "cuLibraryGetKernel", OP_NAMED },
	{ "cuKernelGetFunction", OP_KERNEL_FUNC },
	{ "cuStreamCreate", OP_STREAM_CREATE },
	{ "cuStreamCreateWithPriority", OP_STREAM_CREATE },
	{ "cuDevicePrimaryCtxRetain", OP_CTX_RETAIN },
	{ "ncclCommInitRank", OP_COMM_INIT },
	{ "ncclCommInitRankConfig", OP_COMM_INIT },
	{ "ncclCommInitRankScalable", OP_COMM_INIT },
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
	struct hmap hostmaps;	/* mappings of processes that made no call yet */
	struct model_stream **all_streams;	/* for the device-wide views of in-flight work */
	size_t nr_all_streams;
	char **strings;		/* interned names, freed at the end */
	size_t nr_strings, cap_strings;
	__u32 record_serial;
};

static bool grow_array(void **array, __u32 *cap, __u32 need, size_t elem)
{
	__u32 n = *cap ? *cap : 8;
	void *grown;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	grown = realloc(*array, (size_t)n * elem);
	if (!grown)
		return false;
	*array = grown;
	*cap = n;
	return true;
}

/* Append p to an array of pointers whose capacity doubles from 16: full at 16, 32, ... */
static bool push_ptr(void ***array, size_t *len, void *p)
{
	if (!*len || (*len >= 16 && !(*len & (*len - 1)))) {
		size_t cap = *len ? *len * 2 : 16;
		void **grown = realloc(*array, cap * sizeof(*grown));

		if (!grown)
			return false;
		*array = grown;
	}
	(*array)[(*len)++] = p;
	return true;
}

static int arg_index(const struct catalog_entry *e, const char *const *names)
{
	int nargs = catalog__nargs(e);
	char name[32], fmt;

	for (const char *const *want = names; *want; want++)
		for (int i = 0; i < nargs; i++)
			if (catalog__arg(e, i, name, sizeof(name), &fmt) && !strcmp(name, *want))
				return i;
	return NO_ARG;
}

#define ARG(e, ...) arg_index(e, (const char *const[]){ __VA_ARGS__, NULL })

static void probe_info_fill(struct probe_info *pi, const struct catalog_entry *e)
{
	pi->known = true;
	pi->catalog = e - catalog;
	pi->blocking = e->wake;
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(op_names[i].name, e->name))
			pi->op = op_names[i].op;
	if (pi->op == OP_NONE && e->cls == SP_CLASS_COPY)
		pi->op = OP_COPY;
	pi->stream = ARG(e, "stream");
	pi->func = ARG(e, "func");
	pi->exec = ARG(e, "exec");
	pi->graph = ARG(e, "graph");
	pi->event = ARG(e, "event");
	pi->count = ARG(e, "count");
	pi->datatype = ARG(e, "datatype");
	pi->bytes = ARG(e, "bytes");
	pi->host = ARG(e, "dst_host", "src_host");
	pi->d2h = ARG(e, "dst_host") != NO_ARG;
	pi->ptr = ARG(e, "ptr");
	pi->device = ARG(e, "device");
	pi->rank = ARG(e, "rank");
	pi->nranks = ARG(e, "nranks");
	pi->flags = ARG(e, "flags");
	if (pi->op == OP_NONE && e->cls == SP_CLASS_NCCL && pi->count != NO_ARG)
		pi->op = OP_COLLECTIVE;
}

struct model *model__new(const struct tf_header *hdr)
{
	struct model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nr_probes = hdr->nr_probes;
	m->probes = calloc(hdr->nr_probes ? hdr->nr_probes : 1, sizeof(*m->probes));
	if (!m->probes) {
		free(m);
		return NULL;
	}
	for (__u32 p = 0; p < hdr->nr_probes; p++)
		if (hdr->probes[p].catalog < (__u32)catalog_len)
			probe_info_fill(&m->probes[p], &catalog[hdr->probes[p].catalog]);
	snprintf(m->view.host, sizeof(m->view.host), "%s", hdr->host);
	snprintf(m->view.kernel, sizeof(m->view.kernel), "%s", hdr->kernel);
	m->view.attach_start_ns = hdr->attach_start_ns;
	m->view.attach_done_ns = hdr->attach_done_ns;
	return m;
}

/* Argument i of a call, false when it could not be read. */
static bool arg(const struct sp_call *c, int i, __u64 *val)
{
	if (i == NO_ARG || i >= SP_MAX_ARGS)
		return false;
	if (i >= SP_REG_ARGS && (c->entry.faults & (1 << SP_FAULT_STACK)))
		return false;
	*val = c->entry.args[i];
	return true;
}

static __u64 arg_or0(const struct sp_call *c, int i)
{
	__u64 v = 0;

	arg(c, i, &v);
	return v;
}

/* The value a call handed back through its output pointer, if it succeeded. */
static bool out_value(const struct sp_call *c, __u64 *val)
{
	if (!c->returned || (int)c->result != 0 || (c->ret_faults & (1 << SP_FAULT_OUT)))
		return false;
	*val = c->out;
	return true;
}

static bool succeeded(const struct sp_call *c)
{
	return c->returned && (int)c->result == 0;
}

static struct model_proc *proc_get(struct model *m, __u32 tgid)
{
	struct model_proc *p = hmap__get(&m->procs, tgid, 0);
	struct host_ranges *host;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || hmap__set(&m->procs, tgid, 0, p) ||
	    !push_ptr((void ***)&m->view.procs, &m->view.nr_procs, p)) {
		free(p);
		return NULL;
	}
	p->tgid = tgid;
	p->rank = p->nranks = p->device = -1;
	host = hmap__get(&m->hostmaps, tgid, 0);
	if (host) {
		p->host = *host;
		*host = (struct host_ranges){ 0 };
	}
	return p;
}

static struct model_thread *thread_get(struct model *m, struct model_proc *p, __u32 tid)
{
	struct model_thread *t = hmap__get(&m->threads, tid, 0);

	if (t && t->tgid == p->tgid)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t || hmap__set(&m->threads, tid, 0, t) ||
	    !push_ptr((void ***)&m->view.threads, &m->view.nr_threads, t)) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->tgid = p->tgid;
	p->nr_threads++;
	return t;
}

/* CU_STREAM_PER_THREAD (0x2) names a different stream on every thread. */
static __u64 stream_key(const struct sp_call *c, __u64 stream)
{
	/* the NULL stream is the legacy stream (0x1), PyTorch's default: never "no stream" */
	if (stream == 0)
		return 1;
	return stream == 2 ? 2 | (__u64)c->entry.tid << 32 : stream;
}

static struct model_stream *stream_get(struct model *m, const struct sp_call *c, __u64 handle)
{
	__u64 key = stream_key(c, handle);
	struct model_stream *s = hmap__get(&m->streams, c->entry.tgid, key);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s || hmap__set(&m->streams, c->entry.tgid, key, s)) {
		free(s);
		return NULL;
	}
	s->tgid = c->entry.tgid;
	s->key = key;
	/* the legacy and per-thread default streams need no creation to be known blocking */
	s->flags_known = key == 1 || (key & 0xffffffff) == 2;
	if (!push_ptr((void ***)&m->all_streams, &m->nr_all_streams, s))
		return NULL;	/* the map owns it */
	return s;
}

static struct model_event *event_get(struct model *m, __u32 tgid, __u64 handle)
{
	struct model_event *e = hmap__get(&m->events, tgid, handle);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e || hmap__set(&m->events, tgid, handle, e)) {
		free(e);
		return NULL;
	}
	return e;
}

/* The capture a stream is part of right now, NULL if none. */
static struct model_capture *capturing(struct model *m, const struct sp_call *c, __u64 stream)
{
	struct model_stream *s = hmap__get(&m->streams, c->entry.tgid, stream_key(c, stream));

	if (!s || !s->capture || s->capture->ended)
		return NULL;
	return s->capture;
}

/* 0 and CU_STREAM_LEGACY (0x1) name the one legacy stream. */
static bool is_legacy(__u64 stream)
{
	return stream == 0 || stream == 1;
}

static struct model_stream *work_stream(struct model *m, const struct sp_call *c, __u64 stream)
{
	return stream_get(m, c, is_legacy(stream) ? 0 : stream);
}

enum work_what { WORK_GRAPH, WORK_KERNEL, WORK_COPY };

static void queue_work(struct model_stream *s, enum work_what what)
{
	if (!s)
		return;
	if (what == WORK_GRAPH)
		s->queued.graphs++;
	else if (what == WORK_KERNEL)
		s->queued.kernels++;
	else
		s->queued.copies++;
}

static __u32 sub_or0(__u32 a, __u32 b)
{
	return a > b ? a - b : 0;
}

/* Work of a that is not in b. */
static struct work_count work_sub(const struct work_count *a, const struct work_count *b)
{
	return (struct work_count){ sub_or0(a->graphs, b->graphs), sub_or0(a->kernels, b->kernels),
				    sub_or0(a->copies, b->copies) };
}

static void work_add(struct work_count *sum, const struct work_count *w)
{
	sum->graphs += w->graphs;
	sum->kernels += w->kernels;
	sum->copies += w->copies;
}

static bool work_any(const struct work_count *w)
{
	return w->graphs || w->kernels || w->copies;
}

static __u32 work_total(const struct work_count *w)
{
	return w->graphs + w->kernels + w->copies;
}

static struct work_count work_max(const struct work_count *a, const struct work_count *b)
{
	return (struct work_count){ a->graphs > b->graphs ? a->graphs : b->graphs,
				    a->kernels > b->kernels ? a->kernels : b->kernels,
				    a->copies > b->copies ? a->copies : b->copies };
}

/* In flight on s and not yet ordered before something: queued less max(drained, mark). */
static struct work_count in_flight_since(const struct model_stream *s,
					 const struct work_count *mark)
{
	struct work_count done = work_max(&s->drained, mark);

	return work_sub(&s->queued, &done);
}

/* Done up to at: what was queued before an event record, say. */
static void drain_to(struct model_stream *s, const struct work_count *at)
{
	s->drained.graphs = at->graphs > s->drained.graphs ? at->graphs : s->drained.graphs;
	s->drained.kernels = at->kernels > s->drained.kernels ? at->kernels : s->drained.kernels;
	s->drained.copies = at->copies > s->drained.copies ? at->copies : s->drained.copies;
}

/* Which streams of the process a call waits for. */
enum wait_scope {
	WAIT_NONE,	/* none by itself (an event's record is added apart) */
	WAIT_ONE,	/* one stream */
	WAIT_BLOCKING,	/* the legacy stream and every stream not created non-blocking */
	WAIT_DEVICE,	/* every stream */
};

static bool in_scope(const struct model_stream *s, const struct model_stream *one,
		     enum wait_scope scope)
{
	switch (scope) {
	case WAIT_ONE:
		return s == one;
	case WAIT_BLOCKING:
		return !s->non_blocking;
	case WAIT_DEVICE:
		return true;
	default:
		return false;
	}
}

/* Waited work of one stream: the stream holding most of it is named in the verdict. */
static void note_waited(struct model_sync *sy, const struct model_stream *s,
			const struct work_count *w)
{
	if (!work_any(w))
		return;
	if (!sy->waited_on || work_total(w) > sy->waited_most) {
		sy->waited_on = s->key;
		sy->waited_most = work_total(w);
	}
	sy->waited_streams++;
	work_add(&sy->waited, w);
}

/* Work in flight at entry: what the call waits for, and the rest of the process's. */
static void split_in_flight(struct model *m, const struct model_stream *one, enum wait_scope scope,
			    struct model_sync *sy)
{
	for (size_t i = 0; i < m->nr_all_streams; i++) {
		const struct model_stream *s = m->all_streams[i];
		struct work_count w;

		if (s->tgid != sy->tgid)
			continue;
		w = work_sub(&s->queued, &s->drained);
		if (!in_scope(s, one, scope)) {
			work_add(&sy->other, &w);
			continue;
		}
		note_waited(sy, s, &w);
	}
}

static void drain_scope(struct model *m, __u32 tgid, const struct model_stream *one,
			enum wait_scope scope)
{
	for (size_t i = 0; i < m->nr_all_streams; i++) {
		struct model_stream *s = m->all_streams[i];

		if (s->tgid == tgid && in_scope(s, one, scope))
			s->drained = s->queued;
	}
}

/* An event sync or query waits for its stream's work up to the record. */
static void split_event(struct model *m, const struct model_event *e, struct model_sync *sy)
{
	struct work_count w;

	split_in_flight(m, NULL, WAIT_NONE, sy);
	if (!e || !e->stream) {
		sy->flags |= SYNC_WAIT_UNKNOWN;
		return;
	}
	w = work_sub(&e->at, &e->stream->drained);
	sy->waited = w;
	sy->other = work_sub(&sy->other, &w);
}

static bool device_idle(const struct model *m, __u32 tgid)
{
	for (size_t i = 0; i < m->nr_all_streams; i++) {
		const struct model_stream *s = m->all_streams[i];
		struct work_count w = work_sub(&s->queued, &s->drained);

		if (s->tgid == tgid && work_any(&w))
			return false;
	}
	return true;
}

static void sync_init(struct model_sync *sy, const struct model_thread *t, const struct sp_call *c,
		      const struct probe_info *pi, enum sync_kind kind, __u64 handle)
{
	memset(sy, 0, sizeof(*sy));
	sy->ts = c->entry.ts;
	sy->ts_return = c->has_ret && c->returned ? c->ts_return : c->entry.ts;
	if (c->has_ret && !c->returned)
		sy->flags |= SYNC_UNRETURNED;
	else if (c->has_ret && (int)c->result != 0)
		sy->flags |= SYNC_FAILED;
	sy->result = c->has_ret && c->returned ? (int)c->result : 0;
	sy->tgid = c->entry.tgid;
	sy->tid = c->entry.tid;
	sy->event_index = t->nr_events;
	sy->queries = 1;
	sy->name = pi->catalog;
	sy->kind = kind;
	sy->handle = handle;
}

/* Kinds after which the device may have nothing left to do because the call waited. */
static bool waits(enum sync_kind kind)
{
	return kind == SYNC_CTX || kind == SYNC_STREAM || kind == SYNC_EVENT || kind == SYNC_COPY ||
	       kind == SYNC_PAGEABLE || kind == SYNC_FREE || kind == SYNC_POLL;
}

/* After its drains: keep it, and let the process's next launch close its idle interval. */
static int sync_push(struct model *m, struct model_proc *p, struct model_sync *sy)
{
	struct model_view *v = &m->view;

	if (waits(sy->kind) && !(sy->flags & (SYNC_UNRETURNED | SYNC_FAILED)) &&
	    device_idle(m, sy->tgid))
		sy->flags |= SYNC_DRAINS_DEVICE;
	if (v->nr_syncs == v->cap_syncs) {
		size_t cap = v->cap_syncs ? v->cap_syncs * 2 : 256;
		struct model_sync *grown = realloc(v->syncs, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		v->syncs = grown;
		v->cap_syncs = cap;
	}
	v->syncs[v->nr_syncs++] = *sy;
	if (sy->flags & SYNC_UNRETURNED)
		return 0;
	if (!grow_array((void **)&p->pending, &p->cap_pending, p->nr_pending + 1,
			sizeof(*p->pending)))
		return -ENOMEM;
	p->pending[p->nr_pending++] = v->nr_syncs - 1;
	return 0;
}

/* A launch entry: it ends the idle interval of every sync of the process that returned before. */
static void note_launch(struct model *m, struct model_proc *p, __u64 ts)
{
	__u32 kept = 0;

	for (__u32 i = 0; i < p->nr_pending; i++) {
		struct model_sync *sy = &m->view.syncs[p->pending[i]];

		if (sy->ts_return <= ts) {
			sy->next_launch_ns = ts;
			continue;
		}
		sy->flags |= SYNC_LAUNCH_DURING;
		p->pending[kept++] = p->pending[i];
	}
	p->nr_pending = kept;
}

/* Queue a launch's work and note its entry. */
static void launched(struct model *m, struct model_proc *p, const struct sp_call *c, __u64 stream,
		     enum work_what what)
{
	queue_work(work_stream(m, c, stream), what);
	note_launch(m, p, c->entry.ts);
}

/*
 * Work put on the legacy stream (already queued there) waits for the work in
 * flight on every other blocking stream: that is its implicit sync. Work of its
 * own stream is plain stream order, and work it was already ordered behind (by
 * an earlier legacy call, or an event it waited for) is not waited for twice.
 * A stream created before attach may or may not be blocking: work behind it is
 * "unknown". The streams it serialised with wait for it in turn: that is the
 * same barrier, not another one.
 */
static int legacy_work(struct model *m, struct model_proc *p, struct model_thread *t,
		       const struct sp_call *c, const struct probe_info *pi)
{
	struct model_stream *legacy = work_stream(m, c, 0);
	struct model_sync sy, unknown = { 0 };

	if (!legacy)
		return -ENOMEM;
	sync_init(&sy, t, c, pi, SYNC_LEGACY, 0);
	for (size_t i = 0; i < m->nr_all_streams; i++) {
		struct model_stream *s = m->all_streams[i];
		struct work_count w;

		if (s->tgid != sy.tgid)
			continue;
		w = s == legacy ? work_sub(&s->queued, &s->drained)
				: in_flight_since(s, &s->before_legacy);
		if (s == legacy || s->non_blocking) {
			work_add(&sy.other, &w);
			continue;
		}
		if (s->flags_known)
			note_waited(&sy, s, &w);
		else
			note_waited(&unknown, s, &w);
		s->before_legacy = s->queued;
		if (s->flags_known && work_any(&w))
			s->legacy_before = legacy->queued;
	}
	/* only streams of unknown flags had work: what it waits for cannot be told */
	if (!work_any(&sy.waited) && work_any(&unknown.waited)) {
		sy.flags |= SYNC_FLAGS_UNKNOWN;
		sy.waited = unknown.waited;
		sy.waited_on = unknown.waited_on;
		sy.waited_streams = unknown.waited_streams;
	} else {
		work_add(&sy.other, &unknown.waited);
	}
	return sync_push(m, p, &sy);
}

/*
 * Work put on a known blocking stream (already queued there) waits for the
 * legacy stream's work in flight, unless an event or an earlier barrier already
 * ordered it behind that work.
 */
static int held_back(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi, __u64 stream)
{
	struct model_stream *s = work_stream(m, c, stream), *legacy;
	struct model_sync sy;
	struct work_count w;

	if (!s)
		return -ENOMEM;
	if (is_legacy(stream) || s->non_blocking || !s->flags_known)
		return 0;
	legacy = hmap__get(&m->streams, c->entry.tgid, 1);
	if (!legacy || legacy == s)
		return 0;
	w = in_flight_since(legacy, &s->legacy_before);
	s->legacy_before = legacy->queued;
	if (!work_any(&w))
		return 0;
	sync_init(&sy, t, c, pi, SYNC_LEGACY, s->key);
	sy.flags |= SYNC_HELD_BACK;
	note_waited(&sy, legacy, &w);
	return sync_push(m, p, &sy);
}

/* Work on a stream, outside capture: how it orders with the legacy stream. */
static int stream_order(struct model *m, struct model_proc *p, struct model_thread *t,
			const struct sp_call *c, const struct probe_info *pi, __u64 stream)
{
	if (is_legacy(stream))
		return legacy_work(m, p, t, c, pi);
	return held_back(m, p, t, c, pi, stream);
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

static int loop_event(struct model_thread *t, const struct sp_call *c, const struct probe_info *pi,
		      enum loop_kind kind, __u64 handle, __u64 stream, __u8 flags)
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
	return add_loop_event(t, &ev);
}

static int capture_add_kernel(struct model_capture *cap, __u64 func, bool side)
{
	struct model_kernel *k = NULL;

	for (__u32 i = 0; i < cap->nr_kernels; i++)
		if (cap->kernels[i].func == func)
			k = &cap->kernels[i];
	if (!k) {
		if (!grow_array((void **)&cap->kernels, &cap->cap_kernels, cap->nr_kernels + 1,
				sizeof(*cap->kernels)))
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

static int launch(struct model *m, struct model_proc *p, struct model_thread *t,
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
	cap = capturing(m, c, stream);
	if (cap)
		return capture_add_kernel(cap, func, stream_key(c, stream) != cap->stream);
	launched(m, p, c, stream, WORK_KERNEL);
	if (stream_order(m, p, t, c, pi, stream))
		return -ENOMEM;
	return loop_event(t, c, pi, LOOP_KERNEL, func, stream_key(c, stream), 0);
}

static int host_func(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi)
{
	__u64 stream = arg_or0(c, pi->stream);
	struct model_capture *cap = capturing(m, c, stream);

	if (cap) {
		cap->host_funcs++;
		return 0;
	}
	launched(m, p, c, stream, WORK_KERNEL);
	if (stream_order(m, p, t, c, pi, stream))
		return -ENOMEM;
	return loop_event(t, c, pi, LOOP_KERNEL, arg_or0(c, 1), stream_key(c, stream), 0);
}

static int begin_capture(struct model *m, struct model_proc *p, const struct sp_call *c,
			 const struct probe_info *pi)
{
	__u64 stream = arg_or0(c, pi->stream);
	struct model_stream *s = stream_get(m, c, stream);
	struct model_capture *cap = calloc(1, sizeof(*cap));

	if (!s || !cap || !push_ptr((void ***)&m->view.captures, &m->view.nr_captures, cap)) {
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

static int end_capture(struct model *m, const struct sp_call *c, const struct probe_info *pi)
{
	struct model_capture *cap = capturing(m, c, arg_or0(c, pi->stream));
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

static struct model_exec *exec_new(struct model *m, struct model_proc *p, __u64 handle)
{
	struct model_exec *x = calloc(1, sizeof(*x));

	if (!x || hmap__set(&m->execs, p->tgid, handle, x) ||
	    !push_ptr((void ***)&m->view.execs, &m->view.nr_execs, x)) {
		free(x);
		return NULL;
	}
	x->id = m->view.nr_execs - 1;
	x->tgid = p->tgid;
	x->handle = handle;
	p->nr_execs++;
	return x;
}

static int instantiate(struct model *m, struct model_proc *p, const struct sp_call *c,
		       const struct probe_info *pi)
{
	__u64 handle, graph = arg_or0(c, pi->graph);
	struct model_exec *x;

	if (!out_value(c, &handle))
		return 0;
	x = exec_new(m, p, handle);
	if (!x)
		return -ENOMEM;
	x->graph = graph;
	x->capture = hmap__get(&m->graphs, p->tgid, graph);
	x->instantiated = true;
	x->created_ns = c->ts_return;
	return 0;
}

static int exec_update(struct model *m, const struct sp_call *c, const struct probe_info *pi)
{
	struct model_exec *x = hmap__get(&m->execs, c->entry.tgid, arg_or0(c, pi->exec));
	__u64 graph = arg_or0(c, pi->graph);

	if (!x || x->destroyed || !succeeded(c))
		return 0;
	x->graph = graph;
	x->capture = hmap__get(&m->graphs, c->entry.tgid, graph);
	return 0;
}

static int graph_launch(struct model *m, struct model_proc *p, struct model_thread *t,
			const struct sp_call *c, const struct probe_info *pi)
{
	__u64 handle = arg_or0(c, pi->exec), stream = arg_or0(c, pi->stream);
	struct model_exec *x = hmap__get(&m->execs, p->tgid, handle);
	struct model_capture *cap = capturing(m, c, stream);

	if (!x || x->destroyed) {
		/* captured before attach: its role comes from behaviour */
		x = exec_new(m, p, handle);
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
	launched(m, p, c, stream, WORK_GRAPH);
	if (stream_order(m, p, t, c, pi, stream))
		return -ENOMEM;
	return loop_event(t, c, pi, LOOP_GRAPH, x->id, stream_key(c, stream), 0);
}

/*
 * An "async" copy that returns this long after its entry, with work in flight on
 * its stream, waited for that work: its host memory is pageable. On the H200 an
 * async D2H into pinned memory returned within 4-13 us, a small pageable one
 * with the stream idle within 22 us (docs/host-memory.md).
 */
#define COPY_WAIT_NS 50000

static __u64 blocked_ns(const struct sp_call *c)
{
	return c->has_ret && c->returned && c->ts_return > c->entry.ts ? c->ts_return - c->entry.ts
									 : 0;
}

/*
 * By the CUDA rules: a D2H into pageable memory waits for the stream; an H2D from
 * pageable memory is staged and waits for nothing, and into or from pinned memory
 * a copy is only work. The measured blocked time overrules what the memory says.
 * SYNC_KIND_NR: the copy is only work.
 */
static enum sync_kind async_copy_kind(struct host_class *hc, const struct probe_info *pi,
				      const struct sp_call *c, const struct work_count *waited)
{
	/* kernels or graphs to wait for: a copy alone ahead of it says little */
	/* pinned memory, seen so or in the driver's maps, is only slow now and then */
	if ((waited->graphs || waited->kernels) && blocked_ns(c) >= COPY_WAIT_NS &&
	    hc->kind != HOST_PINNED) {
		if (hc->kind != HOST_PAGEABLE)
			*hc = (struct host_class){ HOST_PAGEABLE, HOST_FROM_MEASURED };
		return SYNC_PAGEABLE;
	}
	if (hc->kind == HOST_PINNED || !pi->d2h)
		return SYNC_KIND_NR;
	return hc->kind == HOST_PAGEABLE ? SYNC_PAGEABLE : SYNC_UNKNOWN_HOST;
}

/*
 * A copy's kind: synchronous; "async" to or from pageable memory, or memory of
 * unknown kind; or only work (pinned, staged, device to device), which orders
 * with the legacy stream like any work. *blocking: the host waited for it.
 */
static int classify_copy(struct model *m, struct model_proc *p, struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi, __u64 stream,
			 bool *blocking)
{
	struct model_stream *s = work_stream(m, c, stream);
	struct host_class hc = { HOST_UNKNOWN, HOST_FROM_NONE };
	enum sync_kind kind = SYNC_KIND_NR;
	struct model_sync sy;
	__u64 host;

	if (!s)
		return -ENOMEM;
	sync_init(&sy, t, c, pi, SYNC_COPY, stream_key(c, stream));
	/* synchronous copies run on the legacy stream */
	split_in_flight(m, s, pi->blocking || is_legacy(stream) ? WAIT_BLOCKING : WAIT_ONE, &sy);
	if (pi->blocking) {
		kind = SYNC_COPY;
	} else if (pi->host != NO_ARG && arg(c, pi->host, &host)) {
		hc = hostmem__classify(&p->host, host, p->pinned_known);
		kind = async_copy_kind(&hc, pi, c, &sy.waited);
	}
	/* known pageable from the start: the cycles read it as a host wait */
	*blocking = pi->blocking || (p->pinned_known && hc.kind == HOST_PAGEABLE);
	if (kind == SYNC_KIND_NR) {
		queue_work(s, WORK_COPY);
		return pi->stream != NO_ARG ? stream_order(m, p, t, c, pi, stream) : 0;
	}
	sy.kind = kind;
	sy.host = hc.kind;
	sy.host_from = hc.from;
	if (kind == SYNC_COPY && !(sy.flags & SYNC_FAILED))
		drain_scope(m, p->tgid, s, WAIT_BLOCKING);
	else if (kind == SYNC_PAGEABLE && !(sy.flags & SYNC_FAILED))
		/* it waits for the stream and returns when the copy is done */
		drain_scope(m, p->tgid, s, is_legacy(stream) ? WAIT_BLOCKING : WAIT_ONE);
	else
		queue_work(s, WORK_COPY);
	return sync_push(m, p, &sy);
}

static int copy(struct model *m, struct model_proc *p, struct model_thread *t,
		const struct sp_call *c, const struct probe_info *pi)
{
	struct model_capture *cap;
	bool blocking = false;
	__u64 stream = 0;

	if (pi->stream != NO_ARG && !arg(c, pi->stream, &stream))
		return 0;
	cap = pi->stream != NO_ARG ? capturing(m, c, stream) : NULL;
	if (cap) {
		cap->copies++;
		return 0;
	}
	if (classify_copy(m, p, t, c, pi, stream, &blocking))
		return -ENOMEM;
	return loop_event(t, c, pi, LOOP_COPY, 0, stream_key(c, stream),
			  (pi->d2h ? LOOP_D2H : 0) | (blocking ? LOOP_BLOCKING : 0));
}

/* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: the call was made while a capture was open. */
static bool capture_failure(const struct sp_call *c)
{
	return c->has_ret && c->returned && (int)c->result == CU_CAPTURE_UNSUPPORTED;
}

/* Context, stream and event syncs, frees and allocs: what they wait for, what they drain. */
static int classify_wait(struct model *m, struct model_proc *p, struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi)
{
	__u64 raw = arg_or0(c, pi->stream);
	struct model_stream *s = NULL;
	struct model_event *e = NULL;
	enum wait_scope scope = WAIT_DEVICE;
	enum sync_kind kind = SYNC_CTX;
	struct model_sync sy;
	__u64 handle = 0;

	switch (pi->op) {
	case OP_STREAM_SYNC:
		s = work_stream(m, c, raw);
		if (!s)
			return -ENOMEM;
		kind = capturing(m, c, raw) ? SYNC_CAPTURE : SYNC_STREAM;
		scope = is_legacy(raw) ? WAIT_BLOCKING : WAIT_ONE;
		handle = stream_key(c, raw);
		break;
	case OP_EVENT_SYNC:
		handle = arg_or0(c, pi->event);
		e = hmap__get(&m->events, c->entry.tgid, handle);
		kind = SYNC_EVENT;
		scope = WAIT_NONE;
		break;
	case OP_MEM_FREE:
		kind = SYNC_FREE;
		break;
	case OP_MEM_ALLOC:
		kind = SYNC_ALLOC;
		break;
	default:
		break;
	}
	if (capture_failure(c))
		kind = SYNC_CAPTURE;
	sync_init(&sy, t, c, pi, kind, handle);
	if (pi->op == OP_EVENT_SYNC)
		split_event(m, e, &sy);
	else
		split_in_flight(m, s, scope, &sy);
	if (!(sy.flags & (SYNC_FAILED | SYNC_UNRETURNED)) && kind != SYNC_ALLOC) {
		if (e && e->stream)
			drain_to(e->stream, &e->at);
		else if (pi->op != OP_EVENT_SYNC)
			drain_scope(m, p->tgid, s, scope);
	}
	return sync_push(m, p, &sy);
}

static int sync_call(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi)
{
	__u64 handle = 0;
	__u8 flags = LOOP_BLOCKING;
	int ret;

	if (classify_wait(m, p, t, c, pi))
		return -ENOMEM;

	switch (pi->op) {
	case OP_STREAM_SYNC:
		handle = stream_key(c, arg_or0(c, pi->stream));
		break;
	case OP_EVENT_SYNC:
		handle = arg_or0(c, pi->event);
		break;
	default:
		flags |= LOOP_CTX_WIDE;
		break;
	}
	ret = loop_event(t, c, pi, LOOP_SYNC, handle, 0, flags);
	if (!ret && pi->op == OP_EVENT_SYNC) {
		struct model_event *e = hmap__get(&m->events, c->entry.tgid, handle);

		/* which record it waits for: the event's latest one */
		t->events[t->nr_events - 1].serial = e ? e->serial : 0;
	}
	return ret;
}

static int event_record(struct model *m, struct model_thread *t, const struct sp_call *c,
			const struct probe_info *pi)
{
	__u64 handle = arg_or0(c, pi->event), stream = arg_or0(c, pi->stream);
	struct model_event *e = event_get(m, c->entry.tgid, handle);
	struct model_capture *cap = capturing(m, c, stream);
	int ret;

	if (!e)
		return -ENOMEM;
	if (cap) {
		e->captured_in = cap;
		return 0;
	}
	e->captured_in = NULL;
	e->serial = ++m->record_serial;
	e->stream = work_stream(m, c, stream);
	if (!e->stream)
		return -ENOMEM;
	e->at = e->stream->queued;
	ret = loop_event(t, c, pi, LOOP_RECORD, handle, stream_key(c, stream), 0);
	if (!ret)
		t->events[t->nr_events - 1].serial = e->serial;
	return ret;
}

/* A stream that waits on an event recorded in a capture joins that capture. */
/* A stream waiting on an event is ordered behind its stream's work up to the record. */
static int order_by_event(struct model *m, const struct sp_call *c, struct model_event *e,
			  __u64 stream)
{
	struct model_stream *s = work_stream(m, c, stream);

	if (!s)
		return -ENOMEM;
	if (is_legacy(stream))
		e->stream->before_legacy = work_max(&e->stream->before_legacy, &e->at);
	else if (e->stream->key == 1)
		s->legacy_before = work_max(&s->legacy_before, &e->at);
	return 0;
}

static int wait_event(struct model *m, const struct sp_call *c, const struct probe_info *pi)
{
	__u64 stream = arg_or0(c, pi->stream);
	struct model_event *e = hmap__get(&m->events, c->entry.tgid, arg_or0(c, pi->event));
	struct model_capture *cap = e ? e->captured_in : NULL;
	struct model_stream *s;

	if (!cap && e && e->stream && !capturing(m, c, stream))
		return order_by_event(m, c, e, stream);
	if (!cap || cap->ended || capturing(m, c, stream))
		return 0;
	s = stream_get(m, c, stream);
	if (!s || !grow_array((void **)&cap->side_streams, &cap->cap_side, cap->nr_side + 1,
			      sizeof(*cap->side_streams)))
		return -ENOMEM;
	cap->side_streams[cap->nr_side++] = stream_key(c, stream);
	s->capture = cap;
	return 0;
}

static const char *intern(struct model *m, const char *s, size_t max_len)
{
	char *copy = strndup(s, max_len);

	if (!copy || !push_ptr((void ***)&m->strings, &m->nr_strings, copy)) {
		free(copy);
		return NULL;
	}
	return copy;
}

static int named(struct model *m, const struct sp_call *c)
{
	const char *name;
	__u64 handle;

	if (!out_value(c, &handle) || (c->entry.faults & (1 << SP_FAULT_DATA)) || !c->data_len)
		return 0;
	name = intern(m, (const char *)c->data, c->data_len);
	if (!name)
		return -ENOMEM;
	return hmap__set(&m->names, c->entry.tgid, handle, (void *)name);
}

static int kernel_func(struct model *m, const struct sp_call *c)
{
	const char *name = hmap__get(&m->names, c->entry.tgid, c->entry.args[1]);
	__u64 func;

	if (!name || !out_value(c, &func))
		return 0;
	return hmap__set(&m->names, c->entry.tgid, func, (void *)name);
}

static int collective(struct model *m, struct model_proc *p, struct model_thread *t,
		      const struct sp_call *c, const struct probe_info *pi)
{
	/* ncclDataType_t 0..11: int8, uint8, (u)int32, (u)int64, half, float, double, bf16, fp8 */
	static const __u8 type_bytes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	__u64 stream, count = arg_or0(c, pi->count), type = arg_or0(c, pi->datatype);
	struct model_capture *cap;
	struct model_collective *coll = NULL;

	if (!arg(c, pi->stream, &stream))
		return 0;
	cap = capturing(m, c, stream);
	if (!cap) {
		launched(m, p, c, stream, WORK_KERNEL);
		return loop_event(t, c, pi, LOOP_COLLECTIVE, 0, stream_key(c, stream), 0);
	}
	for (__u32 i = 0; i < cap->nr_colls; i++)
		if (cap->colls[i].name == pi->catalog)
			coll = &cap->colls[i];
	if (!coll) {
		if (!grow_array((void **)&cap->colls, &cap->cap_colls, cap->nr_colls + 1,
				sizeof(*cap->colls)))
			return -ENOMEM;
		coll = &cap->colls[cap->nr_colls++];
		memset(coll, 0, sizeof(*coll));
		coll->name = pi->catalog;
	}
	coll->count++;
	coll->bytes += count * (type < sizeof(type_bytes) ? type_bytes[(__u32)type] : 1);
	return 0;
}

static void comm_init(struct model_proc *p, const struct sp_call *c, const struct probe_info *pi)
{
	__u64 rank, nranks;

	if (!succeeded(c) || p->rank >= 0 || !arg(c, pi->rank, &rank) ||
	    !arg(c, pi->nranks, &nranks))
		return;
	p->rank = (int)rank;
	p->nranks = (int)nranks;
}

static int host_memory(struct model_proc *p, const struct sp_call *c, const struct probe_info *pi)
{
	__u64 ptr = 0, bytes = arg_or0(c, pi->bytes);

	switch (pi->op) {
	case OP_HOST_ALLOC:
		if (out_value(c, &ptr))
			return hostmem__pin(&p->host, ptr, bytes);
		return 0;
	case OP_HOST_REGISTER:
		if (succeeded(c) && arg(c, pi->ptr, &ptr))
			return hostmem__pin(&p->host, ptr, bytes);
		return 0;
	default:
		if (arg(c, pi->ptr, &ptr))
			hostmem__unpin(&p->host, ptr);
		return 0;
	}
}

/* Calls that are neither setup nor name lookups: after one, pinned memory may have been missed. */
static bool does_work(const struct probe_info *pi)
{
	enum sp_class cls = catalog[pi->catalog].cls;

	return cls != SP_CLASS_DRIVER && cls != SP_CLASS_LIFECYCLE && cls != SP_CLASS_NAMES;
}

/* Where a query looks: the stream queried, or the stream of the event's last record. */
static void split_query(struct model *m, const struct sp_call *c, const struct probe_info *pi,
			struct model_sync *sy)
{
	if (pi->op == OP_EVENT_QUERY) {
		split_event(m, hmap__get(&m->events, c->entry.tgid, sy->handle), sy);
		return;
	}
	split_in_flight(m, hmap__get(&m->streams, c->entry.tgid, sy->handle == 1 ? 0 : sy->handle),
			is_legacy(sy->handle) ? WAIT_BLOCKING : WAIT_ONE, sy);
}

/* A query that found the work done: as good as a sync that returned at once. */
static void query_drain(struct model *m, const struct sp_call *c, const struct probe_info *pi,
			__u64 handle)
{
	struct model_event *e;

	if (pi->op == OP_STREAM_QUERY) {
		struct model_stream *s = hmap__get(&m->streams, c->entry.tgid,
						   is_legacy(handle) ? 0 : handle);

		drain_scope(m, c->entry.tgid, s, is_legacy(handle) ? WAIT_BLOCKING : WAIT_ONE);
		return;
	}
	e = hmap__get(&m->events, c->entry.tgid, handle);
	if (e && e->stream)
		drain_to(e->stream, &e->at);
}

/*
 * Polling: queries of one stream or event on one thread, with no other loop call
 * between, until one returns 0, are one spin. A run given up before that is no sync.
 */
static int query(struct model *m, struct model_proc *p, struct model_thread *t,
		 const struct sp_call *c, const struct probe_info *pi)
{
	__u64 raw = arg_or0(c, pi->op == OP_STREAM_QUERY ? pi->stream : pi->event);
	__u64 handle = pi->op == OP_STREAM_QUERY ? stream_key(c, raw) : raw;
	bool ready = c->returned && c->result == 0;
	bool not_ready = c->returned && (int)c->result == CU_NOT_READY;
	struct model_sync *run = &t->poll;

	if (t->polling && (run->name != pi->catalog || run->handle != handle ||
			   run->event_index != t->nr_events))
		t->polling = false;
	if (capture_failure(c)) {
		struct model_sync sy;

		t->polling = false;
		sync_init(&sy, t, c, pi, SYNC_CAPTURE, handle);
		split_query(m, c, pi, &sy);
		return sync_push(m, p, &sy);
	}
	if (!ready && !not_ready) {
		t->polling = false;
		return 0;
	}
	if (!t->polling) {
		sync_init(run, t, c, pi, SYNC_POLL, handle);
		split_query(m, c, pi, run);
		run->queries = 0;
		t->polling = true;
	}
	run->queries++;
	run->ts_return = c->ts_return;
	if (!ready)
		return 0;
	t->polling = false;
	run->flags &= ~SYNC_FAILED;
	query_drain(m, c, pi, handle);
	return sync_push(m, p, run);
}

static int stream_create(struct model *m, struct model_proc *p, const struct sp_call *c,
			 const struct probe_info *pi)
{
	struct model_stream *s;
	__u64 handle;

	if (!out_value(c, &handle))
		return 0;
	p->nr_streams++;
	s = stream_get(m, c, handle);
	if (!s)
		return -ENOMEM;
	s->non_blocking = arg_or0(c, pi->flags) & STREAM_NON_BLOCKING;
	s->flags_known = true;
	return 0;
}

static int dispatch(struct model *m, struct model_proc *p, struct model_thread *t,
		    const struct sp_call *c, const struct probe_info *pi)
{
	__u64 v;

	switch (pi->op) {
	case OP_LAUNCH:
	case OP_LAUNCH_EX:
		return launch(m, p, t, c, pi);
	case OP_HOST_FUNC:
		return host_func(m, p, t, c, pi);
	case OP_GRAPH_LAUNCH:
		return graph_launch(m, p, t, c, pi);
	case OP_BEGIN_CAPTURE:
		return begin_capture(m, p, c, pi);
	case OP_END_CAPTURE:
		return end_capture(m, c, pi);
	case OP_INSTANTIATE:
		return instantiate(m, p, c, pi);
	case OP_EXEC_UPDATE:
		return exec_update(m, c, pi);
	case OP_EXEC_DESTROY: {
		struct model_exec *x = hmap__get(&m->execs, p->tgid, arg_or0(c, pi->exec));

		if (x)
			x->destroyed = true;
		return 0;
	}
	case OP_CTX_SYNC:
	case OP_STREAM_SYNC:
	case OP_EVENT_SYNC:
	case OP_MEM_FREE:
		return c->entry.depth ? 0 : sync_call(m, p, t, c, pi);
	case OP_MEM_ALLOC:
		return c->entry.depth ? 0 : classify_wait(m, p, t, c, pi);
	case OP_STREAM_QUERY:
	case OP_EVENT_QUERY:
		return c->entry.depth ? 0 : query(m, p, t, c, pi);
	case OP_COPY:
		return c->entry.depth ? 0 : copy(m, p, t, c, pi);
	case OP_HOST_ALLOC:
	case OP_HOST_REGISTER:
	case OP_HOST_RELEASE:
		return host_memory(p, c, pi);
	case OP_EVENT_RECORD:
		return event_record(m, t, c, pi);
	case OP_WAIT_EVENT:
		return wait_event(m, c, pi);
	case OP_EVENT_CREATE:
		p->nr_events += out_value(c, &v);
		return 0;
	case OP_NAMED:
		return named(m, c);
	case OP_KERNEL_FUNC:
		return kernel_func(m, c);
	case OP_STREAM_CREATE:
		return stream_create(m, p, c, pi);
	case OP_CTX_RETAIN:
		if (p->device < 0 && arg(c, pi->device, &v))
			p->device = (int)v;
		return 0;
	case OP_COLLECTIVE:
		return c->entry.depth ? 0 : collective(m, p, t, c, pi);
	case OP_COMM_INIT:
		comm_init(p, c, pi);
		return 0;
	case OP_NONE:
		return 0;
	}
	return 0;
}

int model__call(struct model *m, const struct sp_call *c)
{
	const struct probe_info *pi;
	struct model_proc *p;
	struct model_thread *t;
	int ret;

	if (c->entry.probe >= m->nr_probes || !m->probes[c->entry.probe].known)
		return 0;
	pi = &m->probes[c->entry.probe];
	p = proc_get(m, c->entry.tgid);
	t = p ? thread_get(m, p, c->entry.tid) : NULL;
	if (!t) {
		m->view.out_of_memory = true;
		return -ENOMEM;
	}
	if (c->has_ret)
		p->hits_return++;
	else
		p->hits_entry++;
	if (!p->calls++)
		p->first_ns = c->entry.ts;
	p->last_ns = c->entry.ts;
	if (!t->calls++)
		t->first_ns = c->entry.ts;
	t->last_ns = c->entry.ts;
	if (!m->view.calls++)
		m->view.first_ns = c->entry.ts;
	m->view.last_ns = c->entry.ts;
	/* a context made before any other work: every pinned allocation will be seen */
	if (pi->op == OP_CTX_RETAIN && !p->work_calls)
		p->pinned_known = true;
	if (does_work(pi))
		p->work_calls++;
	ret = dispatch(m, p, t, c, pi);
	if (ret)
		m->view.out_of_memory = true;
	return ret;
}

/* Same kernels (function and count) and collectives: one model, another batch size. */
bool model__same_kernels(const struct model_capture *a, const struct model_capture *b)
{
	if (!a || !b || a->nr_kernels != b->nr_kernels || a->nr_colls != b->nr_colls)
		return false;
	for (__u32 i = 0; i < a->nr_kernels; i++) {
		bool found = false;

		for (__u32 j = 0; j < b->nr_kernels && !found; j++)
			found = a->kernels[i].func == b->kernels[j].func &&
				a->kernels[i].count == b->kernels[j].count;
		if (!found)
			return false;
	}
	for (__u32 i = 0; i < a->nr_colls; i++) {
		bool found = false;

		for (__u32 j = 0; j < b->nr_colls && !found; j++)
			found = a->colls[i].name == b->colls[j].name &&
				a->colls[i].count == b->colls[j].count;
		if (!found)
			return false;
	}
	return true;
}

/* Counter records hold totals since the start: the latest one is what counts. */
static void counters(struct model *m, const __u64 *totals)
{
	m->view.dropped = totals[SP_CNT_DROP_CALL] + totals[SP_CNT_DROP_RET];
	m->view.failed_reads = 0;
	for (int f = 0; f < SP_FAULT_NR; f++)
		m->view.failed_reads += totals[SP_CNT_FAULT_BASE + f];
}

/* A library attached after the header: its probes continue the cookie numbering. */
static void add_late_probe(struct model *m, const struct sp_probe_rec *pr)
{
	struct probe_info *grown;

	if (pr->cookie != m->nr_probes || pr->cookie >= SP_MAX_PROBES)
		return;
	grown = realloc(m->probes, (m->nr_probes + 1) * sizeof(*grown));
	if (!grown) {
		m->view.out_of_memory = true;
		return;
	}
	m->probes = grown;
	memset(&grown[m->nr_probes], 0, sizeof(*grown));
	if (pr->catalog < (__u32)catalog_len)
		probe_info_fill(&grown[m->nr_probes], &catalog[pr->catalog]);
	m->nr_probes++;
}

/* Kept apart until the end: a sample may come before the process's first call. */
static void cpu_sample(struct model *m, const struct sp_cpu_rec *rec)
{
	struct cpu_span *span = hmap__get(&m->cpus, rec->tgid, 0);

	if (!span) {
		span = calloc(1, sizeof(*span));
		if (!span || hmap__set(&m->cpus, rec->tgid, 0, span)) {
			free(span);
			m->view.out_of_memory = true;
			return;
		}
		span->first_ts = rec->ts;
		span->first_ns = rec->cpu_ns;
	}
	span->last_ts = rec->ts;
	span->last_ns = rec->cpu_ns;
	span->samples++;
}

/* Kept apart until the process makes a call: a launcher that makes none is no process here. */
static void host_mapping(struct model *m, const struct sp_hostmem_rec *rec)
{
	struct model_proc *p = hmap__get(&m->procs, rec->tgid, 0);
	struct host_ranges *host = p ? &p->host : hmap__get(&m->hostmaps, rec->tgid, 0);

	if (!host) {
		host = calloc(1, sizeof(*host));
		if (!host || hmap__set(&m->hostmaps, rec->tgid, 0, host)) {
			free(host);
			m->view.out_of_memory = true;
			return;
		}
	}
	if (hostmem__add_mapping(host, rec->start, rec->end, rec->kind))
		m->view.out_of_memory = true;
}

void model__record(struct model *m, const void *rec, size_t size)
{
	const struct sp_rec_hdr *hdr = rec;
	struct model_proc *p;

	switch (hdr->type) {
	case SP_REC_FORK:
		if (size < sizeof(struct sp_fork_rec))
			return;
		p = proc_get(m, ((const struct sp_fork_rec *)rec)->tgid);
		if (!p) {
			m->view.out_of_memory = true;
			return;
		}
		p->parent = ((const struct sp_fork_rec *)rec)->parent;
		/* traced from its first instruction: nothing of it was missed */
		p->pinned_known = true;
		break;
	case SP_REC_EXIT:
		if (size < sizeof(struct sp_exit_rec))
			return;
		p = hmap__get(&m->procs, ((const struct sp_exit_rec *)rec)->tgid, 0);
		if (p)
			p->exit_ns = ((const struct sp_exit_rec *)rec)->ts;
		break;
	case SP_REC_PROBE:
		if (size > sizeof(struct sp_probe_rec))
			add_late_probe(m, rec);
		break;
	case SP_REC_CALIB:
		if (size >= sizeof(struct sp_calib_rec))
			m->view.calib = *(const struct sp_calib_rec *)rec;
		break;
	case SP_REC_CPU:
		if (size >= sizeof(struct sp_cpu_rec))
			cpu_sample(m, rec);
		break;
	case SP_REC_HOSTMEM:
		if (size >= sizeof(struct sp_hostmem_rec))
			host_mapping(m, rec);
		break;
	case SP_REC_EXEC:
		if (size < sizeof(struct sp_exec_rec))
			return;
		p = hmap__get(&m->procs, ((const struct sp_exec_rec *)rec)->tgid, 0);
		if (p)
			hostmem__forget_mappings(&p->host);
		break;
	case SP_REC_END:
		m->view.ended_cleanly = true;
		/* fall through */
	case SP_REC_STATS:
		if (size >= sizeof(struct sp_stats_rec))
			counters(m, ((const struct sp_stats_rec *)rec)->counters);
		break;
	default:
		break;
	}
}

void model__finish(struct model *m, const struct decode_stats *st)
{
	m->view.unreturned = st->unreturned;
	for (size_t i = 0; i < m->view.nr_procs; i++) {
		const struct cpu_span *span = hmap__get(&m->cpus, m->view.procs[i]->tgid, 0);

		if (span)
			m->view.procs[i]->cpu = *span;
	}
}

struct model_view *model__view(struct model *m)
{
	return &m->view;
}

const char *model__func_name(const struct model *m, __u32 tgid, __u64 func)
{
	return hmap__get(&m->names, tgid, func);
}

const char *model__call_name(__u16 catalog_index)
{
	return catalog_index < catalog_len ? catalog[catalog_index].name : "?";
}

static void free_values(struct hmap *h)
{
	for (size_t i = 0; i < h->cap; i++)
		free(h->slots[i].value);
	hmap__free(h);
}

void model__free(struct model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->view.nr_procs; i++) {
		hostmem__free(&m->view.procs[i]->host);
		free(m->view.procs[i]->pending);
		free(m->view.procs[i]);
	}
	for (size_t i = 0; i < m->view.nr_threads; i++) {
		free(m->view.threads[i]->events);
		free(m->view.threads[i]);
	}
	for (size_t i = 0; i < m->view.nr_captures; i++) {
		free(m->view.captures[i]->kernels);
		free(m->view.captures[i]->colls);
		free(m->view.captures[i]->side_streams);
		free(m->view.captures[i]);
	}
	for (size_t i = 0; i < m->view.nr_execs; i++)
		free(m->view.execs[i]);
	for (size_t i = 0; i < m->nr_strings; i++)
		free(m->strings[i]);
	/* the view owns processes, threads, execs and captures; the maps own the rest */
	hmap__free(&m->procs);
	hmap__free(&m->threads);
	free_values(&m->streams);
	free_values(&m->events);
	free_values(&m->cpus);
	for (size_t i = 0; i < m->hostmaps.cap; i++)
		hostmem__free(m->hostmaps.slots[i].value);
	free_values(&m->hostmaps);
	free(m->all_streams);
	free(m->view.syncs);
	hmap__free(&m->names);
	hmap__free(&m->graphs);
	hmap__free(&m->execs);
	free(m->view.procs);
	free(m->view.threads);
	free(m->view.execs);
	free(m->view.captures);
	free(m->strings);
	free(m->probes);
	free(m);
}

static const char *const role_names[ROLE_NR] = {
	[ROLE_UNKNOWN] = "unknown", [ROLE_DRAFT] = "draft",
	[ROLE_VERIFY] = "verify",   [ROLE_EXTEND] = "extend",
};

static const char *const role_sources[ROLE_FROM_NR] = {
	[ROLE_FROM_NONE] = "none",	   [ROLE_FROM_KERNELS] = "captured-kernels",
	[ROLE_FROM_WAIT] = "sync-wait",	   [ROLE_FROM_PIECES] = "capture-pieces",
	[ROLE_FROM_POSITION] = "position", [ROLE_FROM_FAMILY] = "same-kernels",
};

static const char *const sync_kind_names[SYNC_KIND_NR] = {
	[SYNC_CTX] = "ctx",
	[SYNC_STREAM] = "stream",
	[SYNC_EVENT] = "event",
	[SYNC_COPY] = "sync-copy",
	[SYNC_PAGEABLE] = "pageable-copy",
	[SYNC_UNKNOWN_HOST] = "unknown-host",
	[SYNC_FREE] = "free",
	[SYNC_ALLOC] = "alloc",
	[SYNC_LEGACY] = "legacy",
	[SYNC_POLL] = "poll",
	[SYNC_CAPTURE] = "capture-sync",
};

const char *model__sync_kind_name(enum sync_kind kind)
{
	return kind < SYNC_KIND_NR ? sync_kind_names[kind] : "?";
}

const char *model__role_name(enum graph_role role)
{
	return role < ROLE_NR ? role_names[role] : "?";
}

const char *model__role_source_name(enum role_source from)
{
	return from < ROLE_FROM_NR ? role_sources[from] : "?";
}
