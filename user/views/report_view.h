/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The report of one recording: text for a person, or JSON (docs/report-json.md). */
#ifndef __REPORT_VIEW_H
#define __REPORT_VIEW_H

#include <stdbool.h>
#include <stdio.h>
#include "decode.h"
#include "results.h"

#define REPORT_JSON_VERSION 2

struct report_opts {
	bool json;
	bool all_cycles;	/* text: every cycle in the cycle table */
	const struct decode_stats *input;	/* how the input read; NULL: not told */
};

/* The first five lines: rates, cycle p50, the phase split, the flagged sync to fix first. */
void report__head(FILE *out, const struct results *res);
/* A call site's label cut to at most max bytes by its start (then shown after "..."). */
const char *report__label_tail(const char *label, size_t max);
void report__text(FILE *out, const struct results *res, const struct report_opts *opts);
void report__json(FILE *out, const struct results *res, const struct decode_stats *input);
/* --gpu: an agent's status as the JSON names it ("on", "no-cupti", ...). */
const char *report__gpu_status_name(__u32 status);
/* --sample: the windows' figures (sample.h) with the cycles the analyses counted. */
void report__sample_figures(const struct results *res, struct sample_figures *f);
/* The head's line under the first five; nothing when not sampled. */
void report__sample_line(FILE *out, const struct results *res);
void report__sample_section(FILE *out, const struct results *res);
/* ,"sampling":{...} or ,"sampling":null */
void report__sample_json(FILE *out, const struct results *res);
/* The one the options ask for; 0, or -EIO when the output could not be written. */
int report__print(FILE *out, const struct results *res, const struct report_opts *opts);

#endif /* __REPORT_VIEW_H */
