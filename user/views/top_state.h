/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What `specprobe top` shows, kept as window aggregates so memory stays flat:
 * the pipeline's settled cycles and syncs and its calls go in (top__consumer),
 * and top__frame computes one screen's figures for the last window of trace
 * time. The screen and the batch output only render a frame.
 */
#ifndef __TOP_STATE_H
#define __TOP_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "cycles.h"
#include "pipeline.h"
#include "sample.h"
#include "syncs.h"

#define TOP_MAX_LOOPS 64
#define TOP_MAX_SITES 32
#define TOP_MAX_HUNG 16
#define TOP_MAX_CALLS 16
#define TOP_MAX_PROCS 64
#define TOP_CYCLE_BUCKETS 14

/* Upper bounds (seconds) of the cycle-time histogram's buckets; +Inf comes after them. */
extern const double top_cycle_bucket_s[TOP_CYCLE_BUCKETS];

struct top_loop_row {
	__u32 tgid, tid;
	int rank;
	__u64 cycles;		/* in the window */
	__u64 total;		/* since the start (or the last reset) */
	double cycles_per_s;
	__u64 p50_ns, p99_ns;
	double mean_ns;			/* the window's cycles' mean duration */
	double share[PHASE_NR + 1];	/* of the window's cycle time; [PHASE_NR]: blocked */
	bool idle;		/* no cycle ended in the window */
	/* GPU timeline (--gpu): over the window's cycles with gpu_known; 0: none */
	__u64 gpu_cycles;
	double gpu_draft_ns, gpu_verify_ns;	/* mean GPU busy per cycle */
	double gpu_idle_share;			/* GPU idle over their GPU windows */
};

struct top_site_row {
	__u16 name;
	enum sync_pos pos;
	enum sync_kind kind;
	int rank;
	__u32 tgid;		/* its process: ranks not known apart still differ */
	__u64 count;		/* in the window */
	__u64 total;
	double per_s;
	double blocked_ms_per_cycle;	/* over the cycles of its rank in the window */
	const char *where;	/* its commonest call site (callstack.h label), NULL: none */
};

struct top_hung_row {
	__u16 name;
	__u32 tgid, tid;
	int rank;
	__u64 age_ns;
};

struct top_call_row {
	__u16 name;
	double per_s;
};

enum top_sort { TOP_SORT_RANK, TOP_SORT_RATE, TOP_SORT_P99, TOP_SORT_NR };

struct top_frame {
	__u64 now_ns;		/* trace clock */
	double window_s;	/* the window's length */
	double elapsed_s;	/* since the first call */
	__u64 calls, records, drops;
	double records_per_s;
	double overhead_pct;	/* probes' cost, share of the targets' CPU; < 0: unknown */
	int probes;
	struct top_loop_row loops[TOP_MAX_LOOPS];
	size_t nr_loops;
	struct top_site_row sites[TOP_MAX_SITES];
	size_t nr_sites;
	__u64 sites_lost;	/* flagged syncs of sites past the table, since the start */
	struct top_hung_row hung[TOP_MAX_HUNG];
	size_t nr_hung;
	struct top_call_row calls_top[TOP_MAX_CALLS];
	size_t nr_calls;
	bool gpu;		/* some cycle had GPU figures (--gpu): the GPU columns show */
	/* --server-metrics, between the last two good scrapes: every rank decodes them all */
	bool server;
	double server_tok_s;	/* < 0: the server counts no generated tokens */
	double server_accept;	/* mean accept length; 0: not known */
	/* --sample: cycles, phases and launches are the windows' only; cycles_whole since the start */
	struct sample_figures sample;
};

