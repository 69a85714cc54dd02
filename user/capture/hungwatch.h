/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Calls entered and not returned yet, as the recorder sees records go by: which one hangs. */
#ifndef __HUNGWATCH_H
#define __HUNGWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "specprobe.h"

#define HUNGWATCH_SLOTS 1024	/* open entry + completion calls followed at once */

struct hung_call {
	__u64 ts;
	__u32 tgid, tid, seq, probe;
	__u8 depth;
	bool fired;		/* a dump was triggered for it already */
};

struct hungwatch {
	struct hung_call open[HUNGWATCH_SLOTS];
	int nr_open;
	__u64 untracked;	/* entries not followed: the table was full */
	__u64 last_fired;	/* now at the last trigger: calls entered before it are in that dump */
};

/* Entries with a completion, completions, exits; other records are ignored. */
void hungwatch__record(struct hungwatch *hw, const void *rec, size_t size);
/*
 * The oldest call open for threshold_ns at now that has not fired yet; it and
 * every other call due are marked fired (one window covers them), as is any
 * call entered before the last trigger: that dump holds it. NULL: none.
 */
const struct hung_call *hungwatch__due(struct hungwatch *hw, __u64 now, __u64 threshold_ns);

#endif /* __HUNGWATCH_H */
