// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top on the terminal: a header of meters, the loops with a phase bar, syncs, hung calls. */
#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model.h"
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

/* The phase shares of a cycle as one bar: d, v, a, e and b letters stay readable in mono. */
static void phase_bar(const struct top_screen *s, const struct top_loop_row *r, int width)
{
	static const char marks[] = "dvae";
	static const int pairs[] = { PAIR_DRAFT, PAIR_VERIFY, PAIR_ACCEPT, PAIR_EXTEND };
	int used = 0;

	addch('[');
	for (int p = 0; p < 4; p++) {
		int n = (int)(r->share[p] * width + 0.5);

		n = n > width - used ? width - used : n;
		style_on(s, pairs[p], 0);
		for (int i = 0; i < n; i++)
			addch(marks[p]);
		style_off(s, pairs[p], 0);
		used += n;
	}
	for (; used < width; used++)
		addch(' ');
	addch(']');
}

static void draw_header(const struct top_screen *s, const struct top_frame *f,
			const struct top_title *t)
{
	style_on(s, PAIR_TITLE, A_BOLD);
	mvprintw(0, 0, " specprobe top  %-6s  %.1fs  window %.0fs  sort %s", t->mode, f->elapsed_s,
		 f->window_s, top__sort_name(t->opts->sort));
	if (t->opts->focus_rank >= 0)
		printw("  rank %d", t->opts->focus_rank);
	clrtoeol();
	style_off(s, PAIR_TITLE, A_BOLD);
	mvprintw(1, 0, " probes %d   records/s %.0f   records %llu   ", f->probes, f->records_per_s,
		 (unsigned long long)f->records);
	style_on(s, f->drops ? PAIR_ALERT : 0, f->drops ? A_BOLD : 0);
	printw("drops %llu", (unsigned long long)f->drops);
	style_off(s, f->drops ? PAIR_ALERT : 0, f->drops ? A_BOLD : 0);
	if (f->overhead_pct >= 0)
		printw("   probe cost %.2f%% of targets' CPU", f->overhead_pct);
	clrtoeol();
}

static int draw_loops(const struct top_screen *s, const struct top_frame *f, int y, int rows,
		      int scroll)
{
	int bar = COLS - 78 > 10 ? (COLS - 78 > 40 ? 40 : COLS - 78) : 10;

	attron(A_REVERSE);
	mvprintw(y++, 0, " %4s %7s %7s %9s %5s %7s %7s %7s  %-*s %5s", "RANK", "PID", "TID",
		 "CYCLES/S", "TOK/S", "P50 ms", "P99 ms", "TOTAL", bar + 2,
		 "PHASES d v a e", "BLK%");
	clrtoeol();
	attroff(A_REVERSE);
	for (size_t i = scroll; i < f->nr_loops && rows-- > 0; i++) {
		const struct top_loop_row *r = &f->loops[i];

		move(y++, 0);
		if (r->rank >= 0)
			printw(" %4d", r->rank);
		else
			printw(" %4s", "-");
		printw(" %7u %7u", r->tgid, r->tid);
		if (r->idle)
			printw(" %9s %5s %7s %7s", "idle", "-", "-", "-");
		else
			printw(" %9.1f %5s %7.3f %7.3f", r->cycles_per_s, "-", r->p50_ns / 1e6,
			       r->p99_ns / 1e6);
		printw(" %7llu  ", (unsigned long long)r->total);
		phase_bar(s, r, bar);
		style_on(s, r->share[PHASE_NR] > 0.05 ? PAIR_BLOCKED : 0, 0);
		printw(" %4.0f%%", 100 * r->share[PHASE_NR]);
		style_off(s, r->share[PHASE_NR] > 0.05 ? PAIR_BLOCKED : 0, 0);
		clrtoeol();
	}
	return y;
}

