// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top on the terminal: a header of meters, the loops with a phase bar, syncs, hung calls. */
#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model.h"
#include "top_table.h"
#include "top_view.h"

enum pair { PAIR_TITLE = 1, PAIR_DRAFT, PAIR_VERIFY, PAIR_ACCEPT, PAIR_EXTEND, PAIR_BLOCKED,
	    PAIR_ALERT };

struct top_screen {
	bool open, color;
};

struct top_screen *top_screen__open(char *err, size_t err_sz)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		snprintf(err, err_sz, "top needs a terminal: use --batch for logs and pipes");
		return NULL;
	}
	return top_screen__open_on(NULL, stdout, stdin, err, err_sz);
}

struct top_screen *top_screen__open_on(const char *term, FILE *out, FILE *in, char *err,
				       size_t err_sz)
{
	struct top_screen *s;

	if (!newterm(term, out, in)) {
		snprintf(err, err_sz, "cannot use the terminal '%s': use --batch",
			 term ? term : getenv("TERM") ? getenv("TERM") : "");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		endwin();
		snprintf(err, err_sz, "out of memory");
		return NULL;
	}
	s->open = true;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	/* NO_COLOR (no-color.org): any value turns colour off */
	s->color = has_colors() && !getenv("NO_COLOR");
	if (s->color) {
		start_color();
		use_default_colors();
		init_pair(PAIR_TITLE, COLOR_BLACK, COLOR_CYAN);
		init_pair(PAIR_DRAFT, COLOR_BLUE, -1);
		init_pair(PAIR_VERIFY, COLOR_GREEN, -1);
		init_pair(PAIR_ACCEPT, COLOR_YELLOW, -1);
		init_pair(PAIR_EXTEND, COLOR_MAGENTA, -1);
		init_pair(PAIR_BLOCKED, COLOR_RED, -1);
		init_pair(PAIR_ALERT, COLOR_RED, -1);
	}
	return s;
}

void top_screen__close(struct top_screen *s)
{
	if (!s)
		return;
	if (s->open)
		endwin();
	s->open = false;
	free(s);
}

int top_screen__key(struct top_screen *s, int timeout_ms)
{
	int ch;

	timeout(timeout_ms);
	ch = getch();
	return ch == ERR ? -1 : ch;
}

static void style_on(const struct top_screen *s, int pair, int extra)
{
	if (s->color && pair)
		attron(COLOR_PAIR(pair));
	attron(extra);
}

static void style_off(const struct top_screen *s, int pair, int extra)
{
	if (s->color && pair)
		attroff(COLOR_PAIR(pair));
	attroff(extra);
}

/* A piece of the tracer's line: the least needed go first when the width is short. */
struct header_part {
	char text[96];
	int prio;
	bool alert;
};

/* A line at (y, x) that never wraps: what does not fit the width is left out. */
static void put_at(int y, int x, const char *text)
{
	if (y >= 0 && y < LINES && x < COLS)
		mvaddnstr(y, x, text, COLS - x);
}

static void draw_parts(const struct top_screen *s, struct header_part *parts, int n, int y)
{
	int len = 0, x = 0;

	for (int i = 0; i < n; i++)
		len += parts[i].text[0] ? (int)strlen(parts[i].text) + 3 : 0;
	while (len > COLS) {
		int least = -1;

		for (int i = 0; i < n; i++)
			if (parts[i].text[0] && (least < 0 || parts[i].prio < parts[least].prio))
				least = i;
		if (least < 0)
			break;
		len -= (int)strlen(parts[least].text) + 3;
		parts[least].text[0] = '\0';
	}
	move(y, 0);
	clrtoeol();
	for (int i = 0; i < n && x < COLS; i++) {
		if (!parts[i].text[0])
			continue;
		style_on(s, parts[i].alert ? PAIR_ALERT : 0, parts[i].alert ? A_BOLD : 0);
		put_at(y, x + 1, parts[i].text);
		style_off(s, parts[i].alert ? PAIR_ALERT : 0, parts[i].alert ? A_BOLD : 0);
		x += (int)strlen(parts[i].text) + 3;
	}
}

