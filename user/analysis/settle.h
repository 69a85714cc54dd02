/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Windowed analyses for views that run while records come (top, metrics):
 * the same cycles__analyse and syncs__analyse as a whole recording, run over
 * the model's recent events. Cycles and syncs whose facts later records can no
 * longer change are handed on once, and the model forgets what no later
 * analysis needs, so memory stays flat however long the run.
 */
#ifndef __SETTLE_H
#define __SETTLE_H

#include <stdbool.h>
#include <linux/types.h>
#include "model.h"
#include "results.h"

/*
 * A settled cycle (index counted over the whole run) of loop lp (lp's iters
 * and cycles describe the window only), and a settled sync (its cycle counted
 * over the run; its site is the window's). Both are valid during the call.
 */
struct settle_sink {
	int (*cycle)(void *ctx, const struct loop *lp, const struct cycle *c);
	int (*sync)(void *ctx, const struct sync_verdict *sv);
	void *ctx;
};

struct settle;

struct settle *settle__new(void);
/*
 * Analyse the model's window, hand on what settled, forget what is done.
 * last_ts: entry time of the newest call the model saw. final: no more calls
 * come; everything left is handed on and the results are kept in res (the
 * window's: freed by the caller), else res is scratch. 0 or a sink's error or
 * -ENOMEM.
 */
int settle__step(struct settle *s, struct model *m, __u64 last_ts, bool final,
		 struct results *res, const struct settle_sink *sink);
/* --gpu: settle nothing whose GPU figures need executions not handed over before it. */
void settle__hold(struct settle *s, __u64 before_ns);
/* Cycles and syncs that entered before it were handed on; 0 before the first step. */
__u64 settle__horizon(const struct settle *s);
void settle__free(struct settle *s);

#endif /* __SETTLE_H */
