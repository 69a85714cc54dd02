/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A recording as a Perfetto trace (docs/perfetto.md): a pipeline consumer that
 * writes each call as it is decoded and the cycles, phases, graph roles and
 * flagged syncs at the end, so its memory does not grow with the recording.
 */
#ifndef __PERFETTO_VIEW_H
#define __PERFETTO_VIEW_H

#include "pipeline.h"

#define PERFETTO_TICK_NS 1000000000ull	/* counter windows: one second of trace time */

struct perfetto_out;

/* Write to fd (left open) the trace of what p decodes; p must analyse. NULL: no memory. */
struct perfetto_out *perfetto__new(int fd, const struct pipeline *p);
/* The consumer to pipeline__add; its ctx is o. */
void perfetto__consumer(struct perfetto_out *o, struct pipeline_consumer *c);
/* Flush what is left; 0 or -errno. */
int perfetto__close(struct perfetto_out *o);
__u64 perfetto__bytes(const struct perfetto_out *o);
void perfetto__free(struct perfetto_out *o);

#endif /* __PERFETTO_VIEW_H */