static void draw_header(const struct top_screen *s, const struct top_frame *f,
			const struct top_title *t)
{
	/* probes, records/s, records, drops, the probes' cost */
	struct header_part parts[5] = {
		{ .prio = 80 }, { .prio = 70 },	{ .prio = 60 },
		{ .prio = 100, .alert = f->drops > 0 }, { .prio = 90 },
	};
	struct top_answer answer;
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), " specprobe top  %-6s  %.1fs  window %.0fs  sort %s",
		     t->mode, f->elapsed_s, f->window_s, top__sort_name(t->opts->sort));
	if (t->opts->focus_rank >= 0 && n > 0 && n < (int)sizeof(line))
		snprintf(line + n, sizeof(line) - n, "  rank %d", t->opts->focus_rank);
	style_on(s, PAIR_TITLE, A_BOLD);
	put_at(0, 0, line);
	clrtoeol();
	style_off(s, PAIR_TITLE, A_BOLD);
	snprintf(parts[0].text, sizeof(parts[0].text), "probes %d", f->probes);
	snprintf(parts[1].text, sizeof(parts[1].text), "records/s %.0f", f->records_per_s);
	snprintf(parts[2].text, sizeof(parts[2].text), "records %llu",
		 (unsigned long long)f->records);
	snprintf(parts[3].text, sizeof(parts[3].text), "drops %llu", (unsigned long long)f->drops);
	top__cost_line(parts[4].text, sizeof(parts[4].text), f->overhead_pct);
	top__answer(f, &answer);
	top__answer_line(line, sizeof(line), f, &answer, COLS - 1);
	put_at(1, 1, line);
	top__sync_line(line, sizeof(line), &answer, COLS - 1);
	style_on(s, answer.site ? PAIR_ALERT : 0, 0);
	put_at(2, 1, line);
	style_off(s, answer.site ? PAIR_ALERT : 0, 0);
	draw_parts(s, parts, 5, 3);
	/* --sample: the line above the loops, which is blank without it */
	top__sample_line(line, sizeof(line), f, COLS - 1);
	put_at(4, 1, line);
}

enum cell_style { ST_PLAIN, ST_ALERT, ST_ALERT_BOLD, ST_BLOCKED, ST_BAR };

static void cell_on(const struct top_screen *s, int style, bool on)
{
	int pair = style == ST_BLOCKED ? PAIR_BLOCKED : PAIR_ALERT;
	int extra = style == ST_ALERT_BOLD ? A_BOLD : 0;

	if (style == ST_PLAIN || style == ST_BAR)
		return;
	if (on)
		style_on(s, pair, extra);
	else
		style_off(s, pair, extra);
}

/* The phase bar, d v a e in their colours: the letters stay readable in mono. */
static void put_bar(const struct top_screen *s, const char *bar)
{
	static const char marks[] = "dvae";
	static const int pairs[] = { PAIR_DRAFT, PAIR_VERIFY, PAIR_ACCEPT, PAIR_EXTEND };

	for (; *bar; bar++) {
		const char *m = strchr(marks, *bar);
		int pair = m ? pairs[m - marks] : 0;

		style_on(s, pair, 0);
		addch(*bar);
		style_off(s, pair, 0);
	}
}

static void put_row(const struct top_screen *s, const struct top_table *t, int row, int y)
{
	char cell[TT_CELL + 1];

	move(y, 0);
	clrtoeol();
	for (int c = 0; c < t->nr_cols; c++) {
		int style = t->cells[row][c].style, x = tt__x(t, c);

		if (!t->shown[c] || x >= COLS)
			continue;
		tt__cell(t, row, c, cell, sizeof(cell));
		move(y, x);
		cell_on(s, style, true);
		if (style == ST_BAR && x + (int)strlen(cell) <= COLS)
			put_bar(s, cell);
		else
			addnstr(cell, COLS - x);
		cell_on(s, style, false);
	}
}

/* A fitted table: its header, then rows from first on, at most rows, above the footer. */
static int put_table(const struct top_screen *s, const struct top_table *t, int y, int first,
		     int rows)
{
	char line[TT_MAX_COLS * (TT_CELL + 1) + 8];

	if (y >= LINES - 1)
		return y;
	tt__line(t, -1, line, sizeof(line));
	attron(A_REVERSE);
	put_at(y, 0, line);
	attroff(A_REVERSE);
	y++;
	for (int r = first; r < t->nr_rows && rows-- > 0 && y < LINES - 1; r++)
		put_row(s, t, r, y++);
	return y;
}

