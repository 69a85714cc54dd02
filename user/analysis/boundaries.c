// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Where each iteration lies in its thread's loop events: its verify group,
 * draft, accept and extend, and the cycle they make with its phases' spans,
 * counts and GPU figures.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cycles_int.h"
#include "gputime.h"

static int push_iter(struct thread_ctx *tc, size_t *cap, size_t vs, size_t ve)
{
	if (tc->nr_iters == *cap) {
		size_t n = *cap ? *cap * 2 : 256;
		struct iter *grown = realloc(tc->iters, n * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		tc->iters = grown;
		*cap = n;
	}
	tc->iters[tc->nr_iters++] = (struct iter){ .vs = vs, .ve = ve, .setup = NONE };
	return 0;
}

/* Where the frames told the loop: the stack of each of its syncs, made on first use. */
static bool frames_stacks(struct thread_ctx *tc)
{
	if (tc->frames_loop && !tc->event_stacks)
		tc->event_stacks = frames__event_stacks(tc->v, tc->t);
	return tc->frames_loop && tc->event_stacks;
}

/* Verify groups: verify launches with no sync and no other graph launch between. */
int boundaries__groups(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	size_t cap = 0, vs = NONE, ve = NONE;

	for (size_t j = 0; j <= t->nr_events; j++) {
		const struct loop_event *e = j < t->nr_events ? &t->events[j] : NULL;
		bool verify = e && role_of(tc, e) == ROLE_VERIFY;

		if (verify) {
			if (vs == NONE)
				vs = j;
			ve = j;
			continue;
		}
		/* the frames' verify runs on through a sync its model code makes */
		if (vs != NONE && e && is_blocking(e) && frames_stacks(tc) && tc->event_stacks[j] &&
		    frames__in_forward(&tc->frames,
				       callstacks__stack(tc->v->stacks, tc->event_stacks[j])))
			continue;
		if (vs != NONE && (!e || is_blocking(e) || e->kind == LOOP_GRAPH)) {
			if (push_iter(tc, &cap, vs, ve))
				return -ENOMEM;
			vs = NONE;
		}
	}
	return 0;
}

/* A draft graph, or an eager launch on the verify stream (an eager draft step). */
bool boundaries__is_draft_launch(const struct thread_ctx *tc, const struct loop_event *e,
				 const struct loop_event *verify)
{
	if (e->kind == LOOP_GRAPH || burst_head(tc, e))
		return role_of(tc, e) == ROLE_DRAFT;
	return is_launch(e) && on_stream_of(e, verify);
}

/* Does event j wait for work on stream, queued at or before index since? */
bool boundaries__covers(const struct model_thread *t, size_t j, __u64 stream, size_t since)
{
	const struct loop_event *e = &t->events[j];

	if (e->kind != LOOP_SYNC)
		return false;
	if (e->flags & LOOP_CTX_WIDE)
		return true;
	if (e->serial) {
		for (size_t k = since + 1; k < j; k++)
			if (t->events[k].kind == LOOP_RECORD && t->events[k].serial == e->serial &&
			    t->events[k].stream == stream)
				return true;
		return false;
	}
	return e->handle == stream && e->handle;
}

/*
 * Accept's calls end at the first graph launched after verify (extend, or the
 * next draft); with no graph before the next verify, at the first launch on
 * the verify stream after the result's copy.
 */
void boundaries__accept_ends(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		struct iter *it = &tc->iters[i];
		const struct loop_event *verify = &t->events[it->ve];
		size_t first_eager = NONE;
		bool copied = false;

		it->region_end = i + 1 < tc->nr_iters ? tc->iters[i + 1].vs : t->nr_events;
		it->after = it->region_end;
		for (size_t j = it->ve + 1; j < it->region_end; j++) {
			const struct loop_event *e = &t->events[j];

			if (e->kind == LOOP_GRAPH) {
				it->after = j;
				break;
			}
			copied |= is_d2h(e);
			if (copied && first_eager == NONE && is_launch(e) &&
			    on_stream_of(e, verify))
				first_eager = j;
		}
		if (it->after == it->region_end && first_eager != NONE)
			it->after = first_eager;
	}
}

/* The last draft graph launched in [from, vs), past any other call; NONE if none. */
static size_t last_draft_graph(const struct thread_ctx *tc, size_t from, size_t vs)
{
	for (size_t j = vs; j-- > from;) {
		const struct loop_event *e = &tc->t->events[j];

		if (e->kind == LOOP_GRAPH)
			return role_of(tc, e) == ROLE_DRAFT ? j : NONE;
	}
	return NONE;
}

