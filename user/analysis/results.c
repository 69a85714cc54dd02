// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The analyses of a finished model, in the order they depend on each other. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "results.h"

static int summarise_loops(struct results *r)
{
	const struct cycles *cy = &r->cycles;
	int ret;

	ret = cycle_summary__compute(cy->loops, cy->nr_loops, &r->overall);
	if (ret || !cy->nr_loops)
		return ret;
	r->per_loop = calloc(cy->nr_loops, sizeof(*r->per_loop));
	if (!r->per_loop)
		return -ENOMEM;
	for (size_t i = 0; i < cy->nr_loops; i++) {
		ret = cycle_summary__compute(&cy->loops[i], 1, &r->per_loop[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* --gpu: each cycle's flagged syncs' GPU idle, once the syncs are judged. */
static int flagged_gpu(struct results *r)
{
	int ret = 0;

	for (size_t i = 0; i < r->syncs.nr && r->syncs.verdicts && !ret; i++) {
		const struct sync_verdict *sv = &r->syncs.verdicts[i];

		if (!sv->flagged || !sv->has_gpu_idle || sv->cycle < 0)
			continue;
		for (size_t l = 0; l < r->cycles.nr_loops; l++)
			if (r->cycles.loops[l].tgid == sv->sync->tgid &&
			    r->cycles.loops[l].tid == sv->sync->tid)
				ret = loop__add_flagged_gpu(&r->cycles.loops[l], sv->cycle,
							    sv->gpu_idle_ns);
	}
	return ret;
}

int results__compute(struct results *r, struct model *m)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->model = m;
	ret = cycles__analyse(m, &r->cycles);
	if (ret)
		return ret;
	/* a sync's place in its cycle needs the roles cycles__analyse gave the execs */
	r->syncs_err = syncs__analyse(m, &r->cycles, &r->syncs);
	ret = r->syncs_err ? 0 : flagged_gpu(r);
	return ret ? ret : summarise_loops(r);
}

int results__adopt(struct results *r, struct model *m, struct cycles *cy, struct syncs *sy)
{
	memset(r, 0, sizeof(*r));
	r->model = m;
	r->cycles = *cy;
	r->syncs = *sy;
	memset(cy, 0, sizeof(*cy));
	memset(sy, 0, sizeof(*sy));
	return summarise_loops(r);
}

void results__free(struct results *r)
{
	if (!r)
		return;
	free(r->per_loop);
	syncs__free(&r->syncs);
	cycles__free(&r->cycles);
	memset(r, 0, sizeof(*r));
}