#define NR(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Columns by how much they are needed: the first and the key figures go last. */
static const struct tt_col loop_cols[] = {
	{ "RANK", 4, 100 },	 { "PID", 7, 80 },	  { "TID", 7, 20 },
	{ "CYCLES/S", 9, 95 }, { "TOK/S", 5, 92 },	  { "P50 ms", 7, 35 },
	{ "P99 ms", 7, 30 },	 { "TOTAL", 7, 25 },	  { "PHASES d v a e, blank other", 42, 50, true, 27 },
	{ "BLK%", 4, 90 },	{ "ACC", 4, 40 },
	/* --gpu only, last: without GPU figures the table is as it always was */
	{ "GPU-D ms", 8, 66 },	 { "GPU-V ms", 8, 72 },	  { "GPU IDLE", 8, 68 },
};

#define LOOP_GPU_COLS 3
#define LOOP_GPU_COL 11

#define LOOP_ACC_COL 10

/* --server-metrics: the server's tokens/s and accept length; "-" without them. */
static void set_server(struct top_table *t, int row, const struct top_frame *f)
{
	if (f->server && f->server_tok_s >= 0)
		tt__set(t, row, 4, ST_PLAIN, "%.1f", f->server_tok_s);
	else
		tt__set(t, row, 4, ST_PLAIN, "-");
	if (f->server && f->server_accept > 0)
		tt__set(t, row, LOOP_ACC_COL, ST_PLAIN, "%.2f", f->server_accept);
	else
		tt__set(t, row, LOOP_ACC_COL, ST_PLAIN, "-");
}

static void set_rank(struct top_table *t, int row, int rank)
{
	if (rank >= 0)
		tt__set(t, row, 0, ST_PLAIN, "%d", rank);
	else
		tt__set(t, row, 0, ST_PLAIN, "-");
}

/* The bar's letters for the width it was given, once the table is fitted. */
static void fill_bars(struct top_table *t, const struct top_frame *f, int col)
{
	static const char marks[] = "dvae";
	int width = t->shown[col] - 2;

	for (int row = 0; row < t->nr_rows && width > 0; row++) {
		const struct top_loop_row *r = &f->loops[row];
		char *bar = t->cells[row][col].text;
		int used = 0;

		bar[0] = '[';
		for (int p = 0; p < 4; p++) {
			int n = (int)(r->share[p] * width + 0.5);

			for (n = n > width - used ? width - used : n; n > 0; n--)
				bar[1 + used++] = marks[p];
		}
		memset(bar + 1 + used, ' ', width - used);
		bar[1 + width] = ']';
		bar[2 + width] = '\0';
		t->cells[row][col].style = ST_BAR;
	}
}

/* The window's GPU means of a loop row; "-" where none of its cycles had GPU figures. */
static void set_gpu(struct top_table *t, int row, const struct top_loop_row *r)
{
	if (!r->gpu_cycles) {
		for (int c = 0; c < LOOP_GPU_COLS; c++)
			tt__set(t, row, LOOP_GPU_COL + c, ST_PLAIN, "-");
		return;
	}
	tt__set(t, row, LOOP_GPU_COL, ST_PLAIN, "%.3f", r->gpu_draft_ns / 1e6);
	tt__set(t, row, LOOP_GPU_COL + 1, ST_PLAIN, "%.3f", r->gpu_verify_ns / 1e6);
	tt__set(t, row, LOOP_GPU_COL + 2, ST_PLAIN, "%.0f%%", 100 * r->gpu_idle_share);
}

