// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Exported driver entry points: initialisation, contexts, streams, events and
 * the blocking and polling syncs. Each is a thin body over sim_*; none calls
 * another exported entry point, so a tracer sees exactly the calls made.
 */
#include <stdlib.h>
#include "sim.h"

#define CTX_STACK_MAX 32

static struct specsim_ctx primary_ctx[SIM_MAX_DEVICES];
static __thread struct specsim_ctx *ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;

static bool ctx_ok(CUcontext ctx)
{
	return ctx && ctx->magic == SIM_MAGIC_CTX;
}

static bool event_ok(CUevent ev)
{
	return ev && ev->magic == SIM_MAGIC_EVENT;
}

SIM_EXPORT CUresult cuInit(unsigned int flags)
{
	CUresult err;

	SIM_FRAME();
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	err = sim_init();
	if (err == CUDA_SUCCESS)
		sim_inject();
	return err;
}

static CUresult device_check(const void *out, int dev)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= sim_dev.nr_devices)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult err;

	CHECK_INIT();
	err = device_check(device, ordinal);
	if (!err)
		*device = ordinal;
	return err;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult err;

	CHECK_INIT();
	err = device_check(pctx, dev);
	if (err)
		return err;
	primary_ctx[dev].magic = SIM_MAGIC_CTX;
	primary_ctx[dev].device = dev;
	*pctx = &primary_ctx[dev];
	return CUDA_SUCCESS;
}

/* Replaces the top of the thread's context stack; NULL pops it. */
SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CHECK_INIT();
	if (!ctx) {
		if (ctx_depth)
			ctx_depth--;
	} else if (!ctx_ok(ctx)) {
		return CUDA_ERROR_INVALID_CONTEXT;
	} else {
		if (!ctx_depth)
			ctx_depth = 1;
		ctx_stack[ctx_depth - 1] = ctx;
	}
	sim_set_current_ctx(ctx_depth ? ctx_stack[ctx_depth - 1] : NULL);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CHECK_INIT();
	if (!ctx_ok(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_depth == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = ctx;
	sim_set_current_ctx(ctx);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CHECK_INIT();
	if (!ctx_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_depth--;
	if (pctx)
		*pctx = ctx_stack[ctx_depth];
	sim_set_current_ctx(ctx_depth ? ctx_stack[ctx_depth - 1] : NULL);
	return CUDA_SUCCESS;
}

/* A device-wide sync during a capture is not allowed and spoils it. */
static CUresult sync_ctx(struct specsim_ctx *ctx)
{
	bool capturing;

	pthread_mutex_lock(&sim_dev.lock);
	capturing = sim_any_capture_locked(ctx);
	if (capturing)
		for (struct specsim_stream *t = sim_dev.streams; t; t = t->next)
			if (t->cap && !t->cap->ended)
				sim_capture_invalidate_locked(t->cap);
	pthread_mutex_unlock(&sim_dev.lock);
	if (capturing)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	sim_wait_ctx(ctx);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize(void)
{
	CHECK_INIT();
	return sync_ctx(sim_current_ctx());
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	CHECK_INIT();
	if (ctx && !ctx_ok(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return sync_ctx(ctx ? ctx : sim_current_ctx());
}

static CUresult stream_create(CUstream *ph, unsigned int flags, int priority)
{
	struct specsim_stream *s;

	if (!ph)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & ~CU_STREAM_NON_BLOCKING)
		return CUDA_ERROR_INVALID_VALUE;
	s = sim_stream_new(flags, priority, false);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ph = s;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
	CHECK_INIT();
	return stream_create(phStream, flags, 0);
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
					       int priority)
{
	CHECK_INIT();
	/* like an H100/H200: priorities run from -5 (highest) to 0 */
	if (priority < -5)
		priority = -5;
	if (priority > 0)
		priority = 0;
	return stream_create(phStream, flags, priority);
}

/* Returns at once; the worker drains what is queued and then exits. */
SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
	struct specsim_stream *s;

	CHECK_INIT();
	s = sim_stream_resolve(hStream);
	if (!s || s->legacy || hStream == CU_STREAM_PER_THREAD)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_dev.lock);
	if (s->cap)
		sim_capture_invalidate_locked(s->cap);
	s->destroyed = true;
	s->quit = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&sim_dev.lock);
	return CUDA_SUCCESS;
}

/* Syncing or querying a capturing stream fails and invalidates the capture. */
static CUresult stream_for_sync(CUstream hStream, struct specsim_stream **out)
{
	struct specsim_stream *s = sim_stream_resolve(hStream);
	bool capturing;

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_dev.lock);
	capturing = s->cap != NULL;
	if (capturing)
		sim_capture_invalidate_locked(s->cap);
	pthread_mutex_unlock(&sim_dev.lock);
	if (capturing)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	*out = s;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
	struct specsim_stream *s;
	CUresult err;

	CHECK_INIT();
	err = stream_for_sync(hStream, &s);
	if (!err)
		sim_wait_stream(s);
	return err;
}

