/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the cycle analysis: one thread's loop events and what its files
 * share. roles.c tells the verify forward and its kin, leads.c what the
 * graphs between an accept and the next verify are, boundaries.c where each
 * iteration's phases lie, cycles.c the loops, cycles_plan.c a whole run in
 * windows. Only those files include this; everyone else reads cycles.h.
 */
#ifndef __CYCLES_INT_H
#define __CYCLES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "cycles.h"
#include "hmap.h"
#include "model.h"

#define NONE ((size_t)-1)

struct exec_stats {
	__u32 launches;		/* on this thread */
	/* of those, launches followed, before the next graph launch, by: */
	__u32 followed;		/* a sync */
	__u32 handed;		/* a copy to the host */
	__u64 wait_ns;		/* time blocked in those syncs */
	__u32 adjacent;		/* launches next to a verify piece (capture order +-1) */
	__u32 repeats;		/* launches next to another exec of the same kernels: a step */
	__u32 extend_votes, draft_votes;
	__u32 lead;		/* launches as the lead of a cycle (first graph after accept) */
	__u32 follow;		/* launches as the graph right after a lead */
	/* a whole run in windows: the votes of either lead reading, until one is decided */
	__u32 voted, voted_lead;	/* launches between an accept and the next verify; leads */
	__u32 self_next;	/* launches next to one of its own (graphs between: none) */
	__u32 after_run;	/* launches right after a run of another exec's launches */
	/* the call site that most of its launches are followed by a sync from (recorded stacks) */
	__u32 site, site_launches;
	/* eager bursts voted by the Python frames of the syncs around them (frames.c) */
	__u32 frame_draft, frame_verify, frame_extend;
	/* ... and first launches of its bursts by their own frames (sampled stacks) */
	__u32 launch_draft, launch_verify, launch_extend;
};

/* A sync's stack against the loop's frames (frames.c). */
enum frame_class {
	FRAME_NONE,	/* no Python frames */
	FRAME_LOOP,	/* the generation loop's own */
	FRAME_NESTED,	/* a generation run inside the loop's: the draft model's */
};

/* The Python frames' votes, a call at a time over the windows. */
struct frame_walk {
	struct frame_loop loop;
	__u64 accept_stmts[FRAME_STMTS];	/* the loop's statements that read the verify's */
	__u32 nr_accept_stmts;
	enum frame_class last;		/* of the last sync with frames */
	__u64 last_stmt;		/* ... and its loop statement */
	size_t *pending;		/* exec ids of the bursts since it */
	size_t nr_pending, cap_pending;
};

/* Up to this many call sites of syncs between two graph launches are read. */
#define GAP_SITES 4

/* Call sites of the syncs after each graph launch, up to the next one. */
struct site_stats {
	struct hmap counts;	/* (exec + 1, site): launches followed by it; (0, site): repeats */
	size_t last;		/* exec of the last graph launch, NONE before the first */
	__u32 cur[GAP_SITES], prev[GAP_SITES];	/* sites since it, and before it */
	__u8 nr_cur, nr_prev;
};

/* One verify launch group and what surrounds it. */
struct iter {
	size_t vs, ve;		/* first and last verify launch */
	size_t region_end;	/* next group's vs, or the number of events */
	size_t after;		/* end of accept's calls: first graph launch after verify */
	size_t draft;		/* first draft launch, NONE: nothing launched before verify */
	size_t setup;		/* first call of the draft's setup before it, NONE: none */
	bool draft_seen;	/* the draft started inside the recording */
	bool draft_cut;		/* its first step may be in an unsplit burst before it */
	size_t x1, xl;		/* first and last extend launch, NONE if none */
	size_t accept;		/* the accept sync, NONE if none found */
	size_t copy;		/* the result's copy to the host, NONE if none */
	bool accept_deferred;
	bool accept_cut;	/* its accept sync is a deferred one past the recording's end */
};

