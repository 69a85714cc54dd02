// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A graph's launch told from its nodes' records (graphnodes.h). */
#include <string.h>
#include "graphnodes.h"

static void hand_over(struct graph_nodes *g, int i, graph_nodes_emit_fn emit, void *ctx)
{
	emit(ctx, &g->open[i]);
	g->open[i].kind = 0;
	g->quiet[i] = 0;
}

/* The launches on rec's stream that came before it: whole now. */
static void end_earlier(struct graph_nodes *g, const struct sp_gpu_rec *rec,
			graph_nodes_emit_fn emit, void *ctx)
{
	for (int i = 0; i < GRAPH_NODES_OPEN; i++)
		if (g->open[i].kind && g->open[i].stream == rec->stream &&
		    g->open[i].device == rec->device && g->open[i].correlation != rec->correlation)
			hand_over(g, i, emit, ctx);
}

static int slot_for(struct graph_nodes *g, const struct sp_gpu_rec *rec,
		    graph_nodes_emit_fn emit, void *ctx)
{
	int free_slot = -1, oldest = 0;

	for (int i = 0; i < GRAPH_NODES_OPEN; i++) {
		const struct sp_gpu_rec *o = &g->open[i];

		if (o->kind && o->correlation == rec->correlation && o->graph == rec->graph &&
		    o->device == rec->device)
			return i;
		if (!o->kind && free_slot < 0)
			free_slot = i;
		if (o->kind && o->start < g->open[oldest].start)
			oldest = i;
	}
	if (free_slot >= 0)
		return free_slot;
	hand_over(g, oldest, emit, ctx);
	return oldest;
}

bool graph_nodes__add(struct graph_nodes *g, const struct sp_gpu_rec *rec,
		      graph_nodes_emit_fn emit, void *ctx)
{
	struct sp_gpu_rec *exec;
	int i;

	end_earlier(g, rec, emit, ctx);
	if (!rec->graph)
		return false;
	i = slot_for(g, rec, emit, ctx);
	exec = &g->open[i];
	g->quiet[i] = 0;
	if (exec->kind) {
		if (rec->start < exec->start)
			exec->start = rec->start;
		if (rec->end > exec->end)
			exec->end = rec->end;
		return true;
	}
	*exec = *rec;
	exec->kind = SP_GPU_GRAPH;
	exec->bytes = 0;
	exec->name = 0;
	exec->copy_kind = 0;
	return true;
}

__u64 graph_nodes__tick(struct graph_nodes *g, graph_nodes_emit_fn emit, void *ctx)
{
	__u64 earliest = ~0ull;

	for (int i = 0; i < GRAPH_NODES_OPEN; i++) {
		if (!g->open[i].kind)
			continue;
		if (++g->quiet[i] >= GRAPH_NODES_AGE)
			hand_over(g, i, emit, ctx);
		else if (g->open[i].start < earliest)
			earliest = g->open[i].start;
	}
	return earliest;
}

void graph_nodes__drain(struct graph_nodes *g, graph_nodes_emit_fn emit, void *ctx)
{
	for (int i = 0; i < GRAPH_NODES_OPEN; i++)
		if (g->open[i].kind)
			hand_over(g, i, emit, ctx);
}
