// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"
#include "hmap.h"

#define OPEN_SLOTS (SP_MAX_DEPTH + 1)
/* Calls of undescribed processes kept to fill their tid's gap: a damaged pid is no call lost. */
#define STRAYS 16

struct pending;

/* Calls of one thread (tid of a tgid) still waiting for their completion, by depth. */
struct dthread {
	bool used;		/* false: an empty slot */
	__u32 tid;
	__u32 tgid;
	struct sp_call *open[OPEN_SLOTS];
	struct sp_call *stack_wait;	/* its last call, whose stack record comes next */
	/* the last call and return read, to know one seen again */
	__u32 call_seq, ret_seq;
	__u64 call_ts, ret_ts;
	__u64 last_ts;		/* of its last call or return */
	/* its call numbers: the next one due (0: none seen yet), the last jump forward */
	__u32 next_seq;
	__u32 jump_from, jump_missing;
};

struct decoder {
	decode_call_fn fn;
	void *ctx;
	__u64 reorder_ns;
	__u64 newest_ts;	/* newest timestamp seen in any record */
	__u64 released_ts;	/* entry time of the last call handed on */

	struct pending *heap;	/* min-heap by entry time, then tid and seq */
	size_t heap_len, heap_cap;
	struct sp_call *free_calls;	/* free list, linked through .out */

	struct dthread *threads;	/* open addressing by tid and tgid */
	size_t threads_cap, threads_len;

	struct decode_stats stats;
	struct callstacks *stacks;
	__u32 nr_probes;	/* described probes: decoder__set_probes */
	bool probes_set;
	struct hmap procs;	/* described processes: decoder__describe_process */
	bool procs_set, procs_failed;
	struct {
		__u32 tid, seq;
	} strays[STRAYS];	/* the newest calls of undescribed processes, as read */
	unsigned int next_stray;
};

/*
 * A pending call with its sort key beside it: comparing keys in the heap array
 * does not touch the calls, which are large and scattered.
 */
struct pending {
	__u64 ts;
	__u64 tid_seq;		/* tid in the high half, per-thread seq in the low */
	struct sp_call *call;
};

static bool pending_before(const struct pending *a, const struct pending *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->tid_seq < b->tid_seq);
}

