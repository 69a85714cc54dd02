/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A decoder sink that keeps the calls it is handed, in order. */
#ifndef __COLLECT_CALLS_H
#define __COLLECT_CALLS_H

#include "decode.h"

#define MAX_OUT 64

struct collected {
	struct sp_call calls[MAX_OUT];
	int n;
};

static inline int collect(void *ctx, const struct sp_call *call)
{
	struct collected *c = ctx;

	assert_true(c->n < MAX_OUT);
	c->calls[c->n++] = *call;
	return 0;
}

#endif /* __COLLECT_CALLS_H */