struct thread_ctx {
	struct model *m;
	struct model_view *v;
	struct model_thread *t;
	struct exec_stats *stats;	/* by exec id */
	struct iter *iters;
	size_t nr_iters;
	size_t *accept_of;		/* by event: iteration whose accept sync it is, or NONE */
	bool copies_d2h;		/* the thread copies results to the host */
	bool has_extend;		/* some exec launched here is an extend graph */
	bool graph_drafts;		/* some exec launched here is a draft graph */
	bool eager;			/* its forwards are eager bursts (LOOP_EAGER) */
	bool plain_graphs;		/* it launches CUDA graphs too */
	struct site_stats *sites;	/* call sites of syncs; NULL: none recorded */
	struct site_stats own_sites;	/* the whole run's, where the thread is read at once */
	enum lead_from lead_from;
	bool lead_extends;
	struct frame_loop frames;	/* what the Python frames told (frames.c) */
	bool frames_loop;		/* ... and they chose the verify */
	__u32 *event_stacks;		/* frames_loop: each sync's stack, by event (made on use) */
};

static inline bool is_launch(const struct loop_event *e)
{
	return e->kind == LOOP_GRAPH || e->kind == LOOP_KERNEL || e->kind == LOOP_COLLECTIVE;
}

static inline bool is_blocking(const struct loop_event *e)
{
	return e->flags & LOOP_BLOCKING;
}

static inline struct model_exec *exec_of(const struct thread_ctx *tc, const struct loop_event *e)
{
	return e->kind == LOOP_GRAPH ? tc->v->execs[e->handle] : NULL;
}

/* A later launch of an eager burst: the burst's first launch, if the thread still holds it. */
static inline const struct loop_event *burst_head(const struct thread_ctx *tc,
						   const struct loop_event *e)
{
	const struct model_thread *t = tc->t;

	if (!(e->flags & LOOP_IN_BURST) || e < t->events || e >= t->events + t->nr_events ||
	    (size_t)(e - t->events) < e->serial)
		return NULL;
	e -= e->serial;
	return e->flags & LOOP_EAGER ? e : NULL;
}

/* An eager burst's launches all have the role of its forward. */
static inline enum graph_role role_of(const struct thread_ctx *tc, const struct loop_event *e)
{
	const struct loop_event *head = burst_head(tc, e);
	struct model_exec *x = exec_of(tc, head ? head : e);

	return x ? x->role : ROLE_UNKNOWN;
}

static inline __u64 blocked_ns(const struct loop_event *e)
{
	if (!is_blocking(e) || (e->flags & LOOP_UNRETURNED) || e->ts_return < e->ts)
		return 0;
	return e->ts_return - e->ts;
}

static inline bool is_d2h(const struct loop_event *e)
{
	return e->kind == LOOP_COPY && (e->flags & LOOP_D2H);
}

/* Eager work that may be a draft step: on the stream the verify graph goes to. */
static inline bool on_stream_of(const struct loop_event *e, const struct loop_event *verify)
{
	return e->kind == LOOP_GRAPH || (is_launch(e) && e->stream == verify->stream);
}

enum opening { OPEN_UNSEEN, OPEN_NOTHING, OPEN_EAGER, OPEN_GRAPH };

/*
 * The attach mark as a thread's records can show it (its process's: in a
 * merge, its input's): a thread that waited for a CPU after the mark made its
 * first recorded call that much later than it would have, so a call begun
 * before the mark may come later than the mark by the time calls follow one
 * another plus that wait.
 */
static inline __u64 thread_mark(const struct model_thread *t)
{
	return t->attach_done_ns + t->late_start_ns;
}

static inline void set_role(struct model_exec *x, enum graph_role role, enum role_source from)
{
	x->role = role;
	x->role_from = from;
}

static inline int sign(long n)
{
	return (n > 0) - (n < 0);
}

