// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Planted calls for the sync classification (--plant, --clean-syncs). Each
 * plant makes one call of interest, tagged "planted:KIND"; calls it needs
 * beside it (an event record, the allocation a free frees) are tagged
 * "companion:KIND"; syncs that wait for nothing are tagged "clean:KIND". All
 * carry "position"; planted waits and copies also "stream_busy": whether what
 * they wait for had work queued. Blocking ones are noted for the cycle bounds. The
 * side-stream plants (--torch) launch a kernel on a blocking side stream; the
 * loop's next legacy-stream call, ordered behind it, is the planted one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "rank.h"

/* tags by kind, in enum plant_kind order */
static const char *const planted_tag[PLANT_NR] = {
	"planted:ctx",		 "planted:stream",	 "planted:event", "planted:sync-copy",
	"planted:pageable-copy", "planted:unknown-host", "planted:free",  "planted:alloc",
	"planted:legacy",	 "planted:poll",	 "planted:capture-sync",
	"planted:legacy",	 "unknown:legacy",	 "planted:free-host",
};
static const char *const companion_tag[PLANT_NR] = {
	[PLANT_EVENT] = "companion:event",
	[PLANT_UNKNOWN_HOST] = "companion:unknown-host",
	[PLANT_FREE] = "companion:free",
	[PLANT_ALLOC] = "companion:alloc",
	[PLANT_CAPTURE_SYNC] = "companion:capture-sync",
	[PLANT_SIDE_STREAM] = "companion:side-stream",
	[PLANT_SIDE_STREAM_PRE] = "companion:side-stream-pre",
	[PLANT_FREE_HOST] = "companion:free-host",
};

#define PLANT_BYTES 4096	/* the free/alloc plants' buffer */
#define POLL_NAP_NS 20000	/* between queries: a spin that yields, as Python loops do */

static bool wanted(enum plant_kind kind)
{
	for (int i = 0; i < env.nr_plants; i++)
		if (env.plants[i].kind == kind)
			return true;
	return false;
}

static void tag(const char *t, enum plant_pos pos)
{
	truth__set_tag(t);
	truth__set_position(t ? plant_pos_name(pos) : NULL);
}

/*
 * Before the start gate, so a tracer attached at the gate never sees the
 * unknown-host buffer's allocation and cannot tell that it is pinned.
 */
int plants__setup(struct rank_state *st)
{
	size_t bytes = st->accept_bytes;

	if (wanted(PLANT_UNKNOWN_HOST)) {
		tag(companion_tag[PLANT_UNKNOWN_HOST], POS_OUTSIDE);
		CU(cuMemHostAlloc, (&st->unknown_host, bytes, 0), A("ptr_out", &st->unknown_host),
		   A("bytes", bytes), A("flags", 0), A("ptr", st->unknown_host));
		tag(NULL, 0);
	}
	if (wanted(PLANT_FREE_HOST)) {
		tag(companion_tag[PLANT_FREE_HOST], POS_OUTSIDE);
		CU(cuMemHostAlloc, (&st->spare_host, PLANT_BYTES, 0), A("ptr_out", &st->spare_host),
		   A("bytes", PLANT_BYTES), A("flags", 0), A("ptr", st->spare_host));
		tag(NULL, 0);
	}
	/* a CPU tensor's storage: heap memory, never registered */
	if (wanted(PLANT_PAGEABLE_COPY) && !(st->plant_pageable = calloc(1, bytes)))
		return -1;
	if (wanted(PLANT_SIDE_STREAM_PRE)) {
		/* made before the gate: a tracer attached there cannot know its flags */
		tag(companion_tag[PLANT_SIDE_STREAM_PRE], POS_OUTSIDE);
		CU(cuStreamCreate, (&st->torch.side_pre, 0), A("stream_out", &st->torch.side_pre),
		   A("flags", 0), A("stream", st->torch.side_pre));
		tag(NULL, 0);
	}
	if (wanted(PLANT_EVENT))
		CU(cuEventCreate, (&st->plant_ev, 0), A("event_out", &st->plant_ev), A("flags", 0),
		   A("event", st->plant_ev));
	if (env.clean_syncs) {
		CU(cuEventCreate, (&st->clean_ev, 0), A("event_out", &st->clean_ev), A("flags", 0),
		   A("event", st->clean_ev));
		/* recorded once and waited for: every later sync on it finds it complete */
		tag("companion:clean", POS_OUTSIDE);
		CU(cuEventRecord, (st->clean_ev, st->main), A("event", st->clean_ev),
		   A("stream", st->main));
		CU(cuEventSynchronize, (st->clean_ev), A("event", st->clean_ev));
		tag(NULL, 0);
	}
	return 0;
}