static void fill_loops(struct top_table *t, const struct top_frame *f)
{
	tt__init(t, loop_cols, NR(loop_cols) - (f->gpu ? 0 : LOOP_GPU_COLS), 1);
	for (size_t i = 0; i < f->nr_loops; i++) {
		const struct top_loop_row *r = &f->loops[i];
		const char *m = top__mark(f);
		int row = tt__add_row(t);

		set_rank(t, row, r->rank);
		tt__set(t, row, 1, ST_PLAIN, "%u", r->tgid);
		tt__set(t, row, 2, ST_PLAIN, "%u", r->tid);
		set_server(t, row, f);
		if (r->idle) {
			tt__set(t, row, 3, ST_PLAIN, "idle");
			tt__set(t, row, 5, ST_PLAIN, "-");
			tt__set(t, row, 6, ST_PLAIN, "-");
		} else {
			tt__set(t, row, 3, ST_PLAIN, "%s%.1f", m, r->cycles_per_s);
			tt__set(t, row, 5, ST_PLAIN, "%s%.3f", m, r->p50_ns / 1e6);
			tt__set(t, row, 6, ST_PLAIN, "%s%.3f", m, r->p99_ns / 1e6);
		}
		tt__set(t, row, 7, ST_PLAIN, "%s%llu", m, (unsigned long long)r->total);
		tt__set(t, row, 9, r->share[PHASE_NR] > 0.05 ? ST_BLOCKED : ST_PLAIN, "%s%.0f%%", m,
			100 * r->share[PHASE_NR]);
		if (f->gpu)
			set_gpu(t, row, r);
	}
}

static int draw_loops(const struct top_screen *s, struct top_table *t, const struct top_frame *f,
		      int y, int rows, int scroll)
{
	fill_loops(t, f);
	tt__fit(t, COLS);
	fill_bars(t, f, 8);
	return put_table(s, t, y, scroll, rows);
}

/* what a user acts on stays longest: the call, its site and position, its cost */
static const struct tt_col site_cols[] = {
	{ "RANK", 4, 100 },
	{ "PID", 7, 45 },
	{ "FLAGGED SYNC", 24, 98, true },
	{ "POSITION", 13, 96, true },
	{ "KIND", 13, 60, true },
	{ "COUNT/S", 8, 55 },
	{ "BLK ms/CYC", 11, 90 },
	{ "TOTAL", 8, 50 },
	{ "CALL SITE", 0, 97, true, 16 },
};

static int draw_sites(const struct top_screen *s, struct top_table *t, const struct top_frame *f,
		      int y, int rows)
{
	struct tt_col cols[NR(site_cols)];

	top__site_cols(cols, site_cols, NR(site_cols), 8, f);
	tt__init(t, cols, NR(cols), 1);
	for (size_t i = 0; i < f->nr_sites; i++) {
		const struct top_site_row *r = &f->sites[i];
		int row = tt__add_row(t);

		set_rank(t, row, r->rank);
		tt__set(t, row, 1, ST_PLAIN, "%u", r->tgid);
		tt__set(t, row, 2, r->count ? ST_ALERT : ST_PLAIN, "%s", model__call_name(r->name));
		tt__set(t, row, 3, ST_PLAIN, "%s", syncs__pos_name(r->pos));
		tt__set(t, row, 4, ST_PLAIN, "%s", model__sync_kind_name(r->kind));
		tt__set(t, row, 5, ST_PLAIN, "%.1f", r->per_s);
		tt__set(t, row, 6, ST_PLAIN, "%.3f", r->blocked_ms_per_cycle);
		tt__set(t, row, 7, ST_PLAIN, "%llu", (unsigned long long)r->total);
		tt__set(t, row, 8, ST_PLAIN, "%s", r->where ? r->where : "");
	}
	tt__fit(t, COLS);
	top__fit_sites(t, f, 8);
	y = put_table(s, t, y, 0, rows);
	if (!f->nr_sites && rows > 0 && y < LINES - 1)
		put_at(y++, 0, "  no flagged syncs in the window");
	return y;
}

static const struct tt_col hung_cols[] = {
	{ "RANK", 4, 100 },		{ "PID", 7, 60 }, { "TID", 7, 40 },
	{ "HUNG CALL", 24, 95, true }, { "AGE s", 8, 90 },
};

