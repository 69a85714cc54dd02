/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Decode cycles and their phases per launching thread, and the role of every
 * graph exec (DESIGN.md "Analyses"; the boundaries follow docs/report-json.md).
 * Every boundary is a host-visible call edge: an entry time, or a return time
 * (entry-only calls such as cuGraphLaunch return at once, so their return edge
 * is reported at their entry).
 */
#ifndef __CYCLES_H
#define __CYCLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "model.h"
#include "roles.h"

enum phase {
	PHASE_DRAFT,
	PHASE_VERIFY,
	PHASE_ACCEPT,
	PHASE_EXTEND,
	PHASE_OTHER,	/* parts of the cycle none of the others cover */
	PHASE_NR,
};

struct cycle_phase {
	__u64 start_ns, end_ns;	/* host span; other: the cycle's bounds */
	__u64 span_ns;		/* end - start; other: time no phase covers */
	__u64 blocked_ns;	/* time blocked in syncs attributed to this phase */
	__u32 launches;		/* graph launches, eager kernels, eager collectives */
	__u32 syncs;		/* blocking calls */
	/* GPU timeline (--gpu), valid when the cycle's gpu_known: its executions */
	/*
	 * start: when the GPU could begin the phase, as a CUDA event recorded
	 * before its first call reads (docs/gpu-timeline.md); end: its last
	 * execution's end; 0: no execution in this phase
	 */
	__u64 gpu_start_ns, gpu_end_ns;
	__u64 gpu_busy_ns;		/* union of their GPU intervals */
};

struct cycle {
	__u32 index;		/* 0, 1, ... among the counted cycles of its loop */
	__u64 start_ns;		/* entry of the first draft launch */
	__u64 end_ns;		/* next cycle's start; the last one: its last extend launch */
	struct cycle_phase phase[PHASE_NR];
	__u64 blocked_ns;
	__u32 launches, syncs;
	__u64 accept_wait_ns;	/* time blocked in the accept sync itself */
	__u16 accept_call;	/* catalogue index of the accept sync; valid if has_accept_sync */
	bool has_accept_sync;
	bool accept_deferred;	/* its accept sync was made in a later iteration */
	bool draft_joined;	/* no sync between the draft and the verify launches */
	bool followed;		/* another iteration follows: the cycle ends at its draft */
	bool extend_joined;	/* no sync between the extend and the next draft launches */
	bool verify_pieces;	/* verify was more than one graph launch */
	/* GPU timeline (--gpu, docs/gpu-timeline.md) */
	bool gpu_tried;		/* GPU records came: gpu_known tells whether they matched */
	bool gpu_known;		/* every launch of the cycle was matched to its execution */
	__u64 gpu_start_ns;	/* its first execution's start */
	__u64 gpu_end_ns;	/* the next cycle's first execution's start; last: its last end */
	__u64 gpu_idle_ns;	/* of [gpu_start_ns, gpu_end_ns), the time no execution ran */
	__u64 gpu_idle_flagged_ns;	/* GPU idle caused by the cycle's flagged syncs, summed */
	__u32 gpu_flagged_syncs;	/* flagged syncs with a GPU idle caused known */
};

#define LOOP_NONE ((size_t)-1)
/* How many iterations later a deferred accept sync may come. */
#define CYCLES_DEFERRED_REACH 4

/*
 * The lead: the first graph launched after an accept when more launches follow
 * before the next verify. It is an extend graph or the first draft step; what
 * told them apart (docs/report-json.md, "Roles").
 */
enum lead_from {
	LEAD_NONE,		/* the loop has no lead */
	LEAD_STRUCTURE,		/* a draft graph replays, or captured kernels differ or match */
	LEAD_SITE,		/* launched from the code the draft steps are, or from its own */
	LEAD_LOOP_END,		/* the last cycle ends with it alone, or at its accept */
	LEAD_LOOP_START,	/* the loop's first draft opens with it, or without it */
	LEAD_SHAPE,		/* nothing seen tells: read from what follows it */
	LEAD_FROM_NR,
};

/* Where one iteration lies in its thread's loop events (indices; LOOP_NONE: none). */
struct loop_iter {
	size_t first;		/* first draft launch, else the first verify launch */
	size_t vs, ve;		/* first and last verify launch */
	size_t copy;		/* the result's copy to the host */
	size_t accept;		/* the accept sync, maybe in a later iteration */
	size_t after;		/* end of accept's calls: the first graph launch after verify */
	size_t end;		/* the next iteration's first; the last one: past its last launch */
	long cycle;		/* index among the loop's counted cycles, -1: not counted */
	bool no_draft;		/* a verify with no draft before it: warm-up, not the loop */
};

struct loop {
	__u32 tgid, tid;
	int rank;
	__u32 verify_exec;	/* exec id of the verify graph found first */
	enum role_source verify_from;
	struct role_evidence evidence;	/* each piece that told the roles, and its vote */
	enum lead_from lead_from;
	bool lead_extends;	/* its lead is an extend graph (else a draft step) */
	struct cycle *cycles;
	size_t nr_cycles;
	__u32 iterations;	/* verify launch groups seen on the thread */
	__u32 skipped_start;	/* before the attach mark or with unseen draft launches */
	__u32 skipped_end;	/* cut by the end of the recording */
	__u32 skipped_no_draft;	/* verify with no draft launch before it */
	__u32 skipped_unsampled;	/* --sample: not whole inside a window */
	struct loop_iter *iters;	/* every iteration, counted or not */
	size_t nr_iters;
	/* a whole run analysed in windows: the cycles are here, not in cycles (NULL) */
	FILE *store;
	FILE *launches;		/* ... and its thread's graph launches (loop__each_launch) */
};