/* Its drafts are eager forwards, a sync per token: no graph launched beside them. */
static bool eager_drafts(const struct thread_ctx *tc)
{
	return tc->eager && !tc->plain_graphs;
}

/*
 * Where the frames told the loop, the draft begins after the loop's last own
 * sync before the verify (the last round's bookkeeping): its first launch
 * after it. Syncs of the draft (nested, or under the drafting statement) and
 * those whose walk lost frames do not end it; before the first verify, a sync
 * outside the loop's function does (the generation's set-up before its loop).
 */
static void frames_draft(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	size_t floor = i ? tc->iters[i - 1].ve + 1 : 0, j = it->vs;

	it->draft = NONE;
	it->draft_cut = false;
	it->draft_seen = i > 0;
	while (j-- > floor) {
		__u32 stack = tc->event_stacks[j];

		if (stack && frames__class(&tc->frames, tc->v, stack, !i) == FRAME_LOOP) {
			it->draft_seen = true;
			return;
		}
		if (is_launch(&t->events[j]))
			it->draft = j;
	}
}

/*
 * Walking back from verify: past calls that are not draft launches (a sync
 * between draft and verify, work on other streams), then over draft launches
 * (draft graphs, eager launches on the verify stream), up to a sync or a
 * launch that is not a draft. Where the thread drafts with graphs, the walk
 * starts at the last draft graph: eager launches after it and a sync between
 * feed verify, they do not end the draft.
 */
void boundaries__find_draft(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	const struct loop_event *verify = &t->events[it->vs];
	size_t floor = i ? tc->iters[i - 1].ve + 1 : 0, j = it->vs;
	size_t graph = tc->graph_drafts ? last_draft_graph(tc, floor, it->vs) : NONE;

	if (frames_stacks(tc)) {
		frames_draft(tc, i);
		return;
	}
	it->draft = NONE;
	it->setup = NONE;
	it->draft_seen = i > 0;
	it->draft_cut = false;
	if (graph != NONE)
		j = graph + 1;
	while (j-- > floor) {
		const struct loop_event *e = &t->events[j];

		if (boundaries__is_draft_launch(tc, e, verify)) {
			it->draft = j;
			continue;
		}
		/*
		 * an eager forward of no role, at the recording's start, may be the
		 * draft's first step run on from work before it (a cache trim) and
		 * not split, its forward not known yet: where the draft began is not
		 * known
		 */
		if (!i && it->draft != NONE && eager_drafts(tc) && (e->flags & LOOP_EAGER ||
		    burst_head(tc, e)) && role_of(tc, e) == ROLE_UNKNOWN) {
			it->draft_cut = true;
			return;
		}
		/*
		 * before the first draft launch is found, only a graph launch ends the
		 * walk; an eager draft syncs after each step, so only a launch ends it
		 */
		if (e->kind == LOOP_GRAPH ||
		    (it->draft != NONE && (is_launch(e) || (is_blocking(e) && !eager_drafts(tc))))) {
			it->draft_seen = true;
			return;
		}
	}
	/* ran into the start of the recording: launches before it may be unseen */
}

__u64 boundaries__draft_gap(const struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	size_t prev = it->draft;
	__u64 longest = 0;

	if (prev == NONE || !it->draft_seen)
		return 0;
	for (size_t j = prev + 1; j < it->vs; j++) {
		if (!boundaries__is_draft_launch(tc, &t->events[j], &t->events[it->vs]))
			continue;
		if (t->events[j].ts - t->events[prev].ts > longest)
			longest = t->events[j].ts - t->events[prev].ts;
		prev = j;
	}
	return longest;
}

/* Longest time between two draft launches of one iteration seen whole. */
static __u64 longest_draft_gap(const struct thread_ctx *tc)
{
	__u64 longest = 0;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		__u64 gap = boundaries__draft_gap(tc, i);

		longest = gap > longest ? gap : longest;
	}
	return longest;
}

/*
 * A draft that runs into the start of the recording began there if its first
 * launch came later after the attach mark than draft launches ever follow one
 * another: one made before the mark would have been that close, so after it.
 */
static void trust_first_drafts(struct thread_ctx *tc)
{
	__u64 gap = longest_draft_gap(tc), mark = thread_mark(tc->t);

	for (size_t i = 0; i < tc->nr_iters; i++) {
		struct iter *it = &tc->iters[i];

		if (!it->draft_seen && !it->draft_cut && it->draft != NONE &&
		    tc->t->events[it->draft].ts > mark + gap)
			it->draft_seen = true;
	}
}

