// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Work queued per stream, what is in flight, what a sync waited for and drained. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

struct model_stream *inflight__work_stream(struct model *m, const struct sp_call *c, __u64 stream)
{
	return store__stream_get(m, c, is_legacy(stream) ? 0 : stream);
}

void inflight__queue_work(struct model_stream *s, enum work_what what)
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

/* In flight on s and not yet ordered before something: queued less max(drained, mark). */
struct work_count inflight__in_flight_since(const struct model_stream *s,
					    const struct work_count *mark)
{
	struct work_count done = work_max(&s->drained, mark);

	return work_sub(&s->queued, &done);
}

/* Done up to at: what was queued before an event record, say. */
void inflight__drain_to(struct model_stream *s, const struct work_count *at)
{
	s->drained.graphs = at->graphs > s->drained.graphs ? at->graphs : s->drained.graphs;
	s->drained.kernels = at->kernels > s->drained.kernels ? at->kernels : s->drained.kernels;
	s->drained.copies = at->copies > s->drained.copies ? at->copies : s->drained.copies;
}

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
void inflight__note_waited(struct model_sync *sy, const struct model_stream *s,
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
void inflight__split_in_flight(struct model *m, const struct model_stream *one,
			       enum wait_scope scope, struct model_sync *sy)
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
		inflight__note_waited(sy, s, &w);
	}
}

void inflight__drain_scope(struct model *m, __u32 tgid, const struct model_stream *one,
			   enum wait_scope scope)
{
	for (size_t i = 0; i < m->nr_all_streams; i++) {
		struct model_stream *s = m->all_streams[i];

		if (s->tgid == tgid && in_scope(s, one, scope))
			s->drained = s->queued;
	}
}

/* An event sync or query waits for its stream's work up to the record. */
void inflight__split_event(struct model *m, const struct model_event *e, struct model_sync *sy)
{
	struct work_count w;

	inflight__split_in_flight(m, NULL, WAIT_NONE, sy);
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

void inflight__sync_init(struct model_sync *sy, const struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi, enum sync_kind kind,
			 __u64 handle)
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
	sy->stack = c->stack;
	if (c->entry.flags & SP_CALL_HAS_STACK)
		sy->flags |= SYNC_SITE_TAKEN;
}

/* Kinds after which the device may have nothing left to do because the call waited. */
static bool waits(enum sync_kind kind)
{
	return kind == SYNC_CTX || kind == SYNC_STREAM || kind == SYNC_EVENT || kind == SYNC_COPY ||
	       kind == SYNC_PAGEABLE || kind == SYNC_FREE || kind == SYNC_POLL;
}

/* After its drains: keep it, and let the process's next launch close its idle interval. */
int inflight__sync_push(struct model *m, struct model_proc *p, struct model_sync *sy)
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
	sy->seq = m->syncs_taken++;
	v->syncs[v->nr_syncs++] = *sy;
	if (sy->flags & SYNC_UNRETURNED)
		return 0;
	if (!store__grow_array((void **)&p->pending, &p->cap_pending, p->nr_pending + 1,
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
void inflight__launched(struct model *m, struct model_proc *p, const struct sp_call *c,
			__u64 stream, enum work_what what)
{
	inflight__queue_work(inflight__work_stream(m, c, stream), what);
	note_launch(m, p, c->entry.ts);
}