/* roles.c */
bool roles__same_step(const struct model_exec *a, const struct model_exec *b);
bool roles__repeated_step(const struct exec_stats *st);
bool roles__mark_pieces(struct thread_ctx *tc);
bool roles__count_self_next(struct exec_stats *stats, size_t last, bool last_counted, size_t cur);
__u32 *roles__event_sites(const struct model_view *v, const struct model_thread *t);
int roles__sites_of_events(struct site_stats *ss, struct exec_stats *stats,
			   const struct model_thread *t, const __u32 *sites, size_t upto);
void roles__collect_stats(struct thread_ctx *tc);
struct model_exec *roles__pick_anchor(struct thread_ctx *tc, enum role_source *from);
void roles__mark_family(struct thread_ctx *tc, const struct model_exec *like,
			enum role_source from);
void roles__mark_verify(struct thread_ctx *tc, struct model_exec *anchor, enum role_source from);
void roles__by_family(struct model_view *v);
struct model_exec *roles__choose(struct thread_ctx *tc, struct role_evidence *ev,
				 enum role_source *from);

/* frames.c */
__u32 *frames__event_stacks(const struct model_view *v, const struct model_thread *t);
int frames__walk(struct frame_walk *fw, struct exec_stats *stats, const struct model_view *v,
		 const struct model_thread *t, const __u32 *stacks, size_t upto);
void frames__walk_free(struct frame_walk *fw);
/* A sync's class (NULL stack: FRAME_NONE), what the loop's frames learn from it first; *stmt: its statement. */
enum frame_class frames__learn(struct frame_loop *fl, const struct cs_stack *st, __u64 *stmt);
enum frame_class frames__class(const struct frame_loop *fl, const struct model_view *v,
			       __u32 stack, bool outside_is_loop);
int frames__collect(struct thread_ctx *tc);
struct model_exec *frames__anchor(const struct thread_ctx *tc);
void frames__mark(struct thread_ctx *tc);
void frames__count(const struct thread_ctx *tc, struct role_evidence *ev);
void frames__launch_votes(struct thread_ctx *tc);

/* leads.c */
size_t leads__lead_of(const struct thread_ctx *tc, size_t i);
size_t leads__next_graph(const struct thread_ctx *tc, size_t from, size_t end);
bool leads__is_lead(const struct exec_stats *st);
bool leads__is_follower(const struct exec_stats *st);
int leads__structure(const struct thread_ctx *tc, size_t i, size_t lead);
int leads__site(const struct thread_ctx *tc, size_t i, size_t lead);
int leads__at_loop_end(const struct thread_ctx *tc);
enum opening leads__draft_opening(const struct thread_ctx *tc, size_t i, size_t *open);
void leads__vote(struct thread_ctx *tc);
void leads__apply_votes(struct thread_ctx *tc);

/* boundaries.c */
int boundaries__groups(struct thread_ctx *tc);
/* The longest time between two draft launches of iteration i, if its draft was seen whole. */
__u64 boundaries__draft_gap(const struct thread_ctx *tc, size_t i);
bool boundaries__is_draft_launch(const struct thread_ctx *tc, const struct loop_event *e,
				 const struct loop_event *verify);
bool boundaries__covers(const struct model_thread *t, size_t j, __u64 stream, size_t since);
void boundaries__accept_ends(struct thread_ctx *tc);
void boundaries__find_draft(struct thread_ctx *tc, size_t i);
void boundaries__find_parts(struct thread_ctx *tc, bool trust);
void boundaries__find(struct thread_ctx *tc);
void boundaries__export_iter(const struct thread_ctx *tc, size_t i, struct loop_iter *out);
int boundaries__count_iter(struct thread_ctx *tc, size_t i, struct loop *lp, struct cycle *c);

/* cycles.c */
int loop__push_cycle(struct loop *lp, size_t *cap, const struct cycle *c);
int loop__rank_of(const struct model_view *v, __u32 tgid);
int loop__cmp(const void *a, const void *b);

#endif /* __CYCLES_INT_H */
