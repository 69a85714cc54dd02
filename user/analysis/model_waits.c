// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Syncs, copies, queries and events: what each blocking call is and waited for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

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
	struct model_stream *s = inflight__work_stream(m, c, stream);
	struct host_class hc = { HOST_UNKNOWN, HOST_FROM_NONE };
	enum sync_kind kind = SYNC_KIND_NR;
	struct model_sync sy;
	bool host_copy;
	__u64 host = 0;

	if (!s)
		return -ENOMEM;
	host_copy = !pi->blocking && pi->host != NO_ARG && arg(c, pi->host, &host);
	/* device-to-device copies and memsets are only work: no sync to describe */
	if (!pi->blocking && !host_copy) {
		*blocking = false;
		inflight__queue_work(s, WORK_COPY);
		return pi->stream != NO_ARG ? legacy__stream_order(m, p, t, c, pi, stream) : 0;
	}
	inflight__sync_init(&sy, t, c, pi, SYNC_COPY, stream_key(c, stream));
	/* synchronous copies run on the legacy stream */
	inflight__split_in_flight(m, s, pi->blocking || is_legacy(stream) ? WAIT_BLOCKING : WAIT_ONE,
				  &sy);
	if (pi->blocking) {
		kind = SYNC_COPY;
	} else {
		hc = hostmem__classify(&p->host, host, p->pinned_known);
		kind = async_copy_kind(&hc, pi, c, &sy.waited);
	}
	/* known pageable from the start: the cycles read it as a host wait */
	*blocking = pi->blocking || (p->pinned_known && hc.kind == HOST_PAGEABLE);
	if (kind == SYNC_KIND_NR) {
		inflight__queue_work(s, WORK_COPY);
		return pi->stream != NO_ARG ? legacy__stream_order(m, p, t, c, pi, stream) : 0;
	}
	sy.kind = kind;
	sy.host = hc.kind;
	sy.host_from = hc.from;
	if (kind == SYNC_COPY && !(sy.flags & SYNC_FAILED))
		inflight__drain_scope(m, p->tgid, s, WAIT_BLOCKING);
	else if (kind == SYNC_PAGEABLE && !(sy.flags & SYNC_FAILED))
		/* it waits for the stream and returns when the copy is done */
		inflight__drain_scope(m, p->tgid, s, is_legacy(stream) ? WAIT_BLOCKING : WAIT_ONE);
	else
		inflight__queue_work(s, WORK_COPY);
	return inflight__sync_push(m, p, &sy);
}

int waits__copy(struct model *m, struct model_proc *p, struct model_thread *t,
		const struct sp_call *c, const struct probe_info *pi)
{
	struct model_capture *cap;
	bool blocking = false;
	__u64 stream = 0;

	if (pi->stream != NO_ARG && !arg(c, pi->stream, &stream))
		return 0;
	cap = pi->stream != NO_ARG ? graphs__capturing(m, c, stream) : NULL;
	if (cap) {
		cap->copies++;
		return 0;
	}
	if (classify_copy(m, p, t, c, pi, stream, &blocking))
		return -ENOMEM;
	return graphs__loop_event(m, t, c, pi, LOOP_COPY, 0, stream_key(c, stream),
				  (pi->d2h ? LOOP_D2H : 0) | (blocking ? LOOP_BLOCKING : 0) |
				  (pi->host == NO_ARG ? LOOP_ON_DEVICE : 0));
}

/* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: the call was made while a capture was open. */
static bool capture_failure(const struct sp_call *c)
{
	return c->has_ret && c->returned && (int)c->result == CU_CAPTURE_UNSUPPORTED;
}

/* Context, stream and event syncs, frees and allocs: what they wait for, what they drain. */
int waits__classify_wait(struct model *m, struct model_proc *p, struct model_thread *t,
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
		s = inflight__work_stream(m, c, raw);
		if (!s)
			return -ENOMEM;
		kind = graphs__capturing(m, c, raw) ? SYNC_CAPTURE : SYNC_STREAM;
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
	inflight__sync_init(&sy, t, c, pi, kind, handle);
	if (pi->op == OP_EVENT_SYNC)
		inflight__split_event(m, e, &sy);
	else
		inflight__split_in_flight(m, s, scope, &sy);
	if (!(sy.flags & (SYNC_FAILED | SYNC_UNRETURNED)) && kind != SYNC_ALLOC) {
		if (e && e->stream)
			inflight__drain_to(e->stream, &e->at);
		else if (pi->op != OP_EVENT_SYNC)
			inflight__drain_scope(m, p->tgid, s, scope);
	}
	return inflight__sync_push(m, p, &sy);
}