/* The first draft launch, else the first verify launch. */
static size_t first_launch(const struct iter *it)
{
	return it->draft != NONE ? it->draft : it->vs;
}

/* The cycle's first call: its draft's setup, else its first draft launch, else verify's. */
static size_t draft_or_verify(const struct iter *it)
{
	return it->setup != NONE ? it->setup : first_launch(it);
}

/* A sync right after an upload waits for that upload (PyTorch's pageable H2D copy). */
static bool upload_sync(const struct model_thread *t, size_t j, size_t floor)
{
	while (j-- > floor) {
		const struct loop_event *e = &t->events[j];

		if (e->kind == LOOP_RECORD)
			continue;
		return e->kind == LOOP_COPY && !(e->flags & LOOP_D2H);
	}
	return false;
}

/*
 * The draft's setup: the work a decoder queues between what came before (a
 * graph of another role, the accept's read) and its first draft graph, such as
 * its position uploaded and waited for, and inputs copied into the graphs'
 * buffers, on the stream its steps run on. It is the draft's, as a CUDA event
 * recorded where the draft begins reads it, and the time the host spends
 * getting to it is the draft's too.
 */
static void find_setup(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	size_t floor = i ? tc->iters[i - 1].ve + 1 : 0;
	size_t step = it->draft != NONE ? last_draft_graph(tc, it->draft, it->vs) : NONE;

	it->setup = NONE;
	/* a draft of eager forwards has boundaries of its own (model_eager.c) */
	if (!it->draft_seen || step == NONE || (t->events[step].flags & LOOP_EAGER))
		return;
	for (size_t j = it->draft; j-- > floor;) {
		const struct loop_event *e = &t->events[j];

		/* work on another stream is not the draft's to wait for */
		if (e->kind == LOOP_GRAPH || e->kind == LOOP_COLLECTIVE || is_d2h(e) ||
		    (e->kind == LOOP_SYNC && !upload_sync(t, j, floor)) ||
		    ((e->kind == LOOP_KERNEL || e->kind == LOOP_COPY) &&
		     e->stream != t->events[step].stream))
			break;
		if (e->kind != LOOP_RECORD)
			it->setup = j;
	}
}

/*
 * The loop's last cycle, where the frames told the loop: its extend runs
 * through the loop's own syncs after the accept (the cache trim, the
 * bookkeeping, the loop's condition) to the last of them; a nested one (a
 * draft again) or the end of the recording ends the search.
 */
static void frames_last_extend(struct thread_ctx *tc, struct iter *it)
{
	size_t last = NONE;

	for (size_t j = it->after; j < tc->t->nr_events; j++) {
		__u32 stack = tc->event_stacks[j];
		enum frame_class cls =
			stack ? frames__class(&tc->frames, tc->v, stack, false) : FRAME_NONE;

		if (cls == FRAME_NESTED)
			break;
		if (cls == FRAME_LOOP)
			last = j;
	}
	if (last != NONE) {
		it->x1 = it->after;
		it->xl = last;
	}
}

static void find_extend(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	size_t end, j = it->after;
	enum graph_role role;

	it->x1 = it->xl = NONE;
	if (j >= it->region_end || t->events[j].kind != LOOP_GRAPH)
		return;
	if (i + 1 < tc->nr_iters) {
		/* everything launched between accept and the next draft extends */
		end = draft_or_verify(&tc->iters[i + 1]);
		for (it->x1 = j; j < end; j++)
			if (is_launch(&t->events[j]))
				it->xl = j;
		if (it->x1 >= end)
			it->x1 = it->xl = NONE;
		return;
	}
	if (frames_stacks(tc)) {
		frames_last_extend(tc, it);
		return;
	}
	/* the last one ends with its extend launches; what follows is not the loop */
	role = role_of(tc, &t->events[j]);
	if (role != ROLE_EXTEND && (tc->has_extend || role != ROLE_UNKNOWN))
		return;
	it->x1 = it->xl = j;
	for (j++; j < t->nr_events; j++) {
		const struct loop_event *e = &t->events[j];

		if (role_of(tc, e) == ROLE_EXTEND)
			it->xl = j;
		else if (is_launch(e) || is_blocking(e))
			break;
	}
}

/*
 * The sync of cycle i's event record made in a later iteration (deferred accept).
 * *past_end: not found, but it may come after the last recorded call.
 */
