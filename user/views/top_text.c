// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top --batch: one block of text per interval, for logs and tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "catalog.h"
#include "model.h"
#include "top_table.h"
#include "top_view.h"

static const char *const sort_names[TOP_SORT_NR] = { "rank", "cycles/s", "p99" };

const char *top__sort_name(enum top_sort sort)
{
	return sort < TOP_SORT_NR ? sort_names[sort] : "?";
}

void top__cost_line(char *buf, size_t size, double overhead_pct)
{
	if (overhead_pct >= 0)
		snprintf(buf, size, "probes cost %.2f %% of the traced processes' CPU time",
			 overhead_pct);
	else
		snprintf(buf, size,
			 "probes cost not known yet (the CPU time is sampled each second)");
}

/* A line cut to width: the figures' lines are short, a long pid list may not be. */
static void print_cut(FILE *out, const char *line, int width)
{
	char cut[256];

	tt__cut(cut, sizeof(cut), line, width);
	fprintf(out, "%s\n", cut);
}

/* The batch tables: the same columns as ever when no width is known. */
static const struct tt_col loop_cols[] = {
	{ "rank", 4, 100 },	  { "pid", 7, 80 },	  { "tid", 7, 30 },
	{ "cycles/s", 9, 95 },	  { "tok/s", 6, 10 },	  { "p50_ms", 7, 20 },
	{ "p99_ms", 7, 70 },	  { "total", 7, 60 },	  { "draft", 6, 45 },
	{ "verify", 6, 44 },	  { "accept", 6, 46 },	  { "extend", 6, 43 },
	{ "blocked", 7, 90 },	{ "acc", 5, 12 },
	/* --gpu only, last: without GPU figures the table is as it always was */
	{ "gpu_draft_ms", 12, 56 }, { "gpu_verify_ms", 13, 58 }, { "gpu_idle", 8, 57 },
};

#define LOOP_GPU_COLS 3
#define LOOP_GPU_COL 14

static const struct tt_col site_cols[] = {
	{ "rank", 4, 100 },		{ "pid", 7, 50 },	   { "call", 24, 98, true },
	{ "position", 13, 96, true }, { "kind", 13, 40, true }, { "count/s", 8, 80 },
	{ "blk_ms/cyc", 10, 90 },	{ "total", 7, 70 },
};

static const struct tt_col hung_cols[] = {
	{ "rank", 4, 100 }, { "pid", 7, 60 }, { "tid", 7, 40 }, { "call", 24, 95, true },
	{ "age_s", 8, 90 },
};

static const struct tt_col call_cols[] = {
	{ "", 28, 100, true },
	{ "", 12, 90 },
};

#define NR(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define LOOP_ACC_COL 13

/* --server-metrics: the server's tokens/s and accept length; "-" without them. */
static void set_server(struct top_table *t, int row, const struct top_frame *f)
{
	if (f->server && f->server_tok_s >= 0)
		tt__set(t, row, 4, 0, "%.1f", f->server_tok_s);
	else
		tt__set(t, row, 4, 0, "-");
	if (f->server && f->server_accept > 0)
		tt__set(t, row, LOOP_ACC_COL, 0, "%.2f", f->server_accept);
	else
		tt__set(t, row, LOOP_ACC_COL, 0, "-");
}

static void set_rank(struct top_table *t, int row, int rank)
{
	if (rank >= 0)
		tt__set(t, row, 0, 0, "%d", rank);
	else
		tt__set(t, row, 0, 0, "-");
}

static void print_table(FILE *out, struct top_table *t, int width, bool header)
{
	char line[TT_MAX_COLS * (TT_CELL + 1) + 8];

	tt__fit(t, width);
	if (header) {
		tt__line(t, -1, line, sizeof(line));
		fprintf(out, "%s\n", line);
	}
	for (int r = 0; r < t->nr_rows; r++) {
		tt__line(t, r, line, sizeof(line));
		fprintf(out, "%s\n", line);
	}
}

/* The window's GPU means of a loop row; "-" where none of its cycles had GPU figures. */
static void set_gpu(struct top_table *t, int row, const struct top_loop_row *r)
{
	if (!r->gpu_cycles) {
		for (int c = 0; c < LOOP_GPU_COLS; c++)
			tt__set(t, row, LOOP_GPU_COL + c, 0, "-");
		return;
	}
	tt__set(t, row, LOOP_GPU_COL, 0, "%.3f", r->gpu_draft_ns / 1e6);
	tt__set(t, row, LOOP_GPU_COL + 1, 0, "%.3f", r->gpu_verify_ns / 1e6);
	tt__set(t, row, LOOP_GPU_COL + 2, 0, "%.0f%%", 100 * r->gpu_idle_share);
}

