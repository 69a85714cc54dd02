/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Sync classification (DESIGN.md "Analyses"): where each blocking or implicitly
 * synchronising call of the model lies in its decode cycle, whether it is the
 * cycle's own accept sync, the GPU idle time it bounds, and whether it is
 * flagged. Also the tracer's own cost ("Self-overhead").
 */
#ifndef __SYNCS_H
#define __SYNCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "callstack.h"
#include "cycles.h"
#include "hmap.h"
#include "model.h"

/* Named as specsim's --plant positions, plus verify (between verify pieces). */
enum sync_pos {
	SPOS_DRAFT_VERIFY,	/* after the first draft launch, before verify */
	SPOS_VERIFY,		/* between the launches of a piecewise verify */
	SPOS_AFTER_VERIFY,	/* after verify, before the result's copy to the host */
	SPOS_ACCEPT,		/* from that copy to the first graph launched after verify */
	SPOS_EXTEND,		/* from there to the next cycle's first draft launch */
	SPOS_OUTSIDE,		/* not in the decode loop: setup, capture, teardown */
	SPOS_NR,
};

/* What a sync is found to be, shown with its evidence (blocked time, work in flight). */
enum verdict {
	VERDICT_FLAGGED,	/* waited on work in flight in the loop, or blocked by itself */
	VERDICT_ACCEPT,		/* the cycle's own accept sync, or the copy of its result */
	VERDICT_NO_WAIT,	/* nothing to wait for, or returned faster than a probe hit costs */
	VERDICT_UNKNOWN,	/* cannot be told: memory or stream flags from before attach */
	VERDICT_OUTSIDE,	/* not in the decode loop */
	VERDICT_STEP,		/* an eager draft step's read of its token: the loop's own */
	VERDICT_UNSEEN,		/* --sample: outside the windows, its call site never in one */
	VERDICT_NR,
};

struct sync_verdict {
	const struct model_sync *sync;
	int rank;
	long cycle;		/* counted cycle of its loop, -1: none */
	enum sync_pos pos;
	enum verdict verdict;
	size_t site;		/* flagged or unknown: index in its site table */
	bool own;		/* the cycle's accept sync, or the copy of its result */
	bool by_site;		/* --sample: outside a whole cycle, judged as its call site was */
	float accept_share;	/* ... and of its site's syncs in whole cycles, the accept's share */
	__u8 placed, placed_pos;	/* ... and its verdict and position as placed anyway */
	bool step;		/* the sync that reads an eager draft step's token */
	bool flagged;
	bool is_sync;		/* counted in sync_calls (below) */
	bool breaks_overlap;	/* waited on graph work in the cycle and the GPU then starved */
	bool has_bound;		/* the starvation bound holds */
	__u64 bound_ns;		/* return to the next launch entry: bounds the GPU idle time */
	__u64 blocked_ns;
	/* flagged: the launch it waited on, where known (its verify, or the last one there) */
	bool has_flow;
	__u64 flow_ts;		/* that launch's entry */
	/* GPU timeline (--gpu): the idle gap on its GPU that holds its return, 0: busy then */
	bool has_gpu_idle;
	__u64 gpu_idle_ns;
};

/* Loop events looked back for the launch a flagged sync waited on. */
#define SYNCS_FLOW_SCAN 512

/* Flagged (or unknown) calls of one call site: kind, position, call and stream. */
struct sync_site {
	enum sync_kind kind;
	enum sync_pos pos;
	__u16 name;
	__u64 stream;		/* what it waited on (legacy: the other stream), 0 */
	size_t count, bounded, breaks;
	size_t cycles_with;	/* cycles that have at least one */
	size_t added;		/* index before the sort */
	__u64 blocked_ns, bound_ns;	/* sums */
	size_t gpu_known;		/* of count, those with a GPU idle caused */
	__u64 gpu_idle_ns;		/* its sum */
	__u64 waited_graphs, waited_kernels, waited_copies;	/* in flight at entry, sums */
};

struct site_table {
	struct sync_site *sites;	/* most blocked time first */
	size_t nr, cap;
};

/* Syncs of one call site (callstack.h): the innermost Python line and native caller. */
struct callsite_stat {
	__u32 site;		/* callstacks__site() */
	size_t count, flagged;
	__u64 blocked_ns, flagged_ns;
	size_t own;		/* of the others: the loop's accept syncs and result copies */
	/* of the flagged: the first one's call and position, the GPU idle caused known */
	__u16 flagged_name;
	enum sync_pos flagged_pos;
	size_t flagged_gpu_known;
	__u64 flagged_gpu_idle_ns;	/* its sum */
};

/*
 * Calls that could synchronise and did not, counted by call, kind, position,
 * verdict and call site: their number grows with the calls, these groups do not.
 */
struct quiet_site {
	__u16 name;
	__u8 kind;		/* enum sync_kind */
	__u8 pos;		/* enum sync_pos */
	__u8 verdict;		/* enum verdict */
	__u32 site;		/* callstacks__site(), 0: no stack recorded */
	size_t count;
};