static size_t deferred_sync(struct thread_ctx *tc, size_t i, size_t record, bool *past_end)
{
	const struct model_thread *t = tc->t;
	size_t limit = i + CYCLES_DEFERRED_REACH < tc->nr_iters ? tc->iters[i + CYCLES_DEFERRED_REACH].vs
							 : t->nr_events;
	__u32 serial = t->events[record].serial;

	for (size_t j = record + 1; j < limit; j++) {
		const struct loop_event *e = &t->events[j];

		if (e->kind == LOOP_SYNC && e->serial == serial)
			return j;
		/* recorded again: the record we want is overwritten */
		if (e->kind == LOOP_RECORD && e->handle == t->events[record].handle)
			return NONE;
	}
	*past_end = limit == t->nr_events;
	return NONE;
}

/*
 * The sync that brings the accept result to the host, among accept's calls.
 * An event recorded after the result's copy and synced only in a later
 * iteration: that sync (deferred accept). Else the last sync that waits for
 * the copy, the one after which the loop goes on (a sync made before it
 * returns with the result not yet read), up to the next copy to the host after
 * work launched once one was found: that copy starts another read (PyTorch's
 * .item() after .nonzero()), whose sync is a round trip of its own; else the
 * last copy that blocked. A sync that is an earlier cycle's deferred accept is
 * not this one's: where that is the only one and this cycle's own record may
 * be synced after the recording's end, its accept is cut off.
 */
static void find_accept(struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	struct iter *it = &tc->iters[i];
	/* the result comes from the verify stream; a copy on another one blocks by itself */
	__u64 stream = t->events[it->ve].stream;
	size_t since = it->ve, last = NONE, blocking_copy = NONE, end = it->after;
	bool launched_after = false, past_end = false;

	/* the next draft's setup waits for its own upload, not for the result */
	if (i + 1 < tc->nr_iters && tc->iters[i + 1].setup < end)
		end = tc->iters[i + 1].setup;
	for (size_t j = it->ve + 1; j < end; j++) {
		if (!is_d2h(&t->events[j]))
			continue;
		if (is_blocking(&t->events[j]))
			blocking_copy = j;
		if (since == it->ve && t->events[j].stream == stream)
			since = j;
	}
	it->accept = NONE;
	it->copy = since != it->ve ? since : NONE;
	it->accept_deferred = false;
	it->accept_cut = false;
	for (size_t j = since + 1; j < end; j++) {
		const struct loop_event *e = &t->events[j];

		if (last != NONE && is_launch(e))
			launched_after = true;
		if (launched_after && is_d2h(e) && e->stream == stream)
			break;
		if (boundaries__covers(t, j, stream, since) && tc->accept_of[j] == NONE)
			last = j;
		if (e->kind == LOOP_RECORD && e->stream == stream) {
			size_t later = deferred_sync(tc, i, j, &past_end);

			if (later != NONE && later >= it->after) {
				it->accept = later;
				it->accept_deferred = true;
				return;
			}
		}
	}
	it->accept_cut = last == NONE && past_end;
	if (!it->accept_cut)
		it->accept = last != NONE ? last : blocking_copy;
}

/* Extend start: return of the last sync after verify and before extend. */
static __u64 extend_start(const struct thread_ctx *tc, size_t i, __u64 next_start)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	size_t end = it->x1;

	if (end == NONE)
		return next_start;	/* nothing extends: the extend span is empty */
	for (size_t j = end; j-- > it->ve + 1;)
		if (is_blocking(&t->events[j]))
			return t->events[j].ts_return ? t->events[j].ts_return : t->events[j].ts;
	return t->events[it->x1].ts;
}

