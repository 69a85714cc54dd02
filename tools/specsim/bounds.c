// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Cycle bounds for the ground truth, as the shared contract defines them
 * (briefs/cycle-defs.md): the loop calls these right after each defining call,
 * so every bound is an edge of a call that the truth also lists. A cycle is
 * written once its end (the next cycle's first draft launch) and its accept
 * sync are both known; with a deferred accept the sync comes one iteration
 * later, after the next cycle has begun.
 */
#include <string.h>
#include "rank.h"

static struct cycle_track *track_of(struct rank_state *st, int cycle)
{
	struct cycle_track *t;

	if (cycle < 0)
		return NULL;
	t = &st->track[cycle % 2];
	return t->open && t->b.cycle == cycle ? t : NULL;
}

static void write_if_done(struct cycle_track *t)
{
	if (!t->ended || !t->accepted)
		return;
	truth__cycle_bounds(&t->b);
	t->open = false;
}

void bounds__begin(struct rank_state *st, int cycle)
{
	struct cycle_track *t = &st->track[cycle % 2];

	memset(t, 0, sizeof(*t));
	t->b.cycle = cycle;
	t->open = true;
}

/*
 * The call just made begins cycle's draft setup (its position uploaded, inputs
 * copied in): the cycle starts there, at its first draft launch otherwise.
 */
void bounds__draft_setup(struct rank_state *st, int cycle)
{
	st->setup_entry = truth__last(true);
	st->setup_cycle = cycle;
}

/* The first draft launch (or its setup) starts this cycle and ends the previous one. */
void bounds__draft_launch(struct rank_state *st, int cycle)
{
	struct cycle_track *t = track_of(st, cycle), *prev = track_of(st, cycle - 1);
	struct gt_ref entry = st->setup_cycle == cycle ? st->setup_entry : truth__last(true);

	if (!t || t->b.draft_launches++)
		return;
	t->b.start = entry;
	t->b.phase_start[LP_DRAFT] = entry;
	if (prev) {
		prev->b.end = entry;
		prev->b.phase_end[LP_EXTEND] = entry;
		prev->ended = true;
		write_if_done(prev);
	}
}

/* Verify runs from the first verify launch's entry to the last one's return. */
void bounds__verify_launch(struct rank_state *st, int cycle)
{
	struct cycle_track *t = track_of(st, cycle);

	if (!t)
		return;
	if (!t->b.verify_launches++) {
		t->b.phase_end[LP_DRAFT] = truth__last(true);
		t->b.phase_start[LP_VERIFY] = truth__last(true);
	}
	t->b.phase_end[LP_VERIFY] = truth__last(false);
	t->b.phase_start[LP_ACCEPT] = truth__last(false);
	t->verify_done = true;
}

/* A call that blocked the host; after verify and before extend it moves E. */
void bounds__blocking(struct rank_state *st, int cycle)
{
	struct cycle_track *t = track_of(st, cycle);

	if (!t)
		return;
	t->b.syncs++;
	if (t->verify_done && !t->extend_started) {
		/* past the cycle's end, once the next draft's setup began: no extend is left */
		t->b.phase_start[LP_EXTEND] =
			st->setup_cycle == cycle + 1 ? st->setup_entry : truth__last(false);
		t->synced_after_verify = true;
	}
}

/* The sync that brought for_cycle's accept result to the host just returned. */
void bounds__accepted(struct rank_state *st, int for_cycle)
{
	struct cycle_track *t = track_of(st, for_cycle);

	if (!t)
		return;
	t->b.phase_end[LP_ACCEPT] = truth__last(false);
	t->accepted = true;
	write_if_done(t);
}

void bounds__extend_launch(struct rank_state *st, int cycle)
{
	struct cycle_track *t = track_of(st, cycle);

	if (!t)
		return;
	if (!t->b.extend_launches++) {
		t->extend_started = true;
		/* no blocking sync after verify: extend starts at its first launch */
		if (!t->synced_after_verify)
			t->b.phase_start[LP_EXTEND] = truth__last(true);
	}
	t->last_extend = truth__last(false);
}

/* The final cycle ends at the return of its last extend launch. */
void bounds__loop_end(struct rank_state *st, int last_cycle)
{
	struct cycle_track *t = track_of(st, last_cycle);

	if (!t)
		return;
	t->b.end = t->last_extend;
	t->b.phase_end[LP_EXTEND] = t->last_extend;
	t->ended = true;
	write_if_done(t);
}

/* With --torch there is no extend launch: the last cycle ends at its last call's return. */
void bounds__cycle_tail(struct rank_state *st, int cycle)
{
	struct cycle_track *t = track_of(st, cycle);

	if (t)
		t->last_extend = truth__last(false);
}
