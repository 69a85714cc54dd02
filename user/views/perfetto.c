// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Perfetto trace writer (perfetto_view.h). One packet sequence, interned event
 * names, categories and annotation names, timestamps on CLOCK_MONOTONIC as bpf_ktime_get_ns()
 * gives them. Field numbers: docs/perfetto.md and tests/perfetto/perfetto_trace.proto.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog.h"
#include "hmap.h"
#include "pbwriter.h"
#include "perfetto_view.h"

#define SEQ_ID		1
#define SEQ_CLEARED	1
#define SEQ_NEEDS	2
#define CLOCK_REALTIME_ID  1
#define CLOCK_MONO_ID	3
#define CLOCK_BOOT_ID	6
#define FLUSH_AT	(256 * 1024)
#define CALL_STACK	32	/* open slices per thread; probes keep 8 frames */
#define FLOW_SCAN	512	/* loop events looked back for the launch a sync waited on */
#define GPU_LANES	4	/* tracks per GPU stream for executions that overlap (PDL) */

/* TracePacket, TrackEvent and descriptor fields used here. */
enum {
	TRACE_PACKET = 1,
	TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11,
	TP_INTERNED = 12, TP_SEQ_FLAGS = 13, TP_CLOCK_ID = 58, TP_TRACK_DESC = 60,
	TP_FIRST_ON_SEQ = 87,
	TE_CATEGORY_IIDS = 3, TE_ANNOTATION = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11,
	TE_NAME = 23, TE_COUNTER_VALUE = 30, TE_DOUBLE_COUNTER_VALUE = 44, TE_FLOW_IDS = 47,
	DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_STRING = 6, DA_POINTER = 7,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
	PD_PID = 1, PD_NAME = 6, THD_PID = 1, THD_TID = 2, THD_NAME = 5, CD_UNIT_NAME = 6,
	ID_CATEGORIES = 1, ID_NAMES = 2, ID_ANN_NAMES = 3, IN_IID = 1, IN_NAME = 2,
	CS_CLOCKS = 1, CS_PRIMARY = 2, CLK_ID = 1, CLK_TS = 2,
};

enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };

/* Track uuids: the tid or tgid, then a kind in the low bits (a short varint per event). */
#define TRACK_KIND_BITS 3
enum track_kind {
	TK_PROCESS = 1, TK_THREAD, TK_LOOP, TK_PHASES, TK_GRAPHS, TK_SYNCS, TK_COUNTER,
	TK_NR
};
_Static_assert(TK_NR <= 1 << TRACK_KIND_BITS, "track kinds overflow their bits");
/* Kind 0: the GPU stream tracks (--gpu), numbered from 1 in the order they are met. */
#define TK_GPU 0

enum { CNT_CALLS, CNT_CYCLES, CNT_DROPS, CNT_NR };
static const char *const counter_names[CNT_NR] = { "calls/s", "cycles/s", "drops/s" };
/* --server-metrics: counter tracks after ours, described only when samples came. */
enum { CNT_SRV_TOKENS = CNT_NR, CNT_SRV_ACCEPT };
/* --sample: the windows' track; no kind bit is left, so it takes an id past the counters'. */
#define SAMPLE_TRACK_ID 255

/* Names after the catalogue's: iid = 1 + catalog_len + one of these. */
enum fixed_name { FN_CYCLE, FN_PHASE0, FN_GRAPH0 = FN_PHASE0 + PHASE_OTHER,
		  FN_UNKNOWN = FN_GRAPH0 + ROLE_NR, FN_WINDOW, FN_NR };
/* Categories: iid = 1 + class, then these. */
enum { CAT_CYCLE = SP_CLASS_NR, CAT_PHASE, CAT_GRAPH, CAT_FLAGGED, CAT_GPU, CAT_SAMPLE, CAT_NR };

/* Annotation names not taken from the catalogue: iid = 1 + one of these. */
enum ann_name {
	AN_SEQ, AN_PROBE, AN_DATA, AN_RESULT, AN_OUT, AN_UNRETURNED, AN_DEPTH,
	AN_INDEX, AN_CYCLE, AN_BLOCKED, AN_LAUNCHES, AN_SYNCS, AN_ACCEPT_WAIT, AN_ACCEPT_DEFERRED,
	AN_VERDICT, AN_KIND, AN_POSITION, AN_RANK, AN_BOUND, AN_BREAKS, AN_HANDLE, AN_WAITED_ON,
	AN_WAITED_GRAPHS, AN_WAITED_KERNELS, AN_WAITED_COPIES, AN_EXEC, AN_ROLE_FROM, AN_STREAM,
	AN_CALL_SITE, AN_STACK, AN_GPU_IDLE, AN_FIXED_NR
};

static const char *const ann_fixed[AN_FIXED_NR] = {
	"seq", "probe", "data", "result", "out", "unreturned", "depth",
	"index", "cycle", "blocked_ns", "launches", "syncs", "accept_wait_ns", "accept_deferred",
	"verdict", "kind", "position", "rank", "gpu_idle_caused_bound_ns", "breaks_overlap",
	"handle", "waited_on", "waited_graphs", "waited_kernels", "waited_copies", "exec",
	"role_from", "stream", "call_site", "stack", "gpu_idle_caused_ns",
};

/* GPU executions' annotation names, interned after the catalogue's: other traces stay as were. */
enum gpu_ann { GA_CUPTI_STREAM, GA_DEVICE, GA_STREAM, GA_GRAPH_EXEC, GA_GRAPH_ID, GA_BYTES,
	       GA_CALL_TID, GA_UNMATCHED, GA_NR };

static const char *const gpu_ann_names[GA_NR] = {
	"cupti_stream", "device", "stream", "graph_exec", "graph_id", "bytes", "call_tid",
	"unmatched",
};

struct arg_spec {
	char name[24];
	char fmt;		/* 0: skipped position */
	__u32 iid;		/* of its name among the annotation names */
};

struct pf_thread {
	__u32 tgid, tid;
	__u64 last_ts;		/* of its thread track */
	__u64 ends[CALL_STACK];	/* return times of its open slices, innermost last */
	int open;
	bool sync_track;
	__u64 sync_last;
};

/* A CUPTI stream of a process: its tracks, one per lane of overlapping executions. */
struct pf_gpu_stream {
	__u32 tgid;
	__u64 stream_id;
	__u64 handle;		/* the CUstream its executions were launched on */
	bool has_handle;
	int lanes;
	__u32 track[GPU_LANES];		/* track ids (kind TK_GPU) */
	__u64 lane_end[GPU_LANES];	/* end of the last slice on each */
};

