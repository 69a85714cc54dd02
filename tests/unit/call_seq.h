/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Synthetic call sequences for the model and analysis tests: one probe per
 * catalogue entry, calls made one after another on one thread with a clock
 * that moves by each call's duration plus a gap.
 */
#ifndef __CALL_SEQ_H
#define __CALL_SEQ_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "catalog.h"
#include "model.h"

#define GAP_NS 1000
#define MAIN_STREAM 0x5000
#define SIDE_STREAM 0x5100

struct call_seq {
	struct tf_header hdr;
	struct model *m;
	__u64 now;
	__u32 tgid, tid, seq;
	__u8 depth;
	bool cut_next;		/* the next call's return never comes */
	bool stack_next;	/* the next call's site is taken (SP_CALL_HAS_STACK) */
	__u64 next_result;	/* the next call's CUresult (0 after it) */
	struct sp_call *calls;	/* every call made, to feed other models again */
	size_t nr_calls, cap_calls;
};

static inline void seq_init(struct call_seq *s, __u64 attach_done_ns)
{
	memset(s, 0, sizeof(*s));
	s->hdr.nr_probes = catalog_len;
	s->hdr.probes = calloc(catalog_len, sizeof(*s->hdr.probes));
	assert_non_null(s->hdr.probes);
	for (int i = 0; i < catalog_len; i++)
		s->hdr.probes[i].catalog = i;
	s->hdr.attach_done_ns = attach_done_ns;
	s->m = model__new(&s->hdr);
	assert_non_null(s->m);
	s->now = 1000000;
	s->tgid = s->tid = 100;
}

static inline void seq_free(struct call_seq *s)
{
	model__free(s->m);
	free(s->hdr.probes);
	free(s->calls);
}

static inline void seq_keep(struct call_seq *s, const struct sp_call *c)
{
	if (s->nr_calls == s->cap_calls) {
		s->cap_calls = s->cap_calls ? 2 * s->cap_calls : 256;
		s->calls = realloc(s->calls, s->cap_calls * sizeof(*s->calls));
		assert_non_null(s->calls);
	}
	s->calls[s->nr_calls++] = *c;
}

/* One call: returns its entry time. out is the value read at return; str the name data. */
static inline __u64 seq_call(struct call_seq *s, const char *name, __u64 dur_ns, __u64 out,
			     const char *str, int nargs, ...)
{
	const struct catalog_entry *e = catalog__find(name);
	struct sp_call c;
	va_list ap;

	assert_non_null(e);
	memset(&c, 0, sizeof(c));
	c.entry.probe = e - catalog;
	c.entry.ts = s->now;
	c.entry.tgid = s->tgid;
	c.entry.tid = s->tid;
	c.entry.seq = ++s->seq;
	c.entry.depth = s->depth;
	c.entry.flags = s->stack_next ? SP_CALL_HAS_STACK : 0;
	s->stack_next = false;
	va_start(ap, nargs);
	for (int i = 0; i < nargs; i++)
		c.entry.args[i] = va_arg(ap, __u64);
	va_end(ap);
	if (str) {
		c.data_len = strlen(str) + 1;
		memcpy(c.data, str, c.data_len);
	}
	c.has_ret = e->completion;
	c.returned = e->completion && !s->cut_next;
	c.unreturned = e->completion && s->cut_next;
	c.ts_return = c.returned ? s->now + dur_ns : 0;
	s->cut_next = false;
	c.result = s->next_result;
	s->next_result = 0;
	c.out = out;
	assert_int_equal(model__call(s->m, &c), 0);
	seq_keep(s, &c);
	s->now += dur_ns + GAP_NS;
	return c.entry.ts;
}

static inline __u64 graph_launch(struct call_seq *s, __u64 exec)
{
	return seq_call(s, "cuGraphLaunch", 0, 0, NULL, 2, exec, (__u64)MAIN_STREAM);
}

