/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * specprobe diff: two recordings side by side, the change in cycle time with a
 * bootstrap interval and a verdict, and what differs in their setup
 * (docs/diff-json.md).
 */
#ifndef __DIFF_H
#define __DIFF_H

#include <stdbool.h>
#include "stats.h"
#include "cycles.h"
#include "model.h"
#include "srvmetrics.h"
#include "summary.h"
#include "syncs.h"

#define DIFF_MAX_COUNTS 8	/* distinct kernel counts shown per role */
#define DIFF_MAX_RUNS 16	/* recordings per side */

/* One recording, analysed. */
struct diff_input {
	const char *path;
	struct model *model;
	const struct cycles *cycles;
	const struct srv_figures *server;	/* --server-metrics; NULL: none */
	const struct syncs *syncs;		/* NULL: not classified */
};

/* What can be seen of a recording's setup. */
struct diff_role {
	size_t execs, launched;
	__u32 kernels[DIFF_MAX_COUNTS];	/* distinct captured kernel counts, ascending */
	int nr_kernels;
	bool more_kernels;		/* more distinct counts than kept */
	size_t uncaptured;		/* launched graphs whose capture was not traced */
	__u32 collectives;		/* most collectives captured into one graph */
};

struct diff_setup {
	size_t processes, loops;
	int ranks;			/* nranks from the communicators, -1 unknown */
	struct diff_role role[ROLE_NR];
};

/* Medians (spans, blocked) and means of one phase over the cycles of a recording. */
struct diff_phase {
	double span_p50, blocked_p50, blocked_mean, launches, syncs;
};

struct diff_side {
	struct cycle_summary sum;
	struct diff_phase phase[PHASE_NR + 1];	/* the phases, then the whole cycle */
	struct diff_setup setup;
	const struct srv_figures *server;	/* of in[]: NULL unless it has figures */
};

/* A comparison of cycle times: overall, or of one loop of A with one loop of B. */
struct diff_times {
	struct cycle_summary a, b;
	struct boot_change change;
	enum change_verdict verdict;
	bool compared;			/* both have cycles: change and verdict are valid */
};

struct diff_pair {
	const struct loop *a, *b;	/* NULL: only in the other recording */
	struct diff_times times;
};

/* All recordings of one side: the first is A (or B) itself, the others its replicates. */
struct diff_runs {
	const struct diff_input *in;
	size_t nr;
	double p50[DIFF_MAX_RUNS];	/* each recording's cycle time p50, all its loops */
	size_t cycles[DIFF_MAX_RUNS];
	struct loop *pooled;		/* the loops of all of them, for the overall change */
	size_t nr_pooled;
};

/* The rows one verdict is made of (docs/diff-json.md, "One verdict"). */
enum diff_row { DIFF_ROW_P50, DIFF_ROW_MEAN, DIFF_ROW_CYCLES, DIFF_ROW_TOKENS, DIFF_ROW_NR };

struct diff_row_verdict {
	bool known;
	double change_rel;		/* (B - A) / A */
	int better;			/* +1: B better (less time, more per second), -1 worse */
	enum change_verdict verdict;
	bool interval;			/* told by a bootstrap interval, else by the floor alone */
};

struct diff_verdict {
	struct diff_row_verdict row[DIFF_ROW_NR];
	enum change_verdict verdict;	/* of all the rows */
	int better;			/* +1, -1; 0: no change, or rows that disagree */
	bool mixed;			/* significant rows that disagree */
	enum diff_row by;		/* the significant row that tells: tokens/s first */
	double floor_rel;		/* the noise floor over A's p50 */
};

/* Flagged syncs of one call site (by its label) in A and in B, per counted cycle. */
struct diff_site {
	const char *label;		/* borrowed from a recording's call stacks */
	size_t count[2];
	double blocked_ns[2];		/* per cycle */
	double gpu_idle_ns[2];		/* GPU idle caused, per cycle; < 0: not known */
};

struct diff {
	const struct diff_input *in[2];	/* the first recording of each side */
	struct diff_runs runs[2];
	double between_runs;		/* bootstrap__run_spread, the larger side (runs[].nr > 1) */
	struct diff_side side[2];	/* of in[]: phases, setup */
	struct diff_times overall;
	struct diff_pair *pairs;
	size_t nr_pairs;
	bool by_rank;			/* loops were paired by rank, else by position */
	struct diff_verdict verdict;	/* of every row: cycle time, cycles/s, tokens/s */
	struct diff_site *sites;	/* costliest in either first */
	size_t nr_sites;
	bool sites_known;		/* both A and B had their syncs classified */
};

/* Analyse A against B; 0, -ENODATA (a recording has no cycles: in[] says which) or -ENOMEM. */
int diff__compute(struct diff *d, const struct diff_input *a, const struct diff_input *b);
/* The same with nr[s] recordings of one setting per side (1 to DIFF_MAX_RUNS), or -EINVAL. */
int diff__compute_runs(struct diff *d, const struct diff_input *const in[2], const size_t nr[2]);
void diff__free(struct diff *d);
/* diff_verdict.c: one verdict of every row, and the flagged syncs by call site; 0 or -ENOMEM. */
void diff__verdict(struct diff *d);
int diff__sites(struct diff *d);
const char *diff__row_name(enum diff_row row);
/* Both A and B have the server's own figures (--server-metrics): tokens/s and more compare. */
bool diff__server(const struct diff *d);
/* Both A and B have cycles with GPU figures (--gpu): their sums' GPU means compare. */
bool diff__gpu(const struct diff *d);

#endif /* __DIFF_H */
