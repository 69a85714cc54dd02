/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A whole recording analysed in windows, in memory that does not grow with
 * its length: passes over the recording build what cycles__analyse decides
 * from every event (cycles.h, "A whole run in windows"), then the last pass
 * hands each cycle and each classified sync on once, as they settle, and
 * keeps only sums, the sites and per-cycle records in temporary files. The
 * results equal results__compute's over the whole recording.
 */
#ifndef __WHOLERUN_H
#define __WHOLERUN_H

#include <stdbool.h>
#include <linux/types.h>
#include "model.h"
#include "results.h"
#include "settle.h"

struct wholerun;

struct wholerun *wholerun__new(void);
void wholerun__free(struct wholerun *w);
/* Is the pass about to start the last one (cycles and syncs handed on, results made)? */
bool wholerun__last_pass(const struct wholerun *w);
/* --gpu: settle nothing whose GPU figures need executions not handed over before it. */
void wholerun__hold(struct wholerun *w, __u64 before_ns);
/* A pass starts: what the last pass gathered so far is dropped. */
void wholerun__begin(struct wholerun *w);
/*
 * A window step: last_ts is the newest call's entry; final: the pass's end.
 * The last pass hands what settled to sink and, at its end, fills res (the
 * caller frees it). -EAGAIN: the pass must be read again (another pass first);
 * else 0, a sink's error, -ENOMEM or -EIO.
 */
int wholerun__step(struct wholerun *w, struct model *m, __u64 last_ts, bool final,
		   struct results *res, const struct settle_sink *sink);

#endif /* __WHOLERUN_H */
