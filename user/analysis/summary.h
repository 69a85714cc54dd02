/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The cycle summary: one set of cycles (a loop, or all of them) as the outputs show it. */
#ifndef __SUMMARY_H
#define __SUMMARY_H

#include <stddef.h>
#include <linux/types.h>
#include "cycles.h"

/* What the outputs show of a set of cycles. */
struct phase_mean {
	double span_ns, blocked_ns, launches, syncs;
	double gpu_busy_ns;		/* over the cycles with gpu_known */
	double gpu_span_ns;		/* gpu_end_ns - gpu_start_ns, the same cycles */
	__u64 gpu_busy_p50_ns;		/* the median of the same cycles' GPU busy */
};

#define SUMMARY_MAX_ACCEPT_KINDS 8

struct cycle_summary {
	size_t cycles;
	double cycles_per_s;
	double mean_ns;
	__u64 p50_ns, p90_ns, p99_ns, min_ns, max_ns;
	struct phase_mean phase[PHASE_NR];
	struct phase_mean total;
	size_t draft_joined;		/* cycles with no sync between draft and verify */
	size_t extend_joined;		/* cycles with no sync between extend and next draft */
	size_t extend_joinable;		/* cycles followed by another iteration */
	size_t deferred;		/* cycles whose accept sync came in a later iteration */
	size_t no_accept_sync;
	size_t verify_pieces;
	/* loops where nothing seen told the lead's role: read as draft, as extend */
	size_t lead_shape_draft, lead_shape_extend;
	__u16 accept_call[SUMMARY_MAX_ACCEPT_KINDS];
	size_t accept_count[SUMMARY_MAX_ACCEPT_KINDS];
	int nr_accept_kinds;
	double accept_wait_ns;		/* mean time blocked in the accept sync */
	/* GPU timeline (--gpu): means over the cycles with gpu_known */
	size_t gpu_cycles;		/* 0: no GPU figures */
	size_t gpu_cycles_unmatched;
	double gpu_window_ns;		/* gpu_end_ns - gpu_start_ns */
	double gpu_idle_ns, gpu_idle_flagged_ns, gpu_flagged_syncs;
	/* their medians, and the cycles where a flagged sync caused GPU idle */
	__u64 gpu_window_p50_ns, gpu_idle_p50_ns;
	size_t gpu_cycles_flagged;
};

/* Summary over loops[0..nr); 0 or -ENOMEM. */
int cycle_summary__compute(const struct loop *loops, size_t nr, struct cycle_summary *s);

#endif /* __SUMMARY_H */