static __u64 overlap(__u64 a0, __u64 a1, __u64 b0, __u64 b1)
{
	__u64 lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/* Time of [start, end) covered by none of the four phases. */
static __u64 uncovered(const struct cycle *c)
{
	__u64 edges[8], covered = 0;
	int n = 0;

	for (int p = 0; p < PHASE_OTHER; p++) {
		edges[n++] = c->phase[p].start_ns;
		edges[n++] = c->phase[p].end_ns;
	}
	/* sweep the elementary intervals between phase edges */
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			if (edges[b] < edges[a]) {
				__u64 tmp = edges[a];

				edges[a] = edges[b];
				edges[b] = tmp;
			}
	for (int k = 0; k + 1 < n; k++) {
		__u64 lo = edges[k], hi = edges[k + 1];
		bool in_phase = false;

		if (hi <= lo)
			continue;
		for (int p = 0; p < PHASE_OTHER && !in_phase; p++)
			in_phase = c->phase[p].start_ns <= lo && hi <= c->phase[p].end_ns;
		if (in_phase)
			covered += overlap(lo, hi, c->start_ns, c->end_ns);
	}
	return c->end_ns - c->start_ns > covered ? c->end_ns - c->start_ns - covered : 0;
}

static void count_event(struct cycle *c, enum phase p, const struct loop_event *e)
{
	if (is_launch(e)) {
		c->phase[p].launches++;
		c->launches++;
	}
	if (is_blocking(e)) {
		c->phase[p].syncs++;
		c->phase[p].blocked_ns += blocked_ns(e);
		c->syncs++;
		c->blocked_ns += blocked_ns(e);
	}
}

static void set_span(struct cycle_phase *ph, __u64 start, __u64 end)
{
	ph->start_ns = start;
	ph->end_ns = end > start ? end : start;
	ph->span_ns = ph->end_ns - ph->start_ns;
}

static size_t iter_end(const struct thread_ctx *tc, size_t i);

/* --gpu: the executions of a cycle's calls, by phase (docs/gpu-timeline.md). */
struct gpu_acc {
	__u64 (*iv[PHASE_NR])[2];
	size_t nr[PHASE_NR], cap[PHASE_NR];
	size_t first[PHASE_NR];	/* 1 + the event index of its first execution's call; 0: none */
	bool missing;		/* a launch without its execution */
	bool failed;		/* no memory: the cycle's GPU figures are not given */
};

static bool makes_work(const struct loop_event *e)
{
	return is_launch(e) || e->kind == LOOP_COPY;
}

/* A launch that runs on the host (a host function) has no execution to wait for. */
static bool runs_on_gpu(const struct loop_event *e)
{
	return strcmp(model__call_name(e->name), "cuLaunchHostFunc") != 0;
}

static void gpu_note(const struct thread_ctx *tc, struct gpu_acc *acc, enum phase p,
		     const struct loop_event *e)
{
	__u64 start, end;

	if (!acc || !makes_work(e))
		return;
	if (!gputime__exec_of(tc->v->gpu, tc->t->tgid, tc->t->tid, e->ts, &start, &end)) {
		acc->missing |= is_launch(e) && runs_on_gpu(e);
		return;
	}
	if (acc->nr[p] == acc->cap[p]) {
		size_t cap = acc->cap[p] ? acc->cap[p] * 2 : 8;
		void *grown = realloc(acc->iv[p], cap * sizeof(*acc->iv[p]));

		if (!grown) {
			acc->failed = true;
			return;
		}
		acc->iv[p] = grown;
		acc->cap[p] = cap;
	}
	acc->iv[p][acc->nr[p]][0] = start;
	acc->iv[p][acc->nr[p]++][1] = end;
	if (!acc->first[p] || (size_t)(e - tc->t->events) + 1 < acc->first[p])
		acc->first[p] = (size_t)(e - tc->t->events) + 1;
}

/* Calls of iteration i, each in the phase it was made in. */
static void attribute(struct thread_ctx *tc, size_t i, size_t first, size_t end, struct cycle *c,
		      struct gpu_acc *acc)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	size_t accept_end = it->x1 != NONE ? it->x1 : it->after;

	for (size_t j = first; j < end; j++) {
		const struct loop_event *e = &t->events[j];
		enum phase p;

		if (tc->accept_of[j] != NONE && tc->accept_of[j] != i)
			continue;	/* another cycle's deferred accept sync */
		if (j < it->vs)
			p = PHASE_DRAFT;
		else if (j <= it->ve)
			p = PHASE_VERIFY;
		else if (j == it->accept ||
			 (j < accept_end && e->ts < c->phase[PHASE_ACCEPT].end_ns))
			p = PHASE_ACCEPT;
		else if (j < accept_end && (it->x1 == NONE ||
					    e->ts < c->phase[PHASE_EXTEND].start_ns))
			p = PHASE_OTHER;
		else
			p = PHASE_EXTEND;
		count_event(c, p, e);
		gpu_note(tc, acc, p, e);
	}
	if (it->accept != NONE && it->accept >= end) {
		count_event(c, PHASE_ACCEPT, &t->events[it->accept]);
		gpu_note(tc, acc, PHASE_ACCEPT, &t->events[it->accept]);
	}
}

/* The first start of the executions of events [from, to) of the thread; 0: none matched. */
static __u64 first_gpu_start(const struct thread_ctx *tc, size_t from, size_t to)
{
	__u64 first = 0, start, end;

	for (size_t j = from; j < to && j < tc->t->nr_events; j++) {
		const struct loop_event *e = &tc->t->events[j];

		if (makes_work(e) &&
		    gputime__exec_of(tc->v->gpu, tc->t->tgid, tc->t->tid, e->ts, &start, &end) &&
		    (!first || start < first))
			first = start;
	}
	return first;
}