struct perfetto_out {
	struct pbw w;
	const struct pipeline *p;
	struct arg_spec (*args)[SP_MAX_ARGS];	/* per catalogue entry */
	bool *is_launch;			/* per catalogue entry: gets a flow id */
	bool *makes_gpu_work;			/* copies, memsets, collectives: flows with --gpu */
	__u32 gpu_ann[GA_NR];			/* iids of the GPU annotation names */
	struct hmap gpu_streams;
	struct pf_gpu_stream **gpu_list;
	size_t nr_gpu, cap_gpu;
	__u32 gpu_tracks;			/* track ids given so far */
	bool gpu_seen;				/* an execution came */
	bool srv_described;			/* the server's counter tracks */
	bool *name_sent, cat_sent[CAT_NR];
	__u32 ev_name;				/* of the event open in the packet */
	int ev_cat;
	const char **ann_names;			/* by iid - 1 */
	__u32 nr_ann, *out_iid;			/* out_iid: per catalogue entry */
	bool *ann_sent;
	__u32 *ann_new, nr_ann_new;		/* first used in the packet being written */
	char fixed[FN_NR][40];
	struct hmap threads, procs;
	struct pf_thread **thread_list;
	size_t nr_threads, cap_threads;
	bool started;
	__u64 first_ts, last_ts;
	__u64 window_calls, last_call_ts, last_drops, last_tick;
	__u32 *cycles_per_s;
	size_t nr_windows;
	const struct loop *cur_loop;
	__u64 loop_last, phase_last;
};

static __u64 track_uuid(enum track_kind kind, __u32 id)
{
	return ((__u64)id << TRACK_KIND_BITS) | kind;
}