int waits__sync_call(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi)
{
	__u64 handle = 0;
	__u8 flags = LOOP_BLOCKING;
	int ret;

	if (waits__classify_wait(m, p, t, c, pi))
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
	ret = graphs__loop_event(m, t, c, pi, LOOP_SYNC, handle, 0, flags);
	if (!ret && pi->op == OP_EVENT_SYNC) {
		struct model_event *e = hmap__get(&m->events, c->entry.tgid, handle);

		/* which record it waits for: the event's latest one */
		t->events[t->nr_events - 1].serial = e ? e->serial : 0;
	}
	return ret;
}

int waits__event_record(struct model *m, struct model_thread *t, const struct sp_call *c,
			const struct probe_info *pi)
{
	__u64 handle = arg_or0(c, pi->event), stream = arg_or0(c, pi->stream);
	struct model_event *e = store__event_get(m, c->entry.tgid, handle);
	struct model_capture *cap = graphs__capturing(m, c, stream);
	int ret;

	if (!e)
		return -ENOMEM;
	if (cap) {
		e->captured_in = cap;
		return 0;
	}
	e->captured_in = NULL;
	e->serial = ++m->record_serial;
	e->stream = inflight__work_stream(m, c, stream);
	if (!e->stream)
		return -ENOMEM;
	e->at = e->stream->queued;
	ret = graphs__loop_event(m, t, c, pi, LOOP_RECORD, handle, stream_key(c, stream), 0);
	if (!ret)
		t->events[t->nr_events - 1].serial = e->serial;
	return ret;
}

/* A stream that waits on an event recorded in a capture joins that capture. */
/* A stream waiting on an event is ordered behind its stream's work up to the record. */
static int order_by_event(struct model *m, const struct sp_call *c, struct model_event *e,
			  __u64 stream)
{
	struct model_stream *s = inflight__work_stream(m, c, stream);

	if (!s)
		return -ENOMEM;
	if (is_legacy(stream))
		e->stream->before_legacy = work_max(&e->stream->before_legacy, &e->at);
	else if (e->stream->key == 1)
		s->legacy_before = work_max(&s->legacy_before, &e->at);
	return 0;
}

int waits__wait_event(struct model *m, const struct sp_call *c, const struct probe_info *pi)
{
	__u64 stream = arg_or0(c, pi->stream);
	struct model_event *e = hmap__get(&m->events, c->entry.tgid, arg_or0(c, pi->event));
	struct model_capture *cap = e ? e->captured_in : NULL;
	struct model_stream *s;

	if (!cap && e && e->stream && !graphs__capturing(m, c, stream))
		return order_by_event(m, c, e, stream);
	if (!cap || cap->ended || graphs__capturing(m, c, stream))
		return 0;
	s = store__stream_get(m, c, stream);
	if (!s || !store__grow_array((void **)&cap->side_streams, &cap->cap_side, cap->nr_side + 1,
				     sizeof(*cap->side_streams)))
		return -ENOMEM;
	cap->side_streams[cap->nr_side++] = stream_key(c, stream);
	s->capture = cap;
	return 0;
}

int waits__host_memory(struct model_proc *p, const struct sp_call *c, const struct probe_info *pi)
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
bool waits__does_work(const struct probe_info *pi)
{
	enum sp_class cls = catalog[pi->catalog].cls;

	return cls != SP_CLASS_DRIVER && cls != SP_CLASS_LIFECYCLE && cls != SP_CLASS_NAMES;
}

/* Where a query looks: the stream queried, or the stream of the event's last record. */
static void split_query(struct model *m, const struct sp_call *c, const struct probe_info *pi,
			struct model_sync *sy)
{
	if (pi->op == OP_EVENT_QUERY) {
		inflight__split_event(m, hmap__get(&m->events, c->entry.tgid, sy->handle), sy);
		return;
	}
	inflight__split_in_flight(m,
				  hmap__get(&m->streams, c->entry.tgid,
					    sy->handle == 1 ? 0 : sy->handle),
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

		inflight__drain_scope(m, c->entry.tgid, s,
				      is_legacy(handle) ? WAIT_BLOCKING : WAIT_ONE);
		return;
	}
	e = hmap__get(&m->events, c->entry.tgid, handle);
	if (e && e->stream)
		inflight__drain_to(e->stream, &e->at);
}

/*
 * Polling: queries of one stream or event on one thread, with no other loop call
 * between, until one returns 0, are one spin. A run given up before that is no sync.
 */
int waits__query(struct model *m, struct model_proc *p, struct model_thread *t,
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
		inflight__sync_init(&sy, t, c, pi, SYNC_CAPTURE, handle);
		split_query(m, c, pi, &sy);
		return inflight__sync_push(m, p, &sy);
	}
	if (!ready && !not_ready) {
		t->polling = false;
		return 0;
	}
	if (!t->polling) {
		inflight__sync_init(run, t, c, pi, SYNC_POLL, handle);
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
	return inflight__sync_push(m, p, run);
}