/* How far back a phase's start looks for the work queued before it on its stream. */
#define READY_LOOKBACK 512

/*
 * When the GPU could start phase work whose first call is event f: the later
 * of the return of the thread's call before it and the end of the work queued
 * before it on its stream; what a CUDA event recorded between the two calls
 * reads. Not after first_start, the phase's first execution's start. 0 when
 * that work ran unseen (launched before an agent came in).
 */
static __u64 phase_ready(const struct thread_ctx *tc, size_t f, __u64 first_start)
{
	const struct loop_event *ev = tc->t->events;
	__u64 ready = ev[f].ts, start, end;

	if (f)
		ready = ev[f - 1].ts_return ? ev[f - 1].ts_return : ev[f - 1].ts;
	for (size_t j = f; j-- > 0 && f - j <= READY_LOOKBACK;) {
		if (!makes_work(&ev[j]) || ev[j].stream != ev[f].stream || !runs_on_gpu(&ev[j]))
			continue;
		if (!gputime__exec_of(tc->v->gpu, tc->t->tgid, tc->t->tid, ev[j].ts, &start, &end))
			return 0;
		if (end > ready)
			ready = end;
		break;
	}
	return ready < first_start ? ready : first_start;
}

/* A cycle's GPU figures from its phases' executions; not given unless every launch matched. */
static void gpu_cycle(const struct thread_ctx *tc, size_t i, struct cycle *c, struct gpu_acc *acc)
{
	__u64 first = 0, last = 0;

	c->gpu_tried = true;
	for (int p = 0; p < PHASE_NR; p++) {
		struct cycle_phase *ph = &c->phase[p];

		for (size_t k = 0; k < acc->nr[p]; k++) {
			if (!ph->gpu_start_ns || acc->iv[p][k][0] < ph->gpu_start_ns)
				ph->gpu_start_ns = acc->iv[p][k][0];
			if (acc->iv[p][k][1] > ph->gpu_end_ns)
				ph->gpu_end_ns = acc->iv[p][k][1];
		}
		ph->gpu_busy_ns = gputime__union(acc->iv[p], acc->nr[p]);
		if (ph->gpu_start_ns && (!first || ph->gpu_start_ns < first))
			first = ph->gpu_start_ns;
		if (acc->first[p]) {
			ph->gpu_start_ns = phase_ready(tc, acc->first[p] - 1, ph->gpu_start_ns);
			acc->missing |= !ph->gpu_start_ns;
		}
		if (ph->gpu_end_ns > last)
			last = ph->gpu_end_ns;
	}
	c->gpu_start_ns = first;
	/* to the next cycle's first execution; the last cycle: to its own last end */
	c->gpu_end_ns = i + 1 < tc->nr_iters
				? first_gpu_start(tc, draft_or_verify(&tc->iters[i + 1]),
						  iter_end(tc, i + 1))
				: last;
	c->gpu_known = !acc->missing && !acc->failed && first && c->gpu_end_ns >= first;
	if (!c->gpu_known) {
		for (int p = 0; p < PHASE_NR; p++)
			c->phase[p].gpu_start_ns = c->phase[p].gpu_end_ns = c->phase[p].gpu_busy_ns = 0;
		c->gpu_start_ns = c->gpu_end_ns = 0;
		return;
	}
	c->gpu_idle_ns = c->gpu_end_ns - c->gpu_start_ns -
			 gputime__busy(tc->v->gpu, tc->t->tgid, c->gpu_start_ns, c->gpu_end_ns);
}

static bool no_sync_between(const struct model_thread *t, size_t from, size_t to)
{
	for (size_t j = from + 1; j < to; j++)
		if (is_blocking(&t->events[j]))
			return false;
	return true;
}

/* The draft's end, for the joined check: its last draft graph, else the last launch. */
static size_t draft_end(const struct thread_ctx *tc, size_t from, size_t vs)
{
	size_t graph = tc->graph_drafts ? last_draft_graph(tc, from, vs) : NONE, last = NONE;

	for (size_t j = from; j < vs; j++)
		if (is_launch(&tc->t->events[j]))
			last = j;
	return graph != NONE ? graph : last;
}

/*
 * The loop's last cycle ends at its own last call only where the loop was
 * seen to end there: its process exited, its thread went on with other calls
 * (a device-wide sync after a generate()), or the recording went on past it
 * for as long again as the cycle lasted. A recording stopped while the loop
 * ran (record -p --duration, a live window) cut it before its next draft.
 */