/* The same id at a launch and at a sync that waited on it: links them. */
static __u64 flow_id(__u32 tid, __u64 ts)
{
	__u64 x = ts ^ ((__u64)tid << 42) ^ 0x9e3779b97f4a7c15ull;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static __u32 name_iid_fixed(int fn)
{
	return 1 + catalog_len + fn;
}

static const char *name_of(const struct perfetto_out *o, __u32 iid)
{
	if (iid - 1 < (__u32)catalog_len)
		return catalog[iid - 1].name;
	return o->fixed[iid - 1 - catalog_len];
}

static const char *category_of(int cat)
{
	static const char *const extra[] = { "cycle", "phase", "graph", "flagged-sync", "gpu",
						     "sample" };

	return cat < SP_CLASS_NR ? catalog__class_name(cat) : extra[cat - SP_CLASS_NR];
}

static void packet_open(struct perfetto_out *o, __u64 ts, bool interned)
{
	pbw__begin(&o->w, TRACE_PACKET);
	pbw__varint(&o->w, TP_TIMESTAMP, ts);
	pbw__varint(&o->w, TP_CLOCK_ID, CLOCK_MONO_ID);
	pbw__varint(&o->w, TP_SEQ_ID, SEQ_ID);
	if (interned)
		pbw__varint(&o->w, TP_SEQ_FLAGS, SEQ_NEEDS);
}

static int packet_close(struct perfetto_out *o)
{
	pbw__end(&o->w);
	return pbw__flush(&o->w, FLUSH_AT);
}

static void put_interned_entry(struct pbw *w, __u32 field, __u32 iid, const char *name)
{
	pbw__begin(w, field);
	pbw__varint(w, IN_IID, iid);
	pbw__string(w, IN_NAME, name);
	pbw__end(w);
}

/*
 * Define what the packet's event is the first to use: its name, its category,
 * annotation names. They ride after the event; field order does not matter.
 */
static void put_interned(struct perfetto_out *o)
{
	bool name_new = !o->name_sent[o->ev_name], cat_new = !o->cat_sent[o->ev_cat];

	if (!name_new && !cat_new && !o->nr_ann_new)
		return;
	pbw__begin(&o->w, TP_INTERNED);
	if (cat_new)
		put_interned_entry(&o->w, ID_CATEGORIES, o->ev_cat + 1, category_of(o->ev_cat));
	if (name_new)
		put_interned_entry(&o->w, ID_NAMES, o->ev_name, name_of(o, o->ev_name));
	for (__u32 i = 0; i < o->nr_ann_new; i++)
		put_interned_entry(&o->w, ID_ANN_NAMES, o->ann_new[i],
				   o->ann_names[o->ann_new[i] - 1]);
	pbw__end(&o->w);
	o->name_sent[o->ev_name] = o->cat_sent[o->ev_cat] = true;
	o->nr_ann_new = 0;
}

/* A packet with a named event open in it: add annotations, then event_close. */
static void event_open(struct perfetto_out *o, __u64 ts, __u64 track, int type, __u32 name_iid,
		       int cat)
{
	packet_open(o, ts, true);
	o->ev_name = name_iid;
	o->ev_cat = cat;
	pbw__begin(&o->w, TP_TRACK_EVENT);
	pbw__varint(&o->w, TE_CATEGORY_IIDS, cat + 1);
	pbw__varint(&o->w, TE_TYPE, type);
	pbw__varint(&o->w, TE_NAME_IID, name_iid);
	pbw__varint(&o->w, TE_TRACK, track);
}

/* The same with a name of its own, not interned (GPU executions: kernel names are many). */
static void event_open_named(struct perfetto_out *o, __u64 ts, __u64 track, int type,
			     const char *name, int cat)
{
	packet_open(o, ts, true);
	o->ev_name = 0;		/* marked sent: nothing to intern */
	o->ev_cat = cat;
	pbw__begin(&o->w, TP_TRACK_EVENT);
	pbw__varint(&o->w, TE_CATEGORY_IIDS, cat + 1);
	pbw__varint(&o->w, TE_TYPE, type);
	pbw__string(&o->w, TE_NAME, name);
	pbw__varint(&o->w, TE_TRACK, track);
}

static int event_close(struct perfetto_out *o)
{
	pbw__end(&o->w);
	put_interned(o);
	return packet_close(o);
}

/* An END names nothing: it closes the innermost open slice of its track. */
static int slice_end(struct perfetto_out *o, __u64 ts, __u64 track)
{
	packet_open(o, ts, false);
	pbw__begin(&o->w, TP_TRACK_EVENT);
	pbw__varint(&o->w, TE_TYPE, TYPE_END);
	pbw__varint(&o->w, TE_TRACK, track);
	pbw__end(&o->w);
	return packet_close(o);
}

/* An annotation name is defined in the packet that first uses it (ann_new has room for all). */
static void ann_use(struct perfetto_out *o, __u32 iid)
{
	if (o->ann_sent[iid - 1])
		return;
	o->ann_sent[iid - 1] = true;
	o->ann_new[o->nr_ann_new++] = iid;
}

static void ann_varint(struct perfetto_out *o, __u32 iid, __u32 field, __u64 v)
{
	ann_use(o, iid);
	pbw__pair(&o->w, TE_ANNOTATION, DA_NAME_IID, iid, field, v);
}

static void ann_str(struct perfetto_out *o, __u32 iid, const char *s, size_t len)
{
	ann_use(o, iid);
	pbw__begin(&o->w, TE_ANNOTATION);
	pbw__varint(&o->w, DA_NAME_IID, iid);
	pbw__bytes(&o->w, DA_STRING, s, len);
	pbw__end(&o->w);
}

#define ann_uint(o, n, v) ann_varint(o, n, DA_UINT, v)
#define ann_int(o, n, v) ann_varint(o, n, DA_INT, (__u64)(__s64)(v))
#define ann_ptr(o, n, v) ann_varint(o, n, DA_POINTER, v)
#define ann_bool(o, n, v) ann_varint(o, n, DA_BOOL, !!(v))
#define ann_cstr(o, n, s) ann_str(o, n, s, strlen(s))
/* iids of the fixed annotation names */
#define AN(n) (1 + (n))

/* ---- tracks ---- */

static void track_custom(struct perfetto_out *o, __u64 ts, __u64 uuid, __u64 parent,
			 const char *name)
{
	packet_open(o, ts, false);
	pbw__begin(&o->w, TP_TRACK_DESC);
	pbw__varint(&o->w, TD_UUID, uuid);
	if (parent)
		pbw__varint(&o->w, TD_PARENT, parent);
	pbw__string(&o->w, TD_NAME, name);
	pbw__end(&o->w);
	packet_close(o);
}

static void track_process(struct perfetto_out *o, __u64 ts, __u32 tgid, int rank)
{
	char name[48];

	if (rank >= 0)
		snprintf(name, sizeof(name), "rank %d (pid %u)", rank, tgid);
	else
		snprintf(name, sizeof(name), "pid %u", tgid);
	packet_open(o, ts, false);
	pbw__begin(&o->w, TP_TRACK_DESC);
	pbw__varint(&o->w, TD_UUID, track_uuid(TK_PROCESS, tgid));
	pbw__begin(&o->w, TD_PROCESS);
	pbw__varint(&o->w, PD_PID, tgid);
	pbw__string(&o->w, PD_NAME, name);
	pbw__end(&o->w);
	pbw__end(&o->w);
	packet_close(o);
}

static void track_thread(struct perfetto_out *o, __u64 ts, __u32 tgid, __u32 tid)
{
	char name[32];

	snprintf(name, sizeof(name), "tid %u", tid);
	packet_open(o, ts, false);
	pbw__begin(&o->w, TP_TRACK_DESC);
	pbw__varint(&o->w, TD_UUID, track_uuid(TK_THREAD, tid));
	pbw__begin(&o->w, TD_THREAD);
	pbw__varint(&o->w, THD_PID, tgid);
	pbw__varint(&o->w, THD_TID, tid);
	pbw__string(&o->w, THD_NAME, name);
	pbw__end(&o->w);
	pbw__end(&o->w);
	packet_close(o);
}

static void track_counter(struct perfetto_out *o, __u64 ts, int k, const char *name,
			  const char *unit)
{
	packet_open(o, ts, false);
	pbw__begin(&o->w, TP_TRACK_DESC);
	pbw__varint(&o->w, TD_UUID, track_uuid(TK_COUNTER, k));
	pbw__string(&o->w, TD_NAME, name);
	pbw__begin(&o->w, TD_COUNTER);
	pbw__string(&o->w, CD_UNIT_NAME, unit);
	pbw__end(&o->w);
	pbw__end(&o->w);
	packet_close(o);
}

static void track_counters(struct perfetto_out *o, __u64 ts)
{
	for (int k = 0; k < CNT_NR; k++)
		track_counter(o, ts, k, counter_names[k], "/s");
}

static void counter_value(struct perfetto_out *o, int k, __u64 ts, __s64 v)
{
	packet_open(o, ts, false);
	pbw__begin(&o->w, TP_TRACK_EVENT);
	pbw__varint(&o->w, TE_TYPE, TYPE_COUNTER);
	pbw__varint(&o->w, TE_TRACK, track_uuid(TK_COUNTER, k));
	pbw__varint(&o->w, TE_COUNTER_VALUE, (__u64)v);
	pbw__end(&o->w);
	packet_close(o);
}

static void counter_double(struct perfetto_out *o, int k, __u64 ts, double v)
{
	__u64 bits;

	memcpy(&bits, &v, sizeof(bits));
	packet_open(o, ts, false);
	pbw__begin(&o->w, TP_TRACK_EVENT);
	pbw__varint(&o->w, TE_TYPE, TYPE_COUNTER);
	pbw__varint(&o->w, TE_TRACK, track_uuid(TK_COUNTER, k));
	pbw__fixed64(&o->w, TE_DOUBLE_COUNTER_VALUE, bits);
	pbw__end(&o->w);
	packet_close(o);
}

/* The trace clock is MONOTONIC; BOOTTIME is taken equal to it (docs/perfetto.md). */
static void clock_snapshot(struct perfetto_out *o, const struct tf_header *hdr)
{
	static const int ids[] = { CLOCK_MONO_ID, CLOCK_BOOT_ID, CLOCK_REALTIME_ID };

	pbw__begin(&o->w, TRACE_PACKET);
	pbw__varint(&o->w, TP_SEQ_ID, SEQ_ID);
	pbw__varint(&o->w, TP_SEQ_FLAGS, SEQ_CLEARED);
	pbw__varint(&o->w, TP_FIRST_ON_SEQ, 1);
	pbw__begin(&o->w, TP_CLOCK_SNAPSHOT);
	for (int i = 0; i < 3; i++) {
		pbw__begin(&o->w, CS_CLOCKS);
		pbw__varint(&o->w, CLK_ID, ids[i]);
		pbw__varint(&o->w, CLK_TS, ids[i] == CLOCK_REALTIME_ID ? hdr->realtime_ns
									: hdr->mono_ns);
		pbw__end(&o->w);
	}
	pbw__varint(&o->w, CS_PRIMARY, CLOCK_MONO_ID);
	pbw__end(&o->w);
	packet_close(o);
}

/* ---- calls, as decoded ---- */

static struct pf_thread *thread_get(struct perfetto_out *o, __u32 tgid, __u32 tid, __u64 ts)
{
	struct pf_thread *t = hmap__get(&o->threads, tgid, tid), **list;

	if (t)
		return t;
	if (o->nr_threads == o->cap_threads) {
		size_t cap = o->cap_threads ? 2 * o->cap_threads : 16;

		list = realloc(o->thread_list, cap * sizeof(*list));
		if (!list)
			return NULL;
		o->thread_list = list;
		o->cap_threads = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t || hmap__set(&o->threads, tgid, tid, t)) {
		free(t);
		return NULL;
	}
	o->thread_list[o->nr_threads++] = t;
	t->tgid = tgid;
	t->tid = tid;
	if (!hmap__get(&o->procs, tgid, 0)) {
		if (hmap__set(&o->procs, tgid, 0, t))
			return NULL;
		track_process(o, ts, tgid, -1);
	}
	track_thread(o, ts, tgid, tid);
	return t;
}

/* Close the open slices of a thread that returned by ts (all of them: ts ~0). */
static int thread_pop(struct perfetto_out *o, struct pf_thread *t, __u64 ts)
{
	int ret = 0;

	while (t->open && t->ends[t->open - 1] <= ts && !ret) {
		__u64 end = t->ends[--t->open];

		if (end < t->last_ts)
			end = t->last_ts;
		ret = slice_end(o, end, track_uuid(TK_THREAD, t->tid));
		t->last_ts = end;
	}
	return ret;
}

/* A call's stack as text, one frame a line: Python's innermost first, then native. */
static void stack_text(char *buf, size_t size, const struct cs_stack *st)
{
	size_t n = 0;

	buf[0] = '\0';
	for (__u32 i = 0; i < st->nr_py && n < size; i++) {
		const struct cs_python *f = &st->py[i];

		if (f->file)
			n += snprintf(buf + n, size - n, "%s:%d %s\n", f->file, f->line,
				      f->function);
		else
			n += snprintf(buf + n, size - n, "python code 0x%llx\n",
				      (unsigned long long)f->code);
	}
	for (__u32 i = 0; i < st->nr_native && n < size; i++) {
		const struct cs_native *f = &st->native[i];

		if (f->symbol)
			n += snprintf(buf + n, size - n, "%s+0x%llx (%s)\n", f->symbol,
				      (unsigned long long)f->offset, f->object);
		else if (f->object)
			n += snprintf(buf + n, size - n, "%s+0x%llx\n", f->object,
				      (unsigned long long)f->offset);
		else
			n += snprintf(buf + n, size - n, "0x%llx\n", (unsigned long long)f->addr);
	}
}

static void call_stack(struct perfetto_out *o, const struct sp_call *call)
{
	const struct callstacks *stacks = pipeline__callstacks(o->p);
	const struct cs_stack *st = callstacks__stack(stacks, call->stack);
	const struct cs_site *site = st ? callstacks__site(stacks, st->site) : NULL;
	char text[4096];

	if (!st)
		return;
	if (site)
		ann_cstr(o, AN(AN_CALL_SITE), site->label);
	stack_text(text, sizeof(text), st);
	ann_cstr(o, AN(AN_STACK), text);
}

static void call_args(struct perfetto_out *o, const struct catalog_entry *e, int ei,
		      const struct sp_call *call)
{
	ann_uint(o, AN(AN_SEQ), call->entry.seq);
	for (int i = 0; i < SP_MAX_ARGS; i++) {
		const struct arg_spec *a = &o->args[ei][i];
		__u64 v = call->entry.args[i];

		if (!a->fmt || (i >= SP_REG_ARGS && (call->entry.faults & (1 << SP_FAULT_STACK))))
			continue;
		if (a->fmt == 'h')
			ann_ptr(o, a->iid, v);
		else if (a->fmt == 'd')
			ann_int(o, a->iid, (__s32)v);
		else if (a->fmt == 'u')
			ann_uint(o, a->iid, (__u32)v);
		else
			ann_uint(o, a->iid, v);
	}
	if (e->data_kind == SP_DATA_STRING && call->data_len &&
	    !(call->entry.faults & (1 << SP_FAULT_DATA)))
		ann_str(o, AN(AN_DATA), (const char *)call->data,
			strnlen((const char *)call->data, call->data_len));
	if (call->returned) {
		ann_int(o, AN(AN_RESULT), (__s32)call->result);
		if (e->out_arg != SP_NO_ARG && !(call->ret_faults & (1 << SP_FAULT_OUT)))
			ann_ptr(o, o->out_iid[ei], call->out);
	}
	if (call->unreturned)
		ann_bool(o, AN(AN_UNRETURNED), true);
	if (call->entry.depth)
		ann_uint(o, AN(AN_DEPTH), call->entry.depth);
	call_stack(o, call);
}

static int on_call(void *ctx, const struct tf_header *hdr, const struct sp_call *call)
{
	struct perfetto_out *o = ctx;
	__u32 probe = call->entry.probe;
	int ei = probe < hdr->nr_probes ? (int)hdr->probes[probe].catalog : -1;
	__u64 ts = call->entry.ts, end = call->ts_return;
	struct pf_thread *t;
	bool slice;

	/* a damaged pid: no track for a process that was never traced */
	if (call->undescribed)
		return 0;
	if (!o->started) {
		o->started = true;
		o->first_ts = o->last_tick = ts;
		track_counters(o, ts);
	}
	t = thread_get(o, call->entry.tgid, call->entry.tid, ts);
	if (!t)
		return -ENOMEM;
	/* a late entry (older than calls already handed on) is shown where its track is */
	if (ts < t->last_ts)
		ts = t->last_ts;
	if (thread_pop(o, t, ts))
		return o->w.err;
	slice = call->has_ret && call->returned && end >= ts && t->open < CALL_STACK;
	if (ei < 0 || ei >= catalog_len) {
		event_open(o, ts, track_uuid(TK_THREAD, t->tid), TYPE_INSTANT,
			   name_iid_fixed(FN_UNKNOWN), SP_CLASS_DRIVER);
		ann_uint(o, AN(AN_SEQ), call->entry.seq);
		ann_uint(o, AN(AN_PROBE), probe);
		slice = false;
	} else {
		event_open(o, ts, track_uuid(TK_THREAD, t->tid), slice ? TYPE_BEGIN : TYPE_INSTANT,
			   1 + ei, catalog[ei].cls);
		call_args(o, &catalog[ei], ei, call);
		/* once GPU executions come, copies and collectives start a flow to theirs too */
		if (o->is_launch[ei] || (o->makes_gpu_work[ei] && o->gpu_seen))
			pbw__fixed64(&o->w, TE_FLOW_IDS, flow_id(call->entry.tid, call->entry.ts));
	}
	if (event_close(o))
		return o->w.err;
	if (slice) {
		/* a child ends inside its parent, whatever the clocks said */
		if (t->open && end > t->ends[t->open - 1])
			end = t->ends[t->open - 1];
		t->ends[t->open++] = end;
	}
	t->last_ts = ts;
	o->window_calls++;
	o->last_call_ts = o->last_ts = call->entry.ts > o->last_ts ? call->entry.ts : o->last_ts;
	return 0;
}

/* Each window is counted at its start; the call that crossed the tick is the next window's. */
static int on_tick(void *ctx, __u64 ts_ns)
{
	struct perfetto_out *o = ctx;
	const struct decode_stats *st = pipeline__stats(o->p);
	__u64 calls = o->window_calls - (o->last_call_ts >= ts_ns && o->window_calls ? 1 : 0);
	__u64 drops = st->counters[SP_CNT_DROP_CALL] + st->counters[SP_CNT_DROP_RET];

	counter_value(o, CNT_CALLS, o->last_tick, calls);
	counter_value(o, CNT_DROPS, o->last_tick, drops - o->last_drops);
	o->window_calls -= calls;
	o->last_drops = drops;
	o->last_tick = ts_ns;
	return o->w.err;
}

/* ---- GPU executions (--gpu), as the matching settles them ---- */

static void gpu_track_name(const struct pf_gpu_stream *g, char *buf, size_t size)
{
	int n = snprintf(buf, size, "GPU stream %llu", (unsigned long long)g->stream_id);

	if (!g->has_handle || n < 0 || (size_t)n >= size)
		return;
	/* 0 and 0x1 are the legacy stream, 0x2 the per-thread default one */
	if (g->handle <= 1)
		snprintf(buf + n, size - n, " (legacy)");
	else if (g->handle == 2)
		snprintf(buf + n, size - n, " (per-thread)");
	else
		snprintf(buf + n, size - n, " (0x%llx)", (unsigned long long)g->handle);
}

/* Lanes share the stream's name: the UI shows them as one track, overlaps on their own rows. */
static void gpu_describe(struct perfetto_out *o, const struct pf_gpu_stream *g, int lane,
			 __u64 ts)
{
	char name[80];

	gpu_track_name(g, name, sizeof(name));
	track_custom(o, ts, track_uuid(TK_GPU, g->track[lane]), track_uuid(TK_PROCESS, g->tgid),
		     name);
}

static struct pf_gpu_stream *gpu_stream_get(struct perfetto_out *o, const struct gpu_exec *e)
{
	struct pf_gpu_stream *g = hmap__get(&o->gpu_streams, e->tgid, e->stream_id), **list;

	if (g)
		return g;
	if (o->nr_gpu == o->cap_gpu) {
		size_t cap = o->cap_gpu ? 2 * o->cap_gpu : 16;

		list = realloc(o->gpu_list, cap * sizeof(*list));
		if (!list)
			return NULL;
		o->gpu_list = list;
		o->cap_gpu = cap;
	}
	g = calloc(1, sizeof(*g));
	if (!g || hmap__set(&o->gpu_streams, e->tgid, e->stream_id, g)) {
		free(g);
		return NULL;
	}
	o->gpu_list[o->nr_gpu++] = g;
	g->tgid = e->tgid;
	g->stream_id = e->stream_id;
	if (!hmap__get(&o->procs, e->tgid, 0)) {
		if (hmap__set(&o->procs, e->tgid, 0, g))
			return NULL;
		track_process(o, e->start_ns, e->tgid, -1);
	}
	return g;
}

/* The lane whose last slice ended by start, a new one, or else the one free soonest. */
static int gpu_lane(struct perfetto_out *o, struct pf_gpu_stream *g, __u64 start)
{
	int soonest = 0;

	for (int l = 0; l < g->lanes; l++) {
		if (g->lane_end[l] <= start)
			return l;
		if (g->lane_end[l] < g->lane_end[soonest])
			soonest = l;
	}
	if (g->lanes == GPU_LANES)
		return soonest;
	g->track[g->lanes] = ++o->gpu_tracks;
	gpu_describe(o, g, g->lanes, start);
	return g->lanes++;
}

static const char *copy_kind_name(__u8 kind)
{
	/* CUpti_ActivityMemcpyKind */
	static const char *const names[] = { NULL,   "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					     "AtoD", "DtoA", "DtoD", "HtoH", "PtoP" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : NULL;
}

/* "graph 0x...", the kernel's name, "memcpy HtoD 4096 B", "memset". */
static void gpu_exec_name(const struct gpu_exec *e, char *buf, size_t size)
{
	const char *dir = copy_kind_name(e->copy_kind);

	switch (e->kind) {
	case SP_GPU_GRAPH:
		if (e->call_ts)
			snprintf(buf, size, "graph 0x%llx", (unsigned long long)e->exec);
		else
			snprintf(buf, size, "graph id %u", e->graph);
		break;
	case SP_GPU_KERNEL:
		snprintf(buf, size, "%s", e->name && e->name[0] ? e->name : "kernel");
		break;
	case SP_GPU_MEMCPY:
		snprintf(buf, size, "memcpy%s%s %llu B", dir ? " " : "", dir ? dir : "",
			 (unsigned long long)e->bytes);
		break;
	case SP_GPU_MEMSET:
		snprintf(buf, size, "memset");
		break;
	default:
		snprintf(buf, size, "GPU work kind %u", e->kind);
	}
}

static void gpu_args(struct perfetto_out *o, const struct gpu_exec *e)
{
	ann_uint(o, o->gpu_ann[GA_CUPTI_STREAM], e->stream_id);
	ann_uint(o, o->gpu_ann[GA_DEVICE], e->device);
	if (e->kind == SP_GPU_GRAPH)
		ann_uint(o, o->gpu_ann[GA_GRAPH_ID], e->graph);
	if (e->kind == SP_GPU_MEMCPY || e->kind == SP_GPU_MEMSET)
		ann_uint(o, o->gpu_ann[GA_BYTES], e->bytes);
	if (!e->call_ts) {
		ann_bool(o, o->gpu_ann[GA_UNMATCHED], true);
		return;
	}
	ann_ptr(o, o->gpu_ann[GA_STREAM], e->stream);
	if (e->kind == SP_GPU_GRAPH)
		ann_ptr(o, o->gpu_ann[GA_GRAPH_EXEC], e->exec);
	ann_uint(o, o->gpu_ann[GA_CALL_TID], e->call_tid);
}

/*
 * One slice per execution on its stream's track; a matched one carries its
 * launching call's flow id, so the launch, the execution and a sync that
 * waited on it are linked in time order.
 */
static int on_gpu(void *ctx, const struct gpu_exec *e)
{
	struct perfetto_out *o = ctx;
	struct pf_gpu_stream *g = gpu_stream_get(o, e);
	__u64 start = e->start_ns, end = e->end_ns, track;
	char name[SP_GPU_NAME_MAX + 32];
	int lane;

	if (!g)
		return -ENOMEM;
	o->gpu_seen = true;
	if (e->call_ts && !g->has_handle) {
		g->has_handle = true;
		g->handle = e->stream;
		for (int l = 0; l < g->lanes; l++)
			gpu_describe(o, g, l, start);
	}
	lane = gpu_lane(o, g, start);
	if (start < g->lane_end[lane])
		start = g->lane_end[lane];
	if (end < start)
		end = start;
	track = track_uuid(TK_GPU, g->track[lane]);
	gpu_exec_name(e, name, sizeof(name));
	event_open_named(o, start, track, TYPE_BEGIN, name, CAT_GPU);
	gpu_args(o, e);
	if (e->call_ts)
		pbw__fixed64(&o->w, TE_FLOW_IDS, flow_id(e->call_tid, e->call_ts));
	event_close(o);
	slice_end(o, end, track);
	g->lane_end[lane] = end;
	return o->w.err;
}

/* ---- --server-metrics: the server's own figures between each two scrapes ---- */

/*
 * Each value holds from the scrape that opens its span: tokens/s from the
 * generated-tokens counter, accept length from the drafts and accepted
 * counters (or the gauge); a span without one leaves that track as it was.
 */
static int server_interval(void *ctx, const struct srv_figures *f)
{
	struct perfetto_out *o = ctx;

	if (!o->srv_described) {
		track_counter(o, f->span_start_ns, CNT_SRV_TOKENS, "server tokens/s", "tokens/s");
		track_counter(o, f->span_start_ns, CNT_SRV_ACCEPT, "server accept length",
			      "tokens");
		o->srv_described = true;
	}
	if (f->has[SP_SRV_GENERATED])
		counter_double(o, CNT_SRV_TOKENS, f->span_start_ns, f->tokens_per_s);
	if (f->accept_length > 0)
		counter_double(o, CNT_SRV_ACCEPT, f->span_start_ns, f->accept_length);
	return o->w.err;
}

/* ---- at the end: cycles, phases, graph roles, flagged syncs ---- */

static void loop_tracks(struct perfetto_out *o, const struct loop *lp, __u64 ts)
{
	__u64 parent = track_uuid(TK_PROCESS, lp->tgid);
	char name[64];
	int n;

	n = snprintf(name, sizeof(name), "decode loop tid %u", lp->tid);
	if (lp->rank >= 0)
		snprintf(name + n, sizeof(name) - n, " rank %d", lp->rank);
	track_custom(o, ts, track_uuid(TK_LOOP, lp->tid), parent, name);
	snprintf(name, sizeof(name), "phases tid %u", lp->tid);
	track_custom(o, ts, track_uuid(TK_PHASES, lp->tid), parent, name);
	snprintf(name, sizeof(name), "graph launches tid %u", lp->tid);
	track_custom(o, ts, track_uuid(TK_GRAPHS, lp->tid), parent, name);
}

#define PERFETTO_MAX_WINDOWS (1u << 24)

/* --sample: the windows; NULL for a recording made without. */
static const struct sample_windows *sampled(const struct perfetto_out *o)
{
	struct pipeline_snapshot snap;

	pipeline__snapshot(o->p, &snap);
	return snap.model && sample__on(&snap.model->sample) ? &snap.model->sample : NULL;
}

/* Per one-second window of trace time; with --sample per window of its, which holds it whole. */
static void count_cycle(struct perfetto_out *o, __u64 ts)
{
	const struct sample_windows *sw = sampled(o);
	size_t w = ts > o->first_ts ? (ts - o->first_ts) / PERFETTO_TICK_NS : 0;
	__u32 *n;

	if (sw) {
		size_t slot = sample__slot(sw, ts);

		if (!(slot % 2))
			return;
		w = (slot - 1) / 2;
	}

	/* 194 days of one-second windows: past that the timestamps are corrupt */
	if (w >= PERFETTO_MAX_WINDOWS) {
		o->w.err = -ERANGE;
		return;
	}
	if (w >= o->nr_windows) {
		size_t nr = w + 1 > 2 * o->nr_windows ? w + 1 : 2 * o->nr_windows;

		n = realloc(o->cycles_per_s, nr * sizeof(*n));
		if (!n) {
			o->w.err = -ENOMEM;
			return;
		}
		memset(n + o->nr_windows, 0, (nr - o->nr_windows) * sizeof(*n));
		o->cycles_per_s = n;
		o->nr_windows = nr;
	}
	o->cycles_per_s[w]++;
}

static void phase_slices(struct perfetto_out *o, const struct loop *lp, const struct cycle *c)
{
	__u64 track = track_uuid(TK_PHASES, lp->tid);

	for (int ph = PHASE_DRAFT; ph < PHASE_OTHER; ph++) {
		const struct cycle_phase *p = &c->phase[ph];
		__u64 start = p->start_ns, end = p->end_ns;

		if (!start && !end)
			continue;
		/* phases can touch; on one track they must not overlap */
		if (start < o->phase_last)
			start = o->phase_last;
		if (end < start)
			end = start;
		event_open(o, start, track, TYPE_BEGIN, name_iid_fixed(FN_PHASE0 + ph), CAT_PHASE);
		ann_uint(o, AN(AN_CYCLE), c->index);
		ann_uint(o, AN(AN_BLOCKED), p->blocked_ns);
		ann_uint(o, AN(AN_LAUNCHES), p->launches);
		ann_uint(o, AN(AN_SYNCS), p->syncs);
		event_close(o);
		slice_end(o, end, track);
		o->phase_last = end;
	}
}

static int on_cycle(void *ctx, const struct loop *lp, const struct cycle *c)
{
	struct perfetto_out *o = ctx;
	__u64 track = track_uuid(TK_LOOP, lp->tid), start = c->start_ns, end = c->end_ns;

	if (lp != o->cur_loop) {
		o->cur_loop = lp;
		o->loop_last = o->phase_last = 0;
		loop_tracks(o, lp, start);
	}
	if (start < o->loop_last)
		start = o->loop_last;
	if (end < start)
		end = start;
	event_open(o, start, track, TYPE_BEGIN, name_iid_fixed(FN_CYCLE), CAT_CYCLE);
	ann_uint(o, AN(AN_INDEX), c->index);
	ann_uint(o, AN(AN_BLOCKED), c->blocked_ns);
	ann_uint(o, AN(AN_LAUNCHES), c->launches);
	ann_uint(o, AN(AN_SYNCS), c->syncs);
	if (c->has_accept_sync)
		ann_uint(o, AN(AN_ACCEPT_WAIT), c->accept_wait_ns);
	ann_bool(o, AN(AN_ACCEPT_DEFERRED), c->accept_deferred);
	event_close(o);
	slice_end(o, end, track);
	o->loop_last = end;
	count_cycle(o, c->start_ns);
	phase_slices(o, lp, c);
	return o->w.err;
}

static void sync_args(struct perfetto_out *o, const struct sync_verdict *sv)
{
	const struct model_sync *s = sv->sync;

	ann_cstr(o, AN(AN_VERDICT), syncs__verdict_name(sv->verdict));
	ann_cstr(o, AN(AN_KIND), model__sync_kind_name(s->kind));
	ann_cstr(o, AN(AN_POSITION), syncs__pos_name(sv->pos));
	ann_int(o, AN(AN_CYCLE), sv->cycle);
	if (sv->rank >= 0)
		ann_int(o, AN(AN_RANK), sv->rank);
	ann_uint(o, AN(AN_BLOCKED), sv->blocked_ns);
	/* the words of docs/guide.md, "The figures": measured where --gpu gave it */
	if (sv->has_gpu_idle)
		ann_uint(o, AN(AN_GPU_IDLE), sv->gpu_idle_ns);
	else if (sv->has_bound)
		ann_uint(o, AN(AN_BOUND), sv->bound_ns);
	ann_bool(o, AN(AN_BREAKS), sv->breaks_overlap);
	if (s->handle)
		ann_ptr(o, AN(AN_HANDLE), s->handle);
	if (s->waited_on)
		ann_ptr(o, AN(AN_WAITED_ON), s->waited_on);
	ann_uint(o, AN(AN_WAITED_GRAPHS), s->waited.graphs);
	ann_uint(o, AN(AN_WAITED_KERNELS), s->waited.kernels);
	ann_uint(o, AN(AN_WAITED_COPIES), s->waited.copies);
}

static int on_sync(void *ctx, const struct sync_verdict *sv)
{
	struct perfetto_out *o = ctx;
	const struct model_sync *s = sv->sync;
	struct pf_thread *t;
	__u64 track = track_uuid(TK_SYNCS, s->tid), start = s->ts;
	bool slice = !(s->flags & SYNC_UNRETURNED) && s->ts_return >= s->ts;
	char name[48];

	if (!sv->flagged)
		return 0;
	t = thread_get(o, s->tgid, s->tid, s->ts);
	if (!t)
		return -ENOMEM;
	if (!t->sync_track) {
		snprintf(name, sizeof(name), "flagged syncs tid %u", s->tid);
		track_custom(o, s->ts, track, track_uuid(TK_PROCESS, s->tgid), name);
		t->sync_track = true;
	}
	if (start < t->sync_last)
		start = t->sync_last;
	event_open(o, start, track, slice ? TYPE_BEGIN : TYPE_INSTANT,
		   s->name < catalog_len ? 1u + s->name : name_iid_fixed(FN_UNKNOWN), CAT_FLAGGED);
	sync_args(o, sv);
	if (sv->has_flow)
		pbw__fixed64(&o->w, TE_FLOW_IDS, flow_id(s->tid, sv->flow_ts));
	event_close(o);
	t->sync_last = start;
	if (slice) {
		t->sync_last = s->ts_return > start ? s->ts_return : start;
		slice_end(o, t->sync_last, track);
	}
	return o->w.err;
}

/* A graph launch of a loop's thread, named by the role the analysis gave its exec. */
struct launch_walk {
	struct perfetto_out *o;
	const struct model_view *v;
	__u64 track;
};

static int graph_role(void *ctx, const struct loop_event *ev)
{
	struct launch_walk *lw = ctx;
	struct perfetto_out *o = lw->o;
	const struct model_exec *x = ev->handle < lw->v->nr_execs ? lw->v->execs[ev->handle] : NULL;

	event_open(o, ev->ts, lw->track, TYPE_INSTANT,
		   name_iid_fixed(FN_GRAPH0 + (x ? x->role : ROLE_UNKNOWN)), CAT_GRAPH);
	ann_uint(o, AN(AN_EXEC), ev->handle);
	if (x)
		ann_cstr(o, AN(AN_ROLE_FROM), model__role_source_name(x->role_from));
	if (ev->stream)
		ann_ptr(o, AN(AN_STREAM), ev->stream);
	event_close(o);
	return o->w.err;
}

static void graph_roles(struct perfetto_out *o, const struct model_view *v, const struct loop *lp)
{
	struct launch_walk lw = { o, v, track_uuid(TK_GRAPHS, lp->tid) };

	if (loop__each_launch(lp, v, graph_role, &lw) && !o->w.err)
		o->w.err = -EIO;
}

/*
 * --sample: one slice per window on a track that says what they mean, and
 * cycles/s over each window alone, at its start: between windows no rate.
 */
static void sample_windows(struct perfetto_out *o, const struct model_view *v)
{
	const struct sample_windows *s = &v->sample;
	__u64 track = track_uuid(TK_COUNTER, SAMPLE_TRACK_ID);
	char name[128];

	snprintf(name, sizeof(name), "launch probes (sampled, --sample %ums/%ums): launches and "
		 "cycles only inside these windows", s->on_ms, s->every_ms);
	track_custom(o, s->w[0].open_ns, track, 0, name);
	track_counter(o, s->w[0].open_ns, CNT_CYCLES, "cycles/s (sampled: over windows only)",
		      "/s");
	for (size_t i = 0; i < s->nr && !o->w.err; i++) {
		__u64 open = s->w[i].open_ns, close = s->w[i].close_ns;

		/* one still open where the recording was cut: up to its last call */
		if (close == UINT64_MAX)
			close = v->last_ns > open ? v->last_ns : open;
		event_open(o, open, track, TYPE_BEGIN, name_iid_fixed(FN_WINDOW), CAT_SAMPLE);
		ann_uint(o, AN(AN_INDEX), i);
		event_close(o);
		slice_end(o, close, track);
		if (close > open)
			counter_double(o, CNT_CYCLES, open,
				       (i < o->nr_windows ? o->cycles_per_s[i] : 0) * 1e9 /
					       (double)(close - open));
	}
}

static int on_end(void *ctx, const struct results *res, const struct decode_stats *st)
{
	struct perfetto_out *o = ctx;
	const struct model_view *v = res ? model__view(res->model) : NULL;

	for (size_t i = 0; i < o->nr_threads; i++)
		thread_pop(o, o->thread_list[i], ~0ull);
	if (o->started && o->last_ts > o->last_tick) {
		/* the last, partial window as a rate */
		double s = (o->last_ts - o->last_tick) / 1e9;

		counter_value(o, CNT_CALLS, o->last_tick, (__s64)(o->window_calls / s));
	}
	if (v && sample__on(&v->sample))
		sample_windows(o, v);
	for (size_t w = 0; (!v || !sample__on(&v->sample)) && w < o->nr_windows; w++)
		counter_value(o, CNT_CYCLES, o->first_ts + w * PERFETTO_TICK_NS, o->cycles_per_s[w]);
	if (srvstats__each_interval(pipeline__server_samples(o->p), server_interval, o))
		return o->w.err ? o->w.err : -EIO;
	if (!v)
		return o->w.err;
	for (size_t l = 0; l < res->cycles.nr_loops; l++)
		if (res->cycles.loops[l].nr_cycles)
			graph_roles(o, v, &res->cycles.loops[l]);
	/* ranks are known once the communicators were made: name the processes again */
	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->rank >= 0 && hmap__get(&o->procs, v->procs[i]->tgid, 0))
			track_process(o, o->last_ts, v->procs[i]->tgid, v->procs[i]->rank);
	return o->w.err;
}

/* The iid of an annotation name, added if new: names repeat across the catalogue. */
static __u32 ann_intern(struct perfetto_out *o, const char *name)
{
	for (__u32 i = 0; i < o->nr_ann; i++)
		if (!strcmp(o->ann_names[i], name))
			return i + 1;
	o->ann_names[o->nr_ann++] = name;
	return o->nr_ann;
}

/* Fixed names first, so that AN() gives their iids, then the catalogue's. */
static int setup_ann_names(struct perfetto_out *o)
{
	size_t max = AN_FIXED_NR + (size_t)catalog_len * (SP_MAX_ARGS + 1) + GA_NR;

	o->ann_names = calloc(max, sizeof(*o->ann_names));
	o->out_iid = calloc(catalog_len, sizeof(*o->out_iid));
	if (!o->ann_names || !o->out_iid)
		return -ENOMEM;
	for (int n = 0; n < AN_FIXED_NR; n++)
		o->ann_names[o->nr_ann++] = ann_fixed[n];
	for (int e = 0; e < catalog_len; e++) {
		for (int i = 0; i < SP_MAX_ARGS; i++)
			if (o->args[e][i].fmt)
				o->args[e][i].iid = ann_intern(o, o->args[e][i].name);
		o->out_iid[e] = catalog[e].out_name ? ann_intern(o, catalog[e].out_name)
						    : AN(AN_OUT);
	}
	for (int n = 0; n < GA_NR; n++)
		o->gpu_ann[n] = ann_intern(o, gpu_ann_names[n]);
	o->ann_sent = calloc(o->nr_ann, sizeof(*o->ann_sent));
	o->ann_new = calloc(o->nr_ann, sizeof(*o->ann_new));
	return o->ann_sent && o->ann_new ? 0 : -ENOMEM;
}

static int setup_names(struct perfetto_out *o)
{
	o->args = calloc(catalog_len, sizeof(*o->args));
	o->is_launch = calloc(catalog_len, sizeof(*o->is_launch));
	o->makes_gpu_work = calloc(catalog_len, sizeof(*o->makes_gpu_work));
	o->name_sent = calloc(1 + catalog_len + FN_NR, sizeof(*o->name_sent));
	if (!o->args || !o->is_launch || !o->makes_gpu_work || !o->name_sent)
		return -ENOMEM;
	o->name_sent[0] = true;	/* events named by a string of their own */
	for (int e = 0; e < catalog_len; e++) {
		for (int i = 0; i < SP_MAX_ARGS; i++)
			if (!catalog__arg(&catalog[e], i, o->args[e][i].name,
					  sizeof(o->args[e][i].name), &o->args[e][i].fmt))
				o->args[e][i].fmt = 0;
		o->is_launch[e] = catalog[e].cls == SP_CLASS_LAUNCH ||
				  !strcmp(catalog[e].name, "cuGraphLaunch");
		o->makes_gpu_work[e] = catalog[e].cls == SP_CLASS_COPY ||
				       catalog[e].cls == SP_CLASS_NCCL;
	}
	snprintf(o->fixed[FN_CYCLE], sizeof(o->fixed[0]), "cycle");
	for (int ph = PHASE_DRAFT; ph < PHASE_OTHER; ph++)
		snprintf(o->fixed[FN_PHASE0 + ph], sizeof(o->fixed[0]), "%s", cycles__phase_name(ph));
	for (int r = 0; r < ROLE_NR; r++)
		snprintf(o->fixed[FN_GRAPH0 + r], sizeof(o->fixed[0]), "cuGraphLaunch %s",
			 model__role_name(r));
	snprintf(o->fixed[FN_UNKNOWN], sizeof(o->fixed[0]), "unknown call");
	snprintf(o->fixed[FN_WINDOW], sizeof(o->fixed[0]), "launch probes in");
	return setup_ann_names(o);
}

struct perfetto_out *perfetto__new(int fd, const struct pipeline *p)
{
	struct perfetto_out *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->p = p;
	if (pbw__init(&o->w, fd) || setup_names(o)) {
		perfetto__free(o);
		return NULL;
	}
	clock_snapshot(o, pipeline__header(p));
	return o;
}

void perfetto__consumer(struct perfetto_out *o, struct pipeline_consumer *c)
{
	*c = (struct pipeline_consumer){ .call = on_call, .tick = on_tick, .gpu = on_gpu,
					 .cycle = on_cycle, .sync = on_sync, .end = on_end,
					 .ctx = o };
}

int perfetto__close(struct perfetto_out *o)
{
	return pbw__close(&o->w);
}

__u64 perfetto__bytes(const struct perfetto_out *o)
{
	return o->w.written;
}

void perfetto__free(struct perfetto_out *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nr_threads; i++)
		free(o->thread_list[i]);
	free(o->thread_list);
	for (size_t i = 0; i < o->nr_gpu; i++)
		free(o->gpu_list[i]);
	free(o->gpu_list);
	hmap__free(&o->gpu_streams);
	hmap__free(&o->threads);
	hmap__free(&o->procs);
	free(o->args);
	free(o->is_launch);
	free(o->makes_gpu_work);
	free(o->name_sent);
	free(o->ann_names);
	free(o->out_iid);
	free(o->ann_sent);
	free(o->ann_new);
	free(o->cycles_per_s);
	pbw__free(&o->w);
	free(o);
}
