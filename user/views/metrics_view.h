/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The Prometheus text exposition (format 0.0.4) of top's totals: what
 * `--metrics` serves. docs/metrics.md lists every metric.
 */
#ifndef __METRICS_VIEW_H
#define __METRICS_VIEW_H

#include <stdbool.h>
#include <stdio.h>
#include "top_state.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_input {
	const struct top_totals *totals;	/* NULL: before the trace started */
	double tracer_cpu_s;	/* user + system CPU of specprobe itself */
	bool tracing;		/* false once the trace has ended */
	const char *version;
};

/* 0 or -EIO. */
int metrics__render(FILE *out, const struct metrics_input *in);

#endif /* __METRICS_VIEW_H */