struct quiet_table {
	struct quiet_site *sites;	/* most calls first, after the last one is added */
	size_t nr, cap;
	struct hmap index;		/* key to position + 1, while calls are added */
};

/*
 * The model's syncs hold calls that could synchronise and need not: work put on the
 * legacy stream (it waits only when another blocking stream has work in flight), and
 * "async" copies of host memory of unknown kind. Those that did not, or did not show
 * it, are counted apart; the rest are the sync calls, what flagged counts are out of.
 */
struct syncs {
	struct sync_verdict *verdicts;	/* one per model sync, in entry order */
	size_t nr;
	size_t nr_stored;	/* a whole run's: the syncs in its store (calls that only could not) */
	size_t sync_calls;	/* blocking calls, and calls that could synchronise and did */
	size_t legacy_work;	/* calls that put work on the legacy stream */
	size_t legacy_synced;	/* ... of them, those that waited: syncs */
	size_t legacy_unknown;	/* ... those behind streams of unknown flags: counted as syncs */
	size_t host_unknown_quiet;	/* async copies of unknown host memory showing no wait */
	struct site_table flagged_sites, unknown_sites;
	struct quiet_table quiet;	/* the calls not sync calls, grouped */
	size_t flagged, unknown;
	size_t verdicts_of[VERDICT_NR];	/* of the sync calls */
	size_t by_site, flagged_by_site;	/* --sample: of them, judged by their site */
	/*
	 * --sample: accept syncs in counted cycles, and those judged by their site
	 * as many as their sites' shares of accepts: the run's cycles
	 */
	size_t accept_in_cycles;
	double accept_by_site;
	/*
	 * counted cycles of all loops: per-cycle costs divide by it; --sample: the
	 * run's, scaled from them (syncs__run_cycles)
	 */
	size_t cycles;
	__u64 trap_ns;		/* the return probe's cost: a call back sooner waited for nothing */
	__u64 site_ns;		/* ... and a taken call site's, for the calls that took one */
	struct callsite_stat *by_callsite;	/* most flagged first, then most calls */
	size_t nr_by_callsite;
	size_t with_stack;	/* sync calls whose call site was recorded */
	/* a whole run in windows: verdicts is NULL, they are here in entry order */
	FILE *store;
	struct sync_stream *stream;	/* what the sums need while verdicts come */
};

/* After cycles__analyse; 0 or -ENOMEM. */
int syncs__analyse(struct model *m, const struct cycles *cy, struct syncs *out);
void syncs__free(struct syncs *s);
/*
 * A whole run in windows: each verdict once, in its thread's entry order, into
 * the counts and sites; 0 or -ENOMEM. syncs__store keeps it for syncs__each,
 * called in entry order over all threads; 0 or -EIO.
 */
int syncs__add(struct syncs *out, const struct sync_verdict *sv, const struct callstacks *stacks);
int syncs__store(struct syncs *out, const struct sync_verdict *sv);
/*
 * After the last syncs__add: cycles counted over the run (by_span: scaled by the
 * loops' spans, cycles__run_estimate), then the sites' order; 0 or -ENOMEM.
 */
int syncs__end(struct syncs *out, size_t cycles, size_t by_span);
/*
 * Each verdict in entry order (stored ones with their rank from v; a whole run's
 * store holds syncs only, not the calls that could have been); 0, fn's return or -EIO.
 */
int syncs__each(const struct syncs *sy, const struct model_view *v,
		int (*fn)(void *ctx, const struct sync_verdict *sv), void *ctx);
/*
 * --sample: a sync judged in a counted cycle teaches its call site's verdict,
 * for syncs outside such cycles (sv's own cycle: the model's); windowed
 * analyses call it as each settles (sample.learn_settled). 0 or -ENOMEM.
 */
int syncs__learn_site(struct model_view *v, const struct sync_verdict *sv);
/* --sample: a sync judged by its site again, as its site's verdicts stand now. */
void syncs__judge_by_site(const struct model_view *v, struct sync_verdict *sv);
const char *syncs__pos_name(enum sync_pos pos);
const char *syncs__verdict_name(enum verdict v);

/* What the probes cost one process: hits counted by kind times the calibrated cost. */
struct overhead {
	__u32 tgid;
	__u64 hits_entry, hits_return;	/* calls of entry-only and of entry + completion kinds */
	__u64 hits_stack;		/* calls whose call site was taken, of either kind */
	double span_s;			/* first to last call */
	double entry_per_s, return_per_s;
	double added_ns;		/* CPU time the probes added */
	double ms_per_s;		/* added per second of the span */
	bool has_cpu;			/* two CPU samples or more */
	double cpu_ms_per_s;		/* the process's own CPU use */
	double percent;			/* added, as a share of its CPU use */
};

/* 0, or -ENODATA when the recording has no calibration. */
int syncs__overhead(const struct model_view *v, const struct model_proc *p, struct overhead *o);

#endif /* __SYNCS_H */
