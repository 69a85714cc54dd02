/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Recordings of several hosts or ranks onto one clock: every source's
 * monotonic times moved by its realtime offset from the first source's,
 * tables joined, tgids of other hosts and of other windows of a process moved
 * apart, each process's attach marks its own input's, records interleaved by
 * time. The result is a recording like any other.
 */
#ifndef __MERGE_H
#define __MERGE_H

#include <stdbool.h>

#define MERGE_MAX_INPUTS	64
/* another host's tgids and tids, or another window's of a process, get n << 22 (pid_max) */
#define MERGE_HOST_SHIFT	22

struct merge_request {
	const char **inputs;	/* recordings or ring bases */
	int nr_inputs;
	const char *output;
	bool force;
};

/* Write the merge; what was done and what is not known is logged. An exit status (0, 1). */
int merge__run(const struct merge_request *req);

#endif /* __MERGE_H */