static int draw_hung(const struct top_screen *s, struct top_table *t, const struct top_frame *f,
		     const struct top_opts *o, int y, int rows)
{
	char note[64];
	int x, head;

	tt__init(t, hung_cols, NR(hung_cols), 1);
	for (size_t i = 0; i < f->nr_hung; i++) {
		const struct top_hung_row *h = &f->hung[i];
		int row = tt__add_row(t);

		set_rank(t, row, h->rank);
		tt__set(t, row, 1, ST_ALERT_BOLD, "%u", h->tgid);
		tt__set(t, row, 2, ST_ALERT_BOLD, "%u", h->tid);
		tt__set(t, row, 3, ST_ALERT_BOLD, "%s", model__call_name(h->name));
		tt__set(t, row, 4, ST_ALERT_BOLD, "%.1f", h->age_ns / 1e9);
	}
	tt__fit(t, COLS);
	/* what hung means, beside the header where it fits */
	snprintf(note, sizeof(note), "  (open longer than %.1fs)", o->hung_ns / 1e9);
	x = tt__x(t, t->nr_cols) - 1;
	head = y;
	y = put_table(s, t, y, 0, rows);
	if (head < LINES - 1 && x + (int)strlen(note) <= COLS)
		put_at(head, x, note);
	if (!f->nr_hung && rows > 0 && y < LINES - 1)
		put_at(y++, 0, "  none");
	return y;
}

static const struct tt_col call_cols[] = {
	{ "ENTRY POINT", 28, 100, true },
	{ "CALLS/S", 12, 90 },
};

static void draw_calls(const struct top_screen *s, struct top_table *t, const struct top_frame *f,
		       int y, int rows)
{
	tt__init(t, call_cols, NR(call_cols), 1);
	for (size_t i = 0; i < f->nr_calls; i++) {
		int row = tt__add_row(t);

		tt__set(t, row, 0, ST_PLAIN, "%s", model__call_name(f->calls_top[i].name));
		tt__set(t, row, 1, ST_PLAIN, "%s%.1f", top__call_mark(f, f->calls_top[i].name),
			f->calls_top[i].per_s);
	}
	tt__fit(t, COLS);
	put_table(s, t, y, 0, rows);
}

static const char *const help_lines[] = {
	"q  quit (the recording being kept stays valid)",
	"p  pause / resume the display (tracing goes on)",
	"s  sort loops: rank, cycles/s, p99",
	"r  reset the window and the totals",
	"1-9  show one rank only (press again, or 0, for all)",
	"up/down  scroll the loops",
	"?  this help",
	"",
	"phase bar: d draft, v verify, a accept, e extend, blank other (no phase);",
	"BLK% time blocked in syncs",
	"~  from --sample windows only, rates over their time: cycles, phases, launches",
};

static void draw_help(void)
{
	int n = sizeof(help_lines) / sizeof(help_lines[0]);
	int y = 5;

	for (int i = 0; i < n && y < LINES; i++, y++) {
		move(y, 0);
		clrtoeol();
		put_at(y, 4, help_lines[i]);
	}
}

void top_screen__draw(struct top_screen *s, const struct top_frame *f,
		      const struct top_title *title, const struct top_ui *ui)
{
	int loops_rows = (int)f->nr_loops > 8 ? 8 : (int)f->nr_loops;
	struct top_table *t = malloc(sizeof(*t));
	char line[96];
	int free_rows, y;

	erase();
	draw_header(s, f, title);
	if (ui->help || !t) {
		draw_help();
		free(t);
		refresh();
		return;
	}
	loops_rows = loops_rows < 1 ? 1 : loops_rows;
	y = draw_loops(s, t, f, 5, loops_rows, ui->scroll) + 1;
	free_rows = LINES - y - 3;
	y = draw_sites(s, t, f, y, free_rows / 3 > 1 ? free_rows / 3 : 1) + 1;
	y = draw_hung(s, t, f, title->opts, y, 3) + 1;
	if (LINES - y > 2)
		draw_calls(s, t, f, y, LINES - y - 2);
	free(t);
	if (f->sites_lost)
		snprintf(line, sizeof(line), " %llu flagged syncs at sites past the table",
			 (unsigned long long)f->sites_lost);
	else
		snprintf(line, sizeof(line), " ? help  q quit  p pause  s sort  r reset  1-9 rank");
	move(LINES - 1, 0);
	clrtoeol();
	put_at(LINES - 1, 0, line);
	refresh();
}