static inline __u64 kernel(struct call_seq *s, __u64 func, __u64 stream)
{
	return seq_call(s, "cuLaunchKernel", 0, 0, NULL, 9, func, 1ull, 1ull, 1ull, 128ull, 1ull,
			1ull, 0ull, stream);
}

static inline __u64 stream_sync(struct call_seq *s, __u64 wait_ns)
{
	return seq_call(s, "cuStreamSynchronize", wait_ns, 0, NULL, 1, (__u64)MAIN_STREAM);
}

static inline __u64 event_record(struct call_seq *s, __u64 event, __u64 stream)
{
	return seq_call(s, "cuEventRecord", 0, 0, NULL, 2, event, stream);
}

static inline __u64 event_sync(struct call_seq *s, __u64 event, __u64 wait_ns)
{
	return seq_call(s, "cuEventSynchronize", wait_ns, 0, NULL, 1, event);
}

static inline __u64 wait_event(struct call_seq *s, __u64 stream, __u64 event)
{
	return seq_call(s, "cuStreamWaitEvent", 0, 0, NULL, 3, stream, event, 0ull);
}

static inline __u64 copy_d2h(struct call_seq *s)
{
	return seq_call(s, "cuMemcpyDtoHAsync", 2000, 0, NULL, 4, 0x7000ull, 0x8000ull, 64ull,
			(__u64)MAIN_STREAM);
}

/* torch.tensor([pos], device=...): a scalar from pageable memory, waited for. */
static inline __u64 upload_scalar(struct call_seq *s)
{
	__u64 ts = seq_call(s, "cuMemcpyHtoDAsync", 3000, 0, NULL, 4, 0x7200ull, 0x9100ull, 8ull,
			    (__u64)MAIN_STREAM);

	seq_call(s, "cuStreamSynchronize", 2000, 0, NULL, 1, (__u64)MAIN_STREAM);
	return ts;
}

/* Work on the device alone, as eager ops make it inside a forward. */
static inline __u64 copy_d2d(struct call_seq *s)
{
	return seq_call(s, "cuMemcpyDtoDAsync", 1000, 0, NULL, 4, 0x7400ull, 0x7800ull, 4096ull,
			(__u64)MAIN_STREAM);
}

static inline __u64 memset_d8(struct call_seq *s)
{
	return seq_call(s, "cuMemsetD8Async", 1000, 0, NULL, 4, 0x7c00ull, 0ull, 8192ull,
			(__u64)MAIN_STREAM);
}

static inline void name_function(struct call_seq *s, __u64 func, const char *name)
{
	seq_call(s, "cuModuleGetFunction", 1000, func, name, 3, 0x6000ull, 0x6100ull, 0x6200ull);
}

static inline void begin_capture(struct call_seq *s, __u64 stream)
{
	seq_call(s, "cuStreamBeginCapture", 0, 0, NULL, 2, stream, 0ull);
}

/* End the capture on stream into graph and instantiate it as exec. */
static inline void end_capture(struct call_seq *s, __u64 stream, __u64 graph, __u64 exec)
{
	seq_call(s, "cuStreamEndCapture", 1000, graph, NULL, 2, stream, 0x9000ull);
	seq_call(s, "cuGraphInstantiateWithFlags", 1000, exec, NULL, 3, 0x9100ull, graph, 0ull);
}

/* A graph of n launches of func, captured on the main stream. */
static inline void capture_graph(struct call_seq *s, __u64 graph, __u64 exec, __u64 func, int n)
{
	begin_capture(s, MAIN_STREAM);
	for (int i = 0; i < n; i++)
		kernel(s, func, MAIN_STREAM);
	end_capture(s, MAIN_STREAM, graph, exec);
}

static inline struct model_exec *find_exec(struct call_seq *s, __u64 handle)
{
	struct model_view *v = model__view(s->m);
	struct model_exec *found = NULL;

	for (size_t i = 0; i < v->nr_execs; i++)
		if (v->execs[i]->handle == handle && !v->execs[i]->destroyed)
			found = v->execs[i];
	return found;
}

#endif /* __CALL_SEQ_H */
