/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A graph's launch told from its nodes. CUPTI's graph-level records cannot be
 * turned on in a process whose graphs were instantiated before: libcupti 13
 * crashes it at that graph's next launch (docs/gpu-timeline.md). Kernel-level
 * records can, and CUPTI gives each node of a launch the graph's id and the
 * launch's correlation id: the agent folds them into one graph execution.
 */
#ifndef __GRAPHNODES_H
#define __GRAPHNODES_H

#include <stdbool.h>
#include <linux/types.h>
#include "specprobe.h"

#define GRAPH_NODES_OPEN 32	/* launches being folded at once */
#define GRAPH_NODES_AGE 2	/* flushes a launch may go on without a node */

struct graph_nodes {
	struct sp_gpu_rec open[GRAPH_NODES_OPEN];	/* kind 0: a free slot */
	__u8 quiet[GRAPH_NODES_OPEN];	/* flushes since its last node */
};

typedef void (*graph_nodes_emit_fn)(void *ctx, const struct sp_gpu_rec *exec);

/*
 * rec, a kernel, copy or memset record: true when it was a graph's node and
 * was folded in. Any record ends the launches on its stream of another
 * correlation: a stream runs one launch after another.
 */
bool graph_nodes__add(struct graph_nodes *g, const struct sp_gpu_rec *rec,
		      graph_nodes_emit_fn emit, void *ctx);
/*
 * After a flush: launches with no node for GRAPH_NODES_AGE flushes are whole.
 * The earliest start of those still open, or ~0 when none is.
 */
__u64 graph_nodes__tick(struct graph_nodes *g, graph_nodes_emit_fn emit, void *ctx);
/* Every launch held, as it stands (the kinds were turned off). */
void graph_nodes__drain(struct graph_nodes *g, graph_nodes_emit_fn emit, void *ctx);

#endif /* __GRAPHNODES_H */
