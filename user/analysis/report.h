/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * specprobe report: records in (from a file or live, the same way), then the
 * model and its analyses, then text for a person or JSON (docs/report-json.md).
 */
#ifndef __REPORT_H
#define __REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include "cycles.h"
#include "model.h"
#include "tracefile.h"

#define REPORT_JSON_VERSION 1

struct reporter;

struct report_opts {
	bool json;
	bool all_cycles;	/* text: every cycle in the cycle table */
};

/* A reporter for records of a trace described by hdr. NULL on no memory. */
struct reporter *reporter__new(const struct tf_header *hdr);
/* Any record, in the order the ring buffer (or the file) gave it; 0 or -errno. */
int reporter__feed(struct reporter *r, const void *rec, size_t size);
/* End of input: the last calls, the analyses; 0 or -errno. */
int reporter__finish(struct reporter *r);
/* After finish; 0, or -EIO when the output could not be written. */
int reporter__print(struct reporter *r, FILE *out, const struct report_opts *opts);
void reporter__free(struct reporter *r);
/* After finish: the model and the cycles the outputs are made of (specprobe diff). */
struct model *reporter__model(struct reporter *r);
const struct cycles *reporter__cycles(const struct reporter *r);

/* What the outputs show of a set of cycles. */
struct phase_mean {
	double span_ns, blocked_ns, launches, syncs;
};

#define REPORT_MAX_ACCEPT_KINDS 8

struct cycle_summary {
	size_t cycles;
	double cycles_per_s;
	double mean_ns;
	__u64 p50_ns, p90_ns, p99_ns, min_ns, max_ns;
	struct phase_mean phase[PHASE_NR];
	struct phase_mean total;
	size_t draft_joined;		/* cycles with no sync between draft and verify */
	size_t extend_joined;		/* cycles with no sync between extend and next draft */
	size_t extend_joinable;		/* cycles followed by another iteration */
	size_t deferred;		/* cycles whose accept sync came in a later iteration */
	size_t no_accept_sync;
	size_t verify_pieces;
	/* loops where nothing seen told the lead's role: read as draft, as extend */
	size_t lead_shape_draft, lead_shape_extend;
	__u16 accept_call[REPORT_MAX_ACCEPT_KINDS];
	size_t accept_count[REPORT_MAX_ACCEPT_KINDS];
	int nr_accept_kinds;
	double accept_wait_ns;		/* mean time blocked in the accept sync */
};

/* Summary over loops[0..nr); 0 or -ENOMEM. */
int report__summarise(const struct loop *loops, size_t nr, struct cycle_summary *s);

void report__text(FILE *out, struct model *m, const struct cycles *cy,
		  const struct report_opts *opts);
void report__json(FILE *out, struct model *m, const struct cycles *cy);

#endif /* __REPORT_H */