static bool loop_end_seen(const struct thread_ctx *tc, size_t end_idx, __u64 start_ns,
			  __u64 end_ns)
{
	for (size_t k = 0; k < tc->v->nr_procs; k++)
		if (tc->v->procs[k]->tgid == tc->t->tgid && tc->v->procs[k]->exit_ns)
			return true;
	if (end_idx < tc->t->nr_events)
		return true;
	return tc->v->last_ns > end_ns && tc->v->last_ns - end_ns >= end_ns - start_ns;
}

/* After the last iteration: the next cycle's first draft launch, where the recording has it. */
static size_t draft_after(const struct thread_ctx *tc, size_t from)
{
	for (size_t j = from; j < tc->t->nr_events; j++) {
		const struct loop_event *e = &tc->t->events[j];

		if ((e->kind == LOOP_GRAPH || burst_head(tc, e)) && role_of(tc, e) == ROLE_DRAFT)
			return j;
	}
	return NONE;
}

/* 0: cycle i is complete and filled in; 1: it is cut by the start or the end. */
static int build_cycle(struct thread_ctx *tc, size_t i, struct cycle *c)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	bool last = i + 1 == tc->nr_iters;
	size_t first = draft_or_verify(it), end_idx, last_draft;
	const struct loop_event *acc = it->accept != NONE ? &t->events[it->accept] : NULL;
	__u64 next_start = 0, accept_end;

	memset(c, 0, sizeof(*c));
	c->start_ns = t->events[first].ts;
	/* the recording stopped in the next cycle's draft: this one ends where it began */
	if (last && (end_idx = draft_after(tc, (it->xl != NONE ? it->xl : it->ve) + 1)) != NONE) {
		next_start = c->end_ns = t->events[end_idx].ts;
		last = false;
	} else if (!last) {
		end_idx = draft_or_verify(&tc->iters[i + 1]);
		next_start = c->end_ns = t->events[end_idx].ts;
	} else if (it->xl != NONE) {
		end_idx = it->xl + 1;
		c->end_ns = t->events[it->xl].ts_return;
	} else if (!tc->has_extend && acc && !(acc->flags & LOOP_UNRETURNED)) {
		end_idx = it->accept + 1;
		c->end_ns = acc->ts_return;
	} else {
		return 1;
	}
	if ((acc && (acc->flags & LOOP_UNRETURNED)) || it->accept_cut ||
	    (last && !loop_end_seen(tc, end_idx, c->start_ns, c->end_ns)))
		return 1;
	set_span(&c->phase[PHASE_DRAFT], c->start_ns, t->events[it->vs].ts);
	set_span(&c->phase[PHASE_VERIFY], t->events[it->vs].ts, t->events[it->ve].ts_return);
	c->phase[PHASE_EXTEND].start_ns = extend_start(tc, i, last ? c->end_ns : next_start);
	accept_end = acc ? acc->ts_return : c->phase[PHASE_EXTEND].start_ns;
	set_span(&c->phase[PHASE_ACCEPT], t->events[it->ve].ts_return, accept_end);
	set_span(&c->phase[PHASE_EXTEND], c->phase[PHASE_EXTEND].start_ns, c->end_ns);
	c->phase[PHASE_OTHER].start_ns = c->start_ns;
	c->phase[PHASE_OTHER].end_ns = c->end_ns;
	c->phase[PHASE_OTHER].span_ns = uncovered(c);
	if (tc->v->gpu) {
		struct gpu_acc acc = { 0 };

		attribute(tc, i, first, end_idx, c, &acc);
		gpu_cycle(tc, i, c, &acc);
		for (int p = 0; p < PHASE_NR; p++)
			free(acc.iv[p]);
	} else {
		attribute(tc, i, first, end_idx, c, NULL);
	}
	c->has_accept_sync = acc != NULL;
	c->accept_call = acc ? acc->name : 0;
	c->accept_wait_ns = acc ? blocked_ns(acc) : 0;
	c->accept_deferred = it->accept_deferred;
	last_draft = draft_end(tc, first, it->vs);
	c->draft_joined = last_draft != NONE && no_sync_between(t, last_draft, it->vs);
	c->followed = !last;
	c->extend_joined = !last && it->xl != NONE && no_sync_between(t, it->xl, end_idx);
	for (size_t j = it->vs + 1; j <= it->ve && !c->verify_pieces; j++)
		c->verify_pieces = t->events[j].kind == LOOP_GRAPH;
	return 0;
}