/* A sync attempt on a capturing stream: it fails and spoils that capture. */
int plants__capture(struct rank_state *st)
{
	CUgraph g = NULL;

	if (!wanted(PLANT_CAPTURE_SYNC))
		return 0;
	tag(companion_tag[PLANT_CAPTURE_SYNC], POS_OUTSIDE);
	CU(cuStreamBeginCapture_v2, (st->main, CU_STREAM_CAPTURE_MODE_GLOBAL),
	   A("stream", st->main), A("mode", CU_STREAM_CAPTURE_MODE_GLOBAL));
	tag(planted_tag[PLANT_CAPTURE_SYNC], POS_OUTSIDE);
	CALL(cuStreamSynchronize, (st->main), A("stream", st->main));
	tag(companion_tag[PLANT_CAPTURE_SYNC], POS_OUTSIDE);
	CALL(cuStreamEndCapture, (st->main, &g), A("stream", st->main), A("graph_out", &g),
	     A("graph", g));
	tag(NULL, 0);
	return 0;
}

static int poll_until_ready(struct rank_state *st)
{
	struct timespec nap = { 0, POLL_NAP_NS };

	truth__set_stream_busy(specsimStreamBusy(st->work));
	for (;;) {
		int r = CALL(cuStreamQuery, (st->work), A("stream", st->work));

		if (r != CUDA_ERROR_NOT_READY)
			return r ? -1 : 0;
		nanosleep(&nap, NULL);
	}
}

/* stream_busy: whether the copy's stream had work queued, so anything to wait for */
static int plant_copy(struct rank_state *st, void *dst, bool async)
{
	size_t bytes = st->accept_bytes;

	truth__set_stream_busy(specsimStreamBusy(async ? st->work : NULL));
	if (async)
		CU(cuMemcpyDtoHAsync_v2, (dst, st->accept_dev, bytes, st->work), A("dst_host", dst),
		   A("src", st->accept_dev), A("bytes", bytes), A("stream", st->work));
	else
		CU(cuMemcpyDtoH_v2, (dst, st->accept_dev, bytes), A("dst_host", dst),
		   A("src", st->accept_dev), A("bytes", bytes));
	truth__set_stream_busy(-1);
	return 0;
}

/* The free plant frees a stream-ordered allocation, so the alloc is no implicit sync. */
static int plant_free(struct rank_state *st, enum plant_pos pos)
{
	CUdeviceptr p = 0;

	tag(companion_tag[PLANT_FREE], pos);
	CU(cuMemAllocAsync, (&p, PLANT_BYTES, st->work), A("dptr_out", &p),
	   A("bytes", PLANT_BYTES), A("stream", st->work), A("dptr", p));
	tag(planted_tag[PLANT_FREE], pos);
	truth__set_stream_busy(specsimDeviceBusy());
	CU(cuMemFree_v2, (p), A("dptr", p));
	return 0;
}

