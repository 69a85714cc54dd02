// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdbool.h>
#include <stdlib.h>
#include "decode.h"
#include "reporter.h"

/* Cross-CPU arrival order in the ring differs from entry order by less than this (as dump). */
#define REORDER_NS 50000000ull

struct reporter {
	struct decoder *dec;
	struct model *model;
	struct results results;
	bool finished;
};

static int on_call(void *ctx, const struct sp_call *call)
{
	return model__call(ctx, call);
}

struct reporter *reporter__new(const struct tf_header *hdr)
{
	struct reporter *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->model = model__new(hdr);
	r->dec = r->model ? decoder__new(on_call, r->model, REORDER_NS) : NULL;
	if (!r->dec) {
		reporter__free(r);
		return NULL;
	}
	return r;
}

int reporter__feed(struct reporter *r, const void *rec, size_t size)
{
	/* the model hears of forks and exits as they come; calls wait for the decoder */
	model__record(r->model, rec, size);
	return decoder__feed(r->dec, rec, size);
}

int reporter__finish(struct reporter *r)
{
	int ret = decoder__finish(r->dec);

	model__finish(r->model, decoder__stats(r->dec));
	if (!ret)
		ret = results__compute(&r->results, r->model);
	r->finished = !ret;
	return ret;
}

const struct results *reporter__results(const struct reporter *r)
{
	return r->finished ? &r->results : NULL;
}

void reporter__free(struct reporter *r)
{
	if (!r)
		return;
	results__free(&r->results);
	decoder__free(r->dec);
	model__free(r->model);
	free(r);
}