struct cycles {
	struct loop *loops;
	size_t nr_loops;
};

/*
 * Each counted cycle of the loop in order, from cycles or from its store;
 * 0, fn's non-zero return, or -EIO when the store cannot be read.
 */
int loop__each_cycle(const struct loop *lp, int (*fn)(void *ctx, const struct cycle *c),
		     void *ctx);
/* Each graph launch of the loop's thread in order (v: where its events are, if not stored). */
int loop__each_launch(const struct loop *lp, const struct model_view *v,
		      int (*fn)(void *ctx, const struct loop_event *ev), void *ctx);
/* --gpu: a flagged sync's GPU idle into counted cycle index, if its GPU is known; 0 or -EIO. */
int loop__add_flagged_gpu(struct loop *lp, size_t index, __u64 idle_ns);
/*
 * Cycles the loops made over the run, per-cycle costs' divisor: those counted,
 * or with --sample each loop's counted cycles scaled from the time they cover
 * to the time from its first to its last (docs/sampling.md).
 */
size_t cycles__run_estimate(const struct cycles *cy, const struct sample_windows *s);
/* Append a cycle to the loop's store (made on first use); 0, -ENOMEM or -EIO. */
int loop__store_cycle(struct loop *lp, const struct cycle *c);

/*
 * A whole run in windows (wholerun.h): what the whole-run analysis decides
 * from every event (roles, each loop's lead, thresholds) is built first over
 * passes of the recording, a stage a pass, from the events of each window
 * step; then the last pass finds each window's cycles with those decisions
 * fixed, exactly as cycles__analyse finds them over the whole run.
 */
enum plan_stage {
	PLAN_STATS,		/* launches, what follows them, which comes next to which */
	PLAN_LEADS,		/* iterations: what tells each loop's lead, and the votes */
	PLAN_GAP,		/* the longest draft gap, for a loop cut at its start */
	PLAN_FINAL,		/* the decisions are whole: the cycles */
};

struct cycles_plan;

/* One iteration the last pass settled, kept while later windows still hold it. */
struct plan_iter {
	__u64 vs_ts;		/* entry of its first verify launch: how it is known */
	__u64 accept_ts;	/* entry of its accept sync, 0: none */
	long cycle;		/* counted cycle over the run, -1: none */
	bool no_draft;
};

/* A loop of the last pass: its run-wide counts, and where its window settles. */
struct plan_loop_window {
	size_t owned_from, owned_to;	/* window iterations settled by this step */
	size_t keep;			/* first window iteration later windows still need */
	bool keep_all;			/* none settled yet: the first one looks back to the start */
};

struct cycles_plan *cycles_plan__new(void);
void cycles_plan__free(struct cycles_plan *pl);
enum plan_stage cycles_plan__stage(const struct cycles_plan *pl);
/* A pass begins: what an earlier one counted of iterations, or settled, is dropped. */
void cycles_plan__begin(struct cycles_plan *pl);
/* Before a window's analysis: the exec roles and the globals decided so far. */
void cycles_plan__apply(const struct cycles_plan *pl, struct model *m);
/*
 * A plan pass's window step: count what the settled part of each thread's
 * window adds to the stage. *keep_ns (by thread index, nr_threads of them):
 * where each thread's events are still needed. 0 or -ENOMEM.
 */
int cycles_plan__step(struct cycles_plan *pl, struct model *m, bool final, __u64 *keep_ns);
/* End of a plan pass: decide what the stage tells, move to the next stage; 0 or -ENOMEM. */
int cycles_plan__end_pass(struct cycles_plan *pl, struct model *m);
/*
 * The last pass's window step: the window's loops (cycles only of the
 * iterations settled now, numbered over the run; iters with run-wide cycle
 * numbers) in out, where each settles in win (one per out loop). final: all
 * is settled. -EAGAIN: the plan needs the draft gap first (PLAN_GAP, then the
 * last pass again); else 0 or -ENOMEM.
 */
int cycles_plan__window(struct cycles_plan *pl, struct model *m, bool final, struct cycles *out,
			struct plan_loop_window **win);
/* The last pass: loop threads' graph launches before keep_ns go to their stores; 0 or -EIO. */
int cycles_plan__launches(struct cycles_plan *pl, const struct model *m, const __u64 *keep_ns);
/* --gpu: the last pass settles no iteration whose GPU figures need records after it. */
void cycles_plan__hold(struct cycles_plan *pl, __u64 before_ns);
/* Will thread k (model thread index) be a loop of the run? */
bool cycles_plan__loop_thread(const struct cycles_plan *pl, size_t k);
/* Settled iterations before keep_ns (by thread index) are no longer in any window. */
void cycles_plan__kept(struct cycles_plan *pl, const struct model *m, const __u64 *keep_ns);
/* The last pass is over: the run's loops (counts, cycles in their stores), by rank. */
int cycles_plan__loops(struct cycles_plan *pl, struct model *m, struct cycles *out);
/* The last pass: thread tgid/tid's loop over the run (cycles in its store), or NULL. */
struct loop *cycles_plan__loop_of(struct cycles_plan *pl, __u32 tgid, __u32 tid);
/* The loop of thread tgid/tid in the run's loops made by cycles_plan__loops, or NULL. */
struct loop *cycles_plan__run_loop(struct cycles *run, __u32 tgid, __u32 tid);

/* Assign exec roles in the model and find the cycles; 0 or -ENOMEM. */
int cycles__analyse(struct model *m, struct cycles *out);
void cycles__free(struct cycles *c);
const char *cycles__phase_name(enum phase p);
/* "structure", "loop-end", ...; "none" for LEAD_NONE */
const char *cycles__lead_from_name(enum lead_from from);

#endif /* __CYCLES_H */