/* The header's answer (as report's first lines): the rates, where a cycle goes, what to fix. */
struct top_answer {
	size_t loops;		/* loops with a cycle in the window; 0: none of the below */
	double cycles_per_s;	/* their mean: ranks run the loop in lockstep */
	__u64 p50_ns;		/* the median of their p50s */
	double share[PHASE_NR];	/* of their cycle time together */
	double gpu_idle_share;	/* --gpu: GPU idle over their GPU windows, < 0: none */
	const struct top_site_row *site;	/* the costliest flagged site, NULL: none */
	double site_share;	/* its blocked time a cycle over its rank's mean cycle */
};

void top__answer(const struct top_frame *f, struct top_answer *a);

/*
 * Totals since the start, which a reset of the view does not touch: what
 * metrics serve as monotonic counters.
 */
struct top_loop_total {
	__u32 tgid, tid;
	int rank;
	__u64 cycles;
	__u64 bucket[TOP_CYCLE_BUCKETS];	/* cycles at most that long, cumulative */
	__u64 cycle_ns, phase_ns[PHASE_NR], blocked_ns;
	double cycles_per_s;	/* over the window, as the frame's loop row */
	/* GPU timeline (--gpu): sums over the cycles with gpu_known */
	__u64 gpu_cycles, gpu_phase_ns[PHASE_NR], gpu_idle_ns;
};

struct top_site_total {
	__u32 tgid;
	__u16 name;
	enum sync_pos pos;
	enum sync_kind kind;
	int rank;
	__u64 count, blocked_ns;
};

struct top_proc_total {
	__u32 tgid;
	int rank;		/* -1: unknown */
	const __u64 *calls;	/* by catalogue index; valid until the next call is fed */
	double overhead_ratio;	/* probes' cost over the process's CPU; < 0: unknown */
};

/* --server-metrics: the server's own figures, served beside ours under its pid and rank. */
struct top_server_total {
	bool any;		/* a server-metrics record came: the series below show */
	__u32 tgid;		/* the traced process taken for the server; 0: not known */
	int rank;		/* -1: unknown */
	enum sp_srv_server server;
	__u32 scrapes, failed;	/* good and failed scrapes */
	bool has[SP_SRV_FAMILY_NR];
	double total[SP_SRV_FAMILY_NR];	/* counters: increase since the first good scrape */
	bool recent;		/* the last two good scrapes: the two below hold */
	double tokens_per_s;	/* < 0: the server counts no generated tokens */
	double accept_length;	/* 0: not known */
};

struct top_totals {
	struct top_loop_total loops[TOP_MAX_LOOPS];
	size_t nr_loops;
	struct top_site_total sites[TOP_MAX_SITES];
	size_t nr_sites;
	__u64 sites_lost;	/* flagged syncs past the site table */
	struct top_proc_total procs[TOP_MAX_PROCS];
	size_t nr_procs;
	__u64 calls_lost;	/* calls of processes past the table */
	__u64 records, drops_call, drops_return;
	int probes;
	struct top_server_total server;
	struct sample_figures sample;	/* as the frame's */
};

struct top_opts {
	double window_s;	/* default 5 */
	__u64 hung_ns;		/* open longer than this: hung */
	enum top_sort sort;
	int focus_rank;		/* -1: every rank */
};

struct top_state;

struct top_state *top__new(void);
void top__free(struct top_state *t);
/* The pipeline consumer that feeds t (windowed pipelines). */
void top__consumer(struct top_state *t, struct pipeline_consumer *c);
/* Forget the window: counts start again from now. */
void top__reset(struct top_state *t);
/* One frame at trace time now_ns, for pipeline p. */
void top__frame(struct top_state *t, const struct pipeline *p, __u64 now_ns,
		const struct top_opts *opts, struct top_frame *out);
/*
 * Before the pipeline finishes: the calls open at the end, which finishing
 * closes as unreturned, stay hung in the frames after it (the end block).
 */
int top__keep_open(struct top_state *t, const struct pipeline *p);
/* The totals since the start, for pipeline p; rates over window_s. */
void top__totals(struct top_state *t, const struct pipeline *p, double window_s,
		 struct top_totals *out);

#endif /* __TOP_STATE_H */