SIM_EXPORT CUresult cuStreamQuery(CUstream hStream)
{
	struct specsim_stream *s;
	CUresult err;
	bool busy;

	CHECK_INIT();
	err = stream_for_sync(hStream, &s);
	if (err)
		return err;
	pthread_mutex_lock(&sim_dev.lock);
	busy = sim_stream_busy_locked(s);
	pthread_mutex_unlock(&sim_dev.lock);
	return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

/* An event recorded in a capture pulls the waiting stream into that capture. */
static CUresult wait_event_locked(struct specsim_stream *s, struct specsim_event *ev)
{
	struct sim_capture *cap = ev->cap && !ev->cap->ended ? ev->cap : NULL;

	if (cap) {
		if (s->legacy)
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		if (s->cap && s->cap != cap)
			return CUDA_ERROR_STREAM_CAPTURE_MERGE;
		s->cap = cap;
		return CUDA_SUCCESS;
	}
	/* inside a capture, outside work is not a graph dependency here */
	if (s->cap || !ev->stream)
		return CUDA_SUCCESS;
	return sim_stream_wait_dep_locked(s, ev->stream, ev->seq);
}

SIM_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags)
{
	struct specsim_stream *s;
	CUresult err;

	CHECK_INIT();
	s = sim_stream_resolve(hStream);
	if (!s || !event_ok(hEvent))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_dev.lock);
	err = wait_event_locked(s, hEvent);
	pthread_mutex_unlock(&sim_dev.lock);
	return err;
}

SIM_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int flags)
{
	struct specsim_event *ev;

	CHECK_INIT();
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ev->magic = SIM_MAGIC_EVENT;
	ev->flags = flags;
	*phEvent = ev;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent)
{
	CHECK_INIT();
	if (!event_ok(hEvent))
		return CUDA_ERROR_INVALID_HANDLE;
	hEvent->magic = 0;
	free(hEvent);
	return CUDA_SUCCESS;
}

static CUresult event_record(struct specsim_event *ev, CUstream hStream)
{
	struct specsim_stream *s = sim_stream_resolve(hStream);
	CUresult err = CUDA_SUCCESS;

	if (!s || !event_ok(ev))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_dev.lock);
	if (s->cap && s->cap->invalid) {
		err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else if (s->cap) {
		ev->cap = s->cap;
		ev->stream = NULL;
	} else {
		ev->cap = NULL;
		ev->stream = s;
		ev->seq = sim_stream_mark_locked(s);
	}
	pthread_mutex_unlock(&sim_dev.lock);
	return err;
}

SIM_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	CHECK_INIT();
	return event_record(hEvent, hStream);
}

SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	CHECK_INIT();
	return event_record(hEvent, hStream);
}

/* Returns 1 when done, 0 when pending, or a negated CUresult. */
static int event_state_locked(const struct specsim_event *ev)
{
	if (ev->cap && !ev->cap->ended)
		return -CUDA_ERROR_CAPTURED_EVENT;
	if (ev->cap || !ev->stream)
		return 1;
	return ev->stream->done_seq >= ev->seq;
}

/* Query and synchronize differ only in waiting for a pending event. */
static CUresult event_done(struct specsim_event *ev, bool wait)
{
	int state;

	if (!event_ok(ev))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_dev.lock);
	state = event_state_locked(ev);
	if (state == 0 && wait) {
		sim_wait_locked(ev->stream, ev->seq);
		state = 1;
	}
	pthread_mutex_unlock(&sim_dev.lock);
	if (state < 0)
		return -state;
	return state ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

SIM_EXPORT CUresult cuEventQuery(CUevent hEvent)
{
	CHECK_INIT();
	return event_done(hEvent, false);
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
	CHECK_INIT();
	return event_done(hEvent, true);
}