/* ... and the alloc plant's buffer goes back in stream order, without a sync. */
static int plant_alloc(struct rank_state *st, enum plant_pos pos)
{
	CUdeviceptr p = 0;

	CU(cuMemAlloc_v2, (&p, PLANT_BYTES), A("dptr_out", &p), A("bytes", PLANT_BYTES),
	   A("dptr", p));
	tag(companion_tag[PLANT_ALLOC], pos);
	CU(cuMemFreeAsync, (p, st->work), A("dptr", p), A("stream", st->work));
	return 0;
}

/*
 * Side-stream work that the loop's next legacy call is ordered behind: that
 * call is the plant ("planted:legacy", or "unknown:legacy" when the stream was
 * made before the start gate), with the side stream in serialises_with.
 */
static int plant_side(struct rank_state *st, enum plant_kind kind, enum plant_pos pos)
{
	struct torch_state *t = &st->torch;
	bool pre = kind == PLANT_SIDE_STREAM_PRE;
	CUstream *s = pre ? &t->side_pre : &t->side;
	CUevent *ev = pre ? &t->side_pre_ev : &t->side_ev;

	tag(companion_tag[kind], pos);
	/* side-stream: made lazily, after the start gate, so a tracer sees its flags */
	if (!*s)
		CU(cuStreamCreate, (s, 0), A("stream_out", s), A("flags", 0), A("stream", *s));
	if (!*ev)
		CU(cuEventCreate, (ev, 0), A("event_out", ev), A("flags", 0), A("event", *ev));
	/* side.wait_stream(current): its work starts after the legacy work queued so far */
	CU(cuEventRecord, (*ev, st->work), A("event", *ev), A("stream", st->work));
	CU(cuStreamWaitEvent, (*s, *ev, 0), A("stream", *s), A("event", *ev), A("flags", 0));
	if (graphs__launch(st, t->side_work, *s, 1, 0))
		return -1;
	t->pending = *s;
	t->pending_tag = planted_tag[kind];
	return 0;
}

/*
 * A pinned buffer freed (the first one made before the start gate), and a new
 * one made for the next time: the caching host allocator giving memory back.
 */
static int plant_free_host(struct rank_state *st, enum plant_pos pos)
{
	CU(cuMemFreeHost, (st->spare_host), A("ptr", st->spare_host));
	tag(companion_tag[PLANT_FREE_HOST], pos);
	CU(cuMemHostAlloc, (&st->spare_host, PLANT_BYTES, 0), A("ptr_out", &st->spare_host),
	   A("bytes", PLANT_BYTES), A("flags", 0), A("ptr", st->spare_host));
	return 0;
}

/* Makes one plant's calls; *blocked says whether the planted call blocked the host. */
static int plant_calls(struct rank_state *st, enum plant_kind kind, enum plant_pos pos,
		       bool *blocked)
{
	*blocked = true;
	switch (kind) {
	case PLANT_CTX:
		truth__set_stream_busy(specsimDeviceBusy());
		CU(cuCtxSynchronize, ());
		return 0;
	case PLANT_STREAM:
		truth__set_stream_busy(specsimStreamBusy(st->work));
		CU(cuStreamSynchronize, (st->work), A("stream", st->work));
		return 0;
	case PLANT_EVENT: {
		/*
		 * The event waits for what the stream had queued before its record: the
		 * record itself is no work, though the simulator's worker takes a moment
		 * to pass it (the legacy stream's, checking every blocking stream, longer).
		 */
		int busy = specsimStreamBusy(st->work);

		tag(companion_tag[PLANT_EVENT], pos);
		CU(cuEventRecord, (st->plant_ev, st->work), A("event", st->plant_ev),
		   A("stream", st->work));
		tag(planted_tag[PLANT_EVENT], pos);
		truth__set_stream_busy(busy);
		CU(cuEventSynchronize, (st->plant_ev), A("event", st->plant_ev));
		return 0;
	}
	case PLANT_SYNC_COPY:
		return plant_copy(st, st->ids_host, false);
	case PLANT_PAGEABLE_COPY:
		return plant_copy(st, st->plant_pageable, true);
	case PLANT_FREE:
		return plant_free(st, pos);
	case PLANT_UNKNOWN_HOST:
		*blocked = false;	/* pinned: the copy is really async */
		return plant_copy(st, st->unknown_host, true);
	case PLANT_ALLOC:
		*blocked = false;
		return plant_alloc(st, pos);
	case PLANT_FREE_HOST:
		*blocked = false;
		return plant_free_host(st, pos);
	case PLANT_LEGACY:
		*blocked = false;
		return graphs__launch(st, st->k.nop, NULL, 1, 0);
	case PLANT_POLL:
		*blocked = false;	/* many short calls, none of which blocks */
		return poll_until_ready(st);
	case PLANT_SIDE_STREAM:
	case PLANT_SIDE_STREAM_PRE:
		*blocked = false;
		return plant_side(st, kind, pos);
	case PLANT_CAPTURE_SYNC:
	case PLANT_NR:
		break;
	}
	*blocked = false;
	return 0;
}