static void print_loops(FILE *out, struct top_table *t, const struct top_frame *f, int width)
{
	tt__init(t, loop_cols, NR(loop_cols) - (f->gpu ? 0 : LOOP_GPU_COLS), 2);
	for (size_t i = 0; i < f->nr_loops; i++) {
		const struct top_loop_row *r = &f->loops[i];
		int row = tt__add_row(t);

		set_rank(t, row, r->rank);
		tt__set(t, row, 1, 0, "%u", r->tgid);
		tt__set(t, row, 2, 0, "%u", r->tid);
		set_server(t, row, f);
		if (r->idle) {
			tt__set(t, row, 3, 0, "idle");
			tt__set(t, row, 5, 0, "-");
			tt__set(t, row, 6, 0, "-");
		} else {
			tt__set(t, row, 3, 0, "%.1f", r->cycles_per_s);
			tt__set(t, row, 5, 0, "%.3f", r->p50_ns / 1e6);
			tt__set(t, row, 6, 0, "%.3f", r->p99_ns / 1e6);
		}
		tt__set(t, row, 7, 0, "%llu", (unsigned long long)r->total);
		for (int p = PHASE_DRAFT; p <= PHASE_EXTEND; p++)
			tt__set(t, row, 8 + p, 0, "%.0f%%", 100 * r->share[p]);
		tt__set(t, row, 12, 0, "%.0f%%", 100 * r->share[PHASE_NR]);
		if (f->gpu)
			set_gpu(t, row, r);
	}
	fprintf(out, "LOOPS\n");
	print_table(out, t, width, true);
}

static void print_sites(FILE *out, struct top_table *t, const struct top_frame *f, int width)
{
	char line[TT_MAX_COLS * (TT_CELL + 1) + 8];

	tt__init(t, site_cols, NR(site_cols), 2);
	for (size_t i = 0; i < f->nr_sites; i++) {
		const struct top_site_row *s = &f->sites[i];
		int row = tt__add_row(t);

		set_rank(t, row, s->rank);
		tt__set(t, row, 1, 0, "%u", s->tgid);
		tt__set(t, row, 2, 0, "%s", model__call_name(s->name));
		tt__set(t, row, 3, 0, "%s", syncs__pos_name(s->pos));
		tt__set(t, row, 4, 0, "%s", model__sync_kind_name(s->kind));
		tt__set(t, row, 5, 0, "%.1f", s->per_s);
		tt__set(t, row, 6, 0, "%.3f", s->blocked_ms_per_cycle);
		tt__set(t, row, 7, 0, "%llu", (unsigned long long)s->total);
	}
	fprintf(out, "SYNCS flagged\n");
	tt__fit(t, width);
	tt__line(t, -1, line, sizeof(line));
	fprintf(out, "%s\n", line);
	for (int r = 0; r < t->nr_rows; r++) {
		char at[TT_CELL + 16];

		tt__line(t, r, line, sizeof(line));
		fprintf(out, "%s\n", line);
		if (!f->sites[r].where)
			continue;
		/* the commonest call site, on a line of its own under the row */
		snprintf(line, sizeof(line), "       at %.90s", f->sites[r].where);
		tt__cut(at, sizeof(at), line, width);
		fprintf(out, "%s\n", at);
	}
	if (f->sites_lost) {
		snprintf(line, sizeof(line), "  (%llu more flagged syncs at other sites)",
			 (unsigned long long)f->sites_lost);
		print_cut(out, line, width);
	}
}

static void print_hung(FILE *out, struct top_table *t, const struct top_frame *f,
		       const struct top_opts *o, int width)
{
	tt__init(t, hung_cols, NR(hung_cols), 2);
	for (size_t i = 0; i < f->nr_hung; i++) {
		const struct top_hung_row *h = &f->hung[i];
		int row = tt__add_row(t);

		set_rank(t, row, h->rank);
		tt__set(t, row, 1, 0, "%u", h->tgid);
		tt__set(t, row, 2, 0, "%u", h->tid);
		tt__set(t, row, 3, 0, "%s", model__call_name(h->name));
		tt__set(t, row, 4, 0, "%.1f", h->age_ns / 1e9);
	}
	fprintf(out, "HUNG open>%.1fs\n", o->hung_ns / 1e9);
	print_table(out, t, width, true);
}

static void print_calls(FILE *out, struct top_table *t, const struct top_frame *f, int width)
{
	tt__init(t, call_cols, NR(call_cols), 2);
	for (size_t i = 0; i < f->nr_calls; i++) {
		int row = tt__add_row(t);

		tt__set(t, row, 0, 0, "%s", model__call_name(f->calls_top[i].name));
		tt__set(t, row, 1, 0, "%.1f/s", f->calls_top[i].per_s);
	}
	fprintf(out, "CALLS\n");
	print_table(out, t, width, false);
}

static void print_head(FILE *out, const struct top_frame *f, const struct top_title *title,
		       int width)
{
	const struct top_opts *o = title->opts;
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), "== specprobe top %s t=%.1fs window=%.0fs sort=%s",
		     title->mode, f->elapsed_s, f->window_s, top__sort_name(o->sort));
	if (o->focus_rank >= 0 && n > 0 && n < (int)sizeof(line))
		snprintf(line + n, sizeof(line) - n, " rank=%d", o->focus_rank);
	print_cut(out, line, width);
	snprintf(line, sizeof(line), "tracer: %d probes, %.0f records/s, %llu records, %llu drops",
		 f->probes, f->records_per_s, (unsigned long long)f->records,
		 (unsigned long long)f->drops);
	print_cut(out, line, width);
	top__cost_line(line, sizeof(line), f->overhead_pct);
	print_cut(out, line, width);
}

int top__print(FILE *out, const struct top_frame *f, const struct top_title *title)
{
	int width = title->width > 0 ? title->width : -1;
	struct top_table *t = malloc(sizeof(*t));

	if (!t)
		return -ENOMEM;
	print_head(out, f, title, width);
	print_loops(out, t, f, width);
	print_sites(out, t, f, width);
	print_hung(out, t, f, title->opts, width);
	print_calls(out, t, f, width);
	free(t);
	fprintf(out, "\n");
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