static int draw_sites(const struct top_screen *s, const struct top_frame *f, int y, int rows)
{
	attron(A_REVERSE);
	mvprintw(y++, 0, " %4s %7s %-24s %-13s %-13s %8s %11s %8s", "RANK", "PID",
		 "FLAGGED SYNC", "POSITION", "KIND", "COUNT/S", "BLK ms/CYC", "TOTAL");
	clrtoeol();
	attroff(A_REVERSE);
	if (!f->nr_sites && rows > 0) {
		mvprintw(y++, 0, "  no flagged syncs in the window");
		clrtoeol();
	}
	for (size_t i = 0; i < f->nr_sites && rows-- > 0; i++) {
		const struct top_site_row *r = &f->sites[i];

		move(y++, 0);
		if (r->rank >= 0)
			printw(" %4d", r->rank);
		else
			printw(" %4s", "-");
		printw(" %7u", r->tgid);
		style_on(s, r->count ? PAIR_ALERT : 0, 0);
		printw(" %-24s", model__call_name(r->name));
		style_off(s, r->count ? PAIR_ALERT : 0, 0);
		printw(" %-13s %-13s %8.1f %11.3f %8llu", syncs__pos_name(r->pos),
		       model__sync_kind_name(r->kind), r->per_s, r->blocked_ms_per_cycle,
		       (unsigned long long)r->total);
		if (r->where && COLS - getcurx(stdscr) > 8)	/* the commonest call site, cut */
			printw("  at %.*s", COLS - getcurx(stdscr) - 6, r->where);
		clrtoeol();
	}
	return y;
}

static int draw_hung(const struct top_screen *s, const struct top_frame *f,
		     const struct top_opts *o, int y, int rows)
{
	attron(A_REVERSE);
	mvprintw(y++, 0, " %4s %7s %7s %-24s %8s   (open longer than %.1fs)", "RANK", "PID", "TID",
		 "HUNG CALL", "AGE s", o->hung_ns / 1e9);
	clrtoeol();
	attroff(A_REVERSE);
	if (!f->nr_hung && rows > 0) {
		mvprintw(y++, 0, "  none");
		clrtoeol();
	}
	for (size_t i = 0; i < f->nr_hung && rows-- > 0; i++) {
		const struct top_hung_row *h = &f->hung[i];

		move(y++, 0);
		if (h->rank >= 0)
			printw(" %4d", h->rank);
		else
			printw(" %4s", "-");
		style_on(s, PAIR_ALERT, A_BOLD);
		printw(" %7u %7u %-24s %8.1f", h->tgid, h->tid, model__call_name(h->name),
		       h->age_ns / 1e9);
		style_off(s, PAIR_ALERT, A_BOLD);
		clrtoeol();
	}
	return y;
}

static void draw_calls(const struct top_frame *f, int y, int rows)
{
	attron(A_REVERSE);
	mvprintw(y++, 0, " %-28s %12s", "ENTRY POINT", "CALLS/S");
	clrtoeol();
	attroff(A_REVERSE);
	for (size_t i = 0; i < f->nr_calls && rows-- > 0; i++) {
		mvprintw(y++, 0, " %-28s %12.1f", model__call_name(f->calls_top[i].name),
			 f->calls_top[i].per_s);
		clrtoeol();
	}
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
	"phase bar: d draft, v verify, a accept, e extend; BLK% time blocked in syncs",
};

static void draw_help(void)
{
	int n = sizeof(help_lines) / sizeof(help_lines[0]);
	int y = 3;

	for (int i = 0; i < n && y < LINES; i++, y++) {
		mvprintw(y, 2, "  %-70s", help_lines[i]);
		clrtoeol();
	}
}

void top_screen__draw(struct top_screen *s, const struct top_frame *f,
		      const struct top_title *title, const struct top_ui *ui)
{
	int loops_rows = (int)f->nr_loops > 8 ? 8 : (int)f->nr_loops;
	int free_rows, y;

	erase();
	draw_header(s, f, title);
	if (ui->help) {
		draw_help();
		refresh();
		return;
	}
	loops_rows = loops_rows < 1 ? 1 : loops_rows;
	y = draw_loops(s, f, 3, loops_rows, ui->scroll) + 1;
	free_rows = LINES - y - 3;
	y = draw_sites(s, f, y, free_rows / 3 > 1 ? free_rows / 3 : 1) + 1;
	y = draw_hung(s, f, title->opts, y, 3) + 1;
	if (LINES - y > 1)
		draw_calls(f, y, LINES - y - 1);
	if (f->sites_lost)
		mvprintw(LINES - 1, 0, " %llu flagged syncs at sites past the table",
			 (unsigned long long)f->sites_lost);
	else
		mvprintw(LINES - 1, 0, " ? help  q quit  p pause  s sort  r reset  1-9 rank");
	clrtoeol();
	refresh();
}