/* Syncs that wait for nothing: a complete event, the side stream (idle at replay). */
static int clean_syncs(struct rank_state *st, enum plant_pos pos, int cycle)
{
	if (!env.clean_syncs)
		return 0;
	if (pos == POS_DRAFT_VERIFY) {
		tag("clean:event", pos);
		CU(cuEventSynchronize, (st->clean_ev), A("event", st->clean_ev));
		bounds__blocking(st, cycle);
	} else if (pos == POS_AFTER_VERIFY) {
		tag("clean:stream", pos);
		CU(cuStreamSynchronize, (st->side), A("stream", st->side));
		bounds__blocking(st, cycle);
	}
	tag(NULL, 0);
	return 0;
}

static bool side_plant(enum plant_kind kind)
{
	return kind == PLANT_SIDE_STREAM || kind == PLANT_SIDE_STREAM_PRE;
}

/* The plants due at pos in this cycle, side-stream ones or the others, in the order given. */
static int plants_due(struct rank_state *st, enum plant_pos pos, int cycle, bool side)
{
	for (int i = 0; i < env.nr_plants; i++) {
		const struct plant *p = &env.plants[i];
		bool due = cycle < 0 ? !p->every : p->every && (cycle + 1) % p->every == 0;
		bool blocked;

		if (p->pos != pos || !due || p->kind == PLANT_CAPTURE_SYNC ||
		    side_plant(p->kind) != side)
			continue;
		tag(side ? companion_tag[p->kind] : planted_tag[p->kind], pos);
		if (plant_calls(st, p->kind, pos, &blocked))
			return -1;
		truth__set_stream_busy(-1);
		if (blocked)
			bounds__blocking(st, cycle);
		tag(NULL, 0);
	}
	return 0;
}

/*
 * The plants due at pos in this cycle. cycle -1 is before the loop, where the
 * outside plants without a period are made. Side-stream plants come last, so
 * the next legacy call is the loop's own.
 */
int plants__at(struct rank_state *st, enum plant_pos pos, int cycle)
{
	if (plants_due(st, pos, cycle, false))
		return -1;
	if (cycle >= 0 && clean_syncs(st, pos, cycle))
		return -1;
	return plants_due(st, pos, cycle, true);
}

void plants__teardown(struct rank_state *st)
{
	if (st->plant_ev)
		CALL(cuEventDestroy_v2, (st->plant_ev), A("event", st->plant_ev));
	if (st->clean_ev)
		CALL(cuEventDestroy_v2, (st->clean_ev), A("event", st->clean_ev));
	if (st->unknown_host)
		CALL(cuMemFreeHost, (st->unknown_host), A("ptr", st->unknown_host));
	if (st->spare_host)
		CALL(cuMemFreeHost, (st->spare_host), A("ptr", st->spare_host));
	free(st->plant_pageable);
}
