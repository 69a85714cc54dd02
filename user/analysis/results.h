/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Everything the outputs show of one recording, computed once in one order:
 * cycles (which also give execs their roles in the model), then syncs (which
 * read those roles), then the summaries. Renderers only read it.
 */
#ifndef __RESULTS_H
#define __RESULTS_H

#include <stddef.h>
#include "cycles.h"
#include "model.h"
#include "summary.h"
#include "srvmetrics.h"
#include "syncs.h"

struct results {
	struct model *model;		/* borrowed: finished, owned by whoever made it */
	struct cycles cycles;
	struct syncs syncs;
	int syncs_err;			/* 0, or why syncs is empty (-ENOMEM) */
	struct cycle_summary overall;	/* all loops */
	struct cycle_summary *per_loop;	/* one per cycles.loops */
	/* --server-metrics: the server's figures over the cycles; NULL when no sample came */
	const struct srv_figures *server;
};

/* Analyse a finished model; 0 or -ENOMEM (then results__free still works). */
int results__compute(struct results *r, struct model *m);
/* Results made elsewhere (wholerun.h): cy and sy taken over, the summaries made; 0 or -errno. */
int results__adopt(struct results *r, struct model *m, struct cycles *cy, struct syncs *sy);
void results__free(struct results *r);

#endif /* __RESULTS_H */
