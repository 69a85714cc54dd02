// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Stream capture and graphs. A graph is the ordered list of nodes recorded
 * while its capture was active, from the origin stream and from every stream
 * that joined through an event; an exec is a snapshot of it that replays as one
 * work item.
 */
#include <stdlib.h>
#include <string.h>
#include "sim.h"

struct specsim_graph *sim_graph_new(void)
{
	struct specsim_graph *g = calloc(1, sizeof(*g));

	if (g)
		g->magic = SIM_MAGIC_GRAPH;
	return g;
}

int sim_graph_append(struct specsim_graph *g, const struct sim_node *nodes, size_t n)
{
	if (g->nr_nodes + n > g->cap_nodes) {
		size_t cap = g->cap_nodes ? g->cap_nodes : 16;
		struct sim_node *grown;

		while (cap < g->nr_nodes + n)
			cap *= 2;
		grown = realloc(g->nodes, cap * sizeof(*grown));
		if (!grown)
			return CUDA_ERROR_OUT_OF_MEMORY;
		g->nodes = grown;
		g->cap_nodes = cap;
	}
	memcpy(g->nodes + g->nr_nodes, nodes, n * sizeof(*nodes));
	for (size_t i = 0; i < n; i++)
		g->nodes[g->nr_nodes + i].owns_src = false;
	g->nr_nodes += n;
	return 0;
}

int sim_capture_begin(struct specsim_stream *s, struct specsim_graph *into, int mode)
{
	struct sim_capture *cap;
	int err = 0;

	if (s->legacy)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return CUDA_ERROR_OUT_OF_MEMORY;
	cap->graph = into ? into : sim_graph_new();
	if (!cap->graph) {
		free(cap);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	cap->origin = s;
	cap->mode = mode;
	pthread_mutex_lock(&sim_dev.lock);
	if (s->cap) {
		err = CUDA_ERROR_ILLEGAL_STATE;
	} else {
		cap->id = ++sim_dev.next_capture_id;
		s->cap = cap;
	}
	pthread_mutex_unlock(&sim_dev.lock);
	if (err) {
		if (!into)
			free(cap->graph);
		free(cap);
	}
	return err;
}

/* Ends the capture begun on s: every joined stream leaves it. */
int sim_capture_end(struct specsim_stream *s, struct specsim_graph **out)
{
	struct sim_capture *cap;
	int err = 0;

	*out = NULL;
	pthread_mutex_lock(&sim_dev.lock);
	cap = s->cap;
	if (!cap) {
		err = CUDA_ERROR_ILLEGAL_STATE;
	} else if (cap->origin != s) {
		err = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	} else {
		for (struct specsim_stream *t = sim_dev.streams; t; t = t->next)
			if (t->cap == cap)
				t->cap = NULL;
		/* the capture record stays: events recorded in it still point here */
		cap->ended = true;
		if (cap->invalid)
			err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		else
			*out = cap->graph;
	}
	pthread_mutex_unlock(&sim_dev.lock);
	return err;
}

void sim_capture_invalidate_locked(struct sim_capture *cap)
{
	if (cap)
		cap->invalid = true;
}

bool sim_any_capture_locked(struct specsim_ctx *ctx)
{
	for (struct specsim_stream *t = sim_dev.streams; t; t = t->next)
		if (t->cap && !t->cap->ended && (!ctx || !t->ctx || t->ctx == ctx))
			return true;
	return false;
}

static struct sim_node *copy_nodes(const struct specsim_graph *g)
{
	struct sim_node *nodes = malloc((g->nr_nodes ? g->nr_nodes : 1) * sizeof(*nodes));

	if (nodes && g->nr_nodes)
		memcpy(nodes, g->nodes, g->nr_nodes * sizeof(*nodes));
	return nodes;
}

int sim_instantiate(CUgraphExec *out, struct specsim_graph *g)
{
	struct specsim_exec *x;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = NULL;
	if (!g || g->magic != SIM_MAGIC_GRAPH)
		return CUDA_ERROR_INVALID_HANDLE;
	x = calloc(1, sizeof(*x));
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&sim_dev.lock);
	x->nodes = copy_nodes(g);
	x->nr_nodes = g->nr_nodes;
	pthread_mutex_unlock(&sim_dev.lock);
	if (!x->nodes) {
		free(x);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	x->magic = SIM_MAGIC_EXEC;
	x->refs = 1;
	x->graph_id = __atomic_add_fetch(&sim_dev.next_graph_id, 1, __ATOMIC_RELAXED);
	x->graph_traced = __atomic_load_n(&sim_dev.observe_kinds, __ATOMIC_ACQUIRE) &
			  SPECSIM_ACT_GRAPH;
	*out = x;
	return 0;
}

static bool same_topology(const struct specsim_exec *x, const struct specsim_graph *g)
{
	if (x->nr_nodes != g->nr_nodes)
		return false;
	for (size_t i = 0; i < g->nr_nodes; i++)
		if (x->nodes[i].kind != g->nodes[i].kind)
			return false;
	return true;
}

/* Returns a CU_GRAPH_EXEC_UPDATE_* value. */
int sim_exec_update(struct specsim_exec *x, struct specsim_graph *g)
{
	struct sim_node *nodes;
	int result = CU_GRAPH_EXEC_UPDATE_SUCCESS;

	pthread_mutex_lock(&sim_dev.lock);
	if (!same_topology(x, g)) {
		result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
	} else if ((nodes = copy_nodes(g))) {
		/* a replay in flight keeps its snapshot: the old array is dropped only when idle */
		if (x->refs == 1)
			free(x->nodes);
		x->nodes = nodes;
	} else {
		result = 1;
	}
	pthread_mutex_unlock(&sim_dev.lock);
	return result;
}