static int heap_push(struct decoder *d, struct sp_call *c)
{
	struct pending p = {
		.ts = c->entry.ts, .tid_seq = (__u64)c->entry.tid << 32 | c->entry.seq, .call = c,
	};
	size_t i;

	if (d->heap_len == d->heap_cap) {
		size_t cap = d->heap_cap ? d->heap_cap * 2 : 1024;
		struct pending *grown = realloc(d->heap, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		d->heap = grown;
		d->heap_cap = cap;
	}
	/* sift up with a hole: each parent moves down once */
	for (i = d->heap_len++; i > 0 && pending_before(&p, &d->heap[(i - 1) / 2]); i = (i - 1) / 2)
		d->heap[i] = d->heap[(i - 1) / 2];
	d->heap[i] = p;
	return 0;
}

static struct sp_call *heap_pop(struct decoder *d)
{
	struct sp_call *top = d->heap[0].call;
	struct pending last = d->heap[--d->heap_len];
	size_t i = 0, n = d->heap_len;

	for (;;) {
		size_t m = 2 * i + 1;

		if (m >= n)
			break;
		if (m + 1 < n && pending_before(&d->heap[m + 1], &d->heap[m]))
			m++;
		if (!pending_before(&d->heap[m], &last))
			break;
		d->heap[i] = d->heap[m];
		i = m;
	}
	if (n)
		d->heap[i] = last;
	return top;
}

static struct sp_call *call_alloc(struct decoder *d)
{
	struct sp_call *c = d->free_calls;

	if (c) {
		d->free_calls = (struct sp_call *)(unsigned long)c->out;
		return c;
	}
	return malloc(sizeof(*c));
}

static void call_free(struct decoder *d, struct sp_call *c)
{
	c->out = (unsigned long)d->free_calls;
	d->free_calls = c;
}

static size_t thread_slot(size_t cap, __u32 tid, __u32 tgid)
{
	return ((tid ^ (tgid << 16 | tgid >> 16)) * 2654435761u) & (cap - 1);
}

static int threads_grow(struct decoder *d)
{
	size_t cap = d->threads_cap ? d->threads_cap * 2 : 256;
	struct dthread *grown = calloc(cap, sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	for (size_t i = 0; i < d->threads_cap; i++) {
		struct dthread *t = &d->threads[i];
		size_t s;

		if (!t->used)
			continue;
		for (s = thread_slot(cap, t->tid, t->tgid); grown[s].used; s = (s + 1) & (cap - 1))
			;
		grown[s] = *t;
	}
	free(d->threads);
	d->threads = grown;
	d->threads_cap = cap;
	return 0;
}

static struct dthread *thread_get(struct decoder *d, __u32 tid, __u32 tgid)
{
	size_t s;

	if ((d->threads_len + 1) * 2 > d->threads_cap && threads_grow(d))
		return NULL;
	/* by process too: a tid of another process, or a damaged pid, is a thread of its own */
	for (s = thread_slot(d->threads_cap, tid, tgid); d->threads[s].used;
	     s = (s + 1) & (d->threads_cap - 1))
		if (d->threads[s].tid == tid && d->threads[s].tgid == tgid)
			return &d->threads[s];
	d->threads[s].used = true;
	d->threads[s].tid = tid;
	d->threads[s].tgid = tgid;
	d->threads_len++;
	return &d->threads[s];
}

static void mark_unreturned(struct decoder *d, struct dthread *t, int from_depth)
{
	for (int k = from_depth; k < OPEN_SLOTS; k++) {
		if (!t->open[k])
			continue;
		t->open[k]->unreturned = true;
		t->open[k] = NULL;
		d->stats.unreturned++;
	}
}

/* A call handed on before its stack came (the record was lost): no stack attaches to it. */
static void forget_stack_wait(struct decoder *d, struct sp_call *c)
{
	struct dthread *t = thread_get(d, c->entry.tid, c->entry.tgid);

	if (t && t->stack_wait == c)
		t->stack_wait = NULL;
}

/* Hand on complete calls old enough that no earlier entry can still arrive. */
static int release(struct decoder *d, bool all)
{
	while (d->heap_len) {
		struct sp_call *top = d->heap[0].call;
		int ret;

		if (!all && top->has_ret && !top->returned && !top->unreturned)
			break;
		if (!all && top->entry.ts + d->reorder_ns > d->newest_ts)
			break;
		/* its stack record comes right behind it: nothing newer has been seen yet */
		if (!all && top->wants_stack && top->entry.ts + d->reorder_ns >= d->newest_ts)
			break;
		heap_pop(d);
		if (top->wants_stack)
			forget_stack_wait(d, top);
		if (top->entry.ts > d->released_ts)
			d->released_ts = top->entry.ts;
		ret = d->fn(d->ctx, top);
		call_free(d, top);
		if (ret)
			return ret;
	}
	return 0;
}

/* Calls read under a damaged pid that tid numbered from..to-1: read, not missing. */
static __u32 strays_in(struct decoder *d, __u32 tid, __u32 from, __u32 to)
{
	__u32 n = 0;

	for (int i = 0; i < STRAYS; i++)
		if (d->strays[i].tid == tid && d->strays[i].seq >= from && d->strays[i].seq < to) {
			d->strays[i].seq = 0;
			n++;
		}
	return n;
}

/*
 * A thread numbers its calls 1, 2, 3 ... and a record the ring could not take
 * gets no number: a number skipped is a call missing from the input. A jump
 * that the thread's next call goes back on was one damaged number instead.
 */
static void check_numbering(struct decoder *d, struct dthread *t, __u32 seq)
{
	if (!seq)
		return;
	if (t->jump_missing && seq == t->jump_from) {
		d->stats.missing_calls -= t->jump_missing;
		d->stats.misnumbered_calls++;
		t->jump_missing = 0;
		t->next_seq = seq + 1;
		return;
	}
	t->jump_missing = 0;
	if (!t->next_seq || seq == 1) {
		/* its first call read, or a new thread of that tid numbering from 1 */
		t->next_seq = seq + 1;
	} else if (seq > t->next_seq) {
		t->jump_from = t->next_seq;
		t->jump_missing = seq - t->next_seq - strays_in(d, t->tid, t->next_seq, seq);
		d->stats.missing_calls += t->jump_missing;
		t->next_seq = seq + 1;
	} else if (seq < t->next_seq) {
		d->stats.misnumbered_calls++;
	} else {
		t->next_seq++;
	}
}

static int feed_call(struct decoder *d, const struct sp_call_rec *rec, size_t size)
{
	struct sp_call *c;
	struct dthread *t;
	int depth = rec->depth < OPEN_SLOTS ? rec->depth : OPEN_SLOTS - 1;

	if (size < sizeof(*rec))
		return -EBADMSG;
	c = call_alloc(d);
	t = thread_get(d, rec->tid, rec->tgid);
	if (!c || !t)
		return -ENOMEM;
	memcpy(&c->entry, rec, sizeof(*rec));
	c->data_len = size - sizeof(*rec) > SP_DATA_LARGE ? SP_DATA_LARGE : size - sizeof(*rec);
	memcpy(c->data, rec + 1, c->data_len);
	c->has_ret = rec->flags & SP_CALL_HAS_RET;
	c->returned = c->unreturned = false;
	c->ret_faults = 0;
	c->ts_return = c->result = c->out = 0;
	c->stack = 0;
	c->wants_stack = rec->flags & SP_CALL_HAS_STACK;
	/* a fork or the header describes a process before its first call */
	c->undescribed = d->procs_set && !hmap__get(&d->procs, rec->tgid, 0);
	t->stack_wait = c->wants_stack ? c : NULL;
	d->stats.calls++;
	if (d->probes_set && rec->probe >= d->nr_probes && rec->probe != SP_CALIB_PROBE)
		d->stats.unknown_cookie_calls++;
	if (rec->ts < d->released_ts)
		d->stats.late++;
	if (c->undescribed) {
		d->stats.unknown_process_calls++;
		d->strays[d->next_stray].tid = rec->tid;
		d->strays[d->next_stray].seq = rec->seq;
		d->next_stray = (d->next_stray + 1) % STRAYS;
	}
	check_numbering(d, t, rec->seq);
	/* a new call at this depth means the open ones at or below it are gone */
	mark_unreturned(d, t, depth);
	if (c->has_ret)
		t->open[depth] = c;
	return heap_push(d, c);
}

static void feed_ret(struct decoder *d, const struct sp_ret_rec *rec)
{
	struct dthread *t = thread_get(d, rec->tid, rec->tgid);
	int depth = rec->depth < OPEN_SLOTS ? rec->depth : OPEN_SLOTS - 1;
	struct sp_call *c;

	d->stats.returns++;
	c = t ? t->open[depth] : NULL;
	if (!c || rec->seq == 0 || c->entry.seq != rec->seq) {
		d->stats.orphan_returns++;
		return;
	}
	t->open[depth] = NULL;
	mark_unreturned(d, t, depth + 1);
	c->returned = true;
	c->ts_return = rec->ts;
	c->result = rec->result;
	c->out = rec->out;
	c->ret_faults = rec->faults;
}

static int feed_stack(struct decoder *d, const struct sp_stack_rec *rec, size_t size)
{
	struct dthread *t;
	struct sp_call *c;

	if (!callstack__stack_ok(rec, size))
		return -EBADMSG;
	t = thread_get(d, rec->tid, rec->tgid);
	c = t ? t->stack_wait : NULL;
	if (!c || c->entry.seq != rec->seq || c->entry.tgid != rec->tgid) {
		d->stats.orphan_stacks++;
		return 0;
	}
	t->stack_wait = NULL;
	c->wants_stack = false;
	c->stack = callstacks__intern(d->stacks, rec);
	d->stats.stacks++;
	return 0;
}

static void feed_exit(struct decoder *d, const struct sp_exit_rec *rec)
{
	d->stats.exits++;
	for (size_t i = 0; i < d->threads_cap; i++)
		if (d->threads[i].used && d->threads[i].tgid == rec->tgid)
			mark_unreturned(d, &d->threads[i], 0);
}

/*
 * A call or return of tid again: its thread numbers calls from 1 and stamps
 * them in order, so one that is no later in both than the last of its kind
 * was read before. Numbers 0 (no seq) need the same stamp. Stamps going back
 * otherwise are counted and kept.
 */
static bool seen_again(struct decoder *d, const struct sp_call_rec *rec, bool ret)
{
	struct dthread *t = thread_get(d, rec->tid, rec->tgid);
	__u32 *seq;
	__u64 *ts;

	if (!t)
		return false;	/* no memory: the feed that follows says so */
	seq = ret ? &t->ret_seq : &t->call_seq;
	ts = ret ? &t->ret_ts : &t->call_ts;
	if (*ts && (rec->seq ? rec->seq <= *seq && rec->ts <= *ts
			     : rec->seq == *seq && rec->ts == *ts)) {
		d->stats.duplicate_records++;
		return true;
	}
	if (rec->ts < t->last_ts)
		d->stats.out_of_order++;
	*seq = rec->seq;
	*ts = rec->ts;
	t->last_ts = rec->ts;
	return false;
}

static void add_process(struct decoder *d, __u32 tgid)
{
	/* with no memory to hold it, no process is judged from then on */
	if (hmap__set(&d->procs, tgid, 0, d)) {
		d->procs_set = false;
		d->procs_failed = true;
	}
}

void decoder__describe_process(struct decoder *d, __u32 tgid)
{
	if (d->procs_failed)
		return;
	d->procs_set = true;
	add_process(d, tgid);
}

/* The tracer's records that name a process it traced: its tgid follows the size. */
static void note_process(struct decoder *d, const struct sp_rec_hdr *h, size_t size)
{
	switch (h->type) {
	case SP_REC_FORK:
	case SP_REC_LIBMAP:
	case SP_REC_EXEC:
	case SP_REC_MAP:
	case SP_REC_PROC:
	case SP_REC_CPU:
	case SP_REC_HOSTMEM:
	case SP_REC_RANK:
	case SP_REC_RUNQ:
		if (d->procs_set && size >= 2 * sizeof(__u32))
			add_process(d, ((const __u32 *)h)[1]);
		break;
	default:
		break;
	}
}

void decoder__renumber(struct decoder *d)
{
	for (size_t i = 0; i < d->threads_cap; i++) {
		d->threads[i].next_seq = 0;
		d->threads[i].jump_missing = 0;
	}
}

void decoder__set_probes(struct decoder *d, __u32 nr)
{
	d->nr_probes = nr;
	d->probes_set = true;
}

void decoder__note_input(struct decoder *d, bool cut, __u64 cut_at, __u64 ring_gaps,
			 __u64 gap_calls)
{
	d->stats.cut = cut;
	d->stats.cut_at = cut_at;
	d->stats.ring_gaps = ring_gaps;
	d->stats.ring_gap_calls = gap_calls;
}

int decoder__feed(struct decoder *d, const void *rec, size_t size)
{
	const struct sp_rec_hdr *hdr = rec;
	int ret = 0;

	if (size < sizeof(*hdr))
		return -EBADMSG;
	note_process(d, hdr, size);
	if ((hdr->type == SP_REC_CALL && size >= sizeof(struct sp_call_rec)) ||
	    (hdr->type == SP_REC_RET && size >= sizeof(struct sp_ret_rec)))
		if (seen_again(d, rec, hdr->type == SP_REC_RET))
			return 0;
	d->stats.records++;
	switch (hdr->type) {
	case SP_REC_CALL:
		ret = feed_call(d, rec, size);
		break;
	case SP_REC_RET:
		if (size < sizeof(struct sp_ret_rec))
			return -EBADMSG;
		feed_ret(d, rec);
		break;
	case SP_REC_EXIT:
		if (size < sizeof(struct sp_exit_rec))
			return -EBADMSG;
		feed_exit(d, rec);
		break;
	case SP_REC_FORK:
		if (size < sizeof(struct sp_fork_rec))
			return -EBADMSG;
		d->stats.forks++;
		break;
	case SP_REC_LIBMAP:
		if (size < sizeof(struct sp_libmap_rec))
			return -EBADMSG;
		d->stats.libmaps++;
		break;
	case SP_REC_EXEC:
		if (size < sizeof(struct sp_exec_rec))
			return -EBADMSG;
		d->stats.execs++;
		d->stats.execs_after_calls += d->stats.calls > 0;
		ret = callstacks__exec(d->stacks, ((const struct sp_exec_rec *)rec)->tgid);
		break;
	case SP_REC_LIB:
	case SP_REC_PROBE:
	case SP_REC_MAP:
	case SP_REC_PROC:
		return 0;	/* the reader put them in the header */
	case SP_REC_CALIB:
		return decoder__read_calib(rec, size, &d->stats.calib);
	case SP_REC_CPU:
	case SP_REC_HOSTMEM:
	case SP_REC_RANK:
	case SP_REC_RUNQ:
	case SP_REC_EXIT_STATUS:
	case SP_REC_ATTACH:
	case SP_REC_SAMPLE:
		return 0;	/* for the analyses, which see every record */
	case SP_REC_SEGMENT:
	case SP_REC_WINDOW:
	case SP_REC_CLOCK:
		return 0;	/* the reader put them in the header */
	case SP_REC_STACK:
		return feed_stack(d, rec, size);
	case SP_REC_PYCODE:
	case SP_REC_OBJMAP:
		return callstacks__feed(d->stacks, rec, size);
	case SP_REC_GPU:
	case SP_REC_GPU_NAME:
	case SP_REC_GPU_STATE:
	case SP_REC_SRVMETRIC:
		/* the GPU timeline's and the server metrics' (gputime.h): no call in them, and they come late */
		return 0;
	case SP_REC_END:
		d->stats.ended = true;
		/* fall through */
	case SP_REC_STATS:
		if (size < sizeof(struct sp_stats_rec))
			return -EBADMSG;
		memcpy(d->stats.counters, ((const struct sp_stats_rec *)rec)->counters,
		       sizeof(d->stats.counters));
		d->stats.have_counters = true;
		return 0;
	default:
		return -EBADMSG;
	}
	if (ret)
		return ret;
	/* every ring record after the header starts with a timestamp at offset 8 */
	if (((const struct sp_call_rec *)rec)->ts > d->newest_ts)
		d->newest_ts = ((const struct sp_call_rec *)rec)->ts;
	return release(d, false);
}

int decoder__finish(struct decoder *d)
{
	for (size_t i = 0; i < d->threads_cap; i++)
		if (d->threads[i].used)
			mark_unreturned(d, &d->threads[i], 0);
	return release(d, true);
}

const struct decode_stats *decoder__stats(const struct decoder *d)
{
	return &d->stats;
}

const struct callstacks *decoder__callstacks(const struct decoder *d)
{
	return d->stacks;
}

void decoder__for_each_open(const struct decoder *d,
			    void (*fn)(void *ctx, const struct sp_call *call), void *ctx)
{
	for (size_t i = 0; i < d->threads_cap; i++)
		for (int k = 0; d->threads[i].used && k < OPEN_SLOTS; k++)
			if (d->threads[i].open[k])
				fn(ctx, d->threads[i].open[k]);
}

struct decoder *decoder__new(decode_call_fn fn, void *ctx, __u64 reorder_ns)
{
	struct decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->fn = fn;
	d->ctx = ctx;
	d->reorder_ns = reorder_ns;
	d->stacks = callstacks__new();
	if (!d->stacks) {
		free(d);
		return NULL;
	}
	return d;
}

void decoder__free(struct decoder *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->heap_len; i++)
		free(d->heap[i].call);
	while (d->free_calls) {
		struct sp_call *next = (struct sp_call *)(unsigned long)d->free_calls->out;

		free(d->free_calls);
		d->free_calls = next;
	}
	free(d->heap);
	free(d->threads);
	hmap__free(&d->procs);
	callstacks__free(d->stacks);
	free(d);
}

int decoder__read_calib(const void *rec, size_t size, struct sp_calib_rec *out)
{
	if (size < SP_CALIB_REC_V1)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	memcpy(out, rec, size < sizeof(*out) ? size : sizeof(*out));
	return 0;
}
