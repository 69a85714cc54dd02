/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --metrics ADDR for record and top: a Prometheus endpoint serving top's
 * totals (views/metrics_text.c) from a thread (util/httpserve.c), refreshed
 * from the tracer's loop.
 */
#ifndef __METRICS_CLI_H
#define __METRICS_CLI_H

#include <argp.h>
#include <stdbool.h>
#include "pipeline.h"
#include "recorder.h"
#include "top_state.h"

struct metrics_args {
	const char *listen;	/* NULL: no endpoint */
	double linger_s;	/* after the trace ends, keep serving its last figures */
};

/* argp child for --metrics and --metrics-linger; its input is a struct metrics_args. */
extern const struct argp metrics_argp;

struct metrics_run;

/*
 * Listen as args ask, before anything is traced; *out NULL when not asked.
 * 0, or 1 with the reason logged in one line (a port in use, say).
 */
int metrics_run__open(const struct metrics_args *args, struct metrics_run **out);
/* New figures for the endpoint, at most every half second unless forced. NULL m: none. */
void metrics_run__update(struct metrics_run *m, struct top_state *t, const struct pipeline *p,
			 double window_s, bool force);
/*
 * The trace has ended: its last figures, served --metrics-linger seconds
 * more, then closed. t and p NULL (nothing traced, or the figures failed):
 * closed at once, the last document unchanged until then.
 */
void metrics_run__close(struct metrics_run *m, struct top_state *t, const struct pipeline *p,
			double window_s);

/* record --metrics: a windowed pipeline and top's state behind the recorder's tap. */
struct metrics_live {
	struct metrics_run *run;
	struct pipeline *p;
	struct top_state *state;
	int err;
};

void metrics_live__tap(struct metrics_live *ml, struct record_tap *tap);
/* After the recording: the last cycles settle, are served, and everything is freed. */
void metrics_live__finish(struct metrics_live *ml);

#endif /* __METRICS_CLI_H */
