// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top --batch: one block of text per interval, for logs and tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static bool fits(const char *text, int width)
{
	return width < 0 || (int)strlen(text) <= width;
}

const char *top__mark(const struct top_frame *f)
{
	return f->sample.on ? "~" : "";
}

/* Launch probes are the ones taken out between windows. */
const char *top__call_mark(const struct top_frame *f, __u16 name)
{
	return name < catalog_len && catalog[name].cls == SP_CLASS_LAUNCH ? top__mark(f) : "";
}

/* 250 as 250ms, 2500 as 2.5s: as --sample takes them. */
static void put_ms(char *buf, size_t size, __u32 ms)
{
	if (ms >= 1000 && ms % 100 == 0)
		snprintf(buf, size, "%gs", ms / 1000.0);
	else
		snprintf(buf, size, "%ums", ms);
}

void top__sample_line(char *buf, size_t size, const struct top_frame *f, int width)
{
	const struct sample_figures *s = &f->sample;
	char on[16], every[16];

	buf[0] = '\0';
	if (!s->on)
		return;
	put_ms(on, sizeof(on), s->on_ms);
	put_ms(every, sizeof(every), s->every_ms);
	snprintf(buf, size, "sampled %s/%s: launches seen %.0f %% of the time; ~ from %zu whole "
		 "cycles", on, every, 100 * s->seen_share, s->cycles_whole);
	if (!fits(buf, width))
		snprintf(buf, size, "sampled %s/%s: launches %.0f%% of time; ~ %zu whole cycles", on,
			 every, 100 * s->seen_share, s->cycles_whole);
}

void top__site_label(char *buf, size_t size, const char *label, int width)
{
	const char *dot = strstr(label, " \xc2\xb7 ");	/* python " · " native */
	size_t len = strlen(label);
	int n;
	const char *obj = strrchr(label, '(');

	snprintf(buf, size, "%s", label);
	if (fits(buf, width))
		return;
	/* "symbol+0x48 (object)": the object goes first */
	if (len && label[len - 1] == ')' && obj > label && (size_t)(obj - label) <= size)
		buf[obj - label - 1] = '\0';
	if (dot && (size_t)(dot - label) < size)	/* "file:line (fn) · symbol": the file's line */
		buf[dot - label] = '\0';
	n = (int)strlen(buf);
	if (fits(buf, width) || width < 2)
		return;
	/* the end of a path says most: keep it */
	memmove(buf + 1, buf + n - (width - 1), width);
	buf[0] = '~';
}

/* Each phase's share: words where they fit, else the phase bar's letters. */
static void put_shares(char *buf, size_t size, const struct top_answer *a, bool letters,
		       const char *mark)
{
	static const char *const marks[] = { "d", "v", "a", "e", "other" };
	size_t len = strlen(buf);

	for (int p = 0; p < PHASE_NR && len < size; p++) {
		if (p == PHASE_OTHER && a->share[p] < 0.005)
			continue;
		len += snprintf(buf + len, size - len, " %s%s%s%.0f%%",
				letters ? marks[p] : cycles__phase_name(p), letters ? "" : " ",
				mark, 100 * a->share[p]);
	}
	if (a->gpu_idle_share >= 0 && len < size)
		snprintf(buf + len, size - len, "  GPU idle %.0f%%", 100 * a->gpu_idle_share);
}

void top__answer_line(char *buf, size_t size, const struct top_frame *f,
		      const struct top_answer *a, int width)
{
	char tok[32] = "-";
	int n;

	if (!a->loops) {
		snprintf(buf, size, "no cycle in the window");
		return;
	}
	if (f->server && f->server_tok_s >= 0)
		snprintf(tok, sizeof(tok), "%.1f", f->server_tok_s);
	n = snprintf(buf, size, "%s%.1f cycles/s  %s tok/s  p50 %s%.3f ms ", top__mark(f),
		     a->cycles_per_s, tok, top__mark(f), a->p50_ns / 1e6);
	if (n < 0 || (size_t)n >= size)
		return;
	put_shares(buf, size, a, false, top__mark(f));
	if (fits(buf, width))
		return;
	buf[n] = '\0';
	put_shares(buf, size, a, true, top__mark(f));
}

void top__sync_line(char *buf, size_t size, const struct top_answer *a, int width)
{
	const struct top_site_row *s = a->site;
	char head[160], site[TT_CELL];
	int n;

	if (!s) {
		snprintf(buf, size, "no flagged sync in the window");
		return;
	}
	/* the call and its cost first, then its site; its position only where room is left */
	n = snprintf(head, sizeof(head), "top flagged: %s %s %.1f%% of cycle",
		     model__call_name(s->name), syncs__pos_name(s->pos), 100 * a->site_share);
	top__site_label(site, sizeof(site), s->where ? s->where : "", 0);
	if (s->where && width >= 0 && n + 4 + (int)strlen(site) > width)
		n = snprintf(head, sizeof(head), "top flagged: %s %.1f%% of cycle",
			     model__call_name(s->name), 100 * a->site_share);
	if (!s->where) {
		snprintf(buf, size, "%s", head);
		return;
	}
	top__site_label(site, sizeof(site), s->where, width < 0 ? -1 : width - n - 4);
	snprintf(buf, size, "%s at %s", head, site);
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
	/* the rates stay longest; p50 is in the header when its column goes */
	{ "rank", 4, 100 },	  { "pid", 7, 80 },	  { "tid", 7, 20 },
	{ "cycles/s", 9, 95 },	  { "tok/s", 6, 92 },	  { "p50_ms", 7, 35 },
	{ "p99_ms", 7, 30 },	  { "total", 7, 25 },	  { "draft", 6, 45 },
	{ "verify", 6, 44 },	  { "accept", 6, 46 },	  { "extend", 6, 43 },
	{ "blocked", 7, 90 },	{ "acc", 5, 40 },
	/* --gpu only, last: without GPU figures the table is as it always was */
	{ "gpu_draft_ms", 12, 56 }, { "gpu_verify_ms", 13, 58 }, { "gpu_idle", 8, 57 },
};

