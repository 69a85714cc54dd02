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
#include <linux/types.h>
#include "model.h"

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
	enum lead_from lead_from;
	bool lead_extends;	/* its lead is an extend graph (else a draft step) */
	struct cycle *cycles;
	size_t nr_cycles;
	__u32 iterations;	/* verify launch groups seen on the thread */
	__u32 skipped_start;	/* before the attach mark or with unseen draft launches */
	__u32 skipped_end;	/* cut by the end of the recording */
	__u32 skipped_no_draft;	/* verify with no draft launch before it */
	struct loop_iter *iters;	/* every iteration, counted or not */
	size_t nr_iters;
};

struct cycles {
	struct loop *loops;
	size_t nr_loops;
};

/* Assign exec roles in the model and find the cycles; 0 or -ENOMEM. */
int cycles__analyse(struct model *m, struct cycles *out);
void cycles__free(struct cycles *c);
const char *cycles__phase_name(enum phase p);
/* "structure", "loop-end", ...; "none" for LEAD_NONE */
const char *cycles__lead_from_name(enum lead_from from);

#endif /* __CYCLES_H */
