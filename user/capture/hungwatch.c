// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The decoder's pairing, cut down to what a trigger needs: per thread, an
 * entry is open until its completion, a completion at its depth or below,
 * or its process's exit.
 */
#include <string.h>
#include "hungwatch.h"

static void drop(struct hungwatch *hw, int i)
{
	hw->open[i] = hw->open[--hw->nr_open];
}

static void on_call(struct hungwatch *hw, const struct sp_call_rec *c)
{
	/* a new call at a depth means the open ones at or below it on that thread are gone */
	for (int i = hw->nr_open - 1; i >= 0; i--)
		if (hw->open[i].tid == c->tid && hw->open[i].depth >= c->depth)
			drop(hw, i);
	if (!(c->flags & SP_CALL_HAS_RET))
		return;
	if (hw->nr_open == HUNGWATCH_SLOTS) {
		hw->untracked++;
		return;
	}
	hw->open[hw->nr_open++] = (struct hung_call){
		.ts = c->ts, .tgid = c->tgid, .tid = c->tid, .seq = c->seq,
		.probe = c->probe, .depth = c->depth,
	};
}

static void on_ret(struct hungwatch *hw, const struct sp_ret_rec *r)
{
	for (int i = hw->nr_open - 1; i >= 0; i--)
		if (hw->open[i].tid == r->tid && hw->open[i].depth >= r->depth)
			drop(hw, i);
}

static void on_exit_rec(struct hungwatch *hw, const struct sp_exit_rec *e)
{
	for (int i = hw->nr_open - 1; i >= 0; i--)
		if (hw->open[i].tgid == e->tgid)
			drop(hw, i);
}

void hungwatch__record(struct hungwatch *hw, const void *rec, size_t size)
{
	const struct sp_rec_hdr *h = rec;

	if (h->type == SP_REC_CALL && size >= sizeof(struct sp_call_rec))
		on_call(hw, rec);
	else if (h->type == SP_REC_RET && size >= sizeof(struct sp_ret_rec))
		on_ret(hw, rec);
	else if (h->type == SP_REC_EXIT && size >= sizeof(struct sp_exit_rec))
		on_exit_rec(hw, rec);
}

const struct hung_call *hungwatch__due(struct hungwatch *hw, __u64 now, __u64 threshold_ns)
{
	struct hung_call *oldest = NULL;

	for (int i = 0; i < hw->nr_open; i++) {
		struct hung_call *c = &hw->open[i];

		if (c->fired || c->ts + threshold_ns > now)
			continue;
		/* every call hung by now is in the window this one triggers */
		c->fired = true;
		/* ... and one that was open at the last trigger is in that one's */
		if (hw->last_fired && c->ts <= hw->last_fired)
			continue;
		if (!oldest || c->ts < oldest->ts)
			oldest = c;
	}
	if (oldest)
		hw->last_fired = now;
	return oldest;
}