#define LOOP_GPU_COLS 3
#define LOOP_GPU_COL 14

/* what a user acts on stays longest: the call, its site and position, its cost */
static const struct tt_col site_cols[] = {
	{ "rank", 4, 100 },	       { "pid", 7, 45 },	 { "call", 24, 98, true },
	{ "position", 13, 96, true }, { "kind", 13, 60, true }, { "count/s", 8, 55 },
	{ "blk_ms/cyc", 10, 90 },     { "total", 7, 50 },	 { "call_site", 0, 97, true, 16 },
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

/* width -2: the table is fitted already */
static void print_table(FILE *out, struct top_table *t, int width, bool header)
{
	char line[TT_MAX_COLS * (TT_CELL + 1) + 8];

	if (width != -2)
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
		const char *m = top__mark(f);
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
			tt__set(t, row, 3, 0, "%s%.1f", m, r->cycles_per_s);
			tt__set(t, row, 5, 0, "%s%.3f", m, r->p50_ns / 1e6);
			tt__set(t, row, 6, 0, "%s%.3f", m, r->p99_ns / 1e6);
		}
		tt__set(t, row, 7, 0, "%s%llu", m, (unsigned long long)r->total);
		for (int p = PHASE_DRAFT; p <= PHASE_EXTEND; p++)
			tt__set(t, row, 8 + p, 0, "%s%.0f%%", m, 100 * r->share[p]);
		tt__set(t, row, 12, 0, "%s%.0f%%", m, 100 * r->share[PHASE_NR]);
		if (f->gpu)
			set_gpu(t, row, r);
	}
	fprintf(out, "LOOPS\n");
	print_table(out, t, width, true);
}

void top__site_cols(struct tt_col *cols, const struct tt_col *from, int nr, int col,
		    const struct top_frame *f)
{
	char site[TT_CELL];
	int least = from[col].min_width;

	for (size_t i = 0; i < f->nr_sites; i++) {
		if (!f->sites[i].where)
			continue;
		top__site_label(site, sizeof(site), f->sites[i].where, 0);
		least = (int)strlen(site) > least ? (int)strlen(site) : least;
	}
	memcpy(cols, from, nr * sizeof(*cols));
	cols[col].min_width = least < TOP_SITE_MOST ? least : TOP_SITE_MOST;
}

/* The site column's labels shortened to the width it was given, once the table is fitted. */
void top__fit_sites(struct top_table *t, const struct top_frame *f, int col)
{
	char site[TT_CELL];

	for (int row = 0; row < t->nr_rows && t->shown[col]; row++) {
		if (!f->sites[row].where)
			continue;
		top__site_label(site, sizeof(site), f->sites[row].where, t->shown[col]);
		snprintf(t->cells[row][col].text, TT_CELL, "%s", site);
	}
}

static void print_sites(FILE *out, struct top_table *t, const struct top_frame *f, int width)
{
	char line[TT_MAX_COLS * (TT_CELL + 1) + 8];
	struct tt_col cols[NR(site_cols)];

	top__site_cols(cols, site_cols, NR(site_cols), 8, f);
	tt__init(t, cols, NR(cols), 2);
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
		tt__set(t, row, 8, 0, "%s", s->where ? s->where : "");
	}
	fprintf(out, "SYNCS flagged\n");
	tt__fit(t, width);
	top__fit_sites(t, f, 8);
	print_table(out, t, -2, true);
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
		tt__set(t, row, 1, 0, "%s%.1f/s", top__call_mark(f, f->calls_top[i].name),
			f->calls_top[i].per_s);
	}
	fprintf(out, "CALLS\n");
	print_table(out, t, width, false);
}

static void print_head(FILE *out, const struct top_frame *f, const struct top_title *title,
		       int width)
{
	const struct top_opts *o = title->opts;
	struct top_answer answer;
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), "== specprobe top %s t=%.1fs window=%.0fs sort=%s",
		     title->mode, f->elapsed_s, f->window_s, top__sort_name(o->sort));
	if (o->focus_rank >= 0 && n > 0 && n < (int)sizeof(line))
		snprintf(line + n, sizeof(line) - n, " rank=%d", o->focus_rank);
	print_cut(out, line, width);
	top__answer(f, &answer);
	top__answer_line(line, sizeof(line), f, &answer, width);
	print_cut(out, line, width);
	top__sync_line(line, sizeof(line), &answer, width);
	print_cut(out, line, width);
	snprintf(line, sizeof(line), "tracer: %d probes, %.0f records/s, %llu records, %llu drops",
		 f->probes, f->records_per_s, (unsigned long long)f->records,
		 (unsigned long long)f->drops);
	print_cut(out, line, width);
	top__cost_line(line, sizeof(line), f->overhead_pct);
	print_cut(out, line, width);
	top__sample_line(line, sizeof(line), f, width);
	if (line[0])
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