/* Each iteration's draft, extend and accept; has_extend and graph_drafts already told. */
void boundaries__find_parts(struct thread_ctx *tc, bool trust)
{
	for (size_t i = 0; i < tc->nr_iters; i++)
		boundaries__find_draft(tc, i);
	if (trust)
		trust_first_drafts(tc);
	for (size_t i = 0; i < tc->nr_iters; i++)
		find_setup(tc, i);
	for (size_t i = 0; i < tc->nr_iters; i++) {
		find_extend(tc, i);
		find_accept(tc, i);
		if (tc->iters[i].accept != NONE)
			tc->accept_of[tc->iters[i].accept] = i;
	}
}

void boundaries__find(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;

	for (size_t j = 0; j < t->nr_events; j++) {
		tc->has_extend |= role_of(tc, &t->events[j]) == ROLE_EXTEND;
		tc->graph_drafts |= role_of(tc, &t->events[j]) == ROLE_DRAFT;
	}
	boundaries__find_parts(tc, true);
}

/* Where iteration i ends: the next one's first launch, or past its own last call. */
static size_t iter_end(const struct thread_ctx *tc, size_t i)
{
	const struct iter *it = &tc->iters[i];

	if (i + 1 < tc->nr_iters)
		return draft_or_verify(&tc->iters[i + 1]);
	if (it->xl != NONE)
		return it->xl + 1;
	if (it->accept != NONE && it->accept > it->ve)
		return it->accept + 1;
	return it->ve + 1;
}

/*
 * A verify with no draft launch before it inside a loop the Python frames
 * told: a round whose candidate generator drafted nothing (Hugging Face's
 * last round, no new token left to draft), the loop's all the same.
 */
static bool draftless_round(const struct thread_ctx *tc, size_t i, const struct loop *lp)
{
	const struct iter *it = &tc->iters[i];

	return tc->frames_loop && it->draft == NONE && it->draft_seen &&
	       (i > 0 || (lp && lp->nr_cycles));
}

void boundaries__export_iter(const struct thread_ctx *tc, size_t i, struct loop_iter *out)
{
	const struct iter *it = &tc->iters[i];
	/* syncs keep their places by launches: one in the draft's setup stays accept's */
	size_t end = i + 1 < tc->nr_iters ? first_launch(&tc->iters[i + 1]) : iter_end(tc, i);

	*out = (struct loop_iter){
		.first = first_launch(it), .vs = it->vs, .ve = it->ve, .copy = it->copy,
		.accept = it->accept, .after = it->after, .end = end, .cycle = -1,
		.no_draft = it->draft == NONE && it->draft_seen && !draftless_round(tc, i, NULL),
	};
}

/*
 * --sample: cycle c of the iteration starting at event first lies in one
 * window, after a verify launch of the same window (the iteration before it
 * ended in sight, so none of its launches came before the window opened),
 * and the next iteration, which ends it, was seen up to its verify.
 */
static bool whole_in_window(const struct thread_ctx *tc, size_t i, const struct cycle *c)
{
	const struct sample_windows *s = &tc->v->sample;
	const struct model_thread *t = tc->t;
	size_t first = draft_or_verify(&tc->iters[i]), slot;

	if (!sample__on(s))
		return true;
	/*
	 * its end is the next draft's start, which only the next verify tells: a
	 * window that closed before it may have left that draft, and this extend,
	 * in part unseen
	 */
	if (!c->followed || i + 1 >= tc->nr_iters || !sample__inside(s, c->start_ns, c->end_ns))
		return false;
	slot = sample__slot(s, c->start_ns);
	if (sample__slot(s, t->events[tc->iters[i + 1].vs].ts) != slot)
		return false;
	for (size_t j = first; j-- > 0 && sample__slot(s, t->events[j].ts) == slot;)
		if (role_of(tc, &t->events[j]) == ROLE_VERIFY)
			return true;
	return false;
}

/* Iteration i in lp's counts: 1 with its cycle in c when it is one, else 0. */
int boundaries__count_iter(struct thread_ctx *tc, size_t i, struct loop *lp, struct cycle *c)
{
	const struct iter *it = &tc->iters[i];
	bool before_attach = tc->t->events[draft_or_verify(it)].ts < tc->t->attach_done_ns;

	/* a verify with no draft before it (warm-up, a plain decode step) is no cycle */
	if (it->draft == NONE && it->draft_seen && !draftless_round(tc, i, lp)) {
		lp->skipped_no_draft++;
		return 0;
	}
	/* counted from the first cycle whose every draft launch was seen */
	if (!it->draft_seen || before_attach || build_cycle(tc, i, c)) {
		if (lp->nr_cycles)
			lp->skipped_end++;
		else
			lp->skipped_start++;
		return 0;
	}
	if (!whole_in_window(tc, i, c)) {
		lp->skipped_unsampled++;
		return 0;
	}
	return 1;
}
