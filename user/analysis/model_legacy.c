// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* How work orders with the legacy stream (implicit waits between streams). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

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
	struct model_stream *legacy = inflight__work_stream(m, c, 0);
	struct model_sync sy, unknown = { 0 };

	if (!legacy)
		return -ENOMEM;
	inflight__sync_init(&sy, t, c, pi, SYNC_LEGACY, 0);
	for (size_t i = 0; i < m->nr_all_streams; i++) {
		struct model_stream *s = m->all_streams[i];
		struct work_count w;

		if (s->tgid != sy.tgid)
			continue;
		w = s == legacy ? work_sub(&s->queued, &s->drained)
				: inflight__in_flight_since(s, &s->before_legacy);
		if (s == legacy || s->non_blocking) {
			work_add(&sy.other, &w);
			continue;
		}
		if (s->flags_known)
			inflight__note_waited(&sy, s, &w);
		else
			inflight__note_waited(&unknown, s, &w);
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
	return inflight__sync_push(m, p, &sy);
}

/*
 * Work put on a known blocking stream (already queued there) waits for the
 * legacy stream's work in flight, unless an event or an earlier barrier already
 * ordered it behind that work.
 */
static int held_back(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi, __u64 stream)
{
	struct model_stream *s = inflight__work_stream(m, c, stream), *legacy;
	struct model_sync sy;
	struct work_count w;

	if (!s)
		return -ENOMEM;
	if (is_legacy(stream) || s->non_blocking || !s->flags_known)
		return 0;
	legacy = hmap__get(&m->streams, c->entry.tgid, 1);
	if (!legacy || legacy == s)
		return 0;
	w = inflight__in_flight_since(legacy, &s->legacy_before);
	s->legacy_before = legacy->queued;
	if (!work_any(&w))
		return 0;
	inflight__sync_init(&sy, t, c, pi, SYNC_LEGACY, s->key);
	sy.flags |= SYNC_HELD_BACK;
	inflight__note_waited(&sy, legacy, &w);
	return inflight__sync_push(m, p, &sy);
}

/* Work on a stream, outside capture: how it orders with the legacy stream. */
int legacy__stream_order(struct model *m, struct model_proc *p, struct model_thread *t,
			 const struct sp_call *c, const struct probe_info *pi, __u64 stream)
{
	if (is_legacy(stream))
		return legacy_work(m, p, t, c, pi);
	return held_back(m, p, t, c, pi, stream);
}
